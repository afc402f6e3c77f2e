"""What a suite's summary holds, as frozen dataclasses, and the one loader that reads it back.

A summary is written to `<results>/<suite>/<size>/summary.json` by `run_suite` and read by the
claims ledger and the report. Its numbers live in a typed `data` field, one dataclass per suite
(`FfnData`, `PlacementData`, `NormCostData`, `PositionData`), so a renamed or missing field fails
when the file is read, naming the field, instead of quietly turning a verdict into "no data":

    summary = load_summary("runs", "ffn", "quick")     # Summary | None (not run yet)
    summary.data.arms["swiglu"].delta_vs_relu.mean      # typed all the way down

`decode` checks every field against its annotation (exact key sets, no coercion beyond int → float)
and raises `ResultsError` with the path of the first mismatch. This module needs no PyTorch.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from blocklab.errors import InputError, ResultsError

# The sizes a suite runs at and the precisions it may train in (each suite lists its own in
# `Suite.precisions`), the only folders a summary is stored under, are the run options'.
from blocklab.experiments.options import PRECISIONS, SIZES, size_folder, suite_command
from blocklab.jsonio import json_safe, parse_json, read_json

# The layout of summary.json; readers refuse any other (3: typed data, one dataclass per suite;
# 4: the first seed recorded; 6: placement's deep grid for C36; 7: position's order probe,
# cost run and fine-tune settings for C29–C31; 8: quantize's bounds from measured time shares,
# its Amdahl figures kept apart as estimates; 10: tuned arms and largest stable learning
# rates in placement, lr grids that grow at an edge).
SUMMARY_SCHEMA = 10


@dataclass(frozen=True)
class Interval:
    """Mean of `n` values with its two-sided 95% Student-t interval; the bounds and `sd` are
    None with fewer than two values, and `mean` too with none."""

    n: int
    mean: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    sd: float | None = None

    @property
    def resolved(self) -> bool:
        """Whether the interval has bounds (n ≥ 2)."""
        return self.ci_low is not None and self.ci_high is not None


@dataclass(frozen=True)
class Table:
    """A summary table: a title, column names, rows of cells (str/int/float/None), a caption."""

    title: str
    columns: list[str]
    rows: list[list[Any]]
    caption: str = ""


# --- ffn ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FfnArm:
    """One FFN arm over its seeds. Deltas are arm − relu, paired by seed; `status` counts runs
    by status (ok, diverged, stuck); quality uses only the `counted` runs."""

    gated: bool
    activation: str
    d_ff: int
    params: int
    val_loss: Interval
    val_bpb: Interval
    delta_vs_relu: Interval
    rel_delta_pct: Interval
    ms_per_step: float | None  # timed alone, median of interleaved steps
    ms_per_step_train: float | None  # mean over the training runs (other work beside them)
    val_loss_equal_time: Interval
    delta_vs_relu_equal_time: Interval
    equal_time_step: float | None
    status: dict[str, int]
    counted: int
    zero_grad_fraction: dict[str, float | None]  # "init" / "final"
    lr: float  # the arm's own learning rate, picked on the tuning seeds


@dataclass(frozen=True)
class LrTrial:
    """One tuning run: an arm at one learning rate of the grid on one tuning seed."""

    arm: str
    lr: float
    seed: int
    status: str
    val_loss: float | None  # None when the run does not count (not ok, or above entropy)
    d_model: int  # the model width tuned (the suite's own, or a scale-trend width)


@dataclass(frozen=True)
class ArmTuning:
    """Where one arm's learning-rate tuning ended (`experiments.suites.tuning.tune_arm`): the
    grid it was tried on (the registered one, grown at an edge where needed), the chosen rate
    and whether it is interior (a tried rate on each side scored worse)."""

    arm: str
    grid: tuple[float, ...]
    lr: float
    interior: bool
    extended: int  # points added beyond the registered grid

    def words(self) -> str:
        where = "interior" if self.interior else "at the grid's edge"
        grown = f", grid extended by {self.extended}" if self.extended else ""
        return f"{self.arm} {self.lr:g} ({where}{grown})"


@dataclass(frozen=True)
class FfnTrendPoint:
    """SwiGLU vs ReLU at one model width: Δ% = 100·(swiglu − relu)/relu, paired by seed, each
    arm at its own lr tuned at that width."""

    d_model: int
    params: int  # the relu model's parameter count
    rel_delta_pct: Interval
    lrs: dict[str, float]


@dataclass(frozen=True)
class FfnSensitivity:
    """Arms re-run under another init and learning rate, on the evaluation seeds, to show how
    much of a difference is due to those choices; deltas vs relu under the same settings."""

    init: str
    lr: float
    val_loss: dict[str, Interval]
    rel_delta_pct: dict[str, Interval]


@dataclass(frozen=True)
class FfnData:
    arms: dict[str, FfnArm]
    seeds: int
    steps: int
    init: str
    lr_grid: list[float]
    lr_trials: list[LrTrial]
    lr_at_edge: list[str]  # arms whose best lr is the grid's smallest or largest
    sensitivity: FfnSensitivity
    trend: list[FfnTrendPoint]  # ascending width; the suite's own width among them
    # Δ% at the largest width − Δ% at the smallest, paired by seed: negative = SwiGLU's
    # advantage grows with model size.
    trend_change: Interval
    warmup_steps: int
    unigram_entropy: float | None
    baseline: str
    page: dict[str, tuple[float, float]]  # the page's stated gain vs ReLU, % (low, high)
    equal_time_ms: float | None
    size: dict[str, Any]  # the suite size's settings, as configured
    # Per arm tuned at the suite's width: its grid, chosen lr and whether that is interior.
    lr_tuning: list[ArmTuning] = field(default_factory=list)


# --- placement ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class GradientProbe:
    """‖∇W_down‖ at initialisation across depths for one placement and init (geometric means
    over seeds); slopes are least squares of log ‖∇‖ on log depth. Then the residual stream's
    sensitivity and, at the deepest depth, each block's Jacobian
    (`blocklab.experiments.jacobian`)."""

    depths: list[int]
    last_layer_grad: list[float | None]
    first_layer_grad: list[float | None]
    slope_last: float | None
    slope_first: float | None
    slope_last_ci: Interval  # over per-seed slopes
    slope_first_ci: Interval
    residual_rms_last: list[float | None]
    per_layer_grad: dict[str, list[float | None]]  # depth -> per layer, bottom first
    # log2(max / min) of ‖∇W_down‖ over the layers of one stack, per seed, at each depth: how
    # unevenly gradients reach the layers of one model (the final norm's 1/√L scales them all).
    layer_spread_log2: dict[str, Interval]
    # ‖∂L/∂x_l‖·rms(x_l), x_l the stream entering layer l: the loss's sensitivity to a relative
    # change of the stream, which no global rescaling of the stream changes. Depth -> depth + 1
    # values (the layers' inputs bottom first, then the final norm's input), means over seeds.
    per_layer_sensitivity: dict[str, list[float | None]] = field(default_factory=dict)
    # log2(max / min) of it over the layers' inputs of one stack (the final norm's input left
    # out), per seed, at each depth.
    sensitivity_spread_log2: dict[str, Interval] = field(default_factory=dict)
    # Each block's Jacobian J_l at its input, at depth `jacobian_depth` (the deepest probed):
    # ‖J_l − I‖_F/√n (0: the block is the identity) and ‖J_l‖_F/√n, per layer, means over
    # seeds; and their median over the layers of one stack, per seed.
    jacobian_depth: int | None = None
    identity_deviation: list[float | None] = field(default_factory=list)
    jacobian_gain: list[float | None] = field(default_factory=list)
    identity_deviation_median: Interval = Interval(0)
    jacobian_gain_median: Interval = Interval(0)


@dataclass(frozen=True)
class SlopePrediction:
    slope_last: dict[str, float]  # placement -> predicted slope of the last layer's gradient
    init: str
    source: str


@dataclass(frozen=True)
class PlacementCell:
    """One (placement, depth, warmup) arm of the training grid over its seeds, trained at its
    own tuned peak lr."""

    placement: str
    depth: int
    warmup: int
    lr: float  # the arm's own peak lr, tuned on seeds of its own
    failures: int  # diverged + stuck
    runs: int
    status: dict[str, int]
    val_loss: Interval  # finished runs only
    delta_vs_pre: Interval | None  # paired by seed where both finished; None for pre itself
    steps_done: float | None
    val_auc: Interval  # mean validation loss over the run's evaluations (area under the curve)
    # log2(‖∇ first layer‖ / ‖∇ last layer‖) during training: the mean over the logged steps
    # after warmup of each finished run, then over seeds. Negative: the bottom gets less.
    grad_first_over_last_log2: Interval
    # Σ lr over the run's steps (the schedule's area): a warmup arm spends less of it, which
    # confounds "needs warmup" with "had less learning rate"; shown beside the losses.
    lr_area: float | None = None


@dataclass(frozen=True)
class PlacementEffect:
    """A contrast between training arms at one depth, each at its own tuned lr, paired by seed
    (nats, final validation loss): `warmup_interaction` = (post cold − post warm) − (pre cold −
    pre warm); `pre_warmup_effect` = pre cold − pre warm; `post_vs_pre_warm` = post warm − pre
    warm."""

    depth: int
    lrs: dict[str, float]  # "<placement> <cold|warm>" -> that arm's tuned peak lr
    warmup: int
    warmup_interaction: Interval
    pre_warmup_effect: Interval
    post_vs_pre_warm: Interval
    post_grad_first_over_last_log2: Interval  # post with warmup, during training
    pre_grad_first_over_last_log2: Interval  # pre with warmup, during training


@dataclass(frozen=True)
class StabilityArm:
    """The largest stable learning rate of one (placement, depth, warmup) arm: per seed, short
    runs on a doubling ladder of peak lrs, bisected (stability taken as monotone in lr). A run
    is stable when it finishes (no NaN/inf, loss never above 4·ln 256) and ends below the
    unigram entropy of the training bytes (it learned more than byte frequencies)."""

    grid: str  # "main" (C13, C19: the training grid's depth) or "deep" (C36)
    placement: str
    depth: int
    warmup: int
    steps: int
    ladder: list[float]  # the peak lrs, ascending, each twice the last
    # Per seed, the rung (index into `ladder`) of the largest stable lr; −1 when not even the
    # first is stable, len(ladder) − 1 when the top one is (censored: it may be higher).
    rungs: list[int | None]
    # log2(largest stable lr / ladder[0]) over seeds: mean [95% CI], in doublings.
    log2_max_stable: Interval
    max_stable_lr: float | None  # 2 ** mean · ladder[0] (a geometric mean)
    censored_low: int  # seeds where no rung was stable
    censored_high: int  # seeds where the top rung was stable
    # The sweep's runs: per lr tried, the final val loss of each (None: it did not finish).
    loss_at_lr: dict[str, list[float | None]]


@dataclass(frozen=True)
class StabilityEffect:
    """Contrasts of the largest stable lr at one depth, paired by seed, in doublings
    (log2 of a ratio of lrs; +1 = twice as large)."""

    grid: str
    depth: int
    warmup: int  # the warmup compared with none
    pre_cold_vs_warm: Interval  # pre cold − pre warm (0: warmup not needed)
    post_warm_vs_cold: Interval  # post warm − post cold (positive: warmup helps post-norm)
    # (post warm − post cold) − (pre warm − pre cold): positive = post-norm needs warmup more
    warmup_interaction: Interval
    pre_vs_post_warm: Interval  # pre warm − post warm (positive: pre-norm stable at larger lr)
    pre_vs_post_cold: Interval  # pre cold − post cold


@dataclass(frozen=True)
class PlacementData:
    init_gradients: dict[str, dict[str, GradientProbe]]  # placement -> init -> probe
    predictions: SlopePrediction
    training: list[PlacementCell]
    effects: list[PlacementEffect]
    # Warmup interaction at the deepest minus the shallowest depth, paired by seed (highest lr,
    # longest warmup): positive = post-norm's need for warmup grows with depth.
    interaction_trend: Interval
    unigram_entropy: float | None
    seeds: int
    steps: int
    size: dict[str, Any]
    # Each training arm's tuning ("<placement>/<depth>/<warmup>"): the loss-versus-lr curve on
    # the tuning seeds, and where each arm's optimum fell.
    lr_trials: list[LrTrial] = field(default_factory=list)
    lr_tuning: list[ArmTuning] = field(default_factory=list)
    # The largest stable lr per arm, at the training grid's depth ("main") and in the deep
    # stacks of C36 ("deep"), and its contrasts.
    stability: list[StabilityArm] = field(default_factory=list)
    stability_effects: list[StabilityEffect] = field(default_factory=list)


# --- norm-cost ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class KernelTiming:
    impl: str
    d: int
    rows: int
    threads: int
    fwd_ms: float | None
    fwdbwd_ms: float | None
    saved_bytes: int | None
    extra_saved_bytes: int | None
    compile_s: float | None
    error: str | None


@dataclass(frozen=True)
class TimeRatio:
    """median(RMSNorm) / median(LayerNorm) time with a paired bootstrap 95% interval."""

    ratio: float
    ci_low: float
    ci_high: float
    repeats: int


@dataclass(frozen=True)
class KernelRatio:
    d: int
    rows: int
    threads: int
    impl: str
    layernorm_impl: str
    pass_name: str  # "fwd" or "fwdbwd"
    time: TimeRatio


@dataclass(frozen=True)
class CompileTime:
    d: int
    rows: int
    threads: int
    rmsnorm_s: float | None
    layernorm_s: float | None
    error: str | None
    inductor_warmup_s: float | None


@dataclass(frozen=True)
class StepTime:
    threads: int
    model: dict[str, Any]
    params: dict[str, int]
    rmsnorm_ms: float
    layernorm_ms: float
    time: TimeRatio
    path: str  # "blocklab" (the models as built) or "like-for-like" (both by PyTorch's kernels)


@dataclass(frozen=True)
class NormQuality:
    rmsnorm: Interval
    layernorm: Interval
    delta: Interval  # RMS − LN, nats/token, paired by seed
    margin: float
    equivalent: bool
    verdict: str
    seeds: list[int]
    statuses: dict[str, list[str]]
    unigram_entropy: float | None


@dataclass(frozen=True)
class NormCount:
    """Analytic cost of one norm on one row of width d (`norm_cost.count_norm`): FLOPs by
    `budget.flops` conventions, bytes an ideal fused kernel moves (x and y, dy and dx, the
    per-row statistics; the parameters, read once per call, apart in `param_bytes`)."""

    norm: str  # "rmsnorm" or "layernorm"
    d: int
    element_bytes: int  # 4: float32, 2: bf16
    fwd_flops: int
    fwdbwd_flops: int
    fwd_bytes: int  # training forward: read x, write y and the statistics
    fwdbwd_bytes: int
    param_bytes: int  # per call, forward+backward: read γ (β), write their gradients


@dataclass(frozen=True)
class StepShare:
    """The norms' FLOPs within one training step (`norm_cost.step_share`): matmuls 3× the
    forward (`budget.flops.prefill_flops`), plus every norm forward+backward; other
    elementwise work left out, so `saving_pct` is an upper bound."""

    model: str
    d_model: int
    n_layers: int
    batch: int
    seq_len: int
    norm_calls: int  # norms a token passes through (2 per layer + the final one)
    matmul_flops: int
    norm_flops: dict[str, int]  # norm -> the norms' FLOPs in the step
    step_flops: dict[str, int]  # norm -> the whole step's FLOPs
    saving_pct: float  # 100·(1 − step rmsnorm / step layernorm)


@dataclass(frozen=True)
class NormCompute:
    """C18's analytic part: what "compute" RMSNorm saves, per row and per training step."""

    counts: list[NormCount]
    flops_saving_pct: float  # 100·(1 − RMSNorm / LayerNorm), forward+backward, any d
    fwd_flops_saving_pct: float
    bytes_saving_pct: dict[str, float]  # "d=<d>/<element_bytes>B" -> per-row fwd+bwd saving
    steps: list[StepShare]


