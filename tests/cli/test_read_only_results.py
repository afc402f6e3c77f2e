"""Reading needs no write: `blocklab claims` and `blocklab report` read a results folder that
cannot be written (every folder in it r-x, binding even root: `bound_by_modes`) when it holds
every run and summary they read; the report's own --out folder must still be writable, and a
report that would run or add runs there is refused before any work."""

from __future__ import annotations

import os
import shutil

import pytest


@pytest.fixture
def stored(tmp_path, tiny_runs, read_only):
    """A copy of every suite run at --size tiny, every folder in it read-only."""
    folder = tmp_path / "runs"
    shutil.copytree(tiny_runs, folder)
    for below in sorted((p for p in folder.rglob("*") if p.is_dir()), reverse=True):
        read_only(below)  # the deepest first: a folder is made read-only after its children
    read_only(folder)
    return folder


def _listing(folder):
    return sorted((str(p.relative_to(folder)), p.stat().st_mtime_ns) for p in folder.rglob("*"))


def test_report_and_claims_read_a_read_only_folder_that_holds_every_run(tmp_path, stored, blocklab):
    before = _listing(stored)
    proc = blocklab("report", "--tiny", "--results", str(stored), "--out",
                    str(tmp_path / "report"), "--lang", "en", "--no-progress",
                    bound_by_modes=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == (
        f"note: --results {str(stored)!r}: the folder {str(stored)!r} is not writable "
        "(permission denied); it holds every run the report reads, so they are read as with "
        "--no-run (no seeds added)\n")
    assert (tmp_path / "report" / "index.html").is_file()
    assert "missing suite results" not in proc.stdout
    proc = blocklab("claims", "--tiny", "--results", str(stored), bound_by_modes=True,
                    env={**os.environ, "LANG": "C.UTF-8"})
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert _listing(stored) == before


@pytest.mark.parametrize("asked", [["--tiny", "--budget", "1"], ["--quick"]],
                         ids=["a budget", "runs still to do"])
def test_report_that_would_run_or_add_runs_there_is_refused(tmp_path, stored, blocklab,
                                                            one_line_exit_2, asked):
    proc = blocklab("report", *asked, "--results", str(stored), "--out", str(tmp_path / "report"),
                    bound_by_modes=True)
    assert one_line_exit_2(proc).endswith("is not writable (permission denied), and the report "
                                          "would run or add runs there; --no-run renders what "
                                          "it holds")
    assert not (tmp_path / "report").exists()


def test_report_out_must_still_be_writable(tmp_path, stored, blocklab, one_line_exit_2, read_only):
    out = read_only(tmp_path / "report")
    proc = blocklab("report", "--tiny", "--results", str(stored), "--out", str(out),
                    bound_by_modes=True)
    assert one_line_exit_2(proc).startswith(f"error: --out {str(out)!r}: ")
