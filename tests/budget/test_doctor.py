"""`doctor`: each check fires on a config built to trigger it and stays quiet on the zoo."""

import json
import math
import struct

import pytest

from blocklab.budget import list_zoo, load_zoo
from blocklab.budget.doctor import _training_warmup, diagnose, exit_code, rope_longest_wavelength

LLAMA = load_zoo("llama-2-7b").config  # θ = 10,000, 4,096 positions, d_ff/d = 2.69, untied


def codes(findings, level=None):
    return [f.code for f in findings if level is None or f.level == level]


@pytest.mark.parametrize("name", list_zoo())
def test_zoo_configs_have_no_errors_at_their_own_length(name):
    findings = diagnose(load_zoo(name).config)
    assert exit_code(findings) == 0, [f.reason for f in findings]


def test_context_past_training_is_an_error_without_scaling_a_warning_with():
    findings = diagnose(LLAMA, serve_len=16384)
    assert "context" in codes(findings, "error") and exit_code(findings) == 1
    error = next(f for f in findings if f.code == "context")
    assert "rope_scaling" in error.fix and "factor >= 4" in error.fix
    assert diagnose(LLAMA, serve_len=4096) == []
    # With scaling, a warning naming the multiple.
    cfg = load_zoo("llama-3.1-8b").config  # llama3 scaling, original 8,192, max 131,072
    assert codes(diagnose(cfg, serve_len=131072)) == []
    findings = diagnose(cfg, serve_len=262144)
    assert codes(findings, "warning") == ["context-scaled"] and exit_code(findings) == 0
    assert "32.0x the original" in findings[0].reason and "8x" in findings[0].reason


@pytest.mark.parametrize("name, serve_len, code, level", [
    ("gpt2", 2048, "context", "error"),  # learned positions past the table
    ("gemma-2-2b", None, "q-width", "info"),  # n_heads·head_dim differs from d_model
    ("page-001-example", None, "default-assumed", "info"),  # an absent key
])
def test_a_zoo_model_shows_the_finding(name, serve_len, code, level):
    assert code in codes(diagnose(load_zoo(name).config, serve_len=serve_len), level)


def test_rope_base_too_small_for_context():
    r = 128
    longest = rope_longest_wavelength(10000.0, r)
    assert longest == pytest.approx(2 * math.pi * 10000 ** (126 / 128))  # ≈ 54,410
    assert codes(diagnose(LLAMA, serve_len=50000), "warning") == []
    findings = diagnose(LLAMA, serve_len=65536)
    warn = next(f for f in findings if f.code == "rope-base")
    assert warn.level == "warning"
    # The suggested θ makes the slowest pair's wavelength reach the context exactly.
    assert rope_longest_wavelength(warn.detail["theta_min"], r) == pytest.approx(65536)
    big_theta = {**LLAMA, "rope_theta": 1e6}
    assert "rope-base" not in codes(diagnose(big_theta, serve_len=65536))
    levels = [f.level for f in findings]  # errors first
    assert levels == sorted(levels, key=["error", "warning", "info"].index)


@pytest.mark.parametrize("d_ff, level", [(11008, None), (16384, "info"), (32768, "warning")])
def test_ffn_ratio_gated(d_ff, level):
    findings = [f for f in diagnose({**LLAMA, "intermediate_size": d_ff}) if f.code == "ffn-ratio"]
    assert [f.level for f in findings] == ([] if level is None else [level])
    if d_ff == 32768:
        # 8x: the page's "FFN memory anomaly"; the cost against 8/3·d is stated in bytes.
        assert "8x" in findings[0].reason and "GiB" in findings[0].reason
        extra = 32 * 3 * 4096 * (32768 - round(8 / 3 * 4096))
        assert findings[0].detail["extra_params"] == extra


def test_ffn_ratio_plain():
    gpt2 = load_zoo("gpt2").config
    assert "ffn-ratio" not in codes(diagnose(gpt2))
    assert "ffn-ratio" in codes(diagnose({**gpt2, "n_inner": 2 * 768}))


def test_post_norm_deep_without_warmup_read_from_the_json():
    cfg = {"d_model": 64, "n_heads": 4, "n_layers": 24, "vocab_size": 100, "ffn": "gelu",
           "norm": "layernorm", "placement": "post", "position": "learned"}
    assert codes(diagnose(cfg, training=True), "error") == ["post-norm-warmup"]
    assert codes(diagnose(cfg), "error") == [] and "post-norm-warmup" in codes(diagnose(cfg))
    shallow = {**cfg, "n_layers": 12}
    assert "post-norm-warmup" not in codes(diagnose(shallow, training=True))
    # A ModelConfig JSON rejects unknown keys, so training options come with an HF config here.
    bert = {**load_zoo("bert-base-uncased").config, "num_hidden_layers": 24}
    assert "post-norm-warmup" in codes(diagnose(bert, training=True), "error")
    assert codes(diagnose({**bert, "warmup_steps": 4000}, training=True), "error") == []
    assert codes(diagnose({**bert, "training": {"warmup_ratio": 0.06}}, training=True),
                 "error") == []
    assert codes(diagnose({**bert, "warmup_steps": 0}, training=True), "error") == [
        "post-norm-warmup"]
    assert _training_warmup(cfg) is None


