"""Sequential designs chosen by simulation: each claim's parts run look by look, as the report
runs them, under each spending function a rule may name (`blocklab.stats.SPENDINGS`).

What is simulated. A claim's parts with a sequential design (max_seeds set) at a suite size
are run look by look through `rules.decide_parts`, as the report grades them: every part is
read at every look, a part still inconclusive gets seeds up to the next point of its schedule,
a decided part stops, and the claim stops when no open part has a next look. Parts decided
without a test (max_seeds None) are left out, as they are of Holm's correction. Decisions are
read with fair arms and no longer run, so an interval wholly beyond δ on the opposite side is
"not reproduced" with `would_contradict`, never "contradicted".

The data. Each estimate is the mean of per-seed differences d = truth + sd·z, z standardized
from one of DISTRIBUTIONS: normal; lognormal with σ = 0.5 (centred, scaled to sd 1, its tail
on the positive side); Student t with 3 df scaled to sd 1. The per-seed sd is |b|, b the
rule's `claimed_boundary` (for a band, sd = its margin). Parts that compare arms with one
shared baseline (SHARED_CONTROL: C16's gated arms against relu) are correlated through it:
z_k = √(1 − ρ)·u_k + √ρ·v, ρ = 0.5 (equal arm variances). Parts that read one estimate
against one threshold (`rules.same_test`) read the same draws; others are independent. Every
design and scenario reads the same draws (common random numbers).

The scenarios. Every part at the same multiple x of its boundary, x in SCENARIOS = 0, ½, 1,
1½, 2 (an effect: truth = x·b on the claimed side; a bound t: truth = x·t; a band claimed ±
margin: truth = claimed + x·margin); x = 1 is the worst case for both errors at once. A
decision is wrong (`wrong`) when it is confirmed and the truth is not beyond b (a band: not
inside it); not reproduced and the truth is not short of b (a band: not outside it); or not
reproduced with `would_contradict` and the truth not beyond −δ.

What is measured (`DesignResult`, per claim × design × distribution, over `reps` replicates):
the family-wise error (any part decided wrongly at any look; the worst scenario's and each
scenario's), the coverage of the deciding intervals (every final interval covers its truth;
the lowest scenario's), the expected parts decided at the end and the expected paired seeds
(means over the scenarios), against the worst case of every estimate at its last look. A rate
p over R replicates has Monte Carlo sd √(p(1 − p)/R): 0.34 points at p = 5%, R = 4000.

The criterion, registered before any table is computed (`choose`), at each claim's registered
rules of `--size quick`:

1. a design is eligible when its family-wise error (worst scenario) is ≤ 5% under each of the
   three distributions (the point estimate, its Monte Carlo sd stated beside it), and its
   expected seeds (worst distribution) are no more than every part's max_seeds;
2. among the eligible designs, the one with the most expected decided parts (mean over the
   scenarios and distributions) is chosen if it decides more than "obf" by more than 2 Monte
   Carlo sd of the paired difference (per replicate, same draws); otherwise "obf" is kept.
   If "obf" is not eligible, the eligible design deciding most is chosen; if none is, "obf"
   is kept and the note says so.
3. Where the plain 95% t interval of one part's per-seed differences misses its mean more
   than 5% of the time under lognormal or t3 at the claim's real n (min_seeds … max_seeds),
   the notes say so (`interval_misses`): the fix belongs to the metric's interval.

Deterministic: a seeded numpy Generator per claim and distribution (`claim_seed`).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats as sps

from blocklab import stats
from blocklab.claims.catalogue import SUITE_OF
from blocklab.claims.registry import registered
from blocklab.claims.rules import (
    ALPHA,
    CONFIRMED,
    CONTRADICTED,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    Decision,
    Estimate,
    Rule,
    claimed_boundary,
    claimed_side,
    decide_parts,
)
from blocklab.errors import InputError

DESIGNS = stats.SPENDINGS  # every spending function a rule may name
DISTRIBUTIONS = ("normal", "lognormal", "t3")
SCENARIOS = (0.0, 0.5, 1.0, 1.5, 2.0)  # the true effects, as multiples of each part's b
LOGNORMAL_SIGMA = 0.5
T_DF = 3
FWE_LIMIT = ALPHA
# Claims whose parts compare arms with one shared baseline arm, with the correlation of
# their per-seed differences through it (0.5: equal arm variances).
SHARED_CONTROL: dict[str, float] = {"C16": 0.5}
SEED = 20_261_205


@dataclass(frozen=True)
class DesignResult:
    """One claim under one design (`spending`) and one distribution of the per-seed
    differences, over `reps` replicates; the *_by_scenario tuples follow SCENARIOS."""

    claim: str
    spending: str
    distribution: str
    reps: int
    parts: int  # the seeded parts simulated
    estimates: int  # the estimates they read (parts reading one estimate share it)
    fwe: float  # the worst scenario's family-wise error
    fwe_by_scenario: tuple[float, ...]
    coverage: float  # the lowest scenario's
    coverage_by_scenario: tuple[float, ...]
    decided: float  # expected decided parts, mean over the scenarios
    decided_by_scenario: tuple[float, ...]
    seeds: float  # expected paired seeds, mean over the scenarios
    seeds_by_scenario: tuple[float, ...]
    worst_seeds: int  # every estimate at its last look

    @property
    def fwe_sd(self) -> float:
        return math.sqrt(self.fwe * (1 - self.fwe) / self.reps)


@dataclass(frozen=True)
class Choice:
    """The design `choose` picks for one claim, with the figures it was picked on."""

    claim: str
    spending: str
    decided: float  # expected decided parts, mean over scenarios and distributions
    obf_decided: float
    gain_sd: float  # Monte Carlo sd of (decided − obf's), paired by replicate
    fwe: float  # the chosen design's worst family-wise error over the distributions
    eligible: tuple[str, ...]
    note: str
    # For reference, not the criterion: the same rule applied to normal data alone (FWE ≤ 5%
    # under normal, decided parts under normal).
    normal_only: str = "obf"


@dataclass(frozen=True)
class ClaimModel:
    """A claim's seeded parts as the simulation runs them."""

    claim: str
    names: tuple[str, ...]
    rules: tuple[Rule, ...]
    stream: tuple[int, ...]  # the estimate each part reads
    scale: tuple[float, ...]  # per estimate: its per-seed sd in the metric's units
    unit: tuple[float, ...]  # per estimate: the truth at x = 1 minus the truth at x = 0
    origin: tuple[float, ...]  # per estimate: the truth at x = 0
    rho: float
    left_out: tuple[str, ...]  # parts not simulated, with why

    @property
    def estimates(self) -> int:
        return len(self.scale)


