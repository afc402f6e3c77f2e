"""The placement suite: the log-log slope, the at-initialisation probe, the training grid's
settings, the deep grid (C36), and the tiny grids end to end."""

import dataclasses
import json
import math

import pytest

from blocklab.experiments.options import RunOptions
from blocklab.experiments.run_result import (
    Curves,
    FinalMetrics,
    LayerGradNorms,
    RunResult,
)
from blocklab.experiments.suites import get_suite, placement, run_suite
from blocklab.experiments.suites.placement import (
    gradient_stats,
    outcomes,
    stability_stats,
    training_stats,
)
from blocklab.experiments.suites.tuning import rounded
from blocklab.experiments.summaries import Interval

OPTIONS = RunOptions("tiny", range(1))


def _final(val_loss: float | None, entropy: float = 3.3) -> FinalMetrics:
    return FinalMetrics(val_loss=val_loss, val_loss_se=None, val_windows=1, val_tokens=16,
                        val_loss_tail=val_loss, val_loss_tail_n=1, val_bpb=None,
                        val_loss_by_length={}, per_position_loss={}, train_loss=val_loss,
                        unigram_entropy=entropy, unigram_entropy_bpb=entropy / math.log(2),
                        params=100)


def _probe(result: RunResult) -> placement.ProbeRecord:
    assert result.status == "ok" and result.final is None  # a probe trains no model
    return placement.ProbeRecord.of(result)


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
    result = placement.init_gradients("post", "xavier", 3, 0, probe, OPTIONS)
    assert result.wall_time_s > 0
    record = _probe(result)
    assert (record.placement, record.init, record.depth, record.seed) == ("post", "xavier", 3, 0)
    assert len(record.down_proj_grad) == len(record.residual_rms) == len(record.layer_grad) == 3
    assert all(g > 0 for g in record.down_proj_grad)
    # Closed form: RMSNorm with unit gain outputs RMS sqrt(m / (m + eps)) ≈ 1 for every row.
    assert record.residual_rms == pytest.approx([1.0] * 3, abs=1e-3)
    # The untrained model's loss is near the uniform guess ln 256.
    assert abs(record.loss - math.log(256)) < 0.5
    again = _probe(placement.init_gradients("post", "xavier", 3, 0, probe, OPTIONS))
    assert again.down_proj_grad == record.down_proj_grad  # seeded
    # Stored as before: the record's keys beside status and wall_time_s, read back the same.
    stored = json.loads(json.dumps(result.to_dict()))
    assert set(stored) == {"status", "wall_time_s", "placement", "init", "depth", "seed",
                           "loss", "down_proj_grad", "layer_grad", "residual_rms",
                           "sensitivity", "identity_deviation", "jacobian_gain", "jacobian_s"}
    assert placement.ProbeRecord.of(RunResult.from_dict(stored)) == record


def test_xavier_pre_norm_last_layer_gradient_falls_with_depth_and_post_does_not():
    # The measurement the suite makes, at a small width: Xiong et al.'s direction of effect.
    probe = placement.Probe(d_model=32, n_heads=2, depths=(2, 8, 32), seq_len=16, batch_size=4)
    slopes = {}
    for kind in ("pre", "post"):
        grads = [_probe(placement.init_gradients(kind, "xavier", d, 0, probe, OPTIONS))
                 .down_proj_grad[-1] for d in probe.depths]
        slopes[kind] = placement.loglog_slope(list(probe.depths), grads)
    assert slopes["pre"] < -0.25
    assert abs(slopes["post"]) < 0.15


def test_probe_records_sensitivity_everywhere_and_jacobians_at_the_deepest_depth():
    probe = placement.SIZES["tiny"].probe  # depths (2, 4)
    assert "depth" in probe.inits and probe.jacobian_probes >= 2
    shallow = _probe(placement.init_gradients("pre", "depth", 2, 0, probe, OPTIONS))
    deep = _probe(placement.init_gradients("pre", "depth", 4, 0, probe, OPTIONS))
    # depth + 1 streams: each layer's input, then the final norm's
    assert len(shallow.sensitivity) == 3 and len(deep.sensitivity) == 5
    assert all(v > 0 for v in deep.sensitivity)
    assert shallow.identity_deviation is None and shallow.jacobian_gain is None
    assert len(deep.identity_deviation) == len(deep.jacobian_gain) == 4
    # Pre-norm at init, small branches: every block above the first is nearly the identity
    # (layer 0 reads the embedding, RMS 0.02, where the norm's Jacobian is about 50·I).
    assert all(0 < v < 0.5 for v in deep.identity_deviation[1:])
    assert deep.jacobian_gain[1:] == pytest.approx([1.0] * 3, abs=0.2)
    # The parameter gradients are those of the loss alone (probing adds none).
    again = _probe(placement.init_gradients("pre", "depth", 4, 0, probe, OPTIONS))
    assert again.down_proj_grad == deep.down_proj_grad
    assert again.identity_deviation == deep.identity_deviation  # seeded probes


