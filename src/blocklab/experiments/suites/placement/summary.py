"""The placement suite's summary (`PlacementData`): the results read once (`stored_results`),
every statistic (`statistics_of`), then the tables and notes."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from blocklab.experiments.options import RunOptions
from blocklab.experiments.run_result import RunResult, failed_count
from blocklab.experiments.suites.base import (
    Results,
    format_ci,
    format_level,
    mean_ci,
    paired_difference,
    statuses,
)
from blocklab.experiments.suites.evaluation import full_only, graded_only, listed
from blocklab.experiments.suites.placement.runs import (
    DATA,
    SIZES,
    Probe,
    ProbeRecord,
    Size,
    StableLr,
    Sweep,
    Training,
    arm_name,
    final_val,
    lr_area,
    tuned_lrs,
)
from blocklab.experiments.suites.tuning import lr_trials
from blocklab.experiments.suites.tuning import tuning_table as tuned_table
from blocklab.experiments.summaries import ArmTuning, Interval, LrTrial, Summary, Table, decode

PREDICTED_SLOPE_LAST = {"post": 0.0, "pre": -0.5}  # Xiong et al. 2020, Xavier init
XIONG = "Xiong et al. 2020, On Layer Normalization in the Transformer Architecture"


@dataclass(frozen=True)
class GradientProbe:
    """One placement and init at initialisation across depths: ‖∇W_down‖ (geometric means over
    seeds; slopes of log ‖∇‖ on log depth), the stream's sensitivity, each block's Jacobian."""

    depths: list[int]
    last_layer_grad: list[float | None]
    first_layer_grad: list[float | None]
    slope_last: float | None
    slope_first: float | None
    slope_last_ci: Interval  # over per-seed slopes
    slope_first_ci: Interval
    residual_rms_last: list[float | None]
    per_layer_grad: dict[str, list[float | None]]  # depth -> per layer, bottom first
    # depth -> log2(max / min) of ‖∇W_down‖ over one stack's layers, over seeds
    layer_spread_log2: dict[str, Interval]
    # depth -> ‖∂L/∂x_l‖·rms(x_l) of the stream entering each layer, then the final norm's
    per_layer_sensitivity: dict[str, list[float | None]] = field(default_factory=dict)
    # depth -> its log2(max / min) over the layers' inputs, over seeds
    sensitivity_spread_log2: dict[str, Interval] = field(default_factory=dict)
    # the same over layers 1 … L−1 (C12): layer 0's input, the embedding, has a scale of its own
    sensitivity_spread_past_embedding_log2: dict[str, Interval] = field(default_factory=dict)
    # at the deepest depth, per layer ‖J_l − I‖_F/√n and ‖J_l‖_F/√n; their medians over layers
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
    """One (placement, depth, warmup) arm of the training grid over its seeds."""

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
    # log2(‖∇ first layer‖ / ‖∇ last layer‖) over logged steps after warmup, then seeds
    grad_first_over_last_log2: Interval
    lr_area: float | None = None


@dataclass(frozen=True)
class PlacementEffect:
    """Contrasts of final val loss at one depth, paired by seed (nats): `warmup_interaction` =
    (post cold − post warm) − (pre cold − pre warm); `pre_warmup_effect` = pre cold − pre warm;
    `post_vs_pre_warm` = post warm − pre warm."""

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
    """The largest stable lr of one (placement, depth, warmup) arm over seeds (`Sweep`); a run
    is stable when it `trains`: one that only avoids diverging is not stable."""

    grid: str  # "main" (C13, C19: the training grid's depth) or "deep" (C36)
    placement: str
    depth: int
    warmup: int
    steps: int
    ladder: list[float]  # the peak lrs, ascending, each twice the last
    rungs: list[int | None]  # per seed; −1 none stable, the top: censored (it may be higher)
    log2_max_stable: Interval  # log2(largest stable lr / ladder[0]), in doublings
    max_stable_lr: float | None  # 2 ** mean · ladder[0] (a geometric mean)
    censored_low: int  # seeds where no rung was stable
    censored_high: int  # seeds where the top rung was stable
    loss_at_lr: dict[str, list[float | None]]  # per lr tried, each run's final val loss
    # seeds with no stable rung whose first rung did not learn (rather than diverged)
    unlearned_low: int = 0


@dataclass(frozen=True)
class StabilityEffect:
    """Contrasts of the largest stable lr at one depth, paired by seed, in doublings."""

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
    # the warmup interaction at the deepest minus the shallowest depth, paired by seed
    interaction_trend: Interval
    unigram_entropy: float | None
    seeds: int
    steps: int
    size: dict[str, Any]
    lr_trials: list[LrTrial] = field(default_factory=list)
    lr_tuning: list[ArmTuning] = field(default_factory=list)
    stability: list[StabilityArm] = field(default_factory=list)
    stability_effects: list[StabilityEffect] = field(default_factory=list)


ProbeKey = tuple[str, str, int, int]  # (placement, init, depth, seed)
ArmKey = tuple[str, int, int, int]  # (placement, depth, warmup, seed)
# (grid: "sweep" or "deep", placement, depth, warmup, seed)
SweepKey = tuple[str, str, int, int, int]


@dataclass(frozen=True)
class Stored:
    """A summary's results, each read once and keyed, and the training bytes' unigram entropy."""

    probes: dict[ProbeKey, ProbeRecord]
    trained: dict[ArmKey, RunResult]
    swept: dict[SweepKey, StableLr]
    tuned: Results
    unigram_entropy: float | None


def stored_results(results: Results) -> Stored:
    probes: dict[ProbeKey, ProbeRecord] = {}
    trained: dict[ArmKey, RunResult] = {}
    swept: dict[SweepKey, StableLr] = {}
    tuned: Results = []
    entropy = None
    for spec, result in results:
        payload = spec.payload
        if payload["kind"] == "init_gradients":
            if result.status == "ok":
                probes[(payload["placement"], payload["init"], payload["depth"],
                        spec.seed)] = decode(ProbeRecord, result.extra, spec.label)
        elif payload["kind"] == "tune":
            tuned.append((spec, result))
        else:
            model, train = payload["model"], payload["train"]
            arm = (model["placement"], model["n_layers"], train["warmup_steps"], spec.seed)
            if payload["kind"] == "train":
                trained[arm] = result
            elif result.status == "ok":
                swept[(payload["kind"], *arm)] = decode(StableLr, result.extra, spec.label)
            entropy = entropy or (None if result.final is None
                                  else result.final.unigram_entropy)
    return Stored(probes, trained, swept, tuned, entropy)


def val_auc(result: RunResult | None, seq_len: int) -> float | None:
    """Mean validation loss over a finished run's (evenly spaced) evaluations."""
    if result is None or result.status != "ok" or result.curves is None:
        return None
    values = result.curves.val.get(str(seq_len)) or []
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if not values or len(finite) != len(values):
        return None
    return sum(finite) / len(finite)


