"""Seeds where a question is still open: the registered plan of work, run look by look.

The suites run at their planned seeds (the first look), the ledger grades them, and at each
further look every part still undecided gets the next block of its schedule (`Rule.schedule`)
on the arms it compares, until every part is decided or at its last look; a would-be
contradiction then gets its arms trained twice as long. What runs depends on the seeds and the
data only, never on this machine's speed, cores or load.

    plan = price_plan(request, ["ffn", "placement"], workers=2)
    looks = run_looks(request, ["ffn", "placement"], plan=plan, run=..., workers=2)

The price is printed, never obeyed; a cap (`report --budget`) admits whole looks from the first,
fixed from the price before any data, and the report names the looks it cut.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from blocklab.claims.catalogue import SUITE_OF, part_arms, suite_rules
from blocklab.claims.finding import Context
from blocklab.claims.ledger import run_claims
from blocklab.claims.registry import registered
from blocklab.claims.rules import INCONCLUSIVE
from blocklab.experiments.options import RunRequest
from blocklab.experiments.suites import get_suite
from blocklab.experiments.suites.base import (
    CountingSink,
    PlannedSuite,
    ResultStore,
    SuiteIncomplete,
    add_seed_blocks,
    execute_in_process,
    longer_dir,
    plan_suite,
    stale_reasons,
    suite_dir,
    summarise_suite,
)
from blocklab.experiments.summaries import SeedBlock

# Default caps of `blocklab report` per size, in seconds (None: every look; 0: the first only).
DEFAULT_BUDGET_S: dict[str, float | None] = {"tiny": 0.0, "quick": None, "full": None}
# Priced for the report's build after the last look.
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
    """The plan as run: the cap, the further looks it admits (None: every one), the looks
    run, why it stopped, the parts still open then and the looks a cap cut."""

    budget_s: float | None
    admitted_looks: int | None
    records: list[LookRecord] = field(default_factory=list)
    stopped: str = ""
    still_open: list[Wanted] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    longer: str = ""  # the 2× longer runs of would-be contradictions: run, or why not
    cut: list[str] = field(default_factory=list)  # "C16 glu to n = 8", one per cut part-look

    def to_dict(self) -> dict[str, Any]:
        return {"budget_s": self.budget_s, "admitted_looks": self.admitted_looks,
                "looks": [r.to_dict() for r in self.records], "stopped": self.stopped,
                "longer": self.longer, "cut": self.cut,
                "still_open": [vars(w) for w in self.still_open]}


def claims_of(names: Sequence[str]) -> list[str]:
    return sorted(cid for cid, suite in SUITE_OF.items() if suite in names)


def recorded_rules(request: RunRequest) -> dict[str, dict[str, str]]:
    """{suite: {"<claim> <part>": planned hash}} recorded beside the request's runs, at every
    precision (the ledger grades a bf16 folder by the same rules)."""
    return suite_rules(request.size)


def open_parts(rows: Sequence[Any], size: str, arms_of: Callable[[str], list[str]],
               coverage: dict[str, dict[str, int]] | None = None) -> list[Wanted]:
    """The parts of `rows` (ledger rows) still open: inconclusive, measured on seeds of arms,
    with a look left in their design. `arms_of(suite)`: a suite's planned arms ([]: not
    planned now). A part's next look is the first past both its paired seeds and the seeds its
    arms ran (`coverage`: {suite: {arm: seeds run}}), so a part that lost seeds asks for the
    next block, not for seeds its arms have."""
    out = []
    for row in rows:
        suite = SUITE_OF.get(row.id)
        if suite is None or row.error or not arms_of(suite):
            continue
        rules = registered(row.id, size)
        for part in row.parts:
            rule = rules.get(part.name)
            if rule is None or rule.max_seeds is None or part.verdict != INCONCLUSIVE:
                continue
            if getattr(getattr(part, "decision", None), "unfair", None):  # no seeds: see decide
                continue
            n = part.estimate.n
            if n < 1:  # no result to build on: the suite's own plan runs it first
                continue
            arms = tuple(part_arms(row.id, part.name, rule.metric, arms_of(suite)))
            ran = min(((coverage or {}).get(suite, {}).get(arm, 0) for arm in arms), default=0)
            target = rule.next_look(max(n, ran))
            if target is None:
                continue
            out.append(Wanted(row.id, part.name, suite, arms, n, target))
    return out


def next_blocks(wanted: Sequence[Wanted], coverage: dict[str, dict[str, int]],
                first_seed: int) -> dict[str, list[SeedBlock]]:
    """The seed blocks that bring each wanted part's arms to its target, per suite (coverage:
    {suite: {arm: seeds run from first_seed on}}); arms that share (start, stop) share one."""
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
    """{arm: consecutive seeds it runs from the first} of a planned suite (`PlannedSuite`)."""
    base = planned.seeds.start
    counts: dict[str, set[int]] = {}
    for spec in planned.specs:
        counts.setdefault(spec.arm, set()).add(spec.seed)
    return {arm: next(k for k in itertools.count() if base + k not in seeds)
            for arm, seeds in counts.items()}


def _plan(request: RunRequest, name: str) -> Any:
    suite = get_suite(name)
    return plan_suite(suite, request.options(suite), request.results)


def arm_wall_s(request: RunRequest, name: str) -> dict[str, float]:
    """{arm: mean stored wall time of its runs} in suite `name`'s folder."""
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
    """Each run of `blocks` priced at its arm's stored mean wall time (0 without one)."""
    return [walls.get(name, {}).get(arm, 0.0)
            for name, bs in blocks.items() for b in bs for arm in b.arms
            for _ in range(b.stop - b.start)]


