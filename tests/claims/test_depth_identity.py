"""C36 (b), "gradient ≈ 1": the block Jacobian's identity term read from the gradient probes
and decided by `registry.C36_IDENTITY_RULE`."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from blocklab.claims import depth, registry
from blocklab.claims.rules import Estimate, decide
from blocklab.experiments.suites.placement.summary import GradientProbe
from blocklab.experiments.summaries import Interval


def _probe(median: Interval) -> GradientProbe:
    return GradientProbe(
        depths=[2, 4], last_layer_grad=[1.0, 0.7], first_layer_grad=[1.0, 1.0],
        slope_last=-0.5, slope_first=0.0, slope_last_ci=Interval(0), slope_first_ci=Interval(0),
        residual_rms_last=[1.0, 1.0], per_layer_grad={"4": [1.0] * 4},
        layer_spread_log2={"4": Interval(0)}, jacobian_depth=4,
        identity_deviation=[50.0, 0.1, 0.1, 0.1], jacobian_gain=[50.0, 1.0, 1.0, 1.0],
        identity_deviation_median=median, jacobian_gain_median=Interval(4, 1.0, 0.99, 1.01))


def _data(grads: dict) -> SimpleNamespace:
    """The one field of `PlacementData` the estimates read (placement -> init -> probe)."""
    return SimpleNamespace(init_gradients=grads)


PRE = Interval(4, 0.105, 0.10, 0.11, 0.004)
POST = Interval(4, 0.55, 0.54, 0.56, 0.006)
GPT2 = Interval(4, 0.035, 0.034, 0.036, 0.001)
DATA = _data({"pre": {"xavier": _probe(PRE), "gpt2": _probe(GPT2)},
              "post": {"xavier": _probe(POST)}})


def test_identity_estimate_reads_the_registered_init_and_each_placement():
    assert registry.C36_IDENTITY_INIT == "xavier"
    assert depth.identity_estimate(DATA) == Estimate(0.105, 0.10, 0.11, 4, 0.004)
    assert depth.identity_estimate(DATA, "gpt2").value == 0.035
    assert depth.identity_estimate(DATA, placement="post") == Estimate(0.55, 0.54, 0.56, 4, 0.006)
    # No probe recorded (another init, a placement not probed): no interval, never a guess.
    assert depth.identity_estimate(DATA, "depth") == Estimate(None, None, None, 0)
    assert depth.identity_estimate(DATA, "gpt2", "post").n == 0


@pytest.mark.parametrize(("median", "verdict"), [
    (PRE, "confirmed"),  # 0.105 [0.10, 0.11]: wholly below 0.5, the identity dominates
    (POST, "not-reproduced-at-this-scale"),  # 0.55 [0.54, 0.56]: wholly above 0.5
    (Interval(4, 0.5, 0.3, 0.7, 0.1), "inconclusive"),  # straddles 0.5
    (Interval(1, 0.1), "inconclusive"),  # one seed: no interval
])
def test_the_identity_rule_decides_below_one_half(median, verdict):
    estimate = depth.identity_estimate(_data({"pre": {"xavier": _probe(median)}}))
    assert decide(registry.C36_IDENTITY_RULE, estimate).verdict == verdict
