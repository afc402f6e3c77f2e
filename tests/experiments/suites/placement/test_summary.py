"""The placement suite's summary (`placement.summary`): the log-log slope, part (a)'s, (b)'s
and the stability statistics by hand, and the tiny grids end to end."""

import json
import math
from dataclasses import replace

import pytest

from blocklab.experiments.run_result import Curves, LayerGradNorms, RunResult
from blocklab.experiments.suites import load_summary
from blocklab.experiments.suites.placement import runs, summary
from blocklab.experiments.suites.placement.runs import SweepRung, bisect_stable
from blocklab.experiments.suites.tuning import trains
from blocklab.experiments.summaries import ArmTuning, Interval
from blocklab.jsonio import decode

from ..conftest import final_metrics


def test_loglog_slope_by_hand():
    depths = [2, 4, 8, 16, 32]
    assert summary.loglog_slope(depths, [3.0 * d ** -0.5 for d in depths]) == \
        pytest.approx(-0.5, abs=1e-12)
    assert summary.loglog_slope(depths, [0.7] * 5) == pytest.approx(0.0, abs=1e-12)
    assert summary.loglog_slope([1, 10], [1.0, 100.0]) == pytest.approx(2.0)
    # Least squares, not end points: log y = 0, 1, 0 at log x = 0, 1, 2 fits slope 0.
    e = math.e
    assert summary.loglog_slope([1, e, e * e], [1.0, e, 1.0]) == pytest.approx(0.0, abs=1e-12)
    assert summary.loglog_slope([2], [1.0]) is None
    assert summary.loglog_slope([2, 4], [1.0, None]) is None


def test_gradient_summary_reads_sensitivity_and_jacobians_per_seed():
    probe = runs.Probe(d_model=8, n_heads=2, depths=(2, 3), seq_len=8, batch_size=1,
                            placements=("pre",), inits=("gpt2",))

    def run(depth: int, seed: int) -> runs.ProbeRecord:
        scale = 1 + seed  # seeds differ by a factor: log2 spreads of 1 and 2 at depth 3
        deepest = depth == 3
        return runs.ProbeRecord(
            placement="pre", init="gpt2", depth=depth, seed=seed, loss=5.5,
            down_proj_grad=[1.0] * depth, layer_grad=[1.0] * depth, residual_rms=[1.0] * depth,
            sensitivity=[1.0, 1.0, float(2 * scale), 100.0][:depth] + [100.0],
            identity_deviation=[9.0, 0.1 * scale, 0.2 * scale] if deepest else None,
            jacobian_gain=[9.0, 1.0, 1.1] if deepest else None, jacobian_s=0.0)

    probes = {("pre", "gpt2", d, s): run(d, s) for d in (2, 3) for s in (0, 1)}
    got = summary.gradient_summary(probe, range(2), probes)["pre"]["gpt2"]
    # the final norm's input (100) is no layer's and stays out of the spread
    assert got.sensitivity_spread_log2["3"].mean == pytest.approx(1.5)
    assert got.sensitivity_spread_log2["3"].n == 2
    assert got.sensitivity_spread_log2["2"].mean == pytest.approx(0.0)
    # without layer 0 (the embedding's input): layers 1 … 2 at depth 3 give 1 and 2·scale
    assert got.sensitivity_spread_past_embedding_log2["3"].mean == pytest.approx(1.5)
    assert got.sensitivity_spread_past_embedding_log2["2"].n == 0  # one layer: no spread
    assert got.per_layer_sensitivity["3"] == pytest.approx([1.0, 1.0, 3.0, 100.0])
    assert got.jacobian_depth == 3
    assert got.identity_deviation == pytest.approx([9.0, 0.15, 0.3])
    # per seed the median over layers (0.2, then 0.4), then over seeds
    assert got.identity_deviation_median.mean == pytest.approx(0.3)
    assert got.jacobian_gain_median.mean == pytest.approx(1.1)


