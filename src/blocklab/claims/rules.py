"""Registered rules: how an experimental claim is graded, fixed in code before any data is read.

A rule names the metric (with its unit and sign), the smallest effect of interest δ, the
equivalence margin inside which an effect counts as absent, the minimum and maximum number of
seeds, and what is claimed: an effect on one side (`test="effect"`, the side is the sign of `claimed`,
and for a claim of "more than t" the `threshold` t), a bound (`"at-most"` / `"at-least"`
`threshold`), or a band (`"equivalence"`: within `claimed` ± `margin`). `decide` maps an
estimate with its 95% confidence interval to one decision (SPEC §6), working where the claimed
side is positive and the claim's boundary is b (δ, or max(δ, t) for "more than t"):

    confirmed                     the interval lies wholly beyond b on the claimed side
                                  (low > b)
    not-reproduced-at-this-scale  the interval excludes every size the claim allows (high < b:
                                  an effect may remain, smaller than claimed), or the (1 − 2α)
                                  interval lies within ±margin (two one-sided tests)
    contradicted-at-this-scale    the interval lies wholly beyond δ on the opposite side
                                  (high < −δ) and a run twice as long agrees (with fair arms);
                                  without that run such a part is not reproduced, and its
                                  reason says it would be contradicted
    inconclusive                  otherwise: the interval straddles b, or there is no interval
                                  (n < 2), or fewer seeds than the rule's minimum. It states the
                                  smallest effect the spent seeds could detect (80% power at the
                                  observed spread) and the seeds that would decide it.

Confirmed and not reproduced lie on either side of b, so two disjoint seed sets measuring one
true effect can disagree only through `inconclusive`, unless an interval misses the true effect
on the far side (at most α/2 per set; tests/claims/test_rules.py simulates it).

`decide_parts` decides a claim's parts together with Holm's step-down correction, so that the
chance of any wrong decision within a claim stays ≤ α; `settle` turns the parts' verdicts into
the claim's by a combining rule, an inconclusive part counting as undecided. Parts that split
with no condition named make a claim `mixed`, never `conditional`.

A small model trained for minutes can fail to reproduce a claim about far larger models; it
cannot refute it. `refuted` is kept for what an exact check decides (arithmetic, counts,
configs, identities), and an experiment that contradicts a claim says at what scale.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from scipy import special
from scipy import stats as sps

from blocklab import stats
from blocklab.errors import InputError
from blocklab.experiments.run_result import failed_count
from blocklab.experiments.suites.position.runs import UNAVAILABLE
from blocklab.experiments.suites.position.summary import PositionArm
from blocklab.experiments.summaries import Interval

CONFIRMED = "confirmed"
REFUTED = "refuted"  # by an exact check only: no experiment here refutes (`decide` never does)
CONDITIONAL = "conditional"
MIXED = "mixed"
CONTRADICTED = "contradicted-at-this-scale"
NOT_REPRODUCED = "not-reproduced-at-this-scale"
INCONCLUSIVE = "inconclusive"
# a claim this machine cannot test at all (too few seeds is `inconclusive`)
UNTESTABLE = "untestable-here"

# What a rule claims (see the module docstring).
TESTS = ("effect", "at-most", "at-least", "equivalence")
ALPHA = 0.05  # two-sided error rate of every stored interval (95%) and of a claim's decisions
POWER = 0.8  # the power at which an inconclusive part states what could be detected
MAX_SEEDS = 10_000  # seeds_needed looks no further ("more than 10,000")

# How parts are decided (`decide`, `decide_parts`, `look_level`): part of every rule's hash,
# so results planned before a change to the procedure are flagged, never silently regraded.
# Change it with the procedure, and say what changed in claims/rule_changes.toml.
DECISION_VERSION = ("2026-12-05b: each look spends its increment of the part's spending function, "
                    "each part's design at its Holm share of α; a decision carries the interval it "
                    "read; a decision stands only where the estimate with and without the tuned "
                    "rates' lr bias gives it (`bias`); a part whose bias cannot be read (`unfair`) "
                    "loses its confirming reading before any data; Holm counts distinct tests "
                    "(parts reading one estimate against one threshold are one test); a part whose "
                    "arm did not learn on most of its seeds is untestable here "
                    "(`unless_unlearned`)")

DECIDES = ("confirmed when the CI at its level (its look's share of α after Holm) lies wholly "
           "beyond the claim's boundary b (the smallest effect δ, or the threshold of a claim "
           "of 'more than t' when larger) on the claimed side; not reproduced at this scale "
           "when it lies wholly short of b, or the (1 − 2·level) CI lies inside ±margin; contradicted when it lies wholly beyond δ on the opposite side "
           "and a 2× longer run agrees (else not reproduced); otherwise inconclusive, as with "
           "fewer seeds than min_seeds. Parts of one claim are decided with Holm's correction")


@dataclass(frozen=True)
class Rule:
    """How one experimental claim (or one part of it) is graded."""

    metric: str  # what is estimated, its unit and which sign the claim predicts
    smallest_effect: float  # δ, the smallest effect worth detecting, in the metric's unit
    margin: float  # |effect| inside ±margin counts as no effect
    min_seeds: int  # fewer paired seeds than this: inconclusive
    claimed: float  # the effect the claim states, in the metric's unit (its sign: the side)
    decides: str = DECIDES
    # "more than t": the boundary is max(δ, t) on the claimed side (0: any effect of at least
    # δ); for "at-most" / "at-least" the bound itself
    threshold: float = 0.0
    test: str = "effect"  # one of TESTS
    # The sequential design (`schedule`): the most paired seeds a part may spend, added in
    # blocks of ⌈min_seeds / 2⌉, each block a look read at its `spending` level of the
    # information fraction n / max_seeds. None: a fixed design, read once at α.
    max_seeds: int | None = None
    # `stats.SPENDINGS`: "obf" (O'Brien–Fleming), "pocock", "hsd(γ)" (Hwang–Shih–DeCani), or
    # "fixed": one look, at max_seeds, read at α
    spending: str = "obf"

    def __post_init__(self) -> None:
        if self.test not in TESTS:
            raise InputError(f"rule test {self.test!r} is not allowed; expected one of "
                             f"{list(TESTS)}")
        if self.spending not in stats.SPENDINGS:
            raise InputError(f"rule spending {self.spending!r} is not allowed; expected one of "
                             f"{list(stats.SPENDINGS)}")
        top = self.min_seeds if self.max_seeds is None else self.max_seeds
        if not 1 <= self.min_seeds <= top:
            raise InputError(f"rule {self.metric!r}: min_seeds {self.min_seeds} and max_seeds "
                             f"{self.max_seeds} must satisfy 1 ≤ min_seeds ≤ max_seeds")

    @property
    def block(self) -> int:
        """Seeds added at each look after the first: ⌈min_seeds / 2⌉."""
        return -(-self.min_seeds // 2)

    @property
    def schedule(self) -> tuple[int, ...]:
        """The planned looks, in paired seeds: min_seeds, then every `block` seeds, ending at
        max_seeds; (min_seeds,) for a fixed design; (max_seeds,) for spending "fixed"."""
        if self.max_seeds is None:
            return (self.min_seeds,)
        if self.spending == "fixed":
            return (self.max_seeds,)
        return (*range(self.min_seeds, self.max_seeds, self.block), self.max_seeds)

    def next_look(self, n: int) -> int | None:
        return next((p for p in self.schedule if p > n), None)

    @property
    def hash(self) -> str:
        """12 hex digits of the sha256 of the rule's canonical JSON (sorted keys, no spaces)
        with `DECISION_VERSION` under "decision": which rule, decided how, data was planned
        under."""
        text = json.dumps({**asdict(self), "decision": DECISION_VERSION}, sort_keys=True,
                          separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Estimate:
    """The measured effect in the rule's metric: mean, 95% CI, the number of paired seeds (or
    repeats) and the per-seed sd (None without a spread)."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    sd: float | None = None

    @classmethod
    def of(cls, interval: Interval) -> Estimate:
        return cls(interval.mean, interval.ci_low, interval.ci_high, interval.n, interval.sd)

    @classmethod
    def from_interval(cls, value: float | None, low: float | None, high: float | None,
                      n: int) -> Estimate:
        """From a 95% interval that is not a Student-t interval of a mean (a ratio's): the sd
        whose t interval has the same half width, sd ≈ half·√n / t_{0.975, n−1}."""
        sd = None
        if value is not None and low is not None and high is not None and n >= 2:
            sd = (high - low) / 2 * math.sqrt(n) / float(sps.t.ppf(1 - ALPHA / 2, n - 1))
        return cls(value, low, high, n, sd)

    @property
    def resolved(self) -> bool:
        return self.value is not None and self.ci_low is not None and self.ci_high is not None

    def text(self) -> str:
        """'+v [+lo, +hi] (n=k)' to 3 significant digits, '+v (n=k)' without an interval,
        or '—'."""
        if self.value is None:
            return "—"
        if self.ci_low is None or self.ci_high is None:
            return f"{self.value:+.3g} (n={self.n})"
        return f"{self.value:+.3g} [{self.ci_low:+.3g}, {self.ci_high:+.3g}] (n={self.n})"


