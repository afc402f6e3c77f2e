"""Helpers the claim tests share, imported as `from .conftest import ...`."""

from pathlib import Path

from blocklab.claims import Context, run_claims
from blocklab.experiments.options import RunRequest
from blocklab.experiments.summaries import Interval, Summary, save_summary


def ci(mean: float, low: float | None = None, high: float | None = None, n: int = 10
       ) -> Interval:
    """An interval of n values: mean [low, high] ([mean, mean] without them)."""
    return Interval(n, mean, mean if low is None else low, mean if high is None else high)


def store_summary(root: Path, suite: str, data, seeds: int = 3, folder: str = "quick") -> None:
    """Store `data` as the quick summary of `suite` (in `folder` of it), as `run_suite` does."""
    save_summary(root / suite / folder, Summary(suite, "quick", seeds, [], [], data, runs=1,
                                                wall_time_s=1.0))


def graded(root: Path, suite: str, data, *ids: str, seeds: int = 3) -> dict:
    """{id: row} of the claims `ids` graded on `data` stored as `suite`'s quick summary."""
    store_summary(root, suite, data, seeds)
    return {r.id: r for r in run_claims(list(ids), Context(RunRequest(root, "quick")))}
