"""RMSNorm and LayerNorm of one token, their Jacobians, and their shift/scale (in)variances.

For x in R^d (the hidden channels of a single token; no batch statistics)::

    mu = mean(x)         square_mean = mean(x^2)      variance = mean((x - mu)^2)
    s = sqrt(square_mean + eps)                       sigma = sqrt(variance + eps)
    RMSNorm(x)   = gain (*) x / s
    LayerNorm(x) = gain (*) (x - mu) / sigma + bias

``square_mean = variance + mu^2``: the two denominators agree only when the mean is zero.

Shape legend: d = number of channels; vectors are [d], Jacobians [d, d] indexed [out, in].
"""

from __future__ import annotations

import numpy as np

from blocklab.errors import InputError

from ._validate import (
    as_channel_vector,
    as_eps,
    as_scalar,
    as_vector,
    check_overflow,
    describe,
    entries,
)

# The rounding part of the shift/scale table's tolerance: norm outputs are O(1), so 1e-12 is
# far above rounding yet far below any real deviation.
ROUNDING_TOL = 1e-12


def _squared(name: str) -> str:
    return name if name.isalnum() else f"({name})"  # x^2, but (a·x)^2


def _rms_scale(x: np.ndarray, eps: float, name: str = "x", role: str = "") -> float:
    """s = sqrt(mean(x^2) + eps), rejecting a zero, underflowed or overflowed denominator (the
    page's formula, unrescaled). `name` is what x is to the caller (``x + A·x``), `role` a note
    after its values."""
    sq = _squared(name)
    with np.errstate(over="ignore", under="ignore"):
        square_mean = float(np.mean(x * x))
    if not np.isfinite(square_mean):
        raise InputError(f"mean({sq}^2) overflows float64 for {name}={describe(x)}{role}; "
                         f"rescale {name}")
    if square_mean + eps <= 0:
        if np.any(x != 0):
            raise InputError(
                f"mean({sq}^2) + eps underflows to 0 in float64 for {name}={describe(x)}{role}, "
                f"eps={eps!r}; rescale {name} or use eps > 0"
            )
        raise InputError(
            f"RMSNorm denominator is zero: mean({sq}^2) + eps = 0 for {name}={describe(x)}"
            f"{role}, eps={eps!r}; use eps > 0 or a non-zero {name}"
        )
    return float(np.sqrt(square_mean + eps))


def _centred(x: np.ndarray, eps: float, name: str = "x",
             role: str = "") -> tuple[np.ndarray, float]:
    """c = x - mu and sigma = sqrt(mean(c^2) + eps), rejecting a zero denominator."""
    # A constant x has variance exactly 0, but x - mean(x) need not round to 0 (mean([0.1] * 3)
    # is 0.10000000000000002), so test constancy directly instead of trusting the rounded sum.
    if eps == 0 and np.all(x == x[0]):
        raise InputError(
            f"LayerNorm denominator is zero: variance + eps = 0 for constant {name}="
            f"{describe(x)}{role}, eps=0.0; use eps > 0 or a non-constant {name}"
        )
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        c = x - np.mean(x)
        variance = float(np.mean(c * c))
    if not np.isfinite(variance):
        raise InputError(f"variance overflows float64 for {name}={describe(x)}{role}; rescale "
                         f"{name}")
    if variance + eps <= 0:
        raise InputError(
            f"variance + eps underflows to 0 in float64 for {name}={describe(x)}{role}, "
            f"eps={eps!r}; rescale {name} or use eps > 0"
        )
    return c, float(np.sqrt(variance + eps))


def _gain(gain, d: int) -> np.ndarray:
    return np.ones(d) if gain is None else as_channel_vector(gain, "gain", d)


def norm_statistics(x, eps=1e-6) -> dict:
    """Statistics, unit-gain RMSNorm and LayerNorm of ``x``, and the RMSNorm Jacobian.

    x: [d]; eps >= 0. Returns ``mean``, ``square_mean``, ``variance`` (floats); ``rmsnorm``
    x / s and ``layernorm`` (x - mu) / sigma, [d]; ``jacobian`` of RMSNorm,
    I / s - x x^T / (d s^3), [d, d]. A zero denominator in either norm refuses the call.
    """
    return _statistics(as_vector(x, "x"), as_eps(eps))


