"""C32 and C33 verdicts from synthetic quantize summaries; C33's from models whose gate and up
scales are set, measured by the suite's own functions."""

import dataclasses
import math

import numpy as np
import pytest
import torch
from scipy import stats as sps

from blocklab.claims.quantization import (
    c32_parts,
    c33_parts,
    combine_c32,
    combine_c33,
    log_estimate,
)
from blocklab.claims.registry import C33_DELTA, log_pct
from blocklab.claims.rules import Rule, decide, decided_text
from blocklab.config import ModelConfig
from blocklab.experiments.int8_measurements import swiglu_errors
from blocklab.experiments.suites.quantize.runs import merge_comparison
from blocklab.experiments.suites.quantize.summary import QuantizeData, swiglu_summary
from blocklab.experiments.suites.quantize.timing import QuantTiming
from blocklab.experiments.summaries import Interval, TimeRatio
from blocklab.nn import DecoderLM
from blocklab.nn.int8 import gated_ffn_weights, int8_scale

from .conftest import graded

JITTER = (1.0, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1.0)  # per-repeat noise of a scheme's time


def _float_s(n):
    return [0.1 * (1 + 0.05 * i) for i in range(n)]  # the float model's prefill, drifting


def _timing(scheme, speedup, n=5):
    """A scheme's timing row: prefill seconds per repeat (the float model's / `speedup`,
    jittered) and the speed-ups read off them."""
    part, mode = ("none", "none") if scheme == "none" else scheme.split("/")
    base = _float_s(n)
    own = base if scheme == "none" else [f / speedup * JITTER[i] for i, f in enumerate(base)]
    ratio = TimeRatio.paired(base, own)
    return QuantTiming(scheme=scheme, part=part, mode=mode, compiled=False,
                       prefill_ms={"512": 1000 * own[0]}, prefill_s={"512": own},
                       prefill_speedup={"512": ratio}, decode_ms=1.0, decode_speedup=ratio,
                       logits_error=0.01, flop_share={"512": 0.6}, time_share={"512": 0.5},
                       gemm_speedup={"512": 2.0}, prefill_estimate={"512": 1 / (0.5 + 0.25)},
                       prefill_bound={"512": 2.0}, decode_time_share=0.5,
                       decode_estimate=1.6, decode_bound=2.0, compile_s=None)


def _data(ffn, attn, n=5, int8=True):
    return QuantizeData(model={"d_model": 1024, "n_layers": 2}, seq_lens=[512],
                        decode_context=512, repeats=n, threads=1, cpu_flags={"amx_int8": int8},
                        timings=[_timing("none", 1.0, n), _timing("ffn/dynamic", ffn, n),
                                 _timing("attention/dynamic", attn, n)],
                        quality_model={}, quality=[], swiglu=[], merged_per_row_max_diff=0.0,
                        merged_per_tensor_max_diff=0.01, merged_scale_over_max=[1.0],
                        gate_up_scale_ratio=[1.1], merged_tensor_loss_penalty=Interval(0))


def test_c32_is_confirmed_only_when_its_stated_reason_holds_too():
    # FFN-only int8 is faster and fastest, but the FFN holds 70.1% of Llama 3 8B's prefill
    # FLOPs, not ~99% (an exact count, C23's): the claim is mixed, never confirmed.
    parts, numbers = c32_parts(_data(1.8, 1.2))
    assert [p.verdict for p in parts] == ["confirmed", "confirmed", "refuted"]
    reason = parts[2]
    assert reason.name == "the FFN holds ~99% of prefill FLOPs (the stated reason)"
    assert reason.estimate.value == pytest.approx(70.1, abs=0.05) and reason.decision is None
    assert "the timed model: 60.0%" in reason.reason
    assert combine_c32(*parts) == "mixed"
    held = dataclasses.replace(reason, verdict="confirmed")
    assert combine_c32(*parts[:2], held) == "confirmed"
    assert numbers["ffn_flop_share"] == 0.6 and numbers["ffn_time_share"] == 0.5
    assert numbers["bound_ffn"] == 2.0 and numbers["estimate_ffn"] == 1 / (0.5 + 0.25)


