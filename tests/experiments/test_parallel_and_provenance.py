"""Suite runs in worker processes give the serial results; stored results of other code,
libraries or data are run again, and the summary says so."""

import dataclasses
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from blocklab.experiments import provenance, suites
from blocklab.experiments.data import load_corpus
from blocklab.experiments.env import cpu_flags, cpu_model
from blocklab.experiments.executors import ParallelExecutor
from blocklab.experiments.options import RunOptions, RunRequest
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites import base, get_suite, run_suite
from blocklab.experiments.summaries import Summary

from .conftest import plain_suite
from .suites.conftest import final_metrics

# What a run measures about its own speed; everything else in a result is computed.
TIMING_KEYS = {"wall_time_s", "train_time_s", "compile_s", "ms_per_step", "tokens_per_s",
               "jacobian_s", "final_eval_s"}


def _without_timings(value):
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


@pytest.mark.parametrize("name", ["placement", "position"])
def test_parallel_results_equal_serial_results(tmp_path, tiny_runs, name):
    """The session's tiny runs ran in two worker processes; four of each suite's untimed runs
    (timed runs run here in either case) run here again, serially."""
    suite = get_suite(name)
    options = RunOptions.for_suite(suite, "tiny", None)
    plan = base.plan_suite(suite, options, tiny_runs)  # the tuned settings
    specs = [spec for spec in plan.specs if not spec.timed]
    specs = specs[::math.ceil(len(specs) / 4)]
    base.execute_in_process(dataclasses.replace(plan, missing=specs, early=[]).stamped(),
                            base.ResultStore(tmp_path), False)
    for spec in specs:
        a, b = (json.loads(path.read_text()) for path in (
            tmp_path / f"{spec.run_id}.json", tiny_runs / name / "tiny" / f"{spec.run_id}.json"))
        # the threads a run ran with are the executor's (each worker runs one); the rest of
        # how it used the machine (device, precision, its model's kernels) is the same
        pa, pb = a.pop("provenance"), b.pop("provenance")
        assert _without_timings(a) == _without_timings(b), spec.label
        assert pb["threads"] == 1
        expected = provenance.current().of_run(RunResult.from_dict(a)).to_dict()
        assert {**pa, "threads": 0} == {**pb, "threads": 0} == {**expected, "threads": 0}


# --- provenance ---------------------------------------------------------------------------------
def _count(root: Path, calls: list) -> Summary:
    """Run seeds 0 and 1 of a suite whose runs append their seed to `calls`."""
    suite = plain_suite("counting", lambda options, tuned=(): [
        base.RunSpec(f"run {s}", "run", s, {"seed": s},
                     lambda progress, s=s: calls.append(s) or RunResult(
                         "ok", data={"name": "stdlib", "sha256": load_corpus("stdlib").sha256}))
        for s in options.seeds])
    return run_suite(suite, RunOptions("tiny", range(2)), root, progress=False)


@pytest.mark.parametrize("key", ["torch", "source_sha256", "blocklab"])
def test_a_result_with_other_provenance_is_run_again(tmp_path, monkeypatch, key):
    calls: list = []
    _count(tmp_path, calls)
    real = provenance.current()
    changed = provenance.Provenance(**{**real.to_dict(), key: "something else"})
    monkeypatch.setattr(provenance, "current", lambda: changed)
    summary = _count(tmp_path, calls)
    assert calls == [0, 1, 0, 1]
    assert any(note == "2 stored run(s) were run again because their provenance differs from "
               f"this code and machine: {key} (2)" for note in summary.notes), summary.notes
    calls.clear()
    summary = _count(tmp_path, calls)
    assert calls == []  # the re-run results carry the new provenance
    assert not any("provenance" in note for note in summary.notes)


def test_results_record_provenance_and_without_it_or_with_another_corpus_run_again(tmp_path):
    calls: list = []
    _count(tmp_path, calls)
    files = sorted(p for p in (tmp_path / "counting" / "tiny").glob("*.json")
                   if p.name != "summary.json")
    first, second = (json.loads(p.read_text()) for p in files)
    now = provenance.current().to_dict()
    assert first["provenance"] == second["provenance"] == now
    assert set(now) == {*provenance.RESULT_KEYS, "machine", "threads", "device", "accelerator",
                        "precision", "backend", "backends"}
    assert len(now["source_sha256"]) == 64 and now["torch"].startswith("2.")
    del first["provenance"]
    second["data"]["sha256"] = "0" * 64  # what an older Python's standard library hashed to
    files[0].write_text(json.dumps(first))
    files[1].write_text(json.dumps(second))
    summary = _count(tmp_path, calls)
    assert sorted(calls) == [0, 0, 1, 1]
    note = next(n for n in summary.notes if "provenance" in n)
    assert "corpus stdlib (1)" in note and "provenance missing (1)" in note


