"""Where the output goes cannot take it: a closed stdout or a full device is exit code 1 with
one line on stderr, never a silent success or Python's exit-time traceback; a reader that went
away is still 141, as the shell reports SIGPIPE."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

BLOCKLAB = f"{sys.executable} -m blocklab"


def shell(command: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(command, shell=True, executable="/bin/bash", capture_output=True,
                          text=True, timeout=120, cwd=cwd)


@pytest.mark.parametrize("args", ["budget --sweep --plot fig.png", "budget --help"])
def test_closed_stdout_is_exit_1_with_one_line_and_no_work(args, tmp_path):
    proc = shell(f"{BLOCKLAB} {args} >&-", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == "error: cannot write the output: stdout is closed\n"
    assert not (tmp_path / "fig.png").exists()  # checked first: nothing computed or written


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize("args", ["budget meta-llama-3-8b", "budget --list --json",
                                  "verify --group worked"])
def test_a_full_device_is_exit_1_with_one_line(args):
    proc = shell(f"{BLOCKLAB} {args} > /dev/full")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == "error: cannot write the output: No space left on device\n"


def test_a_reader_gone_before_the_first_write_is_141():
    read, write = os.pipe()
    os.close(read)  # no reader at all: the first write fails with EPIPE
    try:
        proc = subprocess.run([sys.executable, "-m", "blocklab", "budget", "meta-llama-3-8b"],
                              stdout=write, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert proc.returncode == 141 and proc.stderr == ""
