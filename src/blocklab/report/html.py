"""The report page: one self-contained HTML file (inline CSS, figures as data: URIs, no script).

`render_html(doc, figures, lang)` renders the document of `build.collect` and the figures of
`figures.make_figures` through the Jinja2 templates (`templates/`, autoescape on; the only
markup text may carry is a `backticked` name, as <code>). This module computes what the
templates show (each part's line of words, table rows, counts, the sections); the templates
hold the markup and the layout.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import lru_cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape

from blocklab.claims.catalogue import SUBSECTION_CLAIMS
from blocklab.claims.rules import confidence_text
from blocklab.claims.text import VERDICT_EN, VERDICT_MEANING, VERDICT_ZH
from blocklab.experiments.suites import get_suite
from blocklab.experiments.summaries import mixed_notes
from blocklab.report.figures import Figure, forest_key, interval_of, part_geometry
from blocklab.report.i18n import CAPTIONS, DECISION_SHORT, t
from blocklab.report.palette import VERDICT_STYLES
from blocklab.report.terms import TERMS, define_terms

# --- what the templates show ----------------------------------------------------------------------
# A cell the suites pre-formatted as a number: "0.25", "+0.11 [−0.2, 0.4]", "4.1 (n=1)", "+1–2%".
_NUMERIC = re.compile(r"^[+\-−]?\d[\d,]*(\.\d+)?(e[+\-]?\d+)?(–\d+(\.\d+)?)?%?"
                      r"( \[[^\]]*\]| \(n=\d+\))?$")


def _cell(value: Any) -> dict[str, Any]:
    """{text, number} of a table cell: its text, and whether it is right-aligned as a number."""
    if value is None:
        return {"text": "—", "number": False}
    if isinstance(value, bool):
        return {"text": str(value).lower(), "number": False}
    if isinstance(value, int):
        return {"text": f"{value:,}", "number": True}
    if isinstance(value, float):
        return {"text": f"{value:.4g}", "number": True}
    text = str(value)
    return {"text": text, "number": bool(_NUMERIC.match(text))}


_BACKTICKS = re.compile(r"`([^`<>]+)`")


def prose(text: str) -> Markup:
    """Escaped text with `backticked` spans as <code> (the claims write names that way)."""
    return Markup(_BACKTICKS.sub(r"<code>\1</code>", str(escape(text))))


def _num(value: float | None) -> str:
    """A number as the ledger lines show it: 3 significant digits, a real minus sign."""
    if value is None:
        return "—"
    return f"{value:.3g}".replace("-", "−")


def _signed(value: float | None) -> str:
    return ("+" if value is not None and value > 0 else "") + _num(value)


def _minutes(seconds: float) -> str:
    minutes = seconds / 60
    return f"{minutes:.1f}" if minutes < 10 else f"{minutes:,.0f}"


def duration(seconds: float, lang: str) -> str:
    """'40 s', '3.5 min', '25 min'."""
    if seconds < 60:
        return t("seconds", lang).format(n=seconds)
    return t("minutes", lang).format(n=_minutes(seconds))


def _unit_of(metric: str) -> str:
    return "%" if "%" in metric else " nats" if "nats" in metric else ""


def estimate_words(part: dict[str, Any]) -> str:
    """'−1.42% [−2.31, −0.53] (99.64% CI, n=5)': the estimate with the interval its decision
    read, labelled with its coverage (the stored 95% one for a part decided without a test);
    '+0.3% (n=1)' without an interval; '—' without an estimate."""
    e = part["estimate"]
    unit = _unit_of(part["rule"]["metric"])
    n = e.get("n", 0)
    if e.get("value") is None:
        return "—"
    low, high, coverage = interval_of(part)
    if low is None or high is None:
        return f"{_signed(e['value'])}{unit} (n={n})"
    return f"{_signed(e['value'])}{unit} [{_signed(low)}, {_signed(high)}] ({coverage} CI, n={n})"


def claimed_words(rule: dict[str, Any], lang: str) -> str:
    """What the rule claims, in a few words: '−1.5%', '≤ 5%', '≥ 25%', '5–25%', '±0.02 nats'."""
    g = part_geometry(rule)
    unit = _unit_of(rule["metric"])
    if g["test"] == "equivalence":
        low, high = g["band"]
        text = (f"±{_num(high)}{unit}" if g["claimed"] == 0 else
                f"{_num(low)}–{_num(high)}{unit}")
    elif g["test"] in ("at-most", "at-least"):  # the bound's side: −1 at most, +1 at least
        text = f"{'≥' if g['side'] > 0 else '≤'} {_num(g['boundary'])}{unit}"
    elif rule.get("threshold"):
        text = (f"{'>' if g['side'] > 0 else '<'} {_num(g['boundary'])}{unit}")
    else:
        text = f"{_signed(g['claimed'])}{unit}"
    return t("part_claimed", lang).format(claim=text)


def why_words(part: dict[str, Any], lang: str, budget: dict[str, Any] | None) -> str:
    """Why the part got its decision, in a few words (the full reason is under details)."""
    decision, reason, rule = part["decision"], part.get("reason") or "", part["rule"]
    g = part_geometry(rule)
    n = part["estimate"].get("n") or 0
    bound = _num(g["boundary"]) if g["boundary"] is not None else ""
    if part.get("level") is None and decision != "run":  # decided without a test
        return reason
    if decision == "run":
        return t("why_run", lang)
    c = interval_of(part)[2]
    if decision == "confirmed":
        return t("why_band_in" if g["band"] else "why_beyond", lang).format(b=bound, c=c)
    if decision == "contradicted-at-this-scale":
        return t("why_contradicted", lang).format(d=_num(g["delta"]), c=c)
    if decision == "not-reproduced-at-this-scale":
        if "would be contradicted" in reason:
            return t("why_would_contradict", lang)
        if "inside ±" in reason and g["margin"] is not None:
            return t("why_no_effect", lang).format(m=_num(g["margin"]), c=c)
        return t("why_band_out" if g["band"] else "why_short", lang).format(b=bound, c=c)
    if decision == "inconclusive":
        if "Holm's step-down stopped" in reason:
            why = t("why_holm", lang)
        elif n < 2:
            why = t("why_no_interval", lang).format(n=n, min=rule["min_seeds"])
        elif n < rule["min_seeds"]:
            why = t("why_few_seeds", lang).format(n=n, min=rule["min_seeds"])
        else:
            b = bound if g["band"] is None else f"{_num(g['band'][0])}/{_num(g['band'][1])}"
            why = t("why_straddles", lang).format(b=b, c=c)
        needed = part.get("seeds_needed")
        if needed is not None:
            why += t("why_needed", lang).format(needed=needed)
            if budget is not None:
                why += t("why_cost", lang).format(extra=budget["extra_seeds"],
                                                 time=duration(budget["seconds"], lang))
        return why
    return reason


def line_words(part: dict[str, Any], lang: str, budget: dict[str, Any] | None = None
               ) -> dict[str, str]:
    """One graded part as one line: {decision, label, words}: its decision, the short name
    of it shown in the chip's colour, and the words, e.g. 'swiglu: −1.42% [−2.31, −0.53]
    (99.64% CI, n=5), claimed −1.5%; the 99.64% CI lies beyond −0.5'."""
    decision = part["decision"]
    words = t("part_line", lang).format(name=part["name"], estimate=estimate_words(part),
                                        claimed=claimed_words(part["rule"], lang),
                                        why=why_words(part, lang, budget))
    label = DECISION_SHORT[decision][lang == "zh"] if decision in DECISION_SHORT else decision
    return {"decision": decision, "label": label, "words": words}


