"""Each claim in one line: its verdict, the page's statement in brief, and the number found.

    C16 ? inconclusive · SwiGLU beats ReLU by 1–2% (GeGLU 1%, GLU 0.5%) · loss vs ReLU:
        SwiGLU +0.0072% [−1.12, +1.13]; GeGLU +0.195%, GLU +1.65%

`FOUND` reads each claim's `ClaimResult` into one clause whose every number comes from the
result. The verdict's symbol belongs to the report's palette: the caller passes it in.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce
from operator import getitem
from typing import Any

from blocklab.claims.checks import LONG_CONTEXT
from blocklab.claims.ledger import ClaimResult
from blocklab.claims.rules import Part
from blocklab.claims.text import ERROR, Template, reader_word, say

# The most a line's statement and its finding take when a claim has no entry below, so that the
# line (id, symbol, verdict word, separators) stays within 200 characters.
STATEMENT_CHARS, FOUND_CHARS = 70, 90
# The page's statement in brief, in our own words (the full restatement: `text.CLAIM_TEXT`).
STATEMENT: dict[str, Template] = {
    "C01": ("Equal parameters: a gated FFN's width is 2·m0/3 (8d/3 for m0 = 4d)",
            "等参数时门控 FFN 宽度为 2·m0/3（m0 = 4d 时为 8d/3）"),
    "C02": ("d=512, m0=2048: plain FFN 2,097,152 weights, gated 3,145,728",
            "d=512、m0=2048：普通 FFN 2,097,152 个参数，门控 3,145,728 个"),
    "C03": ("B=2, T=1024, m=2048: one branch holds 4,194,304 elements",
            "B=2、T=1024、m=2048：一个中间分支 4,194,304 个元素"),
    "C04": ("SwiGLU of [1,−1] with identity weights ≈ [0.731059, 0.268941]",
            "单位权重下 SwiGLU([1,−1]) ≈ [0.731059, 0.268941]"),
    "C05": ("RMSNorm([1,3]) = [1/√5, 3/√5]; a shift moves RMSNorm, not LayerNorm",
            "RMSNorm([1,3]) = [1/√5, 3/√5]；平移改变 RMSNorm，不改变 LayerNorm"),
    "C06": ("RMSNorm's Jacobian is I/s − x·xᵀ/(d·s³), with J·x = ε·x/s³",
            "RMSNorm 雅可比为 I/s − x·xᵀ/(d·s³)，J·x = ε·x/s³"),
    "C07": ("N(a·x) = N(x) only for a > 0 at ε = 0; a < 0 flips the sign",
            "N(a·x) = N(x) 仅在 a > 0、ε = 0 时成立；a < 0 翻转符号"),
    "C08": ("Zeros with ε > 0 give zeros; a constant input at ε = 0 is rejected",
            "ε > 0 时全零输入得零；ε = 0 的常量输入须拒绝"),
    "C09": ("Pre-norm's Jacobian is I + J_F·J_N, post-norm's J_N·(I + J_F)",
            "Pre-Norm 雅可比为 I + J_F·J_N，Post-Norm 为 J_N·(I + J_F)"),
    "C10": ("Llama's RMSNorm takes the mean square in float32, then casts back",
            "Llama 的 RMSNorm 在 float32 中求平方均值，再转回原 dtype"),
    "C11": ("Llama's post_attention_layernorm is the MLP's pre-norm",
            "Llama 的 post_attention_layernorm 是 MLP 的 Pre-Norm"),
    "C12": ("An identity path alone does not keep a deep stack's gradients even",
            "仅有单位路径并不能让深层网络的梯度保持均匀"),
    "C13": ("Pre- vs post-norm in real training (designed on the page, not run)",
            "Pre-Norm 与 Post-Norm 的真实训练对照（页面只设计、未运行）"),
    "C14": ("Analytic Jacobians agree with finite differences",
            "解析雅可比与有限差分一致"),
    "C15": ("The FFN holds 2/3–3/4 of a layer; 177M example labelled Llama 3 8B",
            "FFN 占每层参数 2/3–3/4；177M 的示例标为 Llama 3 8B"),
    "C16": ("SwiGLU beats ReLU by 1–2% (GeGLU 1%, GLU 0.5%)",
            "SwiGLU 比 ReLU 好 1–2%（GeGLU 1%，GLU 0.5%）"),
    "C17": ("SiLU does not cut the gradient of negative inputs as ReLU does",
            "SiLU 不像 ReLU 那样截断负输入的梯度"),
    "C18": ("RMSNorm: ~7% less compute than LayerNorm, the same quality",
            "RMSNorm 比 LayerNorm 计算量少约 7%，质量相同"),
    "C19": ("Pre-norm needs little warmup; post-norm needs it, gradients vanish",
            "Pre-Norm 几乎不需 warmup；Post-Norm 需要 warmup，底层梯度消失"),
    "C20": ("With RoPE a score depends on positions only through m − n",
            "使用 RoPE 时分数只通过 m − n 依赖位置"),
    "C21": ("Past L: learned fails at 2×, ALiBi holds to 8×, RoPE 4×",
            "超出训练长度 L：可学习位置 2 倍即失效，ALiBi 到 8 倍、RoPE 到 4 倍仍可用"),
    "C22": ("YaRN/NTK take 4K training to 128K with under 5% loss",
            "YaRN/NTK 让 4K 训练外推到 128K，损失小于 5%"),
    "C23": ("Llama 3 8B prefill at 4,096 tokens: the FFN is ~99% of FLOPs",
            "Llama 3 8B 预填充 4,096 个 token：FFN 约占 99% 的 FLOPs"),
    "C24": ("Decode: attention grows with context, the FFN stays; memory-bound",
            "解码：注意力随上下文增长，FFN 不变；受访存限制"),
    "C25": ("Post-norm inference holds larger activations, a lower batch ceiling",
            "Post-Norm 推理中间激活更大、batch 上限更低"),
    "C26": ("RoPE gives NaN past the end of its rotary table",
            "位置超出旋转表时 RoPE 产生 NaN"),
    "C27": ("Raise RoPE's base from 10,000 towards 1,000,000 for long contexts",
            "长上下文可把 RoPE 基频从 10,000 提高到 1,000,000"),
    "C28": ("Some models use d_ff up to 8× d_model, which costs FFN memory",
            "有些模型 d_ff 达 d_model 的 8 倍，FFN 显存随之增大"),
    "C29": ("Without positions a model cannot tell \"A B C\" from \"C B A\"",
            "没有位置信息，模型分不清 \"A B C\" 与 \"C B A\""),
    "C30": ("NTK/YaRN RoPE works to 8–16×; RoPE drops clearly past 8×",
            "NTK/YaRN 让 RoPE 到 8–16 倍可用；超过 8 倍明显下降"),
    "C31": ("RoPE costs no parameters, little compute, keeps FlashAttention",
            "RoPE 不加参数、计算开销低、兼容 FlashAttention"),
    "C32": ("Quantizing the FFN speeds prefill most: it is ~99% of FLOPs",
            "量化 FFN 对预填充加速最大：它约占 99% 的 FLOPs"),
    "C33": ("SwiGLU's three matrices must be quantized separately",
            "SwiGLU 的三个矩阵须分别量化"),
    "C34": ("Which models use which FFN, positions and norm placement",
            "哪些模型用哪种 FFN、位置编码与归一化位置"),
    "C35": ("The FFN's share of a layer ≈ 3·d_ff/(3·d_ff + 4·d), 2/3–3/4",
            "FFN 占每层 ≈ 3·d_ff/(3·d_ff + 4·d)，在 2/3–3/4 之间"),
    "C36": ("Pre-norm trains 50+ layers stably: residual gradient ≈ 1",
            "Pre-Norm 让 50 层以上稳定训练：残差路径梯度 ≈ 1"),
    "C37": ("Slicing an ordinary FFN narrower misses what nested widths give",
            "把普通 FFN 切窄，得不到嵌套宽度训练的效果"),
}

# The clauses of what was found, (English, Chinese), filled by `say` with numbers already
# written by `_num` / `_signed` / `_est` (or a format spec on a number from the evidence).
TEXT: dict[str, Template] = {
    "missing": ("no results stored yet", "尚未存有实验结果"),
    "error": ("the check failed to run", "检查运行失败"),
    "checks": ("{passed} of {n} checks pass; worst error {worst}",
               "{n} 项检查中 {passed} 项通过；最大误差 {worst}"),
    "checks_failed": ("{passed} of {n} checks pass", "{n} 项检查中 {passed} 项通过"),
    "tally": ("{held} of {n} parts hold", "{n} 个部分中 {held} 个成立"),
    "tally_open": ("{held} of {n} hold, {open} inconclusive",
                   "{n} 个部分中 {held} 个成立、{open} 个尚无定论"),
    "C01": ("{budget}; 8d/3 = {exact}, Llama's rounding {llama}",
            "{budget}；8d/3 = {exact}，Llama 取整为 {llama}"),
    "C02": ("plain {plain}, gated {gated} weights", "普通 {plain}、门控 {gated} 个参数"),
    "C03": ("{branch} elements; longer T: parameters stay {params}, branch {longer}",
            "{branch} 个元素；T 变长时参数仍为 {params}，分支为 {longer}"),
    "C04": ("hidden = {hidden}, within {err:.1e} of the page's",
            "hidden = {hidden}，与页面值相差 {err:.1e}"),
    "C05": ("RMSNorm {rms}, LayerNorm {ln}; shifted, RMSNorm {shifted}",
            "RMSNorm {rms}，LayerNorm {ln}；平移后 RMSNorm {shifted}"),
    "C08": ("{passed} of {n} checks pass: zeros give {zeros}; ε = 0 raises {raised}",
            "{n} 项检查中 {passed} 项通过：全零得 {zeros}；ε = 0 抛出 {raised}"),
    "C09": ("post-norm output {post}; A·J_N − J_N·A = {gap} for a diagonal A",
            "Post-Norm 输出 {post}；对角 A 时 A·J_N − J_N·A = {gap}"),
    "C10": ("mean square in float16 {fp16:g}; the float32 path is within {err:.1e} of float64",
            "float16 平方均值为 {fp16:g}；float32 路径与 float64 相差 {err:.1e}"),
    "C11": ("the MLP's input has RMS 1 within {mlp:.1e}; the layer's output is off by {out:.2f}",
            "MLP 输入 RMS 与 1 相差 {mlp:.1e} 以内；层输出偏离 {out:.2f}"),
    "C12": ("spread over {depth} layers at most log2 {est} ({init} init)",
            "{depth} 层间差距最大为 log2 {est}（{init} 初始化）"),
    "C13": ("skipping warmup costs post-norm {est} nats more than pre-norm",
            "去掉 warmup 对 Post-Norm 的损失代价比 Pre-Norm 多 {est} nats"),
    "C14": ("worst error {worst:.1e} over {n} Jacobians vs finite differences",
            "{n} 个雅可比与有限差分的最大误差 {worst:.1e}"),
    "C15": ("the example's FFN share {example:.1%}; Meta-Llama-3-8B's shape {real:.1%}",
            "示例 FFN 占 {example:.1%}；Meta-Llama-3-8B 的实际形状为 {real:.1%}"),
    "C16": ("loss vs ReLU: SwiGLU {swiglu}; GeGLU {geglu}, GLU {glu}",
            "相对 ReLU 的损失：SwiGLU {swiglu}；GeGLU {geglu}，GLU {glu}"),
    "C17": ("SiLU's gradient {low} to {high} for z in [{z0}, {z1}] (ReLU's {relu}); 0 only at "
            "z = {zero}",
            "z 在 [{z0}, {z1}] 时 SiLU 梯度为 {low} 至 {high}（ReLU 为 {relu}）；仅 z = {zero} 处为 0"),
    "C18": ("norm FLOPs {norm}% fewer, a step's {step}% fewer; loss {quality} nats",
            "归一化 FLOPs 少 {norm}%，整步少 {step}%；损失差 {quality} nats"),
    "C19": ("pre-norm without warmup {est} nats; {tally}",
            "Pre-Norm 无 warmup 时损失 {est} nats；{tally}"),
    "C20": ("q·k shifted up to {shift:,} matches to {gap:.1e} (float64)",
            "位移至 {shift:,} 时 q·k 一致到 {gap:.1e}（float64）"),
    "C21": ("{tally}; learned {learned} at {lm}×, ALiBi {alibi} at {am}×, RoPE {rope} at {rm}×",
            "{tally}；可学习位置 {lm} 倍 {learned}，ALiBi {am} 倍 {alibi}，RoPE {rm} 倍 {rope}"),
    "C22": ("no billion-scale model here; nearest run: RoPE scaling to {multiple}×",
            "此处无十亿级模型；最接近的测试：RoPE scaling 到 {multiple} 倍"),
    "C22_none": ("no billion-scale model here; nearest run: RoPE scaling (position suite)",
                 "此处无十亿级模型；最接近的测试：RoPE scaling（位置实验）"),
    "C23": ("FFN {share:.1%} of prefill FLOPs ({ffn:,.0f} of {total:,.0f} G), not {page:.0%}",
            "FFN 占预填充 FLOPs 的 {share:.1%}（{total:,.0f} G 中 {ffn:,.0f} G），而非 {page:.0%}"),
    "C24": ("score FLOPs ×{growth:.0f} from {first:,} to {last:,} tokens, FFN {ffn:.2f} G flat; "
            "{intensity:.2f} FLOP/byte",
            "上下文 {first:,} 到 {last:,}：分数 FLOPs ×{growth:.0f}，FFN 恒为 {ffn:.2f} G；"
            "{intensity:.2f} FLOP/byte"),
    "C25": ("{pre:,} vs {post:,} elements per layer, pre- vs post-norm (sandwich {sandwich:,})",
            "每层 {pre:,} 对 {post:,} 个元素（Pre 对 Post；sandwich {sandwich:,}）"),
    "C26": ("positions past the table {finite}; float16 angles give NaN from {nan:,}",
            "表外位置{finite}；float16 角度从 {nan:,} 起产生 NaN"),
    "C26_none": ("positions past the table {finite}; float16 angles give no NaN",
                 "表外位置{finite}；float16 角度未产生 NaN"),
    "finite": ("stay finite", "保持有限"),
    "not_finite": ("do not stay finite", "不能保持有限"),
    "C27": ("slowest turn {w10k:,.0f} → {w1m:,.0f} positions; {raised} of {long} long-context "
            "models raised θ",
            "最慢旋转周期 {w10k:,.0f} → {w1m:,.0f} 个位置；{long} 个长上下文模型中 {raised} 个提高了 θ"),
    "C28": ("{models} at 8×; a ratio of {top} holds {growth:.1f}× the elements of {low}",
            "{models} 为 8 倍；比值 {top} 的元素数是 {low} 的 {growth:.1f} 倍"),
    "C28_none": ("no zoo model at 8×; a ratio of {top} holds {growth:.1f}× the elements of {low}",
                 "库中无 8 倍模型；比值 {top} 的元素数是 {low} 的 {growth:.1f} 倍"),
    "C29": ("bidirectional order error {bi:.1e}; a causal NoPE decoder's TV {tv}",
            "双向注意力顺序误差 {bi:.1e}；因果 NoPE 解码器 TV {tv}"),
    "C30": ("YaRN + {steps}-step fine-tune {yarn} at {ym}×; plain RoPE {plain} at {pm}×",
            "YaRN + {steps} 步微调在 {ym} 倍为 {yarn}；普通 RoPE 在 {pm} 倍为 {plain}"),
    "C31": ("RoPE adds {params} parameters, {rope}% of prefill FLOPs; ALiBi {alibi}%; {sdpa} "
            "SDPA mismatches",
            "RoPE 新增 {params} 个参数、预填充 FLOPs 的 {rope}%；ALiBi {alibi}%；SDPA 差异 {sdpa} 处"),
    "C32": ("T = {T}: int8 FFN ×{ffn:.2f}, attention ×{attn:.2f}; FFN {share:.1%} of Llama 3 "
            "8B's prefill FLOPs, not ~99%",
            "预填充 T = {T}：仅量化 FFN ×{ffn:.2f}，仅量化注意力 ×{attn:.2f}；FFN 占 Llama 3 8B 预填充 "
            "FLOPs 的 {share:.1%}，并非约 99%"),
    "C33": ("per-row merge differs by {row}; one per-tensor scale: FFN error {tensor}",
            "逐行合并相差 {row}；单一逐张量缩放：FFN 误差 {tensor}"),
    "C34": ("{held} of {checkable} checkable pairings hold, {wrong} wrong, {partly} partly",
            "可检验的 {checkable} 组中 {held} 组成立、{wrong} 组错误、{partly} 组部分成立"),
    "C35": ("formula within {tol:g} points for {held} of {n} models; worst {model} "
            "{formula:.1%} vs {exact:.1%}",
            "{n} 个模型中 {held} 个的公式值相差 {tol:g} 个百分点以内；最差 {model} "
            "{formula:.1%} 对 {exact:.1%}"),
    "C36": ("pre-norm blocks ‖J − I‖ {est} at init; {tally}",
            "初始化时 Pre-Norm 块 ‖J − I‖ {est}；{tally}"),
    "C37": ("sliced to m/2 {sliced} vs nested; nested at full m {full}",
            "切到 m/2 比嵌套训练 {sliced}；嵌套训练在完整 m 上 {full}"),
}


@dataclass(frozen=True)
class Brief:
    """A claim in one line: `symbol word · statement · found`."""

    id: str
    verdict: str
    symbol: str  # the verdict's symbol, from the report's palette
    word: str  # the verdict in the line's language
    statement: str  # the page's statement in brief
    found: str  # the number found, one clause


def brief(result: ClaimResult, lang: str, symbol: str) -> Brief:
    """`result` in brief, in `lang` ("en" or "zh"), with the verdict's `symbol`. A claim with
    no entry in STATEMENT (one a contributor added) shows its restated claim, clipped."""
    statement = (say(STATEMENT[result.id], lang) if result.id in STATEMENT
                 else clip(result.claim_zh if lang == "zh" else result.claim, STATEMENT_CHARS))
    return Brief(result.id, result.verdict, symbol, reader_word(result.verdict, lang),
                 statement, found(result, lang))


def line(result: ClaimResult, lang: str, symbol: str, link: str = "") -> str:
    """'C16 ✓ confirmed · statement · found'; the id as the Markdown link `[C16](link)` when
    `link` is given (its visible text is the same line)."""
    b = brief(result, lang, symbol)
    head = f"[{b.id}]({link})" if link else b.id
    return f"{head} {b.symbol} {b.word} · {b.statement} · {b.found}"


def clip(text: str, chars: int) -> str:
    """`text` in at most `chars` characters: whole, or cut at a space (anywhere, in Chinese)
    and ended with '…'."""
    if len(text) <= chars:
        return text
    cut = text[:chars - 1]
    if " " in cut:
        cut = cut[:cut.rindex(" ")]
    return cut.rstrip(" ,;:·") + "…"


def found(result: ClaimResult, lang: str) -> str:
    """What was found for `result`, one clause in `lang` with its numbers."""
    if result.verdict == "missing-results":
        return say(TEXT["missing"], lang)
    if result.verdict == ERROR:
        return say(TEXT["error"], lang)
    if result.id not in FOUND:  # a claim a contributor added: its finding's first sentence
        summary = result.summary_zh if lang == "zh" else result.summary
        return clip(re.split(r"(?<=\.)\s|(?<=。)", summary, maxsplit=1)[0], FOUND_CHARS)
    return FOUND[result.id](result, lang)


# --- numbers, written the same way wherever a line shows them -----------------------------------
def _num(value: float) -> str:
    """3 significant digits, a true minus sign: '0.00305', '−1.12', '35'."""
    return f"{value:.3g}".replace("-", "−")


def _signed(value: float) -> str:
    """3 significant digits with a sign: '+0.0072', '−1.12'."""
    return f"{value:+.3g}".replace("-", "−")


def _est(part: Part, unit: str = "") -> str:
    """A part's estimate with the interval its decision read ('+0.0072% [−1.12, +1.13]'), the
    stored 95% interval for a part decided without a test, the value alone without one; '—'
    without a value. The level is left to the part's details."""
    e = part.estimate
    if e.value is None:
        return "—"
    iv = None if part.decision is None else part.decision.interval
    low, high = (iv.low, iv.high) if iv is not None else (e.ci_low, e.ci_high)
    if low is None or high is None:
        return f"{_signed(e.value)}{unit}"
    return f"{_signed(e.value)}{unit} [{_signed(low)}, {_signed(high)}]"


