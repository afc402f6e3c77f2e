"""What a `quantize` run records (`RunResult.extra`): a timing run's `TimingRecord` and a
quality run's `QualityRecord`, each read back once by its `of`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from blocklab.config import ModelConfig
from blocklab.errors import ResultsError
from blocklab.experiments.int8_records import SchemeLoss, SchemeTimes, SwigluError
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.quantize.sizes import TimedShape
from blocklab.experiments.summaries import decode


@dataclass(frozen=True)
class TimingRecord:
    """What a timing run adds to its RunResult (`run_timing`): the timed model
    (`ModelConfig.to_dict()`), its shape, the CPU's int8 flags (`cpu_flags`) and what
    `measure_schemes` measured, whose fields are stored beside them."""

    model: dict[str, Any]
    spec: TimedShape
    cpu_flags: dict[str, bool]
    times: SchemeTimes

    @property
    def config(self) -> ModelConfig:
        return ModelConfig.from_dict(self.model)

    def extra(self) -> dict[str, object]:
        """The keys it adds to its run's stored JSON."""
        return {"kind": "timing", "model": self.model, "spec": self.spec.to_dict(),
                "cpu_flags": self.cpu_flags, **dataclasses.asdict(self.times)}

    @classmethod
    def of(cls, result: RunResult, where: str) -> TimingRecord:
        """The record of a stored timing run; ResultsError names what does not fit. (Its
        per-scheme "compile_s" is the suite's own, in `extra`, though a training run's field
        has the name: `RunResult.from_dict` keeps a key of another type there.)"""
        fields = dict(result.extra)
        expected = {"kind", "model", "spec", "cpu_flags", *_TIMES}
        missing = sorted(expected - set(fields) - set(_FREE))
        unknown = sorted(set(fields) - expected)
        if missing or unknown or fields["kind"] != "timing":
            raise ResultsError(f"{where}: {fields.get('kind')!r} is not a timing record "
                               f"(missing {missing}, unknown {unknown})")
        return decode(cls, {"model": fields["model"], "spec": fields["spec"],
                            "cpu_flags": fields["cpu_flags"],
                            "times": {name: fields.get(name) for name in _TIMES}}, where)


_TIMES = tuple(f.name for f in dataclasses.fields(SchemeTimes))
_FREE = ("free_prefill_s", "free_decode_s")  # absent from records made before the bounds


def scheme_times(doc: dict[str, Any], where: str = "timings") -> SchemeTimes:
    """`SchemeTimes` from the keys of its JSON form in `doc` (`dataclasses.asdict` of one, with
    other keys beside; free-layers timings absent from before they were timed read as None);
    ResultsError names what does not fit."""
    return decode(SchemeTimes, {name: doc.get(name) for name in _TIMES}, where)


@dataclass(frozen=True)
class TrainedModel:
    """The training run under a quality run: its validation loss, steps and data
    (`Corpus.info()`)."""

    val_loss: float | None
    steps_done: int
    data: dict[str, Any]


@dataclass(frozen=True)
class LayerMerge:
    """One layer's C33 numbers (`merge_comparison`)."""

    per_row_diff: float
    per_tensor_diff: float
    gate_scale: float
    up_scale: float
    scale_ratio: float
    merged_over_max: float


@dataclass(frozen=True)
class QualityRecord:
    """What a quality run adds to its RunResult (`run_quality`): the trained model
    (`ModelConfig.to_dict()`) and its training, its losses under every scheme
    (`quality_of_schemes`) and every SwiGLU quantization (`swiglu_errors`), each layer's C33
    comparison (`merge_comparison`) and their maxima."""

    kind: str
    model: dict[str, Any]
    train: TrainedModel
    quality: dict[str, SchemeLoss]
    swiglu: dict[str, SwigluError]
    layers: list[LayerMerge]
    merged_per_row_max_diff: float
    merged_per_tensor_max_diff: float
    merged_scale_over_max: list[float]

    @classmethod
    def of(cls, result: RunResult, where: str) -> QualityRecord:
        """The record of a stored quality run; ResultsError names what does not fit."""
        return decode(cls, result.extra, where)
