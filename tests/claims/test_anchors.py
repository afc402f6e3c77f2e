"""The published results beside the claims: package data that loads, names real claims, and
whose training compute is 6 · parameters · tokens by hand."""

import math
from importlib import resources

from blocklab.claims.anchors import anchors, reading, short_source
from blocklab.claims.ledger import run_claims
from blocklab.claims.registry import registered
from blocklab.claims.text import claim_sources


def test_shazeer_2020_at_its_own_scale_and_every_anchor_of_a_real_claim():
    first = anchors("C16")[0]
    assert first.source.startswith("Shazeer 2020") and not first.secondary
    # 524,288 steps × 128 sequences × 512 tokens; 6 · 220M · 34.36B = 4.5e19
    assert first.tokens == 524_288 * 128 * 512
    assert first.flops == 6 * 220e6 * 524_288 * 128 * 512
    assert first.scale_text() == "220M parameters, 34.4B tokens, 4.5·10^19 FLOPs"
    assert "SwiGLU -2.4%" in first.result
    # every anchor names real claims, and every reading has anchors
    sources = claim_sources()
    text = resources.files("blocklab.claims").joinpath("anchors.json").read_text("utf-8")
    assert "Press et al. 2021" in text and "YaRN" in text  # shipped as package data
    for claim in ("C16", "C18", "C19", "C21", "C30", "C32", "C36"):
        found = anchors(claim)
        assert found, claim
        assert all(claim in a.claims and claim in sources for a in found)
        assert all(a.flops is None or a.flops == 6 * a.params * a.tokens for a in found)
    for claim in ("C16", "C18", "C19", "C21", "C30", "C32"):
        assert reading(claim)
    assert anchors("C01") == [] and reading("C01") is None


def test_the_ledger_row_carries_its_scale_and_the_papers():
    [c16] = [r.to_dict() for r in run_claims(["C16"])]
    assert c16["scale"]["model"] == "d 64 × 2 layers" and c16["scale"]["tokens"] == 307_200
    assert c16["scale"]["text_zh"].startswith("d 64 × 2 层")
    assert [a["source"] for a in c16["anchors"]] == [a.source for a in anchors("C16")]
    assert c16["anchors"][0]["flops"] == anchors("C16")[0].flops
    assert c16["anchor_reading"] == reading("C16")
    [c01] = [r.to_dict() for r in run_claims(["C01"])]
    assert c01["scale"] is None and c01["anchors"] == []


def test_each_effect_names_a_registered_part_and_is_the_tables_own_number_by_its_source():
    """An effect is keyed by an arm of C16 or a part's name (C21, C30), and the position
    effects are the change in loss from the table's perplexities, by hand:
    100 · ln(ppl_long / ppl_L) / ln(ppl_L)."""
    for claim in ("C16", "C18", "C19", "C21", "C30"):
        for a in anchors(claim):
            parts = {p for c in a.claims for p in registered(c, "quick")}
            assert set(a.effects) <= parts, (a.source, set(a.effects) - parts)
            name = short_source(a.source)  # its name's parentheses balanced
            assert name.count("(") == name.count(")"), name

    def loss_change(before: float, after: float) -> float:
        return round(100 * math.log(after / before) / math.log(before), 1)

    press = anchors("C21")[0]
    assert press.source.startswith("Press et al. 2021")
    assert press.effects == {"RoPE works at 2×": loss_change(20.07, 21.37),  # +2.1
                             "ALiBi works at 2×": loss_change(19.73, 18.73),  # −1.7
                             "sinusoidal (sinusoidal+scale) works at 2×": loss_change(20.05,
                                                                                      43.54)}
    replication = anchors("C30")[0]
    assert replication.effects == {
        "warning (no scaling): plain RoPE drops clearly at 16×": loss_change(121.62, 279.71)}
    assert "not the same measure" in press.metric  # the measures differ, and it says so
    # a source is named up to its first comma outside parentheses
    assert short_source('Shazeer 2020, "GLU Variants Improve Transformer", Table 1') == \
        "Shazeer 2020"
    replication = ("a public 15-seed replication (repository "
                   "bob80333/investigating_extrapolation, experiments.txt)")
    assert short_source(replication + ", table 2") == replication
    assert short_source("no comma at all") == "no comma at all"
