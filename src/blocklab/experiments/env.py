"""The environment a result was produced in: versions, platform and threads, no host name.

Bit-for-bit reproducibility holds on one machine with one thread count; this record says which.
"""

from __future__ import annotations

import contextlib
import os
import platform
from collections.abc import Iterator, Sequence
from pathlib import Path

from blocklab.errors import InputError

# The x86 features bfloat16 matmul speed depends on: AVX-512 BF16 dot products or AMX tiles.
BF16_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")


def _cpuinfo() -> list[str]:
    try:
        return Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
    except OSError:  # not Linux
        return []


def cpu_flags(names: Sequence[str]) -> dict[str, bool]:
    """Which of the CPU feature flags `names` /proc/cpuinfo lists (all False where it cannot be
    read, off Linux)."""
    flags: set[str] = set()
    for line in _cpuinfo():
        if line.startswith("flags"):
            flags |= set(line.split(":", 1)[1].split())
    return {name: name in flags for name in names}


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else what `platform` knows."""
    for line in _cpuinfo():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def bf16_emulated() -> bool:
    """True on an x86 CPU without avx512_bf16 or amx_bf16, where bfloat16 matmuls run about 30×
    slower than float32 (README, Precision); False where not known."""
    if platform.machine().lower() not in ("x86_64", "amd64", "i386", "i686"):
        return False
    if not any(line.startswith("flags") for line in _cpuinfo()):
        return False
    return not any(cpu_flags(("avx512_bf16", "amx_bf16")).values())


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask, else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def check_threads(value: object, option: str = "--threads") -> int:
    """`value` if it is a thread or worker count in [1, usable cores], else an InputError naming
    `option`: more than cores only time-slice them, and far more crash libgomp silently."""
    cores = usable_cores()
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= cores:
        raise InputError(f"{option} {value!r} is not allowed; expected an integer in "
                         f"[1, {cores}] (the CPU cores this process may use)")
    return value


def environment(device: str = "cpu") -> dict:
    """Versions, platform, CPUs, torch threads, device and the CPU vector capability PyTorch
    dispatches to."""
    import numpy
    import torch

    record = {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "platform": platform.platform(),  # OS, kernel, libc; never the host name
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable_cores(),
        "threads": torch.get_num_threads(),
        "device": device,
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }
    if device.startswith("cuda") and torch.cuda.is_available():
        record["accelerator"] = torch.cuda.get_device_name(torch.device(device))
    return record


@contextlib.contextmanager
def deterministic_algorithms() -> Iterator[None]:
    import torch

    before = (torch.are_deterministic_algorithms_enabled(),
              torch.is_deterministic_algorithms_warn_only_enabled())
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
