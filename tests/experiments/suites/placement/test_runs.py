"""The placement suite's runs (`placement.runs`): the at-initialisation probe, the training
grid's settings and tuning, the run configs, the largest-stable-lr bisection and the deep grid
(C36)."""

import dataclasses
import json
import math

import pytest

from blocklab.experiments.options import RunOptions
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.base import TUNING_SEEDS
from blocklab.experiments.suites.placement import runs
from blocklab.experiments.suites.placement.summary import loglog_slope
from blocklab.jsonio import decode

from ..conftest import final_metrics as _final

OPTIONS = RunOptions("tiny", range(1))


def _probe(result: RunResult) -> runs.ProbeRecord:
    assert result.status == "ok" and result.final is None  # a probe trains no model
    return decode(runs.ProbeRecord, result.extra)


def test_probe_measures_every_layer_and_post_norm_outputs_unit_rms():
    probe = runs.SIZES["tiny"].probe
    result = runs.init_gradients("post", "xavier", 3, 0, probe, OPTIONS)
    assert result.wall_time_s > 0
    record = _probe(result)
    assert (record.placement, record.init, record.depth, record.seed) == ("post", "xavier", 3, 0)
    assert len(record.down_proj_grad) == len(record.residual_rms) == len(record.layer_grad) == 3
    assert all(g > 0 for g in record.down_proj_grad)
    # Closed form: RMSNorm with unit gain outputs RMS sqrt(m / (m + eps)) ≈ 1 for every row.
    assert record.residual_rms == pytest.approx([1.0] * 3, abs=1e-3)
    # The untrained model's loss is near the uniform guess ln 256.
    assert abs(record.loss - math.log(256)) < 0.5
    # Stored as before: the record's keys beside status and wall_time_s, read back the same.
    stored = json.loads(json.dumps(result.to_dict()))
    assert set(stored) == {"status", "wall_time_s", "placement", "init", "depth", "seed",
                           "loss", "down_proj_grad", "layer_grad", "residual_rms",
                           "sensitivity", "identity_deviation", "jacobian_gain", "jacobian_s"}
    assert _probe(RunResult.from_dict(stored)) == record


def test_xavier_pre_norm_last_layer_gradient_falls_with_depth_and_post_does_not():
    # The measurement the suite makes, at a small width: Xiong et al.'s direction of effect.
    probe = runs.Probe(d_model=32, n_heads=2, depths=(2, 8, 32), seq_len=16, batch_size=4)
    slopes = {}
    for kind in ("pre", "post"):
        grads = [_probe(runs.init_gradients(kind, "xavier", d, 0, probe, OPTIONS))
                 .down_proj_grad[-1] for d in probe.depths]
        slopes[kind] = loglog_slope(list(probe.depths), grads)
    assert slopes["pre"] < -0.25
    assert abs(slopes["post"]) < 0.15


def test_probe_records_sensitivity_everywhere_and_jacobians_at_the_deepest_depth():
    probe = runs.SIZES["tiny"].probe  # depths (2, 4)
    assert "depth" in probe.inits and probe.jacobian_probes >= 2
    shallow = _probe(runs.init_gradients("pre", "depth", 2, 0, probe, OPTIONS))
    deep = _probe(runs.init_gradients("pre", "depth", 4, 0, probe, OPTIONS))
    # depth + 1 streams: each layer's input, then the final norm's
    assert len(shallow.sensitivity) == 3 and len(deep.sensitivity) == 5
    assert all(v > 0 for v in deep.sensitivity)
    assert shallow.identity_deviation is None and shallow.jacobian_gain is None
    assert len(deep.identity_deviation) == len(deep.jacobian_gain) == 4
    # Pre-norm at init, small branches: every block above the first is nearly the identity
    # (layer 0 reads the embedding, RMS 0.02, where the norm's Jacobian is about 50·I).
    assert all(0 < v < 0.5 for v in deep.identity_deviation[1:])
    assert deep.jacobian_gain[1:] == pytest.approx([1.0] * 3, abs=0.2)
    # The parameter gradients are those of the loss alone (probing adds none).
    again = _probe(runs.init_gradients("pre", "depth", 4, 0, probe, OPTIONS))
    assert again.down_proj_grad == deep.down_proj_grad
    assert again.identity_deviation == deep.identity_deviation  # seeded probes


