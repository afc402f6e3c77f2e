"""Run ids and a folder of JSON results, so an interrupted suite resumes where it stopped.

    store = ResultStore("runs/ffn")
    for model_config, train_config in grid:
        result = run_stored(store, model_config, train_config, "stdlib")  # trains if missing

(`run_stored` is the trainer's, `blocklab.experiments.trainer.run_stored`: the store only keeps
results, it never trains.)

A result is one file `<root>/<run_id>.json`, written atomically: a reader (or a crash) sees the
previous file or the complete new one, never half. A file that does not parse, or has no
"status", does not count as done and is run again. This module imports no PyTorch, so reports
can read results without it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from blocklab.config import ModelConfig, write_atomic
from blocklab.errors import InputError, ResultsError
from blocklab.experiments.run_result import RunResult
from blocklab.jsonio import json_safe


class _Config(Protocol):
    """A config as the trainer's `TrainConfig` is one (named structurally, so this module needs
    nothing from the trainer)."""

    def to_dict(self) -> dict[str, Any]: ...


# Fields that change neither what is trained nor how: a cosmetic name, and the thread count and
# device (which change rounding, not the experiment).
_MODEL_IGNORED = ("name",)
_TRAIN_IGNORED = ("threads", "device", "backend")
# Keys added to TrainConfig after run ids were first issued, left out at their default so the
# ids of earlier runs stay what they were.
_TRAIN_ADDED = {"precision": "fp32"}


def added_identity(**fields: str) -> dict[str, str]:
    """Of fields added to run ids after the first ids were issued (precision), those not at
    their default: what a run's payload must name so that its id is the one it had before the
    field existed (`added_identity(precision="fp32")` is {}). The one rule of id
    compatibility, for train configs (`train_identity`) and the suites' other payloads alike."""
    unknown = set(fields) - set(_TRAIN_ADDED)
    if unknown:
        raise TypeError(f"not an added identity field: {sorted(unknown)}")
    return {k: v for k, v in fields.items() if _TRAIN_ADDED[k] != v}


def train_identity(train_config: _Config | dict) -> dict[str, Any]:
    """The fields of a train config that make a run what it is: all but threads, device and
    backend (speed, not values), and an added field (precision) only off its default."""
    train = train_config if isinstance(train_config, dict) else train_config.to_dict()
    kept = {k: v for k, v in train.items() if k not in _TRAIN_IGNORED}
    added = added_identity(**{k: kept.pop(k) for k in _TRAIN_ADDED if k in kept})
    return {k: v for k, v in train.items() if k in kept or k in added}


def run_id(model_config: ModelConfig | dict, train_config: _Config | dict,
           data_name: str) -> str:
    """A stable 12-hex-digit id of (model config, train config, data name).

    sha256 of their canonical JSON (sorted keys), without `ModelConfig.name`,
    `TrainConfig.threads`, `TrainConfig.device` and `TrainConfig.backend` (they change speed,
    not values), nor `TrainConfig.precision` at its default "fp32".
    """
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


class ResultSink(Protocol):
    """Where an executor puts each result as it finishes (a ResultStore, or a router over
    several)."""

    def save(self, run_id: str, result: RunResult) -> Any: ...


class ResultStore:
    """A folder of results, one `<run_id>.json` per run."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path_for(self, run_id: str) -> Path:
        if not run_id or any(c in run_id for c in "/\\") or run_id.startswith("."):
            raise InputError(f"run id {run_id!r} is not a plain file name")
        return self.root / f"{run_id}.json"

    def _read(self, path: Path) -> RunResult | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return None
        try:
            return RunResult.from_dict(data, str(path))
        except ResultsError:  # not a result (or half of one): run it again
            return None

    def has(self, run_id: str) -> bool:
        """True when the result file exists, parses, and has a status."""
        return self._read(self.path_for(run_id)) is not None

    def load(self, run_id: str) -> RunResult:
        path = self.path_for(run_id)
        data = self._read(path)
        if data is None:
            raise FileNotFoundError(f"no complete result at {path}")
        return data

    def save(self, run_id: str, result: RunResult) -> Path:
        path = self.path_for(run_id)
        write_atomic(path, result_json(result))
        return path

    def iter_results(self) -> Iterator[tuple[str, RunResult]]:
        """(run_id, result) for every complete result, in run-id order."""
        if not self.root.is_dir():
            return
        for path in sorted(self.root.glob("*.json")):
            data = self._read(path)
            if data is not None:
                yield path.stem, data
