"""The report's statistical words, each defined where it stands.

`TERMS`: per term, the words that name it and a short definition in English and Chinese
(strings.toml, from docs/glossary.md). `define_terms(page, lang)` links the first use of each
term in every <section>, claim <article> and <details> to its entry, its definition on hover:

    ... the 98.4% <a class="term" href="#term-interval" title="Confidence interval: ...">CI</a>

Code, links, headings, summaries, table headers, <pre> and the verdict chips are left alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from markupsafe import escape

from blocklab.report.i18n import TERM_TEXT


@dataclass(frozen=True)
class Term:
    key: str
    name: tuple[str, str]  # as the terms section lists it (English, Chinese)
    words: tuple[str, str]  # regular expressions matching it in the escaped page text
    meaning: tuple[str, str]


TERMS = tuple(Term(key, name, TERM_TEXT["words"][key], TERM_TEXT["meanings"][key])
              for key, name in TERM_TEXT["names"].items())

# Where a reader may land: each opens a scope of its own, so a term is defined again there.
_SCOPES = {"section", "article", "details"}
# Where words are left as they stand (names, links, headings, numbers, the verdict chips).
_LEAVE = {"code", "a", "abbr", "h1", "h2", "h3", "h4", "summary", "th", "pre", "title",
          "style", "script"}
_CHIP = re.compile(r'class="(?:badge|d) ')
_TOKEN = re.compile(r"<[^>]*>|[^<]+")
_TAG = re.compile(r"<(/?)([a-zA-Z0-9]+)")
_VOID = {"img", "br", "meta", "hr", "input", "link"}


def define_terms(page: str, lang: str) -> str:
    """`page` with the first use of each term in each scope linked to its definition (only in
    <main>, and never inside the terms section itself)."""
    index = 1 if lang == "zh" else 0
    pattern = re.compile("|".join(f"(?P<{t.key}>{t.words[index]})" for t in TERMS))
    by_key = {t.key: t for t in TERMS}
    out: list[str] = []
    stack: list[tuple[str, bool, set[str] | None]] = []  # (tag, leave, scope's terms seen)
    inside = False  # within <main>, outside the terms section
    for token in _TOKEN.findall(page):
        if token.startswith("<"):
            out.append(token)
            tag = _TAG.match(token)
            if tag is None or token.startswith("<!"):
                continue
            closing, name = tag.group(1) == "/", tag.group(2).lower()
            if name == "main":
                inside = not closing
                continue
            if name in _VOID or token.endswith("/>"):
                continue
            if closing:
                while stack and stack.pop()[0] != name:
                    pass
                continue
            leave = name in _LEAVE or bool(_CHIP.search(token)) or 'id="terms"' in token
            stack.append((name, leave, set() if name in _SCOPES else None))
            continue
        seen = next((s for _, _, s in reversed(stack) if s is not None), None)
        if not inside or seen is None or any(leave for _, leave, _ in stack):
            out.append(token)
            continue

        def mark(match: re.Match[str], seen: set[str] = seen) -> str:
            key = match.lastgroup or ""
            if key in seen:
                return match.group(0)
            seen.add(key)  # the link's title: the definition (the page is escaped already)
            meaning = escape(by_key[key].meaning[index])
            return f'<a class="term" href="#term-{key}" title="{meaning}">{match.group(0)}</a>'

        out.append(pattern.sub(mark, token))
    return "".join(out)
