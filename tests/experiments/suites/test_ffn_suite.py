"""The ffn suite: equal parameter counts, arms that really differ, the equal-time reading, the
zero-gradient probe, and the tiny grid end to end."""

import math
from dataclasses import replace

import pytest
import torch

from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import ResultStore
from blocklab.experiments.run_result import Curves, FinalMetrics, RunResult
from blocklab.experiments.suites import ffn, get_suite, run_suite
from blocklab.nn import DecoderLM
from blocklab.nn.ffn import equal_param_gated_width

TABLE_COLUMNS = {
    "FFN arms at equal parameter count":
        ["arm", "FFN", "activation", "d_ff", "FFN weights/layer", "params", "vs relu"],
    "Cost per step and loss at equal wall-clock":
        ["arm", "ms/step (timed)", "ms/step (training runs)", "step at T*",
         "val loss at T* [95% CI]", "Δ vs relu at T* [95% CI]"],
    "C17: FFN activation inputs with an exactly zero gradient":
        ["arm", "activation", "at init", "after training"],
}
LRS = dict.fromkeys(ffn.ARMS, 3e-3)
TINY = RunOptions("tiny")
QUALITY_COLUMNS = ["arm", "ok/div/stuck/no-learn", "val loss (nats) [95% CI]", "bits/byte",
                   "Δ vs relu [95% CI]", "Δ% vs relu [95% CI]", "page: gain vs ReLU"]


@pytest.fixture
def every_arm_tiny(monkeypatch):
    """The tiny size with everything the full size runs (every arm, the sensitivity re-runs, a
    trend width and the timing run), so the summary's arithmetic is checked on tiny runs."""
    monkeypatch.setitem(ffn.SIZES, "tiny", replace(
        ffn.SIZES["tiny"], arms=ffn.ARMS, sensitivity_arms=ffn.SENSITIVITY_ARMS, timing=True,
        trend_widths=(16,)))
    return ffn.SIZES["tiny"]


@pytest.mark.parametrize("size", ["quick", "full"])
def test_arms_hold_equal_parameters_within_one_percent(size):
    d = ffn.SIZES[size].d_model
    counts = {arm: ffn.param_count(arm, ffn.SIZES[size]) for arm in ffn.ARMS}
    assert max(counts.values()) / min(counts.values()) - 1 < 0.01
    for arm in ffn.ARMS:
        gated = arm in ("glu", "reglu", "geglu", "swiglu", "bilinear")
        assert ffn.ffn_width(arm, d) == (equal_param_gated_width(4 * d) if gated else 4 * d)


@pytest.mark.parametrize("size", ["quick", "full"])
def test_budget_count_is_the_built_models_count(size):
    # Built on the CPU: under a million parameters take milliseconds, while the meta device's
    # first use costs seconds of one-time setup.
    for arm in ("relu", "swiglu"):
        model = DecoderLM(ffn.model_config(arm, ffn.SIZES[size]))
        assert sum(p.numel() for p in model.parameters()) == ffn.param_count(arm,
                                                                              ffn.SIZES[size])


def test_every_arm_changes_the_forward_output_and_nothing_else():
    from blocklab.experiments.trainer import build_model

    size = ffn.SIZES["tiny"]
    ids = torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(0))
    base_cfg = ffn.model_config("relu", size)
    base = build_model(base_cfg, ffn.train_config(size, TINY, seed=0, lr=1e-3))
    base_out = base(ids)
    for arm in ffn.ARMS[1:]:
        cfg = ffn.model_config(arm, size)
        assert cfg != base_cfg and cfg.ffn == arm
        model = build_model(cfg, ffn.train_config(size, TINY, seed=0, lr=1e-3))
        # Same seed: embeddings and attention come from the same streams ...
        torch.testing.assert_close(model.embed_tokens.weight, base.embed_tokens.weight,
                                   rtol=0, atol=0)
        torch.testing.assert_close(model.layers[0].attention.q_proj.weight,
                                   base.layers[0].attention.q_proj.weight, rtol=0, atol=0)
        # ... so the FFN alone makes the outputs differ.
        assert not torch.allclose(model(ids), base_out, atol=1e-6), arm


