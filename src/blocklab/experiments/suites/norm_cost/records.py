"""What a timing run records in its `RunResult.extra` (`KernelTimes`, `LikeForLikeTimes`,
`StepTimes`, each read back once by its `of`), and `timed_run`, which wraps a measurement into
the RunResult of a run that trains no model."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Self

from blocklab.errors import ResultsError
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.norm_cost.sizes import StepShape
from blocklab.experiments.summaries import decode


@dataclass(frozen=True)
class ImplTimes:
    """One implementation in a kernel timing (`time_kernels`): seconds per call in each timed
    repeat of each pass timed (`fwd_s`, `fwdbwd_s`), a compiled one's compile time, the error
    a compiled one failed with (then nothing else), and the bytes kept for backward
    (`saved_tensor_bytes`). A field is None where the implementation has none; its stored JSON
    leaves such keys out."""

    compile_s: float | None = None
    error: str | None = None
    bytes: int | None = None
    extra_bytes: int | None = None
    tensors: int | None = None
    fwd_s: list[float] | None = None
    fwdbwd_s: list[float] | None = None

    def seconds(self, pass_name: str) -> list[float] | None:
        """The timings of `pass_name` ("fwd" or "fwdbwd"), None where it was not timed."""
        return self.fwd_s if pass_name == "fwd" else self.fwdbwd_s

    def to_dict(self) -> dict[str, float | str | int | list[float]]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}

    @classmethod
    def of(cls, doc: object, where: str) -> ImplTimes:
        """An implementation's stored record (keys it has none of left out)."""
        names = [f.name for f in dataclasses.fields(cls)]
        if not isinstance(doc, dict) or set(doc) - set(names):
            raise ResultsError(f"{where}: expected an object with keys among {names}")
        return decode(cls, {name: doc.get(name) for name in names}, where)


@dataclass(frozen=True)
class KernelTimes:
    """What a kernels run adds to its RunResult (`time_kernels`): its shape [rows, d],
    threads and repeats, the calls per timed block of each implementation (per pass, PASSES
    order), each implementation's record, and the process's one-off torch.compile start-up."""

    kind: str  # "kernels"
    d: int
    rows: int
    threads: int
    repeats: int
    inner: dict[str, list[int]]
    impls: dict[str, ImplTimes]
    inductor_warmup_s: float

    def extra(self) -> dict[str, object]:
        """The keys it adds to its run's stored JSON."""
        return {**dataclasses.asdict(self),
                "impls": {name: rec.to_dict() for name, rec in self.impls.items()}}

    @classmethod
    def of(cls, result: RunResult, where: str) -> Self:
        """The record of a stored run; ResultsError names what does not fit."""
        impls = result.extra.get("impls")
        if not isinstance(impls, dict):
            raise ResultsError(f"{where}.impls: expected an object, found {impls!r}")
        record = decode(cls, {**result.extra, "impls": {}}, where)
        return dataclasses.replace(record, impls={
            name: ImplTimes.of(doc, f"{where}.impls.{name}") for name, doc in impls.items()})


@dataclass(frozen=True)
class LikeForLikeTimes(KernelTimes):
    """What a like-for-like run adds (`time_like_for_like`): its kernel timing (kind
    "like-for-like"), the method (`like_method`), whether each of PyTorch's functional norms
    runs fused here, what ran for each norm, and the kind of `build_implementations` timed."""

    method: str
    torch_fused: dict[str, bool]
    kernels: dict[str, str]
    timed_kind: str


@dataclass(frozen=True)
class StepTimes:
    """What the step-time run adds (`time_training_steps`): threads, the models' shape,
    their parameter counts per norm and the seconds per optimizer step, {path: {norm: [s]}}."""

    kind: str  # "step"
    threads: int
    model: StepShape
    params: dict[str, int]
    step_s: dict[str, dict[str, list[float]]]

    def extra(self) -> dict[str, object]:
        """The keys it adds to its run's stored JSON."""
        return dataclasses.asdict(self)

    @classmethod
    def of(cls, result: RunResult, where: str) -> StepTimes:
        """The record of a stored run; ResultsError names what does not fit."""
        return decode(cls, result.extra, where)


def timed_run(measure: Callable[[], KernelTimes | StepTimes]) -> RunResult:
    """The RunResult of a timing run (no model trained): `measure()`'s record as its extra,
    the seconds it took as its wall time."""
    started = time.perf_counter()
    record = measure()
    return RunResult(status="ok", wall_time_s=time.perf_counter() - started,
                     extra=record.extra())
