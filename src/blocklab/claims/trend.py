"""A claim's effect against training compute: a straight line through the seeds of every rung
of a ladder, its interval, and where it would meet the page's statement.

    fit = fit_line([(0, Interval(5, -0.3, ...)), (1, Interval(5, -0.6, ...)), ...])
    fit.slope, fit.slope_low, fit.slope_high     # % per rung (4× compute), 95% interval
    meets(fit, -1.0)                             # the rung where the line reaches −1%, or None

The line is ordinary least squares on every seed's value (the seeds are the replication; a
rung's seeds share its x), computed exactly from each rung's n, mean and sd: the slope and
intercept are those of the per-seed regression, and its residual sum of squares is the
within-rung spread plus the rung means' distance from the line, on N − 2 degrees of freedom
(N seeds in all), so a curved trend widens the interval rather than hiding. Where the line
meets a threshold θ is Fieller's interval: the x at which the mean line's confidence band
contains θ; it is bounded only when the slope's own interval excludes 0 (otherwise the line
may never reach θ, and `meets` says so with None bounds). Both are extrapolations past the
top rung and are labelled as such by their readers. No PyTorch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import stats

from blocklab.errors import InputError
from blocklab.experiments.summaries import Interval

LEVEL = 0.95


@dataclass(frozen=True)
class LineFit:
    """y = intercept + slope · x over `n` seeds on `rungs` distinct x; `s` the residual
    standard deviation on `df` = n − 2 degrees of freedom; the slope's interval at `level`."""

    slope: float
    intercept: float
    slope_low: float
    slope_high: float
    s: float
    df: int
    n: int
    rungs: int
    x_mean: float
    sxx: float
    level: float = LEVEL

    @property
    def t(self) -> float:
        return float(stats.t.ppf(0.5 + self.level / 2, self.df))

    def at(self, x: float) -> float:
        return self.intercept + self.slope * x

    def band(self, x: float) -> tuple[float, float]:
        """The `level` confidence interval of the mean line at x."""
        half = self.t * self.s * math.sqrt(1 / self.n + (x - self.x_mean) ** 2 / self.sxx)
        return self.at(x) - half, self.at(x) + half

    def to_dict(self) -> dict:
        return {"slope": self.slope, "intercept": self.intercept, "slope_low": self.slope_low,
                "slope_high": self.slope_high, "s": self.s, "df": self.df, "n": self.n,
                "rungs": self.rungs, "x_mean": self.x_mean, "sxx": self.sxx,
                "level": self.level}

    @classmethod
    def from_dict(cls, data: dict) -> LineFit | None:
        """The fit `to_dict` wrote; None for one written before the line's centre (x_mean,
        sxx) was stored, whose band cannot be drawn."""
        if data.get("x_mean") is None or not data.get("sxx"):
            return None
        return cls(**{k: data[k] for k in ("slope", "intercept", "slope_low", "slope_high",
                                            "s", "df", "n", "rungs", "x_mean", "sxx",
                                            "level")})


@dataclass(frozen=True)
class Meeting:
    """Where the fitted line reaches `threshold`: at x = `at` (None when the slope is 0), in
    [low, high] at the fit's level; a None bound is unbounded on that side (the slope's
    interval includes 0). `first` and `top` are the lowest and highest rungs' x: a meeting
    outside them is an extrapolation, and one below `first` says the line moves away from
    the threshold as compute grows."""

    threshold: float
    at: float | None
    low: float | None
    high: float | None
    first: float
    top: float

    @property
    def extrapolated(self) -> bool:
        return self.at is None or not self.first <= self.at <= self.top

    @property
    def behind(self) -> bool:
        """The line reaches the threshold only below the smallest rung: growing compute takes
        it further away."""
        return self.at is not None and self.at < self.first

    def to_dict(self) -> dict:
        return {"threshold": self.threshold, "at": self.at, "low": self.low, "high": self.high,
                "extrapolated": self.extrapolated, "behind": self.behind}


def fit_line(points: Sequence[tuple[float, Interval]], level: float = LEVEL) -> LineFit:
    """OLS of every seed's value on x, from (x, Interval of the seeds at x) per rung; rungs
    with no seeds are left out. InputError with fewer than two distinct x or fewer than 3
    seeds (no degree of freedom left for the error)."""
    used = [(float(x), i) for x, i in points if i.n > 0 and i.mean is not None]
    if len({x for x, _ in used}) < 2 or sum(i.n for _, i in used) < 3:
        raise InputError(f"a trend needs seeds at two sizes or more and 3 seeds in all; got "
                         f"{[(x, i.n) for x, i in used]}")
    n = sum(i.n for _, i in used)
    x_mean = sum(i.n * x for x, i in used) / n
    y_mean = sum(i.n * i.mean for _, i in used) / n
    sxx = sum(i.n * (x - x_mean) ** 2 for x, i in used)
    sxy = sum(i.n * (x - x_mean) * (i.mean - y_mean) for x, i in used)
    slope = sxy / sxx
    intercept = y_mean - slope * x_mean
    within = sum((i.n - 1) * (i.sd or 0.0) ** 2 for _, i in used)
    between = sum(i.n * (i.mean - intercept - slope * x) ** 2 for x, i in used)
    df = n - 2
    s = math.sqrt((within + between) / df)
    half = float(stats.t.ppf(0.5 + level / 2, df)) * s / math.sqrt(sxx)
    return LineFit(slope, intercept, slope - half, slope + half, s, df, n,
                   len({x for x, _ in used}), x_mean, sxx, level)


def meets(fit: LineFit, threshold: float, first: float, top: float) -> Meeting:
    """Fieller's interval for the x where the mean line equals `threshold`: the x whose band
    (`LineFit.band`) contains it, the roots of (a + b·x − θ)² = t²·s²·(1/n + (x − x̄)²/Sxx)."""
    a, b, theta = fit.intercept, fit.slope, threshold
    at = None if b == 0 else (theta - a) / b
    k = (fit.t * fit.s) ** 2
    # In u = x − x̄: (c + b·u)² = k·(1/n + u²/Sxx), c the line's distance from θ at x̄.
    c = a + b * fit.x_mean - theta
    qa, qb, qc = b * b - k / fit.sxx, 2 * b * c, c * c - k / fit.n
    if qa <= 0:  # the slope's interval includes 0: the set is unbounded
        return Meeting(threshold, at, None, None, first, top)
    root = math.sqrt(max(qb * qb - 4 * qa * qc, 0.0))
    low, high = sorted(((-qb - root) / (2 * qa) + fit.x_mean,
                        (-qb + root) / (2 * qa) + fit.x_mean))
    return Meeting(threshold, at, low, high, first, top)
