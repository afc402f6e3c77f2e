"""Input checks shared by the reference functions: a one-line ``InputError`` naming the bad
value and what is allowed. Only real numbers pass (a numeric string or a bool, which
``np.asarray(..., dtype=float64)`` would convert silently, is refused); a result overflowing
float64 from finite inputs is refused too (``check_overflow``).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from blocklab.checks import shown_value as shown
from blocklab.errors import InputError

_NUMBER_KINDS = "iuf"  # NumPy dtype kinds of signed and unsigned integers and floats


def real_numbers(value, name: str, expected: str) -> np.ndarray:
    """``value`` as a float64 array (any shape, 0-d for a scalar) if it holds only real
    numbers, else ``InputError`` saying ``{name} must be {expected}`` and which element is not
    one. Finiteness is left to the caller."""
    if not (isinstance(value, np.ndarray) and value.dtype.kind in _NUMBER_KINDS):
        try:
            cells = np.asarray(value, dtype=object)
        except ValueError as err:  # nested sequences NumPy cannot lay out at all
            raise InputError(f"{name} must be {expected}, got {shown(value)}") from err
        for cell in cells.flat:
            if isinstance(cell, list | tuple | np.ndarray):
                raise InputError(f"{name} must be {expected}, got {shown(value)}: its nested "
                                 "sequences have different lengths")
            if isinstance(cell, bool | np.bool_) or not isinstance(cell, numbers.Real):
                raise InputError(f"{name} must be {expected}, got {shown(value)}: "
                                 f"{shown(cell)} is a {type(cell).__name__}, not a real number")
            try:
                float(cell)
            except OverflowError:
                raise InputError(f"{name} must be {expected}, got {shown(value)}: {shown(cell)} "
                                 "is beyond the float64 range") from None
    return np.asarray(value, dtype=np.float64)


def check_overflow(where: str, results: dict, inputs: str) -> None:
    """``InputError`` naming the first of `results` that overflowed float64 (inf, or NaN from
    inf − inf); compute them under ``np.errstate(over="ignore", invalid="ignore")``."""
    for name, value in results.items():
        arr = np.asarray(value, dtype=np.float64)
        bad = ~np.isfinite(arr)
        if np.any(bad):
            at = "" if arr.ndim == 0 else f" at {np.argwhere(bad)[0].tolist()}"
            raise InputError(f"{where}: {name} overflows float64{at} for {inputs}; rescale the "
                             "inputs")


def describe(values, limit: int = 8) -> str:
    """Render an array on one line for error messages, eliding the middle of long ones."""
    flat = np.asarray(values).ravel()
    if flat.size <= limit:
        return "[" + ", ".join(repr(float(v)) for v in flat) + "]"
    head = ", ".join(repr(float(v)) for v in flat[: limit // 2])
    tail = ", ".join(repr(float(v)) for v in flat[-limit // 2 :])
    return f"[{head}, ..., {tail}]"


def entries(x: np.ndarray, what: str, *arrays: np.ndarray) -> str:
    """The inputs an overflow names: x and the largest |entry| of `arrays` (`what` entries)."""
    largest = max(float(np.max(np.abs(a))) for a in arrays)
    return f"x={describe(x)} and {what} entries up to |{largest:g}|"


def as_vector(x, name: str = "x") -> np.ndarray:
    """Return ``x`` as a finite, non-empty, 1-D float64 array or raise ``ValueError``."""
    arr = real_numbers(x, name, "a 1-D sequence of real numbers")
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
    arr = real_numbers(a, name, "a 2-D [out, in] matrix of real numbers")
    if arr.ndim != 2 or 0 in arr.shape:
        raise InputError(f"{name} must be a non-empty 2-D [out, in] matrix, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        rows, cols = np.nonzero(~np.isfinite(arr))
        raise InputError(f"{name} must be finite, got a non-finite entry at [{rows[0]}, {cols[0]}]")
    return arr


def as_eps(eps) -> float:
    """Return ``eps`` as a finite, non-negative float or raise ``ValueError``."""
    value = as_scalar(eps, "eps", "a finite real number >= 0")
    if value < 0:
        raise InputError(f"eps must be a finite real number >= 0, got {shown(eps)}")
    return value


def as_scalar(value, name: str, expected: str = "a finite real number") -> float:
    """Return ``value`` (a real number, or a 0-d array of one) as a finite float or raise
    ``ValueError`` saying ``{name} must be {expected}``."""
    arr = real_numbers(value, name, expected)
    if arr.ndim != 0 or not math.isfinite(float(arr)):
        raise InputError(f"{name} must be {expected}, got {shown(value)}")
    return float(arr)


def as_channel_vector(v, name: str, width: int) -> np.ndarray:
    """Return a per-channel vector (gain, bias, scales) of length ``width`` or raise."""
    arr = as_vector(v, name)
    if arr.shape != (width,):
        raise InputError(f"{name} must have shape ({width},) to match x, got shape {arr.shape}")
    return arr
