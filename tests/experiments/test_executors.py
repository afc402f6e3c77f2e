"""Suite executors: run_suite with runs left missing, the CLI's executor flags, and Ray tasks on a
local instance (results equal to the in-process run's; a killed worker and a raising run
reported while the others finish; a rerun completing only the missing runs)."""

import json
import os
import threading
import time

import pytest

from blocklab.cli import main
from blocklab.experiments.executors import ParallelExecutor, RayExecutor
from blocklab.experiments.options import RunOptions
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites import SUITE_MODULES, base, get_suite, run_suite
from blocklab.experiments.trainer import run

from .conftest import ToyData, plain_suite, toy_suite


def _toy_suite(log_dir, crash=None, fail=None, no_status=None):
    """`toy_suite` whose runs leave a file each in `log_dir` when they finish (workers are other
    processes, so a list would not do). On its first attempt, run `crash` kills its worker and
    run `fail` raises; run `no_status` returns a result without a status every time."""

    def before(arm, seed):
        label, tried = f"{arm}/{seed}", log_dir / f"tried-{arm}{seed}"
        first = not tried.exists()
        tried.touch()
        if first and label == crash:
            os._exit(1)  # the worker process dies mid-task
        if first and label == fail:
            raise ValueError("boom")
        (log_dir / f"done-{arm}{seed}-{time.time_ns()}").touch()
        if label == no_status:  # stored, but not readable as a result
            return RunResult(None, extra={"value": 0.0})  # type: ignore[arg-type]

    return toy_suite(before)


def _done(log_dir):
    """Labels of the runs that finished, as arm+seed, one entry per finished execution."""
    return sorted(p.name.split("-")[1] for p in log_dir.glob("done-*"))


# --- any executor -----------------------------------------------------------------------------
def test_runs_an_executor_leaves_missing_are_named_and_a_rerun_completes_them(tmp_path):
    def executor(specs, store, progress):  # finishes only the runs of arm "a"
        for spec in specs:
            if spec.arm == "a":
                store.save(spec.run_id, spec.execute(False))
        return {spec.run_id: "LostNode: gone" for spec in specs if spec.arm == "b"}

    suite = _toy_suite(tmp_path)
    with pytest.raises(base.SuiteIncomplete) as caught:
        run_suite(suite, RunOptions.for_suite(suite, "tiny", 2), tmp_path / "out", progress=False,
                  executor=executor)
    assert caught.value.missing == [("b/0", "LostNode: gone"), ("b/1", "LostNode: gone")]
    assert "2 of 4 runs have no result" in str(caught.value)
    assert not (tmp_path / "out" / "toy" / "tiny" / "summary.json").exists()
    assert _done(tmp_path) == ["a0", "a1"]
    summary = run_suite(suite, RunOptions.for_suite(suite, "tiny", 2), tmp_path / "out",
                        progress=False)
    assert _done(tmp_path) == ["a0", "a1", "b0", "b1"]  # the rerun ran only arm b
    assert summary.data.diff.mean == 1.0


def test_cli_lists_runs_without_a_result_and_exits_1(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("blocklab.experiments.suites.get_suite",
                        lambda name: _toy_suite(tmp_path, no_status="b/1"))
    assert main(["suite", "toy", "--tiny", "--seeds", "2", "--out", str(tmp_path / "out"),
                 "--no-progress"]) == 1
    err = capsys.readouterr().err.splitlines()
    # --out is the deprecated spelling of --results: it still works, and says so
    assert err.pop(0).startswith("warning: `suite --out` is deprecated")
    assert (tmp_path / "out" / "toy").is_dir()
    assert err[0].startswith("error: suite toy (tiny): 1 of 4 runs have no result")
    assert err[1:] == ["  b/1: no result was stored"]


def test_cli_refuses_bf16_for_a_float32_suite_in_one_line(tmp_path, one_line_exit_2):
    line = one_line_exit_2(["suite", "norm-cost", "--tiny", "--precision", "bf16", "--results",
                            str(tmp_path / "out"), "--no-progress"])
    assert line == ("error: suite norm-cost: precision='bf16' is not allowed; expected one of "
                    "['fp32']")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--executor", "threads"], "--executor 'threads' is not allowed"),
    (["--address", "auto"], "--address only apply with --executor ray"),
    (["--executor", "ray", "--cpus-per-run", "-1"], "RayExecutor.num_cpus=-1.0"),
])
@pytest.mark.parametrize("command", [["suite", "ffn"], ["report"]])
def test_bad_executor_flags_are_one_line_exit_2(tmp_path, one_line_exit_2, args, message,
                                                command):
    one_line_exit_2([*command, "--tiny", "--results", str(tmp_path / "runs"), *args], message)
    assert not (tmp_path / "runs").exists()  # refused before anything ran


