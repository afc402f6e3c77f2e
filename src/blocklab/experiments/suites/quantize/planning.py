"""The `quantize` suite's RunSpecs: one timing run per timed shape, then one quality run per
seed."""

from __future__ import annotations

from typing import Any

from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import train_identity
from blocklab.experiments.suites.base import Results, RunSpec
from blocklab.experiments.suites.quantize.runs import quality_configs, run_quality, run_timing
from blocklab.experiments.suites.quantize.sizes import SIZES, THREADS, TimedShape


def plan(options: RunOptions, tuned: Results = ()) -> list[RunSpec]:
    """The timed runs (one per timed shape), then one quality run per seed."""
    size = SIZES[options.size]
    specs = [RunSpec(f"timing d={t.d_model} L={t.n_layers} T={list(t.seq_lens)}"
                     f"{' compiled' if t.compile else ''}", "timing", 0, timing_payload(t),
                     lambda progress, t=t: run_timing(t), timed=True)
             for t in size.timing]
    for seed in options.seeds:
        mc, tc = quality_configs(options, seed)
        payload = {"suite": "quantize", "kind": "quality", "model": mc.to_dict(),
                   "train": train_identity(tc), "data": "stdlib",
                   "eval_windows": size.quality.eval_windows,
                   # "layers": the runs record each layer's gate and up scales (C33); runs
                   # stored before lack them.
                   "layers": "scales"}
        specs.append(RunSpec(f"quality seed {seed}", "quality", seed, payload,
                             lambda progress, seed=seed: run_quality(options, seed, progress)))
    return specs


def timing_payload(t: TimedShape) -> dict[str, Any]:
    """A timing run's payload. "bounds": the runs time the free-layers models too; runs stored
    before lack them."""
    return {"suite": "quantize", "kind": "timing", "threads": THREADS, "bounds": "time-share",
            **t.to_dict()}