def rule_words(part: dict[str, Any]) -> str:
    """A part's registered rule in full (metric, test, claimed, δ, margin, seeds, hash)."""
    rule = part["rule"]
    beyond = f" (beyond {rule['threshold']:g})" if rule.get("threshold") else ""
    return (f"{rule['metric']}; {rule.get('test', 'effect')}, claimed {rule['claimed']:+g}"
            f"{beyond}, smallest effect {rule['smallest_effect']:g}, margin "
            f"±{rule['margin']:g}, min seeds {rule['min_seeds']}"
            + (f"; rule {part['rule_hash']}" if part.get("rule_hash") else "")
            + f". {rule.get('decides', '')}")


_SENTENCE_EN = re.compile(r"(?<=[.!?])\s+(?=[A-Z(“\"])")


def lead_and_rest(text: str, lang: str) -> tuple[str, str]:
    """The summary's first sentence (at most about three lines of the evidence column: cut
    at a clause boundary past that) and the rest, which goes under details."""
    limit = 100 if lang == "zh" else 240
    if lang == "zh":
        cut = text.find("。")
        lead, rest = (text[:cut + 1], text[cut + 1:]) if cut >= 0 else (text, "")
    else:
        bits = _SENTENCE_EN.split(text, maxsplit=1)
        lead, rest = bits[0], (bits[1] if len(bits) > 1 else "")
    if len(lead) > limit:
        stops = [m.end() for m in re.finditer(r"[;:；：，,]\s*", lead[:limit])]
        cut = stops[-1] if stops and stops[-1] > limit // 3 else limit
        lead, rest = lead[:cut].rstrip() + " …", "… " + lead[cut:].lstrip() + (
            " " + rest if rest else "")
    return lead, rest.strip()


