"""The largest stable learning rate: one arm's bisection on a doubling ladder of peak lrs, and
the record it stores."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from blocklab.experiments.options import RunOptions
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.placement.configs import train_config, train_model_config
from blocklab.experiments.suites.placement.outcomes import final_val
from blocklab.experiments.suites.placement.sizes import DATA, Sweep
from blocklab.experiments.suites.tuning import trains
from blocklab.experiments.summaries import decode


@dataclass(frozen=True)
class SweepRung:
    """One short run of a largest-stable-lr bisection: its peak lr, the trainer's status, its
    final validation loss (None: not finite) and whether it trains (`tuning.trains`)."""

    lr: float
    status: str
    val_loss: float | None
    trains: bool


@dataclass(frozen=True)
class StableLr:
    """What one largest-stable-lr run (one arm on one seed) adds to its RunResult (`extra`;
    these are the keys of its stored JSON): the `rung` of `ladder` it found (−1: none stable),
    that lr (`max_stable_lr`, None below the ladder), the bisection's runs in the order they
    were made (`trials`), and the unigram entropy of the training bytes (None when no run
    reported it)."""

    placement: str
    depth: int
    warmup: int
    seed: int
    rung: int
    ladder: list[float]
    max_stable_lr: float | None
    trials: list[SweepRung]
    unigram_entropy: float | None

    @classmethod
    def of(cls, result: RunResult, where: str = "sweep") -> StableLr:
        """The record a sweep's result carries; ResultsError names what does not fit."""
        return decode(cls, result.extra, where)


Record = TypeVar("Record")


def bisect_stable(ladder: list[float], attempt: Callable[[float], tuple[bool, Record]]
                  ) -> tuple[int, list[Record]]:
    """The rung of the largest lr in `ladder` (ascending) at which `attempt(lr)` makes a run
    that trains, by bisection, taking stability as monotone in lr: −1 when none does.
    `attempt(lr)` returns (stable, record); the records of the runs made come back in order."""
    low, high = -1, len(ladder)  # low: known stable (or none), high: known unstable (or none)
    records = []
    while high - low > 1:
        mid = (low + high) // 2
        stable, record = attempt(ladder[mid])
        records.append(record)
        if stable:
            low = mid
        else:
            high = mid
    return low, records


def largest_stable_lr(placement: str, depth: int, warmup: int, seed: int, sweep: Sweep,
                      options: RunOptions, progress: Any = False) -> RunResult:
    """One arm's largest stable peak lr on `seed`: bisected short runs on the sweep's ladder.
    The result trains no model of its own: status "ok", wall_time_s and a `StableLr` (its
    trainer runs as `SweepRung`s) in `extra`."""
    from blocklab.experiments.trainer import run

    started = time.perf_counter()
    mc = train_model_config(placement, depth, sweep)
    entropy: list[float] = []

    def attempt(lr: float) -> tuple[bool, SweepRung]:
        result = run(mc, train_config(sweep, options, seed, warmup=warmup, lr=lr), DATA,
                     progress=False, label=f"sweep {placement} L={depth} lr {lr:g}")
        if result.final is not None:
            entropy.append(result.final.unigram_entropy)
        ok = trains(result)
        return ok, SweepRung(lr=lr, status=result.status, val_loss=final_val(result),
                             trains=ok)

    ladder = sweep.ladder()
    rung, trials = bisect_stable(ladder, attempt)
    found = StableLr(placement=placement, depth=depth, warmup=warmup, seed=seed, rung=rung,
                     ladder=ladder, max_stable_lr=ladder[rung] if rung >= 0 else None,
                     trials=trials, unigram_entropy=entropy[0] if entropy else None)
    return RunResult(status="ok", wall_time_s=time.perf_counter() - started,
                     extra=asdict(found))
