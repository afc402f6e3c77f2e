
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from blocklab.reference import (
    ROPE_LAYOUTS,
    relative_position_gap,
    rope_frequencies,
    rope_rotate,
    rope_score,
)

LAYOUTS = sorted(ROPE_LAYOUTS)
PROPERTY = settings(max_examples=50, deadline=None)


@st.composite
def query_key(draw):
    d = 2 * draw(st.integers(1, 8))
    elements = st.floats(-2, 2)
    return draw(hnp.arrays(np.float64, d, elements=elements)), draw(
        hnp.arrays(np.float64, d, elements=elements)
    )


def _hf_rope(x, position, base):
    """Hugging Face form, written independently: x cos + rotate_half(x) sin, halves repeated."""
    d = x.shape[0]
    inv_freq = 1.0 / (base ** (np.arange(0, d, 2) / d))
    angle = np.concatenate([position * inv_freq, position * inv_freq])
    rotate_half = np.concatenate([-x[d // 2 :], x[: d // 2]])
    return x * np.cos(angle) + rotate_half * np.sin(angle)


def _complex_rope(x, position, base):
    """Meta/RoFormer form: consecutive pairs as complex numbers times exp(i angle)."""
    d = x.shape[0]
    z = x[0::2] + 1j * x[1::2]
    z = z * np.exp(1j * position * base ** (-np.arange(0, d, 2) / d))
    out = np.empty(d)
    out[0::2], out[1::2] = z.real, z.imag
    return out


def test_frequencies_and_score_by_hand():
    np.testing.assert_allclose(rope_frequencies(4, 10000.0), [1.0, 0.01], rtol=1e-15)
    np.testing.assert_allclose(rope_frequencies(8, 10000.0), [1.0, 0.1, 0.01, 0.001], rtol=1e-15)
    q = k = np.array([1.0, 0.0, 0.0, 1.0])  # the score changes with the relative position
    assert abs(rope_score(q, k, 5, 0) - rope_score(q, k, 6, 0)) > 1e-3
    assert rope_score(q, k, 7, 7) == pytest.approx(float(q @ k), abs=1e-15)


@PROPERTY
@given(query_key(), st.integers(-4096, 4096), st.sampled_from([10000.0, 500000.0]))
def test_matches_independent_forms(qk, position, base):
    x, _ = qk
    np.testing.assert_allclose(
        rope_rotate(x, position, base, "half_split"), _hf_rope(x, position, base), atol=1e-12
    )
    np.testing.assert_allclose(
        rope_rotate(x, position, base, "interleaved"), _complex_rope(x, position, base), atol=1e-12
    )


@PROPERTY
@given(
    query_key(),
    st.integers(0, 2048),
    st.integers(0, 2048),
    st.integers(-2048, 2048),
    st.sampled_from(LAYOUTS),
    st.sampled_from([10000.0, 500000.0]),
)
def test_score_depends_only_on_relative_position(qk, m, n, shift, layout, base):
    # C20. Angles reach ~4096 rad, whose float64 rounding (~1e-12) bounds the gap.
    q, k = qk
    assert relative_position_gap(q, k, m, n, shift, base, layout) <= 1e-9
    assert rope_score(q, k, m, n, base, layout) == pytest.approx(
        rope_score(q, k, m - n, 0, base, layout), abs=1e-9
    )


ROTATE = dict(x=[1.0, 2.0], position=3, base=10000.0, layout="half_split")
Q2 = [1.0, 0.0]


@pytest.mark.parametrize("call, match", [
    *[(lambda kwargs=kwargs: rope_rotate(**{**ROTATE, **kwargs}), match) for kwargs, match in [
        ({"x": [1.0, 2.0, 3.0]}, "x must have even length to form rotation pairs, got 3"),
        ({"position": np.inf}, "position must be a finite real number"),
        ({"base": 1.0}, r"base must be a finite number > 1, got 1\.0"),
        ({"base": 0.5}, "base must be a finite number > 1"),
        ({"base": np.nan}, "base must be a finite real number"),
        ({"layout": "neox"}, "unknown RoPE layout 'neox'; allowed: half_split, interleaved"),
    ]],
    (lambda: rope_score(Q2, [1.0, 0.0, 0.0, 1.0], 0, 0),
     "q and k must have the same length, got 2 and 4"),
    (lambda: rope_score(Q2, [1.0], 0, 0), "k must have even length"),
    (lambda: rope_score(Q2, Q2, 0, np.nan), "n must be a finite real number"),
    (lambda: relative_position_gap(Q2, Q2, 0, 0, np.inf), "shift must be a finite real number"),
    (lambda: relative_position_gap(Q2, Q2, 0, 0, 1, layout="Half_Split"), "unknown RoPE layout"),
    *[(lambda d=d: rope_frequencies(d), "d must be a positive even integer")
      for d in (0, 3, -2, 2.0, True)],
])
def test_rejects_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()
