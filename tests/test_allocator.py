"""`blocklab.allocator`: glibc malloc tuning, applied once, with an opt-out."""

import os
import platform
import subprocess
import sys

import pytest

from blocklab import allocator

CODE = ("from blocklab.allocator import current, tune_cpu_allocator as t; assert current() is None;"
        " a = t(); print(a); print(t() is a and current() is a)")


def _run(env_value: str | None) -> list[str]:
    env = dict(os.environ)
    env.pop("BLOCKLAB_TUNE_MALLOC", None)
    if env_value is not None:
        env["BLOCKLAB_TUNE_MALLOC"] = env_value
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True,
                         check=True).stdout
    return out.splitlines()


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_tunes_glibc_once_and_says_what():
    described, same = _run(None)
    assert described == ("glibc malloc: blocks up to 32 MiB from the heap, freed memory kept "
                         "up to 4 GiB")
    assert same == "True"


def test_opt_out_leaves_allocator_alone():
    assert _run("0") == ["None", "True"]


def test_thresholds_are_within_glibc_limits():
    # glibc rejects an mmap threshold above HEAP_MAX_SIZE / 2 (32 MiB on 64-bit).
    assert allocator.MMAP_THRESHOLD <= 32 * 2**20
    assert allocator.M_MMAP_THRESHOLD == -3 and allocator.M_TRIM_THRESHOLD == -1
