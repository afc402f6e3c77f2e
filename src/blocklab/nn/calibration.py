"""Which of several ways to run something is fastest on this machine, measured and kept.

`fastest(op, key, candidates)` returns the candidate with the smallest median time (its user:
`--precision auto`, float32 or bfloat16 training steps). Answers are kept per process and on
disk, one JSON file per question under `cache_dir()/calibration/<machine>/` (<machine> hashes
the CPU's model name and flags and the torch version), written atomically.

`$BLOCKLAB_CALIBRATION`: "measure" (the default) as above; "static" skips every measurement
and `fastest` returns the `default` each caller names.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import statistics
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import torch

from blocklab.errors import InputError
from blocklab.jsonio import write_atomic

MODES = ("measure", "static")
ROUNDS = 5
_MEMO: dict[tuple[str, str], str] = {}


def mode() -> str:
    """$BLOCKLAB_CALIBRATION, checked: "measure" (unset) or "static"."""
    value = os.environ.get("BLOCKLAB_CALIBRATION", "measure")
    if value not in MODES:
        raise InputError(f"BLOCKLAB_CALIBRATION={value!r} is not allowed; expected one of "
                         f"{list(MODES)}")
    return value


def cache_dir() -> Path:
    """$BLOCKLAB_CACHE_DIR, else $XDG_CACHE_HOME/blocklab, else ~/.cache/blocklab."""
    env = os.environ.get("BLOCKLAB_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "blocklab"


def machine_key() -> str:
    """16 hex digits naming this CPU (model name and flags) and torch version."""
    lines = []
    with contextlib.suppress(OSError):
        lines = [line for line in Path("/proc/cpuinfo").read_text().splitlines()
                 if line.startswith(("model name", "flags"))][:2]
    text = "\0".join([*lines, platform.machine(), platform.processor(), torch.__version__])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def folder() -> Path:
    """Where this machine's answers are kept."""
    return cache_dir() / "calibration" / machine_key()


def question(op: str, key: Mapping[str, object]) -> str:
    """A stable name for one question: the op and its shape key, sorted."""
    return op + "-" + hashlib.sha256(json.dumps(dict(key), sort_keys=True).encode()
                                     ).hexdigest()[:16]


def fastest(op: str, key: Mapping[str, object], candidates: Mapping[str, Callable[[], object]],
            default: str) -> str:
    """The name of the fastest of `candidates` (name -> a callable running `op` once at the
    shape `key` names, JSON values) on this machine; `default` under "static"."""
    if default not in candidates:
        raise InputError(f"fastest({op!r}): default={default!r} is not one of the candidates "
                         f"{sorted(candidates)}")
    if mode() == "static" or len(candidates) == 1:
        return default
    name = question(op, key)
    memo = _MEMO.get((op, name))
    if memo in candidates:
        return memo
    stored = _read(folder() / f"{name}.json")
    if stored is not None and stored.get("fastest") in candidates \
            and set(stored.get("median_s", {})) == set(candidates):
        _MEMO[op, name] = stored["fastest"]
        return stored["fastest"]
    seconds = measure(candidates)
    best = min(seconds, key=seconds.get)
    _write(folder() / f"{name}.json", {"op": op, "key": dict(key), "fastest": best,
                                      "median_s": seconds, "rounds": ROUNDS,
                                      "threads": torch.get_num_threads()})
    _MEMO[op, name] = best
    return best


def kept(op: str, key: Mapping[str, object]) -> dict | None:
    """The stored answer to `op` at `key` on this machine (its "fastest" and "median_s"), or
    None when none is kept (not measured yet, or "static")."""
    if mode() == "static":
        return None
    return _read(folder() / f"{question(op, key)}.json")


def measure(candidates: Mapping[str, Callable[[], object]]) -> dict[str, float]:
    """name -> median seconds of one call over ROUNDS rounds, every candidate once a round in
    turn (so other processes' load falls on all alike), after one warm-up call each. The CPU
    random state is restored: measuring must not shift a seeded run's random stream."""
    times: dict[str, list[float]] = {name: [] for name in candidates}
    with torch.random.fork_rng(devices=[]):
        for fn in candidates.values():
            fn()
        for _ in range(ROUNDS):
            for name, fn in candidates.items():
                tick = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - tick)
    return {name: statistics.median(t) for name, t in times.items()}


def _read(path: Path) -> dict | None:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None  # absent or damaged: measured again and rewritten
    return value if isinstance(value, dict) else None


def _write(path: Path, value: dict) -> None:
    # A read-only cache costs a measurement per process, never a wrong answer.
    with contextlib.suppress(OSError):
        write_atomic(path, json.dumps(value, indent=1))