def test_zero_gradient_fraction_matches_the_sign_of_relu_inputs():
    # Independent reference: for ReLU the gradient at z is zero exactly where z <= 0.
    from blocklab.experiments.trainer import build_model

    size = ffn.SIZES["tiny"]
    model = build_model(ffn.model_config("relu", size),
                        ffn.train_config(size, TINY, seed=0, lr=1e-3))
    batch = torch.randint(0, 256, (3, 17), generator=torch.Generator().manual_seed(1))
    inputs = []
    handle = model.layers[0].ffn.up_proj.register_forward_hook(
        lambda m, i, out: inputs.append(out.detach()))
    with torch.no_grad():
        model(batch[:, :-1])
    handle.remove()
    expected = int((inputs[0] <= 0).sum()) / inputs[0].numel()
    assert ffn.zero_gradient_fraction(model, batch) == pytest.approx(expected, abs=1e-12)
    assert all(p.grad is None for p in model.parameters())  # it cleans up after itself
    smooth = build_model(ffn.model_config("swiglu", size),
                         ffn.train_config(size, TINY, seed=0, lr=1e-3))
    assert ffn.zero_gradient_fraction(smooth, batch) == 0.0


def test_interpolate_by_hand():
    xs, ys = [10, 20, 30], [3.0, 2.0, 1.5]
    assert ffn.interpolate(xs, ys, 10) == 3.0
    assert ffn.interpolate(xs, ys, 15) == pytest.approx(2.5)
    assert ffn.interpolate(xs, ys, 27.5) == pytest.approx(1.625)
    assert ffn.interpolate(xs, ys, 30) == 1.5
    assert ffn.interpolate(xs, ys, 5) is None and ffn.interpolate(xs, ys, 31) is None
    assert ffn.interpolate(xs, [3.0, None, 1.5], 15) is None


def _fake(loss_scale, seq_len, zero=(0.5, 0.5)):
    """A training run's stand-in: validation every step, loss = scale · (1 + 1/step)."""
    steps = [1, 2, 3, 4, 5]
    curve = [loss_scale * (1 + 1 / s) for s in steps]
    final = FinalMetrics(val_loss=curve[-1], val_loss_se=None, val_windows=1,
                         val_tokens=seq_len, val_loss_tail=curve[-1], val_loss_tail_n=1,
                         val_bpb=curve[-1] / math.log(2), val_loss_by_length={},
                         per_position_loss={}, train_loss=curve[-1], unigram_entropy=10.0,
                         unigram_entropy_bpb=10.0 / math.log(2), params=1000)
    return RunResult(status="ok", curves=Curves(val_step=steps, val={str(seq_len): curve}),
                     final=final, ms_per_step=1.0,
                     extra={"zero_grad_fraction": {"init": zero[0], "final": zero[1]}})


def _timing(ms):
    """The timing run's stand-in: `ms` per arm (each arm's one timed step)."""
    return RunResult(status="ok", wall_time_s=1.0,
                     extra={"ms_per_step": ms, "samples_ms": {a: [v] for a, v in ms.items()},
                            "threads": 1})


