"""What a suite is, how it runs, and the paired statistics its summaries use.

A suite is a grid of independent runs, each a `RunSpec` whose JSON-able `payload` fully
determines it (hashed into its run id). `run_suite` executes the specs whose result is not
stored yet, saving each as it finishes (so an interrupted suite resumes), then `summarise`
turns the stored results into tables; it never trains anything.

A suite may tune first (`Suite.tune`): its tuning runs are stored apart (`<size>+tuning`), on
seeds beyond every evaluation seed, and `plan` gets their results. A suite is summarised only
once every run has a stored result, else `SuiteIncomplete` names the missing ones.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from blocklab.errors import InputError, Interrupted, ResultsError
from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import ResultSink, ResultStore, json_safe, train_identity
from blocklab.experiments.run_result import RunLabel, RunResult
from blocklab.experiments.scale import Scale
from blocklab.experiments.summaries import (
    Interval,
    RunCount,
    SeedBlock,
    Summary,
    TimeRatio,
    decode,
    mixed_notes,
    save_summary,
)
from blocklab.jsonio import read_json, write_atomic

if TYPE_CHECKING:
    from blocklab.config import ModelConfig
    from blocklab.experiments.trainer import TrainConfig


@dataclass(frozen=True)
class RunSpec:
    """One run of a suite. `execute(progress)` returns its `RunResult`."""

    label: str
    arm: str
    seed: int
    payload: dict[str, Any]
    execute: Callable[[Any], RunResult] = field(compare=False, repr=False)
    timed: bool = False  # it measures time, so it runs alone, never beside other runs
    # False: an evaluation run that reads nothing the tuning chooses (a probe at
    # initialisation, a timing, an lr sweep), so it runs beside the tuning runs.
    reads_tuning: bool = True

    @property
    def run_id(self) -> str:
        canonical = json.dumps(json_safe(self.payload), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]


Results = list[tuple[RunSpec, RunResult]]
K = TypeVar("K")  # what `interleaved` times
T = TypeVar("T")  # what one of its measurements returns


@dataclass(frozen=True)
class Suite:
    """`plan(options, tuned)` lists the runs of `options.seeds` (`tuned`: the tuning runs'
    pairs, [] before any is stored); `summarise(options, results)` builds tables from the
    (spec, result) pairs, tuning runs first. The report shows them and `figures` under
    `heading` (English, Chinese) in the page section `section` (default: its own)."""

    name: str
    description: str
    plan: Callable[[RunOptions, Results], list[RunSpec]]
    summarise: Callable[[RunOptions, Results], Summary]
    data_type: type
    section: str = ""
    heading: tuple[str, str] = ("", "")
    figures: tuple[str, ...] = ()  # keys of `blocklab.report.figures.FIGURES`, in page order
    default_seeds: dict[str, int] = field(default_factory=lambda: {"tiny": 1, "quick": 2,
                                                                    "full": 5})
    # `tune(options, tuned so far)`: every tuning run due (a grid grows at an edge)
    tune: Callable[[RunOptions, Results], list[RunSpec]] | None = None
    precisions: tuple[str, ...] = ("fp32",)  # what its models may train in
    # `price(spec, calibration)`: a run's estimated seconds; None: a plain training run's
    price: Callable[[RunSpec, Any], float | None] | None = None
    # `longer(options, tuned, arms)`: `arms` trained twice as long (a would-be contradiction)
    longer: Callable[[RunOptions, Results, list[str]], list[RunSpec]] | None = None
    # how its runs become the metrics rules read: in every rule hash, so a folder planned
    # before a metric changed is flagged, not silently regraded
    metric_version: str = ""
    # (size, claim) -> the scale a claim's training runs are graded at
    scale: Callable[[str, str], Scale | None] | None = field(default=None, compare=False,
                                                              repr=False)
    # size -> (model config, batch, seq_len) of its main training runs (`--precision auto`)
    shape: Callable[[str], tuple[Any, int, int]] | None = field(default=None, compare=False,
                                                                 repr=False)

    def __post_init__(self) -> None:
        # A mistake here is a bug in the suite's definition, not the user's input.
        if not (isinstance(self.data_type, type) and dataclasses.is_dataclass(self.data_type)):
            raise TypeError(f"suite {self.name}: data_type must be a dataclass, got "
                            f"{self.data_type!r}")
        if not self.section:
            object.__setattr__(self, "section", self.name)
        if self.heading == ("", ""):
            object.__setattr__(self, "heading", (self.name, self.name))
        if not _SECTION_ID.fullmatch(self.section):
            raise ValueError(f"suite {self.name}: section {self.section!r} is not a page "
                             "anchor (lower-case letters, digits and '-')")


# A page section's id, used as its anchor (`<section id=...>`, `#...` in the contents).
_SECTION_ID = re.compile(r"[a-z][a-z0-9-]*")


# Tuning seeds start here, above any evaluation seed (MAX_SEED_OFFSET + MAX_SEEDS).
TUNING_SEEDS = 2_000_000_000


def tuning_seeds(options: RunOptions, n: int) -> range:
    """The `n` tuning seeds from TUNING_SEEDS plus the seed offset (a replication re-tunes)."""
    start = TUNING_SEEDS + options.seed_offset
    return range(start, start + n)


# An executor runs `specs`, saving each result as it finishes, and may return {run_id: one-line
# error} for runs that failed without stopping the rest; `progress`: show a progress bar.
Executor = Callable[[list[RunSpec], ResultSink, bool], dict[str, str] | None]


class SuiteIncomplete(RuntimeError):
    """Some runs have no stored result, so it was not summarised; `missing`: (label, error)."""

    def __init__(self, suite: str, size: str, absent: Sequence[RunSpec], failed: dict[str, str],
                 total: int) -> None:
        missing = [(s.label, failed.get(s.run_id, "no result was stored")) for s in absent]
        self.suite, self.size, self.missing, self.total = suite, size, missing, total
        runs = "; ".join(f"{label} ({error})" for label, error in missing)
        super().__init__(f"suite {suite} ({size}): {len(missing)} of {total} runs have no "
                         f"result, so it was not summarised; run it again to complete only "
                         f"these: {runs}")


def suite_dir(out_dir: str | Path, suite: Suite, options: RunOptions) -> Path:
    return Path(out_dir) / suite.name / options.folder()


def longer_dir(out_dir: str | Path, suite: Suite, options: RunOptions) -> Path:
    """Where a suite's runs trained twice as long are kept (`<size>+x2`)."""
    return Path(out_dir) / suite.name / options.folder(longer=True)