@dataclass(frozen=True)
class FusedTiming:
    """RMSNorm against LayerNorm timed with equally fused kernels (`norm_cost.
    time_like_for_like`): both PyTorch's own fused kernels when both are, else both through
    torch.compile (one generated kernel per pass each). Reported, not graded."""

    d: int
    rows: int
    threads: int
    method: str  # "torch-fused" or "torch.compile"
    kernels: dict[str, str]  # norm -> what ran
    torch_fused: dict[str, bool]  # norm -> does PyTorch's functional norm run fused here
    rmsnorm_ms: dict[str, float | None]  # "fwd" / "fwdbwd" -> median ms per call
    layernorm_ms: dict[str, float | None]
    ratios: dict[str, TimeRatio]  # "fwd" / "fwdbwd" -> RMSNorm / LayerNorm time
    compile_s: dict[str, float | None]
    error: str | None


@dataclass(frozen=True)
class NormCostData:
    kernels: list[KernelTiming]
    ratios: list[KernelRatio]
    compile: list[CompileTime]
    step_time: dict[str, StepTime]  # "<path>/<threads>" -> step timing
    quality: NormQuality
    compute: NormCompute | None = None  # the analytic counts that decide "compute" (C18)
    like_for_like: list[FusedTiming] = field(default_factory=list)  # one per thread count