def _statistics(x: np.ndarray, eps: float, name: str = "x", role: str = "") -> dict:
    """:func:`norm_statistics` of an x and eps already checked; `name`, `role` as
    :func:`_rms_scale`."""
    s = _rms_scale(x, eps, name, role)
    c, sigma = _centred(x, eps, name, role)
    return {
        "mean": float(np.mean(x)),
        "square_mean": float(np.mean(x * x)),
        "variance": float(np.mean(c * c)),
        "rmsnorm": x / s,
        "layernorm": c / sigma,
        "jacobian": _unit_rms_jacobian(x, s),
    }


def rmsnorm(x, eps=1e-6, gain=None) -> np.ndarray:
    """``gain (*) x / sqrt(mean(x^2) + eps)``; x, gain: [d] (gain defaults to ones) -> [d]."""
    x = as_vector(x, "x")
    eps = as_eps(eps)
    gain = _gain(gain, x.shape[0])
    with np.errstate(over="ignore", invalid="ignore"):
        out = gain * (x / _rms_scale(x, eps))
    check_overflow("rmsnorm", {"gain (*) x / s": out}, entries(x, "gain/bias", gain))
    return out


def layernorm(x, eps=1e-6, gain=None, bias=None) -> np.ndarray:
    """``gain (*) (x - mu) / sqrt(variance + eps) + bias``; all [d]; defaults ones and zeros."""
    x = as_vector(x, "x")
    eps = as_eps(eps)
    d = x.shape[0]
    c, sigma = _centred(x, eps)
    shift = np.zeros(d) if bias is None else as_channel_vector(bias, "bias", d)
    gain = _gain(gain, d)
    with np.errstate(over="ignore", invalid="ignore"):
        out = gain * (c / sigma) + shift
    check_overflow("layernorm", {"gain (*) (x - mu) / sigma + bias": out},
                   entries(x, "gain/bias", gain, shift))
    return out


def rmsnorm_jacobian(x, eps=1e-6, gain=None) -> np.ndarray:
    """Jacobian of :func:`rmsnorm`, [d, d] indexed [out, in].

    ``ds/dx_j = x_j / (d s)``, so ``d(x_i / s)/dx_j = delta_ij / s - x_i x_j / (d s^3)``::

        J_N(x) = diag(gain) (I / s - x x^T / (d s^3))
    """
    x = as_vector(x, "x")
    eps = as_eps(eps)
    gain = _gain(gain, x.shape[0])
    jac = _unit_rms_jacobian(x, _rms_scale(x, eps))
    with np.errstate(over="ignore", invalid="ignore"):
        out = gain[:, None] * jac  # diag(gain) @ J scales row i by gain_i
    check_overflow("rmsnorm_jacobian", {"diag(gain) J": out}, entries(x, "gain/bias", gain))
    return out


def _unit_rms_jacobian(x: np.ndarray, s: float) -> np.ndarray:
    """I / s - x x^T / (d s^3), written (I - u u^T / d) / s with u = x / s: s^3 underflows to
    0 for |x| ~ 1e-110 although the Jacobian is finite."""
    u = x / s
    return (np.eye(x.shape[0]) - np.outer(u, u) / x.shape[0]) / s


def layernorm_jacobian(x, eps=1e-6, gain=None) -> np.ndarray:
    """Jacobian of :func:`layernorm` (the bias drops out), [d, d] indexed [out, in].

    With c = x - mu and sigma = sqrt(mean(c^2) + eps): ``dc_i/dx_j = delta_ij - 1/d`` and, since
    the c_k sum to zero, ``dsigma/dx_j = c_j / (d sigma)``. Hence::

        J = diag(gain) ((I - 1 1^T / d) / sigma - c c^T / (d sigma^3))
    """
    x = as_vector(x, "x")
    eps = as_eps(eps)
    d = x.shape[0]
    c, sigma = _centred(x, eps)
    gain = _gain(gain, d)
    centring = np.eye(d) - np.full((d, d), 1.0 / d)
    u = c / sigma  # as in _unit_rms_jacobian: sigma^3 can underflow where J is finite
    jac = (centring - np.outer(u, u) / d) / sigma
    with np.errstate(over="ignore", invalid="ignore"):
        out = gain[:, None] * jac
    check_overflow("layernorm_jacobian", {"diag(gain) J": out}, entries(x, "gain/bias", gain))
    return out