def budget_words(budget: dict[str, Any], lang: str) -> str:
    """'With about N more minutes on this machine these K parts would likely be decided', and
    how many inconclusive parts no number of seeds can be priced for yet."""
    out = [t("budget_sentence", lang).format(minutes=_minutes(budget["seconds"]),
                                             k=budget["within_reach"], workers=budget["workers"])
           if budget["within_reach"] else t("budget_none", lang)]
    if budget["beyond_reach"]:
        out.append(t("budget_beyond", lang).format(b=budget["beyond_reach"],
                                                   hours=budget["reach_s"] / 3600,
                                                   minutes=_minutes(budget["beyond_seconds"])))
    if budget.get("beyond_design"):
        out.append(t("budget_design", lang).format(d=len(budget["beyond_design"])))
    if budget["unsized"]:
        out.append(t("budget_unsized", lang).format(u=len(budget["unsized"])))
    return ("" if lang == "zh" else " ").join(out)  # Chinese sentences join without a space


def design_words(design: dict[str, Any], lang: str, still_open: int) -> str:
    """The sequential design as run (`Looks.to_dict`): budget, looks, runs added, why it
    stopped, the 2× longer runs, and the `still_open` parts the box below it lists."""
    budget = design.get("budget_s")
    shown = (t("design_unbounded", lang) if budget is None else duration(budget, lang))
    looks = design.get("looks") or []
    out = [t("design_budget", lang).format(
        budget=shown, workers=design.get("workers", "?"), looks=len(looks),
        runs=sum(look.get("runs", 0) for look in looks),
        stopped=design.get("stopped") or "—")]
    if still_open:
        out.append(t("design_open", lang).format(n=still_open))
    if design.get("longer"):
        out.append(t("design_longer", lang).format(what=design["longer"]))
    if design.get("cut"):
        out.append(t("design_cut", lang).format(what=", ".join(design["cut"])))
    return ("" if lang == "zh" else " ").join(out)


def open_parts(budget: dict[str, Any] | None) -> int:
    """How many parts are still open: the rows of `budget_rows` (in any language)."""
    return len(budget_rows(budget, "en")) if budget else 0


def budget_rows(budget: dict[str, Any], lang: str) -> list[list[Any]]:
    """The parts the budget sentence prices, those past their designs (with the redesign each
    needs), then those it cannot price, as table rows."""
    rows = [[p["claim"], p["part"], p["n"], p["seeds_needed"], p["extra_seeds"],
             f"{p['seed_cost_s']:.1f}", f"{p['seconds'] / 60:.1f}", ", ".join(p["arms"])]
            for p in budget["parts"]]
    rows += [[p["claim"], p["part"], p["n"], p["seeds_needed"], "—", "—", "—",
              t("needs_redesign", lang).format(redesign=p["redesign"])]
             for p in budget.get("beyond_design") or []]
    return rows + [[p["claim"], p["part"], p["n"], "—", "—", "—", "—", "—"]
                   for p in budget["unsized"]]


BUDGET_COLUMNS = ("col_id", "col_part", "col_n", "col_needed", "col_extra", "col_seed_cost",
                  "col_minutes", "col_arms")
# The verdicts as the ledger explains and counts them: the palette's order (an error is none).
VERDICT_ORDER = tuple(v for v in VERDICT_STYLES if v != "error")


