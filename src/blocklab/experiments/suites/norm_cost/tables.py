"""The summary's tables and notes, formatted from its data (never computed here)."""

from __future__ import annotations

from collections.abc import Iterator

from blocklab.experiments.suites.base import format_ci
from blocklab.experiments.suites.norm_cost.data import (
    FusedTiming,
    KernelRatio,
    KernelTiming,
    NormCompute,
    NormQuality,
    StepTime,
)
from blocklab.experiments.suites.norm_cost.sizes import EQUIVALENCE_MARGIN, KINDS
from blocklab.experiments.summaries import RATIO_METHOD, Table, TimeRatio


def kernel_tables(kernels: list[KernelTiming], ratios: list[KernelRatio]) -> list[Table]:
    """Per thread count, the forward+backward and forward times of every kind and shape, then
    the bytes saved for backward (none without kernel runs)."""
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
          _ratio_text(st.time, 3)] for st in step_time.values()],
        "Forward, backward, clipping and AdamW; the four models' steps interleave. blocklab: "
        "the models as built (RMSNorm fused with the residual add in one kernel); "
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
    """The analytic counts (`count_compute`) as two tables: per row, and per training step."""
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
             t.layernorm_ms[pass_name], _ratio_text(ratio, 3)]
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
    """How the ratios were made and from how many repeats: 'geometric mean of paired ratios,
    Student t on log ratios, 12 repeats' (a range where they differ)."""
    counts = sorted({r.repeats for r in ratios})
    if not counts:
        return RATIO_METHOD
    n = str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    return f"{RATIO_METHOD}, {n} repeats"


def _ratio_text(stats: TimeRatio, digits: int = 2) -> str:
    return (f"{stats.ratio:.{digits}f} [{stats.ci_low:.{digits}f}, "
            f"{stats.ci_high:.{digits}f}]")


def _ratio_cell(ratios: list[KernelRatio], d, rows, threads, kind, pass_name) -> str:
    for r in ratios:
        if (r.d, r.rows, r.threads, r.impl, r.pass_name) == (d, rows, threads,
                                                            f"rmsnorm:{kind}", pass_name):
            return _ratio_text(r.time)
    return "—"
