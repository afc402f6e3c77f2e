"""Input checks shared by the reference functions.

Every check raises ``ValueError`` with a one-line message that names the bad value or shape and
says what is allowed, so a caller can fix the input without reading the source.
"""

from __future__ import annotations

import math

import numpy as np

from blocklab.errors import InputError


def describe(values, limit: int = 8) -> str:
    """Render an array on one line for error messages, eliding the middle of long ones."""
    flat = np.asarray(values).ravel()
    if flat.size <= limit:
        return "[" + ", ".join(repr(float(v)) for v in flat) + "]"
    head = ", ".join(repr(float(v)) for v in flat[: limit // 2])
    tail = ", ".join(repr(float(v)) for v in flat[-limit // 2 :])
    return f"[{head}, ..., {tail}]"


def as_vector(x, name: str = "x") -> np.ndarray:
    """Return ``x`` as a finite, non-empty, 1-D float64 array or raise ``ValueError``."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise InputError(f"{name} must be a 1-D sequence of real numbers, got {x!r}") from err
    if arr.ndim != 1 or arr.size == 0:
        raise InputError(f"{name} must be a non-empty 1-D vector, got shape {arr.shape}")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise InputError(
            f"{name} must be finite, got {describe(arr[bad])} at indices {bad.tolist()}"
        )
    return arr


def as_matrix(a, name: str) -> np.ndarray:
    """Return ``a`` as a finite 2-D float64 array with no empty axis or raise ``ValueError``."""
    try:
        arr = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise InputError(f"{name} must be a 2-D [out, in] matrix of real numbers") from err
    if arr.ndim != 2 or 0 in arr.shape:
        raise InputError(f"{name} must be a non-empty 2-D [out, in] matrix, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        rows, cols = np.nonzero(~np.isfinite(arr))
        raise InputError(f"{name} must be finite, got a non-finite entry at [{rows[0]}, {cols[0]}]")
    return arr


def as_eps(eps) -> float:
    """Return ``eps`` as a finite, non-negative float or raise ``ValueError``."""
    try:
        value = float(eps)
    except (TypeError, ValueError) as err:
        raise InputError(f"eps must be a finite real number >= 0, got {eps!r}") from err
    if not math.isfinite(value) or value < 0:
        raise InputError(f"eps must be a finite real number >= 0, got {eps!r}")
    return value


def as_scalar(value, name: str) -> float:
    """Return ``value`` as a finite float or raise ``ValueError``."""
    try:
        out = float(value)
    except (TypeError, ValueError) as err:
        raise InputError(f"{name} must be a finite real number, got {value!r}") from err
    if not math.isfinite(out):
        raise InputError(f"{name} must be a finite real number, got {value!r}")
    return out


def as_channel_vector(v, name: str, width: int) -> np.ndarray:
    """Return a per-channel vector (gain, bias, scales) of length ``width`` or raise."""
    arr = as_vector(v, name)
    if arr.shape != (width,):
        raise InputError(f"{name} must have shape ({width},) to match x, got shape {arr.shape}")
    return arr
