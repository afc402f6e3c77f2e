"""Rotary position embedding (RoPE) of one vector, and its relative-position identity.

The d channels form d/2 pairs; pair i is rotated by the angle ``position * theta_i`` with
``theta_i = base^(-2i/d)``, i = 0 .. d/2 - 1. For a pair (a, b)::

    a' = a cos(angle) - b sin(angle)
    b' = a sin(angle) + b cos(angle)

Layouts (which channels form pair i):

- ``half_split``: (i, i + d/2), as in Hugging Face ``rotate_half``.
- ``interleaved``: (2i, 2i + 1), as in the RoFormer paper and Meta's Llama code (complex pairs).

Rotations compose and are orthogonal, so ``rope(q, m) . rope(k, n) = q . R((n - m) theta) k``:
the score depends on the positions only through m - n (https://arxiv.org/abs/2104.09864).

Shape legend: d = head_dim (even); vectors are [d]; frequencies [d/2].
"""

from __future__ import annotations

import math

import numpy as np

from blocklab.errors import InputError

from ._validate import as_scalar, as_vector, check_overflow, describe


def _half_split_pairs(d: int) -> tuple[np.ndarray, np.ndarray]:
    half = d // 2
    return np.arange(half), np.arange(half, d)


def _interleaved_pairs(d: int) -> tuple[np.ndarray, np.ndarray]:
    return np.arange(0, d, 2), np.arange(1, d, 2)


# Layout name -> function giving the (first, second) channel indices of every pair.
ROPE_LAYOUTS = {"half_split": _half_split_pairs, "interleaved": _interleaved_pairs}


def _check_base(base) -> float:
    value = as_scalar(base, "base")
    if value <= 1:
        raise InputError(f"base must be a finite number > 1, got {base!r}")
    return value


def _check_layout(layout) -> str:
    if layout not in ROPE_LAYOUTS:
        raise InputError(f"unknown RoPE layout {layout!r}; allowed: {', '.join(ROPE_LAYOUTS)}")
    return layout


def _check_even(x: np.ndarray, name: str) -> np.ndarray:
    if x.shape[0] % 2:
        raise InputError(f"{name} must have even length to form rotation pairs, got {x.shape[0]}")
    return x


def rope_frequencies(d: int, base=10000.0) -> np.ndarray:
    """``theta_i = base^(-2i/d)`` for i = 0 .. d/2 - 1, [d/2]; d must be a positive even int."""
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 2 or d % 2:
        raise InputError(f"d must be a positive even integer, got {d!r}")
    base = _check_base(base)
    return np.power(base, -np.arange(0, d, 2, dtype=np.float64) / d)


def rope_rotate(x, position, base=10000.0, layout="half_split") -> np.ndarray:
    """Rotate each channel pair of ``x`` by ``position * theta_i``; x: [d] (d even) -> [d].
    """
    x = _check_even(as_vector(x, "x"), "x")
    position = as_scalar(position, "position")
    layout = _check_layout(layout)
    d = x.shape[0]
    angle = position * rope_frequencies(d, base)  # [d/2]
    cos, sin = np.cos(angle), np.sin(angle)
    first, second = ROPE_LAYOUTS[layout](d)
    out = np.empty_like(x)
    with np.errstate(over="ignore", invalid="ignore"):
        out[first] = x[first] * cos - x[second] * sin
        out[second] = x[first] * sin + x[second] * cos
    check_overflow("rope_rotate", {"the rotated x": out},
                   f"x={describe(x)}, position={position!r}")
    return out


def rope_score(q, k, m, n, base=10000.0, layout="half_split") -> float:
    """Attention logit (without 1/sqrt(d)) ``rope(q, m) . rope(k, n)``; q, k: [d] -> float."""
    q = _check_even(as_vector(q, "q"), "q")
    k = _check_even(as_vector(k, "k"), "k")
    if q.shape != k.shape:
        raise InputError(f"q and k must have the same length, got {q.shape[0]} and {k.shape[0]}")
    m, n = as_scalar(m, "m"), as_scalar(n, "n")
    with np.errstate(over="ignore", invalid="ignore"):
        score = rope_rotate(q, m, base, layout) @ rope_rotate(k, n, base, layout)
    check_overflow("rope_score", {"the score rope(q, m)·rope(k, n)": score},
                   f"q={describe(q)}, k={describe(k)}")
    return float(score)


def relative_position_gap(q, k, m, n, shift, base=10000.0, layout="half_split") -> float:
    """``|score(m, n) - score(m + shift, n + shift)|``: zero up to rounding, since only m - n
    enters the score."""
    shift = as_scalar(shift, "shift")
    m, n = as_scalar(m, "m"), as_scalar(n, "n")
    check_overflow("relative_position_gap", {"m + shift": m + shift, "n + shift": n + shift},
                   f"m={m!r}, n={n!r}, shift={shift!r}")
    before = rope_score(q, k, m, n, base, layout)
    after = rope_score(q, k, m + shift, n + shift, base, layout)
    check_overflow("relative_position_gap", {"the score difference": before - after},
                   f"scores {before!r} and {after!r}")
    return math.fabs(before - after)
