"""A claim on the ladder: each rung graded as the ledger grades a size (here with estimates
put in its place), where each part is first decided, the trend through the rung means, the
papers at their compute."""

import math

import pytest
from scipy import stats

from blocklab.claims import ladder as ladder_module
from blocklab.claims.anchors import anchors
from blocklab.claims.ladder import ladder_dict, read_ladder, seed_gaps
from blocklab.claims.ledger import ClaimResult
from blocklab.claims.registry import registered
from blocklab.claims.rules import Estimate, Part, claimed_side
from blocklab.errors import InputError
from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import ResultStore
from blocklab.experiments.suites import get_suite, run_suite
from blocklab.experiments.summaries import Interval
from blocklab.report.figures import fig_ladder

from .test_rules import t_estimate

QUICK_FLOPS = 2.4e11
# SwiGLU − ReLU at each rung: −0.2, −0.65, −1.0, −2.0 % (5 seeds, sd 0.2); GeGLU and GLU
# flat at +0.1
MEANS = {"quick": -0.2, "rung1": -0.65, "rung2": -1.0, "rung3": -2.0}
FLOPS = {"quick": 1, "rung1": 2, "rung2": 4, "rung3": 8}


def _fake_rungs(monkeypatch, claim: str, means: dict[str, dict[str, float]], sd: float,
                asked: list | None = None) -> None:
    """Each rung of `means` ({size: {part: mean}}) graded from its design's first look (5
    seeds at quick, 12 on a C16 rung above it) of spread sd, the other seeded parts at 0 and
    analytic parts as the ledger reads them (one exact value); `asked` records each rung read."""
    def run_claims(ids, ctx):
        if asked is not None:
            asked.append((ctx.size, ctx.precision))
        rules = registered(claim, ctx.size)
        if ctx.size not in means:
            return [ClaimResult(claim, "", "", "", "", "missing-results", "", "", {}, "",
                                None, None, [Part(name, r, Estimate(None, None, None, 0),
                                                  "missing-results", "")
                                             for name, r in rules.items()])]
        specs = []
        for name, r in rules.items():
            if r.min_seeds < 2:
                specs.append((name, r, Estimate.of(Interval(1, r.claimed))))
                continue
            mean, n = means[ctx.size].get(name, 0.0), r.schedule[0]
            specs.append((name, r, t_estimate(mean, sd, n)))
        parts = Part.decided_together(specs, fair_arms=True)
        flops = QUICK_FLOPS * FLOPS[ctx.size]
        return [ClaimResult(claim, "", "", "", "", parts[0].verdict, "", "", {}, "", None,
                            None, parts, scale={"flops": flops, "text": ctx.size,
                                                "text_zh": ctx.size})]

    monkeypatch.setattr(ladder_module, "run_claims", run_claims)


@pytest.fixture
def stored(monkeypatch):
    """C16 on every rung; (the rungs read, {size: means}: delete a size for no results)."""
    asked: list = []
    means = {size: {"swiglu": m, "geglu": 0.1, "glu": 0.1} for size, m in MEANS.items()}
    _fake_rungs(monkeypatch, "C16", means, sd=0.2, asked=asked)
    return asked, means


