"""What the position suite's runs store, as typed records: a training run and its reads
(`ArmRun`), a passkey run, the relative-error run and the timed cost run; `decode_runs` reads
a suite's results into them once."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from blocklab.errors import ResultsError
from blocklab.experiments.results import json_safe
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.base import Results
from blocklab.experiments.suites.position.data import FiniteRead
from blocklab.experiments.suites.position.realistic_cost import ShapeTimes
from blocklab.experiments.suites.position.scaling import RopeScaling
from blocklab.experiments.suites.position.sizes import FineTuneSetting
from blocklab.experiments.summaries import decode

# mult of L -> needle depth -> passkey accuracy, or UNAVAILABLE where the model cannot read
# that far (multiples and depths as strings).
PasskeyGrid = dict[str, dict[str, float | str]]


@dataclass(frozen=True)
class LengthReads:
    """One model read at every multiple m of L (`extrapolation`; multiples as strings): the
    loss at L (m = 1); per longer m, the mean loss on positions >= L (UNAVAILABLE where the
    model cannot run that far) and on the same tokens in sliding windows of L; the
    per-position loss (None where the model raised) and the error of each read it could not
    make."""

    loss_at_L: float | None
    loss_beyond_L: dict[str, float | str | None]
    sliding: dict[str, float | None]
    per_position: dict[str, list[float | None] | None]
    errors: dict[str, str]


@dataclass(frozen=True)
class ScaledReads:
    """The trained RoPE model read with training-free scaling at each multiple m >= 2 (same
    weights, factor m); `scaling[m]` is the rope_scaling it was read with."""

    loss_beyond_L: dict[str, float | str | None]
    per_position: dict[str, list[float | None] | None]
    errors: dict[str, str]
    scaling: dict[str, RopeScaling]

    def reads(self) -> LengthReads:
        """As a `LengthReads`: no read at L, no sliding windows of its own."""
        return LengthReads(None, self.loss_beyond_L, {}, self.per_position, self.errors)


@dataclass(frozen=True)
class FineTunedReads:
    """The RoPE model fine-tuned with `scaling` (None: the control, plain RoPE) as `finetune`
    says, then read at every multiple with it."""

    loss_at_L: float | None
    loss_beyond_L: dict[str, float | str | None]
    sliding: dict[str, float | None]
    per_position: dict[str, list[float | None] | None]
    errors: dict[str, str]
    scaling: RopeScaling | None
    finetune: FineTuneSetting

    def reads(self) -> LengthReads:
        return LengthReads(self.loss_at_L, self.loss_beyond_L, self.sliding, self.per_position,
                           self.errors)


@dataclass(frozen=True)
class OrderRead:
    """`order_probe` of one model: mean TV distance and KL over `prefixes` prefixes."""

    tv: float | None
    kl: float | None
    prefix_len: int
    prefixes: int


# The keys of a training run's record (`train_and_read`): always, then where the model
# trained ("ok"), then for rope only.
_ARM_RUN_KEYS = ("kind", "arm", "seed", "L", "train")
_ARM_READ_KEYS = ("eval", "finite", "order", "variants")


@dataclass(frozen=True)
class ArmRun:
    """One training run of an arm as stored by `train_and_read`: its status, the trainer's
    result and, when it trained, the model's reads at every multiple (stored as "eval"), its
    logits far past max_seq_len, its order probe and, for rope, every scaled and fine-tuned
    variant by arm name ({} for the others)."""

    arm: str
    seed: int
    L: int
    status: str
    train: RunResult
    reads: LengthReads | None
    finite: FiniteRead | None
    order: OrderRead | None
    variants: dict[str, ScaledReads | FineTunedReads]

    @classmethod
    def from_result(cls, result: RunResult, where: str) -> ArmRun:
        """The record of a training run's result; ResultsError names what does not fit."""
        extra = result.extra
        missing = [k for k in _ARM_RUN_KEYS if k not in extra]
        unknown = sorted(set(extra) - {*_ARM_RUN_KEYS, *_ARM_READ_KEYS})
        if missing or unknown:
            raise ResultsError(f"{where}: a training run's fields differ (missing {missing}, "
                               f"unknown {unknown})")
        finite = extra.get("finite")
        if isinstance(finite, dict):  # "error" is stored only where the model raised
            finite = {"error": None, **finite}
        return cls(
            arm=decode(str, extra["arm"], f"{where}.arm"),
            seed=decode(int, extra["seed"], f"{where}.seed"),
            L=decode(int, extra["L"], f"{where}.L"),
            status=result.status,
            train=RunResult.from_dict(extra["train"], f"{where}.train"),
            reads=decode(LengthReads | None, extra.get("eval"), f"{where}.eval"),
            finite=decode(FiniteRead | None, finite, f"{where}.finite"),
            order=decode(OrderRead | None, extra.get("order"), f"{where}.order"),
            variants=decode(dict[str, ScaledReads | FineTunedReads],
                            extra.get("variants") or {}, f"{where}.variants"))


