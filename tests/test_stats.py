"""blocklab.stats against published values, independent computations and simulation.

Every simulation draws from its own seeded generator, and its tolerance is stated in binomial
standard deviations of the simulated rate.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from blocklab import stats
from blocklab.errors import InputError


def binomial_sd(p: float, reps: int) -> float:
    return math.sqrt(p * (1 - p) / reps)


# --- paired t interval ---------------------------------------------------------------------------
# Two-sided Student-t quantiles t_{1−α/2, df} from any textbook table (e.g. NIST/SEMATECH
# e-Handbook of Statistical Methods, table 1.3.6.7.2): (df, 1 − α/2, value to 3 decimals).
T_TABLE = [(1, 0.975, 12.706), (2, 0.975, 4.303), (4, 0.975, 2.776), (9, 0.975, 2.262),
           (29, 0.975, 2.045), (60, 0.975, 2.000), (120, 0.975, 1.980), (9, 0.95, 1.833),
           (9, 0.995, 3.250)]


@pytest.mark.parametrize(("df", "q", "published"), T_TABLE)
def test_interval_half_width_is_the_published_t_quantile(df, q, published):
    # mean 0, sd 1, n = df + 1: the half-width is t_{q, df} / √n.
    d = np.arange(df + 1.0)
    est = stats.paired_interval((d - d.mean()) / d.std(ddof=1), alpha=2 * (1 - q))
    assert est.ci_high * math.sqrt(df + 1) == pytest.approx(published, abs=5e-4)


def test_paired_interval_by_hand():
    d = [0.3, -0.1, 0.4, 0.2, 0.5]
    est = stats.paired_interval(d)
    mean = sum(d) / 5
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / 4)
    half = 2.776 * sd / math.sqrt(5)  # t_{0.975, 4} from the table
    assert (est.n, est.alpha) == (5, 0.05)
    assert est.value == pytest.approx(mean, abs=1e-12)
    assert est.sd == pytest.approx(sd, abs=1e-12)
    assert (est.ci_low, est.ci_high) == pytest.approx((mean - half, mean + half), abs=2e-4)
    equal = stats.paired_interval([0.25, 0.25, 0.25])  # no spread: zero width
    assert (equal.value, equal.ci_low, equal.ci_high, equal.sd) == (0.25, 0.25, 0.25, 0.0)


def test_paired_interval_covers_the_true_mean_95_percent_of_the_time():
    rng = np.random.default_rng(20240611)
    reps, n, true_mean = 4000, 5, 0.3
    samples = rng.normal(true_mean, 2.0, size=(reps, n))
    covered = 0
    for d in samples:
        est = stats.paired_interval(d)
        covered += est.ci_low <= true_mean <= est.ci_high
    coverage = covered / reps
    assert abs(coverage - 0.95) < 4 * binomial_sd(0.95, reps), coverage


# --- power and the detectable effect -------------------------------------------------------------
# R: power.t.test(n = 10, delta = 1, sd = 1, type = "one.sample") gives power = 0.8030962
# (one rejection tail, strict = FALSE; both tails add 6e-7); type = "paired" with n = 20 gives
# 0.9885913. G*Power 3.1 (t tests, means, difference from constant, a priori, d = 0.5, α = 0.05,
# power 0.8): total sample size 34, actual power 0.8077775 (two tails); 27 with one tail.
def test_power_matches_r_power_t_test():
    assert stats.power(1.0, 1.0, 10) == pytest.approx(0.8031, abs=1e-4)
    assert stats.power(1.0, 1.0, 20) == pytest.approx(0.9886, abs=1e-4)
    assert stats.power(-1.0, 1.0, 20) == stats.power(1.0, 1.0, 20)  # two-sided: symmetric


def test_power_by_the_formula_written_out():
    # power = 1 − F_nct(c; df, δ) + F_nct(−c; df, δ), the R formula (strict = TRUE).
    for n, effect, sd, alpha in [(5, 0.4, 0.3, 0.05), (12, 0.1, 0.2, 0.01), (30, 0.5, 1.0, 0.1)]:
        df, ncp = n - 1, effect / sd * math.sqrt(n)
        crit = sps.t.ppf(1 - alpha / 2, df)
        want = 1 - sps.nct.cdf(crit, df, ncp) + sps.nct.cdf(-crit, df, ncp)
        assert stats.power(effect, sd, n, alpha) == pytest.approx(want, abs=1e-12)
        one = 1 - sps.nct.cdf(sps.t.ppf(1 - alpha, df), df, ncp)
        assert stats.power(effect, sd, n, alpha, sided="one") == pytest.approx(one, abs=1e-12)


def test_power_against_simulated_t_tests():
    rng = np.random.default_rng(3)
    reps = 4000
    x = rng.normal(1.0, 1.0, size=(reps, 10))
    rate = float(np.mean(sps.ttest_1samp(x, 0.0, axis=1).pvalue < 0.05))
    assert abs(rate - stats.power(1.0, 1.0, 10)) < 4 * binomial_sd(0.8, reps), rate


def test_power_edge_values():
    assert stats.power(0.0, 1.0, 8) == pytest.approx(0.05, abs=1e-12)
    assert stats.power(0.0, 1.0, 8, sided="one") == pytest.approx(0.05, abs=1e-12)
    # Large non-centrality: scipy's nct.cdf gives nan in the far lower tail; power stays finite.
    assert stats.power(1.0, 1.0, 100) == pytest.approx(1.0, abs=1e-12)
    for n in (300, 600, 632, 5000):
        assert math.isfinite(stats.power(1.0, 1.0, n))
    # Many seeds: the normal approximation Φ(δ − z) + Φ(−δ − z).
    ncp, z = 0.1 * math.sqrt(2000), sps.norm.ppf(0.975)
    approx = sps.norm.cdf(ncp - z) + sps.norm.cdf(-ncp - z)
    assert stats.power(0.1, 1.0, 2000) == pytest.approx(approx, abs=1e-3)


def test_seeds_needed_matches_g_power():
    assert stats.seeds_needed(0.5, 1.0) == 34
    assert stats.power(0.5, 1.0, 34) == pytest.approx(0.8077775, abs=1e-6)
    assert stats.power(0.5, 1.0, 33) < 0.8
    assert stats.seeds_needed(0.5, 1.0, sided="one") == 27
    # From the R values above: 10 seeds reach 0.8031 at d = 1, 9 fall short.
    assert stats.seeds_needed(1.0, 1.0) == 10
    assert stats.seeds_needed(2.0, 2.0) == 10  # only effect / sd matters
    # out of reach
    assert stats.seeds_needed(0.0, 1.0) is None
    assert stats.seeds_needed(0.01, 1.0, max_n=100) is None


def test_detectable_effect_round_trip():
    for sd, n, target, alpha, sided in [(1.0, 10, 0.8, 0.05, "two"), (0.3, 4, 0.9, 0.05, "two"),
                                        (2.0, 25, 0.8, 0.01, "one")]:
        effect = stats.detectable_effect(sd, n, target, alpha, sided)
        assert stats.power(effect, sd, n, alpha, sided) == pytest.approx(target, abs=1e-9)
    # n = 10 reaches 0.8031 at d = 1 (R), so 80% power needs an effect a little below 1.
    assert 0.99 < stats.detectable_effect(1.0, 10) < 1.0
    # More seeds detect smaller effects.
    effects = [stats.detectable_effect(1.0, n) for n in (3, 5, 10, 30)]
    assert effects == sorted(effects, reverse=True)


# --- alpha spending ----------------------------------------------------------------------------
# Lan–DeMets O'Brien–Fleming-type spending, two-sided α = 0.05 (0.025 a side), five equally
# spaced looks: the first boundary is 4.8769 (Jennison & Turnbull 2000; R's
# ldbounds::bounds(t, iuse = 1, alpha = c(0.025, 0.025)); gsDesign test.type = 2, sfu = sfLDOF).
def test_spent_alpha_values():
    # (nothing at t = 0 and α at t = 1: tests/claims/test_designs.py, for every function)
    # The first look of a design spends exactly its boundary's two-sided tail: the published
    # K = 5 first boundary 4.8769 spends 2·(1 − Φ(4.8769)) at t = 0.2.
    assert stats.spent_alpha(0.2) == pytest.approx(2 * sps.norm.sf(4.8769), rel=1e-3)
    ts = np.linspace(0, 1, 21)
    spent = [stats.spent_alpha(float(t)) for t in ts]
    assert all(b > a for a, b in zip(spent, spent[1:], strict=False))


# --- geometric mean of paired ratios, Student t on log ratios -----------------------------------
def test_log_ratio_interval_by_hand():
    num, den = [1.2, 2.1, 2.9, 4.4], [1.0, 2.0, 2.5, 4.0]
    logs = [math.log(a / b) for a, b in zip(num, den, strict=True)]
    m = sum(logs) / 4
    s = math.sqrt(sum((x - m) ** 2 for x in logs) / 3)
    half = float(sps.t.ppf(0.975, 3)) * s / 2  # t_{0.975, 3} · s / √4
    est = stats.log_ratio_interval(num, den)
    assert est.value == pytest.approx(math.exp(m), rel=1e-12)
    assert est.ci_low == pytest.approx(math.exp(m - half), rel=1e-12)
    assert est.ci_high == pytest.approx(math.exp(m + half), rel=1e-12)
    assert (est.n, est.alpha) == (4, 0.05) and est.sd == pytest.approx(s, rel=1e-12)
    # At another level only the t quantile changes: the log arms scale by t'/t.
    strict = stats.log_ratio_interval(num, den, alpha=0.005)
    scale = float(sps.t.ppf(0.9975, 3) / sps.t.ppf(0.975, 3))
    assert math.log(strict.ci_high) - m == pytest.approx(scale * half, rel=1e-12)
    assert m - math.log(strict.ci_low) == pytest.approx(scale * half, rel=1e-12)
    equal = stats.log_ratio_interval([2.0, 4.0, 6.0], [1.0, 2.0, 3.0])  # equal ratios
    assert (equal.value, equal.ci_low, equal.ci_high, equal.sd) == (2.0, 2.0, 2.0, 0.0)


# --- bad input -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("call", "names"), [
    (lambda: stats.paired_interval([]), "differences is empty"),
    # n < 2 raises rather than returning an interval of infinite width (documented choice)
    (lambda: stats.paired_interval([0.1]), "at least 2"),
    (lambda: stats.log_ratio_interval([1.0, 2.0, 3.0], [1.0, 2.0]), "equal lengths, got 3 and 2"),
    (lambda: stats.log_ratio_interval([1.0, 2.0], [1.0, 0.0]), r"denominators\[1\] is 0.0"),
    (lambda: stats.log_ratio_interval([-1.0, 2.0], [1.0, 1.0]), r"numerators\[0\] is -1.0"),
    (lambda: stats.log_ratio_interval([1.0], [1.0]), "at least 2 pairs"),
    (lambda: stats.paired_interval([0.1, float("nan"), 0.2]), r"differences\[1\] is nan"),
    (lambda: stats.paired_interval([[0.1, 0.2]]), r"shape \(1, 2\)"),
    # finite values whose mean overflows: refused, never an interval of infinite width
    (lambda: stats.paired_interval([1e308, 1.7e308]), "mean must be a finite number, got inf"),
    (lambda: stats.paired_interval(["a", "b"]), "must be numbers"),
    (lambda: stats.paired_interval([0.1, 0.2], alpha=0.0), "got 0.0"),
    (lambda: stats.paired_interval([0.1, 0.2], alpha=1), "got 1"),
    (lambda: stats.power(1.0, 1.0, 2.5), "n must be an integer >= 2, got 2.5"),
    (lambda: stats.power(1.0, -1.0, 10), "sd must be > 0, got -1.0"),
    (lambda: stats.power(1.0, 0.0, 10), "sd must be > 0, got 0.0"),
    (lambda: stats.power(1.0, 1.0, 1), "got 1"),
    (lambda: stats.power(float("nan"), 1.0, 10), "effect must be a finite number, got nan"),
    (lambda: stats.power(1.0, 1.0, 10, alpha=-0.1), "got -0.1"),
    (lambda: stats.power(1.0, 1.0, 10, sided="both"), "got 'both'"),
    (lambda: stats.detectable_effect(1.0, 10, power=0.03), "got 0.03"),
    (lambda: stats.detectable_effect(1.0, 10, power=1.0), "got 1.0"),
    (lambda: stats.seeds_needed(1.0, 1.0, max_n=1), "max_n must be an integer >= 2, got 1"),
    (lambda: stats.spent_alpha(1.5), "got 1.5"),
    (lambda: stats.spent_alpha(0.5, alpha=2.0), "got 2.0"),
])
def test_bad_input_raises_input_error_naming_the_value(call, names):
    with pytest.raises(InputError, match=names):
        call()