def first_over_last_log2(result: RunResult | None, warmup: int) -> float | None:
    """Mean over the logged steps from warmup on of log2(‖∇ first layer‖ / ‖∇ last layer‖)."""
    if result is None or result.status != "ok" or result.curves is None:
        return None
    logged = result.curves.layer_grad_norms
    ratios = []
    for step, layers in zip(logged.step, logged.layer, strict=True):
        first, last = (layers[0], layers[-1]) if len(layers) > 1 else (None, None)
        if step >= warmup and first and last and math.isfinite(first) and math.isfinite(last):
            ratios.append(math.log2(first / last))
    return sum(ratios) / len(ratios) if ratios else None


def ok_val(result: RunResult | None) -> float | None:
    return final_val(result) if result is not None and result.status == "ok" else None


def loglog_slope(xs: Sequence[float], ys: Sequence[float | None]) -> float | None:
    """Least-squares slope b of log y = a + b·log x; None with fewer than two usable points."""
    points = [(math.log(x), math.log(y)) for x, y in zip(xs, ys, strict=True)
              if x is not None and y is not None and x > 0 and y > 0 and math.isfinite(y)]
    if len(points) < 2:
        return None
    mx = sum(u for u, _ in points) / len(points)
    my = sum(v for _, v in points) / len(points)
    sxx = sum((u - mx) ** 2 for u, _ in points)
    if sxx == 0:
        return None
    return sum((u - mx) * (v - my) for u, v in points) / sxx


def gradient_summary(probe: Probe, seeds: range, probes: dict[ProbeKey, ProbeRecord]
                      ) -> dict[str, dict[str, GradientProbe]]:
    return {placement: {init: _gradient_probe(probe, seeds, probes, placement, init)
                        for init in probe.inits}
            for placement in probe.placements}


