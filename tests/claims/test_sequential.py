"""The sequential design: look levels, seed blocks for open parts, runs that add seeds."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from blocklab import stats
from blocklab.claims import sequential
from blocklab.claims.catalogue import planned_hash, suite_rules
from blocklab.claims.finding import Context
from blocklab.claims.ledger import run_claims
from blocklab.claims.rules import (
    ALPHA,
    INCONCLUSIVE,
    POWER,
    Estimate,
    Rule,
    _seeds_to_decide,
    decide_parts,
    look_level,
    looks,
)
from blocklab.claims.sequential import Wanted, next_blocks, run_looks, worst_case_blocks
from blocklab.experiments import estimate
from blocklab.experiments.options import RunOptions, RunRequest
from blocklab.experiments.suites import get_suite, load_summary, run_suites
from design_simulation import EstimatesByLook

from ..experiments.test_estimate import _fake_calibration
from .test_rules import DROPS, WORKS

RULE = Rule("m", 0.5, 0.25, 5, -1.5, max_seeds=10)


def test_the_schedule_and_its_levels_follow_the_design():
    assert RULE.schedule == (5, 8, 10) and RULE.block == 3
    assert RULE.next_look(5) == 8 and RULE.next_look(9) == 10 and RULE.next_look(10) is None
    assert looks(RULE, 8) == (5, 8) and looks(RULE, 7) == (5, 7)
    # each look spends its increment of O'Brien–Fleming's function: the levels sum to α
    spent = [0.0, *(stats.spent_alpha(t) for t in (0.5, 0.8, 1.0))]
    for n, k in ((5, 0), (8, 1), (10, 2)):
        assert look_level(RULE, n) == pytest.approx(spent[k + 1] - spent[k], rel=1e-12)
    # an early look spends almost nothing; the last gets more than half of α
    assert look_level(RULE, 5) < 0.006 < 0.025 < look_level(RULE, 10) < ALPHA
    # at Holm's share of α the design is computed at that share, not divided after
    assert look_level(RULE, 8, ALPHA / 3) == pytest.approx(
        stats.spent_alpha(0.8, ALPHA / 3) - stats.spent_alpha(0.5, ALPHA / 3))
    # past max_seeds a look is read as the last one, spending its share once, never more
    assert look_level(RULE, 12) == look_level(RULE, 10)
    fixed = Rule("m", 0.5, 0.25, 5, -1.5)
    assert fixed.schedule == (5,) and look_level(fixed, 20) == ALPHA and looks(fixed, 20) == (20,)


def _claim_run(parts: list[tuple[Rule, int]], k: int, truth: float, sd: float, reps: int,
               seed: int) -> tuple[float, float]:
    """Parts (rule, estimate index) on k paired differences ~ N(truth, sd), run look by look
    as `run_looks` runs them (seeds added to open parts only): (share of runs with any part
    decided, share with any deciding interval missing `truth`)."""
    rule = parts[0][0]
    # `stats.paired_interval` of each replicate's seeds, vectorized (test_designs checks it)
    by_look = EstimatesByLook(np.random.default_rng(seed).normal(truth, sd,
                                                                 (reps, k, rule.max_seeds)))
    decided = missed = 0
    for rep in range(reps):
        n = [rule.min_seeds] * k
        ever = miss = False
        while True:
            estimates = [by_look.at(j, n[j])[rep] for j in range(k)]
            found = decide_parts([(r, estimates[j]) for r, j in parts], explain=False)
            ever |= any(d.verdict != INCONCLUSIVE for d in found)
            miss |= any(d.interval is not None and not d.interval.low <= truth <= d.interval.high
                        for d in found)
            still = {j for (_, j), d in zip(parts, found, strict=True) if d.verdict == INCONCLUSIVE}
            following = rule.next_look(max(n))
            if following is None or not still:
                break
            n = [following if j in still else nj for j, nj in enumerate(n)]
        decided += ever
        missed += miss
    return decided / reps, missed / reps


SHIFTED = Rule("x", 0.5, 0.0, 5, -1.5, max_seeds=10)  # looks at 5, 8, 10


@pytest.mark.parametrize(("parts", "k", "truth", "sd", "reps", "seed"), [
    ([(SHIFTED, 0)], 1, -0.5, 1.0, 3000, 1),
    ([(SHIFTED, j) for j in range(3)], 3, -0.5, 1.0, 2000, 3),
    # C30's shape: 'at most' / 'at least' pairs on one estimate (one Holm test each) and
    # single parts, every truth on 5%: 3 pairs and 2 single parts on 5 estimates
    ([(WORKS, 0), (DROPS, 0), (WORKS, 1), (DROPS, 1), (WORKS, 2), (DROPS, 2), (WORKS, 3),
      (DROPS, 4)], 5, 5.0, 2.0, 3000, 7),
], ids=["one part", "three parts", "pairs counted as one test"])
def test_a_claims_looks_and_holm_keep_every_wrong_decision_within_alpha(parts, k, truth, sd,
                                                                       reps, seed):
    """Every true effect on its boundary (any decision wrong), its looks and Holm: any
    decision, and any deciding interval missing the truth, stays within α."""
    wrong, missed = _claim_run(parts, k, truth, sd, reps, seed)
    within = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / reps)  # 2 binomial sd
    assert wrong <= within and missed <= within
    assert wrong > 0.02  # it spends α: a design that never decides would pass the line above


def test_the_seeds_that_would_decide_are_read_at_their_future_looks_levels():
    """Seeds that would decide a part are priced at that look's own level; past the design,
    it says so."""
    near = Estimate(-1.0, -2.2, 0.2, 5, 1.0)  # 0.5 from the boundary at −0.5, sd 1
    (found,) = decide_parts([(RULE, near)])
    assert found.verdict == INCONCLUSIVE
    needed = found.seeds_needed
    assert needed is not None and needed > RULE.max_seeds
    assert f"about {needed} (past its design's 10) would decide it" in found.reason
    # 80% power at `needed` seeds at the last share, not one fewer
    last = look_level(RULE, 10)
    assert stats.power(0.5, 1.0, needed, alpha=last) >= POWER
    assert stats.power(0.5, 1.0, needed - 1, alpha=last) < POWER
    # far from the boundary: the next look within the design decides it, at that look's level
    m = _seeds_to_decide(RULE, 5, 1.0, 2.0, ALPHA)
    assert 5 < m <= RULE.max_seeds
    assert stats.power(2.0, 1.0, m, alpha=look_level(RULE, m)) >= POWER
    assert all(stats.power(2.0, 1.0, k, alpha=look_level(RULE, k)) < POWER for k in range(6, m))


def test_seed_blocks_go_to_the_arms_of_open_parts_only():
    wanted = [Wanted("C16", "geglu", "ffn", ("geglu", "relu"), 5, 8),
              Wanted("C16", "glu", "ffn", ("glu", "relu"), 5, 8),
              Wanted("C19", "p", "placement", ("a",), 4, 6)]
    coverage = {"ffn": {"relu": 5, "swiglu": 5, "geglu": 5, "glu": 5},
                "placement": {"a": 5, "b": 4}}
    blocks = next_blocks(wanted, coverage, 1000)
    (ffn,) = blocks["ffn"]
    assert (ffn.start, ffn.stop, ffn.arms) == (1005, 1008, ["geglu", "glu", "relu"])
    assert ffn.parts == ["C16 geglu", "C16 glu"]  # swiglu was decided: no seeds for it
    (placement,) = blocks["placement"]
    assert (placement.start, placement.stop, placement.arms) == (1005, 1006, ["a"])
    assert next_blocks([], coverage, 0) == {}
    # the worst-case plan reaches every rule's last look
    blocks = worst_case_blocks(RunRequest(Path("runs"), "quick"), ["ffn"])
    assert [b.stop for look in blocks for b in look["ffn"]] == [8, 10]
    assert all(set(b.arms) == {"relu", "swiglu", "geglu", "glu"}
               for look in blocks for b in look["ffn"])
    # A part reading fewer pairs than its arms ran (a lost seed) is extended past them.
    rule_rows = [SimpleNamespace(id="C19", error=None, parts=[SimpleNamespace(
        name="pre-norm is stable without warmup", verdict=INCONCLUSIVE,
        estimate=SimpleNamespace(n=3))])]
    arms = lambda suite: ["sweep/pre/6/0", "sweep/pre/6/50"]  # noqa: E731
    (alone,) = sequential.open_parts(rule_rows, "quick", arms)
    (covered,) = sequential.open_parts(rule_rows, "quick", arms,
                                       {"placement": dict.fromkeys(arms("placement"), 4)})
    assert alone.target == 4 and covered.target > 4


def test_every_look_grades_what_the_request_names_its_precision_too(tmp_path, monkeypatch):
    """Each look's ledger reads the request the suites ran under, precision included."""
    request = RunRequest(tmp_path, "tiny", 1000, "bf16", budget_s=600)
    graded, recorded = [], []
    monkeypatch.setattr(sequential, "run_claims", lambda ids, ctx: graded.append(ctx) or [])

    def run(rules):
        recorded.append(rules)
        return {}

    looks = sequential.run_looks(request, ["ffn", "norm-cost"], run=run, workers=1,
                                 echo=lambda s: None)
    assert looks.stopped == "every part is decided or at its last look"
    (ctx,) = graded
    assert ctx.request is request
    assert ctx.precision_of("ffn") == "bf16" and ctx.precision_of("norm-cost") == "fp32"
    # the bf16 folders record the rules that grade them, as fp32 folders do
    assert recorded == [suite_rules("tiny")]


