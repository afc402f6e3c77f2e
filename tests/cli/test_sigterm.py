"""SIGTERM stops a command as Ctrl-C does (the finished runs are kept and named; resuming is
tests/experiments/suites/test_kill_resume.py's) with exit code 143, and leaves no handler
behind when `main` is called as a library function."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from blocklab.cli import main

SUITE = [sys.executable, "-m", "blocklab", "suite", "ffn", "--tiny", "--no-progress",
         "--jobs", "2"]


def _stored(folder: Path) -> list[str]:
    return [p.name for p in folder.glob("*.json")
            if p.name not in ("summary.json", "planned_rules.json", "seed_blocks.json")]


def test_sigterm_mid_suite_keeps_the_runs_and_stops_the_workers(tmp_path, processes):
    folder = tmp_path / "ffn" / "tiny+tuning"  # ffn tunes first: SIGTERM lands there
    proc = subprocess.Popen([*SUITE, "--results", str(tmp_path)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    while len(_stored(folder)) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    workers = processes.children(proc.pid)
    proc.send_signal(signal.SIGTERM)  # to the parent alone, as `kill PID` sends it
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

    # The workers were stopped with their parent, not left to finish the queue.
    deadline = time.monotonic() + 10
    while any(processes.alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert workers and not [pid for pid in workers if processes.alive(pid)]


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
