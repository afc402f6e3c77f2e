"""Every word of the report that is not data, in English and Chinese (`strings.toml`).

`t(key, lang)` returns the string; `{name}` placeholders are filled by the caller with
`str.format`. Figure captions live in `CAPTIONS` (what the figure shows; the reproducing command
is appended by the renderer). A missing key raises KeyError: a typo must not render silently.
A suite's heading is the suite's own (`Suite.heading`), so a new suite needs no words here.
Each sentence stands whole in the catalogue, never assembled from fragments, so a translator
reads and writes whole sentences.
"""

from __future__ import annotations

from blocklab.wording import load

_TABLES = load("blocklab.report", "strings.toml")
STRINGS = _TABLES["STRINGS"]
# Figure key -> (English caption, Chinese caption): what the figure shows.
CAPTIONS = _TABLES["CAPTIONS"]
# A part's decision in the ledger's one-line view, short enough for its column.
DECISION_SHORT = _TABLES["DECISION_SHORT"]
# The opening findings' sentences and labels (`report.findings`).
FINDINGS = _TABLES["FINDINGS"]
# What a part's verdict says in a finding, by the statement it grades: "kind verdict" -> text.
FINDING_WORDS = _TABLES["FINDING_WORDS"]
# The statistical terms' names, patterns and meanings, by term (`report.terms`).
TERM_TEXT = {part: _TABLES[f"TERM_{part.upper()}"] for part in ("names", "words", "meanings")}


def t(key: str, lang: str, table: dict[str, tuple[str, str]] = STRINGS) -> str:
    """The string `key` of `table` (STRINGS, or CAPTIONS for a figure's) in `lang` ("en" or
    "zh")."""
    en, zh = table[key]
    return zh if lang == "zh" else en
