"""The pages' numbers: C15's example and its correction, C23 recomputed. C02/C03's page-000
budget is the sweep's base row (test_sweep.py) of reference.ffn_budget's page counts
(tests/reference/test_ffn.py)."""

import pytest

from blocklab.budget import count_params, decode_flops, model_budget, prefill_flops, resolve_model


@pytest.mark.parametrize("name, attention, ffn, share", [
    # d=4096, d_ff=11008, 32 heads of 128, 8 KV heads: ~42M + ~135M = ~177M, FFN ~76%.
    ("page-001-example", 41_943_040, 135_266_304, 0.7633),
    # The page labels its example Llama 3 8B, whose d_ff is 14336, not 11008.
    ("meta-llama-3-8b", 41_943_040, 176_160_768, 0.8077),
])
def test_c15_layer_split(name, attention, ffn, share):
    p = count_params(resolve_model(name).config)
    assert sum(p.layer[k] for k in ("q_proj", "k_proj", "v_proj", "o_proj")) == attention
    assert sum(p.layer[k] for k in ("gate_proj", "up_proj", "down_proj")) == ffn
    assert ffn / (attention + ffn) == pytest.approx(share, abs=1e-4)
    assert ffn / p.per_layer > 0.75  # past the page's "2/3 to 3/4 of a layer", norms included


def test_c23_page_attention_figure_and_the_honest_split_for_meta_llama_3_8b():
    T, H, hd = 4096, 32, 128
    page_attention = T * T * H * hd
    assert page_attention / 1e9 == pytest.approx(68.7, abs=0.05)
    cfg = resolve_model("meta-llama-3-8b").config
    full = prefill_flops(cfg, 1, T, causal=False)
    # Ours, per layer: QKᵀ and AV, 2 FLOPs per multiply-add -> 4·T²·H·hd, 4x the page's figure.
    assert full.attention_scores_full // cfg.n_layers == 4 * page_attention
    d, m, L = 4096, 14336, 32  # the honest split
    f = prefill_flops(cfg, 1, T)
    assert f.ffn == 2 * 3 * T * d * m * L  # 46,179.5 GFLOP
    assert f.attention_proj == 2 * T * (d * 4096 + 2 * d * 1024 + 4096 * d) * L
    assert f.attention_scores == 4 * 32 * 128 * (T * (T + 1) // 2) * L
    assert f.lm_head == 2 * T * d * 128256
    # The page says FFN is ~99% of prefill FLOPs; counted honestly it is about 70% (causal)
    # and about 66% when all T² scores are counted.
    assert f.ffn_share == pytest.approx(0.701, abs=0.001)
    assert prefill_flops(cfg, 1, T, causal=False).ffn_share == pytest.approx(0.657, abs=0.001)
    doc = model_budget(cfg, seq_len=T)
    assert doc["flops"]["prefill"]["ffn_share"] == f.ffn_share


def test_c24_decode_attention_linear_ffn_constant():
    cfg = resolve_model("meta-llama-3-8b").config
    short, long = decode_flops(cfg, 1, 1024), decode_flops(cfg, 1, 8192)
    assert long.attention_scores == 8 * short.attention_scores and long.ffn == short.ffn