def test_gradient_summary_reads_sensitivity_and_jacobians_per_seed():
    probe = placement.Probe(d_model=8, n_heads=2, depths=(2, 3), seq_len=8, batch_size=1,
                            placements=("pre",), inits=("gpt2",))

    def run(depth: int, seed: int) -> placement.ProbeRecord:
        scale = 1 + seed  # seeds differ by a factor: log2 spreads of 1 and 2 at depth 3
        deepest = depth == 3
        return placement.ProbeRecord(
            placement="pre", init="gpt2", depth=depth, seed=seed, loss=5.5,
            down_proj_grad=[1.0] * depth, layer_grad=[1.0] * depth, residual_rms=[1.0] * depth,
            sensitivity=[1.0, 1.0, float(2 * scale), 100.0][:depth] + [100.0],
            identity_deviation=[9.0, 0.1 * scale, 0.2 * scale] if deepest else None,
            jacobian_gain=[9.0, 1.0, 1.1] if deepest else None, jacobian_s=0.0)

    probes = {("pre", "gpt2", d, s): run(d, s) for d in (2, 3) for s in (0, 1)}
    got = gradient_stats.gradient_summary(probe, range(2), probes)["pre"]["gpt2"]
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


def _middle(size: str) -> float:
    base = placement.SIZES[size].training.lr_grid.base
    return base[len(base) // 2]


def _tuned(size: str) -> list:
    """Tuning results that pick the grid's middle lr for every arm (an interior optimum)."""
    return [(spec, RunResult(status="ok", final=_final(
                2.0 if spec.payload["train"]["lr"] == _middle(size) else 2.5)))
            for spec in placement.tune(RunOptions(size), [])]


@pytest.mark.parametrize(("size", "cells"), [
    ("quick", [("pre", 6), ("post", 6)]),  # the contrast C13 and C19 grade, nothing else
    ("full", [("pre", 6), ("pre", 12), ("pre", 24), ("post", 6), ("post", 12), ("post", 24),
              ("sandwich", 24)])])
def test_training_grid_turns_clipping_off_and_uses_xavier(size, cells):
    specs = [s for s in placement.plan(RunOptions(size, range(2)), _tuned(size))
             if s.payload["kind"] == "train"]
    training = placement.SIZES[size].training
    assert len(specs) == len(training.cells()) * len(training.warmups) * 2
    assert training.cells() == cells
    for spec in specs:
        assert spec.payload["train"]["grad_clip"] is None
        assert spec.payload["train"]["init"] == "xavier"
        assert spec.payload["train"]["lr"] == _middle(size)  # the arm's tuned lr
        # registered before any data: a run must learn to count (`options.LEARN_MARGIN`)
        assert spec.payload["train"]["learn_margin"] == 0.25
    cells = {(s.payload["model"]["placement"], s.payload["train"]["warmup_steps"]) for s in specs}
    warm = max(training.warmups)  # quick: over the first third of the run; full: 100 steps
    assert warm == (round(training.steps / 3) if size == "quick" else 100)
    assert {("pre", 0), ("post", 0), ("pre", warm), ("post", warm)} <= cells


@pytest.mark.parametrize("size", ["quick", "full"])
def test_every_arm_is_tuned_on_its_own_seeds_on_a_grid_that_grows_at_an_edge(size):
    from blocklab.experiments.suites.base import TUNING_SEEDS

    training = placement.SIZES[size].training
    grid = training.lr_grid
    assert len(grid.base) >= (3 if size == "quick" else 5)
    assert all(b / a <= (3.4 if size == "quick" else 2.0) + 1e-9  # quick: about ×3
               for a, b in zip(grid.base, grid.base[1:], strict=False))
    specs = placement.tune(RunOptions(size), [])
    assert len(specs) == len(training.arms()) * len(grid.base) * training.tuning_seeds
    assert min(s.seed for s in specs) == TUNING_SEEDS
    assert {s.payload["train"]["steps"] for s in specs} == {training.steps}
    if size == "full":
        assert training.tuning_seeds >= 2
    # one arm best at the grid's top: only that arm's grid grows, by one point
    tuned = [(spec, RunResult(status="ok", final=_final(
        3.0 - spec.payload["train"]["lr"] if spec.payload["arm"].startswith("pre/")
        and spec.payload["train"]["warmup_steps"] == 0 else
        2.0 + abs(spec.payload["train"]["lr"] - grid.base[1])))) for spec in specs]
    grown = placement.tune(RunOptions(size), tuned)
    added = [s for s in grown if s.run_id not in {t.run_id for t in specs}]
    edge = {f"pre/{d}/0" for p, d in training.cells() if p == "pre"}
    assert {s.payload["arm"] for s in added if s.payload["arm"] in edge} == edge
    assert {s.payload["train"]["lr"] for s in added if s.payload["arm"] in edge} == {
        round(grid.base[-1] * grid.factor, 6)}
    # the arms whose best is interior: refined half a step either side of it at quick
    # (`LrGrid.refine`), on every tuning seed; nothing more at full
    refined = [s for s in added if s.payload["arm"] not in edge]
    assert grid.refine == (size == "quick")
    assert len(refined) == (2 * (len(training.arms()) - len(edge)) * training.tuning_seeds
                            if grid.refine else 0)
    assert {s.payload["train"]["lr"] for s in refined} == (
        {rounded(grid.base[1] / 3 ** 0.5), rounded(grid.base[1] * 3 ** 0.5)}
        if grid.refine else set())


def test_run_ids_are_stable_and_distinct():
    options = RunOptions("quick", range(2))
    first = [s.run_id for s in placement.plan(options, _tuned("quick"))]
    assert first == [s.run_id for s in placement.plan(options, _tuned("quick"))]
    assert len(set(first)) == len(first)
    # the backend changes speed, not values: the same runs under another backend
    other = dataclasses.replace(options, backend="reference")
    assert first == [s.run_id for s in placement.plan(other, _tuned("quick"))]
    # bf16 is other runs, each one
    bf16 = [s.run_id for s in placement.plan(dataclasses.replace(options, precision="bf16"),
                                             _tuned("quick"))]
    assert len(bf16) == len(first) and not set(bf16) & set(first)


def test_every_run_config_carries_the_options_precision_and_backend():
    size = placement.SIZES["tiny"]
    options = RunOptions("tiny", range(1), precision="bf16", backend="reference")
    train = placement.train_config(size.training, options, 3, warmup=2, lr=1e-3)
    sweep = placement.train_config(size.sweep, options, 3, warmup=2, lr=1e-3)
    probe = placement.train_config(size.probe, options, 3, init="depth")
    for tc in (train, sweep, probe):
        assert (tc.precision, tc.backend, tc.seed) == ("bf16", "reference", 3)
    assert (train.init, train.grad_clip, train.threads, train.lr, train.warmup_steps) == (
        "xavier", None, 1, 1e-3, 2)
    assert (train.eval_every, train.log_every) == (size.training.eval_every,
                                                  size.training.log_every)
    assert (sweep.steps, sweep.eval_every, sweep.log_every, sweep.stuck_patience) == (
        size.sweep.steps, 0, 0, None)
    assert probe.init == "depth"
    with pytest.raises(ValueError, match="peak lr"):
        placement.train_config(size.training, options, 3)


def test_bisection_finds_the_largest_stable_rung_in_log2_steps():
    ladder = [2.0 ** k for k in range(7)]
    for top in range(-1, 7):  # stable up to rung `top`
        tried = []

        def trains(lr, top=top, tried=tried):
            tried.append(lr)
            return math.log2(lr) <= top, {"lr": lr}

        rung, records = placement.bisect_stable(ladder, trains)
        assert rung == top and len(records) == len(tried) == 3  # 8 outcomes, 3 runs
        assert [r["lr"] for r in records] == tried


def test_tiny_suite_end_to_end(tmp_path):
    # With the progress bar, as `blocklab suite` runs it.
    summary = run_suite(get_suite("placement"), OPTIONS, tmp_path, progress=True)
    size = placement.SIZES["tiny"]
    n_probe = len(size.probe.placements) * len(size.probe.inits) * len(size.probe.depths)
    n_train = len(size.training.arms())
    n_sweep = len(size.sweep.arms()) + len(size.deep.arms())
    assert summary.runs == n_probe + n_train + n_sweep
    depth_columns = [f"L={d}" for d in size.probe.depths]
    tables = {t.title: t for t in summary.tables}
    assert tables["At initialisation: ‖∇W_down‖ of the LAST layer vs depth"].columns == [
        "placement", "init", *depth_columns, "slope [95% CI]", "Xiong et al. (xavier)"]
    assert tables["At initialisation: ‖∇W_down‖ of the FIRST layer vs depth"].columns == [
        "placement", "init", *depth_columns, "slope [95% CI]"]
    assert tables["At initialisation: RMS of the residual stream leaving the last layer"
                  ].columns == ["placement", "init", *depth_columns]
    train_table = next(t for t in summary.tables if t.title.startswith("Training"))
    assert train_table.columns == ["placement", "depth", "warmup", "lr", "Σ lr over steps",
                                   "failed/runs (div, stuck, no learning)", "val loss [95% CI]",
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
    # every arm tuned: nothing trains in 5 tiny steps, so each best is the grid's smallest lr,
    # the grid grew there once (tiny's cap) and the optimum is recorded as at the edge
    assert [t.arm for t in data.lr_tuning] == [placement.arm_name(*a)
                                               for a in size.training.arms()]
    assert all(t.extended == 1 and not t.interior for t in data.lr_tuning)
    for row, tuning in zip(data.training, data.lr_tuning, strict=True):
        assert row.runs == 1 and row.lr == tuning.lr
        assert (row.delta_vs_pre is None) == (row.placement == "pre")
        assert row.grad_first_over_last_log2.n == 1  # logged during training, every step
        assert row.lr_area == pytest.approx(placement.lr_area(size.training, row.warmup, row.lr))
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
    titles = [t.title for t in summary.tables]
    assert titles[-2:] == ["Largest stable peak lr per arm (C13, C19 at the training depth; "
                           "C36 in deep stacks)",
                           "Largest stable lr: contrasts paired by seed, in doublings (+1 = "
                           "twice the lr)"]
    assert (tmp_path / "placement" / "tiny" / "summary.json").is_file()
    # a sweep run is stored as before: its record's keys beside status and wall_time_s
    stored = [json.loads(p.read_text()) for p in (tmp_path / "placement" / "tiny").glob("*.json")]
    sweeps = [r for r in stored if "rung" in r]
    assert len(sweeps) == n_sweep
    for r in sweeps:
        assert set(r) == {"status", "wall_time_s", "placement", "depth", "warmup", "seed",
                          "rung", "ladder", "max_stable_lr", "trials", "unigram_entropy",
                          "provenance", "run"}
        assert [set(t) for t in r["trials"]] == [{"lr", "status", "val_loss", "trains"}] * 2
        record = placement.StableLr.of(RunResult.from_dict(r))
        assert record.rung == -1 and record.max_stable_lr is None
        # bisection on 3 rungs: the middle fails, then the foot
        assert [t.lr for t in record.trials] == [record.ladder[1], record.ladder[0]]
        assert not any(t.trains for t in record.trials)
        assert record.unigram_entropy == pytest.approx(data.unigram_entropy)


def _run(vals, layers=None, steps=None, status="ok"):
    return RunResult(status=status, final=_final(vals[-1]),
                     curves=Curves(val={"16": vals}, layer_grad_norms=LayerGradNorms(
                         step=steps or [], layer=layers or [])))


def test_loss_curve_area_and_gradient_ratio_by_hand():
    assert outcomes.val_auc(_run([3.0, 2.0, 1.0]), 16) == pytest.approx(2.0)
    assert outcomes.val_auc(_run([3.0, 2.0], status="diverged"), 16) is None
    # Steps before warmup are left out: log2(4/1) = 2 at step 5, log2(1/2) = -1 at step 10.
    run = _run([2.0], layers=[[9.0, 9.0, 0.1], [4.0, 2.0, 1.0], [1.0, 5.0, 2.0]],
               steps=[0, 5, 10])
    assert outcomes.first_over_last_log2(run, warmup=5) == pytest.approx(0.5)
    assert outcomes.first_over_last_log2(run, warmup=11) is None
    assert gradient_stats._spread_log2([1.0, 8.0, 2.0]) == pytest.approx(3.0)


def test_lr_area_by_hand():
    from blocklab.experiments.suites.tuning import LrGrid

    training = placement.Training(d_model=8, n_heads=1, depths=(2,), warmups=(0, 2),
                                  lr_grid=LrGrid((1.0, 2.0, 4.0), 2.0), tuning_seeds=1,
                                  placements=("pre",), seq_len=8, batch_size=1, steps=4,
                                  stuck_patience=None, eval_every=0, eval_batches=1)
    # cosine from 1 to 0.1 over 4 steps: 1, 0.1 + 0.9·(1 + cos(π/4))/2, 0.55, 0.1 + 0.9·(1 −
    # cos(π/4))/2 (sum 2.2 + 0.9 = 3.1... by hand: 1 + 0.86820 + 0.55 + 0.23180 = 2.65)
    assert placement.lr_area(training, 0, 1.0) == pytest.approx(2.65, abs=1e-5)
    # warmup 2: 0.5, 1, then cosine over the last 2 steps: 1, 0.55 -> 3.05
    assert placement.lr_area(training, 2, 1.0) == pytest.approx(0.5 + 1.0 + 1.0 + 0.55)


def _training(depths=(12,), placements=("pre", "post")):
    from blocklab.experiments.suites.tuning import LrGrid

    return placement.Training(d_model=8, n_heads=1, depths=depths, warmups=(0, 100),
                              lr_grid=LrGrid((1e-3, 3e-3, 1e-2), 3.0), tuning_seeds=1,
                              placements=placements, seq_len=16, batch_size=2, steps=10,
                              stuck_patience=None, eval_every=0, eval_batches=1,
                              deepest_only=("sandwich",))


def _lrs(training):
    from blocklab.experiments.summaries import ArmTuning

    return {placement.arm_name(*a): ArmTuning(placement.arm_name(*a), (1e-3, 3e-3), 3e-3,
                                              True, 0) for a in training.arms()}


def test_warmup_interaction_by_hand():
    training = _training()
    # seed 0: post cold 3.0, warm 2.0; pre cold 2.2, warm 2.0 -> (1.0) - (0.2) = 0.8
    # seed 1: post cold 2.9, warm 2.1; pre cold 2.0, warm 2.1 -> (0.8) - (-0.1) = 0.9
    losses = {("post", 0): (3.0, 2.9), ("post", 100): (2.0, 2.1),
              ("pre", 0): (2.2, 2.0), ("pre", 100): (2.0, 2.1)}
    trained = {(p, 12, w, seed): _run([v[seed]])
               for (p, w), v in losses.items() for seed in (0, 1)}
    (effect,) = training_stats.placement_effects(training, range(2), trained, _lrs(training))
    assert effect.warmup_interaction.mean == pytest.approx(0.85)
    assert effect.warmup_interaction.n == 2
    assert effect.pre_warmup_effect.mean == pytest.approx(0.05)
    assert effect.post_vs_pre_warm.mean == pytest.approx(0.0)
    # A failed run drops its seed from the interaction, not into it.
    trained[("post", 12, 0, 1)] = _run([9.9], status="diverged")
    (effect,) = training_stats.placement_effects(training, range(2), trained, _lrs(training))
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
    trend = placement.interaction_trend(training, range(2), trained)
    assert trend.mean == pytest.approx(0.3) and trend.n == 2


def test_stability_contrasts_by_hand():
    sweep = placement.SIZES["quick"].sweep
    # quick's ladder climbs in doublings from 0.001: a rung is one doubling
    assert sweep.step == 2 and sweep.ladder()[2] == 0.004
    h = 1.0
    depth = sweep.depths[0]
    # rungs per seed: pre cold 4, 5; pre warm 5, 5; post cold 1, 0; post warm 3, 4
    rungs = {("pre", 0): (4, 5), ("pre", sweep.warmup): (5, 5), ("post", 0): (1, 0),
             ("post", sweep.warmup): (3, 4)}
    ladder = sweep.ladder()

    def record(p, w, seed, rung):
        return placement.StableLr(placement=p, depth=depth, warmup=w, seed=seed, rung=rung,
                                  ladder=ladder, max_stable_lr=ladder[rung] if rung >= 0 else None,
                                  trials=[], unigram_entropy=3.3)

    swept = {("sweep", p, depth, w, seed): record(p, w, seed, r[seed])
             for (p, w), r in rungs.items() for seed in (0, 1)}
    (effect,) = stability_stats.stability_effects(sweep, "sweep", range(2), swept)
    assert effect.pre_cold_vs_warm.mean == pytest.approx(-0.5 * h)  # (−1 + 0) / 2 rungs
    assert effect.post_warm_vs_cold.mean == pytest.approx(3.0 * h)  # (2 + 4) / 2
    assert effect.warmup_interaction.mean == pytest.approx(2.5 * h)  # ((2 − 1) + (4 − 0)) / 2
    assert effect.pre_vs_post_warm.mean == pytest.approx(1.5 * h)
    assert effect.pre_vs_post_cold.mean == pytest.approx(4.0 * h)
    arms = stability_stats.stability_arms(sweep, "sweep", range(2), swept)
    post_cold = next(a for a in arms if (a.placement, a.warmup) == ("post", 0))
    assert post_cold.max_stable_lr == pytest.approx(sweep.lr_min * 2 ** (0.5 * h))
    # both arms of a pair censored at the same end of the ladder: that seed drops out
    top = sweep.rungs - 1
    for p, w, seed, rung in (("pre", sweep.warmup, 0, top), ("post", sweep.warmup, 0, top),
                             ("pre", 0, 1, -1), ("post", 0, 1, -1)):
        swept[("sweep", p, depth, w, seed)] = record(p, w, seed, rung)
    (effect,) = stability_stats.stability_effects(sweep, "sweep", range(2), swept)
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
    from blocklab.experiments.suites.placement.sweep import SweepRung, bisect_stable
    from blocklab.experiments.suites.tuning import trains

    sweep = placement.SIZES["quick"].sweep
    ladder, depth = sweep.ladder(), sweep.depths[0]
    flat = _run([3.22], status="did_not_learn")  # at the unigram's loss, never diverged
    assert not trains(flat)
    rung, trials = bisect_stable(ladder, lambda lr: (trains(flat), SweepRung(
        lr=lr, status=flat.status, val_loss=3.22, trains=False)))
    assert rung == -1 and trials[-1].lr == ladder[0]

    def record(seed, status):
        return placement.StableLr(
            placement="post", depth=depth, warmup=0, seed=seed, rung=-1, ladder=ladder,
            max_stable_lr=None, trials=[SweepRung(ladder[0], status, None, False)],
            unigram_entropy=3.3)

    swept = {("sweep", "post", depth, 0, 0): record(0, "did_not_learn"),
             ("sweep", "post", depth, 0, 1): record(1, "diverged")}
    arms = stability_stats.stability_arms(sweep, "sweep", range(2), swept)
    post_cold = next(a for a in arms if (a.placement, a.warmup) == ("post", 0))
    assert (post_cold.censored_low, post_cold.unlearned_low) == (2, 1)


def test_the_sweeps_replace_the_deep_loss_grid_and_fit_the_page():
    specs = placement.plan(RunOptions("quick", range(4)), _tuned("quick"))
    deep = [s for s in specs if s.payload["kind"] == "deep"]
    grid = placement.SIZES["quick"].deep
    assert min(grid.depths) >= 50 and set(grid.placements) == {"pre", "post"}
    assert len(deep) == len(grid.arms()) * 4
    assert all(s.arm.startswith("deep/") for s in deep)
    assert not any(s.payload["kind"] == "train_deep" for s in specs)
    sweep = [s for s in specs if s.payload["kind"] == "sweep"]
    assert len(sweep) == 2 * 2 * 4  # placements × (cold, warm) × seeds
    assert {s.payload["model"]["n_layers"] for s in sweep} == set(
        placement.SIZES["quick"].training.depths)
    full = placement.SIZES["full"].deep
    assert min(full.depths) >= 48
