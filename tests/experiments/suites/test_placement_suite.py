"""The placement suite: the log-log slope, the at-initialisation probe, the training grid's
settings, and the tiny grid end to end."""

import math

import pytest

from blocklab.experiments.suites import get_suite, placement, run_suite


def test_loglog_slope_by_hand():
    depths = [2, 4, 8, 16, 32]
    assert placement.loglog_slope(depths, [3.0 * d ** -0.5 for d in depths]) == \
        pytest.approx(-0.5, abs=1e-12)
    assert placement.loglog_slope(depths, [0.7] * 5) == pytest.approx(0.0, abs=1e-12)
    assert placement.loglog_slope([1, 10], [1.0, 100.0]) == pytest.approx(2.0)
    # Least squares, not end points: log y = 0, 1, 0 at log x = 0, 1, 2 fits slope 0.
    e = math.e
    assert placement.loglog_slope([1, e, e * e], [1.0, e, 1.0]) == pytest.approx(0.0, abs=1e-12)
    assert placement.loglog_slope([2], [1.0]) is None
    assert placement.loglog_slope([2, 4], [1.0, None]) is None


def test_probe_measures_every_layer_and_post_norm_outputs_unit_rms():
    probe = placement.SIZES["tiny"].probe
    result = placement.init_gradients("post", "xavier", 3, 0, probe)
    assert result["status"] == "ok" and "wall_time_s" in result
    assert len(result["down_proj_grad"]) == len(result["residual_rms"]) == 3
    assert all(g > 0 for g in result["down_proj_grad"])
    # Closed form: RMSNorm with unit gain outputs RMS sqrt(m / (m + eps)) ≈ 1 for every row.
    assert result["residual_rms"] == pytest.approx([1.0] * 3, abs=1e-3)
    # The untrained model's loss is near the uniform guess ln 256.
    assert abs(result["loss"] - math.log(256)) < 0.5
    again = placement.init_gradients("post", "xavier", 3, 0, probe)
    assert again["down_proj_grad"] == result["down_proj_grad"]  # seeded


def test_xavier_pre_norm_last_layer_gradient_falls_with_depth_and_post_does_not():
    # The measurement the suite makes, at a small width: Xiong et al.'s direction of effect.
    probe = placement.Probe(d_model=32, n_heads=2, depths=(2, 8, 32), seq_len=16, batch_size=4)
    slopes = {}
    for kind in ("pre", "post"):
        grads = [placement.init_gradients(kind, "xavier", d, 0, probe)["down_proj_grad"][-1]
                 for d in probe.depths]
        slopes[kind] = placement.loglog_slope(list(probe.depths), grads)
    assert slopes["pre"] < -0.25
    assert abs(slopes["post"]) < 0.15


def test_training_grid_turns_clipping_off_and_uses_xavier():
    specs = [s for s in placement.plan("quick", range(2)) if s.payload["kind"] == "train"]
    training = placement.SIZES["quick"].training
    assert len(specs) == len(training.cells()) * len(training.warmups) * len(training.lrs) * 2
    assert len(training.cells()) == 5  # pre and post at depths 6 and 12, sandwich at 12
    for spec in specs:
        assert spec.payload["train"]["grad_clip"] is None
        assert spec.payload["train"]["init"] == "xavier"
    cells = {(s.payload["model"]["placement"], s.payload["train"]["warmup_steps"]) for s in specs}
    assert {("pre", 0), ("post", 0), ("pre", 100), ("post", 100)} <= cells


def test_run_ids_are_stable_and_distinct():
    first = [s.run_id for s in placement.plan("quick", range(2))]
    assert first == [s.run_id for s in placement.plan("quick", range(2))]
    assert len(set(first)) == len(first)


def test_tiny_suite_end_to_end(tmp_path):
    # With the progress bar, as `blocklab suite` runs it.
    summary = run_suite(get_suite("placement"), "tiny", 1, tmp_path, progress=True)
    size = placement.SIZES["tiny"]
    n_probe = len(size.probe.placements) * len(size.probe.inits) * len(size.probe.depths)
    n_train = len(size.training.placements) * len(size.training.warmups) * len(size.training.lrs)
    assert summary.runs == n_probe + n_train
    depth_columns = [f"L={d}" for d in size.probe.depths]
    tables = {t.title: t for t in summary.tables}
    assert tables["At initialisation: ‖∇W_down‖ of the LAST layer vs depth"].columns == [
        "placement", "init", *depth_columns, "slope [95% CI]", "Xiong et al. (xavier)"]
    assert tables["At initialisation: ‖∇W_down‖ of the FIRST layer vs depth"].columns == [
        "placement", "init", *depth_columns, "slope [95% CI]"]
    assert tables["At initialisation: RMS of the residual stream leaving the last layer"
                  ].columns == ["placement", "init", *depth_columns]
    train_table = next(t for t in summary.tables if t.title.startswith("Training"))
    assert train_table.columns == ["placement", "depth", "warmup", "lr",
                                   "failed/runs (div, stuck)", "val loss [95% CI]",
                                   "Δ vs pre [95% CI]", "mean val loss over training",
                                   "log2 ‖∇first‖/‖∇last‖ [95% CI]"]
    assert len(train_table.rows) == n_train

    data = summary.data
    for kind in size.probe.placements:
        for init in size.probe.inits:
            entry = data.init_gradients[kind][init]
            assert entry.depths == list(size.probe.depths)
            assert all(g > 0 for g in entry.last_layer_grad + entry.first_layer_grad)
            assert isinstance(entry.slope_last, float)
    assert data.predictions.slope_last == {"post": 0.0, "pre": -0.5}
    for row in data.training:
        assert row.runs == 1
        assert (row.delta_vs_pre is None) == (row.placement == "pre")
        assert row.grad_first_over_last_log2.n == 1  # logged during training, every step
    (effect,) = data.effects  # one depth, one lr, one non-zero warmup
    assert effect.warmup_interaction.n == 1 and effect.warmup == 2
    assert data.interaction_trend.n == 0  # one depth: no trend
    assert (tmp_path / "placement" / "tiny" / "summary.json").is_file()