# --- the sequential design -----------------------------------------------------------------------
def looks(rule: Rule, n: int) -> tuple[int, ...]:
    """The looks a part with `n` paired seeds has had: the schedule's points below n (each
    counted as taken: more looks only make the level stricter), then n; (n,) for a fixed
    design."""
    if n < 1:
        return ()
    if rule.max_seeds is None:
        return (n,)
    return (*(p for p in rule.schedule if p < n), n)


def look_level(rule: Rule, n: int, alpha: float = ALPHA) -> float:
    """The two-sided level of the look at `n` paired seeds: its increment of the rule's
    spending function α*(t) (`blocklab.stats.spent_by`, O'Brien–Fleming by default),

        level = α*(n / max_seeds) − α*(n_prev / max_seeds),   n_prev the look before (`looks`)

    The levels sum to at most alpha whatever the looks' dependence. Past max_seeds a look is
    read as the last; `alpha` for a fixed design; 0 before the one look of spending "fixed"."""
    taken = looks(rule, n)
    if rule.max_seeds is None or len(taken) == 0:
        return alpha
    if n >= rule.max_seeds:
        last = rule.schedule[-2] / rule.max_seeds if len(rule.schedule) > 1 else 0.0
        return alpha - _spent(last, alpha, rule.spending)
    before = taken[-2] / rule.max_seeds if len(taken) > 1 else 0.0
    return (_spent(n / rule.max_seeds, alpha, rule.spending)
            - _spent(before, alpha, rule.spending))


@functools.lru_cache(maxsize=4096)
def _spent(fraction: float, alpha: float, spending: str = "obf") -> float:
    return 0.0 if fraction <= 0 else stats.spent_by(spending, fraction, alpha)


