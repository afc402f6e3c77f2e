"""A claim on the ladder: each rung graded as the ledger grades a size (here with estimates
put in its place), the trend through every rung's seeds, the papers at their compute."""

import math

import pytest

from blocklab.claims import ladder as ladder_module
from blocklab.claims.anchors import anchors
from blocklab.claims.ladder import ladder_dict, read_ladder
from blocklab.claims.ledger import ClaimResult
from blocklab.claims.registry import registered
from blocklab.claims.rules import Estimate, Part
from blocklab.errors import InputError
from blocklab.experiments.summaries import Interval
from blocklab.report.figures import fig_ladder

QUICK_FLOPS = 2.4e11
# SwiGLU − ReLU at each rung: −0.2, −0.6, −1.0 % (5 seeds, sd 0.5); GeGLU and GLU flat
MEANS = {"quick": -0.2, "rung1": -0.6, "rung2": -1.0}


def _graded(size: str) -> ClaimResult:
    rules = registered("C16", size)
    specs = []
    for part, rule in rules.items():
        mean = MEANS[size] if part == "swiglu" else 0.1
        half = 2.776 * 0.5 / math.sqrt(5)
        specs.append((part, rule, Estimate.of(Interval(5, mean, mean - half, mean + half, 0.5))))
    parts = Part.decided_together(specs, fair_arms=True)
    flops = QUICK_FLOPS * {"quick": 1, "rung1": 4, "rung2": 16}[size]
    return ClaimResult("C16", "", "", "", "", parts[0].verdict, "", "", {}, "", None, None,
                       parts, scale={"flops": flops, "text": f"{size} scale",
                                           "text_zh": f"{size} 规模"})


@pytest.fixture
def stored(monkeypatch):
    """Rungs quick, rung1 and rung2 graded; rung3 has no results stored."""
    asked = []

    def run_claims(ids, ctx):
        asked.append((ctx.size, ctx.precision))
        if ctx.size not in MEANS:
            rules = registered("C16", ctx.size)
            return [ClaimResult("C16", "", "", "", "", "missing-results", "", "", {}, "", None,
                                None, [Part(n, r, Estimate(None, None, None, 0),
                                            "missing-results", "") for n, r in rules.items()])]
        return [_graded(ctx.size)]

    monkeypatch.setattr(ladder_module, "run_claims", run_claims)
    return asked


def test_each_rung_is_graded_in_its_precision_and_the_trend_fits_the_stored_ones(stored,
                                                                                  tmp_path):
    found = read_ladder("C16", tmp_path, {"quick": "bf16", "rung1": "bf16"})
    assert stored == [("quick", "bf16"), ("rung1", "bf16"), ("rung2", "fp32"),
                      ("rung3", "fp32")]
    assert [r.size for r in found.rungs if r.result is not None] == ["quick", "rung1", "rung2"]
    assert found.rungs[3].result is None and found.base_flops == QUICK_FLOPS
    swiglu = found.trends[0]
    assert swiglu.part == "swiglu" and swiglu.boundary == -1.0  # the page's "1–2%": its low end
    # means −0.2, −0.6, −1.0 at x = 0, 1, 2: slope −0.4 per 4× compute, through every seed
    assert swiglu.fit.slope == pytest.approx(-0.4) and swiglu.fit.n == 15
    assert swiglu.fit.slope_high < 0 and swiglu.direction(-1.0) == "grows"
    assert swiglu.meeting.at == pytest.approx(2.0) and not swiglu.meeting.extrapolated
    assert found.trends[1].fit.slope == pytest.approx(0.0, abs=1e-12)
    assert found.trends[1].direction(-1.0) == "unresolved"


def test_the_dict_places_rungs_and_papers_on_one_compute_axis(stored, tmp_path):
    doc = ladder_dict(read_ladder("C16", tmp_path, {}))
    assert [r["x"] for r in doc["rungs"][:3]] == pytest.approx([0.0, 1.0, 2.0])
    assert doc["rungs"][3]["x"] is None
    assert doc["rungs"][3]["parts"] == [] and doc["rungs"][3]["verdict"] is None
    shazeer = doc["anchors"][0]
    assert shazeer["x"] == pytest.approx(math.log(anchors("C16")[0].flops / QUICK_FLOPS, 4))
    assert shazeer["effects"]["swiglu"] == -2.4
    part = doc["rungs"][2]["parts"][0]
    assert part["name"] == "swiglu" and part["interval"]["confidence"] > 0.95  # what decided
    assert doc["trends"][0]["meeting"]["threshold"] == -1.0
    png = fig_ladder(doc)
    assert png.startswith(b"\x89PNG")


def test_only_a_claim_with_a_ladder_is_read():
    with pytest.raises(InputError, match="claim 'C21' has no ladder"):
        read_ladder("C21", ".", {})


def test_seed_gaps_pair_each_arm_with_relu_on_its_own_seed(tmp_path, monkeypatch):
    """On a tiny ffn run of 2 seeds (whose 5-step runs do not count, so every final loss is
    let count here): each gap is 100·(arm − relu)/relu of the two runs' final losses."""
    import blocklab.experiments.suites.tuning as tuning
    from blocklab.claims.ladder import seed_gaps
    from blocklab.experiments.options import RunOptions
    from blocklab.experiments.results import ResultStore
    from blocklab.experiments.suites import get_suite, run_suite

    suite = get_suite("ffn")
    run_suite(suite, RunOptions.for_suite(suite, "tiny", 2), tmp_path, progress=False)
    monkeypatch.setattr(tuning, "counted_loss", lambda r: r.final.val_loss)
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