def _value(part: Part, unit: str = "") -> str:
    """A part's estimate alone, signed ('+13.1%'), or '—'."""
    v = part.estimate.value
    return "—" if v is None else f"{_signed(v)}{unit}"


# --- reading a result ----------------------------------------------------------------------------
def _part(result: ClaimResult, name: str) -> Part | None:
    """The part named `name` (exactly), or None."""
    return next((p for p in result.parts if p.name == name), None)


def _parts_at(result: ClaimResult, pattern: str) -> list[tuple[int, Part]]:
    """(multiple, part) for each part whose name matches `pattern` in full, its one group the
    multiple ('RoPE works at (\\d+)×'), in the order graded."""
    out = []
    for p in result.parts:
        m = re.fullmatch(pattern, p.name)
        if m:
            out.append((int(m.group(1)), p))
    return out


def _tally(result: ClaimResult, lang: str) -> str:
    """'4 of 10 parts hold, 3 inconclusive'."""
    held = sum(p.verdict == "confirmed" for p in result.parts)
    still = sum(p.verdict == "inconclusive" for p in result.parts)
    key = "tally_open" if still else "tally"
    return say(TEXT[key], lang, held=held, n=len(result.parts), open=still)


def _check(result: ClaimResult, prefix: str) -> dict[str, Any]:
    """The first check of the evidence whose name starts with `prefix`."""
    return next(c for c in result.evidence["checks"] if c["check"].startswith(prefix))