def test_head_arithmetic_errors():
    bad_split = {**LLAMA, "hidden_size": 4100}
    assert codes(diagnose(bad_split)) == ["head-dim"]
    bad_kv = {**LLAMA, "num_key_value_heads": 5}
    findings = diagnose(bad_kv)
    assert codes(findings) == ["kv-heads"] and exit_code(findings) == 1
    assert "[1, 2, 4, 8, 16, 32]" in findings[0].fix
    findings = diagnose({**LLAMA, "hidden_size": 4100, "head_dim": 128})
    assert codes(findings) == ["head-dim"] and exit_code(findings) == 1
    assert "transformers' llama config refuses that even with head_dim=128" in findings[0].reason
    # Mistral's config accepts it: q_proj is heads x head_dim wide, o_proj maps back.
    mistral = {**load_zoo("mistral-7b-v0.1").config, "hidden_size": 4100, "head_dim": 128}
    assert "head-dim" not in codes(diagnose(mistral))


def test_untied_head_with_large_vocab_share():
    small = {**LLAMA, "hidden_size": 512, "num_attention_heads": 8, "num_key_value_heads": 8,
             "intermediate_size": 1376, "num_hidden_layers": 4}
    assert "untied-head" in codes(diagnose(small), "warning")
    assert "untied-head" not in codes(diagnose({**small, "tie_word_embeddings": True}))


def _safetensors(path, names):
    header = {n: {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]}
              for i, n in enumerate(names)}
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + b"\0" * 4 * len(names))


def test_tied_config_with_stored_head_and_untied_without(tmp_path):
    _safetensors(tmp_path / "model.safetensors", ["model.embed_tokens.weight", "lm_head.weight"])
    tied = {**LLAMA, "tie_word_embeddings": True}
    assert "tied-checkpoint" in codes(diagnose(tied, checkpoint_dir=tmp_path), "warning")
    assert "tied-checkpoint" not in codes(diagnose(LLAMA, checkpoint_dir=tmp_path))
    (tmp_path / "model.safetensors").unlink()
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"model.embed_tokens.weight": "a.safetensors"}}))
    findings = diagnose(LLAMA, checkpoint_dir=tmp_path)
    assert "missing-head" in codes(findings, "error") and exit_code(findings) == 1


@pytest.mark.parametrize("config, serve_len, match", [
    *[(LLAMA, bad, "serve_len") for bad in (0, -3, 1.5)],
    ({"model_type": "llama", "hidden_size": 64}, None, "missing"),
])
def test_bad_serve_len_and_unreadable_config(config, serve_len, match):
    with pytest.raises(ValueError, match=match):
        diagnose(config, serve_len=serve_len)


# --- sizes and RoPE read as transformers reads them ----------------------------------------------
QWEN3 = load_zoo("qwen3-8b").config  # head_dim 128 written, hidden_size 4096, 32 heads, 8 kv


def test_sizes_left_to_the_class_default_are_reported_not_derived():
    # Qwen3Config's head_dim default is 128, whatever hidden_size / num_attention_heads is.
    raw = {k: v for k, v in QWEN3.items() if k != "head_dim"}
    raw.update(hidden_size=4100, num_attention_heads=41, num_key_value_heads=41)
    findings = diagnose(raw)
    assert "head-dim" not in codes(findings)
    assumed = [f for f in findings if f.code == "default-assumed"]
    assert [f.detail for f in assumed] == [{"key": "head_dim", "value": 128}]
    # MistralConfig's num_key_value_heads default is 8: it does not divide 4 heads.
    mistral = {**load_zoo("mistral-7b-v0.1").config, "num_attention_heads": 4}
    del mistral["num_key_value_heads"]
    findings = diagnose(mistral)
    assert codes(findings) == ["kv-heads"]
    assert "num_key_value_heads=8 (absent: transformers' mistral default)" in findings[0].reason


QWEN_WINDOWED = dict(model_type="qwen2", vocab_size=128, hidden_size=64, intermediate_size=171,
                     num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                     max_position_embeddings=64, use_sliding_window=True, sliding_window=8)


@pytest.mark.parametrize("keys, windowed, needle", [
    (dict(max_window_layers=1), [1, 2, 3], "on 3 of 4 layers (1–3; the others attend"),
    (dict(max_window_layers=0), [0, 1, 2, 3], "on every layer"),
    (dict(layer_types=["sliding_attention", "full_attention"] * 2), [0, 2], "(0, 2;"),
    (dict(max_window_layers=4), [], "no layer uses it (max_window_layers=4 is not below"),
    (dict(use_sliding_window=False), [], "no layer uses it (use_sliding_window is not true)"),
])
def test_attention_layout_names_the_windowed_layers(keys, windowed, needle):
    """The layers named are those transformers windows (its own reading of the config)."""
    transformers = pytest.importorskip("transformers")
    raw = {**QWEN_WINDOWED, **keys}
    hf = transformers.Qwen2Config(**raw)
    assert windowed == [i for i, t in enumerate(hf.layer_types)
                        if t == "sliding_attention" and hf.sliding_window is not None]
    finding = next(f for f in diagnose(raw) if f.code == "attention-layout")
    assert finding.level == "info" and needle in finding.reason
    assert finding.detail["windowed_layers"] == windowed


def test_attention_layout_says_when_the_window_does_not_bite():
    raw = {**QWEN_WINDOWED, "max_window_layers": 0}
    reason = next(f.reason for f in diagnose(raw, serve_len=8) if f.code == "attention-layout")
    assert "covers the whole context, so it changes nothing there" in reason
    assert not any(f.code == "attention-layout" for f in diagnose(LLAMA))
