"""blocklab.experiments.env: the CPU's flags and model name, read from /proc/cpuinfo."""

from pathlib import Path

import pytest

from blocklab.experiments import env

CPUINFO = """processor\t: 0
model name\t: Example CPU 9000
flags\t\t: fpu avx2 avx512f amx_bf16
"""


def test_flags_and_model_come_from_cpuinfo(monkeypatch):
    monkeypatch.setattr(env, "_cpuinfo", lambda: CPUINFO.splitlines())
    assert env.cpu_flags(env.BF16_FLAGS) == {"avx2": True, "avx512f": True,
                                             "avx512_bf16": False, "amx_bf16": True}
    assert env.cpu_model() == "Example CPU 9000"
    # without cpuinfo no flag is claimed
    monkeypatch.setattr(env, "_cpuinfo", lambda: [])
    assert env.cpu_flags(("avx2", "amx_int8")) == {"avx2": False, "amx_int8": False}
    assert env.cpu_model()  # platform's answer, never empty


@pytest.mark.skipif(not Path("/proc/cpuinfo").exists(), reason="Linux only: reads /proc/cpuinfo")
def test_this_machine_agrees_with_cpuinfo():
    text = Path("/proc/cpuinfo").read_text()
    flags = set(next(line for line in text.splitlines() if line.startswith("flags"))
                .split(":", 1)[1].split())
    assert env.cpu_flags(env.BF16_FLAGS) == {f: f in flags for f in env.BF16_FLAGS}