def _got(result: ClaimResult, prefix: str) -> str:
    """What that check got, as it wrote it, with a true minus sign ('[−1, 1]')."""
    return re.sub(r"-(?=\d)", "−", str(_check(result, prefix)["got"]))


def _checks(result: ClaimResult, lang: str) -> str | None:
    """'k of n checks pass' when some check of the evidence fails, else None: then a line
    shows no number a failed check got as if it held."""
    checks = result.evidence["checks"]
    passed = sum(bool(c["passed"]) for c in checks)
    if passed == len(checks):
        return None
    return say(TEXT["checks_failed"], lang, passed=passed, n=len(checks))


def _all_checks(result: ClaimResult, lang: str) -> str:
    """'k of n checks pass; worst error e' over the evidence's checks."""
    checks = result.evidence["checks"]
    errors = [c["max_error"] for c in checks if c.get("max_error") is not None]
    return say(TEXT["checks"], lang, passed=sum(bool(c["passed"]) for c in checks),
               n=len(checks), worst=f"{max(errors):.1e}" if errors else "—")


# --- one clause per claim ------------------------------------------------------------------------
# The clauses that quote what reference checks got: {field: the name its check starts with}.
GOT = {"C01": {"budget": "equal budget", "exact": "m0 = 4d", "llama": "Llama rounding"},
       "C02": {"plain": "plain FFN", "gated": "gated FFN"},
       "C03": {"branch": "one intermediate branch", "params": "T=1024→4096 leaves",
               "longer": "T=1024→4096 scales"},
       "C05": {"rms": "RMSNorm([1,3])", "ln": "LayerNorm([1,3])",
               "shifted": "shift to [3,5]: RMSNorm"},
       "C09": {"post": "post-norm, A=0: output", "gap": "diagonal A = diag"}}