def test_each_rung_is_graded_in_its_precision_and_the_trend_fits_the_rung_means(stored,
                                                                                   tmp_path):
    asked, _ = stored
    found = read_ladder("C16", tmp_path, {"quick": "bf16", "rung1": "bf16"})
    assert asked == [("quick", "bf16"), ("rung1", "bf16"), ("rung2", "fp32"),
                     ("rung3", "fp32")]
    assert found.base_flops == QUICK_FLOPS
    swiglu = found.trends[0]
    assert swiglu.part == "swiglu" and swiglu.boundary == -1.0  # the page's "1–2%": its low end
    # the line through the four rung means (5 seeds at quick, 12 above: weighted by
    # 1 / (τ² + σ²/n), near the unweighted line here), t on 2 degrees of freedom
    ref = stats.linregress(range(4), list(MEANS.values()))
    assert swiglu.fit.slope == pytest.approx(ref.slope, abs=0.01) and swiglu.fit.n == 41
    assert swiglu.fit.df == 2 and swiglu.fit.slope_high < 0
    assert swiglu.direction(-1.0) == "grows"
    assert swiglu.meeting.at == pytest.approx(
        (-1.0 - swiglu.fit.intercept) / swiglu.fit.slope)
    assert not swiglu.meeting.extrapolated
    # rung1's −0.65 lies wholly short of the page's −1 (not reproduced there), rung2's −1.0
    # straddles it, rung3's −2.0 clears it: first decided at rung1, confirmed from rung3
    verdicts = [next(p for p in r.result.parts if p.name == "swiglu").verdict
                for r in found.rungs]
    assert verdicts == ["inconclusive", "not-reproduced-at-this-scale", "inconclusive",
                        "confirmed"]
    assert (swiglu.appears.size, swiglu.appears.verdict) == ("rung1", verdicts[1])
    assert (swiglu.confirmed.size, swiglu.confirmed.verdict) == ("rung3", "confirmed")
    assert found.trends[1].fit.slope == pytest.approx(0.0, abs=1e-12)
    assert found.trends[1].direction(-1.0) == "none"
    # the lead sentence: where a part is first decided and then confirmed
    doc = ladder_dict(found)
    swiglu = doc["trends"][0]
    seen = swiglu["appears"]
    assert seen["verdict"] == "not-reproduced-at-this-scale"
    assert swiglu["confirmed"]["size"] == "rung3"
    part = doc["rungs"][1]["parts"][0]  # rung1's swiglu
    # the interval quoted is the one that decided the part at that rung
    assert (seen["low"], seen["high"], seen["confidence"]) == (
        part["interval"]["low"], part["interval"]["high"], part["interval"]["confidence"])
    assert seen["x"] == pytest.approx(math.log2(FLOPS[seen["size"]]))
    line = ladder_module.appears_line(swiglu, doc["rungs"], doc["anchors"])
    assert line.startswith("swiglu: first decided at rung1 (2× compute")
    assert "the one that decided it" in line and "Shazeer 2020" in line and "-2.4%" in line
    assert "; confirmed at rung3 (8× compute, 1.9·10^12 FLOPs): confirmed, -2.00%" in line
    zh = ladder_module.appears_line(swiglu, doc["rungs"], doc["anchors"], "zh")
    assert zh.startswith("swiglu：最早在 rung1")
    assert "；在 rung3（8× 算力，1.9·10^12 FLOPs）证实：" in zh
    # a part no rung decides says so, and up to which compute
    undecided = {**doc["trends"][2], "appears": None}
    assert ladder_module.appears_line(undecided, doc["rungs"], doc["anchors"]).startswith(
        "glu: no rung decides it (4 rung(s) stored, up to 1.9·10^12 FLOPs)")


def test_a_rung_without_results_leaves_the_trend_and_the_axis_to_the_others(stored, tmp_path):
    _, means = stored
    del means["rung3"]
    found = read_ladder("C16", tmp_path, {})
    assert [r.size for r in found.rungs if r.result is not None] == ["quick", "rung1", "rung2"]
    assert found.trends[0].fit.rungs == 3 and found.trends[0].fit.df == 1
    # rungs and papers on one compute axis
    doc = ladder_dict(found)
    assert [r["x"] for r in doc["rungs"][:3]] == pytest.approx([0.0, 1.0, 2.0])
    assert doc["rungs"][3]["x"] is None
    assert doc["rungs"][3]["parts"] == [] and doc["rungs"][3]["verdict"] is None
    shazeer = doc["anchors"][0]
    assert shazeer["x"] == pytest.approx(math.log2(anchors("C16")[0].flops / QUICK_FLOPS))
    assert shazeer["effects"]["swiglu"] == -2.4
    part = doc["rungs"][2]["parts"][0]
    assert part["name"] == "swiglu" and part["interval"]["confidence"] >= 0.95  # what decided
    assert doc["trends"][0]["meeting"]["threshold"] == -1.0  # drawn: tests/report/test_figures
    del means["rung2"]
    two = read_ladder("C16", tmp_path, {})
    assert two.trends[0].fit is None and two.trends[0].direction(-1.0) == "none"
    line = ladder_module.trend_line(ladder_dict(two)["trends"][0])
    assert "a trend with the rung as its unit needs three" in line


