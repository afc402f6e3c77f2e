"""Every reference function takes real numbers only (as ModelConfig does) and refuses a result
that overflows float64 instead of returning inf or NaN: one-line InputError (a ValueError) naming
the argument or the overflowing value, raised before anything is computed from a bad input."""

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

import blocklab.reference.ffn as ffn_module
from blocklab.errors import InputError
from blocklab.reference import (
    central_difference_jacobian,
    commutator,
    ffn_budget,
    gelu,
    layernorm,
    layernorm_jacobian,
    llama_ffn_width,
    norm_statistics,
    relative_position_gap,
    residual_paths,
    rmsnorm,
    rmsnorm_jacobian,
    rope_frequencies,
    rope_rotate,
    rope_score,
    scale_invariance_gap,
    shift_scale_table,
    silu,
    swiglu,
    swiglu_jacobian,
)

EYE2 = np.eye(2)


def _refused(call, match):
    """The call raises exactly InputError, on one line, matching `match`, with no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning before the error would be noise
        with pytest.raises(InputError, match=match) as info:
            call()
    assert type(info.value) is InputError and isinstance(info.value, ValueError)
    assert "\n" not in str(info.value)
    return str(info.value)


# --- not a real number --------------------------------------------------------------------------
NOT_NUMBERS = {  # id: (call, what the message must say)
    "swiglu x strings": (lambda: swiglu(["1", "-1"], EYE2, EYE2, EYE2),
                         r"^x must be a 1-D sequence of real numbers, got \['1', '-1'\]: '1' is "
                         r"a str"),
    "swiglu x bool": (lambda: swiglu([True, 1.0], EYE2, EYE2, EYE2), r"^x .*True is a bool"),
    "swiglu matrix string": (lambda: swiglu([1.0, 2.0], [["1", 0], [0, 1]], EYE2, EYE2),
                             r"^gate_matrix must be a 2-D .*'1' is a str"),
    "swiglu_jacobian down None": (lambda: swiglu_jacobian([1.0, 2.0], EYE2, EYE2, None),
                                  r"^down_matrix .*None is a NoneType"),
    "norm eps string": (lambda: norm_statistics([1, 3], eps="1e-6"),
                        r"^eps must be a finite real number >= 0, got '1e-6': '1e-6' is a str"),
    "norm eps True": (lambda: norm_statistics([1, 3], eps=True), r"^eps .*True is a bool"),
    "norm eps None": (lambda: norm_statistics([1, 3], eps=None), r"^eps .*None is a NoneType"),
    "norm x None": (lambda: norm_statistics([1.0, None]), r"^x .*None is a NoneType"),
    "norm x complex": (lambda: norm_statistics([1 + 2j, 3.0]), r"^x .*\(1\+2j\) is a complex"),
    "norm x beyond float64": (lambda: norm_statistics([10**400, 1]),
                              r"^x .*\(401 chars\) is beyond the float64 range"),
    "norm x bool array": (lambda: norm_statistics(np.array([True, False])),
                          r"^x .*True is a bool"),
    "norm x ragged": (lambda: norm_statistics([[1.0, 2.0], [3.0]]),
                      r"^x .*nested sequences have different lengths"),
    "rmsnorm gain strings": (lambda: rmsnorm([1.0, 2.0], gain=["1", "1"]), r"^gain .*is a str"),
    "layernorm bias bool": (lambda: layernorm([1.0, 2.0], bias=[False, True]),
                            r"^bias .*False is a bool"),
    "scale gap a None": (lambda: scale_invariance_gap([1.0, 2.0], None), r"^a must be a finite"),
    "shift table shift string": (lambda: shift_scale_table([1.0, 2.0], shift="2"),
                                 r"^shift must be a finite real number, got '2'"),
    "residual matrix string": (lambda: residual_paths([1.0, 3.0], [["1", 0], [0, 1]]),
                               r"^matrix .*'1' is a str"),
    "commutator eps string": (lambda: commutator(EYE2, [1.0, 3.0], eps="0"), r"^eps .*'0'"),
    "rope position True": (lambda: rope_rotate([1.0, 0.0], True),
                           r"^position must be a finite real number, got True: True is a bool"),
    "rope base string": (lambda: rope_frequencies(4, base="10000"), r"^base .*'10000' is a str"),
    "rope score m string": (lambda: rope_score([1.0, 0.0], [1.0, 0.0], "0", 0), r"^m .*'0'"),
    "rope shift bool": (lambda: relative_position_gap([1.0, 0.0], [1.0, 0.0], 0, 0, True),
                        r"^shift .*True is a bool"),
    "finite diff step string": (lambda: central_difference_jacobian(np.sin, [1.0], step="1e-5"),
                                r"^step .*'1e-5' is a str"),
    "finite diff f bool": (lambda: central_difference_jacobian(lambda v: v > 0, [1.0]),
                           r"^f\(x\) .*True is a bool"),
    "silu string": (lambda: silu("1"), r"^z must be a real number .*'1' is a str"),
    "silu True": (lambda: silu(True), r"^z .*True is a bool"),
    "gelu None in list": (lambda: gelu([1.0, None]), r"^z .*None is a NoneType"),
    "ffn_budget d past 2**53": (lambda: ffn_budget(2**53 + 1, 8, 1, 1, True),
                                r"^d must be a positive integer at most 2\*\*53"),
    "llama width d past 2**53": (lambda: llama_ffn_width(10**400),
                                 r"^d must be .*at most 2\*\*53.*\(401 chars\)"),
}


@pytest.mark.parametrize("case", sorted(NOT_NUMBERS))
def test_anything_but_a_real_number_is_refused(case):
    call, match = NOT_NUMBERS[case]
    _refused(call, match)


def test_a_refused_input_computes_nothing(monkeypatch):
    def spy(*args):
        raise AssertionError("silu ran on a refused input")

    monkeypatch.setattr(ffn_module, "silu", spy)
    _refused(lambda: swiglu(["1", "-1"], EYE2, EYE2, EYE2), r"^x ")
    _refused(lambda: swiglu_jacobian([1.0, True], EYE2, EYE2, EYE2), r"^x ")


def test_numpy_numbers_and_other_reals_are_accepted():
    ints = norm_statistics(np.array([1, 3]), eps=np.float32(0.0))
    assert ints["mean"] == 2.0 and ints["variance"] == 1.0
    assert norm_statistics([np.int64(1), np.float16(3)], eps=np.array(0.0))["mean"] == 2.0
    assert norm_statistics([Fraction(1, 2), 1.5], eps=0)["mean"] == 1.0
    out = swiglu(np.array([1.0, 2.0], dtype=np.float32), EYE2.astype(np.int32), EYE2, EYE2)
    assert out["output"].dtype == np.float64
    assert rope_rotate([1.0, 0.0], np.int64(0)).tolist() == [1.0, 0.0]
    assert ffn_budget(np.int64(512), 2048, 2, 1024, np.bool_(True))["branches"] == 2
    assert ffn_budget(2**53, 1, 1, 1, False)["matrix_params"] == 2**54  # exact ints


# --- overflow -----------------------------------------------------------------------------------
BIG = 1e200
OVERFLOWS = {  # id: (call, what the message must name)
    "swiglu gate": (lambda: swiglu([BIG, 1.0], [[BIG, 0.0], [0.0, 1.0]], EYE2, EYE2),
                    r"^swiglu: gate = W_g x overflows float64 at \[0\] for x=\[1e\+200, 1\.0\]"),
    "swiglu hidden": (lambda: swiglu([1e160, 1.0], EYE2, EYE2, EYE2),
                      r"^swiglu: hidden = SiLU\(gate\) \(\*\) up overflows float64 at \[0\]"),
    "swiglu output": (lambda: swiglu([100.0, 100.0], EYE2, EYE2, [[1e306, 1e306], [0.0, 1.0]]),
                      r"^swiglu: output = W_d hidden overflows float64 at \[0\]"),
    "swiglu jacobian": (lambda: swiglu_jacobian([1e-300, 1.0], [[1e300, 0.0], [0.0, 1.0]],
                                                [[1e300, 0.0], [0.0, 1.0]],
                                                [[1e10, 0.0], [0.0, 1.0]]),
                        r"^swiglu_jacobian: the Jacobian W_d dh/dx overflows float64 at "
                        r"\[0, 0\]"),
    "residual post-norm input": (lambda: residual_paths([1e150, 3.0], [[BIG, 0.0], [0.0, 1.0]]),
                                 r"^residual_paths: the post-norm input x \+ A·x overflows "
                                 r"float64 at \[0\]"),
    "residual pre jacobian": (lambda: residual_paths([1e-150, 2e-150], [[BIG, 0.0], [0.0, 1.0]],
                                                     eps=0.0),
                              r"^residual_paths: pre_jacobian = I \+ A·J_N\(x\) overflows"),
    "commutator": (lambda: commutator([[BIG, 0.0], [0.0, BIG]], [1e-150, 2e-150], eps=0.0),
                   r"^commutator: A·J_N\(x\) overflows float64"),
    "rope rotate": (lambda: rope_rotate([1.7e308, 1.7e308], 1.0),
                    r"^rope_rotate: the rotated x overflows float64 at \[1\]"),
    "rope score": (lambda: rope_score([BIG, BIG], [BIG, BIG], 0, 0),
                   r"^rope_score: the score rope\(q, m\)·rope\(k, n\) overflows float64"),
    "rope gap shift": (lambda: relative_position_gap([1.0, 0.0], [1.0, 0.0], 1e308, 0, 1e308),
                       r"^relative_position_gap: m \+ shift overflows float64 for m=1e\+308"),
    "rmsnorm gain": (lambda: rmsnorm([1.0, 3.0], gain=[1e308, 1.5e308]),
                     r"^rmsnorm: gain \(\*\) x / s overflows float64 at \[1\]"),
    "layernorm bias": (lambda: layernorm([1.0, 2.0], gain=[1.0, 1e308], bias=[1e308, 1.7e308]),
                       r"^layernorm: gain \(\*\) \(x - mu\) / sigma \+ bias overflows .* at \[1\]"),
    "rmsnorm jacobian gain": (lambda: rmsnorm_jacobian([1e-150, 2e-150], 0.0, gain=[1e200, 1.0]),
                              r"^rmsnorm_jacobian: diag\(gain\) J overflows"),
    "shift table": (lambda: shift_scale_table([1e308, 1.0], shift=1e308),
                    r"^shift_scale_table: shift overflows float64 at \[0\]"),
    "scale gap a·x": (lambda: scale_invariance_gap([1e150, 1.0], 1e160),
                      r"^scale_invariance_gap: a·x overflows float64 at \[0\]"),
    "llama width multiplier": (lambda: llama_ffn_width(4096, 256, 1e300),
                               r"^ffn_dim_multiplier=1e\+300 makes the width 1\.09\d*e\+304"),
}


@pytest.mark.parametrize("case", sorted(OVERFLOWS))
def test_overflow_is_refused_naming_the_value(case):
    call, match = OVERFLOWS[case]
    _refused(call, match)


# --- finite results an intermediate under- or overflow must not lose ----------------------------
def test_tiny_inputs_and_huge_scales_keep_finite_results():
    x, c = np.array([1.0, 2.0]), 1e-150
    for jacobian in (rmsnorm_jacobian, layernorm_jacobian):
        tiny = jacobian(c * x, 0.0)  # s**3 ~ 1e-450 underflows to 0
        assert np.all(np.isfinite(tiny))
        np.testing.assert_allclose(tiny * c, jacobian(x, 0.0), rtol=1e-12, atol=1e-15)
    # The scale gap of tiny inputs and huge scales.
    assert scale_invariance_gap([1e-160], 2.0, eps=0.0) == 0.0
    # a * a = 1e320 overflows; for a that large a / sqrt(a^2 q + eps) is
    # 1 / sqrt(q) to float64 precision, so the gap is max|x| (1/sqrt(q) - 1/sqrt(q + eps)).
    x, eps = np.array([1e-10, 2e-10]), 1e-6
    q = float(np.mean(x * x))
    gap = scale_invariance_gap(x, 1e160, eps=eps)
    assert gap == pytest.approx(2e-10 * (1 / math.sqrt(q) - 1 / math.sqrt(q + eps)), rel=1e-12)
