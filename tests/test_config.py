"""ModelConfig: validation, derived sizes, JSON and Hugging Face round trips."""

import json

import pytest

from blocklab.config import ModelConfig
from blocklab.errors import ConfigError
from blocklab.interop.hf_config import to_hf


def test_defaults_derive_sizes():
    cfg = ModelConfig(d_model=256, n_heads=4)
    assert cfg.head_dim == 64
    assert cfg.n_kv_heads == 4
    # gated default: int(2/3 * 4 * 256) = 682 -> multiple_of 1
    assert cfg.d_ff == 682
    assert ModelConfig(ffn="gelu", d_model=256).d_ff == 1024


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"n_heads": 3}, r"n_heads=3 .*divisor of d_model=256"),
        ({"n_kv_heads": 3}, r"n_kv_heads=3 .*divisor of n_heads=4"),
        ({"ffn": "swish"}, r"ffn='swish' .*one of"),
        ({"norm": "batchnorm"}, r"norm='batchnorm'"),
        ({"placement": "middle"}, r"placement='middle'"),
        ({"position": "rotary"}, r"position='rotary'"),
        ({"rope_layout": "zigzag"}, r"rope_layout='zigzag'"),
        ({"d_model": 0}, r"d_model=0 .*positive integer"),
        ({"d_model": 2**70}, r"d_model=1180591620717411303424 .*\(at most 9007199254740992\)$"),
        ({"vocab_size": 10**400}, r"vocab_size=1000000000000000000000000000\.\.\.000000000000 "
                                  r"\(401 chars\) is not allowed"),
        ({"vocab_size": True}, r"vocab_size=True"),
        ({"ffn_bias": "yes"}, r"ffn_bias='yes' is not allowed; expected true or false$"),
        ({"name": 5}, r"name=5 is not allowed; expected a string$"),
        ({"norm_eps": -1e-6}, r"norm_eps=-1e-06"),
        ({"norm_eps": "1e-5"}, r"norm_eps='1e-5' is not allowed; expected a finite number >= 0$"),
        ({"rope_theta": 1.0}, r"rope_theta=1.0"),
        ({"partial_rotary_factor": float("nan")}, r"partial_rotary_factor=nan .*\(0, 1\]$"),
        ({"ffn_dim_multiplier": float("inf")}, r"ffn_dim_multiplier=inf .*> 0 or None$"),
        ({"head_dim": 6, "partial_rotary_factor": 0.5}, r"even rotary dim"),
        ({"rope_scaling": "yarn"}, r"rope_scaling='yarn' is not allowed; expected an object"),
        ({"rope_scaling": {"rope_type": "linear", "factor": 2, "rope_theta": 5000}},
         r"rope_scaling\.rope_theta=5000 and ModelConfig\.rope_theta=10000\.0 disagree"),
        ({"residual_scale": 0.0}, r"residual_scale=0.0"),
        ({"norm_eps": None}, r"norm_eps=None is not allowed; expected a finite number"),
        ({"n_experts": 4, "experts_per_token": 5}, r"experts_per_token=5 .*at most n_experts=4$"),
        ({"n_shared_experts": 1}, r"n_experts=0 .*> 0 when"),
        ({"n_experts": 2, "moe_every": 9}, r"moe_every=9 .*at most n_layers"),
        ({"nope_every": 2, "position": "alibi"}, r"nope_every=2 .*position='rope'"),
    ],
)
def test_bad_values_name_field_value_and_allowed(changes, match):
    """(Each rope_scaling key's rule: tests/test_config_hf_resolution.py.)"""
    with pytest.raises(ConfigError, match=r"^ModelConfig\..*" + match) as info:
        ModelConfig(**changes)
    assert "\n" not in str(info.value)


def test_unknown_keys_raise():
    with pytest.raises(ValueError, match=r"unknown ModelConfig key\(s\) \['d_modle'\]"):
        ModelConfig.from_dict({"d_modle": 64})


def test_json_round_trip():
    cfg = ModelConfig(d_model=64, n_heads=4, n_kv_heads=2, ffn="geglu", placement="sandwich",
                      rope_scaling={"type": "linear", "factor": 4.0, "rope_theta": 10000},
                      name="tiny")
    again = ModelConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
    assert again == cfg
    assert again.rope_scaling == {"rope_type": "linear", "factor": 4.0}


def test_replace_rederives():
    cfg = ModelConfig(d_model=64, n_heads=4)
    assert cfg.replace(ffn="relu", d_ff=None).d_ff == 256


def test_to_hf_refuses_a_family_it_cannot_write():
    with pytest.raises(ValueError, match=r"model_type='gpt2' is not exportable"):
        to_hf(ModelConfig(), "gpt2")
