"""Seeds where a question is still open: the sequential design run look by look.

Every part measured on seeds has a registered design (`Rule.schedule`: min_seeds, then blocks
of ⌈min_seeds / 2⌉ seeds, up to max_seeds), each look read at its Lan–DeMets O'Brien–Fleming
level (`rules.look_level`). `run_looks` runs the suites at their planned seeds (the first
look), grades the ledger, and while parts are undecided and the budget allows, adds the next
block of seeds to the arms of the undecided parts only (`next_blocks`), runs them and grades
again. Decided parts get no more seeds; a part whose arms another undecided part extends keeps
its own paired seeds unless every arm it compares was extended.

    request = RunRequest(Path("runs"), "quick", budget_s=20 * 60)
    plan = plan_budget(request, ["ffn", "placement"], workers=2)
    looks = run_looks(request, ["ffn", "placement"], plan=plan, run=..., workers=2)

One `RunRequest` (`blocklab.experiments.options`) says what every step reads: the results
folder, size, seed offset and precision the suites run and the ledger grades at, and the
budget. Before anything runs the budget is priced (`plan_budget`: the still-missing runs of
the first look, by `blocklab.experiments.estimate`, then the worst case of each further look,
every sequential part undecided): an estimate for `report --plan`. The run itself re-plans
after every look with the time then left (`buy`): each open part with the looks it may
stop at, the likeliest to decide a part per second of compute first, its later looks' time
reserved while the whole path fits; the parts bought get their next block. It stops when
every part is decided or at its last look, or when no open part's next block fits in the
time left.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from blocklab import stats
from blocklab.claims.catalogue import SUITE_OF, part_arms, suite_rules
from blocklab.claims.finding import Context
from blocklab.claims.ledger import run_claims
from blocklab.claims.registry import registered
from blocklab.claims.rules import INCONCLUSIVE, Rule, boundary_distance, look_level
from blocklab.experiments.options import RunRequest
from blocklab.experiments.summaries import SeedBlock

# Default budgets of `blocklab report` per size, in seconds (None: every look to max_seeds).
DEFAULT_BUDGET_S: dict[str, float | None] = {"tiny": 0.0, "quick": 20 * 60.0, "full": None}
# Kept back from the budget for the report's build after the last look.
BUILD_RESERVE_S = 30.0


@dataclass(frozen=True)
class Wanted:
    """One part still open at a look: it needs `target` paired seeds on each of `arms`."""

    claim: str
    part: str
    suite: str
    arms: tuple[str, ...]
    n: int
    target: int
    # The chance that its next look decides it: the power at the target's look level of a
    # true effect as far from the boundary as the one seen, at the spread seen (1: unknown).
    # It orders what a budget buys, never what is decided.
    chance: float = 1.0
    # Every look left in its design, (seeds, chance that look decides it), the next one first:
    # what the budget reserves for a part it buys, so that the time its later looks need is
    # not spent on blocks that are unlikely to decide anything (empty: the next look only).
    later: tuple[tuple[int, float], ...] = ()

    def path(self) -> tuple[tuple[int, float], ...]:
        return self.later or ((self.target, self.chance),)


@dataclass
class LookRecord:
    """What one look did: the blocks it added per suite, their estimated and measured time."""

    look: int
    blocks: dict[str, list[SeedBlock]] = field(default_factory=dict)
    runs: int = 0
    estimated_s: float = 0.0
    measured_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"look": self.look, "runs": self.runs, "estimated_s": self.estimated_s,
                "measured_s": self.measured_s,
                "blocks": {s: [vars(b) for b in bs] for s, bs in self.blocks.items()}}


@dataclass
class Looks:
    """The sequential run: budget, the looks planned for it, the looks run, why it stopped,
    and the parts still open when it stopped (each with the seeds its next look needs)."""

    budget_s: float | None
    planned_looks: int | None
    records: list[LookRecord] = field(default_factory=list)
    stopped: str = ""
    still_open: list[Wanted] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    longer: str = ""  # the 2× longer runs of would-be contradictions: run, or why not

    def to_dict(self) -> dict[str, Any]:
        return {"budget_s": self.budget_s, "planned_looks": self.planned_looks,
                "looks": [r.to_dict() for r in self.records], "stopped": self.stopped,
                "longer": self.longer,
                "still_open": [vars(w) for w in self.still_open]}


def claims_of(names: Sequence[str]) -> list[str]:
    """The experimental claims graded on the suites `names`, in id order."""
    return sorted(cid for cid, suite in SUITE_OF.items() if suite in names)


def sequential(rule: Rule) -> bool:
    return rule.max_seeds is not None


def recorded_rules(request: RunRequest) -> dict[str, dict[str, str]]:
    """{suite: {"<claim> <part>": planned hash}}: the registered rules recorded beside the
    request's runs when they are planned (`catalogue.planned_hash`), those of its size, at
    every precision: the ledger grades a bf16 folder by the same rules."""
    return suite_rules(request.size)


def open_parts(rows: Sequence[Any], size: str, arms_of: Callable[[str], list[str]]
               ) -> list[Wanted]:
    """The parts of `rows` (ledger rows) still open: inconclusive, measured on seeds of arms,
    with a look left in their design. `arms_of(suite)` lists a suite's planned arms ([]: the
    suite is not planned now, and its parts are not open)."""
    out = []
    for row in rows:
        suite = SUITE_OF.get(row.id)
        if suite is None or row.error or not arms_of(suite):
            continue
        rules = registered(row.id, size)
        for part in row.parts:
            rule = rules.get(part.name)
            if rule is None or not sequential(rule) or part.verdict != INCONCLUSIVE:
                continue
            n = part.estimate.n
            if n < 1:  # no result to build on: the suite's own plan runs it first
                continue
            target = rule.next_look(n)
            if target is None:
                continue
            arms = tuple(part_arms(row.id, part.name, rule.metric, arms_of(suite)))
            later = tuple((t, chance_to_decide(rule, part.estimate, t))
                          for t in rule.schedule if t > n)
            out.append(Wanted(row.id, part.name, suite, arms, n, target, later[0][1], later))
    return out


def chance_to_decide(rule: Rule, estimate: Any, target: int) -> float:
    """The power of the part's test at `target` seeds at that look's level (`look_level`,
    before Holm's share) against an effect as far from the claim's boundary as the estimate,
    at its spread; 1.0 where there is no spread to read (so such a part is not passed over)."""
    value, sd = estimate.value, estimate.sd
    if value is None or sd is None or not sd > 0:
        return 1.0
    distance = boundary_distance(rule, value)
    level = look_level(rule, target)
    if distance == 0 or level <= 0:
        return 0.0
    return stats.power(distance, sd, target, alpha=level)


def buy(wanted: Sequence[Wanted], coverage: dict[str, dict[str, int]], first_seed: int,
        walls: dict[str, dict[str, float]], workers: int, left_s: float | None
        ) -> list[Wanted]:
    """The open parts whose next blocks this look buys with `left_s` seconds of wall time left
    (None: all), re-run after every look with the time then left.

    Each part is bought with a path: its looks up to one it may stop at (`Wanted.path`), and
    the time of the whole path, look by look (each look waits for its slowest run), is
    reserved while the path fits. Paths are taken greedily, the likeliest to decide a part per
    second of compute first (the chance at the path's last look over the path's own wall
    time); a part whose path does not fit is passed over for cheaper ones, and a shorter path
    of the same part may still fit. So time that a likely part's later looks need is not spent
    on blocks unlikely to decide anything; the parts bought get their next block now."""
    if left_s is None:
        return list(wanted)
    options = [(w, t, chance) for w in wanted for t, chance in w.path()]

    def alone(option: tuple[Wanted, int, float]) -> float:
        w, t, chance = option
        return chance / max(path_seconds({w: t}, coverage, first_seed, walls, workers), 1e-6)

    ranked = sorted(options, key=lambda o: (-alone(o), o[0].claim, o[0].part, o[1]))
    chosen: dict[Wanted, int] = {}
    for w, t, _ in ranked:
        if w in chosen:
            continue
        if path_seconds({**chosen, w: t}, coverage, first_seed, walls, workers) <= left_s:
            chosen[w] = t
    return list(chosen)


def path_seconds(paths: dict[Wanted, int], coverage: dict[str, dict[str, int]],
                 first_seed: int, walls: dict[str, dict[str, float]], workers: int) -> float:
    """The wall time of the looks that take each part of `paths` to the seeds it maps to,
    through its design's looks (`Wanted.path`), as the runner runs them: look by look, each
    look's runs across `workers` (`makespan`), every part still open."""
    from blocklab.experiments.estimate import makespan

    have = {suite: dict(arms) for suite, arms in coverage.items()}
    steps = {w: [t for t, _ in w.path() if t <= final] for w, final in paths.items()}
    total, j = 0.0, 0
    while True:
        look = [replace(w, target=ts[j]) for w, ts in steps.items() if j < len(ts)]
        if not look:
            return total
        blocks = next_blocks(look, have, first_seed)
        total += makespan(priced(blocks, walls), max(workers, 1))
        for suite, bs in blocks.items():
            for b in bs:
                for arm in b.arms:
                    have.setdefault(suite, {})[arm] = b.stop - first_seed
        j += 1


def next_blocks(wanted: Sequence[Wanted], coverage: dict[str, dict[str, int]],
                first_seed: int) -> dict[str, list[SeedBlock]]:
    """The seed blocks that bring each wanted part's arms to its target, per suite.

    coverage: {suite: {arm: seeds it has run from first_seed on}}. An arm is extended to the
    largest target any open part asks of it; arms that share (start, stop) share a block."""
    need: dict[tuple[str, str], tuple[int, list[str]]] = {}
    for w in wanted:
        for arm in w.arms:
            target, why = need.get((w.suite, arm), (0, []))
            need[(w.suite, arm)] = (max(target, w.target), [*why, f"{w.claim} {w.part}"])
    grouped: dict[tuple[str, int, int], tuple[list[str], list[str]]] = {}
    for (suite, arm), (target, why) in sorted(need.items()):
        have = coverage.get(suite, {}).get(arm, 0)
        if target <= have:
            continue
        key = (suite, first_seed + have, first_seed + target)
        arms, parts = grouped.setdefault(key, ([], []))
        arms.append(arm)
        parts.extend(p for p in why if p not in parts)
    out: dict[str, list[SeedBlock]] = {}
    for (suite, start, stop), (arms, parts) in grouped.items():
        out.setdefault(suite, []).append(SeedBlock(start, stop, sorted(arms), parts))
    return out


def coverage_of(planned: Any) -> dict[str, int]:
    """{arm: seeds it runs} of a planned suite (`PlannedSuite`), counted from its first seed
    (its planned seeds, plus the seed blocks that include it)."""
    base = planned.seeds.start
    counts: dict[str, set[int]] = {}
    for spec in planned.specs:
        counts.setdefault(spec.arm, set()).add(spec.seed)
    out = {}
    for arm, seeds in counts.items():
        k = 0
        while base + k in seeds:
            k += 1
        out[arm] = k
    return out


def _plan(request: RunRequest, name: str) -> Any:
    from blocklab.experiments.suites import get_suite
    from blocklab.experiments.suites.base import plan_suite

    suite = get_suite(name)
    return plan_suite(suite, request.options(suite), request.results)


def arm_wall_s(request: RunRequest, name: str) -> dict[str, float]:
    """{arm: mean stored wall time of its runs} in suite `name`'s folder: what this machine
    took for the same work."""
    from blocklab.experiments.suites import get_suite
    from blocklab.experiments.suites.base import ResultStore, suite_dir

    suite = get_suite(name)
    store = ResultStore(suite_dir(request.results, suite, request.options(suite)))
    walls: dict[str, list[float]] = {}
    for spec in _plan(request, name).specs:
        if store.has(spec.run_id):
            wall = store.load(spec.run_id).wall_time_s
            if isinstance(wall, int | float):
                walls.setdefault(spec.arm, []).append(float(wall))
    return {arm: sum(w) / len(w) for arm, w in walls.items()}


def priced(blocks: dict[str, list[SeedBlock]], walls: dict[str, dict[str, float]]
           ) -> list[float]:
    """The seconds of each run of `blocks`, each priced at its arm's stored mean wall time
    (`walls`: {suite: `arm_wall_s`}; 0 for an arm with no stored run)."""
    return [walls.get(name, {}).get(arm, 0.0)
            for name, bs in blocks.items() for b in bs for arm in b.arms
            for _ in range(b.stop - b.start)]


def run_looks(request: RunRequest, names: Sequence[str], *, plan: BudgetPlan | None = None,
              run: Callable[..., dict[str, str]], workers: int,
              echo: Callable[[str], None] = print, executor: Any = None,
              progress: bool = False) -> Looks:
    """Run the first look (`run(rules=…)`: the suites at their planned seeds, the registered
    rule hashes recorded with their runs), then further looks while parts are open, each
    buying the blocks that fit in what is left of the request's `budget_s` of wall time from
    now (`buy`; `plan`, priced before any data, is kept as the estimate it was). Last, the parts that would be contradicted get
    their arms trained twice as long on the same seeds (`run_longer`, with `executor`), when
    that fits the budget too. Every look reads and grades what `request` names (its results
    folder, size, seed offset and precision).

    `run(rules=…)` runs and summarises the suites (`blocklab.experiments.suites.run_suites`
    with the caller's executor and the same request), returning {suite: error}."""
    start = time.perf_counter()
    rules = recorded_rules(request)
    looks = Looks(request.budget_s, None if plan is None else plan.planned_looks)
    looks.errors = run(rules=rules)
    ids = claims_of(names)
    k = 1
    while True:
        rows = run_claims(ids, Context(request))
        planned = {name: _plan(request, name) for name in names if name not in looks.errors}
        arms = {name: sorted({spec.arm for spec in p.specs}) for name, p in planned.items()}
        if not _next_look(looks, rows, planned, arms, k, start, request, run, rules, workers,
                          echo, plan):
            break
        k += 1
    _check_contradictions(looks, rows, arms, start, request, workers, echo, executor, progress)
    return looks


def _next_look(looks: Looks, rows: Sequence[Any], planned: dict[str, Any],
               arms: dict[str, list[str]], k: int, start: float, request: RunRequest,
               run: Callable[..., dict[str, str]], rules: dict[str, dict[str, str]],
               workers: int, echo: Callable[[str], None], plan: BudgetPlan | None) -> bool:
    """Run look k + 1 for the open parts the plan bought it for, if it fits; False (with
    `looks.stopped` said) when the design stops here."""
    from blocklab.experiments.estimate import makespan
    from blocklab.experiments.suites import get_suite
    from blocklab.experiments.suites.base import add_seed_blocks, suite_dir

    wanted = [w for w in open_parts(rows, request.size, lambda s: arms.get(s, []))
              if w.suite in planned]
    looks.still_open = wanted
    # Re-planned at every look with the time left (the plan made before any data only
    # estimates): each part with its path of looks, likeliest per second first, while they fit.
    coverage = {s: coverage_of(p) for s, p in planned.items()}
    # Prices first (reading the stored runs takes a while), then the time left, then what
    # fits in it at those prices: the look bought is the look checked, never re-priced after
    # the clock moved on (which stopped a fresh quick report with 4 minutes unused).
    walls = {name: arm_wall_s(request, name) for name in {w.suite for w in wanted}}
    elapsed = time.perf_counter() - start
    left = (None if looks.budget_s is None
            else looks.budget_s - elapsed - BUILD_RESERVE_S)
    bought = buy(wanted, coverage, request.seed_offset, walls, workers, left)
    blocks = next_blocks(bought, coverage, request.seed_offset)
    if not blocks:
        looks.stopped = ("every part is decided or at its last look" if not wanted else
                         f"no open part's next block fits in the {max(left or 0, 0) / 60:.1f} "
                         f"min left of the budget ({len(wanted)} part(s) open)"
                         if not bought else "the open parts' arms cannot run more seeds")
        return False
    wanted = bought
    seconds = priced(blocks, walls)
    runs, estimate = len(seconds), makespan(seconds, max(workers, 1))
    if left is not None and estimate > left:  # `buy` keeps to `left`: a bug if it did not
        raise AssertionError(f"look {k + 1} bought {estimate:.0f} s of runs with {left:.0f} s "
                             "left")
    added = "; ".join(f"{s}: seeds {b.start}–{b.stop - 1} of {len(b.arms)} arm(s)"
                      for s, bs in blocks.items() for b in bs)
    echo(f"look {k + 1}: {len(wanted)} part(s) still open; adding {runs} run(s) ({added}), "
         f"about {estimate / 60:.1f} min")
    for name, bs in blocks.items():
        suite = get_suite(name)
        add_seed_blocks(suite_dir(request.results, suite, request.options(suite)), bs)
    began = time.perf_counter()
    looks.errors.update(run(rules=rules))
    looks.records.append(LookRecord(k + 1, blocks, runs, estimate,
                                    time.perf_counter() - began))
    return True


def _check_contradictions(looks: Looks, rows: Sequence[Any], arms: dict[str, list[str]],
                          start: float, request: RunRequest, workers: int,
                          echo: Callable[[str], None], executor: Any, progress: bool) -> None:
    """Train the arms of would-be contradictions twice as long, if that fits the budget."""
    from blocklab.experiments.estimate import makespan

    due = would_contradict(rows, request.size, lambda s: arms.get(s, []))
    if not due:
        return
    seconds = []
    for name, parts in due.items():
        walls = arm_wall_s(request, name)
        n = len(_plan(request, name).seeds)
        seconds += [2 * walls.get(arm, 0.0)  # every seed, twice the steps
                    for arm in sorted({a for w in parts for a in w.arms})] * n
    estimate = makespan(seconds, max(workers, 1))
    names = ", ".join(f"{w.claim} {w.part}" for ws in due.values() for w in ws)
    elapsed = time.perf_counter() - start
    if looks.budget_s is not None and elapsed + estimate + BUILD_RESERVE_S > looks.budget_s:
        looks.longer = (f"due but not run: {names} would be contradicted; training their "
                        f"arms twice as long takes about {estimate / 60:.1f} min, past the "
                        "budget")
        echo(looks.longer)
        return
    echo(f"{names} would be contradicted: training their arms twice as long on the same "
         f"seeds, about {estimate / 60:.1f} min")
    looks.errors.update(run_longer(request, due, executor=executor, progress=progress))
    looks.longer = f"run for {names}"


@dataclass(frozen=True)
class BudgetPlan:
    """A budget turned into seed blocks before anything runs.

    first_s: the first look's estimated wall time (its runs still missing)
    looks: each further look's worst case, every sequential part still open (runs, wall s)
    allowed: {(suite, arm): seeds} the budget buys: each further look's blocks, part by part,
        cheapest first, while the running total fits (None: no limit). A part left out at
        one look is left out at the later ones, whose seeds build on it.
    planned_looks: further looks with at least one planned block (None: no limit)
    spent_s: the estimated wall time of the first look, the planned blocks and the build
    """

    budget_s: float | None
    first_s: float
    looks: list[tuple[int, float]]
    planned_looks: int | None
    workers: int
    allowed: dict[tuple[str, str], int] | None = None
    parts: list[str] = field(default_factory=list)
    spent_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"budget_s": self.budget_s, "first_look_s": self.first_s,
                "further_looks": [{"runs": r, "wall_s": w} for r, w in self.looks],
                "planned_looks": self.planned_looks, "workers": self.workers,
                "planned_blocks": None if self.allowed is None else
                [{"suite": k[0], "arm": k[1], "seeds": v}
                 for k, v in sorted(self.allowed.items())],
                "planned_parts": self.parts, "planned_s": self.spent_s}

    def admits(self, w: Wanted) -> bool:
        """Whether the plan bought seeds up to w.target for every arm of part w."""
        return self.allowed is None or all(
            self.allowed.get((w.suite, arm), 0) >= w.target for arm in w.arms)


