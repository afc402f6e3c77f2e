"""Where a result came from: the code and the libraries that produced it, and the machine.

A stored result is reused only when its `provenance` equals the current one in `RESULT_KEYS`
(and a trained run's corpus hash matches); otherwise the suite runs it again and says why, so a
resumed suite never mixes results of other code, libraries or standard library. A timed run
counts only on the machine (`Machine`) it was timed on (`differences`).

How a run used the machine (`Provenance.of_run`: threads, device, precision, backend and the
kernels its model ran) changes rounding, not which run it is: in no run id and no RESULT_KEY,
None where a block stored before them lacks them. The source hash covers only the package
files that decide a run's numbers. No PyTorch until `current()` is called.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import blocklab
from blocklab.experiments.env import cpu_flags, cpu_model

if TYPE_CHECKING:
    from blocklab.experiments.run_result import RunResult

# Package parts whose code decides a run's numbers.
RESULT_SOURCES = ("config.py", "nn", "experiments")
RESULT_KEYS = ("blocklab", "source_sha256", "torch", "numpy", "python")
# The instruction sets CPU timings depend on: vector width, bfloat16 and int8 units.
MACHINE_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile")


@dataclass(frozen=True)
class Machine:
    """The CPU a result was computed on: model name, which of MACHINE_FLAGS it has, and the
    machine's online CPUs (not this process's affinity, which changes no machine)."""

    cpu: str
    flags: dict[str, bool]
    cores: int

    @classmethod
    def here(cls) -> Machine:
        return cls(cpu_model(), cpu_flags(MACHINE_FLAGS), os.cpu_count() or 1)

    @classmethod
    def from_dict(cls, data: Any) -> Machine | None:
        """A stored record as a Machine; None where there is none or it is not one."""
        try:
            return cls(**data)
        except TypeError:
            return None


@dataclass(frozen=True)
class Provenance:
    """Versions (blocklab, torch, numpy, python), the hash of RESULT_SOURCES, and the machine
    (compared for timed runs alone). Then how the run used it, never compared (None: not
    recorded or not known): torch threads; device, accelerator (a GPU's name), precision and
    backend of the model it trained; backends, what each op ran (`DecoderLM.backends()`)."""

    blocklab: str
    source_sha256: str
    torch: str
    numpy: str
    python: str
    machine: Machine | None
    threads: int | None = None
    device: str | None = None
    accelerator: str | None = None
    precision: str | None = None
    backend: str | None = None
    backends: dict[str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def of_run(self, result: RunResult) -> Provenance:
        """This provenance with how `result` used the machine, from its training record
        (`trained_record`), else the threads alone."""
        import torch

        record = trained_record(result.to_dict()) or {}
        env = record.get("environment") or {}
        config = record.get("train_config") or {}
        threads = env.get("threads")
        return replace(self, threads=threads if isinstance(threads, int)
                       else torch.get_num_threads(),
                       device=config.get("device") or env.get("device"),
                       accelerator=env.get("accelerator"),
                       precision=config.get("precision"), backend=config.get("backend"),
                       backends=record.get("backends"))


def trained_record(result: Any, depth: int = 0) -> dict[str, Any] | None:
    """The training record (a dict with a `train_config`) in a stored result's JSON: itself, or
    the first one nested at most three levels down; None for a run that trained no model."""
    if not isinstance(result, dict) or depth > 3:
        return None
    if isinstance(result.get("train_config"), dict):
        return result
    for value in result.values():
        found = trained_record(value, depth + 1)
        if found is not None:
            return found
    return None


def machine_name(machine: Machine | None) -> str:
    """"AMD EPYC 9B14 [avx2 avx512f avx512_bf16]"; "an unrecorded machine" for None."""
    if machine is None:
        return "an unrecorded machine"
    flags = " ".join(name for name in MACHINE_FLAGS if machine.flags.get(name))
    return f"{machine.cpu} [{flags or 'no AVX2'}]"


@functools.lru_cache(maxsize=4)
def source_sha256(root: Path | None = None) -> str:
    """sha256 over (relative path, bytes) of every .py file in RESULT_SOURCES under the
    package folder `root` (default: this installed package)."""
    root = Path(blocklab.__file__).parent if root is None else root
    digest = hashlib.sha256()
    for part in RESULT_SOURCES:
        target = root / part
        files = [target] if target.is_file() else sorted(
            p for p in target.rglob("*.py") if p.is_file())
        for path in files:
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def current() -> Provenance:
    """The provenance of results computed in this process now."""
    import numpy
    import torch

    return Provenance(blocklab=blocklab.__version__, source_sha256=source_sha256(),
                      torch=torch.__version__, numpy=numpy.__version__,
                      python=platform.python_version(), machine=Machine.here(),
                      threads=torch.get_num_threads())


def differences(stored: dict[str, Any] | None, now: Provenance, *,
                timed: bool = False) -> list[str]:
    """Why a stored provenance cannot stand for `now`: the RESULT_KEYS that differ, and for a
    `timed` run another machine or none recorded."""
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
