import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from blocklab.reference import (
    central_difference_jacobian,
    layernorm,
    layernorm_jacobian,
    norm_statistics,
    radial_action,
    rmsnorm,
    rmsnorm_jacobian,
    scale_invariance_gap,
    shift_scale_table,
)
from blocklab.reference.norms import ROUNDING_TOL, equality_tolerance

SQRT5 = math.sqrt(5.0)
STAT_KEYS = {"mean", "square_mean", "variance", "rmsnorm", "layernorm", "jacobian"}
PROPERTY = settings(max_examples=50, deadline=None)
EPS = st.sampled_from([0.0, 1e-6, 1e-2, 0.5])


def vectors(min_size=1, max_size=16, bound=10.0):
    return st.integers(min_size, max_size).flatmap(
        lambda d: hnp.arrays(np.float64, d, elements=st.floats(-bound, bound))
    )


def rms(x):
    return float(np.sqrt(np.mean(x * x)))


# --- page values (C05, C06, C08) ------------------------------------------------------------
def test_page_example_one_three():
    stats = norm_statistics([1.0, 3.0], eps=0.0)
    assert set(stats) == STAT_KEYS
    assert stats["mean"] == 2.0 and stats["square_mean"] == 5.0 and stats["variance"] == 1.0
    np.testing.assert_allclose(stats["rmsnorm"], [1 / SQRT5, 3 / SQRT5], atol=1e-15)
    np.testing.assert_allclose(stats["layernorm"], [-1.0, 1.0], atol=1e-15)
    x = np.array([1.0, 3.0])
    expected_jac = np.eye(2) / SQRT5 - np.outer(x, x) / (2 * SQRT5**3)
    np.testing.assert_allclose(stats["jacobian"], expected_jac, atol=1e-15)
    stats = norm_statistics([1.0, 3.0])  # the default eps, to the page's 1e-6
    np.testing.assert_allclose(stats["rmsnorm"], [0.447214, 1.341641], atol=1e-6)
    np.testing.assert_allclose(stats["layernorm"], [-1.0, 1.0], atol=1e-6)
    stats = norm_statistics([0.0, 0.0, 0.0], eps=1e-6)  # a zero input gives zeros
    np.testing.assert_array_equal(stats["rmsnorm"], 0.0)
    np.testing.assert_array_equal(stats["layernorm"], 0.0)
    np.testing.assert_allclose(stats["jacobian"], np.eye(3) / math.sqrt(1e-6))


