"""How many paired seeds a rung of C16's ladder should run: what each per-rung design decides,
what it costs in CPU-hours, and how much it narrows the trend, by simulation.

`blocklab ladder C16` runs C16's comparison (SwiGLU, GeGLU, GLU against ReLU; the effect is
(arm − relu)/relu of the final validation loss, %, negative = better) at four rungs, 1×, 2×,
4× and 8× the quick size's training compute, each rung deciding its three parts under C16's
registered rules with Holm across them, and fits the trend across the rungs
(`blocklab.claims.trend.fit_line`, the rung as the unit). This compares per-rung designs:

    registered  C16's registered sequential design (`registry.registered("C16", "quick")`:
                looks at 5, 8, 10 paired seeds, O'Brien–Fleming spending)
    fixed n     one look at n = 4, 6, 8, 10, 12, 16 seeds, read at α (each part's rule with
                min_seeds = max_seeds = n and spending "fixed", `dataclasses.replace`); for
                reference also n = 20 and 24, to see where decisions per CPU-hour turn
    obf a–b     for reference, two longer sequential designs on the same rule (looks from a
                to b seeds in blocks of ⌈a/2⌉, O'Brien–Fleming)

How each rung is simulated: the machinery of `benchmarks/design_simulation.py` (its
`model_of`, `noise`, `EstimatesByLook`, `wrong`), with the three parts run look by look
through `rules.decide_parts` (Holm across the parts, fair arms, no 2× longer run) exactly as
`design_simulation.run_design` runs them (asserted against it for the registered design and
for one look at 10 seeds), but per part. Per-seed differences are normal, sd = the quick
size's measured sd of each gap to ReLU (SD, in points of %), correlated 0.5 between the parts
through the shared ReLU arm (`design_simulation.SHARED_CONTROL`). A part still undecided at a
look gets its arm and ReLU trained up to the next look's seeds, so a rung trains ReLU on its
largest n and each gated arm on its own n. The same draws (16 seeds a rung) serve every
design and every scenario.

Scenarios of the true per-rung effects (SwiGLU / GeGLU / GLU, % of ReLU's loss):
    (a) measured  the earlier 4×-ladder's shape: the quick rung at its quick means
                  (+0.22 / +0.59 / +3.93), every rung above it at the plateau the gated arms
                  reached (−2.3 / −1.7 / −0.9)
    (b) boundary  every part exactly at its claim's boundary (−1 / −1 / −0.5) at every rung:
                  any decision is wrong, so the family-wise wrong-decision rate is the design's
                  error, to be ≤ 5%
    (c) null      no effect (0) at every rung

The trend: for each simulated ladder and part, every rung's mean at its design's final n with
its seeds' sd, plus a rung deviation N(0, τ) with τ = TAU_RATIO × the part's sd (rung-to-rung
scatter about the line, as measured on C16's earlier ladder), fitted by `fit_line` on the four
rungs (x = 0 … 3: slopes per 2× compute). The interval's width does not depend on the true
line, so it is computed about a flat one; it depends on the design only through each rung's n.

CPU cost per ladder: per rung k, (runs of the design + TUNING_RUNS) × RUN_S × 2^(RUNG_EXPONENT·k)
core-seconds, summed over the four rungs (see the constants' comments for their sources).

The recommendation (`choose`): among the designs whose family-wise error at a rung is ≤ 5% in
(b) and (c), those whose parts decided per CPU-hour in (a) lie within 2 Monte Carlo sd (paired
by ladder) of the best are tied; of them, the one that decides the most per CPU-hour in (c).

    python benchmarks/rung_seeds.py [--reps 2500] [--seed 20261207] [--out docs/rung_seeds.md]

The same arguments give the same tables on any machine (numpy's default_rng, one stream per
rung and one for the rung deviations).
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

import design_simulation as D
from blocklab.claims.registry import registered
from blocklab.claims.rules import (
    ALPHA,
    INCONCLUSIVE,
    Rule,
    claimed_boundary,
    decide_parts,
    look_level,
)
from blocklab.claims.trend import fit_line
from blocklab.experiments.summaries import Interval

SEED = 20_261_207
CLAIM = "C16"
RUNGS = 4  # 1×, 2×, 4×, 8× the quick size's training compute
FIXED_N = (4, 6, 8, 10, 12, 16)
FIXED_REFERENCE = (20, 24)  # past the grid, to see where decisions per CPU-hour turn
LONGER = ((6, 12), (8, 16))  # reference sequential designs (min_seeds, max_seeds), obf
# The quick size's per-seed sd of each gap to ReLU, points of % (measured at --size quick).
SD = {"swiglu": 1.18, "geglu": 1.41, "glu": 0.85}
# Rung-to-rung sd about the line over the seeds' sd: C16's earlier ladder gave τ̂/σ̂ 0.4–1.5
# across its three parts (docs/trend_coverage.md); 0.65 is the value simulated there.
TAU_RATIO = 0.65
# One quick C16 training run: about 12 s on one core of the 2-core reference machine
# (src/blocklab/experiments/suites/ffn/runs.py: "11-14 s a run (300 steps)").
RUN_S = 12.0
# A run at rung k costs about 2^(0.75·k) quick runs: each rung doubles the compute and the
# wider matmuls use the core better (docs/ladder.md's bf16 step times × steps of its 4× rungs
# give about ×3 a run per 4× compute, 4^0.8; 0.75 is the rounder figure used here).
RUNG_EXPONENT = 0.75
ARMS = 4  # relu, swiglu, geglu, glu
TUNING_RUNS = ARMS * 5 * 2  # every arm at 5 rates (3-point grid + 2 refined) on 2 tuning seeds
# The scenarios' true per-rung effects, per part (swiglu, geglu, glu), rung 0 … 3.
MEASURED_QUICK = (0.22, 0.59, 3.93)
MEASURED_PLATEAU = (-2.3, -1.7, -0.9)


@dataclass(frozen=True)
class Design:
    label: str
    rules: tuple[Rule, ...]

    @property
    def looks(self) -> str:
        return ", ".join(map(str, self.rules[0].schedule))


@dataclass
class RungRuns:
    """Per replicate of one rung under one design: each part's final verdict decided or not,
    any wrong decision at any look, each part's final n."""

    decided: np.ndarray  # [reps, parts] bool
    wrong: np.ndarray  # [reps] bool
    n: np.ndarray  # [reps, parts] int


