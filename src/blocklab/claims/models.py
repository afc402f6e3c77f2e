"""Checks of page 001's model tables (C34) and its interview formula for the FFN share (C35).

Both read the bundled zoo's configs live. Where a model has no config (PaLM, GPT-3) or the
pairing names a family (GLM-130B), the primary source's statement is kept below with its
citation; one with neither config nor paper (Claude 4) is untestable here.
"""

from __future__ import annotations

from dataclasses import dataclass

from blocklab.claims.finding import Context, Finding, claim, untested_part
from blocklab.claims.lang import LANGS
from blocklab.claims.rules import Part, Rule
from blocklab.claims.text import WORDING, Template, say
from blocklab.config import ModelConfig

# --- C34: which models use what ----------------------------------------------------------------
# Zoo entries standing for each family the page names.
LLAMA_3 = ("meta-llama-3-8b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "llama-3.2-1b")
LLAMA_4 = ("llama-4-scout-17b-16e",)
QWEN_2 = ("qwen2.5-0.5b", "qwen2.5-7b")
QWEN_3 = ("qwen3-8b",)
LLAMA = ("llama-2-7b", *LLAMA_3, *LLAMA_4)
QWEN = (*QWEN_2, *QWEN_3)


@dataclass(frozen=True)
class PaperSource:
    """A primary source's statement about a model whose config was never released."""

    source: str  # the citation
    says: str  # the statement, quoted where it can be
    facts: dict[str, str]  # what it states, in `ModelConfig`'s words: {field: value}
    layout_of: str | None = None  # the zoo config of the layout the paper says it keeps


PAPERS = {
    "PaLM": PaperSource(
        source="Chowdhery et al. 2022, 'PaLM: Scaling Language Modeling with Pathways', "
               "arXiv:2204.02311, §2 Model Architecture",
        says="'SwiGLU Activation – We use SwiGLU activations (Swish(xW)·xV) for the MLP "
             "intermediate activations'; PaLM also uses RoPE, multi-query attention and "
             "parallel layers. No config.json or weights were released.",
        facts={"ffn": "swiglu", "position": "rope"}),
    "GPT-3": PaperSource(
        source="Brown et al. 2020, 'Language Models are Few-Shot Learners', "
               "arXiv:2005.14165, §2.1 Model and Architectures",
        says="'We use the same model and architecture as GPT-2, including the modified "
             "initialization, pre-normalization, and reversible tokenization described "
             "therein, with the exception that we use alternating dense and locally banded "
             "sparse attention patterns'. GPT-2 moved layer norm to the input of each "
             "sub-block (pre-norm). No config.json or weights were released.",
        facts={"placement": "pre"}, layout_of="gpt2"),
}
GLM_SOURCE = {
    "source": "Zeng et al. 2022, 'GLM-130B: An Open Bilingual Pre-trained Model', "
              "arXiv:2210.02414, §2.1 (GLM-130B uses rotary position embedding and GeGLU); "
              "Du et al. 2022, 'GLM: General Language Model Pretraining with Autoregressive Blank "
              "Infilling' (2D learned positions); THUDM modeling_chatglm.py (RotaryEmbedding)",
    "says": "GLM-130B: 'we adopt Rotary Positional Encoding (RoPE)'; the original GLM adds two "
            "learned position embeddings; ChatGLM2/3 rotate half of each head (RoPE).",
}
UNPUBLISHED = {
    "Claude 4": "Anthropic has released no config, weights or architecture paper for Claude 4: "
                "nothing public says how it places its norms, which FFN it uses or how it "
                "encodes positions.",
}
# A paper's statement that settles each feature: (ModelConfig field, value).
PAPER_FACT = {"swiglu": ("ffn", "swiglu"), "geglu": ("ffn", "geglu"),
              "rope": ("position", "rope"), "alibi": ("position", "alibi"),
              "pre_norm": ("placement", "pre")}


@dataclass(frozen=True)
class Pairing:
    """One pairing the page states: these models use `feature`."""

    text: str  # as the page puts it
    text_zh: str
    family: str
    models: tuple[str, ...]  # zoo models, read from their config.json
    feature: str  # a key of FEATURE_TEXT
    papers: tuple[str, ...] = ()  # models with no config, settled by a key of PAPERS
    unpublished: tuple[str, ...] = ()  # models with neither: a key of UNPUBLISHED
    if_wrong: tuple[str, str] = ("", "")  # what holds instead, when the pairing fails (en, zh)


# The pairings of page 001's tables (§ Transformer Block 内部结构 / 主流方案对比 / FFN 变体对比,
# and the placement table of § Pre-Norm vs Post-Norm: "主流（Llama, Qwen, GPT-3）").
PAGE_PAIRINGS = (
    Pairing("GPT-2/BERT use a plain FFN", "GPT-2/BERT 用普通 FFN", "GPT-2, BERT", ("gpt2", "bert-base-uncased"),
            "plain_ffn"),
    Pairing("GPT-2/BERT use absolute positions", "GPT-2/BERT 用绝对位置编码",
            "GPT-2, BERT",
            ("gpt2", "bert-base-uncased"), "learned_positions"),
    Pairing("PaLM uses GeGLU", "PaLM 用 GeGLU", "PaLM", (), "geglu", papers=("PaLM",),
            if_wrong=("PaLM uses SwiGLU, per its paper", "PaLM 论文写明用 SwiGLU")),
    Pairing("Llama and Qwen use SwiGLU", "Llama、Qwen 用 SwiGLU", "Llama, Qwen", (*LLAMA, *QWEN), "swiglu"),
    Pairing("MPT uses ALiBi", "MPT 用 ALiBi", "MPT", ("mpt-7b",), "alibi"),
    Pairing("GLM uses ALiBi", "GLM 用 ALiBi", "GLM", ("chatglm2-6b",), "alibi",
            if_wrong=("ChatGLM and GLM-130B use RoPE, not ALiBi",
                      "ChatGLM 与 GLM-130B 用 RoPE 而非 ALiBi")),
    Pairing("Llama, Qwen and DeepSeek use RoPE", "Llama、Qwen、DeepSeek 用 RoPE",
            "Llama, Qwen, DeepSeek",
            (*LLAMA, *QWEN, "deepseek-llm-7b-base"), "rope"),
    Pairing("Llama 3, Qwen2 and Qwen3 combine pre-norm, SwiGLU and RoPE",
            "Llama 3、Qwen2/3 组合 Pre-Norm、SwiGLU 与 RoPE", "Llama 3, Qwen2/3",
            (*LLAMA_3, *QWEN), "modern"),
    Pairing("Llama 4 combines pre-norm, SwiGLU and RoPE",
            "Llama 4 组合 Pre-Norm、SwiGLU 与 RoPE", "Llama 4", LLAMA_4, "modern"),
    Pairing("Claude 4 combines pre-norm, SwiGLU and RoPE",
            "Claude 4 组合 Pre-Norm、SwiGLU 与 RoPE", "Claude 4", (), "modern",
            unpublished=("Claude 4",)),
    Pairing("Llama, Qwen and GPT-3 use pre-norm", "Llama、Qwen、GPT-3 用 Pre-Norm",
            "Llama, Qwen, GPT-3", (*LLAMA, *QWEN), "pre_norm", papers=("GPT-3",)),
)

FEATURE_TEXT = {"plain_ffn": "a plain (ungated) FFN", "learned_positions": "absolute positions",
                "swiglu": "SwiGLU", "geglu": "GeGLU", "alibi": "ALiBi",
                "rope": "RoPE (in most layers at least)",
                "modern": "pre-norm, SwiGLU and RoPE in every layer",
                "pre_norm": "pre-norm placement"}
C34_DECIDES = ("confirmed when every named model's config.json (or, where none was released, "
               "its paper) shows the feature; refuted when none does; mixed when some do "
               "or a model has it in only some layers; untestable-here when no named model has "
               "a public config or paper")


def c34_rule(p: Pairing) -> Rule:
    """The rule of one pairing: the share of its models that have the feature (1: all)."""
    return Rule(metric=f"share of the {p.family} models named whose config.json (or, with none "
                       f"released, paper) shows {FEATURE_TEXT[p.feature]}; 1: all of them",
                smallest_effect=0.0, margin=0.0, min_seeds=1, claimed=1.0, decides=C34_DECIDES)


# Registered before any config is read: one rule per pairing.
C34_RULES = {p.text: c34_rule(p) for p in PAGE_PAIRINGS}
C34_COMBINES = ("each pairing is a part, a fact about named models that does not depend on "
                "scale: confirmed when every pairing holds in full; refuted when no pairing a "
                "public config or paper can check holds, even in part; otherwise mixed, each "
                "pairing's verdict listed (the wrong ones refuted). One with no public config or "
                "paper (Claude 4) is untestable here: listed, never dropped, and it keeps the "
                "claim from being confirmed")
# A pairing whose models split (some have the feature, or one has it in only some layers) is
# mixed: it names no condition the page states.
PART_VERDICT = {"holds": "confirmed", "fails": "refuted", "partly": "mixed",
                "untestable": "untestable-here"}


def _config(name: str) -> ModelConfig:
    from blocklab.budget import resolve_model

    return resolve_model(name).config


def _rope_layers(cfg: ModelConfig) -> int:
    """The layers that rotate q and k (the rest NoPE); 0 without RoPE."""
    return cfg.n_layers - cfg.n_nope_layers if cfg.position == "rope" else 0


def _model_verdict(feature: str, f: ModelConfig) -> str:
    """'holds', 'partly' or 'fails' for one zoo model's config against one feature."""
    rope_layers = _rope_layers(f)
    rope = ("holds" if rope_layers == f.n_layers else
            "partly" if rope_layers else "fails")
    has = {"plain_ffn": not f.gated, "learned_positions": f.position == "learned",
           "swiglu": f.ffn.startswith("swiglu"), "geglu": f.ffn.startswith("geglu"),
           "alibi": f.position == "alibi", "pre_norm": f.placement == "pre",
           "rope": rope != "fails"}  # RoPE in most layers still uses RoPE
    if feature in has:
        return "holds" if has[feature] else "fails"
    # "modern": pre-norm + SwiGLU + RoPE in every layer
    if f.placement != "pre" or f.ffn != "swiglu":
        return "fails"
    return rope


def _paper_verdict(feature: str, paper: str) -> str:
    """'holds' or 'fails' for what a paper states about one feature (a feature it does not
    state is a bug in PAGE_PAIRINGS: KeyError)."""
    field, value = PAPER_FACT[feature]
    return "holds" if PAPERS[paper].facts[field] == value else "fails"


def _combine(verdicts: list[str]) -> str:
    if all(v == "holds" for v in verdicts):
        return "holds"
    return "fails" if all(v == "fails" for v in verdicts) else "partly"


def _says(f: ModelConfig) -> str:
    ffn = f"ffn={f.ffn} ({'gated' if f.gated else 'plain'}{', MoE' if f.n_experts else ''})"
    pos = f"position={f.position}"
    if f.position == "rope" and _rope_layers(f) < f.n_layers:
        pos += f" in {_rope_layers(f)} of {f.n_layers} layers (the rest NoPE)"
    return f"{ffn}, {pos}, placement={f.placement}"


def _paper_says(paper: str) -> str:
    src = PAPERS[paper]
    if src.layout_of is None:
        return src.says
    return (f"{src.says} The zoo's {src.layout_of} config.json (the layout it keeps): "
            f"{_says(_config(src.layout_of))}.")


@dataclass(frozen=True)
class PairingRow:
    """One pairing's evidence row (the ledger's JSON holds its fields in this order)."""

    pairing: str  # as the page puts it
    models: list[str]  # the zoo models, then those settled by a paper or by neither
    says: dict[str, str]  # {model: what its config or source says}
    source: str
    verdict: str  # 'holds', 'fails', 'partly', or 'untestable' with no public config or paper
    per_model: dict[str, str]  # {model: 'holds', 'partly' or 'fails'}


def check_pairing(p: Pairing) -> PairingRow:
    """One pairing's evidence row, read from its models' configs and sources."""
    facts = {name: _config(name) for name in p.models}
    per_model = {name: _model_verdict(p.feature, f) for name, f in facts.items()}
    per_model.update({paper: _paper_verdict(p.feature, paper) for paper in p.papers})
    says = {name: _says(f) for name, f in facts.items()}
    says.update({paper: _paper_says(paper) for paper in p.papers})
    says.update({name: UNPUBLISHED[name] for name in p.unpublished})
    sources = (["config.json of each zoo model (blocklab budget NAME --json)"] if p.models
               else [])
    sources += [PAPERS[paper].source for paper in p.papers]
    if p.family == "GLM":
        sources.append(GLM_SOURCE["source"])
        says["GLM-130B"] = GLM_SOURCE["says"]
    models = [*p.models, *(f"{paper} (no config released)" for paper in p.papers),
              *(f"{name} (no config or paper released)" for name in p.unpublished)]
    verdict = _combine(list(per_model.values())) if per_model else "untestable"
    return PairingRow(pairing=p.text, models=models, says=says,
                      source="; ".join(sources) or "none public", verdict=verdict,
                      per_model=per_model)


TEXT: dict[str, Template] = WORDING["MODELS"]


def _why(p: Pairing, row: PairingRow, lang: str = "en") -> str:
    """Why a pairing is not 'holds', in a few words, in `lang`."""
    if row.verdict == "untestable":
        return say(TEXT["no_source"], lang)
    wrong = p.if_wrong[lang == "zh"]
    if row.verdict == "fails" and wrong:
        return wrong
    notes = []
    for name, v in row.per_model.items():
        if v == "partly" and name in p.models:
            f = _config(name)
            notes.append(say(TEXT["rope_layers"], lang, name=name, rope=_rope_layers(f),
                             layers=f.n_layers))
        elif v == "fails":
            notes.append(say(TEXT["not_model"], lang, name=name))
    return say(TEXT["sep"], lang).join(notes)


def pairing_part(p: Pairing, row: PairingRow) -> Part:
    """One pairing as a graded part: the share of its models that have the feature."""
    verdicts = list(row.per_model.values())
    share = sum(v == "holds" for v in verdicts) / len(verdicts) if verdicts else None
    reason = ("every named model's config or paper shows it" if row.verdict == "holds"
              else _why(p, row))
    return untested_part(p.text, C34_RULES[p.text], share, PART_VERDICT[row.verdict], reason,
                         len(verdicts))


def combine_c34(rows: list[PairingRow]) -> str:
    """C34_COMBINES over the pairings' verdicts."""
    if all(r.verdict == "holds" for r in rows):
        return "confirmed"
    checked = [r for r in rows if r.verdict != "untestable"]
    if not checked:
        return "untestable-here"
    if all(r.verdict == "fails" for r in checked):
        return "refuted"
    return "mixed"


@claim("C34", subsection=True)
def c34(ctx: Context) -> Finding:
    rows = [check_pairing(p) for p in PAGE_PAIRINGS]
    parts = [pairing_part(p, r) for p, r in zip(PAGE_PAIRINGS, rows, strict=True)]
    verdict = combine_c34(rows)
    by = {v: [(p, r) for p, r in zip(PAGE_PAIRINGS, rows, strict=True) if r.verdict == v]
          for v in ("holds", "fails", "partly", "untestable")}
    checkable = len(rows) - len(by["untestable"])

    def listed(verdict_key: str, lang: str, why: bool = True) -> str:
        items = [(p.text_zh if lang == "zh" else p.text)
                 + (say(TEXT["c34_why"], lang, why=_why(p, r, lang)) if why else "")
                 for p, r in by[verdict_key]]
        return say(TEXT["sep"], lang).join(items) or say(TEXT["none"], lang)

    en, zh = (say(TEXT["c34"], lang, held=len(by["holds"]), checkable=checkable,
                  wrong=len(by["fails"]), lead=say(TEXT[f"c34_lead_{verdict}"], lang),
                  holds=listed("holds", lang, why=False), fails=listed("fails", lang),
                  partly=listed("partly", lang), untestable=listed("untestable", lang))
              for lang in LANGS)
    report_table = {"columns": ["pairing", "models", "what the configs and sources say",
                                "source", "verdict"], "rows": [
        [r.pairing, ", ".join(r.models),
         "; ".join(f"{k}: {v}" for k, v in r.says.items()), r.source, r.verdict]
        for r in rows]}
    return Finding(verdict, en, zh, {"pairings": rows, "table": report_table},
                   "blocklab budget mpt-7b --json && blocklab budget chatglm2-6b --json && "
                   "blocklab budget llama-4-scout-17b-16e --json && blocklab budget gpt2 --json",
                   parts=parts, combines=C34_COMBINES)


# --- C35: the interview formula for the FFN share ------------------------------------------------
TOLERANCE_POINTS = 2.0  # |formula − exact| within 2 percentage points: the formula holds
PAGE_RANGE = (2 / 3, 3 / 4)  # what the page says the formula gives


def formula_share(d_model: int, d_ff: int) -> float:
    """The page's 3·d_ff / (3·d_ff + 4·d_model): a gated FFN against 4 square attention maps."""
    return 3 * d_ff / (3 * d_ff + 4 * d_model)


@dataclass(frozen=True)
class ShareSteps:
    """One zoo model's row of C35 (the ledger's JSON holds its fields in this order)."""

    d_model: int
    d_ff: int  # one expert's width for an MoE model
    ffn: str
    n_heads: int
    n_kv_heads: int
    head_dim: int
    moe: bool
    formula_share: float  # the page's 3·d_ff / (3·d_ff + 4·d_model), rounded to 4 places
    exact_share: float  # FFN over FFN + attention + norms of one layer, rounded to 4 places
    matrices_share: float  # the same with weights and biases but no norms
    difference_points: float  # exact − formula, in percentage points
    effects_points: dict[str, float]  # {step: its change of the share, in points}
    main_cause: str  # the step that moves the share most ("none": within 0.005 points)
    holds: bool  # |difference| ≤ TOLERANCE_POINTS
    in_page_range: bool  # exact share within PAGE_RANGE
    layer: dict[str, int]  # {"ffn", "attention", "norms": parameters of one layer}


def share_steps(name: str) -> ShareSteps:
    """Formula share, exact share, and the change each departure from the formula's FFN =
    3·d·d_ff and attention = 4·d² makes, applied in turn: the real FFN weights, the real
    attention weights, biases, norms (for MoE, d_ff is one expert's width)."""
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
    return ShareSteps(d_model=d, d_ff=m, ffn=cfg.ffn, n_heads=cfg.n_heads,
                      n_kv_heads=cfg.n_kv_heads, head_dim=cfg.head_dim, moe=cfg.n_experts > 0,
                      formula_share=round(shares["formula"], 4), exact_share=round(exact, 4),
                      matrices_share=round(shares["biases"], 4),
                      difference_points=round(diff, 2), effects_points=effects,
                      main_cause=cause if abs(diff) > 0.005 else "none",
                      holds=abs(diff) <= TOLERANCE_POINTS,
                      in_page_range=PAGE_RANGE[0] <= exact <= PAGE_RANGE[1],
                      layer={"ffn": ffn, "attention": attn, "norms": norms})


CAUSE_TEXT: dict[str, Template] = WORDING["C35_CAUSES"]


# The departures from the formula's own assumptions (`share_steps`): a model off the formula
# for one of these is outside the condition the formula states.
C35_ASSUMPTIONS = ("ffn_form", "attention_shape")


def c35_verdict(held: list[str], missed_causes: list[str]) -> str:
    """C35 from the models within tolerance (`held`) and the main cause of each one off it: a
    departure from the formula's assumptions is the condition the check names."""
    if not missed_causes:
        return "confirmed"
    if not held:
        return "refuted"
    return ("conditional" if all(c in C35_ASSUMPTIONS for c in missed_causes) else "mixed")


@claim("C35", subsection=True)
def c35(ctx: Context) -> Finding:
    from blocklab.budget import list_zoo

    table = {name: share_steps(name) for name in list_zoo()}
    held = sorted(n for n, r in table.items() if r.holds)
    missed = {n: r for n, r in table.items() if not r.holds}
    worst = max(table, key=lambda n: abs(table[n].difference_points))
    by_cause: dict[str, list[str]] = {}
    for n, r in missed.items():
        by_cause.setdefault(r.main_cause, []).append(n)
    verdict = c35_verdict(held, [r.main_cause for r in missed.values()])
    w = table[worst]
    small = max(abs(r.effects_points["biases"]) + abs(r.effects_points["norms"])
                for r in table.values())
    in_range = sum(r.in_page_range for r in table.values())

    def causes(lang: str) -> str:
        return say(TEXT["sep"], lang).join(
            say(TEXT["c35_cause"], lang, cause=say(CAUSE_TEXT[c], lang),
                models=say(TEXT["c35_models_sep"], lang).join(sorted(ns)))
            for c, ns in sorted(by_cause.items()))

    en, zh = (say(TEXT["c35"], lang, tolerance=TOLERANCE_POINTS, held=len(held), n=len(table),
                  missed=len(missed), causes=causes(lang), worst=worst, w=w, small=small,
                  in_range=in_range)
              + (say(TEXT["c35_condition"], lang) if verdict == "conditional" else "")
              for lang in LANGS)
    return Finding(verdict, en, zh,
                   {"tolerance_points": TOLERANCE_POINTS, "page_range": list(PAGE_RANGE),
                    "models": table,
                    "table": {"columns": ["model", "formula share", "exact share",
                                          "difference (points)", "main cause", "holds"],
                              "rows": [[name, f"{m.formula_share:.1%}",
                                        f"{m.exact_share:.1%}",
                                        f"{m.difference_points:+.2f}", m.main_cause,
                                        "yes" if m.holds else "no"]
                                       for name, m in table.items()],
                              "caption": f"within ±{TOLERANCE_POINTS:g} points: holds"}},
                   "blocklab budget NAME --json  (params.layer, for every NAME in "
                   "blocklab budget --list)")
