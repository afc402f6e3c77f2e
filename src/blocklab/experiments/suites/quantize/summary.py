"""The `quantize` suite's summary: the timing runs' rows and the quality runs' statistics, then
the tables and notes built from them."""

from __future__ import annotations

from blocklab.experiments.options import RunOptions
from blocklab.experiments.suites.base import Results, format_ci, format_level
from blocklab.experiments.suites.quantize.data import QuantizeData
from blocklab.experiments.suites.quantize.records import QualityRecord
from blocklab.experiments.suites.quantize.stats import (
    merge_stats,
    merged_tensor_loss_penalty,
    scheme_quality,
    swiglu_summary,
)
from blocklab.experiments.suites.quantize.tables import timing_table
from blocklab.experiments.suites.quantize.timings import timed_runs
from blocklab.experiments.summaries import Summary, Table


def summarise(options: RunOptions, results: Results) -> Summary:
    size, seeds = options.size, options.seeds
    timed = timed_runs(results)
    trained = [(spec, QualityRecord.of(r, spec.label)) for spec, r in results
               if spec.arm == "quality" and r.status == "ok"]
    records = [record for _, record in trained]
    quality = scheme_quality(records)
    swiglu = swiglu_summary([r.swiglu for r in records])
    penalty = merged_tensor_loss_penalty([r.swiglu for r in records])
    merged = merge_stats(records)

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
    if merged.layers:
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
        ratios = merged.scale_ratios
        notes.append(f"Max |merged − separate| over the trained weights of {merged.layers} "
                     f"layers: per-row {merged.per_row_max_diff:.3g}, per-tensor "
                     f"{merged.per_tensor_max_diff:.3g}; gate's and up's per-tensor scales "
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
        merged_per_row_max_diff=merged.per_row_max_diff,
        merged_per_tensor_max_diff=merged.per_tensor_max_diff,
        merged_scale_over_max=merged.merged_over_max,
        gate_up_scale_ratio=merged.scale_ratios, merged_tensor_loss_penalty=penalty)
    return Summary("quantize", size, len(seeds), tables, notes, data, first_seed=seeds.start)