def test_c32_slower_is_never_refuted_by_its_timings():
    parts, _ = c32_parts(_data(0.3, 0.4))
    assert all(p.verdict != "refuted" for p in parts[:2])
    held = dataclasses.replace(parts[2], verdict="confirmed")
    # one T: no contradiction
    assert combine_c32(*parts[:2], held) == "not-reproduced-at-this-scale"
    # nothing holds and its reason is false by count: refuted, by the count alone
    assert combine_c32(*parts) == "refuted"


def test_c32_without_int8_instructions_is_untestable_and_never_contradicted(tmp_path):
    data = _data(0.3, 0.4, int8=False)
    parts, _ = c32_parts(data)
    assert all(p.verdict == "not-reproduced-at-this-scale" for p in parts[:2])
    held = dataclasses.replace(parts[2], verdict="confirmed")
    assert combine_c32(*parts[:2], held, int8=False) == "untestable-here"
    row = graded(tmp_path, "quantize", data, "C32", seeds=5)["C32"]
    # its timings untestable here, its stated reason refuted by count: refuted
    assert row.error is None and row.verdict == "refuted"
    assert [p.verdict for p in row.parts][2] == "refuted"
    assert "no VNNI/AMX int8" in row.summary
    # the text says which figure is a bound and which an estimate
    assert "the bound no FFN-only scheme can beat" in row.summary
    assert "estimates FFN-only at ×1.33" in row.summary


def test_c32_too_few_repeats_inconclusive():
    parts, _ = c32_parts(_data(1.8, 1.2, n=2))
    assert parts[0].verdict == "inconclusive" and "needs at least 3" in parts[0].reason


def _log_t_interval(a, b, confidence):
    """100·ln of a[i] / b[i]: the Student t interval of the mean at `confidence` (scipy's)."""
    logs = [100 * math.log(x / y) for x, y in zip(a, b, strict=True)]
    return sps.t.interval(confidence, len(logs) - 1, loc=np.mean(logs), scale=sps.sem(logs))


def test_c32_decision_reads_the_interval_it_prints(tmp_path):
    # Both parts are graded on 100·ln(ratio): each decision reads the log-scale t interval at
    # its level (by hand here), the one the ledger prints.
    data = _data(1.3, 1.2, n=6)
    parts, numbers = c32_parts(data)
    rows = {r.scheme: r for r in data.timings}
    base, ffn, attn = (rows[k].prefill_s["512"] for k in ("none", "ffn/dynamic",
                                                          "attention/dynamic"))
    for part, (a, b) in zip(parts[:2], ((base, ffn), (attn, ffn)), strict=True):
        decision = part.decision
        assert decision.interval.confidence == pytest.approx(1 - decision.level)
        low, high = _log_t_interval(a, b, decision.interval.confidence)
        assert (decision.interval.low, decision.interval.high) == (
            pytest.approx(low, rel=1e-9), pytest.approx(high, rel=1e-9))
        # the stored 95% interval is the table's TimeRatio on the log scale
        ratio = TimeRatio.paired(a, b)
        assert (part.estimate.ci_low, part.estimate.ci_high) == (
            pytest.approx(100 * math.log(ratio.ci_low), rel=1e-12),
            pytest.approx(100 * math.log(ratio.ci_high), rel=1e-12))
        # the verdict is what that interval says against δ = 5% mapped to this scale
        assert (low > log_pct(5.0)) == (part.verdict == "confirmed")
        assert f"[{low:+.3g}, {high:+.3g}]" in decided_text(part)
    assert [p.verdict for p in parts] == ["confirmed", "confirmed", "refuted"]
    # Holm over the two timed parts: the first is read at 97.5%, the second at 95%
    assert sorted(p.decision.level for p in parts[:2]) == [0.025, 0.05]
    assert numbers["repeats"] == 6
    row = graded(tmp_path, "quantize", data, "C32", seeds=6)["C32"]
    assert row.error is None
    for part in row.parts[:2]:
        assert decided_text(part) in row.summary
    assert "70.1% at the page's Llama-3-8B and T=4096" in row.summary
    assert "geometric mean of paired ratios, Student t on log ratios over 6 repeats" in row.summary


