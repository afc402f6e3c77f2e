"""The CLI builds one `RunRequest` from its options and hands that same object to every step:
the suites (`run_suites`), the plan of work (`price_plan`, `run_looks`), the estimate
(`--plan`), the report (`build_report`) and the ledger (`Context`)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from blocklab import claims
from blocklab.claims import sequential
from blocklab.cli import ladder, main
from blocklab.experiments import estimate, suites, trainer
from blocklab.experiments.options import RunRequest
from blocklab.report import build


@pytest.fixture
def received(monkeypatch):
    """{step: the request it was handed}, each step replaced by a recorder that does nothing."""
    seen: dict[str, list[RunRequest]] = {}

    def price_plan(request, names, *, workers, calibration=None):
        seen.setdefault("price_plan", []).append(request)
        return sequential.WorkPlan(request.budget_s, 0.0, [], 0, workers)

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

    monkeypatch.setattr(sequential, "price_plan", price_plan)
    monkeypatch.setattr(sequential, "run_looks", run_looks)
    monkeypatch.setattr(suites, "run_suites", run_suites)
    monkeypatch.setattr(build, "build_report", build_report)
    monkeypatch.setattr(estimate, "estimate_suites", estimate_suites)
    monkeypatch.setattr(claims, "run_claims", run_claims)
    return seen


@pytest.fixture
def cuda_present(monkeypatch):
    """The trainer's device check answering as on a machine with a GPU."""
    monkeypatch.setattr(trainer, "check_device", lambda device, subject=None: None)


@pytest.mark.parametrize(("argv", "steps", "request_args"), [
    (["report", "--quick", "--seed-offset", "7", "--budget", "5"],
     {"price_plan", "run_looks", "run_suites", "build_report"}, ("quick", 7, "fp32", 300.0)),
    # no budget: no further looks
    (["report", "--tiny", "--precision", "bf16"], {"run_suites", "build_report"},
     ("tiny", 0, "bf16", 0.0)),
    (["report", "--tiny", "--device", "cuda:0"], {"run_suites", "build_report"},
     ("tiny", 0, "fp32", 0.0, "cuda:0")),
    # the plan prices the request it would run; full: no limit
    (["report", "--plan", "--full", "--seed-offset", "3"], {"estimate_suites"},
     ("full", 3, "fp32", None)),
    # claims reads what its request names
    (["claims", "--json", "--tiny", "--seed-offset", "2", "--precision", "bf16"], {"run_claims"},
     ("tiny", 2, "bf16")),
    (["suite", "ffn", "--tiny", "--budget", "2", "--no-progress"],
     {"price_plan", "run_looks", "run_suites"}, ("tiny", 0, "fp32", 120.0)),
])
def test_each_command_hands_one_request_to_every_step(tmp_path, received, cuda_present, started,
                                                      argv, steps, request_args):
    report = ["--out", str(tmp_path / "out"), "--no-progress"] if argv[0] == "report" else []
    assert main([*argv, "--results", str(tmp_path), *report]) == 0
    requests = [got for calls in received.values() for got in calls]
    assert set(received) == steps and len(requests) == len(steps)  # each step called once
    assert all(got is requests[0] for got in requests)
    assert requests[0] == RunRequest(tmp_path, *request_args)


# --- --device ---------------------------------------------------------------------------------
@pytest.mark.parametrize("command", [["suite", "ffn", "--tiny"], ["report", "--tiny"],
                                     ["ladder", "C16", "--budget", "1"]])
@pytest.mark.parametrize("device, message", [
    ("cuda", "error: --device cuda is not allowed here: this PyTorch ({version}) sees no CUDA "
             "device; use 'cpu'"),
    ("tpu", "error: --device 'tpu' is not allowed; expected cpu, cuda or cuda:<index>"),
])
def test_a_device_this_machine_lacks_is_one_line_before_any_work(tmp_path, capfd, command,
                                                                 device, message):
    if device == "cuda" and torch.cuda.is_available():
        pytest.skip("this machine has CUDA")  # the refusal is what is tested here
    runs = tmp_path / "runs"
    code = main([*command, "--device", device, "--results", str(runs), "--no-progress",
                 *(["--out", str(tmp_path / "out")] if command[0] == "report" else [])])
    assert code == 2
    assert capfd.readouterr().err == message.format(version=torch.__version__) + "\n"
    assert not runs.exists() and not (tmp_path / "out").exists()


def test_a_rendered_report_reads_and_needs_no_device(tmp_path, received):
    """--no-run trains nothing, so a device this machine lacks is not checked there."""
    assert main(["report", "--tiny", "--no-run", "--device", "cuda", "--results",
                 str(tmp_path / "runs"), "--out", str(tmp_path / "out")]) == 0
    assert received["build_report"][0].device == "cpu"


@pytest.mark.parametrize("command", [["suite", "ffn", "--tiny"], ["report", "--tiny"],
                                     ["ladder", "C16"]])
def test_runs_on_a_gpu_go_one_after_another(tmp_path, capfd, cuda_present, command):
    code = main([*command, "--device", "cuda", "--jobs", "2", "--results",
                 str(tmp_path / "runs")])
    assert code == 2
    assert capfd.readouterr().err == ("error: --jobs 2 is not allowed with --device cuda: runs "
                                      "on a GPU go one after another in this process; expected "
                                      "--jobs 1 or none\n")


def test_the_ladder_on_a_gpu_trains_bf16_and_says_its_prices_are_this_cpus(tmp_path, capfd,
                                                                           cuda_present,
                                                                           monkeypatch):
    # What is said does not depend on the prices: stubbed, they cost no calibration (6 s a rung).
    monkeypatch.setattr(ladder, "_prices",
                        lambda requests, suite, workers: {size: (60.0, 1, 0) for size in requests})
    assert main(["ladder", "C16", "--plan", "--device", "cuda", "--results",
                 str(tmp_path / "runs")]) == 0
    captured = capfd.readouterr()
    assert "rung3: bf16 on cuda (its bf16 units; not timed here)" in captured.err
    assert "The prices are this CPU's; on cuda the rungs run one after another" in \
        " ".join(captured.out.split())
