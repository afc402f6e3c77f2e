"""The report's colours and symbols, one table each, read by the HTML, the figures, the README
table and the CLI alike: a verdict looks the same wherever it stands, and no two verdicts
share a colour (red is refuted's, nothing else's).

Each verdict has one colour (its chip's text and border, its mark in a figure) and a light
tint of it (the chip's background), and one symbol, shown beside the word so the verdict reads
without colour too.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class VerdictStyle:
    symbol: str
    colour: str  # text, border and figure mark
    tint: str  # chip background


VERDICT_STYLES: dict[str, VerdictStyle] = {
    "confirmed": VerdictStyle("✓", "#1a7f37", "#dafbe1"),
    "conditional": VerdictStyle("◇", "#0969da", "#ddf4ff"),
    "mixed": VerdictStyle("◐", "#8250df", "#fbefff"),
    "refuted": VerdictStyle("✗", "#cf222e", "#ffebe9"),
    "contradicted-at-this-scale": VerdictStyle("↯", "#bc4c00", "#fff1e5"),
    "not-reproduced-at-this-scale": VerdictStyle("○", "#9a6700", "#fff8c5"),
    "inconclusive": VerdictStyle("?", "#6e7781", "#f6f8fa"),
    "run": VerdictStyle("▶", "#1b7c83", "#d8f5f2"),
    "untestable-here": VerdictStyle("–", "#bf3989", "#ffeff7"),
    "missing-results": VerdictStyle("…", "#424a53", "#eaeef2"),
    "error": VerdictStyle("!", "#1f2328", "#ffffff"),
}

# What a page's claim allows in a figure (its region, its boundary, the size it states): a
# neutral slate that no verdict wears, so the claim is never read as a verdict on it.
CLAIM_SHADE = "#4a6785"
