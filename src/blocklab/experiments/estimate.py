"""How long a suite size would take on this machine, before any of it runs.

Every planned training run costs its matmul FLOPs: 3 × one forward pass (forward, and a backward
of twice the forward) per step, from `blocklab.budget.flops`, times its steps. The rate is the
one this machine reached on the same suite's training runs already stored under the results
folder (every suite's, when the suite has none):

    rate = Σ 3 · forward FLOPs · steps done  /  Σ wall time          (stored training runs)
    estimate(run) = 3 · forward FLOPs · steps / rate

Wall time includes evaluation and Python overhead. Small models are overhead-bound, so the rate
depends on the shapes: an estimate is as good as the stored runs resemble the planned ones (a
quick size's runs price a full size's larger models long; narrow deep models run at a lower
rate than wide shallow ones, which is why each suite is priced at its own rate). A run that
trains nothing (a gradient probe, a timing, a kernel benchmark) costs the mean
wall time of the stored runs of the same suite and arm at any size; with none stored it is
counted as unknown. Runs already stored (with this code's provenance) cost nothing.

    plan = estimate_suites(Path("runs"), "full", ["ffn", "placement"])
    plan.wall_s(workers=2)
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blocklab.config import ModelConfig


@dataclass(frozen=True)
class SuiteEstimate:
    """One suite's planned runs at a size: how many, how many are stored, the estimated
    seconds of the untimed runs (spread over workers) and of the timed ones (alone)."""

    suite: str
    runs: int
    stored: int
    untimed_s: float
    timed_s: float
    unknown: int  # runs with no stored run of their kind to price them


@dataclass(frozen=True)
class SizeEstimate:
    size: str
    suites: list[SuiteEstimate]
    flops_per_s: float | None  # over every suite; None: no stored training run to calibrate on
    calibrated_on: int  # stored training runs the rate comes from

    def wall_s(self, workers: int) -> float:
        """Estimated wall seconds with `workers` worker processes: untimed runs shared among
        them (a lower bound that ignores the last run's tail), timed runs one after another."""
        return (sum(s.untimed_s for s in self.suites) / workers
                + sum(s.timed_s for s in self.suites))

    @property
    def core_s(self) -> float:
        return sum(s.untimed_s + s.timed_s for s in self.suites)


def training_flops(model: dict[str, Any], batch_size: int, seq_len: int, steps: int) -> float:
    """Matmul FLOPs of `steps` training steps of the model config dict `model`."""
    from blocklab.budget.flops import prefill_flops

    forward = prefill_flops(ModelConfig.from_dict(model), batch_size, seq_len).total
    return 3.0 * forward * steps


def _stored_results(results: Path) -> list[tuple[str, dict[str, Any]]]:
    """(suite, result) of every stored run under `results` (every size and folder)."""
    found = []
    for path in sorted(results.glob("*/*/*.json")):
        if path.name == "summary.json":
            continue
        try:
            result = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # a file being written or not ours: price without it
            continue
        if isinstance(result, dict):
            found.append((path.parent.parent.name, result))
    return found


def flop_rate(stored: list[tuple[str, dict[str, Any]]],
              suite: str | None = None) -> tuple[float | None, int]:
    """(FLOP/s over the stored training runs' wall time, how many runs it comes from), over
    `suite`'s runs only when given."""
    flops = seconds = 0.0
    used = 0
    for name, result in stored:
        if suite is not None and name != suite:
            continue
        model, train = result.get("model_config"), result.get("train_config")
        wall, done = result.get("wall_time_s"), result.get("steps_done")
        if not (isinstance(model, dict) and isinstance(train, dict) and wall and done):
            continue
        flops += training_flops(model, train["batch_size"], train["seq_len"], done)
        seconds += wall
        used += 1
    return (flops / seconds if seconds > 0 else None), used


def estimate_suites(results: str | Path, size: str, names: Sequence[str], *,
                    seed_offset: int = 0) -> SizeEstimate:
    """Estimate the runs `blocklab report --size SIZE` would still have to do for `names`.

    A tuned suite's evaluation runs are priced at the middle of its choices (their cost does
    not depend on the learning rate a tuning run picks)."""
    from blocklab.experiments.suites import get_suite
    from blocklab.experiments.suites.base import (
        ResultStore,
        seed_range,
        stale_reasons,
        suite_dir,
        tuning_dir,
    )

    results = Path(results)
    stored = _stored_results(results)
    rate, calibrated_on = flop_rate(stored)
    estimates = []
    for name in names:
        own, _ = flop_rate(stored, name)
        suite = get_suite(name)
        seeds = seed_range(suite.default_seeds[size], seed_offset)
        store = ResultStore(suite_dir(results, suite, size, seed_offset))
        specs = [(spec, store) for spec in
                 (suite.plan(size, seeds, []) if suite.tune else suite.plan(size, seeds))]
        if suite.tune:
            tuning = ResultStore(tuning_dir(results, suite, size))
            specs = [(spec, tuning) for spec in suite.tune(size)] + specs
        # The mean wall time of each arm this suite has stored (any size), to price the runs
        # that train nothing: a probe, a timing or a kernel benchmark.
        by_arm: dict[str, list[float]] = {}
        for suite_name, result in stored:
            run, wall = result.get("run"), result.get("wall_time_s")
            if suite_name == name and isinstance(run, dict) and wall:
                by_arm.setdefault(str(run.get("arm")), []).append(wall)
        untimed = timed = 0.0
        unknown = done = 0
        for spec, where in specs:
            if where.has(spec.run_id) and not stale_reasons([spec], where):
                done += 1
                continue
            seconds = _price(spec, own or rate, by_arm.get(spec.arm, []))
            if seconds is None:
                unknown += 1
            elif spec.timed:
                timed += seconds
            else:
                untimed += seconds
        estimates.append(SuiteEstimate(name, len(specs), done, untimed, timed, unknown))
    return SizeEstimate(size, estimates, rate, calibrated_on)


def _price(spec, rate: float | None, same_arm: list[float]) -> float | None:
    payload = spec.payload
    model, train = payload.get("model"), payload.get("train")
    if isinstance(model, dict) and isinstance(train, dict) and "steps" in train:
        if rate is None:
            return None
        return training_flops(model, train["batch_size"], train["seq_len"],
                              train["steps"]) / rate
    if same_arm:
        return sum(same_arm) / len(same_arm)
    return None


def hours(seconds: float) -> str:
    """'2.4 h', '35 min' or '40 s'."""
    if not math.isfinite(seconds):
        return "—"
    if seconds >= 5400:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 90:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"
