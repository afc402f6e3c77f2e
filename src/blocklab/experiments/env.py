"""The environment a result was produced in: versions, platform and threads, no host name.

Bit-for-bit reproducibility holds on one machine with one thread count; this record says which.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence
from pathlib import Path

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


def environment(device: str = "cpu") -> dict:
    """Python, PyTorch and NumPy versions, platform, CPU count, torch threads, device, the CPU
    vector capability PyTorch dispatches to (AVX2, AVX512, AVX512_BF16 or AMX: whether
    bfloat16 matmuls have units of their own), and the fast paths in use (compiled CPU kernels,
    allocator tuning), which change speed, not values beyond float rounding."""
    import numpy
    import torch

    from blocklab import allocator
    from blocklab.nn import cpu_kernels

    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count()
    record = {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "platform": platform.platform(),  # OS, kernel, libc; never the host name
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable,
        "threads": torch.get_num_threads(),
        "device": device,
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cpu_kernels": cpu_kernels.unavailable_reason() or "compiled",
        "allocator": allocator.current() or "default",
    }
    if device.startswith("cuda") and torch.cuda.is_available():
        record["accelerator"] = torch.cuda.get_device_name(torch.device(device))
    return record
