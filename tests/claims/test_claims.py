"""The claims ledger: every claim has a check, analytic verdicts, and experimental checks read
stored suite summaries (fabricated here, so the verdict logic is tested without training)."""

import json
import re
from pathlib import Path

import pytest

from blocklab.claims import CHECKS, CLAIM_TEXT, Context, run_claims
from blocklab.claims.text import claim_sources, claims_markdown, parse_claims
from blocklab.experiments.suites.base import SUMMARY_SCHEMA

SHARED = Path(__file__).resolve().parents[3] / "shared" / "CLAIMS.md"


def _ids(text: str) -> set[str]:
    return set(re.findall(r"^- (C\d\d) ", text, flags=re.M))


def test_every_claim_id_has_a_check_and_text():
    from blocklab.claims import checks  # noqa: F401  (registers)

    ids = _ids(claims_markdown())
    assert len(ids) == 28
    assert ids == set(CHECKS) == set(CLAIM_TEXT) == set(claim_sources())


def test_bundled_claims_match_the_project_list_when_present():
    # The package ships CLAIMS.md; beside a checkout the project's own list must agree with it
    # on every claim the ledger covers. Claims the project added later (ids past the ledger's
    # last) may wait for their checks; a changed text or source of a covered claim may not.
    if SHARED.exists():
        project, bundled = parse_claims(SHARED.read_text(encoding="utf-8")), claim_sources()
        assert {k: project.get(k) for k in bundled} == bundled
        assert all(k > max(bundled) for k in set(project) - set(bundled))
    else:
        assert claim_sources()["C01"]["page"] == "000_4f34db7e0f1b54c8.txt"


def test_sources_cite_page_and_section():
    sources = claim_sources()
    assert sources["C01"]["section"] == "知识点一：SwiGLU 的门控计算与等参数宽度"
    assert sources["C23"] == {**sources["C23"], "page": "001_3354982bf5d64f93.txt",
                              "section": "FFN 计算对部署的影响"}
    assert all(s["page"].endswith(".txt") and s["section"] for s in sources.values())


ANALYTIC = {
    "C01": "confirmed", "C02": "confirmed", "C03": "confirmed", "C04": "confirmed",
    "C05": "confirmed", "C06": "confirmed", "C07": "confirmed", "C08": "confirmed",
    "C09": "confirmed", "C10": "confirmed", "C11": "confirmed", "C14": "confirmed",
    "C15": "refuted", "C17": "confirmed", "C20": "confirmed", "C22": "untestable-here",
    "C23": "refuted", "C24": "confirmed", "C25": "refuted", "C26": "conditional",
    "C27": "conditional", "C28": "conditional",
}


@pytest.fixture(scope="module")
def analytic(tmp_path_factory):
    ctx = Context(tmp_path_factory.mktemp("empty"), "quick")
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


def test_missing_results_name_the_command(tmp_path):
    rows = run_claims(["C12", "C13", "C16", "C18", "C19", "C21"], Context(tmp_path, "quick"))
    for row in rows:
        assert row.verdict == "missing-results" and row.error is None
        assert row.command.startswith("blocklab suite ") and str(tmp_path) in row.command


def test_unknown_id():
    with pytest.raises(ValueError, match=r"unknown claim id\(s\) \['C99'\]"):
        run_claims(["C99"])


def _ci(mean, low, high, n=3):
    return {"n": n, "mean": mean, "ci_low": low, "ci_high": high, "sd": None}


def _write(root: Path, suite: str, data: dict) -> None:
    folder = root / suite / "quick"
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps(
        {"schema": SUMMARY_SCHEMA, "suite": suite, "size": "quick", "seeds": 3, "runs": 1,
         "wall_time_s": 1.0, "notes": [], "tables": [], "data": data}))


@pytest.mark.parametrize(("swiglu", "geglu", "glu", "verdict"), [
    (_ci(-1.5, -2.0, -1.0), _ci(-1.0, -1.5, -0.5), _ci(-0.5, -1.0, -0.1), "confirmed"),
    (_ci(1.5, 1.0, 2.0), _ci(0.2, -1.0, 1.0), _ci(0.1, -1.0, 1.0), "refuted"),
    (_ci(-0.5, -2.0, 1.0), _ci(0.2, -1.0, 1.0), _ci(0.1, -1.0, 1.0), "conditional"),
])
def test_ffn_verdict_logic(tmp_path, swiglu, geglu, glu, verdict):
    arms = {name: {"rel_delta_pct": rel, "val_loss": _ci(2.0, 1.9, 2.1)}
            for name, rel in (("swiglu", swiglu), ("geglu", geglu), ("glu", glu))}
    _write(tmp_path, "ffn", {"arms": arms, "seeds": 3, "steps": 100, "size": {"d_model": 64}})
    (row,) = run_claims(["C16"], Context(tmp_path, "quick"))
    assert row.verdict == verdict and row.error is None


def _placement(post_cold_failures: int, slope_first: float) -> dict:
    grads = {p: {"xavier": {"depths": [2, 4, 8], "last_layer_grad": [1.0, 0.7, 0.5],
                            "first_layer_grad": [1.0, 1.0, 1.0], "slope_last": -0.5,
                            "slope_first": slope_first}}
             for p in ("pre", "post")}
    cells = [{"placement": p, "depth": 8, "warmup": w, "lr": 3e-3, "runs": 4,
              "failures": post_cold_failures if (p == "post" and w == 0) else 0,
              "delta_vs_pre": None if p == "pre" else _ci(0.1, -0.5, 0.7)}
             for p in ("pre", "post") for w in (0, 100)]
    return {"init_gradients": grads, "training": cells, "seeds": 2, "steps": 300}


