"""FLOP counts: hand counts on a tiny config, the causal convention, prefill = Σ decode steps."""

import pytest

from blocklab.budget.flops import causal_pairs, decode_flops, elementwise_flops, prefill_flops
from blocklab.config import ModelConfig

TINY = ModelConfig(vocab_size=10, d_model=8, n_layers=2, n_heads=2, n_kv_heads=1, d_ff=12,
                   ffn="swiglu", max_seq_len=64)


def test_tiny_prefill_by_hand():
    B, T = 3, 5
    f = prefill_flops(TINY, B, T, causal=False)
    # per token per layer: q 8·8 + k 8·4 + v 8·4 + o 8·8 = 192 multiply-adds, 2 FLOPs each
    assert f.attention_proj == 2 * B * T * 2 * 192
    # per (query, key) pair per layer: 2 heads · (QKᵀ 4 + AV 4) multiply-adds
    assert f.attention_scores == f.attention_scores_full == 2 * B * T * T * 2 * 2 * 8
    assert f.ffn == 2 * B * T * 2 * 3 * 8 * 12
    assert f.lm_head == B * T * 2 * 10 * 8
    assert f.total == f.attention_proj + f.attention_scores + f.ffn + f.lm_head
    assert f.ffn_share == pytest.approx(f.ffn / f.total)
    assert prefill_flops(TINY.replace(pooler=True), 4, 3).other == 4 * 2 * 8 * 8  # pooler


def test_causal_count_is_exact_triangle():
    assert [causal_pairs(t) for t in (1, 2, 3, 4096)] == [1, 3, 6, 4096 * 4097 // 2]
    f = prefill_flops(TINY, 1, 7)
    assert f.causal and f.attention_scores == f.attention_scores_causal
    assert f.attention_scores_causal * 7 * 7 == f.attention_scores_full * 28
    encoder = prefill_flops(TINY.replace(causal=False), 1, 6)  # always counts all pairs
    assert encoder.attention_scores == encoder.attention_scores_full \
        == encoder.attention_scores_causal


def test_prefill_equals_sum_of_decode_steps():
    """Token t of a causal prefill does what a decode step at context t does."""
    B, T = 2, 9
    pre = prefill_flops(TINY, B, T)
    steps = [decode_flops(TINY, B, t) for t in range(1, T + 1)]
    for key in ("attention_proj", "attention_scores", "ffn", "lm_head"):
        assert getattr(pre, key) == sum(getattr(s, key) for s in steps)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, None])
def test_bad_sizes(bad):
    with pytest.raises(ValueError, match="positive integer"):
        prefill_flops(TINY, bad, 4)
    with pytest.raises(ValueError, match="positive integer"):
        decode_flops(TINY, 1, bad)


def test_elementwise_is_small_and_separate():
    f = prefill_flops(TINY.replace(d_model=512, n_heads=8, n_kv_heads=8, d_ff=2048), 1, 256)
    e = elementwise_flops(TINY.replace(d_model=512, n_heads=8, n_kv_heads=8, d_ff=2048), 1, 256)
    assert 0 < e["total"] < 0.05 * f.total
    assert e["total"] == sum(v for k, v in e.items() if k != "total")
