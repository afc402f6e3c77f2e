"""The registered rules (`blocklab.claims.registry`): listed before any data, shown with no
results stored, and the very rules the checks grade by."""

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from blocklab.claims import Context, run_claims
from blocklab.claims import registry as reg
from blocklab.claims.catalogue import CHECKS, SUITE_OF, planned_hash, suite_rules
from blocklab.claims.finding import Finding
from blocklab.claims.ledger import flag_changed_rules
from blocklab.claims.rules import Estimate, Part, Rule
from blocklab.cli import main
from blocklab.experiments.options import RunRequest
from blocklab.experiments.suites import get_suite, quantize
from blocklab.experiments.suites.quantize.summary import SwigluQuant
from blocklab.nn.int8 import SWIGLU_SCHEMES

from . import test_depth as td
from . import test_ffn as tf
from . import test_norm_cost as tn
from . import test_placement as tpl
from . import test_positions as tp
from . import test_quantization as tq
from . import test_width as tw
from .conftest import ci, store_summary


@pytest.mark.parametrize("size", ["tiny", "quick", "full"])
def test_every_registered_rule_is_a_rule_with_seeds_to_spend(size):
    """A sequential or a fixed design; past tiny, the suite's planned seeds (its first look)
    lie within every seeded design, and no first look is at 2 seeds or fewer."""
    for cid in reg.RULES:
        planned = get_suite(SUITE_OF[cid]).default_seeds[size] if cid in SUITE_OF else None
        for name, rule in reg.registered(cid, size).items():
            assert isinstance(rule, Rule) and name
            top = rule.min_seeds if rule.max_seeds is None else rule.max_seeds
            assert 1 <= rule.min_seeds <= top, (cid, name)
            assert rule.schedule[0] == rule.min_seeds and rule.schedule[-1] == top
            if size != "tiny" and rule.max_seeds is not None and planned is not None:
                assert 3 <= rule.schedule[0] <= planned <= rule.max_seeds, (cid, name)
    # Parts that depend on what the suites run follow their plans.
    assert len(reg.registered("C21", "quick")) == 10
    assert "learned absolute (learned-16L) collapses at 2×" in reg.registered("C21", "quick")
    assert not reg.registered("C30", "tiny")  # tiny reads no multiple past 4×
    assert reg.registered("C02", size) == {}


def test_a_part_the_plan_did_not_list_has_no_rule():
    with pytest.raises(ValueError, match="no rule registered for size 'quick'"):
        reg.rule_of("C21", "quick", "learned absolute (learned-8L) collapses at 2×")


# --- the checks grade by exactly these rules ----------------------------------------------------
@pytest.fixture(scope="module")
def fake_results(tmp_path_factory) -> Path:
    """A quick-size summary of 4 seeds of every suite, each with every arm, multiple and
    scheme the suites plan, built from the other tests' fakes."""
    root = tmp_path_factory.mktemp("results")
    rel = ci(-1.5, -2.0, -1.0, 5)
    store_summary(root, "ffn", tf._ffn_data(rel, rel, rel), 4)
    deep = td._data([td._effect(ci(4.8, 4.2, 5.3, 8))])
    main_grid = tpl._placement(0, tpl.HOLDS, tpl.SPREAD)
    store_summary(root, "placement", dataclasses.replace(
        main_grid, stability=main_grid.stability + deep.stability,
        stability_effects=main_grid.stability_effects + deep.stability_effects), 4)
    store_summary(root, "norm-cost", tn._norm_cost((0.9, 0.88, 0.92), equivalent=True), 4)
    reads = {"2": 1.0, "4": 2.0, "8": 3.0, "16": 4.0}
    learned, sinusoidal = reg.c21_fair_arms("quick")
    arms = {**tp._c30_arms(), learned: tp._arm({m: 40.0 for m in reads}),
            sinusoidal: tp._arm({"2": 1.0, "4": 12.0, "8": 40.0, "16": 60.0}),
            "alibi": tp._arm(reads)}
    store_summary(root, "position", tp._data(arms, cost=tp._cost()), 4)
    iv = ci(5.0, 4.0, 6.0)
    swiglu = [SwigluQuant(scheme=s, ffn_error=iv, logits_error=iv, delta=iv,
                          error_vs_separate_pct=iv)
              for s in SWIGLU_SCHEMES]
    store_summary(root, "quantize", dataclasses.replace(tq._data(1.8, 1.2), swiglu=swiglu), 4)
    store_summary(root, "width", tw._data(), 4)
    return root


def test_every_part_a_check_grades_has_the_registered_rule(fake_results):
    rows = run_claims(sorted(reg.RULES), Context(RunRequest(fake_results, "quick")))
    for row in rows:
        planned = reg.registered(row.id, "quick")
        assert row.error is None, (row.id, row.error)
        # Every planned part is graded on a summary that holds all the plan ran ...
        assert [p.name for p in row.parts] == list(planned), row.id
        for part in row.parts:
            # ... each by the rule the registry lists, hash for hash, and shown with it.
            assert part.rule == planned[part.name], (row.id, part.name)
            shown = next(p for p in row.to_dict()["parts"] if p["name"] == part.name)
            assert shown["rule_hash"] == planned[part.name].hash
        assert any(p.estimate.n for p in row.parts), row.id


