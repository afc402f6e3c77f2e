"""Bytes and intensities against closed forms."""

import pytest

from blocklab.budget import count_params, model_budget, resolve_model
from blocklab.budget.memory import (
    H100_SXM_BALANCE,
    activation_dtype,
    decode_weight_params_read,
    ffn_branch_elements,
    intensity,
    kv_cache_bytes,
    layer_activation_elements,
    nbytes,
)
from blocklab.config import ModelConfig


def test_dtype_bytes_and_activation_dtype():
    assert [nbytes(10, d) for d in ("fp32", "bf16", "fp16", "int8", "int4")] == [40, 20, 20, 10, 5]
    assert nbytes(3, "int4") == 2  # rounded up to a whole byte
    with pytest.raises(ValueError, match="int3"):
        nbytes(1, "int3")
    assert [activation_dtype(d) for d in ("fp32", "bf16", "fp16", "int8", "int4")] == [
        "fp32", "bf16", "fp16", "bf16", "bf16"]


def test_llama3_8b_kv_cache_and_weights_bytes_by_dtype():
    cfg = resolve_model("meta-llama-3-8b").config
    # 2 (K, V) · 32 layers · 8 KV heads · 128 · 4096 positions · 1 sequence · 2 bytes
    assert kv_cache_bytes(cfg, 1, 4096) == 2 * 32 * 8 * 128 * 4096 * 2 == 512 * 2**20
    assert kv_cache_bytes(cfg, 3, 100, "fp32") == 2 * 32 * 8 * 128 * 100 * 3 * 4
    doc = model_budget(resolve_model("gpt2").config, dtype="int4")
    total = doc["params"]["total"]
    assert doc["memory"]["weights_bytes"] == total // 2
    assert doc["memory"]["weights_bytes_by_dtype"]["fp32"] == 4 * total
    assert doc["memory"]["kv_cache_bytes"] == 2 * 12 * 12 * 64 * 4096 * 2  # bf16 activations


def test_activation_elements():
    cfg = ModelConfig(vocab_size=10, d_model=8, n_layers=2, n_heads=2, d_ff=12, max_seq_len=32)
    assert ffn_branch_elements(cfg, 2, 5) == 2 * 5 * 12
    acts = layer_activation_elements(cfg, 2, 5)
    assert acts["ffn_intermediate"] == 4 * 2 * 5 * 12  # gate, up, act(gate), product
    assert acts["scores_and_probs"] == 2 * 2 * 2 * 5 * 5
    assert acts["total"] == acts["total_fused"] + acts["scores_and_probs"]
    plain = layer_activation_elements(cfg.replace(ffn="gelu"), 2, 5)
    assert plain["ffn_intermediate"] == 2 * 2 * 5 * 12


def test_decode_is_memory_bound_prefill_compute_bound():
    cfg = resolve_model("meta-llama-3-8b").config
    params = count_params(cfg)
    ai = intensity(cfg, params, 1, 4096)
    assert H100_SXM_BALANCE == pytest.approx(295.2, abs=0.1)
    # One token per step: ~2 FLOPs per weight against 2 bytes per weight -> about 1 FLOP/byte.
    assert 0.5 < ai["decode_flops_per_byte"] < 2 and ai["decode_bound"] == "memory"
    assert ai["prefill_flops_per_byte"] > H100_SXM_BALANCE and ai["prefill_bound"] == "compute"


def test_decode_reads_tied_table_but_not_untied_one():
    untied = resolve_model("meta-llama-3-8b").config
    p = count_params(untied)
    assert decode_weight_params_read(untied, p) == p.total - p.model["embed_tokens"]
    tied = resolve_model("llama-3.2-1b").config
    assert decode_weight_params_read(tied, count_params(tied)) == count_params(tied).total


def test_c25_post_norm_layer_writes_the_same_tensors_as_pre_norm():
    """Page 001 says post-norm inference holds larger intermediate activations. Counted tensor
    by tensor, a post-norm layer writes exactly what a pre-norm layer writes (two norm outputs,
    two residual sums); only sandwich placement adds two norm outputs."""
    cfg = ModelConfig(vocab_size=10, d_model=8, n_layers=2, n_heads=2, d_ff=12, max_seq_len=32)
    pre = layer_activation_elements(cfg, 2, 5)
    assert layer_activation_elements(cfg.replace(placement="post"), 2, 5) == pre
    sandwich = layer_activation_elements(cfg.replace(placement="sandwich"), 2, 5)
    assert sandwich["total"] - pre["total"] == 2 * 2 * 5 * 8
