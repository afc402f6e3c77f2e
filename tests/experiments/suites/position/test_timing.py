"""position.timing: the SDPA kernels and masks each scheme gets, and C31's timing at a realistic
shape (reported, never graded); the tiny size exercises the code in a fraction of a second and
says it is not a realistic timing."""

import dataclasses
import os
import time

import pytest
import torch

from blocklab.experiments.env import torch_threads
from blocklab.experiments.options import RunOptions
from blocklab.experiments.suites.position import runs, timing
from blocklab.experiments.suites.position.summary import ShapeTiming, shape_timing
from blocklab.experiments.summaries import TimeRatio
from blocklab.experiments.trainer import build_model


def test_kernel_and_mask_detection_names_each_scheme(capfd):
    L = runs.SIZES["tiny"].L
    ids = torch.randint(0, 256, (1, L), generator=torch.Generator().manual_seed(0))
    for scheme in timing.COST_SCHEMES:
        tc = runs.train_config(RunOptions("tiny"), 0)
        model = build_model(runs.arm_config("tiny", scheme), tc).eval()
        with torch.no_grad():
            kernels = timing.sdpa_kernels(lambda m=model: (m(ids), os.write(2, b"kept line\n")))
            masks = timing.sdpa_masks(lambda m=model: m(ids))
        assert kernels and all(k.startswith("aten::_scaled_dot_product") for k in kernels)
        if scheme == "alibi":
            assert masks == [f"float32 mask [1, 2, {L}, {L}]"]
        else:
            assert masks == ["is_causal"]
        assert timing.accepted_by("MATH", lambda m=model: m(ids)) is True
    refused = timing.accepted_by("EFFICIENT_ATTENTION", lambda: torch.nn.functional.
                                    scaled_dot_product_attention(*torch.randn(3, 1, 1, 4, 8)))
    assert isinstance(refused, str) and refused  # no CPU kernel for this backend
    # kineto writes "USDT: ... profiler_start/stop" to fd 2 on every profile, at any log level:
    # the kernel probe keeps those off stderr and keeps everything else written meanwhile
    assert capfd.readouterr().err.splitlines() == ["kept line"] * len(timing.COST_SCHEMES)


@pytest.mark.exclusive  # it times the machine: no other test beside it
def test_time_shapes_runs_at_tiny_and_returns_every_field():
    with torch_threads(1):  # as the cost run times it
        tick = time.perf_counter()
        times = timing.time_realistic_shapes("tiny")
        took = time.perf_counter() - tick
    shape = timing.REALISTIC_SHAPES["tiny"]
    assert took < 5  # a fraction of a second on a quiet core
    assert times.threads == 1 and times.batch_size == 1
    for by_scheme in (times.prefill_s, times.decode_s):
        assert set(by_scheme) == set(timing.COST_SCHEMES)
        assert all(len(v) == shape.repeats and min(v) > 0 for v in by_scheme.values())
    # stored as the cost run's "realistic" entry, in the keys it always had
    assert list(dataclasses.asdict(times)) == [
        "label", "d_model", "n_layers", "n_heads", "batch_size", "prompt_tokens",
        "decode_tokens", "repeats", "threads", "prefill_s", "decode_s", "wall_time_s"]
    shaped = shape_timing(times)
    assert isinstance(shaped, ShapeTiming) and "not a realistic timing" in shaped.label
    assert (shaped.d_model, shaped.n_heads, shaped.n_layers) == (64, 2, 1)
    assert shaped.prompt_tokens == shape.prompt_tokens and shaped.repeats == shape.repeats
    assert set(shaped.prefill_ms) == set(shaped.decode_vs_none) == set(timing.COST_SCHEMES)
    assert shaped.prefill_vs_none["none"] == TimeRatio(1.0, 1.0, 1.0, shape.repeats)
    assert shape_timing(None) is None  # a cost run from before it was timed