def test_summary_equal_steps_and_equal_time_by_hand(every_arm_tiny):
    size = every_arm_tiny  # 5 steps
    options = RunOptions("tiny", range(2))
    specs = ffn.plan_at(options, LRS)
    scale = {"relu": 1.0, "swiglu": 0.9}
    results = []
    for spec in specs:
        if spec.arm == "timing":
            # relu 10 ms/step, swiglu 20: T* = 50 ms, so swiglu is read at step 2.5.
            ms = {arm: (20.0 if arm == "swiglu" else 10.0) for arm in ffn.ARMS}
            results.append((spec, _timing(ms)))
        elif spec.arm == "relu" and spec.payload["kind"] == "train" and spec.seed == 1:
            results.append((spec, _fake(1.01, size.seq_len, zero=(0.4, 0.2))))
        else:
            results.append((spec, _fake(scale.get(spec.arm, 1.0) * (1 + 0.01 * spec.seed),
                                        size.seq_len)))
    data = ffn.summarise(options, results).data
    swiglu, relu = data.arms["swiglu"], data.arms["relu"]
    assert swiglu.delta_vs_relu.mean == pytest.approx(-0.1 * 1.2 * 1.005)
    assert swiglu.rel_delta_pct.mean == pytest.approx(-10.0, abs=1e-9)
    assert swiglu.equal_time_step == pytest.approx(2.5)
    at_25 = [0.9 * (1 + 0.01 * s) * (1.5 + 4 / 3) / 2 for s in (0, 1)]  # midway between steps 2, 3
    assert swiglu.val_loss_equal_time.mean == pytest.approx(sum(at_25) / 2)
    assert relu.val_loss_equal_time.mean == pytest.approx(relu.val_loss.mean)
    assert data.equal_time_ms == pytest.approx(50.0)
    assert swiglu.ms_per_step == 20.0 and relu.ms_per_step == 10.0
    assert swiglu.ms_per_step_train == 1.0 and relu.status == {"ok": 2} and relu.counted == 2
    assert relu.zero_grad_fraction == {"init": pytest.approx(0.45), "final": pytest.approx(0.35)}
    assert swiglu.val_bpb.mean == pytest.approx(swiglu.val_loss.mean / math.log(2))
    assert data.unigram_entropy == 10.0 and data.size["precision"] == "fp32"


def test_a_missing_or_failed_run_is_counted_by_status_and_left_out_of_the_statistics():
    options = RunOptions("tiny", range(3))
    results = []
    for spec in ffn.plan_at(options, LRS):
        if spec.arm == "swiglu" and spec.seed == 1:
            results.append((spec, replace(_fake(0.9, 32), status="diverged")))
        elif not (spec.arm == "swiglu" and spec.seed == 2):  # seed 2 of swiglu: not stored
            results.append((spec, _fake(0.9 if spec.arm == "swiglu" else 1.0, 32)))
    swiglu = ffn.summarise(options, results).data.arms["swiglu"]
    assert swiglu.status == {"ok": 1, "diverged": 1, "missing": 1} and swiglu.counted == 1
    assert swiglu.val_loss.mean == pytest.approx(0.9 * 1.2)
    assert swiglu.delta_vs_relu.mean == pytest.approx(-0.1 * 1.2)
    assert swiglu.ms_per_step is None and swiglu.equal_time_step is None


def test_the_timing_record_reads_back_from_the_store(tmp_path):
    store = ResultStore(tmp_path)
    ms = {"relu": 10.0, "swiglu": 12.5}
    store.save("timing", _timing(ms))
    assert ffn.StepTiming.of(store.load("timing"), "timing") == ffn.StepTiming(
        ms, {"relu": [10.0], "swiglu": [12.5]}, 1)
    store.save("run", _fake(1.0, 32, zero=(0.5, 0.0)))
    assert ffn.ZeroGradFraction.of(store.load("run"), "run") == ffn.ZeroGradFraction(0.5, 0.0)
    assert ffn.ZeroGradFraction.of(RunResult(status="stuck"), "run") is None


def test_run_ids_are_stable_and_distinct():
    first = [s.run_id for s in ffn.plan_at(RunOptions("quick", range(2)), LRS)]
    assert first == [s.run_id for s in ffn.plan_at(RunOptions("quick", range(2)), LRS)]
    assert len(set(first)) == len(first) == len(ffn.GRADED_ARMS) * 2  # C16's arms, relu
    assert not set(first) & {s.run_id for s in ffn.plan_at(RunOptions("tiny", range(2)), LRS)}
    # the backend changes speed, not values: the same runs
    assert first == [s.run_id for s in ffn.plan_at(
        RunOptions("quick", range(2), backend="reference"), LRS)]
    full = [s.run_id for s in ffn.plan_at(RunOptions("full", range(2)), LRS)]
    per_seed = (len(ffn.ARMS) + len(ffn.SENSITIVITY_ARMS)
                + len(ffn.TREND_ARMS) * len(ffn.SIZES["full"].trend_widths))
    assert len(set(full)) == len(full) == per_seed * 2 + 1  # and the timing run


