"""The page's sections (`blocklab.report.html.sections`): the findings, the ledger and the
claims one by one first, then the page's topics, each suite's results in the one its
`Suite.section` names; a suite whose section the page has no topic for gets one of its own
before the terms that close the page (rendered: tests/docs/test_contributors.py; each real
suite under its heading: tests/report/test_report.py); and the words of the page, in both
languages."""

import string

import pytest

from blocklab.report import i18n
from blocklab.report.html import sections

PAGE_ORDER = ["findings", "ledger", "claims", "ffn", "normalization", "placement", "position",
              "deployment"]


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
