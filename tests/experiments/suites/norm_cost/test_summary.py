"""The norm-cost suite's summary (`norm_cost.summary`): the time ratio and equivalence rules
against hand cases, the analytic FLOP and byte counts against hand counts and autograd, the
tables, and the tiny grid end to end."""

import math

import pytest
import torch
from scipy import stats as sps

from blocklab.budget.flops import ELEMENTWISE_COST, NORM_BACKWARD_COST, prefill_flops
from blocklab.experiments.suites import load_summary
from blocklab.experiments.suites.norm_cost import runs, summary, timing
from blocklab.experiments.summaries import Interval, TimeRatio


def test_time_ratio_by_hand_and_the_tables_name_its_method():
    # Per-repeat ratios 3 and 1: logs ln 3 and 0, mean ln√3, sd ln3/√2, and the 95% interval
    # exp(mean ± t_{0.975, 1} · sd / √2), t_{0.975, 1} from scipy (the interval's arithmetic,
    # and its refusal of fewer than 2 pairs, are tested in tests/test_stats.py).
    ratio = TimeRatio.paired([1.0, 3.0], [1.0, 1.0])
    m, half = math.log(3) / 2, float(sps.t.ppf(0.975, 1)) * math.log(3) / 2
    assert ratio.ratio == pytest.approx(math.sqrt(3), rel=1e-12)
    assert (ratio.ci_low, ratio.ci_high) == pytest.approx((math.exp(m - half),
                                                           math.exp(m + half)), rel=1e-12)
    assert ratio.method() == "geometric mean of paired ratios, Student t on log ratios, 2 repeats"
    step = summary.StepTime(threads=1, model={"d_model": 8, "n_layers": 1, "seq_len": 4,
                                              "batch_size": 1}, params={}, rmsnorm_ms=1.0,
                            layernorm_ms=1.0, time=TimeRatio.paired([1.0, 1.1, 0.9], [1.0] * 3),
                            path="blocklab")
    caption = summary.step_table({"blocklab/1": step}).caption
    assert "geometric mean of paired ratios, Student t on log ratios, 3 repeats" in caption
    assert "bootstrap" not in caption


def test_equivalence_rule_by_hand():
    inside = Interval(3, 0.001, -0.01, 0.015)
    assert summary.equivalence(inside, 0.02) == (True, "equivalent")
    crossing = Interval(3, 0.01, -0.005, 0.025)
    assert summary.equivalence(crossing, 0.02)[0] is False
    assert "crosses" in summary.equivalence(crossing, 0.02)[1]
    outside = Interval(3, 0.05, 0.03, 0.07)
    assert summary.equivalence(outside, 0.02) == (False, "different (whole CI outside the margin)")
    assert summary.equivalence(Interval(1, 0.0), 0.02)[0] is False


def test_tiny_suite_end_to_end(tiny_runs):
    summarised = load_summary(tiny_runs, "norm-cost", "tiny")
    titles = [t.title for t in summarised.tables]
    # C18 is decided by the counts and the quality runs; the step and the like-for-like
    # kernels are timed and reported; the kernel runs are left to --size full
    assert titles == [
        "Training step time, DecoderLM with RMSNorm vs LayerNorm (median ms)",
        "Like-for-like kernel time: RMSNorm vs LayerNorm with equally fused kernels (median ms)",
        "What 'compute' means: FLOPs and bytes per normalised row of width d (analytic)",
        "The norms within one training step (analytic FLOPs)",
        "Quality: validation loss (nats/token) on stdlib, paired by seed"]
    # the step run, the like-for-like run, rmsnorm and layernorm × 2 seeds
    assert summarised.runs == 2 + 2 * 2
    assert any(n.startswith("Run at --size full only") and "the kernel runs" in n
               for n in summarised.notes), summarised.notes

    data = summarised.data
    assert data.kernels == [] and data.ratios == [] and data.compile == []
    assert set(data.step_time) == {"blocklab/1", "like-for-like/1"}
    for step in data.step_time.values():
        assert step.rmsnorm_ms > 0 and step.layernorm_ms > 0
        assert step.time.ci_low <= step.time.ratio <= step.time.ci_high
    (like,) = data.like_for_like
    assert like.method == timing.like_method(like.torch_fused) and like.ratios["fwdbwd"].ratio > 0
    assert data.compute == summary.count_compute("tiny")
    quality = data.quality
    assert quality.margin == summary.EQUIVALENCE_MARGIN and quality.delta.n == 2
    assert isinstance(quality.equivalent, bool)


def _rms_backward_as_counted(x, g, dy):
    """RMSNorm's backward spelled with exactly the ops `NORM_BACKWARD_COST` counts (per
    element: x̂ 1, dγ 2, g·dy 1, Σ g·x̂ 2, dx 3). x, dy: [rows, d]; g: [d]."""
    r = (x.pow(2).mean(-1, keepdim=True) + timing.EPS).rsqrt()
    xhat = x * r
    dgain = (dy * xhat).sum(0)
    gdy = dy * g
    c = (gdy * xhat).sum(-1, keepdim=True)
    return r * (gdy - xhat * c / x.shape[-1]), dgain


