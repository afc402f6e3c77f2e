"""A config.json read as Hugging Face transformers reads it.

Every zoo config and configs that say one thing twice (rope_scaling and rope_parameters, theta
at both levels, head_dim beside hidden_size / heads, ...) go through the installed transformers
(a local folder, nothing downloaded) and `from_hf`: the models must agree (rope theta, scaling
and its frequencies, head_dim, FFN widths, heads, activation). Where two keys disagree and
transformers silently prefers one, blocklab refuses in one line naming both keys.
"""

from __future__ import annotations

import importlib
import json
import math

import pytest
from torch.testing import assert_close

from blocklab.budget.zoo import config_from_json, list_zoo, load_zoo
from blocklab.config import ModelConfig
from blocklab.errors import ConfigError
from blocklab.interop.hf_config import (
    HF_ABSENT_SIZES,
    HF_HIDDEN_DIVISIBLE,
    HF_LLAMA_FAMILY,
    from_hf,
    to_hf,
)
from blocklab.nn.rope_scaling import rope_frequencies

transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.usefixtures("one_thread")

ORIGINAL = "original_max_position_embeddings"
# Model types blocklab reads that the installed transformers does not know, and why.
SKIPPED_TYPES = {
    "chatglm": "THUDM's ChatGLM ships its own modeling code (trust_remote_code); transformers "
               "has no 'chatglm' model type to compare with",
}
# blocklab reads these model types (ModelConfig.from_hf); the zoo covers all but the wrapper.
FROM_HF_TYPES = {*HF_LLAMA_FAMILY, "gemma", "gemma2", "gpt2", "bert", "mpt", "chatglm",
                 "llama4", "llama4_text"}
# Model types whose rotary embedding (<Family>RotaryEmbedding) is compared with ours.
ROTARY = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "llama4_text")
# transformers' hidden_act names -> blocklab's activation names.
ACTS = {"silu": "silu", "swish": "silu", "gelu_pytorch_tanh": "gelu_tanh", "gelu_new": "gelu_tanh",
        "gelu": "gelu", "relu": "relu"}

TINY = {"vocab_size": 128, "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64}
TINY_LLAMA4 = {**TINY, "model_type": "llama4_text", "intermediate_size_mlp": 96,
               "num_local_experts": 2, "interleave_moe_layer_step": 1, "head_dim": 16}
GPT2 = {"model_type": "gpt2", "vocab_size": 128, "n_embd": 64, "n_layer": 2, "n_head": 4}


def tiny(model_type: str = "llama", **changes) -> dict:
    """A small config.json of `model_type` with `changes`; `key=...` leaves `key` out."""
    base = TINY_LLAMA4 if model_type == "llama4_text" else {**TINY, "model_type": model_type}
    out = {**base, **changes}
    return {k: v for k, v in out.items() if v is not ...}


# --- the two readings ---------------------------------------------------------------------------
def transformers_config(raw: dict, tmp_path):
    """What `from_pretrained` builds from `raw` as a config.json in a local folder."""
    folder = tmp_path / "hf"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(raw))
    return transformers.AutoConfig.from_pretrained(folder, local_files_only=True)