def _got_clause(r: ClaimResult, lang: str) -> str:
    return _checks(r, lang) or say(TEXT[r.id], lang,
                                   **{k: _got(r, name) for k, name in GOT[r.id].items()})


# The clauses that quote the evidence as it is: {field: its keys' path in the evidence}.
QUOTED = {"C10": {"fp16": ("fp16_mean_square",), "err": ("max_error_vs_float64",)},
          "C11": {"mlp": ("mlp_input_rms_max_deviation_from_1",),
                  "out": ("layer_output_rms_max_deviation_from_1",)},
          "C15": {"example": ("page_example", "ffn_share"),
                  "real": ("meta_llama_3_8b", "ffn_share")},
          "C23": {"share": ("ffn_share",), "ffn": ("gflops", "ffn"),
                  "total": ("gflops", "total"), "page": ("page", "ffn_share")},
          "C32": {"T": ("T",), "ffn": ("speedup_ffn",), "attn": ("speedup_attention",),
                  "share": ("ffn_flop_share_page_model",)}}


def _quoted_clause(r: ClaimResult, lang: str) -> str:
    return say(TEXT[r.id], lang, **{k: reduce(getitem, path, r.evidence)
                                    for k, path in QUOTED[r.id].items()})


def _c04(r: ClaimResult, lang: str) -> str:
    hidden = _check(r, "SwiGLU hidden (page")
    return _checks(r, lang) or say(TEXT["C04"], lang, hidden=_got(r, "SwiGLU hidden (page"),
                                   err=hidden["max_error"])


