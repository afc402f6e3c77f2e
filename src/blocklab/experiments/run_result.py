"""What one run returns, typed: the trainer's metrics, curves and timings, and what a suite adds.

    result = run(model_config, train_config)           # RunResult
    result.status, result.final.val_loss                # "ok", 4.61
    result.curves.val["256"][-1]                        # the last validation loss at 256 tokens
    result.extra["zero_grad_fraction"]                  # what the suite's run added

A result is stored as one flat JSON object (`to_dict`): the trainer's keys, the suite's own
(`extra`), then the stamps (`provenance`, `run`, `machine_load`); `from_dict` reads it back, as
it reads files written before this type. A run that trains no model has `final` and `curves`
None. No PyTorch here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from blocklab.errors import ResultsError
from blocklab.jsonio import decode


@dataclass
class LayerGradNorms:
    """Gradient norms at the logged steps: `layer[i][l]` block l's at `step[i]`,
    `down_proj[i][l]` its FFN output projection's."""

    step: list[int] = field(default_factory=list)
    layer: list[list[float | None]] = field(default_factory=list)
    down_proj: list[list[float | None]] = field(default_factory=list)


@dataclass
class ResidualRms:
    """The residual stream's RMS after each layer at the logged steps: `layer[i][l]`."""

    step: list[int] = field(default_factory=list)
    layer: list[list[float | None]] = field(default_factory=list)


@dataclass
class Curves:
    """Per step (`step`, `train_loss`, `lr`, `grad_norm`: None where it diverged) and per
    validation (`val_step`, `val[length]`)."""

    step: list[int] = field(default_factory=list)
    train_loss: list[float | None] = field(default_factory=list)
    lr: list[float] = field(default_factory=list)
    grad_norm: list[float | None] = field(default_factory=list)
    val_step: list[int] = field(default_factory=list)
    val: dict[str, list[float | None]] = field(default_factory=dict)
    layer_grad_norms: LayerGradNorms = field(default_factory=LayerGradNorms)
    residual_rms: ResidualRms = field(default_factory=ResidualRms)


@dataclass
class FinalMetrics:
    """The scores a training run ended with (nats per token unless named _bpb): `val_loss` at
    the trained length with its standard error over `val_windows` windows; `val_loss_tail`, the
    mean of the curve's last `val_loss_tail_n`; `train_loss`, the mean of the last finite
    training losses; `eval_errors`, length -> why it could not be evaluated."""

    val_loss: float | None
    val_loss_se: float | None
    val_windows: int
    val_tokens: int
    val_loss_tail: float | None
    val_loss_tail_n: int
    val_bpb: float | None
    val_loss_by_length: dict[str, float | None]
    per_position_loss: dict[str, list[float | None] | None]
    train_loss: float | None
    unigram_entropy: float
    unigram_entropy_bpb: float
    params: int
    eval_errors: dict[str, str] | None = None
    # `data.References`, and how far val_loss came from unigram (0) to bigram (1); None in older
    # results.
    unigram_loss: float | None = None
    bigram_loss: float | None = None
    learned_share: float | None = None


# FinalMetrics fields added after results were first stored (None in older files).
_FINAL_ADDED = ("unigram_loss", "bigram_loss", "learned_share")

# How a training run can fail: missing data, counted apart from quality, never a measurement.
FAILED_STATUSES = ("diverged", "stuck", "did_not_learn")


def failed_count(status: dict[str, int]) -> int:
    """The failed runs of a {status: runs} count ("missing" runs were never made)."""
    return sum(status.get(s, 0) for s in FAILED_STATUSES)


@dataclass
class RunLabel:
    """Which planned run a stored result is; `run_id` (None in older results) names its file
    and takes no part in comparisons."""

    label: str
    arm: str
    seed: int
    run_id: str | None = field(default=None, compare=False)


# The trainer's keys in the order it writes them (a training run has every one of them).
_TRAINING = ("run_id", "status", "reason", "model_config", "train_config", "data",
             "environment", "curves", "final", "steps_done", "wall_time_s", "train_time_s",
             "compile_s", "final_eval_s", "backends", "ms_per_step", "tokens_per_s")
_STAMPS = ("provenance", "run", "machine_load")


