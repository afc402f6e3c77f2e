"""The trend over a ladder with the rung as the unit, against scipy, least squares on the
seeds, the hat-matrix moment formula, a scan of the band and simulated coverage."""

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


def _seeds(seed: int = 0, counts=(5, 5, 6, 4), tau: float = 0.0):
    rng = np.random.default_rng(seed)
    # a curved truth, so the rung means miss the line
    return {x: 0.3 - 0.4 * x + 0.1 * x * x + rng.normal(0, tau) + rng.normal(0, 0.8, n)
            for x, n in enumerate(counts)}


def test_with_equal_seeds_a_rung_the_line_is_the_regression_on_the_rung_means():
    """Equal n gives every rung the same weight whatever τ², and the Knapp–Hartung variance
    is then the residual variance of the means: scipy's linregress on the four means, t on 2
    degrees of freedom."""
    seeds = _seeds(1, counts=(5, 5, 5, 5), tau=0.6)
    fit = fit_line([(x, _interval(v)) for x, v in seeds.items()])
    xs = np.array(list(seeds))
    means = np.array([v.mean() for v in seeds.values()])
    ref = stats.linregress(xs, means)
    assert (fit.intercept, fit.slope) == pytest.approx((ref.intercept, ref.slope), rel=1e-12)
    half = stats.t.ppf(0.975, 2) * ref.stderr
    assert fit.slope_low == pytest.approx(ref.slope - half, rel=1e-10)
    assert fit.slope_high == pytest.approx(ref.slope + half, rel=1e-10)
    assert (fit.n, fit.df, fit.rungs) == (20, 2, 4)
    # fewer than three rungs is no trend
    with pytest.raises(InputError, match="three sizes or more"):
        fit_line([(0, _interval([1.0, 2.0, 3.0]))])
    with pytest.raises(InputError, match="three sizes or more"):
        fit_line([(0, _interval([1.0, 1.5])), (1, _interval([2.0, 2.2]))])
    # one seed a rung: no within-rung spread, every rung weighs the same, no lack-of-fit test
    fit = fit_line([(x, _interval([v])) for x, v in enumerate([0.1, 0.5, 0.7, 1.4])])
    ref = stats.linregress(range(4), [0.1, 0.5, 0.7, 1.4])
    assert fit.slope == pytest.approx(ref.slope) and fit.lack_of_fit is None
    assert fit.slope_high - fit.slope == pytest.approx(stats.t.ppf(0.975, 2) * ref.stderr)


def test_the_lack_of_fit_is_the_F_test_of_the_line_against_one_mean_per_rung():
    seeds = _seeds(2)
    fit = fit_line([(x, _interval(v)) for x, v in seeds.items()])
    x = np.concatenate([[k] * len(v) for k, v in seeds.items()]).astype(float)
    y = np.concatenate(list(seeds.values()))
    line = np.column_stack([np.ones_like(x), x])
    cells = (x[:, None] == np.arange(4)[None, :]).astype(float)
    sse_line = np.sum((y - line @ np.linalg.lstsq(line, y, rcond=None)[0]) ** 2)
    sse_cells = np.sum((y - cells @ np.linalg.lstsq(cells, y, rcond=None)[0]) ** 2)
    f = ((sse_line - sse_cells) / 2) / (sse_cells / (len(y) - 4))
    lack = fit.lack_of_fit
    assert (lack.df1, lack.df2) == (2, 16)
    assert lack.f == pytest.approx(f, rel=1e-10)
    assert lack.p == pytest.approx(stats.f.sf(f, 2, 16), rel=1e-10)
    assert fit.within_sd == pytest.approx(math.sqrt(sse_cells / 16), rel=1e-10)
    # the fit read back from its dict draws the same band
    fit = fit_line([(x, _interval(v)) for x, v in _seeds(3).items()])
    assert LineFit.from_dict(fit.to_dict()) == fit
    # at the weighted mean x the band is the weighted mean's own interval
    low, high = fit.band(fit.x_mean)
    assert (high - low) / 2 == pytest.approx(fit.t * math.sqrt(fit.scale / fit.weight),
                                             rel=1e-12)
    # a per-seed fit stored before the rung was the unit has no band of this kind
    old = {k: v for k, v in fit.to_dict().items() if k != "unit"}
    assert LineFit.from_dict(old) is None