def claim_model(claim_id: str, size: str = "quick") -> ClaimModel | None:
    """The seeded parts of `claim_id` at `size` with their estimates' geometry; None when no
    part has a sequential design the report could decide (an analytic claim, a finding that
    claims nothing)."""
    return model_of(claim_id, registered(claim_id, size), SHARED_CONTROL.get(claim_id, 0.0))


def model_of(claim_id: str, parts: Mapping[str, Rule], rho: float = 0.0) -> ClaimModel | None:
    """`claim_model` of the parts {name: rule}, their differences correlated `rho` through
    a shared term (0: independent)."""
    names, rules, left = [], [], []
    for name, rule in parts.items():
        if rule.max_seeds is None:
            left.append(f"{name}: no sequential design (decided without one)")
            continue
        if rule.test != "equivalence":
            try:
                claimed_boundary(rule)
            except InputError:
                left.append(f"{name}: claims no side (a finding, not decided)")
                continue
        names.append(name)
        rules.append(rule)
    if not rules:
        return None
    keys: list[tuple] = []
    stream = []
    for k, rule in enumerate(rules):
        # parts that read one estimate against one threshold (rules.same_test) share it
        key = (("bound", rule.metric, rule.threshold, rule.min_seeds, rule.max_seeds)
               if rule.test in ("at-most", "at-least") else ("part", k))
        if key not in keys:
            keys.append(key)
        stream.append(keys.index(key))
    scale, unit, origin = [0.0] * len(keys), [0.0] * len(keys), [0.0] * len(keys)
    for k, rule in enumerate(rules):
        j = stream[k]
        if rule.test == "equivalence":
            scale[j], unit[j], origin[j] = rule.margin, rule.margin, rule.claimed
        else:
            b = claimed_boundary(rule)
            scale[j], unit[j], origin[j] = abs(b) or abs(rule.smallest_effect) or 1.0, b, 0.0
    return ClaimModel(claim_id, tuple(names), tuple(rules), tuple(stream), tuple(scale),
                      tuple(unit), tuple(origin), rho, tuple(left))


