"""Running the CLI as a shell does (`python -m blocklab` in a subprocess: the exit code and
stderr a shell sees), optionally as a process that folder modes bind, and restoring modes a
test took away so that pytest can clean up."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import pytest


def _without_dac_override() -> None:
    """preexec_fn: drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from the bounding set, so the
    program about to run, though root, is refused what a folder's mode bits refuse (at exec,
    root's capabilities become the bounding set). A read-only bind mount or another user is
    not an option here: the interpreter lives under /root, which only root may enter."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH (linux/capability.h)
        if prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


@pytest.fixture
def blocklab():
    """`blocklab(*argv, bound_by_modes=False, **subprocess_kwargs)`: run `python -m blocklab`
    and return the CompletedProcess (text, captured). `bound_by_modes`: as root, without the
    capabilities that let root write into any folder; skipped where they cannot be dropped."""

    def run(*argv: str, bound_by_modes: bool = False, **kwargs) -> subprocess.CompletedProcess:
        preexec = _without_dac_override if bound_by_modes and os.geteuid() == 0 else None
        kwargs.setdefault("timeout", 300)
        if "stdout" not in kwargs and "stderr" not in kwargs:
            kwargs["capture_output"] = True
        try:
            return subprocess.run([sys.executable, "-m", "blocklab", *argv], text=True,
                                  preexec_fn=preexec, **kwargs)
        except subprocess.SubprocessError as err:
            if preexec is None or type(err) is not subprocess.SubprocessError:
                raise
            pytest.skip("running as root without CAP_SETPCAP: CAP_DAC_OVERRIDE cannot be "
                        "dropped, so folder modes do not bind this process")

    return run


@pytest.fixture
def read_only():
    """`read_only(folder)`: make `folder` (created if missing) r-x for everyone; its mode is
    given back after the test, so that pytest can remove it."""
    changed: list[Path] = []

    def make(folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o555)
        changed.append(folder)
        return folder

    yield make
    for folder in changed:
        folder.chmod(0o755)