@dataclass(frozen=True)
class PlannedSuite:
    """A suite's runs checked against its folder: `missing` must run (not stored, or `stale`);
    the rest are reused. `stage` is "tune" while tuning runs are missing (`specs` then the
    tuning runs, `early` the evaluation runs that read no tuning), else "evaluate"."""

    suite: Suite
    options: RunOptions
    seeds: range  # the options' seeds and those of any seed block
    specs: list[RunSpec]
    store: ResultStore
    stale: dict[str, list[str]]
    missing: list[RunSpec]
    stage: str = "evaluate"
    tuned: Results = field(default_factory=list)
    blocks: list[SeedBlock] = field(default_factory=list)
    planned_rules: dict[str, str] = field(default_factory=dict)
    early: list[RunSpec] = field(default_factory=list)
    early_store: ResultStore | None = None
    ran: frozenset[str] = frozenset()  # run ids this command made in an earlier round

    def stamped(self) -> list[RunSpec]:
        """The missing and `early` runs, each stamping its result with the provenance of the
        process that computes it and its spec."""
        return [dataclasses.replace(spec, execute=functools.partial(
            execute_spec, spec.execute, RunLabel(spec.label, spec.arm, spec.seed, spec.run_id)))
            for spec in [*self.missing, *self.early]]

    def stores(self) -> list[tuple[RunSpec, ResultStore]]:
        """Each run to make with the store its result goes to."""
        return ([(spec, self.store) for spec in self.missing]
                + [(spec, self.early_store) for spec in self.early
                   if self.early_store is not None])