@dataclass(frozen=True)
class Row:
    """One design in one scenario, over `reps` ladders of RUNGS rungs."""

    design: Design
    p_decided: tuple[float, ...]  # per part, mean over the rungs
    p_decided_by_rung: tuple[tuple[float, ...], ...]  # [rung][part]
    all_decided: float  # P(every part decided at a rung), mean over the rungs
    fwe: tuple[float, ...]  # per rung: P(any part wrongly decided at any look)
    fwe_ladder: float  # P(a wrong decision at any rung of the ladder)
    seeds: float  # expected seeds a part a rung (mean over parts and rungs)
    runs: tuple[float, ...]  # expected training runs per rung
    cpu_h: float  # expected CPU-hours per ladder, tuning included
    decided: float  # expected parts decided per ladder (of 3 × RUNGS)
    width: tuple[float, ...]  # per part: median width of the slope's 95% interval
    pooled: bool  # every rung has the same truths: `error` pools the rungs
    per_ladder: tuple[np.ndarray, np.ndarray] = field(repr=False, compare=False,
                                                      default=(np.zeros(0), np.zeros(0)))
    # (parts decided, CPU-hours) of each simulated ladder, for `rate_sd`

    @property
    def rate(self) -> float:
        """Expected parts decided a ladder per expected CPU-hour."""
        return self.decided / self.cpu_h

    @property
    def error(self) -> float:
        """The family-wise error of a rung: pooled over the rungs where their truths are the
        same (the rungs are then replicates of one family), else the worst rung's."""
        return float(np.mean(self.fwe)) if self.pooled else max(self.fwe)


def designs_of(rules: tuple[Rule, ...]) -> list[Design]:
    reg = rules[0]
    out = [Design(f"registered ({reg.spending} {reg.min_seeds}–{reg.max_seeds})", rules)]
    out += [Design(f"fixed {n}", tuple(replace(r, min_seeds=n, max_seeds=n, spending="fixed")
                                       for r in rules)) for n in FIXED_N + FIXED_REFERENCE]
    out += [Design(f"obf {a}–{b}", tuple(replace(r, min_seeds=a, max_seeds=b, spending="obf")
                                         for r in rules)) for a, b in LONGER]
    return out


