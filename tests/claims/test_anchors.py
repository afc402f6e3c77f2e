"""The published results beside the claims: package data that loads, names real claims, and
whose training compute is 6 · parameters · tokens by hand."""

from importlib import resources

from blocklab.claims.anchors import anchors, reading
from blocklab.claims.ledger import run_claims
from blocklab.claims.text import claim_sources


def test_shazeer_2020_at_its_own_scale():
    first = anchors("C16")[0]
    assert first.source.startswith("Shazeer 2020") and not first.secondary
    # 524,288 steps × 128 sequences × 512 tokens; 6 · 220M · 34.36B = 4.5e19
    assert first.tokens == 524_288 * 128 * 512
    assert first.flops == 6 * 220e6 * 524_288 * 128 * 512
    assert first.scale_text() == "220M parameters, 34.4B tokens, 4.5·10^19 FLOPs"
    assert "SwiGLU -2.4%" in first.result


def test_every_anchor_names_real_claims_and_every_reading_has_anchors():
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
