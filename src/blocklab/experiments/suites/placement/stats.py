"""Every statistic of the placement summary (what the claims ledger reads), from its results
read once."""

from __future__ import annotations

from dataclasses import asdict

from blocklab.experiments.suites.placement.data import PlacementData, SlopePrediction
from blocklab.experiments.suites.placement.gradient_stats import gradient_summary
from blocklab.experiments.suites.placement.planning import tuned_lrs
from blocklab.experiments.suites.placement.sizes import (
    PREDICTED_SLOPE_LAST,
    XIONG,
    Size,
    arm_name,
)
from blocklab.experiments.suites.placement.stability_stats import (
    stability_arms,
    stability_effects,
)
from blocklab.experiments.suites.placement.stored import Stored
from blocklab.experiments.suites.placement.training_stats import (
    interaction_trend,
    placement_effects,
    training_summary,
)
from blocklab.experiments.suites.tuning import lr_trials


def statistics_of(size: Size, seeds: range, stored: Stored) -> PlacementData:
    """Every statistic the summary shows (and the claims ledger reads), from the results read
    once (`stored_results`)."""
    training, sweep, deep = size.training, size.sweep, size.deep
    trials = lr_trials(stored.tuned)
    lrs = tuned_lrs(training, trials)
    return PlacementData(
        init_gradients=gradient_summary(size.probe, seeds, stored.probes),
        predictions=SlopePrediction(slope_last=dict(PREDICTED_SLOPE_LAST), init="xavier",
                                    source=XIONG),
        training=training_summary(training, seeds, stored.trained, lrs),
        effects=placement_effects(training, seeds, stored.trained, lrs),
        interaction_trend=interaction_trend(training, seeds, stored.trained),
        unigram_entropy=stored.unigram_entropy, seeds=len(seeds),
        steps=training.steps, size=asdict(size), lr_trials=trials,
        lr_tuning=[lrs[arm_name(*a)] for a in training.arms()],
        stability=(stability_arms(sweep, "sweep", seeds, stored.swept)
                   + stability_arms(deep, "deep", seeds, stored.swept)),
        stability_effects=(stability_effects(sweep, "sweep", seeds, stored.swept)
                           + stability_effects(deep, "deep", seeds, stored.swept)))
