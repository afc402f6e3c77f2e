"""The `ffn` suite's RunSpecs: the tuning stage, each arm's chosen learning rate, the
evaluation runs (training, sensitivity, scale trend, timing) and the longer re-runs."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import added_identity, train_identity
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.base import Results, RunSpec, tuning_seeds
from blocklab.experiments.suites.ffn.configs import model_config, train_config
from blocklab.experiments.suites.ffn.runs import time_arms, train_arm
from blocklab.experiments.suites.ffn.sizes import ARMS, DATA, SIZES, TREND_ARMS, Size
from blocklab.experiments.suites.tuning import lr_trials, tune_arm, tune_arms
from blocklab.experiments.summaries import LrTrial


def _train_spec(kind: str, arm: str, size: Size, options: RunOptions, seed: int, lr: float,
                init: str, label: str, d_model: int | None = None) -> RunSpec:
    mc, tc = model_config(arm, size, d_model), train_config(size, options, seed, lr, init)
    payload = {"suite": "ffn", "kind": kind, "arm": arm, "model": mc.to_dict(),
               "train": train_identity(tc),
               "data": DATA, "probe": "zero_grad_fraction"}

    def execute(progress: Any) -> RunResult:
        return train_arm(mc, size, tc, progress, label)

    return RunSpec(label, arm, seed, payload, execute)


def _widths(size: Size) -> list[tuple[int, tuple[str, ...]]]:
    """(d_model, arms) of every width the size trains: its own with the size's arms, then
    each scale-trend width with the trend arms."""
    return [(size.d_model, size.arms), *((w, TREND_ARMS) for w in size.trend_widths)]


def tune(options: RunOptions, tuned: Results = ()) -> list[RunSpec]:
    """The tuning stage: every arm the size trains at every lr of its grid (the registered
    one, grown at an edge from the results `tuned` so far), on the tuning seeds, at every
    width the size trains."""
    size = SIZES[options.size]
    trials = lr_trials(tuned)
    return [_train_spec("tune", arm, size, options, seed, lr, size.init,
                        f"ffn tune {arm}" + ("" if d == size.d_model else f" d={d}")
                        + f" lr {lr:g} seed {seed}", d)
            for d, arms in _widths(size) for arm in arms
            for lr in tune_arm(size.lr_grid, trials, arm, d).grid
            for seed in tuning_seeds(options, size.tuning_seeds)]


def choose_lrs(size: Size, trials: list[LrTrial], d_model: int | None = None,
               arms: tuple[str, ...] = ARMS) -> dict[str, float]:
    """Each arm's lr at width `d_model` (default: the size's): the rate of its (grown) grid
    with the lowest mean final validation loss over the tuning seeds (`tuning.tune_arm`)."""
    d = size.d_model if d_model is None else d_model
    return {arm: t.lr for arm, t in tune_arms(size.lr_grid, trials, arms, d).items()}


def plan(options: RunOptions, tuned: Results) -> list[RunSpec]:
    """The evaluation runs: every arm of the size at its tuned lr on `seeds`, the sensitivity
    arms at the earlier shared settings, the scale-trend arms at their widths' tuned lrs, and
    one timing run (the last three at full only); every model trained in the options'
    precision."""
    size = SIZES[options.size]
    trials = lr_trials(tuned)
    return plan_at(options, choose_lrs(size, trials, arms=size.arms),
                   {w: choose_lrs(size, trials, w, TREND_ARMS) for w in size.trend_widths})


def longer(options: RunOptions, tuned: Results, arms: list[str]) -> list[RunSpec]:
    """`arms` at their tuned lrs on `seeds`, each trained twice as long (steps, warmup and the
    evaluation interval doubled): the check of a would-be contradiction of C16, whose parts
    compare an arm with ReLU at equal steps."""
    size = SIZES[options.size]
    lrs = choose_lrs(size, lr_trials(tuned), arms=size.arms)
    long = replace(size, steps=2 * size.steps, warmup_steps=2 * size.warmup_steps,
                   eval_every=2 * size.eval_every)
    return [_train_spec("train", arm, long, options, seed, lrs[arm], long.init,
                        f"ffn {arm} ×2 steps seed {seed}")
            for arm in arms if arm in lrs for seed in options.seeds]


def plan_at(options: RunOptions, lrs: dict[str, float],
            trend_lrs: dict[int, dict[str, float]] | None = None) -> list[RunSpec]:
    """`plan` with each arm's learning rate given (`trend_lrs`: per trend width; default the
    same as `lrs`)."""
    size, seeds = SIZES[options.size], options.seeds
    specs = [_train_spec("train", arm, size, options, seed, lrs[arm], size.init,
                         f"ffn {arm} seed {seed}") for arm in size.arms for seed in seeds]
    specs += [_train_spec("sensitivity", arm, size, options, seed, size.sensitivity_lr,
                          size.sensitivity_init,
                          f"ffn {arm} {size.sensitivity_init} lr {size.sensitivity_lr:g} "
                          f"seed {seed}")
              for arm in size.sensitivity_arms for seed in seeds]
    for d in size.trend_widths:
        chosen = (trend_lrs or {}).get(d, lrs)
        specs += [_train_spec("trend", arm, size, options, seed, chosen[arm], size.init,
                              f"ffn {arm} d={d} seed {seed}", d)
                  for arm in TREND_ARMS for seed in seeds]
    if not size.timing:
        return specs
    timing_payload = {"suite": "ffn", "kind": "timing", "arms": list(size.arms),
                      "models": [model_config(arm, size).to_dict() for arm in size.arms],
                      "batch_size": size.batch_size, "seq_len": size.seq_len,
                      "steps": size.timing_steps, "rounds": size.timing_rounds}
    timing_payload.update(added_identity(precision=options.precision))
    specs.append(RunSpec("ffn timing", "timing", 0, timing_payload,
                         lambda progress: time_arms(size, options, size.arms), timed=True,
                         reads_tuning=False))
    return specs