def theirs(config) -> dict:
    """The model transformers would build from `config`, in the fields we compare."""
    if config.model_type == "llama4":
        config = config.text_config
    kind = config.model_type
    heads = config.num_attention_heads
    view = {"n_heads": heads,
            "n_kv_heads": getattr(config, "num_key_value_heads", None) or heads,
            # as their attention and rotary embeddings read it
            "head_dim": getattr(config, "head_dim", None) or config.hidden_size // heads}
    if kind == "gpt2":
        view["d_ff"] = config.n_inner or 4 * config.n_embd
    elif kind == "mpt":
        view["d_ff"] = config.expansion_ratio * config.d_model
    elif kind == "llama4_text":
        view.update(d_ff=config.intermediate_size_mlp, moe_d_ff=config.intermediate_size)
    else:
        view["d_ff"] = config.intermediate_size
    if kind in ROTARY:
        act = config.hidden_activation if kind == "gemma2" else config.hidden_act
        view["activation"] = ACTS[act]
        rope = dict(config.rope_parameters)
        rope.pop("type", None)
        view["rope_theta"] = float(rope.pop("rope_theta"))
        view["rope_type"] = rope.pop("rope_type")
        view["partial_rotary_factor"] = rope.pop("partial_rotary_factor", 1.0)
        if view["rope_type"] == "dynamic":  # its dynamic scaling starts here, whatever else says
            rope[ORIGINAL] = config.max_position_embeddings
        view["scaling"] = {k: v for k, v in rope.items() if v is not None}
    return view


def ours(cfg: ModelConfig) -> dict:
    view = {"n_heads": cfg.n_heads, "n_kv_heads": cfg.n_kv_heads, "head_dim": cfg.head_dim,
            "d_ff": cfg.d_ff}
    if cfg.n_experts:
        view["moe_d_ff"] = cfg.moe_d_ff
    if cfg.position == "rope":
        view.update(activation=cfg.activation, rope_theta=cfg.rope_theta,
                    rope_type=cfg.rope_type, partial_rotary_factor=cfg.partial_rotary_factor,
                    scaling=our_scaling(cfg))
    return view


def our_scaling(cfg: ModelConfig) -> dict:
    """cfg.rope_scaling as blocklab.nn builds it (`build_position` fills the original length)."""
    scaling = {k: v for k, v in (cfg.rope_scaling or {}).items() if v is not None}
    scaling.pop("rope_type", None)
    if cfg.rope_type in ("dynamic", "yarn", "llama3"):
        scaling.setdefault(ORIGINAL, cfg.max_seq_len)
    return scaling


def assert_same_model(raw: dict, tmp_path) -> None:
    config = transformers_config(raw, tmp_path)
    cfg, _ = config_from_json(raw)
    assert ours(cfg) == theirs(config)
    if config.model_type == "llama4":
        config = config.text_config
    if config.model_type in ROTARY:  # the frequencies themselves, computed both ways
        family = config.model_type.removesuffix("_text")
        module = importlib.import_module(f"transformers.models.{family}.modeling_{family}")
        rotary = getattr(module, type(config).__name__.replace("Config", "RotaryEmbedding"))
        rotary = rotary(config)
        scaling = {"rope_type": cfg.rope_type, **our_scaling(cfg)}
        inv_freq, attention = rope_frequencies(cfg.head_dim, cfg.rope_theta,
                                               cfg.partial_rotary_factor, scaling)
        assert_close(inv_freq, rotary.inv_freq, rtol=1e-6, atol=0.0)
        assert math.isclose(attention, rotary.attention_scaling, rel_tol=1e-12)


# --- 1. the model types read ----------------------------------------------------------------------
def test_skipped_model_types_are_exactly_the_expected_set():
    known = set(transformers.CONFIG_MAPPING.keys())
    zoo_types = {load_zoo(name).config.get("model_type") for name in list_zoo()}
    assert {t for t in zoo_types if t not in known} == set(SKIPPED_TYPES)
    assert {t for t in FROM_HF_TYPES if t not in known} == set(SKIPPED_TYPES)
    assert FROM_HF_TYPES - {"llama4"} <= zoo_types  # the zoo covers every type we read


# --- 2. zoo configs; configs that say something twice, in agreement, or leave it to a default -----
AGREEING = {
    "v5 theta inside rope_parameters": tiny(rope_parameters={"rope_type": "default",
                                                             "rope_theta": 5e5}),
    "theta at both levels, equal": tiny(rope_theta=500000, rope_parameters={
        "rope_type": "default", "rope_theta": 500000.0}),
    "null rope_scaling beside rope_parameters": tiny(
        rope_scaling=None, rope_parameters={"rope_type": "linear", "factor": 2,
                                            "rope_theta": 5e5}),
    "empty rope_scaling beside rope_parameters": tiny(
        rope_scaling={}, rope_parameters={"rope_type": "yarn", "factor": 4.0, "rope_theta": 5e5}),
    "theta inside rope_scaling equal to the top level": tiny(
        rope_theta=5e5, rope_scaling={"rope_type": "linear", "factor": 2, "rope_theta": 5e5}),
    "default rope_scaling and default rope_parameters": tiny(
        rope_scaling={"rope_type": "default"}, rope_parameters={"rope_type": "default",
                                                                "rope_theta": 1e4}),
    "partial_rotary_factor 1 in both places": tiny(
        partial_rotary_factor=1.0, rope_parameters={"rope_type": "default", "rope_theta": 1e4,
                                                    "partial_rotary_factor": 1}),
    "yarn original length at both levels, equal": tiny(
        original_max_position_embeddings=16,
        rope_scaling={"rope_type": "yarn", "factor": 4, ORIGINAL: 16}),
    "yarn original length from max_position_embeddings": tiny(
        rope_scaling={"rope_type": "yarn", "factor": 4}),
    "yarn every parameter": tiny(rope_scaling={
        "rope_type": "yarn", "factor": 8.0, ORIGINAL: 16, "beta_fast": 16, "beta_slow": 2,
        "mscale": 1.0, "mscale_all_dim": 0.5, "truncate": False}),
    "yarn attention_factor and null betas": tiny(rope_scaling={
        "rope_type": "yarn", "factor": 4.0, ORIGINAL: 16, "attention_factor": 1.5,
        "beta_fast": None, "beta_slow": None}),
    "dynamic original length equal to max_position_embeddings": tiny(
        rope_scaling={"rope_type": "dynamic", "factor": 2.0, ORIGINAL: 64}),
    "linear with an informational original length": tiny(
        rope_scaling={"rope_type": "linear", "factor": 2.0, ORIGINAL: 32}),
    "head_dim wider than hidden_size / heads": tiny(head_dim=32),
    "qwen3 head_dim narrower than hidden_size / heads": tiny("qwen3", head_dim=8),
    "qwen2 head_dim given (not a Qwen2Config field)": tiny("qwen2", head_dim=32),
    "llama4 wrapper with text_config": {"model_type": "llama4", "text_config": TINY_LLAMA4},
    "gemma's released hidden_act 'gelu' beside hidden_activation": tiny(
        "gemma", head_dim=16, hidden_act="gelu", hidden_activation="gelu_pytorch_tanh"),
    "gpt2 under its attribute_map names": {
        "model_type": "gpt2", "vocab_size": 128, "hidden_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "max_position_embeddings": 128, "n_ctx": 128},
    "gpt2 n_embd and hidden_size equal": {**GPT2, "hidden_size": 64, "n_positions": 128},
    "mpt under its attribute_map names": {
        "model_type": "mpt", "vocab_size": 128, "hidden_size": 64, "num_attention_heads": 4,
        "num_hidden_layers": 2, "expansion_ratio": 4, "max_seq_len": 128},
}
# A size left out takes the config class's default, which is not always derived.
for _type, _sizes in HF_ABSENT_SIZES.items():
    _heads = max(4, _sizes["num_key_value_heads"] or 4)
    AGREEING[f"{_type} with head_dim and num_key_value_heads absent"] = tiny(
        _type, hidden_size=16 * _heads, num_attention_heads=_heads, head_dim=...,
        num_key_value_heads=...)
AGREEING["llama4 theta absent (default_theta 500000)"] = tiny("llama4_text")
AGREEING["qwen2 null num_key_value_heads (derived)"] = tiny("qwen2", num_key_value_heads=None)
AGREEING["llama null head_dim (derived)"] = tiny(head_dim=None)


ZOO = {name: load_zoo(name).config for name in list_zoo()}


@pytest.mark.parametrize("raw", [*ZOO.values(), *AGREEING.values()], ids=[*ZOO, *AGREEING])
def test_zoo_and_agreeing_configs_read_as_transformers_reads_them(raw, tmp_path):
    if raw.get("model_type") in SKIPPED_TYPES:
        pytest.skip(SKIPPED_TYPES[raw["model_type"]])
    assert_same_model(raw, tmp_path)


EXPORTS = {
    "default": None,
    "linear": {"rope_type": "linear", "factor": 2.0},
    "dynamic": {"rope_type": "dynamic", "factor": 2.0},
    "yarn": {"rope_type": "yarn", "factor": 4.0, ORIGINAL: 16, "beta_fast": 16.0},
    "llama3": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, ORIGINAL: 16},
}


@pytest.mark.parametrize("scaling", EXPORTS.values(), ids=EXPORTS.keys())
@pytest.mark.parametrize("model_type", HF_LLAMA_FAMILY)
def test_our_exported_configs_write_both_layouts_and_read_back(model_type, scaling, tmp_path):
    cfg = ModelConfig(vocab_size=128, d_model=64, n_layers=2, n_heads=4, n_kv_heads=2,
                      max_seq_len=64, rope_theta=5e5, rope_scaling=scaling,
                      qk_norm=model_type == "qwen3", attn_bias=model_type == "qwen2")
    hf = to_hf(cfg, model_type)
    assert "rope_scaling" in hf and "rope_parameters" in hf and "rope_theta" in hf
    assert from_hf(hf) == cfg
    assert_same_model(hf, tmp_path)


@pytest.mark.parametrize("model_type", ["llama", "qwen3", "gemma2", "llama4_text"])
def test_configs_transformers_saves_read_the_same(model_type, tmp_path):
    raw = tiny(model_type, head_dim=16, rope_scaling={"rope_type": "yarn", "factor": 4.0})
    folder = tmp_path / "saved"
    transformers_config(raw, tmp_path).save_pretrained(folder)
    saved = json.loads((folder / "config.json").read_text())
    assert "rope_parameters" in saved
    assert_same_model(saved, tmp_path)


# --- 3. configs that say something twice, in disagreement: refused naming both keys -------------
YARN = {"rope_type": "yarn", "factor": 4.0}
CONFLICTS = {
    # The issue: transformers takes rope_scaling (linear x2) and theta 10,000 by default.
    "rope_scaling against rope_parameters": (
        tiny(rope_scaling={"rope_type": "linear", "factor": 2},
             rope_parameters={"rope_type": "default", "rope_theta": 500000}),
        ["rope_scaling and rope_parameters disagree", "rope_type 'linear' vs 'default'",
         "rope_theta 10000.0 (transformers' llama default) vs 500000", "factor 2 vs (none)"]),
    "rope_scaling and rope_parameters scale by different factors": (
        tiny(rope_scaling=YARN, rope_parameters={**YARN, "factor": 8.0, "rope_theta": 1e4}),
        ["rope_scaling and rope_parameters disagree", "factor 4.0 vs 8.0"]),
    "top-level theta against rope_parameters.rope_theta": (
        tiny(rope_theta=1e4, rope_parameters={"rope_type": "default", "rope_theta": 5e5}),
        ["rope_parameters.rope_theta=500000.0", "rope_theta=10000.0", "disagree"]),
    "top-level theta against rope_scaling.rope_theta": (
        tiny(rope_theta=1e4, rope_scaling={"rope_type": "linear", "factor": 2,
                                           "rope_theta": 5000}),
        ["rope_scaling.rope_theta=5000", "rope_theta=10000.0", "disagree"]),
    "partial_rotary_factor at both levels, different": (
        tiny(partial_rotary_factor=0.5, rope_parameters={"rope_type": "default",
                                                         "partial_rotary_factor": 0.25}),
        ["rope_parameters.partial_rotary_factor=0.25", "partial_rotary_factor=0.5", "disagree"]),
    "partial_rotary_factor the llama rotary embedding ignores": (
        tiny(partial_rotary_factor=0.5),
        ["partial_rotary_factor=0.5 is not allowed for llama", "rotates the whole head"]),
    "per-layer-type rope_parameters for a model without layer types": (
        tiny(rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 5e5}}),
        ["rope_parameters.full_attention", "per layer type", "transformers' llama"]),
    "rope_type default with a factor": (
        tiny(rope_scaling={"rope_type": "default", "factor": 4}),
        ["rope_scaling.factor=4", "rope_type 'default'"]),
    "type against rope_type": (
        tiny(rope_scaling={"type": "linear", "rope_type": "yarn", "factor": 2}),
        ["rope_scaling.type='linear'", "rope_scaling.rope_type='yarn'", "disagree"]),
    "dynamic original length against max_position_embeddings": (
        tiny(rope_scaling={"rope_type": "dynamic", "factor": 2, ORIGINAL: 32}),
        [f"rope_scaling.{ORIGINAL}=32", "max_position_embeddings=64", "disagree"]),
    "top-level original length against rope_scaling's": (
        tiny(original_max_position_embeddings=8, rope_scaling={**YARN, ORIGINAL: 16}),
        [f"config.json {ORIGINAL}=8", f"rope_scaling.{ORIGINAL}=16", "disagree"]),
    "top-level original length against max_position_embeddings": (
        tiny(original_max_position_embeddings=8, rope_scaling=YARN),
        [f"config.json {ORIGINAL}=8", "max_position_embeddings=64", "disagree"]),
    "llama hidden_size the heads do not divide, with head_dim": (
        tiny(hidden_size=66, head_dim=16),
        ["hidden_size=66", "num_attention_heads=4", "head_dim=16"]),
    "hidden_activation beside llama's hidden_act": (
        tiny(hidden_act="silu", hidden_activation="gelu"),
        ["hidden_act='silu'", "hidden_activation='gelu'", "disagree"]),
    "hidden_activation alone for llama": (
        tiny(hidden_activation="gelu"),
        ["hidden_act (absent: 'silu')", "hidden_activation='gelu'"]),
    "hidden_act beside gemma2's hidden_activation": (
        tiny("gemma2", head_dim=16, hidden_act="silu", hidden_activation="gelu_pytorch_tanh"),
        ["hidden_activation='gelu_pytorch_tanh'", "hidden_act='silu'", "reads hidden_activation"]),
    "gpt2 n_embd against hidden_size": (
        {**GPT2, "hidden_size": 128}, ["n_embd=64", "hidden_size=128", "disagree"]),
    "gpt2 n_ctx against n_positions": (
        {**GPT2, "n_positions": 1024, "n_ctx": 2048},
        ["n_ctx=2048", "n_positions=1024", "disagree"]),
    "gpt2 n_ctx alone, which transformers ignores": (
        {**GPT2, "n_ctx": 2048}, ["n_ctx=2048", "n_positions (absent: 1024)"]),
    "mpt n_heads against num_attention_heads": (
        {"model_type": "mpt", "vocab_size": 128, "d_model": 64, "n_heads": 4,
         "num_attention_heads": 8, "n_layers": 2, "expansion_ratio": 4, "max_seq_len": 128},
        ["n_heads=4", "num_attention_heads=8", "disagree"]),
    "ntk, a rope_type transformers does not have": (
        tiny(rope_scaling={"rope_type": "ntk", "factor": 2}),
        ["rope_scaling.rope_type='ntk'", "'yarn'"]),
    "qwen3 null head_dim": (tiny("qwen3", head_dim=None), ["head_dim=None", "qwen3", "128"]),
    "gemma null num_key_value_heads": (
        tiny("gemma", num_key_value_heads=None), ["num_key_value_heads=None", "gemma"]),
    "null top-level rope_theta with nothing inside": (
        tiny(rope_theta=None), ["rope_theta=None", "expected a number"]),
}