@dataclass(frozen=True)
class Decision:
    """A part's decision by its rule, with the reason in words."""

    verdict: str
    reason: str
    # the decisive reading's two-sided p (decided when < level); None without a test
    p_value: float | None = None
    level: float = ALPHA  # the two-sided α it was read at (its look's, at its Holm share)
    boundary: float | None = None  # b in the metric's own units and sign
    # an inconclusive part: the effect its seeds detect with 80% power at the observed spread,
    # and the seeds that would decide it (None: more than MAX_SEEDS, or no spread)
    detectable_effect: float | None = None
    seeds_needed: int | None = None
    # wholly beyond δ on the opposite side with fair arms, no 2× longer run agreeing yet: due
    would_contradict: bool = False
    # what the decisive reading read: the (1 − level) interval, or the (1 − 2·level) one of
    # two one-sided tests; None without an interval (n < 2)
    interval: DecidingInterval | None = None
    # (verdict, p) of each verdict's most decisive reading, made before the rule's minimum
    # seeds or level are applied: what `decide` reads an lr bias by (empty without a reading).
    p_by_verdict: tuple[tuple[str, float], ...] = ()
    # Why the arms' bias could not be read (`decide`'s `unfair`): the part was never to be
    # confirmed, and the plan buys it no more seeds.
    unfair: str | None = None


@dataclass(frozen=True)
class DecidingInterval:
    """The interval a part was decided on, in the metric's units: the stored 95% interval's
    arms rescaled to `confidence` (1 − level, or 1 − 2·level for two one-sided tests)."""

    low: float
    high: float
    confidence: float

    @property
    def label(self) -> str:
        """'99.64% CI': the coverage to the digits that tell it apart from 95%."""
        return f"{confidence_text(self.confidence)} CI"

    @property
    def bracket(self) -> str:
        return f"[{self.low:+.3g}, {self.high:+.3g}]"


def confidence_text(confidence: float) -> str:
    """A coverage as a percentage with two significant digits of what it misses: 95%, 99.64%,
    99.978%."""
    miss = 100 * (1 - confidence)
    if not 0 < miss < 100:
        return f"{100 * confidence:g}%"
    decimals = max(0, 1 - math.floor(math.log10(miss)))
    return f"{100 - miss:.{decimals}f}".rstrip("0").rstrip(".") + "%"


# --- one part ------------------------------------------------------------------------------------
def _side_and_boundary(rule: Rule) -> tuple[float, float]:
    """(s, b): the claimed side's sign and the boundary in oriented units (s·effect > b is the
    claim); not for equivalence."""
    if rule.test == "at-most":  # effect < t  ⇔  −effect > −t
        return -1.0, -rule.threshold
    if rule.test == "at-least":  # effect > t
        return 1.0, rule.threshold
    if rule.claimed == 0:
        raise InputError(f"rule {rule.metric!r}: an effect claim needs a nonzero `claimed` "
                         "(its sign is the claimed side); a claim of no effect is an "
                         "'equivalence' test")
    s = 1.0 if rule.claimed > 0 else -1.0
    return s, max(abs(rule.smallest_effect), s * rule.threshold)


def claimed_side(rule: Rule) -> float | None:
    """The sign of the claimed side (− for "at most t"); None for a band."""
    return None if rule.test == "equivalence" else _side_and_boundary(rule)[0]


def claimed_boundary(rule: Rule) -> float:
    """`Decision.boundary`: b in the metric's own units and sign."""
    s, b = _side_and_boundary(rule)
    return s * b


@functools.lru_cache(maxsize=4096)
def _t_quantile(q: float, df: int) -> float:
    """Student t's q quantile (cached: the same few are asked for at every look)."""
    return float(special.stdtrit(df, q))  # = scipy.stats.t.ppf(q, df)


def _p_above(x: float, se: float, df: int) -> float:
    """Two-sided-scale p of the one-sided test that the effect is ≤ 0, given the estimate
    exceeds the null by x with standard error se: 2·P(T_df ≥ x / se), capped at 1."""
    if se <= 0:
        return 0.0 if x > 0 else 1.0
    # scipy.stats.t.sf without the distribution object's argument checks (a hot path)
    return min(1.0, 2 * float(special.stdtr(df, -x / se)))


def _p_below(x: float, se: float, df: int) -> float:
    """2·P(T_df ≤ x / se): the p that the effect is ≥ 0 when the estimate is x from it."""
    return _p_above(-x, se, df)


def _tost(m: float, low_edge: float, high_edge: float, se_lo: float, se_hi: float,
          df: int) -> float:
    """p of two one-sided tests that the effect lies inside (low_edge, high_edge): the larger
    one-sided p; < level exactly when the (1 − 2·level) interval lies inside."""
    return max(_p_above(m - low_edge, se_lo, df), _p_below(m - high_edge, se_hi, df)) / 2


