"""Seeded, deterministic, resumable training experiments on built-in data.

    data        corpora (stdlib, shakespeare, your files), `ByteTokenizer`, batch sampler
    synthetic   passkey retrieval; `passkey_accuracy`
    init        named initialisations (gpt2, xavier, fan_in, depth, default)
    trainer     `TrainConfig`, `train`, `run` -> one `RunResult`
    run_result  `RunResult`, a run's typed result (no PyTorch)
    options     `RunRequest`: what one command asks to run or read (results, size, seed
                offset, precision, budget); `RunOptions`: size, seeds, precision and backend
                of a suite invocation
    results     `run_id`, `ResultStore` (a folder of results; imports no trainer, no PyTorch)
    env         the environment record stored in every result

Names are imported on first use, so reading results (`ResultStore`, `RunResult`) needs no
PyTorch.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ByteTokenizer": "data",
    "Corpus": "data",
    "load_corpus": "data",
    "sample_batch": "data",
    "unigram_entropy": "data",
    "validation_windows": "data",
    "SyntheticExample": "synthetic",
    "answer_accuracy": "synthetic",
    "passkey_accuracy": "synthetic",
    "passkey_example": "synthetic",
    "INITS": "init",
    "initialize": "init",
    "TrainConfig": "trainer",
    "build_model": "trainer",
    "evaluate": "trainer",
    "learning_rate": "trainer",
    "make_progress": "trainer",
    "run": "trainer",
    "train": "trainer",
    "ResultStore": "results",
    "run_id": "results",
    "RunResult": "run_result",
    "RunOptions": "options",
    "RunRequest": "options",
    "environment": "env",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'blocklab.experiments' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"blocklab.experiments.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value