def run_looks(request: RunRequest, names: Sequence[str], *, plan: WorkPlan | None = None,
              run: Callable[..., dict[str, str]], workers: int,
              echo: Callable[[str], None] = print, executor: Any = None,
              progress: bool = False) -> Looks:
    """Run the plan: the first look (`run(rules=…)` runs and summarises the suites, recording
    the rule hashes, and returns {suite: error}), the next block of every part still open look
    after look, then the 2× longer runs of would-be contradictions. No clock is read: only a
    cap (`plan.admitted`) stops looks early; `workers` only prices what each look prints."""
    rules = recorded_rules(request)
    admitted = None if plan is None else plan.admitted
    if plan is None and request.budget_s == 0:
        admitted = 0
    looks = Looks(request.budget_s, admitted)
    looks.errors = run(rules=rules)
    ids = claims_of(names)
    for k in itertools.count(1):
        rows = run_claims(ids, Context(request))
        planned = {name: _plan(request, name) for name in names if name not in looks.errors}
        arms = {name: sorted({spec.arm for spec in p.specs}) for name, p in planned.items()}
        if not _next_look(looks, rows, planned, arms, k, request, run, rules, workers, echo):
            break
    _check_contradictions(looks, rows, arms, request, echo, executor, progress)
    return looks


def _next_look(looks: Looks, rows: Sequence[Any], planned: dict[str, Any],
               arms: dict[str, list[str]], k: int, request: RunRequest,
               run: Callable[..., dict[str, str]], rules: dict[str, dict[str, str]],
               workers: int, echo: Callable[[str], None]) -> bool:
    """Run look k + 1 for every part still open; False (`looks.stopped` said) where the plan
    or its cap ends."""
    from blocklab.experiments.estimate import makespan

    coverage = {s: coverage_of(p) for s, p in planned.items()}
    wanted = [w for w in open_parts(rows, request.size, lambda s: arms.get(s, []), coverage)
              if w.suite in planned]
    looks.still_open = wanted
    if not wanted:
        looks.stopped = "every part is decided or at its last look"
        return False
    if looks.admitted_looks is not None and k - 1 >= looks.admitted_looks:
        looks.cut = [f"{w.claim} {w.part} to n = {w.target}" for w in wanted]
        looks.stopped = (f"the cap admits {looks.admitted_looks} further look(s) of the plan; "
                         f"look {k + 1} and any after it were cut ({len(wanted)} part(s) open)")
        return False
    blocks = next_blocks(wanted, coverage, request.seed_offset)
    if not blocks:
        looks.stopped = "the open parts' arms cannot run more seeds"
        return False
    walls = {name: arm_wall_s(request, name) for name in blocks}
    seconds = priced(blocks, walls)
    runs, estimate = len(seconds), makespan(seconds, max(workers, 1))
    added = "; ".join(f"{s}: seeds {b.start}–{b.stop - 1} of {len(b.arms)} arm(s)"
                      for s, bs in blocks.items() for b in bs)
    echo(f"look {k + 1}: {len(wanted)} part(s) still open; adding {runs} run(s) ({added}), "
         f"about {estimate / 60:.1f} min here")
    for name, bs in blocks.items():
        suite = get_suite(name)
        add_seed_blocks(suite_dir(request.results, suite, request.options(suite)), bs)
    began = time.perf_counter()
    looks.errors.update(run(rules=rules))
    looks.records.append(LookRecord(k + 1, blocks, runs, estimate,
                                    time.perf_counter() - began))
    return True


