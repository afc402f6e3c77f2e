"""The norm-cost suite's runs (`norm_cost.runs`): the kernel runs at --size full only, read by
the tables they feed, and one like-for-like timing per thread count at every size."""

from blocklab.experiments.options import RunOptions
from blocklab.experiments.suites.norm_cost import runs, summary, timing

from ..conftest import bare_spec, stored


def test_kernel_runs_are_full_only_and_their_tables_read_them():
    """The full size plans one kernel run per shape and thread count; the tables, ratios and
    saved bytes come from such runs (timed here at two small shapes)."""
    full = runs.SIZES["full"]
    kernels = [s for s in runs.plan(RunOptions("full"), []) if s.arm == "kernels"]
    assert len(kernels) == len(full.kernels.shapes) * len(full.threads)
    assert all(s.timed and s.payload["compile"] for s in kernels)  # none below full: graded_only
    shapes = [(64, 256), (256, 256)]
    results = [(bare_spec("kernels"), stored(timing.timed_run(
        lambda d=d, rows=rows: timing.time_kernels(d, rows, repeats=3, compile=False, threads=1,
                                                   block_s=0.002)))) for d, rows in shapes]
    summarised = summary.summarise(RunOptions("full"), results)
    assert summarised.tables[0].title == "Forward+backward, 1 thread(s): median ms per call"
    assert len(summarised.tables[0].rows) == 3 * len(shapes)  # blocklab, torch, plain per shape
    assert any(t.title.startswith("Saved for backward") for t in summarised.tables)
    assert not any(n.startswith("Run at --size full only") for n in summarised.notes)
    data = summarised.data
    assert len(data.kernels) == 6 * len(shapes)
    for kernel in data.kernels:
        assert kernel.fwd_ms > 0 and kernel.fwdbwd_ms > 0 and kernel.saved_bytes > 0
    assert data.ratios
    for ratio in data.ratios:
        assert ratio.time.ci_low <= ratio.time.ratio <= ratio.time.ci_high


def test_every_size_plans_one_like_for_like_run_per_thread_count_at_the_step_shape():
    for size, config in runs.SIZES.items():
        like = [s for s in runs.plan(RunOptions(size), []) if s.arm == "like-for-like"]
        step = config.step
        assert [s.payload["threads"] for s in like] == list(config.threads)
        assert all(s.timed and s.payload["d"] == step.d_model
                   and s.payload["rows"] == step.batch_size * step.seq_len for s in like)
