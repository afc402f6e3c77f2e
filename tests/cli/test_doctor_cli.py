"""`blocklab doctor`: exit codes 0/1/2, table and JSON."""

import json

from blocklab.budget import load_zoo
from blocklab.cli import main


def test_clean_config_exit_0(capsys):
    assert main(["doctor", "meta-llama-3-8b"]) == 0
    assert "no findings" in capsys.readouterr().out


def test_error_finding_exit_1_table_and_json(capsys):
    assert main(["doctor", "llama-2-7b", "--serve-len", "65536"]) == 1
    out = capsys.readouterr().out
    assert "context" in out and "rope-base" in out and "error" in out
    assert main(["doctor", "llama-2-7b", "--serve-len", "16384", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["exit_code"] == 1 and doc["counts"]["error"] == 1
    finding = doc["findings"][0]
    assert set(finding) == {"level", "code", "reason", "fix", "detail"}
    assert finding["level"] == "error" and finding["code"] == "context"


def test_training_reads_the_warmup_from_a_config_json(tmp_path, capsys):
    cfg = {**load_zoo("bert-base-uncased").config, "num_hidden_layers": 24}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    assert main(["doctor", str(path), "--training"]) == 1
    capsys.readouterr()
    path.write_text(json.dumps({**cfg, "warmup_steps": 10000}))
    assert main(["doctor", str(path), "--training"]) == 0
