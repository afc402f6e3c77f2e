"""Registered rules: how an experimental claim is graded, fixed in code before any data is read.

A rule names the metric (with its unit and sign), the smallest effect of interest, the
equivalence margin inside which an effect counts as absent, and the minimum number of seeds;
`grade` maps an estimate with its 95% confidence interval to a verdict by that rule alone:

    untestable-here               fewer seeds than the rule needs (nothing is said)
    confirmed                     the CI excludes 0 on the claimed side
    contradicted-at-this-scale    the CI excludes the claim (opposite side, or inside ±margin)
                                  and the arms were fair (each at its own best learning rate)
                                  and the sign survived a 2× longer run
    not-reproduced-at-this-scale  otherwise: the CI includes no effect and the claim, or it
                                  excludes the claim without those robustness checks

A small model trained for minutes can fail to reproduce a claim about models a thousand times
larger; it cannot refute it. So `refuted` is kept for claims that do not depend on scale
(arithmetic, configs, identities), and an experiment that contradicts a claim says at what
scale. This module imports nothing heavy; the ledger attaches each rule to its row.
"""

from __future__ import annotations

from dataclasses import dataclass

from blocklab.experiments.summaries import Interval

CONFIRMED = "confirmed"
CONTRADICTED = "contradicted-at-this-scale"
NOT_REPRODUCED = "not-reproduced-at-this-scale"
UNTESTABLE = "untestable-here"


@dataclass(frozen=True)
class Rule:
    """How one experimental claim (or one part of it) is graded."""

    metric: str  # what is estimated, its unit and which sign the claim predicts
    smallest_effect: float  # the smallest effect worth detecting, in the metric's unit
    margin: float  # |effect| inside ±margin counts as no effect
    min_seeds: int  # fewer paired seeds than this: no verdict
    claimed: float  # the effect the claim states, in the metric's unit (its sign: the side)
    decides: str = "confirmed when the 95% CI excludes 0 on the claimed side; contradicted when " \
                   "it excludes the claim (opposite side or inside ±margin) with fair arms and a " \
                   "2× longer run agreeing; otherwise not reproduced at this scale; no verdict " \
                   "below min_seeds"
    # A claim of "more than t" (say, a factor above 2×): confirmed only when the CI lies beyond
    # `threshold` on the claimed side; 0 for a claim of any effect at all.
    threshold: float = 0.0


@dataclass(frozen=True)
class Estimate:
    """The measured effect in the rule's metric: mean, 95% CI and the number of paired seeds."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int

    @classmethod
    def of(cls, stats: Interval) -> Estimate:
        return cls(stats.mean, stats.ci_low, stats.ci_high, stats.n)

    def text(self) -> str:
        """'+v [+lo, +hi] (n=k)', '+v (n=k)' without an interval, or '—'."""
        return estimate_text(self.value, self.ci_low, self.ci_high, self.n)


def estimate_text(value: float | None, low: float | None, high: float | None, n: int) -> str:
    """An estimate as the ledger shows it (3 significant digits, signed)."""
    if value is None:
        return "—"
    if low is None or high is None:
        return f"{value:+.3g} (n={n})"
    return f"{value:+.3g} [{low:+.3g}, {high:+.3g}] (n={n})"


@dataclass(frozen=True)
class Graded:
    """A verdict by a rule, with the reason in words."""

    verdict: str
    reason: str


def grade(rule: Rule, estimate: Estimate, *, fair_arms: bool = False,
          longer_run_agrees: bool = False) -> Graded:
    """The verdict of `estimate` under `rule` (see the module docstring for the table).

    `fair_arms`: every arm ran at its own best learning rate from a grid; `longer_run_agrees`:
    a run twice as long gave the same sign. A contradiction needs both.
    """
    if estimate.n < rule.min_seeds or estimate.ci_low is None or estimate.ci_high is None:
        return Graded(UNTESTABLE, f"{estimate.n} paired seed(s); the rule needs at least "
                                  f"{rule.min_seeds}")
    low, high = estimate.ci_low, estimate.ci_high
    side = 1.0 if rule.claimed > 0 else -1.0
    # Oriented so that the claimed side is positive.
    lo, hi = sorted((side * low, side * high))
    if lo > side * rule.threshold:
        return Graded(CONFIRMED, f"the 95% CI excludes {rule.threshold:g} on the claimed side")
    opposite = hi < side * rule.threshold
    absent = -rule.margin < low and high < rule.margin
    if opposite or absent:
        why = (f"the 95% CI lies on the opposite side of {rule.threshold:g}" if opposite else
               f"the 95% CI lies inside ±{rule.margin:g} (no effect)")
        if fair_arms and longer_run_agrees:
            return Graded(CONTRADICTED, why)
        missing = [text for done, text in (
            (fair_arms, "each arm at its own best learning rate"),
            (longer_run_agrees, "a 2× longer run with the same sign")) if not done]
        return Graded(NOT_REPRODUCED, f"{why}, but a contradiction also needs "
                                      f"{' and '.join(missing)}")
    return Graded(NOT_REPRODUCED, "the 95% CI includes both no effect and the claimed side")
