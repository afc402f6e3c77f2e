"""Statistics of seeded experiments, on `scipy.stats` (NumPy and SciPy only, no PyTorch).

An experiment here measures one number per seed for each arm; arms run with the same seed are
paired, so the evidence about an arm-vs-arm claim is the list of per-seed differences
d_1, …, d_n. This module turns such lists into decisions:

    paired_interval    mean of d with its two-sided (1 − α) Student-t interval
    tost               equivalence within ±margin by two one-sided t tests
    power              chance that the t test on n seeds detects a true effect
    detectable_effect  the smallest effect n seeds detect with the wanted power
    seeds_needed       the fewest seeds that detect an effect with the wanted power
    spent_alpha        the Lan–DeMets O'Brien–Fleming-type alpha-spending function
    pocock_spent_alpha the Lan–DeMets Pocock-type alpha-spending function
    hsd_spent_alpha    the Hwang–Shih–DeCani alpha-spending family, parameter γ
    spent_by           one of SPENDINGS by name ("obf", "pocock", "hsd(γ)", "fixed")
    obrien_fleming_design
                       boundaries and per-look nominal alpha of a group-sequential design
    log_ratio_interval a ratio of paired timings: the geometric mean of the paired
                       ratios with a Student t interval on their logs

Conventions: α (`alpha`) is always the two-sided error rate of an interval or test unless a
function says otherwise; `sd` is the sample standard deviation (ddof = 1) of the n values; bad
input (empty or non-finite samples, α outside (0, 1), a negative sd, ...) raises
`blocklab.errors.InputError` naming the value. Every function is pure: no printing, no global
random state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize, stats

from blocklab.errors import InputError

Sided = Literal["two", "one"]


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its two-sided (1 − alpha) confidence interval.

    value: the estimate (a mean difference, or a ratio)
    ci_low, ci_high: the interval's bounds
    n: the number of values (seeds, or paired repeats) it was made from
    sd: the sample sd (ddof = 1) of those n values (for a ratio: of the per-pair log ratios)
    alpha: the interval's two-sided error rate (0.05 for a 95% interval)
    """

    value: float
    ci_low: float
    ci_high: float
    n: int
    sd: float
    alpha: float

    @property
    def half_width(self) -> float:
        """(ci_high − ci_low) / 2."""
        return (self.ci_high - self.ci_low) / 2


@dataclass(frozen=True)
class Equivalence:
    """The two one-sided tests (TOST) of equivalence within ±margin.

    p_lower: p-value of H0: μ ≤ −margin against μ > −margin
    p_upper: p-value of H0: μ ≥ +margin against μ < +margin
    equivalent: both p-values below alpha, the same as `interval` lying strictly inside ±margin
    interval: the (1 − 2·alpha) t interval (a 90% interval for alpha = 0.05)
    margin, alpha: as given (alpha is each one-sided test's level)
    """

    p_lower: float
    p_upper: float
    equivalent: bool
    interval: Estimate
    margin: float
    alpha: float

    @property
    def p_value(self) -> float:
        """The TOST p-value, max(p_lower, p_upper): equivalence is shown when it is < alpha."""
        return max(self.p_lower, self.p_upper)


@dataclass(frozen=True)
class SequentialDesign:
    """A two-sided group-sequential design with Lan–DeMets O'Brien–Fleming-type spending.

    fractions: information fractions t_1 < … < t_K = 1 of the looks (seeds so far / seeds at
        the last look)
    alpha: the overall two-sided type-I error rate
    boundaries: c_k; stop at look k when |Z_k| ≥ c_k
    spent: α*(t_k), the cumulative type-I error spent by look k (`spent_alpha`)
    nominal_alpha: 2·(1 − Φ(c_k)), the two-sided level of look k taken alone; a (1 −
        nominal_alpha[k]) interval at look k is the repeated confidence interval of the design
    """

    fractions: tuple[float, ...]
    alpha: float
    boundaries: tuple[float, ...]
    spent: tuple[float, ...]
    nominal_alpha: tuple[float, ...]