def worst_case_blocks(request: RunRequest, names: Sequence[str]
                      ) -> list[dict[str, list[SeedBlock]]]:
    """Each further look's seed blocks when every sequential part is still open: look j
    brings every part's arms to the j-th point of its schedule past its first look, from the
    suites' planned seeds."""
    first = request.seed_offset
    arms, coverage = _planned_arms(request, names)
    out = []
    for j in range(1, 64):
        wanted = [w for w in _parts_at_look(request.size, names, arms, j)]
        blocks = next_blocks(wanted, coverage, first)
        if not blocks:
            return out
        for name, bs in blocks.items():
            for b in bs:
                for arm in b.arms:
                    coverage[name][arm] = max(coverage[name][arm], b.stop - first)
        out.append(blocks)
    return out


def _planned_arms(request: RunRequest, names: Sequence[str]
                  ) -> tuple[dict[str, list[str]], dict[str, dict[str, int]]]:
    """({suite: planned arms}, {suite: {arm: planned seeds}}) before anything runs."""
    from blocklab.experiments.suites import get_suite

    arms: dict[str, list[str]] = {}
    coverage: dict[str, dict[str, int]] = {}
    for name in names:
        suite = get_suite(name)
        seeds = request.options(suite).seeds  # the suite's planned seeds
        arms[name] = sorted({spec.arm for spec in _suite_specs(request, suite, seeds)})
        coverage[name] = dict.fromkeys(arms[name], len(seeds))
    return arms, coverage


