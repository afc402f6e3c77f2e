import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from blocklab.reference import (
    central_difference_jacobian,
    commutator,
    residual_paths,
    rmsnorm,
    rmsnorm_jacobian,
)

X = np.array([1.0, 3.0])
DIAG = np.diag([2.0, -1.0])


@st.composite
def block_inputs(draw):
    d = draw(st.integers(2, 16))
    x = draw(hnp.arrays(np.float64, d, elements=st.floats(-10, 10)))
    a = draw(hnp.arrays(np.float64, (d, d), elements=st.floats(-1, 1)))
    eps = draw(st.sampled_from([0.0, 1e-6, 1e-2]))
    return x, a, eps


# The page's zero-sublayer example (C09) is `blocklab verify`'s worked check.
def test_closed_forms_and_the_order_of_the_matrix_product():
    a = np.array([[0.5, -1.0], [2.0, 0.25]])
    eps = 1e-6
    out = residual_paths(X, a, eps)
    inner = X + a @ X
    np.testing.assert_allclose(out["pre"], X + a @ rmsnorm(X, eps), atol=1e-15)
    np.testing.assert_allclose(out["post"], rmsnorm(inner, eps), atol=1e-15)
    np.testing.assert_allclose(
        out["pre_jacobian"], np.eye(2) + a @ rmsnorm_jacobian(X, eps), atol=1e-15
    )
    np.testing.assert_allclose(
        out["post_jacobian"], rmsnorm_jacobian(inner, eps) @ (np.eye(2) + a), atol=1e-15
    )
    # Order of the matrix product: pre-norm uses A·J_N (above; J_N·A differs by 0.75 for that a),
    # and even a diagonal A does not commute with the norm's Jacobian.
    result = commutator(DIAG, X)
    assert set(result) == {"a_jn", "jn_a", "max_difference"}
    jac = rmsnorm_jacobian(X)
    np.testing.assert_allclose(result["a_jn"], DIAG @ jac, atol=1e-15)
    np.testing.assert_allclose(result["jn_a"], jac @ DIAG, atol=1e-15)
    assert type(result["max_difference"]) is float
    assert result["max_difference"] > 0.1


# --- Jacobians against central differences (C09, C14) --------------------------------------
@pytest.mark.parametrize("path", ["pre", "post"])
@settings(max_examples=25, deadline=None)
@given(block_inputs())
def test_jacobian_matches_central_differences(assert_jacobian_close, path, args):
    x, a, eps = args
    normed = x if path == "pre" else x + a @ x  # the input the norm's denominator sees
    assume(np.sqrt(np.mean(normed * normed)) >= 0.5 and np.ptp(x) > 0 and np.ptp(x + a @ x) > 0)
    analytic = residual_paths(x, a, eps)[f"{path}_jacobian"]
    numeric = central_difference_jacobian(lambda v: residual_paths(v, a, eps)[path], x)
    assert_jacobian_close(analytic, numeric)


# --- errors ---------------------------------------------------------------------------------
BAD_MATRICES = [
    (np.zeros((2, 3)), r"square \[d, d\] with d = len\(x\) = 2, got shape \(2, 3\)"),
    (np.zeros((3, 3)), r"matrix must be square .* got shape \(3, 3\)"),
    ([1.0, 2.0], r"matrix must be a non-empty 2-D \[out, in\] matrix, got shape \(2,\)"),
    ([[0.0, np.nan], [0.0, 0.0]], r"matrix must be finite"),
]


@pytest.mark.parametrize("call, match", [
    *[(lambda matrix=matrix: residual_paths(X, matrix), match) for matrix, match in BAD_MATRICES],
    *[(lambda matrix=matrix: commutator(matrix, X), match) for matrix, match in BAD_MATRICES],
    (lambda: residual_paths(X, np.zeros((2, 2)), eps=-1.0),
     "eps must be a finite real number >= 0"),
    (lambda: commutator(np.zeros((2, 2)), X, eps=float("nan")),
     "eps must be a finite real number >= 0"),
    # The page's residual_paths calls norm_statistics, which also checks LayerNorm's denominator.
    (lambda: residual_paths([2.0, 2.0], np.zeros((2, 2)), eps=0.0),
     r"LayerNorm denominator is zero.*x=\[2\.0, 2\.0\]"),
    # A zero post-norm input (A = -I) is named as x + A·x by the RMSNorm check.
    (lambda: residual_paths([1.0, 3.0], -np.eye(2), eps=0.0),
     r"RMSNorm denominator is zero: mean\(\(x \+ A·x\)\^2\) \+ eps = 0 "
     r"for x \+ A·x=\[0\.0, 0\.0\]"),
])
def test_rejects_bad_matrices_eps_and_zero_denominators(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_a_constant_post_norm_input_is_named_as_x_plus_a_x():
    # x = [1, 3] is not constant; x + A·x = [1 + 1, 3 - 1] = [2, 2] is, and only it is refused.
    with pytest.raises(ValueError, match=r"LayerNorm denominator is zero: variance \+ eps = 0 "
                                         r"for constant x \+ A·x=\[2\.0, 2\.0\] \(the post-norm "
                                         r"input\), eps=0\.0") as info:
        residual_paths([1, 3], [[1, 0], [0, -1 / 3]], eps=0)
    assert "constant x=" not in str(info.value) and "[1.0, 3.0]" not in str(info.value)
