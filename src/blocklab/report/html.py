"""The report page: one self-contained HTML file (inline CSS, figures as data: URIs, no script).

`render_html(doc, figures, lang)` turns the document of `build.collect` and the figures of
`figures.make_figures` into the page. Every piece of text goes through `html.escape`; the page
loads nothing from anywhere, so it opens from disk and offline.

Layout: header, table of contents, the claims ledger, then one section per page topic (FFN,
normalization, placement, position encodings, deployment). Suite sections whose results are
missing show the command that produces them.
"""

from __future__ import annotations

import json
import re
from html import escape
from typing import Any

from blocklab.claims import VERDICT_ZH
from blocklab.report.figures import VERDICT_COLOURS, Figure
from blocklab.report.i18n import DECISION_SHORT, caption, t

VERDICT_EN = {"confirmed": "confirmed", "refuted": "refuted", "conditional": "conditional",
              "contradicted-at-this-scale": "contradicted at this scale",
              "not-reproduced-at-this-scale": "not reproduced at this scale",
              "inconclusive": "inconclusive", "run": "run",
              "untestable-here": "untestable here", "missing-results": "missing results",
              "error": "error"}

CSS = """
:root { --ink: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg: #ffffff; --soft: #f6f8fa;
        --accent: #0969da; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: var(--bg); line-height: 1.5; font-size: 15px;
       font-family: system-ui, -apple-system, "Segoe UI", "Noto Sans", "Noto Sans CJK SC",
       "PingFang SC", "Microsoft YaHei", "Helvetica Neue", Arial, sans-serif; }
header, main, nav.toc, footer { max-width: 1180px; margin: 0 auto; padding: 0 24px; }
header { padding-top: 28px; }
h1 { font-size: 1.6em; margin: 0 0 6px; }
h2 { font-size: 1.35em; margin: 40px 0 10px; padding-bottom: 6px;
     border-bottom: 1px solid var(--line); }
h3 { font-size: 1.1em; margin: 26px 0 8px; }
p { margin: 6px 0 10px; }
.muted { color: var(--muted); }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono",
       monospace; font-size: 0.88em; background: var(--soft); padding: 1px 5px;
       border-radius: 4px; overflow-wrap: anywhere; }
nav.toc { margin-top: 14px; }
nav.toc ol { margin: 4px 0; padding-left: 22px; columns: 2; }
nav.toc div.box { background: var(--soft); border: 1px solid var(--line); border-radius: 8px;
                  padding: 10px 16px; }
table { border-collapse: collapse; width: 100%; margin: 8px 0 4px; font-size: 0.92em; }
th, td { border: 1px solid var(--line); padding: 5px 8px; vertical-align: top; text-align: left; }
th { background: var(--soft); font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
caption { caption-side: bottom; text-align: left; color: var(--muted); font-size: 0.9em;
          padding-top: 4px; }
table.ledger td.id { font-weight: 600; white-space: nowrap; }
table.ledger td.src { font-size: 0.88em; color: var(--muted); min-width: 11em; }
table.ledger td.evidence { min-width: 22em; }
table.ledger td.claim { min-width: 16em; }
.cmd { display: block; margin-top: 4px; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 0.85em;
         font-weight: 600; white-space: nowrap; border: 1px solid transparent; }
.counts .badge { margin-right: 6px; }
.error { color: #a40e26; font-weight: 600; }
.notice { background: #fff8c5; border: 1px solid #e8c95a; border-radius: 8px;
          padding: 10px 14px; margin: 10px 0; }
.notice.fail { background: #ffebe9; border-color: #ff9fa8; }
figure { margin: 16px 0 22px; padding: 10px; border: 1px solid var(--line); border-radius: 8px;
         background: #fff; }
figure img { display: block; max-width: 100%; height: auto; margin: 0 auto; }
figcaption { color: var(--muted); font-size: 0.9em; margin-top: 6px; }
figcaption b { color: var(--ink); }
details { margin-top: 4px; font-size: 0.88em; }
details summary { color: var(--muted); cursor: pointer; }
details pre { max-height: 22em; overflow: auto; background: var(--soft); padding: 6px 8px;
              border-radius: 4px; font-size: 0.9em; white-space: pre-wrap; }
ul.notes { color: var(--muted); font-size: 0.9em; }
ul.parts { margin: 6px 0; padding-left: 18px; font-size: 0.92em; }
/* the ledger: one line of words per part, pictures beside, the rest folded */
table.ledger td.evidence { width: 46%; }
table.ledger p.lead { margin: 0 0 4px; }
ul.part-lines { list-style: none; margin: 4px 0; padding: 0; font-size: 0.86em; }
ul.part-lines li { display: flex; gap: 6px; align-items: baseline; line-height: 1.5; }
ul.part-lines .d { flex: none; width: 7.2em; padding: 0 4px; border-radius: 4px;
                   border: 1px solid transparent; font-size: 0.92em; font-weight: 600;
                   white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
ul.part-lines .w { flex: 1; min-width: 0; white-space: nowrap; overflow: hidden;
                   text-overflow: ellipsis; }
figure.forest { margin: 6px 0; padding: 4px; border: 0; }
figure.forest figcaption { font-size: 0.78em; line-height: 1.35; margin-top: 2px; }
p.budget { background: var(--soft); border: 1px solid var(--line); border-radius: 8px;
           padding: 8px 12px; }
details.more > summary { font-weight: 600; }
@media print {
  body { font-size: 11px; }
  header, main, nav.toc, footer { max-width: none; padding: 0; }
  * { position: static !important; box-shadow: none !important; }
  details::details-content { content-visibility: visible; display: block; }
  details > summary { list-style: none; font-weight: 600; }
  details pre { max-height: none; overflow: visible; }
  ul.part-lines .w { white-space: normal; overflow: visible; }
  tr, figure, li { break-inside: avoid; }
  thead { display: table-header-group; }
  a { color: inherit; }
}
footer { margin: 40px auto 30px; color: var(--muted); font-size: 0.88em;
         border-top: 1px solid var(--line); padding-top: 10px; }
"""
# The verdict chips, coloured from the table the plots use (figures.VERDICT_COLOURS).
CSS += "".join(f".v-{verdict} {{ background: {bg}; color: {fg}; border-color: {border}; }}\n"
               for verdict, (bg, fg, border) in VERDICT_COLOURS.items())


