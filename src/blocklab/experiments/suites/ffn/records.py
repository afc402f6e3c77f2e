"""What an `ffn` run records beyond the trainer's result (`RunResult.extra`): a training run's
zero-gradient probe and the timing run's step times, each read back by its `of`."""

from __future__ import annotations

from dataclasses import dataclass

from blocklab.experiments.run_result import RunResult
from blocklab.experiments.summaries import decode


@dataclass(frozen=True)
class ZeroGradFraction:
    """A training run's C17 probe: the fraction of FFN activation inputs whose loss gradient
    is exactly zero, at initialisation and after training (`zero_gradient_fraction`)."""

    init: float
    final: float

    @classmethod
    def of(cls, result: RunResult, where: str) -> ZeroGradFraction | None:
        """The probe `result` recorded; None for a run that recorded none."""
        if "zero_grad_fraction" not in result.extra:
            return None
        return decode(cls, result.extra["zero_grad_fraction"], f"{where}.zero_grad_fraction")


@dataclass(frozen=True)
class StepTiming:
    """The timing run's record (`time_arms`): each arm's median ms per optimizer step, every
    timed step (ms) and the threads it ran on."""

    ms_per_step: dict[str, float]
    samples_ms: dict[str, list[float]]
    threads: int

    @classmethod
    def of(cls, result: RunResult, where: str) -> StepTiming:
        """The record of a stored timing run (its per-arm "ms_per_step" is the suite's own,
        in `extra`, though a training run's field has the name)."""
        return decode(cls, {name: result.extra[name] for name in ("ms_per_step", "samples_ms",
                                                                    "threads")}, where)