def stored_tuning(suite: Suite, options: RunOptions, out_dir: str | Path
                  ) -> tuple[list[RunSpec], ResultStore, dict[str, str], list[RunSpec], Results]:
    """(every tuning run due so far, the store, stale reasons, the missing ones, the pairs once
    none is missing); `tune` is asked again until no grid grows."""
    tuning = suite.tune(options, [])
    store = ResultStore(Path(out_dir) / suite.name / options.folder(tuning=True))
    while True:
        stale = stale_reasons(tuning, store)
        missing = [s for s in tuning if not store.has(s.run_id) or s.run_id in stale]
        if missing:
            return tuning, store, stale, missing, []
        tuned = [(spec, store.load(spec.run_id)) for spec in tuning]
        grown = suite.tune(options, tuned)
        if {s.run_id for s in grown} <= {s.run_id for s in tuning}:
            return tuning, store, stale, [], tuned
        tuning = grown


def plan_suite(suite: Suite, options: RunOptions, out_dir: str | Path,
               rules: dict[str, str] | None = None) -> PlannedSuite:
    """Plan `suite` against the results in `out_dir`, with the seed blocks the sequential design
    added; `rules` ({"<claim> <part>": hash}) are recorded in a fresh folder."""
    seeds = options.seeds
    tuned: Results = []
    if suite.tune is not None:
        tuning, store, stale, missing, tuned = stored_tuning(suite, options, out_dir)
        # the tuning folder records them too: it chooses the lrs the rules' arms train at
        record_rules(store.root, rules, fresh=len(missing) == len(tuning))
        if missing:
            early_store = ResultStore(suite_dir(out_dir, suite, options))
            independent = [s for s in suite.plan(options, []) if not s.reads_tuning]
            early_stale = stale_reasons(independent, early_store)
            early = [s for s in independent
                     if not early_store.has(s.run_id) or s.run_id in early_stale]
            if early:  # the evaluation folder's first runs: record the rules they serve
                record_rules(early_store.root, rules, fresh=len(early) == len(independent))
            return PlannedSuite(suite, options, seeds, tuning, store, stale, missing, "tune",
                                planned_rules=dict(rules or {}), early=early,
                                early_store=early_store)
    specs = suite.plan(options, tuned)
    store = ResultStore(suite_dir(out_dir, suite, options))
    blocks = seed_blocks(store.root)
    if blocks:
        seen = {spec.run_id for spec in specs}
        for block in blocks:
            for spec in suite.plan(options.with_seeds(range(block.start, block.stop)), tuned):
                if spec.arm in block.arms and not spec.timed and spec.run_id not in seen:
                    specs.append(spec)
                    seen.add(spec.run_id)
        seeds = range(seeds.start, max(seeds.stop, *(b.stop for b in blocks)))
    stale = stale_reasons(specs, store)
    missing = [s for s in specs if not store.has(s.run_id) or s.run_id in stale]
    planned_rules = record_rules(store.root, rules, fresh=len(missing) == len(specs))
    return PlannedSuite(suite, options, seeds, specs, store, stale, missing, "evaluate", tuned,
                        blocks, planned_rules)


SEED_BLOCKS = "seed_blocks.json"
PLANNED_RULES = "planned_rules.json"


def seed_blocks(folder: Path) -> list[SeedBlock]:
    """The seed blocks the sequential design added to a folder, oldest first."""
    path = Path(folder) / SEED_BLOCKS
    if not path.exists():
        return []
    return decode(list[SeedBlock], read_json(path, error=ResultsError), str(path))


def add_seed_blocks(folder: Path, blocks: Sequence[SeedBlock]) -> None:
    if not blocks:
        return
    every = [*seed_blocks(folder), *blocks]
    write_atomic(Path(folder) / SEED_BLOCKS,
                 json.dumps([dataclasses.asdict(b) for b in every], indent=1) + "\n")


