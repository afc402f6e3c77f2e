"""The page's sections (`blocklab.report.html`): the findings, the ledger and the claims one
by one first; each registered suite's results sit under its heading in the section its
`Suite.section` names, and a suite whose section the page has no topic for gets one of its
own, with its figures, before the terms that close the page; the table of contents lists what
the page holds."""

import re
import string
import sys
import types
from dataclasses import dataclass

import pytest

from blocklab.experiments.options import RunOptions, RunRequest
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites import SUITE_MODULES, base, get_suite, run_suite
from blocklab.experiments.summaries import Interval, Summary, Table
from blocklab.report import build, figures, i18n
from blocklab.report.html import render_html, sections

PAGE_ORDER = ["findings", "ledger", "claims", "ffn", "normalization", "placement", "position",
              "deployment"]


@dataclass(frozen=True)
class ToyData:
    value: Interval


def _toy_suite() -> base.Suite:
    """One run per seed that measures its seed; shown in a section no page topic is."""
    def plan(options, tuned):
        return [base.RunSpec(f"run/{seed}", "run", seed, {"toy": seed},
                             lambda progress, s=seed: RunResult("ok", extra={"value": float(s)}))
                for seed in options.seeds]

    def summarise(options, results):
        values = [r.extra["value"] for _, r in results]
        return Summary("toy", options.size, len(options.seeds),
                       [Table("Toy table", ["value"], [[v] for v in values])],
                       data=ToyData(base.mean_ci(values)))

    return base.Suite("toy", "a toy", plan, summarise, ToyData, section="toy-results",
                      heading=("Toy results (toy suite)", "玩具结果（toy 实验）"),
                      figures=("toy_figure",))


@pytest.fixture(scope="module")
def toy_page(tmp_path_factory, unrasterized_in_module):
    """The tiny report of a results folder holding only the toy suite's runs, the toy suite
    registered beside the real ones (which show that their results are missing)."""
    root = tmp_path_factory.mktemp("toy")
    toy = _toy_suite()
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(SUITE_MODULES, "toy", "toy_for_tests")
        mp.setitem(sys.modules, "blocklab.experiments.suites.toy_for_tests",
                   types.SimpleNamespace(SUITE=toy))
        mp.setattr(build, "SUITES", tuple(SUITE_MODULES))  # as the module derives it
        # a figure of its own: a drawing function and its caption, nothing else
        mp.setitem(figures.FIGURES, "toy_figure",
                   (lambda doc: b"toy png" if doc["suites"]["toy"]["summary"] else None, None))
        mp.setitem(i18n.CAPTIONS, "toy_figure", ("The toy's values.", "玩具的数值。"))
        run_suite(toy, RunOptions("tiny", range(2)), root / "runs", progress=False)
        index, doc = build.build_report(RunRequest(root / "runs", "tiny"), root / "report", "en")
        zh = render_html(doc, figures.make_figures(doc), "zh")
    return index.read_text(encoding="utf-8"), zh, doc, root / "runs"


def _section(page: str, anchor: str) -> str:
    match = re.search(rf'<section id="{re.escape(anchor)}">(.*?)</section>', page, re.S)
    assert match, f"no section {anchor}"
    return match.group(1)


def _contents(page: str) -> list[str]:
    toc = re.search(r'<nav class="toc">(.*?)</nav>', page, re.S).group(1)
    return re.findall(r'<a href="#([^"]+)">', toc)


def test_a_suite_with_a_section_the_page_lacks_gets_one_of_its_own(toy_page):
    page, zh, doc, results = toy_page
    assert list(doc["suites"]) == [*SUITE_MODULES, "toy"]  # the registered suites, in order
    assert _contents(page) == [*PAGE_ORDER, "toy-results", "terms"]
    assert (page.index('<section id="deployment">') < page.index('<section id="toy-results">')
            < page.index('<section id="terms">'))
    body = _section(page, "toy-results")
    # its heading is the section's title (not repeated above its one body) ...
    assert body.startswith("<h2>Toy results (toy suite)</h2>") and "<h3>" not in body
    # ... then its body: the figure it lists, its command derived from the suite, its tables
    command = f"blocklab suite toy --size tiny --results {results}"
    figure = re.search(r'<figure id="fig-toy_figure">.*?</figure>', body, re.S).group(0)
    assert "The toy&#39;s values." in figure and f"<code>{command}</code>" in figure
    # its tables, each folded under its title
    assert '<details class="table"><summary>Toy table</summary><table>' in body
    assert "No stored results" not in body
    assert '<a href="#toy-results">Toy results (toy suite)</a>' in page
    assert "<h2>玩具结果（toy 实验）</h2>" in zh and _contents(zh) == _contents(page)


def test_every_registered_suite_is_shown_under_its_heading_in_its_section(toy_page):
    page, zh, _, results = toy_page
    for name in SUITE_MODULES:
        suite = get_suite(name)
        assert suite.section in PAGE_ORDER  # the real suites' topics are all on the page
        for text, lang in ((page, 0), (zh, 1)):
            body = _section(text, suite.section)
            assert f"<h3>{suite.heading[lang]}</h3>" in body
            # not run here: the notice that names the command stands where its results would
            assert f"<code>blocklab suite {name} --size tiny --results {results}</code>" in body


def test_sections_list_the_page_topics_then_the_suites_own_in_their_order():
    def shown(name, section, heading):
        return {"name": name, "section": section, "heading": heading, "figures": []}

    listed = sections([shown("a", "ffn", "A"), shown("b", "extra", "B"),
                       shown("c", "extra", "C"), shown("d", "later", "D")], "en")
    assert [s["id"] for s in listed] == [*PAGE_ORDER, "extra", "later", "terms"]
    own = {s["id"]: (s["title"], s["suites"]) for s in listed if s["own"]}
    assert own == {"extra": ("B", 2), "later": ("D", 1)}  # two suites: each under its heading
    assert next(s for s in listed if s["id"] == "ffn")["suites"] == 1
    for taken in ("findings", "ledger", "claims", "terms"):
        with pytest.raises(ValueError, match=rf"suite e: section '{taken}' shows no suite's"):
            sections([shown("e", taken, "E")], "en")


def test_every_catalogue_string_has_both_languages_with_the_same_placeholders():
    # A translation that drops or renames a `{field}` would raise or print a hole at render time.
    fields = string.Formatter()
    for table in (i18n.STRINGS, i18n.CAPTIONS, i18n.DECISION_SHORT, i18n.FINDINGS,
                  i18n.FINDING_WORDS, *i18n.TERM_TEXT.values()):
        for key, (en, zh) in table.items():
            assert en and zh, key
            names = [{f for _, f, _, _ in fields.parse(text) if f is not None} for text in (en, zh)]
            assert names[0] == names[1], key