def _timing_and_training_suite(calls: list):
    def plan(options, tuned=()):
        return [base.RunSpec("kernel timing", "time", 0, {"timing": 0},
                             lambda progress: calls.append("timing") or RunResult(
                                 "ok", extra={"ms": 1.0}), timed=True),
                base.RunSpec("training", "train", 0, {"training": 0},
                             lambda progress: calls.append("training") or RunResult(
                                 "ok", extra={"loss": 2.0}))]

    return plain_suite("mixed", plan)


def test_the_machine_is_the_same_under_a_narrower_affinity():
    """taskset or a worker pinned to one core leaves the machine what it is: its timings are
    not run again on every command that runs with another affinity."""
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("no sched_setaffinity on this platform")
    code = ("import os; from blocklab.experiments.provenance import Machine; "
            "os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); print(Machine.here())")
    pinned = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout.strip()
    assert pinned == repr(provenance.Machine.here())


def _elsewhere(**changed):
    def edit(stored: dict) -> None:
        stored["machine"] = {**stored.get("machine", {}), **changed}
    return edit


@pytest.mark.parametrize("edit, reason", [
    (_elsewhere(cores=64), "timed on another machine"),
    (_elsewhere(cpu="AMD EPYC 7763 64-Core Processor", cores=64,
                flags={name: True for name in provenance.MACHINE_FLAGS}),
     "timed on another machine"),
    (lambda stored: stored.pop("machine", None), "timed on an unrecorded machine"),
])
def test_a_timing_from_another_machine_is_run_again_and_a_training_run_reused(tmp_path, edit,
                                                                             reason):
    """Losses are any machine's; timings are only this machine's."""
    calls: list = []
    options = RunOptions("tiny", range(1))
    run_suite(_timing_and_training_suite(calls), options, tmp_path, progress=False)
    for path in (tmp_path / "mixed" / "tiny").glob("[!sp]*.json"):  # every run, this machine
        data = json.loads(path.read_text())
        assert data["provenance"]["machine"] == {
            "cpu": cpu_model(), "flags": cpu_flags(provenance.MACHINE_FLAGS),
            "cores": os.cpu_count()}
        edit(data["provenance"])
        path.write_text(json.dumps(data))
    calls.clear()
    summary = run_suite(_timing_and_training_suite(calls), options, tmp_path, progress=False)
    assert calls == ["timing"]
    assert summary.notes[0].startswith("1 of 2 runs were already stored")
    assert ("1 stored run(s) were run again because their provenance differs from this code "
            f"and machine: {reason} (1)") in summary.notes, summary.notes
    calls.clear()
    run_suite(_timing_and_training_suite(calls), options, tmp_path, progress=False)
    assert calls == []  # the timing now records this machine


def test_source_hash_covers_what_decides_results_and_nothing_else(tmp_path):
    package = Path(provenance.blocklab.__file__).parent
    copy = tmp_path / "blocklab"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = provenance.source_sha256(copy)
    assert len(before) == 64 and before == provenance.source_sha256.__wrapped__(copy)
    (copy / "report" / "html.py").write_text("# presentation only\n")
    (copy / "cli" / "extra.py").write_text("x = 1\n")
    assert provenance.source_sha256.__wrapped__(copy) == before  # rendering: results stand
    for changed in ("nn/norm.py", "experiments/trainer.py", "config.py"):
        (copy / changed).write_text((package / changed).read_text() + "\n")
        assert provenance.source_sha256.__wrapped__(copy) != before, changed
        shutil.copyfile(package / changed, copy / changed)


