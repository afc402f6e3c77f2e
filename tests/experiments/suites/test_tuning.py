"""Learning-rate grids that grow at an edge (`blocklab.experiments.suites.tuning`)."""

import math

import pytest

from blocklab.experiments.options import RunOptions
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites import get_suite
from blocklab.experiments.suites.base import RunSpec
from blocklab.experiments.suites.tuning import (
    LrGrid,
    counted_loss,
    lr_trials,
    mean_loss,
    rounded,
    trains,
    tune_arm,
)
from blocklab.experiments.summaries import LrTrial

from .conftest import final_metrics

GRID = LrGrid((1e-3, 2e-3, 4e-3), 2.0, max_extensions=3)


def trials_for(losses: dict[float, float | None], arm: str = "a", seeds=(0,)) -> list[LrTrial]:
    return [LrTrial(arm, lr, seed, "ok" if loss is not None else "diverged", loss, 32)
            for lr, loss in losses.items() for seed in seeds]


def test_nothing_tuned_asks_for_the_registered_grid_and_an_interior_optimum_keeps_it():
    t = tune_arm(GRID, [], "a")  # nothing counts yet: the smallest rate
    assert t.grid == GRID.base and t.extended == 0 and not t.interior and t.lr == GRID.base[0]
    t = tune_arm(GRID, trials_for({1e-3: 3.0, 2e-3: 2.5, 4e-3: 2.8}), "a")
    assert (t.grid, t.lr, t.interior, t.extended) == (GRID.base, 2e-3, True, 0)
    grid = LrGrid((1e-3, 3e-3, 1e-2), 3.0)  # without refine, on two seeds
    t = tune_arm(grid, trials_for({lr: curve(5e-3)(lr) for lr in grid.base}, seeds=(7, 8)), "a")
    assert (t.grid, t.lr, t.interior, t.extended) == (grid.base, 3e-3, True, 0)


def test_a_grid_whose_optimum_sits_at_the_top_edge_is_extended_until_interior():
    # loss keeps falling up to 8e-3 and rises after: the grid grows one point at a time
    losses = {1e-3: 3.0, 2e-3: 2.8, 4e-3: 2.6}
    t = tune_arm(GRID, trials_for(losses), "a")
    assert t.grid == (1e-3, 2e-3, 4e-3, 8e-3) and not t.interior  # 8e-3 not tried yet
    # had the point past the edge diverged, the optimum would be interior
    t = tune_arm(GRID, trials_for({**losses, 8e-3: None}), "a")
    assert (t.lr, t.interior, t.grid[-1]) == (4e-3, True, 8e-3)
    losses[8e-3] = 2.5
    t = tune_arm(GRID, trials_for(losses), "a")
    assert t.grid[-1] == 1.6e-2 and t.extended == 2
    losses[1.6e-2] = 2.7
    t = tune_arm(GRID, trials_for(losses), "a")
    assert (t.lr, t.interior, t.extended) == (8e-3, True, 2)


def test_a_flat_grid_of_runs_that_did_not_learn_grows_down_to_its_cap_never_interior():
    """Post-norm at depth 12 ended at 3.212, 3.208, 3.206, 3.208 across a 30× range of rates:
    the unigram's loss, no optimum. Those runs end "did_not_learn" (they count as no loss),
    so the grid has no optimum: it grows downwards to its cap and is never called interior."""
    trials: list[LrTrial] = []
    for _ in range(GRID.max_extensions + 2):  # the registered grid, then each extension
        t = tune_arm(GRID, trials, "post")
        trials += [LrTrial("post", lr, 0, "did_not_learn", None, 32) for lr in t.grid
                   if not any(x.lr == lr for x in trials)]
    t = tune_arm(GRID, trials, "post")
    assert not t.interior and t.extended == GRID.max_extensions and t.lr == t.grid[0]
    assert t.grid[0] == rounded(1e-3 / 2 ** GRID.max_extensions)
    # a did-not-learn run is no loss: never counted, whatever its value
    assert not trains(finished("did_not_learn", 3.2)) and counted_loss(
        finished("did_not_learn", 3.2)) is None


