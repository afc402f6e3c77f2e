import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from blocklab.reference import (
    central_difference_jacobian,
    equal_param_width,
    ffn_budget,
    llama_ffn_width,
    swiglu,
    swiglu_jacobian,
)

EYE2 = np.eye(2)
SWIGLU_KEYS = {"gate", "up", "hidden", "output", "parameters", "hidden_elements"}
BUDGET_KEYS = {"matrix_params", "bias_params", "total_params", "branch_elements", "branches",
               "intermediate_elements"}


def _naive_swiglu(x, w_g, w_u, w_d):
    """Loop-by-loop transcription of the page's pure-Python swiglu, as an independent check."""

    def linear(matrix, v):
        return [sum(a * b for a, b in zip(row, v, strict=True)) for row in matrix]

    gate, up = linear(w_g, x), linear(w_u, x)
    hidden = [g / (1.0 + math.exp(-g)) * u for g, u in zip(gate, up, strict=True)]
    return gate, up, hidden, linear(w_d, hidden)


@st.composite
def swiglu_inputs(draw, max_value=2.0):
    d = draw(st.integers(1, 16))
    m = draw(st.integers(1, 16))
    floats = st.floats(-max_value, max_value, allow_nan=False)
    x = draw(hnp.arrays(np.float64, d, elements=floats))
    w_g = draw(hnp.arrays(np.float64, (m, d), elements=st.floats(-1, 1)))
    w_u = draw(hnp.arrays(np.float64, (m, d), elements=st.floats(-1, 1)))
    w_d = draw(hnp.arrays(np.float64, (d, m), elements=st.floats(-1, 1)))
    return x, w_g, w_u, w_d


# --- swiglu: the page's worked example (C04) -----------------------------------------------
def test_page_example_identity_matrices():
    out = swiglu([1.0, -1.0], EYE2, EYE2, EYE2)
    assert set(out) == SWIGLU_KEYS
    np.testing.assert_allclose(out["gate"], [1.0, -1.0], atol=1e-15)
    np.testing.assert_allclose(out["up"], [1.0, -1.0], atol=1e-15)
    np.testing.assert_allclose(out["hidden"], [0.731059, 0.268941], atol=1e-6)
    np.testing.assert_allclose(out["output"], out["hidden"], atol=1e-15)
    assert out["parameters"] == 12 and out["hidden_elements"] == 2


@settings(max_examples=50, deadline=None)
@given(swiglu_inputs(max_value=10.0))
def test_matches_naive_transcription_of_the_page(args):
    out = swiglu(*args)
    gate, up, hidden, output = _naive_swiglu(*[a.tolist() for a in args])
    for key, expected in zip(
        ("gate", "up", "hidden", "output"), (gate, up, hidden, output), strict=True
    ):
        np.testing.assert_allclose(out[key], expected, rtol=1e-12, atol=1e-12)


# --- swiglu_jacobian ------------------------------------------------------------------------
def test_jacobian_of_page_example_is_diagonal():
    # With identity matrices y_i = SiLU(x_i) x_i, so dy_i/dx_i = SiLU'(x_i) x_i + SiLU(x_i).
    jac = swiglu_jacobian([1.0, -1.0], EYE2, EYE2, EYE2)
    s = 1.0 / (1.0 + math.exp(-1.0))
    d_plus = s * (1 + 1 * (1 - s)) * 1 + s
    d_minus = (1 - s) * (1 - 1 * s) * -1 + -(1 - s)
    np.testing.assert_allclose(jac, np.diag([d_plus, d_minus]), atol=1e-15)


@settings(max_examples=50, deadline=None)
@given(swiglu_inputs())
def test_jacobian_matches_central_differences(assert_jacobian_close, args):
    x, w_g, w_u, w_d = args
    analytic = swiglu_jacobian(x, w_g, w_u, w_d)
    numeric = central_difference_jacobian(lambda v: swiglu(v, w_g, w_u, w_d)["output"], x)
    assert_jacobian_close(analytic, numeric)


# --- ffn_budget (C01-C03) -------------------------------------------------------------------
def test_page_parameter_counts():
    plain = ffn_budget(512, 2048, 2, 1024, gated=False)
    gated = ffn_budget(512, 2048, 2, 1024, gated=True)
    assert set(plain) == set(gated) == BUDGET_KEYS
    assert plain["matrix_params"] == 2_097_152 == 2 * 512 * 2048
    assert gated["matrix_params"] == 3_145_728 == 3 * 512 * 2048  # gating adds half
    assert plain["bias_params"] == gated["bias_params"] == 0
    assert plain["total_params"] == plain["matrix_params"]
    # Activations: one [B, T, m] branch plain, two gated.
    assert gated["branch_elements"] == 4_194_304 == 2 * 1024 * 2048
    assert gated["branches"] == 2 and gated["intermediate_elements"] == 2 * 4_194_304
    assert plain["branches"] == 1 and plain["intermediate_elements"] == 4_194_304


