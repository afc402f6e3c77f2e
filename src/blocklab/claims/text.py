"""The claims in our own words (English and Chinese), and where each one stands on its page.

`CLAIMS.md` beside this file lists the claims (C01–C37, each citing its `[§ section heading]` or
inline `(§ heading)`s); `claim_sources()` parses it, so the ledger cites them as written.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

from blocklab.wording import load

# Every printed sentence of the claims, by the module that prints it (`wording.toml`).
WORDING = load("blocklab.claims", "wording.toml")

PAGES = {"000": "000_4f34db7e0f1b54c8.txt", "001": "001_3354982bf5d64f93.txt"}

# id -> (English, Chinese): the claim restated, not quoted.
CLAIM_TEXT: dict[str, tuple[str, str]] = WORDING["CLAIM_TEXT"]

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
VERDICT_ZH = {"confirmed": "成立", "refuted": "不成立", "conditional": "有条件成立",
              "mixed": "部分成立",
              "contradicted-at-this-scale": "此规模下与之相反",
              "not-reproduced-at-this-scale": "此规模下未复现", "inconclusive": "尚无定论",
              "run": "已运行",
              "untestable-here": "此处无法检验", "missing-results": "缺少实验结果",
              ERROR: "检查出错"}
VERDICT_EN = {verdict: verdict.replace("-", " ") for verdict in VERDICT_ZH}
# Each verdict's one definition, (English, Chinese), for the docs and the report.
VERDICT_MEANING: dict[str, Template] = WORDING["VERDICT_MEANING"]


def say(template: Template, lang: str, /, **fields: object) -> str:
    """`template` in `lang` ("en" or "zh") with its named fields filled (`str.format`)."""
    en, zh = template
    return (zh if lang == "zh" else en).format(**fields)


def both(template: Template, /, **fields: object) -> tuple[str, str]:
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