def _suite_specs(request: RunRequest, suite: Any, seeds: range) -> list[Any]:
    """A suite's evaluation runs on `seeds` before anything runs (a tuned suite planned without
    tuning results, as the estimator prices it: the cost does not depend on the lr chosen)."""
    return suite.plan(request.options(suite).with_seeds(seeds), [])


def _parts_at_look(size: str, names: Sequence[str], arms: dict[str, list[str]], j: int
                   ) -> list[Wanted]:
    """Every sequential part of the suites `names` that has a j-th look past its first, with
    the seeds that look needs."""
    out = []
    for cid in claims_of(names):
        suite = SUITE_OF[cid]
        for part, rule in registered(cid, size).items():
            if not sequential(rule) or len(rule.schedule) <= j:
                continue
            mine = tuple(part_arms(cid, part, rule.metric, arms[suite]))
            out.append(Wanted(cid, part, suite, mine, rule.schedule[j - 1], rule.schedule[j]))
    return out


def plan_budget(request: RunRequest, names: Sequence[str], *, workers: int,
                calibration: Any = None) -> BudgetPlan:
    """The seed blocks the request's `budget_s` of wall time buys on this machine, decided
    before anything runs: the first look's missing runs (`estimate.estimate_suites`), then look
    by look each sequential part's next block, cheapest first, while the total fits
    (`BudgetPlan`), all priced with one calibration of this machine. Same request, same
    calibration: same plan."""
    from blocklab.experiments.estimate import (
        calibrate,
        estimate_suites,
        makespan,
        price_specs,
        shapes_of,
    )
    from blocklab.experiments.suites import get_suite

    budget_s, size, seed_offset = request.budget_s, request.size, request.seed_offset
    first = estimate_suites(request, names, calibration=calibration)
    cal = first.calibration
    first_s = first.wall_s(workers) if cal is not None else 0.0
    arms, coverage = _planned_arms(request, names)
    cache: dict[tuple[str, int, int], list[Any]] = {}

    def specs_of(suite_name: str, arm: str, have: int, target: int) -> list[tuple[Any, Any]]:
        key = (suite_name, have, target)
        if key not in cache:
            suite = get_suite(suite_name)
            more = range(seed_offset + have, seed_offset + target)
            cache[key] = [(suite, spec) for spec in _suite_specs(request, suite, more)
                          if not spec.timed]
        return [(suite, spec) for suite, spec in cache[key] if spec.arm == arm]

    worst = worst_case_blocks(request, names)
    needed = shapes_of([pair for look in worst for name, bs in look.items() for b in bs
                        for arm in b.arms
                        for pair in specs_of(name, arm, b.start - seed_offset,
                                             b.stop - seed_offset)])
    # The first look's calibration times only the shapes it has to run (runs with a stored
    # twin are priced at its wall time): time every shape the blocks need when one is missing.
    if needed and (cal is None or any(key not in cal.timings for key in needed)):
        cal = calibrate(needed)
    wall = max(workers, 1)

    def seconds_of(name: str, arm: str, have: int, target: int) -> list[float]:
        return [p or 0.0 for p in price_specs(specs_of(name, arm, have, target), cal)]

    looks = []
    for look in worst:
        seconds = [x for name, bs in look.items() for b in bs for arm in b.arms
                   for x in seconds_of(name, arm, b.start - seed_offset, b.stop - seed_offset)]
        looks.append((len(seconds), makespan(seconds, wall)))
    if budget_s is None:
        return BudgetPlan(None, first_s, looks, None, workers)
    spent = first_s + BUILD_RESERVE_S
    have = {(name, arm): n for name, per in coverage.items() for arm, n in per.items()}
    allowed: dict[tuple[str, str], int] = {}
    dropped: set[tuple[str, str]] = set()
    chosen: list[str] = []
    planned_looks = 0
    for j in range(1, 64):
        items = []
        for w in _parts_at_look(size, names, arms, j):
            if (w.claim, w.part) in dropped:
                continue
            need = [(arm, have[(w.suite, arm)]) for arm in w.arms
                    if have[(w.suite, arm)] < w.target]
            seconds = [x for arm, n in need for x in seconds_of(w.suite, arm, n, w.target)]
            items.append((makespan(seconds, wall), w))
        if not items:
            break
        bought = False
        for cost, w in sorted(items, key=lambda item: (item[0], item[1].claim, item[1].part)):
            if spent + cost > budget_s:
                dropped.add((w.claim, w.part))
                continue
            spent += cost
            bought = True
            chosen.append(f"{w.claim} {w.part} to n = {w.target}")
            for arm in w.arms:
                have[(w.suite, arm)] = max(have[(w.suite, arm)], w.target)
                allowed[(w.suite, arm)] = have[(w.suite, arm)]
        planned_looks += bought
    return BudgetPlan(budget_s, first_s, looks, planned_looks, workers, allowed, chosen, spent)


