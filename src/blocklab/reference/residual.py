"""Pre-norm vs post-norm residual blocks with a linear sublayer F(x) = A x, and their Jacobians.

Both placements use unit-gain RMSNorm N, so only the position of the norm differs::

    pre:   y = x + F(N(x))        J_pre  = I + J_F(N(x)) J_N(x)      = I + A J_N(x)
    post:  y = N(x + F(x))        J_post = J_N(x + F(x)) (I + J_F(x)) = J_N(x + A x) (I + A)

    pre:   x --+----------------(+)--> y        post:  x --+---> F --(+)--> N --> y
               |                 ^                          |          ^
               +--> N --> F -----+                          +----------+

The pre-norm Jacobian keeps a bare identity term; every post-norm path passes through J_N.

Shape legend: d = width; x: [d]; A: [d, d] stored [out, in]; Jacobians [d, d] indexed [out, in].
"""

from __future__ import annotations

import numpy as np

from blocklab.errors import InputError

from ._validate import as_eps, as_matrix, as_vector, check_overflow, entries
from .norms import _statistics, rmsnorm_jacobian


def _square_for(x: np.ndarray, matrix) -> np.ndarray:
    a = as_matrix(matrix, "matrix")
    d = x.shape[0]
    if a.shape != (d, d):
        raise InputError(f"matrix must be square [d, d] with d = len(x) = {d}, got shape {a.shape}")
    return a


def residual_paths(x, matrix, eps=1e-6) -> dict:
    """Outputs and Jacobians of the pre-norm and post-norm blocks with F(x) = A x.

    Args:
        x: input, [d].
        matrix: the sublayer A, [d, d].
        eps: RMSNorm denominator constant, >= 0.

    Returns:
        ``pre`` x + A N(x) and ``post`` N(x + A x), [d]; ``pre_jacobian`` I + A J_N(x) and
        ``post_jacobian`` J_N(x + A x) (I + A), [d, d]. As `norm_statistics`, a constant x
        or x + A·x at eps = 0 is refused, as on the page, named as what it is.
    """
    x = as_vector(x, "x")
    a = _square_for(x, matrix)
    eps = as_eps(eps)
    d = x.shape[0]
    inputs = entries(x, "matrix", a)
    norm_x = _statistics(x, eps)
    with np.errstate(over="ignore", invalid="ignore"):
        inner = x + a @ x
    check_overflow("residual_paths", {"the post-norm input x + A·x": inner}, inputs)
    norm_inner = _statistics(inner, eps, "x + A·x", " (the post-norm input)")
    identity = np.eye(d)
    with np.errstate(over="ignore", invalid="ignore"):
        out = {
            "pre": x + a @ norm_x["rmsnorm"],
            "post": norm_inner["rmsnorm"],
            "pre_jacobian": identity + a @ norm_x["jacobian"],
            "post_jacobian": norm_inner["jacobian"] @ (identity + a),
        }
    check_overflow("residual_paths", {"pre = x + A·N(x)": out["pre"],
                                      "pre_jacobian = I + A·J_N(x)": out["pre_jacobian"],
                                      "post_jacobian = J_N(x + A·x)·(I + A)":
                                          out["post_jacobian"]}, inputs)
    return out


def commutator(matrix, x, eps=1e-6) -> dict:
    """Compare ``A J_N(x)`` with ``J_N(x) A`` (unit-gain RMSNorm), to show the order matters.

    Returns:
        ``a_jn`` A J_N(x) and ``jn_a`` J_N(x) A, [d, d]; ``max_difference`` the largest
        |entry| of their difference (float). Non-zero in general, even for a diagonal A.
    """
    x = as_vector(x, "x")
    a = _square_for(x, matrix)
    jac = rmsnorm_jacobian(x, as_eps(eps))
    with np.errstate(over="ignore", invalid="ignore"):
        a_jn = a @ jac
        jn_a = jac @ a
        difference = np.max(np.abs(a_jn - jn_a))
    check_overflow("commutator", {"A·J_N(x)": a_jn, "J_N(x)·A": jn_a,
                                  "max |A·J_N(x) − J_N(x)·A|": difference},
                   entries(x, "matrix", a))
    return {"a_jn": a_jn, "jn_a": jn_a, "max_difference": float(difference)}
