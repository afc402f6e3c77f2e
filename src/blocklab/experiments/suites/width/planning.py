"""The `width` suite's RunSpecs: the tuning stage (the ordinary arm over the lr grid) and the
evaluation runs (every arm at that one tuned lr)."""

from __future__ import annotations

from typing import Any

from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import train_identity
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.base import Results, RunSpec, tuning_seeds
from blocklab.experiments.suites.tuning import lr_trials, tune_arm
from blocklab.experiments.suites.width.configs import model_config, train_config
from blocklab.experiments.suites.width.runs import train_arm
from blocklab.experiments.suites.width.sizes import ARMS, DATA, SIZES, TUNED_ARM, Size
from blocklab.experiments.summaries import ArmTuning, LrTrial


def read_widths(arm: str, size: Size) -> tuple[int, ...]:
    """The widths a run of `arm` is read at: every prefix width its model has."""
    return tuple(k for k in size.widths if k <= size.width_of(arm))


def _spec(kind: str, arm: str, size: Size, options: RunOptions, seed: int, lr: float,
          label: str) -> RunSpec:
    mc, tc = model_config(arm, size), train_config(arm, size, options, seed, lr)
    widths = read_widths(arm, size)
    payload = {"suite": "width", "kind": kind, "arm": arm, "model": mc.to_dict(),
               "train": train_identity(tc), "data": DATA, "read_widths": list(widths)}

    def execute(progress: Any) -> RunResult:
        return train_arm(mc, tc, widths, progress, label)

    return RunSpec(label, arm, seed, payload, execute)


def tune(options: RunOptions, tuned: Results = ()) -> list[RunSpec]:
    """The tuning stage: the ordinary arm at every lr of its grid (grown at an edge from the
    results `tuned` so far), on the tuning seeds."""
    size = SIZES[options.size]
    grid = tune_arm(size.lr_grid, lr_trials(tuned), TUNED_ARM, size.d_model).grid
    return [_spec("tune", TUNED_ARM, size, options, seed, lr,
                  f"width tune {TUNED_ARM} lr {lr:g} seed {seed}")
            for lr in grid for seed in tuning_seeds(options, size.tuning_seeds)]


def tuning(size: Size, trials: list[LrTrial]) -> ArmTuning:
    """The ordinary arm's tuning: its grid, the rate with the lowest mean final validation
    loss over the tuning seeds, and whether that rate is interior."""
    return tune_arm(size.lr_grid, trials, TUNED_ARM, size.d_model)


def plan(options: RunOptions, tuned: Results) -> list[RunSpec]:
    """Every arm at the ordinary arm's tuned lr on the options' seeds, in its precision."""
    size = SIZES[options.size]
    lr = tuning(size, lr_trials(tuned)).lr
    return [_spec("train", arm, size, options, seed, lr, f"width {arm} seed {seed}")
            for arm in ARMS for seed in options.seeds]