def decide(rule: Rule, estimate: Estimate, alpha: float = ALPHA, *, fair_arms: bool = False,
           longer_run_agrees: bool = False, explain: bool = True,
           share: float | None = None, unfair: str | None = None,
           bias: float | None = None) -> Decision:
    """`decide_read`, standing only where every reading of the arms' learning-rate `bias`
    (`claims.lr_bias`) gives it: read as measured and with the whole bias removed (the verdict
    is monotone in the shift), one verdict stands with the larger p, two give `inconclusive`.
    `unfair`: why the bias cannot be read; the confirming reading is then never made."""
    if alpha <= 0:  # a "fixed" design read before its one look at max_seeds
        return Decision(INCONCLUSIVE, f"{estimate.n} paired seed(s) are no look of its design "
                                      f"(one look, at {rule.max_seeds} seeds)", None, alpha,
                        None if rule.test == "equivalence" else claimed_boundary(rule))
    found = decide_read(rule, estimate, alpha, fair_arms=fair_arms,
                        longer_run_agrees=longer_run_agrees, explain=explain, share=share,
                        unfair=unfair)
    if not bias or not estimate.resolved:
        return found
    e = estimate
    fair = decide_read(rule, Estimate(e.value - bias, e.ci_low - bias, e.ci_high - bias, e.n,
                                      e.sd), alpha, fair_arms=fair_arms,
                       longer_run_agrees=longer_run_agrees, explain=False, share=share,
                       unfair=unfair)
    # Each verdict's p is the larger of its two readings', the part's the smallest of those: a
    # part the bias keeps undecided sorts late in Holm's order.
    one, two = dict(found.p_by_verdict), dict(fair.p_by_verdict)
    ps = {v: max(one[v], two[v]) for v in one.keys() & two.keys()}
    p = min(ps.values()) if ps else None
    if fair.verdict == found.verdict:
        if found.verdict == INCONCLUSIVE:
            return found if found.p_value is None else replace(found, p_value=p)
        return replace(found, p_value=ps.get(found.verdict, p),
                       would_contradict=found.would_contradict and fair.would_contradict,
                       reason=f"{found.reason}; it stands with the tuned rates' bias "
                              f"{bias:+.3g} removed too")
    why = (f"read as measured it is {found.verdict}, with the tuned rates' bias {bias:+.3g} "
           f"removed {fair.verdict}: a decision stands only where every reading of the bias "
           "gives it")
    sd = e.sd if e.sd is not None else Estimate.from_interval(e.value, e.ci_low, e.ci_high,
                                                              e.n).sd
    detectable = None
    if explain and sd is not None and sd > 0 and e.n >= 2:
        # more seeds do not remove a bias every seed shares: no count of seeds is promised
        detectable = stats.detectable_effect(sd, e.n, power=POWER, alpha=alpha)
        why += (f"; {e.n} seeds detect an effect of {detectable:.3g} (80% power at sd "
                f"{sd:.3g}), and no number of seeds removes a bias every seed shares: a finer "
                "tuning grid would")
    return Decision(INCONCLUSIVE, why, p, alpha, found.boundary, detectable,
                    interval=found.interval)


def decide_read(rule: Rule, estimate: Estimate, alpha: float = ALPHA, *,
                fair_arms: bool = False, longer_run_agrees: bool = False,
                explain: bool = True, share: float | None = None,
                unfair: str | None = None) -> Decision:
    """The decision on `estimate` under `rule` at two-sided level `alpha` (the module
    docstring's table), read on the stored 95% interval's arms rescaled by
    t_{1−alpha/2} / t_{0.975}. A contradiction needs `fair_arms` and `longer_run_agrees`;
    `explain=False` leaves out the (slow) seeds that would decide an inconclusive part;
    `share`, the part's Holm share of α, sizes them at its future looks."""
    e, n = estimate, estimate.n
    design = None if share is None else (rule, share)
    if rule.test == "equivalence":
        low_edge, high_edge = rule.claimed - rule.margin, rule.claimed + rule.margin
        b = None
    else:
        s, b = _side_and_boundary(rule)
    boundary = None if b is None else s * b
    if not e.resolved or n < 2:
        return Decision(INCONCLUSIVE, f"{n} seed(s) give no interval; the rule needs at least "
                                      f"{rule.min_seeds}", None, alpha, boundary)
    df = n - 1
    # standard errors below and above the value, read off the 95% interval's two arms
    t95 = _t_quantile(1 - ALPHA / 2, df)
    se_lo, se_hi = (e.value - e.ci_low) / t95, (e.ci_high - e.value) / t95
    sd = e.sd if e.sd is not None else (se_lo + se_hi) / 2 * math.sqrt(n)
    ci = _rescaled(e.value, se_lo, se_hi, df, 1 - alpha)  # two-sided readings
    tost = _rescaled(e.value, se_lo, se_hi, df, 1 - 2 * alpha)  # two one-sided tests
    # (p, verdict, reason, the interval it reads)
    readings: list[tuple[float, str, str, DecidingInterval]] = []
    if rule.test == "equivalence":
        m = e.value
        band = f"[{low_edge:g}, {high_edge:g}]" if rule.claimed else f"±{rule.margin:g}"
        if not unfair:
            readings.append((_tost(m, low_edge, high_edge, se_lo, se_hi, df), CONFIRMED,
                             f"the {tost.label} {tost.bracket} lies inside {band} (two "
                             "one-sided tests)", tost))
        readings.append((min(_p_below(m - low_edge, se_hi, df),
                             _p_above(m - high_edge, se_lo, df)), NOT_REPRODUCED,
                         f"the {ci.label} {ci.bracket} lies wholly outside {band}", ci))
        distance = min(abs(m - low_edge), abs(m - high_edge))
    else:
        # oriented: the claimed side positive
        m = s * e.value
        lo_se, hi_se = (se_lo, se_hi) if s > 0 else (se_hi, se_lo)
        where, short = ("beyond", "short of") if s > 0 else ("below", "above")
        if not unfair:
            readings.append((_p_above(m - b, lo_se, df), CONFIRMED,
                             f"the {ci.label} {ci.bracket} lies wholly {where} {boundary:g} on "
                             "the claimed side", ci))
        readings.append((_p_below(m - b, hi_se, df), NOT_REPRODUCED,
                         f"the {ci.label} {ci.bracket} lies wholly {short} {boundary:g}: an "
                         "effect may remain, smaller than claimed", ci))
        if rule.test == "effect" and rule.margin > 0:
            readings.append((_tost(e.value, -rule.margin, rule.margin, se_lo, se_hi, df),
                             NOT_REPRODUCED, f"the {tost.label} {tost.bracket} lies inside "
                                             f"±{rule.margin:g} (no effect)", tost))
        distance = abs(m - b)
    p, verdict, reason, read = min(readings, key=lambda r: r[0])
    by = {v: min(r[0] for r in readings if r[1] == v) for v in {r[1] for r in readings}}
    if n < rule.min_seeds:
        return _with_ps(by, _inconclusive(
            f"{n} paired seed(s); the rule needs at least {rule.min_seeds} before it reads the "
            f"{ci.label} {ci.bracket}", None, alpha, boundary, sd, n, distance, rule.min_seeds,
            ci, explain, design))
    if p >= alpha:
        if rule.test == "equivalence":
            why = (f"the {read.label} {read.bracket} lies neither inside {band} nor wholly "
                   "outside it")
        else:  # the two-sided interval across b (no reading decides, the TOST's neither)
            why = f"the {ci.label} {ci.bracket} straddles the claim's boundary {boundary:g}"
            read = ci
        if unfair:
            why += f" (never confirmed here: {unfair})"
        return _with_ps(by, _inconclusive(why, p, alpha, boundary, sd, n, distance,
                                          rule.min_seeds, read, explain, design))
    if verdict == NOT_REPRODUCED and rule.test == "effect":
        delta = abs(rule.smallest_effect)
        p_opposite = _p_below(m + delta, hi_se, df)
        if p_opposite < alpha:
            why = (f"the {ci.label} {ci.bracket} lies wholly beyond {-s * delta:g}, δ on the "
                   "opposite side")
            if fair_arms and longer_run_agrees:
                return _with_ps(by, Decision(CONTRADICTED, why, p, alpha, boundary, interval=ci))
            missing = [text for done, text in (
                (fair_arms, "each arm at its own best learning rate"),
                (longer_run_agrees, "a 2× longer run")) if not done]
            verb = "has" if len(missing) == 1 else "have"
            return _with_ps(by, Decision(
                NOT_REPRODUCED, f"would be contradicted ({why}); {' and '.join(missing)} {verb} "
                "not confirmed it", p, alpha, boundary, would_contradict=fair_arms,
                interval=ci))
    return _with_ps(by, Decision(verdict, reason, p, alpha, boundary, interval=read))


