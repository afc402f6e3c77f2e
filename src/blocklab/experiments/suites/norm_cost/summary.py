"""The norm-cost suite's summary (`NormCostData`): the analytic counts that decide "compute"
(`count_compute`), the timings, the quality equivalence verdict, the tables and notes."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from blocklab.experiments.options import RunOptions
from blocklab.experiments.suites.base import (
    Results,
    format_ci,
    format_ratio,
    mean_ci,
    median_ms,
    paired_difference,
)
from blocklab.experiments.suites.evaluation import full_only
from blocklab.experiments.suites.norm_cost.runs import SIZES
from blocklab.experiments.suites.norm_cost.timing import (
    KINDS,
    NORM_NAMES,
    PASSES,
    ImplTimes,
    KernelTimes,
    LikeForLikeTimes,
    StepTimes,
    model_config,
)
from blocklab.experiments.summaries import RATIO_METHOD, Interval, Summary, Table, TimeRatio
from blocklab.jsonio import decode

T = TypeVar("T")  # a timing run's record
# Δ val loss (nats/token) inside which RMSNorm and LayerNorm count as equivalent in quality.
EQUIVALENCE_MARGIN = 0.02


@dataclass(frozen=True)
class KernelTiming:
    impl: str
    d: int
    rows: int
    threads: int
    fwd_ms: float | None
    fwdbwd_ms: float | None
    saved_bytes: int | None
    extra_saved_bytes: int | None
    compile_s: float | None
    error: str | None


@dataclass(frozen=True)
class KernelRatio:
    d: int
    rows: int
    threads: int
    impl: str
    layernorm_impl: str
    pass_name: str  # "fwd" or "fwdbwd"
    time: TimeRatio


@dataclass(frozen=True)
class CompileTime:
    d: int
    rows: int
    threads: int
    rmsnorm_s: float | None
    layernorm_s: float | None
    error: str | None
    inductor_warmup_s: float | None


@dataclass(frozen=True)
class StepTime:
    threads: int
    model: dict[str, Any]
    params: dict[str, int]
    rmsnorm_ms: float
    layernorm_ms: float
    time: TimeRatio
    path: str  # "blocklab" (the models as built) or "like-for-like" (both by PyTorch's kernels)


@dataclass(frozen=True)
class NormQuality:
    rmsnorm: Interval
    layernorm: Interval
    delta: Interval  # RMS − LN, nats/token, paired by seed
    margin: float
    equivalent: bool
    verdict: str
    seeds: list[int]
    statuses: dict[str, list[str]]
    unigram_entropy: float | None


@dataclass(frozen=True)
class NormCount:
    """Analytic cost of one norm on one row of width d (`count_norm`)."""

    norm: str  # "rmsnorm" or "layernorm"
    d: int
    element_bytes: int  # 4: float32, 2: bf16
    fwd_flops: int
    fwdbwd_flops: int
    fwd_bytes: int  # training forward: read x, write y and the statistics
    fwdbwd_bytes: int
    param_bytes: int  # per call, forward+backward: read γ (β), write their gradients


@dataclass(frozen=True)
class StepShare:
    """The norms' FLOPs within one training step (`step_share`)."""

    model: str
    d_model: int
    n_layers: int
    batch: int
    seq_len: int
    norm_calls: int  # norms a token passes through (2 per layer + the final one)
    matmul_flops: int
    norm_flops: dict[str, int]  # norm -> the norms' FLOPs in the step
    step_flops: dict[str, int]  # norm -> the whole step's FLOPs
    saving_pct: float  # 100·(1 − step rmsnorm / step layernorm)


@dataclass(frozen=True)
class NormCompute:
    """C18's analytic part: what "compute" RMSNorm saves, per row and per training step."""

    counts: list[NormCount]
    flops_saving_pct: float  # 100·(1 − RMSNorm / LayerNorm), forward+backward, any d
    fwd_flops_saving_pct: float
    bytes_saving_pct: dict[str, float]  # "d=<d>/<element_bytes>B" -> per-row fwd+bwd saving
    steps: list[StepShare]


