import math
import warnings

import numpy as np
import pytest

from blocklab.reference import gelu, gelu_tanh, relu, relu_grad, sigmoid, silu, silu_grad
from blocklab.reference.finite_diff import central_difference_jacobian

ALL = [sigmoid, silu, silu_grad, relu, relu_grad, gelu, gelu_tanh]
GRID = np.linspace(-8.0, 8.0, 321)
EXTREMES = np.array([-1e308, -1e300, -1e20, -800.0, -40.0, 0.0, 40.0, 800.0, 1e20, 1e300, 1e308])


def test_sigmoid_naive_formula_symmetry_and_limits():
    z = np.linspace(-30.0, 30.0, 601)  # where the naive formula is safe
    np.testing.assert_allclose(sigmoid(z), 1.0 / (1.0 + np.exp(-z)), rtol=1e-15, atol=1e-17)
    assert sigmoid(0.0) == 0.5
    np.testing.assert_allclose(sigmoid(-GRID), 1.0 - sigmoid(GRID), atol=1e-16)
    np.testing.assert_array_equal(sigmoid([-1e308, 1e308]), [0.0, 1.0])


@pytest.mark.parametrize("f", ALL, ids=lambda f: f.__name__)
def test_no_floating_point_warnings_at_extreme_inputs(f):
    # Underflow to 0.0 is exact to float64 precision here and NumPy ignores it by default.
    with warnings.catch_warnings(), np.errstate(over="raise", invalid="raise", divide="raise"):
        warnings.simplefilter("error")
        out = f(EXTREMES)
    assert np.all(np.isfinite(out))


@pytest.mark.parametrize("f", ALL, ids=lambda f: f.__name__)
def test_shape_and_dtype_follow_input(f):
    assert isinstance(f(0.5), np.floating)
    assert np.ndim(f(0.5)) == 0
    out = f([[1, -2, 3], [0, 4, -5]])
    assert out.shape == (2, 3) and out.dtype == np.float64


@pytest.mark.parametrize("f", ALL, ids=lambda f: f.__name__)
def test_nan_propagates(f):
    assert math.isnan(f(float("nan")))


def test_silu_derivative_matches_central_difference():
    numeric = np.diag(central_difference_jacobian(silu, GRID))  # silu acts elementwise
    np.testing.assert_allclose(silu_grad(GRID), numeric, rtol=1e-8, atol=1e-9)


def test_relu_subgradient_and_silu_gradient_below_zero():
    np.testing.assert_array_equal(relu([-2.0, 0.0, 3.0]), [0.0, 0.0, 3.0])
    # The derivative at 0 is taken as 0, the convention autograd uses.
    np.testing.assert_array_equal(relu_grad([-2.0, 0.0, 3.0]), [0.0, 0.0, 1.0])
    # C17: SiLU does not cut the gradient for z < 0, ReLU does.
    z = np.linspace(-20.0, -0.01, 200)
    assert np.all(silu_grad(z) != 0.0)
    assert np.all(relu_grad(z) == 0.0)
    # SiLU is non-monotone: its derivative is negative below z ~ -1.278.
    assert silu_grad(-2.0) < 0 < silu_grad(-1.0)


def test_silu_and_gelu_values():
    assert silu(1.0) == pytest.approx(0.7310585786300049, abs=1e-15)
    assert silu(-1.0) == pytest.approx(-0.2689414213699951, abs=1e-15)
    np.testing.assert_array_equal(silu([-1e308, 1e308]), [-0.0, 1e308])
    # gelu(1) = Phi(1), gelu(-1) = -Phi(-1).
    assert gelu(1.0) == pytest.approx(0.8413447460685429, abs=1e-15)
    assert gelu(-1.0) == pytest.approx(-0.15865525393145707, abs=1e-15)


def test_gelu_tanh_approximates_exact_gelu():
    # The tanh form is a fit; its largest error on the real line is a few 1e-4.
    assert np.max(np.abs(gelu_tanh(GRID) - gelu(GRID))) < 1e-3
    assert gelu_tanh(0.0) == 0.0
