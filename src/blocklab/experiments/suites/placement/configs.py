"""The ModelConfig and TrainConfig of every run the placement suite makes, and the learning rate
a training arm's schedule spends."""

from __future__ import annotations

from typing import TYPE_CHECKING

from blocklab.config import ModelConfig
from blocklab.experiments.options import RunOptions
from blocklab.experiments.scale import Scale
from blocklab.experiments.suites.placement.sizes import Probe, Sweep, Training

if TYPE_CHECKING:
    from blocklab.experiments.trainer import TrainConfig


def probe_model_config(placement: str, depth: int, probe: Probe) -> ModelConfig:
    """The project's default block (RMSNorm, SwiGLU at 8d/3, RoPE, final norm); only the
    placement and depth vary."""
    return ModelConfig(vocab_size=256, d_model=probe.d_model, n_layers=depth,
                       n_heads=probe.n_heads, placement=placement, max_seq_len=probe.seq_len,
                       name=f"placement-{placement}-{depth}")


def train_model_config(placement: str, depth: int, training: Training | Sweep) -> ModelConfig:
    """The model of a training grid's or an lr sweep's arm (the same block as the probe's)."""
    return ModelConfig(vocab_size=256, d_model=training.d_model, n_layers=depth,
                       n_heads=training.n_heads, placement=placement,
                       max_seq_len=training.seq_len, name=f"placement-{placement}-{depth}")


def train_config(grid: Probe | Training | Sweep, options: RunOptions, seed: int, *,
                 warmup: int = 0, lr: float | None = None, init: str = "xavier"
                 ) -> TrainConfig:
    """Every TrainConfig the suite builds, under `options` (its precision and backend; run ids
    ignore the backend, so they do not change with it).

    Part (b)'s runs and the sweeps' (`grid` a Training or a Sweep): xavier init, no gradient
    clipping, one thread (bit-reproducible, and faster than two on a busy 2-core machine), peak
    `lr` after `warmup` steps; a sweep's runs are shorter and evaluated once, at the end. A
    probe's (`grid` a Probe) trains nothing: `build_model` reads only its seed, `init`,
    precision and backend."""
    from blocklab.experiments.trainer import TrainConfig

    if isinstance(grid, Probe):
        return TrainConfig.for_run(options, seed, init=init)
    if lr is None:
        raise ValueError("a training or sweep run needs its peak lr")
    if isinstance(grid, Training):
        eval_every, eval_batches = grid.eval_every, grid.eval_batches
        stuck_patience, log_every = grid.stuck_patience, grid.log_every
    else:  # a sweep: one evaluation at the end, no stuck test, no per-layer logging
        eval_every, eval_batches, stuck_patience, log_every = 0, 1, None, 0
    return TrainConfig.for_run(
        options, seed, steps=grid.steps, batch_size=grid.batch_size, seq_len=grid.seq_len,
        lr=lr, warmup_steps=warmup, grad_clip=None, init="xavier", eval_every=eval_every,
        eval_batches=eval_batches, stuck_patience=stuck_patience, log_every=log_every,
        threads=1, final_eval_fraction=grid.final_eval_fraction)


def lr_area(training: Training, warmup: int, lr: float) -> float:
    """Σ over the run's steps of the scheduled lr (`trainer.learning_rate`)."""
    from blocklab.experiments.trainer import TrainConfig, learning_rate

    tc = TrainConfig(steps=training.steps, lr=lr, warmup_steps=warmup)
    return sum(learning_rate(step, tc) for step in range(training.steps))


def shape(size: str) -> tuple[ModelConfig, int, int]:
    """Part (b)'s pre-norm model at its deepest depth, batch and sequence length at `size`
    (`--precision auto`)."""
    from blocklab.experiments.suites.placement.sizes import SIZES

    t = SIZES[size].training
    return train_model_config("pre", max(t.depths), t), t.batch_size, t.seq_len


def scale(size: str, claim: str) -> Scale | None:
    """The scale a placement claim's training runs have at `size`: C36's deep stacks (the
    pre-norm model at its depth, one ladder run's tokens); C13's and C19's training contrast
    (the pre-norm model at the training grid's deepest depth, one run's tokens); None for C12,
    read at initialisation."""
    from blocklab.experiments.suites.placement.sizes import SIZES

    if claim == "C12":
        return None
    grid = SIZES[size].deep if claim == "C36" else SIZES[size].training
    return Scale.of(train_model_config("pre", grid.depths[-1], grid),
                    grid.steps * grid.batch_size * grid.seq_len)