def test_c32_is_graded_on_the_log_scale_not_by_rescaling_percent():
    # At 98.75%, rescaling the percent interval 100·(r − 1) by a t-quantile ratio is not the
    # t interval; rescaling the log one is, and C32 grades that.
    base = _float_s(6)
    ffn = [f / 1.3 * j for f, j in zip(base, (1.0, 1.3, 0.75, 1.2, 0.85, 1.1), strict=True)]
    ratio = TimeRatio.paired(base, ffn)
    est = log_estimate(ratio)
    t95, t_strict = (float(sps.t.ppf(q, 5)) for q in (0.975, 0.99375))
    log_low = est.value - t_strict / t95 * (est.value - est.ci_low)
    exact_low = _log_t_interval(base, ffn, 0.9875)[0]
    assert log_low == pytest.approx(exact_low, rel=1e-9)
    pct = [100 * (x - 1) for x in (ratio.ratio, ratio.ci_low)]
    pct_low = pct[0] - t_strict / t95 * (pct[0] - pct[1])
    assert abs(pct_low - 100 * math.expm1(exact_low / 100)) > 1.0  # percent points apart


@pytest.mark.parametrize("n", [4, 8])
def test_timing_intervals_cover_at_their_nominal_levels(n):
    """Lognormal timings (σ = 0.3 per timing and per repeat): the 95% `TimeRatio.paired`
    interval and the 99.5% one `decide` reads cover the true ratio within ±2 points (2000
    replications: binomial sd 0.49 points at 95%, 0.16 at 99.5%)."""
    rng = np.random.default_rng(20261205 + n)
    reps, true = 2000, 1.2
    rule = Rule(metric="simulated log ratio", smallest_effect=5.0, margin=0.0, min_seeds=2,
                claimed=10.0)
    at95 = at995 = 0
    for _ in range(reps):
        slow = 0.05 * rng.lognormal(0.0, 0.3, size=n)  # each repeat's shared slowness
        a = true * slow * rng.lognormal(0.0, 0.3, size=n)
        b = slow * rng.lognormal(0.0, 0.3, size=n)
        ratio = TimeRatio.paired(a, b)
        at95 += ratio.ci_low <= true <= ratio.ci_high
        iv = decide(rule, log_estimate(ratio), 0.005, explain=False).interval
        assert iv.confidence == pytest.approx(0.995)
        at995 += iv.low <= 100 * math.log(true) <= iv.high
    assert abs(at95 / reps - 0.95) <= 0.02, at95 / reps
    assert abs(at995 / reps - 0.995) <= 0.02, at995 / reps


# --- C33 -----------------------------------------------------------------------------------------
C33_SEEDS = range(6)  # the rule's max_seeds: the last look, read at close to 5%


@torch.no_grad()
def with_scale_ratio(model, ratio):
    """`model` with each layer's up rescaled (down divided back) so that gate's per-tensor
    int8 scale is exactly `ratio` × up's."""
    for layer in model.layers:
        gate, up, down = gated_ffn_weights(layer.ffn)
        top = gate.abs().max()
        factor = top / (ratio * up.abs().max())
        up.mul_(factor)
        down.div_(factor)
        flat = up.view(-1)
        at = int(flat.abs().argmax())
        flat[at] = torch.sign(flat[at]) * top / ratio
        assert float(int8_scale(gate, "per-tensor") / int8_scale(up, "per-tensor")) == ratio
    return model


