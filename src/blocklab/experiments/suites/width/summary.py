"""The `width` suite's summary (`WidthData`): each arm's loss at each width, the contrasts C37
grades (paired by seed), each width's parameters and FLOPs. No PyTorch."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from blocklab.experiments.options import RunOptions
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.base import (
    Results,
    format_ci,
    format_level,
    mean_ci,
    relative_pct,
    statuses,
)
from blocklab.experiments.suites.tuning import lr_trials, tuning_table
from blocklab.experiments.suites.width.runs import ARMS, DATA, SIZES, Size, model_config, tuning
from blocklab.experiments.summaries import ArmTuning, Interval, LrTrial, Summary, Table


@dataclass(frozen=True)
class WidthPoint:
    """One prefix width k: what a model of width k costs and each arm's val loss there."""

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


SCHEME = ("each step's loss is the mean of the next-token losses at m, m/2 and m/4 on the same "
          "batch (every FFN sliced to its first k channels: gate, up and down together), so "
          "every width is trained on every token; summed rather than sampled, so no width "
          "misses a step")


def _loss_at(result: RunResult | None, width: int) -> float | None:
    if result is None or result.status != "ok":
        return None
    value = (result.extra.get("width_loss") or {}).get(str(width))
    return value if isinstance(value, int | float) and math.isfinite(value) else None


def width_cost(size: Size, width: int) -> tuple[int, int, int]:
    """(params, FFN params, forward FLOPs per token at seq_len) at `width` (`blocklab.budget`)."""
    from blocklab.budget.flops import prefill_flops
    from blocklab.budget.params import count_params

    config = model_config("ordinary", size, d_ff=width)
    flops = prefill_flops(config, 1, size.seq_len).total
    return (count_params(config).total, 3 * size.d_model * width * size.n_layers,
            round(flops / size.seq_len))


def summarise(options: RunOptions, results: Results) -> Summary:
    size, seeds = SIZES[options.size], options.seeds
    runs: dict[str, list[RunResult | None]] = {arm: [None] * len(seeds) for arm in ARMS}
    tuned: Results = []
    for spec, result in results:
        if spec.payload["kind"] == "tune":
            tuned.append((spec, result))
        elif spec.seed in seeds:
            runs[spec.arm][spec.seed - seeds.start] = result
    trials = lr_trials(tuned)
    tuned_arm = tuning(size, trials)
    loss = {arm: {k: [_loss_at(r, k) for r in runs[arm]] for k in size.widths
                  if k <= size.width_of(arm)} for arm in ARMS}
    points = []
    for k in size.widths:
        params, ffn_params, flops = width_cost(size, k)
        points.append(WidthPoint(k, params, ffn_params, flops,
                                 {arm: mean_ci(loss[arm][k]) for arm in ARMS if k in loss[arm]}))
    m, narrow = size.d_ff, size.narrow
    data = WidthData(
        widths=list(size.widths), narrow=narrow, points=points,
        sliced_vs_nested_pct={
            str(k): mean_ci(relative_pct(loss["ordinary"][k], loss["nested"][k]))
            for k in size.widths if k < m},
        nested_price_pct=mean_ci(relative_pct(loss["nested"][m], loss["ordinary"][m])),
        nested_vs_narrow_pct=mean_ci(relative_pct(loss["nested"][narrow],
                                                  loss["narrow"][narrow])),
        seeds=len(seeds), steps=size.steps, lr=tuned_arm.lr,
        status={arm: statuses(runs[arm]) for arm in ARMS}, scheme=SCHEME,
        size={k: v for k, v in asdict(size).items() if k != "lr_grid"}
        | {"precision": options.precision},
        lr_trials=trials, lr_tuning=[tuned_arm])
    return Summary("width", options.size, len(seeds), tables(size, data),
                   notes(size, data), data, first_seed=seeds.start)


def tables(size: Size, data: WidthData) -> list[Table]:
    m = size.d_ff
    by_width = Table(
        "Validation loss at each FFN width, with what that width costs",
        ["width k", "params", "FFN params", "FLOPs/token (fwd)",
         "(a) ordinary, sliced [95% CI]", "(b) nested [95% CI]", "(c) trained at m/2 alone"],
        [[f"{p.width}" + (" (m)" if p.width == m else f" (m/{m // p.width})"), p.params,
          p.ffn_params, p.flops_per_token,
          *(format_level(p.loss[arm], 4) if arm in p.loss else "—" for arm in ARMS)]
         for p in data.points],
        f"d_model={size.d_model}, {size.n_layers} layer(s), SwiGLU, m = {m}, {size.steps} "
        f"steps, every arm at lr {data.lr:g} (tuned on the ordinary arm); nested training: "
        f"{data.scheme}. (c) is read at m/4 by slicing it. Parameters and FLOPs by "
        "blocklab.budget for a model of width k.")
    contrasts = Table(
        "The contrasts C37 grades (paired by seed, % of the second loss)",
        ["contrast", "Δ% [95% CI]", "n"],
        [*([f"(a) sliced − (b) nested at k = {k}", format_ci(iv, 2), iv.n]
           for k, iv in data.sliced_vs_nested_pct.items()),
         ["(b) nested − (a) ordinary at m", format_ci(data.nested_price_pct, 2),
          data.nested_price_pct.n],
         ["(b) nested at m/2 − (c) trained at m/2", format_ci(data.nested_vs_narrow_pct, 2),
          data.nested_vs_narrow_pct.n]],
        "Positive = the first is worse (higher loss).")
    tuned = tuning_table(data.lr_tuning, data.lr_trials, size.lr_grid,
                         f"{size.tuning_seeds} tuning seed(s), never an evaluation seed")
    return [by_width, contrasts, tuned]


def notes(size: Size, data: WidthData) -> list[str]:
    bad = {arm: {k: v for k, v in s.items() if k not in ("ok", "missing")}
           for arm, s in data.status.items()}
    failed = "; ".join(f"{arm}: {s}" for arm, s in bad.items() if s)
    return [f"Runs on the {DATA} corpus; a run that diverged, got stuck or did not learn is "
            f"left out of the pairs" + (f" ({failed})." if failed else " (none did).")]
