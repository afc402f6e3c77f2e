"""The ffn suite's summary: the equal-time reading, the statistics by hand, failed and missing
runs, the scale trend, the size record, and the tiny grid end to end with its tuning."""

import math
from dataclasses import replace

import pytest

from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import ResultStore
from blocklab.experiments.run_result import Curves, RunResult
from blocklab.experiments.suites import load_summary
from blocklab.experiments.suites.ffn import runs as ffn
from blocklab.experiments.suites.ffn.summary import interpolate, size_record, summarise

from ..conftest import final_metrics

LRS = dict.fromkeys(ffn.ARMS, 3e-3)
TINY = RunOptions("tiny")


@pytest.fixture
def every_arm_tiny(monkeypatch):
    """The tiny size with everything the full size runs (every arm, the sensitivity re-runs, a
    trend width and the timing run), so the summary's arithmetic is checked on tiny runs."""
    monkeypatch.setitem(ffn.SIZES, "tiny", replace(
        ffn.SIZES["tiny"], arms=ffn.ARMS, sensitivity_arms=ffn.SENSITIVITY_ARMS, timing=True,
        trend_widths=(16,)))
    return ffn.SIZES["tiny"]


def test_interpolate_by_hand():
    xs, ys = [10, 20, 30], [3.0, 2.0, 1.5]
    assert interpolate(xs, ys, 10) == 3.0
    assert interpolate(xs, ys, 15) == pytest.approx(2.5)
    assert interpolate(xs, ys, 27.5) == pytest.approx(1.625)
    assert interpolate(xs, ys, 30) == 1.5
    assert interpolate(xs, ys, 5) is None and interpolate(xs, ys, 31) is None
    assert interpolate(xs, [3.0, None, 1.5], 15) is None


def _fake(loss_scale, seq_len, zero=(0.5, 0.5)):
    """A training run's stand-in: validation every step, loss = scale · (1 + 1/step)."""
    steps = [1, 2, 3, 4, 5]
    curve = [loss_scale * (1 + 1 / s) for s in steps]
    final = final_metrics(curve[-1], entropy=10.0, val_bpb=curve[-1] / math.log(2))
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
    data = summarise(options, results).data
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
    swiglu = summarise(options, results).data.arms["swiglu"]
    assert swiglu.status == {"ok": 1, "diverged": 1, "missing": 1} and swiglu.counted == 1
    assert swiglu.val_loss.mean == pytest.approx(0.9 * 1.2)
    assert swiglu.delta_vs_relu.mean == pytest.approx(-0.1 * 1.2)
    assert swiglu.ms_per_step is None and swiglu.equal_time_step is None
    assert ffn.ZeroGradFraction.of(RunResult(status="stuck"), "run") is None  # none recorded


@pytest.fixture
def tiny_ffn(tiny_runs):
    """The session's tiny runs: (their folder, the ffn summary)."""
    return tiny_runs, load_summary(tiny_runs, "ffn", "tiny")


def test_tiny_suite_end_to_end(tiny_ffn):
    _, summary = tiny_ffn
    assert summary.runs == len(ffn.GRADED_ARMS)  # C16's arms and relu, no timing run
    for table in summary.tables:  # a row per arm; no timing table (the timing run: full only)
        assert [row[0] for row in table.rows] == list(ffn.GRADED_ARMS), table.title
        assert not table.title.startswith("Cost per step")
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


def test_the_suite_evaluates_each_arm_at_the_lr_its_tuning_runs_chose(tiny_ffn):
    root, summary = tiny_ffn
    data = summary.data
    store = ResultStore(root / "ffn" / "tiny+tuning")
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
    evaluated = ResultStore(root / "ffn" / "tiny")
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
    # the lr notes speak of the tuned arms only (the tables: the end-to-end test)
    assert set(data.lr_at_edge) <= set(ffn.GRADED_ARMS)
    assert [p.d_model for p in data.trend] == [32]  # the suite's own width: no trend widths
    assert data.trend[0].rel_delta_pct == data.arms["swiglu"].rel_delta_pct
    assert data.sensitivity.val_loss == {} and data.sensitivity.rel_delta_pct == {}


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
    data = summarise(options, results).data
    small, large = data.trend
    assert (small.d_model, large.d_model) == (16, 32)
    assert small.rel_delta_pct.mean == pytest.approx(-6.0)
    assert large.rel_delta_pct.mean == pytest.approx(-10.0)
    # Paired by seed: (-10 - -5) and (-10 - -7) -> mean -4: the advantage grows with size.
    assert data.trend_change.mean == pytest.approx(-4.0)
    assert small.params < large.params


def test_the_size_record_holds_the_precision_after_the_trend_widths():
    record = size_record(ffn.SIZES["full"], RunOptions("full", range(1), precision="bf16"))
    assert record["precision"] == "bf16"
    assert list(record)[list(record).index("trend_widths") + 1] == "precision"
