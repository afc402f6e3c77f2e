"""blocklab.stats against published values, independent computations and simulation.

Every simulation draws from its own seeded generator, and its tolerance is stated in binomial
standard deviations of the simulated rate.
"""

from __future__ import annotations

import math
import subprocess
import sys

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
    est = stats.interval_from_summary(0.0, 1.0, df + 1, alpha=2 * (1 - q))
    assert est.half_width * math.sqrt(df + 1) == pytest.approx(published, abs=5e-4)


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
    # The same interval from the summary numbers.
    assert stats.interval_from_summary(mean, sd, 5) == pytest.approx(est)


def test_paired_interval_of_equal_differences_has_zero_width():
    est = stats.paired_interval([0.25, 0.25, 0.25])
    assert (est.value, est.ci_low, est.ci_high, est.sd) == (0.25, 0.25, 0.25, 0.0)


def test_one_difference_has_no_interval():
    # n < 2 raises rather than returning an interval of infinite width (documented choice).
    with pytest.raises(InputError, match="at least 2"):
        stats.paired_interval([0.1])
    with pytest.raises(InputError, match="n must be an integer >= 2"):
        stats.interval_from_summary(0.1, 0.0, 1)


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


# --- equivalence (TOST) --------------------------------------------------------------------------
def test_tost_p_values_are_scipys_one_sided_t_tests():
    d = np.array([0.12, -0.05, 0.08, 0.02, -0.01, 0.06])
    res = stats.tost(d, margin=0.15)
    lower = sps.ttest_1samp(d, popmean=-0.15, alternative="greater").pvalue
    upper = sps.ttest_1samp(d, popmean=0.15, alternative="less").pvalue
    assert res.p_lower == pytest.approx(lower, rel=1e-10)
    assert res.p_upper == pytest.approx(upper, rel=1e-10)
    assert res.p_value == max(res.p_lower, res.p_upper)
    assert res.interval.alpha == pytest.approx(0.10)  # the (1 − 2·alpha) interval


def test_tost_tests_and_interval_agree():
    # Equivalence by both p-values < alpha is the (1 − 2·alpha) interval inside ±margin.
    rng = np.random.default_rng(7)
    decided = set()
    for _ in range(500):
        n = int(rng.integers(2, 12))
        d = rng.normal(rng.uniform(-1, 1), rng.uniform(0.05, 1), size=n)
        margin = float(rng.uniform(0.1, 1.5))
        alpha = float(rng.choice([0.01, 0.05, 0.1]))
        res = stats.tost(d, margin, alpha)
        inside = -margin < res.interval.ci_low and res.interval.ci_high < margin
        assert res.equivalent == inside
        assert (res.p_lower < alpha) == (res.interval.ci_low > -margin)
        assert (res.p_upper < alpha) == (res.interval.ci_high < margin)
        decided.add(res.equivalent)
    assert decided == {True, False}  # both outcomes were exercised


def test_tost_with_equal_differences_decides_like_its_interval():
    assert stats.tost([0.1, 0.1, 0.1], margin=0.2).equivalent
    assert not stats.tost([0.2, 0.2, 0.2], margin=0.2).equivalent
    assert not stats.tost([-0.3, -0.3], margin=0.2).equivalent


def test_tost_type_one_error_at_the_margin_is_at_most_alpha():
    # True mean exactly on the margin: "equivalent" is the wrong answer, made at most alpha of
    # the time (about alpha here: the far test almost always rejects).
    rng = np.random.default_rng(11)
    reps, n, margin, alpha = 4000, 10, 1.0, 0.05
    samples = rng.normal(margin, 1.0, size=(reps, n))
    wrong = sum(stats.tost(d, margin, alpha).equivalent for d in samples) / reps
    assert wrong <= alpha + 3 * binomial_sd(alpha, reps), wrong
    assert wrong > alpha - 4 * binomial_sd(alpha, reps), wrong


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


def test_seeds_needed_none_when_out_of_reach():
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


# --- group-sequential design ---------------------------------------------------------------------
# Lan–DeMets O'Brien–Fleming-type spending, two-sided α = 0.05 (0.025 a side), equally spaced
# looks: Jennison & Turnbull (2000), and R's ldbounds::bounds(t, iuse = 1,
# alpha = c(0.025, 0.025)) / gsDesign (test.type = 2, sfu = sfLDOF):
#   K = 5: 4.8769, 3.3569, 2.6803, 2.2898, 2.0310;  K = 3: 3.7103, 2.5114, 1.9930.
# (2.797, 1.977 for K = 2 are the classic O'Brien–Fleming (1979) boundaries, C·√(K/k) with
# C = 1.977, a different design; the Lan–DeMets K = 2 design starts at 2.963.)
PUBLISHED_BOUNDARIES = {
    5: (4.8769, 3.3569, 2.6803, 2.2898, 2.0310),
    3: (3.7103, 2.5114, 1.9930),
}


