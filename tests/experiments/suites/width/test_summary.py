"""The width suite's summary (C37): the tiny size end to end, its width losses against the run's
own evaluation and the contrasts by hand, each width's cost against the built model, and a
failed run."""

import math

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import ResultStore
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites import get_suite, load_summary
from blocklab.experiments.suites.base import statuses
from blocklab.experiments.suites.tuning import lr_trials
from blocklab.experiments.suites.width import runs as width
from blocklab.experiments.suites.width.summary import _loss_at, width_cost
from blocklab.nn import DecoderLM, narrowed


def test_tiny_end_to_end_width_losses_against_the_runs_own_evaluation(tiny_runs):
    summary = load_summary(tiny_runs, "width", "tiny")
    suite = get_suite("width")
    options = RunOptions.for_suite(suite, "tiny")
    tuned_store = ResultStore(tiny_runs / "width" / options.folder(tuning=True))
    tuned = [(s, tuned_store.load(s.run_id)) for s in width.tune(options, [])
             if tuned_store.has(s.run_id)]
    store = ResultStore(tiny_runs / "width" / options.folder())
    runs = [(s, store.load(s.run_id)) for s in suite.plan(options, tuned)]
    n = len(options.seeds)
    size = width.SIZES["tiny"]
    m = size.d_ff
    assert summary.runs == 3 * n and len(tuned) == 3
    for spec, result in runs:
        read = result.extra["width_loss"]
        assert list(read) == [str(k) for k in width.read_widths(spec.arm, size)]
        # the whole width reads the run's own end-of-run loss (same windows, same batches)
        whole = str(size.width_of(spec.arm))
        assert read[whole] == pytest.approx(result.final.val_loss, rel=1e-12)
        assert all(math.isfinite(v) and 0 < v < math.log(256) + 1 for v in read.values())
    # every arm at the one lr the tuning chose
    lr = width.tuning(size, lr_trials(tuned)).lr
    assert summary.data.lr == lr and {s.payload["train"]["lr"] for s, _ in runs} == {lr}
    # the contrasts, by hand from the stored width losses, paired by seed
    by = {(s.arm, s.seed): r.extra["width_loss"] for s, r in runs}
    assert by[("nested", 0)][str(m)] != by[("ordinary", 0)][str(m)]  # other weights trained

    def rel(a, ka, b, kb):
        return [100 * (by[(a, s)][str(ka)] - by[(b, s)][str(kb)]) / by[(b, s)][str(kb)]
                for s in options.seeds]

    data = summary.data
    for k in (m // 2, m // 4):
        want = rel("ordinary", k, "nested", k)
        assert data.sliced_vs_nested_pct[str(k)].mean == pytest.approx(sum(want) / n, rel=1e-9)
    assert data.nested_price_pct.mean == pytest.approx(sum(rel("nested", m, "ordinary", m)) / n,
                                                       rel=1e-9)
    assert data.nested_vs_narrow_pct.mean == pytest.approx(
        sum(rel("nested", m // 2, "narrow", m // 2)) / n, rel=1e-9)
    assert [p.width for p in data.points] == list(size.widths)
    assert set(data.points[0].loss) == {"ordinary", "nested"}
    assert set(data.points[1].loss) == set(width.ARMS)
    assert data.status == {arm: {"ok": n} for arm in width.ARMS}
    titles = [t.title for t in summary.tables]
    assert titles[:2] == ["Validation loss at each FFN width, with what that width costs",
                          "The contrasts C37 grades (paired by seed, % of the second loss)"]


@pytest.mark.parametrize("size", ["tiny", "quick"])
def test_each_widths_cost_is_the_built_model_of_that_width(size):
    s = width.SIZES[size]
    for k in s.widths:
        params, ffn_params, flops = width_cost(s, k)
        model = DecoderLM(width.model_config("ordinary", s, d_ff=k))
        assert params == sum(p.numel() for p in model.parameters())
        ffn = sum(p.numel() for layer in model.layers for p in layer.ffn.parameters())
        assert ffn_params == ffn == 3 * s.d_model * k * s.n_layers
        assert flops > 2 * params - 2 * s.d_model * 256  # at least 2 FLOPs per matrix weight


def test_width_cost_flops_count_the_sliced_forward_exactly():
    """The FLOPs a width saves are its FFN matmuls: 2 · 3 · d · (m − k) per token per layer,
    checked against torch's flop counter on the model actually narrowed."""
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
        assert width_cost(s, m)[2] - width_cost(s, k)[2] == saved // s.seq_len


def test_a_failed_run_is_read_at_no_width_and_counted():
    failed = RunResult(status="diverged", extra={"width_loss": {"64": 1.0}})
    assert _loss_at(failed, 64) is None and _loss_at(None, 64) is None
    assert statuses([failed, None]) == {"diverged": 1, "missing": 1}