@dataclass(frozen=True)
class FusedTiming:
    """RMSNorm against LayerNorm timed with equally fused kernels (`time_like_for_like`)."""

    d: int
    rows: int
    threads: int
    method: str  # "torch-fused" or "torch.compile"
    kernels: dict[str, str]  # norm -> what ran
    torch_fused: dict[str, bool]  # norm -> does PyTorch's functional norm run fused here
    rmsnorm_ms: dict[str, float | None]  # "fwd" / "fwdbwd" -> median ms per call
    layernorm_ms: dict[str, float | None]
    ratios: dict[str, TimeRatio]  # "fwd" / "fwdbwd" -> RMSNorm / LayerNorm time
    compile_s: dict[str, float | None]
    error: str | None


@dataclass(frozen=True)
class NormCostData:
    kernels: list[KernelTiming]
    ratios: list[KernelRatio]
    compile: list[CompileTime]
    step_time: dict[str, StepTime]  # "<path>/<threads>" -> step timing
    quality: NormQuality
    compute: NormCompute | None = None  # the analytic counts that decide "compute" (C18)
    like_for_like: list[FusedTiming] = field(default_factory=list)  # one per thread count


def equivalence(delta: Interval, margin: float) -> tuple[bool, str]:
    """(equivalent, verdict): equivalent when the whole 95% CI lies strictly inside ±margin
    (two one-sided tests at 2.5% each)."""
    low, high = delta.ci_low, delta.ci_high
    if low is None or high is None:
        return False, "undecided (fewer than two paired seeds)"
    if -margin < low and high < margin:
        return True, "equivalent"
    if low >= margin or high <= -margin:
        return False, "different (whole CI outside the margin)"
    return False, "not shown equivalent (CI crosses the margin)"


# Per-row statistics a fused kernel keeps for backward (float32 whatever the input's dtype):
# RMSNorm the 1/rms, LayerNorm the mean and the 1/std. Parameters: γ; γ and β.
NORM_STATS = {"rmsnorm": 1, "layernorm": 2}
NORM_PARAMS = {"rmsnorm": 1, "layernorm": 2}
STAT_BYTES = 4
# The real model the counts are also read at (`blocklab.budget` zoo), in bf16 (2 bytes).
REAL_MODEL = "meta-llama-3-8b"
REAL_ELEMENT_BYTES = 2


def count_norm(norm: str, d: int, element_bytes: int = 4) -> NormCount:
    """FLOPs (`budget.flops.norm_flops_per_row`) and bytes of `norm` on one row of width d, by
    an ideal fused kernel touching each tensor once, e = `element_bytes` per element:

        training forward   read x, write y (2·d·e), write the row statistics (s·4)
        backward           read x and dy, write dx (3·d·e), read the statistics (s·4)
        per call           read γ (β) forward, read γ and write dγ (dβ) backward: (2p + 1)·d·e

    with s = NORM_STATS and p = NORM_PARAMS.
    """
    from blocklab.budget.flops import norm_flops_per_row

    fwd_flops = norm_flops_per_row(norm, d)  # refuses a norm it has no count for
    stats = NORM_STATS[norm] * STAT_BYTES
    fwd_bytes = 2 * d * element_bytes + stats
    return NormCount(
        norm=norm, d=d, element_bytes=element_bytes,
        fwd_flops=fwd_flops, fwdbwd_flops=norm_flops_per_row(norm, d, True),
        fwd_bytes=fwd_bytes, fwdbwd_bytes=fwd_bytes + 3 * d * element_bytes + stats,
        param_bytes=(2 * NORM_PARAMS[norm] + 1) * d * element_bytes)


def saving_pct(rms: float, ln: float) -> float:
    """100·(1 − rms / ln): how much less RMSNorm needs than LayerNorm, % (negative: more)."""
    return 100 * (1 - rms / ln)


