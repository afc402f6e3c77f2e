"""Run ids and a folder of JSON results, so an interrupted suite resumes where it stopped.

    store = ResultStore("runs/ffn")
    key = run_id(model_config, train_config, "stdlib")
    if not store.has(key):  # trains only what is missing
        trainer.run(model_config, train_config, "stdlib", store.path_for(key))

A result is one file `<root>/<run_id>.json`, written atomically. A damaged file (cut short, not
strict JSON, no "status") or one holding another run's result does not count as done: it is
run again, and `damaged` says why, naming the file. A parsed result is kept, pickled, while the
file's inode, size and mtime stay the same; every reader gets its own copy. No PyTorch here.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from blocklab.config import ModelConfig
from blocklab.errors import InputError, ResultsError
from blocklab.experiments.run_result import RunResult
from blocklab.jsonio import json_safe, read_json, write_atomic


class _Config(Protocol):
    """A config like the trainer's `TrainConfig` (structural: nothing imported from it)."""

    def to_dict(self) -> dict[str, Any]: ...


# Fields that change no result: a cosmetic name; threads, device and backend (speed, rounding).
_MODEL_IGNORED = ("name",)
_TRAIN_IGNORED = ("threads", "device", "backend")
# Keys added to TrainConfig after run ids were first issued, left out at their default so the
# ids of earlier runs stay what they were.
_TRAIN_ADDED = {"precision": "fp32"}


def added_identity(*, precision: str = "fp32") -> dict[str, str]:
    """The fields added to run ids after the first were issued that are off their default: what
    a payload must name to keep its older id (`added_identity(precision="fp32")` is {}). The
    one rule of id compatibility, for train configs and other payloads alike."""
    return {k: v for k, v in {"precision": precision}.items() if _TRAIN_ADDED[k] != v}


def train_identity(train_config: _Config | dict) -> dict[str, Any]:
    """The fields of a train config that make a run what it is (see `_TRAIN_IGNORED`,
    `added_identity`)."""
    train = train_config if isinstance(train_config, dict) else train_config.to_dict()
    kept = {k: v for k, v in train.items() if k not in _TRAIN_IGNORED}
    added = added_identity(**{k: kept.pop(k) for k in _TRAIN_ADDED if k in kept})
    return {k: v for k, v in train.items() if k in kept or k in added}


def run_id(model_config: ModelConfig | dict, train_config: _Config | dict,
           data_name: str) -> str:
    """A stable 12-hex-digit id: sha256 of the canonical JSON of (model config without its
    name, `train_identity`, data name)."""
    model = model_config if isinstance(model_config, dict) else model_config.to_dict()
    model = {k: v for k, v in model.items() if k not in _MODEL_IGNORED}
    train = train_identity(train_config)
    canonical = json.dumps({"model": model, "train": train, "data": str(data_name)},
                           sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]


def result_json(result: RunResult | dict[str, Any]) -> str:
    """A result (or any JSON-able object) as strict JSON text (NaN/inf written as null)."""
    if isinstance(result, RunResult):
        result = result.to_dict()
    return json.dumps(json_safe(result), indent=1, allow_nan=False) + "\n"


# Far above any result the suites write, below what would exhaust memory to parse.
RESULT_MAX_BYTES = 256 * 2**20

# Parsed results by path: ((device, inode, size, mtime ns) of the file read, the pickle).
_PARSED: dict[Path, tuple[tuple[int, int, int, int], bytes]] = {}
_SETTLED_NS = 50_000_000


class ResultSink(Protocol):
    """Where an executor puts each result as it finishes."""

    def save(self, run_id: str, result: RunResult) -> Any: ...


class ResultStore:
    """A folder of results, one `<run_id>.json` per run; `damaged` maps each file found but
    unusable to why, in one line naming it (a missing file is only not run yet)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.damaged: dict[Path, str] = {}

    def path_for(self, run_id: str) -> Path:
        if not run_id or any(c in run_id for c in "/\\") or run_id.startswith("."):
            raise InputError(f"run id {run_id!r} is not a plain file name")
        return self.root / f"{run_id}.json"

    def _read(self, path: Path, note: bool = True) -> RunResult | None:
        """The result stored at `path`; None when there is none or it is damaged (noted in
        `damaged` if `note`)."""
        key = None
        try:
            info = os.stat(path)
            regular = stat.S_ISREG(info.st_mode)
            key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
        except FileNotFoundError:
            if not os.path.lexists(path):
                return None  # not run yet
            regular = False  # a link to nothing
        except OSError:
            regular = True  # (read_json says what is wrong)
        kept = _PARSED.get(path)
        if regular and kept is not None and kept[0] == key:
            return pickle.loads(kept[1])
        try:
            if not regular:  # a folder, a link to nothing, or a pipe that would never end
                raise ResultsError(f"{path}: not a regular file")
            data = read_json(path, error=ResultsError, max_bytes=RESULT_MAX_BYTES)
            result = RunResult.from_dict(data, str(path))
            # Every reader comes here: a file proves it is the run its name says, or is no run.
            if result.claimed_id is not None and result.claimed_id != path.stem:
                raise ResultsError(f"{path} did not match its name: it holds the result of run "
                                   f"{result.claimed_id}")
        except ResultsError as err:  # not a result, or half of one: run it again
            if note and os.path.lexists(path):  # (not one deleted meanwhile)
                self.damaged[path] = str(err)
            return None
        # Kept once older than an mtime tick: a rewrite in place cannot keep the mtime read.
        if key is not None and time.time_ns() - key[3] > _SETTLED_NS:
            _PARSED[path] = key, pickle.dumps(result, pickle.HIGHEST_PROTOCOL)
        return result

    def has(self, run_id: str) -> bool:
        """True when the result file exists, reads as strict JSON, and has a status."""
        return self._read(self.path_for(run_id)) is not None

    def load(self, run_id: str) -> RunResult:
        path = self.path_for(run_id)
        data = self._read(path)
        if data is None:
            raise FileNotFoundError(self.damaged.get(path) or f"no complete result at {path}")
        return data

    def save(self, run_id: str, result: RunResult) -> Path:
        path = self.path_for(run_id)
        if path.is_dir() and not path.is_symlink():  # a file cannot replace a folder
            raise ResultsError(f"{path} is a folder where the result of run {run_id} belongs; "
                               "move it away and run again")
        write_atomic(path, result_json(result))
        return path

    def iter_results(self) -> Iterator[tuple[str, RunResult]]:
        """(run_id, result) for every complete result, in run-id order (other JSON files are
        passed over, not counted as damaged)."""
        if not self.root.is_dir():
            return
        for path in sorted(self.root.glob("*.json")):
            data = self._read(path, note=False)
            if data is not None:
                yield path.stem, data