def record_rules(folder: Path, rules: dict[str, str] | None, *, fresh: bool) -> dict[str, str]:
    """The rule hashes the folder's runs were planned under: `rules`, written when the folder
    holds no reusable run yet (`fresh`); else the record as first written, or {}."""
    path = Path(folder) / PLANNED_RULES
    if rules is not None and fresh:
        write_atomic(path, json.dumps(dict(sorted(rules.items())), indent=1,
                                      ensure_ascii=False) + "\n")
        return dict(rules)
    if not path.exists():
        return {}
    data = read_json(path, error=ResultsError)
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                             for k, v in data.items()):
        raise ResultsError(f"{path}: expected an object of rule hashes (part -> hash)")
    return data


def run_suite(suite: Suite, options: RunOptions, out_dir: str | Path = "runs", *,
              progress: bool = True, executor: Executor | None = None, wait: bool = True,
              rules: dict[str, str] | None = None) -> Summary:
    """Run every missing run of `suite` under `options` into its folder, then summarise all of
    them and write summary.json.

    Raises SuiteIncomplete (once every other run is saved) when a run failed in an executor
    that carries on past failures. Another process running this suite in `out_dir` is waited
    for (`wait=False`: `errors.Busy`); Ctrl-C raises `Interrupted`, saying what was kept."""
    from blocklab.experiments.locks import suite_locks

    # Planned under the folder's lock: a second process waits, then plans only what is missing.
    with suite_locks(out_dir, [suite.name], wait=wait, echo=say):
        planned = plan_suite(suite, options, out_dir, rules)
        say_damaged(planned)
        start = time.perf_counter()
        failed: dict[str, str] = {}
        while True:  # tuning rounds (a grid may grow at an edge), then the evaluation
            failed.update(execute_round([planned], executor, progress, str(planned.store.root)))
            if planned.stage == "evaluate":
                break
            planned = replan_after_tuning(planned, failed, out_dir)
            say_damaged(planned)
        return summarise_suite(planned, failed, time.perf_counter() - start)


def execute_round(planned: Sequence[PlannedSuite], executor: Executor | None, progress: bool,
                  where: str) -> dict[str, str]:
    """Every planned suite's missing runs in one executor call; {run id: error} of failed ones."""
    todo = [spec for plan in planned for spec in plan.stamped()]
    if not todo:
        return {}
    sink = CountingSink(ResultRouter(planned))
    try:
        return (executor or execute_in_process)(todo, sink, progress) or {}
    except KeyboardInterrupt:
        raise interrupted(sink, where) from None


def say_damaged(planned: PlannedSuite) -> None:
    """Name each stored run file of the plan that is damaged: it is run again and replaced."""
    for store in (planned.store, planned.early_store):
        for why in (store.damaged.values() if store is not None else ()):
            say(f"{why}; it is run again")


def replan_after_tuning(planned: PlannedSuite, failed: dict[str, str], out_dir: str | Path
                        ) -> PlannedSuite:
    """Plan what follows a round of tuning runs (the evaluation, or a grown grid's tuning runs);
    SuiteIncomplete names that round's tuning runs that have no result."""
    again = plan_suite(planned.suite, planned.options, out_dir, planned.planned_rules or None)
    attempted = {spec.run_id for spec in planned.missing}
    if again.stage == "tune" and any(spec.run_id in attempted for spec in again.missing):
        raise SuiteIncomplete(planned.suite.name, planned.options.size, again.missing, failed,
                              len(again.specs))
    return dataclasses.replace(again, ran=planned.ran | attempted
                               | {spec.run_id for spec in planned.early})