def test_a_rate_failing_on_any_tuning_seed_is_never_chosen():
    trials = (trials_for({1e-3: 3.0, 2e-3: 2.5, 4e-3: 2.8})
              + trials_for({1e-3: 3.0, 2e-3: None, 4e-3: 2.8}, seeds=(1,)))
    t = tune_arm(GRID, trials, "a")  # 2e-3 fails once: 4e-3 is best, at the edge
    assert t.lr == 4e-3 and t.grid[-1] == 8e-3 and not t.interior
    # a tie goes to the smaller rate
    assert tune_arm(GRID, trials_for({1e-3: 3.0, 2e-3: 2.0, 4e-3: 2.0}), "a").lr == 2e-3


def test_every_width_and_arm_is_tuned_apart():
    trials = trials_for({1e-3: 3.0, 2e-3: 2.5, 4e-3: 2.8}) + [
        LrTrial("a", lr, 0, "ok", loss, 64) for lr, loss in ((1e-3, 2.0), (2e-3, 2.5),
                                                             (4e-3, 2.8))]
    assert tune_arm(GRID, trials, "a", 32).interior
    assert tune_arm(GRID, trials, "a", 64).grid[0] == 5e-4
    assert tune_arm(GRID, trials, "b").grid == GRID.base


@pytest.mark.parametrize("base", [(1e-3, 2e-3), (2e-3, 1e-3, 4e-3)])
def test_a_grid_needs_three_ascending_points(base):
    with pytest.raises(ValueError, match="at least 3 ascending"):
        LrGrid(base, 2.0)


def finished(status: str, val_loss: float | None) -> RunResult:
    return RunResult(status=status, final=final_metrics(val_loss, entropy=5.0))


def test_a_run_counts_when_it_finished_below_the_unigram_entropy():
    assert trains(finished("ok", 4.0)) and counted_loss(finished("ok", 4.0)) == 4.0
    for result in (finished("ok", 5.0), finished("ok", 6.0), finished("ok", math.nan),
                   finished("ok", None), finished("diverged", 4.0), finished("stuck", 4.0),
                   RunResult(status="ok"), RunResult(status="error", reason="boom")):
        assert not trains(result) and counted_loss(result) is None


def test_tuning_runs_read_as_trials_of_their_arm():
    def spec(arm: str, lr: float, seed: int, d: int) -> RunSpec:
        return RunSpec(f"{arm} {lr}", arm, seed, {"arm": arm, "train": {"lr": lr},
                                                   "model": {"d_model": d}}, lambda p: None)

    tuned = [(spec("a", 1e-3, 7, 32), finished("ok", 3.0)),
             (spec("a", 1e-3, 8, 32), finished("ok", 2.0)),
             (spec("a", 2e-3, 7, 32), finished("diverged", 3.0)),
             (spec("b", 1e-3, 7, 64), finished("ok", 6.0))]
    trials = lr_trials(tuned)
    assert trials == [LrTrial("a", 1e-3, 7, "ok", 3.0, 32), LrTrial("a", 1e-3, 8, "ok", 2.0, 32),
                      LrTrial("a", 2e-3, 7, "diverged", None, 32),
                      LrTrial("b", 1e-3, 7, "ok", None, 64)]
    assert mean_loss(trials, "a", 1e-3) == 2.5 and mean_loss(trials, "a", 1e-3, 64) is None
    assert mean_loss(trials, "a", 2e-3) is None and mean_loss(trials, "b", 1e-3) is None


REFINED = LrGrid((1e-3, 3e-3, 1e-2), 3.0, max_extensions=2, refine=True)


def curve(opt: float):
    """A loss curve in log lr with its minimum at `opt`."""
    return lambda lr: 2.0 + (math.log(lr) - math.log(opt)) ** 2