def _c08(r: ClaimResult, lang: str) -> str:
    checks = r.evidence["checks"]
    return say(TEXT["C08"], lang, passed=sum(bool(c["passed"]) for c in checks),
               n=len(checks), zeros=_got(r, "all-zero input"),
               raised=_got(r, "constant input").split(":")[0])


def _c12(r: ClaimResult, lang: str) -> str:
    graded = [(p.estimate.value, p) for p in r.parts if p.estimate.value is not None]
    if not graded:
        return _tally(r, lang)
    _, top = max(graded, key=lambda vp: vp[0])
    init = top.name.rsplit(", ", 1)[-1].removesuffix(" init")
    return say(TEXT["C12"], lang, depth=r.evidence["depth"], est=_est(top), init=init)


def _c13(r: ClaimResult, lang: str) -> str:
    return say(TEXT["C13"], lang, est=_est(r.parts[0]))


def _c14(r: ClaimResult, lang: str) -> str:
    checks = r.evidence["checks"]
    return say(TEXT["C14"], lang, worst=max(c["max_error"] for c in checks), n=len(checks))


def _c16(r: ClaimResult, lang: str) -> str:
    swiglu, geglu, glu = (_part(r, a) for a in ("swiglu", "geglu", "glu"))
    if swiglu is None or geglu is None or glu is None:
        return _tally(r, lang)
    return say(TEXT["C16"], lang, swiglu=_est(swiglu, "%"), geglu=_value(geglu, "%"),
               glu=_value(glu, "%"))