# rope keys that do not fit together
for _scaling, _needles in [
    ({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0},
     ["expected 'high_freq_factor' for rope_type 'llama3'"]),
    ({**YARN, "beta_fast": 1, "beta_slow": 2}, ["rope_scaling.beta_fast=1", "beta_slow=2",
                                                "beta_fast > beta_slow"]),
    ({**YARN, "beta_slow": 40}, ["beta_fast=32", "beta_slow=40"]),
    ({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 1.0},
     ["high_freq_factor=1.0", "low_freq_factor=4.0"]),
    ({**YARN, "low_freq_factor": 1.0}, ["['low_freq_factor']", "rope_type 'yarn'"]),
    ({"rope_type": "longrope", "factor": 2}, ["rope_scaling.rope_type='longrope'"]),
]:
    CONFLICTS[f"rope_scaling={_scaling}"] = (tiny(rope_scaling=_scaling), _needles)


@pytest.mark.parametrize("raw, needles", CONFLICTS.values(), ids=CONFLICTS.keys())
def test_conflicting_config_is_refused_naming_both_keys(raw, needles):
    with pytest.raises(ConfigError) as caught:
        from_hf(raw)
    message = str(caught.value)
    assert "\n" not in message
    for needle in needles:
        assert needle in message, (needle, message)
    with pytest.raises(ConfigError):  # the budget and doctor route, HF_DEFAULTS filled first
        config_from_json(raw)


