"""The report's statistical words, each defined where it stands.

`TERMS`: per term, the words that name it and a short definition in English and Chinese
(from docs/glossary.md). `define_terms(page, lang)` links the first use of each term in every
<section>, claim <article> and <details> to its entry, the definition as the hover title:

    ... the 98.4% <a class="term" href="#term-interval" title="Confidence interval: ...">CI</a>

Code, links, headings, summaries, table headers, <pre> and the verdict chips are left alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from markupsafe import escape


@dataclass(frozen=True)
class Term:
    key: str
    name: tuple[str, str]  # as the terms section lists it (English, Chinese)
    words: tuple[str, str]  # regular expressions matching it in the escaped page text
    meaning: tuple[str, str]


_APOSTROPHE = "(?:&#39;|'|’)"  # the page is escaped: "O'Brien" stands as "O&#39;Brien"

# No term's words match inside another's ("等价" is not read inside "等价边界").
TERMS: tuple[Term, ...] = (
    Term("seed", ("seed", "种子"), (r"\bseeds?\b", "种子"),
         ("One run of an arm from its own random start and data order; a part's statistics "
          "are taken over its seeds, paired across the arms it compares.",
          "某一组从各自随机初始化与数据顺序出发的一次运行；各部分的统计量取自其种子，在所比较的各组之间按种子配对。")),
    Term("interval", ("confidence interval (CI)", "置信区间（CI）"),
         (r"\bCI\b|\b(?:confidence )?intervals?\b", r"置信区间|\bCI\b"),
         ("The range of effects the seeds leave plausible at the stated level; a part is "
          "decided when it lies wholly on one side of the claim's boundary.",
          "在所述置信水平下种子数据仍允许的效应范围；整个区间落在论断边界一侧时，该部分才得到判定。")),
    Term("delta", ("smallest effect δ", "最小效应 δ"), (r"δ|\bsmallest effects?\b", r"δ|最小效应"),
         ("The smallest difference the rule counts as real, fixed before the data; the claim's "
          "boundary is δ, or its threshold when larger.",
          "规则认为真实存在的最小差异，在数据之前确定；论断的边界为 δ，若其阈值更大则取阈值。")),
    Term("margin", ("equivalence margin", "等价边界"), (r"\bmargins?\b", "等价边界"),
         ("A difference inside ±margin counts as no effect.",
          "落在 ±等价边界 之内的差异视为无效应。")),
    Term("equivalence", ("equivalence (TOST)", "等价（TOST）"),
         (r"\bTOST\b|\bequivalen(?:ce|t)\b", r"TOST|等价(?!边界)"),
         ("Shown the same when both one-sided tests reject: the interval at twice the level "
          "lies inside ±margin.",
          "两个单侧检验都拒绝时判为相同：两倍水平下的置信区间落在 ±等价边界 之内。")),
    Term("alpha", ("α (level)", "α（水平）"), (r"α", r"α"),
         ("The error rate a test is read at; its interval's level is 1 − α.",
          "检验所用的错误率；对应置信区间的水平为 1 − α。")),
    Term("holm", ("Holm's correction", "Holm 校正"), (r"\bHolm\b", r"Holm"),
         ("A claim's parts are tested in order of p at α/m, α/(m−1), …, α, so the claim as a "
          "whole keeps its 5% error rate; after the first part not decided the rest are "
          "inconclusive.",
          "论断的各部分按 p 值从小到大依次在 α/m、α/(m−1)、…、α 下检验，使整条论断的错误率保持 5%；"
          "第一个未判定的部分之后，其余部分均为尚无定论。")),
    Term("look", ("look", "查看"), (r"\blooks?\b", "查看"),
         ("One reading of a part in its sequential design, at the seeds run so far; more seeds "
          "are run only for parts still open.",
          "序贯设计中对某部分的一次读取，基于当时已运行的种子；只为尚未判定的部分追加种子。")),
    Term("obf", ("O'Brien–Fleming spending", "O'Brien–Fleming 消耗"),
         (rf"O{_APOSTROPHE}Brien[–-]Fleming", rf"O{_APOSTROPHE}Brien[–-]Fleming"),
         ("How a sequential design shares out its 5% error rate: early looks spend almost "
          "none of it (read at strict levels), the last look nearly all.",
          "序贯设计分配其 5% 错误率的方式：早期查看几乎不消耗（按严格水平读取），最后一次查看用掉几乎全部。")),
    Term("power", ("power", "功效"), (r"\bpower\b", "功效"),
         ("The chance that n seeds detect a true effect of the given size; 80% unless said.",
          "n 个种子检测出给定大小真实效应的概率；未说明时为 80%。")),
    Term("inconclusive", ("inconclusive", "尚无定论"), (r"\binconclusive\b", "尚无定论"),
         ("The seeds spent decide neither way; the part says how many seeds would decide it.",
          "已用的种子两方面都不能判定；该部分给出判定所需的种子数。")),
)

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
            leave = (name in _LEAVE or bool(_CHIP.search(token))
                     or 'id="terms"' in token)
            stack.append((name, leave, set() if name in _SCOPES else None))
            continue
        if not inside or any(leave for _, leave, _ in stack):
            out.append(token)
            continue
        seen = next((s for _, _, s in reversed(stack) if s is not None), None)
        if seen is None:
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
