"""The summary's data read off the stored runs: kernel timings, ratios and compile times
(`kernel_rows`), like-for-like timings (`like_rows`), step times (`step_times`) and the paired
quality comparison (`paired_quality`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from blocklab.experiments.suites.base import Results, mean_ci, paired_difference
from blocklab.experiments.suites.norm_cost.data import (
    CompileTime,
    FusedTiming,
    KernelRatio,
    KernelTiming,
    NormQuality,
    StepTime,
)
from blocklab.experiments.suites.norm_cost.records import (
    ImplTimes,
    KernelTimes,
    LikeForLikeTimes,
    StepTimes,
)
from blocklab.experiments.suites.norm_cost.sizes import (
    EQUIVALENCE_MARGIN,
    KINDS,
    NORM_NAMES,
    PASSES,
)
from blocklab.experiments.suites.norm_cost.stats import equivalence
from blocklab.experiments.summaries import TimeRatio


def _median_ms(values: Sequence[float] | None) -> float | None:
    return None if not values else 1000 * float(np.median(values))


def kernel_rows(results: Results
                 ) -> tuple[list[KernelTiming], list[KernelRatio], list[CompileTime]]:
    """Every implementation's timing per kernels run, the RMSNorm/LayerNorm ratios within each
    kind (both passes) and the compile times of the compiled kind."""
    kernels, ratios, compiles = [], [], []
    for spec, result in results:
        if spec.arm != "kernels" or result.status != "ok":
            continue
        record = KernelTimes.of(result, spec.label)
        d, rows, threads = record.d, record.rows, record.threads
        for name, rec in record.impls.items():
            kernels.append(KernelTiming(
                impl=name, d=d, rows=rows, threads=threads,
                fwd_ms=_median_ms(rec.fwd_s), fwdbwd_ms=_median_ms(rec.fwdbwd_s),
                saved_bytes=rec.bytes, extra_saved_bytes=rec.extra_bytes,
                compile_s=rec.compile_s, error=rec.error))
        for kind in KINDS:
            rms = record.impls.get(f"rmsnorm:{kind}")
            ln = record.impls.get(f"layernorm:{kind}")
            if rms is None or ln is None:
                continue
            if kind == "compiled":
                compiles.append(CompileTime(
                    d=d, rows=rows, threads=threads, rmsnorm_s=rms.compile_s,
                    layernorm_s=ln.compile_s, error=rms.error or ln.error,
                    inductor_warmup_s=record.inductor_warmup_s))
            if rms.fwd_s is None or ln.fwd_s is None:
                continue
            for pass_name in ("fwd", "fwdbwd"):
                ratios.append(KernelRatio(
                    d=d, rows=rows, threads=threads, impl=f"rmsnorm:{kind}",
                    layernorm_impl=f"layernorm:{kind}", pass_name=pass_name,
                    time=TimeRatio.paired(rms.seconds(pass_name) or [],
                                          ln.seconds(pass_name) or [])))
    return kernels, ratios, compiles


def like_rows(results: Results) -> list[FusedTiming]:
    """The like-for-like kernel timings (`time_like_for_like`), one per thread count."""
    out = []
    for spec, result in results:
        if spec.arm != "like-for-like" or result.status != "ok":
            continue
        record = LikeForLikeTimes.of(result, spec.label)
        rms, ln = (record.impls.get(f"{norm}:{record.timed_kind}", ImplTimes())
                   for norm in NORM_NAMES)
        out.append(FusedTiming(
            d=record.d, rows=record.rows, threads=record.threads, method=record.method,
            kernels=record.kernels, torch_fused=record.torch_fused,
            rmsnorm_ms={p: _median_ms(rms.seconds(p)) for p in PASSES},
            layernorm_ms={p: _median_ms(ln.seconds(p)) for p in PASSES},
            ratios={p: TimeRatio.paired(rms.seconds(p) or [], ln.seconds(p) or [])
                    for p in PASSES if rms.seconds(p) and ln.seconds(p)},
            compile_s={norm: rec.compile_s for norm, rec in zip(NORM_NAMES, (rms, ln),
                                                                strict=True)},
            error=rms.error or ln.error))
    return out


def step_times(results: Results) -> dict[str, StepTime]:
    """"<path>/<threads>" -> the step time of each code path of each step-time run."""
    out = {}
    for spec, result in results:
        if spec.arm != "step" or result.status != "ok":
            continue
        record = StepTimes.of(result, spec.label)
        for path, times in record.step_s.items():
            out[f"{path}/{record.threads}"] = StepTime(
                threads=record.threads, model=dataclasses.asdict(record.model),
                params=record.params, rmsnorm_ms=_ms(times["rmsnorm"]),
                layernorm_ms=_ms(times["layernorm"]),
                time=TimeRatio.paired(times["rmsnorm"], times["layernorm"]), path=path)
    return out


def paired_quality(results: Results) -> NormQuality:
    """RMSNorm's and LayerNorm's validation losses over the seeds both ran, their paired
    difference and its verdict against EQUIVALENCE_MARGIN."""
    losses: dict[str, dict[int, float | None]] = {norm: {} for norm in NORM_NAMES}
    statuses: dict[str, list[str]] = {norm: [] for norm in NORM_NAMES}
    entropy = None
    for spec, result in results:
        if spec.arm in NORM_NAMES:
            final = result.final
            losses[spec.arm][spec.seed] = (final.val_loss if result.status == "ok" and final
                                           else None)
            statuses[spec.arm].append(result.status)
            if final is not None:
                entropy = final.unigram_entropy
    seed_list = sorted(set(losses["rmsnorm"]) & set(losses["layernorm"]))
    rms_losses = [losses["rmsnorm"][s] for s in seed_list]
    ln_losses = [losses["layernorm"][s] for s in seed_list]
    delta = paired_difference(rms_losses, ln_losses)
    equivalent, verdict = equivalence(delta, EQUIVALENCE_MARGIN)
    return NormQuality(rmsnorm=mean_ci(rms_losses), layernorm=mean_ci(ln_losses), delta=delta,
                       margin=EQUIVALENCE_MARGIN, equivalent=equivalent, verdict=verdict,
                       seeds=seed_list, statuses=statuses, unigram_entropy=entropy)


def _ms(values: Sequence[float]) -> float:
    return 1000 * float(np.median(values))
