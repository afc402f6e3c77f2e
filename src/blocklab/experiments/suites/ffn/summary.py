"""The `ffn` suite's summary (`FfnData`): per arm its quality and deltas vs relu paired by seed,
the loss at equal wall-clock, the sensitivity re-runs and the scale trend; tables and notes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from blocklab.config import FFNS
from blocklab.experiments.options import RunOptions
from blocklab.experiments.run_result import FAILED_STATUSES, RunResult
from blocklab.experiments.suites.base import (
    Results,
    format_ci,
    format_level,
    mean_ci,
    paired_difference,
    relative_pct,
    statuses,
)
from blocklab.experiments.suites.evaluation import full_only, listed
from blocklab.experiments.suites.ffn.runs import (
    ARMS,
    BASELINE,
    DATA,
    PAGE_GAIN_PCT,
    SIZES,
    TREND_ARMS,
    Size,
    StepTiming,
    ZeroGradFraction,
    choose_lrs,
    ffn_width,
    page_gain_text,
    param_count,
)
from blocklab.experiments.suites.tuning import counted_loss, lr_trials, mean_loss, trains, tune_arms
from blocklab.experiments.summaries import ArmTuning, Interval, LrTrial, Summary, Table


@dataclass(frozen=True)
class FfnArm:
    """One FFN arm over its seeds; deltas arm − relu, paired by seed, over `counted` runs."""

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
    """Arms re-run under another init and lr; deltas vs relu under the same settings."""

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
    trend_change: Interval
    warmup_steps: int
    unigram_entropy: float | None
    baseline: str
    page: dict[str, tuple[float, float]]  # the page's stated gain vs ReLU, % (low, high)
    equal_time_ms: float | None
    size: dict[str, Any]
    lr_tuning: list[ArmTuning] = field(default_factory=list)


def interpolate(xs: Sequence[float], ys: Sequence[float | None], x: float) -> float | None:
    """The piecewise-linear curve through (xs, ys) at x (xs ascending); None outside it."""
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
    """The results by kind: per arm (trend: per (d_model, arm)) one slot per seed."""

    train: dict[str, list[RunResult | None]]
    sensitivity: dict[str, list[RunResult | None]]
    trend: dict[tuple[int, str], list[RunResult | None]]
    tuned: Results
    timing: StepTiming | None


def sort_runs(size: Size, seeds: range, results: Results) -> FfnRuns:
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
    return None if result is None else counted_loss(result)


def arm_stats(size: Size, runs: FfnRuns, lrs: dict[str, float]) -> dict[str, FfnArm]:
    """Each arm of the size over its seeds (`FfnArm`)."""
    timed = runs.timing.ms_per_step if runs.timing is not None else {}
    fastest = min(timed.values()) if timed else None

    def equal_time_step(arm: str) -> float | None:
        return size.steps * fastest / timed[arm] if arm in timed and fastest is not None else None

    def equal_time(arm: str, result: RunResult | None) -> float | None:
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
        status = statuses(results)
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
            rel_delta_pct=mean_ci(relative_pct(vals, base_vals)),
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
    """The sensitivity arms, each against relu under the same settings."""
    vals = {arm: [_loss(r) for r in results] for arm, results in runs.sensitivity.items()}
    return FfnSensitivity(
        init=size.sensitivity_init, lr=size.sensitivity_lr,
        val_loss={arm: mean_ci(v) for arm, v in vals.items()},
        rel_delta_pct={arm: mean_ci(relative_pct(v, vals[BASELINE])) for arm, v in vals.items()})


def scale_trend(size: Size, seeds: range, trials: list[LrTrial], arms: dict[str, FfnArm],
                runs: FfnRuns) -> tuple[list[FfnTrendPoint], Interval]:
    """The trend points in ascending width (swiglu vs relu, Δ% paired by seed), and the change
    of Δ% from the smallest width to the largest (negative: SwiGLU's gain grows)."""
    points, per_seed = [], []
    for d in sorted({size.d_model, *size.trend_widths}):
        if d == size.d_model:
            width_runs = {arm: runs.train[arm] for arm in TREND_ARMS}
            lrs = {arm: arms[arm].lr for arm in TREND_ARMS}
        else:
            width_runs = {arm: runs.trend.get((d, arm), [None] * len(seeds))
                          for arm in TREND_ARMS}
            lrs = choose_lrs(size, trials, d, TREND_ARMS)
        rel = relative_pct([_loss(r) for r in width_runs["swiglu"]],
                       [_loss(r) for r in width_runs["relu"]])
        per_seed.append(rel)
        points.append(FfnTrendPoint(d_model=d, params=param_count("relu", size, d),
                                    rel_delta_pct=mean_ci(rel), lrs=lrs))
    change = paired_difference(per_seed[-1], per_seed[0]) if len(per_seed) > 1 else Interval(0)
    return points, change


def size_record(size: Size, options: RunOptions) -> dict[str, Any]:
    """The size's settings, the precision after `trend_widths` (where summaries hold it)."""
    record: dict[str, Any] = {}
    for name, value in asdict(size).items():
        record[name] = value
        if name == "trend_widths":
            record["precision"] = options.precision
    return record


def _fmt(value: float | None, digits: int = 4) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def summary_tables(size: Size, data: FfnData) -> list[Table]:
    """The tables of what the size ran."""
    arms = data.arms
    base_params = arms[BASELINE].params
    widths = Table(
        "FFN arms at equal parameter count",
        ["arm", "FFN", "activation", "d_ff", "FFN weights/layer", "params", "vs relu"],
        [[arm, "gated" if a.gated else "plain", a.activation, a.d_ff,
          (3 if a.gated else 2) * size.d_model * a.d_ff, a.params,
          f"{100 * (a.params - base_params) / base_params:+.2f}%"]
         for arm, a in arms.items()],
        f"plain d_ff = 4·d = {4 * size.d_model}; gated d_ff = equal_param_gated_width(4·d) = "
        f"{ffn_width('swiglu', size.d_model)}; d_model={size.d_model}, "
        f"{size.n_layers} layer(s), bias-free, RMSNorm pre-norm, RoPE, untied embeddings.")
    quality = Table(
        f"Validation loss after {size.steps} steps (equal steps and tokens)",
        ["arm", "ok/div/stuck/no-learn", "val loss (nats) [95% CI]", "bits/byte",
         "Δ vs relu [95% CI]", "Δ% vs relu [95% CI]", "page: gain vs ReLU"],
        [[arm, _status_cell(a.status), format_level(a.val_loss, 4),
          _fmt(a.val_bpb.mean), _delta_cell(arm, a.delta_vs_relu, 4),
          _delta_cell(arm, a.rel_delta_pct, 2),
          "baseline" if arm == BASELINE else page_gain_text(arm)]
         for arm, a in arms.items()],
        "Δ = arm − relu, paired by seed (same init streams and batches); negative = lower loss "
        f"= better, so the page's '{page_gain_text('swiglu')}' for SwiGLU reads as Δ% ≈ "
        f"−{PAGE_GAIN_PCT['swiglu'][0]:g} to −{PAGE_GAIN_PCT['swiglu'][1]:g}. "
        f"Unigram entropy of the training bytes: {_fmt(data.unigram_entropy)} nats.")
    clock = Table(
        "Cost per step and loss at equal wall-clock",
        ["arm", "ms/step (timed)", "ms/step (training runs)", "step at T*",
         "val loss at T* [95% CI]", "Δ vs relu at T* [95% CI]"],
        [[arm, _fmt(a.ms_per_step, 2), _fmt(a.ms_per_step_train, 2),
          _fmt(a.equal_time_step, 0), format_level(a.val_loss_equal_time, 4),
          _delta_cell(arm, a.delta_vs_relu_equal_time, 4)] for arm, a in arms.items()],
        "Timed: median of interleaved single-thread steps (forward, backward, clip, AdamW). "
        "T* = the fastest arm's time for all its steps; each curve is read at step "
        "steps·ms_fastest/ms_arm by linear interpolation between validations. Slower arms are "
        "read before their cosine decay ends (a bias against them).")
    zeros = Table(
        "C17: FFN activation inputs with an exactly zero gradient",
        ["arm", "activation", "at init", "after training"],
        [[arm, a.activation, _fmt(a.zero_grad_fraction["init"], 3),
          _fmt(a.zero_grad_fraction["final"], 3)] for arm, a in arms.items()],
        "Fraction of elements of ∂loss/∂z that are exactly 0, z the input of φ (the gate branch "
        f"of gated FFNs), over all layers, on {size.batch_size} fixed validation windows of "
        f"{size.seq_len} bytes; mean over seeds.")
    tunings = {t.arm: t for t in data.lr_tuning}
    tuning_seeds = sorted({t.seed for t in data.lr_trials})
    grid = Table(
        "Learning rate per arm: final validation loss on the tuning seeds",
        ["arm", *(f"lr {lr:g}" for lr in data.lr_grid), "chosen"],
        [[arm, *(_fmt(mean_loss(data.lr_trials, arm, lr, size.d_model), 4)
                 if lr in tunings[arm].grid else "" for lr in data.lr_grid),
          f"{arms[arm].lr:g}" + ("" if tunings[arm].interior else " (grid edge)")
          + (f", grid +{tunings[arm].extended}" if tunings[arm].extended else "")]
         for arm in size.arms],
        f"{size.tuning_seeds} tuning seed(s) ({', '.join(map(str, tuning_seeds))}), disjoint "
        "from the evaluation seeds; each arm is then evaluated at its own chosen lr. A best lr "
        f"at an edge of the registered grid {{{', '.join(f'{lr:g}' for lr in size.lr_grid.base)}"
        f"}} grows the grid there (×{size.lr_grid.factor:g}, at most "
        f"{size.lr_grid.max_extensions} points) until it is interior"
        + (f", then an interior best is refined at ×{size.lr_grid.factor:g}^(±1/2) and the "
           "best of every point tried is chosen" if size.lr_grid.refine else "")
        + "; blank: not tried for that arm. '—' marks an lr at which a tuning run did not "
        "count (diverged, stuck, did not learn or above the unigram entropy).")
    trend_table = Table(
        "Scale trend: SwiGLU vs ReLU at each model width",
        ["d_model", "params (relu)", "lr relu", "lr swiglu", "Δ% vs relu [95% CI]"],
        [[p.d_model, p.params, f"{p.lrs['relu']:g}", f"{p.lrs['swiglu']:g}",
          format_ci(p.rel_delta_pct, 2)] for p in data.trend],
        "Each width with its own tuned lrs and the same seeds; change from the smallest to the "
        f"largest width, paired by seed: {format_ci(data.trend_change, 2)} points (negative: "
        "SwiGLU's advantage grows with size).")
    sensitivity = data.sensitivity
    init_table = Table(
        f"Sensitivity: {size.sensitivity_init} init and one shared lr "
        f"({size.sensitivity_lr:g}) instead of {size.init} init and tuned lrs",
        ["arm", f"Δ% vs relu, {size.init} + tuned lr", "val loss",
         f"Δ% vs relu, {size.sensitivity_init} + lr {size.sensitivity_lr:g}", "val loss"],
        [[arm, _delta_cell(arm, arms[arm].rel_delta_pct, 2), format_level(arms[arm].val_loss, 4),
          _delta_cell(arm, sensitivity.rel_delta_pct[arm], 2),
          format_level(sensitivity.val_loss[arm], 4)] for arm in size.sensitivity_arms],
        "The same evaluation seeds under both settings; Δ% paired by seed against relu under "
        "the same settings. A difference that changes sign or size between the two columns is "
        "an artefact of initialisation or learning rate, not of the FFN.")
    tables = [widths, grid, quality, trend_table if size.trend_widths else None,
              init_table if size.sensitivity_arms else None, clock if size.timing else None,
              zeros]
    return [t for t in tables if t is not None]


def summary_notes(size: Size, data: FfnData) -> list[str]:
    """The budget, the widths, what counted, the lr grids, what the size left to full."""
    notes = [
        f"Budget: d_model={size.d_model}, n_layers={size.n_layers}, n_heads={size.n_heads}, "
        f"seq_len={size.seq_len}, batch={size.batch_size}, steps={size.steps} "
        f"({size.steps * size.batch_size * size.seq_len:,} training tokens a run), each arm at "
        f"its own lr from {{{', '.join(f'{lr:g}' for lr in data.lr_grid)}}}, "
        f"warmup={size.warmup_steps}, cosine to 0.1·lr, AdamW wd 0.1, clip 1.0, {size.init} "
        f"init, 1 thread, data={DATA}.",
        f"Widths: plain d_ff={4 * size.d_model}, gated d_ff={ffn_width('swiglu', size.d_model)}.",
        "A run counts when its status is ok and its final validation loss is below the unigram "
        "entropy; counted runs per arm: "
        + ", ".join(f"{arm} {a.counted}/{data.seeds}" for arm, a in data.arms.items()) + ".",
    ]
    if data.lr_at_edge:
        notes.append("Best lr still at an edge of the grid after growing it (the optimum may "
                     "lie beyond it): "
                     + ", ".join(f"{arm} {data.arms[arm].lr:g}" for arm in data.lr_at_edge)
                     + ".")
    grown = [t.words() for t in data.lr_tuning if t.extended]
    if grown:
        notes.append("Grid grown at an edge before evaluation: " + "; ".join(grown) + ".")
    left_out = _left_out(size)
    if left_out:
        notes.append(full_only(left_out, "C16 grades swiglu, geglu and glu against relu at "
                                         "equal steps and tokens; nothing else here is graded"))
    return notes


def _left_out(size: Size) -> list[str]:
    """What the full size runs and `size` does not, in words."""
    full = SIZES["full"]
    out = []
    missing = [arm for arm in ARMS if arm not in size.arms]
    if missing:
        out.append(f"the {listed(missing)} arm{'s' if len(missing) > 1 else ''}")
    if set(size.sensitivity_arms) < set(full.sensitivity_arms):
        out.append(f"the sensitivity re-runs ({full.sensitivity_init} init, one shared lr) of "
                   f"{listed(full.sensitivity_arms)}")
    if not size.trend_widths and full.trend_widths:
        out.append(f"the scale trend of {listed(TREND_ARMS)} at other widths (d_model "
                   f"{listed([str(w) for w in full.trend_widths])} at full)")
    if not size.timing and full.timing:
        out.append("the timed step of every arm and the loss at equal wall-clock")
    return out


def _delta_cell(arm: str, stats: Interval, digits: int) -> str:
    return "—" if arm == BASELINE else format_ci(stats, digits)


def _status_cell(status: dict[str, int]) -> str:
    return "/".join(str(status.get(s, 0)) for s in ("ok", *FAILED_STATUSES))


def summarise(options: RunOptions, results: Results) -> Summary:
    """Statistics first, then the tables and notes built from them."""
    size, seeds = SIZES[options.size], options.seeds
    runs = sort_runs(size, seeds, results)
    trials = lr_trials(runs.tuned)
    tunings = tune_arms(size.lr_grid, trials, size.arms, size.d_model)  # the arms it tuned
    arms = arm_stats(size, runs, {arm: t.lr for arm, t in tunings.items()})
    trend, trend_change = scale_trend(size, seeds, trials, arms, runs)
    fastest = min((a.ms_per_step for a in arms.values() if a.ms_per_step is not None),
                  default=None)  # the timing run times every arm
    entropies = [r.final.unigram_entropy for rs in runs.train.values() for r in rs
                 if r is not None and r.final is not None]  # of the training bytes
    data = FfnData(arms=arms, seeds=len(seeds), steps=size.steps, init=size.init,
                   lr_grid=sorted({lr for t in tunings.values() for lr in t.grid}),
                   lr_trials=trials,
                   lr_at_edge=[arm for arm, t in tunings.items() if not t.interior],
                   lr_tuning=list(tunings.values()),
                   sensitivity=sensitivity_stats(size, runs), trend=trend,
                   trend_change=trend_change, warmup_steps=size.warmup_steps,
                   unigram_entropy=entropies[0] if entropies else None, baseline=BASELINE,
                   page=dict(PAGE_GAIN_PCT),
                   equal_time_ms=None if fastest is None else fastest * size.steps,
                   size=size_record(size, options))
    return Summary("ffn", options.size, len(seeds), summary_tables(size, data),
                   summary_notes(size, data),
                   data, first_seed=seeds.start)
