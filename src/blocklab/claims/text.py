"""The claims in our own words (English and Chinese), and where each one stands on its page.

`CLAIMS.md` beside this file lists the claims (C01–C37, each citing its `[§ section heading]` or
inline `(§ heading)`s); `claim_sources()` parses it, so the ledger cites them as written.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

PAGES = {"000": "000_4f34db7e0f1b54c8.txt", "001": "001_3354982bf5d64f93.txt"}

# id -> (English, Chinese): the claim restated, not quoted.
CLAIM_TEXT: dict[str, tuple[str, str]] = {
    "C01": ("A bias-free gated FFN has 3·d·m weights, a plain one 2·d·m; equal budget needs "
            "m = 2·m0/3, i.e. 8d/3 for m0 = 4d.",
            "无偏置门控 FFN 有 3·d·m 个权重，普通 FFN 为 2·d·m；等参数需 m = 2·m0/3，m0 = 4d 时为 8d/3。"),
    "C02": ("d=512, m0=2048: plain FFN 2,097,152 weights; gated at the same width 3,145,728.",
            "d=512、m0=2048：普通 FFN 2,097,152 个参数；同宽门控 3,145,728 个。"),
    "C03": ("B=2, T=1024, m=2048: one intermediate branch holds 4,194,304 elements; T changes "
            "activations, never parameters.",
            "B=2、T=1024、m=2048：一个中间分支 4,194,304 个元素；T 只改变激活，不改变参数。"),
    "C04": ("SwiGLU of x=[1,−1] with identity matrices: gate = up = [1,−1], hidden ≈ "
            "[0.731059, 0.268941], the second entry positive.",
            "x=[1,−1]、单位矩阵时 SwiGLU：gate = up = [1,−1]，hidden ≈ [0.731059, 0.268941]，第二项为正。"),
    "C05": ("RMSNorm([1,3]) = [1/√5, 3/√5], LayerNorm([1,3]) = [−1, 1] at ε=0; shifting to [3,5] "
            "leaves LayerNorm unchanged and changes RMSNorm.",
            "ε=0 时 RMSNorm([1,3]) = [1/√5, 3/√5]，LayerNorm([1,3]) = [−1, 1]；平移到 [3,5] 后 LayerNorm 不变、RMSNorm 改变。"),
    "C06": ("The RMSNorm Jacobian is I/s − x·xᵀ/(d·s³); its radial action J·x = ε·x/s³ vanishes "
            "only at ε=0.",
            "RMSNorm 雅可比为 I/s − x·xᵀ/(d·s³)；径向作用 J·x = ε·x/s³，仅 ε=0 时为零。"),
    "C07": ("N(a·x) = N(x) holds for a>0 only at ε=0; a<0 flips the sign; per-channel scaling "
            "breaks it.",
            "N(a·x) = N(x) 仅在 a>0 且 ε=0 时成立；a<0 翻转符号；逐通道缩放破坏不变性。"),
    "C08": ("An all-zero input with ε>0 gives zero output; a constant input at ε=0 makes the "
            "LayerNorm denominator zero and must be rejected.",
            "全零输入且 ε>0 时输出为零；ε=0 的常量输入使 LayerNorm 分母为零，须拒绝。"),
    "C09": ("Pre-norm Jacobian I + J_F·J_N, post-norm J_N·(I + J_F); with A=0 and x=[1,3] the "
            "outputs are [1,3] and ≈ [0.447214, 1.341641]; in general A·J_N ≠ J_N·A.",
            "Pre-Norm 雅可比 I + J_F·J_N，Post-Norm 为 J_N·(I + J_F)；A=0、x=[1,3] 时输出 [1,3] 与 ≈ [0.447214, 1.341641]；一般 A·J_N ≠ J_N·A。"),
    "C10": ("Llama's RMSNorm takes the mean square in float32 (the variable named `variance` "
            "holds it), casts back to the input dtype, then multiplies the gain.",
            "Llama 的 RMSNorm 在 float32 中求平方均值（名为 variance 的变量装的是平方均值），转回输入 dtype 后再乘增益。"),
    "C11": ("`post_attention_layernorm` in a Llama decoder layer is still a pre-norm for the MLP.",
            "Llama 解码层中的 post_attention_layernorm 仍是 MLP 的 Pre-Norm。"),
    "C12": ("A local identity term does not mean gradients never vanish or explode in a deep "
            "stack.",
            "局部单位项并不意味着深层网络梯度永不消失或爆炸。"),
    "C13": ("A real pre-norm vs post-norm training comparison (designed on the page, not run "
            "there).",
            "真实的 Pre-Norm 与 Post-Norm 训练对照（页面只设计、未运行）。"),
    "C14": ("Analytic Jacobians agree with finite differences (proposed on the page, not run "
            "there).",
            "解析雅可比与有限差分一致（页面提出但未运行）。"),
    "C15": ("The FFN holds 2/3–3/4 of a layer's parameters; the example (d=4096, d_ff=11008, "
            "32 heads, 8 KV heads) gives ≈42M attention + 135M FFN = 177M, FFN ≈ 76%, labelled "
            "Llama 3 8B.",
            "FFN 占每层参数的 2/3 到 3/4；示例（d=4096、d_ff=11008、32 头、8 KV 头）约 42M 注意力 + 135M FFN = 177M，FFN ≈ 76%，并标注为 Llama 3 8B。"),
    "C16": ("SwiGLU beats a ReLU FFN by about 1–2% at equal parameters; GeGLU about 1%, GLU "
            "about 0.5%.",
            "同参数量下 SwiGLU 比 ReLU FFN 好约 1–2%；GeGLU 约 1%，GLU 约 0.5%。"),
    "C17": ("SiLU does not cut the gradient on the negative half-axis as ReLU does.",
            "SiLU 不像 ReLU 那样在负半轴截断梯度。"),
    "C18": ("RMSNorm needs about 7% less compute than LayerNorm at nearly the same quality.",
            "RMSNorm 比 LayerNorm 计算量少约 7%，质量几乎相同。"),
    "C19": ("Pre-norm trains stably with little or no warmup; post-norm needs warmup and its "
            "gradients vanish with depth; post-norm is somewhat more expressive.",
            "Pre-Norm 几乎无需 warmup 即可稳定训练；Post-Norm 需要 warmup，梯度随深度消失；Post-Norm 表示能力略强。"),
    "C20": ("With RoPE the attention score depends on positions only through m − n.",
            "使用 RoPE 时注意力分数只通过 m − n 依赖位置。"),
    "C21": ("Extrapolation: learned absolute collapses at 2× the training length; sinusoidal "
            "works at 2× and degrades at 4×; ALiBi works at 2×, 4×, 8×; RoPE at 2×, 4×, and 8× "
            "with scaling.",
            "外推：可学习绝对位置在 2 倍训练长度崩溃；正弦在 2 倍可用、4 倍明显下降；ALiBi 在 2、4、8 倍可用；RoPE 在 2、4 倍可用，8 倍需 scaling。"),
    "C22": ("With YaRN / NTK-aware scaling, 4K training extrapolates to 128K with under 5% "
            "quality loss.",
            "借助 YaRN / NTK-aware scaling，4K 训练可外推到 128K，质量损失小于 5%。"),
    "C23": ("Prefill of 4096 tokens on Llama 3 8B: the FFN is about 99% of FLOPs (attention ≈ "
            "68.7 GFLOPs, FFN ≈ 5,897 GFLOPs).",
            "Llama 3 8B 预填充 4096 个 token：FFN 约占 99% 的 FLOPs（注意力 ≈ 68.7 GFLOPs，FFN ≈ 5,897 GFLOPs）。"),
    "C24": ("Decode: attention cost grows linearly with context, FFN cost per token is constant; "
            "decode is bound by weight loading, not compute.",
            "解码：注意力开销随上下文线性增长，FFN 每 token 开销恒定；解码受权重加载（访存）限制而非计算。"),
    "C25": ("Pre-norm needs no saved norm intermediates at inference; post-norm inference has "
            "larger intermediate activations and a lower batch ceiling.",
            "Pre-Norm 推理无需保存归一化中间结果；Post-Norm 推理中间激活更大、batch 上限更低。"),
    "C26": ("RoPE produces NaN when positions exceed the rotary table.",
            "位置超出旋转表范围时 RoPE 会产生 NaN。"),
    "C27": ("Raising the RoPE base from 10,000 towards 1,000,000 suits long contexts.",
            "长上下文场景可把 RoPE 基频从 10,000 提高到 1,000,000。"),
    "C28": ("Some models use d_ff up to 8× d_model, which shows up as unexpected FFN memory.",
            "有些模型的 d_ff 高达 d_model 的 8 倍，表现为 FFN 显存异常。"),
    "C29": ("Without position information a model cannot tell \"A B C\" from \"C B A\": the "
            "scores of (i, j) and (j, i) are computed the same way.",
            "没有位置信息，模型无法区分 \"A B C\" 与 \"C B A\"：(i, j) 与 (j, i) 的注意力分数计算方式相同。"),
    "C30": ("With NTK-aware or YaRN scaling RoPE extrapolates to 8–16× its training length; "
            "and, as a warning with no qualifier, RoPE's quality drops clearly past 8× its "
            "training length (read both without and with scaling).",
            "借助 NTK-aware 或 YaRN scaling，RoPE 可外推到训练长度的 8–16 倍；另有一条不带限定的警告："
            "RoPE 外推超过训练长度 8 倍时质量会明显下降（分别按不做与做 scaling 两种读法检验）。"),
    "C31": ("RoPE adds no parameters, costs little compute and keeps FlashAttention usable, "
            "because it rotates q and k before QKᵀ; ALiBi and absolute positions cost very "
            "little too.",
            "RoPE 不增加参数、计算开销低，且因旋转在 QKᵀ 之前完成而兼容 FlashAttention；ALiBi 与绝对位置的开销也极低。"),
    "C32": ("Quantizing the FFN gives the largest prefill (first-token latency) speed-up, "
            "because the FFN holds ~99% of prefill FLOPs.",
            "量化 FFN 对预填充（首 token 延迟）加速最明显，因为 FFN 约占预填充 FLOPs 的 99%。"),
    "C33": ("SwiGLU's three matrices must be quantized separately; they cannot simply be merged.",
            "SwiGLU 的三个矩阵在权重量化时须分别处理，不能简单合并。"),
    "C34": ("GPT-2/BERT use a plain FFN and absolute positions; PaLM GeGLU; Llama and Qwen "
            "SwiGLU; MPT and GLM ALiBi; Llama, Qwen and DeepSeek RoPE; Llama 3/4, Qwen2/3 and "
            "Claude 4 combine pre-norm, SwiGLU and RoPE; Llama, Qwen and GPT-3 use pre-norm.",
            "GPT-2/BERT 用普通 FFN 与绝对位置；PaLM 用 GeGLU；Llama、Qwen 用 SwiGLU；MPT、GLM 用 ALiBi；"
            "Llama、Qwen、DeepSeek 用 RoPE；Llama 3/4、Qwen2/3 与 Claude 4 组合 Pre-Norm、SwiGLU 与 "
            "RoPE；Llama、Qwen、GPT-3 用 Pre-Norm。"),
    "C35": ("The FFN's share of a layer is ≈ 3·d_ff / (3·d_ff + 4·d_model), between 2/3 and 3/4.",
            "FFN 占每层参数 ≈ 3·d_ff / (3·d_ff + 4·d_model)，在 2/3 到 3/4 之间。"),
    "C36": ("Pre-norm lets deep stacks (50+ layers) train stably, because the residual path "
            "carries the gradient straight back (gradient ≈ 1).",
            "Pre-Norm 让深层网络（50 层以上）稳定训练，因为残差路径把梯度直接传回（梯度 ≈ 1）。"),
    "C37": ("The FFN's intermediate width can be a control point of conditional computation "
            "(MoSE: nested widths inside experts), but multi-width training is part of that "
            "method: slicing an ordinary trained FFN to a narrower width does not give what "
            "nested-width training gives at that width.",
            "FFN 的中间宽度可以成为条件计算的控制点（MoSE：专家内部的嵌套宽度），但多宽度训练是该方法的一部分："
            "把普通训练的 FFN 直接切片到更窄的宽度，得不到嵌套宽度训练在该宽度上的效果。"),
}

# One sentence of a check's prose, (English, Chinese), with `str.format` named fields: each
# check module keeps its sentences in a `TEXT` table, the two languages side by side.
Template = tuple[str, str]

# A verdict is one of VERDICTS, each with one meaning (`VERDICT_MEANING`). `refuted` is for what
# an exact check decides (arithmetic, counts, identities, configs), where no scale enters; an
# experiment says `contradicted-at-this-scale` or `not-reproduced-at-this-scale` instead
# (`blocklab.claims.rules`), `inconclusive` when its seeds decide neither way (with what would
# decide it), and `run` reports an experiment the page designed without a claim.
# `untestable-here` is for a claim this machine cannot test at all. Of a claim graded in parts,
# `conditional` says it holds under a condition the page states or the check names, `mixed`
# that its parts split with no such condition; the claim's stated combination rule (its
# `Finding.combines`) says which parts decide it.
VERDICTS = ("confirmed", "refuted", "contradicted-at-this-scale", "not-reproduced-at-this-scale",
            "inconclusive", "conditional", "mixed", "run", "untestable-here", "missing-results")
# A check that raises gets the state "error": never a verdict, and the ledger's exit code is 1.
ERROR = "error"
# The words a reader sees for each verdict (the ids stay in the JSON).
VERDICT_EN = {"confirmed": "confirmed", "refuted": "refuted", "conditional": "conditional",
              "mixed": "mixed", "contradicted-at-this-scale": "contradicted at this scale",
              "not-reproduced-at-this-scale": "not reproduced at this scale",
              "inconclusive": "inconclusive", "run": "run",
              "untestable-here": "untestable here", "missing-results": "missing results",
              ERROR: "error"}
VERDICT_ZH = {"confirmed": "成立", "refuted": "不成立", "conditional": "有条件成立",
              "mixed": "部分成立",
              "contradicted-at-this-scale": "此规模下与之相反",
              "not-reproduced-at-this-scale": "此规模下未复现", "inconclusive": "尚无定论",
              "run": "已运行",
              "untestable-here": "此处无法检验", "missing-results": "缺少实验结果",
              ERROR: "检查出错"}
# Each verdict's one definition, (English, Chinese), for the docs and the report.
VERDICT_MEANING: dict[str, Template] = {
    "confirmed": ("The claim holds as the page states it: every part that decides it holds, "
                  "shown by an exact check or by an interval wholly beyond the claimed size.",
                  "论断如页面所述成立：决定它的每一部分都成立，由精确检验或整体越过所称大小的置信区间证明。"),
    "refuted": ("An exact check (arithmetic, a count, an identity, a published config or paper) "
                "shows the claim false, and no part that decides it holds; no scale enters, so "
                "no larger run could change it.",
                "精确检验（算术、计数、恒等式、公开的配置或论文）表明论断不成立，且决定它的部分无一成立；"
                "与规模无关，更大的实验也改变不了。"),
    "contradicted-at-this-scale": (
        "An experiment here shows the opposite of the claim beyond its smallest effect, with "
        "fair arms, and a run twice as long agrees; a larger model may still differ.",
        "此处的实验在公平对比下显示与论断相反、且超过最小效应，训练两倍长的运行也一致；更大的模型仍可能不同。"),
    "not-reproduced-at-this-scale": (
        "An experiment here did not show what decides the claim: the effect is absent or "
        "smaller than claimed at the scale the verdict names; a larger model may still show it.",
        "此处的实验没有显示出决定论断的部分：在判定所注明的规模下，效应不存在或小于所称；更大的模型仍可能显示出来。"),
    "inconclusive": ("The seeds spent decide neither way, or deciding a claim's open parts could "
                     "change its verdict; an open part states the effect its seeds could detect "
                     "and the seeds that would decide it.",
                     "已用的种子两方面都无法判定，或论断中未定部分的判定可能改变其结论；未定部分注明其种子能检测到的效应，"
                     "以及判定所需的种子数。"),
    "conditional": ("The claim holds under a condition the page states or that the check names "
                    "(e.g. only in float16, only for bidirectional attention), and not without it.",
                    "论断在页面所述或检查所指明的条件下成立（如只在 float16 下、只对双向注意力），离开该条件则不成立。"),
    "mixed": ("The claim's parts do not share one verdict: some hold and others do not hold, or "
              "cannot be tested here; each part's verdict is listed.",
              "论断的各部分判定不一：有的成立，有的不成立或此处无法检验；逐一列出每部分的判定。"),
    "run": ("An experiment the page designed without stating a result: it was run and its "
            "finding is reported, not graded.",
            "页面只设计、未给出结果的实验：已运行，报告其发现，不作判定。"),
    "untestable-here": ("This machine cannot test the claim (or part) at all: no model, data or "
                        "hardware here can; the reason is given.",
                        "本机完全无法检验此论断（或部分）：这里没有相应的模型、数据或硬件；注明原因。"),
    "missing-results": ("The results the check reads are not stored; the command that makes "
                        "them is named.",
                        "检查所读的实验结果尚未保存；注明生成它们的命令。"),
    ERROR: ("The check failed to run: a state, never a verdict (the ledger exits 1).",
            "检查运行失败：这是一种状态，不是判定（结论账本以退出码 1 结束）。"),
}


def say(template: Template, lang: str, /, **fields: object) -> str:
    """`template` in `lang` ("en" or "zh") with its named fields filled (`str.format`)."""
    en, zh = template
    return (zh if lang == "zh" else en).format(**fields)


def both(template: Template, /, **fields: object) -> tuple[str, str]:
    """`template` in English and in Chinese, the same fields filled."""
    return template[0].format(**fields), template[1].format(**fields)


def reader_word(verdict: str, lang: str) -> str:
    """A verdict as a reader reads it (a table, a chip, a line): `VERDICT_EN`'s words or
    `VERDICT_ZH`'s."""
    return (VERDICT_ZH if lang == "zh" else VERDICT_EN)[verdict]


