"""The suite's `summarise`: its data read off the stored runs (`readings`), the analytic counts
(`compute`), then the tables and notes (`tables`)."""

from __future__ import annotations

from blocklab.experiments.options import RunOptions
from blocklab.experiments.suites.base import Results
from blocklab.experiments.suites.evaluation import full_only
from blocklab.experiments.suites.norm_cost.compute import count_compute
from blocklab.experiments.suites.norm_cost.data import NormCostData
from blocklab.experiments.suites.norm_cost.readings import (
    kernel_rows,
    like_rows,
    paired_quality,
    step_times,
)
from blocklab.experiments.suites.norm_cost.sizes import SIZES
from blocklab.experiments.suites.norm_cost.tables import (
    compute_tables,
    kernel_tables,
    like_table,
    quality_table,
    span_notes,
    step_table,
)
from blocklab.experiments.summaries import Summary, Table


def summarise(options: RunOptions, results: Results) -> Summary:
    size, seeds = options.size, options.seeds
    kernels, ratios, compiles = kernel_rows(results)
    step_time = step_times(results)
    like = like_rows(results)
    compute = count_compute(size)
    quality = paired_quality(results)

    tables = kernel_tables(kernels, ratios)
    notes = span_notes(ratios)
    if compiles:
        tables.append(Table(
            "torch.compile time (cold: fresh inductor cache), seconds",
            ["d", "rows", "threads", "RMSNorm", "LayerNorm"],
            [[c.d, c.rows, c.threads, c.rmsnorm_s, c.layernorm_s] for c in compiles],
            "First forward+backward plus first no-grad forward of the compiled plain module."))
        warm = max((c.inductor_warmup_s or 0.0) for c in compiles)
        if warm:
            notes.append(f"torch.compile's one-off process start-up (imports, compiler checks) "
                         f"took {warm:.1f} s, not included in the per-shape compile times.")
        failed = [c for c in compiles if c.error]
        if failed:
            notes.append(f"torch.compile failed at {len(failed)} shape(s): {failed[0].error}")
    planned = SIZES[size].kernels
    if planned is None:
        notes.append(full_only(
            ["the kernel runs: each implementation's forward and forward+backward time per "
             "shape, the bytes saved for backward and torch.compile's compile times"],
            "C18 is decided by the analytic FLOP and byte counts and the quality runs; the "
            "kernels are reported beside them"))
    elif not planned.compile:
        notes.append(f"torch.compile is not part of the {size} grid (a cold compile takes "
                     "seconds per implementation and shape); the full grid includes it.")
    tables.append(step_table(step_time))
    if like:
        tables.append(like_table(like))
        failed_like = [t for t in like if t.error]
        if failed_like:
            notes.append("The like-for-like kernel timing failed to compile: "
                         f"{failed_like[0].error}")
    tables.extend(compute_tables(compute))
    tables.append(quality_table(quality))
    notes.append("Timings run on the stated number of CPU threads with other work possibly "
                 "sharing the machine; repeats interleave the implementations so drift hits all "
                 "of them and cancels in each repeat's ratio; times are medians over the repeats, "
                 "ratios the geometric mean of the paired per-repeat ratios with a Student t "
                 "interval on their logs.")
    data = NormCostData(kernels=kernels, ratios=ratios, compile=compiles, step_time=step_time,
                        quality=quality, compute=compute, like_for_like=like)
    return Summary("norm-cost", size, len(seeds), tables, notes, data, first_seed=seeds.start)