def _with_ps(by: dict[str, float], found: Decision) -> Decision:
    """`found` with the p of each verdict's readings (what `decide` reads the bias by)."""
    return replace(found, p_by_verdict=tuple(sorted(by.items())))


def _rescaled(value: float, se_lo: float, se_hi: float, df: int,
              confidence: float) -> DecidingInterval:
    """The two-sided `confidence` interval of a value whose standard errors below and above
    are se_lo, se_hi (Student t, df degrees of freedom)."""
    t = _t_quantile(0.5 + confidence / 2, df)
    return DecidingInterval(value - t * se_lo, value + t * se_hi, confidence)


def _inconclusive(why: str, p: float | None, alpha: float, boundary: float | None,
                  sd: float, n: int, distance: float, min_seeds: int,
                  interval: DecidingInterval | None = None, explain: bool = True,
                  design: tuple[Rule, float] | None = None) -> Decision:
    """An inconclusive decision with what the spent seeds could detect and what would decide
    it (80% power, two-sided at `alpha`; left out unless `explain`); with `design` (rule, Holm
    share of α) at the level of the look that would decide it (`_seeds_to_decide`)."""
    if not explain:
        return Decision(INCONCLUSIVE, why, p, alpha, boundary, interval=interval)
    if not (sd > 0 and math.isfinite(sd)):
        return Decision(INCONCLUSIVE, f"{why}; no spread to size it by", p, alpha, boundary,
                        interval=interval)
    detectable = stats.detectable_effect(sd, n, power=POWER, alpha=alpha)
    if design is not None and design[0].max_seeds is not None:
        needed = _seeds_to_decide(design[0], n, sd, distance, design[1])
    else:
        needed = (stats.seeds_needed(distance, sd, power=POWER, alpha=alpha, max_n=MAX_SEEDS)
                  if distance > 0 else None)
    if needed is not None:
        needed = max(needed, min_seeds)
    more = f"{needed}" if needed is not None else f"more than {MAX_SEEDS:,}"
    if design is not None and design[0].max_seeds is not None and (
            needed is None or needed > design[0].max_seeds):
        more += f" (past its design's {design[0].max_seeds})"
    return Decision(INCONCLUSIVE, f"{why}; {n} seeds detect an effect of {detectable:.3g} "
                                  f"(80% power at sd {sd:.3g}), and about {more} would decide "
                                  "it at this spread", p, alpha, boundary, detectable, needed,
                    interval=interval)


def _seeds_to_decide(rule: Rule, n: int, sd: float, distance: float,
                     share: float) -> int | None:
    """The fewest seeds n' > n whose look decides a part `distance` from its boundary with
    80% power at that look's level (at the part's Holm share of α; past max_seeds the last
    share). None: more than MAX_SEEDS, or no distance to detect."""
    if not distance > 0:
        return None
    for m in range(max(n + 1, rule.min_seeds), rule.max_seeds + 1):
        level = look_level(rule, m, share)
        if level > 0 and stats.power(distance, sd, m, alpha=level) >= POWER:
            return m
    last = look_level(rule, rule.max_seeds, share)
    return stats.seeds_needed(distance, sd, power=POWER, alpha=last, max_n=MAX_SEEDS)


