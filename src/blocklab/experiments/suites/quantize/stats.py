"""The `quantize` quality runs' statistics over seeds: the loss under each scheme, the SwiGLU
quantizations (C33) and the merged-vs-separate comparison of every layer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from blocklab.experiments.int8_records import SwigluError
from blocklab.experiments.suites.base import mean_ci, paired_difference
from blocklab.experiments.suites.quantize.data import QuantQuality, SwigluQuant
from blocklab.experiments.suites.quantize.records import QualityRecord
from blocklab.experiments.summaries import Interval


@dataclass(frozen=True)
class MergeStats:
    """C33 over every layer of every seed's trained model (`merge_comparison`): the largest
    |merged − separate| per row and per tensor, gate's and up's scale ratios and the merged
    per-tensor scale over the larger one, layer by layer."""

    layers: int
    per_row_max_diff: float
    per_tensor_max_diff: float
    scale_ratios: list[float]
    merged_over_max: list[float]


def merge_stats(records: Sequence[QualityRecord]) -> MergeStats:
    layers = [x for r in records for x in r.layers]
    return MergeStats(layers=len(layers),
                      per_row_max_diff=max((x.per_row_diff for x in layers), default=0.0),
                      per_tensor_max_diff=max((x.per_tensor_diff for x in layers), default=0.0),
                      scale_ratios=[x.scale_ratio for x in layers],
                      merged_over_max=[x.merged_over_max for x in layers])


def scheme_quality(records: Sequence[QualityRecord]) -> list[QuantQuality]:
    """One QuantQuality per scheme over the trained models (`quality_of_schemes`)."""
    if not records:
        return []
    quality = []
    for scheme in records[0].quality:
        rows = [r.quality[scheme] for r in records]
        quality.append(QuantQuality(scheme, mean_ci([x.val_loss for x in rows]),
                                    mean_ci([x.delta for x in rows]),
                                    mean_ci([x.logits_error for x in rows])))
    return quality


def swiglu_summary(per_seed: Sequence[dict[str, SwigluError]]) -> list[SwigluQuant]:
    """One SwigluQuant per scheme from `swiglu_errors`' output of each seed: the FFN output
    error, logits error and Δ val loss over seeds, and the FFN output error against the same
    granularity's separate scheme, 100·(error / separate's − 1) %, paired by seed."""
    if not per_seed:
        return []
    out = []
    for scheme in per_seed[0]:
        rows = [r[scheme] for r in per_seed]
        base = [r[f"separate-{scheme.split('-', 1)[1]}"].ffn_error for r in per_seed]
        pct = paired_difference([100 * x.ffn_error / b for x, b in zip(rows, base,
                                                                       strict=True)],
                                [100.0] * len(rows))
        out.append(SwigluQuant(scheme, mean_ci([x.ffn_error for x in rows]),
                               mean_ci([x.logits_error for x in rows]),
                               mean_ci([x.delta for x in rows]), pct))
    return out


def merged_tensor_loss_penalty(per_seed: Sequence[dict[str, SwigluError]]) -> Interval:
    """Val loss with gate|up merged under one per-tensor scale − with each at its own, nats/token,
    paired by seed (`swiglu_errors`' output of each seed)."""
    return paired_difference([r["merged-per-tensor"].val_loss for r in per_seed],
                             [r["separate-per-tensor"].val_loss for r in per_seed])
