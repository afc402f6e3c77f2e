"""blocklab.interop.hf against Hugging Face transformers: random tiny checkpoints written by
`save_pretrained`, loaded by `load_hf`, must give the same logits (float32, max abs diff 1e-5);
`save_hf` output must load in `AutoModelForCausalLM` and give the same logits again."""

import json

import pytest
import torch
import transformers
from safetensors.torch import load_file, save_file
from torch.testing import assert_close

from blocklab.config import ModelConfig
from blocklab.errors import CheckpointError, ConfigError
from blocklab.interop.hf import blocklab_to_hf_name, hf_to_blocklab_name, load_hf, save_hf
from blocklab.nn import DecoderLM
from blocklab.nn.position import permute_rotary_rows

from .conftest import PARITY, hf_model, logits, tiny_ids

pytestmark = pytest.mark.usefixtures("one_thread")

# Mistral and Qwen2 load and round-trip in test_attention_layouts.py, windowed and not.
FAMILIES = {  # name: (model_type, config keys)
    "llama": ("llama", {}),
    "llama_bias": ("llama", dict(attention_bias=True, mlp_bias=True)),
    "llama_tied": ("llama", dict(tie_word_embeddings=True)),
    "llama_linear": ("llama", dict(rope_scaling={"rope_type": "linear", "factor": 2.0})),
    "llama_dynamic": ("llama", dict(rope_scaling={"rope_type": "dynamic", "factor": 2.0})),
    "llama_yarn": ("llama", dict(rope_scaling={"rope_type": "yarn", "factor": 2.0,
                                               "original_max_position_embeddings": 8})),
    "llama_llama3": ("llama", dict(rope_scaling={"rope_type": "llama3", "factor": 8.0,
                                                 "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                 "original_max_position_embeddings": 8})),
    "qwen3": ("qwen3", dict(head_dim=32)),
}


def _hf_model(family):
    """Two layers and 16 positions, which T runs past (dynamic scaling)."""
    model_type, keys = FAMILIES[family]
    return hf_model(model_type, num_hidden_layers=2, max_position_embeddings=16, **keys)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_load_hf_matches_transformers_and_round_trips(family, tmp_path):
    hf = _hf_model(family)
    hf.save_pretrained(tmp_path / "hf")
    ids = tiny_ids()
    expected = logits(hf, ids)
    assert expected.std() > 0.3

    ours = load_hf(tmp_path / "hf")
    assert_close(logits(ours, ids), expected, **PARITY)

    save_hf(ours, tmp_path / "back", model_type=hf.config.model_type)
    back = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "back").eval()
    assert type(back) is type(hf)
    assert_close(logits(back, ids), expected, **PARITY)


@pytest.mark.parametrize("family", ["llama", "qwen3"])
def test_meta_interleaved_checkpoint_two_ways(family, tmp_path):
    """A checkpoint with q/k rows in Meta's interleaved order, read (a) permuted to half-split and
    (b) kept interleaved with interleaved RoPE: both equal the Hugging Face model."""
    hf = _hf_model(family)
    with torch.no_grad():  # QK-norm gains move with their channels: make them differ
        for name, p in hf.named_parameters():
            if "q_norm" in name or "k_norm" in name:
                p.uniform_(0.5, 1.5)
    hf.save_pretrained(tmp_path)
    cfg = hf.config
    head_dim = cfg.head_dim
    tensors = load_file(tmp_path / "model.safetensors")
    for name in list(tensors):
        heads = {"q_proj": cfg.num_attention_heads, "k_proj": cfg.num_key_value_heads,
                 "q_norm": 1, "k_norm": 1}
        for part, n in heads.items():
            if f".{part}." in name:
                tensors[name] = permute_rotary_rows(tensors[name], n, head_dim, "interleaved")
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})

    ids = tiny_ids()
    expected = logits(hf, ids)
    permuted = load_hf(tmp_path, layout="interleaved")
    kept = load_hf(tmp_path, layout="interleaved", rope_layout="interleaved")
    assert permuted.config.rope_layout == "half_split"
    assert kept.config.rope_layout == "interleaved"
    assert_close(logits(permuted, ids), expected, **PARITY)
    assert_close(logits(kept, ids), expected, **PARITY)
    assert_close(logits(kept, ids), logits(permuted, ids), **PARITY)
    # Read as if half-split, the interleaved checkpoint is a different (wrong) model.
    wrong = load_hf(tmp_path)
    assert (logits(wrong, ids) - expected).abs().max() > 1e-2

    # Saving the interleaved model writes Hugging Face's half-split order back.
    save_hf(kept, tmp_path / "back", model_type=cfg.model_type)
    back = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "back").eval()
    assert_close(logits(back, ids), expected, **PARITY)


def test_sharded_checkpoint_and_the_dtype_argument(tmp_path):
    hf = _hf_model("llama")
    hf.save_pretrained(tmp_path, max_shard_size="50KB")
    assert (tmp_path / "model.safetensors.index.json").is_file()
    assert not (tmp_path / "model.safetensors").exists()
    assert_close(logits(load_hf(tmp_path), tiny_ids()), logits(hf, tiny_ids()), **PARITY)
    out = logits(load_hf(tmp_path, dtype=torch.bfloat16), tiny_ids())
    assert out.dtype == torch.float32 and torch.isfinite(out).all()


