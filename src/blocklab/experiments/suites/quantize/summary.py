"""The `quantize` suite's summary (`QuantizeData`): the timings, and over seeds each scheme's
loss, C33's SwiGLU quantizations and every layer's merged-vs-separate comparison. No PyTorch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from blocklab.experiments.int8_records import SwigluError
from blocklab.experiments.options import RunOptions
from blocklab.experiments.suites.base import (
    Results,
    format_ci,
    format_level,
    mean_ci,
    paired_difference,
)
from blocklab.experiments.suites.quantize.runs import QualityRecord
from blocklab.experiments.suites.quantize.timing import QuantTiming, timed_runs, timing_table
from blocklab.experiments.summaries import Interval, Summary, Table
from blocklab.jsonio import decode


@dataclass(frozen=True)
class QuantQuality:
    """A trained model's validation loss under one scheme (torchao, eager), over seeds."""

    scheme: str
    val_loss: Interval
    delta: Interval  # scheme − float, nats/token, paired by seed
    logits_error: Interval


@dataclass(frozen=True)
class SwigluQuant:
    """C33: one way of quantizing SwiGLU's gate, up and down, over seeds."""

    scheme: str  # a key of blocklab.nn.int8.SWIGLU_SCHEMES
    ffn_error: Interval  # ‖FFN_q(x) − FFN(x)‖ / ‖FFN(x)‖ on the model's own FFN inputs
    logits_error: Interval
    delta: Interval  # val loss − float, nats/token
    error_vs_separate_pct: Interval  # 100·(ffn_error / same-granularity separate − 1), paired


@dataclass(frozen=True)
class QuantizeData:
    model: dict[str, Any]  # the timed (random-weight) ModelConfig
    seq_lens: list[int]
    decode_context: int
    repeats: int
    threads: int
    cpu_flags: dict[str, bool]  # avx2, avx512f, avx512_vnni, avx_vnni, amx_tile, amx_int8
    timings: list[QuantTiming]
    quality_model: dict[str, Any]  # the trained ModelConfig
    quality: list[QuantQuality]
    swiglu: list[SwigluQuant]
    # max |merged − separate| over every dequantized weight of the trained models
    merged_per_row_max_diff: float
    merged_per_tensor_max_diff: float
    # per-tensor merged scale / max(gate scale, up scale), every layer and seed (1.0: the max)
    merged_scale_over_max: list[float]
    # max / min of gate's and up's per-tensor int8 scales, every layer of every seed
    gate_up_scale_ratio: list[float] = field(default_factory=list)
    # val loss with gate|up merged under one per-tensor scale − each at its own, paired
    merged_tensor_loss_penalty: Interval = Interval(0)


def scheme_quality(records: Sequence[QualityRecord]) -> list[QuantQuality]:
    """One QuantQuality per scheme over the trained models."""
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
    """One SwigluQuant per scheme over the seeds, with the FFN output error against the same
    granularity's separate scheme, 100·(error / separate's − 1) %, paired."""
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


def summarise(options: RunOptions, results: Results) -> Summary:
    size, seeds = options.size, options.seeds
    timed = timed_runs(results)
    trained = [(spec, decode(QualityRecord, r.extra, spec.label)) for spec, r in results
               if spec.arm == "quality" and r.status == "ok"]
    records = [record for _, record in trained]
    quality = scheme_quality(records)
    swiglu = swiglu_summary([r.swiglu for r in records])
    penalty = paired_difference([r.swiglu["merged-per-tensor"].val_loss for r in records],
                                [r.swiglu["separate-per-tensor"].val_loss for r in records])
    layers = [x for r in records for x in r.layers]
    ratios = [x.scale_ratio for x in layers]
    per_row = max((x.per_row_diff for x in layers), default=0.0)
    per_tensor = max((x.per_tensor_diff for x in layers), default=0.0)

    tables, notes = [], []
    for run in timed:
        tables.append(timing_table(run))
        flags = run.record.cpu_flags
        if not (flags.get("avx512_vnni") or flags.get("avx_vnni") or flags.get("amx_int8")):
            notes.append("This CPU has no VNNI or AMX int8 instructions (flags: "
                         + ", ".join(f"{k}={v}" for k, v in flags.items())
                         + "): torch's int8 GEMM runs a slow path, so dynamic int8 is slower "
                         "here, not faster.")
    if quality:
        tables.append(Table(
            "Trained model (SwiGLU, stdlib): validation loss under each scheme (torchao, eager)",
            ["scheme", "val loss", "Δ vs float", "logits rel. error"],
            [[q.scheme, format_level(q.val_loss), format_ci(q.delta, 4),
              format_level(q.logits_error, 4)] for q in quality],
            "Δ paired by seed, nats/token."))
        tables.append(Table(
            "C33: SwiGLU's gate, up, down quantized separately or gate|up merged",
            ["scheme", "FFN rel. error", "vs separate, %", "Δ val loss", "logits rel. error"],
            [[s.scheme, format_level(s.ffn_error, 4),
              format_ci(s.error_vs_separate_pct, 2), format_ci(s.delta, 4),
              format_level(s.logits_error, 4)] for s in swiglu],
            "down reads the hidden (width d_ff), not x: it is never concatenated with gate and "
            "up. merged-per-row equals separate-per-row exactly (each row keeps its scale). "
            "vs separate: the FFN output error against the same granularity's separate scheme, "
            "paired by seed."))
    if layers:
        tables.append(Table(
            "C33: gate's and up's per-tensor int8 scales, per layer",
            ["seed", "layer", "gate scale", "up scale", "ratio (max / min)",
             "max |merged − separate| per row", "per tensor"],
            [[spec.seed, i, f"{x.gate_scale:.4g}", f"{x.up_scale:.4g}",
              round(x.scale_ratio, 3), f"{x.per_row_diff:.3g}", f"{x.per_tensor_diff:.3g}"]
             for spec, record in trained for i, x in enumerate(record.layers)],
            "One per-tensor scale for gate|up is the larger of the two: the other matrix is "
            "quantized on a grid (max / min) times coarser than its own. Near 1, merging costs "
            "nothing even per tensor."))
        notes.append(f"Max |merged − separate| over the trained weights of {len(layers)} "
                     f"layers: per-row {per_row:.3g}, per-tensor "
                     f"{per_tensor:.3g}; gate's and up's per-tensor scales "
                     f"{min(ratios):.3g}× to {max(ratios):.3g}× apart; merging gate|up under "
                     "one per-tensor scale changes the validation loss by "
                     f"{format_ci(penalty, 5)} nats/token against each at its own.")
    first = timed[0].record if timed else None
    data = QuantizeData(
        model=first.model if first else {},
        seq_lens=list(first.spec.seq_lens) if first else [],
        decode_context=first.spec.seq_lens[0] if first else 0,
        repeats=first.spec.repeats if first else 0,
        threads=first.times.threads if first else 0,
        cpu_flags=first.cpu_flags if first else {},
        timings=[row for run in timed for row in run.rows],
        quality_model=records[0].model if records else {}, quality=quality, swiglu=swiglu,
        merged_per_row_max_diff=per_row, merged_per_tensor_max_diff=per_tensor,
        merged_scale_over_max=[x.merged_over_max for x in layers],
        gate_up_scale_ratio=ratios, merged_tensor_loss_penalty=penalty)
    return Summary("quantize", size, len(seeds), tables, notes, data, first_seed=seeds.start)
