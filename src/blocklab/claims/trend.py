"""A claim's effect against training compute, with the rung as the unit of replication: a
line through the rungs' means, its interval, whether a line fits at all, and where it meets
the page's statement inside the rungs measured.

    fit = fit_line([(0, Interval(5, -0.3, ...)), (1, Interval(5, -0.6, ...)), ...])
    fit.slope, fit.slope_low, fit.slope_high     # % per rung (2× compute), 95% interval
    fit.lack_of_fit.p                            # does a line fit the rung means?
    meets(fit, -1.0, first, top)                 # where the line reaches −1%, or None bounds

Why rungs, not seeds: every seed of a rung shares its tuning, shape and data order, so a
per-seed slope interval covers far less often than it states (`benchmarks/trend_coverage.py`).
Each rung's mean is one observation with variance τ² + σ²/n_j (σ² pooled within rungs, τ² by
DerSimonian–Laird); the line is weighted least squares, its slope's variance scaled by
Knapp–Hartung and read on t with k − 2 df for k ≥ 3 rungs. The lack of fit is the F test of
the line against one mean per rung, on the seeds; where the line meets a threshold is
Fieller's interval. No PyTorch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

from blocklab.errors import InputError
from blocklab.experiments.summaries import Interval

LEVEL = 0.95


@dataclass(frozen=True)
class LackOfFit:
    """The F test of a line against one mean per rung: F on (`df1`, `df2`) = (k − 2,
    N − k) degrees of freedom and its p value."""

    f: float
    df1: int
    df2: int
    p: float


@dataclass(frozen=True)
class LineFit:
    """y = intercept + slope · x through `rungs` rung means (`n` seeds in all), the slope's
    interval at `level` on `df` = rungs − 2; `weight` = Σw, `sxx` = Σw(x − x_mean)², `scale` the
    Knapp–Hartung factor, `tau` the rung-to-rung sd, `within_sd` the seeds' pooled sd."""

    slope: float
    intercept: float
    slope_low: float
    slope_high: float
    df: int
    n: int
    rungs: int
    x_mean: float
    sxx: float
    weight: float
    scale: float
    tau: float
    within_sd: float | None
    lack_of_fit: LackOfFit | None
    level: float = LEVEL

    @property
    def t(self) -> float:
        return float(stats.t.ppf(0.5 + self.level / 2, self.df))

    def at(self, x: float) -> float:
        return self.intercept + self.slope * x

    def band(self, x: float) -> tuple[float, float]:
        """The `level` confidence interval of the mean line at x."""
        half = self.t * math.sqrt(self.scale * (1 / self.weight
                                                + (x - self.x_mean) ** 2 / self.sxx))
        return self.at(x) - half, self.at(x) + half

    def to_dict(self) -> dict:
        return {**asdict(self), "unit": "rung"}

    @classmethod
    def from_dict(cls, data: dict) -> LineFit | None:
        """The fit `to_dict` wrote; None for a per-seed fit (no rung-level weights)."""
        if data.get("unit") != "rung":
            return None
        lack = data.get("lack_of_fit")
        return cls(**{**{k: v for k, v in data.items() if k != "unit"},
                      "lack_of_fit": None if lack is None else LackOfFit(**lack)})