@pytest.mark.parametrize(("failures", "slope", "c13", "c19"), [
    (2, -0.6, "confirmed", "conditional"),  # 3 of 4 parts: expressiveness not shown
    (1, 0.9, "conditional", "conditional"),
    (0, 0.0, "refuted", "refuted"),
])
def test_placement_verdict_logic(tmp_path, failures, slope, c13, c19):
    _write(tmp_path, "placement", _placement(failures, slope))
    rows = {r.id: r for r in run_claims(["C12", "C13", "C19"], Context(tmp_path, "quick"))}
    assert rows["C13"].verdict == c13
    assert rows["C19"].verdict == c19
    assert rows["C12"].verdict == "refuted"  # gradients moved < 2× in this fabricated data


def _ratio(impl, ratio, low, high, d=1024):
    return {"d": d, "rows": 1024, "threads": 1, "impl": f"rmsnorm:{impl}",
            "layernorm_impl": f"layernorm:{impl}", "pass": "fwdbwd",
            "ratio_vs_layernorm": ratio, "ci_low": low, "ci_high": high, "repeats": 5}


@pytest.mark.parametrize(("ratio", "low", "high", "equivalent", "verdict"), [
    (0.85, 0.80, 0.90, True, "confirmed"),
    (1.30, 1.20, 1.40, True, "refuted"),
    (0.95, 0.80, 1.10, True, "conditional"),
    (0.85, 0.80, 0.90, False, "conditional"),
])
def test_norm_cost_verdict_logic(tmp_path, ratio, low, high, equivalent, verdict):
    # Graded on the like-for-like kind ("plain"); blocklab's kernel vs torch's fused LayerNorm
    # (3× here) is reported but does not decide the verdict.
    _write(tmp_path, "norm-cost", {
        "ratios": [_ratio("plain", ratio, low, high), _ratio("blocklab", 3.0, 2.5, 3.5)],
        "step_time": {"1": {"ratio": 1.0}},
        "quality": {"delta": _ci(0.0, -0.01, 0.01), "margin": 0.02, "equivalent": equivalent,
                    "seeds": [0, 1, 2]}})
    (row,) = run_claims(["C18"], Context(tmp_path, "quick"))
    assert row.verdict == verdict and row.error is None
    assert row.evidence["ratio_ranges"]["blocklab"] == [3.0, 3.0]


def _arm(pcts):
    return {"extrapolated_vs_sliding_pct": {m: (p if isinstance(p, str) else _ci(p, p, p))
                                            for m, p in pcts.items()}}


def test_extrapolation_grades_against_the_page(tmp_path):
    unusable = "unavailable (table)"
    arms = {
        "learned": _arm({"2": unusable, "4": unusable, "8": unusable}),
        "sinusoidal": _arm({"2": 3.0, "4": 12.0, "8": 40.0}),
        "alibi": _arm({"2": 0.1, "4": 0.2, "8": 0.3}),
        "rope": _arm({"2": 2.0, "4": 4.0, "8": 30.0}),
        "rope+yarn": _arm({"2": 1.0, "4": 2.0, "8": 4.5}),
    }
    _write(tmp_path, "position", {"L": 128, "mults": [1, 2, 4, 8], "arms": arms})
    (row,) = run_claims(["C21"], Context(tmp_path, "quick"))
    assert row.verdict == "confirmed", row.summary
    arms["rope"] = _arm({"2": 2.0, "4": 9.0, "8": 30.0})  # RoPE degrades at 4×
    (tmp_path / "position" / "quick" / "summary.json").unlink()
    (tmp_path / "position" / "quick").rmdir()
    (tmp_path / "position").rmdir()
    _write(tmp_path, "position", {"L": 128, "mults": [1, 2, 4, 8], "arms": arms})
    (row,) = run_claims(["C21"], Context(tmp_path, "quick"))
    assert row.verdict == "conditional"
    failed = [s["statement"] for s in row.evidence["statements"] if not s["held"]]
    assert failed == ["RoPE works at 4×"]


def test_a_check_that_raises_is_an_error_not_a_verdict(monkeypatch, capsys):
    """A renamed summary key (a KeyError inside a check) must never read as a finding."""
    from blocklab.claims import ledger
    from blocklab.cli import main

    def broken(ctx):
        raise KeyError("arms")

    monkeypatch.setitem(ledger.CHECKS, "C16", broken)
    (row,) = run_claims(["C16"])
    assert row.verdict == "error" and row.error == "KeyError: 'arms'"
    assert row.verdict not in ("confirmed", "refuted", "conditional", "untestable-here",
                               "missing-results")
    assert "KeyError" in row.evidence["traceback"]
    assert main(["claims", "C16", "--json"]) == 1
    printed = json.loads(capsys.readouterr().out)
    rows = printed["claims"] if isinstance(printed, dict) else printed
    assert [r["verdict"] for r in rows] == ["error"]


@pytest.mark.parametrize("content", [{"schema": 1}, {"no": "schema"}, "{not json"])
def test_a_summary_of_another_schema_fails_loudly(tmp_path, content):
    from blocklab.errors import ResultsError
    from blocklab.experiments.suites.base import load_summary

    folder = tmp_path / "ffn" / "quick"
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(content if isinstance(content, str)
                                         else json.dumps(content))
    with pytest.raises(ResultsError, match=r"summary.json .*blocklab suite ffn --size quick"):
        load_summary(tmp_path, "ffn", "quick")
    (row,) = run_claims(["C16"], Context(tmp_path, "quick"))
    assert row.verdict == "error" and "ResultsError" in row.error
    assert load_summary(tmp_path, "placement", "quick") is None  # not run: no error