# --- failures apart from quality ----------------------------------------------------------------
def test_one_failed_seed_shrinks_n_and_keeps_the_position_summary(tiny_runs):
    """The stored tiny runs (seed 0) stand in for seed 1 too; alibi's seed 1 failed."""
    suite = get_suite("position")
    store = base.ResultStore(tiny_runs / "position" / "tiny")
    results = [(spec, store.load(spec.run_id)) for spec in base.plan_suite(
        suite, RunOptions.for_suite(suite, "tiny", 1), tiny_runs).specs]
    seed_1 = [(dataclasses.replace(spec, seed=1), dataclasses.replace(
        result, extra={**result.extra, "seed": 1})) for spec, result in results
        if "seed" in result.extra and spec.arm != "alibi"]
    summary = suite.summarise(RunOptions.for_suite(suite, "tiny", 2), results + seed_1)
    alibi, rope = summary.data.arms["alibi"], summary.data.arms["rope"]
    m = next(iter(alibi.loss_beyond_L))
    assert alibi.loss_beyond_L[m].n == 1 and rope.loss_beyond_L[m].n == 2
    assert alibi.extrapolated_minus_sliding[m].n == 1


def test_failed_placement_runs_count_as_failures_not_as_losses():
    from blocklab.experiments.suites.placement import summary as placement

    ok = RunResult("ok", final=final_metrics(2.0), steps_done=10)
    stuck = RunResult("stuck", final=final_metrics(5.5), steps_done=4)
    training = placement.SIZES["tiny"].training
    key = (training.placements[-1], training.depths[0], training.warmups[0])
    trained = {(*key, 0): ok, (*key, 1): stuck}
    rows = placement.training_summary(training, range(2), trained,
                                       placement.tuned_lrs(training, []))
    row = next(r for r in rows if (r.placement, r.depth, r.warmup) == key)
    assert row.failures == 1 and row.status == {"ok": 1, "stuck": 1}
    assert row.val_loss.n == 1 and row.val_loss.mean == 2.0  # 5.5 left out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_run_suites_runs_all_suites_in_one_pool_and_timed_runs_last(tmp_path, monkeypatch):
    """The report's run_suites hands every suite's missing runs to one executor call: untimed
    runs in the workers, timed runs here once every worker has exited, and one suite's failed
    run leaves the other suites summarised."""
    log = tmp_path / "order.log"
    log.touch()

    def make(name, fail=False):
        def plan(options, tuned=()):
            seeds = options.seeds
            def execute(progress, label):
                if fail and label.endswith("1"):
                    raise RuntimeError(f"{label} broke")
                pids = {int(line.split("|")[1]) for line in log.read_text().splitlines()}
                alive = sum(map(_alive, pids - {os.getpid()})) if label.endswith("timed") else 0
                with open(log, "a") as f:  # one short line: appends do not interleave
                    f.write(f"{label}|{os.getpid()}|{alive}\n")
                return RunResult("ok")
            specs = [base.RunSpec(f"{name} run {s}", "run", s, {"suite": name, "seed": s},
                                  lambda progress, s=s: execute(progress, f"{name} run {s}"))
                     for s in seeds]
            specs.append(base.RunSpec(f"{name} timed", "timed", 0, {"suite": name, "t": 1},
                                      lambda progress: execute(progress, f"{name} timed"),
                                      timed=True))
            return specs
        return plain_suite(name, plan, default_seeds={"tiny": 3, "quick": 3, "full": 3})

    fake = {"one": make("one"), "two": make("two", fail=True), "three": make("three")}
    monkeypatch.setattr(suites, "get_suite", fake.__getitem__)
    errors = suites.run_suites(RunRequest(tmp_path / "runs", "tiny"), list(fake),
                               executor=ParallelExecutor(2), progress=False,
                               echo=lambda line: None)
    assert errors == {"two": "1 of 4 runs failed, first: two run 1: RuntimeError: two run 1 broke"}
    lines = [line.split("|") for line in log.read_text().splitlines()]
    order = [label for label, _, _ in lines]
    timed = [i for i, label in enumerate(order) if label.endswith("timed")]
    workers = {int(pid) for label, pid, _ in lines if not label.endswith("timed")}
    assert os.getpid() not in workers and 1 <= len(workers) <= 2
    assert {(int(pid), alive) for label, pid, alive in lines if label.endswith("timed")} == {
        (os.getpid(), "0")}
    assert len(order) == 3 * 3 + 3 - 1 and timed == [len(order) - 3, len(order) - 2,
                                                     len(order) - 1]
    for name in ("one", "three"):
        assert (tmp_path / "runs" / name / "tiny" / "summary.json").is_file()
    two = sorted(p.name for p in (tmp_path / "runs" / "two" / "tiny").iterdir())
    assert len(two) == 3 and "summary.json" not in two  # the others stored