def test_only_a_claim_with_a_ladder_is_read():
    with pytest.raises(InputError, match="claim 'C36' has no ladder"):
        read_ladder("C36", ".", {})


def test_a_claim_of_at_most_t_moves_towards_it_as_its_effect_falls(monkeypatch, tmp_path):
    """C21's "RoPE works at 2×" (at most 5%): growing ~2 points a rung, the line moves away
    and reaches 5 near 1.5 rungs; no precision check (C16's alone)."""
    part = "RoPE works at 2×"
    alibi = "ALiBi works at 2×"  # flat within its spread
    _fake_rungs(monkeypatch, "C21", {"quick": {part: 2.0, alibi: 0.1},
                                     "rung1": {part: 4.1, alibi: 0.0},
                                     "rung2": {part: 5.9, alibi: 0.2},
                                     "rung3": {part: 8.0, alibi: 0.05}}, sd=0.5)
    doc = ladder_dict(read_ladder("C21", tmp_path, {}))
    trend = next(t for t in doc["trends"] if t["part"] == part)
    assert trend["fit"]["slope"] == pytest.approx(1.98) and trend["direction"] == "shrinks"
    assert trend["boundary"] == 5.0 and trend["band"] is None
    assert trend["meeting"]["at"] == pytest.approx(1.5, abs=0.05)
    assert doc["precision_check"] == [] and doc["axis"].startswith("loss past L")
    assert "no tuning" in doc["rule"] and "lr 0.003" in doc["rule"]
    assert len(doc["trends"]) == len(registered("C21", "quick"))  # every part is seeded
    line = ladder_module.trend_line(trend)
    assert line.startswith("RoPE works at 2×: +1.98% per 2× training compute")
    assert "(95% CI with the rung as the unit: 4 rungs, t on 2 df; 16 seeds)" in line
    assert "moves away from the claim" in line and "a line is consistent" in line
    # Press et al. give no training compute: named with its reading, not placed on the axis
    lead = ladder_module.appears_line(trend, doc["rungs"], doc["anchors"])
    assert "Press et al. 2021 (its training compute not given): +2.1%" in lead
    flat = next(t for t in doc["trends"] if t["part"] == alibi)
    assert flat["direction"] == "none"
    flat_line = ladder_module.trend_line(flat)
    assert "no trend detectable across 4 rungs" in flat_line and "reaches" not in flat_line
    assert fig_ladder(doc).startswith(b"\x89PNG")  # ten panels on three rows


def test_the_side_a_trend_moves_towards_by_hand():
    rules = registered("C21", "quick")
    assert claimed_side(rules["RoPE works at 2×"]) == -1.0  # at most 5%: smaller is closer
    assert claimed_side(rules["learned absolute (learned-16L) collapses at 2×"]) == 1.0
    assert claimed_side(registered("C16", "quick")["swiglu"]) == -1.0  # a gain: negative
    assert claimed_side(registered("C18", "quick")["nearly the same quality"]) is None


def test_a_claim_of_no_difference_has_a_band_and_its_analytic_parts_no_trend(
        monkeypatch, tmp_path):
    """C18: the quality gap drifting +0.01 nats a rung leaves the ±0.02 band at 2 rungs; the
    exact counts (analytic, one value) have no trend."""
    part = "nearly the same quality"
    _fake_rungs(monkeypatch, "C18", {"quick": {part: 0.0}, "rung1": {part: 0.0105},
                                     "rung2": {part: 0.0195}, "rung3": {part: 0.03}},
                sd=0.002)
    doc = ladder_dict(read_ladder("C18", tmp_path, {}))
    assert [t["part"] for t in doc["trends"]] == [part]
    [trend] = doc["trends"]
    assert trend["band"] == [-0.02, 0.02] and trend["direction"] == "drifts"
    assert trend["boundary"] == pytest.approx(0.02)
    assert trend["meeting"]["at"] == pytest.approx(2.0, abs=0.05)
    assert "both norms at the registered lr 0.003" in doc["rule"]
    line = ladder_module.trend_line(trend)
    assert line.startswith("nearly the same quality: +0.0099 nats per 2× training compute")
    assert "drifts as compute grows" in line
    assert "reaches the claimed band's edge +0.02 nats 2.0 rungs above quick" in line
    assert fig_ladder(doc).startswith(b"\x89PNG")


