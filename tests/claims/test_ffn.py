"""C16 (`blocklab.claims.ffn`): verdicts from fabricated ffn summaries."""

import dataclasses

import pytest

from blocklab.experiments.suites.ffn.summary import FfnArm, FfnData, FfnSensitivity, FfnTrendPoint
from blocklab.experiments.summaries import ArmTuning, Interval, LrTrial

from .conftest import ci, graded, store_summary


def _ffn_arm(rel: Interval) -> FfnArm:
    loss = ci(2.0, 1.9, 2.1)
    return FfnArm(gated=True, activation="silu", d_ff=171, params=1000, val_loss=loss,
                  val_bpb=loss, delta_vs_relu=rel, rel_delta_pct=rel, ms_per_step=None,
                  ms_per_step_train=None, val_loss_equal_time=loss,
                  delta_vs_relu_equal_time=rel, equal_time_step=None, status={"ok": 3},
                  counted=3, zero_grad_fraction={"init": 0.0, "final": None}, lr=3e-3)


def _ffn_data(swiglu, geglu, glu, lr_at_edge=(), tuned=("relu", "swiglu", "geglu", "glu"),
              curves=None) -> FfnData:
    arms = {name: _ffn_arm(rel)
            for name, rel in (("relu", Interval(0)), ("swiglu", swiglu), ("geglu", geglu),
                              ("glu", glu))}
    grid = (3e-3, 1e-2, 3e-2)
    tuning = [ArmTuning(arm, grid, 1e-2 if arm not in lr_at_edge else 3e-2,
                        arm not in lr_at_edge, 0) for arm in tuned]
    # one tuning seed per rate, symmetric in log lr about the chosen 1e-2: no lr bias
    trials = [LrTrial(arm, lr, 0, "ok", loss, 64) for arm in tuned
              for lr, loss in zip(grid, (curves or {}).get(arm, (2.1, 2.0, 2.1)), strict=True)]
    return FfnData(arms=arms, seeds=10, steps=100, init="fan_in", lr_grid=list(grid),
                   lr_trials=trials, lr_at_edge=list(lr_at_edge),
                   sensitivity=FfnSensitivity("gpt2", 3e-3, {}, {}), trend=[],
                   trend_change=Interval(0), warmup_steps=10, unigram_entropy=None,
                   baseline="relu", page={}, equal_time_ms=None, size={"d_model": 64},
                   lr_tuning=tuning)


@pytest.mark.parametrize(("longer", "verdict"), [
    (None, "would be contradicted"),  # no longer run yet
    (ci(1.4, 1.1, 1.7), "contradicted-at-this-scale"),  # twice as long agrees
    (ci(0.3, -0.2, 0.8), "would be contradicted"),  # twice as long does not
])
def test_c16_is_contradicted_only_when_a_run_twice_as_long_agrees(tmp_path, longer, verdict):
    worse, fine = ci(1.5, 1.2, 1.8), ci(-1.5, -2.0, -1.0)
    if longer is not None:
        store_summary(tmp_path, "ffn", _ffn_data(longer, fine, fine), 10, folder="quick+x2")
    row = graded(tmp_path, "ffn", _ffn_data(worse, fine, fine), "C16")["C16"]
    swiglu = row.parts[0]
    if verdict == "contradicted-at-this-scale":
        assert swiglu.verdict == verdict and row.verdict == verdict
    else:
        assert swiglu.verdict == "not-reproduced-at-this-scale"
        assert swiglu.reason.startswith(verdict) and swiglu.decision.would_contradict
    # unfair arms (not tuned, or SwiGLU's or ReLU's best lr still at the grid's edge, where a
    # better one may lie beyond it): never contradicted, whatever the longer run says, and no
    # longer run is due
    for unfair in ({"tuned": ()}, {"lr_at_edge": ("swiglu",)}, {"lr_at_edge": ("relu",)}):
        row = graded(tmp_path, "ffn", _ffn_data(worse, fine, fine, **unfair), "C16")["C16"]
        assert row.parts[0].verdict == "not-reproduced-at-this-scale"
        assert not row.parts[0].decision.would_contradict
        assert "each arm at its own best learning rate" in row.parts[0].reason