def radial_action(x, eps=1e-6) -> np.ndarray:
    """``J_N(x) x`` for unit-gain RMSNorm, [d]; in closed form ``eps x / s^3``.

    ``J_N x = x / s - x (x^T x) / (d s^3) = x (s^2 - mean(x^2)) / s^3 = eps x / s^3``: moving along
    x changes the output only through eps, so scale invariance is exact only at eps = 0.
    """
    x = as_vector(x, "x")
    return rmsnorm_jacobian(x, eps) @ x


def scale_invariance_gap(x, a, eps=1e-6) -> float:
    """Exact ``max_i |RMSNorm(a x)_i - RMSNorm(x)_i|`` (unit gain) from the closed form.

    With q = mean(x^2), ``RMSNorm(a x) - RMSNorm(x) = x f`` where
    ``f = a / sqrt(a^2 q + eps) - 1 / sqrt(q + eps)``, so the gap is ``max|x| |f|``. For a > 0 the
    two terms nearly cancel; rationalising gives the cancellation-free form::

        f = eps (a^2 - 1) / ((a sqrt(q + eps) + sqrt(a^2 q + eps)) sqrt(a^2 q + eps) sqrt(q + eps))

    which is 0 for every a > 0 when eps = 0. For a < 0 the terms add and do not cancel.
    """
    x = as_vector(x, "x")
    eps = as_eps(eps)
    a = as_scalar(a, "a")
    s = _rms_scale(x, eps)
    with np.errstate(over="ignore"):
        ax = a * x
    inputs = f"a={a!r}, x={describe(x)}, eps={eps!r}"
    check_overflow("scale_invariance_gap", {"a·x": ax}, inputs)
    # NumPy floats: a division by an underflowed 0 gives inf (refused below), not a
    # ZeroDivisionError. The factors are grouped so that none overflows or underflows to 0
    # where the gap itself is representable: max|x| / s <= sqrt(d), eps / (s + ...) <= sqrt(eps).
    s, s_a = np.float64(s), np.float64(_rms_scale(ax, eps, "a·x"))
    m = np.max(np.abs(x))
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        if a < 0:  # the two terms add: |f| = |a| / s_a + 1 / s
            gap = np.max(np.abs(ax)) / s_a + m / s
        elif eps == 0 or m == 0:
            gap = np.float64(0.0)  # exact invariance, or RMSNorm(0) = 0 at every scale
        elif a > 1:  # divided through by a^2, which can overflow where f cannot
            r = s_a / a
            gap = (m / s) * (eps / (s + r) / r) * (1.0 - 1.0 / (a * a))
        else:
            gap = (m / s) * (eps / (a * s + s_a) / s_a) * (1.0 - a * a)
    check_overflow("scale_invariance_gap", {"the gap": gap}, inputs)
    return float(abs(gap))