def test_a_would_be_contradiction_gets_its_arms_trained_twice_as_long(tmp_path, tiny_runs):
    shutil.copytree(tiny_runs / "ffn", tmp_path / "ffn")
    due = {"ffn": [Wanted("C16", "swiglu", "ffn", ("relu", "swiglu"), 1, 1)]}
    assert sequential.run_longer(RunRequest(tmp_path, "tiny"), due, executor=None,
                                 progress=False) == {}
    longer = load_summary(tmp_path, "ffn", "tiny", longer=True)
    short = load_summary(tmp_path, "ffn", "tiny")
    assert longer.runs == 2 and longer.run_ids != short.run_ids
    stored = [json.loads(p.read_text()) for p in (tmp_path / "ffn" / "tiny+x2").glob("*.json")
              if p.name != "summary.json"]
    assert sorted(r["run"]["arm"] for r in stored) == ["relu", "swiglu"]
    assert all(len(r["curves"]["train_loss"]) == 2 * 5 for r in stored)  # tiny trains 5 steps
    assert Context(RunRequest(tmp_path, "tiny")).longer_summary("ffn").run_ids == longer.run_ids


def _calibration(size, names):
    """A calibration pricing every shape the suites ask for at fixed times (no timing)."""
    pairs = []
    for name in names:
        suite = get_suite(name)
        pairs += [(suite, s) for s in suite.plan(RunOptions(size, range(12)), [])]
    return _fake_calibration(pairs)


