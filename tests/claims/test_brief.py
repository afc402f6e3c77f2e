"""Each claim in one line of at most 200 characters (`blocklab.claims.brief`), in English and
Chinese, showing only numbers the claim's result holds."""

import math
import re
from collections import Counter
from dataclasses import replace
from typing import Any

import pytest

from blocklab.claims import Context, run_claims
from blocklab.claims.brief import STATEMENT, TEXT, brief, found, line
from blocklab.claims.ledger import ClaimResult
from blocklab.claims.text import ERROR, VERDICTS, claim_sources, reader_word
from blocklab.experiments.options import RunRequest
from blocklab.report.palette import VERDICT_STYLES

from .test_registry import fake_results  # noqa: F401 - the fixture: every suite's fake summary

LANGS = ("en", "zh")
LONGEST = 200


@pytest.fixture(scope="module")
def graded(fake_results):  # noqa: F811
    """Every claim on a quick-size summary of every suite (the registry tests' fakes)."""
    return run_claims(None, Context(RunRequest(fake_results, "quick")))


def _symbol(r: ClaimResult) -> str:
    return VERDICT_STYLES[r.verdict].symbol


# --- numbers: every one a line shows is one the result holds -------------------------------------
# A number as a line writes it: not inside a word (float16, log2, m/2), a true or ASCII minus.
NUMBER = re.compile(r"(?<![\w./])[−+-]?\d[\d,]*(?:\.\d+)?(?:e[−+-]?\d+)?")


def _numbers(value: Any) -> list[float]:
    """Every number `value` holds: numeric leaves, numbers written in its strings and keys,
    and its counts (the length of each list and dict; how often each word recurs in a list of
    rows)."""
    out: list[float] = []
    if isinstance(value, bool):
        return out
    if isinstance(value, (int, float)):
        out.append(float(value))
    elif isinstance(value, str):
        out += [_parse(m) for m in NUMBER.findall(value)]
    elif isinstance(value, dict):
        out.append(float(len(value)))
        for k, v in value.items():
            out += _numbers(k) + _numbers(v)
    elif isinstance(value, list):
        out.append(float(len(value)))
        for v in value:
            out += _numbers(v)
        rows = [v for v in value if isinstance(v, dict)]
        for key in {k for row in rows for k in row}:
            out += [float(n) for n in Counter(str(row.get(key)) for row in rows).values()]
    return out


def _parse(token: str) -> float:
    return float(token.replace("−", "-").replace(",", ""))


def _held(r: ClaimResult) -> list[float]:
    """The numbers of a result: its evidence, its summary, its parts' estimates, the intervals
    that decided them, their names, and how many parts each verdict has."""
    held = _numbers(r.evidence) + _numbers(r.summary) + [0.0, float(len(r.parts))]
    for p in r.parts:
        e = p.estimate
        held += [x for x in (e.value, e.ci_low, e.ci_high) if x is not None] + _numbers(p.name)
        if p.decision is not None and p.decision.interval is not None:
            held += [p.decision.interval.low, p.decision.interval.high]
    held += [float(n) for n in Counter(p.verdict for p in r.parts).values()]
    return held + [x * 100 for x in held] + [x / 1e9 for x in held]  # shares as %, G


def _shown_as(token: str, value: float) -> bool:
    """Whether `token` is `value` written to the digits it shows."""
    mantissa, _, exponent = token.replace("−", "-").replace(",", "").partition("e")
    decimals = len(mantissa.partition(".")[2])
    half = 0.5 * 10 ** (int(exponent or 0) - decimals)
    shown = _parse(token)
    if math.isinf(value):
        return False
    # 3 significant digits may round a value shown without decimals ('35' for 35.0).
    return abs(shown - value) <= half * (1 + 1e-9) or math.isclose(shown, value, rel_tol=5e-3)


def _unheld(r: ClaimResult, text: str) -> list[str]:
    held = _held(r)
    return [t for t in NUMBER.findall(text) if not any(_shown_as(t, v) for v in held)]