@pytest.mark.parametrize(("swiglu", "geglu", "glu", "verdict", "parts"), [
    # Every gain wholly beyond the low end of the page's (SwiGLU 1%, GeGLU 1%, GLU 0.5%) even
    # at Holm's levels: confirmed.
    (ci(-2.0, -2.4, -1.6, 10), ci(-1.6, -1.9, -1.3, 10), ci(-0.9, -1.1, -0.7, 10), "confirmed",
     ["confirmed"] * 3),
    # GeGLU's and GLU's intervals reach their boundaries: they are undecided, and so is the
    # claim (deciding them could make it confirmed or mixed).
    (ci(-2.0, -2.4, -1.6, 10), ci(-1.0, -1.5, -0.5, 10), ci(-0.5, -1.0, -0.1, 10),
     "inconclusive", ["confirmed", "inconclusive", "inconclusive"]),
    # A 1.5% gain whose interval reaches 0.6%: beyond δ = 0.5%, but not beyond the low end of
    # SwiGLU's "about 1–2%": undecided, never confirmed.
    (ci(-1.5, -2.0, -1.0, 10), ci(-1.6, -1.9, -1.3, 10), ci(-0.9, -1.1, -0.7, 10),
     "inconclusive", ["inconclusive", "confirmed", "confirmed"]),
    # Worse than ReLU with every arm at one lr: not reproduced, never refuted; GeGLU's interval
    # holds both its claim and no effect (inconclusive), but SwiGLU settles the claim.
    (ci(1.5, 1.0, 2.0, 10), ci(0.2, -1.0, 1.0, 10), ci(0.1, -0.2, 0.2, 10),
     "not-reproduced-at-this-scale",
     ["not-reproduced-at-this-scale", "inconclusive", "not-reproduced-at-this-scale"]),
    (ci(-2.0, -2.4, -1.6, 10), ci(0.2, 0.1, 0.3, 10), ci(-0.9, -1.1, -0.7, 10), "mixed",
     ["confirmed", "not-reproduced-at-this-scale", "confirmed"]),
    # An undecided part is never dropped: SwiGLU confirmed, GeGLU unclear, GLU confirmed.
    (ci(-2.0, -2.4, -1.6, 10), ci(0.2, -1.0, 1.0, 10), ci(-0.9, -1.1, -0.7, 10), "inconclusive",
     ["confirmed", "inconclusive", "confirmed"]),
    # Two seeds, however narrow the interval: the rule needs five.
    (ci(1.67, 1.61, 1.72, 2), ci(-1.0, -1.5, -0.5, 2), ci(-0.5, -1.0, -0.1, 2),
     "inconclusive", ["inconclusive"] * 3),
])
def test_ffn_verdict_logic(tmp_path, swiglu, geglu, glu, verdict, parts):
    # every arm tuned to an interior rate whose curve is symmetric about it: fair arms
    row = graded(tmp_path, "ffn", _ffn_data(swiglu, geglu, glu), "C16")["C16"]
    assert row.verdict == verdict and row.error is None
    assert [p.verdict for p in row.parts] == parts
    assert [p.name for p in row.parts] == ["swiglu", "geglu", "glu"]
    # the JSON row (its rules and hashes: test_registry)
    shown = row.to_dict()
    assert shown["estimate"] == {"value": swiglu.mean, "ci_low": swiglu.ci_low,
                                 "ci_high": swiglu.ci_high, "n": swiglu.n, "sd": None}
    for part, found in zip(shown["parts"], row.parts, strict=True):
        assert part["decision"] == found.verdict
        assert part["looks"] == ([5, 8, 10] if found.estimate.n == 10 else [found.estimate.n])
        assert ("seeds_needed" in part) == (found.verdict == "inconclusive")
    if verdict in ("confirmed", "mixed", "not-reproduced-at-this-scale"):
        assert "Reached at this scale: d_model 64" in row.summary
    # Intervals reach the ledger's JSON as plain objects with the same keys as always.
    assert row.evidence["arms"]["swiglu"]["rel_delta_pct"] == {
        "n": swiglu.n, "mean": swiglu.mean, "ci_low": swiglu.ci_low, "ci_high": swiglu.ci_high,
        "sd": None}
    assert row.evidence["seeds"] == 10 and "d=64" in row.summary


