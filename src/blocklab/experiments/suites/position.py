"""`position`: train at length L, read at 1×, 2×, … 16× L: every position scheme, RoPE scaling.

Arms, all the same model except for how it learns positions (C21):

    none              no position signal (NoPE; causal masking alone orders tokens)
    learned           learned absolute table with L rows: cannot run past L, recorded, not
                      crashed
    learned-8L        learned table with (max multiple)·L rows, trained at L, so rows >= L only
                      ever see weight decay
    sinusoidal        fixed sin/cos table added to the embeddings
    sinusoidal+scale  the same with token embeddings × sqrt(d_model), the original
                      Transformer's recipe (Vaswani et al. 2017, §3.4): without it the
                      unit-amplitude table swamps N(0, 0.02²) embeddings and the arm trains
                      worse even within L
    rope              rotary q/k (theta 10,000), rotary table sized L and extended on demand
    alibi             linear distance bias on the attention scores

Each arm trains with `trainer.train` on stdlib windows of L tokens. Its model is then scored on
fixed validation windows of m·L tokens, m in the size's multiples:

    loss_beyond_L   mean loss at the positions p >= L of each window (`loss_beyond`): the
                    tokens the model reads at positions it never trained on (m >= 2)
    sliding         the same tokens scored with sliding windows of L (stride L/2), so no
                    position >= L is ever used: what the model gets without extrapolating
    per_position    the loss curve over positions, in buckets of L/8

Per-position losses are indexed by the input position p: entry p is the loss of predicting
token p + 1 from tokens 0..p.

The trained RoPE model is also read with scaling applied at inference, training-free (same
weights, `config.replace(rope_scaling=...)`, factor m = eval length / L, original length L):
linear (position interpolation), ntk, dynamic, yarn with the paper's β and yarn with β re-derived
for our L (`yarn_betas`). It is also fine-tuned briefly at a longer length with each scaling
of the size's `finetune` (as the papers do; plain RoPE with the same fine-tune is the control)
and read again (C22, C30).

Two checks need no training: `rope_relative_error` measures |score(m, n) − score(m+s, n+s)| in
float64, float32, bfloat16 and float16 (C20), and every trained model is run at positions far
past its max_seq_len to see that outputs stay finite (C26). The passkey test (full size) trains a
separate passkey model per arm at L and scores retrieval by length and depth.

Order without positions (C29): every trained arm's next-token distribution after a validation
prefix is compared with the one after the same prefix with its first k − 1 tokens reversed and
its last token kept (`order_probe`, total-variation distance and KL). Cost (C31): one timed run
(alone, one thread) builds the none, rope and alibi models and interleaves their training steps
and KV-cache decode steps, counts parameters with `blocklab.budget`, and names the SDPA kernel
PyTorch dispatches for each (profiler op names) and the mask attention.py hands it.

`Summary.data` (read by the claims ledger, C20–C22, C26, C29–C31, and the report) is a
`blocklab.experiments.summaries.PositionData`; multiples m of L are string keys ("2", "4", ...).
Per arm (`PositionArm`): loss on positions ≥ L at each multiple, the sliding-window loss on the
same tokens, their paired difference (nats and %), bucketed per-position loss and passkey
accuracy; a read a learned table cannot make is the string "unavailable (table)". Beside the
arms: RoPE's relative-position error by dtype, finiteness far past max_seq_len, the YaRN ramps,
every training run's status, the order probe per arm (`OrderProbe`), the cost run
(`PositionCost`) and the fine-tune settings (`FineTune`).

Arm names: the seven above, "rope+<scaling>" for training-free scaling and
"rope[+<scaling>]+ft<k>x" for the fine-tuned variants.

What each size runs (`blocklab.experiments.suites.evaluation`): at --size tiny and --size quick
the suite plans only the runs a registered rule grades. C21 grades learned-<max>L,
sinusoidal+scale, alibi and rope (its scalings are read off the rope run, its fine-tunes extend
it), C30 the rope run, C29 the none run and C31 the cost run; so those sizes train none,
learned-<max>L, sinusoidal+scale, rope and alibi and time the cost run. The learned table of L
rows and sinusoidal without the embedding scale (`REPORTED_ONLY`), the passkey models and the
relative-error run (reported only) run at --size full, and the summary says so. Reads made
inside a graded run (every training-free scaling, the order probe, the far-out check) ride
along with it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from blocklab.config import ModelConfig
from blocklab.errors import InputError, ResultsError
from blocklab.experiments.env import torch_threads
from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import added_identity, json_safe, train_identity
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.base import (
    TUNING_SEEDS,
    Results,
    RunSpec,
    Suite,
    format_ci,
    mean_ci,
    paired_difference,
)
from blocklab.experiments.suites.evaluation import (
    FINAL_EVAL_FRACTION,
    full_only,
    graded_only,
    listed,
)
from blocklab.experiments.suites.position_cost import SHAPES as REALISTIC_SHAPES
from blocklab.experiments.suites.position_cost import ShapeTimes, shape_timing
from blocklab.experiments.suites.position_cost import price as realistic_price
from blocklab.experiments.suites.position_cost import time_shapes as time_realistic_shapes
from blocklab.experiments.suites.tuning import LrGrid, lr_trials, tune_arm, tune_arms
from blocklab.experiments.suites.tuning import tuning_table as tuned_table
from blocklab.experiments.summaries import (
    ArmTuning,
    FineTune,
    FiniteRead,
    Interval,
    LrTrial,
    OrderProbe,
    PasskeySummary,
    PerPosition,
    PositionArm,
    PositionCost,
    PositionData,
    PositionRun,
    Read,
    SchemeCost,
    Summary,
    Table,
    TimeRatio,
    YarnBetas,
    YarnRamp,
    decode,
)

if TYPE_CHECKING:
    from blocklab.experiments.trainer import TrainConfig

UNAVAILABLE = "unavailable (table)"
THETA = 10000.0
# YaRN's beta_fast = 32, beta_slow = 1 were tuned on Llama 2: 4096 tokens, theta 10^4.
YARN_REFERENCE_LENGTH = 4096
YARN_PAPER_BETAS = (32.0, 1.0)
SCALINGS = ("linear", "ntk", "dynamic", "yarn", "yarn-rescaled")
RELATIVE_ERROR_SHIFTS = (0, 10, 100, 1000, 10_000, 100_000, 1_000_000)
RELATIVE_ERROR_DTYPES = ("float64", "float32", "bfloat16", "float16")
FAR_POSITION = 100_000  # C26: positions this far past max_seq_len must still give finite logits
# A RoPE model's `ModelConfig.rope_scaling`: "rope_type", "factor" and, per type, the original
# length and YaRN's β.
RopeScaling = dict[str, str | int | float]
# mult of L -> needle depth -> passkey accuracy, or UNAVAILABLE where the model cannot read
# that far (multiples and depths as strings).
PasskeyGrid = dict[str, dict[str, float | str]]


@dataclass(frozen=True)
class ModelShape:
    """What every arm's model shares: width, depth and heads."""

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
    (`eval_windows` validation windows each), the training, the RoPE fine-tune, the passkey
    models (None: not run at this size), the order probe and the timed cost run."""

    model: ModelShape
    L: int
    mults: tuple[int, ...]
    train: TrainSetting
    eval_windows: int
    finetune: FineTuneSetting | None
    passkey: PasskeySetting | None
    order: OrderSetting
    cost: CostSetting

    def payload(self) -> dict[str, Any]:
        """The size as a training run's payload holds it ("size_config", plain JSON values):
        its run id hashes this, so a change to any setting re-plans the run."""
        return dataclasses.asdict(self)


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
        # Every arm at the grid's middle lr (tuning_seeds 0): each graded part compares an arm
        # with itself (loss past L against the same model's sliding windows; order without
        # positions), not arms with one another, and tuning five arms would cost about 5
        # core-minutes of the quick budget. --size full tunes every arm.
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
# C31's timed run compares these schemes; "none" is the baseline of every ratio.
COST_SCHEMES = ("none", "rope", "alibi")
# C31's parameter count also covers the absolute schemes (no timing: they add to the input
# embedding only).
PARAM_SCHEMES = ("none", "learned", "sinusoidal", "rope", "alibi")


# The schemes no registered rule grades: C21 reads a learned table long enough to be read past
# L and sinusoidal with the embedding scale instead. Trained at full only.
REPORTED_ONLY = ("learned", "sinusoidal")


def schemes(size: str) -> tuple[str, ...]:
    """Every position arm of the suite's design at `size` (what the full size trains)."""
    return ("none", "learned", f"learned-{max(SIZES[size].mults)}L", "sinusoidal",
            "sinusoidal+scale", "rope", "alibi")