def test_tiny_suite_end_to_end(tmp_path):
    suite = get_suite("ffn")
    summary = run_suite(suite, RunOptions.for_suite(suite, "tiny", 1), tmp_path, progress=False)
    assert summary.runs == len(ffn.GRADED_ARMS)  # C16's arms and relu, no timing run
    tables = {t.title: t for t in summary.tables}
    for title, columns in TABLE_COLUMNS.items():
        if title.startswith("Cost per step"):  # the timing run: full only
            assert title not in tables
            continue
        assert tables[title].columns == columns
        assert [row[0] for row in tables[title].rows] == list(ffn.GRADED_ARMS)
    quality = next(t for t in summary.tables if t.title.startswith("Validation loss"))
    assert quality.columns == QUALITY_COLUMNS
    data = summary.data
    assert data.seeds == 1 and data.steps == ffn.SIZES["tiny"].steps
    assert 0 < data.unigram_entropy < math.log(256)
    assert set(data.arms) == set(ffn.GRADED_ARMS) == {"relu", "glu", "geglu", "swiglu"}
    for entry in data.arms.values():
        assert entry.status == {"ok": 1} and entry.ms_per_step is None
        assert entry.ms_per_step_train > 0
    zero = {arm: entry.zero_grad_fraction["init"] for arm, entry in data.arms.items()}
    assert 0.3 < zero["relu"] < 0.7 and zero["swiglu"] == 0.0 and zero["geglu"] == 0.0
    # what the tiny size leaves to full is named, never shown as an empty number
    note = next(n for n in summary.notes if n.startswith("Run at --size full only"))
    for words in ("gelu, reglu and bilinear arms", "sensitivity re-runs", "scale trend",
                  "timed step"):
        assert words in note
    assert (tmp_path / "ffn" / "tiny" / "summary.json").is_file()


def test_a_seed_offset_gives_disjoint_seeds_and_runs():
    near = ffn.plan_at(RunOptions("full", range(2)), LRS)
    far = ffn.plan_at(RunOptions("full", range(1000, 1002)), LRS)
    trained = [s for s in far if s.arm != "timing"]  # the timing run has no seed to vary
    assert {s.payload["kind"] for s in trained} == {"train", "sensitivity", "trend"}
    assert {s.seed for s in trained} == {1000, 1001}
    assert {s.payload["train"]["seed"] for s in trained} == {1000, 1001}
    assert not {s.run_id for s in near if s.arm != "timing"} & {s.run_id for s in trained}


def _trial(arm, lr, loss, seed=0):
    from blocklab.experiments.summaries import LrTrial

    return LrTrial(arm, lr, seed, "ok" if loss is not None else "diverged", loss, 64)


def test_each_arm_gets_the_lr_with_the_lowest_mean_tuning_loss():
    size = ffn.SIZES["quick"]  # grid 3e-3, 1e-2, 3e-2
    trials = []
    for arm in ffn.ARMS:
        trials += [_trial(arm, 3e-3, 2.0), _trial(arm, 1e-2, 1.9), _trial(arm, 3e-2, 1.95)]
    trials += [_trial("relu", lr, 1.0, seed=1) for lr in size.lr_grid.base]  # 2nd tuning seed
    # gelu: 3e-2 is lowest on one seed but fails on the other, so it cannot be chosen.
    trials = [t for t in trials if not (t.arm == "gelu" and t.lr == 3e-2)]
    trials += [_trial("gelu", 3e-2, 1.0), _trial("gelu", 3e-2, None, seed=1)]
    # swiglu: a tie goes to the smaller lr.
    trials = [t for t in trials if t.arm != "swiglu"]
    trials += [_trial("swiglu", lr, 1.5) for lr in size.lr_grid.base]
    chosen = ffn.choose_lrs(size, trials)
    assert chosen["relu"] == 1e-2 and chosen["gelu"] == 1e-2 and chosen["swiglu"] == 3e-3
    assert ffn.choose_lrs(size, []) == dict.fromkeys(ffn.ARMS, 3e-3)  # nothing counts: smallest


