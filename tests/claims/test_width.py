"""C37 (`blocklab.claims.width`): verdicts from fabricated width summaries, its rules and
its combining rule."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from blocklab.claims.registry import (
    C37_NARROW_PART,
    C37_PRICE_PART,
    C37_SLICED_PARTS,
    registered,
)
from blocklab.claims.width import c37_arms, combine_c37
from blocklab.experiments.suites.width.summary import WidthData, WidthPoint
from blocklab.experiments.summaries import Interval

from .conftest import graded

NR = "not-reproduced-at-this-scale"


def _iv(mean, half, n=8, sd=1.0) -> Interval:
    return Interval(n, mean, mean - half, mean + half, sd)


def _data(sliced=(30.0, 1.0), price=(0.2, 0.3), narrow=(0.3, 0.3), n=8) -> WidthData:
    loss = {"ordinary": _iv(1.6, 0.01, n), "nested": _iv(1.61, 0.01, n)}
    return WidthData(
        widths=[192, 96, 48], narrow=96,
        points=[WidthPoint(192, 200_000, 73_728, 400_000, loss),
                WidthPoint(96, 180_000, 36_864, 330_000, {**loss, "narrow": _iv(1.63, 0.01, n)}),
                WidthPoint(48, 170_000, 18_432, 290_000, loss)],
        sliced_vs_nested_pct={"96": _iv(*sliced, n), "48": _iv(sliced[0] * 2, sliced[1], n)},
        nested_price_pct=_iv(*price, n), nested_vs_narrow_pct=_iv(*narrow, n), seeds=n,
        steps=300, lr=0.01, status={"ordinary": {"ok": n}, "nested": {"ok": n},
                                    "narrow": {"ok": n - 1, "diverged": 1}},
        scheme="mean over m, m/2, m/4", size={"d_model": 64, "n_layers": 2, "batch_size": 16,
                                                "seq_len": 64})


def _c37(root: Path, data: WidthData):
    return graded(root, "width", data, "C37", seeds=data.seeds)["C37"]


def test_the_rules_are_registered_with_their_designs_and_arms():
    quick, full = registered("C37", "quick"), registered("C37", "full")
    assert list(quick) == [*C37_SLICED_PARTS.values(), C37_PRICE_PART, C37_NARROW_PART]
    for rules, design in ((quick, (6, 8)), (full, (8, 12))):
        assert {(r.min_seeds, r.max_seeds) for r in rules.values()} == {design}
    sliced = quick[C37_SLICED_PARTS[2]]
    assert (sliced.test, sliced.smallest_effect, sliced.claimed > 0) == ("effect", 2.0, True)
    for name in (C37_PRICE_PART, C37_NARROW_PART):
        assert (quick[name].test, quick[name].margin, quick[name].claimed) == ("equivalence",
                                                                             2.0, 0.0)
    # each part reads nested and its comparison arm
    arms = ["narrow", "nested", "ordinary"]
    assert c37_arms(C37_SLICED_PARTS[2], "", arms) == ["nested", "ordinary"]
    assert c37_arms(C37_PRICE_PART, "", arms) == ["nested", "ordinary"]
    assert c37_arms(C37_NARROW_PART, "", arms) == ["nested", "narrow"]


def test_every_part_confirmed_confirms_the_claim(tmp_path):
    row = _c37(tmp_path, _data())
    assert row.verdict == "confirmed"
    assert [p.verdict for p in row.parts] == ["confirmed"] * 4
    # the interval each decision read is the one shown, wider than the 95% one at 8 seeds
    first = row.parts[0].to_dict()
    assert first["interval"]["confidence"] > 0.95 and first["interval"]["low"] > 2.0
    assert "1 run(s) failed" in row.parts[3].reason  # narrow's diverged run, counted
    assert "1 run(s) failed" not in row.parts[0].reason


@pytest.mark.parametrize(("given", "part", "verdict", "claim"), [
    # a nested model far from the narrow one: the warning holds, the claim in part
    ({"narrow": (6.0, 0.5)}, 3, NR, "mixed"),
    # slicing as good as nesting: the warning is not reproduced
    ({"sliced": (0.1, 0.2)}, 0, NR, NR),
    # a wide interval: confirmed sliced parts with one part open, mixed or confirmed
    ({"price": (0.5, 2.5)}, 2, "inconclusive", "inconclusive"),
])
def test_one_part_moves_the_claim(tmp_path, given, part, verdict, claim):
    row = _c37(tmp_path, _data(**given))
    assert row.parts[part].verdict == verdict and row.verdict == claim


@pytest.mark.parametrize(("verdicts", "want"), [
    (["confirmed"] * 4, "confirmed"),
    (["confirmed", "confirmed", NR, "confirmed"], "mixed"),
    (["confirmed", NR, "confirmed", "confirmed"], "mixed"),
    ([NR, "confirmed", "confirmed", "confirmed"], NR),
    (["contradicted-at-this-scale", NR, NR, NR], "contradicted-at-this-scale"),
    (["confirmed", "inconclusive", "confirmed", "confirmed"], "inconclusive"),
    (["confirmed", "inconclusive", NR, "confirmed"], "mixed"),
])
def test_combining_rule(verdicts, want):
    assert combine_c37([SimpleNamespace(verdict=v) for v in verdicts]) == want