def standard_draws(distribution: str, rng: np.random.Generator,
                   shape: tuple[int, ...]) -> np.ndarray:
    """Draws of mean 0 and sd 1 from `distribution` (one of DISTRIBUTIONS)."""
    if distribution == "normal":
        return rng.standard_normal(shape)
    if distribution == "lognormal":
        s2 = LOGNORMAL_SIGMA ** 2
        mean, sd = math.exp(s2 / 2), math.sqrt(math.expm1(s2) * math.exp(s2))
        return (np.exp(LOGNORMAL_SIGMA * rng.standard_normal(shape)) - mean) / sd
    if distribution == "t3":
        return rng.standard_t(T_DF, shape) / math.sqrt(T_DF / (T_DF - 2))
    raise InputError(f"distribution {distribution!r} is not allowed; expected one of "
                     f"{list(DISTRIBUTIONS)}")


def noise(model: ClaimModel, distribution: str, reps: int,
          rng: np.random.Generator) -> np.ndarray:
    """Standardized per-seed noise [reps, estimates, max seeds], correlated ρ through a shared
    term where the claim's parts share a baseline arm."""
    top = max(r.max_seeds for r in model.rules)
    z = standard_draws(distribution, rng, (reps, model.estimates, top))
    if model.rho:
        shared = standard_draws(distribution, rng, (reps, 1, top))
        z = math.sqrt(1 - model.rho) * z + math.sqrt(model.rho) * shared
    return z


class EstimatesByLook:
    """Each estimate's `rules.Estimate` at n seeds in every replicate, as
    `stats.paired_interval` makes it (mean, 95% t interval, sd), built when first asked."""

    def __init__(self, data: np.ndarray) -> None:
        self.data = data  # [reps, estimates, max seeds], in the metric's units
        self.cache: dict[tuple[int, int], list[Estimate]] = {}

    def at(self, j: int, n: int) -> list[Estimate]:
        found = self.cache.get((j, n))
        if found is None:
            x = self.data[:, j, :n]
            mean = x.mean(axis=1)
            if n < 2:
                found = [Estimate(float(m), None, None, n) for m in mean.tolist()]
            else:
                sd = x.std(axis=1, ddof=1)
                half = float(sps.t.ppf(1 - ALPHA / 2, n - 1)) * sd / math.sqrt(n)
                found = [Estimate(m, m - h, m + h, n, s) for m, h, s in
                         zip(mean.tolist(), half.tolist(), sd.tolist(), strict=True)]
            self.cache[(j, n)] = found
        return found


def wrong(rule: Rule, decision: Decision, truth: float) -> bool:
    """Whether `decision` is wrong when the part's true effect is `truth` (the module
    docstring's definition; equality counts as wrong both ways)."""
    verdict = decision.verdict
    if verdict not in (CONFIRMED, NOT_REPRODUCED, CONTRADICTED):
        return False
    if rule.test == "equivalence":
        off = abs(truth - rule.claimed)
        return off >= rule.margin if verdict == CONFIRMED else off <= rule.margin
    s = claimed_side(rule)
    mu, b = s * truth, s * claimed_boundary(rule)
    if verdict == CONFIRMED:
        return mu <= b
    if verdict == CONTRADICTED or decision.would_contradict:
        return mu >= -abs(rule.smallest_effect)  # b ≥ δ: a truth at b is caught here too
    return mu >= b


@dataclass
class _Runs:
    """Per-replicate outcomes of one design in one scenario."""

    wrong: np.ndarray  # any part decided wrongly at any look
    covered: np.ndarray  # every final interval covers its truth
    decided: np.ndarray  # parts decided at the end
    seeds: np.ndarray  # paired seeds spent over the estimates


def run_design(model: ClaimModel, spending: str, estimates: EstimatesByLook,
               truths: Sequence[float]) -> _Runs:
    """Every replicate of `estimates` run look by look under `spending` (see the module
    docstring); `truths`: each estimate's true effect."""
    rules = [replace(r, spending=spending) for r in model.rules]
    reps = estimates.data.shape[0]
    m = model.estimates
    owner = [next(rules[k] for k in range(len(rules)) if model.stream[k] == j) for j in range(m)]
    part_truth = [truths[j] for j in model.stream]
    out = _Runs(np.zeros(reps, bool), np.zeros(reps, bool), np.zeros(reps, int),
                np.zeros(reps, int))
    first = [r.schedule[0] for r in owner]
    for i in range(reps):
        n = list(first)
        ever = False
        while True:
            pairs = [(rules[k], estimates.at(model.stream[k], n[model.stream[k]])[i])
                     for k in range(len(rules))]
            found = decide_parts(pairs, ALPHA, fair_arms=True, longer_run_agrees=False,
                                 explain=False)
            ever = ever or any(wrong(rules[k], d, part_truth[k]) for k, d in enumerate(found))
            still = {model.stream[k] for k, d in enumerate(found) if d.verdict == INCONCLUSIVE}
            moved = False
            for j in still:
                following = owner[j].next_look(n[j])
                if following is not None:
                    n[j] = following
                    moved = True
            if not moved:
                break
        out.wrong[i] = ever
        out.covered[i] = all(d.interval is None or d.interval.low <= part_truth[k]
                             <= d.interval.high for k, d in enumerate(found))
        out.decided[i] = sum(d.verdict != INCONCLUSIVE for d in found)
        out.seeds[i] = sum(n)
    return out