def summarise_suite(planned: PlannedSuite, failed: dict[str, str], elapsed_s: float) -> Summary:
    """Summarise a planned suite once its runs have executed and write summary.json;
    SuiteIncomplete names the runs that still have no result."""
    suite, size, specs, store, stale = (planned.suite, planned.options.size, planned.specs,
                                        planned.store, planned.stale)
    absent = [spec for spec in specs if not store.has(spec.run_id)
              or (spec.run_id in stale and stale_reasons([spec], store))]
    if absent:
        raise SuiteIncomplete(suite.name, size, absent, failed, len(specs))
    results = [(spec, store.load(spec.run_id)) for spec in specs]
    summary = suite.summarise(planned.options.with_seeds(planned.seeds),
                              [*planned.tuned, *results])
    made = planned.ran | {spec.run_id for spec in planned.missing}  # by this command
    stored_before = sum(spec.run_id not in made for spec in specs)
    notes = [f"{stored_before} of {len(specs)} runs were already stored; "
             f"this invocation took {elapsed_s:.1f} s", *planned.options.notes()]
    for block in planned.blocks:
        notes.append(f"seeds {block.start}–{block.stop - 1} were added to {len(block.arms)} "
                     f"arm(s) ({', '.join(block.arms)}) for the parts still undecided at a "
                     f"look: {', '.join(block.parts)}")
    if planned.tuned:
        notes.append(f"planned from {len(planned.tuned)} tuning runs on seeds of their own "
                     f"(stored in {planned.options.folder(tuning=True)})")
    from blocklab.experiments.locks import is_busy

    busy = [f"{spec.label} ({result.machine_load['others_cpu_share']:.0%})"
            for spec, result in results if is_busy(result.machine_load)]
    if busy:
        notes.append("timed while other processes used the CPU (their share in brackets), so "
                     "these timings may read slow; run them again on a quiet machine: "
                     + ", ".join(busy))
    if store.damaged:
        notes.append(f"{len(store.damaged)} stored run file(s) were damaged and were run "
                     "again: " + "; ".join(store.damaged.values()))
    if stale:
        counts = Counter(reason for reasons in stale.values() for reason in reasons)
        notes.append(
            f"{len(stale)} stored run(s) were run again because their provenance differs from "
            "this code and machine: " + ", ".join(f"{k} ({n})" for k, n in sorted(counts.items())))
    machines, kernels = mixed_runs([result for _, result in results])
    notes += mixed_notes(machines, kernels)
    summary = dataclasses.replace(
        summary, runs=len(specs), notes=[*summary.notes, *notes],
        machines=machines, kernels=kernels,
        seeds=len(planned.seeds), first_seed=planned.seeds.start,
        run_ids=[spec.run_id for spec in specs], seed_blocks=list(planned.blocks),
        planned_rules=dict(planned.planned_rules),
        wall_time_s=sum(r.wall_time_s or 0.0 for _, r in results))
    if not isinstance(summary.data, suite.data_type):
        raise RuntimeError(f"suite {suite.name}: summarise returned data of type "
                           f"{type(summary.data).__name__}, not its data_type "
                           f"{suite.data_type.__name__}")
    save_summary(store.root, summary)
    return summary


class ResultRouter:
    """Saves each result into its suite's store, so one executor call serves several suites."""

    def __init__(self, planned: Sequence[PlannedSuite]) -> None:
        self._stores: dict[str, list[ResultStore]] = {}
        for plan in planned:
            for spec, store in plan.stores():
                self._stores.setdefault(spec.run_id, []).append(store)

    def save(self, run_id: str, result: RunResult) -> None:
        # Two suites that plan the very same run (same payload) both keep its result.
        for store in self._stores[run_id]:
            store.save(run_id, result)


def mixed_runs(results: Sequence[RunResult]) -> tuple[list[RunCount], list[RunCount]]:
    """(the machines a folder's runs were made on, the attention kernels its bf16 training runs
    ran), each with its runs, most first; empty with fewer than two entries."""
    from blocklab.experiments.provenance import Machine, machine_name, trained_record

    machines: Counter[str] = Counter()
    kernels: Counter[str] = Counter()
    for result in results:
        machines[machine_name(Machine.from_dict((result.provenance or {}).get("machine")))] += 1
        record = trained_record(result.to_dict())
        if record is None or record["train_config"].get("precision") != "bf16":
            continue
        config, env = record["train_config"], record.get("environment") or {}
        backends = record.get("backends")
        kernel = (backends.get("attention") if isinstance(backends, dict) else None) \
            or "unrecorded"
        device = config.get("device") or "cpu"
        if device != "cpu":  # a GPU's kernels are its own, whatever they are named
            kernel += f" on {env.get('accelerator') or device}"
        kernels[kernel] += 1

    def listed(counts: Counter[str]) -> list[RunCount]:
        if len(counts) < 2:
            return []
        return [RunCount(name, n) for name, n in sorted(counts.items(),
                                                        key=lambda kv: (-kv[1], kv[0]))]

    return listed(machines), listed(kernels)