# --- the parts of one claim ---------------------------------------------------------------------
def decide_parts(parts: Sequence[Any], alpha: float = ALPHA, *,
                 fair_arms: bool | Sequence[bool] = False,
                 longer_run_agrees: bool | Sequence[bool] = False,
                 explain: bool = True,
                 unfair: Sequence[str | None] | None = None,
                 bias: Sequence[float | None] | None = None) -> list[Decision]:
    """The decisions on a claim's parts ((rule, estimate) pairs, or objects with both), in
    their order, with the group-sequential Holm procedure (Ye, Li, Jiang & Wang 2013).

    Ordered by p_k / a_k (a_k its look's level at alpha; p = 1 without a test), test (i) of m
    is decided at its look's level in its design computed at alpha / (m − i + 1) while every
    earlier one was decided; from the first undecided on, all are inconclusive. m counts
    tests, not parts: parts that read one estimate against one threshold (`same_test`) take
    one rank and one level."""
    pairs = [(p.rule, p.estimate) if hasattr(p, "rule") else tuple(p) for p in parts]
    agrees = _flags(longer_run_agrees, len(pairs), "longer_run_agrees")
    fair = _flags(fair_arms, len(pairs), "fair_arms")
    why_unfair, biases = ([None] * len(pairs) if v is None else list(v) for v in (unfair, bias))
    for name, given in (("unfair", why_unfair), ("bias", biases)):
        if len(given) != len(pairs):
            raise ValueError(f"{name} has {len(given)} entries for {len(pairs)} parts")
    # Below min_seeds a part is undecided whatever its level: read at the first look's.
    bases = [look_level(rule, max(est.n, rule.min_seeds), alpha) for rule, est in pairs]
    first = [decide(rule, est, base, fair_arms=fair[k], longer_run_agrees=agrees[k],
                    explain=False, unfair=why_unfair[k], bias=biases[k])
             for k, ((rule, est), base) in enumerate(zip(pairs, bases, strict=True))]
    tests = _tests(pairs)
    m = len(tests)

    def rank(j: int) -> tuple[bool, float, int]:
        # no test, or no look of its design (level 0: "fixed" before its look): sorts last
        p, base = first[tests[j][0]].p_value, bases[tests[j][0]]
        last = p is None or base <= 0
        return last, 1.0 if last else p / base, j

    order = sorted(range(m), key=rank)
    out: list[Decision | None] = [None] * len(pairs)
    stopped_at: int | None = None
    for i, j in enumerate(order):
        undecided = False
        for k in tests[j]:
            rule, est = pairs[k]
            # the design computed at Holm's share α/(m − i), not the design at α divided by
            # m − i (an O'Brien–Fleming nominal level shrinks faster than α does)
            level = look_level(rule, max(est.n, rule.min_seeds), alpha / (m - i))
            found = decide(rule, est, level, fair_arms=fair[k], longer_run_agrees=agrees[k],
                           explain=explain, share=alpha / (m - i), unfair=why_unfair[k],
                           bias=biases[k])
            notes = []
            if bases[k] < alpha and est.n >= rule.min_seeds:
                taken = looks(rule, est.n)
                notes.append(f"look {len(taken)} of the sequential design at n = "
                             f"{', '.join(map(str, taken))} (max {rule.max_seeds}), read at "
                             f"α = {bases[k]:.3g}")
            if m > 1:
                notes.append(f"Holm: test {i + 1} of {m} by p, its design at α/{m - i}, "
                             f"read at α = {level:.3g}")
            if len(tests[j]) > 1:
                notes.append(f"one test with {len(tests[j]) - 1} other part(s) of this claim "
                             "that read the same interval against the same threshold")
            holm = f" ({'; '.join(notes)})" if notes else ""
            if stopped_at is not None and found.verdict != INCONCLUSIVE:
                found = _stopped(found, rule, est, level, stopped_at, explain, alpha / (m - i))
            out[k] = replace(found, reason=found.reason + holm, unfair=why_unfair[k])
            undecided = undecided or found.verdict == INCONCLUSIVE
        if stopped_at is None and undecided:
            stopped_at = i + 1
    return [d for d in out if d is not None]


def same_test(a: tuple[Rule, Estimate], b: tuple[Rule, Estimate]) -> bool:
    """Whether two parts are one two-sided test: one estimate of one metric read against one
    threshold under one sequential design, each claiming "at most t" or "at least t": each one's
    wrong decision is the other's."""
    (ra, ea), (rb, eb) = a, b
    return (ra.test in ("at-most", "at-least") and rb.test in ("at-most", "at-least")
            and ra.metric == rb.metric and ra.threshold == rb.threshold
            and (ra.min_seeds, ra.max_seeds) == (rb.min_seeds, rb.max_seeds)
            and ea == eb and ea.resolved)


def _tests(pairs: Sequence[tuple[Rule, Estimate]]) -> list[list[int]]:
    """The parts' indices grouped into distinct tests (`same_test`), in first-seen order."""
    groups: list[list[int]] = []
    for k, pair in enumerate(pairs):
        home = next((g for g in groups if same_test(pairs[g[0]], pair)), [])
        if not home:
            groups.append(home)
        home.append(k)
    return groups