def claim_seed(claim_id: str, distribution: str, seed: int = SEED) -> np.random.SeedSequence:
    """The seed of one claim's draws under one distribution (stable across runs and
    platforms: the claim's id by crc32, the distribution by its place in DISTRIBUTIONS)."""
    return np.random.SeedSequence([seed, zlib.crc32(claim_id.encode()),
                                   DISTRIBUTIONS.index(distribution)])


@dataclass(frozen=True)
class ClaimSimulation:
    """Every design of one claim under every distribution, on common draws; `decided_runs`
    holds each (design, distribution)'s decided parts per replicate, averaged over the
    scenarios (what `choose` compares, paired by replicate); `misses`: criterion 3's notes
    (`interval_misses`)."""

    model: ClaimModel
    results: tuple[DesignResult, ...]
    decided_runs: dict[tuple[str, str], np.ndarray]
    misses: dict[str, tuple[tuple[int, float, float, float], ...]]

    def result(self, spending: str, distribution: str) -> DesignResult:
        return next(r for r in self.results
                    if (r.spending, r.distribution) == (spending, distribution))


def simulate_one(model: ClaimModel, distribution: str, reps: int, seed: int = SEED,
                 designs: Sequence[str] = DESIGNS
                 ) -> tuple[list[DesignResult], dict[tuple[str, str], np.ndarray]]:
    """Every design of `model` under one distribution: its results and each design's
    decided parts per replicate (mean over the scenarios)."""
    rng = np.random.default_rng(claim_seed(model.claim, distribution, seed))
    z = noise(model, distribution, reps, rng)
    scale = np.asarray(model.scale)[None, :, None]
    by_x = []
    for x in SCENARIOS:
        truths = [o + x * u for o, u in zip(model.origin, model.unit, strict=True)]
        by_x.append((truths, EstimatesByLook(np.asarray(truths)[None, :, None] + scale * z)))
    worst = sum(max(r.max_seeds for k, r in enumerate(model.rules) if model.stream[k] == j)
                for j in range(model.estimates))
    results, runs = [], {}
    for spending in designs:
        outs = [run_design(model, spending, est, truths) for truths, est in by_x]
        fwe = tuple(float(o.wrong.mean()) for o in outs)
        cov = tuple(float(o.covered.mean()) for o in outs)
        dec = tuple(float(o.decided.mean()) for o in outs)
        seeds = tuple(float(o.seeds.mean()) for o in outs)
        results.append(DesignResult(
            model.claim, spending, distribution, reps, len(model.rules), model.estimates,
            max(fwe), fwe, min(cov), cov, float(np.mean(dec)), dec, float(np.mean(seeds)),
            seeds, worst))
        runs[(spending, distribution)] = np.mean([o.decided for o in outs], axis=0)
    return results, runs


def t_interval_miss(model: ClaimModel, distribution: str, n: int, reps: int = 200_000,
                    seed: int = SEED) -> tuple[float, float, float]:
    """(miss, below, above): how often the plain 95% Student t interval of n per-seed
    differences (one estimate of `model`, with its correlation's mixture) misses their mean,
    and on which side (the interval wholly below the mean, wholly above it)."""
    rng = np.random.default_rng([seed, zlib.crc32(model.claim.encode()), 99,
                                 DISTRIBUTIONS.index(distribution), n])
    one = replace(model, scale=(1.0,), unit=(0.0,), origin=(0.0,), stream=(0,) * len(model.rules))
    z = noise(one, distribution, reps, rng)[:, 0, :n]
    mean, sd = z.mean(axis=1), z.std(axis=1, ddof=1)
    half = float(sps.t.ppf(1 - ALPHA / 2, n - 1)) * sd / math.sqrt(n)
    below, above = float(np.mean(mean + half < 0)), float(np.mean(mean - half > 0))
    return below + above, below, above


