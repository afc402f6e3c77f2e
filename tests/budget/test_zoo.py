"""The zoo: every published count reproduced exactly; loading, suggestions, paths, bad input."""

import json

import pytest

from blocklab.budget import count_params, load_zoo, resolve_model
from blocklab.config import ModelConfig

EXPECTED = {"llama-2-7b", "meta-llama-3-8b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b",
            "llama-3.2-1b", "mistral-7b-v0.1", "qwen2.5-0.5b", "qwen2.5-7b", "qwen3-8b",
            "gemma-2-2b", "gpt2", "bert-base-uncased", "page-001-example", "mpt-7b",
            "chatglm2-6b", "deepseek-llm-7b-base", "gemma-7b", "llama-4-scout-17b-16e"}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_computed_total_equals_published_count(name):
    entry = load_zoo(name)
    total = count_params(resolve_model(name).config).total
    if entry.published_params is None:
        # No published count: the entry must say why, and must not claim exactness.
        assert not entry.params_exact
        assert len(entry.params_source) > 20 and "no published" in entry.params_source.lower()
    else:
        assert total == entry.published_params, f"{name}: {total:,} != {entry.published_params:,}"


def test_unknown_name_suggests_close_names():
    with pytest.raises(ValueError, match="did you mean.*meta-llama-3-8b"):
        load_zoo("llama-3-8b")
    with pytest.raises(ValueError, match="unknown model 'zzz'"):
        resolve_model("zzz")
    with pytest.raises(ValueError, match="no such file"):
        resolve_model("/nonexistent/config.json")


def test_resolve_path_folder_and_modelconfig_json(tmp_path):
    hf = load_zoo("qwen3-8b").config
    (tmp_path / "config.json").write_text(json.dumps(hf))
    by_file = resolve_model(str(tmp_path / "config.json"))
    by_dir = resolve_model(str(tmp_path))
    assert by_file.config == by_dir.config == resolve_model("qwen3-8b").config
    assert by_file.entry is None and by_file.source.endswith("config.json")
    cfg = ModelConfig(d_model=64, n_heads=4, n_layers=2, vocab_size=100)
    (tmp_path / "mine.json").write_text(json.dumps(cfg.to_dict()))
    assert resolve_model(str(tmp_path / "mine.json")).config == cfg
    r = resolve_model("page-001-example")  # absent keys take transformers' defaults
    assert r.defaults_filled == ("max_position_embeddings",)
    assert r.config.max_seq_len == 2048  # LlamaConfig default


@pytest.mark.parametrize("text, match", [
    ("{not json", "malformed JSON"),
    ("[1, 2]", "JSON object"),
    ('{"model_type": "llama", "vocab_size": 10}', "missing"),
    ('{"model_type": "llama", "vocab_size": 10, "hidden_size": "big", "num_hidden_layers": 2, '
     '"num_attention_heads": 2, "intermediate_size": 8}', "hidden|d_model|positive"),
    ('{"model_type": "t5"}', "unsupported"),
])
def test_bad_config_files(tmp_path, text, match):
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        resolve_model(str(path))


def test_llama4_scout_text_count_by_hand():
    # Text model only (the published 109B also holds the vision encoder): embed and untied head
    # 202048 x 5120 each; per layer q, o 5120 x 5120, k, v 5120 x 1024, 16 routed + 1 shared
    # SwiGLU experts of 8192, router 16 x 5120, 2 RMSNorms; final norm.
    d, v = 5120, 202048
    layer = 2 * d * d + 2 * d * 1024 + 17 * 3 * d * 8192 + 16 * d + 2 * d
    counts = count_params(resolve_model("llama-4-scout-17b-16e").config)
    assert counts.total == 2 * v * d + 48 * layer + d == 107_769_861_120
    assert counts.moe_layer is None and counts.per_layer == layer  # every layer is MoE


@pytest.mark.parametrize("name, checks", [
    ("mpt-7b", dict(position="alibi", ffn="gelu", d_ff=16384, norm="layernorm", norm_bias=False,
                    attn_bias=False, tie_embeddings=True)),
    ("chatglm2-6b", dict(position="rope", n_kv_heads=2, head_dim=128, partial_rotary_factor=0.5,
                         rope_layout="interleaved", attn_bias=True, attn_out_bias=False,
                         tie_embeddings=False, max_seq_len=32768)),
    ("gemma-7b", dict(ffn="geglu_tanh", placement="pre", norm_unit_offset=True, embed_scale=True,
                      tie_embeddings=True, head_dim=256)),
    ("llama-4-scout-17b-16e", dict(n_experts=16, n_shared_experts=1, experts_per_token=1,
                                   moe_d_ff=8192, d_ff=16384, moe_every=1, nope_every=4,
                                   n_moe_layers=48, n_nope_layers=12)),
])
def test_new_model_types_read_from_config_json(name, checks):
    cfg = resolve_model(name).config
    assert {k: getattr(cfg, k) for k in checks} == checks


def test_interleaved_moe_counts_dense_and_moe_layers():
    kw = dict(vocab_size=10, d_model=8, n_layers=4, n_heads=2, d_ff=24, ffn="swiglu")
    dense = count_params(ModelConfig(**kw))
    moe = count_params(ModelConfig(**kw, n_experts=4, n_shared_experts=1, moe_d_ff=16,
                                   moe_every=2))
    assert moe.n_moe_layers == 2 and moe.moe_layer["router"] == 4 * 8
    expert_ffn = 5 * 3 * 8 * 16 + 4 * 8
    assert moe.total == dense.total + 2 * (expert_ffn - 3 * 8 * 24)
    assert moe.buckets()["ffn"] == 2 * 3 * 8 * 24 + 2 * expert_ffn