def test_a_check_grading_by_another_rule_is_an_error(monkeypatch, tmp_path):
    rule = dataclasses.replace(reg.c16_rule("swiglu"), min_seeds=2)  # edited after the data

    def edited(ctx):
        (part,) = Part.decided_together([("swiglu", rule, Estimate(-1.5, -2.0, -1.0, 5))])
        return Finding("confirmed", "s", "s", parts=[part])

    monkeypatch.setitem(CHECKS, "C16", edited)
    (row,) = run_claims(["C16"], Context(RunRequest(tmp_path, "quick")))
    assert row.verdict == "error" and "not registered" in row.error
    # The registered parts are still shown, with their own rules.
    assert row.parts[0].rule == reg.c16_rule("swiglu")


# --- shown with no results stored ---------------------------------------------------------------
RULE_KEYS = {"metric", "smallest_effect", "margin", "min_seeds", "max_seeds", "claimed",
             "threshold", "test", "decides", "spending"}


def test_claims_json_lists_every_registered_rule_with_no_results(tmp_path, capsys):
    ids = sorted(reg.RULES)
    assert main(["claims", *ids, "--json", "--results", str(tmp_path)]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    for cid in ("C16", "C18", "C19", "C21"):
        assert rows[cid]["verdict"] == "missing-results"
    for cid in ids:
        planned = reg.registered(cid, "quick")
        parts = rows[cid]["parts"]
        assert parts and [p["name"] for p in parts] == list(planned), cid
        for p in parts:
            assert set(p["rule"]) == RULE_KEYS
            assert p["rule_hash"] == planned[p["name"]].hash
        assert rows[cid]["rule_hash"] == parts[0]["rule_hash"]
        if rows[cid]["verdict"] == "missing-results":
            assert all(p["decision"] == "missing-results" and p["estimate"]["n"] == 0
                       for p in parts)
    swiglu = rows["C16"]["parts"][0]
    assert swiglu["rule"]["min_seeds"] == 5 and swiglu["rule"]["claimed"] == -1.5


def test_claims_rules_prints_the_rules_and_the_edits_after_data(tmp_path, capsys):
    assert main(["claims", "--rules", "--json"]) == 0
    listed = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(listed) == set(reg.RULES)
    assert [p["rule_hash"] for p in listed["C18"]["parts"]] == [
        r.hash for r in reg.registered("C18", "quick").values()]
    # each claim's own edits, the decision rule's and the looks'; C16 its precision check;
    # C32 its timed parts' log-ratio intervals and its stated reason, a part added after data
    for cid, edits in (("C16", 13), ("C30", 8), ("C32", 8)):
        assert len(listed[cid]["rules_changed"]) == edits, cid
    assert [p["name"] for p in listed["C32"]["parts"]][-1] == reg.C32_REASON_PART
    assert any(reg.C32_REASON_PART in c["what"] and "after the quick results" in c["what"]
               for c in listed["C32"]["rules_changed"])
    # the rule every training run is held to, visible before any data
    assert {r["learn_margin"] for r in listed.values()} == {0.25}
    assert main(["claims", "--rules", "C16", "C02"]) == 0
    out = capsys.readouterr().out
    assert "Every training run must close at least 25% of the way from the unigram" in out
    assert "seeds 5–10 (looks at 5, 8, 10)" in out and "rule changed after data (2026-11-30)" in out
    assert "C02: analytic, no registered rules" in out
    # and noted under their claims in the ledger
    assert main(["claims", "C16", "C30", "C32", "--results", str(tmp_path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.count("rule changed after data") >= 5
    assert {cid for change in reg.CHANGED_AFTER_DATA for cid in change.claims} <= set(reg.RULES)
    assert all(c.date.startswith("2026-1") for c in reg.CHANGED_AFTER_DATA)


def test_a_change_to_a_metric_s_code_flags_the_parts_planned_before_it(monkeypatch):
    """The recorded hash covers the rule, the decision and `Suite.metric_version`."""
    rule = reg.registered("C33", "quick")[reg.C33_TENSOR_PART]
    before = planned_hash("C33", rule)
    assert before != rule.hash and len(before) == 12
    assert suite_rules("quick")["quantize"][f"C33 {reg.C33_TENSOR_PART}"] == before
    (part,) = Part.decided_together([(reg.C33_TENSOR_PART, rule, Estimate(5.0, 4.0, 6.0, 3, 0.4))])
    summary = SimpleNamespace(planned_rules=suite_rules("quick")["quantize"])
    ctx = SimpleNamespace(summary=lambda suite: summary)
    (same,) = flag_changed_rules("C33", [part], ctx)
    assert same.planned_under is None and "changed after data" not in same.reason

    monkeypatch.setattr(quantize, "SUITE", dataclasses.replace(
        quantize.SUITE, metric_version="2099-01-01: the error measured another way"))
    after = planned_hash("C33", rule)
    assert after != before and rule.hash == part.rule.hash  # the rule itself is unchanged
    (flagged,) = flag_changed_rules("C33", [part], ctx)
    assert flagged.planned_under == before
    assert f"planned under rule {before}, graded under {after}" in flagged.reason
    # a claim no suite measures keeps its rule's own hash
    assert planned_hash("C99", rule) == rule.hash