def _flags(value: bool | Sequence[bool], m: int, name: str) -> list[bool]:
    flags = [bool(value)] * m if isinstance(value, bool) else [bool(v) for v in value]
    if len(flags) != m:
        raise ValueError(f"{name} has {len(flags)} flags for {m} parts")
    return flags


def boundary_distance(rule: Rule, value: float) -> float:
    """How far `value` lies from the claim's boundary b (for a band, its nearer edge)."""
    if rule.test == "equivalence":
        return min(abs(value - rule.claimed + rule.margin),
                   abs(value - rule.claimed - rule.margin))
    s, b = _side_and_boundary(rule)
    return abs(s * value - b)


def _stopped(found: Decision, rule: Rule, est: Estimate, level: float, at: int,
             explain: bool = True, share: float | None = None) -> Decision:
    """A part after Holm's procedure stopped: inconclusive, with what alone it would be."""
    sd = est.sd if est.sd is not None else Estimate.from_interval(
        est.value, est.ci_low, est.ci_high, est.n).sd
    distance = boundary_distance(rule, est.value)
    return _inconclusive(f"Holm's step-down stopped at test {at}, which was not decided "
                         f"(alone this part would be {found.verdict})", found.p_value, level,
                         found.boundary, sd or 0.0, est.n, distance, rule.min_seeds,
                         found.interval, explain, None if share is None else (rule, share))


# --- a claim's graded parts, and its verdict from theirs -----------------------------------------
@dataclass(frozen=True)
class Part:
    """One graded part of an experimental claim: its registered rule, the estimate in the
    rule's metric, and the verdict the rule gives it (`decision` holds the test behind it:
    p-value, level, and for an inconclusive part what would decide it; None for a part
    decided without a test, such as an analytic fact or a model that cannot run)."""

    name: str
    rule: Rule
    estimate: Estimate
    verdict: str
    reason: str
    decision: Decision | None = None
    # the hash of the rule its data was planned under, where that differs from `rule`'s
    planned_under: str | None = None

    @classmethod
    def of(cls, name: str, rule: Rule, estimate: Estimate, decision: Decision) -> Part:
        return cls(name, rule, estimate, decision.verdict, decision.reason, decision)

    @classmethod
    def decided_together(cls, specs: Sequence[PartSpec | Part],
                         fair_arms: bool | list[bool] = False,
                         longer_run_agrees: bool | list[bool] = False,
                         unfair: list[str | None] | None = None,
                         bias: list[float | None] | None = None) -> list[Part]:
        """A claim's parts decided with Holm's correction (`decide_parts`), in the order
        given: each spec is (name, rule, estimate), or a Part decided without a test, kept as
        it is and not counted in the correction. Flags: one, or one per spec."""
        tested = [s for s in specs if not isinstance(s, Part)]

        def of_tested(values):  # one value for every spec, or one per spec: the tested ones'
            return values if values is None or isinstance(values, bool) else [
                v for s, v in zip(specs, values, strict=True) if not isinstance(s, Part)]

        found = iter(decide_parts([(rule, est) for _, rule, est in tested], ALPHA,
                                  fair_arms=of_tested(fair_arms),
                                  longer_run_agrees=of_tested(longer_run_agrees),
                                  unfair=of_tested(unfair), bias=of_tested(bias)))
        return [s if isinstance(s, Part) else cls.of(s[0], s[1], s[2], next(found))
                for s in specs]

    def to_dict(self) -> dict[str, Any]:
        """The part as the ledger's JSON gives it, keys in this order."""
        d = self.decision
        out = {
            "name": self.name, "decision": self.verdict, "verdict": self.verdict,
            "reason": self.reason, "estimate": asdict(self.estimate),
            "looks": list(looks(self.rule, self.estimate.n)),
            "rule": asdict(self.rule), "rule_hash": self.rule.hash,
            "rule_changed_after_data": self.planned_under,
            "p_value": None if d is None else d.p_value,
            "level": None if d is None else d.level,
            "boundary": None if d is None else d.boundary,
            "interval": None if d is None or d.interval is None else asdict(d.interval)}
        if self.verdict == INCONCLUSIVE:
            out["detectable_effect"] = None if d is None else d.detectable_effect
            out["seeds_needed"] = None if d is None else d.seeds_needed
        return out


UNLEARNED = "did not learn"  # how `unless_unlearned` begins its reason


def verdict_text(part: Part, digits: int = 3, unit: str = "") -> str:
    """'<estimate> → <verdict>', and why where an arm did not learn (no measurement read)."""
    text = f"{decided_text(part, digits, unit)} → {part.verdict}"
    if part.verdict == UNTESTABLE and part.reason.startswith(UNLEARNED):
        text += f" ({part.reason.split(': ')[0]})"
    return text


def decided_text(part: Part, digits: int = 3, unit: str = "") -> str:
    """'+1.99 [+0.41, +3.57] (99.64% CI, n=5)': the estimate with the interval its decision
    read (else the stored 95% one); '+0.3 (n=1)' or '—' without one."""
    e = part.estimate
    if e.value is None:
        return "—"
    iv = None if part.decision is None else part.decision.interval
    if iv is not None:
        low, high, label = iv.low, iv.high, iv.label
    elif e.ci_low is not None and e.ci_high is not None:
        low, high, label = e.ci_low, e.ci_high, "95% CI"
    else:
        return f"{e.value:+.{digits}g}{unit} (n={e.n})"
    return (f"{e.value:+.{digits}g}{unit} [{low:+.{digits}g}, {high:+.{digits}g}] "
            f"({label}, n={e.n})")


