"""The bounds and estimates the quantize suite's timings use, against hand arithmetic."""

from blocklab.budget import resolve_model
from blocklab.experiments.int8_measurements import part_flop_share, scaled_config


def test_bounds_from_the_budget():
    cfg = scaled_config(resolve_model("llama-3.2-1b").config, n_layers=2, d_model=256)
    d, m, L, V = cfg.d_model, cfg.d_ff, cfg.n_layers, cfg.vocab_size
    T = 64
    ffn = L * T * 2 * 3 * d * m
    q, kv = cfg.n_heads * cfg.head_dim, cfg.n_kv_heads * cfg.head_dim
    proj = L * T * 2 * (2 * d * q + 2 * d * kv)
    scores = L * (T * (T + 1) // 2) * 4 * cfg.n_heads * cfg.head_dim
    total = ffn + proj + scores + T * 2 * V * d
    assert abs(part_flop_share(cfg, "ffn", T) - ffn / total) < 1e-12