def test_the_rung_variance_is_dersimonian_lairds_with_the_hat_matrix():
    """τ² = (Q − (k − 2)) / tr(P), P = W − W X (X'WX)⁻¹ X' W, W = diag(n_j / σ²), Q = y'P y;
    the line is then weighted least squares with 1 / (τ² + σ²/n_j)."""
    seeds = _seeds(3, counts=(10, 5, 4, 3), tau=0.9)
    fit = fit_line([(x, _interval(v)) for x, v in seeds.items()])
    n = np.array([len(v) for v in seeds.values()], dtype=float)
    y = np.array([v.mean() for v in seeds.values()])
    sigma2 = sum((len(v) - 1) * v.var(ddof=1) for v in seeds.values()) / (n.sum() - 4)
    x = np.column_stack([np.ones(4), np.arange(4.0)])
    w = np.diag(n / sigma2)
    p = w - w @ x @ np.linalg.inv(x.T @ w @ x) @ x.T @ w
    tau2 = max(0.0, (y @ p @ y - 2) / np.trace(p))
    assert tau2 > 0 and fit.tau == pytest.approx(math.sqrt(tau2), rel=1e-9)
    weights = np.diag(1 / (tau2 + sigma2 / n))
    beta = np.linalg.solve(x.T @ weights @ x, x.T @ weights @ y)
    assert (fit.intercept, fit.slope) == pytest.approx(tuple(beta), rel=1e-10)
    residual = y - x @ beta
    scale = residual @ weights @ residual / 2
    cov = scale * np.linalg.inv(x.T @ weights @ x)
    half = stats.t.ppf(0.975, 2) * math.sqrt(cov[1, 1])
    assert (fit.slope_low, fit.slope_high) == pytest.approx((beta[1] - half, beta[1] + half),
                                                            rel=1e-9)
    # the band is the same covariance read at x
    at = np.array([1.0, 5.5])
    band_half = stats.t.ppf(0.975, 2) * math.sqrt(at @ cov @ at)
    assert fit.band(5.5) == pytest.approx((at @ beta - band_half, at @ beta + band_half),
                                          rel=1e-9)


def test_the_band_at_the_meeting_points_holds_the_threshold_exactly_if_the_slope_is_resolved():
    seeds = {x: -0.5 * x + np.random.default_rng(x).normal(0, 0.2, 6) for x in range(4)}
    fit = fit_line([(x, _interval(v)) for x, v in seeds.items()])
    assert fit.slope_high < 0  # a resolved slope: the meeting interval is bounded
    found = meets(fit, -1.2, first=0.0, top=3.0)
    assert found.at == pytest.approx((-1.2 - fit.intercept) / fit.slope)
    assert found.low < found.at < found.high and not found.extrapolated and not found.behind
    # at each end an edge of the band is the threshold (the falling line's lower edge at the
    # low end, its upper edge at the high end); inside, the band holds it; outside, not
    assert fit.band(found.low)[0] == pytest.approx(-1.2, abs=1e-9)
    assert fit.band(found.high)[1] == pytest.approx(-1.2, abs=1e-9)
    grid = np.linspace(found.low - 3, found.high + 3, 2001)
    inside = [lo <= -1.2 <= hi for lo, hi in map(fit.band, grid)]
    assert inside == [found.low <= g <= found.high for g in grid]
    assert meets(fit, -5.0, first=0.0, top=3.0).extrapolated  # past the top rung
    # an unresolved slope meets the threshold nowhere for sure
    rng = np.random.default_rng(4)
    spread = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    fit = fit_line([(x, _interval(spread + 0.1 * x + rng.normal(0, 0.5)))
                    for x in range(4)])
    assert fit.slope_low < 0 < fit.slope_high
    found = meets(fit, -1.0, first=0.0, top=3.0)
    assert found.low is None and found.high is None


@pytest.mark.parametrize(("tau", "counts"), [
    (0.0, (5, 5, 5, 5)), (0.65, (5, 5, 5, 5)), (1.5, (5, 5, 5, 5)),
    (0.65, (10, 5, 5, 5)),  # ten seeds at quick: a ladder whose quick rung the report ran
])
def test_the_slope_interval_covers_at_its_level_with_rung_level_noise(tau, counts):
    """2,000 ladders of 4 rungs off a slope of −0.3 by τ seed sds (C16: ~0.65), equal seeds
    a rung or not: the interval covers 95% ± 1.5% at every τ; a per-seed regression falls
    short once τ > 0."""
    rng = np.random.default_rng(7)
    covered = old = 0
    for _ in range(2000):
        seeds = {x: -0.3 * x + rng.normal(0, tau) + rng.normal(0, 1.0, n)
                 for x, n in enumerate(counts)}
        fit = fit_line([(x, _interval(v)) for x, v in seeds.items()])
        covered += fit.slope_low <= -0.3 <= fit.slope_high
        xs = np.repeat(np.arange(4.0), counts)
        ref = stats.linregress(xs, np.concatenate(list(seeds.values())))
        old += abs(ref.slope + 0.3) <= stats.t.ppf(0.975, len(xs) - 2) * ref.stderr
    assert abs(covered / 2000 - 0.95) < 0.015
    if tau >= 0.65:
        assert old / 2000 < 0.85