# --- the tests ----------------------------------------------------------------------------------
@pytest.mark.parametrize("rows", ["graded", "unrun"])
@pytest.mark.parametrize("lang", LANGS)
def test_each_claim_is_one_line_with_its_verdict_and_only_numbers_it_holds(request, rows, lang):
    results = request.getfixturevalue(rows)
    assert [r.id for r in results] == sorted(claim_sources())
    for r in results:
        assert r.error is None, (r.id, r.error)
        b = brief(r, lang, _symbol(r))
        text = line(r, lang, _symbol(r))
        assert len(text) <= LONGEST and "\n" not in text, (r.id, len(text), text)
        assert text == f"{r.id} {b.symbol} {b.word} · {b.statement} · {b.found}"
        assert b.symbol == VERDICT_STYLES[r.verdict].symbol and b.word == reader_word(
            r.verdict, lang)
        assert b.found == found(r, lang) and b.found
        assert not _unheld(r, b.found), (r.id, _unheld(r, b.found), b.found)


def test_a_line_fits_whichever_verdict_its_claim_gets(graded):
    """The longest verdict word leaves room: a claim graded again may read another verdict."""
    for r in graded:
        for verdict in set(VERDICTS) - {"missing-results"}:
            for lang in LANGS:
                text = line(replace(r, verdict=verdict), lang, "?")
                assert len(text) <= LONGEST, (r.id, verdict, len(text), text)


def test_graded_claims_show_their_numbers_and_unrun_ones_say_so(graded, unrun):
    shown = {r.id: found(r, "en") for r in graded}
    assert all(NUMBER.search(text) for text in shown.values()), shown
    missing = [r for r in unrun if r.verdict == "missing-results"]
    assert {r.id for r in missing} >= {"C12", "C16", "C19", "C21", "C30", "C37"}
    for r in missing:
        for lang in LANGS:
            assert found(r, lang) == TEXT["missing"][LANGS.index(lang)]
    # every claim has its statement in brief in both languages
    assert sorted(STATEMENT) == sorted(claim_sources())
    for cid, (en, zh) in STATEMENT.items():
        assert en and zh and en != zh, cid
        assert len(en) <= 70 and len(zh) <= 70, cid


def test_a_part_shows_the_interval_that_decided_it(graded):
    c16 = next(r for r in graded if r.id == "C16")
    swiglu = next(p for p in c16.parts if p.name == "swiglu")
    iv = swiglu.decision.interval
    bracket = f"[{iv.low:+.3g}, {iv.high:+.3g}]".replace("-", "−")
    assert f"SwiGLU {swiglu.estimate.value:+.3g}%".replace("-", "−") in found(c16, "en")
    assert bracket in found(c16, "en") and bracket in found(c16, "zh")
    # and the number check catches a number the result does not hold
    c23 = next(r for r in graded if r.id == "C23")
    assert _unheld(c23, "FFN 99.5% of prefill FLOPs") == ["99.5"]


def test_a_link_wraps_the_id_and_a_failed_check_says_so(graded):
    r = graded[0]
    assert line(r, "en", "✓", "report/index.html#C01") == (
        "[C01](report/index.html#C01)" + line(r, "en", "✓").removeprefix("C01"))
    # a check that failed says so
    failed = replace(graded[15], verdict=ERROR, error="KeyError: 'arms'")
    assert found(failed, "en") == "the check failed to run"
    assert found(failed, "zh") == "检查运行失败"
    assert "! error · " in line(failed, "en", VERDICT_STYLES[ERROR].symbol)


def test_a_claim_without_its_own_entries_is_clipped_into_one_line(graded):
    """A claim a contributor adds with no STATEMENT or FOUND entry: its restated claim and its
    finding's first sentence, each cut at a space and ended with '…', still one line of at most
    200 characters."""
    c16 = next(r for r in graded if r.id == "C16")
    long = "word " * 80
    added = replace(c16, id="C99", claim=long + "end.", claim_zh="长" * 300,
                    summary=long + "first. Second sentence.", summary_zh="短句。第二句。")
    for lang in LANGS:
        b = brief(added, lang, _symbol(added))
        assert len(line(added, lang, _symbol(added))) <= LONGEST
        assert b.statement.endswith("…") and "end" not in b.statement
    assert found(added, "en").startswith("word word") and found(added, "en").endswith("…")
    assert found(added, "zh") == "短句。"
    short = replace(added, claim="A short claim.", summary="Found 3. More.")
    assert brief(short, "en", "✓").statement == "A short claim."
    assert found(short, "en") == "Found 3."