# --- input checks -------------------------------------------------------------------------------
def _sample(values: ArrayLike, name: str) -> np.ndarray:
    """`values` as a 1-D float64 array: non-empty and all finite, else InputError."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be numbers, got {values!r}") from exc
    if arr.ndim != 1:
        raise InputError(f"{name} must be a 1-D sequence of numbers, got shape {arr.shape}")
    if arr.size == 0:
        raise InputError(f"{name} is empty; it needs at least one value")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise InputError(f"{name}[{bad[0]}] is {arr[bad[0]]}; every value must be finite "
                         "(drop failed runs before taking statistics)")
    return arr


def _check_alpha(alpha: float, name: str = "alpha") -> float:
    if not (isinstance(alpha, int | float) and 0 < alpha < 1):
        raise InputError(f"{name} must lie strictly between 0 and 1, got {alpha!r}")
    return float(alpha)


def _check_finite(value: float, name: str) -> float:
    if not (isinstance(value, int | float) and math.isfinite(value)):
        raise InputError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def _check_sd(sd: float, *, positive: bool) -> float:
    sd = _check_finite(sd, "sd")
    if sd < 0 or (positive and sd == 0):
        allowed = "> 0" if positive else ">= 0"
        raise InputError(f"sd must be {allowed}, got {sd!r}")
    return sd


def _check_n(n: int, name: str = "n") -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 2:
        raise InputError(f"{name} must be an integer >= 2, got {n!r}")
    return int(n)


def _check_sided(sided: str) -> Sided:
    if sided not in ("two", "one"):
        raise InputError(f"sided must be 'two' or 'one', got {sided!r}")
    return sided  # type: ignore[return-value]


# --- paired t interval --------------------------------------------------------------------------
def interval_from_summary(mean: float, sd: float, n: int, alpha: float = 0.05) -> Estimate:
    """The two-sided (1 − alpha) Student-t interval of a mean from its summary numbers:

        mean ± t_{1−alpha/2, n−1} · sd / √n

    with t from `scipy.stats.t.ppf`. n < 2 raises InputError: one seed has no spread, and an
    interval of infinite width would only hide that (callers with one seed report the mean
    alone)."""
    mean = _check_finite(mean, "mean")
    sd = _check_sd(sd, positive=False)
    n = _check_n(n)
    alpha = _check_alpha(alpha)
    half = float(stats.t.ppf(1 - alpha / 2, n - 1)) * sd / math.sqrt(n)
    return Estimate(mean, mean - half, mean + half, n, sd, alpha)


def paired_interval(differences: ArrayLike, alpha: float = 0.05) -> Estimate:
    """Mean of the per-seed differences d_i = a_i − b_i with its two-sided (1 − alpha) t
    interval, mean ± t_{1−alpha/2, n−1} · sd / √n (`interval_from_summary`).

    differences: [n], finite, n ≥ 2 (else InputError)."""
    d = _sample(differences, "differences")
    if d.size < 2:
        raise InputError(f"differences has {d.size} value; a t interval needs at least 2")
    return interval_from_summary(float(d.mean()), float(d.std(ddof=1)), int(d.size), alpha)


# --- equivalence (TOST) -------------------------------------------------------------------------
def tost_from_summary(mean: float, sd: float, n: int, margin: float,
                      alpha: float = 0.05) -> Equivalence:
    """Two one-sided t tests of equivalence within ±margin (Schuirmann 1987), from summary
    numbers. With se = sd / √n and df = n − 1:

        p_lower = P(T_df ≥ (mean + margin) / se)    H0: μ ≤ −margin
        p_upper = P(T_df ≤ (mean − margin) / se)    H0: μ ≥ +margin

    Equivalence is shown when both are < alpha, which is the same as the (1 − 2·alpha) t
    interval lying strictly inside (−margin, +margin)."""
    margin = _check_finite(margin, "margin")
    if margin <= 0:
        raise InputError(f"margin must be > 0, got {margin!r}")
    alpha = _check_alpha(alpha)
    if alpha >= 0.5:
        raise InputError(f"alpha must be < 0.5 for TOST (its interval is 1 − 2·alpha), "
                         f"got {alpha!r}")
    interval = interval_from_summary(mean, sd, n, 2 * alpha)
    se = interval.sd / math.sqrt(n)
    if se == 0:
        # Every difference equal: the statistics are ±inf (or 0/0 on the margin itself);
        # decide as the interval [mean, mean] does.
        p_lower = 0.0 if mean > -margin else 1.0
        p_upper = 0.0 if mean < margin else 1.0
    else:
        p_lower = float(stats.t.sf((mean + margin) / se, n - 1))
        p_upper = float(stats.t.cdf((mean - margin) / se, n - 1))
    equivalent = p_lower < alpha and p_upper < alpha
    return Equivalence(p_lower, p_upper, equivalent, interval, margin, alpha)


def tost(differences: ArrayLike, margin: float, alpha: float = 0.05) -> Equivalence:
    """Two one-sided t tests of equivalence within ±margin of per-seed differences
    (`tost_from_summary`); differences: [n], finite, n ≥ 2."""
    d = _sample(differences, "differences")
    if d.size < 2:
        raise InputError(f"differences has {d.size} value; a t test needs at least 2")
    return tost_from_summary(float(d.mean()), float(d.std(ddof=1)), int(d.size), margin, alpha)


# --- power and the detectable effect ------------------------------------------------------------
def _power_at_ncp(ncp: float, df: int, alpha: float, sided: Sided) -> float:
    """Power of the one-sample t test with df degrees of freedom at non-centrality ncp ≥ 0."""
    if sided == "two":
        crit = stats.t.ppf(1 - alpha / 2, df)
        # Both rejection tails, as R's power.t.test(strict = TRUE) and G*Power count them. The
        # lower one, F_nct(−c; df, δ), is taken as 1 − F_nct(c; df, −δ) (the same by symmetry):
        # scipy's nct.cdf returns nan far in the lower tail (e.g. df = 99, δ = 10, c = 1.98).
        return float(stats.nct.sf(crit, df, ncp) + stats.nct.sf(crit, df, -ncp))
    crit = stats.t.ppf(1 - alpha, df)
    return float(stats.nct.sf(crit, df, ncp))


def power(effect: float, sd: float, n: int, alpha: float = 0.05,
          sided: Sided = "two") -> float:
    """Power of the paired (one-sample) t test on n seeds against a true mean difference
    `effect` with per-seed sd `sd`, from the non-central t distribution:

        df = n − 1,  δ = |effect| / sd · √n,  c = t_{1−alpha/2, df} (two-sided; t_{1−alpha, df}
        one-sided, testing in the direction of the effect)
        two-sided: power = 1 − F_nct(c; df, δ) + F_nct(−c; df, δ)
        one-sided: power = 1 − F_nct(c; df, δ)

    At effect = 0 the power is alpha."""
    effect = _check_finite(effect, "effect")
    sd = _check_sd(sd, positive=True)
    n = _check_n(n)
    alpha = _check_alpha(alpha)
    sided = _check_sided(sided)
    return _power_at_ncp(abs(effect) / sd * math.sqrt(n), n - 1, alpha, sided)


def _check_power(target: float, alpha: float) -> float:
    if not (isinstance(target, int | float) and alpha < target < 1):
        raise InputError(f"power must lie strictly between alpha ({alpha:g}) and 1, "
                         f"got {target!r}")
    return float(target)


def detectable_effect(sd: float, n: int, power: float = 0.8, alpha: float = 0.05,
                      sided: Sided = "two") -> float:
    """The smallest true effect (> 0) that the paired t test on n seeds with per-seed sd `sd`
    detects with probability `power`: the root in δ of `power`'s formula, solved with
    `scipy.optimize.brentq`, returned as effect = δ · sd / √n."""
    sd = _check_sd(sd, positive=True)
    n = _check_n(n)
    alpha = _check_alpha(alpha)
    sided = _check_sided(sided)
    target = _check_power(power, alpha)
    df = n - 1

    def gap(ncp: float) -> float:
        return _power_at_ncp(ncp, df, alpha, sided) - target

    # Power rises from alpha at δ = 0 towards 1; double the upper end until it brackets.
    high = 1.0
    while gap(high) < 0:
        high *= 2
    ncp = optimize.brentq(gap, 0.0, high, xtol=1e-12, rtol=1e-12)
    return float(ncp * sd / math.sqrt(n))


def seeds_needed(effect: float, sd: float, power: float = 0.8, alpha: float = 0.05,
                 sided: Sided = "two", max_n: int = 10_000) -> int | None:
    """The fewest seeds n ≥ 2 at which the paired t test detects a true effect `effect` with
    per-seed sd `sd` with probability ≥ `power` (`power`'s formula, which rises with n); None
    when even max_n seeds fall short (an effect of 0 is never detected beyond alpha)."""
    effect = _check_finite(effect, "effect")
    sd = _check_sd(sd, positive=True)
    alpha = _check_alpha(alpha)
    sided = _check_sided(sided)
    target = _check_power(power, alpha)
    max_n = _check_n(max_n, "max_n")

    def enough(n: int) -> bool:
        return _power_at_ncp(abs(effect) / sd * math.sqrt(n), n - 1, alpha, sided) >= target

    if not enough(max_n):
        return None
    low, high = 1, max_n  # invariant: n = low falls short (n = 1 has no test), n = high suffices
    while high - low > 1:
        mid = (low + high) // 2
        if enough(mid):
            high = mid
        else:
            low = mid
    return high


# --- group-sequential design --------------------------------------------------------------------
def spent_alpha(t: float, alpha: float = 0.05) -> float:
    """Two-sided Lan–DeMets O'Brien–Fleming-type spending function (Lan & DeMets 1983): the
    type-I error a symmetric two-sided design may have spent by information fraction t,

        α*(t) = 2 · [2 − 2·Φ(z_{1−α/4} / √t)],   0 < t ≤ 1,   α*(0) = 0,   α*(1) = α

    i.e. each side spends the one-sided function 2 − 2·Φ(z_{1−α₁/2} / √t) at α₁ = α/2. This is
    the convention of the published tables (Jennison & Turnbull 2000; R's ldbounds with
    alpha = c(α/2, α/2); gsDesign's sfLDOF with two-sided symmetric test.type = 2), whose K = 5
    boundaries start at 4.877. (Putting the two-sided α straight into the one-sided function,
    2 − 2·Φ(z_{1−α/2} / √t), is another function: it starts K = 5 at 4.383.) It spends almost
    nothing early, so early looks stop only on overwhelming evidence."""
    alpha = _check_alpha(alpha)
    if not (isinstance(t, int | float) and 0 <= t <= 1):
        raise InputError(f"information fraction t must lie in [0, 1], got {t!r}")
    if t == 0:
        return 0.0
    # 1 − Φ(x) written with the survival function, exact for the tiny early values.
    return float(4 * stats.norm.sf(stats.norm.isf(alpha / 4) / math.sqrt(t)))


def _check_fraction(t: float) -> float:
    if not (isinstance(t, int | float) and 0 <= t <= 1):
        raise InputError(f"information fraction t must lie in [0, 1], got {t!r}")
    return float(t)


def pocock_spent_alpha(t: float, alpha: float = 0.05) -> float:
    """Lan–DeMets Pocock-type spending function (Lan & DeMets 1983):

        α*(t) = α · ln(1 + (e − 1)·t),   0 ≤ t ≤ 1,   α*(0) = 0,   α*(1) = α.

    It spends early: about 62% of α by half the information. Linear in α, so the two-sided
    function and twice the one-sided one at α/2 are the same function."""
    alpha, t = _check_alpha(alpha), _check_fraction(t)
    return 0.0 if t == 0 else alpha if t == 1 else alpha * math.log1p((math.e - 1) * t)


def hsd_spent_alpha(t: float, alpha: float = 0.05, gamma: float = -4.0) -> float:
    """Hwang–Shih–DeCani spending function with parameter γ ≠ 0 (Hwang, Shih & DeCani 1990):

        α*(t) = α · (1 − e^{−γt}) / (1 − e^{−γ}),   0 ≤ t ≤ 1.

    γ = −4 spends about as late as O'Brien–Fleming, γ = 1 about as early as Pocock; γ → 0
    is the uniform α·t (not allowed here: name it by another γ). Linear in α, like Pocock's."""
    alpha, t = _check_alpha(alpha), _check_fraction(t)
    gamma = _check_finite(gamma, "gamma")
    if gamma == 0:
        raise InputError("gamma must be nonzero (γ → 0 is the uniform α·t), got 0")
    if t == 0:
        return 0.0
    if t == 1:
        return alpha
    return alpha * math.expm1(-gamma * t) / math.expm1(-gamma)


# The spending functions a registered rule may name (`blocklab.claims.rules.Rule.spending`):
# O'Brien–Fleming, Pocock, three Hwang–Shih–DeCani γ's, and "fixed": nothing spent before the
# last look (t = 1), α there.
SPENDINGS = ("obf", "pocock", "hsd(-4)", "hsd(-2)", "hsd(1)", "fixed")


def spent_by(spending: str, t: float, alpha: float = 0.05) -> float:
    """α*(t) of the spending function named `spending` (one of SPENDINGS)."""
    if spending == "obf":
        return spent_alpha(t, alpha)
    if spending == "pocock":
        return pocock_spent_alpha(t, alpha)
    if spending in SPENDINGS and spending.startswith("hsd(") and spending.endswith(")"):
        return hsd_spent_alpha(t, alpha, float(spending[4:-1]))
    if spending == "fixed":
        alpha, t = _check_alpha(alpha), _check_fraction(t)
        return alpha if t == 1 else 0.0
    raise InputError(f"spending {spending!r} is not allowed; expected one of {list(SPENDINGS)}")


def _check_fractions(fractions: ArrayLike) -> np.ndarray:
    t = _sample(fractions, "fractions")
    if t[0] <= 0:
        raise InputError(f"fractions[0] is {t[0]}; information fractions must be > 0")
    steps = np.diff(t)
    if np.any(steps <= 0):
        k = int(np.flatnonzero(steps <= 0)[0]) + 1
        raise InputError(f"fractions must increase strictly, got fractions[{k}] = {t[k]} after "
                         f"{t[k - 1]}")
    if t[-1] != 1:
        raise InputError(f"fractions must end at 1 (the last look sees all seeds), "
                         f"got {t[-1]}")
    return t


def _simpson_weights(n_points: int, step: float) -> np.ndarray:
    """Composite Simpson weights (1, 4, 2, 4, …, 4, 1)·step/3 for an odd number of points."""
    w = np.full(n_points, 2.0)
    w[1::2] = 4.0
    w[0] = w[-1] = 1.0
    return w * step / 3


def obrien_fleming_design(fractions: ArrayLike, alpha: float = 0.05) -> SequentialDesign:
    """Two-sided group-sequential boundaries c_1, …, c_K at information fractions
    t_1 < … < t_K = 1 from Lan–DeMets O'Brien–Fleming-type alpha spending (`spent_alpha`).

    Under H0 the look statistics Z_k are jointly normal with Cov(Z_i, Z_j) = √(t_i / t_j), i.e.
    Z_k = S(t_k) / √t_k for a standard Brownian motion S. Each c_k solves

        P(|Z_j| < c_j for j < k, |Z_k| ≥ c_k) = α*(t_k) − α*(t_{k−1})

    so the chance of ever crossing by look k is α*(t_k), and α*(1) = alpha overall. The
    probabilities come from the Armitage–McPherson–Rowe (1969) recursion: the sub-density of
    S(t_k) on the continuation region |s| < c_k·√t_k is carried from look to look by
    convolving with the N(0, t_k − t_{k−1}) increment (composite Simpson rule on a grid much
    finer than the increment's sd), and each c_k is found with `scipy.optimize.brentq`.

    fractions: [K], strictly increasing, in (0, 1], ending at 1 (e.g. seeds done at each look /
    seeds at the last look). Returns the boundaries with each look's nominal two-sided alpha,
    2·(1 − Φ(c_k)): a caller builds look k's interval at that level, e.g.
    `paired_interval(d, alpha=design.nominal_alpha[k])` (the t quantile in place of the normal
    one is the usual small-sample adjustment)."""
    t = _check_fractions(fractions)
    alpha = _check_alpha(alpha)
    spent = [spent_alpha(float(tk), alpha) for tk in t]
    increments = np.diff([0.0, *spent])
    if np.any(increments <= 0):
        k = int(np.flatnonzero(increments <= 0)[0])
        raise InputError(f"fractions[{k}] = {t[k]} spends no alpha (its share underflows); "
                         "put the first look later")

    # Look 1 alone: |Z_1| ≥ c_1 has probability 2·(1 − Φ(c_1)).
    boundaries = [float(stats.norm.isf(increments[0] / 2))]
    grid = density = weights = None
    for k in range(1, len(t)):
        step_sd = math.sqrt(t[k] - t[k - 1])
        if grid is None:  # sub-density of S(t_1) on |s| < c_1·√t_1
            grid, weights = _continuation_grid(boundaries[0] * math.sqrt(t[0]), step_sd)
            density = stats.norm.pdf(grid, scale=math.sqrt(t[0]))
        else:  # carry the previous look's sub-density to S(t_{k−1}) on its continuation region
            new_grid, new_weights = _continuation_grid(boundaries[-1] * math.sqrt(t[k - 1]),
                                                       step_sd)
            prev_sd = math.sqrt(t[k - 1] - t[k - 2])
            density = _convolve(new_grid, grid, weights * density, prev_sd)
            grid, weights = new_grid, new_weights
        mass = weights * density
        root_t = math.sqrt(t[k])

        def crossing(c: float, mass=mass, grid=grid, step_sd=step_sd, root_t=root_t) -> float:
            b = c * root_t  # the boundary on the S scale
            up = stats.norm.sf((b - grid) / step_sd)
            down = stats.norm.sf((b + grid) / step_sd)
            return float(mass @ (up + down))

        target = float(increments[k])
        # Crossing at c is at most P(|Z_k| ≥ c) = 2·(1 − Φ(c)), so c = Φ⁻¹(1 − target/2)
        # crosses no more than the target; c = 0 crosses all that is left (≥ target).
        high = float(stats.norm.isf(target / 2))
        c = optimize.brentq(lambda c, target=target: crossing(c) - target, 0.0, high,
                            xtol=1e-10, rtol=1e-12)
        boundaries.append(float(c))
    nominal = [float(2 * stats.norm.sf(c)) for c in boundaries]
    return SequentialDesign(tuple(float(x) for x in t), alpha, tuple(boundaries),
                            tuple(spent), tuple(nominal))


def _convolve(points: np.ndarray, grid: np.ndarray, mass: np.ndarray, sd: float) -> np.ndarray:
    """Σ_i mass_i · φ((x − grid_i) / sd) / sd at each x of `points`, in blocks of rows so that
    closely spaced looks (fine grids) do not build one huge matrix."""
    out = np.empty_like(points)
    rows = max(1, 4_000_000 // grid.size)
    for start in range(0, points.size, rows):
        x = points[start:start + rows, None]
        out[start:start + rows] = stats.norm.pdf((x - grid[None, :]) / sd) @ mass / sd
    return out


def _continuation_grid(half_width: float, step_sd: float) -> tuple[np.ndarray, np.ndarray]:
    """An odd-sized grid on [−half_width, half_width] with Simpson weights, its spacing at most
    1/24 of the next increment's sd (the Gaussian kernel it is convolved with) and 0.02."""
    spacing = min(0.02, step_sd / 24)
    intervals = max(100, 2 * math.ceil(half_width / spacing))
    intervals += intervals % 2  # Simpson's rule needs an even number of intervals
    grid = np.linspace(-half_width, half_width, intervals + 1)
    return grid, _simpson_weights(intervals + 1, grid[1] - grid[0])


# --- ratios of paired timings -------------------------------------------------------------------
def log_ratio_interval(numerators: ArrayLike, denominators: ArrayLike,
                       alpha: float = 0.05) -> Estimate:
    """Ratio of paired measurements (e.g. step times of two variants timed in the same repeat i)
    as the geometric mean of the paired ratios, with a Student t interval on their logs:

        l_i = ln(numerators_i / denominators_i),   m = mean(l),   s = sd(l)  (ddof = 1)
        value = exp(m),   [exp(m − t·s/√n), exp(m + t·s/√n)],   t = t_{1−alpha/2, n−1}

    The log ratios of a repeat share its slowness, which cancels; their mean with a t interval
    is the paired t interval of `paired_interval`, valid at a handful of repeats (timing noise
    is close to lognormal), and it stays a t interval at any level: its arms on the log scale
    are t-quantile multiples of s/√n, so an interval read at another level is the same mean
    ± another quantile, which exp maps back. (A bootstrap of a few repeats has no such level
    and under-covers.) When every pair has the same ratio the interval is that ratio.

    numerators, denominators: [n] each, finite, > 0 (timings), n ≥ 2 (else InputError).
    Returns an Estimate on the ratio scale whose sd is that of the log ratios l_i."""
    num = _sample(numerators, "numerators")
    den = _sample(denominators, "denominators")
    if num.shape != den.shape:
        raise InputError(f"numerators and denominators are paired and need equal lengths, "
                         f"got {num.size} and {den.size}")
    if num.size < 2:
        raise InputError(f"a t interval of paired ratios needs at least 2 pairs, got {num.size}")
    for name, arr in (("numerators", num), ("denominators", den)):
        if np.any(arr <= 0):
            k = int(np.flatnonzero(arr <= 0)[0])
            raise InputError(f"{name}[{k}] is {arr[k]}; timings must be > 0")
    logs = paired_interval(np.log(num / den), alpha)
    return Estimate(math.exp(logs.value), math.exp(logs.ci_low), math.exp(logs.ci_high),
                    logs.n, logs.sd, logs.alpha)


__all__ = [
    "Equivalence", "Estimate", "SequentialDesign", "detectable_effect", "interval_from_summary",
    "log_ratio_interval", "obrien_fleming_design", "paired_interval", "power", "seeds_needed",
    "spent_alpha", "tost", "tost_from_summary",
]
