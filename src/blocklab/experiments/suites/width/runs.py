"""What a `width` run measures: a training run, then its model's validation loss at each
prefix width of its FFNs (`blocklab.nn.narrowed`), on the end-of-run evaluation's windows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from blocklab.config import ModelConfig
from blocklab.experiments.env import torch_threads
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.width.sizes import DATA

if TYPE_CHECKING:
    from torch import nn

    from blocklab.experiments.trainer import TrainConfig


def width_losses(model: nn.Module, tc: TrainConfig, widths: tuple[int, ...]) -> dict[str, float]:
    """{str(k): mean validation loss (nats/token) with every FFN at its first k channels}, on
    the windows and batches the trainer's end-of-run evaluation scores (so the whole width
    reads the run's own final val_loss)."""
    from blocklab.experiments.data import load_corpus
    from blocklab.experiments.trainer import evaluate, final_batch_tokens, final_windows
    from blocklab.nn.ffn import narrowed

    windows = {tc.seq_len: final_windows(load_corpus(DATA).val, tc)[tc.seq_len]}
    out = {}
    with torch_threads(1):
        for k in widths:
            with narrowed(model, k):
                out[str(k)] = evaluate(model, windows, final_batch_tokens(tc))[tc.seq_len]["loss"]
    return out


def train_arm(mc: ModelConfig, tc: TrainConfig, widths: tuple[int, ...], progress: Any = False,
              label: str | None = None) -> RunResult:
    """One trainer run of `mc` under `tc`, then its loss at each of `widths` in
    `extra["width_loss"]` (none for a run that diverged, got stuck or did not learn: its
    weights are not a model to read)."""
    from blocklab.experiments.trainer import train

    model, result = train(mc, tc, DATA, progress=progress, label=label)
    if result.status == "ok":
        result.extra["width_loss"] = width_losses(model, tc, widths)
    return result
