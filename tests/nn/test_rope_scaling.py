"""blocklab.nn.rope_scaling against Hugging Face transformers' ROPE_INIT_FUNCTIONS and closed forms.

Tolerance policy: our frequencies use the same float32 operations in the same order as
transformers, so the Hugging Face comparisons are exact (atol = rtol = 0) and the attention
factors equal as Python floats. Closed forms are evaluated in float64 and compared with
rtol = 1e-6 (a few float32 roundings of the power).
"""


import pytest
import torch
import transformers.modeling_rope_utils as rope_utils
import transformers.models.phi.modeling_phi as modeling_phi
from torch.testing import assert_close

from blocklab.nn.rope_scaling import (
    ROPE_SCALINGS,
    default_rope,
    ntk_rope,
    rope_frequencies,
    rotary_dim,
)

from .conftest import EXACT, hf_llama_config


def hf_frequencies(head_dim, theta, partial_rotary_factor, scaling, max_pos, seq_len=None):
    config = hf_llama_config(head_dim, theta, scaling, max_pos, partial_rotary_factor)
    fn = rope_utils.ROPE_INIT_FUNCTIONS[scaling["rope_type"]]
    return fn(config, None, seq_len=seq_len)


# --- Hugging Face parity -------------------------------------------------------------------


@pytest.mark.parametrize("partial_rotary_factor", [0.5, 0.25, 0.4])
def test_default_partial_rotary_matches_hf_phi(partial_rotary_factor):
    head_dim, theta = 80, 10000.0
    config = modeling_phi.PhiConfig(
        hidden_size=2 * head_dim, num_attention_heads=2,
        rope_parameters={"rope_type": "default", "rope_theta": theta,
                         "partial_rotary_factor": partial_rotary_factor})
    expected, _ = modeling_phi.PhiRotaryEmbedding.compute_default_rope_parameters(config)
    inv_freq, _ = default_rope(head_dim, theta, partial_rotary_factor, {})
    assert_close(inv_freq, expected, **EXACT)  # shapes too


@pytest.mark.parametrize("factor", [1.0, 2.0, 4.0])
@pytest.mark.parametrize("seq_len", [None, 1, 63, 64, 65, 200, 1000])
@pytest.mark.parametrize("partial_rotary_factor", [1.0, 0.5])
def test_dynamic_matches_hf_below_and_above_original(factor, seq_len, partial_rotary_factor):
    original = 64
    # Hugging Face takes the original length from max_position_embeddings.
    hf_scaling = {"rope_type": "dynamic", "factor": factor}
    ours_scaling = {**hf_scaling, "original_max_position_embeddings": original}
    expected, expected_factor = hf_frequencies(
        32, 10000.0, partial_rotary_factor, hf_scaling, original, seq_len=seq_len
    )
    inv_freq, attention_factor = ROPE_SCALINGS["dynamic"](
        32, 10000.0, partial_rotary_factor, ours_scaling, seq_len=seq_len
    )
    assert_close(inv_freq, expected, **EXACT)
    assert attention_factor == expected_factor == 1.0
    if seq_len is None or seq_len <= original:  # plain RoPE inside the original window
        assert_close(inv_freq, default_rope(32, 10000.0, partial_rotary_factor)[0], **EXACT)


YARN_CASES = {
    "paper_defaults": {"factor": 4.0, "original_max_position_embeddings": 4096},
    "qwen_style_32k": {"factor": 4.0, "original_max_position_embeddings": 32768},
    "no_truncate": {"factor": 8.0, "original_max_position_embeddings": 4096, "truncate": False},
    "mscale_pair": {"factor": 40.0, "original_max_position_embeddings": 4096, "mscale": 1.0,
                    "mscale_all_dim": 0.707},
    "deepseek_v3_mscale_equal": {"factor": 40.0, "original_max_position_embeddings": 4096,
                                 "mscale": 1.0, "mscale_all_dim": 1.0, "beta_fast": 32,
                                 "beta_slow": 1},
    "mscale_only": {"factor": 16.0, "original_max_position_embeddings": 2048, "mscale": 0.5},
    "explicit_attention_factor": {"factor": 4.0, "original_max_position_embeddings": 4096,
                                  "attention_factor": 1.25},
    "custom_betas": {"factor": 2.0, "original_max_position_embeddings": 1024, "beta_fast": 16.0,
                     "beta_slow": 2.0},
    "narrow_ramp": {"factor": 4.0, "original_max_position_embeddings": 32},
    "factor_one": {"factor": 1.0, "original_max_position_embeddings": 4096},
}


