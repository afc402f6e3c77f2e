"""C18: RMSNorm needs about 7% less compute than LayerNorm at the same quality.

"Compute" is decided by exact counts (`norm_cost.summary.count_compute`), quality by the paired
loss difference; every timing is reported and grades nothing.
"""

from __future__ import annotations

from dataclasses import asdict

from blocklab.claims.finding import DECIDED, Context, Finding, claim, missing, scale_text
from blocklab.claims.registry import (
    C18_BYTES_PART,
    C18_COMPUTE_RULES,
    C18_FLOPS_PART,
    C18_QUALITY_PART,
    C18_STEP_FLOPS_PART,
    registered,
)
from blocklab.claims.rules import (
    MIXED,
    REFUTED,
    SETTLE_EN,
    SETTLE_ZH,
    Estimate,
    Part,
    Rule,
    decided_text,
    settle,
)
from blocklab.claims.text import Template, say
from blocklab.experiments.suites.norm_cost.summary import (
    FusedTiming,
    KernelRatio,
    NormCompute,
    StepTime,
)

C18_COMBINES = ("'about 7% less compute' holds when any of its three analytic readings (the norm's "
                "FLOPs per row, its bytes per row, a training step's FLOPs) lies in the 5–9% band; "
                "the claim is confirmed when compute holds and quality is shown equivalent, mixed "
                "when compute holds and quality is not shown equivalent, and otherwise takes the "
                "verdict of the FLOP reading: refuted, as an exact count outside the band has no "
                "scale to grow out of. Timings are reported, never graded. " + SETTLE_EN,
                "“约少 7% 的计算量”在三种解析读法（每行归一化的 FLOPs、每行搬运的字节、整个训练步的 "
                "FLOPs）中任一落在 5–9% 区间内时成立；计算量成立且质量被证明等价时论断成立，计算量成立但质量未被"
                "证明等价时为部分成立，否则取 FLOPs 读法的判定：不成立，因为区间外的精确计数与规模无关。"
                "计时只报告、不参与判定。" + SETTLE_ZH)

