"""The report's statistical words (`blocklab.report.terms`): the first use of each in every
part of the page a reader may land in links to its definition, its meaning on hover; names,
links, headings and the verdict chips are left as they are."""

import re
from html.parser import HTMLParser

from markupsafe import escape

from blocklab.report.terms import TERMS, define_terms

PAGE = """<html><head><title>Holm</title></head><body><header><p>Holm out of main</p></header>
<main><section id="a"><h2>Holm and the CI</h2><p>The 95% CI and the CI again; Holm&#39;s
correction, <code>Holm</code>, <a href="#x">Holm</a>.</p>
<span class="badge v-inconclusive" title="...">? inconclusive</span><p>still inconclusive</p>
<details><summary>details (CI)</summary>
<p>a CI inside details, a look at α, O&#39;Brien–Fleming</p></details>
<article id="claim-C1"><p>the CI of C1, the CI again</p></article></section>
<section id="terms"><dl><dt>CI</dt><dd>the CI</dd></dl></section></main></body></html>"""


class FirstUses(HTMLParser):
    """For each scope a reader may land in (section, article, details), whether each term's
    first use in running text links to its definition (`first`). Names, links, headings,
    summaries, table headers, numbers and chips are not running text."""

    SCOPES = ("section", "article", "details")
    LEAVE = ("code", "a", "abbr", "h1", "h2", "h3", "h4", "summary", "th", "pre", "title",
             "style", "script")

    def __init__(self, lang: str) -> None:
        super().__init__(convert_charrefs=True)
        index = 1 if lang == "zh" else 0
        self.words = {t.key: re.compile(t.words[index].replace("(?:&#39;|'|’)", "['’]"))
                      for t in TERMS}
        # (tag, its scope id, left alone, the term it links to its definition)
        self.stack: list[tuple[str, str | None, bool, str | None]] = []
        self.first: dict[tuple[str, str], bool] = {}  # (scope id, term) -> defined there
        self.main = False
        self.scopes = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "main":
            self.main = True
        if tag in ("img", "br", "meta"):
            return
        classes = (attrs.get("class") or "").split()
        link = tag == "a" and "term" in classes
        leave = (tag in self.LEAVE and not link or classes[:1] in (["badge"], ["d"])
                 or attrs.get("id") == "terms")
        scope = None
        if tag in self.SCOPES:
            self.scopes += 1
            scope = f"{tag}#{attrs.get('id') or self.scopes}"
        href = attrs.get("href") or ""
        defines = href.removeprefix("#term-") if link and attrs.get("title") else None
        self.stack.append((tag, scope, leave, defines))

    def handle_endtag(self, tag):
        if tag == "main":
            self.main = False
        while self.stack and self.stack.pop()[0] != tag:
            pass

    def handle_data(self, data):
        if not self.main or any(leave for _, _, leave, _ in self.stack):
            return
        scope = next((s for _, s, _, _ in reversed(self.stack) if s), None)
        for key, pattern in self.words.items():
            if scope and pattern.search(data):
                self.first.setdefault((scope, key), self.stack[-1][3] == key)


def first_uses(page: str, lang: str) -> dict[tuple[str, str], bool]:
    """{(scope, term): whether its first use there links to its definition}."""
    parser = FirstUses(lang)
    parser.feed(page)
    return parser.first


def test_the_first_use_in_each_scope_links_to_its_definition():
    page = define_terms(PAGE, "en")
    uses = first_uses(page, "en")
    assert uses and all(uses.values()), {k: v for k, v in uses.items() if not v}
    assert {(scope, key) for scope, key in uses} == {
        ("section#a", "interval"), ("section#a", "holm"), ("section#a", "inconclusive"),
        ("details#2", "interval"), ("details#2", "look"), ("details#2", "alpha"),
        ("details#2", "obf"), ("article#claim-C1", "interval")}
    # once per scope: the second CI of a section stays plain text
    section = page[page.index('<section id="a">'):page.index("<details>")]
    assert section.count('href="#term-interval"') == 1
    meaning = escape(next(t for t in TERMS if t.key == "interval").meaning[0])
    assert f'title="{meaning}">CI</a>' in section  # the definition, on hover
    # left as they are: outside <main>, headings, code, links, chips, summaries, the terms
    assert "<title>Holm</title>" in page and "<p>Holm out of main</p>" in page
    assert "<h2>Holm and the CI</h2>" in page and "<code>Holm</code>" in page
    assert '<a href="#x">Holm</a>' in page and ">? inconclusive</span>" in page
    assert "<summary>details (CI)</summary>" in page
    assert '<dd>the CI</dd>' in page
    # an escaped apostrophe is read as one
    assert 'title="How a sequential design shares' in page


def test_chinese_terms():
    page = define_terms("<main><section id='s'><p>置信区间与等价边界；再次置信区间；等价；查看</p>"
                        "</section></main>", "zh")
    assert page.count('href="#term-interval"') == 1
    assert '">等价边界</a>' in page and '">等价</a>' in page and '">查看</a>' in page