def _gradient_probe(probe: Probe, seeds: range, probes: dict[ProbeKey, ProbeRecord],
                    placement: str, init: str) -> GradientProbe:
    depths = list(probe.depths)
    deepest = max(depths)

    def runs(depth: int) -> list[ProbeRecord]:
        return [r for s in seeds if (r := probes.get((placement, init, depth, s))) is not None]

    def at(index: int, depth: int) -> float | None:
        usable = [v for r in runs(depth) if (v := r.down_proj_grad[index]) is not None
                  and v > 0 and math.isfinite(v)]
        return math.exp(sum(map(math.log, usable)) / len(usable)) if usable else None

    def mean_per_layer(rows: list[list[float | None]], count: int) -> list[float | None]:
        return [mean_ci([row[i] for row in rows]).mean for i in range(count)]

    last = [at(-1, d) for d in depths]
    first = [at(0, d) for d in depths]
    per_seed_last, per_seed_first = [], []
    for seed in seeds:
        rows = [probes.get((placement, init, d, seed)) for d in depths]
        if None not in rows:
            per_seed_last.append(loglog_slope(depths, [r.down_proj_grad[-1] for r in rows]))
            per_seed_first.append(loglog_slope(depths, [r.down_proj_grad[0] for r in rows]))
    return GradientProbe(
        depths=depths,
        last_layer_grad=last,
        first_layer_grad=first,
        slope_last=loglog_slope(depths, last),
        slope_first=loglog_slope(depths, first),
        slope_last_ci=mean_ci(per_seed_last),
        slope_first_ci=mean_ci(per_seed_first),
        residual_rms_last=[mean_ci([r.residual_rms[-1] for r in runs(d)]).mean
                           for d in depths],
        per_layer_grad={
            str(d): mean_per_layer([r.down_proj_grad for r in runs(d)], d) for d in depths},
        layer_spread_log2={
            str(d): mean_ci([_spread_log2(r.down_proj_grad) for r in runs(d)])
            for d in depths},
        per_layer_sensitivity={
            str(d): mean_per_layer([r.sensitivity for r in runs(d)], d + 1) for d in depths},
        # The layers' inputs only: the final norm's input is the last layer's output.
        sensitivity_spread_log2={
            str(d): mean_ci([_spread_log2(r.sensitivity[:d]) for r in runs(d)
                             if r.sensitivity]) for d in depths},
        sensitivity_spread_past_embedding_log2={
            str(d): mean_ci([_spread_log2(r.sensitivity[1:d]) for r in runs(d)
                             if r.sensitivity]) for d in depths},
        jacobian_depth=deepest,
        identity_deviation=mean_per_layer(
            [r.identity_deviation for r in runs(deepest) if r.identity_deviation is not None],
            deepest),
        jacobian_gain=mean_per_layer(
            [r.jacobian_gain for r in runs(deepest) if r.jacobian_gain is not None], deepest),
        # The median over layers: layer 0's input is the embedding (RMS 0.02 under most
        # inits), where a norm's Jacobian is about 50·I; one such layer must not set the
        # stack's number.
        identity_deviation_median=_median_per_seed(
            [r.identity_deviation for r in runs(deepest)]),
        jacobian_gain_median=_median_per_seed([r.jacobian_gain for r in runs(deepest)]),
    )


def _median_per_seed(per_seed: list[list[float | None] | None]) -> Interval:
    """Over seeds, the median over one stack's layers (a seed with a non-finite one left out)."""
    medians = []
    for values in per_seed:
        finite = [v for v in values or [] if v is not None and math.isfinite(v)]
        if values and len(finite) == len(values):
            medians.append(statistics.median(finite))
    return mean_ci(medians)


def _spread_log2(norms: Sequence[float | None]) -> float | None:
    usable = [v for v in norms if v is not None and math.isfinite(v) and v > 0]
    return math.log2(max(usable) / min(usable)) if len(usable) == len(norms) > 1 else None


def training_summary(training: Training, seeds: range, trained: dict[ArmKey, RunResult],
                      lrs: dict[str, ArmTuning]) -> list[PlacementCell]:
    """One cell per (placement, depth, warmup) arm over `seeds`."""
    rows = []
    for placement, depth, warmup in training.arms():
        mine = [trained.get((placement, depth, warmup, s)) for s in seeds]
        # None: a seed the sequential design added to other arms only
        status = statuses(r for r in mine if r is not None)
        # Quality from the runs that finished; stuck and diverged runs are counted in the
        # status columns only. Pairs need both seeds finished (n shown).
        vals = [ok_val(r) for r in mine]
        delta = None
        if placement != "pre" and "pre" in training.placements:
            delta = paired_difference(vals, _ok_vals(trained, seeds, "pre", depth, warmup))
        lr = lrs[arm_name(placement, depth, warmup)].lr
        rows.append(PlacementCell(
            placement=placement, depth=depth, warmup=warmup, lr=lr,
            failures=failed_count(status),
            runs=sum(1 for r in mine if r is not None), status=status,
            val_loss=mean_ci(vals), delta_vs_pre=delta,
            steps_done=mean_ci([None if r is None else r.steps_done for r in mine]).mean,
            val_auc=mean_ci([val_auc(r, training.seq_len) for r in mine]),
            grad_first_over_last_log2=mean_ci(
                [first_over_last_log2(r, warmup) for r in mine]),
            lr_area=lr_area(training, warmup, lr)))
    return rows


