"""Hostile configs: JSON nested too deep to parse, Hugging Face keys of the wrong shape, RoPE
scaling without a type, unusual `blocklab train` options.
Every CLI case exits 2 with one `error: ` line naming the option or key as the user wrote it
(and the file); every library case raises a blocklab InputError, never a raw Python exception.
"""

from __future__ import annotations

import json

import pytest

from blocklab.budget.zoo import config_from_json, list_zoo, load_zoo
from blocklab.config import ModelConfig
from blocklab.errors import ConfigError, InputError
from blocklab.interop.hf_config import from_hf

from .conftest import LLAMA_HF, write_json

LLAMA4_HF = {"model_type": "llama4_text", "vocab_size": 256, "hidden_size": 64,
             "intermediate_size": 176, "intermediate_size_mlp": 176, "num_hidden_layers": 4,
             "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 128,
             "num_local_experts": 4, "interleave_moe_layer_step": 1}
DEEP = {"list": "[" * 100_000 + "]" * 100_000,
        "object": '{"a":' * 100_000 + "1" + "}" * 100_000}


# --- 1. a config file nested too deep, or with a value of the wrong type: the file named -------
@pytest.mark.parametrize(("command", "content", "needle"), [
    (["budget"], DEEP["list"], "nested"),
    (["train", "--config"], DEEP["object"], "nested"),
    (["doctor"], {**LLAMA_HF, "hidden_size": "64"}, "d_model"),
])
def test_config_file_refused_naming_the_file(tmp_path, one_line_exit_2, command, content, needle):
    path = write_json(tmp_path, content)
    one_line_exit_2([*command, path], path, needle)


# --- 2. Llama 4 layer lists, Gemma 2's scalar, rope_scaling without a type, wrong types ---------
MOE_LAYERS = r"moe_layers=.* is not allowed; expected .*every k-th layer"
NO_ROPE_LAYERS = r"no_rope_layers=.* expected one 1 \(RoPE\) or 0"
GEMMA2 = load_zoo("gemma-2-2b").config


@pytest.mark.parametrize(("hf", "match"), [
    *(({**LLAMA4_HF, "moe_layers": v}, MOE_LAYERS)
      for v in ["all", 5, [{}], [True], [1, 2], [], [0, 1, 2, 3, 4]]),
    *(({**LLAMA4_HF, "no_rope_layers": v}, NO_ROPE_LAYERS)
      for v in ["all", [1, 1], [1, 1, 1, 2], [0.0, 1, 1, 1]]),
    *(({**GEMMA2, "query_pre_attn_scalar": v}, r"query_pre_attn_scalar=.* expected a number > 0")
      for v in (0, -256)),
    # (ModelConfig's refusal of a type-less rope_scaling: test_train_unusual_config_files)
    ({**LLAMA_HF, "rope_scaling": {"factor": 8.0, "original_max_position_embeddings": 8192}},
     r"config\.json rope_scaling=.*'rope_type'.*'llama3'"),
    ({**LLAMA_HF, "hidden_act": ["silu"]}, r"hidden_act=\['silu'\]"),
    ({**LLAMA_HF, "hidden_act": "tanh"}, "hidden_act='tanh'"),
    ({**LLAMA_HF, "attention_bias": "false"}, "attention_bias='false'"),
    ({**LLAMA_HF, "tie_word_embeddings": 1}, "tie_word_embeddings=1"),
    ({**LLAMA_HF, "rope_parameters": "yarn"}, "rope_parameters='yarn'"),
    ({**LLAMA_HF, "model_type": ["llama"]}, r"model_type \['llama'\]"),
])
def test_hf_values_of_the_wrong_shape_or_type(hf, match):
    with pytest.raises(ConfigError, match=match):
        from_hf(hf)


def test_llama4_layer_lists_that_fit():
    cfg = from_hf({**LLAMA4_HF, "moe_layers": [1, 3], "no_rope_layers": [1, 1, 1, 1]})
    assert cfg.moe_every == 2 and cfg.nope_every is None  # all RoPE: no NoPE layers
    cfg = from_hf({**LLAMA4_HF, "no_rope_layers": [1, 0, 1, 0]})
    assert cfg.nope_every == 2


