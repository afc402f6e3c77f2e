"""Time estimates before a suite size runs: every run priced from a calibration of this machine,
stored runs free, their twins at their wall time, the report's schedule, and `report --plan`."""

import dataclasses
import json
import math

import pytest

from blocklab.budget.flops import prefill_flops
from blocklab.cli import main
from blocklab.config import ModelConfig
from blocklab.experiments import estimate
from blocklab.experiments.data import FINAL_EVAL_TOKENS, final_window_count
from blocklab.experiments.options import RunOptions, RunRequest
from blocklab.experiments.suites import get_suite
from blocklab.experiments.trainer import TrainConfig
from blocklab.report.build import SUITES

MODEL = ModelConfig(vocab_size=256, d_model=32, n_layers=2, n_heads=2, d_ff=64, max_seq_len=16)


def test_training_flops_are_three_forward_passes_a_step():
    # (the forward's count by hand: tests/budget/test_flops.py::test_tiny_prefill_by_hand)
    forward = prefill_flops(MODEL, 4, 16).total
    assert estimate.training_flops(MODEL, 4, 16, 10) == 3 * forward * 10


def _fake_calibration(specs, step_s=0.02):
    """A calibration that prices every shape `specs` ask for at fixed times (no timing)."""
    shapes = estimate.shapes_of(specs)
    timing = estimate.Timing(build_s=step_s / 2, step_s=step_s, forward_s=step_s / 3,
                             call_s=step_s / 20)
    return estimate.Calibration(seconds=0.0, timings=dict.fromkeys(shapes, timing),
                                measured=len(shapes), fitted=0, speed=1.0,
                                startup_s=3.0, worker_start_s=5.0)


def _all_specs(size):
    out = []
    for name in SUITES:
        suite = get_suite(name)
        options = RunOptions.for_suite(suite, size)
        tuning = suite.tune(options, []) if suite.tune else []
        out += [(suite, spec) for spec in tuning + suite.plan(options, [])]
    return out


@pytest.mark.parametrize("size", ["tiny", "quick", "full"])
def test_every_planned_run_gets_a_finite_positive_price(size):
    specs = _all_specs(size)
    calibration = _fake_calibration(specs)
    prices = estimate.price_specs(specs, calibration)
    unpriced = [spec.label for (_, spec), p in zip(specs, prices, strict=True)
                if p is None or not math.isfinite(p) or p <= 0]
    assert not unpriced
    # Every run kind of every suite is priced by its suite or as a training run.
    kinds = {(suite.name, spec.payload["kind"]) for suite, spec in specs}
    assert ("placement", "init_gradients") in kinds and ("norm-cost", "step") in kinds
    if size == "full":  # the runs no rule grades run at full only
        assert ("norm-cost", "kernels") in kinds and ("ffn", "timing") in kinds


def test_the_schedule_has_rounds_timed_runs_alone_and_a_tail(tmp_path):
    specs = _all_specs("quick")
    plan = estimate.estimate_suites(RunRequest(tmp_path, "quick"), SUITES,
                                    calibration=_fake_calibration(specs))
    # Twice the step time, nothing else changed: training-bound prices double.
    slower = estimate.estimate_suites(RunRequest(tmp_path, "quick"), ["ffn"],
                                      calibration=_fake_calibration(specs, step_s=0.04))
    assert slower.suites[0].untimed_s == pytest.approx(2 * plan.suites[0].untimed_s)
    assert not any(tmp_path.iterdir())
    # everything with the tuned suites' tuning runs, then their evaluation
    first, second = plan.rounds
    tuned = {name for name in SUITES if get_suite(name).tune}
    assert tuned == {"ffn", "placement", "position", "width"}  # position tunes at full only
    # (the runs that read nothing the tuning chooses run in the first round, beside it)
    assert len(second.untimed) == sum(1 for suite, s in specs if suite.name in tuned
                                      and s.payload["kind"] != "tune" and not s.timed
                                      and s.reads_tuning)
    assert any(not s.reads_tuning for suite, s in specs if suite.name == "placement")
    # ffn's timing run, which no rule grades, runs at full only
    assert len(second.timed) == sum(1 for suite, s in specs if suite.name in tuned and s.timed
                                    and s.reads_tuning)
    assert all(s.unknown == 0 for s in plan.suites)
    fixed = sum(plan.fixed_s.values())
    assert plan.wall_s(1) == pytest.approx(plan.core_s + fixed)
    assert plan.wall_s(2) >= (sum(first.untimed) + sum(second.untimed)) / 2 \
        + sum(first.timed) + sum(second.timed)
    assert estimate.makespan([3.0, 1.0, 1.0, 1.0], 2) == 3.0
    assert estimate.makespan([1.0, 1.0, 1.0], 2, start=5.0) == 7.0  # the last run's tail
    assert estimate.makespan([], 4) == 0.0
    assert estimate.hours(40) == "40 s" and estimate.hours(600) == "10 min"
    assert estimate.hours(9000) == "2.5 h"
    assert json.dumps(estimate.hours(float("inf"))) == '"\\u2014"'