# --- helpers -------------------------------------------------------------------------------------
# A cell the suites pre-formatted as a number: "0.25", "+0.11 [−0.2, 0.4]", "4.1 (n=1)", "+1–2%".
_NUMERIC = re.compile(r"^[+\-−]?\d[\d,]*(\.\d+)?(e[+\-]?\d+)?(–\d+(\.\d+)?)?%?"
                      r"( \[[^\]]*\]| \(n=\d+\))?$")


def _cell(value: Any) -> tuple[str, bool]:
    """(escaped text, is_number) of a table cell."""
    if value is None:
        return "—", False
    if isinstance(value, bool):
        return escape(str(value).lower()), False
    if isinstance(value, int):
        return f"{value:,}", True
    if isinstance(value, float):
        return escape(f"{value:.4g}"), True
    text = str(value)
    return escape(text), bool(_NUMERIC.match(text))


def table(columns: list[str], rows: list[list[Any]], caption_text: str = "",
          css_class: str = "") -> str:
    head = "".join(f"<th>{escape(str(c))}</th>" for c in columns)
    body = []
    for row in rows:
        cells = []
        for value in row:
            text, number = _cell(value)
            cells.append(f'<td class="num">{text}</td>' if number else f"<td>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    cap = f"<caption>{escape(caption_text)}</caption>" if caption_text else ""
    cls = f' class="{css_class}"' if css_class else ""
    return (f"<table{cls}>{cap}<thead><tr>{head}</tr></thead><tbody>" + "".join(body)
            + "</tbody></table>")


def code(text: str) -> str:
    return f"<code>{escape(text)}</code>"


_BACKTICKS = re.compile(r"`([^`<>]+)`")


def prose(text: str) -> str:
    """Escaped text with `backticked` spans as <code> (the claims write names that way)."""
    return _BACKTICKS.sub(r"<code>\1</code>", escape(text))


def figure(key: str, figures: dict[str, Figure], lang: str, number: list[int]) -> str:
    """A figure with its caption and command, or nothing when it was not drawn."""
    fig = figures.get(key)
    if fig is None:
        return ""
    number[0] += 1
    label = f"{t('figure', lang)} {number[0]}"
    text = caption(key, lang)
    if fig.error:
        return (f'<figure id="fig-{escape(key)}"><div class="notice fail">'
                f"{escape(t('figure_failed', lang).format(error=fig.error))}</div>"
                f"<figcaption><b>{escape(label)}.</b> {escape(text)} "
                f'<span class="cmd">{escape(t("command", lang))}: {code(fig.command)}</span>'
                "</figcaption></figure>")
    return (f'<figure id="fig-{escape(key)}"><img src="{fig.data_uri}" alt="{escape(text)}">'
            f"<figcaption><b>{escape(label)}.</b> {escape(text)} "
            f'<span class="cmd">{escape(t("command", lang))}: {code(fig.command)}</span>'
            "</figcaption></figure>")


def badge(verdict: str, lang: str) -> str:
    names = VERDICT_ZH if lang == "zh" else VERDICT_EN
    return (f'<span class="badge v-{escape(verdict)}">'
            f"{escape(names.get(verdict, verdict))}</span>")


def missing_notice(suite: dict[str, Any], name: str, doc: dict[str, Any], lang: str) -> str:
    gen = doc["generated"]
    parts = []
    if suite.get("error"):
        parts.append(f'<div class="notice fail">'
                     f'{escape(t("suite_failed", lang).format(suite=name, error=suite["error"]))}'
                     "</div>")
    text = t("missing_suite", lang).format(suite=name, size=gen["size"], results=gen["results"])
    parts.append(f'<div class="notice missing">{escape(text)} {code(suite["command"])}</div>')
    return "".join(parts)


def suite_body(name: str, doc: dict[str, Any], figures: dict[str, Figure], lang: str,
               figure_keys: tuple[str, ...], number: list[int]) -> str:
    """A suite's figures, tables and notes, or the notice that its results are missing."""
    suite = doc["suites"][name]
    summary = suite.get("summary")
    if not summary:
        return missing_notice(suite, name, doc, lang)
    out = ['<p class="muted">' + escape(t("suite_meta", lang).format(
        suite=name, size=summary.get("size", "?"), runs=summary.get("runs", 0),
        seeds=summary.get("seeds", "?"), train=summary.get("wall_time_s") or 0.0))
        + f" {escape(t('command', lang))}: {code(suite['command'])}</p>"]
    for busy in suite.get("busy_timings") or []:
        out.append('<div class="notice">' + escape(t("busy_timing", lang).format(
            share=busy["others_cpu_share"], label=busy["label"])) + "</div>")
    out += [figure(key, figures, lang, number) for key in figure_keys]
    for spec in summary.get("tables", []):
        out.append(f"<h4>{escape(spec.get('title', ''))}</h4>")
        out.append(table(spec.get("columns", []), spec.get("rows", []),
                         spec.get("caption", "")))
    notes = summary.get("notes") or []
    if notes:
        out.append(f"<p class=\"muted\">{escape(t('notes', lang))}:</p><ul class=\"notes\">"
                   + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>")
    return "".join(out)


# --- the ledger's parts: one line of words each, the rest one click away ---------------------------
def _num(value: float | None) -> str:
    """A number as the ledger lines show it: 3 significant digits, a real minus sign."""
    if value is None:
        return "—"
    return f"{value:.3g}".replace("-", "−")


def _signed(value: float | None) -> str:
    if value is None:
        return "—"
    return ("+" if value > 0 else "") + _num(value)


def duration(seconds: float, lang: str) -> str:
    """'40 s', '3.5 min', '25 min'."""
    if seconds < 60:
        return t("seconds", lang).format(n=seconds)
    minutes = seconds / 60
    return t("minutes", lang).format(n=f"{minutes:.1f}" if minutes < 10 else f"{minutes:,.0f}")


def _unit_of(metric: str) -> str:
    return "%" if "%" in metric else " nats" if "nats" in metric else ""


def estimate_words(part: dict[str, Any]) -> str:
    """'−1.42% [−2.01, −0.83] (n=5)', '+0.3% (n=1)' or 'no estimate'."""
    e = part["estimate"]
    unit = _unit_of(part["rule"]["metric"])
    if e.get("value") is None:
        return "—"
    if e.get("ci_low") is None or e.get("ci_high") is None:
        return f"{_signed(e['value'])}{unit} (n={e.get('n', 0)})"
    return (f"{_signed(e['value'])}{unit} [{_signed(e['ci_low'])}, {_signed(e['ci_high'])}] "
            f"(n={e.get('n', 0)})")


def claimed_words(rule: dict[str, Any], lang: str) -> str:
    """What the rule claims, in a few words: '−1.5%', '≤ 5%', '≥ 25%', '5–25%', '±0.02 nats'."""
    from blocklab.report.figures import part_geometry

    g = part_geometry(rule)
    unit = _unit_of(rule["metric"])
    if g["test"] == "equivalence":
        low, high = g["band"]
        text = (f"±{_num(high)}{unit}" if g["claimed"] == 0 else
                f"{_num(low)}–{_num(high)}{unit}")
    elif g["test"] == "at-most":
        text = f"≤ {_num(g['boundary'])}{unit}"
    elif g["test"] == "at-least":
        text = f"≥ {_num(g['boundary'])}{unit}"
    elif rule.get("threshold"):
        text = (f"{'>' if g['side'] > 0 else '<'} {_num(g['boundary'])}{unit}")
    else:
        text = f"{_signed(g['claimed'])}{unit}"
    return t("part_claimed", lang).format(claim=text)


def why_words(part: dict[str, Any], lang: str, budget: dict[str, Any] | None) -> str:
    """Why the part got its decision, in a few words (the full reason is under details)."""
    from blocklab.report.figures import part_geometry

    decision, reason, rule = part["decision"], part.get("reason") or "", part["rule"]
    g = part_geometry(rule)
    n = part["estimate"].get("n") or 0
    bound = _num(g["boundary"]) if g["boundary"] is not None else ""
    if part.get("level") is None and decision not in ("run",):  # decided without a test
        return reason
    if decision == "run":
        return t("why_run", lang)
    if decision == "confirmed":
        return t("why_band_in" if g["band"] else "why_beyond", lang).format(b=bound)
    if decision == "contradicted-at-this-scale":
        return t("why_contradicted", lang).format(d=_num(g["delta"]))
    if decision == "not-reproduced-at-this-scale":
        if "would be contradicted" in reason:
            return t("why_would_contradict", lang)
        if "inside ±" in reason and g["margin"] is not None:
            return t("why_no_effect", lang).format(m=_num(g["margin"]))
        return t("why_band_out" if g["band"] else "why_short", lang).format(b=bound)
    if decision == "inconclusive":
        if "Holm's step-down stopped" in reason:
            why = t("why_holm", lang)
        elif n < 2:
            why = t("why_no_interval", lang).format(n=n, min=rule["min_seeds"])
        elif n < rule["min_seeds"]:
            why = t("why_few_seeds", lang).format(n=n, min=rule["min_seeds"])
        elif g["band"] is not None:
            why = t("why_straddles", lang).format(b=f"{_num(g['band'][0])}/{_num(g['band'][1])}")
        else:
            why = t("why_straddles", lang).format(b=bound)
        needed = part.get("seeds_needed")
        if needed is not None:
            why += t("why_needed", lang).format(needed=needed)
            if budget is not None:
                why += t("why_cost", lang).format(extra=budget["extra_seeds"],
                                                 time=duration(budget["seconds"], lang))
        return why
    return reason


def part_line(part: dict[str, Any], lang: str, budget: dict[str, Any] | None = None) -> str:
    """One graded part as one line of words: its decision (the chip's colour), its name,
    estimate [95% CI] (n), what is claimed, and why, e.g. 'confirmed · swiglu −1.42% [−2.01,
    −0.83] (n=5), claimed −1.5% (δ 0.5): the CI lies beyond −0.5'."""
    decision = part["decision"]
    words = t("part_line", lang).format(name=part["name"], estimate=estimate_words(part),
                                        claimed=claimed_words(part["rule"], lang),
                                        why=why_words(part, lang, budget))
    short = DECISION_SHORT.get(decision)
    label = (short[1] if lang == "zh" else short[0]) if short else decision
    return (f'<li class="part" title="{escape(label + " · " + words)}">'
            f'<span class="d v-{escape(decision)}">{escape(label)}</span>'
            f'<span class="w">{prose(words)}</span></li>')


def rule_words(part: dict[str, Any]) -> str:
    """A part's registered rule in full (metric, test, claimed, δ, margin, seeds, hash)."""
    rule = part["rule"]
    beyond = f" (beyond {rule['threshold']:g})" if rule.get("threshold") else ""
    return (f"{rule['metric']}; {rule.get('test', 'effect')}, claimed {rule['claimed']:+g}"
            f"{beyond}, smallest effect {rule['smallest_effect']:g}, margin "
            f"±{rule['margin']:g}, min seeds {rule['min_seeds']}"
            + (f"; rule {part['rule_hash']}" if part.get("rule_hash") else "")
            + f". {rule.get('decides', '')}")


def part_details(part: dict[str, Any], lang: str) -> str:
    """A part's full reason and rule, for the details fold."""
    return (f"<li><b>{escape(part['name'])}</b> {badge(part['decision'], lang)} "
            f"{escape(estimate_words(part))}: {escape(part.get('reason') or '')}. "
            f'<span class="muted">{escape(t("rule", lang))}: {escape(rule_words(part))}'
            "</span></li>")


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


def forest_figure(row: dict[str, Any], figures: dict[str, Figure], lang: str,
                  key_number: int | None) -> str:
    """A claim's forest plot in its ledger row: no figure number of its own; its key is the
    overview's caption (figure `key_number`)."""
    from blocklab.report.figures import forest_key

    key = forest_key(row["id"])
    fig = figures.get(key)
    if fig is None:
        return ""
    text = t("forest_caption", lang).format(id=row["id"], n=key_number or "")
    cmd = f'{escape(t("command", lang))}: {code(fig.command)}'
    if fig.error:
        return (f'<figure id="fig-{escape(key)}" class="forest"><div class="notice fail">'
                f"{escape(t('figure_failed', lang).format(error=fig.error))}</div>"
                f"<figcaption>{escape(text)} {cmd}</figcaption></figure>")
    return (f'<figure id="fig-{escape(key)}" class="forest"><img src="{fig.data_uri}" '
            f'alt="{escape(text)}"><figcaption>{escape(text)} {cmd}</figcaption></figure>')


def budget_sentence(doc: dict[str, Any], lang: str) -> str:
    """'With about N more minutes on this machine these K parts would likely be decided', the
    parts it counts folded under it, and the inconclusive parts no number of seeds can be
    priced for yet."""
    budget = doc.get("decision_budget")
    if not budget or not (budget["parts"] or budget["unsized"]):
        return ""
    minutes = budget["seconds"] / 60
    shown = f"{minutes:.1f}" if minutes < 10 else f"{minutes:,.0f}"
    out: list[str] = []
    if budget["parts"]:
        out.append(t("budget_sentence", lang).format(minutes=shown, k=len(budget["parts"]),
                                                     workers=budget["workers"]))
    else:
        out.append(t("budget_none", lang))
    if budget["unsized"]:
        out.append(t("budget_unsized", lang).format(u=len(budget["unsized"])))
    rows = [[p["claim"], p["part"], p["n"], p["seeds_needed"], p["extra_seeds"],
             f"{p['seed_cost_s']:.1f}", f"{p['seconds'] / 60:.1f}",
             ", ".join(p["arms"]) + (f" ({t('whole_suite', lang)})" if p["whole_suite"]
                                     else "")]
            for p in budget["parts"]]
    rows += [[p["claim"], p["part"], p["n"], "—", "—", "—", "—", "—"]
             for p in budget["unsized"]]
    cols = [t(k, lang) for k in ("col_id", "col_part", "col_n", "col_needed", "col_extra",
                                 "col_seed_cost", "col_minutes", "col_arms")]
    return (f'<p class="budget">{escape(" ".join(out))}</p>'
            f'<details><summary>{escape(t("budget_which", lang))}</summary>'
            + table(cols, rows, t("budget_caption", lang).format(workers=budget["workers"]))
            + "</details>")


def evidence_cell(r: dict[str, Any], figures: dict[str, Figure], lang: str,
                  key_number: int | None, budgets: dict[tuple[str, str], dict[str, Any]]
                  ) -> str:
    """A ledger row's evidence: the summary's first sentence, the claim's forest plot, one line
    of words per part, and under one details fold the rest: the summary's remainder, each
    part's reason and registered rule, the combining rule, the command and the numbers."""
    zh = lang == "zh"
    lead, rest = lead_and_rest(r["summary_zh"] if zh else r["summary"], lang)
    out = [f'<p class="lead">{prose(lead)}']
    if r.get("figure") and r["figure"] in figures:
        out.append(f' <a href="#fig-{escape(r["figure"])}">{escape(t("see_figure", lang))} →</a>')
    out.append("</p>")
    if r.get("error"):
        out.append(f'<p class="error">{escape(r["error"])}</p>')
    out.append(forest_figure(r, figures, lang, key_number))
    parts = r.get("parts") or []
    if parts:
        out.append('<ul class="part-lines">' + "".join(
            part_line(p, lang, budgets.get((r["id"], p["name"]))) for p in parts) + "</ul>")
    fold = []
    if rest:
        fold.append(f"<p>{prose(rest)}</p>")
    if parts:
        fold.append('<ul class="parts">' + "".join(part_details(p, lang) for p in parts)
                    + "</ul>")
        combines = (r.get("combines_zh") if zh else None) or r.get("combines")
        if combines:
            fold.append(f'<p class="muted">{escape(t("combined", lang))}: '
                        f'{escape(combines)}</p>')
    if r.get("command"):
        fold.append(f'<p class="cmd">{escape(t("command", lang))}: {code(r["command"])}</p>')
    numbers = {k: v for k, v in r["evidence"].items() if k != "traceback"}
    if numbers:
        fold.append(f'<p class="muted">{escape(t("numbers", lang))}:</p><pre>'
                    f"{escape(json.dumps(numbers, indent=1, ensure_ascii=False))}</pre>")
    if fold:
        out.append(f'<details class="more"><summary>{escape(t("details", lang))}</summary>'
                   + "".join(fold) + "</details>")
    return "".join(out)


# --- sections ------------------------------------------------------------------------------------
def ledger_section(doc: dict[str, Any], figures: dict[str, Figure], lang: str,
                   number: list[int] | None = None) -> str:
    zh = lang == "zh"
    number = [0] if number is None else number
    rows = []
    counts: dict[str, int] = {}
    errors = 0
    # A check that raised has no verdict, whatever placeholder the ledger gave it.
    failed_badge = f'<span class="badge v-error">{escape(t("check_failed", lang))}</span>'
    overview = figure("ledger_overview", figures, lang, number)
    key_number = number[0] if overview else None
    budgets = {(p["claim"], p["part"]): p
               for p in (doc.get("decision_budget") or {}).get("parts", [])}
    for r in doc["ledger"]:
        if r.get("error"):
            errors += 1
        else:
            counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
        evidence = evidence_cell(r, figures, lang, key_number, budgets)
        source = f"{escape(r['page'])}<br>§ {escape(r['section'])}"
        rows.append(
            f'<tr id="{escape(r["id"])}"><td class="id">{escape(r["id"])}</td>'
            f"<td>{badge(r['verdict'], lang) if not r.get('error') else failed_badge}</td>"
            f'<td class="claim">{prose(r["claim_zh"] if zh else r["claim"])}</td>'
            f'<td class="evidence">{evidence}</td><td class="src">{source}</td></tr>')
    head = "".join(f"<th>{escape(t(k, lang))}</th>" for k in
                   ("col_id", "col_verdict", "col_claim", "col_evidence", "col_source"))
    order = ("confirmed", "conditional", "refuted", "contradicted-at-this-scale",
             "not-reproduced-at-this-scale", "inconclusive", "run", "untestable-here",
             "missing-results")
    summary = " ".join(f"{badge(v, lang)}<b>{counts[v]}</b>" for v in order if v in counts)
    if errors:
        summary += f" {failed_badge}<b>{errors}</b>"
    return (f'<section id="ledger"><h2>{escape(t("sec_ledger", lang))}</h2>'
            f"<p>{escape(t('ledger_intro', lang))}</p>"
            f'<p class="counts">{escape(t("verdict_counts", lang))}: {summary}</p>'
            + budget_sentence(doc, lang) + overview
            + f'<table class="ledger"><thead><tr>{head}</tr></thead><tbody>' + "".join(rows)
            + "</tbody></table></section>")


def ffn_section(doc: dict[str, Any], figures: dict[str, Figure], lang: str,
                number: list[int]) -> str:
    budget = doc["ffn_budget"]
    cols = [t(k, lang) for k in ("col_vary", "col_value", "col_plain_params",
                                 "col_gated_params", "col_plain_inter", "col_gated_inter")]
    rows = [[r["vary"], r["value"], r["plain_params"], r["gated_params"],
             r["plain_intermediate"], r["gated_intermediate"]] for r in budget["rows"]]
    return (f'<section id="ffn"><h2>{escape(t("sec_ffn", lang))}</h2>'
            f'<h3>{escape(t("sub_ffn_budget", lang))}</h3>'
            f"<p>{escape(t('ffn_budget_intro', lang).format(**budget['base']))}</p>"
            + figure("ffn_budget", figures, lang, number)
            + table(cols, rows, f"{t('command', lang)}: {budget['command']}")
            + f'<h3>{escape(t("sub_ffn_suite", lang))}</h3>'
            + suite_body("ffn", doc, figures, lang,
                         ("ffn_variants", "ffn_loss_curves", "scale_trend"), number)
            + "</section>")


def norm_section(doc: dict[str, Any], figures: dict[str, Figure], lang: str,
                 number: list[int]) -> str:
    norm = doc["normalization"]
    names = {k: t(f"t_{k}", lang) for k in ("shift", "positive_scale", "negative_scale",
                                             "per_channel_scale")}
    yes, no = t("yes", lang), t("no", lang)
    rows = []
    for eps, table_rows in norm["shift_scale"].items():
        for r in table_rows:
            rows.append([names.get(r["transform"], r["transform"]), r["norm"], eps,
                         yes if r["invariant"] else no, r["max_deviation"],
                         yes if r["sign_flip"] else no])
    cols = [t(k, lang) for k in ("col_transform", "col_norm", "col_eps", "col_invariant",
                                 "col_max_dev", "col_sign_flip")]
    intro = t("shift_scale_intro", lang).format(x=norm["x"], shift=norm["shift"],
                                                scale=norm["scale"],
                                                channels=norm["channel_scales"])
    checks = [[c["name"], c["claim"], c["max_error"], c["tolerance"],
               t("pass", lang) if c["passed"] else t("fail", lang)]
              for c in norm["jacobian_checks"]]
    check_cols = [t(k, lang) for k in ("col_check", "col_id", "col_max_error", "col_tol",
                                       "col_result")]
    return (f'<section id="normalization"><h2>{escape(t("sec_norm", lang))}</h2>'
            f'<h3>{escape(t("sub_shift_scale", lang))}</h3><p>{escape(intro)}</p>'
            + table(cols, rows, f"{t('command', lang)}: {norm['commands']['shift_scale']}")
            + f'<h3>{escape(t("sub_jacobians", lang))}</h3>'
            + table(check_cols, checks, f"{t('command', lang)}: {norm['commands']['jacobians']}")
            + f'<h3>{escape(t("sub_norm_cost", lang))}</h3>'
            + suite_body("norm-cost", doc, figures, lang, ("norm_cost",), number)
            + "</section>")


def placement_section(doc: dict[str, Any], figures: dict[str, Figure], lang: str,
                      number: list[int]) -> str:
    return (f'<section id="placement"><h2>{escape(t("sec_placement", lang))}</h2>'
            f'<h3>{escape(t("sub_placement_suite", lang))}</h3>'
            + suite_body("placement", doc, figures, lang,
                         ("placement_training", "placement_gradients"), number)
            # The deep grid's figure sits with C36's graded parts (one figure, one id).
            + f'<p>{escape(t("placement_deep_note", lang))}<a href="#claim-C36">C36</a>.</p>'
            + "</section>")


def position_section(doc: dict[str, Any], figures: dict[str, Figure], lang: str,
                     number: list[int]) -> str:
    rope = doc["rope"]
    rows = [[int(s), gap] for s, gap in rope["float64_gap_by_shift"].items()]
    cols = [t("col_shift", lang), t("col_gap", lang)]
    return (f'<section id="position"><h2>{escape(t("sec_position", lang))}</h2>'
            f'<h3>{escape(t("sub_extrapolation", lang))}</h3>'
            + suite_body("position", doc, figures, lang,
                         ("position_extrapolation", "passkey"), number)
            + f'<h3>{escape(t("sub_rope_check", lang))}</h3>'
            f"<p>{escape(t('rope_float64_intro', lang))}</p>"
            + table(cols, rows, f"{t('command', lang)}: {rope['command']}")
            + figure("rope_relative_error", figures, lang, number)
            + "</section>")


def deploy_section(doc: dict[str, Any], figures: dict[str, Figure], lang: str,
                   number: list[int]) -> str:
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
    cols = [t(k, lang) for k in ("col_model", "col_prefill_ffn_share", "col_decode_gflops",
                                 "col_decode_attn_share", "col_kv", "col_weights",
                                 "col_intensity")]
    cap = t("deploy_table_caption", lang).format(context=context, balance=balance)
    return (f'<section id="deployment"><h2>{escape(t("sec_deploy", lang))}</h2>'
            f"<p>{escape(t('deploy_intro', lang))}</p>"
            f'<h3>{escape(t("sub_flops", lang))}</h3>'
            + figure("prefill_split", figures, lang, number)
            + figure("decode_split", figures, lang, number)
            + table(cols, rows, cap)
            + f'<h3>{escape(t("sub_kv", lang))}</h3>'
            + figure("kv_cache", figures, lang, number)
            + f'<h3>{escape(t("sub_quantize", lang))}</h3>'
            f"<p>{escape(t('quantize_intro', lang))} "
            f'<a href="#claim-C32">C32</a>, <a href="#claim-C33">C33</a>.</p>'
            + suite_body("quantize", doc, figures, lang, (), number)
            + "</section>")


# Claims added after the first ledger: one subsection each, with the check's own table and figure.
ADDED_CLAIMS = ("C29", "C30", "C31", "C32", "C33", "C34", "C35", "C36")


def claim_table(evidence: dict[str, Any]) -> str:
    """The table a check put in its evidence as {"table": {"columns": [...], "rows": [...],
    "caption": ...}}, or nothing."""
    spec = evidence.get("table")
    if not spec:
        return ""
    return table(spec["columns"], spec["rows"], spec.get("caption", ""))


def added_claims_section(doc: dict[str, Any], figures: dict[str, Figure], lang: str,
                         number: list[int]) -> str:
    """One subsection per claim of ADDED_CLAIMS: the claim, its verdict, what the check found,
    its graded parts, its table and figure, and the command that reproduces it."""
    zh = lang == "zh"
    rows = {r["id"]: r for r in doc["ledger"]}
    out = [f'<section id="more-claims"><h2>{escape(t("sec_more_claims", lang))}</h2>'
           f"<p>{escape(t('more_claims_intro', lang))}</p>"]
    for cid in ADDED_CLAIMS:
        r = rows.get(cid)
        if r is None:
            continue
        verdict = (f'<span class="badge v-error">{escape(t("check_failed", lang))}</span>'
                   if r.get("error") else badge(r["verdict"], lang))
        out.append(f'<h3 id="claim-{escape(cid)}">{escape(cid)} {verdict}</h3>'
                   f'<p><i>{prose(r["claim_zh"] if zh else r["claim"])}</i> '
                   f'<span class="muted">{escape(r["page"])} § {escape(r["section"])}</span></p>'
                   f'<p>{prose(r["summary_zh"] if zh else r["summary"])}</p>')
        if r.get("error"):
            out.append(f'<p class="error">{escape(r["error"])}</p>')
        if r.get("parts"):
            # one line per part (the forest plot is in the claim's ledger row), the rest folded
            budgets = {(p["claim"], p["part"]): p
                       for p in (doc.get("decision_budget") or {}).get("parts", [])}
            out.append('<ul class="part-lines">' + "".join(
                part_line(x, lang, budgets.get((cid, x["name"]))) for x in r["parts"])
                + "</ul>")
            combines = (r.get("combines_zh") if zh else None) or r.get("combines")
            out.append(f'<details class="more"><summary>{escape(t("details", lang))}</summary>'
                       '<ul class="parts">' + "".join(part_details(x, lang) for x in r["parts"])
                       + "</ul>" + (f'<p class="muted">{escape(t("combined", lang))}: '
                                    f'{escape(combines)}</p>' if combines else "")
                       + "</details>")
        out.append(claim_table(r["evidence"]))
        if r.get("figure"):
            out.append(figure(r["figure"], figures, lang, number))
        if r.get("command"):
            out.append(f'<p class="cmd">{escape(t("command", lang))}: {code(r["command"])}</p>')
    return "".join(out) + "</section>"


def _gib(n: int) -> str:
    return f"{n / 2**30:,.2f} GiB"


SECTIONS = (("ledger", "sec_ledger"), ("ffn", "sec_ffn"), ("normalization", "sec_norm"),
            ("placement", "sec_placement"), ("position", "sec_position"),
            ("deployment", "sec_deploy"), ("more-claims", "sec_more_claims"))


def size_notice(gen: dict[str, Any], lang: str) -> str:
    """The line that says a size decides nothing (tiny), or nothing."""
    note = (gen.get("size_note") or {}).get(lang)
    return f'<div class="notice">{escape(note)}</div>' if note else ""


def render_html(doc: dict[str, Any], figures: dict[str, Figure], lang: str) -> str:
    """The whole page as a string."""
    gen = doc["generated"]
    number = [0]  # figure counter, shared by the sections in page order
    body = [ledger_section(doc, figures, lang, number),
            ffn_section(doc, figures, lang, number),
            norm_section(doc, figures, lang, number),
            placement_section(doc, figures, lang, number),
            position_section(doc, figures, lang, number),
            deploy_section(doc, figures, lang, number),
            added_claims_section(doc, figures, lang, number)]
    toc = "".join(f'<li><a href="#{anchor}">{escape(t(key, lang))}</a></li>'
                  for anchor, key in SECTIONS)
    generated = t("generated", lang).format(size=gen["size"], results=gen["results"],
                                            created=gen["created"], version=gen["version"])
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="{"zh-CN" if lang == "zh" else "en"}"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(t('title', lang))}</title><style>{CSS}</style></head><body>"
        f"<header><h1>{escape(t('title', lang))}</h1><p>{escape(t('subtitle', lang))}</p>"
        f'<p class="muted">{escape(generated)} {escape(t("reproduce_all", lang))}: '
        f"{code(gen['command'])}</p>{size_notice(gen, lang)}</header>"
        f'<nav class="toc"><div class="box"><b>{escape(t("contents", lang))}</b>'
        f"<ol>{toc}</ol></div></nav>"
        "<main>" + "".join(body) + "</main>"
        f"<footer>{escape(t('lang_switch', lang))}</footer>"
        "</body></html>\n")