# --- position ----------------------------------------------------------------------------------
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
    train_vs_none: TimeRatio  # median(scheme) / median(none), paired bootstrap 95% CI
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
    prefill_vs_none: dict[str, TimeRatio]  # median(scheme) / median(none), paired bootstrap
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


# --- quantize ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class QuantTiming:
    """One int8 scheme's prefill and decode time against nothing quantized (speed-up = time of
    the float model / time of this scheme, per repeat; > 1 faster), with the bound it cannot
    beat and an Amdahl estimate (`blocklab.experiments.int8_measurements` derives both)."""

    scheme: str  # "none", or "<part>/<mode>": ffn|attention|all / weight-only|dynamic
    part: str
    mode: str
    compiled: bool
    prefill_ms: dict[str, float]  # seq_len -> median ms
    prefill_speedup: dict[str, Interval]  # seq_len -> mean and 95% CI over repeats
    decode_ms: float
    decode_speedup: Interval
    logits_error: float | None  # ‖ŷ − y‖ / ‖y‖ of the prefill logits (random weights)
    flop_share: dict[str, float]  # seq_len -> FLOP share of the quantized layers (not time)
    time_share: dict[str, float | None]  # seq_len -> f, their share of the float prefill's time
    gemm_speedup: dict[str, float | None]  # seq_len -> k of the part's own GEMMs (eager)
    prefill_estimate: dict[str, float | None]  # seq_len -> Amdahl 1 / (1 − f + f/k)
    prefill_bound: dict[str, float | None]  # seq_len -> 1 / (1 − f): the layers made free
    decode_time_share: float | None  # f of a decode step
    decode_estimate: float | None  # 1 / (1 − f + f/S), S = the layers' bytes, float / int8
    decode_bound: float | None  # 1 / (1 − f) of a decode step
    compile_s: float | None