def _ln_backward_as_counted(x, g, dy):
    """LayerNorm's backward with exactly the counted ops (x̂ 2, dγ 2, dβ 1, g·dy 1, Σ g·dy 1,
    Σ g·x̂ 2, dx 4)."""
    mu = x.mean(-1, keepdim=True)
    r = ((x - mu).pow(2).mean(-1, keepdim=True) + timing.EPS).rsqrt()
    xhat = (x - mu) * r
    dgain, dbias = (dy * xhat).sum(0), dy.sum(0)
    gdy = dy * g
    a = gdy.sum(-1, keepdim=True)
    c = (gdy * xhat).sum(-1, keepdim=True)
    d = x.shape[-1]
    return r * (gdy - a / d - xhat * c / d), dgain, dbias


def test_norm_flops_and_bytes_match_a_hand_count_at_d_4():
    # d = 4, float32. RMSNorm forward: x² 4, Σ 4, ·r 4, ·γ 4 = 16; backward 9 per element = 36.
    # LayerNorm forward: Σx 4, x − μ 4, ()² 4, Σ 4, ·r 4, ·γ 4, + β 4 = 28; backward 13·4 = 52.
    rms, ln = summary.count_norm("rmsnorm", 4), summary.count_norm("layernorm", 4)
    assert (rms.fwd_flops, rms.fwdbwd_flops) == (16, 16 + 36)
    assert (ln.fwd_flops, ln.fwdbwd_flops) == (28, 28 + 52)
    assert ELEMENTWISE_COST["rmsnorm"] * 4 == rms.fwd_flops  # one source: blocklab.budget
    # Bytes per row: forward reads x, writes y (2·4·4 = 32) and 1 or 2 float32 statistics;
    # backward reads x and dy, writes dx (48) and reads the statistics again.
    assert (rms.fwd_bytes, rms.fwdbwd_bytes) == (32 + 4, 32 + 4 + 48 + 4)
    assert (ln.fwd_bytes, ln.fwdbwd_bytes) == (32 + 8, 32 + 8 + 48 + 8)
    # γ read forward, γ read and dγ written backward (3·16); LayerNorm adds β and dβ (5·16).
    assert (rms.param_bytes, ln.param_bytes) == (48, 80)
    assert summary.saving_pct(rms.fwdbwd_flops, ln.fwdbwd_flops) == pytest.approx(35.0)
    assert summary.saving_pct(rms.fwd_flops, ln.fwd_flops) == pytest.approx(300 / 7)
    # The counted backward ops compute the true gradients.
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(3, 4, generator=gen, dtype=torch.float64, requires_grad=True)
    g = torch.randn(4, generator=gen, dtype=torch.float64, requires_grad=True)
    b = torch.randn(4, generator=gen, dtype=torch.float64, requires_grad=True)
    dy = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    want = torch.autograd.grad(torch.nn.functional.rms_norm(x, (4,), g, timing.EPS), [x, g], dy)
    for got, ref in zip(_rms_backward_as_counted(x.detach(), g.detach(), dy), want, strict=True):
        torch.testing.assert_close(got, ref)
    want = torch.autograd.grad(torch.nn.functional.layer_norm(x, (4,), g, b, timing.EPS),
                               [x, g, b], dy)
    for got, ref in zip(_ln_backward_as_counted(x.detach(), g.detach(), dy), want, strict=True):
        torch.testing.assert_close(got, ref)
    assert NORM_BACKWARD_COST == {"rmsnorm": 9, "layernorm": 13}
    with pytest.raises(ValueError, match="not allowed"):
        summary.count_norm("batchnorm", 4)


def test_step_share_by_hand_and_at_llama_3_8b():
    compute = summary.count_compute("quick")
    step = runs.SIZES["quick"].step
    toy, real = compute.steps
    tokens, d, layers = step.batch_size * step.seq_len, step.d_model, step.n_layers
    assert toy.norm_calls == 2 * layers + 1  # pre-norm: two per layer and the final one
    assert toy.norm_flops == {"rmsnorm": toy.norm_calls * tokens * d * 13,
                              "layernorm": toy.norm_calls * tokens * d * 20}
    cfg = timing.model_config("rmsnorm", d, layers, step.seq_len)
    assert toy.matmul_flops == 3 * prefill_flops(cfg, step.batch_size, step.seq_len).total
    assert toy.saving_pct == pytest.approx(
        100 * 7 * toy.norm_calls * tokens * d / toy.step_flops["layernorm"])
    assert (real.model, real.d_model, real.n_layers, real.norm_calls) == (
        summary.REAL_MODEL, 4096, 32, 65)
    assert 0 < real.saving_pct < 0.01 < toy.saving_pct < 1  # far below 7% at either shape
    assert compute.flops_saving_pct == pytest.approx(35.0)
    assert compute.bytes_saving_pct["d=4096/2B"] == pytest.approx(100 * 8 / (5 * 4096 * 2 + 16))