def scenarios(rules: tuple[Rule, ...]) -> dict[str, tuple[tuple[float, ...], ...]]:
    """{name: per rung, each part's true effect}."""
    boundary = tuple(claimed_boundary(r) for r in rules)
    return {
        "(a) measured": (MEASURED_QUICK, *(MEASURED_PLATEAU,) * (RUNGS - 1)),
        "(b) boundary": (boundary,) * RUNGS,
        "(c) null": ((0.0,) * len(rules),) * RUNGS,
    }


def run_rung(model: D.ClaimModel, rules: tuple[Rule, ...], estimates: D.EstimatesByLook,
             truths: tuple[float, ...]) -> RungRuns:
    """`design_simulation.run_design`'s loop (each part its own estimate, as C16's are), kept
    per part: every part read at every look with Holm across them, an undecided part moved to
    its next look, until no undecided part has one."""
    reps = estimates.data.shape[0]
    m = len(rules)
    out = RungRuns(np.zeros((reps, m), bool), np.zeros(reps, bool), np.zeros((reps, m), int))
    for i in range(reps):
        n = [r.schedule[0] for r in rules]
        ever = False
        while True:
            pairs = [(rules[k], estimates.at(model.stream[k], n[k])[i]) for k in range(m)]
            found = decide_parts(pairs, ALPHA, fair_arms=True, longer_run_agrees=False,
                                 explain=False)
            ever = ever or any(D.wrong(rules[k], d, truths[k]) for k, d in enumerate(found))
            moved = False
            for k, d in enumerate(found):
                following = rules[k].next_look(n[k]) if d.verdict == INCONCLUSIVE else None
                if following is not None:
                    n[k] = following
                    moved = True
            if not moved:
                break
        out.decided[i] = [d.verdict != INCONCLUSIVE for d in found]
        out.wrong[i] = ever
        out.n[i] = n
    return out


def rung_seconds(k: int) -> float:
    """Core-seconds of one training run at rung k (0 = the quick size)."""
    return RUN_S * 2 ** (RUNG_EXPONENT * k)


def slope_widths(data: list[np.ndarray], ns: list[np.ndarray], truths: list[tuple[float, ...]],
                 deviation: np.ndarray, sd: tuple[float, ...]) -> np.ndarray:
    """[reps, parts] widths of `fit_line`'s 95% slope interval: rung k's part j read at its
    final n (mean and sd of its seeds), its truth taken out (a flat line) and a rung deviation
    τ_j·u added."""
    reps, m = ns[0].shape
    width = np.empty((reps, m))
    rungs = []
    for k in range(RUNGS):
        x = data[k] - np.asarray(truths[k])[None, :, None]  # [reps, parts, seeds]
        csum, csq = np.cumsum(x, axis=2), np.cumsum(x * x, axis=2)
        n = ns[k]
        s1 = np.take_along_axis(csum, (n - 1)[:, :, None], axis=2)[:, :, 0]
        s2 = np.take_along_axis(csq, (n - 1)[:, :, None], axis=2)[:, :, 0]
        mean = s1 / n
        var = np.maximum(s2 - n * mean ** 2, 0.0) / (n - 1)
        rungs.append((n, mean + TAU_RATIO * np.asarray(sd)[None, :] * deviation[:, k, :],
                      np.sqrt(var)))
    for i in range(reps):
        for j in range(m):
            fit = fit_line([(k, Interval(int(rungs[k][0][i, j]), float(rungs[k][1][i, j]),
                                         None, None, float(rungs[k][2][i, j])))
                            for k in range(RUNGS)])
            width[i, j] = fit.slope_high - fit.slope_low
    return width


