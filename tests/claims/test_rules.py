"""Registered rules: the verdict follows from the estimate, its CI and the rule alone."""

import pytest

from blocklab.claims.rules import Estimate, Rule, grade

RULE = Rule(metric="Δ%", smallest_effect=0.5, margin=0.25, min_seeds=5, claimed=-1.5)


@pytest.mark.parametrize(("low", "high", "verdict", "reason"), [
    (-2.0, -0.1, "confirmed", "excludes 0 on the claimed side"),
    (0.1, 2.0, "not-reproduced-at-this-scale", "opposite side"),
    (-0.2, 0.2, "not-reproduced-at-this-scale", "inside ±0.25 (no effect)"),
    (-2.0, 1.0, "not-reproduced-at-this-scale", "includes both"),
    (-0.1, 0.4, "not-reproduced-at-this-scale", "includes both"),
])
def test_grade_without_robustness_never_contradicts(low, high, verdict, reason):
    found = grade(RULE, Estimate((low + high) / 2, low, high, 5))
    assert found.verdict == verdict and reason in found.reason


def test_a_contradiction_needs_fair_arms_and_a_longer_run():
    opposite = Estimate(1.0, 0.5, 1.5, 6)
    assert grade(RULE, opposite, fair_arms=True).verdict == "not-reproduced-at-this-scale"
    assert "a 2× longer run" in grade(RULE, opposite, fair_arms=True).reason
    assert grade(RULE, opposite, fair_arms=True,
                 longer_run_agrees=True).verdict == "contradicted-at-this-scale"
    absent = Estimate(0.0, -0.1, 0.1, 6)
    assert grade(RULE, absent, fair_arms=True,
                 longer_run_agrees=True).verdict == "contradicted-at-this-scale"
    # A CI that still reaches the claimed side is never a contradiction.
    assert grade(RULE, Estimate(0.5, -1.0, 2.0, 6), fair_arms=True,
                 longer_run_agrees=True).verdict == "not-reproduced-at-this-scale"


def test_too_few_seeds_or_no_interval_gives_no_verdict():
    assert grade(RULE, Estimate(-1.5, -1.6, -1.4, 2)).verdict == "untestable-here"
    assert grade(RULE, Estimate(-1.5, None, None, 9)).verdict == "untestable-here"
    assert "needs at least 5" in grade(RULE, Estimate(None, None, None, 0)).reason


def test_a_positive_claim_is_graded_on_its_own_side():
    up = Rule(metric="gain", smallest_effect=1.0, margin=0.5, min_seeds=3, claimed=7.0)
    assert grade(up, Estimate(5.0, 2.0, 8.0, 3)).verdict == "confirmed"
    assert grade(up, Estimate(-5.0, -8.0, -2.0, 3)).verdict == "not-reproduced-at-this-scale"


def test_a_claim_of_more_than_a_threshold_needs_the_whole_ci_beyond_it():
    # "more than twice": log2 of a ratio above 1.
    twice = Rule(metric="log2 ratio", smallest_effect=1.0, margin=0.25, min_seeds=2,
                 claimed=2.0, threshold=1.0)
    assert grade(twice, Estimate(3.0, 2.0, 4.0, 4)).verdict == "confirmed"
    assert "excludes 1" in grade(twice, Estimate(3.0, 2.0, 4.0, 4)).reason
    # Above 0 but not clearly above 1: an effect, not the claimed size.
    assert grade(twice, Estimate(1.0, 0.5, 1.5, 4)).verdict == "not-reproduced-at-this-scale"
    below = grade(twice, Estimate(0.6, 0.4, 0.8, 4), fair_arms=True, longer_run_agrees=True)
    assert below.verdict == "contradicted-at-this-scale"
    assert "opposite side of 1" in below.reason


def test_estimate_text():
    assert Estimate(-0.0646, -2.8378, 2.7085, 5).text() == "-0.0646 [-2.84, +2.71] (n=5)"
    assert Estimate(1.5, None, None, 1).text() == "+1.5 (n=1)"
    assert Estimate(None, None, None, 0).text() == "—"
