"""The int8 quantization claims: C32 reads the `quantize` suite's timings; C33 its trained
models (the per-row merge on every layer's weights, the FFN output error per seed).
"""

from __future__ import annotations

import math
from dataclasses import asdict, replace

from blocklab.claims.finding import DECIDED, Context, Finding, ci_n_text, claim, missing, scale_text
from blocklab.claims.registry import (
    C32_LARGEST_PART,
    C32_MODE,
    C32_REASON_PART,
    C32_REASON_PCT,
    C32_SPEED_PART,
    C33_DELTA,
    C33_EXACT_PART,
    C33_SENSITIVITY_DELTA,
    C33_TENSOR_PART,
    registered,
)
from blocklab.claims.rules import (
    CONFIRMED,
    INCONCLUSIVE,
    MIXED,
    REFUTED,
    SETTLE_EN,
    SETTLE_ZH,
    Estimate,
    Part,
    decide,
    decided_text,
    settle,
)
from blocklab.claims.text import Template, say, verdict_word
from blocklab.experiments.suites.quantize.summary import QuantizeData
from blocklab.experiments.suites.quantize.timing import QuantTiming
from blocklab.experiments.summaries import RATIO_METHOD, Interval, TimeRatio

C32_COMBINES = ("the timed parts first: untestable here on a CPU without int8 dot-product "
                "instructions (VNNI or AMX int8); otherwise confirmed when quantizing the FFN "
                "speeds prefill up and gains more than quantizing attention, mixed when only one "
                "holds, else the headline part's verdict (a timing is never refuted: speed depends "
                "on hardware and scale). Then the stated reason, an exact count: when it holds the "
                "claim keeps that verdict; when it is refuted the claim is mixed if a timed part "
                "holds, else refuted (a claim whose reason is false is never confirmed). "
                + SETTLE_EN,
                "先看计时部分：在没有 int8 点积指令（VNNI 或 AMX int8）的 CPU 上此处无法检验；否则量化 FFN "
                "使预填充加速且加速多于量化注意力时成立，只有一项成立时为部分成立，否则取首要部分的判定（计时不会判为"
                "不成立：速度取决于硬件与规模）。再看所述理由（精确计数）：理由成立时论断保持上述判定；理由不成立时，"
                "有计时部分成立则为部分成立，否则不成立（理由错误的论断绝不判为成立）。" + SETTLE_ZH)
# C33's exact part is the condition: per-row merging is free.
C33_COMBINES = (f"conditional when merging gate|up with per-row scales is exactly separate "
                f"quantization on every trained layer and one per-tensor scale costs more than "
                f"δ = {C33_DELTA:g}% FFN output error (the page's rule holds for per-tensor "
                f"scales only); otherwise the per-tensor part's verdict: not reproduced at this "
                f"scale when the per-row merge is exact and the per-tensor cost stays short of δ "
                f"(merging costs nothing that matters under either scaling), confirmed when the "
                f"per-row merge is not exact (merging would change the weights under per-row "
                f"scales too) and the per-tensor cost exceeds δ. " + SETTLE_EN,
                f"逐行缩放合并 gate|up 在每个训练层上都与分开量化完全相同、且单一逐张量缩放使 FFN 输出误差增加超过 "
                f"δ = {C33_DELTA:g}% 时有条件成立（页面的规则只对逐张量缩放成立）；否则取逐张量部分的判定：逐行合并完全相同"
                f"且逐张量的代价小于 δ 时此规模下未复现（两种缩放下合并都没有值得一提的代价），逐行合并不完全相同"
                f"（逐行缩放下合并也会改变权重）且逐张量的代价超过 δ 时成立。" + SETTLE_ZH)