# The check's sentences, (English, Chinese), filled by `say`.
TEXT: dict[str, Template] = {
    "c18": ("'Compute' by exact counts (blocklab.budget's FLOP conventions: RMSNorm 4 + 9 FLOPs "
            "per element forward + backward, LayerNorm 7 + 13): per normalised row RMSNorm "
            "needs {compute.flops_saving_pct:.1f}% fewer FLOPs forward+backward "
            "({compute.fwd_flops_saving_pct:.1f}% forward) → {flops.verdict}; an ideal fused "
            "kernel moves {bytes.estimate.value:.3f}% fewer bytes (the same x, y, dy and dx; one "
            "row statistic instead of two; d={real.d_model}, bf16) → {bytes.verdict}; a whole "
            "training step of {real.model} needs at most {step.estimate.value:.4f}% fewer FLOPs "
            "({toy.saving_pct:.3f}% at the suite's d={toy.d_model} model) → {step.verdict}. "
            "'About 7%' is 5–9%. Quality: paired Δ val loss (RMS − LN) {quality_decided} "
            "nats/token over {seeds} seeds, equivalence within ±{quality.rule.margin:g} by two "
            "one-sided tests → {quality.verdict}. {timing}{kernels}{page}{scale}",
            "按精确计数衡量“计算量”（blocklab.budget 的 FLOP 约定：RMSNorm 每元素前向 4 + 反向 9 FLOPs，"
            "LayerNorm 7 + 13）：每个归一化行 RMSNorm 的前向+反向 FLOPs 少 {compute.flops_saving_pct:.1f}%"
            "（前向少 {compute.fwd_flops_saving_pct:.1f}%）→ {flops.verdict}；理想融合内核搬运的字节只少 "
            "{bytes.estimate.value:.3f}%（同样读写 x、y、dy、dx；行统计量一个对两个；d={real.d_model}，bf16）→ "
            "{bytes.verdict}；{real.model} 的整个训练步 FLOPs 至多少 {step.estimate.value:.4f}%（本实验 "
            "d={toy.d_model} 的模型为 {toy.saving_pct:.3f}%）→ {step.verdict}。“约 7%”指 5–9%。"
            "质量：配对 Δ 验证损失（RMS − LN）{quality_decided} nats/token，{seeds} 个种子，"
            "按双单侧检验判断是否在 ±{quality.rule.margin:g} 内等价 → {quality.verdict}。"
            "{timing}{kernels}{page}{scale}"),
    "c18_scale": ("quality part", "质量部分"),
    "fused": ("Reported, not graded: with equally fused kernels ({how}), RMSNorm/LayerNorm "
              "forward+backward time is {r.ratio:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}] "
              "(d={t.d}, {t.rows} rows, {t.threads} thread(s); {method}, 95% CI). ",
              "只报告、不参与判定：在同等融合的内核下（{how}），RMSNorm/LayerNorm 前向+反向时间比为 "
              "{r.ratio:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}]（d={t.d}，{t.rows} 行，{t.threads} 线程；"
              "逐次重复配对比值的几何平均，95% 置信区间按对数比值的 Student t 计算，{r.repeats} 次重复）。"),
    "fused_torch": ("both by PyTorch's fused kernels", "两者都用 PyTorch 的融合内核"),
    "fused_compiled": ("both through torch.compile, as F.rms_norm is not fused on this CPU",
                       "两者都经 torch.compile 编译，因为本机 CPU 上 F.rms_norm 不是融合内核"),
    "step": ("A whole training step with PyTorch's functional norms (F.rms_norm unfused here "
             "against the fused F.layer_norm) times {s.ratio:.3f} [{s.ci_low:.3f}, "
             "{s.ci_high:.3f}]{built}. ",
             "用 PyTorch 函数式归一化（此处 F.rms_norm 未融合，F.layer_norm 已融合）的整步训练时间比为 "
             "{s.ratio:.3f} [{s.ci_low:.3f}, {s.ci_high:.3f}]{built}。"),
    "step_built": ("; with blocklab's fused add+RMSNorm kernel instead, {b.ratio:.3f} "
                   "[{b.ci_low:.3f}, {b.ci_high:.3f}]",
                   "；若改用 blocklab 的残差加法 + RMSNorm 融合内核，为 {b.ratio:.3f} "
                   "[{b.ci_low:.3f}, {b.ci_high:.3f}]"),
    "kernels": ("Reported beside it, the norm's own forward+backward time ratio per "
                "implementation (range over the measured shapes): {spans}; the blocklab and "
                "torch kinds pit an RMSNorm kernel against torch's C++ LayerNorm kernel, so they "
                "measure kernels, not the formula. ",
                "另列归一化本身的前向+反向时间比（按实现，所测形状上的范围）：{spans}；blocklab 与 "
                "torch 两栏是 RMSNorm 内核对 torch 的 C++ LayerNorm 内核，衡量的是内核而非公式。"),
    "kernels_full_only": ("At --size full only (reported, not graded): the norm's own "
                          "per-kernel time ratios. ",
                          "归一化本身的逐内核时间比（只报告、不参与判定）只在 --size full 运行。"),
    # Page 000 (§ 常见误区与检查): the RMSNorm paper's run-time gain belongs to its task and
    # implementation; the page measured none and reports no general speed-up.
    "page": ("Page 000 itself says the RMSNorm paper's run-time gain belongs to that paper's "
             "task and implementation and reports no general speed-up.",
             "页面 000 自己也说明：RMSNorm 原论文的运行时间改善属于其任务与实现条件，页面不报告通用加速比例。"),
}


# The registered rule (`registry.C18_COMPUTE_DECIDES`, in its hash) words a count outside the
# band "not reproduced"; the decision is the same, and a count has no scale, so it is named
# refuted, and each part's reason says so.
C18_REFUTED_NOTE = ("an exact count, so refuted (the rule registered before the verdict words "
                    "were fixed calls it not reproduced)")