def _c17(r: ClaimResult, lang: str) -> str:
    ev = r.evidence
    return say(TEXT["C17"], lang, low=_num(min(ev["silu_grad"])), high=_num(max(ev["silu_grad"])),
               z0=_num(min(ev["z"])), z1=_num(max(ev["z"])), relu=_num(max(ev["relu_grad"])),
               zero=_num(ev["silu_grad_zero_at"]))


def _c18(r: ClaimResult, lang: str) -> str:
    norm = _part(r, "the norm needs about 7% fewer FLOPs")
    step = _part(r, "a training step needs about 7% fewer FLOPs")
    quality = _part(r, "nearly the same quality")
    if norm is None or step is None or quality is None:
        return _tally(r, lang)
    return say(TEXT["C18"], lang, norm=_num(norm.estimate.value or 0.0),
               step=_num(step.estimate.value or 0.0), quality=_est(quality))


def _c19(r: ClaimResult, lang: str) -> str:
    pre = _part(r, "pre-norm trains without warmup")
    if pre is None:
        return _tally(r, lang)
    return say(TEXT["C19"], lang, est=_est(pre), tally=_tally(r, lang))


def _c20(r: ClaimResult, lang: str) -> str:
    gaps = r.evidence["float64_gap_by_shift"]
    return say(TEXT["C20"], lang, shift=max(int(s) for s in gaps), gap=max(gaps.values()))


