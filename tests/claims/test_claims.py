"""The claims ledger as a whole: every claim has a check and its text, the analytic verdicts,
missing results name their command, and a failing check or summary fails loudly."""

import json
from pathlib import Path

import pytest

from blocklab.claims import Context, Finding, ledger, run_claims
from blocklab.claims.checks import c26_verdict, c27_verdict
from blocklab.claims.registry import C18_FLOPS_PART, registered
from blocklab.claims.rules import Estimate, Part
from blocklab.claims.text import claim_sources, parse_claims
from blocklab.cli import main
from blocklab.errors import ResultsError
from blocklab.experiments.options import RunRequest
from blocklab.experiments.suites import load_summary

SHARED = Path(__file__).resolve().parents[3] / "shared" / "CLAIMS.md"


def test_sources_cite_page_and_section_inline_or_with_notes_after_it():
    sources = claim_sources()
    assert sources["C01"]["section"] == "知识点一：SwiGLU 的门控计算与等参数宽度"
    assert sources["C23"] == {**sources["C23"], "page": "001_3354982bf5d64f93.txt",
                              "section": "FFN 计算对部署的影响"}
    assert all(s["page"].endswith(".txt") and s["section"] for s in sources.values())
    # C30 cites two sections inline, `(§ heading: "quoted words")`; C34 has notes on how to
    # grade it after its `[§ …]`; a `##` heading that names no page keeps the page above it.
    assert sources["C30"]["section"] == "为什么 RoPE 成为主流？ / 避坑指南"
    assert "Grade both readings of the warning" in sources["C30"]["text"]
    assert sources["C34"]["section"] == "Transformer Block 内部结构 / 主流方案对比 / FFN 变体对比"
    assert "GPT-3 use pre-norm" in sources["C34"]["text"]
    assert sources["C34"]["text"].endswith("(the evidence lists the ones that hold).")
    assert sources["C29"]["page"] == sources["C36"]["page"] == "001_3354982bf5d64f93.txt"
    text = ("## Page 000 — x\n- C01 One. [§ A]\n- C02 Two (§ B) and\n  three (§ C: \"q\").\n"
            "\nProse after a blank line [§ D]\n## Later\n- C03 Four [§ E] note.\n")
    assert parse_claims(text) == {
        "C01": {"page": "000_4f34db7e0f1b54c8.txt", "section": "A", "text": "One."},
        "C02": {"page": "000_4f34db7e0f1b54c8.txt", "section": "B / C",
                "text": 'Two (§ B) and three (§ C: "q").'},
        "C03": {"page": "000_4f34db7e0f1b54c8.txt", "section": "E", "text": "Four note."}}
    # Beside a checkout the project's list agrees on every covered claim; later ids may wait.
    if SHARED.exists():
        project, bundled = parse_claims(SHARED.read_text(encoding="utf-8")), claim_sources()
        assert {k: project.get(k) for k in bundled} == bundled
        assert all(k > max(bundled) for k in set(project) - set(bundled))
    else:
        assert claim_sources()["C01"]["page"] == "000_4f34db7e0f1b54c8.txt"


ANALYTIC = {
    "C01": "confirmed", "C02": "confirmed", "C03": "confirmed", "C04": "confirmed",
    "C05": "confirmed", "C06": "confirmed", "C07": "confirmed", "C08": "confirmed",
    "C09": "confirmed", "C10": "confirmed", "C11": "confirmed", "C14": "confirmed",
    "C15": "refuted", "C17": "confirmed", "C20": "confirmed", "C22": "untestable-here",
    "C23": "refuted", "C24": "confirmed", "C25": "refuted", "C26": "conditional",
    "C27": "conditional", "C28": "confirmed", "C34": "mixed", "C35": "conditional",
}


@pytest.fixture(scope="module")
def analytic(tmp_path_factory):
    ctx = Context(RunRequest(tmp_path_factory.mktemp("empty"), "quick"))
    return {r.id: r for r in run_claims(sorted(ANALYTIC), ctx)}