def _c18_exact_part(name: str, rule: Rule, value: float) -> Part:
    """One analytic reading of "compute" decided without a test: the exact saving (%) inside
    the rule's band claimed ± margin (confirmed), or where it lies outside it (refuted: a
    count does not depend on scale)."""
    low, high = rule.claimed - rule.margin, rule.claimed + rule.margin
    band = f"[{low:g}, {high:g}]%"
    if low <= value <= high:
        return Part(name, rule, Estimate(value, None, None, 1), "confirmed",
                    f"exactly {value:.3g}%, inside {band}")
    if value > high:
        reason = f"exactly {value:.3g}%, above {band}: far more than about 7%"
    elif value >= 0:
        reason = f"exactly {value:.3g}%, below {band}: far less than about 7%"
    else:
        reason = f"exactly {value:.3g}%: RMSNorm needs more, not less"
    return Part(name, rule, Estimate(value, None, None, 1), REFUTED,
                f"{reason}; {C18_REFUTED_NOTE}")


def c18_compute_parts(compute: NormCompute, size: str = "quick") -> list[Part]:
    """C18's three analytic readings of "compute", in the registered order: the norm's FLOPs
    per row (forward+backward), its bytes per row at the real model's width in bf16, and a
    training step's FLOPs at the real model's shape."""
    from blocklab.experiments.suites.norm_cost.summary import REAL_ELEMENT_BYTES, REAL_MODEL

    rules = registered("C18", size)
    real = next(s for s in compute.steps if s.model == REAL_MODEL)
    values = {C18_FLOPS_PART: compute.flops_saving_pct,
              C18_BYTES_PART: compute.bytes_saving_pct[f"d={real.d_model}/{REAL_ELEMENT_BYTES}B"],
              C18_STEP_FLOPS_PART: real.saving_pct}
    return [_c18_exact_part(name, rules[name], value) for name, value in values.items()]


def combine_c18(compute: list[Part], quality: Part) -> str:
    """C18's verdict from its analytic compute parts and its quality part (`C18_COMBINES`)."""
    def decided(verdicts: list[str]) -> str:
        *readings, same_quality = verdicts
        if "confirmed" in readings:
            return "confirmed" if same_quality == "confirmed" else MIXED
        return readings[0]

    return settle([p.verdict for p in compute] + [quality.verdict], decided)


def _c18_timing_text(like: list[FusedTiming], built: StepTime | None,
                     functional: StepTime | None, lang: str) -> str:
    """The reported timings in `lang`: equally fused kernels first, then the training step."""
    text = ""
    timed = next((t for t in sorted(like, key=lambda t: t.threads) if "fwdbwd" in t.ratios),
                 None)
    if timed is not None:
        r = timed.ratios["fwdbwd"]
        how = TEXT["fused_torch" if timed.method == "torch-fused" else "fused_compiled"]
        text += say(TEXT["fused"], lang, how=say(how, lang), r=r, t=timed, method=r.method())
    if functional is not None:
        text += say(TEXT["step"], lang, s=functional.time, built="" if built is None else
                    say(TEXT["step_built"], lang, b=built.time))
    return text


# Quality reads both norms' runs; a compute part, an exact count, none.
@claim("C18", suite="norm-cost", scale_dependent=True, arms=lambda part, metric, arms: (
    [] if part in C18_COMPUTE_RULES else ["layernorm", "rmsnorm"]))
