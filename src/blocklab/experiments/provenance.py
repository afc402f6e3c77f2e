"""Where a result came from: the code, the libraries and the kernels that produced it.

Every stored suite result carries a `provenance` block. A stored result is reused only when its
provenance equals the current one in everything that can change a result (`RESULT_KEYS`), and,
for a trained run, when its corpus hash equals the corpus's hash here; otherwise the suite runs
it again and says how many it re-ran and why. So a resumed suite never mixes results of older
code, another PyTorch, other kernels or another Python's standard library (the `stdlib` corpus).

It also records the machine (`Machine`: CPU model, instruction sets, online CPUs). Losses are
any machine's, but a timing is only this machine's when it was measured on it: a timed run
stored on another machine, or on one it does not record, is run again (`differences`).

The source hash covers the package files that decide what a run computes (the model, the
training loop and experiments, the config); editing the report or the CLI does not invalidate
stored results. This module imports no PyTorch until `current()` is called.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import blocklab
from blocklab.experiments.env import cpu_flags, cpu_model

# Package parts whose code decides a run's numbers.
RESULT_SOURCES = ("config.py", "allocator.py", "nn", "experiments")
RESULT_KEYS = ("blocklab", "source_sha256", "torch", "numpy", "python", "kernels")
# The instruction sets CPU timings depend on: vector width, bfloat16 and int8 units.
MACHINE_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile")


@dataclass(frozen=True)
class Machine:
    """The CPU a result was computed on: its model name, which of MACHINE_FLAGS it has, and how
    many CPUs the machine has online (not how many this process may use: taskset, a cgroup or
    a worker's affinity change that, not the machine, and timings run at a set thread count)."""

    cpu: str
    flags: dict[str, bool]
    cores: int

    @classmethod
    def here(cls) -> Machine:
        return cls(cpu_model(), cpu_flags(MACHINE_FLAGS), os.cpu_count() or 1)

    @classmethod
    def from_dict(cls, data: Any) -> Machine | None:
        """A stored record as a Machine; None where there is none (a result stored before runs
        recorded their machine) or it is not one."""
        try:
            return cls(**data)
        except TypeError:
            return None


@dataclass(frozen=True)
class Provenance:
    """blocklab: package version; source_sha256: hash of RESULT_SOURCES; torch, numpy, python:
    versions; kernels: the CPU kernel backend ("compiled" or why not: the fallback); machine:
    where it ran (compared for timed runs alone)."""

    blocklab: str
    source_sha256: str
    torch: str
    numpy: str
    python: str
    kernels: str
    machine: Machine

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@functools.lru_cache(maxsize=4)
def source_sha256(root: Path | None = None) -> str:
    """sha256 over (relative path, bytes) of every .py and .c file in RESULT_SOURCES under the
    package folder `root` (default: this installed package)."""
    root = Path(blocklab.__file__).parent if root is None else root
    digest = hashlib.sha256()
    for part in RESULT_SOURCES:
        target = root / part
        files = [target] if target.is_file() else sorted(
            p for p in target.rglob("*") if p.suffix in (".py", ".c") and p.is_file())
        for path in files:
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def current() -> Provenance:
    """The provenance of results computed in this process now."""
    import numpy
    import torch

    from blocklab.nn import cpu_kernels

    return Provenance(blocklab=blocklab.__version__, source_sha256=source_sha256(),
                      torch=torch.__version__, numpy=numpy.__version__,
                      python=platform.python_version(),
                      kernels=cpu_kernels.unavailable_reason() or "built",
                      machine=Machine.here())


def differences(stored: dict[str, Any] | None, now: Provenance, *,
                timed: bool = False) -> list[str]:
    """Why a stored result's provenance does not let it stand for one computed `now`: the
    RESULT_KEYS in which it differs ("provenance missing" when it has none), and for a `timed`
    run a machine other than `now`'s or none recorded."""
    if not isinstance(stored, dict):
        return ["provenance missing"]
    here = now.to_dict()
    reasons = [key for key in RESULT_KEYS if stored.get(key) != here[key]]
    if timed:
        machine = Machine.from_dict(stored.get("machine"))
        if machine is None:
            reasons.append("timed on an unrecorded machine")
        elif machine != now.machine:
            reasons.append("timed on another machine")
    return reasons