@pytest.mark.parametrize("looks", sorted(PUBLISHED_BOUNDARIES))
def test_boundaries_match_published_tables(looks):
    design = stats.obrien_fleming_design(np.arange(1, looks + 1) / looks)
    assert design.boundaries == pytest.approx(PUBLISHED_BOUNDARIES[looks], abs=2e-4)
    assert design.spent[-1] == pytest.approx(0.05, abs=1e-15)
    nominal = [2 * sps.norm.sf(c) for c in design.boundaries]
    assert design.nominal_alpha == pytest.approx(nominal, rel=1e-12)


def test_spent_alpha_values():
    assert stats.spent_alpha(0.0) == 0.0
    assert stats.spent_alpha(1.0) == pytest.approx(0.05, abs=1e-15)
    assert stats.spent_alpha(1.0, alpha=0.01) == pytest.approx(0.01, abs=1e-15)
    # The first look of a design spends exactly its boundary's two-sided tail: the published
    # K = 5 first boundary 4.8769 spends 2·(1 − Φ(4.8769)) at t = 0.2.
    assert stats.spent_alpha(0.2) == pytest.approx(2 * sps.norm.sf(4.8769), rel=1e-3)
    ts = np.linspace(0, 1, 21)
    spent = [stats.spent_alpha(float(t)) for t in ts]
    assert all(b > a for a, b in zip(spent, spent[1:], strict=False))


def test_one_look_is_the_fixed_design():
    design = stats.obrien_fleming_design([1.0])
    assert design.boundaries[0] == pytest.approx(sps.norm.ppf(0.975), abs=1e-12)
    assert design.nominal_alpha[0] == pytest.approx(0.05, abs=1e-12)


def test_crossing_probabilities_by_multivariate_normal_cdf():
    # Independent of the recursion: P(some |Z_j| ≥ c_j, j ≤ k) under H0 from scipy's Genz
    # integration of the joint normal, Cov(Z_i, Z_j) = √(t_i / t_j), at unequal looks.
    design = stats.obrien_fleming_design([0.3, 0.55, 1.0])
    t, c = np.array(design.fractions), np.array(design.boundaries)
    cov = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
    for k in range(1, len(t) + 1):
        inside = sps.multivariate_normal.cdf(c[:k], mean=np.zeros(k), cov=cov[:k, :k],
                                             lower_limit=-c[:k], abseps=1e-9, releps=1e-7,
                                             maxpts=200_000 * k, rng=1)
        assert 1 - inside == pytest.approx(design.spent[k - 1], abs=1e-6)


def test_sequential_type_one_error_by_simulation():
    # Z_k = S(t_k) / √t_k for a Brownian motion S: cumulative sums of independent increments.
    design = stats.obrien_fleming_design(np.arange(1, 6) / 5)
    rng = np.random.default_rng(5)
    reps = 200_000  # vectorised, a fraction of a second: 4 binomial sds of 0.05 is 0.002
    t = np.array(design.fractions)
    steps = rng.normal(size=(reps, len(t))) * np.sqrt(np.diff(t, prepend=0.0))
    z = np.cumsum(steps, axis=1) / np.sqrt(t)
    crossed = np.abs(z) >= np.array(design.boundaries)
    ever = np.cumsum(crossed, axis=1) > 0
    rate = ever.mean(axis=0)  # cumulative: crossed by look k
    for k in range(len(t)):
        p = design.spent[k]
        assert abs(rate[k] - p) < max(4 * binomial_sd(p, reps), 1e-3), (k, rate[k], p)
    assert abs(rate[-1] - 0.05) < 0.01


def test_sequential_t_intervals_at_nominal_levels_keep_alpha():
    # The caller's recipe: at look k, the t interval at nominal_alpha[k]; stop when it excludes
    # 0. With 6 seeds a look (t quantiles in place of normal ones) the overall error stays
    # close to 0.05.
    design = stats.obrien_fleming_design(np.arange(1, 6) / 5)
    rng = np.random.default_rng(9)
    reps, per_look = 2000, 6
    wrong = 0
    for d in rng.normal(0.0, 1.0, size=(reps, 5 * per_look)):
        for k, a in enumerate(design.nominal_alpha):
            est = stats.paired_interval(d[: (k + 1) * per_look], alpha=a)
            if est.ci_low > 0 or est.ci_high < 0:
                wrong += 1
                break
    assert abs(wrong / reps - 0.05) < 4 * binomial_sd(0.05, reps), wrong / reps