def _middle(size: str) -> float:
    base = runs.SIZES[size].training.lr_grid.base
    return base[len(base) // 2]


def _tuned(size: str) -> list:
    """Tuning results that pick the grid's middle lr for every arm (an interior optimum)."""
    return [(spec, RunResult(status="ok", final=_final(
                2.0 if spec.payload["train"]["lr"] == _middle(size) else 2.5)))
            for spec in runs.tune(RunOptions(size), [])]


@pytest.mark.parametrize(("size", "cells"), [
    ("quick", [("pre", 6), ("post", 6)]),  # the contrast C13 and C19 grade, nothing else
    ("full", [("pre", 6), ("pre", 12), ("pre", 24), ("post", 6), ("post", 12), ("post", 24),
              ("sandwich", 24)])])
def test_training_grid_turns_clipping_off_and_uses_xavier(size, cells):
    specs = [s for s in runs.plan(RunOptions(size, range(2)), _tuned(size))
             if s.payload["kind"] == "train"]
    training = runs.SIZES[size].training
    assert len(specs) == len(training.cells()) * len(training.warmups) * 2
    assert training.cells() == cells
    for spec in specs:
        assert spec.payload["train"]["grad_clip"] is None
        assert spec.payload["train"]["init"] == "xavier"
        assert spec.payload["train"]["lr"] == _middle(size)  # the arm's tuned lr
        # registered before any data: a run must learn to count (`options.LEARN_MARGIN`)
        assert spec.payload["train"]["learn_margin"] == 0.25
    cells = {(s.payload["model"]["placement"], s.payload["train"]["warmup_steps"]) for s in specs}
    warm = max(training.warmups)  # quick: over the first third of the run; full: 100 steps
    assert warm == (round(training.steps / 3) if size == "quick" else 100)
    assert {("pre", 0), ("post", 0), ("pre", warm), ("post", warm)} <= cells


@pytest.mark.parametrize("size", ["quick", "full"])
def test_every_arm_is_tuned_on_its_own_seeds(size):
    training = runs.SIZES[size].training
    grid = training.lr_grid
    assert len(grid.base) >= (3 if size == "quick" else 5)
    assert all(b / a <= (3.4 if size == "quick" else 2.0) + 1e-9  # quick: about ×3
               for a, b in zip(grid.base, grid.base[1:], strict=False))
    specs = runs.tune(RunOptions(size), [])
    assert len(specs) == len(training.arms()) * len(grid.base) * training.tuning_seeds
    assert min(s.seed for s in specs) == TUNING_SEEDS
    assert {s.payload["train"]["steps"] for s in specs} == {training.steps}
    # (growing at an edge, each arm apart, full on two tuning seeds: test_tuning.py)


def test_each_grid_configures_its_runs():
    # (the options reach every TrainConfig: test_options' for_run test)
    size = runs.SIZES["tiny"]
    train = runs.train_config(size.training, OPTIONS, 3, warmup=2, lr=1e-3)
    sweep = runs.train_config(size.sweep, OPTIONS, 3, warmup=2, lr=1e-3)
    probe = runs.train_config(size.probe, OPTIONS, 3, init="depth")
    assert (train.init, train.grad_clip, train.threads, train.lr, train.warmup_steps) == (
        "xavier", None, 1, 1e-3, 2)
    assert (train.eval_every, train.log_every) == (size.training.eval_every,
                                                  size.training.log_every)
    assert (sweep.steps, sweep.eval_every, sweep.log_every, sweep.stuck_patience) == (
        size.sweep.steps, 0, 0, None)
    assert probe.init == "depth"
    with pytest.raises(ValueError, match="peak lr"):
        runs.train_config(size.training, OPTIONS, 3)


def test_bisection_finds_the_largest_stable_rung_in_log2_steps():
    ladder = [2.0 ** k for k in range(7)]
    for top in range(-1, 7):  # stable up to rung `top`
        tried = []

        def trains(lr, top=top, tried=tried):
            tried.append(lr)
            return math.log2(lr) <= top, {"lr": lr}

        rung, records = runs.bisect_stable(ladder, trains)
        assert rung == top and len(records) == len(tried) == 3  # 8 outcomes, 3 runs
        assert [r["lr"] for r in records] == tried


def test_lr_area_by_hand():
    training = dataclasses.replace(runs.SIZES["tiny"].training, steps=4)
    # cosine from 1 to 0.1 over 4 steps: 1, 0.1 + 0.9·(1 + cos(π/4))/2, 0.55, 0.1 + 0.9·(1 −
    # cos(π/4))/2 (sum 2.2 + 0.9 = 3.1... by hand: 1 + 0.86820 + 0.55 + 0.23180 = 2.65)
    assert runs.lr_area(training, 0, 1.0) == pytest.approx(2.65, abs=1e-5)
    # warmup 2: 0.5, 1, then cosine over the last 2 steps: 1, 0.55 -> 3.05
    assert runs.lr_area(training, 2, 1.0) == pytest.approx(0.5 + 1.0 + 1.0 + 0.55)