def test_the_issue_config_is_read_differently_by_transformers(tmp_path):
    """Why blocklab refuses rather than picks: transformers silently takes rope_scaling."""
    raw, _ = CONFLICTS["rope_scaling against rope_parameters"]
    rope = transformers_config(raw, tmp_path).rope_parameters
    assert (rope["rope_type"], rope["factor"], rope["rope_theta"]) == ("linear", 2, 10000.0)


# --- 4. nested keys of rope_scaling / rope_parameters, each checked as a top-level one is -----
NESTED_BAD = {
    # key: (scaling it sits in, bad values, what the message expects)
    ORIGINAL: (YARN, [-5, 0, 8192.0, "8192", True, None, 2**60], "a positive integer"),
    "factor": (YARN, [-2, 0, "4", True, None, math.inf, math.nan, 10**400, [4]],
               "a finite number > 0"),
    "beta_fast": (YARN, [-1, 0, "32", False, math.inf], "a finite number > 0, or null"),
    "beta_slow": ({**YARN, "beta_fast": 32}, [-1, 0, "1", True], "a finite number > 0, or null"),
    "attention_factor": (YARN, [-1.0, 0, "1", True, math.nan], "a finite number > 0, or null"),
    "mscale": (YARN, [-0.5, "1", True, math.inf], "a finite number >= 0, or null"),
    "mscale_all_dim": (YARN, [-0.5, "1", False], "a finite number >= 0, or null"),
    "truncate": (YARN, [None, 1, "true"], "true or false"),
    "low_freq_factor": ({"rope_type": "llama3", "factor": 8.0, "high_freq_factor": 4.0},
                        [-1, 0, "1", True, None], "a finite number > 0"),
    "high_freq_factor": ({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0},
                         [-4, 0, "4", True, None], "a finite number > 0"),
}