def test_the_price_is_the_worst_case_of_every_look_and_a_cap_admits_whole_looks(tmp_path,
                                                                               monkeypatch):
    from blocklab.claims.sequential import BUILD_RESERVE_S, price_plan

    names = ["ffn", "position"]
    cal = _calibration("quick", names)
    free = price_plan(RunRequest(tmp_path, "quick", budget_s=None), names, workers=2,
                      calibration=cal)
    assert free.admitted is None
    # ffn: 4 arms × 3 then 2 seeds (5, 8, 10); position: 4 arms × 2 (4, 6, 8), nope × 1
    assert [runs for runs, _ in free.looks] == [4 * 3 + 4 * 2 + 1, 4 * 2 + 4 * 2 + 1]
    assert free.price_s == pytest.approx(free.first_s + BUILD_RESERVE_S
                                         + sum(w for _, w in free.looks))
    one_look = free.first_s + BUILD_RESERVE_S + free.looks[0][1]
    capped = price_plan(RunRequest(tmp_path, "quick", budget_s=one_look + 1), names,
                        workers=2, calibration=cal)
    assert capped.admitted == 1 and capped == price_plan(
        RunRequest(tmp_path, "quick", budget_s=one_look + 1), names, workers=2,
        calibration=cal)
    assert price_plan(RunRequest(tmp_path, "quick", budget_s=one_look - 1), names, workers=2,
                      calibration=cal).admitted == 0
    assert "admits 1 of them" in capped.text() and "admits" not in free.text()
    # A calibration lacking the seed blocks' shapes (first look priced from stored twins)
    # calibrates them instead of failing.
    full = _calibration("quick", ["ffn"])
    partial = estimate.Calibration(**{**full.__dict__, "timings": {}})
    asked = []

    def calibrate(shapes, budget_s=15.0):
        asked.append(set(shapes))
        return full

    monkeypatch.setattr(estimate, "calibrate", calibrate)
    monkeypatch.setattr(estimate, "estimate_suites", lambda *a, **k: estimate.SizeEstimate(
        "quick", [], [], partial, {}))
    plan = price_plan(RunRequest(tmp_path, "quick", budget_s=None), ["ffn"], workers=2)
    assert asked and asked[0] <= set(full.timings) and all(w > 0 for _, w in plan.looks)


