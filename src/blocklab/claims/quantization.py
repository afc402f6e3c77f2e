"""Checks of the deployment claims on int8 quantization (page 001, § FFN 计算对部署的影响 / 调参建议 /
避坑指南): C32 reads the `quantize` suite's timings; C33 computes its exactness part live and reads
the suite's trained-model errors.
"""

from __future__ import annotations

from dataclasses import asdict

from blocklab.claims.ledger import (
    DECIDED,
    SETTLE_EN,
    SETTLE_ZH,
    Context,
    Finding,
    Part,
    claim,
    missing,
    scale_text,
    settle,
)
from blocklab.claims.registry import (  # noqa: F401 - the rules' names, as the checks used them
    C32_LARGEST_PART,
    C32_LARGEST_RULE,
    C32_MODE,
    C32_SPEED_PART,
    C32_SPEEDUP_RULE,
    C33_EXACT_PART,
    C33_EXACT_RULE,
    C33_TENSOR_PART,
    C33_TENSOR_RULE,
    registered,
)
from blocklab.claims.rules import Estimate
from blocklab.experiments.summaries import Interval, QuantizeData, QuantTiming

# C32's registered rules (`registry.C32_SPEEDUP_RULE`, `registry.C32_LARGEST_RULE`): prefill of
# the largest timed T, dynamic int8 (the mode that makes the GEMMs themselves int8; weight-only
# keeps float FLOPs), eager; repeats of the interleaved timing play the part of seeds.
C32_COMBINES = ("untestable here on a CPU without int8 dot-product instructions (VNNI or AMX "
                "int8); otherwise confirmed when quantizing the FFN speeds prefill up and gains "
                "more than quantizing attention, conditional when only one holds, else the "
                "headline part's verdict (never refuted: speed depends on hardware and scale). "
                + SETTLE_EN)
C32_COMBINES_ZH = ("在没有 int8 点积指令（VNNI 或 AMX int8）的 CPU 上此处无法检验；否则量化 FFN 使预填充加速且加速多于量化注意力时成立，"
                   "只有一项成立时有条件成立，否则取首要部分的判定（速度取决于硬件与规模，不会判为不成立）。" + SETTLE_ZH)
# C33's registered rules (`registry.C33_TENSOR_RULE`; the per-row exactness part is analytic,
# `registry.C33_EXACT_RULE`).
C33_COMBINES = ("conditional when merging gate|up with per-row scales is exactly separate "
                "quantization and one per-tensor scale raises the error (the page's rule holds "
                "for per-tensor scales only); refuted when the per-row merge is not exact (the "
                "analytic statement fails); otherwise the per-tensor part's verdict. " + SETTLE_EN)
C33_COMBINES_ZH = ("逐行缩放合并 gate|up 与分开量化完全相同、且单一逐张量缩放使误差变大时有条件成立（页面的规则只对逐张量缩放成立）；"
                   "逐行合并不完全相同时不成立（解析陈述不成立）；否则取逐张量部分的判定。" + SETTLE_ZH)


def _timing(data: QuantizeData, scheme: str, compiled: bool = False) -> QuantTiming | None:
    for row in data.timings:
        if row.scheme == scheme and row.compiled == compiled:
            return row
    return None


def _pct(stats: Interval) -> Estimate:
    """An Interval of speed-ups as 100·(x − 1) %."""
    def pct(v: float | None) -> float | None:
        return None if v is None else 100 * (v - 1)

    return Estimate(pct(stats.mean), pct(stats.ci_low), pct(stats.ci_high), stats.n,
                    None if stats.sd is None else 100 * stats.sd)


