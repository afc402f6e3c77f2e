"""`blocklab suite --precision auto`: the suite trains in whichever precision its main training
shape runs faster in on this CPU (the kept calibration answer), says which and why, and keeps
its runs in that precision's folder; a suite that measures float32 only stays float32."""

import json

import pytest

from blocklab.cli import main
from blocklab.config import ModelConfig
from blocklab.experiments import step_precision
from blocklab.experiments.env import torch_threads
from blocklab.experiments.options import SIZES
from blocklab.experiments.suites import SUITE_MODULES, get_suite
from blocklab.nn import calibration


def _keep_answer(suite: str, size: str, fastest: str, fp32_s=0.020, bf16_s=0.012):
    """Store the calibration's answer for `suite`'s shape at `size`, as a measurement would."""
    config, batch, seq_len = get_suite(suite).shape(size)
    with torch_threads(1):  # the answer is kept per thread count: suite runs train on one
        key = step_precision.calibration_key(config, batch, seq_len, "fast")
    path = calibration.folder() / f"{calibration.question('step_precision', key)}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"op": "step_precision", "key": key, "fastest": fastest,
                                "median_s": {"fp32": fp32_s, "bf16": bf16_s}}))


@pytest.mark.parametrize(("suite", "fastest", "said"), [
    ("ffn", "bf16", "--precision auto: bf16, the faster training step on this CPU at d 32 × 1 "
                    "layers, 4 × 32 tokens, 1 thread (bf16 12.0 ms, fp32 20.0 ms a step)"),
    ("width", "fp32", "--precision auto: fp32, the faster training step"),
    ("quantize", None, "--precision auto: fp32 (suite quantize measures float32 only)"),
])
def test_auto_trains_in_the_faster_precision_and_says_why(started, measuring, tmp_path, capsys,
                                                          suite, fastest, said):
    if fastest is not None:
        _keep_answer(suite, "tiny", fastest)
    assert main(["suite", suite, "--tiny", "--precision", "auto", "--no-progress",
                 "--results", str(tmp_path)]) == 0
    assert said in capsys.readouterr().err
    (options,) = started
    assert options.precision == (fastest or "fp32")
    assert options.folder() == ("tiny+bf16" if fastest == "bf16" else "tiny")


def test_auto_with_budget_is_refused_in_one_line_when_it_chooses_bf16(started, measuring,
                                                                       one_line_exit_2, tmp_path):
    _keep_answer("ffn", "tiny", "bf16")
    one_line_exit_2(["suite", "ffn", "--tiny", "--precision", "auto", "--budget", "5",
                     "--results", str(tmp_path / "runs")],
                    "--precision auto chose bf16 here; use --precision fp32 with --budget")
    assert started == []


@pytest.mark.parametrize("name", sorted(SUITE_MODULES))
def test_every_suite_that_trains_in_bf16_names_the_shape_auto_times(name):
    suite = get_suite(name)
    assert (suite.shape is not None) == ("bf16" in suite.precisions)
    if suite.shape is None:
        return
    for size in SIZES:
        config, batch, seq_len = suite.shape(size)
        assert isinstance(config, ModelConfig)
        assert batch >= 1 and 1 <= seq_len <= config.max_seq_len
