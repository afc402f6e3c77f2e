"""Each arm at its best: learning-rate grids that grow at an edge.

Every arm runs at every rate of its grid on tuning seeds (never an evaluation seed) and is
evaluated at the rate with the lowest mean final val loss. A best rate at an edge grows the grid
there one point at a time until it is interior (a tried rate on each side: what "fair" means) or
`max_extensions` points were added; with `refine`, an interior best is also tried at
best·factor^(∓1/2) (a ×3 grid can leave an arm half a step from its optimum). A run that does
not count scores +inf, so a rate that fails on any tuning seed is never chosen; ties go to the
smaller rate.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from blocklab.errors import InputError
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.summaries import ArmTuning, LrTrial, Table

if TYPE_CHECKING:
    from blocklab.experiments.suites.base import RunSpec


@dataclass(frozen=True)
class LrGrid:
    """`base` (ascending), extended at an edge by `factor` at most `max_extensions` times."""

    base: tuple[float, ...]
    factor: float
    max_extensions: int = 3
    refine: bool = False

    def __post_init__(self) -> None:
        if len(self.base) < 3 or list(self.base) != sorted(self.base):
            raise InputError(f"an lr grid needs at least 3 ascending points, got {self.base}")


def trains(result: RunResult) -> bool:
    """A run that counts: it finished ("ok") below the unigram entropy of the training bytes."""
    final = result.final
    if result.status != "ok" or final is None:
        return False
    val, entropy = final.val_loss, final.unigram_entropy
    return val is not None and entropy is not None and math.isfinite(val) and val < entropy


def counted_loss(result: RunResult) -> float | None:
    """The final validation loss of a run that `trains`."""
    return result.final.val_loss if result.final is not None and trains(result) else None


def lr_trials(tuned: Iterable[tuple[RunSpec, RunResult]]) -> list[LrTrial]:
    """Tuning runs (payloads naming "arm", "model" and "train") as trials of their arm."""
    return [LrTrial(spec.payload["arm"], spec.payload["train"]["lr"], spec.seed,
                    result.status, counted_loss(result), spec.payload["model"]["d_model"])
            for spec, result in tuned]


def mean_loss(trials: Iterable[LrTrial], arm: str, lr: float, d_model: int | None = None
              ) -> float | None:
    """`score`, None where it is not finite."""
    value = score(trials, arm, lr, d_model)
    return value if math.isfinite(value) else None


def tuning_table(tunings: Iterable[ArmTuning], trials: list[LrTrial], grid: LrGrid,
                 seeds_note: str) -> Table:
    """Each tuned arm's loss versus lr on its tuning seeds and the lr it got."""
    tunings = list(tunings)
    tried = sorted({lr for t in tunings for lr in t.grid})

    def cell(t: ArmTuning, lr: float) -> str:
        if lr not in t.grid:
            return ""
        value = mean_loss(trials, t.arm, lr)
        return "—" if value is None else f"{value:.4f}"

    return Table(
        "Each arm's peak lr: final validation loss on the tuning seeds (loss versus lr)",
        ["arm", *(f"lr {lr:g}" for lr in tried), "chosen"],
        [[t.arm, *(cell(t, lr) for lr in tried),
          f"{t.lr:g} ({'interior' if t.interior else 'at the edge'}"
          + (f", grid +{t.extended}" if t.extended else "") + ")"] for t in tunings],
        f"{seeds_note}; registered grid {{{', '.join(f'{lr:g}' for lr in grid.base)}}}, grown "
        f"by ×{grid.factor:g} at an edge holding the best lr (at most {grid.max_extensions} "
        "points)" + (f", then refined at ×{grid.factor:g}^(±1/2) around an interior best"
                     if grid.refine else "")
        + " before evaluation; blank: not tried for that arm; '—': a run that did not "
        "train (diverged, or not below the unigram entropy).")


def rounded(lr: float) -> float:
    """`lr` to 3 significant digits, so a point has one spelling (its run id)."""
    return float(f"{lr:.3g}")


def _at(trials: Iterable[LrTrial], arm: str, lr: float, d_model: int | None) -> list[LrTrial]:
    return [t for t in trials if t.arm == arm and math.isclose(t.lr, lr)
            and (d_model is None or t.d_model == d_model)]


def score(trials: Iterable[LrTrial], arm: str, lr: float, d_model: int | None = None) -> float:
    """Mean final val loss of `arm` at `lr` over its tuning runs; +inf if one does not count."""
    losses = [t.val_loss for t in _at(trials, arm, lr, d_model)]
    if not losses or any(v is None for v in losses):
        return math.inf
    return statistics.fmean(losses)


def tried(trials: Iterable[LrTrial], arm: str, lr: float, d_model: int | None = None) -> bool:
    return bool(_at(trials, arm, lr, d_model))


def tune_arm(grid: LrGrid, trials: list[LrTrial], arm: str,
             d_model: int | None = None) -> ArmTuning:
    """The grid `arm` needs from its tuning runs so far (extended until interior, untried or
    capped; then refined) and the best rate of it; `extended` counts edge extensions."""
    lrs = list(grid.base)
    for _ in range(grid.max_extensions):
        if not all(tried(trials, arm, lr, d_model) for lr in lrs):
            break
        best = min(lrs, key=lambda lr: (score(trials, arm, lr, d_model), lr))
        if best == lrs[-1] and math.isfinite(score(trials, arm, best, d_model)):
            lrs.append(rounded(lrs[-1] * grid.factor))
        elif best == lrs[0]:
            lrs.insert(0, rounded(lrs[0] / grid.factor))
        else:
            break
    extended = len(lrs) - len(grid.base)
    if grid.refine:
        lrs = sorted({*lrs, *refinement(grid, trials, arm, lrs, d_model)})
    best = min(lrs, key=lambda lr: (score(trials, arm, lr, d_model), lr))
    interior = (lrs[0] < best < lrs[-1] and math.isfinite(score(trials, arm, best, d_model))
                and all(tried(trials, arm, lr, d_model) for lr in lrs))
    return ArmTuning(arm, tuple(lrs), best, interior, extended)


def refinement(grid: LrGrid, trials: list[LrTrial], arm: str, coarse: list[float],
               d_model: int | None = None) -> tuple[float, ...]:
    """best·factor^(∓1/2) once all of `coarse` is tuned and its best is interior; () before."""
    if not all(tried(trials, arm, lr, d_model) for lr in coarse):
        return ()
    best = min(coarse, key=lambda lr: (score(trials, arm, lr, d_model), lr))
    if not (coarse[0] < best < coarse[-1] and math.isfinite(score(trials, arm, best, d_model))):
        return ()
    half = math.sqrt(grid.factor)
    return rounded(best / half), rounded(best * half)


def tune_arms(grid: LrGrid, trials: list[LrTrial], arms: Iterable[str],
              d_model: int | None = None) -> dict[str, ArmTuning]:
    return {arm: tune_arm(grid, trials, arm, d_model) for arm in arms}