def verdict_counts(ledger: list[dict[str, Any]]) -> dict[str, Any]:
    """{verdicts: [(verdict, count)] in VERDICT_ORDER, errors: checks that raised}."""
    # a check that raised has no verdict, whatever its placeholder
    counts = Counter(r["verdict"] for r in ledger if not r.get("error"))
    return {"verdicts": [(v, counts[v]) for v in VERDICT_ORDER if v in counts],
            "errors": sum(bool(r.get("error")) for r in ledger)}


def provenance_words(ledger: list[dict[str, Any]], lang: str) -> str:
    """Where the ledger's rules came from: before the data, and the edits made after it (each
    counted once) with the claims they touch."""
    edits = {(c["date"], c["what"]) for r in ledger for c in r.get("rules_changed") or []}
    if not edits:
        return t("provenance_none", lang)
    claims = sum(bool(r.get("rules_changed")) for r in ledger)
    return t("provenance", lang).format(edits=len(edits), claims=claims)


def levels_words(ledger: list[dict[str, Any]], lang: str) -> str:
    """Why the intervals are shown at different levels (the deciding ones, lowest to highest);
    '' when they are all one."""
    shown = {(part.get("interval") or {}).get("confidence", 0.95) for r in ledger
             for part in r.get("parts") or [] if interval_of(part)[0] is not None}
    if len(shown) < 2:
        return ""
    return t("levels", lang).format(low=confidence_text(min(shown)),
                                    high=confidence_text(max(shown)))


_CLAIM_ID = re.compile(r"\b(C\d\d)\b")


def claim_links(text: str) -> Markup:
    """`prose(text)` with each claim id ("C23") a link to the claim's section."""
    return Markup(_CLAIM_ID.sub(r'<a href="#claim-\1">\1</a>', str(prose(text))))


def ledger_line(row: dict[str, Any], lang: str) -> Markup:
    """A claim's line in the ledger after its id and verdict: the page's statement in brief
    and what was found (`claims.brief`, kept in the document as `brief`)."""
    b = row["brief"][lang]
    return Markup('<span class="statement">{}</span> · <span class="found">{}</span>').format(
        prose(b["statement"]), prose(b["found"]))


def figure_caption(key: str, doc: dict[str, Any], lang: str) -> str:
    """The caption of figure `key` naming only what it draws from `doc`: the norm-cost
    figure's kernel panels where per-kernel timings are stored, its step panel where a step was
    timed; RoPE's error by the dtypes stored, or its float64 reference alone."""
    if key == "norm_cost":
        data = _suite_data(doc, "norm-cost")
        kernels, step = bool(data.get("ratios")), bool(data.get("step_time"))
        return t("norm_cost" if kernels and step else
                 "norm_cost:kernels" if kernels else "norm_cost:step", lang, CAPTIONS)
    if key == "rope_relative_error":
        dtypes = rope_dtypes(doc)
        if dtypes in ([], ["float64"]):
            return t("rope_relative_error:float64", lang, CAPTIONS)
        return t(key, lang, CAPTIONS).format(dtypes=", ".join(dtypes))
    return t(key, lang, CAPTIONS)


def rope_dtypes(doc: dict[str, Any]) -> list[str]:
    """The dtypes of the position suite's stored relative-error run, in its order ([] where
    that run is not stored)."""
    data = _suite_data(doc, "position")
    return list(dict.fromkeys(dtype for name in ("relative_error", "relative_error_blocklab")
                              for dtype in data.get(name) or {}))


def _suite_data(doc: dict[str, Any], suite: str) -> dict[str, Any]:
    summary = ((doc.get("suites") or {}).get(suite) or {}).get("summary") or {}
    return summary.get("data") or {}


def _numbers(evidence: dict[str, Any]) -> str:
    """A check's evidence as indented JSON (its traceback, and its table shown as one, left
    out), or ''."""
    numbers = {k: v for k, v in evidence.items() if k not in ("traceback", "table")}
    return json.dumps(numbers, indent=1, ensure_ascii=False) if numbers else ""


def _gib(n: int) -> str:
    return f"{n / 2**30:,.2f} GiB"