def test_unequal_and_many_looks():
    design = stats.obrien_fleming_design([0.25, 0.6, 0.8, 1.0], alpha=0.1)
    assert list(design.boundaries) == sorted(design.boundaries, reverse=True)
    assert design.spent[-1] == pytest.approx(0.1, abs=1e-15)
    assert all(a < 0.1 for a in design.nominal_alpha)
    many = stats.obrien_fleming_design(np.arange(1, 21) / 20)
    assert 1.96 < many.boundaries[-1] < 2.2


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


def test_log_ratio_interval_of_identical_pairs_has_zero_width():
    est = stats.log_ratio_interval([2.0, 4.0, 6.0], [1.0, 2.0, 3.0])
    assert (est.value, est.ci_low, est.ci_high, est.sd) == (2.0, 2.0, 2.0, 0.0)


def test_log_ratio_interval_rejects_bad_pairs():
    with pytest.raises(InputError, match="equal lengths, got 3 and 2"):
        stats.log_ratio_interval([1.0, 2.0, 3.0], [1.0, 2.0])
    with pytest.raises(InputError, match=r"denominators\[1\] is 0.0"):
        stats.log_ratio_interval([1.0, 2.0], [1.0, 0.0])
    with pytest.raises(InputError, match=r"numerators\[0\] is -1.0"):
        stats.log_ratio_interval([-1.0, 2.0], [1.0, 1.0])
    with pytest.raises(InputError, match="at least 2 pairs"):
        stats.log_ratio_interval([1.0], [1.0])


# --- bad input -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("call", "names"), [
    (lambda: stats.paired_interval([]), "differences is empty"),
    (lambda: stats.paired_interval([0.1, float("nan"), 0.2]), r"differences\[1\] is nan"),
    (lambda: stats.paired_interval([0.1, float("inf")]), r"differences\[1\] is inf"),
    (lambda: stats.paired_interval([[0.1, 0.2]]), r"shape \(1, 2\)"),
    (lambda: stats.paired_interval(["a", "b"]), "must be numbers"),
    (lambda: stats.paired_interval([0.1, 0.2], alpha=0.0), "got 0.0"),
    (lambda: stats.paired_interval([0.1, 0.2], alpha=1), "got 1"),
    (lambda: stats.paired_interval([0.1, 0.2], alpha=1.5), "got 1.5"),
    (lambda: stats.interval_from_summary(0.0, -1.0, 5), "sd must be >= 0, got -1.0"),
    (lambda: stats.interval_from_summary(float("nan"), 1.0, 5), "mean must be a finite"),
    (lambda: stats.interval_from_summary(0.0, 1.0, 2.5), "got 2.5"),
    (lambda: stats.tost([0.1, 0.2], margin=0.0), "margin must be > 0, got 0.0"),
    (lambda: stats.tost([0.1, 0.2], margin=-1.0), "got -1.0"),
    (lambda: stats.tost([0.1, 0.2], margin=1.0, alpha=0.6), "got 0.6"),
    (lambda: stats.tost([0.1], margin=1.0), "at least 2"),
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
    (lambda: stats.obrien_fleming_design([]), "fractions is empty"),
    (lambda: stats.obrien_fleming_design([0.5, 0.4, 1.0]), r"fractions\[1\] = 0.4 after 0.5"),
    (lambda: stats.obrien_fleming_design([0.5, 0.5, 1.0]), r"fractions\[1\] = 0.5 after 0.5"),
    (lambda: stats.obrien_fleming_design([0.5, 0.9]), "must end at 1.*got 0.9"),
    (lambda: stats.obrien_fleming_design([0.0, 1.0]), r"fractions\[0\] is 0.0"),
    (lambda: stats.obrien_fleming_design([1e-4, 1.0]), "spends no alpha"),
    (lambda: stats.obrien_fleming_design([0.5, float("nan"), 1.0]), r"fractions\[1\] is nan"),
])
def test_bad_input_raises_input_error_naming_the_value(call, names):
    with pytest.raises(InputError, match=names):
        call()


def test_input_error_is_a_value_error():
    with pytest.raises(ValueError):
        stats.paired_interval([])


def test_stats_imports_no_torch():
    code = "import sys, blocklab.stats; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
