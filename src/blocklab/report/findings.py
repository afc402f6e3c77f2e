"""What a reader sees first: what the pages got right and wrong, in at most eight plain
sentences with their numbers, and what to use, each linked to its evidence in the ledger.

    found = findings(run_claims(None, ctx), "en")
    found.sentences[1].text    # "Llama-3-8B's FFN does 70.1% of a prefill's FLOPs, not ..."
    found.use[0]               # UseItem("FFN share of a Llama-3-8B prefill's FLOPs", "70.1%", ...)

Every number is read from the ledger's results; a sentence whose claim has no usable result is
left out, one whose deciding part is undecided says so. No test names or levels.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from blocklab.claims.catalogue import SCALE_DEPENDENT, SUITE_OF
from blocklab.claims.ledger import ClaimResult
from blocklab.claims.models import PAGE_PAIRINGS
from blocklab.claims.registry import (
    C16_ARMS,
    C18_FLOPS_PART,
    C18_QUALITY_PART,
    C18_STEP_FLOPS_PART,
    C21_METRIC,
    c21_rule,
    c30_rule,
)
from blocklab.claims.rules import Part, Rule
from blocklab.claims.text import ERROR, say
from blocklab.report.i18n import FINDING_WORDS, FINDINGS


@dataclass(frozen=True)
class Sentence:
    """One finding in plain words; `claims`: the ids it cites, in the order it names them."""

    text: str
    claims: tuple[str, ...]


@dataclass(frozen=True)
class UseItem:
    """One number to act on: what it measures, the number ("undecided" where its part decided
    nothing), and the claim whose ledger row (`anchor`) holds its evidence."""

    label: str
    value: str
    claim: str
    anchor: str


@dataclass(frozen=True)
class Findings:
    """At most eight sentences and at most six items to use, in the order they are read."""

    sentences: list[Sentence]
    use: list[UseItem]


ARM_NAMES = {"swiglu": "SwiGLU", "geglu": "GeGLU", "glu": "GLU", "alibi": "ALiBi",
             "rope": "RoPE"}
NO_RESULT = ("missing-results", ERROR)


def findings(results: list[ClaimResult], lang: str) -> Findings:
    """The findings of `results` (the ledger's, any subset) in `lang` ("en" or "zh")."""
    by_id = {r.id: r for r in results if r.verdict not in NO_RESULT and r.error is None}
    sentences = [s for build in SENTENCES if (s := build(by_id, lang)) is not None]
    use = [u for build in USE if (u := build(by_id, lang)) is not None]
    return Findings(sentences, use)


Results = dict[str, ClaimResult]
T = TypeVar("T")


def _of(claim: str, build: Callable[[ClaimResult, str], T | None]
        ) -> Callable[[Results, str], T | None]:
    """`build` of claim `claim`'s result; None where the ledger holds no usable one."""
    return lambda by_id, lang: build(by_id[claim], lang) if claim in by_id else None


# --- the sentences -------------------------------------------------------------------------------
def _scale_free(by_id: Results, lang: str) -> Sentence | None:
    """How many of the claims that need no training (no suite, no dependence on scale) hold,
    and which are wrong."""
    free = [r for cid, r in sorted(by_id.items())
            if cid not in SUITE_OF and cid not in SCALE_DEPENDENT]
    if not free:
        return None
    hold = [r.id for r in free if r.verdict == "confirmed"]
    wrong = [r.id for r in free if r.verdict == "refuted"]
    unsettled = [r.id for r in free if r.verdict in ("inconclusive", "untestable-here")]
    partly = [r.id for r in free if r.id not in {*hold, *wrong, *unsettled}]
    rest = "".join(say(FINDINGS[key], lang, k=len(ids), ids=_ids(ids, lang))
                   for key, ids in (("free_part", partly), ("free_open", unsettled)) if ids)
    text = say(FINDINGS["free"], lang, n=len(free), hold=len(hold), wrong=len(wrong),
               wrong_ids=_ids(wrong, lang), rest=rest)
    return Sentence(text, (*wrong, *partly, *unsettled))


def _ffn_share(by_id: Results, lang: str) -> Sentence | None:
    """The FFN's share of Llama-3-8B's prefill FLOPs (C23) and weights (C15), where wrong."""
    clauses, cited = [], []
    c23, c15 = by_id.get("C23"), by_id.get("C15")
    if c23 is not None and c23.verdict == "refuted":
        clauses.append(say(FINDINGS["c23"], lang, share=_share(c23.evidence["ffn_share"]),
                           page=_share(c23.evidence["page"]["ffn_share"], "g")))
        cited.append("C23")
    if c15 is not None and c15.verdict == "refuted":
        clauses.append(say(FINDINGS["c15"], lang,
                           share=_share(c15.evidence["meta_llama_3_8b"]["ffn_share"]),
                           page=_share(c15.evidence["page_example"]["ffn_share"])))
        cited.append("C15")
    if not clauses:
        return None
    return Sentence(say(FINDINGS["llama3_ffn"], lang, clauses=_joined(clauses, lang, "clause_sep")),
                    tuple(cited))


def _configs(c34: ClaimResult, lang: str) -> Sentence | None:
    """The page's pairings of models with components that a config or paper contradicts (C34),
    and what holds instead."""
    checkable = [p for p in c34.parts if p.verdict != "untestable-here"]
    wrong = [p for p in checkable if p.verdict == "refuted"]
    if not wrong:
        return Sentence(say(FINDINGS["c34_right"], lang, checkable=len(checkable)), ("C34",))
    instead = {p.text: p.if_wrong[lang == "zh"] or (p.text_zh if lang == "zh" else p.text)
               for p in PAGE_PAIRINGS}
    fixes = say(FINDINGS["clause_sep"], lang).join(instead.get(p.name, p.name) for p in wrong)
    return Sentence(say(FINDINGS["c34_wrong"], lang, wrong=len(wrong), checkable=len(checkable),
                        fixes=fixes), ("C34",))


def _gated_ffn(c16: ClaimResult, lang: str) -> Sentence | None:
    """Each gated FFN's loss against ReLU's at equal parameters (C16), at the scale it ran."""
    arms = [say(FINDINGS["c16_arm"], lang, arm=ARM_NAMES[p.name], value=_pct(p, 2), word=word)
            for p in c16.parts if p.name in C16_ARMS
            and (word := _word("gain", p, lang)) is not None]
    if not arms:
        return None
    return Sentence(say(FINDINGS["c16"], lang, scale=_scale(c16, lang), arms=_joined(arms, lang)),
                    ("C16",))


def _norm(c18: ClaimResult, lang: str) -> Sentence | None:
    """RMSNorm's FLOPs saving per norm and per training step, its step time and its quality
    against LayerNorm's (C18)."""
    parts = {p.name: p for p in c18.parts}
    norm, step = parts.get(C18_FLOPS_PART), parts.get(C18_STEP_FLOPS_PART)
    model = next((s["model"] for s in c18.evidence.get("compute", {}).get("steps", [])
                  if not s["model"].startswith("norm-cost")), None)
    clauses = []
    if _valued(norm) and _valued(step) and model is not None:
        page = ("" if "confirmed" in (norm.verdict, step.verdict) else
                say(FINDINGS["c18_page"], lang, claimed=f"{norm.rule.claimed:g}%"))
        clauses.append(say(FINDINGS["c18_flops"], lang, norm=_pct(norm, ".2g", sign=""),
                           step=_pct(step, ".2g", sign=""), model=model, page=page))
    step_time = _fused_step_time(c18)
    if step_time is not None:
        clauses.append(say(FINDINGS["c18_time"], lang, ratio=_ratio(step_time["ratio"]),
                           **step_time["model"]))
    quality = parts.get(C18_QUALITY_PART)
    if _valued(quality) and (word := _word("same", quality, lang)) is not None:
        clauses.append(say(FINDINGS["c18_quality"], lang, scale=_scale(c18, lang),
                           delta=_nats(quality.estimate.value), word=word))
    if not clauses:
        return None
    return Sentence(say(FINDINGS["clause_sep"], lang).join(clauses)
                    + say(FINDINGS["c18_end"], lang), ("C18",))


def _placement(c19: ClaimResult, lang: str) -> Sentence | None:
    """Pre- and post-norm with and without warmup, and post-norm's gradients (C19)."""
    parts = {p.name: p for p in c19.parts}
    wanted = (("pre-norm trains without warmup", "c19_pre", "no_warmup", _nats),
              ("post-norm needs warmup", "c19_post", "needs_warmup", _nats),
              ("post-norm gradients vanish in the lower layers", "c19_grad", "vanish",
               lambda log2: _ratio(2 ** log2)))  # a log2 ratio as the ratio itself
    clauses = [say(FINDINGS[key], lang, value=show(p.estimate.value), word=word)
               for name, key, words, show in wanted
               if _valued(p := parts.get(name)) and (word := _word(words, p, lang)) is not None]
    if not clauses:
        return None
    return Sentence(say(FINDINGS["c19"], lang, scale=_scale(c19, lang),
                        clauses=say(FINDINGS["clause_sep"], lang).join(clauses)), ("C19",))


def _extrapolation(c21: ClaimResult, lang: str) -> Sentence | None:
    """ALiBi's and plain RoPE's loss past the training length (C21), at the scale it trained."""
    clauses = []
    for arm in ("alibi", "rope"):
        reads = [(mult, p, word) for mult, p in sorted(_bands(c21, arm, "works", c21_rule).items())
                 if (word := _word("works", p, lang)) is not None]
        if reads:
            clauses.append(say(FINDINGS["c21_arm"], lang, arm=ARM_NAMES[arm],
                               reads=_reads(reads, lang)))
    if not clauses:
        return None
    return Sentence(say(FINDINGS["c21"], lang, scale=_scale(c21, lang),
                        clauses=say(FINDINGS["clause_sep"], lang).join(clauses)), ("C21",))


def _rope_scaling(c30: ClaimResult, lang: str) -> Sentence | None:
    """RoPE with YaRN and a short fine-tune against plain RoPE at the longest read (C30)."""
    read = _c30_longest(c30)
    if read is None:
        return None
    mult, steps, yarn, plain = read
    word = _word("works", yarn, lang)
    if word is None:
        return None
    return Sentence(say(FINDINGS["c30"], lang, steps=steps, mult=mult, scale=_scale(c30, lang),
                        yarn=_pct(yarn, 1), word=word, plain=_pct(plain, 1)), ("C30",))


SENTENCES: tuple[Callable[[Results, str], Sentence | None], ...] = (
    _scale_free, _ffn_share, _of("C34", _configs), _of("C16", _gated_ffn), _of("C18", _norm),
    _of("C19", _placement), _of("C21", _extrapolation), _of("C30", _rope_scaling))


# --- what to use ---------------------------------------------------------------------------------
def _use_c23(c23: ClaimResult, lang: str) -> UseItem:
    return _item("C23", say(FINDINGS["use_c23"], lang), _share(c23.evidence["ffn_share"]))


def _use_c15(c15: ClaimResult, lang: str) -> UseItem:
    return _item("C15", say(FINDINGS["use_c15"], lang),
                 _share(c15.evidence["meta_llama_3_8b"]["ffn_share"]))


def _use_c16(c16: ClaimResult, lang: str) -> UseItem | None:
    swiglu = next((p for p in c16.parts if p.name == "swiglu"), None)
    if not _valued(swiglu) or _word("gain", swiglu, lang) is None:
        return None
    return _item("C16", say(FINDINGS["use_c16"], lang, scale=_scale(c16, lang)),
                 _decided(swiglu, _pct(swiglu, 2), lang))


def _use_c18(c18: ClaimResult, lang: str) -> UseItem | None:
    step = _fused_step_time(c18)
    if step is None:
        return None
    return _item("C18", say(FINDINGS["use_c18"], lang, **step["model"]), _ratio(step["ratio"]))


def _use_c21(c21: ClaimResult, lang: str) -> UseItem | None:
    reads = _bands(c21, "alibi", "works", c21_rule)
    if not reads:
        return None
    mult = max(reads)
    return _item("C21", say(FINDINGS["use_c21"], lang, mult=mult, scale=_scale(c21, lang)),
                 _decided(reads[mult], _pct(reads[mult], 2), lang))


def _use_c30(c30: ClaimResult, lang: str) -> UseItem | None:
    read = _c30_longest(c30)
    if read is None:
        return None
    mult, steps, yarn, plain = read
    value = say(FINDINGS["use_vs"], lang, a=_pct(yarn, 1), b=_pct(plain, 1))
    return _item("C30", say(FINDINGS["use_c30"], lang, mult=mult, steps=steps,
                            scale=_scale(c30, lang)),
                 _decided(yarn, value, lang))


USE: tuple[Callable[[Results, str], UseItem | None], ...] = (
    _of("C23", _use_c23), _of("C15", _use_c15), _of("C16", _use_c16), _of("C18", _use_c18),
    _of("C21", _use_c21), _of("C30", _use_c30))


# --- reading the results -------------------------------------------------------------------------
# A position claim's part reads one arm at one multiple of the training length; its rule's
# metric ends with both (`registry.c21_rule`, `c30_rule`).
_BAND = re.compile(re.escape(C21_METRIC) + r": (?P<arm>\S+) at (?P<mult>\d+)×$")


def _bands(result: ClaimResult, arm: str, want: str,
           rule_of: Callable[[str, str, str], Rule]) -> dict[int, Part]:
    """{multiple: part} of `result`'s parts that grade `arm` against `want` ("works",
    "drops", ...) by the registered rule, each with an estimate."""
    out = {}
    for part in result.parts:
        match = _BAND.match(part.rule.metric)
        if (match and match["arm"] == arm and _valued(part)
                and part.rule == rule_of(arm, match["mult"], want)):
            out[int(match["mult"])] = part
    return out


def _c30_longest(c30: ClaimResult) -> tuple[int, int, Part, Part] | None:
    """(the longest multiple C30 read, the fine-tune's steps, RoPE + YaRN fine-tuned there
    graded "works", plain RoPE there graded "drops"), or None."""
    finetune = c30.evidence.get("finetune")
    if not finetune or "yarn" not in finetune.get("arms", {}):
        return None
    yarn = _bands(c30, finetune["arms"]["yarn"], "works", c30_rule)
    plain = _bands(c30, "rope", "drops", c30_rule)
    both = sorted(set(yarn) & set(plain))
    if not both:
        return None
    mult = both[-1]
    return mult, finetune["steps"], yarn[mult], plain[mult]


def _fused_step_time(c18: ClaimResult) -> dict[str, Any] | None:
    """The training step's time with RMSNorm over LayerNorm's, both through blocklab's fused
    kernels (C18's evidence, reported, not graded), at the fewest threads timed."""
    fused = [s for key, s in c18.evidence.get("step_time", {}).items()
             if key.startswith("blocklab/")]
    return min(fused, key=lambda s: s["threads"]) if fused else None


def _valued(part: Part | None) -> bool:
    return part is not None and part.estimate.value is not None


def _word(kind: str, part: Part, lang: str) -> str | None:
    """What `part`'s verdict says in a `kind` statement ("gain", "works", ...), None when it
    says nothing here (untestable here, no results, an error)."""
    template = (FINDINGS["undecided"] if part.verdict == "inconclusive"
                else FINDING_WORDS.get(f"{kind} {part.verdict}"))
    return None if template is None or not _valued(part) else say(template, lang)


def _decided(part: Part, value: str, lang: str) -> str:
    return say(FINDINGS["use_undecided"], lang, value=value) if part.verdict == "inconclusive" \
        else value


def _reads(reads: list[tuple[int, Part, str]], lang: str) -> str:
    """"+0.06% at 2×, +0.05% at 4× and +0.13% at 8× (all works)", or each with its word
    where they differ."""
    shown = [say(FINDINGS["c21_read"], lang, value=_pct(p, 2), mult=m) for m, p, _ in reads]
    words = [w for _, _, w in reads]
    if len(set(words)) == 1:
        return say(FINDINGS["c21_all" if len(reads) > 1 else "c21_each"], lang,
                   reads=_joined(shown, lang), word=words[0])
    return _joined([say(FINDINGS["c21_each"], lang, reads=s, word=w)
                    for s, w in zip(shown, words, strict=True)], lang)


def _joined(items: list[str], lang: str, sep: str = "sep") -> str:
    """"a, b and c" (zh: "a、b、c"); with sep="clause_sep", "a; b; and c"."""
    if len(items) < 2:
        return "".join(items)
    last = FINDINGS["and" if sep == "sep" else "clause_and"]
    return say(FINDINGS[sep], lang).join(items[:-1]) + say(last, lang) + items[-1]


def _scale(result: ClaimResult, lang: str) -> str:
    """The model and its training tokens, "d 64 × 2 layers, 307k tokens": the scale's text
    (`Scale.text`: model, parameters, tokens, FLOPs) less its parameters and FLOPs."""
    if result.scale is None:
        return say(FINDINGS["scale_unknown"], lang)
    sep = "，" if lang == "zh" else ", "
    model, _params, tokens, _flops = result.scale["text_zh" if lang == "zh" else "text"].rsplit(
        sep, 3)
    return f"{model}{sep}{tokens}"


def _ids(ids: list[str], lang: str) -> str:
    return say(FINDINGS["ids"], lang, ids=say(FINDINGS["sep"], lang).join(ids)) if ids else ""


# How numbers are shown: one format each, so a test can show the same value the same way.
def _share(fraction: float, spec: str = ".1f") -> str:
    """0.701 -> "70.1%"."""
    return f"{100 * fraction:{spec}}%"


def _pct(part: Part, digits: int | str, sign: str = "+") -> str:
    """A part's estimate in % (its metric's unit): "+3.21%" at 2 digits, "0.0036%" at
    ".2g" with no sign."""
    spec = digits if isinstance(digits, str) else f".{digits}f"
    return f"{part.estimate.value:{sign}{spec}}%".replace("-", "−")


def _nats(value: float) -> str:
    """-0.01 -> "−0.010", with a true minus sign as the ledger's lines write it."""
    return f"{value:+.3f}".replace("-", "−")


def _ratio(value: float) -> str:
    return f"{value:.2f}×"


def _item(claim: str, label: str, value: str) -> UseItem:
    return UseItem(label, value, claim, f"#{claim}")