@dataclass(frozen=True)
class QuantQuality:
    """A trained model's validation loss under one scheme (torchao, eager), over seeds."""

    scheme: str
    val_loss: Interval
    delta: Interval  # scheme − float, nats/token, paired by seed
    logits_error: Interval


@dataclass(frozen=True)
class SwigluQuant:
    """C33: one way of quantizing SwiGLU's gate, up and down, over seeds."""

    scheme: str  # a key of blocklab.nn.int8.SWIGLU_SCHEMES
    ffn_error: Interval  # ‖FFN_q(x) − FFN(x)‖ / ‖FFN(x)‖ on the model's own FFN inputs
    logits_error: Interval
    delta: Interval  # val loss − float, nats/token
    error_vs_separate_pct: Interval  # 100·(ffn_error / same-granularity separate − 1), paired


@dataclass(frozen=True)
class QuantizeData:
    model: dict[str, Any]  # the timed (random-weight) ModelConfig
    seq_lens: list[int]
    decode_context: int
    repeats: int
    threads: int
    cpu_flags: dict[str, bool]  # avx2, avx512f, avx512_vnni, avx_vnni, amx_tile, amx_int8
    timings: list[QuantTiming]
    quality_model: dict[str, Any]  # the trained ModelConfig
    quality: list[QuantQuality]
    swiglu: list[SwigluQuant]
    # max |merged − separate| over every dequantized weight of the trained models
    merged_per_row_max_diff: float
    merged_per_tensor_max_diff: float
    # per-tensor merged scale / max(gate scale, up scale), every layer and seed (1.0: the max)
    merged_scale_over_max: list[float]
    # max / min of gate's and up's per-tensor int8 scales, every layer of every seed: merged under
    # one per-tensor scale, the matrix with the smaller scale is quantized on a grid this many
    # times coarser (1.0: equal scales, and merging costs nothing)
    gate_up_scale_ratio: list[float] = field(default_factory=list)
    # val loss with gate|up merged under one per-tensor scale − each at its own, nats/token,
    # paired by seed
    merged_tensor_loss_penalty: Interval = Interval(0)