def execute_spec(execute: Callable[[Any], RunResult], run: RunLabel,
                 progress: Any) -> RunResult:
    """Run `execute` and stamp its result with this process's provenance and its spec (`"run"`),
    so the store can tell a file that holds another run's result."""
    from blocklab.experiments.provenance import current

    result = execute(progress)
    result.provenance = current().of_run(result).to_dict()
    result.run = run
    return result


def _corpus_hashes(result: Any, depth: int = 0) -> list[tuple[str, str]]:
    """(name, sha256) of every corpus a stored result's JSON records, at any depth."""
    if not isinstance(result, dict) or depth > 3:
        return []
    found = []
    data = result.get("data")
    if isinstance(data, dict) and isinstance(data.get("name"), str) and "sha256" in data:
        found.append((data["name"], data["sha256"]))
    for value in result.values():  # a value that is no dict holds none
        found += _corpus_hashes(value, depth + 1)
    return found


def stale_reasons(specs: Sequence[RunSpec], store: ResultStore) -> dict[str, list[str]]:
    """run_id -> why its stored result may not be reused here (provenance, or a corpus changed)."""
    from blocklab.experiments.data import load_corpus
    from blocklab.experiments.provenance import current, differences

    now, stale = current(), {}
    corpus_hash: dict[str, str | None] = {}
    for spec in specs:
        if not store.has(spec.run_id):
            continue
        result = store.load(spec.run_id)
        reasons = differences(result.provenance, now, timed=spec.timed)
        for name, sha in _corpus_hashes(result.to_dict()):
            if name not in corpus_hash:
                try:
                    corpus_hash[name] = load_corpus(name).sha256
                except (InputError, OSError):  # gone: the run cannot be reused, nor redone
                    corpus_hash[name] = None
            if corpus_hash[name] != sha:
                reasons.append(f"corpus {name}")
        if reasons:
            stale[spec.run_id] = reasons
    return stale


def execute_in_process(specs: Sequence[RunSpec], store: ResultSink, progress: bool) -> None:
    """Run specs one after another here; the first exception stops the suite. Each run holds
    the machine lock: shared while it trains, exclusive while it measures time."""
    from blocklab.experiments.trainer import make_progress

    if not progress:
        for spec in specs:
            store.save(spec.run_id, _execute_locked(spec, False))
        return
    with make_progress() as bar:
        overall = bar.add_task(f"suite: {len(specs)} runs", total=len(specs), loss="—")
        for spec in specs:
            store.save(spec.run_id, _execute_locked(spec, bar))
            bar.advance(overall)


def _execute_locked(spec: RunSpec, progress: Any) -> RunResult:
    from blocklab.experiments.locks import OthersCpu, machine_lock

    with machine_lock(exclusive=spec.timed, echo=say):
        if not spec.timed:
            return spec.execute(progress)
        with OthersCpu() as others:
            result = spec.execute(progress)
        result.machine_load = others.record()
        return result


def say(line: str) -> None:
    """A line for the person at the terminal (stderr)."""
    import sys

    print(line, file=sys.stderr, flush=True)


class CountingSink:
    """A ResultSink that counts what it saved, so an interruption can say what was kept."""

    def __init__(self, sink: ResultSink) -> None:
        self.sink, self.saved = sink, 0

    def save(self, run_id: str, result: RunResult) -> Any:
        out = self.sink.save(run_id, result)
        self.saved += 1
        return out