# The checks' sentences, (English, Chinese), filled by `say`.
TEXT: dict[str, Template] = {
    "c32": ("d={d_model}, {layers} layers, prefill T={T} ({mode} int8, eager, {threads} thread(s), "
            "random weights): the FFN is {flop_share:.1f}% of prefill FLOPs (blocklab.budget) and "
            "{time_share} of the float prefill's time; with its layers free prefill runs ×{bound}, "
            "the bound no FFN-only scheme can beat; its int8 GEMMs run k = {k}× the float ones, so "
            "Amdahl over the time share estimates FFN-only at ×{estimate}; measured ×{speedup} "
            "(attention-only ×{speedup_attention}) → {speed} / {largest}. Each speed-up is the "
            "{method} over {repeats} repeats, graded on 100·ln(ratio), where that t interval holds "
            "at every level: FFN-only {speed_decided}, FFN-only over attention-only "
            "{largest_decided}.{weight_only}{cpu} The stated reason, the FFN holding ~99% of "
            "prefill FLOPs: {page_share:.1f}% at the page's Llama-3-8B and T=4096 (the page's "
            "count leaves the attention projections out of its sum) → {reason}.{scale}",
            "d={d_model}、{layers} 层、prefill T={T}（{mode} int8，eager，{threads} 线程，随机权重）："
            "FFN 占 prefill FLOPs 的 {flop_share:.1f}%（blocklab.budget），占浮点 prefill 时间的 "
            "{time_share}；FFN 各层耗时为零时 prefill 为 ×{bound}，即仅量化 FFN 无法超过的上界；"
            "其 int8 GEMM 速度为浮点的 k = {k} 倍，按时间占比的 Amdahl 估计仅量化 FFN 为 ×{estimate}；"
            "实测 ×{speedup}（仅量化注意力 ×{speedup_attention}）→ {speed} / {largest}。"
            "各加速比为 {repeats} 次重复逐次配对比值的几何平均，在 100·ln(比值) 上判定（对数比值的 "
            "Student t 区间在任何水平下都成立）：仅量化 FFN {speed_decided}，FFN 相对注意力 "
            "{largest_decided}。{weight_only}{cpu}所述理由“FFN 约占预填充 FLOPs 的 99%”：页面所用的 "
            "Llama-3-8B、T=4096 下为 {page_share:.1f}%（页面的计数未计注意力投影）→ {reason}。{scale}"),
    "c32_scale": ("prefill T={T}, {threads} thread(s)", "prefill T={T}，{threads} 线程"),
    "c32_weight_only": (" Weight-only int8 of the FFN: prefill ×{prefill}, decode ×{decode} "
                        "(estimate from the bytes read ×{estimate}, bound ×{bound}).",
                        "仅对 FFN 做 weight-only int8：prefill ×{prefill}，decode ×{decode}"
                        "（按读取字节的估计 ×{estimate}，上界 ×{bound}）。"),
    "c32_no_int8": (" This CPU has no VNNI/AMX int8 instructions, so torch's int8 GEMM runs a slow "
                    "path: the measured k is the machine's, not int8's, and the claim is "
                    "untestable here (run `blocklab quantize` on a CPU with AVX-512 VNNI or AMX).",
                    "本机 CPU 无 VNNI/AMX int8 指令，torch 的 int8 GEMM 走慢路径：测得的 k "
                    "反映的是本机而非 int8 本身，此论断在此无法检验（请在支持 AVX-512 VNNI 或 AMX 的 "
                    "CPU 上运行 `blocklab quantize`）。"),
    "c33": ("gate and up read the same x and can be stored as one [2·d_ff, d] matrix; down "
            "reads the hidden (width d_ff) and can never join them. {per_row} One per-tensor "
            "scale: merged, it is the larger of gate's and up's, so the other matrix is "
            "quantized on a grid as many times coarser as the two scales are apart; in the "
            "trained layers they are {ratio} apart, so the FFN output error goes from "
            "{separate_error} to {merged_error}: {pct} paired by seed, against δ = {delta:g}% → "
            "{tensor}{sensitivity}. The validation loss moves by {loss} nats/token (merged − "
            "separate per tensor).{tail}{scale}",
            "gate 与 up 读入同一个 x，可存为一个 [2·d_ff, d] 矩阵；down 读入隐层（宽 d_ff），无法与之合并。"
            "{per_row}单一逐张量缩放：合并后的缩放取 gate 与 up 中较大者，另一个矩阵的量化网格随之变粗，"
            "倍数即两者缩放之比；训练层中两者相差 {ratio}，FFN 输出误差由 {separate_error} 变为 "
            "{merged_error}：按种子配对 {pct}，对照 δ = {delta:g}% → {tensor}{sensitivity}。"
            "验证损失变化 {loss} nats/token（逐张量合并 − 分开）。{tail}{scale}"),
    "c33_scale": ("trained model", "训练后的模型"),
    "c33_ratio_range": ("{low:.3g}× to {high:.3g}× (median {mid:.3g}×)",
                        "{low:.3g}× 至 {high:.3g}×（中位数 {mid:.3g}×）"),
    "c33_sensitivity": (" (sensitivity, deciding nothing: the same interval read against "
                        "{delta:g}% → {verdict})",
                        "（敏感性分析，不作判定：同一区间对照 {delta:g}% → {verdict}）"),
    "c33_row_exact": ("Per-row scales: merging changes nothing, bit-identical on all {n} "
                      "trained layer(s) (every layer of every seed; max |merged − separate| = "
                      "0): each row keeps its own scale, so here the page's \"cannot simply be "
                      "merged\" does not hold, and merging is free.",
                      "逐行缩放：合并不改变任何值，在全部 {n} 个训练层（每个种子的每一层）上逐位相同"
                      "（max |合并 − 分开| = 0）：每行保留自己的缩放，因此页面“不能简单合并”的说法在此不成立，"
                      "合并没有代价。"),
    "c33_row_differs": ("Per-row scales: the merged and separate weights differ by up to "
                        "{diff:.3g} over {n} trained layer(s), which an identity does not "
                        "allow: merging changes the weights here.",
                        "逐行缩放：合并与分开量化的权重在 {n} 个训练层上最多相差 {diff:.3g}，"
                        "恒等式不允许如此：此处合并改变了权重。"),
    "c33_row_none": ("Per-row scales: no trained layer was compared.", "逐行缩放：没有比较任何训练层。"),
    "c33_conditional": (" The page's rule holds for per-tensor scales only.",
                        "页面的说法只对逐张量缩放成立。"),
    "c33_cheap": (" At these scale ratios merging costs less than δ even per tensor: the page's "
                  "warning matters only for per-tensor scales, and only where gate's and up's "
                  "ranges differ more than here.",
                  "在这些缩放比下，即使逐张量合并，代价也小于 δ：页面的提醒只对逐张量缩放有意义，"
                  "且只在 gate 与 up 的数值范围相差比这里更大时才有意义。"),
}