# A part still to be decided, with the others of its claim (`Part.decided_together`).
PartSpec = tuple[str, Rule, Estimate]


def settle(verdicts: list[str], rule: Callable[[list[str]], str], limit: int = 16) -> str:
    """A claim's verdict from its parts' by `rule` (a function of fully decided parts): the
    verdict every way of deciding the inconclusive parts (confirmed, or not reproduced) gives
    alike, else `inconclusive` (so too beyond `limit` inconclusive parts)."""
    open_at = [i for i, v in enumerate(verdicts) if v == INCONCLUSIVE]
    if not open_at:
        return rule(verdicts)
    if len(open_at) > limit:
        return INCONCLUSIVE
    outcomes = set()
    for fill in itertools.product((CONFIRMED, NOT_REPRODUCED), repeat=len(open_at)):
        filled = dict(zip(open_at, fill, strict=True))
        outcomes.add(rule([filled.get(i, v) for i, v in enumerate(verdicts)]))
        if len(outcomes) > 1:
            return INCONCLUSIVE
    return outcomes.pop()


# Rules for `settle` shared by several claims: each maps fully decided parts to a verdict.
def none_held(verdicts: list[str]) -> str:
    """Untestable when no part could be tested, refuted when an exact part is, else not
    reproduced."""
    if all(v == UNTESTABLE for v in verdicts):
        return UNTESTABLE
    return REFUTED if REFUTED in verdicts else NOT_REPRODUCED


def all_or_none(verdicts: list[str]) -> str:
    """Confirmed when every part is, mixed when some are, else `none_held`."""
    held = sum(v == CONFIRMED for v in verdicts)
    return (CONFIRMED if held == len(verdicts) else MIXED if held else none_held(verdicts))


def testable_all_or_none(verdicts: list[str]) -> str:
    """`all_or_none` over the testable parts; an untestable one beside confirmed ones: mixed."""
    testable = [v for v in verdicts if v != UNTESTABLE]
    if not testable:
        return UNTESTABLE
    verdict = all_or_none(testable)
    return MIXED if verdict == CONFIRMED and len(testable) < len(verdicts) else verdict


def majority(verdicts: list[str]) -> str:
    """Confirmed when every part is, `none_held` when more than half are not, else mixed."""
    held = sum(v == CONFIRMED for v in verdicts)
    if held == len(verdicts):
        return CONFIRMED
    if len(verdicts) - held > len(verdicts) / 2:
        return NOT_REPRODUCED if held else none_held(verdicts)
    return MIXED


# Parts that some outcome decides without a test (so outside Holm's correction).
def failed_runs_part(name: str, rule: Rule, interval: Interval, failures: int
                     ) -> Part | PartSpec:
    """Not reproduced where pre-norm runs failed (decided by the count), else the spec."""
    if failures:
        return Part(name, rule, Estimate.of(interval), "not-reproduced-at-this-scale",
                    f"{failures} pre-norm run(s) failed")
    return (name, rule, Estimate.of(interval))


def with_failed_seeds(part: Part, status: Mapping[str, Mapping[str, int]]) -> Part:
    """`part` with the runs that failed on its arms ({arm: {status: runs}}) counted in its
    reason: missing data, shown, never hidden in n."""
    counted = {arm: k for arm, runs in status.items() if (k := failed_count(dict(runs)))}
    if not counted:
        return part
    total = sum(counted.values())
    where = ", ".join(f"{arm} {k}" for arm, k in counted.items())
    return replace(part, reason=f"{part.reason}; {total} run(s) failed (diverged, stuck or did not learn: "
                                f"{where}): missing data, left out of the pairs")


def unless_unlearned(spec: PartSpec, unlearned: Mapping[str, tuple[int, int]]) -> Part | PartSpec:
    """`spec`, or untestable here where an arm it reads did not learn on most of its seeds
    ({arm: (seeds it did not learn on, seeds it ran)}): such a model measures nothing."""
    name, rule, estimate = spec
    dead = [f"{arm} on {k} of {n}" for arm, (k, n) in unlearned.items() if n and 2 * k > n]
    if not dead:
        return spec
    return Part(name, rule, estimate, UNTESTABLE,
                f"{UNLEARNED} ({'; '.join(dead)} seeds): short of the registered share of "
                "the way from the unigram to the bigram reference; no measurement is read "
                "from a model that did not learn")


def band_part(name: str, arm: PositionArm | None, mult: str, want: str, rule: Rule
              ) -> Part | PartSpec:
    """One statement about an arm at a multiple of L: the spec to decide by `rule`, or a Part
    decided without a test where the arm cannot run there (it collapses) or was not read."""
    pct = None if arm is None else arm.extrapolated_vs_sliding_pct.get(mult)
    if arm is None or pct is None:  # not read (never "cannot run": that is only UNAVAILABLE)
        return Part(name, rule, Estimate(None, None, None, 0), INCONCLUSIVE,
                    "not read" if arm is None else f"not read at {mult}×")
    if isinstance(pct, str):
        if pct != UNAVAILABLE:  # a bug in the suite, never a verdict
            raise RuntimeError(f"{name}: the reading at {mult}× is {pct!r}, neither a number nor "
                             f"{UNAVAILABLE!r}")
        held = want in ("collapses", "drops")
        return Part(name, rule, Estimate(None, None, None, 0),
                    "confirmed" if held else "not-reproduced-at-this-scale",
                    "the model cannot run there: it collapses" + ("" if held else
                                                                 f", not {want}"))
    return (name, rule, Estimate.of(pct))