LLAMA3_CASES = {
    "llama3_1_8b": (128, 500000.0, 1.0, 8.0, 1.0, 4.0, 8192),
    "llama3_2_3b": (128, 500000.0, 1.0, 32.0, 1.0, 4.0, 8192),
    "small_all_bands": (16, 500000.0, 1.0, 8.0, 1.0, 4.0, 8192),
    "partial": (64, 10000.0, 0.5, 4.0, 1.0, 4.0, 512),
    "factor_one": (64, 500000.0, 1.0, 1.0, 1.0, 4.0, 8192),
}
# (scaling, head_dim, theta, partial_rotary_factor) of every length-independent variant.
STATIC_CASES = {
    **{f"linear x{f} prf {prf}": ({"rope_type": "linear", "factor": f}, 32, 10000.0, prf)
       for f in (1.0, 2.0, 8.0, 3.5) for prf in (1.0, 0.5)},
    **{f"yarn {name} {hd} {theta:g} {prf}": ({"rope_type": "yarn", **case}, hd, theta, prf)
       for name, case in YARN_CASES.items()
       for hd, theta, prf in [(64, 1e4, 1.0), (128, 1e6, 1.0), (64, 1e4, 0.5), (16, 1e4, 1.0)]},
    **{f"llama3 {name}": ({"rope_type": "llama3", "factor": f, "low_freq_factor": low,
                           "high_freq_factor": high, "original_max_position_embeddings": orig},
                          hd, theta, prf)
       for name, (hd, theta, prf, f, low, high, orig) in LLAMA3_CASES.items()},
}


@pytest.mark.parametrize("case", sorted(STATIC_CASES))
def test_static_variants_match_hf(case):
    scaling, head_dim, theta, prf = STATIC_CASES[case]
    original = scaling.get("original_max_position_embeddings", 256)
    max_pos = int(scaling["factor"] * original) if "original_max_position_embeddings" in \
        scaling else original
    expected, expected_factor = hf_frequencies(head_dim, theta, prf, scaling, max_pos)
    inv_freq, attention_factor = ROPE_SCALINGS[scaling["rope_type"]](head_dim, theta, prf,
                                                                     scaling)
    assert_close(inv_freq, expected, **EXACT)
    assert attention_factor == expected_factor


# --- static NTK: no Hugging Face rope_type, so closed form and "dynamic" ----------------------


@pytest.mark.parametrize("factor", [1.0, 2.0, 4.0, 8.0])
@pytest.mark.parametrize("head_dim, partial_rotary_factor", [(64, 1.0), (32, 0.5), (128, 1.0)])
def test_ntk_closed_form(factor, head_dim, partial_rotary_factor):
    theta = 10000.0
    d = rotary_dim(head_dim, partial_rotary_factor)
    base = theta * factor ** (d / (d - 2))
    expected = torch.tensor([base ** (-2 * i / d) for i in range(d // 2)], dtype=torch.float64)
    inv_freq, attention_factor = ntk_rope(
        head_dim, theta, partial_rotary_factor, {"rope_type": "ntk", "factor": factor}
    )
    assert attention_factor == 1.0
    assert_close(inv_freq.double(), expected, atol=0.0, rtol=1e-6)
    # What the exponent d / (d - 2) is for: the fastest pair keeps its frequency and the
    # slowest is slowed by exactly `factor`.
    plain, _ = default_rope(head_dim, theta, partial_rotary_factor)
    assert inv_freq[0].item() == 1.0
    assert_close(inv_freq[-1].double(), plain[-1].double() / factor, atol=0.0, rtol=1e-6)


# --- bad names and values: ValueError, one line naming the value -------------------------------


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"scaling": {"rope_type": "longrope", "factor": 2.0}}, "'longrope'"),
        ({"scaling": {"factor": 2.0}}, "'rope_type'"),
        ({"scaling": {"rope_type": "linear"}}, "'factor'"),
        ({"scaling": {"rope_type": "linear", "factor": 2.0, "fator": 2.0}}, "'fator'"),
        ({"scaling": {"rope_type": "linear", "factor": 0.5}}, "0.5"),
        ({"scaling": {"rope_type": "linear", "factor": "2"}}, "'2'"),
        ({"scaling": {"rope_type": "dynamic", "factor": 2.0}}, "original_max_position_embeddings"),
        ({"scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096,
                      "beta_fast": 1.0, "beta_slow": 32.0}}, "beta_fast"),
        ({"scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0,
                      "high_freq_factor": 1.0, "original_max_position_embeddings": 8192}},
         "high_freq_factor"),
        ({"scaling": {"rope_type": "ntk", "factor": 2.0}, "head_dim": 2}, "rotary_dim"),
        ({"partial_rotary_factor": 0.0}, "partial_rotary_factor"),
        ({"partial_rotary_factor": 1.5}, "1.5"),
        ({"head_dim": 10, "partial_rotary_factor": 0.5}, "rotary_dim"),
        ({"head_dim": 7}, "7"),
        ({"theta": 1.0}, "theta"),
        ({"theta": -5.0}, "-5.0"),
        ({"scaling": ["linear"]}, "list"),
    ],
)
def test_bad_arguments_raise_one_line(kwargs, fragment):
    arguments = {"head_dim": 16, "theta": 10000.0, "partial_rotary_factor": 1.0, "scaling": None}
    arguments.update(kwargs)
    with pytest.raises(ValueError) as info:
        rope_frequencies(**arguments)
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message


def test_mismatched_rope_type_raises():
    with pytest.raises(ValueError, match="'linear'"):
        ROPE_SCALINGS["yarn"](16, 10000.0, 1.0, {"rope_type": "linear", "factor": 2.0})