def _ok_vals(trained: dict[ArmKey, RunResult], seeds: range, placement: str, depth: int,
             warmup: int) -> list[float | None]:
    return [ok_val(trained.get((placement, depth, warmup, s))) for s in seeds]


def interaction_per_seed(training: Training, seeds: range, trained: dict[ArmKey, RunResult],
                         depth: int, warmup: int) -> list[float | None]:
    """Per seed, (post cold − post warm) − (pre cold − pre warm) of the final validation loss
    (each arm at its own lr); None for a seed where any of the four runs did not finish."""
    return _interaction(*(_ok_vals(trained, seeds, p, depth, w)
                          for p, w in (("post", 0), ("post", warmup), ("pre", 0), ("pre", warmup))))


def _interaction(a: list[float | None], b: list[float | None], c: list[float | None],
                 d: list[float | None]) -> list[float | None]:
    return [None if None in (w, x, y, z) else (w - x) - (y - z)
            for w, x, y, z in zip(a, b, c, d, strict=True)]


def interaction_trend(training: Training, seeds: range,
                      trained: dict[ArmKey, RunResult]) -> Interval:
    """The warmup interaction at the deepest depth minus at the shallowest, paired by seed, at
    the longest warmup: positive = post-norm's need for warmup grows with depth. No interval
    with one depth."""
    if len(training.depths) < 2 or not {"pre", "post"} <= set(training.placements):
        return Interval(0)
    warmup = max(training.warmups)
    deep, shallow = (interaction_per_seed(training, seeds, trained, d, warmup)
                     for d in (max(training.depths), min(training.depths)))
    return paired_difference(deep, shallow)


def placement_effects(training: Training, seeds: range, trained: dict[ArmKey, RunResult],
             lrs: dict[str, ArmTuning]) -> list[PlacementEffect]:
    """The contrasts C13 and C19 are graded on, per depth and non-zero warmup."""
    if not {"pre", "post"} <= set(training.placements) or 0 not in training.warmups:
        return []
    effects = []
    for depth in training.depths:
        for warmup in [w for w in training.warmups if w > 0]:
            def ratios(p: str, depth=depth, warmup=warmup) -> Interval:
                return mean_ci([first_over_last_log2(trained.get((p, depth, warmup, s)),
                                                      warmup) for s in seeds])

            post_warm = _ok_vals(trained, seeds, "post", depth, warmup)
            pre_warm = _ok_vals(trained, seeds, "pre", depth, warmup)
            interaction = interaction_per_seed(training, seeds, trained, depth, warmup)
            effects.append(PlacementEffect(
                depth=depth, warmup=warmup,
                lrs={f"{p} {'warm' if w else 'cold'}": lrs[arm_name(p, depth, w)].lr
                     for p in ("pre", "post") for w in (0, warmup)},
                warmup_interaction=mean_ci(interaction),
                pre_warmup_effect=paired_difference(
                    _ok_vals(trained, seeds, "pre", depth, 0), pre_warm),
                post_vs_pre_warm=paired_difference(post_warm, pre_warm),
                post_grad_first_over_last_log2=ratios("post"),
                pre_grad_first_over_last_log2=ratios("pre")))
    return effects


