"""The trend over a ladder: the line through every seed, computed from each rung's n, mean
and sd, against scipy's regression on the seeds themselves, and Fieller's meeting point
against a scan of the band."""

import math

import numpy as np
import pytest
from scipy import stats

from blocklab.claims.trend import LineFit, fit_line, meets
from blocklab.errors import InputError
from blocklab.experiments.summaries import Interval


def _interval(values) -> Interval:
    values = np.asarray(values, dtype=float)
    sd = float(values.std(ddof=1)) if len(values) > 1 else None
    return Interval(len(values), float(values.mean()), None, None, sd)


def _seeds(seed: int = 0):
    rng = np.random.default_rng(seed)
    xs = [0, 1, 2, 3]
    counts = [5, 5, 6, 4]
    # a curved truth, so the rung means miss the line and lack of fit enters the error
    return {x: 0.3 - 0.4 * x + 0.1 * x * x + rng.normal(0, 0.8, n)
            for x, n in zip(xs, counts, strict=True)}


def test_the_line_is_the_regression_on_every_seed():
    seeds = _seeds()
    fit = fit_line([(x, _interval(v)) for x, v in seeds.items()])
    x = np.concatenate([[k] * len(v) for k, v in seeds.items()])
    y = np.concatenate(list(seeds.values()))
    ref = stats.linregress(x, y)
    assert fit.slope == pytest.approx(ref.slope, rel=1e-12)
    assert fit.intercept == pytest.approx(ref.intercept, rel=1e-12)
    half = stats.t.ppf(0.975, len(y) - 2) * ref.stderr
    assert fit.slope_low == pytest.approx(ref.slope - half, rel=1e-10)
    assert fit.slope_high == pytest.approx(ref.slope + half, rel=1e-10)
    assert (fit.n, fit.df, fit.rungs) == (20, 18, 4)


def test_the_band_at_the_meeting_points_holds_the_threshold_exactly():
    seeds = {x: -0.5 * x + np.random.default_rng(x).normal(0, 0.2, 6) for x in range(4)}
    fit = fit_line([(x, _interval(v)) for x, v in seeds.items()])
    assert fit.slope_high < 0  # a resolved slope: the meeting interval is bounded
    found = meets(fit, -2.5, first=0.0, top=3.0)
    assert found.at == pytest.approx((-2.5 - fit.intercept) / fit.slope)
    assert found.low < found.at < found.high and found.extrapolated and not found.behind
    # at each end an edge of the band is the threshold (the falling line's lower edge at the
    # low end, its upper edge at the high end); inside, the band holds it; outside, not
    assert fit.band(found.low)[0] == pytest.approx(-2.5, abs=1e-9)
    assert fit.band(found.high)[1] == pytest.approx(-2.5, abs=1e-9)
    grid = np.linspace(found.low - 3, found.high + 3, 2001)
    inside = [lo <= -2.5 <= hi for lo, hi in map(fit.band, grid)]
    assert inside == [found.low <= g <= found.high for g in grid]


def test_an_unresolved_slope_meets_the_threshold_nowhere_for_sure():
    spread = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    fit = fit_line([(x, _interval(spread + 0.1 * x)) for x in range(3)])
    assert fit.slope_low < 0 < fit.slope_high
    found = meets(fit, -1.0, first=0.0, top=2.0)
    assert found.low is None and found.high is None and found.extrapolated
    # the rising line reaches −1 only at x = −10, below the smallest rung: away from it
    assert found.at == pytest.approx(-10.0) and found.behind


def test_the_slope_interval_covers_at_its_level():
    """Through the same code: 2,000 ladders of 4 rungs × 5 seeds with a true slope of −0.3;
    the 95% interval covers it 95% ± 1.5% of the time (binomial sd 0.5%)."""
    rng = np.random.default_rng(7)
    covered = 0
    for _ in range(2000):
        points = [(x, _interval(-0.3 * x + rng.normal(0, 1.0, 5))) for x in range(4)]
        fit = fit_line(points)
        covered += fit.slope_low <= -0.3 <= fit.slope_high
    assert abs(covered / 2000 - 0.95) < 0.015


def test_one_rung_is_no_trend():
    with pytest.raises(InputError, match="two sizes or more"):
        fit_line([(0, _interval([1.0, 2.0, 3.0]))])
    with pytest.raises(InputError, match="two sizes or more"):
        fit_line([(0, _interval([1.0])), (1, _interval([2.0]))])
    assert math.isfinite(fit_line([(0, _interval([1.0, 1.5])), (1, _interval([2.0]))]).slope)


def test_the_fit_read_back_from_its_dict_draws_the_same_band():
    fit = fit_line([(x, _interval(v)) for x, v in _seeds(3).items()])
    again = LineFit.from_dict(fit.to_dict())
    assert again == fit
    assert again.band(1.7) == fit.band(1.7)
    # at the seeds' mean x the band is the mean's own interval: t · s / √n either side
    low, high = fit.band(fit.x_mean)
    assert (high - low) / 2 == pytest.approx(fit.t * fit.s / math.sqrt(fit.n), rel=1e-12)
    # a fit stored before its centre was kept has no band to draw
    old = {k: v for k, v in fit.to_dict().items() if k not in ("x_mean", "sxx")}
    assert LineFit.from_dict(old) is None