@pytest.mark.parametrize("claim_id", sorted(ANALYTIC))
def test_analytic_verdicts(analytic, claim_id):
    row = analytic[claim_id]
    assert row.error is None, row.evidence.get("traceback")
    assert row.verdict == ANALYTIC[claim_id]
    assert row.summary and row.summary_zh and row.command


def test_corrected_figures(analytic):
    c23 = analytic["C23"].evidence
    assert c23["ffn_share"] == pytest.approx(0.7010, abs=5e-4)
    c15 = analytic["C15"].evidence
    assert c15["page_example"]["matrices"] == 177_209_344
    assert c15["meta_llama_3_8b"]["ffn"] == 3 * 4096 * 14336


def test_a_check_that_raises_is_an_error_not_a_verdict(monkeypatch, capsys):
    """A renamed summary key (a KeyError inside a check) must never read as a finding."""
    def broken(ctx):
        raise KeyError("arms")

    monkeypatch.setitem(ledger.CHECKS, "C16", broken)
    (row,) = run_claims(["C16"])
    assert row.verdict == "error" and row.error == "KeyError: 'arms'"
    assert "KeyError" in row.evidence["traceback"]
    assert main(["claims", "C16", "--json"]) == 1
    assert [r["verdict"] for r in json.loads(capsys.readouterr().out)] == ["error"]


# (each field and schema refusal, by name: tests/experiments/test_summaries.py)
@pytest.mark.parametrize("content", [{"schema": 1}, {"no": "schema"}, "{not json"])
def test_a_summary_of_another_schema_fails_loudly(tmp_path, content):
    folder = tmp_path / "ffn" / "quick"
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(content if isinstance(content, str)
                                         else json.dumps(content))
    with pytest.raises(ResultsError, match=r"summary\.json.*blocklab suite ffn --size quick"):
        load_summary(tmp_path, "ffn", "quick")
    (row,) = run_claims(["C16"], Context(RunRequest(tmp_path, "quick")))
    assert row.verdict == "error" and "ResultsError" in row.error
    assert load_summary(tmp_path, "placement", "quick") is None  # not run: no error


def _counted():
    return [Part(C18_FLOPS_PART, registered("C18")[C18_FLOPS_PART],
                 Estimate(35.0, None, None, 1), "refuted", "a count")]


@pytest.mark.parametrize(("cid", "verdict", "parts", "error"), [
    # C18's FLOP counts are exact: a refuted count may refute the claim; a run may not
    ("C18", "refuted", _counted, None), ("C16", "refuted", list, "depends on scale"),
    # C29 (an identity) and C31 (counts) do not depend on scale: "at this scale" is a bug
    *[(cid, verdict, list, "does not depend on scale") for cid in ("C29", "C31", "C02")
      for verdict in ("not-reproduced-at-this-scale", "contradicted-at-this-scale")],
])
def test_only_an_exact_part_refutes_and_only_a_scale_dependent_claim_is_at_this_scale(
        monkeypatch, cid, verdict, parts, error):
    found = Finding(verdict, "x", "x", parts=parts())
    monkeypatch.setitem(ledger.CHECKS, cid, lambda ctx: found)
    (row,) = run_claims([cid])
    assert row.verdict == (verdict if error is None else "error")
    assert row.error is None if error is None else error in row.error


def test_c26_and_c27_verdicts_follow_from_what_was_computed():
    assert c26_verdict(extended_finite=False, fp16_angles_nan=False) == "confirmed"
    assert c26_verdict(extended_finite=True, fp16_angles_nan=True) == "conditional"
    assert c26_verdict(extended_finite=True, fp16_angles_nan=False) == "refuted"
    assert c27_verdict(True, [5e5, 1e6]) == "conditional"
    assert c27_verdict(False, [5e5, 1e6]) == "refuted"
    assert c27_verdict(True, [1e4, 5e5, 1e6]) == "conditional"  # most raised it
    assert c27_verdict(True, []) == "inconclusive"
    assert c27_verdict(True, [1e4, 1e6]) == "inconclusive"
