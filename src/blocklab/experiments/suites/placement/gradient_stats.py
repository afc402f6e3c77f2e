"""Part (a)'s statistics: per placement and init, how the gradient at initialisation scales with
depth (log-log slopes), how unevenly one stack's layers get it, the residual stream's
sensitivity and the block Jacobians."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from blocklab.experiments.suites.base import mean_ci
from blocklab.experiments.suites.placement.data import GradientProbe
from blocklab.experiments.suites.placement.probes import ProbeRecord
from blocklab.experiments.suites.placement.sizes import Probe
from blocklab.experiments.suites.placement.stored import ProbeKey
from blocklab.experiments.summaries import Interval


def loglog_slope(xs: Sequence[float], ys: Sequence[float | None]) -> float | None:
    """Least-squares slope b of log y = a + b·log x; None with fewer than two usable points.

    y = c·x^p gives exactly p.
    """
    points = [(math.log(x), math.log(y)) for x, y in zip(xs, ys, strict=True)
              if x is not None and y is not None and x > 0 and y > 0 and math.isfinite(y)]
    if len(points) < 2:
        return None
    mx = sum(u for u, _ in points) / len(points)
    my = sum(v for _, v in points) / len(points)
    sxx = sum((u - mx) ** 2 for u, _ in points)
    if sxx == 0:
        return None
    return sum((u - mx) * (v - my) for u, v in points) / sxx


def _geometric_mean(values: Sequence[float | None]) -> float | None:
    usable = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not usable:
        return None
    return math.exp(sum(math.log(v) for v in usable) / len(usable))


def gradient_summary(probe: Probe, seeds: range, probes: dict[ProbeKey, ProbeRecord]
                      ) -> dict[str, dict[str, GradientProbe]]:
    """placement -> init -> its `GradientProbe` over `seeds`."""
    return {placement: {init: _gradient_probe(probe, seeds, probes, placement, init)
                        for init in probe.inits}
            for placement in probe.placements}


def _gradient_probe(probe: Probe, seeds: range, probes: dict[ProbeKey, ProbeRecord],
                    placement: str, init: str) -> GradientProbe:
    depths = list(probe.depths)
    deepest = max(depths)

    def runs(depth: int) -> list[ProbeRecord]:
        found = [probes.get((placement, init, depth, s)) for s in seeds]
        return [r for r in found if r is not None]

    def at(index: int, depth: int) -> float | None:
        return _geometric_mean([r.down_proj_grad[index] for r in runs(depth)])

    def mean_per_layer(rows: list[list[float | None]], count: int) -> list[float | None]:
        return [mean_ci([row[i] for row in rows]).mean for i in range(count)]

    last = [at(-1, d) for d in depths]
    first = [at(0, d) for d in depths]
    per_seed_last, per_seed_first = [], []
    for seed in seeds:
        found = [probes.get((placement, init, d, seed)) for d in depths]
        rows = [r for r in found if r is not None]
        if len(rows) == len(depths):
            per_seed_last.append(loglog_slope(depths, [r.down_proj_grad[-1] for r in rows]))
            per_seed_first.append(loglog_slope(depths, [r.down_proj_grad[0] for r in rows]))
    return GradientProbe(
        depths=depths,
        last_layer_grad=last,
        first_layer_grad=first,
        slope_last=loglog_slope(depths, last),
        slope_first=loglog_slope(depths, first),
        slope_last_ci=mean_ci(per_seed_last),
        slope_first_ci=mean_ci(per_seed_first),
        residual_rms_last=[mean_ci([r.residual_rms[-1] for r in runs(d)]).mean
                           for d in depths],
        per_layer_grad={
            str(d): mean_per_layer([r.down_proj_grad for r in runs(d)], d) for d in depths},
        layer_spread_log2={
            str(d): mean_ci([_spread_log2(r.down_proj_grad) for r in runs(d)])
            for d in depths},
        per_layer_sensitivity={
            str(d): mean_per_layer([r.sensitivity for r in runs(d)], d + 1) for d in depths},
        # The layers' inputs only: the final norm's input is the last layer's output.
        sensitivity_spread_log2={
            str(d): mean_ci([_spread_log2(r.sensitivity[:d]) for r in runs(d)
                             if r.sensitivity]) for d in depths},
        sensitivity_spread_past_embedding_log2={
            str(d): mean_ci([_spread_log2(r.sensitivity[1:d]) for r in runs(d)
                             if r.sensitivity]) for d in depths},
        jacobian_depth=deepest,
        identity_deviation=mean_per_layer(
            [r.identity_deviation for r in runs(deepest) if r.identity_deviation is not None],
            deepest),
        jacobian_gain=mean_per_layer(
            [r.jacobian_gain for r in runs(deepest) if r.jacobian_gain is not None], deepest),
        # The median over layers: layer 0's input is the embedding (RMS 0.02 under most
        # inits), where a norm's Jacobian is about 50·I; one such layer must not set the
        # stack's number.
        identity_deviation_median=_median_per_seed(
            [r.identity_deviation for r in runs(deepest)]),
        jacobian_gain_median=_median_per_seed([r.jacobian_gain for r in runs(deepest)]),
    )


def _median_per_seed(per_seed: list[list[float | None] | None]) -> Interval:
    """Over seeds, the median over one stack's layers; a seed with no value or a non-finite one
    left out."""
    medians = []
    for values in per_seed:
        finite = [v for v in values or [] if v is not None and math.isfinite(v)]
        if values and len(finite) == len(values):
            medians.append(statistics.median(finite))
    return mean_ci(medians)


def _spread_log2(norms: Sequence[float | None]) -> float | None:
    """log2(max / min) over one stack's per-layer gradient norms."""
    usable = [v for v in norms if v is not None and math.isfinite(v) and v > 0]
    return math.log2(max(usable) / min(usable)) if len(usable) == len(norms) > 1 else None