@pytest.mark.parametrize("call, match", [
    (lambda: norm_statistics([2.0, 2.0], eps=0.0),
     r"LayerNorm denominator is zero.*x=\[2\.0, 2\.0\]"),
    # mean([0.1] * 3) rounds to 0.10000000000000002, so x - mean is not exactly zero.
    (lambda: norm_statistics([0.1, 0.1, 0.1], eps=0.0), "LayerNorm denominator is zero"),
    (lambda: norm_statistics([0.0, 0.0], eps=0.0),
     r"RMSNorm denominator is zero.*x=\[0\.0, 0\.0\]"),
    (lambda: rmsnorm([1e-200, 0.0], eps=0.0), r"mean\(x\^2\) \+ eps underflows to 0 in float64"),
    (lambda: layernorm([1e-170, 2e-170], eps=0.0), r"variance \+ eps underflows to 0 in float64"),
    (lambda: layernorm([1.0, 3.0], bias=[0.0]), r"bias must have shape \(2,\)"),
    (lambda: layernorm([5.0], eps=0.0), r"LayerNorm denominator is zero.*constant x=\[5\.0\]"),
    (lambda: layernorm_jacobian([1.0, 1.0], eps=0.0), "LayerNorm denominator is zero"),
    (lambda: scale_invariance_gap([1.0, 3.0], float("nan"), 1e-6), "a must be a finite real"),
    (lambda: scale_invariance_gap([1.0, 3.0], 0.0, 0.0), "RMSNorm denominator is zero"),
    (lambda: scale_invariance_gap([1.0, 3.0], 2.0, -1.0), "eps must be"),
    (lambda: equality_tolerance([1.0, 3.0], 0.0), "a must be non-zero"),
    (lambda: equality_tolerance([1.0, 3.0], 2.0, 1e-6, "batchnorm"),
     "norm must be 'rmsnorm' or 'layernorm'"),
    (lambda: equality_tolerance([1.0, 3.0], float("inf")), "a must be a finite real number"),
    *[(lambda x=x: norm_statistics(x), match) for x, match in [
        ([], r"x must be a non-empty 1-D vector, got shape \(0,\)"),
        ([[1.0, 2.0]], "x must be a non-empty 1-D vector"),
        ([1.0, float("nan")], r"x must be finite, got \[nan\] at indices \[1\]"),
        ([-float("inf"), 1.0], r"x must be finite, got \[-inf\] at indices \[0\]"),
        ([1e200, 1.0], r"mean\(x\^2\) overflows float64 for x=\[1e\+200, 1\.0\]"),
        ("ab", "1-D sequence of real numbers"),
    ]],
    *[(lambda eps=eps: norm_statistics([1.0, 3.0], eps=eps),
       r"eps must be a finite real number >= 0, got ") for eps in
      (-1e-6, float("nan"), float("inf"), "small", None)],
    *[(lambda f=f, gain=gain: f([1.0, 3.0], gain=gain), match)
      for f in (rmsnorm, rmsnorm_jacobian) for gain, match in [
          ([1.0, 2.0, 3.0], r"gain must have shape \(2,\) to match x, got shape \(3,\)"),
          ([1.0, float("nan")], r"gain must be finite"),
      ]],
    *[(lambda kwargs=kwargs: shift_scale_table([1.0, 3.0], **{"eps": 1e-6, **kwargs}), match)
      for kwargs, match in [
          ({"scale": 0.0}, r"scale must be > 0"),
          ({"scale": -2.0}, r"scale must be > 0"),
          ({"shift": float("inf")}, r"shift must be a finite real number"),
          ({"channel_scales": [1.0]}, r"channel_scales must have shape \(2,\)"),
          ({"eps": -1.0}, r"eps must be a finite real number >= 0"),
      ]],
])
def test_zero_denominators_and_bad_arguments_are_refused(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- rmsnorm / layernorm with gain and bias -------------------------------------------------
def test_gain_bias_and_inputs_only_norm_statistics_refuses():
    x = [1.0, 3.0]
    gain, bias = np.array([2.0, -0.5]), np.array([0.25, 1.0])
    np.testing.assert_allclose(rmsnorm(x, 0.0, gain), gain * np.array([1.0, 3.0]) / SQRT5)
    np.testing.assert_allclose(layernorm(x, 0.0, gain, bias), gain * np.array([-1.0, 1.0]) + bias)
    np.testing.assert_allclose(layernorm(x, 0.0, gain), gain * np.array([-1.0, 1.0]))
    # Alone, RMSNorm takes a constant input at eps = 0 and LayerNorm a zero one at eps > 0.
    np.testing.assert_allclose(rmsnorm([2.0, 2.0], eps=0.0), [1.0, 1.0])
    np.testing.assert_array_equal(layernorm([0.0, 0.0]), [0.0, 0.0])


# --- Jacobians against central differences (C06, C14) --------------------------------------
@settings(max_examples=100, deadline=None)  # 50 per norm
@given(vectors(), EPS, st.booleans(), st.sampled_from(["rmsnorm", "layernorm"]), st.data())
def test_jacobian_matches_central_differences(assert_jacobian_close, x, eps, with_gain, norm,
                                              data):
    assume(rms(x) >= 0.5 if norm == "rmsnorm" else len(x) >= 2 and np.std(x) >= 0.5)
    gain = bias = None
    if with_gain:
        gain = data.draw(hnp.arrays(np.float64, x.shape, elements=st.floats(-3, 3)))
        if norm == "layernorm":
            bias = data.draw(hnp.arrays(np.float64, x.shape, elements=st.floats(-3, 3)))
    if norm == "rmsnorm":
        analytic = rmsnorm_jacobian(x, eps, gain)
        numeric = central_difference_jacobian(lambda v: rmsnorm(v, eps, gain), x)
    else:
        analytic = layernorm_jacobian(x, eps, gain)
        numeric = central_difference_jacobian(lambda v: layernorm(v, eps, gain, bias), x)
    assert_jacobian_close(analytic, numeric)


# --- radial action and scale (in)variance (C06, C07) -----------------------------------------
@PROPERTY
@given(vectors(), st.sampled_from([0.0, 1e-6, 1e-2, 0.5, 2.0]))
def test_radial_action_equals_eps_x_over_s_cubed(x, eps):
    assume(eps > 0 or rms(x) >= 1e-3)
    s = math.sqrt(float(np.mean(x * x)) + eps)
    expected = eps * x / s**3
    # J x subtracts two terms of size |x| / s; its rounding is a few ulps of that.
    np.testing.assert_allclose(
        radial_action(x, eps), expected, atol=1e-13 * (1 + np.max(np.abs(x)) / s)
    )


@PROPERTY
@given(vectors(), st.floats(1e-3, 1e3))
def test_positive_scale_invariance_at_zero_eps(x, a):
    assume(rms(x) >= 1e-3)
    assert np.max(np.abs(rmsnorm(a * x, 0.0) - rmsnorm(x, 0.0))) <= 1e-12
    assert scale_invariance_gap(x, a, 0.0) == 0.0


@PROPERTY
@given(vectors(), st.floats(-100, 100), st.sampled_from([1e-6, 1e-2, 0.5]))
def test_scale_gap_at_positive_eps_matches_closed_form(x, a, eps):
    direct = float(np.max(np.abs(rmsnorm(a * x, eps) - rmsnorm(x, eps))))
    # The direct difference of two O(1) outputs carries a few ulps of rounding.
    assert direct == pytest.approx(scale_invariance_gap(x, a, eps), abs=1e-14)


# --- shift/scale table (C05, C07) -----------------------------------------------------------
def _by_key(rows):
    return {(r["transform"], r["norm"]): r for r in rows}


def test_table_at_zero_eps():
    rows = shift_scale_table([1.0, 3.0, -2.0], eps=0.0)
    assert len(rows) == 8
    assert all(
        set(r) == {"transform", "norm", "invariant", "max_deviation", "sign_flip",
                   "sign_flip_deviation", "tolerance"} for r in rows
    )
    assert all(r["tolerance"] == ROUNDING_TOL for r in rows)  # at eps = 0: rounding alone
    table = _by_key(rows)
    expected_invariant = {
        ("shift", "rmsnorm"): False,
        ("shift", "layernorm"): True,
        ("positive_scale", "rmsnorm"): True,
        ("positive_scale", "layernorm"): True,
        ("negative_scale", "rmsnorm"): False,
        ("negative_scale", "layernorm"): False,
        ("per_channel_scale", "rmsnorm"): False,
        ("per_channel_scale", "layernorm"): False,
    }
    assert {k: r["invariant"] for k, r in table.items()} == expected_invariant
    assert not table[("per_channel_scale", "rmsnorm")]["sign_flip"]
    assert all(type(r["invariant"]) is bool and type(r["sign_flip"]) is bool for r in rows)
    assert all(type(r[k]) is float for r in rows
               for k in ("max_deviation", "sign_flip_deviation", "tolerance"))
    uniform = _by_key(shift_scale_table([1.0, 3.0], 0.0, channel_scales=[2.0, 2.0]))
    assert uniform[("per_channel_scale", "rmsnorm")]["invariant"]  # a uniform "per-channel" scale


def test_table_at_positive_eps_reports_the_scale_gap_within_eps_tolerance():
    x, eps = [1.0, 3.0, -2.0], 1e-6
    table = _by_key(shift_scale_table(x, eps=eps, scale=3.0))
    row = table[("positive_scale", "rmsnorm")]
    gap = scale_invariance_gap(x, 3.0, eps)
    assert row["max_deviation"] == pytest.approx(gap, abs=1e-14) and 1e-8 < gap < 1e-6
    assert scale_invariance_gap(x, 1.0, eps) == 0.0
    assert row["invariant"] and gap <= row["tolerance"] == equality_tolerance(x, 3.0, eps)
    # Shift invariance of LayerNorm does not depend on eps.
    assert table[("shift", "layernorm")]["invariant"]


def test_rmsnorm_at_eps_1e6_and_scale_minus_3_flips_the_sign_within_its_tolerance():
    """N(-3x) = -N(x) misses only by eps's closed-form gap (2e-7 here), which the table's
    tolerance bounds: a sign flip, as at eps = 0, where it is exact."""
    x = [1.0, 3.0, -2.0, 0.5]
    for norm in ("rmsnorm", "layernorm"):
        row = _by_key(shift_scale_table(x, eps=1e-6, scale=3.0))[("negative_scale", norm)]
        assert row["sign_flip"] and not row["invariant"], norm
        assert 1e-7 < row["sign_flip_deviation"] <= row["tolerance"] < 3e-7
        exact = _by_key(shift_scale_table(x, eps=0.0, scale=3.0))[("negative_scale", norm)]
        assert exact["sign_flip"] and exact["sign_flip_deviation"] <= ROUNDING_TOL
    row = _by_key(shift_scale_table(x, eps=1e-6, scale=3.0))[("negative_scale", "rmsnorm")]
    assert row["sign_flip_deviation"] == pytest.approx(scale_invariance_gap(x, 3.0, 1e-6),
                                                       abs=1e-15)


def _scale_gap(x, a, eps, norm) -> float:
    """max |N(a·x) − sign(a)·N(x)| in closed form: max|y|·||a|/sqrt(a²m + ε) − 1/sqrt(m + ε)|,
    y = x (RMSNorm) or x − mean(x) (LayerNorm), m = mean(y²)."""
    y = np.asarray(x) if norm == "rmsnorm" else np.asarray(x) - np.mean(x)
    m = float(np.mean(y * y))
    return float(np.max(np.abs(y))) * abs(abs(a) / math.sqrt(a * a * m + eps)
                                          - 1 / math.sqrt(m + eps))


@PROPERTY
@given(vectors(min_size=2), st.floats(0.05, 20.0), st.booleans(), EPS,
       st.sampled_from(["rmsnorm", "layernorm"]))
def test_equality_tolerance_bounds_the_scale_gap(x, magnitude, negative, eps, norm):
    """The stated tolerance holds every |N(a·x) − sign(a)·N(x)|, computed directly and in
    closed form; it is rounding alone at ε = 0, and close to the gap itself when ε ≪ m."""
    y = x if norm == "rmsnorm" else x - np.mean(x)
    assume(rms(y) >= 1e-2)
    a = -magnitude if negative else magnitude
    normed = rmsnorm if norm == "rmsnorm" else layernorm
    direct = float(np.max(np.abs(normed(a * x, eps) - np.sign(a) * normed(x, eps))))
    tol = equality_tolerance(x, a, eps, norm)
    assert direct <= tol
    assert _scale_gap(x, a, eps, norm) <= tol
    if eps == 0:
        assert tol == ROUNDING_TOL
    elif eps / (min(1.0, a * a) * float(np.mean(y * y))) < 1e-4 and abs(magnitude - 1) > 0.1:
        assert tol - ROUNDING_TOL <= 1.01 * _scale_gap(x, a, eps, norm) + ROUNDING_TOL