def measured(ratio, row_scale_error=0.0):
    """C33's data from a small SwiGLU model per seed with gate and up scales `ratio` apart,
    measured by `swiglu_errors` and `merge_comparison` (merged row 0's scale off by
    `row_scale_error`)."""
    cfg = ModelConfig(vocab_size=256, d_model=64, n_layers=2, n_heads=2, ffn="swiglu",
                      max_seq_len=32)
    per_seed, layers = [], []
    for seed in C33_SEEDS:
        torch.manual_seed(seed)
        model = with_scale_ratio(DecoderLM(cfg).eval(), ratio)
        windows = torch.randint(0, 256, (8, 33), generator=torch.Generator().manual_seed(seed))
        per_seed.append(swiglu_errors(model, windows))
        for layer in model.layers:
            gate, up, down = (w.detach() for w in gated_ffn_weights(layer.ffn))
            scale = int8_scale(torch.cat((gate, up)), "per-row")
            scale[0] *= 1 + row_scale_error
            layers.append(merge_comparison(gate, up, down, scale))
    return dataclasses.replace(
        _data(1.0, 1.0), swiglu=swiglu_summary(per_seed),
        merged_per_row_max_diff=max(x["per_row_diff"] for x in layers),
        merged_per_tensor_max_diff=max(x["per_tensor_diff"] for x in layers),
        merged_scale_over_max=[x["merged_over_max"] for x in layers],
        gate_up_scale_ratio=[x["scale_ratio"] for x in layers])


def test_c33_equal_scales_merge_per_tensor_for_free():
    data = measured(1.0)
    assert data.gate_up_scale_ratio == [1.0] * 2 * len(C33_SEEDS)
    # One scale for both is each one's own: merged is separate, bit for bit.
    assert data.merged_per_tensor_max_diff == 0.0
    exact, tensor = c33_parts(data)
    assert exact.verdict == "confirmed" and exact.estimate.n == 2 * len(C33_SEEDS)
    assert tensor.estimate.value == 0.0 and tensor.estimate.n == len(C33_SEEDS)
    assert tensor.verdict == "not-reproduced-at-this-scale"
    assert combine_c33(exact, tensor) == "not-reproduced-at-this-scale"


def test_c33_scales_4x_apart_cost_beyond_delta(tmp_path):
    data = measured(4.0)
    assert data.gate_up_scale_ratio == [4.0] * 2 * len(C33_SEEDS)
    exact, tensor = c33_parts(data)
    # Per row the merge is still exact: the scale gap costs only under one per-tensor scale.
    assert exact.verdict == "confirmed" and data.merged_per_row_max_diff == 0.0
    assert tensor.estimate.ci_low > C33_DELTA  # up on a 4× coarser grid: about +140%
    assert tensor.verdict == "confirmed"
    assert combine_c33(exact, tensor) == "conditional"
    row = graded(tmp_path, "quantize", data, "C33", seeds=len(C33_SEEDS))["C33"]
    assert row.error is None and row.verdict == "conditional"
    assert "4×" in row.summary and "merging is free" in row.summary
    assert "4×" in row.summary_zh
    assert [p.verdict for p in row.parts] == ["confirmed", "confirmed"]
    # no compared layer: conditional if exact, confirmed if not, so undecided
    exact, tensor = c33_parts(dataclasses.replace(data, gate_up_scale_ratio=[]))
    assert exact.verdict == "inconclusive" and tensor.verdict == "confirmed"
    assert combine_c33(exact, tensor) == "inconclusive"


def test_c33_a_perturbed_row_scale_breaks_the_identity():
    data = measured(1.0, row_scale_error=0.01)
    assert data.merged_per_row_max_diff > 0.0
    exact, tensor = c33_parts(data)
    assert exact.verdict == "refuted" and exact.estimate.value == data.merged_per_row_max_diff
    # Without a free per-row merge, no condition: the per-tensor part's verdict.
    assert combine_c33(exact, tensor) == "not-reproduced-at-this-scale"
    four = measured(4.0, row_scale_error=0.01)
    assert combine_c33(*c33_parts(four)) == "confirmed"