def arms(size: str) -> tuple[str, ...]:
    """The arms `size` trains: every scheme at full; at tiny and quick those a registered
    rule grades (`evaluation.graded_only`)."""
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
    """The training run of an arm at `lr` (its tuned peak lr; None: the middle of the
    registered grid, for the runs no arm's tuning applies to, such as the timed cost run), in
    `options`' precision and on its backend."""
    size = options.size
    t = SIZES[size].train
    base = t.lr_grid.base
    return _train_config(options, seed, steps=t.steps, batch_size=t.batch_size,
                         seq_len=SIZES[size].L, lr=base[len(base) // 2] if lr is None else lr,
                         warmup_steps=t.warmup_steps, eval_every=0, log_every=0,
                         eval_batches=1, threads=1,
                         final_eval_fraction=FINAL_EVAL_FRACTION[size])


def _train_config(options: RunOptions, seed: int, **settings: Any) -> TrainConfig:
    """Every TrainConfig this suite builds (its training runs, the passkey models, the RoPE
    fine-tunes, the cost run's models): `settings` in `options`' precision and backend."""
    from blocklab.experiments.trainer import TrainConfig

    return TrainConfig(seed=seed, precision=options.precision, backend=options.backend,
                       **settings)


# --- YaRN's β for our length ----------------------------------------------------------------------
def yarn_betas(L: int, reference_length: int = YARN_REFERENCE_LENGTH,
               betas: tuple[float, float] = YARN_PAPER_BETAS) -> tuple[float, float]:
    """(beta_fast, beta_slow) for training length L, keeping YaRN's split of the spectrum.

    YaRN ramps channel pair i by the number of turns it completes within the original length,
    L / (2π θ^(2i/r)). At a fixed fraction f = 2i/r of the rotary spectrum that count is
    L / (2π θ^f): proportional to L, whatever head_dim is. β_fast = 32 and β_slow = 1 were
    tuned at L = 4096 with θ = 10⁴ (Llama 2), where pairs below 33% of the spectrum are kept,
    pairs above 70% are interpolated and the rest are ramped. Scaling both β by
    L / reference_length keeps those fractions at our L (and at our θ, which is the same).
    """
    scale = L / reference_length
    return betas[0] * scale, betas[1] * scale


def yarn_ramp_pairs(L: int, rotary_dim: int, beta_fast: float, beta_slow: float,
                    theta: float = THETA) -> tuple[int, int]:
    """The (low, high) pair indices of YaRN's ramp, as `blocklab.nn.rope_scaling.yarn_rope`
    computes them (truncated): pairs < low keep their frequency, pairs >= high are divided by
    the factor."""
    def pair_for_turns(turns: float) -> float:
        return rotary_dim * math.log(L / (turns * 2 * math.pi)) / (2 * math.log(theta))

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
    """A copy of a trained RoPE `DecoderLM` with `scaling`: same weights, backend and precision,
    new rotary table."""
    from blocklab.nn import DecoderLM

    scaled = DecoderLM(model.config.replace(rope_scaling=scaling), backend=model.backend,
                       precision=model.precision)
    scaled.load_state_dict(model.state_dict())
    return scaled.eval()


# --- what the runs store ------------------------------------------------------------------------
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


# The keys of a training run's record (`_train_and_read`): always, then where the model
# trained ("ok"), then for rope only.
_ARM_RUN_KEYS = ("kind", "arm", "seed", "L", "train")
_ARM_READ_KEYS = ("eval", "finite", "order", "variants")


@dataclass(frozen=True)
class ArmRun:
    """One training run of an arm as stored by `_train_and_read`: its status, the trainer's
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
    """One passkey run (`_passkey_run`): the passkey model of `arm`, its last training loss and
    its accuracy grid per model read (the arm, and for rope every training-free scaling)."""

    arm: str
    seed: int
    final_train_loss: float | None
    accuracy: dict[str, PasskeyGrid]


@dataclass(frozen=True)
class RelativeErrorRun:
    """The relative-error run (`_relative_error_run`): per dtype, [[shift, max error], ...]
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


def _record(kind: str, record: Any) -> dict[str, Any]:
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


# --- measurements ---------------------------------------------------------------------------------
def loss_beyond(per_position: Sequence[float], L: int) -> float:
    """Mean of the per-position losses at input positions p >= L (the tokens past training)."""
    if len(per_position) <= L:
        raise InputError(f"a window of {len(per_position)} positions has none at or past L={L}")
    return float(np.mean(np.asarray(per_position[L:], dtype=np.float64)))


def sliding_window_loss(model, rows, window: int, stride: int,
                        batch_tokens: int = 16384) -> list[float]:
    """Per-position loss of `rows` [N, n + 1] read in windows of `window` tokens.

    Windows start at 0, stride, 2·stride, ... (n − window must be a multiple of stride); the
    first window scores all its targets, every later one only its last `stride`, so every
    target is scored once, with between window − stride + 1 and window tokens of context, at
    positions below `window`. Returns [n] losses, averaged over the N rows.
    """
    import torch
    import torch.nn.functional as F

    n_rows, n = rows.shape[0], rows.shape[1] - 1
    if n < window or (n - window) % stride:
        raise InputError(f"sliding windows of {window} with stride {stride} do not tile {n} "
                         "positions")
    starts = list(range(0, n - window + 1, stride))
    pieces = torch.stack([rows[:, s:s + window + 1] for s in starts], dim=1)  # [N, W, window+1]
    flat = pieces.flatten(0, 1)
    losses = []
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for chunk in flat.split(max(1, batch_tokens // window)):
                logits = model(chunk[:, :-1])  # [b, window, V]
                losses.append(F.cross_entropy(logits.transpose(1, 2), chunk[:, 1:],
                                              reduction="none"))
    finally:
        model.train(was_training)
    loss = torch.cat(losses).view(n_rows, len(starts), window)
    per_position = torch.empty(n_rows, n, dtype=torch.float64)
    for w, start in enumerate(starts):
        keep = 0 if w == 0 else window - stride
        per_position[:, start + keep:start + window] = loss[:, w, keep:].double()
    return per_position.mean(0).tolist()


def extrapolation(model, val_tokens, L: int, mults: Sequence[int], n_windows: int, *,
                  sliding: bool = True) -> LengthReads:
    """Full-context and sliding-window losses of `model` at every multiple of L (the sliding
    windows only with `sliding`), as `LengthReads`."""
    from blocklab.experiments.data import validation_windows
    from blocklab.experiments.trainer import evaluate

    loss_at_L = None
    beyond: dict[str, float | str | None] = {}
    slid: dict[str, float | None] = {}
    per_position: dict[str, list[float | None] | None] = {}
    errors: dict[str, str] = {}
    for m in mults:
        rows = validation_windows(val_tokens, m * L, n_windows)
        scores = evaluate(model, {m * L: rows}, batch_tokens=16384)[m * L]
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
            curve = sliding_window_loss(model, rows, L, L // 2)
            slid[key] = loss_beyond(curve, L)
    return LengthReads(loss_at_L, beyond, slid, per_position, errors)


def finite_far_out(model, position: int = FAR_POSITION, tokens: int = 16
                   ) -> dict[str, int | bool | str | None]:
    """Run `model` on `tokens` tokens at positions position .. position + tokens − 1, in float32
    and bfloat16: are the logits finite? A learned table raises instead: None, and the first
    line of its error under "error" (a key only then)."""
    import copy

    import torch

    ids = torch.arange(tokens)[None] % model.config.vocab_size
    positions = torch.arange(position, position + tokens)
    out: dict[str, int | bool | str | None] = {"position": position,
                                               "max_seq_len": model.config.max_seq_len}
    for dtype in ("float32", "bfloat16"):
        copy_ = copy.deepcopy(model).to(getattr(torch, dtype)).eval()
        try:
            with torch.no_grad():
                logits = copy_(ids, positions=positions)
            out[dtype] = bool(torch.isfinite(logits).all())
        except ValueError as err:
            out[dtype] = None
            out["error"] = str(err).splitlines()[0]
    return out


def rope_relative_error(dtype: str, shifts: Sequence[int] = RELATIVE_ERROR_SHIFTS, *,
                        head_dim: int = 64, theta: float = THETA, samples: int = 64,
                        seed: int = 0) -> list[list[float | None]]:
    """[[s, max |score(m, n) − score(m + s, n + s)|], ...] with RoPE done entirely in `dtype`.

    Positions, frequencies, angles, cos/sin and the rotation are all computed in `dtype` (as
    code that casts everything to the model dtype does); the dot product q·k / sqrt(head_dim)
    is then taken in float64, so only the position arithmetic is measured. q, k ~ N(0, 1) and
    the offsets m − n in [0, 64) are drawn once from `seed` and reused for every shift; the
    maximum over `samples` draws is reported. Exactly, RoPE scores depend on m − n only, so the
    error is rounding alone; NaN/inf (a float16 position past 65504) is reported as None.
    """
    import torch

    dt = getattr(torch, dtype)
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(samples, head_dim, generator=g, dtype=torch.float64)
    k = torch.randn(samples, head_dim, generator=g, dtype=torch.float64)
    n = torch.randint(0, 64, (samples,), generator=g)
    m = n + torch.randint(0, 64, (samples,), generator=g)
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))

    def rotate(x, positions):
        angles = positions.to(dt)[:, None] * inv_freq.to(dt)  # [samples, head_dim/2]
        cos, sin = angles.cos(), angles.sin()
        x = x.to(dt)
        x1, x2 = x[:, :head_dim // 2], x[:, head_dim // 2:]
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).double()

    def scores(shift: int):
        return (rotate(q, m + shift) * rotate(k, n + shift)).sum(-1) / math.sqrt(head_dim)

    return _shift_errors(scores, shifts)


def _shift_errors(scores, shifts: Sequence[int]) -> list[list[float | None]]:
    """[[s, max |scores(s) − scores(0)|], ...], None where the error is not finite."""
    base = scores(0)
    out: list[list[float | None]] = []
    for shift in shifts:
        err = (scores(shift) - base).abs().max().item()
        out.append([shift, err if math.isfinite(err) else None])
    return out


def rope_relative_error_blocklab(dtype: str, shifts: Sequence[int] = RELATIVE_ERROR_SHIFTS, *,
                                 head_dim: int = 64, theta: float = THETA, samples: int = 64,
                                 seed: int = 0) -> list[list[float | None]]:
    """As `rope_relative_error`, through blocklab's own RoPE numerics: float32 frequencies and
    angles (`rope_frequencies`, `rotary_cos_sin`, what `RotaryEmbedding` tables) and
    `apply_rotary` (rotation in float32, cast back to `dtype`), with q and k given in `dtype`.
    The table itself is skipped: at s = 10^6 it would hold a million rows."""
    import torch

    from blocklab.nn import apply_rotary
    from blocklab.nn.position import rotary_cos_sin
    from blocklab.nn.rope_scaling import rope_frequencies

    dt = getattr(torch, dtype)
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(samples, head_dim, generator=g, dtype=torch.float64)
    k = torch.randn(samples, head_dim, generator=g, dtype=torch.float64)
    n = torch.randint(0, 64, (samples,), generator=g)
    m = n + torch.randint(0, 64, (samples,), generator=g)
    inv_freq, _ = rope_frequencies(head_dim, theta)

    def rotated(x, positions):
        cos, sin = rotary_cos_sin(positions[None], inv_freq)  # [1, samples, head_dim]
        x = x.to(dt)[None, None]  # [1, 1, samples, head_dim]
        out, _ = apply_rotary(x, x, cos, sin)
        return out.double().flatten(0, 2)

    def scores(shift: int):
        return (rotated(q, m + shift) * rotated(k, n + shift)).sum(-1) / math.sqrt(head_dim)

    return _shift_errors(scores, shifts)


def reversed_prefixes(rows):
    """Each row [N, k] with its first k − 1 tokens reversed and its last token kept:
    (x_1, …, x_k) -> (x_(k−1), …, x_1, x_k). The same bag of tokens and the same token being
    read, so a model without position information whose output at a position depended only on
    that bag (bidirectional attention) would predict the same next token from both."""
    import torch

    return torch.cat((rows[:, :-1].flip(1), rows[:, -1:]), dim=1)


def order_probe(model, val_tokens, prefix_len: int, prefixes: int) -> dict[str, float]:
    """How much `model`'s next-token distribution moves when a prefix is reversed (C29).

    `prefixes` fixed validation windows of `prefix_len` tokens x; p = softmax(logits after x),
    q = the same after `reversed_prefixes(x)`, both in float64. Returns the means over the
    prefixes of the total-variation distance TV = ½ Σ_v |p_v − q_v| (in [0, 1]) and of
    KL(p ‖ q) in nats.
    """
    import torch

    from blocklab.experiments.data import validation_windows

    rows = validation_windows(val_tokens, prefix_len - 1, prefixes)  # [N, prefix_len]
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            logits = model(torch.cat((rows, reversed_prefixes(rows))))[:, -1].double()
    finally:
        model.train(was_training)
    log_p, log_q = logits.log_softmax(-1).chunk(2)  # [N, V] each
    tv = 0.5 * (log_p.exp() - log_q.exp()).abs().sum(-1)
    kl = (log_p.exp() * (log_p - log_q)).sum(-1)
    return {"tv": float(tv.mean()), "kl": float(kl.mean()), "prefix_len": prefix_len,
            "prefixes": prefixes}


# The line kineto, PyTorch's profiler library, writes to file descriptor 2 as each profile
# starts and as it stops ("USDT:2026-01-01 12:00:00 41:41 SyncActivityProfilerHandler.cpp:52]
# profiler_start"), at every KINETO_LOG_LEVEL.
_KINETO_MARKER = re.compile(rb"USDT:\S+ \S+ \d+:\d+ \S+:\d+\] ")


@contextlib.contextmanager
def _without_kineto_markers() -> Iterator[None]:
    """Inside, file descriptor 2 goes to a temporary file; on leaving, what was written there
    goes back to it, less kineto's marker lines (`_KINETO_MARKER`): anything else written
    meanwhile (a warning, another thread's progress bar) still appears, only later."""
    try:
        saved = os.dup(2)
    except OSError:  # no stderr at all: nothing to keep clean
        yield
        return
    if sys.stderr is not None:
        sys.stderr.flush()
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            if sys.stderr is not None:
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            kept = b"".join(line for line in held.read().splitlines(keepends=True)
                            if not _KINETO_MARKER.match(line))
            while kept:
                kept = kept[os.write(2, kept):]


def sdpa_kernels(call) -> list[str]:
    """The scaled-dot-product kernels PyTorch dispatches while `call()` runs, read from the
    profiler's op names: the aten ops named `*scaled_dot_product*` below the public entry
    point, e.g. `aten::_scaled_dot_product_flash_attention_for_cpu` (fused) or
    `aten::_scaled_dot_product_attention_math` (reference). Sorted, without repeats.

    The profiler is the public way to see ops below the one called; its two marker lines per
    profile, which no setting turns off, are kept off stderr (`_without_kineto_markers`)."""
    from torch.profiler import ProfilerActivity, profile

    with _without_kineto_markers(), profile(activities=[ProfilerActivity.CPU]) as prof:
        call()
    return sorted({e.key for e in prof.key_averages() if "scaled_dot_product" in e.key
                   and e.key != "aten::scaled_dot_product_attention"})


def sdpa_masks(call) -> list[str]:
    """How each `F.scaled_dot_product_attention` call made while `call()` runs gets its mask,
    recorded through a `TorchFunctionMode` (public API): "is_causal" (no mask tensor, the
    kernel masks by index), "none" (no mask at all: a single query sees every cached key) or
    "<dtype> mask [shape]" (a tensor the kernel must read: ALiBi's additive bias). Sorted,
    without repeats."""
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode

    seen: set[str] = set()

    class Record(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is F.scaled_dot_product_attention:
                mask = kwargs.get("attn_mask", args[3] if len(args) > 3 else None)
                if mask is not None:
                    dtype = str(mask.dtype).removeprefix("torch.")
                    seen.add(f"{dtype} mask {list(mask.shape)}")
                else:
                    seen.add("is_causal" if kwargs.get("is_causal") else "none")
            return func(*args, **kwargs)

    with Record():
        call()
    return sorted(seen)


def accepted_by(backend_name: str, call) -> bool | str:
    """True when `call()` runs with SDPA restricted to the one backend `backend_name` (an
    `SDPBackend` member name); else the first line of PyTorch's refusal."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    try:
        with sdpa_kernel(getattr(SDPBackend, backend_name)):
            call()
    except RuntimeError as err:
        return str(err).splitlines()[0]
    return True


def _decode_call(model, prompt, tokens: int):
    """A function that prefills a fresh KV cache with `prompt` [1, P] (untimed) and returns a
    function decoding `tokens` single tokens, one forward each."""
    import torch

    from blocklab.nn import KVCache

    def start():
        cache = KVCache(model.config.n_layers, max_len=prompt.shape[1] + tokens)
        with torch.no_grad():
            model(prompt, cache=cache)

        def decode():
            with torch.no_grad():
                for i in range(tokens):
                    model(prompt[:, i:i + 1], cache=cache)
        return decode
    return start


def time_position_cost(options: RunOptions, seed: int = 0) -> RunResult:
    """C31: parameters, step times and SDPA kernels of `COST_SCHEMES` on the size's model, in
    `options`' precision and on its backend; the result's `extra` is a `CostRun`.

    Training steps (`trainer.train_step`: forward, backward, clip, AdamW on a batch of the
    size's shape) and decode steps (one token at a time after a prompt of L − decode_tokens
    tokens, KV cache, no grad; seconds per token) of the schemes are interleaved, the order
    rotating by one every repeat; the first `warmup` repeats are not recorded. One thread.
    Kernels: `sdpa_kernels` for a training forward+backward at L and a decode step, and
    whether SDPA restricted to `FLASH_ATTENTION` accepts each call. At this toy shape the
    times measure per-op overhead; "realistic" times prefill and decode at d_model 1024 with a
    1,024-token KV cache (`position_cost.time_shapes`; reported, not graded).
    """
    import torch

    from blocklab.budget.params import count_params
    from blocklab.experiments.data import load_corpus, sample_batch
    from blocklab.experiments.trainer import build_model, make_optimizer, train_step

    started = time.perf_counter()
    size = options.size
    config = SIZES[size]
    cost = config.cost
    L, n_decode = config.L, cost.decode_tokens
    corpus = load_corpus("stdlib")
    tc = train_config(options, seed)
    params: dict[str, int] = {}
    params_module: dict[str, int] = {}
    for scheme in PARAM_SCHEMES:
        mc = arm_config(size, scheme)
        params[scheme] = count_params(mc).total
        params_module[scheme] = sum(p.numel() for p in build_model(mc, tc).parameters())
    kernels: dict[str, SchemeKernels] = {}
    with torch_threads(1):
        models = {s: build_model(arm_config(size, s), tc).train() for s in COST_SCHEMES}
        optimizers = {s: make_optimizer(m, tc) for s, m in models.items()}
        weights = {s: list(m.parameters()) for s, m in models.items()}
        prompt = torch.from_numpy(corpus.val[:L].astype(np.int64))[None]  # [1, L]
        for scheme, model in models.items():
            def train_call(model=model):
                model(prompt).float().sum().backward()

            def decode_call(model=model):
                _decode_call(model, prompt[:, :L - n_decode], 1)()()

            model.train()
            train_kernels = sdpa_kernels(train_call)
            train_masks = sdpa_masks(train_call)
            flash_train = accepted_by("FLASH_ATTENTION", train_call)
            model.eval()
            step = _decode_call(model, prompt[:, :L - n_decode], 1)()  # prefilled, untraced
            kernels[scheme] = SchemeKernels(
                train=train_kernels, train_mask=train_masks, flash_train=flash_train,
                decode=sdpa_kernels(step),
                decode_mask=sdpa_masks(_decode_call(model, prompt[:, :L - n_decode], 1)()),
                flash_decode=accepted_by("FLASH_ATTENTION", decode_call))
            model.zero_grad(set_to_none=True)
        train_s: dict[str, list[float]] = {s: [] for s in models}
        decode_s: dict[str, list[float]] = {s: [] for s in models}
        order = list(models)
        for i in range(cost.warmup + cost.repeats):
            batch = sample_batch(corpus.train, seed=seed, step=i, batch_size=tc.batch_size,
                                 seq_len=L)
            for scheme in order[i % len(order):] + order[:i % len(order)]:
                model = models[scheme].train()
                tick = time.perf_counter()
                train_step(model, batch, optimizers[scheme], weights[scheme], lr=tc.lr,
                           grad_clip=tc.grad_clip)  # the trainer's step, timed whole
                step_s = time.perf_counter() - tick
                decode = _decode_call(model.eval(), prompt[:, :L - n_decode], n_decode)()
                tick = time.perf_counter()
                decode()
                token_s = (time.perf_counter() - tick) / n_decode
                if i >= cost.warmup:
                    train_s[scheme].append(step_s)
                    decode_s[scheme].append(token_s)
        realistic = time_realistic_shapes(size, seed)
    record = CostRun(threads=1, L=L, batch_size=tc.batch_size, decode_tokens=n_decode,
                     prompt_tokens=L - n_decode, params=params, params_module=params_module,
                     train_s=train_s, decode_s=decode_s, kernels=kernels, realistic=realistic,
                     repeats=cost.repeats)
    return RunResult(status="ok", wall_time_s=time.perf_counter() - started,
                     extra=_record("cost", record))


# --- runs -----------------------------------------------------------------------------------------
def _finetune(model, scaling: RopeScaling | None, corpus, options: RunOptions, seed: int):
    """Continue training a RoPE model at factor·L tokens with `scaling` as the size's
    `finetune` says; returns the new model.

    Batches keep the pre-training token count (batch_size / factor windows, at least one) and
    continue its data stream after the training run's last step; AdamW at a constant lr after
    a 10% warmup.
    """
    from blocklab.experiments.data import sample_batch
    from blocklab.experiments.trainer import make_optimizer, train_step

    config = SIZES[options.size]
    ft, L = config.finetune, config.L
    assert ft is not None, f"size {options.size} has no fine-tune"
    tuned = with_rope_scaling(model, scaling).train()
    tc = _train_config(options, seed, steps=ft.steps, lr=ft.lr)  # AdamW groups and clip
    optimizer, params = make_optimizer(tuned, tc), list(tuned.parameters())
    warmup = max(1, ft.steps // 10)
    rows = max(1, config.train.batch_size // ft.factor)
    for step in range(ft.steps):
        batch = sample_batch(corpus.train, seed=seed, step=config.train.steps + step,
                             batch_size=rows, seq_len=ft.factor * L)
        train_step(tuned, batch, optimizer, params, lr=ft.lr * min(1.0, (step + 1) / warmup),
                   grad_clip=tc.grad_clip)
    return tuned.eval()


def _rope_variants(options: RunOptions, model, corpus, seed: int
                   ) -> dict[str, ScaledReads | FineTunedReads]:
    """Training-free scaling at every multiple m >= 2 (factor m), and fine-tuned variants
    (each kind of the size's `finetune`, scaling factor the longest multiple) read at every
    multiple with that scaling."""
    config = SIZES[options.size]
    L, mults, n = config.L, config.mults, config.eval_windows
    longer = [m for m in mults if m > 1]
    variants: dict[str, ScaledReads | FineTunedReads] = {}
    for kind in SCALINGS:
        beyond: dict[str, float | str | None] = {}
        per_position: dict[str, list[float | None] | None] = {}
        errors: dict[str, str] = {}
        scalings: dict[str, RopeScaling] = {}
        for m in longer:
            scaling = scaling_config(kind, m, L)
            scaled = with_rope_scaling(model, scaling)
            read = extrapolation(scaled, corpus.val, L, [m], n, sliding=False)
            beyond.update(read.loss_beyond_L)
            per_position.update(read.per_position)
            errors.update(read.errors)
            scalings[str(m)] = scaling
        variants[f"rope+{kind}"] = ScaledReads(beyond, per_position, errors, scalings)
    ft = config.finetune
    if ft:
        for ft_kind in ft.kinds:
            # The scaling's factor is the longest multiple read (YaRN fine-tunes at a length
            # shorter than its target, s = target / original), the fine-tuning windows
            # factor·L tokens.
            ft_scaling = None if ft_kind is None else scaling_config(ft_kind, max(mults), L)
            tuned = _finetune(model, ft_scaling, corpus, options, seed)
            read = extrapolation(tuned, corpus.val, L, mults, n, sliding=False)
            name = "rope" if ft_kind is None else f"rope+{ft_kind}"
            variants[f"{name}+ft{ft.factor}x"] = FineTunedReads(
                read.loss_at_L, read.loss_beyond_L, read.sliding, read.per_position,
                read.errors, scaling=ft_scaling, finetune=ft)
    return variants


def _train_and_read(options: RunOptions, arm: str, seed: int, progress,
                    lr: float | None = None) -> RunResult:
    """The training run of `arm` at `lr`, then its reads: its result's `extra` is what
    `ArmRun` decodes (the trainer's own result under "train")."""
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


def train_passkey_model(mc: ModelConfig, options: RunOptions, seed: int):
    """A model trained only on passkey examples of L + 1 bytes as the size's `passkey` says,
    needle depth uniform in [0, 1] (snapped to the filler's sentence boundaries), next-token
    loss on every byte. Returns the model (in eval mode) and its last training loss."""
    import torch

    from blocklab.experiments.synthetic import example_seeds, passkey_example
    from blocklab.experiments.trainer import (
        build_model,
        learning_rate,
        make_optimizer,
        train_step,
    )

    config = SIZES[options.size]
    pk, L = config.passkey, config.L
    assert pk is not None, f"size {options.size} has no passkey models"
    steps, batch_size = pk.steps, pk.batch_size
    tc = _train_config(options, seed, steps=steps, batch_size=batch_size, seq_len=L, lr=pk.lr,
                       warmup_steps=max(1, steps // 20))
    model = build_model(mc, tc).train()
    optimizer, params = make_optimizer(model, tc), list(model.parameters())
    rng = np.random.default_rng([0x9A55, seed])
    example_ids = example_seeds(seed + 1_000_000, steps * batch_size)
    loss = math.nan
    for step in range(steps):
        chunk = example_ids[step * batch_size:(step + 1) * batch_size]
        batch = np.stack([passkey_example(s, L + 1, float(rng.uniform())).tokens for s in chunk])
        tokens = torch.from_numpy(batch.astype(np.int64))  # [B, L + 1]
        loss = train_step(model, tokens, optimizer, params, lr=learning_rate(step, tc),
                          grad_clip=tc.grad_clip).loss
    return model.eval(), loss


def passkey_grid(model, L: int, mults: Sequence[int], depths: Sequence[float], n: int,
                 seed: int) -> PasskeyGrid:
    """Passkey accuracy at every (m·L input tokens, depth); UNAVAILABLE where the model's
    position table is too short."""
    from blocklab.experiments.synthetic import passkey_accuracy

    grid: PasskeyGrid = {}
    for m in mults:
        row: dict[str, float | str] = {}
        for depth in depths:
            try:
                row[str(depth)] = passkey_accuracy(model, n=n, length=m * L + 1, depth=depth,
                                                   seed=seed)
            except ValueError:
                row[str(depth)] = UNAVAILABLE
        grid[str(m)] = row
    return grid


def _passkey_run(options: RunOptions, arm: str, seed: int, progress) -> RunResult:
    """The passkey model of `arm`, read at every multiple (and for rope with each
    training-free scaling); its result's `extra` is a `PasskeyRun`."""
    started = time.perf_counter()
    config = SIZES[options.size]
    pk, L = config.passkey, config.L
    assert pk is not None, f"size {options.size} has no passkey models"
    with torch_threads(1):
        model, last_loss = train_passkey_model(arm_config(options.size, arm), options, seed)
        accuracy = {arm: passkey_grid(model, L, config.mults, pk.depths, pk.n, 7 + seed)}
        if arm == "rope":
            for kind in SCALINGS:
                by_mult: PasskeyGrid = {}
                for m in (m for m in config.mults if m > 1):
                    scaled = with_rope_scaling(model, scaling_config(kind, m, L))
                    by_mult.update(passkey_grid(scaled, L, [m], pk.depths, pk.n, 7 + seed))
                accuracy[f"rope+{kind}"] = by_mult
    record = PasskeyRun(arm=arm, seed=seed, final_train_loss=last_loss, accuracy=accuracy)
    return RunResult(status="ok", wall_time_s=time.perf_counter() - started,
                     extra=_record("passkey", record))


def _relative_error_run() -> RunResult:
    """C20's relative-position error in every dtype, both pipelines; its result's `extra` is
    a `RelativeErrorRun`."""
    started = time.perf_counter()
    with torch_threads(1):
        naive = {dt: rope_relative_error(dt) for dt in RELATIVE_ERROR_DTYPES}
        ours = {dt: rope_relative_error_blocklab(dt) for dt in RELATIVE_ERROR_DTYPES}
    record = RelativeErrorRun(shifts=list(RELATIVE_ERROR_SHIFTS), naive=naive, blocklab=ours)
    return RunResult(status="ok", wall_time_s=time.perf_counter() - started,
                     extra=_record("relative_error", record))


def tune(options: RunOptions, tuned: Results = ()) -> list[RunSpec]:
    """The tuning stage: every arm the size trains at every peak lr of its grid (grown at an
    edge from the results `tuned` so far) on the tuning seeds, each a plain training run as
    long as the evaluation's."""
    from blocklab.experiments.trainer import run

    size = options.size
    t = SIZES[size].train
    trials = lr_trials(list(tuned))
    specs = []
    for arm in arms(size):
        mc = arm_config(size, arm)
        for lr in tune_arm(t.lr_grid, trials, arm).grid:
            for seed in range(TUNING_SEEDS, TUNING_SEEDS + t.tuning_seeds):
                tc = train_config(options, seed, lr)
                label = f"tune {arm} lr {lr:g} seed {seed}"
                payload = {"suite": "position", "kind": "tune", "arm": arm,
                           "model": mc.to_dict(), "train": train_identity(tc),
                           "data": "stdlib"}
                specs.append(RunSpec(label, f"tune/{arm}", seed, payload,
                                     lambda progress, mc=mc, tc=tc, label=label, run=run:
                                     run(mc, tc, "stdlib", progress=progress, label=label)))
    return specs


def tuned_lrs(size: str, trials: list[LrTrial]) -> dict[str, ArmTuning]:
    """Each arm's tuning: its grid, chosen peak lr and whether that is interior; {} at a size
    that does not tune (every arm at the grid's middle lr)."""
    if not SIZES[size].train.tuning_seeds:
        return {}
    return tune_arms(SIZES[size].train.lr_grid, trials, arms(size))


def arm_lrs(size: str, tuned: Results) -> dict[str, float | None]:
    """Each arm's peak lr: its tuned one, or None (the grid's middle) where the size does not
    tune."""
    tunings = tuned_lrs(size, lr_trials(tuned))
    return {arm: tunings[arm].lr if arm in tunings else None for arm in arms(size)}


def plan(options: RunOptions, tuned: Results) -> list[RunSpec]:
    """One training run per (arm, seed) at the arm's tuned peak lr (from its tuning runs
    `tuned`); one passkey run per (arm, seed) where the size has them; one timed cost run
    (C31, alone); one relative-error run (float64 and float32 maths, whatever precision the
    models train in) where the size plans runs no rule grades."""
    size, seeds, precision = options.size, options.seeds, options.precision
    config = SIZES[size]
    lrs = arm_lrs(size, tuned)
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
                                 _train_and_read(options, arm, seed, progress, lrs[arm])))
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
                                     _passkey_run(options, arm, seed, progress),
                                     reads_tuning=False))
    payload = {"suite": "position", "kind": "cost", "model": arm_config(size, "rope").to_dict(),
               "schemes": COST_SCHEMES, "param_schemes": PARAM_SCHEMES,
               "cost": dataclasses.asdict(config.cost),
               "train": train_identity(train_config(options, 0)),
               "realistic": dataclasses.asdict(REALISTIC_SHAPES[size])}
    specs.append(RunSpec("position cost (timed)", "cost", 0, payload,
                         lambda progress: time_position_cost(options, 0), timed=True,
                         reads_tuning=False))
    if graded_only(size):
        return specs
    payload = {"suite": "position", "kind": "relative_error",
               "shifts": RELATIVE_ERROR_SHIFTS, "dtypes": RELATIVE_ERROR_DTYPES}
    specs.append(RunSpec("rope relative-position error", "relative_error", 0, payload,
                         lambda progress: _relative_error_run(), reads_tuning=False))
    return specs


# Reference-machine seconds (`blocklab.experiments.estimate`) of what is not a model step: the
# profiler's start in the cost run, the relative-error run (pure tensor maths).
_PROFILER_REFERENCE_S = 0.4
_RELATIVE_ERROR_REFERENCE_S = 0.03


def price(spec: RunSpec, cal) -> float | None:
    """Estimated seconds of one run on this machine from a calibration (`blocklab.experiments.
    estimate`), counted as the code above runs it: a training run is the trainer's run, then
    `extrapolation` at every multiple (full windows and sliding ones), the order probe, the
    far-out check and, for rope, every training-free scaling and each fine-tune with its reads;
    a passkey run its training steps and grid; the cost run its builds, profiled calls and
    interleaved repeats."""
    from blocklab.experiments.estimate import TrainShape, evaluation_s, training_s

    payload = spec.payload
    kind = payload["kind"]
    if kind == "relative_error":
        return cal.reference_s(_RELATIVE_ERROR_REFERENCE_S)
    size = next(name for name, config in SIZES.items() if config.L == _L(payload)
                and _same_size(config, payload))
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
        order = config.order
        seconds = (training_s(model, train, cal) + read(mults, True)
                   + forward(2 * order.prefixes, order.prefix_len)
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
        n_decode = cost.decode_tokens
        seconds = cal.reference_s(_PROFILER_REFERENCE_S) + realistic_price(size, cal)
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


def _L(payload: dict[str, Any]) -> int:
    return payload.get("L") or payload.get("size_config", {}).get("L") or \
        payload["train"]["seq_len"]


def _same_size(size: PositionSize, payload: dict[str, Any]) -> bool:
    """Whether `payload` was planned from `size` (its model's width, depth and heads)."""
    model = payload["model"]
    return all(model[k] == v for k, v in dataclasses.asdict(size.model).items())


# --- summarise: statistics -----------------------------------------------------------------------
def _bucketed(curves: list[list[float | None]], width: int) -> list[float]:
    mean = np.mean(np.asarray(curves, dtype=np.float64), axis=0)
    return [float(mean[i:i + width].mean()) for i in range(0, mean.size, width)]


def _collect(runs: Runs) -> tuple[dict[str, dict[int, LengthReads]],
                                  dict[str, dict[int, PasskeyGrid]]]:
    """arm -> seed -> its reads (scaling variants as arms of their own), from the runs that
    trained, and arm -> seed -> passkey grid."""
    reads: dict[str, dict[int, LengthReads]] = {}
    passkey: dict[str, dict[int, PasskeyGrid]] = {}
    for run in runs.arms:
        if run.status == "ok" and run.reads is not None:
            reads.setdefault(run.arm, {})[run.seed] = run.reads
            for name, variant in run.variants.items():
                reads.setdefault(name, {})[run.seed] = variant.reads()
    for pk in runs.passkey:
        for name, grid in pk.accuracy.items():
            passkey.setdefault(name, {})[pk.seed] = grid
    return reads, passkey


def arm_statistics(size: str, runs: Runs, seeds: Sequence[int]) -> dict[str, PositionArm]:
    """Every arm read (each scaled or fine-tuned RoPE variant as an arm of its own) over
    `seeds`, in the order the runs read them (`PositionArm`)."""
    reads, passkey = _collect(runs)
    rope = reads.get("rope", {})
    return {name: _arm_statistics(size, name, by_seed, rope, list(seeds), passkey.get(name))
            for name, by_seed in reads.items()}


def _arm_statistics(size: str, name: str, by_seed: dict[int, LengthReads],
                    rope: dict[int, LengthReads], seeds: list[int],
                    passkey: dict[int, PasskeyGrid] | None) -> PositionArm:
    """One arm over `seeds`: loss at L; per longer multiple the loss past L, the sliding-window
    loss on the same tokens (a scaled variant, which has none of its own, is paired with plain
    RoPE's: `rope`) and their paired difference in nats and %; the bucketed per-position
    loss; the passkey accuracy where it has passkey runs."""
    config = SIZES[size]
    L, mults = config.L, config.mults
    longer = [str(m) for m in mults if m > 1]
    loss_at_L = mean_ci([r.loss_at_L for r in by_seed.values() if r.loss_at_L is not None])
    beyond: dict[str, Read] = {}
    sliding_at: dict[str, Interval | None] = {}
    minus: dict[str, Read] = {}
    pct: dict[str, Read] = {}
    per_position: dict[str, PerPosition | str | None] = {}
    for m in longer:
        # Aligned by seed with `sliding` below: a seed without a result is None here, so
        # one failed seed shrinks n instead of breaking the pairing.
        values = [by_seed[s].loss_beyond_L.get(m) if s in by_seed else None for s in seeds]
        # Scaled variants are compared with the plain RoPE model's sliding windows.
        own = any(m in r.sliding for r in by_seed.values())
        source = by_seed if own else rope
        sliding = [source[s].sliding.get(m) if s in source else None for s in seeds]
        sliding_at[m] = mean_ci(sliding) if own else None
        if any(v == UNAVAILABLE for v in values):
            beyond[m] = minus[m] = pct[m] = UNAVAILABLE
            continue
        losses = [v if isinstance(v, float) else None for v in values]
        beyond[m] = mean_ci(losses)
        minus[m] = paired_difference(losses, sliding)
        pct[m] = mean_ci([100 * (x - y) / y for x, y in zip(losses, sliding, strict=True)
                          if x is not None and y is not None and math.isfinite(y)])
    for m in [str(m) for m in mults]:
        curves = [c for c in (r.per_position.get(m) for r in by_seed.values()) if c]
        if curves:
            per_position[m] = PerPosition(bucket=max(1, L // 8),
                                          loss=_bucketed(curves, max(1, L // 8)))
        elif m != "1" or name in arms(size):
            per_position[m] = UNAVAILABLE if m != "1" else None
    return PositionArm(
        loss_at_L=loss_at_L, loss_beyond_L=beyond, sliding=sliding_at,
        extrapolated_minus_sliding=minus, extrapolated_vs_sliding_pct=pct,
        per_position=per_position,
        passkey=_passkey_summary(passkey) if passkey is not None else None)


def _passkey_summary(by_seed: dict[int, PasskeyGrid]) -> PasskeySummary:
    by_depth: dict[str, dict[str, float | str]] = {}
    by_length: dict[str, float | str] = {}
    for m in next(iter(by_seed.values())):
        cells = [grid[m] for grid in by_seed.values()]
        depths = list(cells[0])
        if any(v == UNAVAILABLE for c in cells for v in c.values()):
            by_depth[m] = {d: UNAVAILABLE for d in depths}
            by_length[m] = UNAVAILABLE
            continue
        by_depth[m] = {d: float(np.mean([c[d] for c in cells])) for d in depths}
        by_length[m] = float(np.mean(list(by_depth[m].values())))
    return PasskeySummary(by_length=by_length, by_depth=by_depth, seeds=len(by_seed))


def _finite_reads(runs: Runs) -> dict[str, list[FiniteRead]]:
    """arm -> its logits far past max_seq_len, one read per training run that made it."""
    finite: dict[str, list[FiniteRead]] = {}
    for run in runs.arms:
        if run.finite is not None:
            finite.setdefault(run.arm, []).append(run.finite)
    return finite


def _yarn_betas(config: PositionSize) -> YarnBetas:
    """YaRN's ramp at the size's L and head_dim with the paper's β and with β rescaled."""
    L = config.L
    rotary_dim = config.model.d_model // config.model.n_heads
    beta_fast, beta_slow = yarn_betas(L)
    return YarnBetas(
        paper=YarnRamp(YARN_PAPER_BETAS[0], YARN_PAPER_BETAS[1],
                       list(yarn_ramp_pairs(L, rotary_dim, *YARN_PAPER_BETAS))),
        rescaled=YarnRamp(beta_fast, beta_slow,
                          list(yarn_ramp_pairs(L, rotary_dim, beta_fast, beta_slow))),
        rotary_pairs=rotary_dim // 2, reference_length=YARN_REFERENCE_LENGTH)


def _train_summary(runs: Runs) -> dict[str, list[PositionRun]]:
    """arm -> every training run's status, val loss, unigram entropy and step time."""
    out: dict[str, list[PositionRun]] = {}
    for run in runs.arms:
        final = run.train.final
        out.setdefault(run.arm, []).append(PositionRun(
            seed=run.seed, status=run.status,
            val_loss=final.val_loss if final is not None else None,
            unigram_entropy=final.unigram_entropy if final is not None else None,
            ms_per_step=run.train.ms_per_step))
    return out


def _order_summary(runs: Runs, train: dict[str, list[PositionRun]], seeds: list[int],
                   order: OrderSetting) -> dict[str, OrderProbe]:
    """arm -> its order probe over seeds, with val loss − unigram entropy of the same runs."""
    probes: dict[str, dict[int, OrderRead]] = {}
    for run in runs.arms:
        if run.order is not None:
            probes.setdefault(run.arm, {})[run.seed] = run.order
    out = {}
    for arm, by_seed in probes.items():
        ok = {r.seed: r for r in train.get(arm, []) if r.status == "ok"}
        gaps = [ok[s].val_loss - ok[s].unigram_entropy for s in seeds
                if s in ok and ok[s].val_loss is not None
                and ok[s].unigram_entropy is not None]
        out[arm] = OrderProbe(prefix_len=order.prefix_len, prefixes=order.prefixes,
                              tv=mean_ci([p.tv for p in by_seed.values()]),
                              kl=mean_ci([p.kl for p in by_seed.values()]),
                              loss_minus_unigram=mean_ci(gaps))
    return out


def _cost_summary(record: CostRun | None) -> PositionCost | None:
    """C31's timed run as a `PositionCost`; ratios against "none" by `bootstrap_ratio_ci`."""
    from blocklab.experiments.suites.norm_cost import bootstrap_ratio_ci

    if record is None:
        return None
    train, decode_s = record.train_s, record.decode_s
    schemes = {}
    for name in train:
        k = record.kernels[name]
        schemes[name] = SchemeCost(
            params=record.params[name], params_module=record.params_module[name],
            train_ms=1000 * float(np.median(train[name])),
            decode_ms=1000 * float(np.median(decode_s[name])),
            train_vs_none=bootstrap_ratio_ci(train[name], train["none"]),
            decode_vs_none=bootstrap_ratio_ci(decode_s[name], decode_s["none"]),
            kernels_train=k.train, kernels_decode=k.decode, masks_train=k.train_mask,
            masks_decode=k.decode_mask, flash_train=k.flash_train,
            flash_decode=k.flash_decode)
    return PositionCost(threads=record.threads, L=record.L, batch_size=record.batch_size,
                        prompt_tokens=record.prompt_tokens, decode_tokens=record.decode_tokens,
                        repeats=record.repeats, params=record.params, schemes=schemes,
                        realistic=shape_timing(record.realistic))


def _finetune_summary(config: PositionSize) -> FineTune | None:
    """The size's RoPE fine-tune and the arm each scaling kind's fine-tune is read as."""
    ft = config.finetune
    if not ft:
        return None
    return FineTune(factor=ft.factor, scale=max(config.mults), steps=ft.steps, lr=ft.lr,
                    arms={kind or "none": f"rope{'' if kind is None else '+' + kind}"
                                          f"+ft{ft.factor}x" for kind in ft.kinds})


# --- summarise: tables and notes ------------------------------------------------------------------
def _cell(value: Read | None) -> str:
    if isinstance(value, str):
        return value
    return format_ci(value, 3) if isinstance(value, Interval) else "—"


def _ratio_text(ratio: TimeRatio) -> str:
    return f"{ratio.ratio:.3f} [{ratio.ci_low:.3f}, {ratio.ci_high:.3f}]"


def _pct_cell(stats: Read) -> str:
    if isinstance(stats, str):
        return stats
    if stats.mean is None:
        return "—"
    if not stats.resolved:
        return f"{stats.mean:+.1f}% (n={stats.n})"
    return f"{stats.mean:+.1f}% [{stats.ci_low:+.1f}, {stats.ci_high:+.1f}]"


def _finite_cell(value: bool | None, read: FiniteRead) -> str:
    if value is None:
        return "ValueError (table)" if read.error is not None else "—"
    return "finite" if value else "NaN/inf"


def summarise(options: RunOptions, results: Results) -> Summary:
    size, seeds = options.size, options.seeds
    tuned = [(spec, result) for spec, result in results if spec.payload.get("kind") == "tune"]
    evaluated = [(spec, result) for spec, result in results
                 if spec.payload.get("kind") != "tune"]
    config = SIZES[size]
    L, mults = config.L, config.mults
    longer = [str(m) for m in mults if m > 1]
    seed_list = list(seeds)
    # The statistics, every run decoded once ...
    trials = lr_trials(tuned)
    tunings = tuned_lrs(size, trials)
    runs = decode_runs(evaluated)
    arms_data = arm_statistics(size, runs, seed_list)
    relative = runs.relative_error
    finite = _finite_reads(runs)
    yarn = _yarn_betas(config)
    train = _train_summary(runs)
    order = _order_summary(runs, train, seed_list, config.order)
    cost = _cost_summary(runs.cost)
    finetune = _finetune_summary(config)

    # ... then the tables and notes that show them.
    tables = [
        Table(f"Loss (nats/token) on positions ≥ L, trained at L={L}",
              ["arm", "1× (all positions)", *[f"{m}× (p ≥ L)" for m in longer],
               f"sliding {longer[-1]}× (p ≥ L)"],
              [[name, _cell(a.loss_at_L) if a.loss_at_L.n else "—",
                *[_cell(a.loss_beyond_L[m]) for m in longer],
                *[_cell(a.sliding[m]) for m in longer[-1:]]] for name, a in arms_data.items()],
              "Mean [95% CI] over seeds. Scaled RoPE variants use factor m = length / L, same "
              "weights (training-free) unless named +ft. Sliding: the same tokens read in "
              "windows of L (stride L/2), never at a position ≥ L."),
        Table("Extrapolated − sliding-window loss on the same tokens (paired by seed)",
              ["arm", *[f"{m}×" for m in longer]],
              [[name, *[_cell(a.extrapolated_minus_sliding[m]) for m in longer]]
               for name, a in arms_data.items()],
              "< 0: the model gains from context longer than L; > 0: reading positions ≥ L "
              "costs more than it gains. Scaled variants are paired with plain RoPE's sliding "
              "windows."),
    ]
    rope_names = [name for name in arms_data if name.startswith("rope")]
    tables.append(Table(
        "RoPE and its scalings: loss past L relative to sliding windows, % (C22)",
        ["arm", *[f"{m}×" for m in longer]],
        [[name, *[_pct_cell(arms_data[name].extrapolated_vs_sliding_pct[m]) for m in longer]]
         for name in rope_names],
        "100·(extrapolated − sliding)/sliding per seed, mean [95% CI]: the quality lost by "
        "reading positions ≥ L instead of windows of L."))
    grid = config.train.lr_grid
    notes = []
    if tunings:
        tables.append(tuned_table(
            tunings.values(), trials, grid,
            f"{config.train.tuning_seeds} tuning seed(s), disjoint from the evaluation seeds, "
            "at L"))
    else:
        notes.append(f"Every arm trains at peak lr {train_config(options, 0).lr:g} (the middle "
                     f"of the grid {{{', '.join(f'{lr:g}' for lr in grid.base)}}}): each graded "
                     "part compares an arm with itself, not with the others; --size full tunes "
                     "every arm's lr on seeds of its own.")
    if runs.passkey:
        tables.append(Table("Passkey accuracy by length (mean over depths and seeds)",
                            ["arm", *[f"{m}×" for m in mults]],
                            [[name, *[a.passkey.by_length.get(str(m), "—") for m in mults]]
                             for name, a in arms_data.items() if a.passkey],
                            "Separate passkey models per arm, trained on passkey examples of "
                            "L bytes; exact match of all five digits."))
    else:
        notes.append(f"Passkey retrieval is not part of the {size} grid: no registered rule "
                     "grades it, and a model trained on passkey examples needs ~1,500 steps "
                     "before it retrieves at all (measured at d=64, 2 layers, L=128); the full "
                     "grid runs it.")
    if relative is not None:
        tables.append(Table(
            "RoPE: max |score(m, n) − score(m+s, n+s)| (C20)",
            ["pipeline", "dtype", *[f"s={s:g}" for s in relative.shifts]],
            [[pipeline, dtype,
              *["NaN/inf" if err is None else f"{err:.2e}" for _, err in pairs]]
             for pipeline, by_dtype in (("naive", relative.naive),
                                        ("blocklab", relative.blocklab))
             for dtype, pairs in by_dtype.items()],
            "naive: positions, angles and rotation all in dtype; blocklab: float32 angles "
            "(RotaryEmbedding), rotation in float32, q and k cast back to dtype. Scores "
            "q·k/√64 with q, k ~ N(0, 1), so errors are in logit units."))
    tables.append(Table(f"Logits finite at positions {FAR_POSITION:,} and on, far past "
                        "max_seq_len? (C26)", ["arm", "max_seq_len", "first position",
                                               "float32", "bfloat16"],
                        [[run.arm, run.finite.max_seq_len, run.finite.position,
                          _finite_cell(run.finite.float32, run.finite),
                          _finite_cell(run.finite.bfloat16, run.finite)]
                         for run in runs.arms if run.finite is not None and run.seed == 0],
                        "RoPE's table is sized max_seq_len and extended on demand."))

    rotary_dim = config.model.d_model // config.model.n_heads
    notes.append(
        f"YaRN β: the paper's β_fast=32, β_slow=1 put the ramp over pairs "
        f"{tuple(yarn.paper.ramp_pairs)} of {rotary_dim // 2} at L={L}, head_dim={rotary_dim}; "
        f"'yarn-rescaled' uses β scaled by L/{YARN_REFERENCE_LENGTH}: "
        f"β_fast={yarn.rescaled.beta_fast:g}, β_slow={yarn.rescaled.beta_slow:g}, ramp over "
        f"pairs {tuple(yarn.rescaled.ramp_pairs)} (the same fractions of the spectrum as "
        "Llama 2 at 4096).")
    notes.append("dynamic NTK is given factor m, as the others: at a full-sequence read of "
                 "m·L tokens its base is θ·(m² − m + 1)^(r/(r−2)), i.e. static NTK at scale "
                 "m² − m + 1 (3, 13, 57 for m = 2, 4, 8); with factor 1 it would equal 'ntk'.")
    if finetune is not None:
        notes.append(f"+ft{finetune.factor}x variants: the RoPE model fine-tuned "
                     f"{finetune.steps} steps at {finetune.factor}·L tokens with that scaling "
                     f"(factor {finetune.scale}, the longest multiple read), then read at every "
                     f"length with it; rope+ft{finetune.factor}x is the control: the same "
                     "fine-tune without scaling.")
    else:
        notes.append(f"RoPE scaling in the {size} grid is training-free only (same weights); "
                     "the papers fine-tune, and the full grid does too.")
    if "learned" in arms_data:
        notes.append("learned (table L) cannot run past L: its reads there are recorded as "
                     f"'{UNAVAILABLE}' (the ValueError of LearnedPositions), not as a loss.")
    left_out = [a for a in schemes(size) if a not in arms(size) and a not in arms_data]
    full_only_items = []
    if left_out:
        graded = listed([a for a in arms(size) if a.startswith(("learned", "sinusoidal"))])
        full_only_items.append(f"the {listed(left_out)} arm{'s' if len(left_out) > 1 else ''} "
                               f"(C21 grades {graded} instead)")
    if graded_only(size) and relative is None:
        full_only_items.append("RoPE's relative-position error by dtype (C20's note; C20 itself "
                               "is checked in float64 by the ledger)")
    if full_only_items:
        notes.append(full_only(full_only_items))
    if order:
        tables.append(Table(
            "Order without positions: next-token change when a prefix is reversed (C29)",
            ["arm", "TV distance", "KL (nats)", "val loss − unigram entropy (nats)"],
            [[name, _cell(o.tv), _cell(o.kl), _cell(o.loss_minus_unigram)]
             for name, o in order.items()],
            f"{config.order.prefixes} validation prefixes of {config.order.prefix_len} tokens "
            f"per seed; the first {config.order.prefix_len - 1} reversed, the last kept (same "
            "tokens, same token read). TV = ½Σ|p − q| of the next-token distributions, mean "
            "[95% CI] over seeds. A bidirectional model without positions would give exactly "
            "0."))
    if cost:
        tables.append(Table(
            "Position cost: parameters, step time and SDPA kernel, 1 thread (C31)",
            ["scheme", "params", "train ms", "× none", "decode ms/token", "× none",
             "train kernel", "train mask", "decode mask"],
            [[name, c.params, f"{c.train_ms:.1f}", _ratio_text(c.train_vs_none),
              f"{c.decode_ms:.3f}", _ratio_text(c.decode_vs_none),
              ", ".join(k.removeprefix("aten::") for k in c.kernels_train),
              ", ".join(c.masks_train), ", ".join(c.masks_decode)]
             for name, c in cost.schemes.items()],
            f"Medians over {cost.repeats} interleaved repeats, ratio with a paired bootstrap "
            f"95% CI. Training: batch {cost.batch_size} × L={cost.L}; decode: one token at a "
            f"time after {cost.prompt_tokens} cached tokens. Kernels: the aten ops PyTorch "
            "dispatched (profiler names); masks: what attention.py hands SDPA."))
    data = PositionData(L=L, mults=list(mults), eval_lengths=[m * L for m in mults],
                        arms=arms_data,
                        relative_error=relative.naive if relative is not None else {},
                        relative_error_blocklab=(relative.blocklab if relative is not None
                                                 else {}),
                        finite_past_max_seq_len=finite, yarn=yarn, train=train, order=order,
                        cost=cost, finetune=finetune, lr_trials=trials,
                        lr_tuning=list(tunings.values()))
    return Summary("position", size, len(seeds), tables, notes, data, first_seed=seeds.start)


SUITE = Suite(
    name="position",
    description="Train at L, read at 1×..16× L: every position scheme and RoPE scaling; order "
                "without positions; position cost (C20–C22, C26, C29–C31)",
    plan=plan,
    summarise=summarise,
    default_seeds={"tiny": 1, "quick": 3, "full": 3},
    tune=tune,
    precisions=("fp32", "bf16"),
    price=price,
)