SuiteData = FfnData | PlacementData | NormCostData | PositionData | QuantizeData
# suite name -> the dataclass of its summary's `data`
DATA_TYPES: dict[str, type] = {"ffn": FfnData, "placement": PlacementData,
                               "norm-cost": NormCostData, "position": PositionData,
                               "quantize": QuantizeData}


@dataclass(frozen=True)
class SeedBlock:
    """Seeds start … stop − 1 run for some arms only, beyond the suite's planned seeds: a block
    the sequential design added for the parts (`parts`, "C16 geglu") still undecided at a
    look."""

    start: int
    stop: int
    arms: list[str]
    parts: list[str]


@dataclass(frozen=True)
class Summary:
    """A suite's summary: tables and notes to show, typed `data` for the ledger and figures.

    seed_blocks: the seeds the sequential design added to some arms (their runs are in
        `run_ids`; `seeds` counts every seed any arm ran)
    planned_rules: {"<claim> <part>": rule hash} of the registered rules when the suite's runs
        were first planned, so a reader can tell a part graded under another rule than its
        data was planned under"""

    suite: str
    size: str
    seeds: int
    tables: list[Table]
    notes: list[str] = field(default_factory=list)
    data: Any = None  # the suite's entry of DATA_TYPES
    runs: int = 0
    wall_time_s: float = 0.0
    run_ids: list[str] = field(default_factory=list)  # the stored results it summarises
    first_seed: int = 0  # seeds first_seed … first_seed + seeds − 1 (`--seed-offset`)
    seed_blocks: list[SeedBlock] = field(default_factory=list)
    planned_rules: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"schema": SUMMARY_SCHEMA, **dataclasses.asdict(self)}