def _run(vals, layers=None, steps=None, status="ok"):
    return {"status": status, "final": {"val_loss": vals[-1]},
            "curves": {"val": {"16": vals},
                       "layer_grad_norms": {"step": steps or [], "layer": layers or []}}}


def test_loss_curve_area_and_gradient_ratio_by_hand():
    assert placement._val_auc(_run([3.0, 2.0, 1.0]), 16) == pytest.approx(2.0)
    assert placement._val_auc(_run([3.0, 2.0], status="diverged"), 16) is None
    # Steps before warmup are left out: log2(4/1) = 2 at step 5, log2(1/2) = -1 at step 10.
    run = _run([2.0], layers=[[9.0, 9.0, 0.1], [4.0, 2.0, 1.0], [1.0, 5.0, 2.0]],
               steps=[0, 5, 10])
    assert placement._first_over_last_log2(run, warmup=5) == pytest.approx(0.5)
    assert placement._first_over_last_log2(run, warmup=11) is None
    assert placement._spread_log2([1.0, 8.0, 2.0]) == pytest.approx(3.0)


def test_warmup_interaction_by_hand():
    training = placement.Training(d_model=8, n_heads=1, depths=(12,), warmups=(0, 100),
                                  lrs=(3e-3,), placements=("pre", "post"), seq_len=16,
                                  batch_size=2, steps=10, stuck_patience=None, eval_every=0,
                                  eval_batches=1)
    # seed 0: post cold 3.0, warm 2.0; pre cold 2.2, warm 2.0 -> (1.0) - (0.2) = 0.8
    # seed 1: post cold 2.9, warm 2.1; pre cold 2.0, warm 2.1 -> (0.8) - (-0.1) = 0.9
    losses = {("post", 0): (3.0, 2.9), ("post", 100): (2.0, 2.1),
              ("pre", 0): (2.2, 2.0), ("pre", 100): (2.0, 2.1)}
    by_key = {("train", p, 12, w, 3e-3, seed): _run([v[seed]])
              for (p, w), v in losses.items() for seed in (0, 1)}
    (effect,) = placement._effects(training, range(2), by_key)
    assert effect.warmup_interaction.mean == pytest.approx(0.85)
    assert effect.warmup_interaction.n == 2
    assert effect.pre_warmup_effect.mean == pytest.approx(0.05)
    assert effect.post_vs_pre_warm.mean == pytest.approx(0.0)
    # A failed run drops its seed from the interaction, not into it.
    by_key[("train", "post", 12, 0, 3e-3, 1)] = _run([9.9], status="diverged")
    (effect,) = placement._effects(training, range(2), by_key)
    assert effect.warmup_interaction.n == 1
    assert effect.warmup_interaction.mean == pytest.approx(0.8)


def test_depth_trend_of_the_interaction_and_a_placement_kept_to_the_deepest_depth():
    training = placement.Training(d_model=8, n_heads=1, depths=(6, 12), warmups=(0, 100),
                                  lrs=(3e-3,), placements=("pre", "post", "sandwich"),
                                  seq_len=16, batch_size=2, steps=10, stuck_patience=None,
                                  eval_every=0, eval_batches=1, deepest_only=("sandwich",))
    assert training.cells() == [("pre", 6), ("pre", 12), ("post", 6), ("post", 12),
                                ("sandwich", 12)]
    # Interaction 0.1 at depth 6 and 0.5 at depth 12 on seed 0; 0.2 and 0.4 on seed 1.
    post_cold = {(6, 0): 2.1, (6, 1): 2.2, (12, 0): 2.5, (12, 1): 2.4}
    by_key = {}
    for (depth, seed), cold in post_cold.items():
        by_key[("train", "post", depth, 0, 3e-3, seed)] = _run([cold])
        for p, w in (("post", 100), ("pre", 0), ("pre", 100)):
            by_key[("train", p, depth, w, 3e-3, seed)] = _run([2.0])
    trend = placement.interaction_trend(training, range(2), by_key)
    assert trend.mean == pytest.approx(0.3) and trend.n == 2