def stability_arms(sweep: Sweep, grid: str, seeds: range, swept: dict[SweepKey, StableLr]
               ) -> list[StabilityArm]:
    """Per swept arm, the largest stable lr over seeds."""
    ladder = sweep.ladder()
    out = []
    for placement, depth, warmup in sweep.arms():
        mine = [swept.get((grid, placement, depth, warmup, s)) for s in seeds]
        rungs = [None if r is None else r.rung for r in mine]
        log2 = mean_ci([None if k is None else sweep.doublings(k) for k in rungs])
        losses: dict[str, list[float | None]] = {}
        for r in mine:
            for trial in [] if r is None else r.trials:
                losses.setdefault(f"{trial.lr:g}", []).append(trial.val_loss)
        out.append(StabilityArm(
            grid=grid, placement=placement, depth=depth, warmup=warmup, steps=sweep.steps,
            ladder=ladder, rungs=rungs, log2_max_stable=log2,
            max_stable_lr=None if log2.mean is None else ladder[0] * 2 ** log2.mean,
            censored_low=sum(1 for k in rungs if k == -1),
            censored_high=sum(1 for k in rungs if k == len(ladder) - 1),
            loss_at_lr=dict(sorted(losses.items(), key=lambda kv: float(kv[0]))),
            unlearned_low=sum(1 for r in mine if r is not None and r.rung == -1 and any(
                t.lr == ladder[0] and t.status == "did_not_learn" for t in r.trials))))
    return out


def stability_effects(sweep: Sweep, grid: str, seeds: range,
                       swept: dict[SweepKey, StableLr]) -> list[StabilityEffect]:
    """The contrasts of the largest stable lr, per depth, paired by seed, in doublings. A seed
    where both arms are censored at the same end of the ladder (neither stable anywhere, or
    both still stable at its top) says nothing about their difference and drops out; one
    censored on one side counts at the ladder's end, a bound on the difference."""
    def rungs(p: str, depth: int, w: int) -> list[float | None]:
        found = [swept.get((grid, p, depth, w, s)) for s in seeds]
        return [None if r is None else sweep.doublings(r.rung) for r in found]

    ends = (sweep.doublings(-1), sweep.doublings(sweep.rungs - 1))

    def known(a: list[float | None], b: list[float | None]
              ) -> tuple[list[float | None], list[float | None]]:
        both_censored = [x is not None and x == y and x in ends for x, y in
                         zip(a, b, strict=True)]
        return ([None if c else x for x, c in zip(a, both_censored, strict=True)],
                [None if c else y for y, c in zip(b, both_censored, strict=True)])

    swept_arms = set(sweep.arms())
    out = []
    for depth in sweep.depths:
        w = sweep.warmup

        def have(*arms: tuple[str, int], depth=depth) -> bool:
            return all((p, depth, warm) in swept_arms for p, warm in arms)

        def diff(a: tuple[str, int], b: tuple[str, int], depth=depth) -> Interval:
            return (paired_difference(*known(rungs(a[0], depth, a[1]),
                                             rungs(b[0], depth, b[1])))
                    if have(a, b) else Interval(0))

        interaction = Interval(0)
        if have(("pre", 0), ("pre", w), ("post", 0), ("post", w)):
            post_warm, post_cold = known(rungs("post", depth, w), rungs("post", depth, 0))
            pre_warm, pre_cold = known(rungs("pre", depth, w), rungs("pre", depth, 0))
            interaction = mean_ci(_interaction(post_warm, post_cold, pre_warm, pre_cold))
        out.append(StabilityEffect(
            grid=grid, depth=depth, warmup=w,
            pre_cold_vs_warm=diff(("pre", 0), ("pre", w)),
            post_warm_vs_cold=diff(("post", w), ("post", 0)),
            warmup_interaction=interaction,
            pre_vs_post_warm=diff(("pre", w), ("post", w)),
            pre_vs_post_cold=diff(("pre", 0), ("post", 0))))
    return out


def statistics_of(size: Size, seeds: range, stored: Stored) -> PlacementData:
    """Every statistic the summary shows (and the claims ledger reads)."""
    training, sweep, deep = size.training, size.sweep, size.deep
    trials = lr_trials(stored.tuned)
    lrs = tuned_lrs(training, trials)
    return PlacementData(
        init_gradients=gradient_summary(size.probe, seeds, stored.probes),
        predictions=SlopePrediction(slope_last=dict(PREDICTED_SLOPE_LAST), init="xavier",
                                    source=XIONG),
        training=training_summary(training, seeds, stored.trained, lrs),
        effects=placement_effects(training, seeds, stored.trained, lrs),
        interaction_trend=interaction_trend(training, seeds, stored.trained),
        unigram_entropy=stored.unigram_entropy, seeds=len(seeds),
        steps=training.steps, size=asdict(size), lr_trials=trials,
        lr_tuning=[lrs[arm_name(*a)] for a in training.arms()],
        stability=(stability_arms(sweep, "sweep", seeds, stored.swept)
                   + stability_arms(deep, "deep", seeds, stored.swept)),
        stability_effects=(stability_effects(sweep, "sweep", seeds, stored.swept)
                           + stability_effects(deep, "deep", seeds, stored.swept)))