# --- reading -----------------------------------------------------------------------------------
def decode(kind: Any, value: Any, where: str = "") -> Any:
    """`value` (parsed JSON) as an instance of the annotation `kind`, checked all the way down.

    Dataclasses need exactly their fields as keys; unions take the first member that fits;
    floats accept ints, and JSON's null for float stands for a non-finite number only where the
    annotation allows None. Raises ResultsError naming the path (`where`) of the first mismatch.
    """
    origin = typing.get_origin(kind)
    if kind is Any:
        return value
    if dataclasses.is_dataclass(kind):
        if not isinstance(value, dict):
            raise _mismatch(where, kind.__name__, value)
        hints = typing.get_type_hints(kind)
        names = [f.name for f in dataclasses.fields(kind)]
        extra = sorted(set(value) - set(names))
        missing = [n for n in names if n not in value]
        if extra or missing:
            raise ResultsError(f"{where or kind.__name__}: {kind.__name__} fields differ "
                               f"(missing {missing}, unknown {extra})")
        return kind(**{n: decode(hints[n], value[n], f"{where}.{n}" if where else n)
                       for n in names})
    if origin in (Union, types.UnionType):
        members = typing.get_args(kind)
        if value is None:
            if type(None) in members:
                return None
            raise _mismatch(where, _name(kind), value)
        errors = []
        for member in members:
            if member is type(None):
                continue
            try:
                return decode(member, value, where)
            except ResultsError as err:
                errors.append(str(err))
        raise _mismatch(where, _name(kind), value)
    if origin is list:
        if not isinstance(value, list):
            raise _mismatch(where, _name(kind), value)
        (item,) = typing.get_args(kind)
        return [decode(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is tuple:
        args = typing.get_args(kind)
        if not isinstance(value, list | tuple) or (args[-1] is not Ellipsis
                                                   and len(args) != len(value)):
            raise _mismatch(where, _name(kind), value)
        items = [args[0]] * len(value) if args[-1] is Ellipsis else list(args)
        return tuple(decode(t, v, f"{where}[{i}]") for i, (t, v) in enumerate(zip(items, value,
                                                                                    strict=True)))
    if origin is dict:
        key, item = typing.get_args(kind)
        if not isinstance(value, dict) or key is not str:
            raise _mismatch(where, _name(kind), value)
        return {k: decode(item, v, f"{where}.{k}") for k, v in value.items()}
    if kind is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise _mismatch(where, "float", value)
    if kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise _mismatch(where, "int", value)
    if kind in (str, bool):
        if isinstance(value, kind):
            return value
        raise _mismatch(where, kind.__name__, value)
    raise TypeError(f"decode: annotation {kind!r} at {where} is not supported")  # a bug here


def _name(kind: Any) -> str:
    return getattr(kind, "__name__", None) or str(kind).replace("typing.", "")


def _mismatch(where: str, expected: str, value: Any) -> ResultsError:
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return ResultsError(f"{where or 'value'}: expected {expected}, found {shown}")


def summary_from_dict(doc: Any, where: str = "summary", data_type: type | None = None
                      ) -> Summary:
    """A Summary from its JSON form (`Summary.to_dict`), its data decoded as `data_type`
    (default: the suite's entry of DATA_TYPES); ResultsError on another schema, an unknown
    suite or any field that does not match."""
    if not isinstance(doc, dict):
        raise _mismatch(where, "a summary object", doc)
    found = doc.get("schema")
    if found != SUMMARY_SCHEMA:
        raise ResultsError(f"{where} has summary schema {found!r}; this blocklab reads schema "
                           f"{SUMMARY_SCHEMA}")
    suite = doc.get("suite")
    if data_type is None:
        if suite not in DATA_TYPES:
            raise ResultsError(f"{where}: unknown suite {suite!r}; expected one of "
                               f"{list(DATA_TYPES)}")
        data_type = DATA_TYPES[suite]
    body = {k: v for k, v in doc.items() if k not in ("schema", "data")}
    summary = decode(Summary, {**body, "data": None}, where)
    return dataclasses.replace(summary, data=decode(data_type, doc.get("data"),
                                                    f"{where}.data"))



# Said once wherever tiny results are shown (a suite's printed summary, the claims ledger, the
# report): tiny trains a few steps, so its tables are mostly "—" and grade nothing.
TINY_NOTE = ("size tiny is a smoke test of the machinery (a few training steps): its numbers "
             "decide nothing; run --quick or --full for evidence")
TINY_NOTE_ZH = ("tiny 规模只是对流程的冒烟测试（只训练几步）：其数字不能说明任何结论；"
                "证据请用 --quick 或 --full")


def size_note(size: str, lang: str = "en") -> str | None:
    """The one line to show beside results of `size` (TINY_NOTE for tiny), else None."""
    if size != "tiny":
        return None
    return TINY_NOTE_ZH if lang == "zh" else TINY_NOTE


def _check_key(suite: Any, size: Any, precision: Any, data_type: type | None) -> None:
    """InputError unless (suite, size, precision) names a summary that can exist: a known
    suite (any plain name with an explicit `data_type`), a size of SIZES, a precision of
    PRECISIONS."""
    if data_type is None:
        if not isinstance(suite, str) or suite not in DATA_TYPES:
            raise InputError(f"suite {suite!r} is not allowed; expected one of "
                             f"{list(DATA_TYPES)}")
    elif (not isinstance(suite, str) or not suite or suite.startswith(".")
          or any(c in suite for c in "/\\")):
        raise InputError(f"suite {suite!r} is not allowed; expected a plain folder name")
    if not isinstance(size, str) or size not in SIZES:
        raise InputError(f"size {size!r} is not allowed; expected one of {list(SIZES)}")
    if not isinstance(precision, str) or precision not in PRECISIONS:
        raise InputError(f"precision {precision!r} is not allowed; expected one of "
                         f"{list(PRECISIONS)}")


def load_summary(out_dir: str | Path, suite: str, size: str, data_type: type | None = None,
                 *, seed_offset: int = 0, precision: str = "fp32",
                 longer: bool = False) -> Summary | None:
    """The stored summary of `suite` at `size` (seeds from `seed_offset`, trained in
    `precision`) under `out_dir`, typed (its data as `data_type`, default the suite's entry of
    DATA_TYPES); None when that valid suite, size and precision has not been run.

    Raises InputError for a suite (unknown without `data_type`), size, precision or seed offset
    that no summary can have, and ResultsError, naming the file, the field and the command
    that rewrites it, for a summary that does not parse, was written under another
    `SUMMARY_SCHEMA`, or whose fields do not match this blocklab's: readers never guess at a
    layout they do not know. Whether the runs it lists are still stored is `incomplete`'s
    question.
    """
    _check_key(suite, size, precision, data_type)
    path = (Path(out_dir) / suite / size_folder(size, seed_offset, precision, longer)
            / "summary.json")
    if not path.exists():
        return None
    rerun = (f"run `{suite_command(suite, size, out_dir, seed_offset, precision)}` to "
             "rewrite it (stored runs whose provenance matches are reused)")
    try:  # strict JSON: a NaN, an Infinity or a key given twice is a damaged summary
        doc = read_json(path, error=ResultsError)
    except ResultsError as err:
        raise ResultsError(f"{err}; {rerun}") from None
    try:
        summary = summary_from_dict(doc, str(path), data_type)
    except ResultsError as err:
        raise ResultsError(f"{err}; {rerun}") from None
    if (summary.suite, summary.size, summary.first_seed) != (suite, size, seed_offset):
        raise ResultsError(f"{path} holds suite {summary.suite!r} at size {summary.size!r} "
                           f"from seed {summary.first_seed}, not {suite!r} at {size!r} from "
                           f"seed {seed_offset}; {rerun}")
    return summary


def stored_keys(out_dir: str | Path, suite: str | None = None
                ) -> list[tuple[str, str, int, str]]:
    """(suite, size, seed offset, precision) of every summary stored under `out_dir` (of
    `suite` alone, if given), sorted: what `load_summary` can read there, so a reader that
    finds none at the size it was asked for can say which sizes the folder does hold. Read
    from the folder names `size_folder` gives; the runs trained twice as long (`+x2`) and the
    tuning runs are parts of a summary, not summaries, and folders that cannot be listed hold
    nothing readable."""
    root = Path(out_dir)
    try:
        suites = [root / suite] if suite is not None else [p for p in root.iterdir()
                                                             if p.is_dir()]
        folders = [f for d in suites if d.is_dir() for f in d.iterdir()]
    except OSError:
        return []
    keys = []
    for folder in folders:
        size, *rest = folder.name.split("+")
        offsets = [r.removeprefix("seeds") for r in rest if r.startswith("seeds")]
        precision = next((r for r in rest if r in PRECISIONS), "fp32")
        if (size not in SIZES or len(offsets) > 1 or not all(o.isdigit() for o in offsets)
                or not (folder / "summary.json").is_file()):
            continue
        offset = int(offsets[0]) if offsets else 0
        try:  # the one rule of folder names decides: quick+seeds07 or quick+x2 is no key
            if size_folder(size, offset, precision) != folder.name:
                continue
        except InputError:  # a seed offset out of range
            continue
        keys.append((folder.parent.name, size, offset, precision))
    return sorted(keys, key=lambda k: (k[0], SIZES.index(k[1]), k[2], k[3]))


def save_summary(folder: str | Path, summary: Summary) -> Path:
    """Write `summary` to `folder`/summary.json, atomically, as `load_summary` reads it back.

    A summary whose fields do not read back is not written: that is a bug in the suite that
    filled it (a RuntimeError naming the field), not a results error for the user."""
    from blocklab.jsonio import write_atomic

    text = json.dumps(json_safe(summary.to_dict()), indent=1, allow_nan=False) + "\n"
    try:
        summary_from_dict(parse_json(text, f"summary of {summary.suite}", ResultsError),
                          f"summary of {summary.suite}", type(summary.data))
    except ResultsError as err:
        raise RuntimeError(f"suite {summary.suite} wrote a summary that does not read back: "
                           f"{err}") from err
    path = Path(folder) / "summary.json"
    write_atomic(path, text)
    return path


def incomplete(out_dir: str | Path, summary: Summary, precision: str = "fp32") -> str | None:
    """Why the stored `summary` under `out_dir` cannot be used, or None when it can: every run
    it lists (`run_ids`) must still have a complete result beside it (a file that parses and
    has a status). One rule for every reader (the claims ledger grades such a suite as
    missing-results, the report shows it as failed), so none grades from a summary whose
    evidence is gone; the message names the command that redoes the runs and rewrites it."""
    from blocklab.experiments.results import ResultStore

    folder = (Path(out_dir) / summary.suite
              / size_folder(summary.size, summary.first_seed, precision))
    store = ResultStore(folder)
    try:
        gone = [store.path_for(run_id) for run_id in summary.run_ids if not store.has(run_id)]
    except InputError as err:  # a run id that is not a file name: the summary is malformed
        raise ResultsError(f"{folder / 'summary.json'}: {err}") from None
    if not gone:
        return None
    command = suite_command(summary.suite, summary.size, out_dir, summary.first_seed, precision)
    first = gone[0].name
    if gone[0] in store.damaged:  # say what is wrong ("final.val_loss: NaN is not strict …")
        first += f", damaged: {store.damaged[gone[0]].removeprefix(f'{gone[0]}: ')}"
    return (f"{folder / 'summary.json'}: a run of the stored summary is missing or unreadable "
            f"({len(gone)} of {len(summary.run_ids)}, first {first}); run `{command}` "
            "to redo it and rewrite the summary")
