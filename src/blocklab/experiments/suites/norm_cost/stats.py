"""The suite's statistics: RMSNorm/LayerNorm time ratios with a paired bootstrap interval
(`bootstrap_ratio_ci`) and the equivalence verdict of a paired quality difference
(`equivalence`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from blocklab.errors import InputError
from blocklab.experiments.summaries import Interval, TimeRatio

BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 0


def bootstrap_ratio_ci(a: Sequence[float], b: Sequence[float], *,
                       samples: int = BOOTSTRAP_SAMPLES, seed: int = BOOTSTRAP_SEED,
                       level: float = 0.95) -> TimeRatio:
    """median(a) / median(b) with a percentile bootstrap interval over paired repeats.

    a[i] and b[i] were measured in the same repeat i, so each bootstrap sample draws repeat
    indices with replacement and keeps the pairs together; the interval is the (1 − level)/2 and
    (1 + level)/2 percentiles (numpy's linear interpolation) of the resampled ratios. A fixed
    seed makes the interval reproducible.

    Returns the ratio, the interval and the number of repeats.
    """
    a_arr, b_arr = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a_arr.shape != b_arr.shape or a_arr.ndim != 1 or a_arr.size == 0:
        raise InputError(f"paired samples need equal, non-zero lengths, got {a_arr.shape} and "
                         f"{b_arr.shape}")
    rng = np.random.default_rng(seed)
    index = rng.integers(0, a_arr.size, size=(samples, a_arr.size))
    ratios = np.median(a_arr[index], axis=1) / np.median(b_arr[index], axis=1)
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return TimeRatio(ratio=float(np.median(a_arr) / np.median(b_arr)), ci_low=float(low),
                     ci_high=float(high), repeats=int(a_arr.size))


def equivalence(delta: Interval, margin: float) -> tuple[bool, str]:
    """(equivalent, verdict) for a paired difference `delta` (`paired_difference`) against an
    equivalence margin: equivalent when the whole 95% CI lies strictly inside ±margin (the
    two one-sided tests at the 2.5% level each); "different" when it lies wholly outside."""
    low, high = delta.ci_low, delta.ci_high
    if low is None or high is None:
        return False, "undecided (fewer than two paired seeds)"
    if -margin < low and high < margin:
        return True, "equivalent"
    if low >= margin or high <= -margin:
        return False, "different (whole CI outside the margin)"
    return False, "not shown equivalent (CI crosses the margin)"
