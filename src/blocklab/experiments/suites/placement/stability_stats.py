"""The largest stable lr's statistics: per swept arm over seeds, and the contrasts between arms
paired by seed, in doublings."""

from __future__ import annotations

from blocklab.experiments.suites.base import mean_ci, paired_difference
from blocklab.experiments.suites.placement.data import StabilityArm, StabilityEffect
from blocklab.experiments.suites.placement.sizes import Sweep
from blocklab.experiments.suites.placement.stored import SweepKey
from blocklab.experiments.suites.placement.sweep import StableLr
from blocklab.experiments.summaries import Interval


def stability_arms(sweep: Sweep, grid: str, seeds: range, swept: dict[SweepKey, StableLr]
               ) -> list[StabilityArm]:
    """Per swept arm, the largest stable lr over seeds (records keyed
    `(grid, placement, depth, warmup, seed)` in `swept`)."""
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
    top = sweep.rungs - 1

    def rungs(p: str, depth: int, w: int) -> list[float | None]:
        found = [swept.get((grid, p, depth, w, s)) for s in seeds]
        return [None if r is None else sweep.doublings(r.rung) for r in found]

    ends = (sweep.doublings(-1), sweep.doublings(top))

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
            per_seed = [None if a is None or b is None or c is None or d is None
                        else (a - b) - (c - d)
                        for a, b, c, d in zip(post_warm, post_cold, pre_warm, pre_cold,
                                              strict=True)]
            interaction = mean_ci(per_seed)
        out.append(StabilityEffect(
            grid=grid, depth=depth, warmup=w,
            pre_cold_vs_warm=diff(("pre", 0), ("pre", w)),
            post_warm_vs_cold=diff(("post", w), ("post", 0)),
            warmup_interaction=interaction,
            pre_vs_post_warm=diff(("pre", w), ("post", w)),
            pre_vs_post_cold=diff(("pre", 0), ("post", 0))))
    return out
