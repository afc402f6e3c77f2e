"""The CLI builds one `RunRequest` from its options and hands that same object to every step:
the suites (`run_suites`), the sequential design (`plan_budget`, `run_looks`), the estimate
(`--plan`), the report (`build_report`) and the ledger (`Context`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from blocklab.cli import main
from blocklab.experiments.options import RunRequest


@pytest.fixture
def received(monkeypatch):
    """{step: the request it was handed}, each step replaced by a recorder that does nothing."""
    from blocklab import claims
    from blocklab.claims import sequential
    from blocklab.experiments import estimate, suites
    from blocklab.report import build

    seen: dict[str, list[RunRequest]] = {}

    def plan_budget(request, names, *, workers, calibration=None):
        seen.setdefault("plan_budget", []).append(request)
        return sequential.BudgetPlan(request.budget_s, 0.0, [], 0, workers, {})

    def run_looks(request, names, *, plan, run, workers, echo, executor, progress):
        seen.setdefault("run_looks", []).append(request)
        return sequential.Looks(request.budget_s, 0, errors=run(rules={}))

    def run_suites(request, names, **kwargs):
        seen.setdefault("run_suites", []).append(request)
        return {}

    def build_report(request, out, lang, *, suite_errors, sequential):
        seen.setdefault("build_report", []).append(request)
        return Path(out) / "index.html", {"ledger": [], "suites": {}, "figure_errors": {}}

    def estimate_suites(request, names, **kwargs):
        seen.setdefault("estimate_suites", []).append(request)
        return estimate.SizeEstimate(request.size, [], [], None, {})

    def run_claims(ids, ctx):
        seen.setdefault("run_claims", []).append(ctx.request)
        return []

    monkeypatch.setattr(sequential, "plan_budget", plan_budget)
    monkeypatch.setattr(sequential, "run_looks", run_looks)
    monkeypatch.setattr(suites, "run_suites", run_suites)
    monkeypatch.setattr(build, "build_report", build_report)
    monkeypatch.setattr(estimate, "estimate_suites", estimate_suites)
    monkeypatch.setattr(claims, "run_claims", run_claims)
    return seen


def test_report_hands_one_request_to_the_suites_the_design_and_the_report(tmp_path,
                                                                          received):
    code = main(["report", "--quick", "--seed-offset", "7", "--budget", "5", "--results",
                 str(tmp_path / "runs"), "--out", str(tmp_path / "out"), "--no-progress"])
    assert code == 0
    assert set(received) == {"plan_budget", "run_looks", "run_suites", "build_report"}
    (request,) = received["plan_budget"]
    assert request == RunRequest(tmp_path / "runs", "quick", 7, "fp32", 300.0)
    assert all(got is request for steps in received.values() for got in steps)


def test_a_bf16_report_runs_the_planned_seeds_under_the_same_request(tmp_path, received):
    code = main(["report", "--tiny", "--precision", "bf16", "--results",
                 str(tmp_path / "runs"), "--out", str(tmp_path / "out"), "--no-progress"])
    assert code == 0
    assert set(received) == {"run_suites", "build_report"}  # no budget: no further looks
    (request,) = received["run_suites"]
    assert request == RunRequest(tmp_path / "runs", "tiny", 0, "bf16", 0.0)
    assert received["build_report"][0] is request


def test_the_plan_prices_the_request_it_would_run(tmp_path, received):
    assert main(["report", "--plan", "--full", "--seed-offset", "3", "--results",
                 str(tmp_path / "runs")]) == 0
    (request,) = received["estimate_suites"]
    assert request == RunRequest(tmp_path / "runs", "full", 3, "fp32", None)  # full: no limit


class _SuiteRan(BaseException):
    """Raised in place of the suite's own run, after the design (not what is tested here);
    a BaseException, so that the CLI does not report it as a bug."""


def test_suite_budget_hands_its_request_to_the_design(tmp_path, received, monkeypatch):
    from blocklab.experiments import suites

    def run_suite(*args, **kwargs):
        raise _SuiteRan

    monkeypatch.setattr(suites, "run_suite", run_suite)
    with pytest.raises(_SuiteRan):
        main(["suite", "ffn", "--tiny", "--budget", "2", "--results", str(tmp_path / "runs"),
              "--no-progress"])
    (request,) = received["plan_budget"]
    assert request == RunRequest(tmp_path / "runs", "tiny", 0, "fp32", 120.0)
    assert received["run_looks"][0] is request and received["run_suites"][0] is request


def test_claims_reads_what_its_request_names(tmp_path, received):
    assert main(["claims", "--json", "--tiny", "--seed-offset", "2", "--precision", "bf16",
                 "--results", str(tmp_path)]) == 0
    (request,) = received["run_claims"]
    assert request == RunRequest(tmp_path, "tiny", 2, "bf16")