def step_share(cfg, batch: int, seq_len: int, model: str) -> StepShare:
    """The norms' FLOPs in one training step of `cfg` ([batch, seq_len] tokens) with each norm:
    matmuls 3× the forward (backward = 2× forward), plus every norm forward+backward; other
    elementwise work left out, so the saving is an upper bound."""
    from blocklab.budget.flops import (
        ELEMENTWISE_COST,
        NORM_BACKWARD_COST,
        elementwise_flops,
        prefill_flops,
    )

    matmul = 3 * prefill_flops(cfg, batch, seq_len).total
    norm_flops, calls = {}, 0
    for norm in NORM_NAMES:
        fwd = elementwise_flops(cfg.replace(norm=norm), batch, seq_len)["norms"]
        per_call = batch * seq_len * cfg.d_model * ELEMENTWISE_COST[norm]
        calls = fwd // per_call
        norm_flops[norm] = calls * batch * seq_len * cfg.d_model * (
            ELEMENTWISE_COST[norm] + NORM_BACKWARD_COST[norm])
    step = {norm: matmul + flops for norm, flops in norm_flops.items()}
    return StepShare(model=model, d_model=cfg.d_model, n_layers=cfg.n_layers, batch=batch,
                     seq_len=seq_len, norm_calls=calls, matmul_flops=matmul,
                     norm_flops=norm_flops, step_flops=step,
                     saving_pct=saving_pct(step["rmsnorm"], step["layernorm"]))


def count_compute(size: str) -> NormCompute:
    """C18's analytic part: per-row counts at the step model's width (float32) and the real
    model's (bf16), and both models' step shares."""
    from blocklab.budget import resolve_model

    step = SIZES[size].step
    real = resolve_model(REAL_MODEL).config
    widths = ((step.d_model, 4), (real.d_model, REAL_ELEMENT_BYTES))  # (d, element bytes)
    counts = [count_norm(norm, d, e) for d, e in widths for norm in NORM_NAMES]
    by = {(c.norm, c.d, c.element_bytes): c for c in counts}
    bytes_saving = {f"d={d}/{e}B": saving_pct(by["rmsnorm", d, e].fwdbwd_bytes,
                                              by["layernorm", d, e].fwdbwd_bytes)
                    for d, e in widths}
    rms, ln = counts[0], counts[1]
    suite_cfg = model_config("rmsnorm", step.d_model, step.n_layers, step.seq_len)
    steps = [step_share(suite_cfg, step.batch_size, step.seq_len, f"norm-cost {size}"),
             step_share(real, 1, real.max_seq_len, REAL_MODEL)]
    return NormCompute(counts=counts,
                       flops_saving_pct=saving_pct(rms.fwdbwd_flops, ln.fwdbwd_flops),
                       fwd_flops_saving_pct=saving_pct(rms.fwd_flops, ln.fwd_flops),
                       bytes_saving_pct=bytes_saving, steps=steps)


def _median_ms(values: Sequence[float] | None) -> float | None:
    return median_ms(values) if values else None


def _records(results: Results, arm: str, record_type: type[T]) -> list[T]:
    return [decode(record_type, result.extra, spec.label) for spec, result in results
            if spec.arm == arm and result.status == "ok"]


def kernel_rows(results: Results
                 ) -> tuple[list[KernelTiming], list[KernelRatio], list[CompileTime]]:
    """Per kernels run, each implementation's timing, the ratios within a kind, compile times."""
    kernels, ratios, compiles = [], [], []
    for record in _records(results, "kernels", KernelTimes):
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
    """The like-for-like kernel timings, one per thread count."""
    out = []
    for record in _records(results, "like-for-like", LikeForLikeTimes):
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
    """"<path>/<threads>" -> its step time."""
    out = {}
    for record in _records(results, "step", StepTimes):
        for path, times in record.step_s.items():
            out[f"{path}/{record.threads}"] = StepTime(
                threads=record.threads, model=dataclasses.asdict(record.model),
                params=record.params, rmsnorm_ms=_median_ms(times["rmsnorm"]),
                layernorm_ms=_median_ms(times["layernorm"]),
                time=TimeRatio.paired(times["rmsnorm"], times["layernorm"]), path=path)
    return out


def paired_quality(results: Results) -> NormQuality:
    """Both norms' val losses over the seeds both ran, paired, against EQUIVALENCE_MARGIN."""
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