def simulate(reps: int, seed: int) -> tuple[D.ClaimModel, list[Design], dict[str, list[Row]],
                                             dict[str, tuple[tuple[float, ...], ...]]]:
    parts = registered(CLAIM, "quick")
    base = D.model_of(CLAIM, parts, D.SHARED_CONTROL[CLAIM])
    assert base is not None and base.names == tuple(SD), base
    sd = tuple(SD[name] for name in base.names)
    model = replace(base, scale=sd)
    rules = model.rules
    designs = designs_of(rules)
    top = max(d.rules[0].max_seeds for d in designs)
    # 16 seeds a rung replicate, one stream per rung, the same for every design and scenario
    z = [D.noise(replace(model, rules=tuple(replace(r, max_seeds=top) for r in rules)),
                 "normal", reps, np.random.default_rng([seed, k])) for k in range(RUNGS)]
    deviation = np.random.default_rng([seed, 99]).standard_normal((reps, RUNGS, len(rules)))
    scale = np.asarray(sd)[None, :, None]
    cases = scenarios(rules)
    out: dict[str, list[Row]] = {}
    for s, (name, truths) in enumerate(cases.items()):
        data = [np.asarray(truths[k])[None, :, None] + scale * z[k] for k in range(RUNGS)]
        looks = [D.EstimatesByLook(x) for x in data]
        if s == 0:  # the per-part loop is designs.run_design's, kept per part
            check = min(reps, 300)
            sub = D.EstimatesByLook(data[1][:check])
            ten = designs[FIXED_N.index(10) + 1]
            for spending, design in (("obf", designs[0]), ("fixed", ten)):
                ref = D.run_design(model, spending, sub, truths[1])
                mine = run_rung(model, design.rules, sub, truths[1])
                assert np.array_equal(ref.decided, mine.decided.sum(axis=1))
                assert np.array_equal(ref.seeds, mine.n.sum(axis=1))
                assert np.array_equal(ref.wrong, mine.wrong)
        rows = []
        for design in designs:
            runs = [run_rung(model, design.rules, looks[k], truths[k]) for k in range(RUNGS)]
            by_rung = tuple(tuple(float(v) for v in r.decided.mean(axis=0)) for r in runs)
            fwe = tuple(float(r.wrong.mean()) for r in runs)
            trained = [r.n.max(axis=1) + r.n.sum(axis=1) for r in runs]  # relu + each arm
            cpu = sum((trained[k] + TUNING_RUNS) * rung_seconds(k) for k in range(RUNGS)) / 3600
            width = slope_widths(data, [r.n for r in runs], list(truths), deviation, sd)
            rows.append(Row(
                design,
                tuple(float(np.mean([b[j] for b in by_rung])) for j in range(len(rules))),
                by_rung,
                float(np.mean([r.decided.all(axis=1).mean() for r in runs])),
                fwe,
                float(np.mean(np.any([r.wrong for r in runs], axis=0))),
                float(np.mean([r.n.mean() for r in runs])),
                tuple(float(t.mean()) for t in trained),
                float(cpu.mean()),
                float(sum(r.decided.sum(axis=1).mean() for r in runs)),
                tuple(float(np.median(width[:, j])) for j in range(len(rules))),
                len(set(truths)) == 1,
                (sum(r.decided.sum(axis=1) for r in runs), cpu)))
        out[name] = rows
    return model, designs, out, cases


# --- the document --------------------------------------------------------------------------
def _pct(p: float) -> str:
    return f"{100 * p:.1f}%"


def _num(v: float, fmt: str = "+.2f") -> str:
    return format(v, fmt).replace("-", "−")


def _slash(values: tuple[float, ...], fmt: str) -> str:
    return " / ".join(format(v, fmt) for v in values).replace("-", "−")


def eligible(rows_b: list[Row], rows_c: list[Row]) -> dict[str, bool]:
    """A design keeps wrong decisions ≤ 5% when a rung's family-wise error (`Row.error`) in
    (b) and in (c) is ≤ 5% (the point estimate)."""
    return {rb.design.label: rb.error <= D.FWE_LIMIT and rc.error <= D.FWE_LIMIT
            for rb, rc in zip(rows_b, rows_c, strict=True)}


def rate_sd(one: Row, other: Row) -> float:
    """Monte Carlo sd of one.rate − other.rate, paired by ladder (the delta method on each
    ratio of means: per ladder (decided − rate · CPU-h) / mean CPU-h)."""
    (d1, c1), (d2, c2) = one.per_ladder, other.per_ladder
    diff = (d1 - one.rate * c1) / c1.mean() - (d2 - other.rate * c2) / c2.mean()
    return float(diff.std(ddof=1) / math.sqrt(diff.size))


def choose(rows_a: list[Row], rows_c: list[Row], ok: dict[str, bool]
           ) -> tuple[Row, list[str]]:
    """The recommended per-rung design: among the designs that keep wrong decisions ≤ 5%
    (`eligible`), those whose parts decided per CPU-hour in the measured shape (a) lie within
    2 Monte Carlo sd (paired) of the best's are tied; of them, the one with the most decided
    per CPU-hour in the null (c). Returns its row in (a) and the tied designs' labels."""
    fine = [r for r in rows_a if ok[r.design.label]]
    top = max(fine, key=lambda r: r.rate)
    tied = [r for r in fine if r is top or top.rate - r.rate <= 2 * rate_sd(top, r)]
    in_c = {r.design.label: r.rate for r in rows_c}
    pick = max(tied, key=lambda r: in_c[r.design.label])
    return pick, [r.design.label for r in tied]


