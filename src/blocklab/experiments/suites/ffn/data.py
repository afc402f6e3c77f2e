"""What the ffn suite's summary holds (`Summary.data`, the suite's `data_type`): `FfnData`.

Per arm (`FfnArm`) its losses, deltas vs ReLU, timings and run statuses; the arms re-run under
another init and learning rate (`FfnSensitivity`) and SwiGLU vs ReLU across widths
(`FfnTrendPoint`). Frozen dataclasses that `blocklab.experiments.summaries.decode` reads back
field by field, so a renamed or missing field fails naming it. No PyTorch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from blocklab.experiments.summaries import ArmTuning, Interval, LrTrial


@dataclass(frozen=True)
class FfnArm:
    """One FFN arm over its seeds. Deltas are arm − relu, paired by seed; `status` counts runs
    by status (ok, diverged, stuck, did_not_learn); quality uses only the `counted` runs."""

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
