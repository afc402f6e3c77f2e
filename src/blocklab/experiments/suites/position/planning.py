"""The position suite's runs: the tuning stage, each arm's tuned lr, and the evaluation plan
(training runs, passkey runs, the timed cost run, the relative-error run)."""

from __future__ import annotations

import dataclasses

from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import added_identity, train_identity
from blocklab.experiments.suites.base import Results, RunSpec, tuning_seeds
from blocklab.experiments.suites.evaluation import graded_only
from blocklab.experiments.suites.position.cost import time_position_cost
from blocklab.experiments.suites.position.passkey import passkey_run
from blocklab.experiments.suites.position.realistic_cost import SHAPES as REALISTIC_SHAPES
from blocklab.experiments.suites.position.relative_error import (
    RELATIVE_ERROR_DTYPES,
    RELATIVE_ERROR_SHIFTS,
    relative_error_run,
)
from blocklab.experiments.suites.position.runs import train_and_read
from blocklab.experiments.suites.position.scaling import SCALINGS
from blocklab.experiments.suites.position.sizes import (
    COST_SCHEMES,
    PARAM_SCHEMES,
    SIZES,
    arm_config,
    arms,
    train_config,
)
from blocklab.experiments.suites.tuning import lr_trials, tune_arm, tune_arms
from blocklab.experiments.summaries import ArmTuning, LrTrial


def tune(options: RunOptions, tuned: Results = ()) -> list[RunSpec]:
    """The tuning stage: every arm the size trains at every peak lr of its grid (grown at an
    edge from the results `tuned` so far) on the tuning seeds, each a plain training run as
    long as the evaluation's."""
    from blocklab.experiments.trainer import run

    size = options.size
    t = SIZES[size].train
    trials = lr_trials(list(tuned))
    specs = []
    for arm in arms(size):
        mc = arm_config(size, arm)
        for lr in tune_arm(t.lr_grid, trials, arm).grid:
            for seed in tuning_seeds(options, t.tuning_seeds):
                tc = train_config(options, seed, lr)
                label = f"tune {arm} lr {lr:g} seed {seed}"
                payload = {"suite": "position", "kind": "tune", "arm": arm,
                           "model": mc.to_dict(), "train": train_identity(tc),
                           "data": "stdlib"}
                specs.append(RunSpec(label, f"tune/{arm}", seed, payload,
                                     lambda progress, mc=mc, tc=tc, label=label, run=run:
                                     run(mc, tc, "stdlib", progress=progress, label=label)))
    return specs


def tuned_lrs(size: str, trials: list[LrTrial]) -> dict[str, ArmTuning]:
    """Each arm's tuning: its grid, chosen peak lr and whether that is interior; {} at a size
    that does not tune (every arm at the grid's middle lr)."""
    if not SIZES[size].train.tuning_seeds:
        return {}
    return tune_arms(SIZES[size].train.lr_grid, trials, arms(size))


def arm_lrs(size: str, tuned: Results) -> dict[str, float | None]:
    """Each arm's peak lr: its tuned one, or None (the grid's middle) where the size does not
    tune."""
    tunings = tuned_lrs(size, lr_trials(tuned))
    return {arm: tunings[arm].lr if arm in tunings else None for arm in arms(size)}


def plan(options: RunOptions, tuned: Results) -> list[RunSpec]:
    """One training run per (arm, seed) at the arm's tuned peak lr (from its tuning runs
    `tuned`); one passkey run per (arm, seed) where the size has them; one timed cost run
    (C31, alone) where the size has one; one relative-error run (float64 and float32 maths,
    whatever precision the models train in) where the size plans runs no rule grades."""
    size, seeds, precision = options.size, options.seeds, options.precision
    config = SIZES[size]
    lrs = arm_lrs(size, tuned)
    specs = []
    for seed in seeds:
        for arm in arms(size):
            payload = {"suite": "position", "kind": "train", "arm": arm,
                       "size_config": config.payload(),
                       "model": arm_config(size, arm).to_dict(),
                       "train": train_identity(train_config(options, seed, lrs[arm])),
                       "data": "stdlib",
                       "scalings": SCALINGS if arm == "rope" else None}
            specs.append(RunSpec(f"{arm} seed {seed}", arm, seed, payload,
                                 lambda progress, arm=arm, seed=seed:
                                 train_and_read(options, arm, seed, progress, lrs[arm])))
    if config.passkey:
        for seed in seeds:
            for arm in arms(size):
                payload = {"suite": "position", "kind": "passkey", "arm": arm,
                           "model": arm_config(size, arm).to_dict(), "L": config.L,
                           "mults": config.mults,
                           "passkey": dataclasses.asdict(config.passkey), "seed": seed}
                payload.update(added_identity(precision=precision))
                specs.append(RunSpec(f"passkey {arm} seed {seed}", f"passkey:{arm}", seed,
                                     payload, lambda progress, arm=arm, seed=seed:
                                     passkey_run(options, arm, seed, progress),
                                     reads_tuning=False))
    if config.cost is not None:
        payload = {"suite": "position", "kind": "cost",
                   "model": arm_config(size, "rope").to_dict(),
                   "schemes": COST_SCHEMES, "param_schemes": PARAM_SCHEMES,
                   "cost": dataclasses.asdict(config.cost),
                   "train": train_identity(train_config(options, 0)),
                   "realistic": dataclasses.asdict(REALISTIC_SHAPES[size])}
        specs.append(RunSpec("position cost (timed)", "cost", 0, payload,
                             lambda progress: time_position_cost(options, 0), timed=True,
                             reads_tuning=False))
    if graded_only(size):
        return specs
    payload = {"suite": "position", "kind": "relative_error",
               "shifts": RELATIVE_ERROR_SHIFTS, "dtypes": RELATIVE_ERROR_DTYPES}
    specs.append(RunSpec("rope relative-position error", "relative_error", 0, payload,
                         lambda progress: relative_error_run(), reads_tuning=False))
    return specs