def test_tiny_suite_end_to_end(tiny_runs):
    summarised = load_summary(tiny_runs, "placement", "tiny")
    size = runs.SIZES["tiny"]
    n_probe = len(size.probe.placements) * len(size.probe.inits) * len(size.probe.depths)
    n_train = len(size.training.arms())
    n_sweep = len(size.sweep.arms()) + len(size.deep.arms())
    assert summarised.runs == n_probe + n_train + n_sweep
    first = summarised.tables[0]  # a column per probed depth
    assert first.columns[2:-2] == [f"L={d}" for d in size.probe.depths]
    train_table = next(t for t in summarised.tables if t.title.startswith("Training"))
    assert len(train_table.rows) == n_train

    data = summarised.data
    for kind in size.probe.placements:
        for init in size.probe.inits:
            entry = data.init_gradients[kind][init]
            assert entry.depths == list(size.probe.depths)
            assert all(g > 0 for g in entry.last_layer_grad + entry.first_layer_grad)
            assert isinstance(entry.slope_last, float)
    assert data.predictions.slope_last == {"post": 0.0, "pre": -0.5}
    # every arm tuned: nothing trains in 5 tiny steps, so each best is the grid's smallest lr,
    # the grid grew there once (tiny's cap) and the optimum is recorded as at the edge
    assert [t.arm for t in data.lr_tuning] == [runs.arm_name(*a)
                                               for a in size.training.arms()]
    assert all(t.extended == 1 and not t.interior for t in data.lr_tuning)
    for row, tuning in zip(data.training, data.lr_tuning, strict=True):
        assert row.runs == 1 and row.lr == tuning.lr
        assert (row.delta_vs_pre is None) == (row.placement == "pre")
        assert row.grad_first_over_last_log2.n == 1  # logged during training, every step
        assert row.lr_area == pytest.approx(runs.lr_area(size.training, row.warmup, row.lr))
    (effect,) = data.effects  # one depth, one non-zero warmup
    assert effect.warmup_interaction.n == 1 and effect.warmup == 2
    assert set(effect.lrs) == {"pre cold", "pre warm", "post cold", "post warm"}
    assert data.interaction_trend.n == 0  # one depth: no trend
    # the sweeps: one arm per placement × swept warmup; nothing trains in 5 steps, so every
    # seed is censored below the ladder after ⌈log2(rungs + 1)⌉ runs
    assert [(a.grid, a.placement, a.warmup) for a in data.stability] == [
        ("sweep", "pre", 0), ("sweep", "pre", 2), ("sweep", "post", 0), ("sweep", "post", 2),
        ("deep", "pre", 2), ("deep", "post", 2)]
    for arm in data.stability:
        assert arm.rungs == [-1] and arm.censored_low == 1
        assert sum(len(v) for v in arm.loss_at_lr.values()) == 2  # two bisection runs
    sweep, deep = data.stability_effects
    assert (sweep.grid, deep.grid) == ("sweep", "deep")
    # every pair censored at the ladder's foot says nothing about a difference: no seed counts
    assert sweep.warmup_interaction.n == deep.pre_vs_post_warm.n == 0
    assert deep.pre_cold_vs_warm == Interval(0)  # deep: warm arms only at tiny
    assert [len(t.rows) for t in summarised.tables[-2:]] == [len(data.stability), 2]
    # a sweep run is stored as before: its record's keys beside status and wall_time_s
    stored = [json.loads(p.read_text()) for p in (tiny_runs / "placement" / "tiny").glob("*.json")]
    sweeps = [r for r in stored if "rung" in r]
    assert len(sweeps) == n_sweep
    for r in sweeps:
        assert set(r) == {"status", "wall_time_s", "placement", "depth", "warmup", "seed",
                          "rung", "ladder", "max_stable_lr", "trials", "unigram_entropy",
                          "provenance", "run"}
        assert [set(t) for t in r["trials"]] == [{"lr", "status", "val_loss", "trains"}] * 2
        record = decode(runs.StableLr, RunResult.from_dict(r).extra)
        assert record.rung == -1 and record.max_stable_lr is None
        # bisection on 3 rungs: the middle fails, then the foot
        assert [t.lr for t in record.trials] == [record.ladder[1], record.ladder[0]]
        assert not any(t.trains for t in record.trials)
        assert record.unigram_entropy == pytest.approx(data.unigram_entropy)


