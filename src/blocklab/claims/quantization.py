"""The int8 quantization claims: C32 reads the `quantize` suite's timings; C33 its trained
models (the per-row merge on every layer's weights, the FFN output error per seed).
"""

from __future__ import annotations

import math
from dataclasses import replace

from blocklab.claims.checks import zoo_budget
from blocklab.claims.finding import Context, Finding, ci_n_text, claim, decided_scale, untested_part
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
    Estimate,
    Part,
    decide,
    decided_text,
    settle,
)
from blocklab.claims.text import WORDING, Template, both, say, verdict_word
from blocklab.experiments.suites.quantize.summary import QuantizeData
from blocklab.experiments.suites.quantize.timing import QuantTiming
from blocklab.experiments.summaries import RATIO_METHOD, Interval, TimeRatio

C32_COMBINES = WORDING["COMBINES"]["C32"]
# C33's exact part is the condition: per-row merging is free.
C33_COMBINES = both(WORDING["COMBINES"]["C33"], delta=C33_DELTA)

TEXT: dict[str, Template] = WORDING["QUANTIZATION"]


def _timing(data: QuantizeData, scheme: str) -> QuantTiming | None:
    """The eager timing of `scheme`."""
    return next((r for r in data.timings if r.scheme == scheme and not r.compiled), None)


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
    return zoo_budget("meta-llama-3-8b", 4096)["flops"]["prefill"]["ffn_share"]


def c32_reason_part(share: float, timed_share: float, size: str = "quick") -> Part:
    """C32's stated reason ("the FFN holds ~99% of prefill FLOPs") decided without a test:
    `share` (a fraction) at the page's shape against `registry.C32_REASON_PCT`, the timed
    model's `timed_share` shown beside it."""
    pct = 100 * share
    holds = pct >= C32_REASON_PCT
    return untested_part(
        C32_REASON_PART, registered("C32", size)[C32_REASON_PART], pct,
        CONFIRMED if holds else REFUTED, f"exactly {pct:.1f}% at Llama 3 8B's shape, T = 4,096 "
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
    data: QuantizeData = ctx.required("quantize").data
    parts, n = c32_parts(data, ctx.size)
    vnni = int8_hardware(data)
    # Without int8 instructions the question (which part gains most from int8) cannot be
    # asked here: every scheme is slower than float32 for the machine's sake.
    verdict = combine_c32(*parts, int8=vnni)
    wo = _timing(data, "ffn/weight-only")
    m = data.model

    def text(lang: str) -> str:
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
                   scale=decided_scale(verdict, m, lang, say(TEXT["c32_scale"], lang, T=n["T"],
                                                             threads=data.threads)))

    return Finding(
        verdict, text("en"), text("zh"),
        {**n, "timings": data.timings, "cpu_flags": data.cpu_flags},
        ctx.suite_command("quantize"), "quantize_speedup", parts, *C32_COMBINES)


def c33_parts(data: QuantizeData, size: str = "quick") -> list[Part]:
    """C33's two parts from a quantize summary: the per-row merge against separate quantization
    on every trained layer (exactly 0, or not: decided without a test), and the per-tensor
    merge's FFN output error against separate per-tensor scales, paired by seed."""
    rules = registered("C33", size)
    compared = len(data.gate_up_scale_ratio)
    diff = data.merged_per_row_max_diff
    if compared == 0:
        value, verdict, why = None, INCONCLUSIVE, "no trained layer was compared"
    elif diff == 0.0:
        value, verdict, why = 0.0, "confirmed", (f"bit-identical on all {compared} trained "
                                                 "layer(s) (every layer of every seed)")
    else:
        value, verdict, why = diff, "refuted", (f"the merged and separate weights differ by up "
                                                f"to {diff:.3g} over {compared} trained layer(s)")
    exact = untested_part(C33_EXACT_PART, rules[C33_EXACT_PART], value, verdict, why, compared)
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
    data: QuantizeData = ctx.required("quantize").data
    exact, tensor_part = c33_parts(data, ctx.size)
    verdict = combine_c33(exact, tensor_part)
    rows = {s.scheme: s for s in data.swiglu}
    sep, merged = rows.get("separate-per-tensor"), rows.get("merged-per-tensor")
    sep_err = None if sep is None else sep.ffn_error.mean
    merged_err = None if merged is None else merged.ffn_error.mean
    pct = Interval(0) if merged is None else merged.error_vs_separate_pct
    ratios = data.gate_up_scale_ratio
    loss = data.merged_tensor_loss_penalty
    qm = data.quality_model
    sensitivity = c33_sensitivity(tensor_part)
    per_row = {"confirmed": TEXT["c33_row_exact"],
               "refuted": TEXT["c33_row_differs"]}.get(exact.verdict, TEXT["c33_row_none"])
    tail = (TEXT["c33_conditional"] if verdict == "conditional" else
            TEXT["c33_cheap"] if (verdict == "not-reproduced-at-this-scale"
                                  and exact.verdict == "confirmed") else ("", ""))

    def text(lang: str) -> str:
        sens = "" if sensitivity is None else say(
            TEXT["c33_sensitivity"], lang, delta=C33_SENSITIVITY_DELTA,
            verdict=verdict_word(sensitivity, lang))
        return say(TEXT["c33"], lang, per_row=say(per_row, lang, n=exact.estimate.n,
                                                      diff=exact.estimate.value),
                   ratio=_ratio_text(ratios, lang), separate_error=_text(sep_err, 5),
                   merged_error=_text(merged_err, 5), pct=ci_n_text(pct, 2, "%"),
                   delta=C33_DELTA, tensor=verdict_word(tensor_part.verdict, lang),
                   sensitivity=sens, loss=ci_n_text(loss, 5), tail=say(tail, lang),
                   scale=decided_scale(verdict, qm, lang, say(TEXT["c33_scale"], lang)))

    return Finding(
        verdict, text("en"), text("zh"),
        {"swiglu": data.swiglu,
         "merged_per_row_max_diff": data.merged_per_row_max_diff,
         "merged_per_tensor_max_diff": data.merged_per_tensor_max_diff,
         "layers_compared": exact.estimate.n, "gate_up_scale_ratio": ratios,
         "merged_tensor_loss_penalty": loss, "delta_pct": C33_DELTA,
         "sensitivity": {"delta_pct": C33_SENSITIVITY_DELTA, "verdict": sensitivity}},
        ctx.suite_command("quantize"), None, [exact, tensor_part], *C33_COMBINES)