def _timing(data: QuantizeData, scheme: str, compiled: bool = False) -> QuantTiming | None:
    for row in data.timings:
        if row.scheme == scheme and row.compiled == compiled:
            return row
    return None


def log_estimate(ratio: TimeRatio) -> Estimate:
    """A ratio of paired timings (`TimeRatio.paired`) as C32's rules read it: 100·ln(ratio)
    with 100·ln of its 95% bounds, the t interval of the mean log ratio, which `rules.decide`
    rescales to any level exactly."""
    return Estimate.from_interval(100 * math.log(ratio.ratio), 100 * math.log(ratio.ci_low),
                                  100 * math.log(ratio.ci_high), ratio.repeats)


def _text(x: float | None, digits: int = 2) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _pct_text(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def int8_hardware(data: QuantizeData) -> bool:
    """Whether the timed CPU has int8 dot-product instructions (VNNI or AMX int8). Without
    them torch's int8 GEMMs take a slow path, so a slowdown says nothing about int8 itself."""
    return any(data.cpu_flags.get(f) for f in ("avx512_vnni", "avx_vnni", "amx_int8"))


def page_ffn_share() -> float:
    """The FFN's share of a 4,096-token prefill's FLOPs at Llama 3 8B's shape, batch 1
    (`blocklab.budget`: every matmul; the count C23 reads)."""
    from blocklab.budget import model_budget, resolve_model

    doc = model_budget(resolve_model("meta-llama-3-8b").config, seq_len=4096)
    return doc["flops"]["prefill"]["ffn_share"]


def c32_reason_part(share: float, timed_share: float, size: str = "quick") -> Part:
    """C32's stated reason ("the FFN holds ~99% of prefill FLOPs") decided without a test:
    `share` (a fraction) at the page's shape against `registry.C32_REASON_PCT`, the timed
    model's `timed_share` shown beside it."""
    pct = 100 * share
    holds = pct >= C32_REASON_PCT
    return Part(C32_REASON_PART, registered("C32", size)[C32_REASON_PART],
                Estimate(pct, None, None, 1), CONFIRMED if holds else REFUTED,
                f"exactly {pct:.1f}% at Llama 3 8B's shape, T = 4,096 "
                f"({'at least' if holds else 'below'} {C32_REASON_PCT:g}%; the timed model: "
                f"{100 * timed_share:.1f}%): an exact count, with no scale")


def c32_parts(data: QuantizeData, size: str = "quick") -> tuple[list[Part], dict]:
    """C32's three graded parts from a quantize summary (the two timed ones, then the stated
    reason), and the numbers they rest on. A contradiction also needs int8 hardware: on a
    CPU without it the arms are not fair to int8."""
    ffn = _timing(data, f"ffn/{C32_MODE}")
    attn = _timing(data, f"attention/{C32_MODE}")
    if ffn is None or attn is None:
        from blocklab.errors import ResultsError

        raise ResultsError(f"the quantize summary has no eager ffn/{C32_MODE} and "
                           f"attention/{C32_MODE} timings")
    lens = sorted(ffn.prefill_speedup, key=int)
    t = lens[-1]
    # The same sign at every other T plays the part of "a 2× longer run agrees".
    signs = {ffn.prefill_speedup[x].ratio > 1.0 for x in lens}
    agrees = len(lens) > 1 and len(signs) == 1
    rules = registered("C32", size)
    a, b = ffn.prefill_speedup[t], attn.prefill_speedup[t]
    # The speed-up of FFN-only over attention-only's, repeat by repeat, is t_attention / t_ffn
    # of that repeat (the float time cancels): a ratio paired by repeat like the speed-ups.
    over = TimeRatio.paired(attn.prefill_s[t], ffn.prefill_s[t])
    speed, largest = Part.decided_together(
        [(C32_SPEED_PART, rules[C32_SPEED_PART], log_estimate(a)),
         (C32_LARGEST_PART, rules[C32_LARGEST_PART], log_estimate(over))],
        fair_arms=int8_hardware(data), longer_run_agrees=agrees)
    # estimate: Amdahl over the FFN's share of the time with its GEMMs' k (not a bound);
    # bound: the FFN's layers made free, which no FFN-only scheme can beat.
    numbers = {"T": int(t), "ffn_flop_share": ffn.flop_share[t],
               "ffn_time_share": ffn.time_share[t], "k_ffn": ffn.gemm_speedup[t],
               "estimate_ffn": ffn.prefill_estimate[t], "bound_ffn": ffn.prefill_bound[t],
               "speedup_ffn": a.ratio, "speedup_attention": b.ratio,
               "ffn_over_attention": over.ratio, "repeats": a.repeats,
               "k_attention": attn.gemm_speedup[t], "decode_ffn": ffn.decode_speedup.ratio,
               "decode_estimate_ffn": ffn.decode_estimate, "decode_bound_ffn": ffn.decode_bound,
               "ffn_flop_share_page_model": page_ffn_share()}
    reason = c32_reason_part(numbers["ffn_flop_share_page_model"], ffn.flop_share[t], size)
    return [speed, largest, reason], numbers


def combine_c32(speed: Part, largest: Part, reason: Part, int8: bool = True) -> str:
    """C32's verdict from its timed parts and its stated reason (`C32_COMBINES`); `int8`: the
    timed CPU has int8 dot-product instructions (else the timed parts are untestable here)."""
    def decided(verdicts: list[str]) -> str:
        *timed, why = verdicts
        if not int8:
            held = "untestable-here"
        elif timed == [CONFIRMED, CONFIRMED]:
            held = CONFIRMED
        else:
            held = MIXED if CONFIRMED in timed else timed[0]
        if why == CONFIRMED:
            return held
        return MIXED if held in (CONFIRMED, MIXED) else REFUTED

    return settle([speed.verdict, largest.verdict, reason.verdict], decided)


# The timed parts read the timing run (its repeats play the seeds); the reason, a count, none.
@claim("C32", suite="quantize", scale_dependent=True, subsection=True,
       arms=lambda part, metric, arms: [] if part == C32_REASON_PART else ["timing"])
def c32(ctx: Context) -> Finding:
    summary = ctx.summary("quantize")
    if summary is None:
        return missing(ctx, "quantize")
    data: QuantizeData = summary.data
    parts, n = c32_parts(data, ctx.size)
    vnni = int8_hardware(data)
    # Without int8 instructions the question (which part gains most from int8) cannot be
    # asked here: every scheme is slower than float32 for the machine's sake.
    verdict = combine_c32(*parts, int8=vnni)
    scale_at = {"d_model": data.model.get("d_model"), "depth": data.model.get("n_layers")}
    wo = _timing(data, "ffn/weight-only")
    m = data.model

    def text(lang: str) -> str:
        scale = ("" if verdict not in DECIDED else scale_text(
            **scale_at, lang=lang,
            note=say(TEXT["c32_scale"], lang, T=n["T"], threads=data.threads)))
        weight_only = "" if wo is None else say(
            TEXT["c32_weight_only"], lang, prefill=_text(wo.prefill_speedup[str(n["T"])].ratio),
            decode=_text(wo.decode_speedup.ratio), estimate=_text(wo.decode_estimate),
            bound=_text(wo.decode_bound))
        return say(TEXT["c32"], lang, d_model=m.get("d_model"), layers=m.get("n_layers"),
                   T=n["T"], mode=C32_MODE, threads=data.threads,
                   flop_share=100 * n["ffn_flop_share"], time_share=_pct_text(n["ffn_time_share"]),
                   bound=_text(n["bound_ffn"]), k=_text(n["k_ffn"]),
                   estimate=_text(n["estimate_ffn"]), speedup=_text(n["speedup_ffn"]),
                   speedup_attention=_text(n["speedup_attention"]), speed=parts[0].verdict,
                   largest=parts[1].verdict, method=RATIO_METHOD, repeats=n["repeats"],
                   page_share=100 * n["ffn_flop_share_page_model"],
                   reason=verdict_word(parts[2].verdict, lang),
                   speed_decided=decided_text(parts[0]), largest_decided=decided_text(parts[1]),
                   weight_only=weight_only, cpu="" if vnni else say(TEXT["c32_no_int8"], lang),
                   scale=scale)

    return Finding(
        verdict, text("en"), text("zh"),
        {**n, "timings": [asdict(r) for r in data.timings], "cpu_flags": data.cpu_flags},
        ctx.suite_command("quantize"), "quantize_speedup", parts, *C32_COMBINES)


def c33_parts(data: QuantizeData, size: str = "quick") -> list[Part]:
    """C33's two parts from a quantize summary: the per-row merge against separate quantization
    on every trained layer (exactly 0, or not: decided without a test), and the per-tensor
    merge's FFN output error against separate per-tensor scales, paired by seed."""
    rules = registered("C33", size)
    compared = len(data.gate_up_scale_ratio)
    diff = data.merged_per_row_max_diff
    if compared == 0:
        exact = Part(C33_EXACT_PART, rules[C33_EXACT_PART], Estimate(None, None, None, 0),
                     INCONCLUSIVE, "no trained layer was compared")
    elif diff == 0.0:
        exact = Part(C33_EXACT_PART, rules[C33_EXACT_PART], Estimate(0.0, None, None, compared),
                     "confirmed", f"bit-identical on all {compared} trained layer(s) (every "
                     "layer of every seed)")
    else:
        exact = Part(C33_EXACT_PART, rules[C33_EXACT_PART], Estimate(diff, None, None, compared),
                     "refuted", f"the merged and separate weights differ by up to {diff:.3g} "
                     f"over {compared} trained layer(s)")
    tensor = next((s for s in data.swiglu if s.scheme == "merged-per-tensor"), None)
    estimate = (Estimate(None, None, None, 0) if tensor is None
                else Estimate.of(tensor.error_vs_separate_pct))
    return Part.decided_together([exact, (C33_TENSOR_PART, rules[C33_TENSOR_PART], estimate)])


def c33_sensitivity(tensor: Part) -> str | None:
    """The per-tensor part's interval read against δ = 10% instead of its registered 1%, at the
    level it was decided at (same interval, same test): a sensitivity line, never a decision.
    None when the part has no test (too few seeds, no data)."""
    d = tensor.decision
    if d is None or d.p_value is None:
        return None
    rule = replace(tensor.rule, smallest_effect=C33_SENSITIVITY_DELTA,
                   margin=C33_SENSITIVITY_DELTA / 2)
    return decide(rule, tensor.estimate, d.level, explain=False).verdict


def combine_c33(exact: Part, tensor: Part) -> str:
    """C33's verdict from its parts (`C33_COMBINES`)."""
    def decided(verdicts: list[str]) -> str:
        row, per_tensor = verdicts
        if row == "confirmed" and per_tensor == "confirmed":
            return "conditional"
        return per_tensor

    return settle([exact.verdict, tensor.verdict], decided)


def _ratio_text(ratios: list[float], lang: str) -> str:
    """The spread of gate's and up's scale ratios: one value, or min to max with the median."""
    import statistics

    if not ratios:
        return "—"
    low, high = min(ratios), max(ratios)
    if f"{low:.3g}" == f"{high:.3g}":
        return f"{low:.3g}×"
    return say(TEXT["c33_ratio_range"], lang, low=low, high=high, mid=statistics.median(ratios))


# Scale-dependent: the per-tensor part's cost follows the gate and up scales of a small model
# trained here, which larger models may spread further apart.
# The per-tensor part reads the trained models' quality runs; the exactness part, none.
@claim("C33", suite="quantize", scale_dependent=True, subsection=True,
       arms=lambda part, metric, arms: [] if part == C33_EXACT_PART else ["quality"])
def c33(ctx: Context) -> Finding:
    summary = ctx.summary("quantize")
    if summary is None:
        return missing(ctx, "quantize")
    data: QuantizeData = summary.data
    exact, tensor_part = c33_parts(data, ctx.size)
    verdict = combine_c33(exact, tensor_part)
    rows = {s.scheme: s for s in data.swiglu}
    empty = Interval(0)
    sep, merged = rows.get("separate-per-tensor"), rows.get("merged-per-tensor")
    sep_err = None if sep is None else sep.ffn_error.mean
    merged_err = None if merged is None else merged.ffn_error.mean
    pct = empty if merged is None else merged.error_vs_separate_pct
    ratios = data.gate_up_scale_ratio
    loss = data.merged_tensor_loss_penalty
    qm = data.quality_model
    sensitivity = c33_sensitivity(tensor_part)
    if exact.verdict == "confirmed":
        per_row, row_fields = TEXT["c33_row_exact"], {"n": exact.estimate.n}
    elif exact.verdict == "refuted":
        per_row, row_fields = TEXT["c33_row_differs"], {"n": exact.estimate.n,
                                                        "diff": exact.estimate.value}
    else:
        per_row, row_fields = TEXT["c33_row_none"], {}
    tail = (TEXT["c33_conditional"] if verdict == "conditional" else
            TEXT["c33_cheap"] if (verdict == "not-reproduced-at-this-scale"
                                  and exact.verdict == "confirmed") else ("", ""))

    def text(lang: str) -> str:
        scale = ("" if verdict not in DECIDED else scale_text(
            qm.get("d_model"), qm.get("n_layers"), lang=lang,
            note=say(TEXT["c33_scale"], lang)))
        sens = "" if sensitivity is None else say(
            TEXT["c33_sensitivity"], lang, delta=C33_SENSITIVITY_DELTA,
            verdict=verdict_word(sensitivity, lang))
        return say(TEXT["c33"], lang, per_row=say(per_row, lang, **row_fields),
                   ratio=_ratio_text(ratios, lang), separate_error=_text(sep_err, 5),
                   merged_error=_text(merged_err, 5), pct=ci_n_text(pct, 2, "%"),
                   delta=C33_DELTA, tensor=verdict_word(tensor_part.verdict, lang),
                   sensitivity=sens, loss=ci_n_text(loss, 5), tail=say(tail, lang), scale=scale)

    return Finding(
        verdict, text("en"), text("zh"),
        {"swiglu": [asdict(s) for s in data.swiglu],
         "merged_per_row_max_diff": data.merged_per_row_max_diff,
         "merged_per_tensor_max_diff": data.merged_per_tensor_max_diff,
         "layers_compared": exact.estimate.n, "gate_up_scale_ratio": ratios,
         "merged_tensor_loss_penalty": asdict(loss), "delta_pct": C33_DELTA,
         "sensitivity": {"delta_pct": C33_SENSITIVITY_DELTA, "verdict": sensitivity}},
        ctx.suite_command("quantize"), None, [exact, tensor_part], *C33_COMBINES)
