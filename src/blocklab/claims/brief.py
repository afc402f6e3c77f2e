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
from functools import partial, reduce
from operator import getitem
from typing import Any

from blocklab.claims.checks import LONG_CONTEXT
from blocklab.claims.ledger import ClaimResult
from blocklab.claims.rules import Part
from blocklab.claims.text import ERROR, WORDING, Template, reader_word, say

# The most a line's statement and its finding take when a claim has no entry below, so that the
# line (id, symbol, verdict word, separators) stays within 200 characters.
STATEMENT_CHARS, FOUND_CHARS = 70, 90
# The page's statement in brief, in our own words (the full restatement: `text.CLAIM_TEXT`).
STATEMENT: dict[str, Template] = WORDING["BRIEF_STATEMENT"]

# The clauses of what was found, (English, Chinese), filled by `say` with numbers already
# written by `_num` / `_signed` / `_est` (or a format spec on a number from the evidence).
TEXT: dict[str, Template] = WORDING["BRIEF"]


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
    return next((p for p in result.parts if p.name == name), None)


def _parts_at(result: ClaimResult, pattern: str) -> list[tuple[int, Part]]:
    """(multiple, part) for each part whose name matches `pattern` in full, its one group the
    multiple ('RoPE works at (\\d+)×'), in the order graded."""
    return [(int(m.group(1)), p) for p in result.parts if (m := re.fullmatch(pattern, p.name))]


def _tally(result: ClaimResult, lang: str) -> str:
    """'4 of 10 parts hold, 3 inconclusive'."""
    held = sum(p.verdict == "confirmed" for p in result.parts)
    still = sum(p.verdict == "inconclusive" for p in result.parts)
    key = "tally_open" if still else "tally"
    return say(TEXT[key], lang, held=held, n=len(result.parts), open=still)


def _check(result: ClaimResult, prefix: str) -> dict[str, Any]:
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
                  "share": ("ffn_flop_share_page_model",)},
          "C25": {p: ("layer_activation_elements", p) for p in ("pre", "post", "sandwich")}}


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


def _c14(r: ClaimResult, lang: str) -> str:
    checks = r.evidence["checks"]
    return say(TEXT["C14"], lang, worst=max(c["max_error"] for c in checks), n=len(checks))


def _c17(r: ClaimResult, lang: str) -> str:
    ev = r.evidence
    return say(TEXT["C17"], lang, low=_num(min(ev["silu_grad"])), high=_num(max(ev["silu_grad"])),
               z0=_num(min(ev["z"])), z1=_num(max(ev["z"])), relu=_num(max(ev["relu_grad"])),
               zero=_num(ev["silu_grad_zero_at"]))


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


def _count(part: Part) -> str:
    return _num(part.estimate.value or 0.0)


_pct = partial(_est, unit="%")
_value_pct = partial(_value, unit="%")

# The clauses that quote named parts, each with its tally: {field: (part name, its writer)}; a
# result that lacks one of the parts shows the tally alone.
NAMED: dict[str, dict[str, tuple[str, Callable[[Part], str]]]] = {
    "C16": {"swiglu": ("swiglu", _pct), "geglu": ("geglu", _value_pct),
            "glu": ("glu", _value_pct)},
    "C18": {"norm": ("the norm needs about 7% fewer FLOPs", _count),
            "step": ("a training step needs about 7% fewer FLOPs", _count),
            "quality": ("nearly the same quality", _est)},
    "C13": {"est": ("warmup interaction (the finding; nothing is claimed)", _est)},
    "C19": {"est": ("pre-norm trains without warmup", _est)},
    "C33": {"row": ("merging gate|up with per-row scales equals separate quantization",
                    lambda part: _value(part).lstrip("+")),
            "tensor": ("one per-tensor scale for gate|up costs FFN output quality beyond δ",
                       _pct)},
    "C36": {"est": ("pre-norm block Jacobian ≈ I at initialisation (gradient ≈ 1)", _est)},
    "C37": {"sliced": ("slicing an ordinary FFN to m/2 is worse than nested training there",
                       _pct),
            "full": ("nested training costs little at the full width m", _value_pct)},
}


def _named_clause(r: ClaimResult, lang: str) -> str:
    found = {field: (_part(r, name), write) for field, (name, write) in NAMED[r.id].items()}
    if any(part is None for part, _ in found.values()):
        return _tally(r, lang)
    return say(TEXT[r.id], lang, tally=_tally(r, lang),
               **{field: write(part) for field, (part, write) in found.items()})


FOUND: dict[str, Callable[[ClaimResult, str], str]] = {
    **dict.fromkeys(GOT, _got_clause), **dict.fromkeys(QUOTED, _quoted_clause),
    **dict.fromkeys(NAMED, _named_clause), "C04": _c04, "C06": _all_checks,
    "C07": _all_checks, "C08": _c08, "C12": _c12, "C14": _c14, "C17": _c17,
    "C20": _c20, "C21": _c21, "C22": _c22, "C24": _c24, "C26": _c26, "C27": _c27,
    "C28": _c28, "C29": _c29, "C30": _c30, "C31": _c31, "C34": _c34, "C35": _c35,
}
