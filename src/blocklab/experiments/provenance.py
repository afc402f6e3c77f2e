"""Where a result came from: the code, the libraries and the kernels that produced it.

Every stored suite result carries a `provenance` block. A stored result is reused only when its
provenance equals the current one in everything that can change a result (`RESULT_KEYS`), and,
for a trained run, when its corpus hash equals the corpus's hash here; otherwise the suite runs
it again and says how many it re-ran and why. So a resumed suite never mixes results of older
code, another PyTorch, other kernels or another Python's standard library (the `stdlib` corpus).

The source hash covers the package files that decide what a run computes (the model, the
training loop and experiments, the config); editing the report or the CLI does not invalidate
stored results. This module imports no PyTorch until `current()` is called.
"""

from __future__ import annotations

import functools
import hashlib
import platform
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import blocklab

# Package parts whose code decides a run's numbers.
RESULT_SOURCES = ("config.py", "allocator.py", "nn", "experiments")
RESULT_KEYS = ("blocklab", "source_sha256", "torch", "numpy", "python", "kernels")


@dataclass(frozen=True)
class Provenance:
    """blocklab: package version; source_sha256: hash of RESULT_SOURCES; torch, numpy, python:
    versions; kernels: the CPU kernel backend ("compiled" or why not: the fallback)."""

    blocklab: str
    source_sha256: str
    torch: str
    numpy: str
    python: str
    kernels: str

    def to_dict(self) -> dict[str, str]:
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
                      kernels=cpu_kernels.unavailable_reason() or "built")


def differences(stored: dict[str, Any] | None, now: Provenance) -> list[str]:
    """The RESULT_KEYS in which a stored result's provenance differs from `now` (all of them
    naming "provenance" when the result has none)."""
    if not isinstance(stored, dict):
        return ["provenance missing"]
    here = now.to_dict()
    return [key for key in RESULT_KEYS if stored.get(key) != here[key]]
