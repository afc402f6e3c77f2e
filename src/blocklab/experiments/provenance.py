"""Where a result came from: the code and the libraries that produced it.

Every stored suite result carries a `provenance` block. A stored result is reused only when its
provenance equals the current one in everything that can change a result (`RESULT_KEYS`), and,
for a trained run, when its corpus hash equals the corpus's hash here; otherwise the suite runs
it again and says how many it re-ran and why. So a resumed suite never mixes results of older
code, another PyTorch or another Python's standard library (the `stdlib` corpus). A block
stored by an older version also carries `kernels` (whether its C kernels built), read no more.

It also records the machine (`Machine`: CPU model, instruction sets, online CPUs). Losses are
any machine's, but a timing is only this machine's when it was measured on it: a timed run
stored on another machine, or on one it does not record, is run again (`differences`).

And how the run used it (`Provenance.of_run`): torch's intra-op threads, and for a run that
trained a model the device, precision and op backend it trained in and what its model's ops
ran (`DecoderLM.backends()`). These change rounding, not which run it is: they are in no run id
and no RESULT_KEY, so a stored run is reused whatever they were; a block stored before they
were recorded reads them as None (unknown, `Provenance.from_dict`). A suite's summary says
when the runs it compares came from more than one machine or ran other bf16 attention kernels
(`Summary.machines`, `Summary.kernels`).

The source hash covers the package files that decide what a run computes (the model, the
training loop and experiments, the config); editing the report or the CLI does not invalidate
stored results. This module imports no PyTorch until `current()` is called.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import blocklab
from blocklab.experiments.env import cpu_flags, cpu_model

# Package parts whose code decides a run's numbers.
RESULT_SOURCES = ("config.py", "nn", "experiments")
RESULT_KEYS = ("blocklab", "source_sha256", "torch", "numpy", "python")
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
    versions; machine: where it ran (compared for timed runs alone; None in a block stored
    before it was recorded).

    How the run used the machine (None: not recorded, in a block stored before these were, or
    not known for this run): threads, torch's intra-op threads (those a training run trained
    with, else the process's as the run was stamped); device ("cpu", "cuda:0"), accelerator
    (the GPU's name on a CUDA device), precision ("fp32", "bf16") and backend ("fast",
    "reference", "compiled") of the model a run trained, and backends, the implementation each
    of its ops ran (`DecoderLM.backends()`, e.g. {"rms_norm": "F.rms_norm", "attention":
    "sdpa"}).
    None of them is compared (`differences`) or hashed into a run id."""

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

    @classmethod
    def from_dict(cls, data: Any) -> Provenance | None:
        """A stored provenance block as a Provenance: the fields recorded later than the
        versions (machine, threads, device, ...) read as None where a block stored before them
        lacks them, or holds no value of their kind; None for no block, or one without the
        versions every block has."""
        if not isinstance(data, dict) or not all(isinstance(data.get(key), str)
                                                 for key in RESULT_KEYS):
            return None
        threads = data.get("threads")
        backends = data.get("backends")
        return cls(**{key: data[key] for key in RESULT_KEYS},
                   machine=Machine.from_dict(data.get("machine")),
                   threads=threads if isinstance(threads, int)
                   and not isinstance(threads, bool) else None,
                   **{key: data.get(key) if isinstance(data.get(key), str) else None
                      for key in ("device", "accelerator", "precision", "backend")},
                   backends=dict(backends) if isinstance(backends, dict) and all(
                       isinstance(k, str) and isinstance(v, str)
                       for k, v in backends.items()) else None)

    def of_run(self, result: Any) -> Provenance:
        """This provenance with how the run `result` (a RunResult or its JSON form) used the
        machine: its training record's threads, device, accelerator, precision, backend and
        the kernels its model ran, where it trained a model (its own record, or one a suite
        run keeps inside its own: `trained_record`); else the threads alone."""
        import torch

        record = trained_record(result.to_dict() if hasattr(result, "to_dict") else result)
        env = record.get("environment") if record else None
        env = env if isinstance(env, dict) else {}
        config = record.get("train_config") if record else None
        config = config if isinstance(config, dict) else {}
        backends = record.get("backends") if record else None
        threads = env.get("threads")
        return replace(self, threads=threads if isinstance(threads, int)
                       else torch.get_num_threads(),
                       device=config.get("device") or env.get("device"),
                       accelerator=env.get("accelerator"),
                       precision=config.get("precision"), backend=config.get("backend"),
                       backends=dict(backends) if isinstance(backends, dict) else None)


def trained_record(result: Any, depth: int = 0) -> dict[str, Any] | None:
    """The training record in a stored result (its JSON form): the result itself where it is
    a training run's (it has a `train_config`), else the first one a suite run keeps inside
    its own (the position suite's `train`), at most three levels down; None for a run that
    trained no model."""
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
    """A machine in a few words: its CPU model and the MACHINE_FLAGS it has, in brackets
    ("AMD EPYC 9B14 [avx2 avx512f avx512_bf16]"); "an unrecorded machine" for None."""
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
    """The provenance of results computed in this process now (with its threads now; a run's
    own record of how it used the machine is `of_run`'s)."""
    import numpy
    import torch

    return Provenance(blocklab=blocklab.__version__, source_sha256=source_sha256(),
                      torch=torch.__version__, numpy=numpy.__version__,
                      python=platform.python_version(), machine=Machine.here(),
                      threads=torch.get_num_threads())


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