def _text(x: float | None, digits: int = 2) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _pct_text(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def int8_hardware(data: QuantizeData) -> bool:
    """Whether the timed CPU has int8 dot-product instructions (VNNI or AMX int8). Without
    them torch's int8 GEMMs take a slow path, so a slowdown says nothing about int8 itself."""
    return any(data.cpu_flags.get(f) for f in ("avx512_vnni", "avx_vnni", "amx_int8"))


def c32_parts(data: QuantizeData, size: str = "quick") -> tuple[list[Part], dict]:
    """C32's two graded parts from a quantize summary, and the numbers they rest on. A
    contradiction also needs int8 hardware: on a CPU without it the arms are not fair to
    int8."""
    ffn = _timing(data, f"ffn/{C32_MODE}")
    attn = _timing(data, f"attention/{C32_MODE}")
    if ffn is None or attn is None:
        from blocklab.errors import ResultsError

        raise ResultsError(f"the quantize summary has no eager ffn/{C32_MODE} and "
                           f"attention/{C32_MODE} timings")
    lens = sorted(ffn.prefill_speedup, key=int)
    t = lens[-1]
    # The same sign at every other T plays the part of "a 2× longer run agrees".
    signs = {(ffn.prefill_speedup[x].mean or 1.0) > 1.0 for x in lens}
    agrees = len(lens) > 1 and len(signs) == 1
    rules = registered("C32", size)
    speed_spec = (C32_SPEED_PART, rules[C32_SPEED_PART], _pct(ffn.prefill_speedup[t]))
    # Per-repeat ratio of the two speed-ups = t_attention / t_ffn, rebuilt from the intervals'
    # means only where the raw repeats are not kept: the summary stores speed-up intervals, so
    # the ratio's interval is the difference of the two in percent (conservative: unpaired).
    a, b = ffn.prefill_speedup[t], attn.prefill_speedup[t]
    if a.mean is None or b.mean is None:
        largest_est = Estimate(None, None, None, 0)
    else:
        mean = 100 * (a.mean / b.mean - 1)
        if a.resolved and b.resolved:
            low = 100 * (a.ci_low / b.ci_high - 1)
            high = 100 * (a.ci_high / b.ci_low - 1)
            # Not a t interval: the sd is the t-equivalent of its half width.
            largest_est = Estimate.from_interval(mean, low, high, min(a.n, b.n))
        else:
            largest_est = Estimate(mean, None, None, min(a.n, b.n))
    speed, largest = Part.decided_together(
        [speed_spec, (C32_LARGEST_PART, rules[C32_LARGEST_PART], largest_est)],
        fair_arms=int8_hardware(data), longer_run_agrees=agrees)
    # estimate: Amdahl over the FFN's share of the time with its GEMMs' k (not a bound);
    # bound: the FFN's layers made free, which no FFN-only scheme can beat.
    numbers = {"T": int(t), "ffn_flop_share": ffn.flop_share[t],
               "ffn_time_share": ffn.time_share[t], "k_ffn": ffn.gemm_speedup[t],
               "estimate_ffn": ffn.prefill_estimate[t], "bound_ffn": ffn.prefill_bound[t],
               "speedup_ffn": a.mean, "speedup_attention": b.mean,
               "k_attention": attn.gemm_speedup[t], "decode_ffn": ffn.decode_speedup.mean,
               "decode_estimate_ffn": ffn.decode_estimate, "decode_bound_ffn": ffn.decode_bound}
    return [speed, largest], numbers


def combine_c32(speed: Part, largest: Part) -> str:
    def decided(verdicts: list[str]) -> str:
        if verdicts == ["confirmed", "confirmed"]:
            return "confirmed"
        return "conditional" if "confirmed" in verdicts else verdicts[0]

    return settle([speed.verdict, largest.verdict], decided)


@claim("C32")
def c32(ctx: Context) -> Finding:
    summary = ctx.summary("quantize")
    if summary is None:
        return missing(ctx, "quantize")
    data: QuantizeData = summary.data
    parts, n = c32_parts(data, ctx.size)
    vnni = int8_hardware(data)
    # Without int8 instructions the question (which part gains most from int8) cannot be
    # asked here: every scheme is slower than float32 for the machine's sake.
    verdict = combine_c32(*parts) if vnni else "untestable-here"
    scale = {"d_model": data.model.get("d_model"), "depth": data.model.get("n_layers")}
    scale_en = (scale_text(**scale, note=f"prefill T={n['T']}, {data.threads} thread(s)")
                if verdict in DECIDED else "")
    scale_zh = (scale_text(**scale, zh=True, note=f"prefill T={n['T']}，{data.threads} 线程")
                if verdict in DECIDED else "")
    wo = _timing(data, "ffn/weight-only")
    wo_text = "" if wo is None else (
        f" Weight-only int8 of the FFN: prefill ×{_text(wo.prefill_speedup[str(n['T'])].mean)}, "
        f"decode ×{_text(wo.decode_speedup.mean)} (estimate from the bytes read "
        f"×{_text(wo.decode_estimate)}, bound ×{_text(wo.decode_bound)}).")
    wo_zh = "" if wo is None else (
        f"仅对 FFN 做 weight-only int8：prefill ×{_text(wo.prefill_speedup[str(n['T'])].mean)}，"
        f"decode ×{_text(wo.decode_speedup.mean)}（按读取字节的估计 ×{_text(wo.decode_estimate)}，"
        f"上界 ×{_text(wo.decode_bound)}）。")
    m = data.model
    cpu = ("" if vnni else " This CPU has no VNNI/AMX int8 instructions, so torch's int8 GEMM "
           "runs a slow path: the measured k is the machine's, not int8's, and the claim is "
           "untestable here (run `blocklab quantize` on a CPU with AVX-512 VNNI or AMX).")
    cpu_zh = ("" if vnni else "本机 CPU 无 VNNI/AMX int8 指令，torch 的 int8 GEMM 走慢路径：测得的 k "
              "反映的是本机而非 int8 本身，此论断在此无法检验（请在支持 AVX-512 VNNI 或 AMX 的 CPU 上运行 "
              "`blocklab quantize`）。")
    return Finding(
        verdict,
        f"d={m.get('d_model')}, {m.get('n_layers')} layers, prefill T={n['T']} ({C32_MODE} "
        f"int8, eager, {data.threads} thread(s), random weights): the FFN is "
        f"{100 * n['ffn_flop_share']:.1f}% of prefill FLOPs (blocklab.budget) and "
        f"{_pct_text(n['ffn_time_share'])} of the float prefill's time; with its layers free "
        f"prefill runs ×{_text(n['bound_ffn'])}, the bound no FFN-only scheme can beat; its "
        f"int8 GEMMs run k = {_text(n['k_ffn'])}× the float ones, so Amdahl over the time "
        f"share estimates FFN-only at ×{_text(n['estimate_ffn'])}; measured "
        f"×{_text(n['speedup_ffn'])} (attention-only "
        f"×{_text(n['speedup_attention'])}) → {parts[0].verdict} / {parts[1].verdict}."
        f"{wo_text}{cpu} The page's ~99% share counts Llama-3-8B at T=4096, with the attention "
        "projections left out of its sum." + scale_en,
        f"d={m.get('d_model')}、{m.get('n_layers')} 层、prefill T={n['T']}（{C32_MODE} int8，eager，"
        f"{data.threads} 线程，随机权重）：FFN 占 prefill FLOPs 的 {100 * n['ffn_flop_share']:.1f}%"
        f"（blocklab.budget），占浮点 prefill 时间的 {_pct_text(n['ffn_time_share'])}；FFN 各层耗时为零时 "
        f"prefill 为 ×{_text(n['bound_ffn'])}，即仅量化 FFN 无法超过的上界；其 int8 GEMM 速度为浮点的 "
        f"k = {_text(n['k_ffn'])} 倍，按时间占比的 Amdahl 估计仅量化 FFN 为 ×{_text(n['estimate_ffn'])}；"
        f"实测 ×{_text(n['speedup_ffn'])}（仅量化注意力 "
        f"×{_text(n['speedup_attention'])}）→ {parts[0].verdict} / {parts[1].verdict}。"
        f"{wo_zh}{cpu_zh}页面的约 99% 是 Llama-3-8B 在 T=4096 下、未计注意力投影时的比例。" + scale_zh,
        {**n, "timings": [asdict(r) for r in data.timings], "cpu_flags": data.cpu_flags},
        ctx.suite_command("quantize"), "quantize_speedup", parts, C32_COMBINES,
        C32_COMBINES_ZH)


def swiglu_exactness(seed: int = 0, d: int = 64, m: int = 96) -> dict:
    """Live probe: random gate, up [m, d] of different ranges and down [d, m]; merged-per-row vs
    separate-per-row (must be identical), and merged-per-tensor's scale vs the two scales."""
    import torch

    from blocklab.nn.quantize import int8_scale, quantize_swiglu

    g = torch.Generator().manual_seed(seed)
    gate = torch.randn(m, d, generator=g)
    up = 0.25 * torch.randn(m, d, generator=g)  # a narrower range than gate
    down = torch.randn(d, m, generator=g)
    row_m = quantize_swiglu(gate, up, down, "merged-per-row")
    row_s = quantize_swiglu(gate, up, down, "separate-per-row")
    ten_m = quantize_swiglu(gate, up, down, "merged-per-tensor")
    ten_s = quantize_swiglu(gate, up, down, "separate-per-tensor")
    merged_scale = float(int8_scale(torch.cat((gate, up)), "per-tensor"))
    return {"per_row_identical": all(torch.equal(a, b) for a, b in zip(row_m, row_s,
                                                                        strict=True)),
            "per_tensor_up_error_merged": float((ten_m[1] - up).abs().max()),
            "per_tensor_up_error_separate": float((ten_s[1] - up).abs().max()),
            "merged_scale": merged_scale,
            "max_of_scales": max(float(int8_scale(gate, "per-tensor")),
                                 float(int8_scale(up, "per-tensor")))}


@claim("C33")
def c33(ctx: Context) -> Finding:
    probe = swiglu_exactness()
    rules = registered("C33", ctx.size)
    summary = ctx.summary("quantize")
    stored = None if summary is None else summary.data.merged_per_row_max_diff
    exact = probe["per_row_identical"] and (stored is None or stored == 0.0)
    exact_part = Part(C33_EXACT_PART, rules[C33_EXACT_PART],
                      Estimate(0.0 if exact else stored, None, None, 1),
                      "confirmed" if exact else "refuted",
                      "bit-identical" if exact else "the merged and separate weights differ")
    if summary is None:
        return missing(ctx, "quantize")
    data: QuantizeData = summary.data
    rows = {s.scheme: s for s in data.swiglu}
    tensor = rows["merged-per-tensor"]
    tensor_part = Part.graded(C33_TENSOR_PART, rules[C33_TENSOR_PART],
                              Estimate.of(tensor.error_vs_separate_pct))
    if not exact:
        verdict = "refuted"
    else:
        verdict = settle([tensor_part.verdict],
                         lambda vs: "conditional" if vs[0] == "confirmed" else vs[0])
    qm = data.quality_model
    scale_en = (scale_text(qm.get("d_model"), qm.get("n_layers"), note="trained model")
                if verdict in DECIDED else "")
    scale_zh = (scale_text(qm.get("d_model"), qm.get("n_layers"), zh=True, note="训练后的模型")
                if verdict in DECIDED else "")
    sep, row = rows["separate-per-tensor"], rows["merged-per-row"]
    return Finding(
        verdict,
        f"gate and up read the same x and can be stored as one [2·d_ff, d] matrix; down reads "
        f"the hidden (width d_ff) and can never join them. Per-row scales: merging changes "
        f"nothing (bit-identical, live probe and {len(data.merged_scale_over_max)} trained "
        f"layers). One per-tensor scale: the merged scale is the larger of the two "
        f"({probe['merged_scale']:.4g} = max {probe['max_of_scales']:.4g}), so the FFN error "
        f"goes from {_text(sep.ffn_error.mean, 4)} to {_text(tensor.ffn_error.mean, 4)} "
        f"({_text(tensor.error_vs_separate_pct.mean)}% → {tensor_part.verdict}), Δ val loss "
        f"{_text(tensor.delta.mean, 4)} vs {_text(sep.delta.mean, 4)} nats/token; merged per-row "
        f"Δ {_text(row.delta.mean, 4)}. The page's rule holds for per-tensor scales only."
        + scale_en,
        f"gate 与 up 读入同一个 x，可存为一个 [2·d_ff, d] 矩阵；down 读入隐层（宽 d_ff），无法与之合并。"
        f"逐行缩放：合并不改变任何值（逐位相同，实时探针与 {len(data.merged_scale_over_max)} 个训练层）。"
        f"单一逐张量缩放：合并后的缩放取两者较大者（{probe['merged_scale']:.4g} = max "
        f"{probe['max_of_scales']:.4g}），FFN 误差由 {_text(sep.ffn_error.mean, 4)} 变为 "
        f"{_text(tensor.ffn_error.mean, 4)}（{_text(tensor.error_vs_separate_pct.mean)}% → "
        f"{tensor_part.verdict}），验证损失变化 {_text(tensor.delta.mean, 4)} 对 "
        f"{_text(sep.delta.mean, 4)} nats/token。页面的说法只对逐张量缩放成立。" + scale_zh,
        {"probe": probe, "swiglu": [asdict(s) for s in data.swiglu],
         "merged_per_row_max_diff": data.merged_per_row_max_diff,
         "merged_per_tensor_max_diff": data.merged_per_tensor_max_diff},
        ctx.suite_command("quantize"), None, [exact_part, tensor_part], C33_COMBINES,
        C33_COMBINES_ZH)