def _fake_plan_run(tmp_path, monkeypatch, *, admitted=None):
    """run_looks on a fake suite whose C33 part decides at 6 seeds: (looks, blocks added)."""
    have = {"quality": 3}
    added = []

    def rows_now(ids, ctx):
        part = SimpleNamespace(name="p", verdict="inconclusive" if have["quality"] < 6
                               else "confirmed", estimate=SimpleNamespace(n=have["quality"]))
        return [SimpleNamespace(id="C33", error=None, parts=[part])]

    rule = Rule("m", 0.5, 0.25, 3, -1.5, max_seeds=8)
    monkeypatch.setattr(sequential, "run_claims", rows_now)
    monkeypatch.setattr(sequential, "registered", lambda cid, size: {"p": rule})
    monkeypatch.setattr(sequential, "part_arms", lambda *a: ["quality"])
    monkeypatch.setattr(sequential, "_plan", lambda request, name: SimpleNamespace(
        specs=[SimpleNamespace(arm="quality", seed=s) for s in range(have["quality"])],
        seeds=range(0, 3)))
    monkeypatch.setattr(sequential, "arm_wall_s", lambda request, name: {"quality": 50.0})

    def add(folder, blocks):
        added.extend((b.start, b.stop) for b in blocks)
        have["quality"] = max(b.stop for b in blocks)

    monkeypatch.setattr(sequential, "add_seed_blocks", add)
    plan = sequential.WorkPlan(None if admitted is None else 1.0, 0.0, [], admitted, 2)
    looks = sequential.run_looks(RunRequest(tmp_path, "quick", budget_s=plan.budget_s),
                                 ["quantize"], plan=plan, run=lambda rules: {}, workers=2,
                                 echo=lambda s: None)
    return looks, added


