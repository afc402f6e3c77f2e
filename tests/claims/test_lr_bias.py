"""The lr bias of a tuned rate: a parabola in log lr through the chosen rate and its
neighbours, checked against parabolas whose optimum is known by construction."""

import math

import pytest

from blocklab.claims.lr_bias import LrBias, comparison_bias, lr_bias, vertex
from blocklab.experiments.summaries import LrTrial

GRID = (3e-3, 1e-2, 3e-2, 1e-1)


def _trials(arm, f, seeds=(0,), grid=GRID, d_model=64):
    return [LrTrial(arm, lr, s, "ok", f(lr, s), d_model) for lr in grid for s in seeds]


def test_an_exact_parabola_gives_back_its_optimum_and_the_loss_left_at_the_chosen_rate():
    # loss = 2 + 0.05·(ln lr − ln 0.017)²: optimum 0.017, chosen 1e-2
    a, best = 0.05, 0.017
    trials = _trials("glu", lambda lr, s: 2 + a * (math.log(lr) - math.log(best)) ** 2)
    found = lr_bias(trials, "glu", 1e-2)
    assert found.optimum == pytest.approx(best, rel=1e-9)
    assert found.excess == pytest.approx(a * math.log(1e-2 / best) ** 2, rel=1e-9)


def test_the_curve_is_the_mean_over_tuning_seeds_and_only_at_the_width_asked():
    # seed 1 adds a constant: the mean curve has the same optimum
    trials = _trials("relu", lambda lr, s: 2 + 0.1 * math.log(lr / 1e-2) ** 2 + 0.3 * s,
                     seeds=(0, 1))
    trials += _trials("relu", lambda lr, s: 9.0, d_model=128)  # another width: ignored
    found = lr_bias(trials, "relu", 1e-2, d_model=64)
    assert found.optimum == pytest.approx(1e-2) and found.excess == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize(("chosen", "f", "why"), [
    (3e-3, lambda lr, s: 2 + math.log(lr) ** 2, "at the grid's low edge"),
    (1e-1, lambda lr, s: 2 + math.log(lr) ** 2, "at the grid's high edge"),
    (1e-2, lambda lr, s: 2 - 0.1 * math.log(lr / 1e-2) ** 2, "curving down: no minimum"),
    (1e-2, lambda lr, s: None if lr == 3e-2 else 2.0, "a neighbour did not count"),
])
def test_no_bias_is_read_where_the_curve_gives_no_optimum(chosen, f, why):
    found = lr_bias(_trials("swiglu", f), "swiglu", chosen)
    assert found == LrBias("swiglu", chosen, None, None), why


def test_the_optimum_is_never_read_past_the_neighbours_tried():
    # nearly straight: the vertex lies far past 3e-2, and is clipped there
    xs = [math.log(v) for v in (3e-3, 1e-2, 3e-2)]
    x_star, a = vertex(xs, [2.3, 2.0, 1.75])
    assert x_star > xs[2] and a > 0
    found = lr_bias(_trials("geglu", lambda lr, s: {3e-3: 2.3, 1e-2: 2.0, 3e-2: 1.75,
                                                     1e-1: 2.5}[lr]), "geglu", 1e-2)
    assert found.optimum == pytest.approx(3e-2)
    assert found.excess == pytest.approx(a * (xs[1] - xs[2]) ** 2)


def test_the_comparison_bias_is_the_difference_of_excesses_over_the_baseline_loss():
    arm, base = LrBias("glu", 1e-2, 0.017, 0.012), LrBias("relu", 1e-2, 0.011, 0.002)
    assert comparison_bias(arm, base, 2.0) == pytest.approx(100 * 0.010 / 2.0)
    assert comparison_bias(LrBias("glu", 1e-2, None, None), base, 2.0) is None
    assert comparison_bias(arm, base, None) is None
