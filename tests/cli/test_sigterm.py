"""A suite stopped mid-run: SIGTERM stops it as Ctrl-C does (the finished runs are kept and
named) with exit code 143; SIGKILL gives it no chance to clean up, and the same command resumes
without recomputing. Either way the workers exit with their parent, and `main` called as a
library function leaves no handler behind."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from blocklab.cli import main
from blocklab.experiments.options import RunOptions
from blocklab.experiments.suites import get_suite
from blocklab.experiments.suites.base import stored_tuning

SUITE = [sys.executable, "-m", "blocklab", "suite", "ffn", "--tiny", "--no-progress",
         "--jobs", "2"]


def _stored(folder: Path) -> dict[str, int]:
    """{run file: its mtime}, the folder's records of the plan left out."""
    return {p.name: p.stat().st_mtime_ns for p in folder.glob("*.json")
            if p.name not in ("summary.json", "planned_rules.json", "seed_blocks.json")}


def _stopped_mid_tuning(tmp_path: Path, processes, signum: int):
    """The tiny ffn suite, sent `signum` (to the parent alone, as `kill` sends it) once two of
    its tuning runs are stored (ffn tunes first): (the process, its workers, that folder)."""
    folder = tmp_path / "ffn" / "tiny+tuning"
    proc = subprocess.Popen([*SUITE, "--results", str(tmp_path)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    while len(_stored(folder)) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    workers = processes.children(proc.pid)
    proc.send_signal(signum)
    return proc, workers, folder


def _workers_exit(processes, workers: list[int]) -> None:
    """The workers notice their parent stopped and exit, not left to finish the queue."""
    deadline = time.monotonic() + 10
    while any(processes.alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert workers and not [pid for pid in workers if processes.alive(pid)]


def test_sigterm_mid_suite_keeps_the_runs_and_stops_the_workers(tmp_path, processes):
    proc, workers, folder = _stopped_mid_tuning(tmp_path, processes, signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    kept = _stored(folder)
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1] == (
        f"interrupted: {len(kept)} run(s) finished before the interruption are kept in "
        f"{folder}; the same command runs only what is missing")
    assert "Traceback" not in err
    for name in kept:  # each stored run is whole JSON (atomic writes), no temporary left
        assert json.loads((folder / name).read_text())["status"] == "ok"
    assert not [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]
    _workers_exit(processes, workers)


def test_killed_suite_resumes_without_recomputing(tmp_path, processes):
    ffn = get_suite("ffn")
    total = len(ffn.tune(RunOptions.for_suite(ffn, "tiny"), []))
    proc, workers, folder = _stopped_mid_tuning(tmp_path, processes, signal.SIGKILL)
    proc.communicate(timeout=60)
    before = _stored(folder)
    assert 2 <= len(before) < total, f"kill landed after {len(before)} of {total} runs"
    for name in before:  # every result file that exists is complete JSON (atomic writes)
        assert "status" in json.loads((folder / name).read_text())
    _workers_exit(processes, workers)

    rerun = subprocess.run([*SUITE, "--results", str(tmp_path)], capture_output=True, text=True,
                           timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    after = _stored(folder)
    # every tuning run due, the points a grid grew at an edge included (tiny: one per arm)
    due, _, _, missing, _ = stored_tuning(ffn, RunOptions.for_suite(ffn, "tiny"), tmp_path)
    assert not missing and len(after) == len(due) > total
    assert {k: after[k] for k in before} == before  # finished runs were not redone
    summary = json.loads((tmp_path / "ffn" / "tiny" / "summary.json").read_text())
    stored = {p.stem for p in (tmp_path / "ffn" / "tiny").glob("*.json")} - {
        "summary", "planned_rules"}  # the rules the runs were planned under, beside them
    assert summary["runs"] == len(stored) and set(summary["run_ids"]) == stored


def _marker(signum, frame):  # a handler of the caller's, to be found again after main
    pass


def test_main_puts_the_callers_sigterm_handler_back_and_runs_outside_the_main_thread(capsys):
    before = signal.signal(signal.SIGTERM, _marker)
    try:
        assert main(["budget", "--list", "--json"]) == 0
        assert signal.getsignal(signal.SIGTERM) is _marker
        assert main(["budget", "nope"]) == 2  # after an error too
        assert signal.getsignal(signal.SIGTERM) is _marker
    finally:
        signal.signal(signal.SIGTERM, before)
    # Python lets only the main thread set handlers: elsewhere main sets none and runs.
    codes = []
    thread = threading.Thread(target=lambda: codes.append(main(["budget", "--list", "--json"])))
    thread.start()
    thread.join(60)
    assert codes == [0]
    capsys.readouterr()
