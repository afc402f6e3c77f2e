"""The verdict vocabulary: one meaning and reader's words in both languages for each word,
kept by every claim's combining rule on every pattern of part verdicts."""

import itertools
from pathlib import Path
from types import SimpleNamespace

import pytest

from blocklab.claims import (
    ffn,
    models,
    norm_cost,
    placement,
    positions,
    quantization,
    rules,
)
from blocklab.claims import width as width_claim
from blocklab.claims.catalogue import SCALE_DEPENDENT, SPECS, SUITE_OF
from blocklab.claims.registry import registered
from blocklab.claims.rules import all_or_none, majority, settle
from blocklab.claims.text import ERROR, VERDICT_EN, VERDICT_MEANING, VERDICT_ZH, VERDICTS

C, R, X, NR, I, U = ("confirmed", "refuted", "contradicted-at-this-scale",
                     "not-reproduced-at-this-scale", "inconclusive", "untestable-here")
# What a part can be: one decided by a test (confirmed, not reproduced, contradicted; open, or
# not testable here), one decided by an exact check (confirmed or refuted; open without data).
RUN = (C, X, NR, I, U)
EXACT = (C, R, I)
DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_every_verdict_has_words_in_both_languages_and_one_meaning_the_docs_give():
    words = (*VERDICTS, ERROR)
    assert set(VERDICT_EN) == set(VERDICT_ZH) == set(VERDICT_MEANING) == set(words)
    assert len(set(VERDICT_ZH.values())) == len(words)  # no two verdicts read alike
    meanings = list(VERDICT_MEANING.values())
    assert all(en and zh and en != zh for en, zh in meanings)
    assert len({en for en, _ in meanings}) == len({zh for _, zh in meanings}) == len(words)
    # conditional names a condition; mixed is parts that split with none
    assert "condition" in VERDICT_MEANING["conditional"][0]
    assert "some hold and others do not hold" in VERDICT_MEANING["mixed"][0]
    assert "no scale" in VERDICT_MEANING["refuted"][0]
    # the docs give each verdict its one meaning
    verdicts_md = (DOCS / "verdicts.md").read_text(encoding="utf-8")
    table = verdicts_md.split("<!-- verdict-meanings:start -->\n")[1].split("\n<!-- verdict")[0]
    assert table.splitlines()[2:] == [f"| {VERDICT_EN[v]} | `{v}` | {VERDICT_MEANING[v][0]} |"
                                      for v in (*VERDICTS, ERROR)]
    glossary = (DOCS / "glossary.md").read_text(encoding="utf-8")
    for v in VERDICTS:
        if v != "missing-results":
            assert f"| {v} | {VERDICT_MEANING[v][0]}" in glossary, v
    zh = (DOCS / "zh.md").read_text(encoding="utf-8")
    for v in ("confirmed", "refuted", "conditional", "mixed"):
        assert f"`{v}`（{VERDICT_ZH[v]}）" in zh, v


def test_every_verdict_has_one_colour_for_the_cli_a_symbol_and_a_reader_word():
    from blocklab.claims.text import reader_word
    from blocklab.cli.claims import verdict_style, verdict_text
    from blocklab.report.palette import VERDICT_STYLES

    for verdict in (*VERDICTS, ERROR):
        assert VERDICT_STYLES[verdict].symbol, verdict
        assert reader_word(verdict, "en") == VERDICT_EN[verdict] == verdict.replace("-", " ")
        assert reader_word(verdict, "zh") not in ("", verdict), verdict
    assert all(verdict_style(v).startswith("#") for v in (*VERDICTS, ERROR))
    assert verdict_style("mixed") == VERDICT_STYLES["mixed"].colour
    assert verdict_text("mixed", zh=True) == f"[{VERDICT_STYLES['mixed'].colour}]部分成立[/" \
                                             f"{VERDICT_STYLES['mixed'].colour}]"


def _parts(verdicts, names=None):
    names = names or [f"p{i}" for i in range(len(verdicts))]
    return [SimpleNamespace(verdict=v, name=n) for v, n in zip(verdicts, names, strict=True)]


C31_NAMES = list(registered("C31"))
C30_GROUPS = (("scaled", 2), ("warning_plain", 1), ("warning_scaled", 1))


def _c30(verdicts):
    groups, at = {}, 0
    for key, size in C30_GROUPS:
        groups[key], at = _parts(verdicts[at:at + size]), at + size
    return positions.combine_c30(groups)


