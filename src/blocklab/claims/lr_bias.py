"""What a tuned learning rate leaves on the table: the loss an arm would still gain at the
optimum of its tuning curve, read by a parabola in log lr through the chosen rate and its two
neighbours on the grid.

A ×3 grid leaves one arm nearer its optimum than another, a difference every seed carries (no
interval sees it); `rules.decide` lets a decision stand only with and without that bias.

    bias = lr_bias(trials, "swiglu", chosen=1e-2)   # LrBias(optimum=0.017, excess=0.012)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from blocklab.experiments.summaries import LrTrial


@dataclass(frozen=True)
class LrBias:
    """The parabola's optimum (clipped to the chosen rate's neighbours) and the loss it
    predicts is left at the chosen rate (nats, ≥ 0); both None at the grid's edge, where a
    neighbour did not count, or where the three points do not curve upward."""

    arm: str
    chosen: float
    optimum: float | None
    excess: float | None


def _mean_losses(trials: Sequence[LrTrial], arm: str, d_model: int | None
                 ) -> dict[float, float | None]:
    """{lr: mean loss over the arm's tuning seeds}; None where any run did not count."""
    by_lr: dict[float, list[float | None]] = {}
    for t in trials:
        if t.arm == arm and (d_model is None or t.d_model == d_model):
            by_lr.setdefault(t.lr, []).append(t.val_loss)
    return {lr: (None if any(v is None for v in vs) else sum(vs) / len(vs))  # type: ignore[misc]
            for lr, vs in sorted(by_lr.items())}


def vertex(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float] | None:
    """(x, curvature a) of the parabola y = a·(x − x*)² + c through three points (x
    ascending); None when a ≤ 0 (no minimum)."""
    (x0, x1, x2), (y0, y1, y2) = xs, ys
    d01, d12 = (y1 - y0) / (x1 - x0), (y2 - y1) / (x2 - x1)
    a = (d12 - d01) / (x2 - x0)
    if not a > 0:
        return None
    # slope at the midpoint of x0, x1 is d01: 2a·((x0 + x1)/2 − x*) = d01
    return (x0 + x1) / 2 - d01 / (2 * a), a


def lr_bias(trials: Sequence[LrTrial], arm: str, chosen: float,
            d_model: int | None = None) -> LrBias:
    """`arm`'s tuning curve around `chosen` (its tuned rate) from its tuning runs `trials`
    (those at width `d_model` only, when given)."""
    losses = _mean_losses(trials, arm, d_model)
    lrs = list(losses)
    match = [i for i, lr in enumerate(lrs) if math.isclose(lr, chosen, rel_tol=1e-9)]
    if not match or match[0] in (0, len(lrs) - 1):
        return LrBias(arm, chosen, None, None)
    i = match[0]
    ys = [losses[lrs[j]] for j in (i - 1, i, i + 1)]
    if any(y is None for y in ys):
        return LrBias(arm, chosen, None, None)
    xs = [math.log(lrs[j]) for j in (i - 1, i, i + 1)]
    found = vertex(xs, ys)  # type: ignore[arg-type]
    if found is None:
        return LrBias(arm, chosen, None, None)
    x_star, a = found
    x_star = min(max(x_star, xs[0]), xs[2])  # no further than the neighbours tried
    return LrBias(arm, chosen, math.exp(x_star), a * (xs[1] - x_star) ** 2)


def comparison_bias(arm: LrBias, baseline: LrBias, baseline_loss: float | None
                    ) -> float | None:
    """What the two tuned rates put into a gap 100·(arm − baseline)/baseline: 100·(arm's
    excess − baseline's)/baseline loss, % (positive: the arm looks worse); None if unknown."""
    if arm.excess is None or baseline.excess is None or not baseline_loss:
        return None
    return 100 * (arm.excess - baseline.excess) / baseline_loss


def unfair_reason(edge: str | None, bias: float | None) -> str | None:
    """Why the tuned rates' bias cannot be read (None: it can): `edge`, or no optimum."""
    if edge:
        return edge
    if bias is None:
        return "the tuning curves give no optimum to read the lr bias by"
    return None
