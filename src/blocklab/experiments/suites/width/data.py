"""What the width suite's summary holds (`Summary.data`, the suite's `data_type`): `WidthData`.
Frozen dataclasses that `blocklab.experiments.summaries.decode` reads back field by field. No
PyTorch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from blocklab.experiments.summaries import ArmTuning, Interval, LrTrial


@dataclass(frozen=True)
class WidthPoint:
    """One prefix width k: what a model read at k costs (`blocklab.budget`, exact: a slice is a
    model of width k) and each arm's validation loss there, over its seeds (arms whose model
    has no width k are absent)."""

    width: int
    params: int  # the whole model's parameters at width k
    ffn_params: int  # the FFN matrices' parameters, all layers: 3 · d · k · layers
    flops_per_token: int  # forward FLOPs per token of a prefill at the suite's seq_len
    loss: dict[str, Interval]  # arm -> val loss (nats/token)


@dataclass(frozen=True)
class WidthData:
    widths: list[int]  # m, m/2, m/4
    narrow: int  # the width the narrow arm trains at (m/2)
    points: list[WidthPoint]  # one per width, widest first
    # 100·(ordinary sliced to k − nested at k)/(nested at k), paired by seed; per str(k) of the
    # widths below m (positive = slicing is worse)
    sliced_vs_nested_pct: dict[str, Interval]
    # 100·(nested at m − ordinary at m)/(ordinary at m): the price of nested training
    nested_price_pct: Interval
    # 100·(nested at m/2 − narrow)/(narrow): how close nesting comes to training at m/2 alone
    nested_vs_narrow_pct: Interval
    seeds: int
    steps: int
    lr: float  # every arm's, tuned on the ordinary arm
    status: dict[str, dict[str, int]]  # arm -> runs by status
    scheme: str  # how the nested arm is trained, in words
    size: dict[str, Any]
    lr_trials: list[LrTrial] = field(default_factory=list)
    lr_tuning: list[ArmTuning] = field(default_factory=list)