def test_bias_counts_and_int_values():
    plain = ffn_budget(4, 16, 1, 1, gated=False, bias=True)
    gated = ffn_budget(4, 16, 1, 1, gated=True, bias=True)
    assert plain["bias_params"] == 16 + 4
    assert gated["bias_params"] == 2 * 16 + 4
    assert gated["total_params"] == 3 * 4 * 16 + 36
    budget = ffn_budget(np.int64(8), 32, 1, 3, gated=True, bias=True)
    assert all(type(v) is int for v in budget.values())


@pytest.mark.parametrize("name", ["d", "m", "batch", "seq_len"])
@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "8", None])
def test_budget_rejects_bad_sizes(name, bad):
    kwargs = {"d": 8, "m": 32, "batch": 1, "seq_len": 4, "gated": False, name: bad}
    with pytest.raises(ValueError, match=rf"^{name} must be a positive integer, got "):
        ffn_budget(**kwargs)


# --- equal-parameter widths (C01) -----------------------------------------------------------
def test_equal_param_width_of_4d():
    # m0 = 4d gives 8d/3; d = 512 -> 1365.33, rounded up to 1366.
    assert equal_param_width(2048) == 1366
    assert equal_param_width(3 * 512) == 1024  # exact when m0 is a multiple of 3
    assert equal_param_width(4 * 4096, multiple_of=256) == 11008


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 10**6), st.integers(1, 1024))
def test_equal_param_width_is_smallest_multiple_with_the_plain_budget(m0, multiple_of):
    m = equal_param_width(m0, multiple_of)
    assert m % multiple_of == 0
    assert 3 * m >= 2 * m0  # 3 d m >= 2 d m0 for every d
    assert 3 * (m - multiple_of) < 2 * m0


@pytest.mark.parametrize(
    "d, multiple_of, multiplier, expected",
    [
        (4096, 256, None, 11008),  # Llama 1/2 7B
        (5120, 256, None, 13824),  # Llama 2 13B
        (4096, 1024, 1.3, 14336),  # Llama 3 8B
        (8192, 4096, 1.3, 28672),  # Llama 2/3 70B
        (16384, 4096, 1.2, 53248),  # Llama 3.1 405B
    ],
)
def test_llama_ffn_width_matches_released_models(d, multiple_of, multiplier, expected):
    assert llama_ffn_width(d, multiple_of, multiplier) == expected


@pytest.mark.parametrize("call, match", [
    # swiglu: matrix shapes that do not fit x (bad vectors and matrices: test_norms, test_residual)
    *[(lambda matrices=matrices: swiglu([1.0, 2.0], *matrices), match) for matrices, match in [
        ((EYE2, np.ones((3, 2)), EYE2), r"branch widths differ: up_matrix has shape \(3, 2\)"),
        ((EYE2, EYE2, np.ones((3, 2))), r"down_matrix .* output width must equal len\(x\) = 2"),
        ((np.ones((2, 3)), np.ones((2, 3)), EYE2),
         r"gate_matrix .* input width must equal len\(x\)"),
        ((EYE2, EYE2, np.ones((2, 3))), r"down_matrix .* must equal the branch width m = 2"),
    ]],
    *[(lambda name=name: ffn_budget(**{"d": 8, "m": 32, "batch": 1, "seq_len": 4,
                                       "gated": False, name: "yes"}),
       rf"{name} must be True or False, got 'yes'") for name in ("gated", "bias")],
    (lambda: equal_param_width(0), "m0 must be a positive integer"),
    (lambda: equal_param_width(8, multiple_of=0), "multiple_of must be a positive integer"),
    (lambda: llama_ffn_width(0), "d must be a positive integer"),
    (lambda: llama_ffn_width(64, multiple_of=-2), "multiple_of must be a positive integer"),
    *[(lambda bad=bad: llama_ffn_width(64, ffn_dim_multiplier=bad),
       "ffn_dim_multiplier must be a positive real") for bad in (0.0, -1.3, float("nan"), True,
                                                               "1.3")],
    (lambda: llama_ffn_width(1, ffn_dim_multiplier=1e-3), "leaves no intermediate width"),
])
def test_swiglu_widths_and_budget_reject_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()
