import json

import pytest

from blocklab.cli import main


@pytest.mark.parametrize("args", [["nope"], ["llama-3.2-1b", "--layers", "0"],
                                  ["llama-3.2-1b", "--d-model", "100"],
                                  ["llama-3.2-1b", "--seq", "0"]])
def test_bad_input_is_one_line_exit_2(capsys, args):
    assert main(["quantize", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err


def test_json(capsys):
    assert main(["quantize", "llama-3.2-1b", "--layers", "1", "--d-model", "128", "--seq",
                 "16", "--repeats", "1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["timed_config"]["n_layers"] == 1 and doc["timed_config"]["d_model"] == 128
    assert "random weights" in doc["note"]
    assert [d["scheme"] for d in doc["schemes"]][0] == "none"