def _check_contradictions(looks: Looks, rows: Sequence[Any], arms: dict[str, list[str]],
                          request: RunRequest, echo: Callable[[str], None], executor: Any,
                          progress: bool) -> None:
    """Train the arms of would-be contradictions twice as long, unless a cap cut looks."""
    due = would_contradict(rows, request.size, lambda s: arms.get(s, []))
    if not due:
        return
    names = ", ".join(f"{w.claim} {w.part}" for ws in due.values() for w in ws)
    if looks.cut or looks.admitted_looks == 0:
        looks.longer = (f"due but cut by the cap: {names} would be contradicted; the plan "
                        "trains their arms twice as long on the same seeds")
        looks.cut.append(f"2× longer runs for {names}")
        echo(looks.longer)
        return
    echo(f"{names} would be contradicted: training their arms twice as long on the same "
         "seeds")
    looks.errors.update(run_longer(request, due, executor=executor, progress=progress))
    looks.longer = f"run for {names}"


@dataclass(frozen=True)
class WorkPlan:
    """The plan of work priced before anything runs, and what a cap admits of it."""

    budget_s: float | None
    first_s: float  # the first look's estimated wall time (its runs still missing)
    looks: list[tuple[int, float]]  # each further look's worst case (runs, wall s)
    # whole further looks a cap admits while the priced total fits; None without a cap
    admitted: int | None
    workers: int
    price_s: float = 0.0  # the whole plan, worst case (every look, every part open)

    def to_dict(self) -> dict[str, Any]:
        return {"budget_s": self.budget_s, "first_look_s": self.first_s,
                "further_looks": [{"runs": r, "wall_s": w} for r, w in self.looks],
                "admitted_looks": self.admitted, "workers": self.workers,
                "price_s": self.price_s}

    def text(self) -> str:
        """The price as `report` prints it first."""
        further = sum(w for _, w in self.looks)
        cap = ("" if self.budget_s is None else
               f"; the cap of {self.budget_s / 60:.0f} min admits {self.admitted} of them")
        return (f"plan: the first look about {self.first_s / 60:.1f} min here, then up to "
                f"{len(self.looks)} further look(s), about {further / 60:.1f} min if every "
                f"part stayed open{cap}; about {self.price_s / 60:.1f} min at most on "
                f"{self.workers} worker(s)")


def worst_case_blocks(request: RunRequest, names: Sequence[str]
                      ) -> list[dict[str, list[SeedBlock]]]:
    """Each further look's seed blocks with every sequential part still open: look j brings
    every part's arms to the j-th point of its schedule past its first look."""
    first = request.seed_offset
    arms, coverage = _planned_arms(request, names)
    out = []
    for j in range(1, 64):
        blocks = next_blocks(_parts_at_look(request.size, names, arms, j), coverage, first)
        if not blocks:
            return out
        for name, bs in blocks.items():  # each block starts at its arms' coverage
            coverage[name].update((arm, b.stop - first) for b in bs for arm in b.arms)
        out.append(blocks)
    return out


def _planned_arms(request: RunRequest, names: Sequence[str]
                  ) -> tuple[dict[str, list[str]], dict[str, dict[str, int]]]:
    """({suite: planned arms}, {suite: {arm: planned seeds}}) before anything runs."""
    arms: dict[str, list[str]] = {}
    coverage: dict[str, dict[str, int]] = {}
    for name in names:
        suite = get_suite(name)
        seeds = request.options(suite).seeds  # the suite's planned seeds
        arms[name] = sorted({spec.arm for spec in _suite_specs(request, suite, seeds)})
        coverage[name] = dict.fromkeys(arms[name], len(seeds))
    return arms, coverage


def _suite_specs(request: RunRequest, suite: Any, seeds: range) -> list[Any]:
    """A suite's evaluation runs on `seeds`, planned without tuning results (the cost does not
    depend on the lr chosen)."""
    return suite.plan(request.options(suite).with_seeds(seeds), [])