def _g(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def _slope_cell(stats: Interval, fitted: float | None) -> str:
    if fitted is None:
        return "—"
    if not stats.resolved:
        return f"{fitted:+.2f}"
    return f"{fitted:+.2f} [{stats.ci_low:+.2f}, {stats.ci_high:+.2f}]"


def summarise(options: RunOptions, results: Results) -> Summary:
    size = SIZES[options.size]
    data = statistics_of(size, options.seeds, stored_results(results))
    return Summary("placement", options.size, len(options.seeds), _tables(size, data),
                   _notes(size, options.size), data, first_seed=options.seeds.start)


def _tables(size: Size, data: PlacementData) -> list[Table]:
    probe, training = size.probe, size.training
    gradients = data.init_gradients
    depth_columns = [f"L={d}" for d in probe.depths]
    last_table = Table(
        "At initialisation: ‖∇W_down‖ of the LAST layer vs depth",
        ["placement", "init", *depth_columns, "slope [95% CI]", "Xiong et al. (xavier)"],
        [[p, i, *[_g(v) for v in g.last_layer_grad],
          _slope_cell(g.slope_last_ci, g.slope_last),
          "—" if p not in PREDICTED_SLOPE_LAST else f"{PREDICTED_SLOPE_LAST[p]:+.1f}"]
         for p, by_init in gradients.items() for i, g in by_init.items()],
        "Slope: least squares of log ‖∇W_down‖ on log L, fitted to the geometric means over "
        "seeds; the interval is over per-seed slopes. Predicted: post-LN 0 (independent of L), "
        "pre-LN −0.5 (∝ 1/√L), for Xavier init (gpt2 init scales residual outputs by "
        "1/√(2L) and is outside the theorem).")
    first_table = Table(
        "At initialisation: ‖∇W_down‖ of the FIRST layer vs depth",
        ["placement", "init", *depth_columns, "slope [95% CI]"],
        [[p, i, *[_g(v) for v in g.first_layer_grad],
          _slope_cell(g.slope_first_ci, g.slope_first)]
         for p, by_init in gradients.items() for i, g in by_init.items()],
        "A negative slope means the gradient reaching the bottom of the stack shrinks as layers "
        "are added (vanishing with depth), whatever identity path the block has.")
    sensitivity_table = Table(
        "At initialisation: the residual stream's sensitivity and each block's distance from "
        "the identity (C12, C36)",
        ["placement", "init", *[f"sensitivity spread L={d}" for d in probe.depths],
         "‖J − I‖_F/√n (median over layers)", "‖J‖_F/√n (median)"],
        [[p, i, *[format_level(g.sensitivity_spread_past_embedding_log2.get(str(d), Interval(0)),
                               2) for d in probe.depths],
          format_level(g.identity_deviation_median, 3), format_level(g.jacobian_gain_median, 3)]
         for p, by_init in gradients.items() for i, g in by_init.items()],
        "Sensitivity spread: log2(max / min) of ‖∂L/∂x_l‖·rms(x_l) over the inputs of layers "
        "1 … L−1 of one stack, the estimate C12 grades at the deepest L (layer 0's input, the "
        "embedding stream, is left out: its scale, not depth, sets its sensitivity), mean [95% "
        "CI] over seeds (a global rescaling of the stream cancels; 1 = one layer's "
        "relative perturbation moves the loss twice as much as another's). ‖J − I‖_F/√n: each "
        "block's Jacobian ∂x_{l+1}/∂x_l at the deepest probed depth, from Gaussian-probe "
        "vector-Jacobian products (0 = the block is the identity, the page's 'gradient ≈ 1').")
    rms_table = Table(
        "At initialisation: RMS of the residual stream leaving the last layer",
        ["placement", "init", *depth_columns],
        [[p, i, *[_g(v) for v in g.residual_rms_last]]
         for p, by_init in gradients.items() for i, g in by_init.items()],
        "Post-norm ends every layer in a norm (RMS ≈ 1); the pre-norm stream grows with depth "
        "unless the init scales the residual outputs down.")
    spread_table = Table(
        "At initialisation: how unevenly the layers of ONE stack get gradient",
        ["placement", "init", *depth_columns],
        [[p, i, *[format_level(g.layer_spread_log2[str(d)], 2) for d in probe.depths]]
         for p, by_init in gradients.items() for i, g in by_init.items()],
        "log2(max / min) of ‖∇W_down‖ over the layers of one model, mean [95% CI] over seeds: "
        "1 means some layer gets twice the gradient of another. A factor that scales every "
        "layer alike (the final norm's 1/√L) cancels here.")
    tuning_table = tuned_table(
        data.lr_tuning, data.lr_trials, training.lr_grid,
        f"{training.tuning_seeds} tuning seed(s), disjoint from the evaluation seeds, each run "
        "as long as the evaluation runs")
    train_table = Table(
        f"Training {training.steps} steps, xavier init, no gradient clipping, each arm at its "
        "own tuned peak lr",
        ["placement", "depth", "warmup", "lr", "Σ lr over steps",
         "failed/runs (div, stuck, no learning)", "val loss [95% CI]", "Δ vs pre [95% CI]",
         "mean val loss over training", "log2 ‖∇first‖/‖∇last‖ [95% CI]"],
        [[r.placement, r.depth, r.warmup, f"{r.lr:g}", _g(r.lr_area),
          f"{r.failures}/{r.runs} ({r.status.get('diverged', 0)}, "
          f"{r.status.get('stuck', 0)}, {r.status.get('did_not_learn', 0)})",
          format_level(r.val_loss),
          "—" if r.delta_vs_pre is None else format_ci(r.delta_vs_pre, 3),
          format_level(r.val_auc), format_level(r.grad_first_over_last_log2, 2)]
         for r in data.training],
        "Val loss over the runs that finished and learned (status ok); runs that diverged, got "
        "stuck or did not learn (ended short of the registered share of the way from the "
        "unigram to the bigram reference) count in the failed column only"
        + ("" if training.stuck_patience is None else
           f" (a stuck run stops at warmup + {training.stuck_patience} steps)")
        + ". Δ = this − pre at the same "
        "depth and warmup (each at its own lr), paired by seed over the seeds where both "
        "finished (n shown); Σ lr over steps: the schedule's area, which warmup lowers (the "
        "warmup confound, shown rather than removed); "
        "negative = lower loss than pre-norm. Mean val loss over training: the area under the "
        "validation curve over its length. Gradient ratio: whole first layer over whole last "
        f"layer, logged every {training.log_every} steps after warmup. Unigram "
        f"entropy of the training bytes: {_g(data.unigram_entropy)} nats.")
    effect_table = Table(
        "Warmup and placement effects, paired by seed (final val loss, nats)",
        ["depth", "lrs", "warmup", "(post cold − warm) − (pre cold − warm) [95% CI]",
         "pre cold − pre warm [95% CI]", "post warm − pre warm [95% CI]",
         "log2 ‖∇first‖/‖∇last‖ post", "… pre"],
        [[e.depth, ", ".join(f"{k} {v:g}" for k, v in e.lrs.items()), e.warmup,
          format_ci(e.warmup_interaction),
          format_ci(e.pre_warmup_effect), format_ci(e.post_vs_pre_warm),
          format_level(e.post_grad_first_over_last_log2, 2),
          format_level(e.pre_grad_first_over_last_log2, 2)] for e in data.effects],
        "Positive interaction: leaving warmup out costs post-norm more than pre-norm. Seeds "
        "where any of the four runs failed drop out of the interaction (n shown); failures "
        "are in the training table. Gradient ratios from the runs with warmup. "
        + (f"Depth trend (interaction at the deepest minus the shallowest depth, paired by "
           f"seed): {format_ci(data.interaction_trend)} nats (positive: "
           "the need for warmup grows with depth)." if len(training.depths) > 1 else
           "Depth trend: at --size full only (this size trains one depth, the deepest)."))
    stability_table = Table(
        "Largest stable peak lr per arm (C13, C19 at the training depth; C36 in deep stacks)",
        ["grid", "placement", "depth", "warmup", "steps", "largest stable lr (geo. mean)",
         "log2 vs ladder start [95% CI]", "none stable / top stable", "val loss at each lr tried"],
        [[a.grid, a.placement, a.depth, a.warmup, a.steps, _g(a.max_stable_lr),
          format_level(a.log2_max_stable, 2), f"{a.censored_low}/{a.censored_high}",
          "; ".join(f"{lr}: {_g(_mean_of(v))}" for lr, v in a.loss_at_lr.items())]
         for a in data.stability],
        "Per seed, short runs on a doubling ladder of peak lrs, bisected (stability taken as "
        "monotone in lr); a run is stable when it finishes (no NaN/inf, loss never above "
        "4·ln 256), ends below the unigram entropy and, where the size registers it, learned (a "
        "quarter of the way from the unigram to the bigram reference): a rate at which a run "
        "only avoids diverging is not stable. Seeds with no stable rung count as one "
        "rung below the ladder, and those stable at the top as the top (both censored, "
        "counted). Loss at each lr: the mean final val loss of the sweep runs made there "
        "('—' when one did not finish).")
    stability_effect_table = Table(
        "Largest stable lr: contrasts paired by seed, in doublings (+1 = twice the lr)",
        ["grid", "depth", "warmup", "pre cold − pre warm", "post warm − post cold",
         "(post warm − cold) − (pre warm − cold)", "pre warm − post warm",
         "pre cold − post cold"],
        [[e.grid, e.depth, e.warmup, format_ci(e.pre_cold_vs_warm, 2),
          format_ci(e.post_warm_vs_cold, 2), format_ci(e.warmup_interaction, 2),
          format_ci(e.pre_vs_post_warm, 2), format_ci(e.pre_vs_post_cold, 2)]
         for e in data.stability_effects],
        "Positive post warm − post cold: warmup lets post-norm train at a larger lr; positive "
        "interaction: post-norm gains more from warmup than pre-norm; positive pre − post: "
        "pre-norm stays stable at a larger lr. '—': that arm is not swept at this size.")
    return [last_table, first_table, spread_table, sensitivity_table, rms_table, tuning_table,
            train_table, effect_table, stability_table, stability_effect_table]


def _notes(size: Size, size_name: str) -> list[str]:
    """The summary's notes: what each part ran at `size`, and what only --size full runs."""
    probe, training, sweep, deep = size.probe, size.training, size.sweep, size.deep
    notes = [
        f"(a) probe: d_model={probe.d_model}, n_heads={probe.n_heads}, depths "
        f"{list(probe.depths)}, inits {list(probe.inits)}, one forward/backward of the "
        f"next-byte loss on {probe.batch_size} fixed validation windows of {probe.seq_len} "
        "bytes; RMSNorm, SwiGLU (d_ff 8d/3), RoPE, final norm in every placement.",
        f"(b) training: d_model={training.d_model}, n_heads={training.n_heads}, depths "
        f"{list(training.depths)}, placements {list(training.placements)}, warmups "
        f"{list(training.warmups)}, each arm's peak lr tuned (table above), "
        f"seq_len={training.seq_len}, "
        f"batch={training.batch_size}, steps={training.steps}, cosine to 0.1·lr, AdamW wd 0.1, "
        "xavier init, clipping off, "
        + ("no stuck test" if training.stuck_patience is None else
           f"stuck after {training.stuck_patience} post-warmup steps above the unigram entropy")
        + f", 1 thread, data={DATA}.",
        f"Largest stable lr: at the training depth d_model={sweep.d_model}, depths "
        f"{list(sweep.depths)}, {sweep.steps} steps (warm arms: warmup {sweep.warmup}), "
        f"ladder {_g(sweep.ladder()[0])} … {_g(sweep.ladder()[-1])}; (c) deep stacks (C36): "
        f"d_model={deep.d_model}, depths {list(deep.depths)}, {deep.steps} steps (warm arms: "
        f"warmup {deep.warmup}), ladder {_g(deep.ladder()[0])} … {_g(deep.ladder()[-1])}; "
        "otherwise as (b).",
    ]
    left_out = _left_out(size) if graded_only(size_name) else []
    if left_out:
        notes.append(full_only(left_out, "C13 and C19 read part (b) at its deepest depth and "
                                         "highest lr, pre and post only"))
    return notes


def _mean_of(values: list[float | None]) -> float | None:
    return None if not values or None in values else sum(values) / len(values)


def _left_out(size: Size) -> list[str]:
    """What the full size's part (b) trains and `size`'s does not, in words."""
    full, training = SIZES["full"].training, size.training
    out = []
    if len(training.depths) < len(full.depths):
        out.append(f"part (b)'s depth trend (depths {listed([str(d) for d in full.depths])} "
                   "at full)")
    missing = [p for p in full.placements if p not in training.placements]
    if missing:
        out.append(f"{listed(missing)} norm in part (b)")
    if len(training.lr_grid.base) < len(full.lr_grid.base):
        out.append(f"part (b)'s finer lr grid "
                   f"({listed([f'{lr:g}' for lr in full.lr_grid.base])} at full)")
    return out
