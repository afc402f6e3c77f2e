"""The position suite's sizes, RoPE scaling, run records (`decode_runs`), runs, plan and prices."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from blocklab.config import ModelConfig
from blocklab.errors import InputError, PositionsBeyondTable, ResultsError
from blocklab.experiments import ladder
from blocklab.experiments.env import torch_threads
from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import added_identity, json_safe, train_identity
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.scale import Scale
from blocklab.experiments.suites.base import (
    Results,
    RunSpec,
    interleaved,
    training_spec,
    tuning_seeds,
)
from blocklab.experiments.suites.evaluation import FINAL_EVAL_FRACTION, graded_only
from blocklab.experiments.suites.position.timing import (
    COST_SCHEMES,
    REALISTIC_SHAPES,
    REFERENCE_S,
    THETA,
    ShapeTimes,
    accepted_by,
    decode_call,
    sdpa_kernels,
    sdpa_masks,
    time_realistic_shapes,
)
from blocklab.experiments.suites.tuning import LrGrid, lr_trials, tune_arm, tune_arms
from blocklab.experiments.summaries import ArmTuning, LrTrial, decode

if TYPE_CHECKING:
    from blocklab.experiments.trainer import TrainConfig


UNAVAILABLE = "unavailable (table)"


@dataclass(frozen=True)
class ModelShape:
    """Every arm's model's width, depth and heads."""

    d_model: int
    n_layers: int
    n_heads: int


@dataclass(frozen=True)
class TrainSetting:
    """Each arm's training run at L: `steps` of `batch_size` windows, warmup over the first
    `warmup_steps`, peak lr tuned on `lr_grid` with `tuning_seeds` seeds (0: no tuning, every
    arm at the grid's middle lr)."""

    steps: int
    batch_size: int
    warmup_steps: int
    lr_grid: LrGrid
    tuning_seeds: int


@dataclass(frozen=True)
class FineTuneSetting:
    """`steps` of AdamW at `factor`·L tokens per window (constant `lr` after a 10% warmup), for
    the RoPE model with each scaling of `kinds` (None: plain RoPE, the control that gets the
    same extra training), the scaling's factor being the longest multiple read."""

    factor: int
    steps: int
    lr: float
    kinds: tuple[str | None, ...]


@dataclass(frozen=True)
class PasskeySetting:
    """The passkey models: `steps` of `batch_size` passkey examples at peak `lr`, scored on `n`
    examples per (length, needle depth) at every depth of `depths`."""

    steps: int
    batch_size: int
    lr: float
    n: int
    depths: tuple[float, ...]


@dataclass(frozen=True)
class OrderSetting:
    """C29's order probe: `prefixes` validation prefixes of `prefix_len` tokens per seed."""

    prefix_len: int
    prefixes: int


@dataclass(frozen=True)
class CostSetting:
    """C31's timed run: `repeats` interleaved repeats after `warmup` unrecorded ones; decode
    timed over `decode_tokens` tokens after a prompt of L − decode_tokens."""

    warmup: int
    repeats: int
    decode_tokens: int


@dataclass(frozen=True)
class PositionSize:
    """One suite size: the model, the training length L, the multiples of L read
    (`eval_windows` validation windows each) and each kind of run (None: not at this size)."""

    model: ModelShape
    L: int
    mults: tuple[int, ...]
    train: TrainSetting
    eval_windows: int
    finetune: FineTuneSetting | None
    passkey: PasskeySetting | None
    order: OrderSetting
    cost: CostSetting | None  # None: no timed cost run (the ladder's rungs: C31 is not on it)

    def payload(self) -> dict[str, Any]:
        """The size as a run's "size_config" (a grid without refinement leaves `refine` out)."""
        out = dataclasses.asdict(self)
        if not self.train.lr_grid.refine:
            del out["train"]["lr_grid"]["refine"]
        return out


SIZES: dict[str, PositionSize] = {
    "tiny": PositionSize(
        model=ModelShape(d_model=32, n_layers=2, n_heads=2), L=128, mults=(1, 2, 4),
        train=TrainSetting(steps=4, batch_size=2, warmup_steps=1,
                           lr_grid=LrGrid((1e-3, 3e-3, 1e-2), 3.0, max_extensions=1),
                           tuning_seeds=0),
        eval_windows=2,
        finetune=FineTuneSetting(factor=2, steps=2, lr=1e-3, kinds=(None, "ntk", "yarn")),
        passkey=None,  # no registered rule grades it: full only
        order=OrderSetting(prefix_len=32, prefixes=4),
        cost=CostSetting(warmup=1, repeats=3, decode_tokens=4)),
    "quick": PositionSize(
        model=ModelShape(d_model=64, n_layers=2, n_heads=2), L=128, mults=(1, 2, 4, 8, 16),
        # Untuned (the grid's middle lr): each graded part compares an arm with itself.
        train=TrainSetting(steps=300, batch_size=16, warmup_steps=20,
                           lr_grid=LrGrid((1e-3, 3e-3, 1e-2), 3.0), tuning_seeds=0),
        eval_windows=16,
        finetune=FineTuneSetting(factor=4, steps=40, lr=1e-3, kinds=(None, "ntk", "yarn")),
        passkey=None,
        order=OrderSetting(prefix_len=64, prefixes=64),
        cost=CostSetting(warmup=2, repeats=20, decode_tokens=32)),
    "full": PositionSize(
        model=ModelShape(d_model=128, n_layers=4, n_heads=4), L=256, mults=(1, 2, 4, 8, 16),
        train=TrainSetting(steps=2000, batch_size=32, warmup_steps=100,
                           lr_grid=LrGrid((5e-4, 1e-3, 2e-3, 4e-3, 8e-3), 2.0),
                           tuning_seeds=2),
        eval_windows=32,
        finetune=FineTuneSetting(factor=4, steps=200, lr=5e-4,
                                 kinds=(None, "linear", "ntk", "yarn", "yarn-rescaled")),
        passkey=PasskeySetting(steps=2000, batch_size=32, lr=3e-3, n=32,
                               depths=(0.1, 0.3, 0.5, 0.7, 0.9)),
        order=OrderSetting(prefix_len=128, prefixes=128),
        cost=CostSetting(warmup=3, repeats=30, decode_tokens=64)),
}


def rung(name: str, base: PositionSize) -> PositionSize:
    """`base` grown to ladder rung `name` on the RoPE arm's parameters (`ladder.grown`), warmup
    keeping its share; lr, fine-tunes and reads as the base's; no cost run (C31 is off it)."""
    head = base.model.d_model // base.model.n_heads
    t = base.train
    d, b, n = ladder.grown(
        name, lambda d: ModelConfig(vocab_size=256, d_model=d, n_layers=base.model.n_layers,
                                    n_heads=d // head, position="rope", max_seq_len=base.L,
                                    rope_theta=THETA),
        base.model.d_model, t.batch_size, t.steps, head, base.L)
    return dataclasses.replace(
        base, model=ModelShape(d_model=d, n_layers=base.model.n_layers, n_heads=d // head),
        train=dataclasses.replace(t, steps=n, batch_size=b,
                                  warmup_steps=ladder.share(t.warmup_steps, n, t.steps)),
        cost=None)


# The ladder's rungs (C21 and C30): the quick size at 4×, 16× and 64× its training compute.
SIZES.update({name: rung(name, SIZES[ladder.BASE]) for name in ladder.RUNGS})

# C31's parameter count covers the timed schemes (`COST_SCHEMES`) and the absolute ones (no
# timing: they add to the input embedding only).
PARAM_SCHEMES = ("none", "learned", "sinusoidal", "rope", "alibi")


# The schemes no registered rule grades: C21 reads a learned table long enough to be read past
# L and sinusoidal with the embedding scale instead. Trained at full only.
REPORTED_ONLY = ("learned", "sinusoidal")


def schemes(size: str) -> tuple[str, ...]:
    """Every position arm of the suite's design at `size` (what the full size trains)."""
    return ("none", "learned", f"learned-{max(SIZES[size].mults)}L", "sinusoidal",
            "sinusoidal+scale", "rope", "alibi")


def arms(size: str) -> tuple[str, ...]:
    """The arms `size` trains: at graded-only sizes, those a registered rule grades."""
    return tuple(a for a in schemes(size)
                 if not (graded_only(size) and a in REPORTED_ONLY))


def arm_config(size: str, arm: str) -> ModelConfig:
    """The model of `arm`: only `position` differs, and with it the learned table's length or
    the embedding scale of sinusoidal+scale."""
    config = SIZES[size]
    L, shape = config.L, config.model
    position = arm.split("-")[0].split("+")[0]
    max_seq_len = max(config.mults) * L if arm.startswith("learned-") else L
    return ModelConfig(vocab_size=256, d_model=shape.d_model, n_layers=shape.n_layers,
                       n_heads=shape.n_heads, position=position, max_seq_len=max_seq_len,
                       rope_theta=THETA, embed_scale=arm == "sinusoidal+scale",
                       name=f"position-{arm}")


def train_config(options: RunOptions, seed: int, lr: float | None = None) -> TrainConfig:
    """An arm's training run at `lr` (None: the grid's middle, as the cost run uses)."""
    from blocklab.experiments.trainer import TrainConfig

    size = options.size
    t = SIZES[size].train
    base = t.lr_grid.base
    return TrainConfig.for_run(options, seed, steps=t.steps, batch_size=t.batch_size,
                               seq_len=SIZES[size].L,
                               lr=base[len(base) // 2] if lr is None else lr,
                               warmup_steps=t.warmup_steps, eval_every=0, log_every=0,
                               eval_batches=1, threads=1,
                               final_eval_fraction=FINAL_EVAL_FRACTION[size])


def shape(size: str) -> tuple[ModelConfig, int, int]:
    """The RoPE arm's model, batch and training length L at `size` (`--precision auto`)."""
    return arm_config(size, "rope"), SIZES[size].train.batch_size, SIZES[size].L


def scale(size: str, claim: str) -> Scale | None:
    """The scale C21, C29 and C30 are graded at (the RoPE arm's run); None for C31."""
    if claim == "C31":
        return None
    config = SIZES[size]
    return Scale.of(arm_config(size, "rope"),
                    config.train.steps * config.train.batch_size * config.L,
                    f"d {config.model.d_model} × {config.model.n_layers} layers, trained at "
                    f"L = {config.L}",
                    f"d {config.model.d_model} × {config.model.n_layers} 层，"
                    f"训练长度 L = {config.L}")


# YaRN's beta_fast = 32, beta_slow = 1 were tuned on Llama 2: 4096 tokens, theta 10^4.
YARN_REFERENCE_LENGTH = 4096
YARN_PAPER_BETAS = (32.0, 1.0)
SCALINGS = ("linear", "ntk", "dynamic", "yarn", "yarn-rescaled")
# A RoPE model's `ModelConfig.rope_scaling`: "rope_type", "factor" and, per type, the original
# length and YaRN's β.
RopeScaling = dict[str, str | int | float]


def yarn_betas(L: int) -> tuple[float, float]:
    """(beta_fast, beta_slow) for training length L: the paper's × L / 4096, since pair i
    completes L / (2π θ^(2i/r)) turns within L, so this keeps YaRN's split of the spectrum."""
    scale = L / YARN_REFERENCE_LENGTH
    return YARN_PAPER_BETAS[0] * scale, YARN_PAPER_BETAS[1] * scale


def yarn_ramp_pairs(L: int, rotary_dim: int, beta_fast: float, beta_slow: float
                    ) -> tuple[int, int]:
    """The (low, high) pair indices of YaRN's ramp, as `nn.rope_scaling.yarn_rope` truncates
    them: pairs < low keep their frequency, pairs >= high are divided by the factor."""
    def pair_for_turns(turns: float) -> float:
        return rotary_dim * math.log(L / (turns * 2 * math.pi)) / (2 * math.log(THETA))

    low = max(math.floor(pair_for_turns(beta_fast)), 0)
    high = min(math.ceil(pair_for_turns(beta_slow)), rotary_dim - 1)
    return low, high


def scaling_config(kind: str, factor: float, L: int) -> RopeScaling:
    """The rope_scaling dict of `kind` at `factor` for a model trained at L."""
    if kind in ("linear", "ntk"):
        return {"rope_type": kind, "factor": float(factor)}
    scaling: RopeScaling = {"rope_type": "yarn" if kind.startswith("yarn") else kind,
                            "factor": float(factor), "original_max_position_embeddings": L}
    if kind == "yarn-rescaled":
        scaling["beta_fast"], scaling["beta_slow"] = yarn_betas(L)
    return scaling


def with_rope_scaling(model, scaling: RopeScaling | None):
    """A copy of a trained RoPE `DecoderLM` with `scaling`: same weights, new rotary table."""
    from blocklab.nn import DecoderLM

    scaled = DecoderLM(model.config.replace(rope_scaling=scaling), backend=model.backend,
                       precision=model.precision)
    scaled.load_state_dict(model.state_dict())
    return scaled.to(next(model.parameters()).device).eval()


def read_at(model, kind: str | None, m: int, L: int):
    """`model` to read at m·L tokens: as it is (`kind` None), else RoPE-scaled by `kind` at m."""
    return model if kind is None else with_rope_scaling(model, scaling_config(kind, m, L))


# str(mult of L) -> str(needle depth) -> passkey accuracy, or UNAVAILABLE past a table's end.
PasskeyGrid = dict[str, dict[str, float | str]]


@dataclass(frozen=True)
class FiniteRead:
    """Are the logits finite at positions far past max_seq_len (None: the model raised)?"""

    position: int
    max_seq_len: int
    float32: bool | None
    bfloat16: bool | None
    error: str | None = None  # stored only where the model raised


@dataclass(frozen=True)
class LengthReads:
    """One model read at every multiple m of L (`extrapolation`): the loss at L; per longer m,
    the loss on positions >= L (or UNAVAILABLE) and on them in sliding windows of L."""

    loss_at_L: float | None
    loss_beyond_L: dict[str, float | str | None]
    sliding: dict[str, float | None]
    per_position: dict[str, list[float | None] | None]
    errors: dict[str, str]


@dataclass(frozen=True)
class ScaledReads:
    """The RoPE model read with training-free scaling `scaling[m]` (factor m) at each m >= 2."""

    loss_beyond_L: dict[str, float | str | None]
    per_position: dict[str, list[float | None] | None]
    errors: dict[str, str]
    scaling: dict[str, RopeScaling]

    def reads(self) -> LengthReads:
        return LengthReads(None, self.loss_beyond_L, {}, self.per_position, self.errors)


@dataclass(frozen=True)
class FineTunedReads(LengthReads):
    """The RoPE model fine-tuned with `scaling` (None: plain RoPE, the control), then read."""

    scaling: RopeScaling | None
    finetune: FineTuneSetting

    def reads(self) -> LengthReads:
        return self


@dataclass(frozen=True)
class OrderRead:
    """`order_probe` of one model: mean TV distance and KL over `prefixes` prefixes."""

    tv: float | None
    kl: float | None
    prefix_len: int
    prefixes: int


# The keys of a training run's record (`train_and_read`): always, then where it trained.
_ARM_RUN_KEYS = ("kind", "arm", "seed", "L", "train")
_ARM_READ_KEYS = ("eval", "finite", "order", "variants")


@dataclass(frozen=True)
class ArmRun:
    """A training run as `train_and_read` stores it: the trainer's result and, when it trained,
    its reads ("eval"), far past max_seq_len, in the order probe, and rope's variants."""

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
        extra = result.extra
        missing = [k for k in _ARM_RUN_KEYS if k not in extra]
        unknown = sorted(set(extra) - {*_ARM_RUN_KEYS, *_ARM_READ_KEYS})
        if missing or unknown:
            raise ResultsError(f"{where}: a training run's fields differ (missing {missing}, "
                               f"unknown {unknown})")
        return cls(
            arm=decode(str, extra["arm"], f"{where}.arm"),
            seed=decode(int, extra["seed"], f"{where}.seed"),
            L=decode(int, extra["L"], f"{where}.L"),
            status=result.status,
            train=RunResult.from_dict(extra["train"], f"{where}.train"),
            reads=decode(LengthReads | None, extra.get("eval"), f"{where}.eval"),
            finite=decode(FiniteRead | None, extra.get("finite"), f"{where}.finite"),
            order=decode(OrderRead | None, extra.get("order"), f"{where}.order"),
            variants=decode(dict[str, ScaledReads | FineTunedReads],
                            extra.get("variants") or {}, f"{where}.variants"))


@dataclass(frozen=True)
class PasskeyRun:
    """A passkey run: accuracy grid per model read (the arm; for rope each scaling too)."""

    arm: str
    seed: int
    final_train_loss: float | None
    accuracy: dict[str, PasskeyGrid]


@dataclass(frozen=True)
class RelativeErrorRun:
    """C20's run: per dtype, [[shift, max error], ...] through each pipeline."""

    shifts: list[int]
    naive: dict[str, list[list[int | float | None]]]
    blocklab: dict[str, list[list[int | float | None]]]


@dataclass(frozen=True)
class SchemeKernels:
    """The SDPA kernels and masks of one scheme's training pass and decode step, and whether
    SDPA restricted to flash attention accepts each (or its refusal)."""

    train: list[str]
    train_mask: list[str]
    flash_train: bool | str
    decode: list[str]
    decode_mask: list[str]
    flash_decode: bool | str


@dataclass(frozen=True)
class CostRun:
    """C31's timed run (`time_position_cost`); `realistic`: None in an older run."""

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


def _result(kind: str, record: Any, started: float) -> RunResult:
    return RunResult(status="ok", wall_time_s=time.perf_counter() - started,
                     extra=json_safe({"kind": kind, **dataclasses.asdict(record)}))


@dataclass(frozen=True)
class Runs:
    """The suite's evaluation runs, each decoded once (None: not among them)."""

    arms: list[ArmRun]
    passkey: list[PasskeyRun]
    cost: CostRun | None
    relative_error: RelativeErrorRun | None


def decode_runs(results: Results) -> Runs:
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


FAR_POSITION = 100_000  # C26: positions this far past max_seq_len must still give finite logits


def loss_beyond(per_position: Sequence[float], L: int) -> float:
    """Mean of the per-position losses at input positions p >= L (the tokens past training)."""
    if len(per_position) <= L:
        raise InputError(f"a window of {len(per_position)} positions has none at or past L={L}")
    return float(np.mean(np.asarray(per_position[L:], dtype=np.float64)))


def sliding_window_loss(model, rows, window: int, stride: int) -> list[float]:
    """Per-position loss of `rows` [N, n + 1] read in windows of `window` tokens.

    Windows start at 0, stride, 2·stride, ... (n − window must be a multiple of stride); the
    first window scores all its targets, every later one only its last `stride`, so every
    target is scored once, with between window − stride + 1 and window tokens of context, at
    positions below `window`. Returns [n] losses, averaged over the N rows.
    """
    import torch
    import torch.nn.functional as F

    from blocklab.experiments.trainer import evaluating

    n_rows, n = rows.shape[0], rows.shape[1] - 1
    if n < window or (n - window) % stride:
        raise InputError(f"sliding windows of {window} with stride {stride} do not tile {n} "
                         "positions")
    starts = list(range(0, n - window + 1, stride))
    pieces = torch.stack([rows[:, s:s + window + 1] for s in starts], dim=1)  # [N, W, window+1]
    flat = pieces.flatten(0, 1).to(next(model.parameters()).device)
    losses = []
    with evaluating(model):
        for chunk in flat.split(max(1, 16384 // window)):
            logits = model(chunk[:, :-1])  # [b, window, V]
            losses.append(F.cross_entropy(logits.transpose(1, 2), chunk[:, 1:],
                                          reduction="none"))
    loss = torch.cat(losses).cpu().view(n_rows, len(starts), window)
    per_position = torch.empty(n_rows, n, dtype=torch.float64)
    for w, start in enumerate(starts):
        keep = 0 if w == 0 else window - stride
        per_position[:, start + keep:start + window] = loss[:, w, keep:].double()
    return per_position.mean(0).tolist()


def extrapolation(model, val_tokens, L: int, mults: Sequence[int], n_windows: int, *,
                  sliding: bool = True, scaling: str | None = None) -> LengthReads:
    """Full-context (and with `sliding`, sliding-window) losses at every multiple m of L, read
    with RoPE scaling `scaling` at factor m if given (`read_at`)."""
    from blocklab.experiments.data import validation_windows
    from blocklab.experiments.trainer import evaluate

    loss_at_L = None
    beyond: dict[str, float | str | None] = {}
    slid: dict[str, float | None] = {}
    per_position: dict[str, list[float | None] | None] = {}
    errors: dict[str, str] = {}
    for m in mults:
        rows = validation_windows(val_tokens, m * L, n_windows)
        reader = read_at(model, scaling, m, L)
        scores = evaluate(reader, {m * L: rows}, batch_tokens=16384)[m * L]
        key = str(m)
        per_position[key] = scores["per_position"]
        if scores["loss"] is None:
            errors[key] = scores["error"]
            if m > 1:
                beyond[key] = UNAVAILABLE
        elif m == 1:
            loss_at_L = scores["loss"]
        else:
            beyond[key] = loss_beyond(scores["per_position"], L)
        if sliding and m > 1:
            curve = sliding_window_loss(reader, rows, L, L // 2)
            slid[key] = loss_beyond(curve, L)
    return LengthReads(loss_at_L, beyond, slid, per_position, errors)


def finite_far_out(model) -> dict[str, int | bool | str | None]:
    """Are `model`'s logits finite on 16 tokens from FAR_POSITION on, in float32 and bfloat16?
    A learned table raises instead: None, and its error's first line under "error"."""
    import copy

    import torch

    device = next(model.parameters()).device
    ids = torch.arange(16, device=device)[None] % model.config.vocab_size
    positions = torch.arange(FAR_POSITION, FAR_POSITION + 16, device=device)
    out: dict[str, int | bool | str | None] = {"position": FAR_POSITION,
                                               "max_seq_len": model.config.max_seq_len}
    for dtype in ("float32", "bfloat16"):
        copy_ = copy.deepcopy(model).to(getattr(torch, dtype)).eval()
        try:
            with torch.no_grad():
                logits = copy_(ids, positions=positions)
            out[dtype] = bool(torch.isfinite(logits).all())
        except PositionsBeyondTable as err:
            out[dtype] = None
            out["error"] = str(err).splitlines()[0]
    return out


RELATIVE_ERROR_SHIFTS = (0, 10, 100, 1000, 10_000, 100_000, 1_000_000)
RELATIVE_ERROR_DTYPES = ("float64", "float32", "bfloat16", "float16")


def rope_relative_error(dtype: str, shifts: Sequence[int] = RELATIVE_ERROR_SHIFTS, *,
                        blocklab: bool = False) -> list[list[float | None]]:
    """[[s, max |score(m, n) − score(m + s, n + s)|], ...] with RoPE's positions in `dtype`.

    Naive: positions, angles and rotation all in `dtype`. `blocklab`: its own numerics (float32
    angles, `apply_rotary` in float32, cast back; no table, which at s = 10^6 would hold a
    million rows). Scores q·k/√64 in float64, q, k ~ N(0, 1), m − n in [0, 64), max over 64
    draws: exactly they depend on m − n only, so the error is rounding alone; NaN/inf is None.
    """
    import torch

    head_dim, samples = 64, 64
    dt = getattr(torch, dtype)
    g = torch.Generator().manual_seed(0)
    q = torch.randn(samples, head_dim, generator=g, dtype=torch.float64)
    k = torch.randn(samples, head_dim, generator=g, dtype=torch.float64)
    n = torch.randint(0, 64, (samples,), generator=g)
    m = n + torch.randint(0, 64, (samples,), generator=g)
    if blocklab:
        from blocklab.nn import apply_rotary
        from blocklab.nn.position import rotary_cos_sin
        from blocklab.nn.rope_scaling import rope_frequencies

        inv_freq, _ = rope_frequencies(head_dim, THETA)

        def rotate(x, positions):
            cos, sin = rotary_cos_sin(positions[None], inv_freq)  # [1, samples, head_dim]
            x = x.to(dt)[None, None]  # [1, 1, samples, head_dim]
            out, _ = apply_rotary(x, x, cos, sin)
            return out.double().flatten(0, 2)
    else:
        inv_freq = 1.0 / (THETA ** (torch.arange(0, head_dim, 2, dtype=torch.float64)
                                    / head_dim))

        def rotate(x, positions):
            angles = positions.to(dt)[:, None] * inv_freq.to(dt)  # [samples, head_dim/2]
            cos, sin = angles.cos(), angles.sin()
            x = x.to(dt)
            x1, x2 = x[:, :head_dim // 2], x[:, head_dim // 2:]
            return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).double()

    def scores(shift: int):
        return (rotate(q, m + shift) * rotate(k, n + shift)).sum(-1) / math.sqrt(head_dim)

    base = scores(0)
    out: list[list[float | None]] = []
    for shift in shifts:
        err = (scores(shift) - base).abs().max().item()
        out.append([shift, err if math.isfinite(err) else None])
    return out


def relative_error_run() -> RunResult:
    """C20's relative-position error in every dtype, both pipelines (a `RelativeErrorRun`)."""
    started = time.perf_counter()
    with torch_threads(1):
        naive = {dt: rope_relative_error(dt) for dt in RELATIVE_ERROR_DTYPES}
        ours = {dt: rope_relative_error(dt, blocklab=True) for dt in RELATIVE_ERROR_DTYPES}
    record = RelativeErrorRun(shifts=list(RELATIVE_ERROR_SHIFTS), naive=naive, blocklab=ours)
    return _result("relative_error", record, started)


def reversed_prefixes(rows):
    """Each row [N, k] with its first k − 1 tokens reversed and its last token kept: the same
    bag of tokens and the same token read, so a model whose output depended only on that bag
    (bidirectional attention) would predict the same next token from both."""
    import torch

    return torch.cat((rows[:, :-1].flip(1), rows[:, -1:]), dim=1)


def order_probe(model, val_tokens, prefix_len: int, prefixes: int) -> dict[str, float]:
    """How much `model`'s next-token distribution moves when a prefix is reversed (C29): over
    `prefixes` validation windows x of `prefix_len` tokens, p = softmax(logits after x) and q
    after `reversed_prefixes(x)` in float64, the mean TV = ½ Σ_v |p_v − q_v| and KL(p ‖ q)."""
    import torch

    from blocklab.experiments.data import validation_windows
    from blocklab.experiments.trainer import evaluating

    rows = validation_windows(val_tokens, prefix_len - 1, prefixes)  # [N, prefix_len]
    with evaluating(model):
        device = next(model.parameters()).device
        logits = model(torch.cat((rows, reversed_prefixes(rows))).to(device))[:, -1].double().cpu()
    log_p, log_q = logits.log_softmax(-1).chunk(2)  # [N, V] each
    tv = 0.5 * (log_p.exp() - log_q.exp()).abs().sum(-1)
    kl = (log_p.exp() * (log_p - log_q)).sum(-1)
    return {"tv": float(tv.mean()), "kl": float(kl.mean()), "prefix_len": prefix_len,
            "prefixes": prefixes}


def _finetune(model, scaling: RopeScaling | None, corpus, options: RunOptions, seed: int,
              ft: FineTuneSetting):
    """`model` trained on at factor·L tokens with `scaling` (`ft`, the size's): batches of the
    pre-training token count, continuing its data stream; constant lr after 10% warmup."""
    from blocklab.experiments.data import sample_batch
    from blocklab.experiments.trainer import TrainConfig, make_optimizer, train_step

    config = SIZES[options.size]
    tuned = with_rope_scaling(model, scaling).train()
    tc = TrainConfig.for_run(options, seed, steps=ft.steps, lr=ft.lr)  # AdamW groups and clip
    optimizer, params = make_optimizer(tuned, tc), list(tuned.parameters())
    warmup = max(1, ft.steps // 10)
    rows = max(1, config.train.batch_size // ft.factor)
    for step in range(ft.steps):
        batch = sample_batch(corpus.train, seed=seed, step=config.train.steps + step,
                             batch_size=rows, seq_len=ft.factor * config.L).to(tc.device)
        train_step(tuned, batch, optimizer, params, lr=ft.lr * min(1.0, (step + 1) / warmup),
                   grad_clip=tc.grad_clip)
    return tuned.eval()


def _rope_variants(options: RunOptions, model, corpus, seed: int
                   ) -> dict[str, ScaledReads | FineTunedReads]:
    """Training-free scaling at each m >= 2 (factor m), and each fine-tuned variant, read."""
    config = SIZES[options.size]
    L, mults, n = config.L, config.mults, config.eval_windows
    longer = [m for m in mults if m > 1]
    variants: dict[str, ScaledReads | FineTunedReads] = {}
    for kind in SCALINGS:
        read = extrapolation(model, corpus.val, L, longer, n, sliding=False, scaling=kind)
        variants[f"rope+{kind}"] = ScaledReads(
            read.loss_beyond_L, read.per_position, read.errors,
            {str(m): scaling_config(kind, m, L) for m in longer})
    ft = config.finetune
    if ft:
        for ft_kind in ft.kinds:
            # factor: the longest multiple read (YaRN fine-tunes short of its target length)
            ft_scaling = None if ft_kind is None else scaling_config(ft_kind, max(mults), L)
            tuned = _finetune(model, ft_scaling, corpus, options, seed, ft)
            read = extrapolation(tuned, corpus.val, L, mults, n, sliding=False)
            name = "rope" if ft_kind is None else f"rope+{ft_kind}"
            variants[f"{name}+ft{ft.factor}x"] = FineTunedReads(**vars(read),
                                                                scaling=ft_scaling, finetune=ft)
    return variants


def train_and_read(options: RunOptions, arm: str, seed: int, progress,
                    lr: float | None = None) -> RunResult:
    """The training run of `arm` at `lr`, then its reads (the `extra` `ArmRun` decodes)."""
    from blocklab.experiments.data import load_corpus
    from blocklab.experiments.trainer import train

    started = time.perf_counter()
    config = SIZES[options.size]
    corpus = load_corpus("stdlib")
    mc, tc = arm_config(options.size, arm), train_config(options, seed, lr)
    model, trained = train(mc, tc, corpus, progress=progress, label=f"{arm} seed {seed}")
    extra = {"kind": "train", "arm": arm, "seed": seed, "L": config.L,
             "train": trained.to_dict()}
    if trained.status == "ok":
        with torch_threads(1):
            extra["eval"] = extrapolation(model, corpus.val, config.L, config.mults,
                                          config.eval_windows)
            extra["finite"] = finite_far_out(model)
            extra["order"] = order_probe(model, corpus.val, config.order.prefix_len,
                                         config.order.prefixes)
            if arm == "rope":
                extra["variants"] = _rope_variants(options, model, corpus, seed)
    return RunResult(status=trained.status, wall_time_s=time.perf_counter() - started,
                     extra=json_safe(extra))


def train_passkey_model(mc: ModelConfig, options: RunOptions, seed: int, pk: PasskeySetting,
                        L: int):
    """(model in eval mode, its last training loss), trained on passkey examples of L + 1
    bytes, needle depth uniform in [0, 1]."""
    import torch

    from blocklab.experiments.synthetic import example_seeds, passkey_example
    from blocklab.experiments.trainer import (
        TrainConfig,
        build_model,
        learning_rate,
        make_optimizer,
        train_step,
    )

    steps, batch_size = pk.steps, pk.batch_size
    tc = TrainConfig.for_run(options, seed, steps=steps, batch_size=batch_size, seq_len=L,
                             lr=pk.lr, warmup_steps=max(1, steps // 20))
    model = build_model(mc, tc).train()
    optimizer, params = make_optimizer(model, tc), list(model.parameters())
    rng = np.random.default_rng([0x9A55, seed])
    example_ids = example_seeds(seed + 1_000_000, steps * batch_size)
    loss = math.nan
    for step in range(steps):
        chunk = example_ids[step * batch_size:(step + 1) * batch_size]
        batch = np.stack([passkey_example(s, L + 1, float(rng.uniform())).tokens for s in chunk])
        tokens = torch.from_numpy(batch.astype(np.int64)).to(tc.device)  # [B, L + 1]
        loss = train_step(model, tokens, optimizer, params, lr=learning_rate(step, tc),
                          grad_clip=tc.grad_clip).loss
    return model.eval(), loss


def passkey_grid(model, L: int, mults: Sequence[int], depths: Sequence[float], n: int,
                 seed: int, scaling: str | None = None) -> PasskeyGrid:
    """Passkey accuracy at every (m·L tokens, depth), with RoPE scaling `scaling` at factor m if
    given (`read_at`); UNAVAILABLE past the model's table."""
    from blocklab.experiments.synthetic import passkey_accuracy

    grid: PasskeyGrid = {}
    for m in mults:
        row = grid.setdefault(str(m), {})
        reader = read_at(model, scaling, m, L)
        for depth in depths:
            try:
                row[str(depth)] = passkey_accuracy(reader, n=n, length=m * L + 1, depth=depth,
                                                   seed=seed)
            except PositionsBeyondTable:  # any other error is a fault: the run fails
                row[str(depth)] = UNAVAILABLE
    return grid


def passkey_run(options: RunOptions, arm: str, seed: int, progress) -> RunResult:
    """The passkey model of `arm` read at every multiple (rope: each scaling too)."""
    started = time.perf_counter()
    config = SIZES[options.size]
    pk, L = config.passkey, config.L
    assert pk is not None, f"size {options.size} has no passkey models"
    with torch_threads(1):
        model, last_loss = train_passkey_model(arm_config(options.size, arm), options, seed,
                                               pk, L)
        accuracy = {arm: passkey_grid(model, L, config.mults, pk.depths, pk.n, 7 + seed)}
        if arm == "rope":
            longer = [m for m in config.mults if m > 1]
            for kind in SCALINGS:
                accuracy[f"rope+{kind}"] = passkey_grid(model, L, longer, pk.depths, pk.n,
                                                        7 + seed, scaling=kind)
    record = PasskeyRun(arm=arm, seed=seed, final_train_loss=last_loss, accuracy=accuracy)
    return _result("passkey", record, started)


def time_position_cost(options: RunOptions, seed: int = 0) -> RunResult:
    """C31: parameters, step times and SDPA kernels of `COST_SCHEMES` (a `CostRun`), on one
    thread: training steps and decode steps (per token, after L − decode_tokens cached ones)
    interleaved, the order rotating every repeat. At this toy shape the times measure per-op
    overhead; "realistic" times a real model's shape (reported, not graded)."""
    import torch

    from blocklab.budget.params import count_params
    from blocklab.experiments.data import load_corpus, sample_batch
    from blocklab.experiments.trainer import build_model, make_optimizer, train_step

    started = time.perf_counter()
    size = options.size
    config = SIZES[size]
    cost = config.cost
    assert cost is not None, f"size {size} has no timed cost run"
    L, n_decode = config.L, cost.decode_tokens
    corpus = load_corpus("stdlib")
    # this CPU's times (perf_counter, no device sync), whatever --device the models train on
    tc = dataclasses.replace(train_config(options, seed), device="cpu")
    params = {s: count_params(arm_config(size, s)).total for s in PARAM_SCHEMES}
    params_module = {s: sum(p.numel() for p in build_model(arm_config(size, s), tc).parameters())
                     for s in PARAM_SCHEMES}
    kernels: dict[str, SchemeKernels] = {}
    with torch_threads(1):
        models = {s: build_model(arm_config(size, s), tc).train() for s in COST_SCHEMES}
        optimizers = {s: make_optimizer(m, tc) for s, m in models.items()}
        weights = {s: list(m.parameters()) for s, m in models.items()}
        prompt = torch.from_numpy(corpus.val[:L].astype(np.int64))[None]  # [1, L]
        for scheme, model in models.items():
            def train_call(model=model):
                model.train()
                model(prompt).float().sum().backward()

            def decode_step(model=model):  # one token's decode on a freshly prefilled cache
                return decode_call(model.eval(), prompt[:, :L - n_decode], prompt[:, :1])()

            kernels[scheme] = SchemeKernels(
                train=sdpa_kernels(train_call), train_mask=sdpa_masks(train_call),
                flash_train=accepted_by("FLASH_ATTENTION", train_call),
                decode=sdpa_kernels(decode_step()), decode_mask=sdpa_masks(decode_step()),
                flash_decode=accepted_by("FLASH_ATTENTION", lambda: decode_step()()))
            model.zero_grad(set_to_none=True)
        batches = [sample_batch(corpus.train, seed=seed, step=i, batch_size=tc.batch_size,
                                seq_len=L) for i in range(cost.warmup + cost.repeats)]

        def measure(scheme: str, i: int) -> tuple[float, float]:
            """(training step, decode per token) seconds of `scheme` on batch i."""
            model = models[scheme].train()
            tick = time.perf_counter()
            train_step(model, batches[i], optimizers[scheme], weights[scheme], lr=tc.lr,
                       grad_clip=tc.grad_clip)  # the trainer's step, timed whole
            step_s = time.perf_counter() - tick
            decode = decode_call(model.eval(), prompt[:, :L - n_decode], prompt[:, :n_decode])()
            tick = time.perf_counter()
            decode()
            return step_s, (time.perf_counter() - tick) / n_decode

        times = interleaved(list(models), cost.warmup, cost.repeats, measure)
        train_s = {scheme: [t for t, _ in pairs] for scheme, pairs in times.items()}
        decode_s = {scheme: [d for _, d in pairs] for scheme, pairs in times.items()}
        realistic = time_realistic_shapes(size, seed)
    record = CostRun(threads=1, L=L, batch_size=tc.batch_size, decode_tokens=n_decode,
                     prompt_tokens=L - n_decode, params=params, params_module=params_module,
                     train_s=train_s, decode_s=decode_s, kernels=kernels, realistic=realistic,
                     repeats=cost.repeats)
    return _result("cost", record, started)


def tune(options: RunOptions, tuned: Results = ()) -> list[RunSpec]:
    """Every arm at every peak lr of its grid (grown from `tuned`) on the tuning seeds."""
    size = options.size
    t = SIZES[size].train
    trials = lr_trials(list(tuned))
    return [training_spec(f"tune {arm} lr {lr:g} seed {seed}", f"tune/{arm}", seed,
                          arm_config(size, arm), train_config(options, seed, lr),
                          {"suite": "position", "kind": "tune", "arm": arm})
            for arm in arms(size) for lr in tune_arm(t.lr_grid, trials, arm).grid
            for seed in tuning_seeds(options, t.tuning_seeds)]


def tuned_lrs(size: str, trials: list[LrTrial]) -> dict[str, ArmTuning]:
    """Each arm's tuning; {} at a size that does not tune (every arm at the grid's middle)."""
    if not SIZES[size].train.tuning_seeds:
        return {}
    return tune_arms(SIZES[size].train.lr_grid, trials, arms(size))


def plan(options: RunOptions, tuned: Results) -> list[RunSpec]:
    """One training run per (arm, seed) at the arm's tuned lr (None: the grid's middle); where
    the size has them, passkey runs, the timed cost run and the relative-error run."""
    size, seeds, precision = options.size, options.seeds, options.precision
    config = SIZES[size]
    tunings = tuned_lrs(size, lr_trials(tuned))
    lrs = {arm: tunings[arm].lr if arm in tunings else None for arm in arms(size)}
    specs = []
    for seed in seeds:
        for arm in arms(size):
            payload = {"suite": "position", "kind": "train", "arm": arm,
                       "size_config": config.payload(),
                       "model": arm_config(size, arm).to_dict(),
                       "train": train_identity(train_config(options, seed, lrs[arm])),
                       "data": "stdlib",
                       "scalings": SCALINGS if arm == "rope" else None}
            specs.append(RunSpec(f"{arm} seed {seed}", arm, seed, payload,
                                 lambda progress, arm=arm, seed=seed:
                                 train_and_read(options, arm, seed, progress, lrs[arm])))
    if config.passkey:
        for seed in seeds:
            for arm in arms(size):
                payload = {"suite": "position", "kind": "passkey", "arm": arm,
                           "model": arm_config(size, arm).to_dict(), "L": config.L,
                           "mults": config.mults,
                           "passkey": dataclasses.asdict(config.passkey), "seed": seed}
                payload.update(added_identity(precision=precision))
                specs.append(RunSpec(f"passkey {arm} seed {seed}", f"passkey:{arm}", seed,
                                     payload, lambda progress, arm=arm, seed=seed:
                                     passkey_run(options, arm, seed, progress),
                                     reads_tuning=False))
    if config.cost is not None:
        payload = {"suite": "position", "kind": "cost",
                   "model": arm_config(size, "rope").to_dict(),
                   "schemes": COST_SCHEMES, "param_schemes": PARAM_SCHEMES,
                   "cost": dataclasses.asdict(config.cost),
                   "train": train_identity(train_config(options, 0)),
                   "realistic": dataclasses.asdict(REALISTIC_SHAPES[size])}
        specs.append(RunSpec("position cost (timed)", "cost", 0, payload,
                             lambda progress: time_position_cost(options, 0), timed=True,
                             reads_tuning=False))
    if not graded_only(size):
        payload = {"suite": "position", "kind": "relative_error",
                   "shifts": RELATIVE_ERROR_SHIFTS, "dtypes": RELATIVE_ERROR_DTYPES}
        specs.append(RunSpec("rope relative-position error", "relative_error", 0, payload,
                             lambda progress: relative_error_run(), reads_tuning=False))
    return specs


# Reference-machine seconds: the cost run's profiler start; the relative-error run.
_PROFILER_REFERENCE_S = 0.4
_RELATIVE_ERROR_REFERENCE_S = 0.03


def price(spec: RunSpec, cal) -> float | None:
    """Estimated seconds of one run here (`experiments.estimate`), counted as it runs."""
    from blocklab.experiments.estimate import TrainShape, evaluation_s, training_s

    payload = spec.payload
    kind = payload["kind"]
    if kind == "relative_error":
        return cal.reference_s(_RELATIVE_ERROR_REFERENCE_S)
    L, shape = payload.get("L") or payload["train"]["seq_len"], payload["model"]
    size = next(name for name, config in SIZES.items() if config.L == L and all(
        shape[k] == v for k, v in dataclasses.asdict(config.model).items()))
    config = SIZES[size]
    L, mults, n = config.L, config.mults, config.eval_windows
    model = ModelConfig.from_dict(payload["model"])
    train = TrainShape.from_payload(payload.get("train") or train_identity(train_config(
        RunOptions(size, precision=payload.get("precision", "fp32")), 0)))
    B, precision = train.batch_size, train.precision

    def forward(rows: int, length: int) -> float:
        return cal.forward_s(model, B, L, rows, length, precision)

    def read(multiples, sliding: bool) -> float:
        seconds = 0.0
        for m in multiples:
            seconds += evaluation_s(model, train, n, m * L, cal, batch_tokens=16384)
            if sliding and m > 1:
                windows = n * ((m * L - L) // (L // 2) + 1)
                seconds += evaluation_s(model, train, windows, L, cal, batch_tokens=16384)
        return seconds

    if kind == "train":
        seconds = (training_s(model, train, cal) + read(mults, True)
                   + forward(2 * config.order.prefixes, config.order.prefix_len)
                   + 2 * (cal.build_s(model, B, L, precision) + forward(1, 16)))
        if spec.arm == "rope":
            longer = [m for m in mults if m > 1]
            seconds += len(SCALINGS) * read(longer, False)
            ft = config.finetune
            if ft:
                rows = max(1, B // ft.factor)
                seconds += len(ft.kinds) * (
                    ft.steps * cal.step_s(model, rows, ft.factor * L, precision)
                    + read(mults, False))
        return seconds
    if kind == "passkey":
        pk = config.passkey
        assert pk is not None, f"a passkey run at size {size}, which has none"
        grid = sum(forward(pk.n, m * L + 1) for m in mults) * len(pk.depths)
        seconds = (cal.build_s(model, pk.batch_size, L, precision)
                   + pk.steps * cal.step_s(model, pk.batch_size, L, precision) + grid)
        if spec.arm == "rope":
            seconds += len(SCALINGS) * grid * (len(mults) - 1) / len(mults)
        return seconds
    if kind == "cost":
        cost = config.cost
        assert cost is not None, f"size {size} has no timed cost run"
        n_decode = cost.decode_tokens
        seconds = cal.reference_s(_PROFILER_REFERENCE_S) + cal.reference_s(REFERENCE_S[size])
        for scheme in PARAM_SCHEMES:
            seconds += cal.build_s(arm_config(size, scheme), B, L, precision)
        for scheme in COST_SCHEMES:
            m = arm_config(size, scheme)
            step = cal.step_s(m, B, L, precision)
            prefill = cal.forward_s(m, B, L, 1, L - n_decode, precision)
            token = cal.forward_s(m, B, L, 1, 1, precision)
            seconds += (cal.build_s(m, B, L, precision) + 3 * step + 3 * (prefill + token)
                        + (cost.warmup + cost.repeats)
                        * (step + prefill + n_decode * token))
        return seconds
    return None
