"""The `ffn` suite's statistics: results sorted by kind, then per arm its quality and deltas vs
relu paired by seed, the loss at equal wall-clock, the sensitivity re-runs and the scale
trend."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from blocklab.config import FFNS
from blocklab.experiments.options import RunOptions
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.base import Results, mean_ci, paired_difference
from blocklab.experiments.suites.ffn.configs import ffn_width, param_count
from blocklab.experiments.suites.ffn.data import FfnArm, FfnSensitivity, FfnTrendPoint
from blocklab.experiments.suites.ffn.planning import choose_lrs
from blocklab.experiments.suites.ffn.records import StepTiming, ZeroGradFraction
from blocklab.experiments.suites.ffn.sizes import BASELINE, TREND_ARMS, Size
from blocklab.experiments.suites.tuning import counted_loss, trains
from blocklab.experiments.summaries import Interval, LrTrial


def interpolate(xs: Sequence[float], ys: Sequence[float | None], x: float) -> float | None:
    """The piecewise-linear curve through (xs, ys) at x (xs ascending); None outside
    [xs[0], xs[-1]] or when a bracketing y is missing."""
    for i, (xi, yi) in enumerate(zip(xs, ys, strict=True)):
        if abs(x - xi) <= 1e-9:
            return yi
        if i and xs[i - 1] < x < xi:
            y0 = ys[i - 1]
            if y0 is None or yi is None:
                return None
            return y0 + (x - xs[i - 1]) / (xi - xs[i - 1]) * (yi - y0)
    return None


@dataclass
class FfnRuns:
    """The suite's results by kind: per arm one slot per evaluation seed (None where no result
    is stored) for the training runs, the sensitivity re-runs and, per (d_model, arm), the
    scale-trend runs; the tuning runs; the timing run's record (None without one)."""

    train: dict[str, list[RunResult | None]]
    sensitivity: dict[str, list[RunResult | None]]
    trend: dict[tuple[int, str], list[RunResult | None]]
    tuned: Results
    timing: StepTiming | None


def sort_runs(size: Size, seeds: range, results: Results) -> FfnRuns:
    """`results` sorted by the kind their payload names (the timing run's record decoded)."""
    runs = FfnRuns(train={arm: [None] * len(seeds) for arm in size.arms},
                   sensitivity={arm: [None] * len(seeds) for arm in size.sensitivity_arms},
                   trend={}, tuned=[], timing=None)
    for spec, result in results:
        kind = spec.payload["kind"]
        if kind == "timing":
            runs.timing = StepTiming.of(result, f"ffn run {spec.label!r}")
        elif kind == "tune":
            runs.tuned.append((spec, result))
        elif kind == "sensitivity":
            runs.sensitivity[spec.arm][seeds.index(spec.seed)] = result
        elif kind == "trend":
            d = spec.payload["model"]["d_model"]
            runs.trend.setdefault((d, spec.arm), [None] * len(seeds))[seeds.index(spec.seed)] \
                = result
        else:
            runs.train[spec.arm][seeds.index(spec.seed)] = result
    return runs


def _loss(result: RunResult | None) -> float | None:
    """The final val loss of a run that counts (`tuning.trains`); None otherwise or missing."""
    return None if result is None else counted_loss(result)


def _rel_pct(vals: list[float | None], base: list[float | None]) -> list[float | None]:
    """Per seed 100·(val − base)/base, None where either is missing."""
    return [100 * (a - b) / b if a is not None and b is not None else None
            for a, b in zip(vals, base, strict=True)]


def unigram_entropy(runs: FfnRuns) -> float | None:
    """The unigram entropy of the training bytes, from the first training run that has it."""
    entropies = [r.final.unigram_entropy for rs in runs.train.values() for r in rs
                 if r is not None and r.final is not None]
    return entropies[0] if entropies else None