def verdict_word(verdict: str, lang: str) -> str:
    """A verdict as a sentence in `lang` names it (its id in English)."""
    return VERDICT_ZH[verdict] if lang == "zh" else verdict


_ITEM = re.compile(r"^- (C\d\d) (.*)$")
# `[§ heading]`, or inline `(§ heading)` / `(§ heading: "quoted words")` where a claim cites
# several places on its page with words between them.
_SECTION = re.compile(r"\s*\[§ (.+?)\]\s*")
_INLINE_SECTION = re.compile(r"\(§ (.+?)(?:: \"[^\"]*\")?\)")


@cache
def claims_markdown() -> str:
    return resources.files("blocklab.claims").joinpath("CLAIMS.md").read_text(encoding="utf-8")


def parse_claims(text: str) -> dict[str, dict[str, str]]:
    """{id: {"page", "section", "text"}} from CLAIMS.md: each list item `- Cxx …` (up to a
    blank line, heading or the next item) under its `## Page …` heading; its section the
    `[§ heading]` it holds, else its inline `(§ heading)`s joined by " / "; its text the item
    less the `[§ …]`."""
    out: dict[str, dict[str, str]] = {}
    page = None
    items: list[tuple[str, list[str]]] = []  # (page, lines) of each claim item, in order
    current: list[str] | None = None  # the lines of the item still open
    for raw in text.splitlines():
        line = raw.strip()
        header = re.match(r"^## Page (\d{3})", line)
        if header:
            page = PAGES[header.group(1)]
        if line.startswith("- C") and page:
            current = [line]
            items.append((page, current))
        elif current is not None and line and not line.startswith(("#", "- ")):
            current.append(line)
        else:
            current = None
    for item_page, lines in items:
        match = _ITEM.match(" ".join(lines))
        if not match:
            continue
        body = match.group(2)
        sections = _SECTION.findall(body) or [
            s.strip() for s in _INLINE_SECTION.findall(body)]
        if sections:
            out[match.group(1)] = {"page": item_page, "section": " / ".join(sections),
                                   "text": _SECTION.sub(" ", body).strip()}
    return out


def claim_sources() -> dict[str, dict[str, str]]:
    return parse_claims(claims_markdown())