def _run(vals, layers=None, steps=None, status="ok"):
    return RunResult(status=status, final=final_metrics(vals[-1]),
                     curves=Curves(val={"16": vals}, layer_grad_norms=LayerGradNorms(
                         step=steps or [], layer=layers or [])))


def test_loss_curve_area_and_gradient_ratio_by_hand():
    assert summary.val_auc(_run([3.0, 2.0, 1.0]), 16) == pytest.approx(2.0)
    assert summary.val_auc(_run([3.0, 2.0], status="diverged"), 16) is None
    # Steps before warmup are left out: log2(4/1) = 2 at step 5, log2(1/2) = -1 at step 10.
    run = _run([2.0], layers=[[9.0, 9.0, 0.1], [4.0, 2.0, 1.0], [1.0, 5.0, 2.0]],
               steps=[0, 5, 10])
    assert summary.first_over_last_log2(run, warmup=5) == pytest.approx(0.5)
    assert summary.first_over_last_log2(run, warmup=11) is None
    assert summary._spread_log2([1.0, 8.0, 2.0]) == pytest.approx(3.0)


def _training(depths=(12,), placements=("pre", "post")):
    return replace(runs.SIZES["tiny"].training, depths=depths, warmups=(0, 100),
                   placements=placements, deepest_only=("sandwich",))


def _lrs(training):
    return {runs.arm_name(*a): ArmTuning(runs.arm_name(*a), (1e-3, 3e-3), 3e-3,
                                              True, 0) for a in training.arms()}


def test_warmup_interaction_by_hand():
    training = _training()
    # seed 0: post cold 3.0, warm 2.0; pre cold 2.2, warm 2.0 -> (1.0) - (0.2) = 0.8
    # seed 1: post cold 2.9, warm 2.1; pre cold 2.0, warm 2.1 -> (0.8) - (-0.1) = 0.9
    losses = {("post", 0): (3.0, 2.9), ("post", 100): (2.0, 2.1),
              ("pre", 0): (2.2, 2.0), ("pre", 100): (2.0, 2.1)}
    trained = {(p, 12, w, seed): _run([v[seed]])
               for (p, w), v in losses.items() for seed in (0, 1)}
    (effect,) = summary.placement_effects(training, range(2), trained, _lrs(training))
    assert effect.warmup_interaction.mean == pytest.approx(0.85)
    assert effect.warmup_interaction.n == 2
    assert effect.pre_warmup_effect.mean == pytest.approx(0.05)
    assert effect.post_vs_pre_warm.mean == pytest.approx(0.0)
    # A failed run drops its seed from the interaction, not into it.
    trained[("post", 12, 0, 1)] = _run([9.9], status="diverged")
    (effect,) = summary.placement_effects(training, range(2), trained, _lrs(training))
    assert effect.warmup_interaction.n == 1
    assert effect.warmup_interaction.mean == pytest.approx(0.8)


def test_depth_trend_of_the_interaction_and_a_placement_kept_to_the_deepest_depth():
    training = _training(depths=(6, 12), placements=("pre", "post", "sandwich"))
    assert training.cells() == [("pre", 6), ("pre", 12), ("post", 6), ("post", 12),
                                ("sandwich", 12)]
    # Interaction 0.1 at depth 6 and 0.5 at depth 12 on seed 0; 0.2 and 0.4 on seed 1.
    post_cold = {(6, 0): 2.1, (6, 1): 2.2, (12, 0): 2.5, (12, 1): 2.4}
    trained = {}
    for (depth, seed), cold in post_cold.items():
        trained[("post", depth, 0, seed)] = _run([cold])
        for p, w in (("post", 100), ("pre", 0), ("pre", 100)):
            trained[(p, depth, w, seed)] = _run([2.0])
    trend = summary.interaction_trend(training, range(2), trained)
    assert trend.mean == pytest.approx(0.3) and trend.n == 2


def _stable(p, w, seed, rung, trials=()):
    """A quick sweep's record of a seed stable up to `rung` (-1: stable nowhere)."""
    sweep = runs.SIZES["quick"].sweep
    ladder = sweep.ladder()
    return runs.StableLr(placement=p, depth=sweep.depths[0], warmup=w, seed=seed, rung=rung,
                         ladder=ladder, max_stable_lr=ladder[rung] if rung >= 0 else None,
                         trials=list(trials), unigram_entropy=3.3)


