"""`blocklab ladder`: bad input is one line and exit 2 before any work; the budget runs whole
rungs, cheapest first, while each one's estimate fits in what is left."""

import pytest

from blocklab.cli import ladder as ladder_cli

from .conftest import one_line_error


@pytest.mark.parametrize(("argv", "message"), [
    (["C36"], "claim 'C36' has no ladder; allowed: ['C16', 'C18', 'C19', 'C21', 'C30']"),
    (["C16", "--precision", "fp16"], "--precision 'fp16' is not allowed"),
    (["C16", "--budget", "-1"], "--budget -1.0 is not allowed"),
    (["C16", "--budget", "inf"], "--budget inf is not allowed"),
    (["C16", "--seed-offset", "-3"], "--seed-offset"),
    (["C16", "--jobs", "0"], "--jobs"),
])
def test_bad_input_is_one_line_before_any_work(blocklab, tmp_path, argv, message):
    proc = blocklab("ladder", *argv, "--results", str(tmp_path / "runs"))
    assert proc.returncode == 2
    assert message in one_line_error(proc)
    assert not (tmp_path / "runs").exists()


def test_the_budget_runs_whole_rungs_cheapest_first(monkeypatch):
    ran = []

    def run_suites(request, names, **kwargs):
        ran.append((request.size, names))
        return {}

    import blocklab.experiments.suites as suites

    monkeypatch.setattr(suites, "run_suites", run_suites)
    requests = {size: type("R", (), {"size": size})() for size in
                ("quick", "rung1", "rung2", "rung3")}
    # (estimated wall s, runs, stored): rung3 is stored; 10 minutes buy quick and rung1 only
    prices = {"quick": (100.0, 32, 0), "rung1": (300.0, 32, 0), "rung2": (900.0, 32, 0),
              "rung3": (0.0, 32, 32)}
    import time

    done = ladder_cli._run_rungs("ffn", requests, prices, 10.0, time.monotonic(), None, False)
    assert done == ["quick", "rung1"] == [size for size, _ in ran]
    ran.clear()
    assert ladder_cli._run_rungs("ffn", requests, prices, None, time.monotonic(), None,
                                 False) == ["quick", "rung1", "rung2"]


def test_a_suite_that_measures_float32_only_runs_its_rungs_in_fp32(capsys):
    from blocklab.experiments.suites import get_suite

    assert ladder_cli._precision(get_suite("norm-cost"), "rung2", "auto") == "fp32"
    assert "rung2: fp32 (suite norm-cost measures float32 only)" in capsys.readouterr().err
    assert ladder_cli._precision(get_suite("position"), "rung2", "fp32") == "fp32"
