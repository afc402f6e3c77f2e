"""Registered rules: a part's decision from its estimate and rule alone (SPEC §6), Holm
within a claim, and the combining rules that never drop an undecided part."""

import hashlib
import json
import math
from dataclasses import asdict, replace

import numpy as np
import pytest
from scipy import stats as sps

from blocklab import stats
from blocklab.claims import rules  # its testable_all_or_none would be collected as a test
from blocklab.claims.registry import c16_rule
from blocklab.claims.rules import (
    CONFIRMED,
    CONTRADICTED,
    INCONCLUSIVE,
    MIXED,
    NOT_REPRODUCED,
    UNTESTABLE,
    Estimate,
    Part,
    Rule,
    all_or_none,
    band_part,
    decide,
    decide_parts,
    failed_runs_part,
    majority,
    settle,
)
from blocklab.experiments.summaries import Interval

from .test_positions import _arm as arm

# The C16 shape: a loss change in %, negative = better, a gain of 1.5% claimed.
RULE = Rule(metric="Δ%", smallest_effect=1.0, margin=0.25, min_seeds=5, claimed=-1.5)


def t_estimate(mean: float, sd: float, n: int) -> Estimate:
    """An estimate with the 95% t interval of (mean, sd, n): mean ± t_{0.975, n−1} · sd / √n."""
    half = float(sps.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    return Estimate(mean, mean - half, mean + half, n, sd)


GAIN = Rule(metric="gain %", smallest_effect=0.5, margin=0.02, min_seeds=3, claimed=1.0)
TWICE = Rule(metric="log2 ratio", smallest_effect=0.5, margin=0.25, min_seeds=2, claimed=2.0,
             threshold=1.0)  # "more than twice"
AT_LEAST = Rule(metric="%", smallest_effect=5.0, margin=0.0, min_seeds=3, claimed=25.0,
                threshold=25.0, test="at-least")
BAND = Rule(metric="%", smallest_effect=5.0, margin=10.0, min_seeds=3, claimed=15.0,
            test="equivalence")


@pytest.mark.parametrize(("rule", "est", "verdict", "says"), [
    # a tight interval around a 0.1% gain excludes 0, but not δ = 0.5
    (GAIN, Estimate(0.1, 0.05, 0.15, 6), NOT_REPRODUCED, ("short of 0.5", "smaller than claimed")),
    (GAIN, Estimate(0.8, 0.6, 1.0, 6), CONFIRMED, ()),
    # C33's shape: +1.21% [+0.24, +2.17] with δ = 1 straddles 1
    (Rule(metric="%", smallest_effect=1.0, margin=0.5, min_seeds=3, claimed=5.0),
     Estimate(1.21, 0.24, 2.17, 5), INCONCLUSIVE, ()),
    # C16's SwiGLU: −0.32% [−1.92, +1.27], the page's −1.5% inside it
    (RULE, Estimate(-0.32, -1.92, 1.27, 5), INCONCLUSIVE, ("straddles",)),
    (RULE, Estimate(-1.5, -1.6, -1.4, 2), INCONCLUSIVE, ("needs at least 5",)),
    (RULE, Estimate(-1.5, None, None, 9), INCONCLUSIVE, ()),
    (RULE, Estimate(None, None, None, 0), INCONCLUSIVE, ("needs at least 5",)),
    (TWICE, Estimate(3.0, 2.0, 4.0, 4), CONFIRMED, ("beyond 1",)),
    (TWICE, Estimate(1.0, 0.6, 1.4, 4), INCONCLUSIVE, ()),  # above δ, not clearly above 1
    (TWICE, Estimate(0.6, 0.4, 0.8, 4), NOT_REPRODUCED, ()),  # an effect, not the claimed size
    (AT_LEAST, Estimate(40.0, 30.0, 50.0, 3), CONFIRMED, ()),
    (AT_LEAST, Estimate(10.0, 5.0, 15.0, 3), NOT_REPRODUCED, ()),
    (BAND, Estimate(15.0, 12.0, 18.0, 3), CONFIRMED, ()),
    (BAND, Estimate(2.0, 1.0, 3.0, 3), NOT_REPRODUCED, ()),
    # within ±margin, and also wholly short of b = −1: the smaller p names the reading
    (RULE, t_estimate(0.0, 0.05, 8), NOT_REPRODUCED, ()),
    # a boundary inside the margin: not reproduced only through the ±margin reading (two
    # one-sided tests at the 90% interval)
    (Rule(metric="Δ", smallest_effect=0.1, margin=1.0, min_seeds=3, claimed=0.2),
     t_estimate(0.0, 0.4, 10), NOT_REPRODUCED, ("inside ±1",)),
])
def test_a_part_is_decided_by_its_interval_against_the_rule(rule, est, verdict, says):
    found = decide(rule, est)
    assert found.verdict == verdict and all(text in found.reason for text in says)
    if est.n < rule.min_seeds:
        assert found.p_value is None  # never decided, whatever its interval says


def test_beyond_delta_on_the_opposite_side_needs_a_longer_run_to_contradict():
    opposite = Estimate(1.5, 1.2, 1.8, 6)  # a loss 1.5% worse: beyond +δ = +1
    found = decide(RULE, opposite, fair_arms=True)
    assert found.verdict == NOT_REPRODUCED
    assert found.reason.startswith("would be contradicted")
    assert "beyond 1, δ on the opposite side" in found.reason
    assert "a 2× longer run has not confirmed it" in found.reason
    assert decide(RULE, opposite, fair_arms=True,
                  longer_run_agrees=True).verdict == CONTRADICTED
    # Opposite to the claim but not beyond δ: not reproduced, never contradicted.
    near = decide(RULE, Estimate(0.6, 0.3, 0.9, 6), fair_arms=True, longer_run_agrees=True)
    assert near.verdict == NOT_REPRODUCED and "would be" not in near.reason
    assert found.would_contradict and not near.would_contradict
    # with unfair arms no longer run could decide it: none is due
    assert not decide(RULE, opposite).would_contradict


def test_a_longer_run_counts_for_its_own_part_only():
    opposite = Estimate(1.5, 1.2, 1.8, 6)
    both = decide_parts([(RULE, opposite), (RULE, opposite)], fair_arms=True,
                        longer_run_agrees=[True, False])
    assert [d.verdict for d in both] == [CONTRADICTED, NOT_REPRODUCED]
    assert both[1].would_contradict and not both[0].would_contradict
    with pytest.raises(ValueError, match="2 flags for 1 parts"):
        decide_parts([(RULE, opposite)], longer_run_agrees=[True, False])


def test_an_effect_rule_refuses_to_read_a_band():
    with pytest.raises(ValueError, match="equivalence"):
        decide(Rule(metric="x", smallest_effect=1.0, margin=0.1, min_seeds=2, claimed=0.0),
               Estimate(0.0, -1.0, 1.0, 3))


def test_an_inconclusive_part_says_what_would_decide_it():
    est = t_estimate(-0.8, 1.2, 6)  # straddles b = −1
    found = decide(RULE, est)
    assert found.verdict == INCONCLUSIVE
    assert found.detectable_effect == pytest.approx(stats.detectable_effect(1.2, 6, 0.8, 0.05))
    assert found.seeds_needed == stats.seeds_needed(0.2, 1.2, 0.8, 0.05)
    assert f"about {found.seeds_needed} would decide it" in found.reason
    # None: more than the search goes.
    far = decide(RULE, t_estimate(-1.0 + 1e-4, 1.2, 6))
    assert far.seeds_needed is None and "more than 10,000" in far.reason


@pytest.mark.parametrize("level", [0.05, 0.01, 0.0036, 0.0002])
@pytest.mark.parametrize("rule", [
    RULE,  # a gain claimed below zero, with a margin of no effect
    Rule(metric="gain", smallest_effect=1.0, margin=0.0, min_seeds=3, claimed=7.0),
    Rule(metric="Δ%", smallest_effect=0.5, margin=0.5, min_seeds=3, claimed=0.0,
         test="equivalence"),
    Rule(metric="Δ%", smallest_effect=1.0, margin=0.0, min_seeds=3, claimed=0.0,
         test="at-most", threshold=5.0)], ids=["effect-", "effect+", "band", "at-most"])
def test_the_interval_a_decision_carries_is_the_one_that_decided_it(rule, level):
    """At every level the decision is what its carried interval shows (the 95% one rescaled
    to coverage 1 − level, or 1 − 2·level for two one-sided tests), p < level exactly then."""
    rng = np.random.default_rng(7)
    seen = set()
    for _ in range(400):
        n = int(rng.integers(3, 12))
        scale = 0.1 if rule.test == "equivalence" else 1.0  # the band is ±0.5 wide
        est = t_estimate(float(rng.normal(0, 6 * scale)), float(rng.uniform(0.2, 6) * scale), n)
        found = decide(rule, est, level, explain=False)  # what would decide it: not needed
        iv = found.interval
        assert iv is not None and iv.low <= est.value <= iv.high
        tost = iv.confidence == pytest.approx(1 - 2 * level)
        assert tost or iv.confidence == pytest.approx(1 - level)
        t95 = sps.t.ppf(0.975, n - 1)
        t_at = sps.t.ppf(0.5 + iv.confidence / 2, n - 1)
        assert iv.high - iv.low == pytest.approx((est.ci_high - est.ci_low) * t_at / t95)
        assert f"{iv.label} {iv.bracket}" in found.reason
        seen.add(found.verdict)
        if n < rule.min_seeds:  # decided by the count: undecided whatever the interval shows
            assert found.verdict == INCONCLUSIVE and "before it reads" in found.reason
            continue
        assert (found.p_value < level) == (found.verdict != INCONCLUSIVE)
        if rule.test == "equivalence":
            inside = rule.claimed - rule.margin < iv.low and iv.high < rule.claimed + rule.margin
            outside = iv.high < rule.claimed - rule.margin or iv.low > rule.claimed + rule.margin
            assert (found.verdict == CONFIRMED) == (tost and inside)
            assert (found.verdict == NOT_REPRODUCED) == (not tost and outside)
            continue
        s, b = (-1, -5.0) if rule.test == "at-most" else (
            (1, 1.0) if rule.claimed > 0 else (-1, 1.0))
        low, high = sorted((s * iv.low, s * iv.high))
        assert (found.verdict == CONFIRMED) == (not tost and low > b)
        assert (found.verdict == NOT_REPRODUCED) == (
            (not tost and high < b) or (tost and -rule.margin < iv.low and iv.high < rule.margin))
        assert (found.verdict == INCONCLUSIVE) == (not tost and low <= b <= high)
    assert {CONFIRMED, INCONCLUSIVE} <= seen


def test_the_t_distribution_and_the_tost_are_scipys():
    """`decide` reads Student t through scipy.special: scipy.stats.t's numbers exactly."""
    rng = np.random.default_rng(3)
    for x, df in zip(rng.normal(0, 5, 300), rng.integers(1, 40, 300), strict=True):
        assert rules._p_above(float(x), 1.0, int(df)) == min(1.0, 2 * float(sps.t.sf(x, df)))
    for q, df in zip(rng.uniform(0.5, 0.99999, 300), rng.integers(1, 40, 300), strict=True):
        assert rules._t_quantile(float(q), int(df)) == float(sps.t.ppf(q, df))
    # TOST (Schuirmann 1987): the larger p of the two one-sided t tests against the band's
    # edges, each as scipy's `ttest_1samp` gives it
    d = np.array([0.12, -0.05, 0.08, 0.02, -0.01, 0.06])
    se = float(d.std(ddof=1)) / math.sqrt(d.size)
    lower = sps.ttest_1samp(d, popmean=-0.15, alternative="greater").pvalue
    upper = sps.ttest_1samp(d, popmean=0.15, alternative="less").pvalue
    p = rules._tost(float(d.mean()), -0.15, 0.15, se, se, d.size - 1)
    assert p == pytest.approx(max(lower, upper), rel=1e-10)


def test_the_interval_is_labelled_with_its_coverage():
    found = decide(RULE, t_estimate(-1.99, 1.0, 5), 0.0036)
    assert found.interval.label == "99.64% CI"
    assert found.reason.startswith(f"the 99.64% CI {found.interval.bracket} ")
    assert rules.confidence_text(0.95) == "95%" and rules.confidence_text(0.99978) == "99.978%"
    part = Part.of("x", RULE, t_estimate(-1.99, 1.0, 5), found).to_dict()
    assert part["interval"] == {"low": found.interval.low, "high": found.interval.high,
                                "confidence": pytest.approx(1 - 0.0036)}
    # no interval below two seeds, and none on a part decided without a test
    assert decide(RULE, Estimate(-2.0, None, None, 1)).interval is None
    assert failed_runs_part("p", RULE, Interval(-1.0, -2.0, 0.0, 5, 1.0), 1).to_dict()[
        "interval"] is None


def test_rule_hash_is_the_canonical_json_and_changes_with_the_rule():
    text = json.dumps({**asdict(RULE), "decision": rules.DECISION_VERSION}, sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False)
    assert RULE.hash == hashlib.sha256(text.encode()).hexdigest()[:12]
    assert replace(RULE, smallest_effect=0.5).hash != RULE.hash
    # a change to how parts are decided changes every rule's hash
    before = RULE.hash
    try:
        rules.DECISION_VERSION += " (edited)"
        assert RULE.hash != before
    finally:
        rules.DECISION_VERSION = rules.DECISION_VERSION.removesuffix(" (edited)")


def test_an_estimate_from_a_ratio_interval_has_the_equivalent_sd_and_its_text():
    est = Estimate.from_interval(10.0, 6.0, 14.0, 8)
    t = sps.t.ppf(0.975, 7)
    assert est.sd == pytest.approx(4.0 * math.sqrt(8) / t)
    assert Estimate.from_interval(1.0, None, None, 1).sd is None
    assert Estimate(-0.0646, -2.8378, 2.7085, 5).text() == "-0.0646 [-2.84, +2.71] (n=5)"
    assert Estimate(1.5, None, None, 1).text() == "+1.5 (n=1)"
    assert Estimate(None, None, None, 0).text() == "—"


# --- Holm within a claim -------------------------------------------------------------------------
def with_p(p: float, n: int = 8, sd: float = 1.0) -> Estimate:
    """An estimate whose confirming test (effect ≤ b = 1 for a claim of +2, δ = 1) has p."""
    se = sd / math.sqrt(n)
    mean = 1.0 + se * sps.t.isf(p / 2, n - 1)
    return t_estimate(mean, sd, n)


UP = Rule(metric="x", smallest_effect=1.0, margin=0.0, min_seeds=3, claimed=2.0)


def test_holm_textbook_example_counting_an_undecidable_part():
    # sorted, 0.005 ≤ 0.05/4 and 0.01 ≤ 0.05/3 are decided; 0.03 > 0.05/2 stops there
    ps = [0.01, 0.04, 0.03, 0.005]
    parts = [(UP, with_p(p)) for p in ps]
    for (rule, est), p in zip(parts, ps, strict=True):
        assert decide(rule, est).p_value == pytest.approx(p, rel=1e-6)
        assert decide(rule, est).verdict == CONFIRMED  # each alone would be confirmed
    found = decide_parts(parts)
    assert [d.verdict for d in found] == [CONFIRMED, INCONCLUSIVE, INCONCLUSIVE, CONFIRMED]
    assert [d.level for d in found] == pytest.approx([0.05 / 3, 0.05 / 1, 0.05 / 2, 0.05 / 4])
    assert "Holm's step-down stopped at test 3" in found[1].reason
    assert found[1].detectable_effect is not None and found[2].seeds_needed is not None
    found = decide_parts([(UP, with_p(0.001)), (UP, with_p(0.01)), (UP, with_p(0.02))])
    assert [d.verdict for d in found] == [CONFIRMED] * 3  # 0.001 < .0167, .01 < .025, .02 < .05
    # an undecidable part counts in Holm and stays inconclusive
    found = decide_parts([(UP, with_p(0.02)), (UP, Estimate(2.0, None, None, 1))])
    # m = 2: the first part is read at 0.025 (decided); the second has no interval.
    assert [d.verdict for d in found] == [CONFIRMED, INCONCLUSIVE]
    assert found[0].level == pytest.approx(0.025)
    found = decide_parts([(UP, with_p(0.03)), (UP, Estimate(2.0, None, None, 1))])
    assert found[0].verdict == INCONCLUSIVE  # 0.03 > 0.05 / 2: never dropped to m = 1


WORKS = Rule(metric="loss past L, %", smallest_effect=5.0, margin=0.0, min_seeds=4,
             claimed=5.0, threshold=5.0, test="at-most", max_seeds=8)
DROPS = Rule(metric="loss past L, %", smallest_effect=5.0, margin=0.0, min_seeds=4,
             claimed=5.0, threshold=5.0, test="at-least", max_seeds=8)


def test_parts_reading_one_estimate_against_one_threshold_alone_are_one_holm_test():
    """'works' (at most 5%) and 'drops' (at least 5%) on one estimate are one Holm test."""
    low = t_estimate(2.0, 0.4, 8)  # far below 5: works, does not drop
    other = t_estimate(2.5, 0.5, 8)
    found = decide_parts([(WORKS, low), (DROPS, low), (WORKS, other)])
    assert [d.verdict for d in found] == [CONFIRMED, NOT_REPRODUCED, CONFIRMED]
    assert found[0].level == found[1].level
    assert found[0].interval == found[1].interval
    assert "one test with 1 other part" in found[0].reason
    assert "test 1 of 2" in found[0].reason and "test 2 of 2" in found[2].reason
    # m = 2 tests: the pair's level is its design at α/2, the same as a claim of two parts
    alone = decide_parts([(WORKS, low), (WORKS, other)])
    assert found[0].level == pytest.approx(alone[0].level)
    assert found[2].level == pytest.approx(alone[1].level)
    # one test only where estimate, threshold and design agree
    est = t_estimate(6.0, 1.0, 8)
    assert rules.same_test((WORKS, est), (DROPS, est))
    assert not rules.same_test((WORKS, est), (DROPS, t_estimate(6.0, 1.0, 7)))
    assert not rules.same_test((WORKS, est), (replace(DROPS, threshold=25.0), est))
    assert not rules.same_test((WORKS, est), (replace(DROPS, max_seeds=10), est))
    # two quantities whose estimates happen to agree are two tests
    assert not rules.same_test((WORKS, est), (replace(DROPS, metric="another arm, %"), est))
    effect = Rule(metric="m", smallest_effect=5.0, margin=1.0, min_seeds=4, claimed=5.0,
                  max_seeds=8)  # an effect test also reads ±margin: a different test
    assert not rules.same_test((WORKS, est), (effect, est))
    unresolved = Estimate(6.0, None, None, 1)
    assert not rules.same_test((WORKS, unresolved), (DROPS, unresolved))
    # three parts, none shared: Holm counts three
    found = decide_parts([(WORKS, t_estimate(2.0, 0.4, 8)), (WORKS, t_estimate(2.1, 0.4, 8)),
                          (DROPS, t_estimate(9.0, 0.4, 8))])
    assert [d.reason.count("of 3") for d in found] == [1, 1, 1]


# --- opposite decisions across disjoint seed sets ------------------------------------------------
def old_grade(rule: Rule, est: Estimate) -> str:
    """The rule this module replaced: confirmed when the CI excludes 0 on the claimed side,
    otherwise not reproduced."""
    side = 1.0 if rule.claimed > 0 else -1.0
    low = min(side * est.ci_low, side * est.ci_high)
    return CONFIRMED if low > 0 else NOT_REPRODUCED


def test_two_seed_sets_almost_never_give_opposite_decisions():
    # A true effect on the boundary (δ = 0.5), sd 1, 10 seeds a set: the old rule's pairs
    # disagree ~35% of the time, this one's only through an interval that misses (≤ α/2).
    rule = Rule(metric="x", smallest_effect=0.5, margin=0.1, min_seeds=5, claimed=1.0)
    rng = np.random.default_rng(0)
    pairs, n = 300, 10
    opposite = {"old": 0, "new": 0}
    for _ in range(pairs):
        ivs = [stats.paired_interval(rng.normal(0.5, 1.0, n)) for _ in range(2)]
        found = [Estimate(iv.value, iv.ci_low, iv.ci_high, n, iv.sd) for iv in ivs]
        old = {old_grade(rule, e) for e in found}
        new = {decide(rule, e, explain=False).verdict for e in found}
        opposite["old"] += old == {CONFIRMED, NOT_REPRODUCED}
        opposite["new"] += CONFIRMED in new and bool(new & {NOT_REPRODUCED, CONTRADICTED})
    assert opposite["new"] / pairs <= 0.05
    assert opposite["old"] / pairs >= 0.2


# --- a claim's verdict from its parts ------------------------------------------------------------
@pytest.mark.parametrize(("verdicts", "every", "testable", "most"), [
    ([CONFIRMED] * 3, CONFIRMED, CONFIRMED, CONFIRMED),
    ([CONFIRMED, CONFIRMED, NOT_REPRODUCED], "mixed", "mixed", "mixed"),
    ([CONFIRMED, NOT_REPRODUCED, NOT_REPRODUCED], "mixed", "mixed", NOT_REPRODUCED),
    ([NOT_REPRODUCED] * 3, NOT_REPRODUCED, NOT_REPRODUCED, NOT_REPRODUCED),
    ([CONFIRMED, CONFIRMED, UNTESTABLE], "mixed", "mixed", "mixed"),
    ([NOT_REPRODUCED, UNTESTABLE], NOT_REPRODUCED, NOT_REPRODUCED, NOT_REPRODUCED),
    ([UNTESTABLE, UNTESTABLE], UNTESTABLE, UNTESTABLE, UNTESTABLE),
    (["refuted", NOT_REPRODUCED], "refuted", "refuted", "refuted"),  # an exact part decides
])
def test_the_shared_combining_rules(verdicts, every, testable, most):
    assert all_or_none(verdicts) == every
    assert majority(verdicts) == most
    # an untestable part beside confirmed ones makes the claim mixed, and alone untestable
    assert rules.testable_all_or_none(verdicts) == testable
    assert rules.testable_all_or_none([UNTESTABLE]) == UNTESTABLE


def test_settle_counts_an_inconclusive_part_as_undecided_never_dropped():
    # Whichever way the open part goes, two of three fail: not reproduced either way.
    assert settle([NOT_REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE], majority) == NOT_REPRODUCED
    # Here it decides between confirmed and mixed: the claim is inconclusive.
    assert settle([CONFIRMED, CONFIRMED, INCONCLUSIVE], all_or_none) == INCONCLUSIVE
    assert settle([CONFIRMED] * 20 + [INCONCLUSIVE] * 17, all_or_none) == INCONCLUSIVE
    # the patterns docs/verdicts.md names
    assert settle([CONFIRMED, CONTRADICTED], all_or_none) == MIXED
    assert settle([NOT_REPRODUCED, CONTRADICTED], all_or_none) == NOT_REPRODUCED
    assert settle([CONFIRMED, INCONCLUSIVE], all_or_none) == INCONCLUSIVE  # confirmed or mixed
    assert settle([CONFIRMED, NOT_REPRODUCED, INCONCLUSIVE], all_or_none) == MIXED  # either way


def test_part_builders_decide_without_a_test_only_what_no_test_can():
    iv = Interval(8, 0.3, 0.1, 0.5)
    spec = failed_runs_part("p", RULE, iv, failures=0)
    assert spec == ("p", RULE, Estimate.of(iv))  # decided with the claim's other parts
    failed = failed_runs_part("p", RULE, iv, failures=2)
    assert isinstance(failed, Part) and failed.verdict == NOT_REPRODUCED
    assert failed.reason == "2 pre-norm run(s) failed" and failed.decision is None
    assert band_part("b", arm({"8": iv}), "8", "works", RULE) == ("b", RULE, Estimate.of(iv))
    table = arm({"8": "unavailable (table)"})  # a learned table cannot run past its length
    assert band_part("b", table, "8", "collapses", RULE).verdict == CONFIRMED
    assert band_part("b", table, "8", "works", RULE).verdict == NOT_REPRODUCED
    assert band_part("b", None, "8", "works", RULE).verdict == INCONCLUSIVE  # not read
    # a multiple the arm was not read at is not read, never "cannot run: it collapses"
    unread = band_part("b", arm({"8": iv}), "16", "drops", RULE)
    assert unread.verdict == INCONCLUSIVE and unread.reason == "not read at 16×"
    # any other string is a bug in the suite: an error, never a verdict
    with pytest.raises(RuntimeError, match="neither a number nor"):
        band_part("b", arm({"8": "failed"}), "8", "drops", RULE)


def test_the_lr_bias_gate_stops_wrong_not_reproduced_decisions_in_either_direction():
    """True gain −1.2% (sd 0.57, 8 seeds), tuned rates adding +0.6 to every gap: read with
    and without the bias, a wrong "not reproduced" stays within 2.5% (+3 MC sd)."""
    rule = c16_rule("swiglu")  # boundary −1 on the claimed (negative) side
    rng = np.random.default_rng(59)
    reps, n, bias = 2000, 8, 0.6
    before = after = 0
    for _ in range(reps):
        x = rng.normal(-1.2, 0.57, n) + bias
        est = t_estimate(float(x.mean()), float(x.std(ddof=1)), n)
        before += decide(rule, est, fair_arms=True, explain=False).verdict == NOT_REPRODUCED
        after += decide(rule, est, fair_arms=True, explain=False,
                        bias=bias).verdict == NOT_REPRODUCED
    mc = 3 * np.sqrt(0.025 * 0.975 / reps)
    assert before / reps > 0.3  # the adverse bias alone decides wrongly this often
    assert after / reps <= 0.025 + mc

