"""Checks of page 001's model tables (C34) and its interview formula for the FFN share (C35).

Both read the bundled zoo (`blocklab.budget`) live: what each real config.json says, and the
exact per-layer parameter counts. Where a model has no config file (PaLM) or the pairing names a
family rather than a checkpoint (GLM-130B), the primary source's statement is kept as data below
with its citation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from blocklab.claims.ledger import Context, Finding, claim

# --- C34: which models use what ----------------------------------------------------------------
# Zoo entries standing for each family the page names.
LLAMA_3 = ("meta-llama-3-8b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "llama-3.2-1b")
LLAMA_4 = ("llama-4-scout-17b-16e",)
QWEN_2 = ("qwen2.5-0.5b", "qwen2.5-7b")
QWEN_3 = ("qwen3-8b",)
LLAMA = ("llama-2-7b", *LLAMA_3, *LLAMA_4)
QWEN = (*QWEN_2, *QWEN_3)

# Statements of primary sources, for pairings no bundled config can settle.
PALM_SOURCE = {
    "source": "Chowdhery et al. 2022, 'PaLM: Scaling Language Modeling with Pathways', "
              "arXiv:2204.02311, §2 Model Architecture",
    "says": "'SwiGLU Activation – We use SwiGLU activations (Swish(xW)·xV) for the MLP "
            "intermediate activations'; PaLM also uses RoPE, multi-query attention and parallel "
            "layers. No config.json or weights were released.",
    "ffn": "swiglu",
}
GLM_SOURCE = {
    "source": "Zeng et al. 2022, 'GLM-130B: An Open Bilingual Pre-trained Model', "
              "arXiv:2210.02414, §2.1 (GLM-130B uses rotary position embedding and GeGLU); "
              "Du et al. 2022, 'GLM: General Language Model Pretraining with Autoregressive Blank "
              "Infilling' (2D learned positions); THUDM modeling_chatglm.py (RotaryEmbedding)",
    "says": "GLM-130B: 'we adopt Rotary Positional Encoding (RoPE)'; the original GLM adds two "
            "learned position embeddings; ChatGLM2/3 rotate half of each head (RoPE).",
    "position": "rope",
}


@dataclass(frozen=True)
class Pairing:
    """One pairing the page states: these models use `feature`."""

    text: str  # as the page puts it
    text_zh: str
    family: str
    models: tuple[str, ...]
    feature: str  # "plain_ffn", "learned_positions", "swiglu", "geglu", "alibi", "rope", "modern"


# The pairings of page 001's tables (§ Transformer Block 内部结构 / 主流方案对比 / FFN 变体对比).
PAGE_PAIRINGS = (
    Pairing("GPT-2/BERT use a plain FFN", "GPT-2/BERT 用普通 FFN", "GPT-2, BERT", ("gpt2", "bert-base-uncased"),
            "plain_ffn"),
    Pairing("GPT-2/BERT use absolute positions", "GPT-2/BERT 用绝对位置编码",
            "GPT-2, BERT",
            ("gpt2", "bert-base-uncased"), "learned_positions"),
    Pairing("PaLM uses GeGLU", "PaLM 用 GeGLU", "PaLM", (), "geglu"),
    Pairing("Llama and Qwen use SwiGLU", "Llama、Qwen 用 SwiGLU", "Llama, Qwen", (*LLAMA, *QWEN), "swiglu"),
    Pairing("MPT uses ALiBi", "MPT 用 ALiBi", "MPT", ("mpt-7b",), "alibi"),
    Pairing("GLM uses ALiBi", "GLM 用 ALiBi", "GLM", ("chatglm2-6b",), "alibi"),
    Pairing("Llama, Qwen and DeepSeek use RoPE", "Llama、Qwen、DeepSeek 用 RoPE",
            "Llama, Qwen, DeepSeek",
            (*LLAMA, *QWEN, "deepseek-llm-7b-base"), "rope"),
    Pairing("Llama 3, Qwen2 and Qwen3 combine pre-norm, SwiGLU and RoPE",
            "Llama 3、Qwen2/3 组合 Pre-Norm、SwiGLU 与 RoPE", "Llama 3, Qwen2/3",
            (*LLAMA_3, *QWEN), "modern"),
    Pairing("Llama 4 combines pre-norm, SwiGLU and RoPE",
            "Llama 4 组合 Pre-Norm、SwiGLU 与 RoPE", "Llama 4", LLAMA_4, "modern"),
)


def _facts(name: str) -> dict[str, Any]:
    """What a zoo model's config says about its FFN, positions and norm placement."""
    from blocklab.budget import resolve_model

    cfg = resolve_model(name).config
    rope_layers = cfg.n_layers - cfg.n_nope_layers if cfg.position == "rope" else 0
    return {"ffn": cfg.ffn, "gated": cfg.gated, "position": cfg.position,
            "placement": cfg.placement, "rope_layers": rope_layers, "n_layers": cfg.n_layers,
            "moe": cfg.n_experts > 0}


