"""Time estimates before a suite size runs: FLOPs by the budget's count, the rate from stored
runs, stored runs free, and the CLI's `report --plan`."""

import json

import pytest

from blocklab.budget.flops import prefill_flops
from blocklab.cli import main
from blocklab.config import ModelConfig
from blocklab.experiments import estimate
from blocklab.experiments.suites import get_suite, run_suite

MODEL = ModelConfig(vocab_size=256, d_model=32, n_layers=2, n_heads=2, d_ff=64, max_seq_len=16)


def test_training_flops_are_three_forward_passes_a_step():
    forward = prefill_flops(MODEL, 4, 16).total
    # Hand count of one forward at B·T = 64 tokens: every matmul is 2 FLOPs a multiply-add.
    tokens, d, ff, layers = 64, 32, 64, 2
    proj = 2 * tokens * 4 * d * d * layers
    ffn = 2 * tokens * 3 * d * ff * layers  # SwiGLU: gate, up, down
    head = 2 * tokens * d * 256
    assert forward - proj - ffn - head == prefill_flops(MODEL, 4, 16).attention_scores
    assert estimate.training_flops(MODEL.to_dict(), 4, 16, 10) == 3 * forward * 10


def test_the_rate_is_flops_over_wall_time_of_the_stored_training_runs():
    run = {"model_config": MODEL.to_dict(), "train_config": {"batch_size": 4, "seq_len": 16},
           "wall_time_s": 2.0, "steps_done": 5}
    probe = {"wall_time_s": 100.0, "run": {"arm": "probe"}}  # trains nothing: not in the rate
    rate, used = estimate.flop_rate([("ffn", run), ("ffn", dict(run, wall_time_s=8.0)),
                                     ("placement", probe)])
    flops = 3 * prefill_flops(MODEL, 4, 16).total * 5
    assert used == 2 and rate == pytest.approx(2 * flops / 10.0)
    assert estimate.flop_rate([("placement", probe)]) == (None, 0)
    assert estimate.flop_rate([("ffn", run), ("placement", probe)], "placement") == (None, 0)
    assert estimate.flop_rate([("ffn", run)], "ffn")[1] == 1


def test_stored_runs_cost_nothing_and_the_rest_are_priced(tmp_path):
    run_suite(get_suite("placement"), "tiny", 1, tmp_path, progress=False)
    done = estimate.estimate_suites(tmp_path, "tiny", ["placement"])
    (suite,) = done.suites
    assert suite.stored == suite.runs > 0 and done.core_s == 0.0 and suite.unknown == 0
    # The tiny grids, main and deep: pre, post × 2 warmups each.
    assert done.flops_per_s > 0 and done.calibrated_on == 8
    # Seeds 1000… are not stored: every run is priced, the probes at their stored wall times.
    other = estimate.estimate_suites(tmp_path, "tiny", ["placement"], seed_offset=1000)
    (suite,) = other.suites
    assert suite.stored == 0 and suite.unknown == 0 and other.core_s > 0
    assert other.wall_s(2) == pytest.approx(other.core_s / 2)  # nothing timed here


def test_report_plan_runs_nothing_and_says_what_it_cannot_price(tmp_path, capsys):
    assert main(["report", "--tiny", "--plan", "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "runs still to do" in out and "No stored training run" in out
    assert not any(tmp_path.iterdir())  # nothing ran, nothing was written


def test_hours():
    assert estimate.hours(40) == "40 s" and estimate.hours(600) == "10 min"
    assert estimate.hours(9000) == "2.5 h"
    assert json.dumps(estimate.hours(float("inf"))) == '"\\u2014"'