def interval_misses(model: ClaimModel, reps: int = 200_000, seed: int = SEED
                    ) -> dict[str, tuple[tuple[int, float, float, float], ...]]:
    """Criterion 3: {distribution: ((n, miss, below, above), …)} for lognormal and t3, at
    each real n of the claim (its min_seeds … max_seeds) where the plain 95% t interval
    misses more than 5% (`t_interval_miss`); a distribution with no such n is left out."""
    low = min(r.min_seeds for r in model.rules)
    high = max(r.max_seeds for r in model.rules)
    out = {}
    for distribution in ("lognormal", "t3"):
        over = tuple((n, *t_interval_miss(model, distribution, n, reps, seed))
                     for n in range(max(2, low), high + 1))
        over = tuple(o for o in over if o[1] > ALPHA)
        if over:
            out[distribution] = over
    return out


def choose(sim: ClaimSimulation, distributions: Sequence[str] | None = None) -> Choice:
    """The design the module docstring's registered criterion picks for one claim (over
    `distributions`, by default every one simulated; `Choice.normal_only` is the same rule
    over normal data alone, for reference)."""
    designs = list(dict.fromkeys(r.spending for r in sim.results))
    dists = list(distributions or dict.fromkeys(r.distribution for r in sim.results))
    worst_fwe = {d: max(sim.result(d, x).fwe for x in dists) for d in designs}
    seeds = {d: max(sim.result(d, x).seeds for x in dists) for d in designs}
    budget = sim.results[0].worst_seeds
    eligible = [d for d in designs if worst_fwe[d] <= FWE_LIMIT and seeds[d] <= budget]
    per_rep = {d: np.mean([sim.decided_runs[(d, x)] for x in dists], axis=0) for d in designs}
    mean = {d: float(per_rep[d].mean()) for d in designs}

    def gain_sd(d: str) -> float:
        diff = per_rep[d] - per_rep["obf"]
        return float(diff.std(ddof=1) / math.sqrt(diff.size)) if diff.size > 1 else 0.0

    note = ""
    if not eligible:
        pick = "obf"
        note = (f"no design keeps the family-wise error ≤ {FWE_LIMIT:.0%} under every "
                "distribution; obf kept")
    elif "obf" in eligible:
        better = [d for d in eligible if d != "obf" and mean[d] - mean["obf"] > 2 * gain_sd(d)]
        pick = max(better, key=lambda d: (mean[d], -designs.index(d))) if better else "obf"
        if not better:
            note = "no eligible design decides more than obf beyond 2 Monte Carlo sd: obf kept"
    else:
        pick = max(eligible, key=lambda d: (mean[d], -designs.index(d)))
        note = "obf is not eligible (its family-wise error exceeds 5% under some distribution)"
    normal_only = (choose(sim, ("normal",)).spending
                   if distributions is None and "normal" in dists and len(dists) > 1 else pick)
    return Choice(sim.model.claim, pick, mean[pick], mean["obf"], gain_sd(pick),
                  worst_fwe[pick], tuple(eligible), note, normal_only)


def experimental_claims() -> tuple[str, ...]:
    return tuple(sorted(SUITE_OF, key=lambda c: (len(c), c)))


def _simulate_task(task: tuple[str, str, int, int, str]
                   ) -> tuple[str, list[DesignResult], dict[tuple[str, str], np.ndarray]]:
    claim_id, distribution, reps, seed, size = task
    model = claim_model(claim_id, size)
    assert model is not None
    results, runs = simulate_one(model, distribution, reps, seed)
    return claim_id, results, runs


def simulate_claims(claims: Sequence[str], reps: int, seed: int = SEED, size: str = "quick",
                    workers: int = 1, note_reps: int = 200_000) -> list[ClaimSimulation]:
    """Every design of each of `claims` that has seeded parts under every distribution, one
    (claim, distribution) per task on `workers` processes (the same numbers whatever their
    count: each task seeds its own Generator)."""
    models = {c: m for c in claims if (m := claim_model(c, size)) is not None}
    tasks = [(c, x, reps, seed, size) for c in models for x in DISTRIBUTIONS]
    if workers > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers) as pool:
            done = list(pool.map(_simulate_task, tasks))
    else:
        done = [_simulate_task(t) for t in tasks]
    out = []
    for claim_id, model in models.items():
        results, runs = [], {}
        for c, found, decided in done:
            if c == claim_id:
                results += found
                runs.update(decided)
        results.sort(key=lambda r: (DESIGNS.index(r.spending),
                                    DISTRIBUTIONS.index(r.distribution)))
        misses = interval_misses(model, note_reps, seed) if note_reps else {}
        out.append(ClaimSimulation(model, tuple(results), runs, misses))
    return out
