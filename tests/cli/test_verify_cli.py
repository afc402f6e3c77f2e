"""`blocklab verify`: table, JSON, exit codes, and no torch on the way."""

import json

from blocklab import verify
from blocklab.cli import main


def test_table_json_and_exit_code(capsys):
    assert main(["verify"]) == 0
    out = capsys.readouterr().out
    assert "all passed" in out and "C09" in out
    assert main(["verify", "--json", "--group", "worked"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["passed"] and data["n_failed"] == 0
    assert {"group", "name", "claim", "expected", "got", "max_error", "tolerance",
            "passed"} <= set(data["checks"][0])


def test_failure_gives_exit_code_1(monkeypatch, capsys):
    monkeypatch.setattr(verify.ref, "layernorm_jacobian", lambda x, eps=1e-6, gain=None: 0 * x)
    assert main(["verify", "--group", "jacobians"]) == 1
    assert "FAIL" in capsys.readouterr().out
