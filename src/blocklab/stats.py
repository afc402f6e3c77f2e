"""Statistics of seeded experiments, on `scipy.stats` (no PyTorch).

Arms run with the same seed are paired, so the evidence about an arm-vs-arm claim is the list
of per-seed differences d_1, …, d_n: t intervals (`paired_interval`, `log_ratio_interval` for
paired timings), the t test's power and the seeds it needs, and the alpha-spending functions
of a sequential design (`spent_by`).

α (`alpha`) is two-sided unless a function says otherwise; `sd` is the sample sd (ddof = 1);
bad input raises `InputError` naming the value. Every function is pure.
"""

from __future__ import annotations

import bisect
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
    """A point estimate (a mean difference, or a ratio) with its two-sided (1 − alpha)
    interval, from n values whose sample sd is `sd` (for a ratio: of the log ratios)."""

    value: float
    ci_low: float
    ci_high: float
    n: int
    sd: float
    alpha: float


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


def _check_alpha(alpha: float) -> float:
    if not (isinstance(alpha, int | float) and 0 < alpha < 1):
        raise InputError(f"alpha must lie strictly between 0 and 1, got {alpha!r}")
    return float(alpha)


def _check_finite(value: float, name: str) -> float:
    if not (isinstance(value, int | float) and math.isfinite(value)):
        raise InputError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def _check_sd(sd: float) -> float:
    sd = _check_finite(sd, "sd")
    if sd <= 0:
        raise InputError(f"sd must be > 0, got {sd!r}")
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
def paired_interval(differences: ArrayLike, alpha: float = 0.05) -> Estimate:
    """Mean of the per-seed differences d_i = a_i − b_i with its two-sided (1 − alpha)
    Student-t interval,

        mean ± t_{1−alpha/2, n−1} · sd / √n

    differences: [n], finite, n ≥ 2 (else InputError: one seed has no spread, which an
    infinite width would hide)."""
    d = _sample(differences, "differences")
    if d.size < 2:
        raise InputError(f"differences has {d.size} value; a t interval needs at least 2")
    alpha = _check_alpha(alpha)
    n = int(d.size)
    # differences near ±1e308 overflow: their mean or spread is refused, never an infinite width
    mean, sd = _check_finite(float(d.mean()), "mean"), _check_finite(float(d.std(ddof=1)), "sd")
    half = float(stats.t.ppf(1 - alpha / 2, n - 1)) * sd / math.sqrt(n)
    return Estimate(mean, mean - half, mean + half, n, sd, alpha)


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
    sd = _check_sd(sd)
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
    sd = _check_sd(sd)
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
    sd = _check_sd(sd)
    alpha = _check_alpha(alpha)
    sided = _check_sided(sided)
    target = _check_power(power, alpha)
    max_n = _check_n(max_n, "max_n")

    def enough(n: int) -> bool:
        return _power_at_ncp(abs(effect) / sd * math.sqrt(n), n - 1, alpha, sided) >= target

    if not enough(max_n):
        return None
    return bisect.bisect_left(range(2, max_n + 1), True, key=enough) + 2  # enough rises with n


# --- alpha spending over the looks of a sequential design ---------------------------------------
def _check_fraction(t: float) -> float:
    if not (isinstance(t, int | float) and 0 <= t <= 1):
        raise InputError(f"information fraction t must lie in [0, 1], got {t!r}")
    return float(t)


def spent_alpha(t: float, alpha: float = 0.05) -> float:
    """Two-sided Lan–DeMets O'Brien–Fleming-type spending (Lan & DeMets 1983): the type-I
    error a symmetric design may have spent by information fraction t,

        α*(t) = 2 · [2 − 2·Φ(z_{1−α/4} / √t)],   0 < t ≤ 1,   α*(0) = 0,   α*(1) = α

    each side spending the one-sided function at α/2, as the published tables do (Jennison &
    Turnbull 2000; ldbounds; gsDesign sfLDOF, test.type = 2: K = 5 starts at 4.877). It spends
    almost nothing early."""
    alpha, t = _check_alpha(alpha), _check_fraction(t)
    if t == 0:
        return 0.0
    # 1 − Φ(x) written with the survival function, exact for the tiny early values.
    return float(4 * stats.norm.sf(stats.norm.isf(alpha / 4) / math.sqrt(t)))


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


# --- ratios of paired timings -------------------------------------------------------------------
def log_ratio_interval(numerators: ArrayLike, denominators: ArrayLike,
                       alpha: float = 0.05) -> Estimate:
    """Ratio of paired measurements (e.g. step times of two variants timed in the same repeat i)
    as the geometric mean of the paired ratios, with a Student t interval on their logs:

        l_i = ln(numerators_i / denominators_i),   m = mean(l),   s = sd(l)  (ddof = 1)
        value = exp(m),   [exp(m − t·s/√n), exp(m + t·s/√n)],   t = t_{1−alpha/2, n−1}

    A repeat's slowness cancels in its log ratio; timing noise is close to lognormal, so the
    t interval holds at a handful of repeats and at any level (a bootstrap of a few repeats
    under-covers).

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
