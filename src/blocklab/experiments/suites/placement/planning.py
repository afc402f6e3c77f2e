"""The placement suite's RunSpecs: the tuning stage, and every evaluation run (the gradient
probes, each training arm at its tuned peak lr, the largest-stable-lr sweeps), and what each
run costs."""

from __future__ import annotations

import math
from dataclasses import asdict

from blocklab.config import ModelConfig
from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import added_identity, train_identity
from blocklab.experiments.suites.base import Results, RunSpec, tuning_seeds
from blocklab.experiments.suites.placement.configs import (
    probe_model_config,
    train_config,
    train_model_config,
)
from blocklab.experiments.suites.placement.probes import init_gradients
from blocklab.experiments.suites.placement.sizes import (
    DATA,
    SIZES,
    Sweep,
    Training,
    arm_name,
)
from blocklab.experiments.suites.placement.sweep import largest_stable_lr
from blocklab.experiments.suites.tuning import lr_trials, tune_arm
from blocklab.experiments.summaries import ArmTuning, LrTrial


def plan(options: RunOptions, tuned: Results) -> list[RunSpec]:
    """Every evaluation run of the suite under `options` (its size, seeds and precision): the
    gradient probes, every training arm at the peak lr its tuning runs `tuned` chose, and the
    largest-stable-lr sweeps."""
    size = SIZES[options.size]
    probe, training = size.probe, size.training
    specs = []
    for placement in probe.placements:
        for init in probe.inits:
            for depth in probe.depths:
                for seed in options.seeds:
                    payload = {"suite": "placement", "kind": "init_gradients",
                               "placement": placement, "init": init, "depth": depth,
                               "seed": seed, "probe": asdict(probe),
                               "model": probe_model_config(placement, depth, probe).to_dict(),
                               "data": DATA}
                    payload.update(added_identity(precision=options.precision))

                    def execute(progress, placement=placement, init=init, depth=depth,
                                seed=seed):
                        return init_gradients(placement, init, depth, seed, probe, options)

                    specs.append(RunSpec(f"init {placement} {init} L={depth} seed {seed}",
                                         f"init/{placement}/{init}/{depth}", seed, payload,
                                         execute, reads_tuning=False))
    lrs = tuned_lrs(training, lr_trials(tuned))
    return (specs + _training_specs(training, options, lrs)
            + _sweep_specs(size.sweep, options, "sweep")
            + _sweep_specs(size.deep, options, "deep"))


def tune(options: RunOptions, tuned: Results = ()) -> list[RunSpec]:
    """The tuning stage: every training arm at every peak lr of its grid (grown at an edge
    from the results `tuned` so far) on the tuning seeds, as long as the evaluation runs."""
    from blocklab.experiments.trainer import run

    training = SIZES[options.size].training
    trials = lr_trials(list(tuned))
    specs = []
    for placement, depth, warmup in training.arms():
        arm = arm_name(placement, depth, warmup)
        mc = train_model_config(placement, depth, training)
        for lr in tune_arm(training.lr_grid, trials, arm).grid:
            for seed in tuning_seeds(options, training.tuning_seeds):
                tc = train_config(training, options, seed, warmup=warmup, lr=lr)
                label = f"tune {placement} L={depth} warmup {warmup} lr {lr:g} seed {seed}"
                payload = {"suite": "placement", "kind": "tune", "arm": arm,
                           "model": mc.to_dict(), "train": train_identity(tc), "data": DATA}

                def execute(progress, mc=mc, tc=tc, label=label, run=run):
                    return run(mc, tc, DATA, progress=progress, label=label)

                specs.append(RunSpec(label, f"tune/{arm}", seed, payload, execute))
    return specs


def tuned_lrs(training: Training, trials: list[LrTrial]) -> dict[str, ArmTuning]:
    """Each training arm's tuning: its grid, chosen peak lr and whether that is interior."""
    return {arm_name(*a): tune_arm(training.lr_grid, trials, arm_name(*a))
            for a in training.arms()}


def _training_specs(training: Training, options: RunOptions, lrs: dict[str, ArmTuning]
                    ) -> list[RunSpec]:
    """Part (b): every arm at its tuned peak lr on `options.seeds`; arms
    `train/<placement>/<depth>/<warmup>`."""
    from blocklab.experiments.trainer import run

    specs = []
    for placement, depth, warmup in training.arms():
        mc = train_model_config(placement, depth, training)
        lr = lrs[arm_name(placement, depth, warmup)].lr
        for seed in options.seeds:
            tc = train_config(training, options, seed, warmup=warmup, lr=lr)
            label = f"{placement} L={depth} warmup {warmup} lr {lr:g} seed {seed}"
            payload = {"suite": "placement", "kind": "train", "model": mc.to_dict(),
                       "train": train_identity(tc), "data": DATA}

            def execute(progress, mc=mc, tc=tc, label=label, run=run):
                return run(mc, tc, DATA, progress=progress, label=label)

            specs.append(RunSpec(label, f"train/{arm_name(placement, depth, warmup)}", seed,
                                 payload, execute))
    return specs


def _sweep_specs(sweep: Sweep, options: RunOptions, grid: str) -> list[RunSpec]:
    """One run per arm and seed of `options.seeds`, each bisecting its ladder; arms
    `<grid>/<placement>/<depth>/<warmup>` (grid "sweep" or "deep")."""
    specs = []
    for placement, depth, warmup in sweep.arms():
        for seed in options.seeds:
            tc = train_config(sweep, options, seed, warmup=warmup, lr=sweep.lr_min)
            payload = {"suite": "placement", "kind": grid,
                       "model": train_model_config(placement, depth, sweep).to_dict(),
                       "train": train_identity(tc), "ladder": sweep.ladder(), "data": DATA}

            def execute(progress, placement=placement, depth=depth, warmup=warmup, seed=seed):
                return largest_stable_lr(placement, depth, warmup, seed, sweep, options,
                                         progress)

            label = (f"{'deep ' if grid == 'deep' else ''}largest stable lr {placement} "
                     f"L={depth} warmup {warmup} seed {seed}")
            specs.append(RunSpec(label, f"{grid}/{arm_name(placement, depth, warmup)}", seed,
                                 payload, execute, reads_tuning=False))
    return specs


def price(spec: RunSpec, cal) -> float | None:
    """Estimated seconds of one run on this machine (`blocklab.experiments.estimate`): a
    gradient probe builds its model and takes one forward+backward (priced as a step) on
    [batch_size, seq_len]; a largest-stable-lr run is as many trainer runs as its bisection
    makes (⌈log2(rungs + 1)⌉); training runs are the trainer's (the default)."""
    payload = spec.payload
    if payload["kind"] in ("sweep", "deep"):
        from blocklab.experiments.estimate import TrainShape, training_s

        runs = math.ceil(math.log2(len(payload["ladder"]) + 1))
        return runs * training_s(ModelConfig.from_dict(payload["model"]),
                                 TrainShape.from_payload(payload["train"]), cal)
    if payload["kind"] != "init_gradients":
        return None
    probe, model = payload["probe"], ModelConfig.from_dict(payload["model"])
    b, t, precision = probe["batch_size"], probe["seq_len"], payload.get("precision", "fp32")
    return cal.build_s(model, b, t, precision) + cal.step_s(model, b, t, precision)
