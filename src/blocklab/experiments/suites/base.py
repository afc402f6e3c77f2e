"""What a suite is, how it runs, and the paired statistics its summaries use.

A suite is a grid of independent runs (arms × seeds). Each run is a `RunSpec`: a label, the
arm and seed it belongs to, a JSON-able `payload` that fully determines it (hashed into its
run id), and an `execute` function that produces its result dictionary. `run_suite` executes
the specs whose result is not stored yet, each one written atomically the moment it finishes,
so an interrupted suite resumes where it stopped and nothing finished is lost. Then the suite's
`summarise` turns stored results into tables; it never trains anything.

    suite = SUITES["ffn"]
    summary = run_suite(suite, size="quick", seeds=2, out_dir="runs")

Where the runs execute is the executor's business: `execute_in_process` (the default) runs them
here one after another; `blocklab.experiments.executors.RayExecutor` sends each to a Ray
cluster. Either way the suite is summarised only once every run has a stored result; otherwise
`run_suite` raises `SuiteIncomplete` naming the runs that are missing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import math
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from blocklab.config import write_atomic
from blocklab.errors import InputError, ResultsError
from blocklab.experiments.results import ResultStore, json_safe, result_json

SIZES = ("tiny", "quick", "full")
# The layout of summary.json; readers refuse any other (2: schema and provenance recorded).
SUMMARY_SCHEMA = 2


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run the block with `n` torch CPU threads, restoring the previous count afterwards."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@dataclass(frozen=True)
class RunSpec:
    """One run of a suite. `execute(progress)` returns the result dict (with a "status")."""

    label: str
    arm: str
    seed: int
    payload: dict[str, Any]
    execute: Callable[[Any], dict[str, Any]] = field(compare=False, repr=False)
    # A run that measures time (kernel or step timings): it runs alone, never beside other runs.
    timed: bool = False

    @property
    def run_id(self) -> str:
        canonical = json.dumps(json_safe(self.payload), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True)
class Table:
    """A summary table: a title, column names, rows of cells (str/int/float/None), a caption."""

    title: str
    columns: list[str]
    rows: list[list[Any]]
    caption: str = ""


@dataclass
class Summary:
    suite: str
    size: str
    seeds: int
    tables: list[Table]
    notes: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)  # numbers for the claims ledger
    runs: int = 0
    wall_time_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SUMMARY_SCHEMA,
            "suite": self.suite, "size": self.size, "seeds": self.seeds, "runs": self.runs,
            "wall_time_s": self.wall_time_s, "notes": self.notes, "data": self.data,
            "tables": [{"title": t.title, "columns": t.columns, "rows": t.rows,
                        "caption": t.caption} for t in self.tables],
        }


@dataclass(frozen=True)
class Suite:
    """`plan(size, seeds)` lists the runs; `summarise(size, seeds, results)` builds tables from
    `results`: a list of (spec, result) pairs in plan order."""

    name: str
    description: str
    plan: Callable[[str, int], list[RunSpec]]
    summarise: Callable[[str, int, list[tuple[RunSpec, dict[str, Any]]]], Summary]
    default_seeds: dict[str, int] = field(default_factory=lambda: {"tiny": 1, "quick": 2,
                                                                    "full": 5})


# An executor runs `specs`, saves each result with `store.save(spec.run_id, result)` the moment it
# finishes, and may return {run_id: one-line error} for runs that failed without stopping the
# rest. `progress` is True/False: whether to show a progress bar.
Executor = Callable[[list[RunSpec], ResultStore, bool], dict[str, str] | None]


class SuiteIncomplete(RuntimeError):
    """Some runs of a suite have no stored result, so it was not summarised.

    `missing` lists (label, error) per missing run. Every stored result is kept: running the
    suite again with the same out_dir executes only the missing runs.
    """

    def __init__(self, suite: str, size: str, missing: list[tuple[str, str]],
                 total: int) -> None:
        self.suite, self.size, self.missing, self.total = suite, size, missing, total
        runs = "; ".join(f"{label} ({error})" for label, error in missing)
        super().__init__(f"suite {suite} ({size}): {len(missing)} of {total} runs have no "
                         f"result, so it was not summarised; run it again to complete only "
                         f"these: {runs}")


def _check_size(size: str) -> None:
    if size not in SIZES:
        raise InputError(f"suite size {size!r} is not allowed; expected one of {list(SIZES)}")


def suite_dir(out_dir: str | Path, suite: Suite, size: str) -> Path:
    return Path(out_dir) / suite.name / size


# Each seed is a set of full training runs; past this the plan alone would not fit in memory
# and the runs would take centuries on any machine blocklab targets.
MAX_SEEDS = 1000


def run_suite(suite: Suite, size: str = "quick", seeds: int | None = None,
              out_dir: str | Path = "runs", *, progress: bool = True,
              executor: Executor | None = None) -> Summary:
    """Run every missing run of `suite`, then summarise all of them and write summary.json.

    Raises SuiteIncomplete (after every other run has finished and been saved) when a run
    failed in an executor that carries on past failures; `execute_in_process` instead lets the
    first exception propagate.
    """
    _check_size(size)
    seeds = suite.default_seeds[size] if seeds is None else seeds
    if isinstance(seeds, bool) or not isinstance(seeds, int) or not 1 <= seeds <= MAX_SEEDS:
        raise InputError(f"seeds={seeds!r} is not allowed; expected an integer in "
                         f"[1, {MAX_SEEDS}]")
    specs = suite.plan(size, seeds)
    store = ResultStore(suite_dir(out_dir, suite, size))
    stale = stale_reasons(specs, store)
    missing = [s for s in specs if not store.has(s.run_id) or s.run_id in stale]
    start = time.perf_counter()
    failed: dict[str, str] = {}
    if missing:
        # Each result is stamped with the provenance of the process that computed it, whichever
        # executor runs it (a Ray node may differ from this machine).
        stamped = [dataclasses.replace(spec, execute=functools.partial(execute_spec, spec.execute))
                   for spec in missing]
        failed = (executor or execute_in_process)(stamped, store, progress) or {}
    absent = [spec for spec in specs if not store.has(spec.run_id)
              or (spec.run_id in stale and stale_reasons([spec], store))]
    if absent:
        raise SuiteIncomplete(suite.name, size, [
            (spec.label, failed.get(spec.run_id, "no result was stored")) for spec in absent],
            len(specs))
    results = [(spec, store.load(spec.run_id)) for spec in specs]
    summary = suite.summarise(size, seeds, results)
    summary.runs = len(specs)
    summary.wall_time_s = sum(r.get("wall_time_s", 0.0) or 0.0 for _, r in results)
    summary.notes.append(f"{len(specs) - len(missing)} of {len(specs)} runs were already stored; "
                         f"this invocation took {time.perf_counter() - start:.1f} s")
    if stale:
        counts = Counter(reason for reasons in stale.values() for reason in reasons)
        summary.notes.append(
            f"{len(stale)} stored run(s) were run again because their provenance differs from "
            "this code and machine: " + ", ".join(f"{k} ({n})" for k, n in sorted(counts.items())))
    write_atomic(store.root / "summary.json", result_json(summary.to_dict()))
    return summary


def execute_spec(execute: Callable[[Any], dict[str, Any]], progress: Any) -> dict[str, Any]:
    """Run one spec's `execute` and stamp its result with this process's provenance."""
    from blocklab.experiments.provenance import current

    result = execute(progress)
    result["provenance"] = current().to_dict()
    return result


def _corpus_hashes(result: Any, depth: int = 0) -> list[tuple[str, str]]:
    """(name, sha256) of every corpus a result records (the trainer's `data`, at any depth)."""
    if not isinstance(result, dict) or depth > 3:
        return []
    found = []
    data = result.get("data")
    if isinstance(data, dict) and isinstance(data.get("name"), str) and "sha256" in data:
        found.append((data["name"], data["sha256"]))
    for value in result.values():
        if isinstance(value, dict):
            found += _corpus_hashes(value, depth + 1)
    return found


def stale_reasons(specs: Sequence[RunSpec], store: ResultStore) -> dict[str, list[str]]:
    """run_id -> why its stored result may not be reused here (provenance keys that differ, or
    "corpus <name>" whose bytes changed); stored results that may be reused are absent."""
    from blocklab.experiments.data import load_corpus
    from blocklab.experiments.provenance import current, differences

    now, stale = current(), {}
    corpus_hash: dict[str, str | None] = {}
    for spec in specs:
        if not store.has(spec.run_id):
            continue
        result = store.load(spec.run_id)
        reasons = differences(result.get("provenance"), now)
        for name, sha in _corpus_hashes(result):
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


def execute_in_process(specs: Sequence[RunSpec], store: ResultStore, progress: bool) -> None:
    """Run specs one after another in this process, saving each result as it finishes; the
    first exception stops the suite (what finished before it stays stored)."""
    from blocklab.experiments.trainer import make_progress

    if not progress:
        for spec in specs:
            store.save(spec.run_id, spec.execute(False))
        return
    with make_progress() as bar:
        # `make_progress` shows a loss field on every task; the overall bar has none yet.
        overall = bar.add_task(f"suite: {len(specs)} runs", total=len(specs), loss="—")
        for spec in specs:
            result = spec.execute(bar)
            store.save(spec.run_id, result)
            bar.advance(overall)


def load_summary(out_dir: str | Path, suite_name: str, size: str) -> dict[str, Any] | None:
    """The stored summary.json of a suite, or None when it has not been run.

    Raises ResultsError, naming the file and the command that rewrites it, for a summary that
    does not parse or was written under another `SUMMARY_SCHEMA`: readers never guess at the
    fields of a layout they do not know.
    """
    path = Path(out_dir) / suite_name / size / "summary.json"
    if not path.exists():
        return None
    rerun = f"`blocklab suite {suite_name} --size {size} --results {out_dir}`"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ResultsError(f"{path} is not a readable summary ({err}); run {rerun} to write it "
                           "again") from None
    found = data.get("schema") if isinstance(data, dict) else None
    if found != SUMMARY_SCHEMA:
        raise ResultsError(f"{path} has summary schema {found!r}; this blocklab reads schema "
                           f"{SUMMARY_SCHEMA}: run {rerun} to rewrite it (stored runs whose "
                           "provenance matches are reused)")
    return data


# --- statistics --------------------------------------------------------------------------------
# Two-sided 95% Student-t quantiles t_{0.975, df} for df = 1..30 (standard tables).
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


# Beyond df = 30, the same tables' rows for 40, 60 and 120, interpolated linearly in 1/df.
_T975_TAIL = [(30, 2.042), (40, 2.021), (60, 2.000), (120, 1.980), (math.inf, 1.960)]


def t_quantile_975(df: int) -> float:
    if df < 1:
        raise InputError(f"degrees of freedom must be >= 1, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    for (lo, t_lo), (hi, t_hi) in zip(_T975_TAIL, _T975_TAIL[1:], strict=False):
        if lo <= df <= hi:
            w = (1 / lo - 1 / df) / (1 / lo - (0 if hi == math.inf else 1 / hi))
            return t_lo + w * (t_hi - t_lo)
    return 1.96


def mean_ci(values: Sequence[float]) -> dict[str, float | int | None]:
    """Mean and 95% t-interval of `values` (None bounds with fewer than two values)."""
    xs = [float(v) for v in values if v is not None and math.isfinite(v)]
    n = len(xs)
    if n == 0:
        return {"n": 0, "mean": None, "ci_low": None, "ci_high": None, "sd": None}
    mean = sum(xs) / n
    if n == 1:
        return {"n": 1, "mean": mean, "ci_low": None, "ci_high": None, "sd": None}
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    half = t_quantile_975(n - 1) * sd / math.sqrt(n)
    return {"n": n, "mean": mean, "ci_low": mean - half, "ci_high": mean + half, "sd": sd}


def paired_difference(a: Sequence[float], b: Sequence[float]) -> dict[str, float | int | None]:
    """Mean and 95% CI of a[i] − b[i] over pairs (same seed) where both are finite."""
    if len(a) != len(b):
        raise InputError(f"paired samples need equal lengths, got {len(a)} and {len(b)}")
    diffs = [x - y for x, y in zip(a, b, strict=True)
             if x is not None and y is not None and math.isfinite(x) and math.isfinite(y)]
    return mean_ci(diffs)


def format_ci(stats: dict[str, Any], digits: int = 3) -> str:
    """'mean [low, high]' or 'mean (n=1)' or '—'."""
    if stats.get("mean") is None:
        return "—"
    if stats.get("ci_low") is None:
        return f"{stats['mean']:+.{digits}f} (n={stats['n']})"
    low, high = stats["ci_low"], stats["ci_high"]
    return f"{stats['mean']:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"