@pytest.mark.parametrize(("name", "widths"), [
    ("quick", ((64, ffn.GRADED_ARMS),)),  # only the arms C16 grades, at the size's own width
    ("full", ((96, ffn.ARMS), (48, ffn.TREND_ARMS), (64, ffn.TREND_ARMS)))])
def test_tuning_runs_every_arm_at_every_lr_on_seeds_no_evaluation_uses(name, widths):
    from blocklab.experiments.options import MAX_SEED_OFFSET, MAX_SEEDS
    from blocklab.experiments.suites.base import TUNING_SEEDS

    size = ffn.SIZES[name]
    specs = ffn.tune(RunOptions(name))
    assert len(specs) == (sum(len(arms) for _, arms in widths) * len(size.lr_grid.base)
                          * size.tuning_seeds)
    assert {(s.arm, s.payload["train"]["lr"], s.payload["model"]["d_model"]) for s in specs} == {
        (arm, lr, d) for d, arms in widths for arm in arms for lr in size.lr_grid.base}
    assert min(s.seed for s in specs) == TUNING_SEEDS > MAX_SEED_OFFSET + MAX_SEEDS
    assert {s.payload["train"]["init"] for s in specs} == {"fan_in"}
    lrs = {**LRS, "swiglu": 3e-2}
    evaluated = ffn.plan_at(RunOptions("full", range(2)), lrs)
    swiglu = [s for s in evaluated if s.arm == "swiglu" and s.payload["kind"] == "train"]
    assert {s.payload["train"]["lr"] for s in swiglu} == {3e-2}
    again = [s for s in evaluated if s.payload["kind"] == "sensitivity"]
    full = ffn.SIZES["full"]
    assert {(s.payload["train"]["init"], s.payload["train"]["lr"]) for s in again} == {
        (full.sensitivity_init, full.sensitivity_lr)}


def test_the_suite_evaluates_each_arm_at_the_lr_its_tuning_runs_chose(tmp_path):
    from blocklab.experiments.results import ResultStore

    suite = get_suite("ffn")
    summary = run_suite(suite, RunOptions.for_suite(suite, "tiny", 1), tmp_path, progress=False)
    data = summary.data
    store = ResultStore(tmp_path / "ffn" / "tiny+tuning")
    stored = {}
    tuned = [(spec, store.load(spec.run_id)) for spec in ffn.tune(TINY)]
    for spec in ffn.tune(TINY, tuned):
        if spec.payload["model"]["d_model"] != ffn.SIZES["tiny"].d_model:
            continue  # a scale-trend width, checked below
        final = store.load(spec.run_id).final
        # A run counts only below the unigram entropy (after 5 tiny steps, none does).
        counts = final.val_loss < final.unigram_entropy
        stored[(spec.arm, spec.payload["train"]["lr"])] = (
            final.val_loss if counts else math.inf)
    evaluated = ResultStore(tmp_path / "ffn" / "tiny")
    assert {arm for arm, _ in stored} == set(ffn.GRADED_ARMS)  # tuned: the graded arms only
    # nothing counts after 5 tiny steps, so every arm's best is the grid's smallest lr: the
    # grid grew there by one point (tiny's cap) before evaluation, and stays at the edge
    base = ffn.SIZES["tiny"].lr_grid.base
    assert {lr for _, lr in stored} == {*base, round(base[0] / 3, 6)}
    assert all(not t.interior and t.extended == 1 for t in data.lr_tuning)
    for arm in ffn.GRADED_ARMS:  # an independent argmin over the stored tuning results
        best = min((lr for a, lr in stored if a == arm), key=lambda lr: (stored[(arm, lr)], lr))
        assert data.arms[arm].lr == best
        run = next(s for s in ffn.plan_at(TINY, {a: best for a in ffn.ARMS})
                   if s.arm == arm and s.payload["kind"] == "train")
        assert evaluated.has(run.run_id)  # the evaluation ran at that lr
    assert len(data.lr_trials) == len(ffn.tune(TINY, tuned))
    # the lr notes and table speak of the tuned arms only
    edge = next((n for n in summary.notes if n.startswith("Best lr still at an edge")), "")
    assert all(f" {arm} " not in edge for arm in ("gelu", "reglu", "bilinear"))
    assert set(data.lr_at_edge) <= set(ffn.GRADED_ARMS)
    grid = next(t for t in summary.tables if t.title.startswith("Learning rate per arm"))
    assert [row[0] for row in grid.rows] == list(ffn.GRADED_ARMS)
    assert [p.d_model for p in data.trend] == [32]  # the suite's own width: no trend widths
    assert data.trend[0].rel_delta_pct == data.arms["swiglu"].rel_delta_pct
    assert data.sensitivity.val_loss == {} and data.sensitivity.rel_delta_pct == {}
    titles = [t.title for t in summary.tables]
    assert not any(t.startswith(("Sensitivity", "Scale trend")) for t in titles)