def c18(ctx: Context) -> Finding:
    from blocklab.experiments.suites.norm_cost.runs import SIZES as NORM_SIZES
    from blocklab.experiments.suites.norm_cost.summary import count_compute

    summary = ctx.summary("norm-cost")
    if summary is None:
        return missing(ctx, "norm-cost")
    data = summary.data
    rows = [r for r in data.ratios if r.pass_name == "fwdbwd"]
    by_kind: dict[str, list[KernelRatio]] = {}
    for r in rows:
        by_kind.setdefault(r.impl.split(":")[-1], []).append(r)
    spans = {kind: (min(r.time.ratio for r in rs), max(r.time.ratio for r in rs))
             for kind, rs in by_kind.items()}
    quality = data.quality
    # "Compute" by exact counts, computed here from the plan's shapes (the summary keeps a copy
    # for the report): no timing enters a verdict.
    compute = count_compute(ctx.size)
    rules = registered("C18", ctx.size)
    readings = c18_compute_parts(compute, ctx.size)
    parts = Part.decided_together(
        [*readings, (C18_QUALITY_PART, rules[C18_QUALITY_PART], Estimate.of(quality.delta))],
        fair_arms=True, longer_run_agrees=False)
    quality_part = parts[-1]
    verdict = combine_c18(parts[:-1], quality_part)
    q = NORM_SIZES[ctx.size].quality
    scale = {"d_model": q.d_model, "depth": q.n_layers, "steps": q.steps,
             "batch": q.batch_size, "seq_len": q.seq_len}
    threads = min((s.threads for s in data.step_time.values()), default=None)
    flops, bytes_, step = readings
    real = next(s for s in compute.steps if s.model != f"norm-cost {ctx.size}")
    toy = next(s for s in compute.steps if s.model == f"norm-cost {ctx.size}")
    span_text = "; ".join(f"{k} {lo:.2f}–{hi:.2f}×" for k, (lo, hi) in sorted(spans.items()))
    n_seeds = len(quality.seeds)

    def text(lang: str) -> str:
        # no spans: a size that plans only the graded runs
        kernels = (say(TEXT["kernels"], lang, spans=span_text) if spans
                   else say(TEXT["kernels_full_only"], lang))
        timing = _c18_timing_text(data.like_for_like, data.step_time.get(f"blocklab/{threads}"),
                                  data.step_time.get(f"like-for-like/{threads}"), lang)
        scale_at = ("" if verdict not in DECIDED else
                    scale_text(**scale, lang=lang, note=say(TEXT["c18_scale"], lang)))
        return say(TEXT["c18"], lang, compute=compute, flops=flops, bytes=bytes_, real=real,
                   step=step, toy=toy, quality_decided=decided_text(quality_part),
                   seeds=n_seeds, quality=quality_part, timing=timing, kernels=kernels,
                   page=say(TEXT["page"], lang), scale=scale_at)

    return Finding(
        verdict, text("en"), text("zh"),
        {"compute": asdict(compute), "like_for_like": [asdict(t) for t in data.like_for_like],
         "ratio_ranges": spans, "ratios": [_ratio_row(r) for r in rows],
         "step_time": {t: _step_row(s) for t, s in data.step_time.items()},
         "quality": asdict(quality)},
        ctx.suite_command("norm-cost"), "norm_cost", parts, *C18_COMBINES)


def _ratio_row(r: KernelRatio) -> dict[str, object]:
    """A kernel ratio as C18's evidence shows it, flat ("pass" is a keyword: no dataclass)."""
    return {"d": r.d, "rows": r.rows, "threads": r.threads, "impl": r.impl,
            "layernorm_impl": r.layernorm_impl, "pass": r.pass_name,
            "ratio_vs_layernorm": r.time.ratio, "ci_low": r.time.ci_low,
            "ci_high": r.time.ci_high, "repeats": r.time.repeats}


def _step_row(s: StepTime) -> dict[str, object]:
    """A training-step timing as C18's evidence shows it, flat (the timed shape in `model`)."""
    return {"threads": s.threads, "model": s.model, "params": s.params,
            "rmsnorm_ms": s.rmsnorm_ms, "layernorm_ms": s.layernorm_ms, "ratio": s.time.ratio,
            "ci_low": s.time.ci_low, "ci_high": s.time.ci_high, "repeats": s.time.repeats}