# --- 3. Errors name the config.json key a field came from ----------------------------------------
@pytest.mark.parametrize("hf, key, field", [
    ({**LLAMA4_HF, "intermediate_size": -8192}, "intermediate_size", "moe_d_ff"),
    ({**LLAMA4_HF, "intermediate_size_mlp": 0}, "intermediate_size_mlp", "d_ff"),
    ({**LLAMA4_HF, "num_local_experts": -1}, "num_local_experts", "n_experts"),
    ({**LLAMA4_HF, "num_experts_per_tok": 9}, "num_experts_per_tok", "experts_per_token"),
    ({**LLAMA4_HF, "interleave_moe_layer_step": 0}, "interleave_moe_layer_step", "moe_every"),
    ({**LLAMA4_HF, "no_rope_layer_interval": -4}, "no_rope_layer_interval", "nope_every"),
    ({"model_type": "llama4", "text_config": {**LLAMA4_HF, "intermediate_size": -8192}},
     "intermediate_size", "moe_d_ff"),
    ({**LLAMA_HF, "intermediate_size": -8192}, "intermediate_size", "d_ff"),
    ({**LLAMA_HF, "num_key_value_heads": 3}, "num_key_value_heads", "n_kv_heads"),
    ({**LLAMA_HF, "num_key_value_heads": 0}, "num_key_value_heads", "n_kv_heads"),
    ({**LLAMA_HF, "max_position_embeddings": 0}, "max_position_embeddings", "max_seq_len"),
    ({**LLAMA_HF, "rms_norm_eps": -1}, "rms_norm_eps", "norm_eps"),
    ({**LLAMA_HF, "rope_theta": 0}, "rope_theta", "rope_theta"),
    ({**LLAMA_HF, "rope_parameters": {"rope_type": "default", "rope_theta": 0.5}},
     "rope_parameters.rope_theta", "rope_theta"),
    ({**LLAMA_HF, "model_type": "mistral", "sliding_window": -1}, "sliding_window",
     "sliding_window"),
    ({"model_type": "gpt2", "vocab_size": 50257, "n_embd": 768, "n_layer": 12, "n_head": 12,
      "n_positions": 1024, "n_inner": -1}, "n_inner", "d_ff"),
    ({"model_type": "chatglm", "padded_vocab_size": 65024, "hidden_size": 4096,
      "num_layers": 28, "num_attention_heads": 32, "ffn_hidden_size": 13696,
      "seq_length": 32768, "kv_channels": 128, "rope_ratio": 1e308}, "rope_ratio", "rope_theta"),
])
def test_hf_errors_name_the_key_and_the_field(hf, key, field):
    with pytest.raises(ConfigError, match=rf"config\.json {key}: ModelConfig\.{field}="):
        from_hf(hf)


HOSTILE = ["x", "", [], [{}], {}, {"a": 1}, -1, 0, 1.5, True, 10**400, float("nan"),
           float("inf"), None]


@pytest.mark.parametrize("name", list_zoo())
def test_every_zoo_key_hostile_is_bad_input_never_a_crash(name):
    """Each key of each zoo config (and of its nested objects) set to each hostile value: the
    config reads, or reading it raises a blocklab InputError; never a TypeError or KeyError."""
    base = load_zoo(name).config
    cases = [{**base, key: value} for key in base for value in HOSTILE]
    cases += [{**base, key: {**base[key], inner: value}} for key in base
              if isinstance(base[key], dict) for inner in base[key] for value in HOSTILE]
    if base.get("model_type") == "llama4_text":  # the multimodal wrapper's text_config too
        cases += [{"model_type": "llama4", "text_config": case} for case in cases]
    for case in cases:
        try:
            config_from_json(case)
        except InputError:
            pass


# --- 4. rope_scaling that means none -------------------------------------------------------------
@pytest.mark.parametrize("scaling", [None, {}, {"rope_type": "default"}, {"type": "default"}])
def test_rope_scaling_that_means_none_still_reads(scaling):
    assert from_hf({**LLAMA_HF, "rope_scaling": scaling}).rope_scaling is None
    assert ModelConfig(rope_scaling=scaling).rope_scaling is None


# --- 5. unusual `blocklab train` config files ----------------------------------------------------
@pytest.mark.parametrize("text, needles", [
    ('["model", "train"]', ["expected a JSON object"]),
    ('{"model": {}, "optim": {}}', ["unknown key(s) ['optim']"]),
    ('{"train": {"precision": "fp16", "backend": "fast"}}', ["train.precision", "'fp16'"]),
    ('{"train": {"threads": 50000}}', ["train.threads", "50000"]),
    ('{"model": {"rope_scaling": {"factor": 8}}}', ["model.rope_scaling", "'rope_type'"]),
    ("", ["malformed JSON"]),
    (b"\xff\xfe{\x00}\x00", ["not UTF-8 text"]),  # UTF-16
    *((json.dumps({"model": {}, "train": {}, "data": data}), ["'data'"])
      for data in ({"name": "stdlib"}, 5, None, ["stdlib"])),
])
def test_train_unusual_config_files(tmp_path, one_line_exit_2, text, needles):
    path = tmp_path / "run.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    one_line_exit_2(["train", "--config", str(path)], f"--config {path}", *needles)


def test_train_flag_overrides_a_bad_file_value_and_names_the_flag(tmp_path, one_line_exit_2):
    path = write_json(tmp_path, {"train": {"precision": "fp32", "steps": 1}}, "run.json")
    line = one_line_exit_2(["train", "--config", path, "--precision", "half"],
                           "--precision", "'half'")
    assert path not in line  # the flag, not the file, held the bad value


def test_train_config_that_is_a_folder(tmp_path, one_line_exit_2):
    one_line_exit_2(["train", "--config", str(tmp_path)], f"--config {tmp_path}",
                    "cannot read it")
