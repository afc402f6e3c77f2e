"""C36 (deep stacks): verdicts from fabricated placement summaries, one scenario per outcome of
each registered rule, worked out by hand from the intervals below."""

import dataclasses
from pathlib import Path

import pytest

import blocklab.claims.depth  # noqa: F401 - registers C36 (the ledger imports it too)
from blocklab.claims.placement import stability_text
from blocklab.claims.registry import C36_IDENTITY_PART, C36_STABLE_PART
from blocklab.experiments.suites.placement.summary import (
    PlacementData,
    SlopePrediction,
    StabilityArm,
    StabilityEffect,
)
from blocklab.experiments.summaries import Interval

from .conftest import ci, graded

DEPTH = 50
LADDER = [2e-3 * 2 ** k for k in range(7)]


def _effect(pre_vs_post_warm: Interval, depth: int = DEPTH, grid: str = "deep"
            ) -> StabilityEffect:
    return StabilityEffect(grid=grid, depth=depth, warmup=20, pre_cold_vs_warm=Interval(0),
                           post_warm_vs_cold=Interval(0), warmup_interaction=Interval(0),
                           pre_vs_post_warm=pre_vs_post_warm, pre_vs_post_cold=Interval(0))


def _arm(placement: str, rungs: list[int], depth: int = DEPTH) -> StabilityArm:
    mean = sum(rungs) / len(rungs)
    return StabilityArm(grid="deep", placement=placement, depth=depth, warmup=20, steps=60,
                        ladder=LADDER, rungs=rungs, log2_max_stable=ci(mean, mean - 0.5,
                                                                       mean + 0.5, len(rungs)),
                        max_stable_lr=LADDER[0] * 2 ** mean,
                        censored_low=sum(k == -1 for k in rungs),
                        censored_high=sum(k == len(LADDER) - 1 for k in rungs),
                        loss_at_lr={"0.016": [2.9] * len(rungs)})


def _data(effects: list[StabilityEffect]) -> PlacementData:
    arms = [_arm(p, rungs, e.depth) for e in effects
            for p, rungs in (("pre", [4, 4, 5, 4]), ("post", [-1, 0, -1, -1]))]
    return PlacementData(
        init_gradients={}, predictions=SlopePrediction({}, "xavier", "test"), training=[],
        effects=[], interaction_trend=Interval(0), unigram_entropy=None, seeds=4, steps=300,
        size={"deep": {"d_model": 32, "steps": 60, "batch_size": 16, "seq_len": 32}},
        stability=arms, stability_effects=effects)


def _c36(root: Path, data: PlacementData):
    row = graded(root, "placement", data, "C36", seeds=4)["C36"]
    assert row.error is None, row.error
    return row


CONFIRMED, NOT_REPRODUCED, INCONCLUSIVE = ("confirmed", "not-reproduced-at-this-scale",
                                           "inconclusive")


@pytest.mark.parametrize(("effect", "unlearned", "verdict"), [
    # [+4.2, +5.3] doublings: wholly beyond δ = 1 on the claimed side
    (ci(4.8, 4.2, 5.3, 8), 0, CONFIRMED),
    # [−0.4, +0.4]: inside ±0.5, no effect (post-norm as stable as pre-norm)
    (ci(0.0, -0.4, 0.4, 8), 0, NOT_REPRODUCED),
    # [−0.5, +3.0]: holds both δ and no effect
    (ci(1.2, -0.5, 3.0, 8), 0, INCONCLUSIVE),
    # pre-norm stable at a lower lr than post-norm, by more than δ: one run length on a small
    # model, so not reproduced at this scale, never contradicted
    (ci(-3.0, -3.5, -2.5, 8), 0, NOT_REPRODUCED),
    # the confirmed interval, but post-norm's deep stack learned at no rate of the ladder on 3
    # of 4 seeds: a model that learned nothing measures no stability; on 1 of 4 (diverging at
    # the lowest rate is an instability, and data) it is graded
    (ci(4.8, 4.2, 5.3, 8), 3, "untestable-here"), (ci(4.8, 4.2, 5.3, 8), 1, CONFIRMED),
])
def test_c36_stability_part(tmp_path, effect, unlearned, verdict):
    data = _data([_effect(effect)])
    arms = [dataclasses.replace(a, unlearned_low=unlearned) if a.placement == "post" else a
            for a in data.stability]
    row = _c36(tmp_path, dataclasses.replace(data, stability=arms))
    stable = next(p for p in row.parts if p.name == C36_STABLE_PART)
    assert stable.verdict == verdict and stable.estimate.value == effect.mean
    assert "Largest stable peak lr" in row.summary and "pre warm" in row.summary
    assert row.evidence["table"]["rows"][0][0] == "pre"
    # the stability text names every arm with its interval and censored seeds
    text = stability_text(data, "deep", DEPTH)
    assert text.startswith("pre warm ") and "n=4" in text.split("; ")[0]
    assert "3 seed(s) stable nowhere" in text  # post-norm: three seeds below the ladder
    # the identity term reads the gradient probes, which this summary has none of
    identity = next(p for p in row.parts if p.name == C36_IDENTITY_PART)
    assert identity.verdict == INCONCLUSIVE and identity.estimate.n == 0
    if unlearned == 3:
        assert "post-norm with warmup (lr sweep) on 3 of 4 seeds" in stable.reason
        assert "did not learn" in stable.reason


def test_c36_grades_the_deepest_depth_of_the_deep_grid_or_is_untestable(tmp_path):
    data = _data([_effect(ci(0.0, -0.4, 0.4, 8), depth=48),
                  _effect(ci(4.8, 4.2, 5.3, 8), depth=64),
                  _effect(ci(0.0, -0.4, 0.4, 8), depth=12, grid="sweep")])
    row = _c36(tmp_path, data)
    assert row.parts[0].estimate.value == 4.8 and "Depth 64" in row.summary
    # without a deep sweep
    empty = dataclasses.replace(_data([]), stability=[], stability_effects=[])
    assert _c36(tmp_path, empty).verdict == "untestable-here"
