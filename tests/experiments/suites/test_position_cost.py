"""C31's timing at a realistic shape (`position.realistic_cost`): reported, never graded; the
tiny size exercises the code in a fraction of a second and says it is not a realistic timing."""

import dataclasses
import time

import pytest
import torch

from blocklab.experiments.options import RunOptions
from blocklab.experiments.suites import position as ps
from blocklab.experiments.suites.position import pricing
from blocklab.experiments.suites.position import realistic_cost as pc
from blocklab.experiments.suites.position.data import ShapeTiming
from blocklab.experiments.summaries import TimeRatio


@pytest.mark.exclusive  # it times the machine: no other test beside it
def test_time_shapes_runs_at_tiny_and_returns_every_field():
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # as the cost run's `_one_thread` does
    try:
        tick = time.perf_counter()
        times = pc.time_shapes("tiny")
        took = time.perf_counter() - tick
    finally:
        torch.set_num_threads(before)
    shape = pc.SHAPES["tiny"]
    assert took < 5  # a fraction of a second on a quiet core
    assert times.threads == 1 and times.batch_size == 1
    for by_scheme in (times.prefill_s, times.decode_s):
        assert set(by_scheme) == set(pc.SCHEMES)
        assert all(len(v) == shape.repeats and min(v) > 0 for v in by_scheme.values())
    # stored as the cost run's "realistic" entry, in the keys it always had
    assert list(dataclasses.asdict(times)) == [
        "label", "d_model", "n_layers", "n_heads", "batch_size", "prompt_tokens",
        "decode_tokens", "repeats", "threads", "prefill_s", "decode_s", "wall_time_s"]
    timing = pc.shape_timing(times)
    assert isinstance(timing, ShapeTiming) and "not a realistic timing" in timing.label
    assert (timing.d_model, timing.n_heads, timing.n_layers) == (64, 2, 1)
    assert timing.prompt_tokens == shape.prompt_tokens and timing.repeats == shape.repeats
    assert set(timing.prefill_ms) == set(timing.decode_vs_none) == set(pc.SCHEMES)
    assert timing.prefill_vs_none["none"] == TimeRatio(1.0, 1.0, 1.0, shape.repeats)
    assert pc.shape_timing(None) is None  # a cost run from before it was timed


@pytest.mark.parametrize("size", ["quick", "full"])
def test_quick_and_full_time_a_realistic_shape(size):
    shape = pc.SHAPES[size]
    assert shape.label == "realistic shape"
    assert shape.d_model >= 1024 and shape.prompt_tokens >= 1024
    assert shape.d_model // shape.n_heads == 64 and 1 <= shape.n_layers <= 2
    assert shape.repeats >= 5
    config = pc.shape_config(size, "rope")
    assert config.max_seq_len == shape.prompt_tokens + shape.decode_tokens
    assert pc.REFERENCE_S["quick"] <= 60  # the budget: at most a minute of one core at quick


def test_the_cost_run_plans_and_prices_the_realistic_timing():
    (cost,) = [s for s in ps.plan(RunOptions("quick", range(1)), []) if s.arm == "cost"]
    # a change re-plans the run
    assert cost.payload["realistic"] == dataclasses.asdict(pc.SHAPES["quick"])

    class Cal:  # every reference second costs one second, every model time nothing
        def reference_s(self, seconds):
            return seconds

        def build_s(self, *args):
            return 0.0

        step_s = forward_s = build_s

    expected = pc.REFERENCE_S["quick"] + pricing._PROFILER_REFERENCE_S
    assert ps.price(cost, Cal()) == pytest.approx(expected)
