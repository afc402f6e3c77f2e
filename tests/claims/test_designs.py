"""Spending functions besides O'Brien–Fleming, the rules that name them, and the simulation
that chooses among them (`benchmarks/design_simulation.py`)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import design_simulation as D
from blocklab import stats
from blocklab.claims.rules import (
    ALPHA,
    CONFIRMED,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    Decision,
    Estimate,
    Rule,
    decide_parts,
    look_level,
    looks,
)
from blocklab.errors import InputError

RULE = Rule("m", 0.5, 0.25, 4, 1.0, max_seeds=8)  # looks at 4, 6, 8


# --- the spending functions ----------------------------------------------------------------------
def test_spending_functions_at_hand_values():
    # Pocock: 0.05·ln(1 + (e − 1)/2) = 0.05·ln 1.859141 = 0.0310057
    assert stats.pocock_spent_alpha(0.5) == pytest.approx(0.0310057, rel=1e-5)
    # 0.05·ln(1 + (e − 1)/4) = 0.05·ln 1.429570 = 0.0178687
    assert stats.pocock_spent_alpha(0.25) == pytest.approx(0.0178687, rel=1e-5)
    # HSD γ = −4: 0.05·(e² − 1)/(e⁴ − 1) = 0.05·6.389056/53.598150 = 0.0059601
    assert stats.hsd_spent_alpha(0.5, 0.05, -4) == pytest.approx(0.0059601, rel=1e-5)
    # γ = −2: 0.05·(e − 1)/(e² − 1) = 0.05/(e + 1) = 0.0134471
    assert stats.hsd_spent_alpha(0.5, 0.05, -2) == pytest.approx(0.0134471, rel=1e-5)
    # γ = 1: 0.05·(1 − e^−½)/(1 − e^−1) = 0.05·0.393469/0.632121 = 0.0311230
    assert stats.hsd_spent_alpha(0.5, 0.05, 1) == pytest.approx(0.0311230, rel=1e-5)
    # by name, as a rule names them
    assert stats.spent_by("pocock", 0.5) == stats.pocock_spent_alpha(0.5)
    assert stats.spent_by("hsd(-2)", 0.5) == stats.hsd_spent_alpha(0.5, 0.05, -2)
    assert stats.spent_by("obf", 0.5) == stats.spent_alpha(0.5)
    assert stats.spent_by("fixed", 0.99) == 0.0 and stats.spent_by("fixed", 1.0) == 0.05
    # and what they do not define, refused
    with pytest.raises(InputError, match="gamma must be nonzero"):
        stats.hsd_spent_alpha(0.5, 0.05, 0.0)
    with pytest.raises(InputError, match="got 1.5"):
        stats.pocock_spent_alpha(1.5)
    with pytest.raises(InputError, match="'hsd\\(3\\)' is not allowed"):
        stats.spent_by("hsd(3)", 0.5)


@pytest.mark.parametrize("spending", stats.SPENDINGS)
@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_every_spending_function_spends_alpha_by_one_and_nothing_at_zero(spending, alpha):
    assert stats.spent_by(spending, 1.0, alpha) == pytest.approx(alpha, abs=1e-15)
    assert stats.spent_by(spending, 0.0, alpha) == 0.0
    grid = np.linspace(0, 1, 201)
    spent = [stats.spent_by(spending, float(t), alpha) for t in grid]
    assert all(b >= a for a, b in zip(spent, spent[1:], strict=False))  # monotone
    assert all(0 <= s <= alpha for s in spent)
    if spending != "fixed":  # continuous at 0: t → 0 spends → 0
        assert stats.spent_by(spending, 1e-9, alpha) < 1e-7


# --- rules that name them ------------------------------------------------------------------------
def test_a_rule_names_an_allowed_spending_function_and_design_in_one_line():
    with pytest.raises(InputError) as raised:
        Rule("m", 0.5, 0.25, 4, 1.0, max_seeds=8, spending="linear")
    message = str(raised.value)
    assert "\n" not in message and "'linear'" in message
    assert all(name in message for name in stats.SPENDINGS)
    assert RULE.spending == "obf"
    with pytest.raises(InputError, match="min_seeds 5 and max_seeds 3"):
        Rule("m", 0.1, 0.1, 5, 1.0, max_seeds=3)


def test_pocock_reads_its_first_look_at_a_larger_level_than_obf():
    pocock = Rule("m", 0.5, 0.25, 4, 1.0, max_seeds=8, spending="pocock")
    assert pocock.schedule == RULE.schedule == (4, 6, 8)
    assert look_level(pocock, 4) == pytest.approx(stats.pocock_spent_alpha(0.5))
    assert look_level(pocock, 4) > 5 * look_level(RULE, 4)
    # and its last look at a smaller one: each spends α in all, by its own increments
    assert look_level(pocock, 8) < look_level(RULE, 8)
    for spending in stats.SPENDINGS:
        rule = Rule("m", 0.5, 0.25, 4, 1.0, max_seeds=8, spending=spending)
        assert sum(look_level(rule, n) for n in rule.schedule) == pytest.approx(ALPHA)
        assert sum(look_level(rule, n, ALPHA / 3) for n in rule.schedule) == pytest.approx(
            ALPHA / 3)


def test_a_fixed_design_has_one_look_at_max_seeds():
    fixed = Rule("m", 0.5, 0.25, 4, 1.0, max_seeds=8, spending="fixed")
    assert fixed.schedule == (8,) and fixed.min_seeds == 4
    assert fixed.next_look(4) == 8 and fixed.next_look(8) is None
    assert looks(fixed, 8) == (8,)
    assert look_level(fixed, 8) == ALPHA and look_level(fixed, 10) == ALPHA
    assert look_level(fixed, 6) == 0.0  # fewer seeds: no look of the design, nothing spent
    # read before its one look it decides nothing (and does not crash Holm's order)
    early, late = Estimate(3.0, 2.5, 3.5, 5, 0.5), Estimate(3.0, 2.5, 3.5, 8, 0.5)
    found = decide_parts([(fixed, early), (RULE, early)])
    assert found[0].verdict == INCONCLUSIVE
    assert decide_parts([(fixed, late)])[0].verdict == CONFIRMED
    # the hash tells the designs apart
    assert fixed.hash != RULE.hash


# --- the simulation ------------------------------------------------------------------------------
def _two_parts(rho: float = 0.0) -> D.ClaimModel:
    model = D.model_of("X", {"a": RULE, "b": Rule("m2", 0.5, 0.25, 4, -1.0, max_seeds=8)}, rho)
    assert model is not None
    return model


def _fwe_at_the_boundary(model: D.ClaimModel, spending: str, reps: int) -> float:
    rng = np.random.default_rng(D.claim_seed(model.claim, "normal"))
    z = D.noise(model, "normal", reps, rng)
    truths = [o + u for o, u in zip(model.origin, model.unit, strict=True)]  # x = 1
    data = np.asarray(truths)[None, :, None] + np.asarray(model.scale)[None, :, None] * z
    return float(D.run_design(model, spending, D.EstimatesByLook(data), truths).wrong.mean())


@pytest.mark.parametrize("spending", ["obf", "pocock"])
@pytest.mark.parametrize("rho", [0.0, 0.5])
def test_a_two_part_claim_keeps_its_family_wise_error_within_alpha(spending, rho):
    """Both parts on their boundary, looks at 4, 6, 8: any wrong decision stays within α
    (+3 Monte Carlo sd at 300 replicates)."""
    reps = 300
    fwe = _fwe_at_the_boundary(_two_parts(rho), spending, reps)
    assert fwe <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / reps)


def test_the_model_puts_each_part_at_its_boundary_in_sd_units():
    model = _two_parts()
    # b = δ = 0.5 on each part's claimed side: the per-seed sd is b, the scenarios x·b
    assert model.scale == (0.5, 0.5) and model.unit == (0.5, -0.5) and model.origin == (0, 0)
    c21 = D.claim_model("C21")
    assert c21 is not None and len(c21.rules) == 10
    # C30's "works"/"drops" pairs read one estimate: 14 parts on 10
    c30 = D.claim_model("C30")
    assert c30 is not None and (len(c30.rules), c30.estimates) == (14, 10)
    assert D.claim_model("C16").rho == 0.5
    assert D.claim_model("C31") is None  # analytic: nothing to simulate
    # the distributions are standardized
    rng = np.random.default_rng(0)
    for distribution in D.DISTRIBUTIONS:
        z = D.standard_draws(distribution, rng, (400_000,))
        assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.03, distribution
    shared = D.noise(_two_parts(0.5), "lognormal", 200_000, rng)
    assert np.corrcoef(shared[:, 0, 0], shared[:, 1, 0])[0, 1] == pytest.approx(0.5, abs=0.01)


def test_a_decision_is_wrong_exactly_on_the_wrong_side_of_the_boundary():
    confirmed, not_reproduced = Decision(CONFIRMED, ""), Decision(NOT_REPRODUCED, "")
    # RULE's boundary b = δ = 0.5: at b both decisions are wrong
    assert D.wrong(RULE, confirmed, 0.5) and not D.wrong(RULE, confirmed, 0.51)
    assert D.wrong(RULE, not_reproduced, 0.5) and not D.wrong(RULE, not_reproduced, 0.49)
    assert not D.wrong(RULE, Decision(INCONCLUSIVE, ""), 0.5)
    would = Decision(NOT_REPRODUCED, "", would_contradict=True)
    assert D.wrong(RULE, would, 0.2) and not D.wrong(RULE, would, -0.6)  # δ = 0.5
    band = Rule("m", 1.0, 1.0, 4, 0.0, test="equivalence", max_seeds=8)
    assert D.wrong(band, confirmed, 1.0) and not D.wrong(band, confirmed, 0.5)
    assert D.wrong(band, not_reproduced, -1.0) and not D.wrong(band, not_reproduced, 1.5)


def test_a_claims_simulation_is_deterministic_and_the_criterion_reads_it():
    model = _two_parts()
    first, runs = D.simulate_one(model, "normal", 40, designs=("obf", "fixed"))
    again, _ = D.simulate_one(model, "normal", 40, designs=("obf", "fixed"))
    assert first == again
    fixed = next(r for r in first if r.spending == "fixed")
    assert fixed.seeds == fixed.worst_seeds == 16  # one look, at max_seeds, for both parts
    sim = D.ClaimSimulation(model, tuple(first), runs, {})
    choice = D.choose(sim)
    assert choice.spending in ("obf", "fixed")
    assert choice.obf_decided == pytest.approx(first[0].decided)
    # a tie keeps obf and an ineligible design is never chosen

    def result(spending: str, fwe: float, decided: float) -> D.DesignResult:
        return D.DesignResult("X", spending, "normal", 100, 2, 2, fwe, (fwe,) * 5, 0.95,
                              (0.95,) * 5, decided, (decided,) * 5, 12.0, (12.0,) * 5, 16)

    rng = np.random.default_rng(1)
    base = rng.integers(0, 3, 100).astype(float)
    runs = {("obf", "normal"): base, ("pocock", "normal"): rng.permutation(base),
            ("fixed", "normal"): base + 1.0}
    results = (result("obf", 0.04, base.mean()), result("pocock", 0.04, base.mean()),
               result("fixed", 0.06, base.mean() + 1.0))
    choice = D.choose(D.ClaimSimulation(model, results, runs, {}))
    assert choice.spending == "obf" and "fixed" not in choice.eligible
    assert choice.eligible == ("obf", "pocock")


def test_the_simulated_estimates_are_the_reports_t_intervals():
    data = np.random.default_rng(3).normal(0.2, 1.0, (4, 2, 8))
    found = D.EstimatesByLook(data).at(1, 5)[2]
    iv = stats.paired_interval(data[2, 1, :5])
    assert (found.value, found.ci_low, found.ci_high, found.sd) == pytest.approx(
        (iv.value, iv.ci_low, iv.ci_high, iv.sd), rel=1e-12)
    assert found.n == 5