def test_refinement_waits_for_an_interior_optimum_then_tries_half_a_step_either_side():
    loss, seeds = curve(7e-4), (7, 8)  # optimum below the registered grid
    assert tune_arm(REFINED, [], "a").grid == REFINED.base  # nothing tuned: the grid as is
    losses = {lr: loss(lr) for lr in REFINED.base}
    t = tune_arm(REFINED, trials_for(losses, seeds=seeds), "a")
    # best at the bottom edge: the grid grows there first, no refinement yet
    assert t.grid == (3.33e-4, 1e-3, 3e-3, 1e-2) and not t.interior and t.extended == 1
    losses[3.33e-4] = loss(3.33e-4)
    t = tune_arm(REFINED, trials_for(losses, seeds=seeds), "a")
    # 1e-3 is now interior: refined at 1e-3·3^(∓1/2), untried, so nothing is interior yet
    assert t.grid == (3.33e-4, 5.77e-4, 1e-3, 1.73e-3, 3e-3, 1e-2)
    assert (t.lr, t.interior, t.extended) == (1e-3, False, 1)
    # one tuning seed of a refined point is not enough: the refinement runs on both
    partial = trials_for(losses, seeds=seeds) + trials_for({5.77e-4: loss(5.77e-4)}, seeds=(7,))
    assert not tune_arm(REFINED, partial, "a").interior
    losses.update({lr: loss(lr) for lr in (5.77e-4, 1.73e-3)})
    t = tune_arm(REFINED, trials_for(losses, seeds=seeds), "a")
    # the choice is among every point tried: the refined 5.77e-4 is nearest the optimum
    assert t.grid == (3.33e-4, 5.77e-4, 1e-3, 1.73e-3, 3e-3, 1e-2)
    assert (t.lr, t.interior, t.extended) == (5.77e-4, True, 1)
    assert mean_loss(trials_for(losses, seeds=seeds), "a", t.lr) == pytest.approx(loss(5.77e-4))


def test_no_refinement_around_an_edge_the_extensions_could_not_leave():
    grid = LrGrid((1e-3, 3e-3, 1e-2), 3.0, max_extensions=1, refine=True)
    loss = curve(1.0)  # far above the grid: the best stays at the top edge
    losses = {lr: loss(lr) for lr in (1e-3, 3e-3, 1e-2, 3e-2)}
    t = tune_arm(grid, trials_for(losses), "a")
    assert t.grid == (1e-3, 3e-3, 1e-2, 3e-2) and (t.lr, t.interior) == (3e-2, False)


def tuning_rounds(name: str, size: str, opt: float | None = None) -> list[list[RunSpec]]:
    """The suite's tuning stage at `size` as the runner plans it (`base.stored_tuning`): each
    round's new runs, every run scoring on the loss curve with its optimum at `opt` (default:
    near the middle point of the registered grid, a little above it)."""
    suite = get_suite(name)
    options = RunOptions.for_suite(suite, size, None)
    rounds: list[list[RunSpec]] = []
    tuned: list[tuple[RunSpec, RunResult]] = []
    specs = suite.tune(options, tuned)
    if opt is None:
        lrs = sorted({s.payload["train"]["lr"] for s in specs})
        opt = 1.2 * lrs[len(lrs) // 2]
    while new := [s for s in specs if s.run_id not in {t.run_id for t, _ in tuned}]:
        rounds.append(new)
        tuned += [(s, finished("ok", curve(opt)(s.payload["train"]["lr"]) / 2)) for s in new]
        specs = suite.tune(options, tuned)
    return rounds


@pytest.mark.parametrize("name", ["ffn", "placement", "width"])
def test_quick_refines_each_interior_optimum_on_both_tuning_seeds(name):
    # an optimum inside the quick grid: round 1 the ×3 grid, round 2 its refinement around
    # the best point, on the same two tuning seeds
    first, *more = tuning_rounds(name, "quick")
    arms = {s.payload["arm"] for s in first}
    seeds = sorted({s.seed for s in first})
    assert len(seeds) == 2 and len(first) == 3 * len(arms) * 2
    (refined,) = more
    assert len(refined) == 2 * len(arms) * 2
    for arm in arms:
        runs = [s for s in refined if s.payload["arm"] == arm]
        lrs = sorted({s.payload["train"]["lr"] for s in runs})
        assert sorted(s.seed for s in runs) == sorted(seeds * 2)
        base = {s.payload["train"]["lr"] for s in first if s.payload["arm"] == arm}
        best = sorted(base)[1]
        assert lrs == [rounded(best / math.sqrt(3)), rounded(best * math.sqrt(3))]


@pytest.mark.parametrize("name", ["ffn", "placement", "width"])
def test_tiny_and_full_plan_their_grids_without_refinement(name):
    for size in ("tiny", "full"):
        rounds = tuning_rounds(name, size)
        # an interior optimum on the registered grid: one round, that grid, nothing more
        assert len(rounds) == 1, size
        specs = rounds[0]
        assert len({s.seed for s in specs}) == (2 if size == "full" else 1)
    # tiny's grid grows at an edge exactly as before: one point, then the evaluation
    grown = tuning_rounds(name, "tiny", 2e-2)  # above tiny's grid (1e-3, 3e-3, 1e-2)
    assert len(grown) == 2 and {s.payload["train"]["lr"] for s in grown[1]} == {3e-2}
