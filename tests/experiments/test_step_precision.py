"""faster_precision: the faster of a float32 and a bfloat16 training step at a shape, measured
through blocklab.nn.calibration and kept."""

import json

import torch

from blocklab.config import ModelConfig
from blocklab.experiments import step_precision
from blocklab.nn import calibration

CFG = ModelConfig(vocab_size=64, d_model=32, n_layers=1, n_heads=2, max_seq_len=16)


def test_both_steps_are_timed_the_faster_is_kept_and_a_kept_answer_builds_no_model(
        measuring, monkeypatch):
    choice = step_precision.faster_precision(CFG, batch=2, seq_len=16)
    [stored] = (measuring / "calibration" / calibration.machine_key()).glob(
        "step_precision-*.json")
    record = json.loads(stored.read_text())
    assert set(record["median_s"]) == {"fp32", "bf16"}
    assert choice == record["fastest"] == min(record["median_s"], key=record["median_s"].get)
    assert record["key"]["threads"] == torch.get_num_threads()
    calibration._MEMO.clear()

    def refuse(*args, **kwargs):
        raise AssertionError("a kept answer must not build models")
    monkeypatch.setattr(step_precision, "build_model", refuse)
    assert step_precision.faster_precision(CFG, batch=2, seq_len=16) == choice


def test_static_calibration_answers_fp32_without_timing_and_says_so(monkeypatch):
    monkeypatch.setenv("BLOCKLAB_CALIBRATION", "static")
    monkeypatch.setattr(step_precision, "build_model", None)  # would fail if called
    assert step_precision.faster_precision(CFG, batch=2, seq_len=16) == "fp32"
    choice = step_precision.suite_precision((CFG, 2, 16))
    assert choice.precision == "fp32" and choice.step_ms == {}
    assert "pinned by BLOCKLAB_CALIBRATION=static" in choice.text()


def test_suite_precision_times_at_one_thread_and_says_what_it_measured(measuring):
    torch.set_num_threads(2)
    choice = step_precision.suite_precision((CFG, 2, 16))
    assert torch.get_num_threads() == 2  # restored
    [stored] = (measuring / "calibration" / calibration.machine_key()).glob(
        "step_precision-*.json")
    record = json.loads(stored.read_text())
    assert record["key"]["threads"] == 1
    assert choice.precision == record["fastest"]
    assert choice.step_ms == {k: 1e3 * v for k, v in record["median_s"].items()}
    ms = ", ".join(f"{k} {1e3 * v:.1f} ms" for k, v in sorted(record["median_s"].items()))
    assert choice.text() == (f"--precision auto: {choice.precision}, the faster training step "
                             f"on this CPU at d 32 × 1 layers, 2 × 16 tokens, 1 thread ({ms} "
                             "a step)")