def _c21(r: ClaimResult, lang: str) -> str:
    learned = _parts_at(r, r"learned absolute \(.+\) collapses at (\d+)×")
    alibi = _parts_at(r, r"ALiBi works at (\d+)×")
    rope = _parts_at(r, r"RoPE works at (\d+)×")
    if not (learned and alibi and rope):
        return _tally(r, lang)
    (lm, lp), (am, ap), (rm, rp) = learned[0], alibi[-1], rope[-1]
    return say(TEXT["C21"], lang, tally=_tally(r, lang), learned=_value(lp, "%"), lm=lm,
               alibi=_value(ap, "%"), am=am, rope=_value(rp, "%"), rm=rm)


def _c22(r: ClaimResult, lang: str) -> str:
    # The position suite's reads, where they are stored.
    reads = [int(m) for arm in r.evidence.get("scaled_arms", {}).values() for m in arm]
    if not reads:
        return say(TEXT["C22_none"], lang)
    return say(TEXT["C22"], lang, multiple=max(reads))


def _c24(r: ClaimResult, lang: str) -> str:
    ev = r.evidence
    score = ev["decode_score_flops"]
    return say(TEXT["C24"], lang, growth=score[-1] / score[0], first=ev["contexts"][0],
               last=ev["contexts"][-1], ffn=ev["decode_ffn_flops"][-1] / 1e9,
               intensity=ev["intensity"]["decode_flops_per_byte"])


def _c25(r: ClaimResult, lang: str) -> str:
    return say(TEXT["C25"], lang, **r.evidence["layer_activation_elements"])


def _c26(r: ClaimResult, lang: str) -> str:
    ev = r.evidence
    nan = [int(pos) for pos, is_nan in ev["fp16_cos_nan_at"].items() if is_nan]
    finite = say(TEXT["finite" if ev["extended_positions_finite"] else "not_finite"], lang)
    if not nan:
        return say(TEXT["C26_none"], lang, finite=finite)
    return say(TEXT["C26"], lang, finite=finite, nan=min(nan))


def _c27(r: ClaimResult, lang: str) -> str:
    ev = r.evidence
    long = [row["rope_theta"] for row in ev["zoo"] if row["context"] >= LONG_CONTEXT]
    return say(TEXT["C27"], lang, w10k=ev["longest_wavelength_theta_1e4"],
               w1m=ev["longest_wavelength_theta_1e6"], long=len(long),
               raised=sum(theta > 1e4 for theta in long))


