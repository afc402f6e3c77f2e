"""`blocklab report --plan` and `blocklab suite` given careless input: exit 2, one line naming
the option, and nothing planned or run."""

from __future__ import annotations

import pytest

from blocklab.cli import main


@pytest.mark.parametrize("argv,needle", [
    (["report", "--plan", "--executor", "ray", "--jobs", "2"], "--jobs"),
    (["report", "--plan", "--address", "10.0.0.1:6379"], "--address"),
    (["suite", "ffn", "--plan"], "--plan"),
    (["report", "--plan", "--budget", "-1"], "--budget -1 is not allowed"),
    (["report", "--budget", "nan"], "--budget nan is not allowed"),
    (["report", "--budget", "1e9"], "expected minutes in [0, 100000]"),
    (["suite", "ffn", "--tiny", "--budget", "5", "--seeds", "2"], "leave out --seeds"),
    (["suite", "ffn", "--tiny", "--budget", "5", "--precision", "bf16"], "--precision"),
])
def test_plan_with_bad_input(tmp_path, capsys, argv, needle):
    code = main([*argv, "--results", str(tmp_path / "runs")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("error: ") and needle in err[0], err[0]
    assert not (tmp_path / "runs").exists()
