"""The quantize suite at tiny size, and the bounds it uses against hand arithmetic."""

from blocklab.budget import load_zoo, resolve_model
from blocklab.claims import Context, run_claims
from blocklab.experiments.int8_measurements import (
    amdahl,
    decode_bytes,
    part_flop_share,
    scaled_config,
)
from blocklab.experiments.options import RunOptions, RunRequest
from blocklab.experiments.results import ResultStore
from blocklab.experiments.suites import load_summary, run_suite
from blocklab.experiments.suites.quantize import (
    SIZES,
    SUITE,
    QualityRecord,
    TimingRecord,
    merge_comparison,
    quality_configs,
)
from blocklab.experiments.suites.quantize.data import QuantizeData


def test_amdahl_by_hand():
    assert amdahl(0.5, 2.0) == 1 / (0.5 + 0.25)
    assert amdahl(1.0, 3.0) == 3.0
    assert amdahl(0.0, 10.0) == 1.0


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
    # ffn weights go from 4 bytes to 1, plus a 4-byte scale per output row
    saved = L * (3 * d * m * 3 - (2 * m + d) * 4)
    assert decode_bytes(cfg, "none", T) - decode_bytes(cfg, "ffn", T) == saved
    assert load_zoo("llama-3.2-1b").key == "llama-3.2-1b"


def test_tiny_suite_runs_and_summarises(tmp_path):
    options = RunOptions.for_suite(SUITE, "tiny")
    summary = run_suite(SUITE, options, tmp_path, progress=False)
    assert isinstance(summary.data, QuantizeData)
    schemes = {t.scheme for t in summary.data.timings}
    assert schemes == {"none", "ffn/weight-only", "attention/weight-only", "all/weight-only",
                       "ffn/dynamic", "attention/dynamic", "all/dynamic"}
    data = summary.data
    # C33 from the trained weights: every layer of every seed compared, per row exactly equal
    layers = data.quality_model["n_layers"] * summary.seeds
    assert len(data.gate_up_scale_ratio) == layers and all(r >= 1.0 for r in
                                                           data.gate_up_scale_ratio)
    assert data.merged_per_row_max_diff == 0.0
    assert all(r == 1.0 for r in data.merged_scale_over_max)
    assert data.merged_tensor_loss_penalty.n == summary.seeds
    assert any(t.title.startswith("C33: gate's and up's") for t in summary.tables)
    again = load_summary(tmp_path, "quantize", "tiny")
    assert again.data == summary.data
    # the stored runs read back as their records: the timing's per-scheme compile times (a
    # trainer field's name) included, the quality run's training and C33 layers
    store = ResultStore(tmp_path / "quantize" / "tiny")
    (timing, quality) = (spec for spec in SUITE.plan(options, []))
    record = TimingRecord.of(store.load(timing.run_id), timing.label)
    assert record.spec == SIZES["tiny"].timing[0] and record.times.threads == 1
    assert set(record.times.compile_s) == schemes | {"free/ffn", "free/attention", "free/all"}
    assert all(s is None for s in record.times.compile_s.values())  # eager: nothing compiled
    trained = QualityRecord.of(store.load(quality.run_id), quality.label)
    assert trained.train.steps_done == SIZES["tiny"].quality.steps
    assert len(trained.layers) == data.quality_model["n_layers"]
    assert trained.quality["none"].delta == 0.0
    (c33,) = run_claims(["C33"], Context(RunRequest(tmp_path, "tiny")))
    assert c33.error is None
    exact = c33.parts[0]
    assert exact.verdict == "confirmed" and exact.estimate.n == layers


def test_the_per_row_merge_is_exact_on_trained_weights_and_the_comparison_can_fail():
    import torch

    from blocklab.experiments.trainer import train
    from blocklab.nn.int8 import gated_ffn_weights, int8_scale

    mc, tc = quality_configs(RunOptions("tiny"), 0)
    model, _ = train(mc, tc, "stdlib", progress=False)
    for layer in model.layers:
        gate, up, down = (w.detach() for w in gated_ffn_weights(layer.ffn))
        found = merge_comparison(gate, up, down)
        assert found["per_row_diff"] == 0.0
        assert found["scale_ratio"] == max(found["gate_scale"], found["up_scale"]) / min(
            found["gate_scale"], found["up_scale"]) >= 1.0
        assert found["merged_over_max"] == 1.0
        # the merged matrix's own per-row scales, given explicitly: still exact
        scale = int8_scale(torch.cat((gate, up)), "per-row")
        assert merge_comparison(gate, up, down, scale)["per_row_diff"] == 0.0
        # one row's scale off by 1%: that row's weights change
        scale[0] *= 1.01
        assert merge_comparison(gate, up, down, scale)["per_row_diff"] > 0.0
