"""Helpers the claim tests share, imported as `from .conftest import ...`."""

from pathlib import Path

from blocklab.experiments.summaries import Interval, Summary, save_summary


def ci(mean: float, low: float, high: float, n: int = 10) -> Interval:
    """An interval of n values: mean [low, high]."""
    return Interval(n, mean, low, high)


def store_summary(root: Path, suite: str, data) -> None:
    """Store `data` as the summary of `suite` (quick), as `run_suite` does."""
    save_summary(root / suite / "quick", Summary(suite, "quick", 3, [], [], data, runs=1,
                                                 wall_time_s=1.0))
