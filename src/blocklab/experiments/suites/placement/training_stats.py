"""Part (b)'s statistics: one cell per training arm, and the warmup and placement contrasts
paired by seed."""

from __future__ import annotations

from blocklab.experiments.run_result import RunResult, failed_count
from blocklab.experiments.suites.base import mean_ci, paired_difference
from blocklab.experiments.suites.placement.configs import lr_area
from blocklab.experiments.suites.placement.data import PlacementCell, PlacementEffect
from blocklab.experiments.suites.placement.outcomes import first_over_last_log2, ok_val, val_auc
from blocklab.experiments.suites.placement.sizes import Training, arm_name
from blocklab.experiments.suites.placement.stored import ArmKey
from blocklab.experiments.summaries import ArmTuning, Interval


def training_summary(training: Training, seeds: range, trained: dict[ArmKey, RunResult],
                      lrs: dict[str, ArmTuning]) -> list[PlacementCell]:
    """One cell per (placement, depth, warmup) arm, its runs keyed
    `(placement, depth, warmup, seed)` in `trained`."""
    rows = []
    for placement, depth, warmup in training.arms():
        def results(p: str, depth=depth, warmup=warmup) -> list[RunResult | None]:
            return [trained.get((p, depth, warmup, s)) for s in seeds]

        mine = results(placement)
        status: dict[str, int] = {}
        for r in mine:
            if r is None:  # a seed the sequential design added to other arms only
                continue
            status[r.status] = status.get(r.status, 0) + 1
        # Quality from the runs that finished; stuck and diverged runs are counted in the
        # status columns only. Pairs need both seeds finished (n shown).
        vals = [ok_val(r) for r in mine]
        delta = None
        if placement != "pre" and "pre" in training.placements:
            delta = paired_difference(vals, [ok_val(r) for r in results("pre")])
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
    """Per seed, the final val loss of one arm's run if it finished (`ok_val`)."""
    return [ok_val(trained.get((placement, depth, warmup, s))) for s in seeds]


def interaction_per_seed(training: Training, seeds: range, trained: dict[ArmKey, RunResult],
                         depth: int, warmup: int) -> list[float | None]:
    """Per seed, (post cold − post warm) − (pre cold − pre warm) of the final validation loss
    (each arm at its own lr); None for a seed where any of the four runs did not finish."""
    def vals(p: str, w: int) -> list[float | None]:
        return _ok_vals(trained, seeds, p, depth, w)

    return [None if a is None or b is None or c is None or d is None else (a - b) - (c - d)
            for a, b, c, d in zip(vals("post", 0), vals("post", warmup), vals("pre", 0),
                                  vals("pre", warmup), strict=True)]


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