def test_the_plan_runs_every_look_whatever_the_clock_and_workers_say(tmp_path, monkeypatch):
    """The looks run are the design's whatever the clock reads (10⁴× slower); a cap cuts
    whole looks and names them."""
    looks, added = _fake_plan_run(tmp_path, monkeypatch)
    assert added == [(3, 5), (5, 7)]  # C33's design 3, 5, 7, 8: decided at 7 ≥ 6
    assert looks.stopped == "every part is decided or at its last look" and not looks.cut
    ticks = iter(range(0, 10**9, 10**5))
    monkeypatch.setattr(sequential.time, "perf_counter", lambda: float(next(ticks)))
    slow, slow_added = _fake_plan_run(tmp_path, monkeypatch)
    assert slow_added == added and slow.stopped == looks.stopped
    capped, capped_added = _fake_plan_run(tmp_path, monkeypatch, admitted=1)
    assert capped_added == [(3, 5)]
    assert capped.cut == ["C33 p to n = 7"] and "admits 1 further look(s)" in capped.stopped


def test_a_run_adds_seeds_to_open_parts_alike_at_any_price_and_records_the_rules(tmp_path):
    """A real plan at two prices and worker counts adds seeds to open parts only, with the
    same seed blocks, run ids and verdicts, and records the rules they were planned under."""
    def run_of(request):
        return lambda rules: run_suites(request, ["quantize"], progress=False,
                                        echo=lambda s: None, rules=rules)

    outcomes = []
    for speed, workers in ((1.0, 2), (2.0, 1)):
        request = RunRequest(tmp_path / f"x{speed}", "tiny", budget_s=None)
        plan = sequential.WorkPlan(None, 10.0 * speed, [(4, 100.0 * speed)], None, workers)
        looks = run_looks(request, ["quantize"], plan=plan, run=run_of(request),
                          workers=workers, echo=lambda s: None)
        assert looks.records and not looks.errors
        # C33 reads seeded quality (C32 reads timings, which no two runs share)
        rows = run_claims(["C33"], Context(request))
        outcomes.append((
            [(b.start, b.stop, b.arms) for r in looks.records for bs in r.blocks.values()
             for b in bs], sorted(load_summary(request.results, "quantize", "tiny").run_ids),
            [(row.id, row.verdict, [(p.name, p.verdict) for p in row.parts]) for row in rows]))
    assert outcomes[0][0] and outcomes[0] == outcomes[1]

    request = RunRequest(tmp_path / "x1.0", "tiny")
    run, folder = run_of(request), request.results / "quantize" / "tiny"
    added = json.loads((folder / "seed_blocks.json").read_text())
    assert all(b["arms"] == ["quality"] for b in added)  # C33's tensor part, nothing else
    summary = load_summary(request.results, "quantize", "tiny")
    assert summary.seed_blocks and summary.seeds == max(b["stop"] for b in added)
    planned = json.loads((folder / "planned_rules.json").read_text())
    assert planned == suite_rules("tiny")["quantize"] == summary.planned_rules
    (c33,) = run_claims(["C33"], Context(request))
    tensor = c33.parts[1].to_dict()
    assert tensor["estimate"]["n"] >= 3 and len(tensor["looks"]) >= 2
    assert tensor["rule_changed_after_data"] is None

    # A rule edited after the data: the part is flagged, naming both hashes.
    key = next(k for k in planned if k.startswith("C33 one per-tensor"))
    planned[key] = "0123456789ab"
    (folder / "planned_rules.json").write_text(json.dumps(planned))
    run(suite_rules("tiny"))  # not fresh: the first record is kept
    (c33,) = run_claims(["C33"], Context(request))
    shown = c33.parts[1].to_dict()
    assert shown["rule_changed_after_data"] == "0123456789ab"
    now = planned_hash("C33", c33.parts[1].rule)
    assert "rule changed after data" in shown["reason"] and now in shown["reason"]

    # Runs stored with no record are never re-recorded under today's rules, and say so.
    (folder / "planned_rules.json").unlink()
    run(suite_rules("tiny"))
    assert not (folder / "planned_rules.json").exists()
    (c33,) = run_claims(["C33"], Context(request))
    assert "no record of the rule its runs were planned under" in c33.parts[1].reason