def test_the_final_evaluation_is_priced_by_the_tokens_it_scores():
    timing = estimate.Timing(build_s=0.01, step_s=0.02, forward_s=0.006, call_s=0.001)
    key = estimate._key(MODEL, 4, 16, "fp32")
    cal = estimate.Calibration(seconds=0.0, timings={key: timing}, measured=1, fitted=0,
                               speed=1.0, startup_s=0.0, worker_start_s=0.0,
                               val_tokens=644_017)
    train = TrainConfig(steps=10, batch_size=4, seq_len=16, eval_batches=2).to_dict()

    def shape(**changes):
        return estimate.TrainShape.from_payload(dict(train, **changes))

    base = estimate.training_s(MODEL, shape(), cal)  # no key: priced as before the field existed
    prices = [estimate.training_s(MODEL, shape(final_eval_fraction=f), cal)
              for f in (0.0, 0.01, 0.125, 0.5, 1.0)]
    assert prices[0] == base and all(a < b for a, b in zip(prices, prices[1:], strict=False))
    # each chunk of FINAL_EVAL_TOKENS tokens is one no-grad forward: the call's overhead once,
    # the rest scaled by its FLOPs from the calibrated [batch, seq] forward
    windows = final_window_count(644_017, 16, 0.125, minimum=8)
    assert windows == math.ceil(0.125 * 644_017 / 16)
    rows = FINAL_EVAL_TOKENS // 16
    assert prices[2] - base == pytest.approx(estimate.evaluation_s(MODEL, shape(), windows, 16, cal,
                                                                   FINAL_EVAL_TOKENS))
    chunks = math.ceil(windows / rows)
    assert prices[2] - base < chunks * timing.call_s + (windows / 4) * timing.forward_s
    assert prices[2] - base > chunks * timing.call_s
    # a smaller validation split costs less
    smaller = dataclasses.replace(cal, val_tokens=64_000)
    assert estimate.training_s(MODEL, shape(final_eval_fraction=0.125), smaller) < prices[2]


def test_stored_runs_cost_nothing_and_their_twins_cost_their_wall_time(tiny_runs):
    done = estimate.estimate_suites(RunRequest(tiny_runs, "tiny"), ["ffn"])
    (suite,) = done.suites
    assert suite.stored == suite.runs > 0 and done.core_s == 0.0 and suite.unknown == 0
    assert done.calibration is None and done.wall_s(2) == 0.0  # nothing to run or calibrate
    # Seeds 1000… are not stored, nor is their tuning (a replication re-tunes on seeds of its
    # own): each run is priced, most at a stored twin's (seed 0's) wall time, none unknown.
    other = estimate.estimate_suites(RunRequest(tiny_runs, "tiny", seed_offset=1000),
                                     ["ffn"], calibration=_fake_calibration(_all_specs("tiny")))
    (suite,) = other.suites
    tuning = [p for p in (tiny_runs / "ffn" / "tiny+tuning").glob("*.json")]
    assert suite.stored == 0 and suite.unknown == 0 and len(tuning) > 0
    assert suite.from_stored >= suite.runs - len(tuning)
    walls = sum(json.loads(p.read_text())["wall_time_s"]
                for p in (tiny_runs / "ffn" / "tiny").glob("*.json")
                if p.name not in ("summary.json", "planned_rules.json"))
    assert other.core_s >= walls


@pytest.mark.exclusive  # it times the machine: no other test beside it
def test_calibration_times_every_shape_asked_for_within_its_budget():
    specs = [(s, spec) for s, spec in _all_specs("tiny") if s.name == "placement"]
    shapes = estimate.shapes_of(specs)
    calibration = estimate.calibrate(shapes, budget_s=0.3)
    assert set(shapes) <= set(calibration.timings)
    assert calibration.measured >= 2  # the reference model and at least one asked for
    assert calibration.measured + calibration.fitted == len(
        set(shapes) | {estimate._key(estimate.reference_model(), *estimate.REFERENCE_SHAPE,
                                     "fp32")})
    assert all(t.step_s > 0 and t.forward_s > 0 for t in calibration.timings.values())
    assert calibration.speed > 0 and calibration.startup_s >= 0 and calibration.run_s >= 0
    assert 1.0 <= calibration.contention <= 2.0
    prices = estimate.price_specs(specs, calibration)
    assert all(p is not None and p > 0 for p in prices)


@pytest.mark.exclusive  # it times the machine: no other test beside it
def test_report_plan_calibrates_runs_nothing_and_prints_the_estimate(tmp_path, capsys,
                                                                       monkeypatch):
    calibrate = estimate.calibrate
    monkeypatch.setattr(estimate, "calibrate",
                        lambda shapes, budget_s=15.0: calibrate(shapes, budget_s=0.3))
    assert main(["report", "--tiny", "--plan", "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "runs still to do" in out and "Calibration:" in out and "wall on" in out
    assert "Plan of work" not in out  # tiny's default cap is 0: the first look only
    assert not any(tmp_path.iterdir())  # nothing ran, nothing was written
    # A cap far past tiny's seconds of work: a calibration taken under a burst of load on a
    # slow shared machine (minutes of "process start", hours of wall) still admits every look.
    assert main(["report", "--tiny", "--plan", "--budget", "60000", "--results",
                 str(tmp_path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Plan of work: further looks if every part stayed open:" in out
    assert "a cap of 1000.0 h admits 2 of them, whole looks from the first" in out
    assert not any(tmp_path.iterdir())
