"""Fixtures shared by the report's tests."""

import fcntl
import json
from pathlib import Path

import pytest

from blocklab.experiments.options import RunRequest
from blocklab.report.build import build_report

from ..conftest import _flock, _shared_folder


@pytest.fixture(scope="session")
def tiny_report(tmp_path_factory, tiny_runs) -> tuple[Path, dict]:
    """The English report of `tiny_runs`, figures rasterized, built once per test session (the
    first worker builds it, the others wait): (its index.html, the document its report.json
    holds). Read it, never write to it: copy it first."""
    shared = _shared_folder(tmp_path_factory)
    out, done = shared / "tiny-report", shared / "tiny-report.done"
    with _flock(shared / "tiny-report.lock", fcntl.LOCK_EX):
        if not done.exists():
            build_report(RunRequest(tiny_runs, "tiny"), out, "en")
            done.touch()
    return out / "index.html", json.loads((out / "report.json").read_text(encoding="utf-8"))
