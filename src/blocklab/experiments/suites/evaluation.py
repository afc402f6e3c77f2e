"""What each suite size evaluates: which runs it plans, and how much validation data scores them.

Tiny, quick and the ladder's rungs plan only the runs a registered rule grades and what those
parts need; every other arm runs at `--size full`, and a summary names what its size left out
(`full_only`). A training run scores `FINAL_EVAL_FRACTION` of the validation split at its end.
"""

from __future__ import annotations

from collections.abc import Sequence

from blocklab.experiments.ladder import RUNGS

# The sizes that plan only what a registered rule grades (a ladder rung is the quick size grown).
GRADED_ONLY_SIZES = ("tiny", "quick", *RUNGS)
# TrainConfig.final_eval_fraction of every suite's training runs, by size (a rung: quick's).
FINAL_EVAL_FRACTION = {"tiny": 0.0, "quick": 0.125, "full": 1.0,
                       **dict.fromkeys(RUNGS, 0.125)}
# The words every summary, claim text and figure uses for what its size left out.
AT_FULL = "at --size full only"


def graded_only(size: str) -> bool:
    """Whether `size` plans only the runs a registered rule grades."""
    return size in GRADED_ONLY_SIZES


def listed(names: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def full_only(names: Sequence[str], why: str = "no registered rule grades them") -> str:
    """A graded-only size's note of what it left out."""
    return (f"Run {AT_FULL} ({why}; --size tiny, quick and the ladder's rungs plan only the "
            f"runs a registered rule grades): {listed(names)}.")