# The sections the page template writes, in order, with their titles (i18n keys); the terms
# close the page. A suite's results are shown in the one its `Suite.section` names
# (`suites_in` in the template); a suite whose section is none of these gets one of its own,
# titled by its heading, before the terms.
PAGE_SECTIONS = (("findings", "sec_findings"), ("ledger", "sec_ledger"),
                 ("claims", "sec_claims"), ("ffn", "sec_ffn"), ("normalization", "sec_norm"),
                 ("placement", "sec_placement"), ("position", "sec_position"),
                 ("deployment", "sec_deploy"))
# Sections that show no suite's results.
_NO_SUITES = ("findings", "ledger", "claims", "terms")
# The figure that opens the page, beside the findings: the page's first claim measured, in the
# units it is measured in (its loss against ReLU's, %), so the first picture is one a reader
# can act on; the normalised overview of every part comes with the ledger.
LEAD_FIGURE = "ffn_variants"


def shown_suites(doc: dict[str, Any], lang: str) -> list[dict[str, Any]]:
    """The document's suites, in its order, as the page shows them: {name, section, heading,
    figures} from each registered suite (`blocklab.experiments.suites.get_suite`)."""
    suites = {name: get_suite(name) for name in doc.get("suites", {})}
    return [{"name": name, "section": suite.section,
             "heading": suite.heading[1 if lang == "zh" else 0], "figures": list(suite.figures)}
            for name, suite in suites.items()]


def sections(suites: list[dict[str, Any]], lang: str) -> list[dict[str, Any]]:
    """The page's sections in order, its table of contents: {id, title, suites, own}, where
    `suites` counts the suites shown in it and `own` marks a section the template does not
    write, made for the suites that name it: PAGE_SECTIONS, those, then "terms"."""
    out = [{"id": anchor, "title": t(key, lang), "suites": 0, "own": False}
           for anchor, key in PAGE_SECTIONS]
    by_id = {s["id"]: s for s in out}
    for suite in suites:
        if suite["section"] in _NO_SUITES:  # a bug in the suite's definition
            raise ValueError(f"suite {suite['name']}: section {suite['section']!r} shows no "
                             "suite's results")
        if suite["section"] not in by_id:
            by_id[suite["section"]] = {"id": suite["section"], "title": suite["heading"],
                                       "suites": 0, "own": True}
            out.append(by_id[suite["section"]])
        by_id[suite["section"]]["suites"] += 1
    return [*out, {"id": "terms", "title": t("sec_terms", lang), "suites": 0, "own": False}]


def _ffn(doc: dict[str, Any], lang: str) -> dict[str, Any]:
    budget = doc["ffn_budget"]
    return {"columns": [t(k, lang) for k in ("col_vary", "col_value", "col_plain_params",
                                             "col_gated_params", "col_plain_inter",
                                             "col_gated_inter")],
            "rows": [[r["vary"], r["value"], r["plain_params"], r["gated_params"],
                      r["plain_intermediate"], r["gated_intermediate"]]
                     for r in budget["rows"]]}


def _norm(doc: dict[str, Any], lang: str) -> dict[str, Any]:
    norm = doc["normalization"]
    yes, no = t("yes", lang), t("no", lang)
    # each judgement beside the deviation and the tolerance that made it
    rows = [[t(f"t_{r['transform']}", lang), r["norm"], eps,
             yes if r["invariant"] else no, r["max_deviation"], yes if r["sign_flip"] else no,
             r["sign_flip_deviation"], r["tolerance"]]
            for eps, table_rows in norm["shift_scale"].items() for r in table_rows]
    checks = [[c["name"], c["claim"], c["max_error"], c["tolerance"],
               t("pass", lang) if c["passed"] else t("fail", lang)]
              for c in norm["jacobian_checks"]]
    return {"columns": [t(k, lang) for k in ("col_transform", "col_norm", "col_eps",
                                             "col_invariant", "col_max_dev", "col_sign_flip",
                                             "col_flip_dev", "col_tol")],
            "rows": rows,
            "intro": t("shift_scale_intro", lang).format(x=norm["x"], shift=norm["shift"],
                                                         scale=norm["scale"],
                                                         channels=norm["channel_scales"]),
            "check_columns": [t(k, lang) for k in ("col_check", "col_id", "col_max_error",
                                                   "col_tol", "col_result")],
            "checks": checks}


