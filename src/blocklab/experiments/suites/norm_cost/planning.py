"""The suite's runs (`plan`): one RunSpec per kernels shape, step-time run, like-for-like
timing and quality run, each with the payload its run id is hashed from."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import train_identity
from blocklab.experiments.suites.base import Results, RunSpec
from blocklab.experiments.suites.norm_cost.fused import time_like_for_like
from blocklab.experiments.suites.norm_cost.kernels import time_kernels
from blocklab.experiments.suites.norm_cost.records import timed_run
from blocklab.experiments.suites.norm_cost.sizes import (
    NORM_NAMES,
    SIZES,
    KernelGrid,
    QualityShape,
    Size,
    StepShape,
    model_config,
)
from blocklab.experiments.suites.norm_cost.step import time_training_steps

if TYPE_CHECKING:
    from blocklab.experiments.trainer import TrainConfig


def train_config(quality: QualityShape, seed: int, options: RunOptions) -> TrainConfig:
    """A quality run's training: the one place the suite builds a TrainConfig for a run (in
    `options`' precision and backend)."""
    from blocklab.experiments.trainer import TrainConfig

    q = quality
    return TrainConfig.for_run(options, seed, steps=q.steps, batch_size=q.batch_size,
                               seq_len=q.seq_len, lr=q.lr, warmup_steps=q.warmup_steps,
                               eval_batches=q.eval_batches, eval_every=0, log_every=0,
                               threads=1, final_eval_fraction=q.final_eval_fraction)


def _kernels_spec(grid: KernelGrid, d: int, rows: int, threads: int) -> RunSpec:
    payload = {"suite": "norm-cost", "kind": "kernels", "d": d, "rows": rows,
               "repeats": grid.repeats, "compile": grid.compile,
               "compile_cache": "fresh" if grid.compile else None,
               "threads": threads, "block_s": grid.block_s}
    return RunSpec(f"kernels d={d} rows={rows} threads={threads}", "kernels", 0, payload,
                   lambda progress: timed_run(lambda: time_kernels(
                       d, rows, repeats=grid.repeats, compile=grid.compile, threads=threads,
                       block_s=grid.block_s)),
                   timed=True)


def _step_spec(step: StepShape, threads: int) -> RunSpec:
    payload = {"suite": "norm-cost", "kind": "step", "threads": threads,
               **dataclasses.asdict(step)}
    return RunSpec(f"step time threads={threads}", "step", 0, payload,
                   lambda progress: timed_run(lambda: time_training_steps(step,
                                                                          threads=threads)),
                   timed=True)


def _like_for_like_spec(size: Size, threads: int) -> RunSpec:
    """The like-for-like kernel timing (`time_like_for_like`) at the step model's shape:
    d = d_model, rows = batch_size · seq_len."""
    like = size.like_for_like
    d, rows = size.step.d_model, size.step.batch_size * size.step.seq_len
    payload = {"suite": "norm-cost", "kind": "like-for-like", "d": d, "rows": rows,
               "threads": threads, **dataclasses.asdict(like)}
    return RunSpec(f"like-for-like kernels d={d} rows={rows} threads={threads}",
                   "like-for-like", 0, payload,
                   lambda progress: timed_run(lambda: time_like_for_like(
                       d, rows, repeats=like.repeats, threads=threads, block_s=like.block_s)),
                   timed=True)


def _quality_spec(options: RunOptions, norm: str, seed: int) -> RunSpec:
    from blocklab.experiments.trainer import run

    q = SIZES[options.size].quality
    mc = model_config(norm, q.d_model, q.n_layers, q.seq_len)
    tc = train_config(q, seed, options)
    payload = {"suite": "norm-cost", "kind": "quality", "model": mc.to_dict(),
               "train": train_identity(tc), "data": "stdlib"}
    label = f"quality {norm} seed {seed}"
    return RunSpec(label, norm, seed, payload,
                   lambda progress: run(mc, tc, "stdlib", progress=progress, label=label))


def plan(options: RunOptions, tuned: Results = ()) -> list[RunSpec]:
    """Kernel runs (one per shape and thread count, at full only), one step-time run and one
    like-for-like kernel timing per thread count (both reported beside C18, which the
    analytic counts and the quality runs decide), then the quality runs (rmsnorm and
    layernorm × seeds)."""
    size = SIZES[options.size]
    specs = []
    for threads in size.threads:
        if size.kernels is not None:
            specs += [_kernels_spec(size.kernels, d, rows, threads)
                      for d, rows in size.kernels.shapes]
        specs.append(_step_spec(size.step, threads))
        specs.append(_like_for_like_spec(size, threads))
    specs += [_quality_spec(options, norm, seed) for seed in options.seeds
              for norm in NORM_NAMES]
    return specs