@dataclass(frozen=True)
class Meeting:
    """Where the fitted line reaches `threshold`: at x = `at` (None for a flat line), in
    [low, high] at the fit's level (a None bound: unbounded); outside the rungs' x, `first` …
    `top`, it is an extrapolation."""

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
    """The rung-level line through (x, Interval of a rung's seeds) per rung (rungs without
    seeds left out); InputError below three distinct x (no df for the rung-to-rung spread)."""
    used = [(float(x), i) for x, i in points if i.n > 0 and i.mean is not None]
    if len({x for x, _ in used}) < 3:
        raise InputError(f"a trend needs rungs at three sizes or more (the rung is the unit "
                         f"of replication); got {[(x, i.n) for x, i in used]}")
    x = np.array([p for p, _ in used])
    y = np.array([i.mean for _, i in used], dtype=float)
    n = np.array([i.n for _, i in used], dtype=float)
    k, total = len(used), int(n.sum())
    within = sum((i.n - 1) * i.sd ** 2 for _, i in used if i.n > 1 and i.sd is not None)
    within_df = sum(i.n - 1 for _, i in used if i.n > 1 and i.sd is not None)
    sigma2 = within / within_df if within_df else None
    # τ² by DerSimonian–Laird from the fit weighted n_j / σ²; without σ² (one seed a rung)
    # every rung weighs the same.
    tau2 = 0.0
    if sigma2:
        w0 = n / sigma2
        fixed = _wls(x, y, w0)[0]
        residual = y - fixed[0] - fixed[1] * x
        q = float(np.sum(w0 * residual ** 2))
        design = np.column_stack([np.ones(k), x])
        inv = np.linalg.inv(design.T @ (w0[:, None] * design))
        c = float(w0.sum() - np.trace(inv @ (design.T @ ((w0 ** 2)[:, None] * design))))
        tau2 = max(0.0, (q - (k - 2)) / c) if c > 0 else 0.0
        w = 1.0 / (tau2 + sigma2 / n)
    else:
        w = np.ones(k)
    line, x_mean, sxx = _wls(x, y, w)
    slope, intercept = float(line[1]), float(line[0])
    df = k - 2
    # Knapp–Hartung: scaled by the rung means' own scatter about the line (k − 2 df)
    scale = float(np.sum(w * (y - intercept - slope * x) ** 2)) / df
    half = float(stats.t.ppf(0.5 + level / 2, df)) * math.sqrt(scale / sxx)
    return LineFit(slope, intercept, slope - half, slope + half, df, total, k, x_mean, sxx,
                   float(w.sum()), scale, math.sqrt(tau2),
                   None if sigma2 is None else math.sqrt(sigma2),
                   _lack_of_fit(x, y, n, within, within_df), level)


def _wls(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, float, float]:
    """The weighted least-squares line as [intercept, slope], the weighted mean x and
    Σw(x − x̄)²."""
    x_mean = float(np.sum(w * x) / np.sum(w))
    sxx = float(np.sum(w * (x - x_mean) ** 2))
    slope = float(np.sum(w * (x - x_mean) * y) / sxx)
    intercept = float(np.sum(w * y) / np.sum(w)) - slope * x_mean
    return np.array([intercept, slope]), x_mean, sxx


def _lack_of_fit(x: np.ndarray, y: np.ndarray, n: np.ndarray, within: float,
                 within_df: int) -> LackOfFit | None:
    """The per-seed line's extra residual over one mean per rung, F on (k − 2, N − k); None
    without seeds to estimate the pure error from."""
    if not within_df or within <= 0:
        return None
    line = _wls(x, y, n)[0]
    between = float(np.sum(n * (y - line[0] - line[1] * x) ** 2))
    df1 = len(x) - 2
    f = (between / df1) / (within / within_df)
    return LackOfFit(f, df1, within_df, float(stats.f.sf(f, df1, within_df)))


def meets(fit: LineFit, threshold: float, first: float, top: float) -> Meeting:
    """Fieller's interval for the x where the mean line equals `threshold`: the x whose band
    (`LineFit.band`) contains it, the roots of (a + b·x − θ)² = t²·v·(1/W + (x − x̄)²/Sxx)."""
    a, b, theta = fit.intercept, fit.slope, threshold
    at = None if b == 0 else (theta - a) / b
    k = fit.t ** 2 * fit.scale
    # In u = x − x̄: (c + b·u)² = k·(1/W + u²/Sxx), c the line's distance from θ at x̄.
    c = a + b * fit.x_mean - theta
    qa, qb, qc = b * b - k / fit.sxx, 2 * b * c, c * c - k / fit.weight
    if qa <= 0:  # the slope's interval includes 0: the set is unbounded
        return Meeting(threshold, at, None, None, first, top)
    root = math.sqrt(max(qb * qb - 4 * qa * qc, 0.0))
    low, high = sorted(((-qb - root) / (2 * qa) + fit.x_mean,
                        (-qb + root) / (2 * qa) + fit.x_mean))
    return Meeting(threshold, at, low, high, first, top)
