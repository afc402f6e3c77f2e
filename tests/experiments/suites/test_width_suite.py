"""The width suite (C37): what each arm trains and is read at, the width losses against the
run's own evaluation, the contrasts by hand, each width's cost against the built model, the
price, and the tiny size end to end."""

import math

import pytest
import torch

from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import ResultStore
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites import get_suite, run_suite, width
from blocklab.experiments.suites.tuning import lr_trials
from blocklab.nn import DecoderLM


@pytest.fixture(scope="module")
def tiny_summary(tmp_path_factory):
    root = tmp_path_factory.mktemp("width")
    suite = get_suite("width")
    summary = run_suite(suite, RunOptions.for_suite(suite, "tiny", 2), root, progress=False)
    return root, summary


def _stored(root, options):
    suite = get_suite("width")
    store = ResultStore(root / "width" / options.folder())
    tuned_store = ResultStore(root / "width" / options.folder(tuning=True))
    tuned = [(s, tuned_store.load(s.run_id)) for s in width.tune(options, [])
             if tuned_store.has(s.run_id)]
    return [(s, store.load(s.run_id)) for s in suite.plan(options, tuned)], tuned


def test_widths_are_m_half_and_quarter_and_each_arm_is_read_at_the_widths_it_has():
    for size in width.SIZES.values():
        m = size.d_ff
        assert size.widths == (m, m // 2, m // 4) and m % 4 == 0
        assert width.read_widths("ordinary", size) == size.widths
        assert width.read_widths("nested", size) == size.widths
        assert width.read_widths("narrow", size) == (m // 2, m // 4)[:1] + (m // 4,)
    assert width.SIZES["quick"].d_ff == 192  # Llama's 8·64/3 rounded up to a multiple of 64


def test_only_the_nested_arm_trains_with_nested_widths_and_all_share_one_lr():
    options = RunOptions("quick", range(2))
    specs = width.plan(options, [])
    assert {s.arm for s in specs} == set(width.ARMS) and len(specs) == 6
    for s in specs:
        nested = s.payload["train"].get("nested_widths", [])
        assert nested == ([192, 96, 48] if s.arm == "nested" else [])
        assert s.payload["model"]["d_ff"] == (96 if s.arm == "narrow" else 192)
        assert s.payload["model"]["ffn"] == "swiglu"
    assert len({s.payload["train"]["lr"] for s in specs}) == 1
    assert len({s.run_id for s in specs}) == 6


def test_the_tuning_stage_tunes_the_ordinary_arm_on_seeds_no_evaluation_uses():
    specs = width.tune(RunOptions("quick", range(4)), [])
    assert {s.arm for s in specs} == {"ordinary"}
    assert sorted(s.payload["train"]["lr"] for s in specs) == [3e-3, 3e-3, 1e-2, 1e-2, 3e-2, 3e-2]
    assert len({s.seed for s in specs}) == width.SIZES["quick"].tuning_seeds == 2
    assert all(s.seed not in range(4) for s in specs)


def test_tiny_end_to_end_width_losses_against_the_runs_own_evaluation(tiny_summary):
    root, summary = tiny_summary
    options = RunOptions.for_suite(get_suite("width"), "tiny", 2)
    runs, tuned = _stored(root, options)
    size = width.SIZES["tiny"]
    m = size.d_ff
    assert summary.runs == 6 and len(tuned) == 3
    for spec, result in runs:
        read = result.extra["width_loss"]
        assert list(read) == [str(k) for k in width.read_widths(spec.arm, size)]
        # the whole width reads the run's own end-of-run loss (same windows, same batches)
        whole = str(size.width_of(spec.arm))
        assert read[whole] == pytest.approx(result.final.val_loss, rel=1e-12)
        assert all(math.isfinite(v) and 0 < v < math.log(256) + 1 for v in read.values())
    # every arm at the one lr the tuning chose
    lr = width.planning.tuning(size, lr_trials(tuned)).lr
    assert summary.data.lr == lr and {s.payload["train"]["lr"] for s, _ in runs} == {lr}
    # the contrasts, by hand from the stored width losses, paired by seed
    by = {(s.arm, s.seed): r.extra["width_loss"] for s, r in runs}

    def rel(a, ka, b, kb):
        return [100 * (by[(a, s)][str(ka)] - by[(b, s)][str(kb)]) / by[(b, s)][str(kb)]
                for s in options.seeds]

    data = summary.data
    for k in (m // 2, m // 4):
        want = rel("ordinary", k, "nested", k)
        assert data.sliced_vs_nested_pct[str(k)].mean == pytest.approx(sum(want) / 2, rel=1e-9)
    assert data.nested_price_pct.mean == pytest.approx(sum(rel("nested", m, "ordinary", m)) / 2,
                                                       rel=1e-9)
    assert data.nested_vs_narrow_pct.mean == pytest.approx(
        sum(rel("nested", m // 2, "narrow", m // 2)) / 2, rel=1e-9)
    assert [p.width for p in data.points] == list(size.widths)
    assert set(data.points[0].loss) == {"ordinary", "nested"}
    assert set(data.points[1].loss) == set(width.ARMS)
    assert data.status == {arm: {"ok": 2} for arm in width.ARMS}
    titles = [t.title for t in summary.tables]
    assert titles[:2] == ["Validation loss at each FFN width, with what that width costs",
                          "The contrasts C37 grades (paired by seed, % of the second loss)"]


def test_the_nested_run_reads_different_weights_from_the_ordinary_one(tiny_summary):
    root, _ = tiny_summary
    runs, _ = _stored(root, RunOptions.for_suite(get_suite("width"), "tiny", 2))
    by = {(s.arm, s.seed): r for s, r in runs}
    assert by[("nested", 0)].final.val_loss != by[("ordinary", 0)].final.val_loss


@pytest.mark.parametrize("size", ["tiny", "quick"])
def test_each_widths_cost_is_the_built_model_of_that_width(size):
    s = width.SIZES[size]
    for k in s.widths:
        params, ffn_params, flops = width.width_cost(s, k)
        model = DecoderLM(width.model_config("ordinary", s, d_ff=k))
        assert params == sum(p.numel() for p in model.parameters())
        ffn = sum(p.numel() for layer in model.layers for p in layer.ffn.parameters())
        assert ffn_params == ffn == 3 * s.d_model * k * s.n_layers
        assert flops > 2 * params - 2 * s.d_model * 256  # at least 2 FLOPs per matrix weight


def test_width_cost_flops_count_the_sliced_forward_exactly():
    """The FLOPs a width saves are its FFN matmuls: 2 · 3 · d · (m − k) per token per layer,
    checked against torch's flop counter on the model actually narrowed."""
    from torch.utils.flop_counter import FlopCounterMode

    from blocklab.nn import narrowed

    s = width.SIZES["tiny"]
    model = DecoderLM(width.model_config("ordinary", s))
    tokens = torch.zeros(1, s.seq_len, dtype=torch.long)
    counted = {}
    for k in s.widths:
        with narrowed(model, k), FlopCounterMode(display=False) as counter, torch.no_grad():
            model(tokens)
        counted[k] = counter.get_total_flops()
    m = s.d_ff
    for k in s.widths:
        saved = 2 * 3 * s.d_model * (m - k) * s.n_layers * s.seq_len
        assert counted[m] - counted[k] == saved
        assert width.width_cost(s, m)[2] - width.width_cost(s, k)[2] == saved // s.seq_len


def test_the_nested_run_is_priced_as_one_run_per_width():
    """Each shape priced at a step time proportional to its FFN width plus a fixed part: the
    nested run costs the three widths' runs, the narrow one less than the ordinary one."""
    from blocklab.experiments import estimate

    suite = get_suite("width")
    specs = {s.arm: s for s in width.plan(RunOptions("quick", range(1)), [])}
    requests = estimate._Requests()
    estimate.price_specs([(suite, s) for s in specs.values()], requests)
    assert {model.d_ff for model in requests.shapes.values()} == {192, 96, 48}
    timings = {key: estimate.Timing(build_s=0.01, step_s=0.01 + model.d_ff / 1e4,
                                    forward_s=0.004, call_s=0.001)
               for key, model in requests.shapes.items()}
    cal = estimate.Calibration(seconds=0.0, timings=timings, measured=len(timings), fitted=0,
                               speed=1.0, startup_s=0.0, worker_start_s=0.0)
    price = {arm: width.price(spec, cal) for arm, spec in specs.items()}
    steps = width.SIZES["quick"].steps
    assert price["nested"] - price["ordinary"] == pytest.approx(
        sum(estimate.training_s(width.model_config("ordinary", width.SIZES["quick"], d_ff=k),
                                estimate.TrainShape.from_payload(specs["ordinary"].payload["train"]),
                                cal) for k in (96, 48)), rel=1e-9)
    assert price["nested"] > 2 * price["ordinary"] > price["ordinary"] > price["narrow"] > 0
    assert price["ordinary"] > steps * (0.01 + 192 / 1e4)


def test_a_failed_run_is_read_at_no_width_and_counted(tiny_summary):
    from blocklab.experiments.suites.width.summary import _loss_at, _statuses

    failed = RunResult(status="diverged", extra={"width_loss": {"64": 1.0}})
    assert _loss_at(failed, 64) is None and _loss_at(None, 64) is None
    assert _statuses([failed, None]) == {"diverged": 1, "missing": 1}