def table(rows: list[Row], ok: dict[str, bool], names: tuple[str, ...]) -> list[str]:
    head = " / ".join(names)
    lines = [f"| design | looks | P(decided) {head} | all three decided | FWE per rung "
             "| wrong anywhere on the ladder | seeds a part a rung | runs a rung "
             "(1×, 2×, 4×, 8×) | CPU-h a ladder | parts decided a ladder (of 12) | decided / "
             f"CPU-h | slope 95% width {head} |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        flag = "" if ok[r.design.label] else " ✗"
        lines.append(
            f"| {r.design.label}{flag} | {r.design.looks} | "
            f"{_slash(tuple(100 * p for p in r.p_decided), '.1f')} | {_pct(r.all_decided)} | "
            f"{_pct(r.error)} | {_pct(r.fwe_ladder)} | {r.seeds:.2f} | "
            f"{_slash(r.runs, '.1f')} | {r.cpu_h:.2f} | {r.decided:.2f} | "
            f"{r.rate:.2f} | {_slash(r.width, '.2f')} |")
    return lines


def markdown(model: D.ClaimModel, designs: list[Design], rows: dict[str, list[Row]],
             cases: dict[str, tuple[tuple[float, ...], ...]], command: str, reps: int,
             seed: int, seconds: float) -> str:
    names = tuple({"swiglu": "SwiGLU", "geglu": "GeGLU", "glu": "GLU"}.get(n, n)
                  for n in model.names)
    keys = list(rows)
    a, b, c = (rows[k] for k in keys)
    ok = eligible(b, c)
    mc = 100 * math.sqrt(ALPHA * (1 - ALPHA) / (RUNGS * reps))
    per_rung = [rung_seconds(k) for k in range(RUNGS)]
    tuning_h = TUNING_RUNS * sum(per_rung) / 3600
    seed_h = ARMS * sum(per_rung) / 3600
    reg = a[0]
    pick, tied = choose(a, c, ok)
    first = reg.design.rules[0]

    def levels(alpha: float) -> str:
        return ", ".join(f"{look_level(first, n, alpha):.4f}" for n in first.schedule)
    lines = [
        "# How many seeds should a rung of C16's ladder run?",
        "",
        f"Command: `{command}` (seed {seed}, {reps} simulated ladders of {RUNGS} rungs per "
        f"scenario, the same draws for every design; {seconds / 60:.1f} min on one core). Made "
        "by `benchmarks/rung_seeds.py`, whose docstring states the simulation; numpy's seeded "
        "generator gives the same tables on any machine.",
        "",
        "## The question",
        "",
        "`blocklab ladder C16` runs C16 (SwiGLU, GeGLU and GLU against ReLU; the effect is the "
        "% change of validation loss against ReLU, negative = better) at four rungs, 1×, 2×, "
        "4× and 8× the quick size's training compute. Each rung decides the three parts by "
        "C16's registered rules (confirmed when the interval at the part's level lies wholly "
        "beyond the claim's boundary, −1 for SwiGLU and GeGLU, −0.5 for GLU; not reproduced "
        "when it lies wholly short of it), with Holm's correction across the three parts; the "
        "trend across the four rungs is `trend.fit_line` on the rung means (t on 2 df). Every "
        "seed of a rung costs four training runs, and every rung also costs its tuning runs "
        "whatever the design. Which per-rung design decides the most per CPU-hour while "
        "keeping wrong decisions at most 5%, and what does a seed buy the trend?",
        "",
        "## The simulation",
        "",
        "Per rung, the three parts run look by look through `rules.decide_parts` exactly as "
        "`design_simulation.run_design` runs them (the script asserts that its per-part "
        "loop gives `run_design`'s decided parts, seeds and wrong decisions on the same draws),"
        " reusing that module's noise, estimates and definition of a wrong decision. Per-seed "
        "gaps are normal with the quick size's measured sds, "
        + ", ".join(f"{nm} {s:g}" for nm, s in zip(names, model.scale, strict=True))
        + f" points, correlated {model.rho:g} between the parts through the shared ReLU arm "
        "(`design_simulation.SHARED_CONTROL`); decisions read with fair arms and no 2× longer "
        "run. A part still undecided at a look gets its arm and ReLU trained up to the next "
        "look, so a rung's runs are ReLU's largest n plus each gated arm's own n.",
        "",
        "Designs: **registered**: C16's registered rule, "
        f"`registered(\"C16\", \"quick\")`: {reg.design.rules[0].spending} spending, looks at "
        f"{reg.design.looks} seeds (min_seeds {reg.design.rules[0].min_seeds}, max_seeds "
        f"{reg.design.rules[0].max_seeds}); **fixed n**: the same rule with min_seeds = "
        "max_seeds = n and spending \"fixed\" (one look at n, read at α); **obf a–b**: for "
        "reference, two longer sequential designs on the same rule.",
        "",
        "Scenarios (true per-rung effect, " + " / ".join(names) + ", % of ReLU's loss):",
        "",
        f"- **{keys[0]}**: the earlier 4×-ladder's shape: the 1× rung at its quick means "
        f"({_slash(MEASURED_QUICK, '+.2f')}), every rung above it at the plateau the gated "
        f"arms reached there ({_slash(MEASURED_PLATEAU, '+.1f')}: SwiGLU's rungs read −2.23, "
        "−2.47, −2.22, GeGLU's −1.28, −1.67, −2.13, GLU's last two −0.94, −0.75).",
        f"- **{keys[1]}**: every part exactly at its boundary "
        f"({_slash(cases[keys[1]][0], '+.1f')}) at every rung: every decision is wrong, so "
        "this is the design's error.",
        f"- **{keys[2]}**: no effect at any rung: a confirmation (or a would-be contradiction) "
        "is wrong, not reproduced is right.",
        "",
        f"The trend: per simulated ladder and part, every rung's mean at its final n with its "
        f"seeds' sd, plus a rung deviation N(0, τ), τ = {TAU_RATIO:g} × the part's sd (the "
        "rung-to-rung scatter about the line measured on C16's earlier ladder, "
        "docs/trend_coverage.md), fitted by `fit_line` on x = 0 … 3 (slope per 2× compute). "
        "The interval's width does not depend on the true line; it depends on the design only "
        "through each rung's n.",
        "",
        "CPU cost: one quick C16 run is taken as "
        f"**{RUN_S:g} core-seconds** on one core of the 2-core reference machine "
        "(src/blocklab/experiments/suites/ffn/runs.py: 11–14 s a run of 300 steps), and a run "
        f"at rung k as **2^({RUNG_EXPONENT:g}·k)** × that (each rung doubles the compute and the "
        "wider matmuls use the core better; docs/ladder.md's bf16 step times × steps on its "
        "earlier 4× rungs give about ×3 a run per 4× compute, 4^0.8, so this is if anything a "
        "little low at the top rung): "
        + ", ".join(f"{s:.1f} s" for s in per_rung)
        + " a run at 1×, 2×, 4×, 8×. Each rung's tuning, every arm at 5 rates on 2 tuning "
        f"seeds ({TUNING_RUNS} runs), is the same for every design: {tuning_h:.2f} CPU-h a "
        f"ladder. One more seed on every arm of every rung costs {seed_h:.3f} CPU-h.",
        "",
        "Columns: **P(decided)**: the chance a part is decided (confirmed or not reproduced) "
        "at a rung, %, mean over the four rungs; **all three decided**: at a rung; **FWE per "
        "rung**: the chance of any wrong decision among the rung's three parts at any look "
        f"(in (b) and (c), where every rung has the same truths, pooled over the four rungs: "
        f"Monte Carlo sd {mc:.2f} points at 5%; in (a) the worst rung's); **wrong anywhere on "
        "the "
        "ladder**: at any of the four rungs (four families, each held to 5%, so up to about "
        "19%: for information); **seeds a part a rung**: expected; **runs a rung**: expected "
        "training runs per rung, tuning not included; **CPU-h a ladder**: expected, tuning "
        "included; **decided / CPU-h**: expected parts decided a ladder per CPU-hour; "
        "**slope 95% width**: median width of `fit_line`'s slope interval, % per 2× compute. "
        "✗: the design's FWE exceeds 5% at some rung in (b) or (c).",
        "",
    ]
    for key in keys:
        lines += [f"## {key}", ""] + table(rows[key], ok, names) + [""]
        if key == keys[0]:
            lines += ["P(decided) by rung in (a), % (" + " / ".join(names) + "):", "",
                      "| design | 1× | 2× | 4× | 8× |", "|---|---|---|---|---|"]
            for r in rows[key]:
                lines.append(f"| {r.design.label} | " + " | ".join(
                    _slash(tuple(100 * p for p in by), ".0f") for by in r.p_decided_by_rung)
                    + " |")
            lines.append("")
    # recommendation, from the numbers
    fixed = [r for r in a if r.design.label.startswith("fixed")]
    marg = [f"{lo.design.label.split()[1]}→{hi.design.label.split()[1]} seeds: "
            f"{hi.decided - lo.decided:+.2f} parts for {hi.cpu_h - lo.cpu_h:+.2f} CPU-h "
            f"({(hi.decided - lo.decided) / (hi.cpu_h - lo.cpu_h):.2f} a CPU-h)"
            for lo, hi in zip(fixed, fixed[1:], strict=False)]
    turn = next(((int(lo.design.label.split()[1]), int(hi.design.label.split()[1]))
                 for lo, hi in zip(fixed, fixed[1:], strict=False)
                 if (hi.decided - lo.decided) / (hi.cpu_h - lo.cpu_h) < lo.rate), None)
    top_a = max((r for r in a if ok[r.design.label]), key=lambda r: r.rate)
    top_c = max((r for r in c if ok[r.design.label]), key=lambda r: r.rate)
    in_c = {r.design.label: r for r in c}
    w = {r.design.label: r.width for r in a}
    w4, w16 = w["fixed 4"], w["fixed 16"]
    widths = " / ".join(f"{x:.2f}→{y:.2f}" for x, y in zip(w4, w16, strict=True))
    shrink = " / ".join(f"{100 * (1 - y / x):.0f}%" for x, y in zip(w4, w16, strict=True))
    per_seed = (w4[0] - w16[0]) / 12
    floor = TAU_RATIO / math.sqrt(TAU_RATIO ** 2 + 1 / 5)
    reference = pick.design.label in {f"fixed {n}" for n in FIXED_REFERENCE} | {
        f"obf {lo}–{hi}" for lo, hi in LONGER}
    errors = (f"every design keeps a rung's family-wise error at or below 5%: "
              f"{_pct(min(r.error for r in b))}–{_pct(max(r.error for r in b))} with every "
              f"part at its boundary (b), at most {_pct(max(r.error for r in c))} in the null "
              f"(c) and {_pct(max(r.error for r in a))} in the measured shape (a)"
              if all(ok.values()) else
              "the designs marked ✗ exceed 5% at a rung in (b) or (c) and are not eligible")
    lines += [
        "## Recommendation",
        "",
        f"Wrong decisions: {errors}. The boundary is the worst case, where every decision is "
        "wrong and the error is what the intervals' levels spend; it hardly moves with the "
        "seeds. A ladder is four such families, so some rung decides wrongly in "
        f"{_pct(min(r.fwe_ladder for r in b))}–{_pct(max(r.fwe_ladder for r in b))} of "
        "ladders whose every part sits exactly at its boundary. (Normal seeds; under a "
        "lognormal spread the t interval itself misses more, for every design alike: "
        "docs/designs.md.)",
        "",
        f"Decisions per CPU-hour, measured shape (a): the most is **{top_a.design.label}**, "
        f"{top_a.decided:.2f} of 12 parts for {top_a.cpu_h:.2f} CPU-h ({top_a.rate:.2f} a "
        f"CPU-h); within 2 Monte Carlo sd of it: {', '.join(tied)}. In the null (c) the most "
        f"is {top_c.design.label} ({top_c.rate:.2f} a CPU-h). The registered design decides "
        f"{reg.decided:.2f} parts for {reg.cpu_h:.2f} CPU-h ({reg.rate:.2f} a CPU-h) in (a), "
        f"{in_c[reg.design.label].rate:.2f} a CPU-h in (c). The tuning ({tuning_h:.2f} CPU-h "
        "a ladder) is paid whatever the design, so a rung of few seeds is cheap but decides "
        "little of what its tuning already paid for" + (
            f"; from {turn[0]} to {turn[1]} seeds the further seeds decide fewer parts a "
            "CPU-hour than the ladder's average, and the average starts to fall"
            if turn else "") + ". Going up the fixed designs in (a): "
        + "; ".join(marg) + ".",
        "",
        f"The trend: the slope's median 95% width ({' / '.join(names)}, % per 2× compute) goes "
        f"{widths} from 4 to 16 seeds a rung, {shrink} narrower for 12 more seeds on every "
        f"rung ({12 * seed_h:.2f} CPU-h), about {per_seed:.3f} points of SwiGLU's width a seed "
        f"({per_seed / seed_h:.2f} a CPU-h). The rung-to-rung deviation (τ = {TAU_RATIO:g} "
        f"sd) does not shrink with seeds: at 5 seeds it is already "
        f"{100 * TAU_RATIO ** 2 / (TAU_RATIO ** 2 + 0.2):.0f}% of a rung mean's variance, and "
        f"infinitely many seeds would leave about {100 * floor:.0f}% of the 5-seed standard "
        "error; on 2 degrees of freedom the width is set by the four rungs, not by their "
        "seeds, and every width here is far wider than the slopes measured so far (about "
        "−0.4 a 2× rung for SwiGLU and GeGLU). Seeds decide each rung; only more rungs narrow "
        "the trend.",
        "",
    ]
    if pick.design.label == reg.design.label:
        lines.append("**Recommendation: keep C16's registered sequential design "
                     f"(O'Brien–Fleming, looks at {reg.design.looks}).** It "
                     "decides as much per CPU-hour as any design here at an error within 5%.")
    else:
        lines.append(
            "**Recommendation: C16's registered sequential design (O'Brien–Fleming, looks at "
            f"{reg.design.looks}) is not the best choice for a rung; {pick.design.label} "
            f"(looks at {pick.design.looks}) should replace it.** Tied with the best in (a) "
            "and, of the tied, the one that decides the most per CPU-hour in the null (c), it "
            f"decides {pick.decided:.2f} parts a ladder in (a) for {pick.cpu_h:.2f} CPU-h "
            f"({pick.decided - reg.decided:+.2f} parts, {pick.cpu_h - reg.cpu_h:+.2f} CPU-h "
            f"against the registered design) and {in_c[pick.design.label].decided:.2f} in (c) "
            f"(registered {in_c[reg.design.label].decided:.2f}), at a rung's family-wise "
            f"error of {_pct(next(r for r in b if r.design == pick.design).error)} at the "
            "boundary. "
            + ("(It lies past the asked grid of fixed designs: the grid's best is "
               + max((r for r in tied if r.design.label not in reference), key=lambda r:
                     in_c[r.design.label].rate).design.label + ".) " if reference else "")
            + "The registered O'Brien–Fleming design reads its looks at "
            f"{reg.design.looks} seeds at two-sided levels {levels(ALPHA)} (the part first in "
            f"Holm's order, at α/3: {levels(ALPHA / 3)}), where one fixed look reads "
            f"{ALPHA:g} ({ALPHA / 3:.4f}): its early looks seldom stop a rung "
            f"({reg.seeds:.1f} seeds a part a rung in (a), of {reg.design.rules[0].max_seeds}),"
            " and its last look is stricter than one fixed look at the same seeds. On the "
            "2-core reference machine, both cores training, a ladder's wall-clock time is "
            "about half its CPU-hours. A change to C16's registered rule is "
            "a registered change (`registry.CHANGED_AFTER_DATA`, made before any further "
            "rung's data); this page recommends it and changes nothing.")
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=2500, help="simulated ladders per scenario")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--out", type=Path, default=Path("docs/rung_seeds.md"))
    args = parser.parse_args(argv)
    start = time.process_time()
    model, designs, rows, cases = simulate(args.reps, args.seed)
    seconds = time.process_time() - start
    command = "python benchmarks/rung_seeds.py " + shlex.join(
        argv if argv is not None else sys.argv[1:])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(markdown(model, designs, rows, cases, command.strip(), args.reps,
                                 args.seed, seconds), encoding="utf-8")
    for key, found in rows.items():
        print(key)
        for r in found:
            print(f"  {r.design.label:<22} decided {_slash(r.p_decided, '.2f')}  fwe "
                  f"{100 * r.error:4.1f}%  seeds {r.seeds:5.2f}  cpu {r.cpu_h:5.2f} h  "
                  f"decided {r.decided:5.2f} ({r.decided / r.cpu_h:.2f}/h)  width "
                  f"{_slash(r.width, '.2f')}")
    print(f"wrote {args.out} in {seconds:.0f} s of CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