def _model_verdict(feature: str, f: dict[str, Any]) -> str:
    """'holds', 'partly' or 'fails' for one model's facts against one feature."""
    rope = ("holds" if f["rope_layers"] == f["n_layers"] else
            "partly" if f["rope_layers"] else "fails")
    if feature == "plain_ffn":
        return "fails" if f["gated"] else "holds"
    if feature == "learned_positions":
        return "holds" if f["position"] == "learned" else "fails"
    if feature in ("swiglu", "geglu"):
        return "holds" if f["ffn"].startswith(feature) else "fails"
    if feature == "alibi":
        return "holds" if f["position"] == "alibi" else "fails"
    if feature == "rope":
        return "holds" if rope != "fails" else "fails"  # RoPE in most layers still uses RoPE
    # "modern": pre-norm + SwiGLU + RoPE in every layer
    if f["placement"] != "pre" or f["ffn"] != "swiglu":
        return "fails"
    return rope


def _combine(verdicts: list[str]) -> str:
    if all(v == "holds" for v in verdicts):
        return "holds"
    return "fails" if all(v == "fails" for v in verdicts) else "partly"


def _says(f: dict[str, Any]) -> str:
    ffn = f"ffn={f['ffn']} ({'gated' if f['gated'] else 'plain'}{', MoE' if f['moe'] else ''})"
    pos = f"position={f['position']}"
    if f["position"] == "rope" and f["rope_layers"] < f["n_layers"]:
        pos += f" in {f['rope_layers']} of {f['n_layers']} layers (the rest NoPE)"
    return f"{ffn}, {pos}, placement={f['placement']}"


def check_pairing(p: Pairing) -> dict[str, Any]:
    """One evidence row: the pairing, its models, what their configs (or the source) say."""
    if p.family == "PaLM":
        verdict = "holds" if PALM_SOURCE["ffn"] == p.feature else "fails"
        return {"pairing": p.text, "models": ["PaLM (no config released)"],
                "says": PALM_SOURCE["says"], "source": PALM_SOURCE["source"],
                "verdict": verdict}
    facts = {name: _facts(name) for name in p.models}
    per_model = {name: _model_verdict(p.feature, f) for name, f in facts.items()}
    row = {"pairing": p.text, "models": list(p.models),
           "says": {name: _says(f) for name, f in facts.items()},
           "source": "config.json of each zoo model (blocklab budget NAME --json)",
           "verdict": _combine(list(per_model.values())), "per_model": per_model}
    if p.family == "GLM":
        row["source"] += "; " + GLM_SOURCE["source"]
        row["says"]["GLM-130B"] = GLM_SOURCE["says"]
    return row


