"""A suite killed mid-run (SIGKILL, no chance to clean up) resumes: nothing finished is lost or
recomputed, and the rerun completes the rest."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from blocklab.experiments.options import RunOptions
from blocklab.experiments.suites import get_suite
from blocklab.experiments.suites.base import stored_tuning

CMD = [sys.executable, "-m", "blocklab", "suite", "ffn", "--tiny", "--no-progress", "--jobs", "2"]


def _results(folder: Path) -> dict[str, float]:
    return {p.name: p.stat().st_mtime_ns for p in folder.glob("*.json")
            if p.name not in ("summary.json", "planned_rules.json")}


def test_killed_suite_resumes_without_recomputing(tmp_path, processes):
    # ffn tunes first: the kill lands among its tuning runs.
    folder = tmp_path / "ffn" / "tiny+tuning"
    ffn = get_suite("ffn")
    total = len(ffn.tune(RunOptions.for_suite(ffn, "tiny"), []))
    proc = subprocess.Popen([*CMD, "--out", str(tmp_path)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while len(_results(folder)) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    workers = processes.children(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = _results(folder)
    assert 2 <= len(before) < total, f"kill landed after {len(before)} of {total} runs"
    for name in before:  # every result file that exists is complete JSON (atomic writes)
        assert "status" in json.loads((folder / name).read_text())

    # The killed suite's worker processes notice and exit instead of waiting forever.
    deadline = time.monotonic() + 10
    while any(processes.alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert workers and not [pid for pid in workers if processes.alive(pid)]

    rerun = subprocess.run([*CMD, "--out", str(tmp_path)], capture_output=True, text=True,
                           timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    after = _results(folder)
    # every tuning run due, the points a grid grew at an edge included (tiny: one per arm)

    due, _, _, missing, _ = stored_tuning(ffn, RunOptions.for_suite(ffn, "tiny"), tmp_path)
    assert not missing and len(after) == len(due) > total
    assert {k: after[k] for k in before} == before  # finished runs were not redone
    summary = json.loads((tmp_path / "ffn" / "tiny" / "summary.json").read_text())
    stored = {p.stem for p in (tmp_path / "ffn" / "tiny").glob("*.json")} - {
        "summary", "planned_rules"}  # the rules the runs were planned under, beside them
    assert summary["runs"] == len(stored) and set(summary["run_ids"]) == stored
