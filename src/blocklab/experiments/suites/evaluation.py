"""What each suite size evaluates: which runs it plans, and how much validation data scores them.

The rule every suite follows: at `--size tiny` and `--size quick` a suite plans only the runs
whose results a registered rule of `blocklab.claims.registry` grades, and what those parts need
(their baselines, the tuning of the arms they train, the timed runs a graded part reads); every
other arm, reported in tables and figures only, runs at `--size full`. A read made inside a
graded run (a scaling read off a trained model, a probe taken during training) rides along with
it. A summary names what its size left out with `full_only`, and the claims' texts and the
report's figures say the same ("at --size full only", `AT_FULL`) instead of showing an empty
number.

The fraction of the validation split a training run scores once more at its end
(`TrainConfig.final_eval_fraction`), one value per size for every suite's training runs: none
at tiny (a smoke test), an eighth at quick, all of it at full (`FINAL_EVAL_FRACTION`).

    from blocklab.experiments.suites.evaluation import graded_only, full_only
    graded_only("quick")  # True
    full_only(["gelu", "reglu", "bilinear"])
    # "Run at --size full only (…): gelu, reglu and bilinear."
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
    """The note of a graded-only size for what it left out: 'Run at --size full only (<why>;
    --size tiny, quick and the ladder's rungs plan only the runs a registered rule grades):
    <names>.'"""
    return (f"Run {AT_FULL} ({why}; --size tiny, quick and the ladder's rungs plan only the "
            f"runs a registered rule grades): {listed(names)}.")