def kernel_tables(kernels: list[KernelTiming], ratios: list[KernelRatio]) -> list[Table]:
    """Per thread count, both passes' times of every kind and shape, then the saved bytes."""
    by_key = {(k.impl, k.d, k.rows, k.threads): k for k in kernels}
    shapes = sorted({(k.threads, k.rows, k.d) for k in kernels})

    def pairs(threads: int) -> Iterator[tuple[int, int, str, KernelTiming, KernelTiming]]:
        for t, rows, d in shapes:
            for kind in KINDS:
                rms = by_key.get((f"rmsnorm:{kind}", d, rows, t))
                ln = by_key.get((f"layernorm:{kind}", d, rows, t))
                if t == threads and rms is not None and ln is not None:
                    yield d, rows, kind, rms, ln

    tables = []
    for threads in sorted({t for t, _, _ in shapes}):
        for pass_name, title in (("fwdbwd", "Forward+backward"), ("fwd", "Forward (no grad)")):
            tables.append(Table(
                f"{title}, {threads} thread(s): median ms per call",
                ["d", "rows", "impl", "RMSNorm ms", "LayerNorm ms", "RMS/LN [95% CI]"],
                [[d, rows, kind, getattr(rms, f"{pass_name}_ms"), getattr(ln, f"{pass_name}_ms"),
                  _ratio_cell(ratios, d, rows, threads, kind, pass_name)]
                 for d, rows, kind, rms, ln in pairs(threads)],
                "Ratio < 1: RMSNorm faster; ratio and CI: "
                + _method([r.time for r in ratios if r.threads == threads
                           and r.pass_name == pass_name]) + "."))
    if shapes:  # no kernel runs at a size that plans only what a rule grades
        first = min(t for t, _, _ in shapes)
        tables.append(Table(
            "Saved for backward beyond the input and parameters, KiB",
            ["d", "rows", "impl", "RMSNorm", "LayerNorm"],
            [[d, rows, kind, rms.extra_saved_bytes / 1024, ln.extra_saved_bytes / 1024]
             for d, rows, kind, rms, ln in pairs(first)
             if rms.extra_saved_bytes is not None and ln.extra_saved_bytes is not None],
            "Counted exactly with torch.autograd.graph.saved_tensors_hooks (distinct storages); "
            "the input x, also saved, is rows·d·4 bytes for every implementation."))
    return tables


def span_notes(ratios: list[KernelRatio]) -> list[str]:
    notes = []
    for pass_name, title in (("fwdbwd", "forward+backward"), ("fwd", "forward")):
        spans = []
        for kind in KINDS:
            values = [r.time.ratio for r in ratios
                      if r.pass_name == pass_name and r.impl == f"rmsnorm:{kind}"]
            if values:
                spans.append(f"{kind} {min(values):.2f}–{max(values):.2f}")
        if spans:
            notes.append(f"RMSNorm/LayerNorm {title} time ratio over the shapes: "
                         + ", ".join(spans) + ".")
    return notes


def step_table(step_time: dict[str, StepTime]) -> Table:
    return Table(
        "Training step time, DecoderLM with RMSNorm vs LayerNorm (median ms)",
        ["model", "code path", "threads", "RMSNorm ms", "LayerNorm ms",
         "ratio RMS/LN [95% CI]"],
        [[f"d={st.model['d_model']} L={st.model['n_layers']} T={st.model['seq_len']} "
          f"B={st.model['batch_size']}", st.path, st.threads, st.rmsnorm_ms, st.layernorm_ms,
          format_ratio(st.time)] for st in step_time.values()],
        "Forward, backward, clipping and AdamW; the four models' steps interleave. blocklab: "
        "the models as built (to bb47a6c RMSNorm ran a C kernel fused with the residual "
        "add; since, F.rms_norm); "
        "like-for-like: both norms by PyTorch's functional ops (F.rms_norm, F.layer_norm), "
        "the residual added apart. On a CPU F.rms_norm is a composite of elementary ops and "
        "F.layer_norm one fused kernel, so neither path is equally fused; see the "
        "like-for-like kernel table. Ratio and CI: "
        + _method([st.time for st in step_time.values()]) + ".")


def quality_table(quality: NormQuality) -> Table:
    entropy = quality.unigram_entropy
    return Table(
        "Quality: validation loss (nats/token) on stdlib, paired by seed",
        ["RMSNorm", "LayerNorm", "Δ RMS − LN", "margin", "verdict"],
        [[format_ci(quality.rmsnorm), format_ci(quality.layernorm), format_ci(quality.delta),
          f"±{EQUIVALENCE_MARGIN}", quality.verdict]],
        f"Equivalent when the whole 95% CI of Δ lies inside ±{EQUIVALENCE_MARGIN} nats/token; "
        f"unigram entropy of the training bytes: "
        f"{'—' if entropy is None else f'{entropy:.3f}'} nats.")