def _c28(r: ClaimResult, lang: str) -> str:
    ev = r.evidence
    ratios = {float(k): v for k, v in ev["branch_elements_by_ratio"].items()}
    top, low = max(ratios), min(ratios)
    fields = {"top": _num(top), "low": _num(low), "growth": ratios[top] / ratios[low]}
    if not ev["at_8x"]:
        return say(TEXT["C28_none"], lang, **fields)
    return say(TEXT["C28"], lang, models=", ".join(ev["at_8x"]), **fields)


def _c29(r: ClaimResult, lang: str) -> str:
    tv = r.parts[0] if r.parts else None
    return say(TEXT["C29"], lang, bi=r.evidence["bidirectional_equivariance_error"],
               tv="—" if tv is None else _est(tv))


def _c30(r: ClaimResult, lang: str) -> str:
    yarn = _parts_at(r, r"RoPE \+ yarn after a \d+-step fine-tune works at (\d+)×")
    plain = _parts_at(r, r"warning \(no scaling\): plain RoPE drops clearly at (\d+)×")
    if not (yarn and plain):
        return _tally(r, lang)
    (ym, yp), (pm, pp) = yarn[-1], plain[-1]
    steps = yp.name.split("after a ", 1)[1].split("-step", 1)[0]
    return say(TEXT["C30"], lang, steps=steps, yarn=_est(yp, "%"), ym=ym,
               plain=_value(pp, "%"), pm=pm)


def _c31(r: ClaimResult, lang: str) -> str:
    names = ("RoPE adds no parameters", "RoPE's FLOPs are at most 1% of a prefill",
             "ALiBi's bias FLOPs are at most 1% of a prefill",
             "RoPE calls SDPA exactly as no positions does (same kernel and mask)")
    values = [p.estimate.value for n in names if (p := _part(r, n)) is not None]
    if None in values or len(values) < len(names):
        return _tally(r, lang)
    params, rope, alibi, sdpa = (v or 0.0 for v in values)
    return say(TEXT["C31"], lang, params=_num(params), rope=_num(rope), alibi=_num(alibi),
               sdpa=_num(sdpa))


def _c33(r: ClaimResult, lang: str) -> str:
    if len(r.parts) < 2:
        return _tally(r, lang)
    return say(TEXT["C33"], lang, row=_value(r.parts[0]).lstrip("+"),
               tensor=_est(r.parts[1], "%"))


def _c34(r: ClaimResult, lang: str) -> str:
    said = [p["verdict"] for p in r.evidence["pairings"]]
    return say(TEXT["C34"], lang, held=said.count("holds"),
               checkable=len(said) - said.count("untestable"), wrong=said.count("fails"),
               partly=said.count("partly"))


def _c35(r: ClaimResult, lang: str) -> str:
    ev = r.evidence
    models = ev["models"]
    worst = max(models, key=lambda m: abs(models[m]["difference_points"]))
    return say(TEXT["C35"], lang, tol=ev["tolerance_points"],
               held=sum(bool(m["holds"]) for m in models.values()), n=len(models), model=worst,
               formula=models[worst]["formula_share"], exact=models[worst]["exact_share"])


def _c36(r: ClaimResult, lang: str) -> str:
    jacobian = _part(r, "pre-norm block Jacobian ≈ I at initialisation (gradient ≈ 1)")
    if jacobian is None:
        return _tally(r, lang)
    return say(TEXT["C36"], lang, est=_est(jacobian), tally=_tally(r, lang))


def _c37(r: ClaimResult, lang: str) -> str:
    sliced = _part(r, "slicing an ordinary FFN to m/2 is worse than nested training there")
    full = _part(r, "nested training costs little at the full width m")
    if sliced is None or full is None:
        return _tally(r, lang)
    return say(TEXT["C37"], lang, sliced=_est(sliced, "%"), full=_value(full, "%"))


FOUND: dict[str, Callable[[ClaimResult, str], str]] = {
    **dict.fromkeys(GOT, _got_clause), **dict.fromkeys(QUOTED, _quoted_clause), "C04": _c04,
    "C06": _all_checks, "C07": _all_checks, "C08": _c08, "C12": _c12, "C13": _c13,
    "C14": _c14, "C16": _c16, "C17": _c17, "C18": _c18, "C19": _c19, "C20": _c20, "C21": _c21,
    "C22": _c22, "C24": _c24, "C25": _c25, "C26": _c26, "C27": _c27, "C28": _c28, "C29": _c29,
    "C30": _c30, "C31": _c31, "C33": _c33, "C34": _c34, "C35": _c35, "C36": _c36, "C37": _c37,
}