@claim("C34")
def c34(ctx: Context) -> Finding:
    rows = [check_pairing(p) for p in PAGE_PAIRINGS]
    zh_of = {p.text: p.text_zh for p in PAGE_PAIRINGS}
    wrong = [r["pairing"] for r in rows if r["verdict"] == "fails"]
    partial = [r["pairing"] for r in rows if r["verdict"] == "partly"]
    wrong_zh, partial_zh = [zh_of[t] for t in wrong], [zh_of[t] for t in partial]
    held = len(rows) - len(wrong) - len(partial)
    scout = _facts(LLAMA_4[0])
    nope = f"{scout['n_layers'] - scout['rope_layers']} of {scout['n_layers']}"
    nope_zh = f"{scout['n_layers'] - scout['rope_layers']}/{scout['n_layers']}"
    verdict = "confirmed" if held == len(rows) else "refuted" if not held else "conditional"
    en = (f"{held} of {len(rows)} pairings hold in the configs and sources. Wrong: "
          f"{'; '.join(wrong) or 'none'} (PaLM uses SwiGLU, per its paper; ChatGLM and GLM-130B "
          f"use RoPE, not ALiBi). Only partly: {'; '.join(partial) or 'none'} (Llama 4 Scout skips "
          f"RoPE in every 4th layer, {nope}). GPT-2's FFN is plain but GELU, not the ReLU the "
          "variant table shows.")
    zh = (f"{len(rows)} 组对应中有 {held} 组与配置和原始文献一致。错误：{'；'.join(wrong_zh) or '无'}"
          f"（PaLM 论文写明用 SwiGLU；ChatGLM 与 GLM-130B 用 RoPE 而非 ALiBi）。部分成立："
          f"{'；'.join(partial_zh) or '无'}（Llama 4 Scout 每 4 层有 1 层不用 RoPE，共 {nope_zh} 层）。"
          "GPT-2 的 FFN 是普通 FFN，但激活为 GELU，并非变体表中的 ReLU。")
    shown = {"pairing": "pairing", "models": "models", "says": "what the configs and sources say",
             "source": "source", "verdict": "verdict"}
    report_table = {"columns": list(shown.values()), "rows": [
        [r["pairing"], ", ".join(r["models"]),
         r["says"] if isinstance(r["says"], str)
         else "; ".join(f"{k}: {v}" for k, v in r["says"].items()),
         r["source"], r["verdict"]] for r in rows]}
    return Finding(verdict, en, zh, {"pairings": rows, "table": report_table},
                   "blocklab budget mpt-7b --json && blocklab budget chatglm2-6b --json && "
                   "blocklab budget llama-4-scout-17b-16e --json")


# --- C35: the interview formula for the FFN share ------------------------------------------------
TOLERANCE_POINTS = 2.0  # |formula − exact| within 2 percentage points: the formula holds
PAGE_RANGE = (2 / 3, 3 / 4)  # what the page says the formula gives


def formula_share(d_model: int, d_ff: int) -> float:
    """The page's 3·d_ff / (3·d_ff + 4·d_model): a gated FFN against 4 square attention maps."""
    return 3 * d_ff / (3 * d_ff + 4 * d_model)


def share_steps(name: str) -> dict[str, Any]:
    """Formula share, exact share, and the change each departure from the formula makes.

    The formula assumes FFN = 3·d·d_ff and attention = 4·d². Applied one at a time, in this
    order: the real FFN weights (plain: 2 matrices; MoE: every expert and the router), the real
    attention weights (grouped-query K/V, head_dim·n_heads ≠ d_model), biases, norms. The last
    step gives the exact share of one layer's parameters. For MoE models d_ff is one expert's
    width (the FFN width of every layer).
    """
    from blocklab.budget import count_params, resolve_model
    from blocklab.budget.params import ATTENTION_PARTS, FFN_PARTS, LAYER_NORM_PARTS

    cfg = resolve_model(name).config
    d, m = cfg.d_model, cfg.moe_d_ff if cfg.n_experts else cfg.d_ff
    layer = count_params(cfg).layer
    bare = count_params(cfg.replace(attn_bias=False, attn_out_bias=False, ffn_bias=False)).layer
    ffn, attn = sum(layer[p] for p in FFN_PARTS), sum(layer[p] for p in ATTENTION_PARTS)
    ffn_w, attn_w = sum(bare[p] for p in FFN_PARTS), sum(bare[p] for p in ATTENTION_PARTS)
    norms = sum(layer[p] for p in LAYER_NORM_PARTS)
    shares = {
        "formula": formula_share(d, m),
        "ffn_form": ffn_w / (ffn_w + 4 * d * d),
        "attention_shape": ffn_w / (ffn_w + attn_w),
        "biases": ffn / (ffn + attn),
        "norms": ffn / (ffn + attn + norms),
    }
    names = list(shares)
    effects = {k: round(100 * (shares[k] - shares[prev]), 2) for prev, k in
               zip(names, names[1:], strict=False)}
    cause = max(effects, key=lambda k: abs(effects[k]))
    exact = shares["norms"]
    diff = 100 * (exact - shares["formula"])
    return {"d_model": d, "d_ff": m, "ffn": cfg.ffn, "n_heads": cfg.n_heads,
            "n_kv_heads": cfg.n_kv_heads, "head_dim": cfg.head_dim, "moe": cfg.n_experts > 0,
            "formula_share": round(shares["formula"], 4), "exact_share": round(exact, 4),
            "matrices_share": round(shares["biases"], 4), "difference_points": round(diff, 2),
            "effects_points": effects,
            "main_cause": cause if abs(diff) > 0.005 else "none",
            "holds": abs(diff) <= TOLERANCE_POINTS,
            "in_page_range": PAGE_RANGE[0] <= exact <= PAGE_RANGE[1],
            "layer": {"ffn": ffn, "attention": attn, "norms": norms}}


