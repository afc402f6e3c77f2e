"""The `ffn` suite's summary: statistics first (`stats`), then the tables and notes built from
them (`tables`)."""

from __future__ import annotations

from blocklab.experiments.options import RunOptions
from blocklab.experiments.suites.base import Results
from blocklab.experiments.suites.ffn.data import FfnData
from blocklab.experiments.suites.ffn.sizes import BASELINE, PAGE_GAIN_PCT, SIZES
from blocklab.experiments.suites.ffn.stats import (
    arm_stats,
    scale_trend,
    sensitivity_stats,
    size_record,
    sort_runs,
    unigram_entropy,
)
from blocklab.experiments.suites.ffn.tables import summary_notes, summary_tables
from blocklab.experiments.suites.tuning import lr_trials, tune_arms
from blocklab.experiments.summaries import Summary


def summarise(options: RunOptions, results: Results) -> Summary:
    """Per-arm statistics first (`arm_stats`, `sensitivity_stats`, `scale_trend`), then the
    tables and notes built from them."""
    size, seeds = SIZES[options.size], options.seeds
    runs = sort_runs(size, seeds, results)
    trials = lr_trials(runs.tuned)
    tunings = tune_arms(size.lr_grid, trials, size.arms, size.d_model)  # the arms it tuned
    arms = arm_stats(size, runs, {arm: t.lr for arm, t in tunings.items()})
    trend, trend_change = scale_trend(size, seeds, trials, arms, runs)
    timed = runs.timing.ms_per_step if runs.timing is not None else {}
    fastest = min(timed.values()) if timed else None
    data = FfnData(arms=arms, seeds=len(seeds), steps=size.steps, init=size.init,
                   lr_grid=sorted({lr for t in tunings.values() for lr in t.grid}),
                   lr_trials=trials,
                   lr_at_edge=[arm for arm, t in tunings.items() if not t.interior],
                   lr_tuning=list(tunings.values()),
                   sensitivity=sensitivity_stats(size, runs), trend=trend,
                   trend_change=trend_change, warmup_steps=size.warmup_steps,
                   unigram_entropy=unigram_entropy(runs), baseline=BASELINE,
                   page=dict(PAGE_GAIN_PCT),
                   equal_time_ms=None if fastest is None else fastest * size.steps,
                   size=size_record(size, options))
    return Summary("ffn", options.size, len(seeds), summary_tables(size, data),
                   summary_notes(size, data),
                   data, first_seed=seeds.start)
