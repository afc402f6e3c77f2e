"""C18 (`blocklab.claims.norm_cost`): verdicts from fabricated norm-cost summaries, written
the way `run_suite` writes them, and its combining rule."""


import pytest

from blocklab.claims.norm_cost import combine_c18
from blocklab.claims.registry import CHANGED_AFTER_DATA, registered
from blocklab.claims.rules import Estimate, Part
from blocklab.experiments.suites.norm_cost.summary import (
    FusedTiming,
    KernelRatio,
    NormCostData,
    NormQuality,
    StepTime,
)
from blocklab.experiments.summaries import TimeRatio

from .conftest import ci, graded


def _ratio(impl, ratio, low, high, d=1024, pass_name="fwdbwd") -> KernelRatio:
    return KernelRatio(d=d, rows=1024, threads=1, impl=f"rmsnorm:{impl}",
                       layernorm_impl=f"layernorm:{impl}", pass_name=pass_name,
                       time=TimeRatio(ratio=ratio, ci_low=low, ci_high=high, repeats=5))


def _step_time(path: str, ratio: float, low: float, high: float) -> StepTime:
    return StepTime(threads=1, model={"d_model": 64}, params={"rmsnorm": 10}, rmsnorm_ms=2.0,
                    layernorm_ms=2.0, path=path,
                    time=TimeRatio(ratio=ratio, ci_low=low, ci_high=high, repeats=30))


def _norm_cost(step, equivalent: bool, like_ratio: float = 0.84) -> NormCostData:
    loss = ci(2.0, 1.9, 2.1)
    like = FusedTiming(
        d=128, rows=1024, threads=1, method="torch.compile",
        kernels={"rmsnorm": "torch.compile of …", "layernorm": "torch.compile of …"},
        torch_fused={"rmsnorm": False, "layernorm": True},
        rmsnorm_ms={"fwd": None, "fwdbwd": 0.8}, layernorm_ms={"fwd": None, "fwdbwd": 1.0},
        ratios={"fwdbwd": TimeRatio(ratio=like_ratio, ci_low=like_ratio - 0.05,
                                    ci_high=like_ratio + 0.05, repeats=15)},
        compile_s={"rmsnorm": 5.0, "layernorm": 4.0}, error=None)
    return NormCostData(
        kernels=[], compile=[],
        # a forward-only ratio is not shown: the claim is about training (forward+backward)
        ratios=[_ratio("plain", 0.85, 0.80, 0.90), _ratio("blocklab", 3.0, 2.5, 3.5),
                _ratio("plain", 2.0, 1.9, 2.1, pass_name="fwd")],
        step_time={"like-for-like/1": _step_time("like-for-like", *step),
                   # blocklab's own fused path is reported beside, never graded
                   "blocklab/1": _step_time("blocklab", 0.5, 0.4, 0.6)},
        # Quality is decided from the interval by the part's rule (two one-sided tests), not
        # from the suite's flag: equivalent or wholly outside ±0.02.
        quality=NormQuality(rmsnorm=loss, layernorm=loss,
                            delta=ci(0.0, -0.01, 0.01) if equivalent else ci(0.03, 0.025, 0.035),
                            margin=0.02, equivalent=equivalent, verdict="equivalent",
                            seeds=[0, 1, 2], statuses={}, unigram_entropy=None),
        like_for_like=[like])


NR = "not-reproduced-at-this-scale"
R = "refuted"


@pytest.mark.parametrize(("equivalent", "quality"), [(True, "confirmed"), (False, NR)])
def test_norm_cost_compute_is_decided_by_the_counts_not_by_timings(tmp_path, equivalent,
                                                                   quality):
    # Whatever the timings, exact counts (35% fewer FLOPs a row, 0.02% fewer bytes, 0.004%
    # of a Llama-3-8B step; none near 7%) refute "compute", equivalent quality or not.
    found = set()
    for step, like in (((0.90, 0.88, 0.92), 0.5), ((1.05, 1.03, 1.07), 1.5)):
        row = graded(tmp_path, "norm-cost", _norm_cost(step, equivalent, like), "C18")["C18"]
        assert row.error is None
        assert [p.verdict for p in row.parts] == [R, R, R, quality]
        found.add((row.verdict, tuple(p.estimate.value for p in row.parts[:3])))
        assert "equally fused kernels (both through torch.compile" in row.summary
        assert f"{like:.3f}" in row.summary  # reported
    ((verdict, values),) = found  # the same verdict and counts for both timings
    assert verdict == R
    flops, bytes_, step_pct = values
    assert flops == pytest.approx(35.0)
    assert bytes_ == pytest.approx(100 * 8 / (5 * 4096 * 2 + 16))
    assert 0 < step_pct < 0.01
    assert [p.name for p in row.parts] == [
        "the norm needs about 7% fewer FLOPs", "the norm moves about 7% fewer bytes",
        "a training step needs about 7% fewer FLOPs", "nearly the same quality"]
    assert "above [5, 9]%" in row.parts[0].reason and "below [5, 9]%" in row.parts[1].reason
    assert all("an exact count, so refuted" in p.reason for p in row.parts[:3])
    assert row.rule.claimed == 7.0 and row.rule.test == "equivalence"
    assert "reports no general speed-up" in row.summary
    assert row.evidence["ratio_ranges"] == {"blocklab": [3.0, 3.0], "plain": [0.85, 0.85]}
    # The evidence keeps the flat rows the ledger has always shown.
    assert row.evidence["ratios"][0] == {
        "d": 1024, "rows": 1024, "threads": 1, "impl": "rmsnorm:plain",
        "layernorm_impl": "layernorm:plain", "pass": "fwdbwd", "ratio_vs_layernorm": 0.85,
        "ci_low": 0.80, "ci_high": 0.90, "repeats": 5}
    assert row.evidence["step_time"]["like-for-like/1"]["ratio"] == 1.05
    assert row.evidence["compute"]["flops_saving_pct"] == pytest.approx(35.0)
    assert row.evidence["like_for_like"][0]["method"] == "torch.compile"
    assert "fused add+RMSNorm kernel instead, 0.500" in row.summary
    assert row.evidence["quality"]["delta"]["ci_high"] == (0.01 if equivalent else 0.035)
    assert "over 3 seeds" in row.summary and "±0.02" in row.summary
    assert any("C18" in c.claims and "decided by exact counts" in c.what
               for c in CHANGED_AFTER_DATA)


@pytest.mark.parametrize(("readings", "quality", "verdict"), [
    ([R, R, R], "confirmed", R),
    (["confirmed", R, R], "confirmed", "confirmed"),
    ([R, R, "confirmed"], NR, "mixed"),
    ([R, "confirmed", R], "inconclusive", "inconclusive"),  # confirmed or mixed
    ([R, R, R], "inconclusive", R),  # compute alone decides it
])
def test_c18_combine_rule(readings, quality, verdict):
    rule = registered("C18", "quick")["nearly the same quality"]
    part = lambda v: Part("p", rule, Estimate(None, None, None, 0), v, "")  # noqa: E731
    assert combine_c18([part(v) for v in readings], part(quality)) == verdict
