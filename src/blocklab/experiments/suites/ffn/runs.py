"""What an `ffn` run measures: a training run with its zero-gradient probes (C17), and the
timing run that times every arm's optimizer step round-robin. `train_arm` and `time_arms` are
what the plan's RunSpecs execute."""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any

from blocklab.config import ModelConfig
from blocklab.experiments.env import torch_threads
from blocklab.experiments.options import RunOptions
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.ffn.configs import model_config, train_config
from blocklab.experiments.suites.ffn.records import StepTiming, ZeroGradFraction
from blocklab.experiments.suites.ffn.sizes import ARMS, DATA, Size

if TYPE_CHECKING:
    from blocklab.experiments.trainer import TrainConfig


def zero_gradient_fraction(model, batch) -> float:
    """Fraction of FFN activation inputs whose loss gradient is exactly zero, over all layers.

    Args:
        model: a `DecoderLM` (unfused FFNs).
        batch: LongTensor [B, T + 1]; inputs batch[:, :-1], targets batch[:, 1:].

    The activation φ acts on gate_proj's output z (gated FFNs) or up_proj's (plain ones), so
    ∂loss/∂z = (∂loss/∂φ(z)) · φ'(z) [· up]: exactly zero wherever φ'(z) = 0, as for ReLU at z < 0.
    """
    import torch.nn.functional as F

    counts = [0, 0]  # zeros, elements

    def count(grad) -> None:
        counts[0] += int((grad == 0).sum())
        counts[1] += grad.numel()

    def watch(module, inputs, output) -> None:
        output.register_hook(count)

    handles = []
    for layer in model.layers:
        ffn = layer.ffn
        branch = ffn.gate_proj if hasattr(ffn, "gate_proj") else ffn.up_proj
        handles.append(branch.register_forward_hook(watch))
    try:
        batch = batch.to(next(model.parameters()).device)
        logits = model(batch[:, :-1])  # [B, T, V]
        F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten()).backward()
    finally:
        for handle in handles:
            handle.remove()
        model.zero_grad(set_to_none=True)
    return counts[0] / counts[1]


def _probe_batch(size: Size):
    from blocklab.experiments.data import load_corpus, validation_windows

    return validation_windows(load_corpus(DATA).val, size.seq_len, size.batch_size)


def train_arm(mc: ModelConfig, size: Size, tc: TrainConfig, progress: Any = False,
              label: str | None = None) -> RunResult:
    """One trainer run of model `mc` under TrainConfig `tc`, with the zero-gradient fractions
    at init and after training."""
    from blocklab.experiments.trainer import build_model, train

    batch = _probe_batch(size)
    with torch_threads(1):
        initial = zero_gradient_fraction(build_model(mc, tc), batch)
    model, result = train(mc, tc, DATA, progress=progress, label=label)
    with torch_threads(1):
        final = zero_gradient_fraction(model, batch)
    result.extra["zero_grad_fraction"] = asdict(ZeroGradFraction(initial, final))
    return result


def time_arms(size: Size, options: RunOptions, arms: tuple[str, ...] = ARMS) -> RunResult:
    """Median ms per optimizer step of each arm, arms interleaved round-robin on one thread.

    Each round builds every arm afresh, takes one untimed step (allocations), then times
    `timing_steps` steps of forward, backward, clipping and AdamW on the suite's batches. The
    result trains no model: its `extra` is the `StepTiming` record.
    """
    from blocklab.experiments.data import load_corpus, sample_batch
    from blocklab.experiments.trainer import (
        build_model,
        learning_rate,
        make_optimizer,
        train_step,
    )

    started = time.perf_counter()
    tokens = load_corpus(DATA).train
    samples: dict[str, list[float]] = {arm: [] for arm in arms}
    with torch_threads(1):
        for round_ in range(size.timing_rounds):
            for arm in arms:
                # this CPU's step time (perf_counter, no device sync): on the CPU whatever
                # --device the models train on
                tc = replace(train_config(size, options, seed=0,
                                          lr=size.lr_grid.base[len(size.lr_grid.base) // 2]),
                             device="cpu")
                model = build_model(model_config(arm, size), tc)
                optimizer, params = make_optimizer(model, tc), list(model.parameters())
                for step in range(size.timing_steps + 1):
                    batch = sample_batch(tokens, seed=round_, step=step,
                                         batch_size=size.batch_size, seq_len=size.seq_len)
                    tick = time.perf_counter()
                    train_step(model, batch, optimizer, params, lr=learning_rate(step, tc),
                               grad_clip=tc.grad_clip)  # the step the arms are trained with
                    if step:
                        samples[arm].append(1000 * (time.perf_counter() - tick))
    timing = StepTiming({arm: statistics.median(v) for arm, v in samples.items()}, samples, 1)
    return RunResult(status="ok", wall_time_s=time.perf_counter() - started,
                     extra=asdict(timing))