# --- Ray ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ray_instance():
    """One local Ray instance for the module: starting one takes seconds. "local": a new one,
    never a cluster already running on this machine."""
    ray = pytest.importorskip("ray")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def test_every_suites_runs_can_be_sent_to_ray_workers_and_one_that_cannot_is_named(
        ray_instance, tmp_path):
    cloudpickle = pytest.importorskip("ray.cloudpickle")
    for name in SUITE_MODULES:
        suite = get_suite(name)
        options = RunOptions.for_suite(suite, "tiny", 2)
        specs = [*(suite.tune(options, []) if suite.tune else []), *suite.plan(options, [])]
        for spec in specs:
            assert callable(cloudpickle.loads(cloudpickle.dumps(spec.execute))), spec.label
    # one that cannot be pickled is named before anything starts
    lock = threading.Lock()

    def plan(options, tuned=()):
        return [base.RunSpec("locked", "a", 0, {"seed": 0},
                             lambda progress: RunResult("ok", extra={"held": lock.locked()}))]

    suite = base.Suite("toy", "a toy", plan, lambda options, results: None, ToyData)
    with pytest.raises(ValueError, match="run 'locked' cannot be sent to Ray workers: "
                                         "TypeError: cannot pickle '_thread.lock' object"):
        run_suite(suite, RunOptions.for_suite(suite, "tiny", 1), tmp_path, progress=False,
                  executor=RayExecutor())


def test_ray_results_equal_the_in_process_results(ray_instance, tmp_path, capsys, monkeypatch,
                                                  tiny_model, tiny_train):
    """Seeded single-threaded training runs through the CLI's `--executor ray` and in process:
    equal bit for bit."""

    def plan(options, tuned=()):
        return [base.RunSpec(f"seed {s}", "a", s, {"seed": s}, lambda progress, s=s: run(
            tiny_model, tiny_train.replace(seed=s, steps=3))) for s in options.seeds]

    suite = plain_suite("toy", plan)
    monkeypatch.setattr("blocklab.experiments.suites.get_suite", lambda name: suite)
    assert main(["suite", "toy", "--tiny", "--seeds", "2", "--executor", "ray", "--json",
                 "--results", str(tmp_path / "ray")]) == 0
    assert json.loads(capsys.readouterr().out)["runs"] == 2
    run_suite(suite, RunOptions("tiny", range(2)), tmp_path / "local", progress=False)
    on_ray, local = (sorted((tmp_path / where / "toy" / "tiny").glob("*.json"))
                     for where in ("ray", "local"))
    assert [p.name for p in on_ray] == [p.name for p in local]
    trained = [(json.loads(a.read_text()), json.loads(b.read_text()))
               for a, b in zip(on_ray, local, strict=True) if "curves" in a.read_text()]
    assert len(trained) == 2
    for a, b in trained:
        assert a["curves"]["train_loss"] == b["curves"]["train_loss"]
        assert a["final"]["val_loss"] == b["final"]["val_loss"]


def test_killed_worker_and_raising_run_are_reported_and_a_rerun_completes_them(
        ray_instance, tmp_path):
    suite = _toy_suite(tmp_path, crash="a/1", fail="b/0")
    executor = RayExecutor(max_retries=0)
    with pytest.raises(base.SuiteIncomplete) as caught:
        run_suite(suite, RunOptions.for_suite(suite, "tiny", 2), tmp_path / "out", progress=False,
                  executor=executor)
    errors = dict(caught.value.missing)
    assert sorted(errors) == ["a/1", "b/0"]
    assert errors["a/1"].startswith("WorkerCrashedError: ")
    assert errors["b/0"] == "ValueError: boom"
    assert _done(tmp_path) == ["a0", "b1"]  # the other runs finished and are stored
    store = tmp_path / "out" / "toy" / "tiny"
    assert len(list(store.glob("*.json"))) == 2 and not (store / "summary.json").exists()

    summary = run_suite(suite, RunOptions.for_suite(suite, "tiny", 2), tmp_path / "out",
                        progress=False, executor=executor)
    assert _done(tmp_path) == ["a0", "a1", "b0", "b1"]  # only the two missing runs ran again
    assert summary.data.diff.mean == 1.0 and (store / "summary.json").exists()


def test_jobs_must_be_a_positive_count():
    for bad in (0, -1, True, 2.0, 10**6):
        with pytest.raises(ValueError, match="--jobs"):
            ParallelExecutor(bad)
