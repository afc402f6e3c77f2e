"""Central-difference Jacobians: the independent check for every analytic Jacobian here."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from blocklab.errors import InputError

from ._validate import as_vector, real_numbers

# Central differences have truncation error O(h^2 f''') and rounding error O(eps_mach |f| / h);
# the sum is smallest near h ~ eps_mach^(1/3) (about 6e-6 in float64), giving errors of order
# eps_mach^(2/3) ~ 4e-11 relative to the scale of f. Scaling by max(1, |x_i|) keeps the step a
# fixed relative size for large coordinates and a fixed absolute size near zero.
_CBRT_EPS = float(np.cbrt(np.finfo(np.float64).eps))


def central_difference_jacobian(f: Callable, x, step=None) -> np.ndarray:
    """Numerical Jacobian ``J[i, j] ~ (f(x + h_j e_j)_i - f(x - h_j e_j)_i) / (2 h_j)``.

    Args:
        f: maps a float64 vector [n] to a vector [m] (a scalar counts as [1]).
        x: point of evaluation, [n].
        step: h, a positive scalar or a per-coordinate [n] vector; by default
            ``cbrt(eps_mach) * max(1, |x_j|)``.

    Returns:
        [m, n] indexed [out, in], the same layout as the analytic Jacobians.
    """
    x = as_vector(x, "x")
    n = x.shape[0]
    if step is None:
        steps = _CBRT_EPS * np.maximum(1.0, np.abs(x))
    else:
        steps = real_numbers(step, "step", "a positive scalar or a vector of them")
        if steps.shape not in ((), (n,)):
            raise InputError(f"step must be a scalar or have shape ({n},), got {steps.shape}")
        if not np.all(np.isfinite(steps) & (steps > 0)):
            raise InputError(f"step must be positive and finite, got {step!r}")
        steps = np.broadcast_to(steps, (n,))
    out_len = _evaluate(f, x).shape[0]
    jac = np.empty((out_len, n))
    for j in range(n):
        plus, minus = x.copy(), x.copy()
        plus[j] += steps[j]
        minus[j] -= steps[j]
        f_plus, f_minus = _evaluate(f, plus), _evaluate(f, minus)
        if f_plus.shape[0] != out_len or f_minus.shape[0] != out_len:
            raise InputError(
                f"f returned outputs of different lengths {out_len}, {f_plus.shape[0]}, "
                f"{f_minus.shape[0]} near x"
            )
        # Divide by the step actually taken: x_j + h is rounded, and using the represented
        # difference removes that rounding from the quotient.
        jac[:, j] = (f_plus - f_minus) / (plus[j] - minus[j])
    return jac


def _evaluate(f: Callable, x: np.ndarray) -> np.ndarray:
    out = np.atleast_1d(real_numbers(f(x), "f(x)", "a real number or a 1-D vector of them"))
    if out.ndim != 1:
        raise InputError(f"f must return a scalar or a 1-D vector, got shape {out.shape}")
    if not np.all(np.isfinite(out)):
        raise InputError("f returned a non-finite value near x")
    return out
