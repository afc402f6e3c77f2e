"""Elementwise activations used by FFNs, and the derivatives the checks need, in float64.

Each maps real numbers ``z`` of any shape to float64 of the same shape (a NumPy scalar for a
scalar); non-finite entries propagate, and no finite ``|z|`` overflows.

    sigmoid(z)   = 1 / (1 + exp(-z))
    silu(z)      = z sigmoid(z)                 silu'(z)    = sigmoid(z) (1 + z sigmoid(-z))
    relu(z)      = max(z, 0)                    relu'(z)    = 1[z > 0]
    gelu(z)      = z Phi(z)
    gelu_tanh(z) = z (1 + tanh(k(z))) / 2,      k(z) = sqrt(2/pi) (z + 0.044715 z^3)

Phi is the standard normal CDF.
"""

from __future__ import annotations

import math

import numpy as np

from ._validate import real_numbers

_SQRT_2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_TANH_CUBIC = 0.044715
# Beyond this magnitude tanh(x) rounds to +-1.0 in float64 (for |x| > 19.1), so clipping the
# argument changes no result while keeping z**3 from overflowing.
_GELU_TANH_CLIP = 20.0

_erf = np.frompyfunc(math.erf, 1, 1)


def _float64(z) -> np.ndarray:
    return real_numbers(z, "z", "a real number or an array of real numbers")


def _result(out: np.ndarray):
    # out[()] turns a 0-d array into a NumPy scalar and leaves other arrays unchanged.
    return out[()]


def sigmoid(z):
    """``1 / (1 + exp(-z))`` without overflow: with ``e = exp(-|z|)`` in (0, 1],
    ``1 / (1 + e)`` for ``z >= 0`` and ``e / (1 + e)`` for ``z < 0``."""
    z = _float64(z)
    e = np.exp(-np.abs(z))
    return _result(np.where(z >= 0, 1.0 / (1.0 + e), e / (1.0 + e)))


def silu(z):
    """SiLU (swish with beta = 1): ``z sigmoid(z)``."""
    z = _float64(z)
    return _result(np.asarray(z * sigmoid(z)))


def silu_grad(z):
    """``silu'(z) = sigmoid(z) (1 + z sigmoid(-z))``: non-zero on the negative half-axis,
    unlike ``relu'``."""
    z = _float64(z)
    return _result(np.asarray(sigmoid(z) * (1.0 + z * sigmoid(-z))))


def relu(z):
    """``max(z, 0)``."""
    z = _float64(z)
    return _result(np.maximum(z, 0.0))


def relu_grad(z):
    """``1`` where ``z > 0``, else ``0`` (the subgradient at 0 is taken as 0, as autograd does)."""
    z = _float64(z)
    out = np.where(z > 0, 1.0, 0.0)
    return _result(np.where(np.isnan(z), np.nan, out))


def _std_normal_cdf(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.asarray(_erf(z / _SQRT_2), dtype=np.float64))


def gelu(z):
    """Exact GELU ``z Phi(z) = z (1 + erf(z / sqrt 2)) / 2`` (``math.erf`` per element)."""
    z = _float64(z)
    return _result(np.asarray(z * _std_normal_cdf(z)))


def gelu_tanh(z):
    """Tanh approximation of GELU: ``z (1 + tanh(sqrt(2/pi) (z + 0.044715 z^3))) / 2``."""
    z = _float64(z)
    t = np.clip(z, -_GELU_TANH_CLIP, _GELU_TANH_CLIP)
    k = _SQRT_2_OVER_PI * (t + _GELU_TANH_CUBIC * t**3)
    return _result(np.asarray(0.5 * z * (1.0 + np.tanh(k))))