def interrupted(sink: CountingSink, where: str) -> Interrupted:
    """What Ctrl-C raises: it says what was kept."""
    return Interrupted(f"{sink.saved} run(s) finished before the interruption are kept in "
                       f"{where}; the same command runs only what is missing")


def mean_ci(values: Sequence[float | None]) -> Interval:
    """Mean and 95% t-interval of the finite `values` (None bounds with fewer than two)."""
    xs = [float(v) for v in values if v is not None and math.isfinite(v)]
    if len(xs) < 2:  # Interval(0), or one value's Interval(1, mean)
        return Interval(len(xs), *xs)
    from blocklab.stats import paired_interval

    e = paired_interval(xs)  # t from scipy.stats
    return Interval(e.n, e.value, e.ci_low, e.ci_high, e.sd)


def paired_difference(a: Sequence[float | None], b: Sequence[float | None]) -> Interval:
    """Mean and 95% CI of a[i] − b[i] over pairs (same seed) where both are finite."""
    if len(a) != len(b):
        raise InputError(f"paired samples need equal lengths, got {len(a)} and {len(b)}")
    diffs = [x - y for x, y in zip(a, b, strict=True)
             if x is not None and y is not None and math.isfinite(x) and math.isfinite(y)]
    return mean_ci(diffs)


def relative_pct(a: Sequence[float | None], b: Sequence[float | None]) -> list[float | None]:
    """Per pair (same seed) 100·(a − b)/b; None where either is missing."""
    return [None if x is None or y is None else 100 * (x - y) / y
            for x, y in zip(a, b, strict=True)]


def format_ci(stats: Interval, digits: int = 3, unit: str = "") -> str:
    """'mean [low, high]' or 'mean (n=1)' or '—', signed (a difference), `unit` after the mean."""
    return _format(stats, f"+.{digits}f", unit)


def format_level(stats: Interval, digits: int = 3) -> str:
    """'mean [low, high]' without a sign (a loss, not a difference), or '—'."""
    return _format(stats, f".{digits}f")


def _format(stats: Interval, spec: str, unit: str = "") -> str:
    if stats.mean is None:
        return "—"
    if not stats.resolved:
        return f"{stats.mean:{spec}}{unit} (n={stats.n})"
    return f"{stats.mean:{spec}}{unit} [{stats.ci_low:{spec}}, {stats.ci_high:{spec}}]"


def format_ratio(stats: TimeRatio, digits: int = 3) -> str:
    return f"{stats.ratio:.{digits}f} [{stats.ci_low:.{digits}f}, {stats.ci_high:.{digits}f}]"


def median_ms(seconds: Sequence[float]) -> float:
    return 1000 * statistics.median(seconds)


def interleaved(keys: Sequence[K], warmup: int, repeats: int,
                measure: Callable[[K, int], T]) -> dict[K, list[T]]:
    """key -> [repeats] of `measure(key, i)`, every key measured in each round i, the order
    rotating by one a round so drift falls on all alike; the first `warmup` rounds dropped."""
    samples: dict[K, list[T]] = {key: [] for key in keys}
    for i in range(warmup + repeats):
        shift = i % len(keys)
        for key in [*keys[shift:], *keys[:shift]]:
            value = measure(key, i)
            if i >= warmup:
                samples[key].append(value)
    return samples


def statuses(results: Iterable[RunResult | None]) -> dict[str, int]:
    """Runs by status ("missing": a seed without a result), in order of first appearance."""
    return dict(Counter("missing" if r is None else r.status for r in results))


def training_spec(label: str, arm: str, seed: int, mc: ModelConfig, tc: TrainConfig,
                  identity: dict[str, Any], data: str = "stdlib",
                  train: Callable[..., RunResult] | None = None) -> RunSpec:
    """A trainer run (`train`, default `trainer.run`), its payload `identity` with the model,
    training and data."""
    def execute(progress: Any) -> RunResult:
        from blocklab.experiments.trainer import run

        return (train or run)(mc, tc, data, progress=progress, label=label)

    payload = {**identity, "model": mc.to_dict(), "train": train_identity(tc), "data": data}
    return RunSpec(label, arm, seed, payload, execute)