def test_the_scale_trend_pairs_each_width_by_seed(every_arm_tiny):
    size = every_arm_tiny  # its own width 32 and a trend width 16
    options = RunOptions("tiny", range(2))
    specs = ffn.plan_at(options, LRS)
    # swiglu is 10% better at width 32 and 5% (seed 0) / 7% (seed 1) better at width 16.
    gain = {32: {0: 0.9, 1: 0.9}, 16: {0: 0.95, 1: 0.93}}
    results = []
    for spec in specs:
        if spec.arm == "timing":
            results.append((spec, _timing(dict.fromkeys(ffn.ARMS, 1.0))))
            continue
        d = spec.payload["model"]["d_model"]
        scale = gain[d][spec.seed] if spec.arm == "swiglu" else 1.0
        results.append((spec, _fake(scale, size.seq_len)))
    data = ffn.summarise(options, results).data
    small, large = data.trend
    assert (small.d_model, large.d_model) == (16, 32)
    assert small.rel_delta_pct.mean == pytest.approx(-6.0)
    assert large.rel_delta_pct.mean == pytest.approx(-10.0)
    # Paired by seed: (-10 - -5) and (-10 - -7) -> mean -4: the advantage grows with size.
    assert data.trend_change.mean == pytest.approx(-4.0)
    assert small.params < large.params


def test_the_longer_runs_double_the_training_of_the_named_arms_only():
    seeds = range(3)
    options = RunOptions("quick", seeds)
    base = {(s.arm, s.seed): s for s in ffn.plan(options, [])
            if s.payload["kind"] == "train"}
    longer = ffn.longer(options, [], ["swiglu", "relu"])
    assert sorted({s.arm for s in longer}) == ["relu", "swiglu"] and len(longer) == 6
    for spec in longer:
        short = base[(spec.arm, spec.seed)]
        for key in ("steps", "warmup_steps", "eval_every"):
            assert spec.payload["train"][key] == 2 * short.payload["train"][key]
        assert spec.payload["train"]["lr"] == short.payload["train"]["lr"]
        assert spec.payload["model"] == short.payload["model"] and spec.run_id != short.run_id
    assert get_suite("ffn").longer is ffn.longer


def test_the_options_precision_and_backend_reach_every_run():
    bf16 = RunOptions("full", range(1), precision="bf16", backend="reference")
    tc = ffn.train_config(ffn.SIZES["full"], bf16, seed=0, lr=1e-3)
    assert (tc.precision, tc.backend) == ("bf16", "reference")
    specs = ffn.plan_at(bf16, LRS) + ffn.tune(bf16)
    assert {s.payload["train"]["precision"] for s in specs if s.arm != "timing"} == {"bf16"}
    assert next(s for s in specs if s.arm == "timing").payload["precision"] == "bf16"
    fp32 = ffn.plan_at(RunOptions("full", range(1)), LRS)  # float32: ids from before precision
    assert all("precision" not in s.payload.get("train", s.payload) for s in fp32)
    record = ffn.size_record(ffn.SIZES["full"], bf16)
    assert record["precision"] == "bf16"
    assert list(record)[list(record).index("trend_widths") + 1] == "precision"
