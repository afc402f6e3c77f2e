"""`blocklab train`: end to end on a tiny model, config files, flags, errors, exit codes."""

import json

import pytest

from blocklab.cli import main
from blocklab.experiments import env, locks

TINY = ["--d-model", "32", "--n-layers", "2", "--n-heads", "2", "--steps", "20",
        "--batch-size", "4", "--seq-len", "32", "--threads", "1", "--no-progress"]


def test_tiny_run_writes_result_json(tmp_path, capsys):
    assert main(["train", *TINY, "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["status"] == "ok" and result["steps_done"] == 20
    assert 0 < result["final"]["val_loss"] < 6  # nats per token; ln 256 = 5.55
    assert result["model_config"]["d_model"] == 32 and result["train_config"]["steps"] == 20
    out = capsys.readouterr().out
    assert "val loss (nats/token)" in out and "ok" in out


def test_bf16_reference_run_records_its_precision_backend_and_ops(tmp_path, capsys,
                                                                  monkeypatch):
    monkeypatch.setattr(env, "bf16_emulated", lambda: True)  # warned, and the run goes on
    short = [a if a != "20" else "4" for a in TINY]
    assert main(["train", *short, "--precision", "bf16", "--backend", "reference", "--json",
                 "--out", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert err.startswith("warning: bfloat16 matmuls are emulated on this CPU")
    summary = json.loads(out)
    assert (summary["precision"], summary["backend"]) == ("bf16", "reference")
    assert summary["backends"] == {"rms_norm": "reference",
                                   "attention": "sdpa"}  # a reference backend: fused kernel
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["train_config"]["precision"] == "bf16"
    assert result["backends"] == summary["backends"]
    assert result["status"] == "ok" and 0 < result["final"]["val_loss"] < 6


def test_config_file_then_flags_override(tmp_path, capsys):
    config = tmp_path / "run.json"
    config.write_text(json.dumps({
        "model": {"d_model": 32, "n_layers": 1, "n_heads": 2, "ffn": "relu", "norm": "layernorm"},
        "train": {"steps": 3, "batch_size": 2, "seq_len": 16, "threads": 1, "eval_batches": 1}}))
    code = main(["train", "--config", str(config), "--placement", "post", "--warmup", "3",
                 "--clip", "0", "--init", "xavier", "--eval-lengths", "32", "--json",
                 "--out", str(tmp_path / "o")])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["status"] == "ok" and set(summary["final"]["val_loss_by_length"]) == {"16",
                                                                                          "32"}
    result = json.loads((tmp_path / "o" / "result.json").read_text())
    assert result["model_config"]["ffn"] == "relu" and result["model_config"]["placement"] == "post"
    train = result["train_config"]
    # a warmup as long as the run is allowed
    assert (train["warmup_steps"], train["grad_clip"], train["init"]) == (3, None, "xavier")


# A config's refusal is tested where the config is (tests/test_config.py, test_trainer.py); here,
# that the command names the flag that held the value, and its own checks of the text.
@pytest.mark.parametrize(("args", "message"), [
    (["--ffn", "nope"], "error: --ffn: ModelConfig.ffn='nope' is not allowed"),
    (["--warmup", "-1"], "error: --warmup: TrainConfig.warmup_steps=-1 is not allowed"),
    (["--precision", "fp16"], "error: --precision: TrainConfig.precision='fp16' is not allowed; "
                              "expected one of ['fp32', 'bf16']"),
    (["--backend", "fused"], "TrainConfig.backend='fused' is not allowed; expected one of "
                             "['reference', 'fast', 'compiled']"),
    (["--device", "meta"], "TrainConfig.device='meta' is not allowed; expected 'cpu' or "
                           "'cuda[:index]'"),
    (["--data", "/no/such/file"], "is not 'stdlib', 'shakespeare'"),
    (["--eval-lengths", "a,b"], "--eval-lengths 'a,b'"),
    # a warmup longer than the run, set by a flag or in the --config file
    (["--warmup", "30"], "error: --warmup 30 is more than --steps 20: the learning rate would "
                         "still be warming up when training ends; expected a warmup of at most "
                         "20 steps"),
    (["--config", "{config}"], "train.warmup_steps=21 is more than --steps 20"),
])
def test_bad_values_are_one_line_exit_2(tmp_path, one_line_exit_2, args, message):
    config = tmp_path / "run.json"
    config.write_text(json.dumps({"train": {"warmup_steps": 21}}))
    one_line_exit_2(["train", *TINY, *(a.format(config=config) for a in args), "--out",
                     str(tmp_path / "o")], message)
    assert not (tmp_path / "o").exists()


def test_diverged_run_exits_1_and_keeps_the_result(tmp_path, capsys):
    assert main(["train", *TINY, "--lr", "1000", "--clip", "0", "--out", str(tmp_path)]) == 1
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["status"] == "diverged" and result["curves"]["train_loss"]
    assert "diverged" in capsys.readouterr().out


@pytest.mark.parametrize(("text", "extra", "message"), [
    ("", [], "is empty; expected text to train on"),
    ("x" * 300, [], "holds 300 tokens, 30 of them in its validation split; a validation "
                    "window of 32 (--seq-len, --eval-lengths) needs 33"),
    ("x" * 3000, ["--eval-lengths", "512"], "a validation window of 512"),
])
def test_data_too_small_is_refused_before_waiting_for_the_machine(tmp_path, monkeypatch,
                                                                  one_line_exit_2, text, extra,
                                                                  message):
    """Bad data is said at once, never after a wait for the machine lock."""
    monkeypatch.setattr(locks, "machine_lock", lambda **kwargs: pytest.fail("took the lock"))
    data = tmp_path / "data.txt"
    data.write_text(text)
    line = one_line_exit_2(["train", *TINY, *extra, "--data", str(data), "--out",
                            str(tmp_path / "o")], message)
    assert line.startswith(f"error: --data {str(data)!r} ")
