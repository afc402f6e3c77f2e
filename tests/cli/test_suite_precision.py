"""`blocklab suite --precision auto`: the suite trains in whichever precision its main training
shape runs faster in on this CPU (the kept calibration answer), says which and why, and keeps
its runs in that precision's folder; a suite that measures float32 only stays float32."""

import json

import pytest

from blocklab.experiments.suites import SUITE_MODULES, get_suite


def _keep_answer(cache, suite: str, size: str, fastest: str, fp32_s=0.020, bf16_s=0.012):
    """Store the calibration's answer for `suite`'s shape at `size`, as a measurement would."""
    import torch

    from blocklab.experiments import step_precision
    from blocklab.nn import calibration

    config, batch, seq_len = get_suite(suite).shape(size)  # the cache folder: kept_cache's
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # the answer is kept per thread count: suite runs train on one
    try:
        key = step_precision.calibration_key(config, batch, seq_len, "fast")
    finally:
        torch.set_num_threads(before)
    path = calibration.folder() / f"{calibration.question('step_precision', key)}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"op": "step_precision", "key": key, "fastest": fastest,
                                "median_s": {"fp32": fp32_s, "bf16": bf16_s}}))


@pytest.fixture
def kept_cache(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("BLOCKLAB_CACHE_DIR", str(cache))
    monkeypatch.setenv("BLOCKLAB_CALIBRATION", "measure")
    return cache


def test_auto_trains_in_the_faster_precision_and_says_why(blocklab, kept_cache, tmp_path):
    _keep_answer(kept_cache, "ffn", "tiny", "bf16")
    results = tmp_path / "runs"
    proc = blocklab("suite", "ffn", "--tiny", "--precision", "auto", "--no-progress",
                    "--results", str(results))
    assert proc.returncode == 0, proc.stderr
    assert ("--precision auto: bf16, the faster training step on this CPU at d 32 × 1 layers, "
            "4 × 32 tokens, 1 thread (bf16 12.0 ms, fp32 20.0 ms a step)") in proc.stderr
    assert list((results / "ffn" / "tiny+bf16").glob("*.json"))
    assert not (results / "ffn" / "tiny").exists()


def test_auto_keeps_float32_where_it_is_faster(blocklab, kept_cache, tmp_path):
    _keep_answer(kept_cache, "width", "tiny", "fp32", fp32_s=0.010, bf16_s=0.015)
    results = tmp_path / "runs"
    proc = blocklab("suite", "width", "--tiny", "--precision", "auto", "--no-progress",
                    "--results", str(results))
    assert proc.returncode == 0, proc.stderr
    assert "--precision auto: fp32, the faster training step" in proc.stderr
    assert list((results / "width" / "tiny").glob("*.json"))
    assert not (results / "width" / "tiny+bf16").exists()


def test_auto_with_budget_is_refused_in_one_line_when_it_chooses_bf16(blocklab, kept_cache,
                                                                       one_line_exit_2, tmp_path):
    _keep_answer(kept_cache, "ffn", "tiny", "bf16")
    proc = blocklab("suite", "ffn", "--tiny", "--precision", "auto", "--budget", "5",
                    "--results", str(tmp_path / "runs"))
    assert "--precision auto chose bf16 here; use --precision fp32 with --budget" in \
        one_line_exit_2(proc)


def test_auto_on_a_float32_suite_says_so(blocklab, tmp_path):
    proc = blocklab("suite", "quantize", "--tiny", "--precision", "auto", "--no-progress",
                    "--results", str(tmp_path / "runs"))
    assert proc.returncode == 0, proc.stderr
    assert "--precision auto: fp32 (suite quantize measures float32 only)" in proc.stderr


@pytest.mark.parametrize("name", sorted(SUITE_MODULES))
def test_every_suite_that_trains_in_bf16_names_the_shape_auto_times(name):
    from blocklab.config import ModelConfig
    from blocklab.experiments.options import SIZES

    suite = get_suite(name)
    assert (suite.shape is not None) == ("bf16" in suite.precisions)
    if suite.shape is None:
        return
    for size in SIZES:
        config, batch, seq_len = suite.shape(size)
        assert isinstance(config, ModelConfig)
        assert batch >= 1 and 1 <= seq_len <= config.max_seq_len