def arm_stats(size: Size, runs: FfnRuns, lrs: dict[str, float]) -> dict[str, FfnArm]:
    """Each arm of the size over its seeds: quality, deltas vs relu paired by seed, timings,
    the loss at equal wall-clock, run statuses and zero-gradient fractions."""
    timed = runs.timing.ms_per_step if runs.timing is not None else {}
    fastest = min(timed.values()) if timed else None

    def equal_time_step(arm: str) -> float | None:
        return size.steps * fastest / timed[arm] if arm in timed and fastest is not None else None

    def equal_time(arm: str, result: RunResult | None) -> float | None:
        """The run's validation loss at T*, read off its curve (`interpolate`)."""
        step = equal_time_step(arm)
        if result is None or not trains(result) or step is None or result.curves is None:
            return None
        curves = result.curves
        return interpolate(curves.val_step, curves.val[str(size.seq_len)], step)

    base_vals = [_loss(r) for r in runs.train[BASELINE]]
    base_equal = [equal_time(BASELINE, r) for r in runs.train[BASELINE]]
    arms: dict[str, FfnArm] = {}
    for arm in size.arms:
        results = runs.train[arm]
        vals = [_loss(r) for r in results]
        status: dict[str, int] = {}
        for r in results:
            name = "missing" if r is None else r.status
            status[name] = status.get(name, 0) + 1
        train_ms = [r.ms_per_step for r in results if r is not None and r.ms_per_step]
        probes = [probe for r in results if r is not None
                  and (probe := ZeroGradFraction.of(r, f"ffn {arm} run {r.run_id}")) is not None]
        equal = [equal_time(arm, r) for r in results]
        arms[arm] = FfnArm(
            gated=FFNS[arm][0],
            activation=FFNS[arm][1],
            d_ff=ffn_width(arm, size.d_model),
            params=param_count(arm, size),
            val_loss=mean_ci(vals),
            val_bpb=mean_ci([r.final.val_bpb if r is not None and r.final is not None
                             and trains(r) else None for r in results]),
            delta_vs_relu=paired_difference(vals, base_vals),
            rel_delta_pct=mean_ci(_rel_pct(vals, base_vals)),
            ms_per_step=timed.get(arm),
            ms_per_step_train=sum(train_ms) / len(train_ms) if train_ms else None,
            val_loss_equal_time=mean_ci(equal),
            delta_vs_relu_equal_time=paired_difference(equal, base_equal),
            equal_time_step=equal_time_step(arm),
            status=status,
            counted=sum(v is not None for v in vals),
            zero_grad_fraction={"init": mean_ci([p.init for p in probes]).mean,
                                "final": mean_ci([p.final for p in probes]).mean},
            lr=lrs[arm],
        )
    return arms


def sensitivity_stats(size: Size, runs: FfnRuns) -> FfnSensitivity:
    """The sensitivity arms under the earlier settings, each against relu under them."""
    vals = {arm: [_loss(r) for r in results] for arm, results in runs.sensitivity.items()}
    return FfnSensitivity(
        init=size.sensitivity_init, lr=size.sensitivity_lr,
        val_loss={arm: mean_ci(v) for arm, v in vals.items()},
        rel_delta_pct={arm: mean_ci(_rel_pct(v, vals[BASELINE])) for arm, v in vals.items()})


def scale_trend(size: Size, seeds: range, trials: list[LrTrial], arms: dict[str, FfnArm],
                runs: FfnRuns) -> tuple[list[FfnTrendPoint], Interval]:
    """The scale-trend points in ascending width (swiglu vs relu, Δ% paired by seed), and the
    change of that Δ% from the smallest width to the largest, paired by seed."""
    points, per_seed = [], []
    for d in sorted({size.d_model, *size.trend_widths}):
        if d == size.d_model:
            width_runs = {arm: runs.train[arm] for arm in TREND_ARMS}
            lrs = {arm: arms[arm].lr for arm in TREND_ARMS}
        else:
            width_runs = {arm: runs.trend.get((d, arm), [None] * len(seeds))
                          for arm in TREND_ARMS}
            lrs = choose_lrs(size, trials, d, TREND_ARMS)
        rel = _rel_pct([_loss(r) for r in width_runs["swiglu"]],
                       [_loss(r) for r in width_runs["relu"]])
        per_seed.append(rel)
        points.append(FfnTrendPoint(d_model=d, params=param_count("relu", size, d),
                                    rel_delta_pct=mean_ci(rel), lrs=lrs))
    change = paired_difference(per_seed[-1], per_seed[0]) if len(per_seed) > 1 else Interval(0)
    return points, change


def size_record(size: Size, options: RunOptions) -> dict[str, Any]:
    """The size's settings as the summary records them (`FfnData.size`), with the precision
    its models trained in after `trend_widths`, where summaries have always held it."""
    record: dict[str, Any] = {}
    for name, value in asdict(size).items():
        record[name] = value
        if name == "trend_widths":
            record["precision"] = options.precision
    return record
