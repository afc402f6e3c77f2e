"""faster_precision: the faster of a float32 and a bfloat16 training step at a shape, measured
through blocklab.nn.calibration and kept."""

import json

import torch

from blocklab.config import ModelConfig
from blocklab.experiments import step_precision
from blocklab.nn import calibration

CFG = ModelConfig(vocab_size=64, d_model=32, n_layers=1, n_heads=2, max_seq_len=16)


def test_both_steps_are_timed_and_the_faster_is_kept(measuring):
    choice = step_precision.faster_precision(CFG, batch=2, seq_len=16)
    [stored] = (measuring / "calibration" / calibration.machine_key()).glob(
        "step_precision-*.json")
    record = json.loads(stored.read_text())
    assert set(record["median_s"]) == {"fp32", "bf16"}
    assert choice == record["fastest"] == min(record["median_s"], key=record["median_s"].get)
    assert record["key"]["threads"] == torch.get_num_threads()


def test_a_kept_answer_builds_no_model(measuring, monkeypatch):
    first = step_precision.faster_precision(CFG, batch=2, seq_len=16)
    calibration.forget()

    def refuse(*args, **kwargs):
        raise AssertionError("a kept answer must not build models")
    monkeypatch.setattr(step_precision, "build_model", refuse)
    assert step_precision.faster_precision(CFG, batch=2, seq_len=16) == first


def test_static_answers_fp32_without_timing(monkeypatch):
    monkeypatch.setenv("BLOCKLAB_CALIBRATION", "static")
    monkeypatch.setattr(step_precision, "build_model", None)  # would fail if called
    assert step_precision.faster_precision(CFG, batch=2, seq_len=16) == "fp32"