@pytest.mark.parametrize(("change", "word"), [
    (ci(-2.0, -3.0, -1.0, 5), "grows"), (ci(2.0, 1.0, 3.0, 5), "shrinks"),
    (ci(0.5, -1.0, 2.0, 5), "shows no resolved trend"), (Interval(0), "shows no resolved trend"),
])
def test_c16_says_whether_swiglus_effect_grows_with_model_size(tmp_path, change, word):
    trend = [FfnTrendPoint(d, 1000 * d, ci(-1.0, -2.0, 0.0, 5), {"relu": 1e-2, "swiglu": 1e-2})
             for d in (32, 64)]
    gain = ci(-1.0, -2.0, 0.5, 5)
    data = dataclasses.replace(_ffn_data(gain, gain, gain), trend=trend, trend_change=change)
    row = graded(tmp_path, "ffn", data, "C16")["C16"]
    assert f"the advantage {word} with size here" in row.summary
    assert [p["d_model"] for p in row.evidence["trend"]] == [32, 64]


def test_c16_counts_the_runs_that_failed_beside_each_decision(tmp_path):
    """Each part counts its arm's and ReLU's failed runs; a never-made run is no failure."""
    fine = ci(-1.5, -2.0, -1.0)
    data = _ffn_data(fine, fine, fine)
    arms = dict(data.arms)
    arms["swiglu"] = dataclasses.replace(arms["swiglu"], status={"ok": 3, "diverged": 2})
    arms["relu"] = dataclasses.replace(arms["relu"], status={"ok": 4, "stuck": 1})
    arms["glu"] = dataclasses.replace(arms["glu"], status={"ok": 3, "missing": 2})
    row = graded(tmp_path, "ffn", dataclasses.replace(data, arms=arms), "C16")["C16"]
    parts = {p.name: p for p in row.parts}
    assert ("3 run(s) failed (diverged, stuck or did not learn: swiglu 2, relu 1)"
            in parts["swiglu"].reason)
    assert "1 run(s) failed (diverged, stuck or did not learn: relu 1)" in parts["geglu"].reason
    assert "1 run(s) failed (diverged, stuck or did not learn: relu 1)" in parts["glu"].reason
    assert "glu 2" not in parts["glu"].reason  # two runs never made: not failures


def test_c16_decides_a_gain_only_where_every_reading_of_the_lr_bias_agrees(tmp_path):
    """ReLU's lopsided curve makes each gap ~2 points better: SwiGLU's and GeGLU's 3% gains
    straddle 1% without it (inconclusive, both readings said); GLU's 4% is confirmed."""
    gain = ci(-3.0, -3.4, -2.6)  # better than ReLU by 3% on every reading
    row = graded(tmp_path, "ffn", _ffn_data(gain, gain, ci(-4.0, -4.4, -3.6),
                                            curves={"relu": (2.30, 2.00, 1.98)}), "C16")["C16"]
    parts = {p.name: p for p in row.parts}
    for arm in ("swiglu", "geglu"):
        assert parts[arm].verdict == "inconclusive"
        assert "read as measured it is confirmed, with the tuned rates' bias -2" in \
            parts[arm].reason and "removed inconclusive" in parts[arm].reason
    assert parts["glu"].verdict == "confirmed"
    assert "stands with the tuned rates' bias -2" in parts["glu"].reason
    assert "step-down stopped" not in parts["glu"].reason

    # a bias the other way only widens the gain: confirmed
    row = graded(tmp_path, "ffn", _ffn_data(gain, gain, gain,
                                            curves={"swiglu": (2.30, 2.00, 1.98)}), "C16")["C16"]
    assert [p.verdict for p in row.parts] == ["confirmed"] * 3
