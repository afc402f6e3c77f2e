"""The suite's statistics: the equivalence verdict of a paired quality difference
(`equivalence`). Its time ratios are `TimeRatio.paired` (the geometric mean of paired ratios
with a Student t interval on their logs)."""

from __future__ import annotations

from blocklab.experiments.summaries import Interval


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