CAUSE_TEXT = {"ffn_form": ("the FFN is not 3·d·d_ff (plain: 2 matrices; MoE: all experts)",
                           "FFN 不是 3·d·d_ff（普通 FFN 2 个矩阵；MoE 含全部专家）"),
              "attention_shape": ("attention is not 4·d² (grouped-query K/V or head_dim·n_heads ≠ d)",
                                  "注意力不是 4·d²（GQA 的 K/V 变窄，或 head_dim·n_heads ≠ d）"),
              "biases": ("biases", "偏置"), "norms": ("norm gains", "归一化参数"),
              "none": ("nothing", "无")}


@claim("C35")
def c35(ctx: Context) -> Finding:
    from blocklab.budget import list_zoo

    table = {name: share_steps(name) for name in list_zoo()}
    held = sorted(n for n, r in table.items() if r["holds"])
    missed = {n: r for n, r in table.items() if not r["holds"]}
    worst = max(table, key=lambda n: abs(table[n]["difference_points"]))
    by_cause: dict[str, list[str]] = {}
    for n, r in missed.items():
        by_cause.setdefault(r["main_cause"], []).append(n)
    verdict = "confirmed" if not missed else "refuted" if not held else "conditional"
    causes_en = "; ".join(f"{CAUSE_TEXT[c][0]}: {', '.join(sorted(ns))}"
                          for c, ns in sorted(by_cause.items()))
    causes_zh = "；".join(f"{CAUSE_TEXT[c][1]}：{'、'.join(sorted(ns))}"
                          for c, ns in sorted(by_cause.items()))
    w = table[worst]
    small = max(abs(r["effects_points"]["biases"]) + abs(r["effects_points"]["norms"])
                for r in table.values())
    in_range = sum(r["in_page_range"] for r in table.values())
    en = (f"Within {TOLERANCE_POINTS:g} percentage points of the exact per-layer share for "
          f"{len(held)} of {len(table)} zoo models. Off by more for {len(missed)}, mainly because "
          f"{causes_en}. Worst: {worst}, formula {w['formula_share']:.1%} vs exact "
          f"{w['exact_share']:.1%}. Biases and norms together move it by at most {small:.2f} points. "
          f"{in_range} of {len(table)} exact shares lie in the stated 2/3–3/4.")
    zh = (f"{len(table)} 个动物园模型中有 {len(held)} 个的公式值与每层精确占比相差在 "
          f"{TOLERANCE_POINTS:g} 个百分点以内。其余 {len(missed)} 个偏差更大，主要原因：{causes_zh}。"
          f"最大偏差：{worst}，公式 {w['formula_share']:.1%}，精确 {w['exact_share']:.1%}。"
          f"偏置与归一化参数合计最多改变 {small:.2f} 个百分点。精确占比落在 2/3–3/4 内的有 "
          f"{in_range}/{len(table)} 个。")
    return Finding(verdict, en, zh,
                   {"tolerance_points": TOLERANCE_POINTS, "page_range": list(PAGE_RANGE),
                    "models": table,
                    "table": {"columns": ["model", "formula share", "exact share",
                                          "difference (points)", "main cause", "holds"],
                              "rows": [[name, f"{m['formula_share']:.1%}",
                                        f"{m['exact_share']:.1%}",
                                        f"{m['difference_points']:+.2f}", m["main_cause"],
                                        "yes" if m["holds"] else "no"]
                                       for name, m in table.items()],
                              "caption": f"within ±{TOLERANCE_POINTS:g} points: holds"}},
                   "blocklab budget NAME --json  (params.layer, for every NAME in "
                   "blocklab budget --list)")
