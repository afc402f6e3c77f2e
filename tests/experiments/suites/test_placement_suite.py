"""The placement suite: the log-log slope, the at-initialisation probe, the training grid's
settings, the deep grid (C36), and the tiny grids end to end."""

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


@pytest.mark.parametrize(("size", "cells"), [
    ("quick", [("pre", 12), ("post", 12)]),  # the contrast C13 and C19 grade, nothing else
    ("full", [("pre", 6), ("pre", 12), ("pre", 24), ("post", 6), ("post", 12), ("post", 24),
              ("sandwich", 24)])])
def test_training_grid_turns_clipping_off_and_uses_xavier(size, cells):
    specs = [s for s in placement.plan(size, range(2)) if s.payload["kind"] == "train"]
    training = placement.SIZES[size].training
    assert len(specs) == len(training.cells()) * len(training.warmups) * len(training.lrs) * 2
    assert training.cells() == cells
    for spec in specs:
        assert spec.payload["train"]["grad_clip"] is None
        assert spec.payload["train"]["init"] == "xavier"
    cells = {(s.payload["model"]["placement"], s.payload["train"]["warmup_steps"]) for s in specs}
    warm = max(training.warmups)  # quick: over the first third of the run; full: 100 steps
    assert warm == (round(training.steps / 3) if size == "quick" else 100)
    assert {("pre", 0), ("post", 0), ("pre", warm), ("post", warm)} <= cells


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
    n_deep = len(size.deep.cells()) * len(size.deep.warmups) * len(size.deep.lrs)
    assert summary.runs == n_probe + n_train + n_deep
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
    # The deep grid: its own cells, one per placement × warmup, each with a profile whose
    # first entry is the cell's first/last gradient ratio and whose last entry is 0.
    (deep_depth,) = size.deep.depths
    assert [(c.placement, c.depth, c.warmup) for c in data.deep] == [
        (p, deep_depth, w) for p in size.deep.placements for w in size.deep.warmups]
    assert all(c.runs == 1 and c.failures == 0 for c in data.deep)
    for cell, profile in zip(data.deep, data.deep_profiles, strict=True):
        assert (profile.placement, profile.depth, profile.warmup) == (
            cell.placement, cell.depth, cell.warmup)
        assert len(profile.grad_log2_vs_last) == deep_depth
        assert profile.grad_log2_vs_last[-1] == 0.0
        assert profile.grad_log2_vs_last[0] == pytest.approx(
            cell.grad_first_over_last_log2.mean, abs=1e-12)
        # The spread over layers bounds any one layer's distance from the last.
        assert profile.spread_log2.mean >= max(abs(v) for v in profile.grad_log2_vs_last) - 1e-12
    (deep_effect,) = data.deep_effects
    assert deep_effect.depth == deep_depth and deep_effect.pre_vs_post_cold.n == 1
    assert data.deep_steps == size.deep.steps
    titles = [t.title for t in summary.tables]
    assert titles[-2:] == [f"Deep stacks (C36): training {size.deep.steps} steps, xavier init, "
                           "no gradient clipping", "Deep stacks (C36): contrasts paired by seed"]
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


def test_deep_grid_is_pre_and_post_at_48_layers_or_more_apart_from_the_main_grid():
    specs = placement.plan("quick", range(4))
    deep = [s for s in specs if s.payload["kind"] == "train_deep"]
    grid = placement.SIZES["quick"].deep
    assert min(grid.depths) >= 50 and set(grid.placements) == {"pre", "post"}
    assert 0 in grid.warmups and len(grid.warmups) == 2
    assert len(deep) == 2 * 2 * len(grid.depths) * 4  # placements × warmups × depths × seeds
    for spec in deep:
        assert spec.arm.startswith("deep/") and spec.payload["model"]["n_layers"] in grid.depths
        assert spec.payload["train"]["grad_clip"] is None
        assert spec.payload["train"]["init"] == "xavier"
    # The main grid's runs are not touched by the deep grid's: same payloads as before.
    main = [s for s in specs if s.payload["kind"] == "train"]
    assert all(s.arm.startswith("train/") for s in main)
    assert not {s.run_id for s in main} & {s.run_id for s in deep}
    full = placement.SIZES["full"].deep
    assert max(full.depths) >= 50  # the page's "50+ layers" at full size


def test_deep_runs_leave_the_c19_numbers_unchanged(tmp_path):
    from blocklab.experiments.results import ResultStore

    seeds = range(1)
    run_suite(get_suite("placement"), "tiny", 1, tmp_path, progress=False)
    store = ResultStore(tmp_path / "placement" / "tiny")
    results = [(spec, store.load(spec.run_id)) for spec in placement.plan("tiny", seeds)]
    with_deep = placement.summarise("tiny", seeds, results).data
    without = placement.summarise(
        "tiny", seeds, [(s, r) for s, r in results if s.payload["kind"] != "train_deep"]).data
    assert with_deep.training == without.training
    assert with_deep.effects == without.effects
    assert with_deep.interaction_trend == without.interaction_trend
    assert with_deep.deep and not any(c.status.get("ok") for c in without.deep)