def test_stability_contrasts_by_hand():
    sweep = runs.SIZES["quick"].sweep
    # quick's ladder climbs in doublings from 0.001: a rung is one doubling
    assert sweep.step == 2 and sweep.ladder()[2] == 0.004
    h = 1.0
    depth = sweep.depths[0]
    # rungs per seed: pre cold 4, 5; pre warm 5, 5; post cold 1, 0; post warm 3, 4
    rungs = {("pre", 0): (4, 5), ("pre", sweep.warmup): (5, 5), ("post", 0): (1, 0),
             ("post", sweep.warmup): (3, 4)}
    swept = {("sweep", p, depth, w, seed): _stable(p, w, seed, r[seed])
             for (p, w), r in rungs.items() for seed in (0, 1)}
    (effect,) = summary.stability_effects(sweep, "sweep", range(2), swept)
    assert effect.pre_cold_vs_warm.mean == pytest.approx(-0.5 * h)  # (−1 + 0) / 2 rungs
    assert effect.post_warm_vs_cold.mean == pytest.approx(3.0 * h)  # (2 + 4) / 2
    assert effect.warmup_interaction.mean == pytest.approx(2.5 * h)  # ((2 − 1) + (4 − 0)) / 2
    assert effect.pre_vs_post_warm.mean == pytest.approx(1.5 * h)
    assert effect.pre_vs_post_cold.mean == pytest.approx(4.0 * h)
    arms = summary.stability_arms(sweep, "sweep", range(2), swept)
    post_cold = next(a for a in arms if (a.placement, a.warmup) == ("post", 0))
    assert post_cold.max_stable_lr == pytest.approx(sweep.lr_min * 2 ** (0.5 * h))
    # both arms of a pair censored at the same end of the ladder: that seed drops out
    top = sweep.rungs - 1
    for p, w, seed, rung in (("pre", sweep.warmup, 0, top), ("post", sweep.warmup, 0, top),
                             ("pre", 0, 1, -1), ("post", 0, 1, -1)):
        swept[("sweep", p, depth, w, seed)] = _stable(p, w, seed, rung)
    (effect,) = summary.stability_effects(sweep, "sweep", range(2), swept)
    warm, cold = effect.pre_vs_post_warm, effect.pre_vs_post_cold
    assert warm.n == 1 and warm.mean == pytest.approx(1.0 * h)  # seed 1
    assert cold.n == 1 and cold.mean == pytest.approx(3.0 * h)  # seed 0
    # within a placement no pair is censored at one end: (6 − 1) − (6 − 4) and (4 + 1) − (5 + 1)
    interaction = effect.warmup_interaction
    assert interaction.n == 2 and interaction.mean == pytest.approx(1.0 * h)


def test_a_stability_sweep_does_not_call_a_rate_that_did_not_learn_stable():
    """A rate at which a run only avoids diverging is not stable: a seed whose lowest rung did
    not learn is stable nowhere and counted as learned nowhere; one whose lowest rung diverged
    is stable nowhere too, but that is an instability, and data."""
    sweep = runs.SIZES["quick"].sweep
    ladder, depth = sweep.ladder(), sweep.depths[0]
    flat = _run([3.22], status="did_not_learn")  # at the unigram's loss, never diverged
    assert not trains(flat)
    rung, trials = bisect_stable(ladder, lambda lr: (trains(flat), SweepRung(
        lr=lr, status=flat.status, val_loss=3.22, trains=False)))
    assert rung == -1 and trials[-1].lr == ladder[0]

    swept = {("sweep", "post", depth, 0, seed): _stable(
        "post", 0, seed, -1, [SweepRung(ladder[0], status, None, False)])
        for seed, status in enumerate(("did_not_learn", "diverged"))}
    arms = summary.stability_arms(sweep, "sweep", range(2), swept)
    post_cold = next(a for a in arms if (a.placement, a.warmup) == ("post", 0))
    assert (post_cold.censored_low, post_cold.unlearned_low) == (2, 1)