def _deploy(doc: dict[str, Any], lang: str) -> dict[str, Any]:
    dep = doc["deployment"]
    context = dep["table_context"]
    rows = []
    balance = 0.0
    for name, series in dep["models"].items():
        r = next(x for x in series if x["context"] == context)
        balance = r["balance_flops_per_byte"]
        rows.append([name, f"{r['prefill']['ffn_share']:.1%}", r["decode"]["total"] / 1e9,
                     f"{r['decode']['attention_scores_share']:.1%}",
                     _gib(r["kv_cache_bytes"]), _gib(r["weights_bytes"]),
                     r["decode_flops_per_byte"]])
    return {"columns": [t(k, lang) for k in ("col_model", "col_prefill_ffn_share",
                                             "col_decode_gflops", "col_decode_attn_share",
                                             "col_kv", "col_weights", "col_intensity")],
            "rows": rows,
            "caption": t("deploy_table_caption", lang).format(context=context,
                                                              balance=balance)}


# --- templates -----------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def environment() -> Environment:
    """The Jinja2 environment of the page: the package's templates, autoescape on for every
    template, and an undefined name an error rather than an empty string."""
    env = Environment(loader=PackageLoader("blocklab.report", "templates"), autoescape=True,
                      undefined=StrictUndefined, keep_trailing_newline=True)
    env.filters.update({"cell": _cell, "prose": prose, "estimate_words": estimate_words,
                        "rule_words": rule_words, "lead_and_rest": lead_and_rest,
                        "line_words": line_words, "numbers": _numbers,
                        "budget_words": budget_words, "design_words": design_words,
                        "open_parts": open_parts, "budget_rows": budget_rows,
                        "verdict_counts": verdict_counts, "ledger_line": ledger_line,
                        "claim_links": claim_links,
                        # that a suite's runs came from several machines or bf16 kernels
                        "mixed_words": lambda summary, lang: mixed_notes(
                            summary.get("machines") or [], summary.get("kernels") or [], lang)})
    return env


def _context(doc: dict[str, Any], figures: dict[str, Figure], lang: str) -> dict[str, Any]:
    """What every template sees: the document, the figures, the language and its words."""
    ledger = doc.get("ledger") or []
    budgets = (doc.get("decision_budget") or {}).get("parts", [])
    return {"doc": doc, "figures": figures, "lang": lang, "suites": shown_suites(doc, lang),
            "t": lambda key: t(key, lang),
            "caption": lambda key: figure_caption(key, doc, lang),
            "verdict_names": VERDICT_ZH if lang == "zh" else VERDICT_EN,
            "verdict_meanings": {v: m[1] if lang == "zh" else m[0]
                                 for v, m in VERDICT_MEANING.items()},
            "verdict_symbols": {v: style.symbol for v, style in VERDICT_STYLES.items()},
            "verdict_styles": VERDICT_STYLES,
            "verdict_order": VERDICT_ORDER, "added_claims": SUBSECTION_CLAIMS,
            "budgets": {(p["claim"], p["part"]): p for p in budgets},
            "lead_figure": LEAD_FIGURE, "terms": TERMS,
            "provenance": provenance_words(ledger, lang), "levels": levels_words(ledger, lang),
            "forest_key": forest_key,
            "budget_columns": [t(k, lang) for k in BUDGET_COLUMNS]}


def _macros(doc: dict[str, Any], figures: dict[str, Figure], lang: str):
    return environment().get_template("macros.html.j2").make_module(_context(doc, figures, lang))


def render_html(doc: dict[str, Any], figures: dict[str, Figure], lang: str) -> str:
    """The whole page as a string, each statistical word defined where it first stands."""
    gen = doc["generated"]
    page = environment().get_template("page.html.j2")
    context = _context(doc, figures, lang)
    html = page.render(
        context, sections=sections(context["suites"], lang),
        generated=t("generated", lang).format(size=gen["size"], results=gen["results"],
                                              created=gen["created"], version=gen["version"]),
        size_note=(gen.get("size_note") or {}).get(lang),
        ffn=_ffn(doc, lang), norm=_norm(doc, lang), deploy=_deploy(doc, lang),
        rope={"columns": [t("col_shift", lang), t("col_gap", lang)],
              "rows": [[int(s), gap] for s, gap in doc["rope"]["float64_gap_by_shift"].items()]})
    return define_terms(html, lang)