@dataclass
class RunResult:
    """One run's result. Training fields are None for a run that trains no model."""

    status: str
    reason: str | None = None
    run_id: str | None = None
    model_config: dict[str, Any] | None = None  # `ModelConfig.to_dict()`
    train_config: dict[str, Any] | None = None  # `TrainConfig.to_dict()`
    data: dict[str, Any] | None = None  # `Corpus.info()`: name, sha256, tokenizer, sizes
    environment: dict[str, Any] | None = None  # versions, CPU, threads (`env.environment`)
    curves: Curves | None = None
    final: FinalMetrics | None = None
    steps_done: int | None = None
    wall_time_s: float | None = None  # everything but compile_s
    train_time_s: float | None = None  # the optimizer steps alone
    compile_s: float | None = None  # warm-up under backend "compiled"
    final_eval_s: float | None = None  # the end-of-run evaluation (final_eval_fraction > 0)
    backends: dict[str, str] | None = None  # op -> the implementation it ran
    ms_per_step: float | None = None
    tokens_per_s: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # what the run's suite recorded
    provenance: dict[str, Any] | None = None  # `provenance.current().to_dict()`
    run: RunLabel | None = None
    machine_load: dict[str, Any] | None = None  # `locks.OthersCpu.record()`, timed runs

    @property
    def claimed_id(self) -> str | None:
        """The run id this result says it is: `run.run_id`, or a lone training run's own."""
        if self.run is not None:
            return self.run.run_id
        return self.run_id if self.provenance is None else None

    @property
    def trained(self) -> bool:
        return self.final is not None

    def to_dict(self) -> dict[str, Any]:
        """The flat JSON object a result is stored as (see the module docstring)."""
        # A training run writes every key in the trainer's order; any other run its status,
        # then what it has.
        names = _TRAINING if self.trained else ("status", *(n for n in _TRAINING
                                                            if n != "status"))
        out = {name: _plain(getattr(self, name)) for name in names
               if self.trained or name == "status" or getattr(self, name) is not None}
        if self.trained:  # left out when None: an older result writes back as it was read
            for name in ("eval_errors", *_FINAL_ADDED):
                if getattr(self.final, name) is None:
                    del out["final"][name]
        clash = set(self.extra) & (set(out) | set(_STAMPS))
        if clash:
            raise ValueError(f"a run's extra keys {sorted(clash)} shadow its own fields")
        out.update(self.extra)
        for name in _STAMPS:
            value = getattr(self, name)
            if value is not None:
                out[name] = _plain(value)
        if self.run is not None and self.run.run_id is None:  # written back as it was stored
            del out["run"]["run_id"]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "result") -> RunResult:
        """A stored result (parsed JSON) as a RunResult; ResultsError names what is wrong."""
        if not isinstance(data, dict) or not isinstance(data.get("status"), str):
            raise ResultsError(f"{where}: a run result is an object with a 'status'")
        known = {f.name for f in dataclasses.fields(cls)} - {"extra", "curves", "final", "run"}
        # A suite's key named like a field but not of its type stays in `extra`.
        fits = {k: v for k, v in data.items() if k in known and _fits(k, v)}
        kwargs: dict[str, Any] = dict(fits)
        extra = {k: v for k, v in data.items()
                 if k not in fits and k not in ("curves", "final", "run")}
        if isinstance(data.get("final"), dict):
            kwargs["final"] = _build(FinalMetrics, data["final"], f"{where}.final")
        elif "final" in data:
            extra["final"] = data["final"]
        if isinstance(data.get("curves"), dict):
            curves = dict(data["curves"])
            curves["layer_grad_norms"] = _build(LayerGradNorms,
                                                curves.get("layer_grad_norms") or {},
                                                f"{where}.curves.layer_grad_norms")
            curves["residual_rms"] = _build(ResidualRms, curves.get("residual_rms") or {},
                                            f"{where}.curves.residual_rms")
            kwargs["curves"] = _build(Curves, curves, f"{where}.curves")
        elif "curves" in data:
            extra["curves"] = data["curves"]
        if isinstance(data.get("run"), dict):
            kwargs["run"] = _build(RunLabel, data["run"], f"{where}.run")
        elif data.get("run") is not None:
            raise ResultsError(f"{where}.run: expected an object {{label, arm, seed}}, got "
                               f"{data['run']!r}")
        return cls(**kwargs, extra=extra)


# What a field's stored value must be (besides null) to be read as that field.
_FIELD_TYPES: dict[str, type | tuple[type, ...]] = {
    "status": str, "reason": str, "run_id": str, "model_config": dict, "train_config": dict,
    "data": dict, "environment": dict, "steps_done": int, "wall_time_s": (int, float),
    "train_time_s": (int, float), "compile_s": (int, float), "final_eval_s": (int, float),
    "backends": dict, "ms_per_step": (int, float), "tokens_per_s": (int, float),
    "provenance": dict, "machine_load": dict}


def _fits(name: str, value: Any) -> bool:
    return value is None or (isinstance(value, _FIELD_TYPES[name])
                             and not isinstance(value, bool))


def _build(kind: type, data: dict[str, Any], where: str) -> Any:
    """`data` as a `kind`, every field checked (`jsonio.decode`); ResultsError otherwise."""
    unknown = sorted(set(data) - {f.name for f in dataclasses.fields(kind)})
    if unknown:
        raise ResultsError(f"{where}: unknown field(s) {unknown}")
    return decode(kind, data, where)


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value