def _parts_at_look(size: str, names: Sequence[str], arms: dict[str, list[str]], j: int
                   ) -> list[Wanted]:
    """Every sequential part of `names`' suites with a j-th look past its first."""
    out = []
    for cid in claims_of(names):
        suite = SUITE_OF[cid]
        for part, rule in registered(cid, size).items():
            if rule.max_seeds is None or len(rule.schedule) <= j:
                continue
            mine = tuple(part_arms(cid, part, rule.metric, arms[suite]))
            out.append(Wanted(cid, part, suite, mine, rule.schedule[j - 1], rule.schedule[j]))
    return out


def price_plan(request: RunRequest, names: Sequence[str], *, workers: int,
               calibration: Any = None) -> WorkPlan:
    """The plan's price here before anything runs: the first look's missing runs, then each
    further look's worst case, on one calibration; under a cap, the whole looks that fit."""
    from blocklab.experiments.estimate import (
        calibrate,
        estimate_suites,
        makespan,
        price_specs,
        shapes_of,
    )

    budget_s, seed_offset = request.budget_s, request.seed_offset
    first = estimate_suites(request, names, calibration=calibration)
    cal = first.calibration
    first_s = first.wall_s(workers) if cal is not None else 0.0
    cache: dict[tuple[str, int, int], list[Any]] = {}

    def specs_of(suite_name: str, arm: str, have: int, target: int) -> list[tuple[Any, Any]]:
        key = (suite_name, have, target)
        if key not in cache:
            suite = get_suite(suite_name)
            more = range(seed_offset + have, seed_offset + target)
            cache[key] = [(suite, spec) for spec in _suite_specs(request, suite, more)
                          if not spec.timed]
        return [(suite, spec) for suite, spec in cache[key] if spec.arm == arm]

    worst = [] if budget_s == 0 else worst_case_blocks(request, names)
    pairs = [pair for look in worst for name, bs in look.items() for b in bs for arm in b.arms
             for pair in specs_of(name, arm, b.start - seed_offset, b.stop - seed_offset)]
    needed = shapes_of(pairs)
    # the first look's calibration times only the shapes it runs: time any the blocks add
    if needed and (cal is None or any(key not in cal.timings for key in needed)):
        cal = calibrate(needed)
    looks = []
    for look in worst:
        seconds = [p or 0.0 for name, bs in look.items() for b in bs for arm in b.arms
                   for p in price_specs(specs_of(name, arm, b.start - seed_offset,
                                                 b.stop - seed_offset), cal)]
        looks.append((len(seconds), makespan(seconds, max(workers, 1))))
    admitted: int | None = None
    if budget_s is not None:  # the looks before the first whose running total passes the cap
        totals = itertools.accumulate((w for _, w in looks), initial=first_s + BUILD_RESERVE_S)
        admitted = next((i for i, t in enumerate(list(totals)[1:]) if t > budget_s), len(looks))
    price = first_s + BUILD_RESERVE_S + sum(w for _, w in looks)
    return WorkPlan(budget_s, first_s, looks, admitted, workers, price)


def would_contradict(rows: Sequence[Any], size: str, arms_of: Callable[[str], list[str]]
                     ) -> dict[str, list[Wanted]]:
    """{suite: parts} that would be contradicted (`Decision.would_contradict`), on suites
    that can train their arms twice as long (`Suite.longer`) and are planned now."""
    out: dict[str, list[Wanted]] = {}
    for row in rows:
        suite = SUITE_OF.get(row.id)
        if (suite is None or row.error or not arms_of(suite)
                or get_suite(suite).longer is None):
            continue
        for part in row.parts:
            if (part.decision is None or not part.decision.would_contradict
                    or part.rule.max_seeds is None):
                continue
            arms = tuple(part_arms(row.id, part.name, part.rule.metric, arms_of(suite)))
            out.setdefault(suite, []).append(
                Wanted(row.id, part.name, suite, arms, part.estimate.n, part.estimate.n))
    return out


def run_longer(request: RunRequest, wanted: dict[str, list[Wanted]], *, executor: Any,
               progress: bool) -> dict[str, str]:
    """Train the arms of `wanted`'s parts twice as long on the same seeds (`Suite.longer`),
    stored in `<size>+x2` where the ledger reads them; {suite: error} for failed suites."""
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