def would_contradict(rows: Sequence[Any], size: str, arms_of: Callable[[str], list[str]]
                     ) -> dict[str, list[Wanted]]:
    """{suite: parts} measured on seeds whose interval lies wholly beyond δ on the opposite
    side while a 2× longer run has not yet agreed (`Decision.would_contradict`), on suites
    that can train their arms twice as long (`Suite.longer`) and are planned now (`arms_of`)."""
    from blocklab.experiments.suites import get_suite

    out: dict[str, list[Wanted]] = {}
    for row in rows:
        suite = SUITE_OF.get(row.id)
        if (suite is None or row.error or not arms_of(suite)
                or get_suite(suite).longer is None):
            continue
        for part in row.parts:
            if (part.decision is None or not part.decision.would_contradict
                    or not sequential(part.rule)):
                continue
            arms = tuple(part_arms(row.id, part.name, part.rule.metric, arms_of(suite)))
            out.setdefault(suite, []).append(
                Wanted(row.id, part.name, suite, arms, part.estimate.n, part.estimate.n))
    return out


def run_longer(request: RunRequest, wanted: dict[str, list[Wanted]], *, executor: Any,
               progress: bool) -> dict[str, str]:
    """Train the arms of `wanted`'s parts twice as long on the same seeds (`Suite.longer`),
    stored and summarised in `<size>+x2` beside the suite's folder, where the ledger reads
    whether the longer run agrees. Returns {suite: error} for a suite whose runs failed."""
    from blocklab.experiments.suites import get_suite
    from blocklab.experiments.suites.base import (
        CountingSink,
        PlannedSuite,
        ResultStore,
        SuiteIncomplete,
        execute_in_process,
        longer_dir,
        stale_reasons,
        summarise_suite,
    )

    errors = {}
    for name, parts in wanted.items():
        suite = get_suite(name)
        base = _plan(request, name)
        arms = sorted({arm for w in parts for arm in w.arms})
        options = base.options.with_seeds(base.seeds)
        specs = suite.longer(options, base.tuned, arms)
        store = ResultStore(longer_dir(request.results, suite, options))
        stale = stale_reasons(specs, store)
        missing = [s for s in specs if not store.has(s.run_id) or s.run_id in stale]
        planned = PlannedSuite(suite, options, base.seeds, specs, store, stale, missing,
                               "evaluate", base.tuned)
        start = time.perf_counter()
        failed = {}
        if missing:
            failed = (executor or execute_in_process)(planned.stamped(),
                                                      CountingSink(store), progress) or {}
        try:
            summarise_suite(planned, failed, time.perf_counter() - start)
        except SuiteIncomplete as err:
            errors[name] = str(err)
    return errors
