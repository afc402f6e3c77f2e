"""A suite killed mid-run (SIGKILL, no chance to clean up) resumes: nothing finished is lost or
recomputed, and the rerun completes the rest."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from blocklab.experiments.suites import get_suite

CMD = [sys.executable, "-m", "blocklab", "suite", "ffn", "--tiny", "--no-progress"]


def _results(folder: Path) -> dict[str, float]:
    return {p.name: p.stat().st_mtime_ns for p in folder.glob("*.json")
            if p.name != "summary.json"}


def test_killed_suite_resumes_without_recomputing(tmp_path):
    folder = tmp_path / "ffn" / "tiny"
    total = len(get_suite("ffn").plan("tiny", 1))
    proc = subprocess.Popen([*CMD, "--out", str(tmp_path)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while len(_results(folder)) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = _results(folder)
    assert 2 <= len(before) < total, f"kill landed after {len(before)} of {total} runs"
    for name in before:  # every result file that exists is complete JSON (atomic writes)
        assert "status" in json.loads((folder / name).read_text())

    rerun = subprocess.run([*CMD, "--out", str(tmp_path)], capture_output=True, text=True,
                           timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    after = _results(folder)
    assert len(after) == total
    assert {k: after[k] for k in before} == before  # finished runs were not redone
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["runs"] == total
    assert any(f"{len(before)} of {total} runs were already stored" in n
               for n in summary["notes"])