def test_bad_tensors_and_missing_files_raise(tmp_path):
    hf = _hf_model("llama")
    hf.save_pretrained(tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    del tensors["model.layers.1.mlp.up_proj.weight"]
    tensors["model.layers.0.mlp.extra.weight"] = torch.zeros(2)
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ValueError) as err:
        load_hf(tmp_path)
    message = str(err.value)  # the missing tensor and the unexpected one
    assert "model.layers.1.mlp.up_proj.weight" in message
    assert "model.layers.0.mlp.extra.weight" in message
    (tmp_path / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="model.safetensors"):
        load_hf(tmp_path)
    with pytest.raises(CheckpointError, match="config.json"):
        load_hf(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="layout='meta'"):
        load_hf(tmp_path, layout="meta")
    _edited_checkpoint(tmp_path, "llama", model_type="gpt2")
    with pytest.raises(ValueError, match="model_type='gpt2'"):
        load_hf(tmp_path)


def test_save_hf_is_atomic_and_overwrites(tmp_path):
    model = DecoderLM(ModelConfig(vocab_size=32, d_model=16, n_layers=1, n_heads=2, d_ff=24))
    save_hf(model, tmp_path)
    save_hf(model, tmp_path)  # a second save replaces the files
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "model.safetensors"]
    with pytest.raises(ValueError, match="cannot export"):
        save_hf(DecoderLM(ModelConfig(vocab_size=32, d_model=16, n_layers=1, n_heads=2,
                                      ffn="gelu")), tmp_path / "gelu")
    assert not (tmp_path / "gelu").exists()


def test_save_hf_splits_fused_projections(tmp_path):
    cfg = ModelConfig(vocab_size=32, d_model=16, n_layers=1, n_heads=4, n_kv_heads=2, d_ff=24,
                      attn_bias=True, attn_out_bias=True, ffn_bias=True)
    fused = DecoderLM(cfg, packed_gate_up=True, packed_qkv=True)
    with torch.no_grad():
        for p in fused.parameters():
            p.normal_(generator=torch.Generator().manual_seed(p.numel()))
    save_hf(fused, tmp_path)
    names = set(load_file(tmp_path / "model.safetensors"))
    assert names == {blocklab_to_hf_name(n) for n in DecoderLM(cfg).state_dict()}
    ids = torch.randint(0, 32, (1, 5), generator=torch.Generator().manual_seed(0))
    got, want = logits(load_hf(tmp_path), ids), logits(fused, ids)
    # Split and packed projections sum in different orders: float32 rounding of logits whose
    # N(0, 1) weights make them large: 24 terms a sum at 6e-8 each bound it by 2e-6 of the largest.
    assert_close(got, want, atol=2e-6 * want.abs().max().item(), rtol=1e-5)


def test_name_mapping_round_trips():
    model = DecoderLM(ModelConfig(vocab_size=32, d_model=16, n_layers=2, n_heads=2, d_ff=24,
                                  qk_norm=True, attn_bias=True, attn_out_bias=True,
                                  ffn_bias=True))
    for name in model.state_dict():
        hf_name = blocklab_to_hf_name(name)
        assert hf_name is not None and hf_to_blocklab_name(hf_name) == name
    # The MLP's pre-norm keeps Hugging Face's misleading name (claim C11).
    assert blocklab_to_hf_name("layers.0.ffn_norm.weight") == \
        "model.layers.0.post_attention_layernorm.weight"
    assert hf_to_blocklab_name("model.layers.0.mlp.extra.weight") is None


# --- a config.json that says something twice ---------------------------------------------------
def _edited_checkpoint(tmp_path, family, **changes):
    """A transformers checkpoint of `family` whose config.json gets `changes` (None removes)."""
    hf = _hf_model(family)
    hf.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    config.update(changes)
    config = {k: v for k, v in config.items() if v is not None}
    (tmp_path / "config.json").write_text(json.dumps(config))
    return hf


def test_load_hf_refuses_rope_scaling_against_rope_parameters(tmp_path):
    """The issue: transformers reads rope_scaling (linear x2, theta 10,000) and ignores
    rope_parameters (theta 500,000); taking rope_parameters gave logits 1.3e-3 off. Refused."""
    _edited_checkpoint(tmp_path, "llama_linear",
                       rope_scaling={"rope_type": "linear", "factor": 2.0},
                       rope_parameters={"rope_type": "default", "rope_theta": 500000.0})
    with pytest.raises(ConfigError) as caught:
        load_hf(tmp_path)
    message = str(caught.value)
    assert message.startswith(str(tmp_path / "config.json"))
    assert "rope_scaling and rope_parameters disagree" in message and "\n" not in message


@pytest.mark.parametrize("family, changes", [
    # to_hf writes both layouts and the top-level theta; they agree.
    ("llama_linear", dict(rope_theta=10000.0, rope_scaling={"type": "linear", "factor": 2.0})),
    ("llama_yarn", dict(rope_theta=10000, rope_scaling={
        "rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 8})),
    ("llama_dynamic", dict(rope_scaling={}, original_max_position_embeddings=None)),
    ("qwen3", dict(partial_rotary_factor=1.0, rope_theta=10000.0)),
])
def test_agreeing_duplicates_load_as_transformers_loads_them(tmp_path, family, changes):
    _edited_checkpoint(tmp_path, family, **changes)
    theirs = transformers.AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    ids = tiny_ids()
    assert_close(logits(load_hf(tmp_path), ids), logits(theirs, ids), **PARITY)