def equality_tolerance(x, a, eps=1e-6, norm="rmsnorm") -> float:
    """How far N(a·x) may lie from sign(a)·N(x) (max over channels, unit gain) for N the
    named norm: rounding (`ROUNDING_TOL`) plus the most eps can move it, from a closed form.

    Write y = x (RMSNorm) or y = x - mean(x) (LayerNorm) and m = mean(y^2) (mean(x^2), or the
    variance), so N(x) = y / sqrt(m + eps). Scaling x by a scales y by a and m by a^2, so with
    g(t) = (1 + t)^(-1/2)::

        N(a x) - sign(a) N(x) = sign(a) (y / sqrt(m)) (g(eps / (a^2 m)) - g(eps / m))

    and, as |g'| <= 1/2 and 0 < g <= 1 for t >= 0::

        max_i |N(a x)_i - sign(a) N(x)_i| <= max|y / sqrt(m)| min(1, eps |1/a^2 - 1| / (2 m))

    with max|y / sqrt(m)| <= sqrt(d): 0 at eps = 0 and at |a| = 1. x: [d]; a finite, non-zero.
    """
    x = as_vector(x, "x")
    eps = as_eps(eps)
    a = as_scalar(a, "a")
    if a == 0:
        raise InputError("a must be non-zero (N(0·x) has no sign to compare), got 0.0")
    if norm not in ("rmsnorm", "layernorm"):
        raise InputError(f"norm must be 'rmsnorm' or 'layernorm', got {norm!r}")
    y = x if norm == "rmsnorm" else x - np.mean(x)
    peak = float(np.max(np.abs(y)))
    if eps == 0 or peak == 0:  # exact, or N(x) = N(a·x) = 0
        return ROUNDING_TOL
    u = y / peak  # max|u| = 1: max|y / sqrt(m)| = 1 / rms(u) without under- or overflow
    # m out of float64's range gives eps / m = inf or 0, and min(1, ·) still bounds the move
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        m = np.float64(peak) ** 2 * np.mean(u * u)
        moved = min(1.0, float(eps * abs(1.0 / (a * a) - 1.0) / (2.0 * m)))
    return ROUNDING_TOL + moved / float(np.sqrt(np.mean(u * u)))


def shift_scale_table(x, eps=1e-6, shift=2.0, scale=3.0, channel_scales=None) -> list[dict]:
    """Which transforms T leave N(T x) = N(x), or flip it to -N(x), for N in (RMSNorm,
    LayerNorm), unit gain.

    Transforms: ``shift`` x + shift; ``positive_scale`` scale x; ``negative_scale`` -scale x;
    ``per_channel_scale`` channel_scales (*) x (default 1, 2, ..., d).

    Both equalities are judged to ``equality_tolerance(x, scale, eps, norm)``.

    Returns one row per (transform, norm), transforms outermost: ``transform``, ``norm``,
    ``invariant`` (max_deviation <= tolerance), ``max_deviation`` = max |N(T x) - N(x)|,
    ``sign_flip`` (sign_flip_deviation <= tolerance), ``sign_flip_deviation`` =
    max |N(T x) + N(x)|, ``tolerance``.
    """
    x = as_vector(x, "x")
    eps = as_eps(eps)
    shift = as_scalar(shift, "shift")
    scale = as_scalar(scale, "scale")
    if scale <= 0:
        raise InputError(f"scale must be > 0 (its negative is tried too), got {scale!r}")
    d = x.shape[0]
    if channel_scales is None:
        channel_scales = np.arange(1.0, d + 1.0)
    else:
        channel_scales = as_channel_vector(channel_scales, "channel_scales", d)
    norms = {"rmsnorm": lambda v: rmsnorm(v, eps), "layernorm": lambda v: layernorm(v, eps)}
    with np.errstate(over="ignore"):
        transformed = {"shift": x + shift, "positive_scale": scale * x,
                       "negative_scale": -scale * x, "per_channel_scale": channel_scales * x}
    check_overflow("shift_scale_table", transformed,
                   f"x={describe(x)}, shift={shift!r}, scale={scale!r}, channel_scales="
                   f"{describe(channel_scales)}")
    tolerance = {name: equality_tolerance(x, scale, eps, name) for name in norms}
    rows = []
    for name, tx in transformed.items():
        for norm_name, norm in norms.items():
            base, moved = norm(x), norm(tx)
            deviation = float(np.max(np.abs(moved - base)))
            flip = float(np.max(np.abs(moved + base)))
            rows.append({"transform": name, "norm": norm_name,
                         "invariant": deviation <= tolerance[norm_name],
                         "max_deviation": deviation, "sign_flip": flip <= tolerance[norm_name],
                         "sign_flip_deviation": flip, "tolerance": tolerance[norm_name]})
    return rows
