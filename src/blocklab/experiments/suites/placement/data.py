"""What the placement suite's summary holds (`Summary.data`, the suite's `data_type`):
`PlacementData`.

Gradients at initialisation across depth (`GradientProbe`, `SlopePrediction`), the training grid
(`PlacementCell`, `PlacementEffect`) and the largest stable learning rates (`StabilityArm`,
`StabilityEffect`). Frozen dataclasses that `blocklab.experiments.summaries.decode` reads back
field by field, so a renamed or missing field fails naming it. No PyTorch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from blocklab.experiments.summaries import ArmTuning, Interval, LrTrial


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
    # The same over the inputs of layers 1 … L−1: layer 0's input is the embedding stream
    # (RMS 0.02 under most inits), whose scale, not depth, sets its sensitivity (C12 reads it).
    sensitivity_spread_past_embedding_log2: dict[str, Interval] = field(default_factory=dict)
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
    is stable when it finishes (no NaN/inf, loss never above 4·ln 256), ends below the
    unigram entropy of the training bytes and, where the size registers a learn margin, learned
    (`TrainConfig.learn_margin`): a rate at which a run only avoids diverging is not stable."""

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
    # Of the seeds where no rung was stable, those whose run at the ladder's first rung did not
    # learn (rather than diverged): the arm learned at no rate on the ladder.
    unlearned_low: int = 0


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
