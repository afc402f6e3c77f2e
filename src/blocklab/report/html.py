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
from blocklab.report.figures import Figure
from blocklab.report.i18n import caption, t

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
.v-confirmed { background: #dafbe1; color: #116329; border-color: #8ddb9d; }
.v-refuted { background: #ffebe9; color: #a40e26; border-color: #ff9fa8; }
.v-conditional { background: #fff8c5; color: #7d4e00; border-color: #e8c95a; }
.v-untestable-here { background: #f1e7ff; color: #6639ba; border-color: #c8a8f5; }
.v-contradicted-at-this-scale { background: #fff1e5; color: #953800; border-color: #ffb77c; }
.v-not-reproduced-at-this-scale { background: #fff8c5; color: #633c01; border-color: #d4a72c; }
.v-inconclusive { background: #f6f8fa; color: #59636e; border-color: #afb8c1; }
.v-run { background: #ddf4ff; color: #0550ae; border-color: #80ccff; }
.v-missing-results { background: #eaeef2; color: #424a53; border-color: #c0c8d0; }
.v-error { background: #fff; color: #a40e26; border-color: #a40e26; }
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
footer { margin: 40px auto 30px; color: var(--muted); font-size: 0.88em;
         border-top: 1px solid var(--line); padding-top: 10px; }
"""


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


def part_item(part: dict[str, Any], lang: str) -> str:
    """One graded part of a claim: verdict, estimate [95% CI] (n), reason and registered rule."""
    from blocklab.claims.rules import estimate_text

    e, rule = part["estimate"], part["rule"]
    value = estimate_text(e["value"], e["ci_low"], e["ci_high"], e["n"])
    beyond = f" (beyond {rule['threshold']:g})" if rule.get("threshold") else ""
    rule_text = (f"{rule['metric']}; {rule.get('test', 'effect')}, claimed "
                 f"{rule['claimed']:+g}{beyond}, smallest effect "
                 f"{rule['smallest_effect']:g}, margin ±{rule['margin']:g}, min seeds "
                 f"{rule['min_seeds']}" + (f"; rule {part['rule_hash']}" if part.get("rule_hash")
                                           else ""))
    return (f"<li><b>{escape(part['name'])}</b> {badge(part['verdict'], lang)} "
            f"{escape(value)}: {escape(part['reason'])}. <span class=\"muted\">"
            f"{escape(t('rule', lang))}: {escape(rule_text)}</span></li>")


# --- sections ------------------------------------------------------------------------------------
def ledger_section(doc: dict[str, Any], figures: dict[str, Figure], lang: str) -> str:
    zh = lang == "zh"
    rows = []
    counts: dict[str, int] = {}
    errors = 0
    # A check that raised has no verdict, whatever placeholder the ledger gave it.
    failed_badge = f'<span class="badge v-error">{escape(t("check_failed", lang))}</span>'
    for r in doc["ledger"]:
        if r.get("error"):
            errors += 1
        else:
            counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
        evidence = prose(r["summary_zh"] if zh else r["summary"])
        if r.get("error"):
            evidence += f'<br><span class="error">{escape(r["error"])}</span>'
        if r.get("command"):
            evidence += f'<span class="cmd">{escape(t("command", lang))}: {code(r["command"])}</span>'
        if r.get("parts"):
            evidence += "<ul class=\"parts\">" + "".join(
                part_item(p, lang) for p in r["parts"]) + "</ul>"
            combines = (r.get("combines_zh") if zh else None) or r.get("combines")
            if combines:
                evidence += (f'<span class="muted">{escape(t("combined", lang))}: '
                             f'{escape(combines)}</span>')
        numbers = {k: v for k, v in r["evidence"].items() if k != "traceback"}
        if numbers:
            evidence += (f'<details><summary>{escape(t("numbers", lang))}</summary><pre>'
                         f"{escape(json.dumps(numbers, indent=1, ensure_ascii=False))}"
                         "</pre></details>")
        if r.get("figure") and r["figure"] in figures:
            evidence += (f'<span class="cmd"><a href="#fig-{escape(r["figure"])}">'
                         f'{escape(t("see_figure", lang))} →</a></span>')
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
            f'<table class="ledger"><thead><tr>{head}</tr></thead><tbody>' + "".join(rows)
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
            out.append("<ul class=\"parts\">" + "".join(part_item(x, lang) for x in r["parts"])
                       + "</ul>")
            combines = (r.get("combines_zh") if zh else None) or r.get("combines")
            if combines:
                out.append(f'<p class="muted">{escape(t("combined", lang))}: '
                           f'{escape(combines)}</p>')
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
    body = [ledger_section(doc, figures, lang),
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