@pytest.mark.parametrize("layout", ["rope_scaling", "rope_parameters"])
@pytest.mark.parametrize("key", NESTED_BAD)
def test_every_nested_rope_key_is_checked(key, layout):
    scaling, values, expected = NESTED_BAD[key]
    for value in values:
        with pytest.raises(ConfigError) as caught:
            from_hf(tiny(**{layout: {**scaling, key: value}}))
        message = str(caught.value)
        assert message.startswith(f"config.json {layout}.{key}="), message
        assert expected in message and "\n" not in message, message
    with pytest.raises(ConfigError, match=rf"ModelConfig\.rope_scaling\.{key}="):
        ModelConfig(rope_scaling={**scaling, key: values[0]})


@pytest.mark.parametrize("changes, needle", [
    (dict(partial_rotary_factor=0.5), "partial_rotary_factor=0.5"),
    (dict(rope_scaling={"rope_type": "ntk", "factor": 2.0}), "rope_scaling 'ntk'"),
    (dict(rope_scaling={"rope_type": "dynamic", "factor": 2.0, ORIGINAL: 32}),
     f"dynamic rope_scaling from {ORIGINAL}=32"),
    (dict(d_model=66, head_dim=16), "d_model=66 with n_heads=4"),
    (dict(ffn="gelu"), "ffn='gelu'"),
    (dict(residual_scale=0.5), "residual_scale=0.5 (Llama-family adds the residual unscaled"),
    (dict(final_norm=False), "final_norm=False"),
    (dict(placement="post"), "placement='post'"),
])
def test_to_hf_refuses_what_transformers_would_read_differently(changes, needle):
    cfg = ModelConfig(**{**dict(vocab_size=128, d_model=64, n_layers=2, n_heads=4,
                                max_seq_len=64), **changes})
    with pytest.raises(ConfigError, match="^cannot export to llama: ") as err:
        to_hf(cfg, "llama")
    assert needle in str(err.value) and "placement='pre'" not in str(err.value)


@pytest.mark.parametrize("model_type", HF_ABSENT_SIZES)
def test_hf_hidden_divisible_is_what_the_config_classes_refuse(model_type):
    """HF_HIDDEN_DIVISIBLE: the installed config classes that refuse hidden_size % heads != 0
    with head_dim given (HF_ABSENT_SIZES: the agreeing configs with both sizes absent)."""
    raw = tiny(model_type, hidden_size=66, head_dim=16)
    raw.pop("model_type")
    try:
        transformers.AutoConfig.for_model(model_type, **raw)
    except Exception:  # noqa: BLE001 - strict dataclass validation errors vary
        refused = True
    else:
        refused = False
    assert refused == (model_type in HF_HIDDEN_DIVISIBLE)