# claim: (what each of its parts can be, its combination over their verdicts), as each
# check calls it
COMBINES = {
    "C12": ([RUN] * 3, lambda vs: settle(vs, placement.c12_rule)),
    "C16": ([RUN] * 3, lambda vs: ffn.combine_c16(_parts(vs))),
    "C18": ([EXACT] * 3 + [RUN],
            lambda vs: norm_cost.combine_c18(_parts(vs[:3]), _parts(vs[3:])[0])),
    "C19": ([RUN] * 4, lambda vs: settle(vs, rules.testable_all_or_none)),
    "C21": ([RUN] * 4, lambda vs: settle(vs, majority)),
    "C30": ([RUN] * 4, _c30),
    "C31": ([EXACT] * 6, lambda vs: positions.combine_c31(_parts(vs, C31_NAMES))),
    "C32": ([RUN, RUN, EXACT], lambda vs: quantization.combine_c32(*_parts(vs))),
    "C32 without int8": ([RUN, RUN, EXACT],
                         lambda vs: quantization.combine_c32(*_parts(vs), int8=False)),
    "C33": ([EXACT, RUN], lambda vs: quantization.combine_c33(*_parts(vs))),
    "C36": ([RUN] * 2, lambda vs: settle(vs, all_or_none)),
    "C37": ([RUN] * 4, lambda vs: width_claim.combine_c37(_parts(vs))),
}
# The claims whose combination names a condition (C12: the init; C30: the reading of the
# warning; C33: per-tensor scales); every other one says mixed when its parts split.
NAMES_A_CONDITION = {"C12", "C30", "C33"}
# Parts a confirmed claim need not have confirmed: C18's readings of "compute" are
# alternatives; C33's per-row part is the condition, not the claim.
NOT_EACH_NEEDED = {"C18": range(3), "C33": range(1)}


@pytest.mark.parametrize("claim", sorted(COMBINES))
def test_each_combination_keeps_the_meanings_on_every_pattern(claim):
    kinds, combine = COMBINES[claim]
    cid = claim.split()[0]
    for verdicts in itertools.product(*kinds):
        got = combine(list(verdicts))
        decided = [v for v in verdicts if v != I]
        assert got in VERDICTS, (claim, verdicts, got)
        if got == "conditional":
            assert cid in NAMES_A_CONDITION, (claim, verdicts)
        if got == "mixed":  # some part holds and another does not, or cannot be tested
            assert C in decided and any(v != C for v in verdicts), (claim, verdicts)
        if got == C:
            weighed = [v for i, v in enumerate(verdicts)
                       if i not in NOT_EACH_NEEDED.get(cid, ())]
            assert all(v == C for v in weighed), (claim, verdicts)
            assert cid != "C18" or C in verdicts[:3]
        if got == R:  # only an exact check refutes
            assert R in verdicts, (claim, verdicts)
        if got == X:
            assert X in verdicts, (claim, verdicts)
        if cid not in SCALE_DEPENDENT:
            assert not got.endswith("at-this-scale"), (claim, verdicts)


def test_a_claim_whose_reason_is_refuted_is_never_confirmed_nor_a_scale_free_one_at_scale():
    # C32: "… because the FFN holds ~99% of prefill FLOPs", its third part
    for timed in itertools.product(RUN, repeat=2):
        for int8 in (True, False):
            got = quantization.combine_c32(*_parts([*timed, R]), int8=int8)
            assert got != C and got in ("mixed", R, I), (timed, int8, got)
    # scale-free claims never say at this scale (the ledger's error for them: test_claims.
    # test_only_an_exact_part_refutes_and_only_a_scale_dependent_claim_is_at_this_scale)
    assert {cid for cid in SUITE_OF if cid not in SCALE_DEPENDENT} == {"C29", "C31"}
    assert {"C12", "C33"} <= SCALE_DEPENDENT  # probes and trained models at one scale
    for rows in itertools.product(("holds", "fails", "partly", "untestable"), repeat=3):
        got = models.combine_c34([models.PairingRow("p", [], {}, "", v, {}) for v in rows])
        assert not got.endswith("at-this-scale") and got != "conditional"
    for held, causes in itertools.product(([], ["a"]), (
            [], ["ffn_form"], ["attention_shape", "biases"], ["norms"])):
        assert not models.c35_verdict(held, causes).endswith("at-this-scale")
    analytic = [cid for cid, spec in SPECS.items() if spec.suite is None]
    assert all(cid not in SCALE_DEPENDENT for cid in analytic if cid != "C22")
