import numpy as np
import pytest

from blocklab.reference import central_difference_jacobian


def test_linear_and_nonlinear_maps_give_their_jacobians():
    a = np.array([[1.0, -2.0, 0.5], [3.0, 0.0, 4.0]])
    jac = central_difference_jacobian(lambda v: a @ v, [0.3, -1.2, 2.0])
    np.testing.assert_allclose(jac, a, rtol=1e-10, atol=1e-10)  # [out, in], shapes too
    x = np.array([0.7, -1.3, 25.0])

    def f(v):
        return np.array([np.sin(v[0]) * v[1], np.exp(v[1]) + v[2] ** 2])

    expected = np.array([[np.cos(x[0]) * x[1], np.sin(x[0]), 0.0], [0.0, np.exp(x[1]), 2 * x[2]]])
    # The error scales with |f| (here up to 625 from v[2]^2), not with each entry of J.
    scale = np.max(np.abs(f(x)))
    np.testing.assert_allclose(
        central_difference_jacobian(f, x), expected, rtol=1e-9, atol=1e-9 * scale
    )


def test_default_step_beats_a_tiny_step():
    # h = 1e-13 is dominated by rounding error O(eps/h); the default balances it with O(h^2).
    x = np.array([1.5])
    exact = np.exp(1.5)
    default_error = abs(central_difference_jacobian(np.exp, x)[0, 0] - exact)
    tiny_error = abs(central_difference_jacobian(np.exp, x, step=1e-13)[0, 0] - exact)
    assert default_error < 1e-9 < tiny_error


def test_scalar_output_is_one_row_and_steps_are_scalar_or_vector():
    jac = central_difference_jacobian(lambda v: float(v @ v), [1.0, 2.0])
    np.testing.assert_allclose(jac, [[2.0, 4.0]], rtol=1e-9)
    f = np.sin
    x = np.array([0.1, 0.2])
    for step in (1e-5, [1e-5, 2e-5]):
        np.testing.assert_allclose(
            central_difference_jacobian(f, x, step=step), np.diag(np.cos(x)), atol=1e-9
        )


@pytest.mark.parametrize("f, x, step, match", [
    *[(np.sin, [1.0, 2.0], step, "step must be positive and finite")
      for step in (0.0, -1e-5, float("nan"), float("inf"))],
    (np.sin, [1.0, 2.0], [1e-5] * 3, r"step must be a scalar or have shape \(2,\)"),
    (np.sin, [], None, "non-empty 1-D"),
    (np.sin, [[1.0]], None, "non-empty 1-D"),
    (np.sin, [1.0, float("nan")], None, "x must be finite"),
    (lambda v: np.outer(v, v), [1.0, 2.0], None, "scalar or a 1-D vector"),
    (lambda v: np.where(v[0] > 1.0, np.inf, v), [1.0], None, "non-finite value"),
    (lambda v: np.ones(1 + int(v[0] > 1.0)), [1.0], None, "different lengths"),
])
def test_rejects_bad_arguments(f, x, step, match):
    with pytest.raises(ValueError, match=match):
        central_difference_jacobian(f, x, step=step)