def compute_tables(compute: NormCompute) -> list[Table]:
    per_row = Table(
        "What 'compute' means: FLOPs and bytes per normalised row of width d (analytic)",
        ["norm", "d", "bytes/element", "fwd FLOPs", "fwd+bwd FLOPs", "fwd bytes",
         "fwd+bwd bytes", "γ, β bytes per call"],
        [[c.norm, c.d, c.element_bytes, c.fwd_flops, c.fwdbwd_flops, c.fwd_bytes,
          c.fwdbwd_bytes, c.param_bytes] for c in compute.counts],
        f"FLOPs by blocklab.budget's conventions (per element: RMSNorm 4 forward + 9 backward, "
        f"LayerNorm 7 + 13): RMSNorm needs {compute.flops_saving_pct:.1f}% fewer forward+"
        f"backward FLOPs ({compute.fwd_flops_saving_pct:.1f}% forward), at every d. Bytes: an "
        "ideal fused kernel reads and writes the same activations for both norms and differs "
        "only by the float32 row statistics (1 vs 2): "
        + ", ".join(f"{k} {v:.2f}%" for k, v in compute.bytes_saving_pct.items()) + " fewer.")
    per_step = Table(
        "The norms within one training step (analytic FLOPs)",
        ["model", "tokens", "norms per token", "norm GFLOPs RMSNorm", "norm GFLOPs LayerNorm",
         "step GFLOPs (LayerNorm)", "step saving %"],
        [[f"{st.model} (d={st.d_model}, L={st.n_layers})", st.batch * st.seq_len,
          st.norm_calls, st.norm_flops["rmsnorm"] / 1e9, st.norm_flops["layernorm"] / 1e9,
          st.step_flops["layernorm"] / 1e9, round(st.saving_pct, 4)] for st in compute.steps],
        "Step = 3 × forward matmul FLOPs (blocklab.budget) + every norm forward+backward; "
        "other elementwise work left out, so the saving is an upper bound.")
    return [per_row, per_step]


def like_table(like: list[FusedTiming]) -> Table:
    rows = [[t.d, t.rows, t.threads, t.method, pass_name, t.rmsnorm_ms[pass_name],
             t.layernorm_ms[pass_name], format_ratio(ratio)]
            for t in like for pass_name, ratio in t.ratios.items()]
    kernels = "; ".join(f"{norm}: {what}" for norm, what in like[0].kernels.items())
    fused = like[0].torch_fused
    return Table(
        "Like-for-like kernel time: RMSNorm vs LayerNorm with equally fused kernels (median ms)",
        ["d", "rows", "threads", "method", "pass", "RMSNorm ms", "LayerNorm ms",
         "ratio RMS/LN [95% CI]"], rows,
        f"Timed: {kernels}. PyTorch's functional norms here: F.rms_norm "
        f"{'fused' if fused['rmsnorm'] else 'a composite of elementary ops'}, F.layer_norm "
        f"{'fused' if fused['layernorm'] else 'a composite'}; both are timed through "
        f"{'their fused kernels' if like[0].method == 'torch-fused' else 'torch.compile'}. "
        "Ratio and CI: " + _method([r for t in like for r in t.ratios.values()]) + ". "
        "Reported; C18's 'compute' is decided by the FLOP and byte counts.")


def _method(ratios: list[TimeRatio]) -> str:
    """How the ratios were made, from how many repeats."""
    counts = sorted({r.repeats for r in ratios})
    if not counts:
        return RATIO_METHOD
    n = str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    return f"{RATIO_METHOD}, {n} repeats"


def _ratio_cell(ratios: list[KernelRatio], d, rows, threads, kind, pass_name) -> str:
    for r in ratios:
        if (r.d, r.rows, r.threads, r.impl, r.pass_name) == (d, rows, threads,
                                                            f"rmsnorm:{kind}", pass_name):
            return format_ratio(r.time, 2)
    return "—"


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