def test_seed_gaps_pair_each_arm_with_relu_on_its_own_seed(tmp_path, monkeypatch):
    """A tiny ffn run of 2 seeds (every final loss let count): each gap is
    100·(arm − relu)/relu of one seed's two runs."""
    suite = get_suite("ffn")
    run_suite(suite, RunOptions.for_suite(suite, "tiny", 2), tmp_path, progress=False)
    monkeypatch.setattr(ladder_module, "counted_loss", lambda r: r.final.val_loss)
    loss = {(r.run.arm, r.run.seed): r.final.val_loss
            for _, r in ResultStore(tmp_path / "ffn" / "tiny").iter_results()}
    gaps = seed_gaps(tmp_path, "tiny", "fp32")
    assert set(gaps) == {"glu", "geglu", "swiglu"} and all(set(g) == {0, 1}
                                                           for g in gaps.values())
    for arm, by_seed in gaps.items():
        for seed, gap in by_seed.items():
            base = loss[("relu", seed)]
            assert gap == pytest.approx(100 * (loss[(arm, seed)] - base) / base, rel=1e-12)
    assert seed_gaps(tmp_path, "tiny", "bf16") == {}  # not run in bf16


def test_the_precision_check_reads_bf16_minus_fp32_by_seed(monkeypatch, tmp_path):
    fp32 = {arm: {s: 0.3 * s - 0.5 for s in range(5)} for arm in ("swiglu", "geglu", "glu")}
    bf16 = {"swiglu": {s: v + 0.02 * (-1) ** s for s, v in fp32["swiglu"].items()},
            "geglu": {s: v + 0.05 for s, v in fp32["geglu"].items()},
            # GLU moved by its tuned rate: two points worse on every seed
            "glu": {s: v + 2.0 + 0.1 * (s % 2) for s, v in fp32["glu"].items()}}
    monkeypatch.setattr(ladder_module, "seed_gaps",
                        lambda results, size, precision, offset: fp32 if precision == "fp32"
                        else bf16)
    parts = {p.name: p for p in ladder_module.precision_parts(tmp_path)}
    assert [parts[a].verdict for a in ("swiglu", "geglu", "glu")] == [
        "confirmed", "confirmed", "not-reproduced-at-this-scale"]
    assert parts["geglu"].estimate.value == pytest.approx(0.05)
    assert parts["glu"].estimate.value == pytest.approx(2.04) and parts["glu"].estimate.n == 5
    monkeypatch.setattr(ladder_module, "seed_gaps", lambda *a: {})
    assert ladder_module.precision_parts(tmp_path) == []


def test_what_changes_between_rungs_is_read_from_the_suites_sizes():
    from blocklab.experiments import ladder as rule
    from blocklab.experiments.suites.ffn.runs import SIZES as FFN

    changes = ladder_module.rung_changes("C16", ["bf16"] * 4)
    sizes = ("quick", *rule.RUNGS)
    widths = " → ".join(str(rule.width(64, rule.multiple(s), 16)) for s in sizes)
    batches = " → ".join(str(rule.batch(16, rule.multiple(s))) for s in sizes)
    tokens = " → ".join(f"{FFN[s].steps * FFN[s].batch_size * FFN[s].seq_len / 1e6:.2f}M"
                        for s in sizes)
    assert changes["en"][0].startswith(f"d_model {widths} (heads 4 → 5 → 6 → 7, each 16 wide)")
    assert f"batch {batches} sequences" in changes["en"][0]
    assert changes["en"][1].endswith(f"training tokens {tokens}")
    assert changes["en"][2].endswith("; one precision (bf16)")
    mixed = ladder_module.rung_changes("C16", ["fp32", "bf16", "bf16", "bf16"])
    assert mixed["en"][2].endswith("precision per rung: fp32 → bf16 → bf16 → bf16")
    assert mixed["zh"][2].endswith("各级精度：fp32 → bf16 → bf16 → bf16")
    # C18's suite has no model shape to read: parameters and tokens only
    assert ladder_module.rung_changes("C18", ["fp32"] * 4)["en"][0].startswith("parameters ")