@dataclass(frozen=True)
class PasskeyRun:
    """One passkey run (`passkey_run`): the passkey model of `arm`, its last training loss and
    its accuracy grid per model read (the arm, and for rope every training-free scaling)."""

    arm: str
    seed: int
    final_train_loss: float | None
    accuracy: dict[str, PasskeyGrid]


@dataclass(frozen=True)
class RelativeErrorRun:
    """The relative-error run (`relative_error_run`): per dtype, [[shift, max error], ...]
    through the naive pipeline and through blocklab's own (C20)."""

    shifts: list[int]
    naive: dict[str, list[list[int | float | None]]]
    blocklab: dict[str, list[list[int | float | None]]]


@dataclass(frozen=True)
class SchemeKernels:
    """The SDPA kernels (profiler op names) and masks of one scheme's training forward+backward
    and decode step, and whether SDPA restricted to flash attention accepts each (or its
    refusal)."""

    train: list[str]
    train_mask: list[str]
    flash_train: bool | str
    decode: list[str]
    decode_mask: list[str]
    flash_decode: bool | str


@dataclass(frozen=True)
class CostRun:
    """C31's timed run (`time_position_cost`): parameters per scheme (`blocklab.budget` and the
    built module), every recorded training-step and per-token decode time per scheme, the
    kernels, and the realistic-shape timing (None in a run from before it was timed)."""

    threads: int
    L: int
    batch_size: int
    decode_tokens: int
    prompt_tokens: int
    params: dict[str, int]
    params_module: dict[str, int]
    train_s: dict[str, list[float]]
    decode_s: dict[str, list[float]]
    kernels: dict[str, SchemeKernels]
    realistic: ShapeTimes | None
    repeats: int


def record_extra(kind: str, record: Any) -> dict[str, Any]:
    """A run's `extra`: its kind, then the record's fields (plain JSON values)."""
    return json_safe({"kind": kind, **dataclasses.asdict(record)})


@dataclass(frozen=True)
class Runs:
    """The suite's evaluation runs, each decoded once: the training runs, the passkey runs, the
    cost run and the relative-error run (None where not among them)."""

    arms: list[ArmRun]
    passkey: list[PasskeyRun]
    cost: CostRun | None
    relative_error: RelativeErrorRun | None


def decode_runs(results: Results) -> Runs:
    """`results` as typed records, by the kind each run stored; ResultsError names a run that
    does not fit its kind."""
    arm_runs, passkey = [], []
    cost: CostRun | None = None
    relative: RelativeErrorRun | None = None
    for spec, result in results:
        where = f"position run {spec.label!r}"
        kind = result.extra.get("kind")
        fields = {k: v for k, v in result.extra.items() if k != "kind"}
        if kind == "train":
            arm_runs.append(ArmRun.from_result(result, where))
        elif kind == "passkey":
            passkey.append(decode(PasskeyRun, fields, where))
        elif kind == "cost" and cost is None:
            # "realistic" is absent from a cost run from before it was timed
            cost = decode(CostRun, {"realistic": None, **fields}, where)
        elif kind == "relative_error" and relative is None:
            relative = decode(RelativeErrorRun, fields, where)
    return Runs(arm_runs, passkey, cost, relative)

