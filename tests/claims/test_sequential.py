"""The sequential design: look levels, seed blocks for open parts only, and a run that adds
seeds, records them and the rules they were planned under."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from blocklab import stats
from blocklab.claims.catalogue import planned_hash, suite_rules
from blocklab.claims.finding import Context
from blocklab.claims.ledger import run_claims
from blocklab.claims.rules import (
    ALPHA,
    INCONCLUSIVE,
    Estimate,
    Rule,
    decide_parts,
    look_level,
    looks,
)
from blocklab.claims.sequential import Wanted, next_blocks, run_looks, worst_case_blocks
from blocklab.experiments.options import RunOptions, RunRequest
from blocklab.experiments.suites import load_summary, run_suites

RULE = Rule("m", 0.5, 0.25, 5, -1.5, max_seeds=10)


def test_the_schedule_and_its_levels_follow_the_design():
    assert RULE.schedule == (5, 8, 10) and RULE.block == 3
    assert RULE.next_look(5) == 8 and RULE.next_look(9) == 10 and RULE.next_look(10) is None
    assert looks(RULE, 8) == (5, 8) and looks(RULE, 7) == (5, 7)
    # each look spends its increment of the O'Brien–Fleming spending function, and no more:
    # the levels sum to α, so no look can push the overall error past it
    spent = [0.0, *(stats.spent_alpha(t) for t in (0.5, 0.8, 1.0))]
    for n, k in ((5, 0), (8, 1), (10, 2)):
        assert look_level(RULE, n) == pytest.approx(spent[k + 1] - spent[k], rel=1e-12)
    assert sum(look_level(RULE, n) for n in RULE.schedule) == pytest.approx(ALPHA)
    # an early look spends almost nothing; the last gets more than half of α
    assert look_level(RULE, 5) < 0.006 < 0.025 < look_level(RULE, 10) < ALPHA
    # at Holm's share of α the design is computed at that share, not divided after
    assert look_level(RULE, 8, ALPHA / 3) == pytest.approx(
        stats.spent_alpha(0.8, ALPHA / 3) - stats.spent_alpha(0.5, ALPHA / 3))
    # past max_seeds a look is read as the last one, spending its share once, never more
    assert look_level(RULE, 12) == look_level(RULE, 10) == pytest.approx(
        ALPHA - stats.spent_alpha(0.8))
    fixed = Rule("m", 0.5, 0.25, 5, -1.5)
    assert fixed.schedule == (5,) and look_level(fixed, 20) == ALPHA and looks(fixed, 20) == (20,)


def test_the_looks_keep_the_overall_error_at_alpha_on_null_data():
    """Paired t tests at each look's level over seeds 5, 8, 10 of null data: the chance of any
    rejection stays ≈ 5% (a fixed design tested three times would reach ≈ 10%)."""
    rng = np.random.default_rng(0)
    trials = 20_000
    data = rng.standard_normal((trials, 10))
    rejected = np.zeros(trials, dtype=bool)
    naive = np.zeros(trials, dtype=bool)
    for n in RULE.schedule:
        x = data[:, :n]
        t = x.mean(1) / (x.std(1, ddof=1) / np.sqrt(n))
        p = 2 * sps.t.sf(np.abs(t), n - 1)
        rejected |= p < look_level(RULE, n)
        naive |= p < ALPHA
    assert 0.035 < rejected.mean() < 0.05 + 3 * math.sqrt(0.05 * 0.95 / trials)
    assert naive.mean() > 0.08


def _claim_run(rule: Rule, m: int, truth: float, reps: int, seed: int) -> tuple[float, float]:
    """A claim of m parts, each a paired difference ~ N(truth, 1), run look by look as
    `run_looks` runs it: every part read by `decide_parts` at each look, the next block of
    seeds added to the parts still open only. (the share of runs in which any part of the claim
    was ever decided, the share in which any interval a decision read missed `truth`)."""
    rng = np.random.default_rng(seed)
    decided = missed = 0
    for _ in range(reps):
        data = rng.normal(truth, 1.0, (m, rule.max_seeds))
        n = [rule.min_seeds] * m
        ever = miss = False
        while True:
            estimates = []
            for k in range(m):
                iv = stats.paired_interval(data[k, :n[k]])
                estimates.append(Estimate(iv.value, iv.ci_low, iv.ci_high, n[k], iv.sd))
            found = decide_parts([(rule, e) for e in estimates], explain=False)
            ever |= any(d.verdict != INCONCLUSIVE for d in found)
            miss |= any(d.interval is not None and not d.interval.low <= truth <= d.interval.high
                        for d in found)
            following = rule.next_look(max(n))
            if following is None or all(d.verdict != INCONCLUSIVE for d in found):
                break
            n = [following if d.verdict == INCONCLUSIVE else nk
                 for d, nk in zip(found, n, strict=True)]
        decided += ever
        missed += miss
    return decided / reps, missed / reps


@pytest.mark.parametrize("m", [1, 3])
def test_a_claims_looks_and_holm_keep_every_wrong_decision_within_alpha(m):
    """Every part's true effect sits on its boundary b (δ = 0.5 on the claimed side), so any
    decision (confirmed: wholly beyond b; not reproduced: wholly short of it) is wrong. Run
    look by look at seeds 5, 8, 10 through `decide_parts` (looks and Holm together), the chance
    that any part of the claim is ever decided stays within α, and so does the chance that any
    interval a decision read misses the true effect (the repeated intervals cover). The
    normal-theory levels this design replaced reached 6.9% at m = 1 in the same run."""
    rule = Rule("x", 0.5, 0.0, 5, -1.5, max_seeds=10)
    reps = 3000 if m == 1 else 2000
    wrong, missed = _claim_run(rule, m, truth=-0.5, reps=reps, seed=m)
    within = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / reps)  # 2 binomial sd
    assert wrong <= within and missed <= within
    assert wrong > 0.02  # it spends α: a design that never decides would pass the line above


def test_parts_counted_as_one_test_keep_the_claims_error_within_alpha():
    """A claim of C30's shape: pairs of parts that read one estimate against 5%, one claiming
    'at most' and one 'at least' (Holm counts each pair once), and single parts, every true
    effect exactly on 5% (so any decision is wrong). Run look by look at seeds 4, 6, 8 through
    `decide_parts`: the chance that any part is ever decided stays within α."""
    works = Rule("x", 5.0, 0.0, 4, 5.0, threshold=5.0, test="at-most", max_seeds=8)
    drops = Rule("x", 5.0, 0.0, 4, 5.0, threshold=5.0, test="at-least", max_seeds=8)
    rng = np.random.default_rng(7)
    reps, estimates_of = 3000, 5  # 3 pairs and 2 single parts
    wrong = 0
    for _ in range(reps):
        data = rng.normal(5.0, 2.0, (estimates_of, works.max_seeds))
        n = [works.min_seeds] * estimates_of
        ever = False
        while True:
            est = []
            for k in range(estimates_of):
                iv = stats.paired_interval(data[k, :n[k]])
                est.append(Estimate(iv.value, iv.ci_low, iv.ci_high, n[k], iv.sd))
            parts = [(works, est[0]), (drops, est[0]), (works, est[1]), (drops, est[1]),
                     (works, est[2]), (drops, est[2]), (works, est[3]), (drops, est[4])]
            found = decide_parts(parts, explain=False)
            ever |= any(d.verdict != INCONCLUSIVE for d in found)
            following = works.next_look(max(n))
            if following is None or ever:
                break
            n = [following] * estimates_of
        wrong += ever
    within = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / reps)
    assert 0.02 < wrong / reps <= within


def test_the_seeds_that_would_decide_are_read_at_their_future_looks_levels():
    """An inconclusive part says how many seeds would decide it at the level the look at that
    many seeds would be read at (its design's increment at its Holm share), not at today's;
    a part that needs more than its design allows says so."""
    from blocklab.claims.rules import POWER, _seeds_to_decide

    near = Estimate(-1.0, -2.2, 0.2, 5, 1.0)  # 0.5 from the boundary at −0.5, sd 1
    (found,) = decide_parts([(RULE, near)])
    assert found.verdict == INCONCLUSIVE
    needed = found.seeds_needed
    assert needed is not None and needed > RULE.max_seeds
    assert f"about {needed} (past its design's 10) would decide it" in found.reason
    # at the design's last share: 80% power at `needed` seeds, not one fewer
    last = look_level(RULE, 10)
    assert stats.power(0.5, 1.0, needed, alpha=last) >= POWER
    assert stats.power(0.5, 1.0, needed - 1, alpha=last) < POWER
    # far from the boundary: the next look within the design decides it, at that look's level
    m = _seeds_to_decide(RULE, 5, 1.0, 2.0, ALPHA)
    assert 5 < m <= RULE.max_seeds
    assert stats.power(2.0, 1.0, m, alpha=look_level(RULE, m)) >= POWER
    assert all(stats.power(2.0, 1.0, k, alpha=look_level(RULE, k)) < POWER for k in range(6, m))


def test_each_look_buys_the_likeliest_decisions_per_second_that_fit():
    from blocklab.claims.sequential import buy, chance_to_decide

    coverage = {"ffn": {"relu": 5, "swiglu": 5, "geglu": 5, "glu": 5}}
    walls = {"ffn": {"relu": 10.0, "swiglu": 10.0, "geglu": 30.0, "glu": 10.0}}
    likely = Wanted("C16", "swiglu", "ffn", ("relu", "swiglu"), 5, 8, chance=0.9)
    dear = Wanted("C16", "geglu", "ffn", ("relu", "geglu"), 5, 8, chance=0.9)
    unlikely = Wanted("C16", "glu", "ffn", ("relu", "glu"), 5, 8, chance=0.05)
    parts = [unlikely, dear, likely]
    assert buy(parts, coverage, 0, walls, 1, None) == parts  # no budget: every open part
    # 1 worker: swiglu's block is 3 seeds × (10 + 10) s = 60 s; geglu's 120 s; glu's 60 s
    assert buy(parts, coverage, 0, walls, 1, 60.0) == [likely]
    # geglu does not fit beside swiglu in 130 s; glu (shares relu's seeds) does
    assert buy(parts, coverage, 0, walls, 1, 130.0) == [likely, unlikely]
    assert buy(parts, coverage, 0, walls, 1, 10.0) == []
    # the chance follows the distance from the boundary and the spread
    near, far = (Estimate(v, v - 1, v + 1, 5, 1.0) for v in (-0.6, -3.0))
    assert chance_to_decide(RULE, far, 8) > chance_to_decide(RULE, near, 8)
    assert chance_to_decide(RULE, Estimate(-1.0, None, None, 1), 8) == 1.0


def test_a_bought_part_keeps_the_time_its_later_looks_need():
    """A part likely to be decided only at its last look is bought with the time of both of
    its looks reserved: the cheap block of a part unlikely to decide anything is not bought
    beside it when it would leave the second look no time (greedy next blocks alone, by
    chance per second, bought both and left 10 s of the 40 the last look needs)."""
    from blocklab.claims.sequential import buy, path_seconds

    coverage = {"ffn": {"relu": 5, "swiglu": 5, "glu": 5}}
    walls = {"ffn": {"relu": 10.0, "swiglu": 10.0, "glu": 10.0}}
    likely = Wanted("C16", "swiglu", "ffn", ("relu", "swiglu"), 5, 8, chance=0.2,
                    later=((8, 0.2), (10, 0.9)))
    unlikely = Wanted("C16", "glu", "ffn", ("relu", "glu"), 5, 8, chance=0.1,
                      later=((8, 0.1), (10, 0.15)))
    # to 8: 3 seeds × 2 arms × 10 s; then to 10: 2 × 2 × 10 s (1 worker)
    assert path_seconds({likely: 10}, coverage, 0, walls, 1) == pytest.approx(100.0)
    assert path_seconds({likely: 8}, coverage, 0, walls, 1) == pytest.approx(60.0)
    # both to 8 share relu's seeds: 9 runs, then swiglu's last look: 4 runs
    assert path_seconds({likely: 10, unlikely: 8}, coverage, 0, walls, 1) == \
        pytest.approx(130.0)
    assert buy([unlikely, likely], coverage, 0, walls, 1, 100.0) == [likely]
    # with time for both paths, both are bought, the likelier first
    assert buy([unlikely, likely], coverage, 0, walls, 1, 130.0) == [likely, unlikely]
    # the time for the likely part's first look only: its shorter path is still bought
    assert buy([likely], coverage, 0, walls, 1, 70.0) == [likely]
    assert buy([likely], coverage, 0, walls, 1, 50.0) == []


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


def test_the_worst_case_plan_reaches_every_rules_last_look():
    blocks = worst_case_blocks(RunRequest(Path("runs"), "quick"), ["ffn"])
    assert [b.stop for look in blocks for b in look["ffn"]] == [8, 10]
    assert all(set(b.arms) == {"relu", "swiglu", "geglu", "glu"}
               for look in blocks for b in look["ffn"])


def test_a_run_adds_seeds_where_parts_are_open_and_records_the_rules(tmp_path):
    request = RunRequest(tmp_path, "tiny", budget_s=600)

    def run(rules):
        return run_suites(request, ["quantize"], progress=False, echo=lambda s: None,
                          rules=rules)

    done = run_looks(request, ["quantize"], run=run, workers=1, echo=lambda s: None)
    assert done.records and not done.errors
    folder = tmp_path / "quantize" / "tiny"
    added = json.loads((folder / "seed_blocks.json").read_text())
    assert all(b["arms"] == ["quality"] for b in added)  # C33's tensor part, nothing else
    summary = load_summary(tmp_path, "quantize", "tiny")
    assert summary.seed_blocks and summary.seeds == max(b["stop"] for b in added)
    planned = json.loads((folder / "planned_rules.json").read_text())
    assert planned == suite_rules("tiny")["quantize"] == summary.planned_rules
    (c33,) = run_claims(["C33"], Context(RunRequest(tmp_path, "tiny")))
    tensor = c33.parts[1].to_dict()
    assert tensor["estimate"]["n"] >= 3 and len(tensor["looks"]) >= 2
    assert tensor["rule_changed_after_data"] is None

    # A rule edited after the data: the part is flagged, naming both hashes.
    key = next(k for k in planned if k.startswith("C33 one per-tensor"))
    planned[key] = "0123456789ab"
    (folder / "planned_rules.json").write_text(json.dumps(planned))
    run(suite_rules("tiny"))  # not fresh: the first record is kept
    (c33,) = run_claims(["C33"], Context(RunRequest(tmp_path, "tiny")))
    shown = c33.parts[1].to_dict()
    assert shown["rule_changed_after_data"] == "0123456789ab"
    now = planned_hash("C33", c33.parts[1].rule)
    assert "rule changed after data" in shown["reason"] and now in shown["reason"]

    # Runs stored with no record (from before rules were recorded): never re-recorded under
    # today's rules; every graded part says its runs have no record.
    (folder / "planned_rules.json").unlink()
    run(suite_rules("tiny"))
    assert not (folder / "planned_rules.json").exists()
    (c33,) = run_claims(["C33"], Context(RunRequest(tmp_path, "tiny")))
    assert "no record of the rule its runs were planned under" in c33.parts[1].reason


def test_every_look_grades_what_the_request_names_its_precision_too(tmp_path, monkeypatch):
    """The ledger of each look reads the request the suites ran under, precision included
    (it once read float32 whatever the request); no rules are recorded beside bf16 runs."""
    from blocklab.claims import sequential

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
    assert (ctx.results, ctx.size, ctx.seed_offset, ctx.precision) == (tmp_path, "tiny", 1000,
                                                                       "bf16")
    assert ctx.precision_of("ffn") == "bf16" and ctx.precision_of("norm-cost") == "fp32"
    # the bf16 folders record the rules that grade them, as fp32 folders do
    assert recorded == [suite_rules("tiny")]


def test_a_would_be_contradiction_gets_its_arms_trained_twice_as_long(tmp_path):
    from blocklab.claims.sequential import run_longer
    from blocklab.experiments.suites import get_suite, run_suite

    run_suite(get_suite("ffn"), RunOptions.for_suite(get_suite("ffn"), "tiny", None), tmp_path,
              progress=False)
    due = {"ffn": [Wanted("C16", "swiglu", "ffn", ("relu", "swiglu"), 1, 1)]}
    assert run_longer(RunRequest(tmp_path, "tiny"), due, executor=None, progress=False) == {}
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
    from blocklab.experiments import estimate
    from blocklab.experiments.suites import get_suite

    pairs = []
    for name in names:
        suite = get_suite(name)
        specs = suite.plan(RunOptions(size, range(12)), [])
        pairs += [(suite, s) for s in specs]
    shapes = estimate.shapes_of(pairs)
    timing = estimate.Timing(build_s=0.01, step_s=0.02, forward_s=0.007, call_s=0.001)
    return estimate.Calibration(seconds=0.0, timings=dict.fromkeys(shapes, timing),
                                measured=len(shapes), fitted=0, speed=1.0,
                                startup_s=3.0, worker_start_s=5.0)


def test_the_budget_buys_seed_blocks_cheapest_first_and_the_same_plan_twice(tmp_path):
    from blocklab.claims.sequential import BUILD_RESERVE_S, plan_budget

    names = ["ffn", "position"]
    cal = _calibration("quick", names)
    free = plan_budget(RunRequest(tmp_path, "quick", budget_s=None), names, workers=2,
                       calibration=cal)
    assert free.allowed is None and free.admits(Wanted("C16", "x", "ffn", ("relu",), 5, 10))
    # ffn's 4 arms by 3 then 2 seeds (C16: 5, 8, 10); position's 4 extrapolating arms by 2
    # (C21, C30: 4, 6, 8) and its arm without positions by 1 (C29: 3, 5, 6; run at 4)
    assert [runs for runs, _ in free.looks] == [4 * 3 + 4 * 2 + 1, 4 * 2 + 4 * 2 + 1]
    everything = plan_budget(RunRequest(tmp_path, "quick", budget_s=1e9), names, workers=2,
                             calibration=cal)
    assert everything.allowed[("ffn", "relu")] == 10  # C16's last look
    assert everything.allowed[("position", "rope")] == 8
    request = RunRequest(tmp_path, "quick", budget_s=free.first_s + BUILD_RESERVE_S + 60)
    tight = plan_budget(request, names, workers=2, calibration=cal)
    again = plan_budget(request, names, workers=2, calibration=cal)
    assert tight == again and tight.spent_s <= tight.budget_s
    assert 0 < len(tight.parts) < len(everything.parts)
    assert set(tight.parts) <= set(everything.parts)
    assert not tight.admits(Wanted("C16", "swiglu", "ffn", ("relu", "swiglu"), 8, 10))


def test_the_plan_times_the_shapes_its_blocks_need_when_the_first_look_did_not(tmp_path,
                                                                             monkeypatch):
    """With the first look's runs priced from stored twins, its calibration lacks shapes the
    seed blocks train: the plan calibrates them instead of failing."""
    from blocklab.claims.sequential import plan_budget
    from blocklab.experiments import estimate

    full = _calibration("quick", ["ffn"])
    partial = estimate.Calibration(**{**full.__dict__, "timings": {}})
    asked = []

    def calibrate(shapes, budget_s=15.0):
        asked.append(set(shapes))
        return full

    monkeypatch.setattr(estimate, "calibrate", calibrate)
    monkeypatch.setattr(estimate, "estimate_suites", lambda *a, **k: estimate.SizeEstimate(
        "quick", [], [], partial, {}))
    plan = plan_budget(RunRequest(tmp_path, "quick", budget_s=1e9), ["ffn"], workers=2)
    assert asked and asked[0] <= set(full.timings) and plan.allowed[("ffn", "relu")] == 10


def test_the_minutes_the_report_promises_buy_the_promised_parts_look_by_look():
    """What more budget decides is what `--budget` runs: the report's price of the open parts
    within their designs (`report.build.decision_budget`) is the time the runner's own
    purchases (`sequential.buy`, look by look, re-planned with the time left) need to take
    every promised part to the seeds its sentence names, from the same stored wall times."""
    from dataclasses import asdict

    from blocklab.claims.registry import c16_rule
    from blocklab.claims.sequential import buy
    from blocklab.experiments.estimate import makespan
    from blocklab.report.build import decision_budget

    arms, seed_s, n, needed = ("relu", "swiglu", "geglu"), 10.0, 5, 10
    rule = c16_rule("swiglu")  # seeds 5–10, looks at 5, 8, 10
    parts = [{"name": name, "decision": "inconclusive", "estimate": {"n": n},
              "seeds_needed": needed, "rule": asdict(rule)} for name in ("swiglu", "geglu")]
    ledger = [{"id": "C16", "command": "blocklab suite ffn --size quick", "parts": parts}]
    costs = {"ffn": {"run_costs": [{"arm": a, "seed": s, "wall_time_s": seed_s,
                                    "timed": False} for a in arms for s in range(n)]}}
    promise = decision_budget(ledger, costs, workers=2)
    assert promise["within_reach"] == 2 and not promise["beyond_design"]

    coverage = {"ffn": dict.fromkeys(arms, n)}
    walls = {"ffn": dict.fromkeys(arms, seed_s)}
    left, reached = promise["seconds"], dict.fromkeys(("swiglu", "geglu"), n)
    while True:
        wanted = [Wanted("C16", p, "ffn", (p, "relu"), reached[p], rule.next_look(reached[p]))
                  for p in reached if rule.next_look(reached[p]) is not None]
        chosen = buy(wanted, coverage, 0, walls, workers=2, left_s=left)
        if not chosen:
            break
        blocks = next_blocks(chosen, coverage, 0)["ffn"]
        left -= makespan([seed_s for b in blocks for _ in b.arms
                          for _ in range(b.stop - b.start)], 2)
        for b in blocks:
            for arm in b.arms:
                coverage["ffn"][arm] = b.stop
        for w in chosen:
            reached[w.part] = w.target
    assert reached == {"swiglu": needed, "geglu": needed}  # every promised part, in full
    assert left == pytest.approx(0.0, abs=1e-9)  # and the promise was exactly its price


def test_a_look_that_fits_when_priced_runs_however_long_the_pricing_took(tmp_path, monkeypatch):
    """Reading the stored runs' wall times takes a while on a full folder; the look is bought
    with the time left after that reading and then run, never priced again against a clock
    that moved on (a fresh quick report once stopped there with 4 minutes unused)."""
    from blocklab.claims import sequential

    clock = [0.0]
    monkeypatch.setattr(sequential.time, "perf_counter", lambda: clock[0])

    def slow_walls(request, name):
        clock[0] += 100.0  # reading the folder took 100 s
        return {"quality": 50.0}

    wanted = Wanted("C33", "part", "quantize", ("quality",), 4, 6)
    monkeypatch.setattr(sequential, "open_parts", lambda rows, size, arms: [wanted])
    monkeypatch.setattr(sequential, "arm_wall_s", slow_walls)
    monkeypatch.setattr(sequential, "coverage_of", lambda planned: {"quality": 4})
    added, ran = [], []
    monkeypatch.setattr("blocklab.experiments.suites.base.add_seed_blocks",
                        lambda folder, blocks: added.extend(blocks))
    looks = sequential.Looks(300.0, None)
    # 300 s budget, 100 s spent reading, 30 s kept for the build: 170 s left, and 2 more
    # seeds of 50 s on one worker take 100 s
    assert sequential._next_look(looks, [], {"quantize": None}, {"quantize": ["quality"]}, 1,
                                 0.0, RunRequest(tmp_path, "quick", budget_s=300.0),
                                 lambda rules: ran.append(rules) or {}, {}, 1,
                                 lambda s: None, None)
    assert [(b.start, b.stop, b.arms) for b in added] == [(4, 6, ["quality"])]
    assert ran == [{}] and looks.records[0].runs == 2
    assert looks.records[0].estimated_s == 100.0

    # with 60 s left after the reading nothing fits: the stop says so
    clock[0], looks = 0.0, sequential.Looks(190.0, None)
    assert not sequential._next_look(looks, [], {"quantize": None}, {"quantize": ["quality"]},
                                     1, 0.0, RunRequest(tmp_path, "quick", budget_s=190.0),
                                     lambda rules: {}, {}, 1, lambda s: None, None)
    assert looks.stopped.startswith("no open part's next block fits in the 1.0 min left")