def test_layer_profile_and_spread_during_training_by_hand():
    # Three layers, logged at steps 0, 5, 10; warmup 5 keeps steps 5 and 10.
    # step 5: [4, 2, 1] -> log2 vs last [2, 1, 0], spread log2(4/1) = 2
    # step 10: [1, 4, 2] -> log2 vs last [-1, 1, 0], spread log2(4/1) = 2
    run = _run([2.0], layers=[[9.0, 9.0, 0.1], [4.0, 2.0, 1.0], [1.0, 4.0, 2.0]],
               steps=[0, 5, 10])
    assert placement._layer_log2_vs_last(run, warmup=5) == pytest.approx([0.5, 1.0, 0.0])
    assert placement._layer_spread_during(run, warmup=5) == pytest.approx(2.0)
    # From step 0: step 0 adds [log2 90, log2 90, 0] and spread log2 90.
    l90 = math.log2(90.0)
    assert placement._layer_log2_vs_last(run, warmup=0) == pytest.approx(
        [(l90 + 2 - 1) / 3, (l90 + 1 + 1) / 3, 0.0])
    assert placement._layer_spread_during(run, warmup=0) == pytest.approx((l90 + 4) / 3)
    assert placement._layer_log2_vs_last(run, warmup=11) is None
    assert placement._layer_log2_vs_last(_run([2.0], status="diverged"), 0) is None
    # A step where a layer's norm is not finite is left out, not averaged in.
    bad = _run([2.0], layers=[[4.0, 2.0, 1.0], [float("nan"), 1.0, 1.0]], steps=[0, 1])
    assert placement._layer_log2_vs_last(bad, warmup=0) == pytest.approx([2.0, 1.0, 0.0])


def test_deep_contrasts_by_hand():
    deep = placement.Training(d_model=8, n_heads=1, depths=(2,), warmups=(0, 50), lrs=(3e-3,),
                              placements=("pre", "post"), seq_len=16, batch_size=2, steps=10,
                              stuck_patience=None, eval_every=0, eval_batches=1)
    # A two-layer stack stands for a deep one: one log after warmup, log2 first/last =
    # log2(a / b).
    # seed 0: pre cold 2.0, warm 2.1, post cold 2.5; ratios (warm) pre log2(2/1) = 1,
    #         post log2(1/8) = -3 -> post - pre = -4
    # seed 1: pre cold 2.2, warm 2.1, post cold 2.4; ratios pre log2(1/1) = 0,
    #         post log2(1/4) = -2 -> post - pre = -2
    def run(val, a=1.0, b=1.0):
        return _run([val], layers=[[a, b]], steps=[50])

    by_key = {("deep", "pre", 2, 0, 3e-3, 0): run(2.0), ("deep", "pre", 2, 0, 3e-3, 1): run(2.2),
              ("deep", "pre", 2, 50, 3e-3, 0): run(2.1, 2.0, 1.0),
              ("deep", "pre", 2, 50, 3e-3, 1): run(2.1, 1.0, 1.0),
              ("deep", "post", 2, 0, 3e-3, 0): run(2.5),
              ("deep", "post", 2, 0, 3e-3, 1): run(2.4),
              ("deep", "post", 2, 50, 3e-3, 0): run(2.3, 1.0, 8.0),
              ("deep", "post", 2, 50, 3e-3, 1): run(2.3, 1.0, 4.0)}
    (effect,) = placement._deep_effects(deep, range(2), by_key)
    assert (effect.depth, effect.warmup) == (2, 50)
    assert effect.pre_warmup_effect.mean == pytest.approx(0.0)  # (-0.1 + 0.1) / 2
    assert effect.pre_vs_post_cold.mean == pytest.approx(-0.35)  # (-0.5 - 0.2) / 2
    assert effect.pre_grad_first_over_last_log2.mean == pytest.approx(0.5)
    assert effect.post_minus_pre_grad_log2.mean == pytest.approx(-3.0)
    # Half-width t · sd / √2 with sd = √2 (values -4, -2), so t itself; with one degree of
    # freedom t is Cauchy's quantile, tan(π · 0.475) = 12.7062 (the suite's table: 3 decimals).
    t975 = math.tan(math.pi * 0.475)
    assert effect.post_minus_pre_grad_log2.ci_high == pytest.approx(-3.0 + t975, abs=1e-3)
    # A diverged post run drops its seed from the pairs it is in, and only from those.
    by_key[("deep", "post", 2, 0, 3e-3, 1)] = _run([9.9], status="diverged")
    (effect,) = placement._deep_effects(deep, range(2), by_key)
    assert effect.pre_vs_post_cold.n == 1 and effect.pre_vs_post_cold.mean == pytest.approx(-0.5)
    assert effect.post_minus_pre_grad_log2.n == 2
    (profile,) = [p for p in placement._deep_profiles(deep, range(2), by_key)
                  if (p.placement, p.warmup) == ("post", 50)]
    assert profile.grad_log2_vs_last == pytest.approx([-2.5, 0.0])  # (-3 - 2) / 2
