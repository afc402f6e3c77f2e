"""What the position suite's summary holds (`Summary.data`, the suite's `data_type`):
`PositionData`.

Each scheme read at every multiple of L (`PositionArm`), the training runs (`PositionRun`),
C29's order probe (`OrderProbe`), C31's cost run (`PositionCost`) and the fine-tune's settings
(`FineTune`). Frozen dataclasses that `blocklab.experiments.summaries.decode` reads back field by
field, so a renamed or missing field fails naming it. No PyTorch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from blocklab.experiments.summaries import ArmTuning, Interval, LrTrial, TimeRatio

# A read that cannot be made (a learned table past its length) is this string, not a number.
Read = Union[Interval, str]  # noqa: UP007 (decoded by `decode`, which reads typing.Union)


@dataclass(frozen=True)
class PerPosition:
    bucket: int  # positions per bucket
    loss: list[float | None]


@dataclass(frozen=True)
class PasskeySummary:
    by_length: dict[str, float | str]  # multiple of L -> accuracy (mean over depths and seeds)
    by_depth: dict[str, dict[str, float | str]]
    seeds: int


@dataclass(frozen=True)
class PositionArm:
    """One position scheme (or RoPE scaling) read at every multiple of L (keys "2", "4", ...)."""

    loss_at_L: Interval
    loss_beyond_L: dict[str, Read]
    sliding: dict[str, Interval | None]  # None: the arm is compared with plain RoPE's windows
    extrapolated_minus_sliding: dict[str, Read]
    extrapolated_vs_sliding_pct: dict[str, Read]
    per_position: dict[str, PerPosition | str | None]
    passkey: PasskeySummary | None


@dataclass(frozen=True)
class FiniteRead:
    """Are the logits finite at positions far past max_seq_len (None: the model raised)?"""

    position: int
    max_seq_len: int
    float32: bool | None
    bfloat16: bool | None
    error: str | None


@dataclass(frozen=True)
class YarnRamp:
    beta_fast: float
    beta_slow: float
    ramp_pairs: list[int]


@dataclass(frozen=True)
class YarnBetas:
    paper: YarnRamp
    rescaled: YarnRamp
    rotary_pairs: int
    reference_length: int


@dataclass(frozen=True)
class PositionRun:
    seed: int
    status: str
    val_loss: float | None
    unigram_entropy: float | None
    ms_per_step: float | None


@dataclass(frozen=True)
class OrderProbe:
    """C29, one position arm over its seeds: how much the next-token distribution moves when
    the first prefix_len − 1 tokens of a prefix are reversed (last token kept), and the
    validation loss minus the unigram entropy of the training bytes (nats; < 0: the model uses
    its context)."""

    prefix_len: int
    prefixes: int  # per seed
    tv: Interval  # mean total-variation distance, in [0, 1]
    kl: Interval  # mean KL(p ‖ q), nats
    loss_minus_unigram: Interval


@dataclass(frozen=True)
class SchemeCost:
    """C31, one position scheme: parameters, median step times, SDPA kernels and masks."""

    params: int  # blocklab.budget.count_params
    params_module: int  # counted on the built module
    train_ms: float  # median training step (forward, backward, clip, AdamW)
    decode_ms: float  # median decode step per token (KV cache, no grad)
    train_vs_none: TimeRatio  # scheme / none per repeat: geometric mean, 95% t on log ratios
    decode_vs_none: TimeRatio
    kernels_train: list[str]  # aten ops dispatched for SDPA, forward and backward
    kernels_decode: list[str]
    masks_train: list[str]  # "is_causal", "none" or "<dtype> mask [shape]"
    masks_decode: list[str]
    flash_train: bool | str  # SDPA restricted to FLASH_ATTENTION accepts it, or its refusal
    flash_decode: bool | str


@dataclass(frozen=True)
class ShapeTiming:
    """C31's step times at one model shape (reported, never graded): a no-grad prefill of
    `prompt_tokens` into a fresh KV cache, then `decode_tokens` single-token steps on it, per
    scheme, interleaved over `repeats`. `label` says what the shape stands for ("realistic
    shape", or a tiny one that only exercises the code)."""

    label: str
    d_model: int
    n_layers: int
    n_heads: int
    batch_size: int
    prompt_tokens: int  # the timed prefill's length, and the KV cache each decode step reads
    decode_tokens: int
    repeats: int
    threads: int
    prefill_ms: dict[str, float]  # median per scheme
    decode_ms: dict[str, float]  # median per token, per scheme
    prefill_vs_none: dict[str, TimeRatio]  # scheme / none per repeat (`TimeRatio.paired`)
    decode_vs_none: dict[str, TimeRatio]
    wall_time_s: float


@dataclass(frozen=True)
class PositionCost:
    threads: int
    L: int
    batch_size: int
    prompt_tokens: int
    decode_tokens: int
    repeats: int
    params: dict[str, int]  # count_params total for every scheme of PARAM_SCHEMES
    schemes: dict[str, SchemeCost]  # timed at the suite's toy shape: per-op overhead
    # The same schemes timed at a realistic shape (d_model 1024, a 1,024-token KV cache at
    # quick and full); None in a summary from before it was timed.
    realistic: ShapeTiming | None = None


@dataclass(frozen=True)
class FineTune:
    """The RoPE fine-tune: `steps` at `factor`·L tokens, scaling factor `scale`; `arms` maps
    each scaling kind ("none": plain RoPE, the control) to its arm name."""

    factor: int
    scale: int
    steps: int
    lr: float
    arms: dict[str, str]


@dataclass(frozen=True)
class PositionData:
    L: int
    mults: list[int]
    eval_lengths: list[int]
    arms: dict[str, PositionArm]
    relative_error: dict[str, list[list[float | None]]]  # dtype -> [[shift, max error], ...]
    relative_error_blocklab: dict[str, list[list[float | None]]]
    finite_past_max_seq_len: dict[str, list[FiniteRead]]
    yarn: YarnBetas
    train: dict[str, list[PositionRun]]
    order: dict[str, OrderProbe]  # arm -> C29's order probe
    cost: PositionCost | None  # C31's timed run (None: not stored)
    finetune: FineTune | None
    # Each trained arm's peak lr, tuned on seeds of its own (loss versus lr, and where the
    # optimum fell).
    lr_trials: list[LrTrial] = field(default_factory=list)
    lr_tuning: list[ArmTuning] = field(default_factory=list)
