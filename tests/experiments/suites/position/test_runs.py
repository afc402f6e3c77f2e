"""position.runs: every arm is a real ablation, RoPE's scalings change what they should, the loss
slicing and sliding windows pick the right tokens, RoPE's relative-position error behaves as
float64/bfloat16 must, the order probe matches a direct computation, and the plan's run ids and
prices stay as they were."""

import dataclasses
import json
import math

import numpy as np
import pytest
import torch

from blocklab.experiments.data import validation_windows
from blocklab.experiments.options import RunOptions
from blocklab.experiments.suites.position import runs
from blocklab.experiments.suites.position.timing import REALISTIC_SHAPES, REFERENCE_S
from blocklab.experiments.trainer import build_model, evaluate


def _model(arm, size="tiny", seed=0):
    return build_model(runs.arm_config(size, arm), runs.train_config(RunOptions(size), seed)).eval()


def _logits(model, ids):
    with torch.no_grad():
        return model(ids)


def test_every_position_arm_changes_the_forward_output():
    ids = torch.randint(0, 256, (2, 64), generator=torch.Generator().manual_seed(0))
    logits = {arm: _logits(_model(arm), ids) for arm in runs.schemes("tiny")}
    large = runs.schemes("tiny")[2]  # learned with the larger table
    for a in logits:
        for b in logits:
            if a < b and {a, b} != {"learned", large}:
                assert not torch.allclose(logits[a], logits[b]), (a, b)
    # The two learned tables start from the same (seed, name) stream, so within L they agree:
    # the arms differ only in the rows past L.
    torch.testing.assert_close(logits["learned"], logits[large], rtol=0, atol=0)


def test_rope_scalings_change_the_output_past_L():
    L = runs.SIZES["tiny"].L
    model = _model("rope")
    ids = torch.randint(0, 256, (1, 2 * L), generator=torch.Generator().manual_seed(1))
    plain = _logits(model, ids)
    for kind in runs.SCALINGS:
        scaled = runs.with_rope_scaling(model, runs.scaling_config(kind, 2, L))
        assert not torch.allclose(_logits(scaled, ids), plain), kind
    # Same weights: with no scaling the copy is the model.
    torch.testing.assert_close(_logits(runs.with_rope_scaling(model, None), ids), plain)


def test_learned_table_past_L_is_recorded_not_raised():
    L = runs.SIZES["tiny"].L
    val = np.arange(4 * L + 10, dtype=np.uint8)
    read = runs.extrapolation(_model("learned"), val, L, (1, 2), n_windows=2)
    assert read.loss_beyond_L == {"2": runs.UNAVAILABLE}
    assert "learned table" in read.errors["2"]
    assert read.loss_at_L is not None and read.sliding["2"] is not None
    assert read.per_position["1"] is not None and read.per_position["2"] is None
    large = runs.extrapolation(_model(runs.schemes("tiny")[2]), val, L, (2,), n_windows=2)
    assert isinstance(large.loss_beyond_L["2"], float) and large.errors == {}
    far = runs.finite_far_out(_model("learned"))
    assert far["float32"] is None and "exceeds learned table" in far["error"]


def test_loss_beyond_picks_exactly_the_positions_at_or_past_L():
    L = 8
    per_position = [100.0] * L + [1.0, 2.0, 3.0, 6.0]
    assert runs.loss_beyond(per_position, L) == 3.0
    assert runs.loss_beyond(list(range(3 * L)), L) == float(np.mean(range(L, 3 * L)))
    with pytest.raises(ValueError, match="none at or past L=8"):
        runs.loss_beyond([1.0] * L, L)
    # Through the evaluation: the reported number is the mean of the curve's entries >= L.
    model = _model("alibi")
    val = np.random.default_rng(0).integers(0, 256, 5000).astype(np.uint8)
    L = runs.SIZES["tiny"].L
    read = runs.extrapolation(model, val, L, (2,), n_windows=2, sliding=False)
    curve = read.per_position["2"]
    assert len(curve) == 2 * L and read.sliding == {}
    assert read.loss_beyond_L["2"] == pytest.approx(float(np.mean(curve[L:])), rel=1e-12)


def test_sliding_windows_score_every_token_once_below_the_window():
    L = runs.SIZES["tiny"].L
    model = _model("learned")  # any position >= L would raise
    rows = torch.randint(0, 256, (3, 4 * L + 1), generator=torch.Generator().manual_seed(2))
    curve = runs.sliding_window_loss(model, rows, L, L // 2)
    assert len(curve) == 4 * L and all(math.isfinite(v) for v in curve)
    # One window: the same numbers as a plain evaluation of that window.
    single = runs.sliding_window_loss(model, rows[:, :L + 1], L, L // 2)
    reference = evaluate(model, {L: rows[:, :L + 1]}, batch_tokens=4096)[L]["per_position"]
    np.testing.assert_allclose(single, reference, rtol=1e-6)
    # The first L targets of the long read come from the first window alone.
    np.testing.assert_allclose(curve[:L], reference, rtol=1e-6)
    with pytest.raises(ValueError, match="do not tile"):
        runs.sliding_window_loss(model, rows[:, :L + 11], L, L // 2)


def test_rope_relative_error_is_zero_in_float64_and_grows_in_bfloat16():
    shifts = (0, 10, 100, 10_000, 100_000)
    exact = dict(runs.rope_relative_error("float64", shifts))
    assert max(exact.values()) < 1e-9
    low = dict(runs.rope_relative_error("bfloat16", shifts))
    assert low[0] == 0.0
    assert low[10] < low[10_000] < low[100_000]
    assert low[100_000] > 0.5  # position 10^5 in bfloat16 is rounded to a multiple of 512
    # float16 cannot hold position 10^5 at all: reported as None (NaN/inf), not as a number.
    assert dict(runs.rope_relative_error("float16", shifts))[100_000] is None
    # blocklab's pipeline keeps float32 angles: bfloat16 only adds a constant rounding floor.
    ours = dict(runs.rope_relative_error("bfloat16", shifts, blocklab=True))
    assert ours[100_000] < 0.1


def test_yarn_betas_keep_the_paper_split_of_the_spectrum():
    assert runs.yarn_betas(4096) == (32.0, 1.0)
    assert runs.yarn_betas(128) == (1.0, 1 / 32)
    # Llama 2 (L 4096, 64 pairs): ramp over pairs 20..46; at L=128 with 16 pairs the rescaled
    # β give 5..12, the same fractions (to the rounding of floor/ceil).
    assert runs.yarn_ramp_pairs(4096, 128, 32.0, 1.0) == (20, 46)
    assert runs.yarn_ramp_pairs(128, 32, *runs.yarn_betas(128)) == (5, 12)


def test_reversed_prefix_keeps_the_bag_and_the_last_token():
    rows = torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8]])
    assert runs.reversed_prefixes(rows).tolist() == [[3, 2, 1, 4], [7, 6, 5, 8]]


def test_order_probe_matches_a_direct_computation_and_is_zero_on_palindromes():
    model = _model("none")
    val = np.random.default_rng(0).integers(0, 256, 4000).astype(np.uint8)
    probe = runs.order_probe(model, val, prefix_len=16, prefixes=3)

    rows = validation_windows(val, 15, 3)
    with torch.no_grad():
        p = torch.softmax(model(rows)[:, -1].double(), -1).numpy()
        q = torch.softmax(model(runs.reversed_prefixes(rows))[:, -1].double(), -1).numpy()
    tv, kl = np.mean(0.5 * np.abs(p - q).sum(-1)), np.mean((p * np.log(p / q)).sum(-1))
    assert probe["tv"] == pytest.approx(float(tv), rel=1e-9, abs=1e-12)
    assert probe["kl"] == pytest.approx(float(kl), rel=1e-9, abs=1e-12)
    assert 0 < probe["tv"] < 1 and probe["kl"] > 0
    # A constant prefix reversed is itself: no change, exactly.
    flat = np.full(4000, 7, dtype=np.uint8)
    same = runs.order_probe(model, flat, prefix_len=16, prefixes=2)
    assert same["tv"] == 0.0 and same["kl"] == 0.0


def test_quick_plans_and_prices_the_timed_cost_run():
    (cost,) = [s for s in runs.plan(RunOptions("quick", range(1)), []) if s.arm == "cost"]
    # timed alone; a change to the realistic timing re-plans the run
    assert cost.timed and cost.payload["realistic"] == dataclasses.asdict(REALISTIC_SHAPES["quick"])

    class Cal:  # every reference second costs one second, every model time nothing
        def reference_s(self, seconds):
            return seconds

        def build_s(self, *args):
            return 0.0

        step_s = forward_s = build_s

    expected = REFERENCE_S["quick"] + runs._PROFILER_REFERENCE_S
    assert runs.price(cost, Cal()) == pytest.approx(expected)


def test_run_ids_are_pinned():
    """The sizes' settings are hashed into the run ids (a change re-plans the runs): ids made
    before `SIZES` held dataclasses stay the same."""
    def ids(options):
        return {s.label: s.run_id for s in runs.plan(options, [])}

    # (the training runs' ids moved once, when every size but tiny registered a learn margin)
    quick = ids(RunOptions("quick", range(2, 3)))
    assert quick["none seed 2"] == "087feebd7a7a"
    assert quick["position cost (timed)"] == "022751fae15b"
    full = ids(RunOptions("full", range(2, 3), precision="bf16"))
    assert full["passkey none seed 2"] == "b8e164f9ce1b" and full["none seed 2"] == "2f38444fabbb"
    (size_config,) = {json.dumps(s.payload["size_config"], sort_keys=True)
                      for s in runs.plan(RunOptions("quick", range(2)), [])
                      if s.payload["kind"] == "train"}
    assert json.loads(size_config)["train"]["lr_grid"] == {"base": [1e-3, 3e-3, 1e-2],
                                                           "factor": 3.0, "max_extensions": 3}
    tc = runs.train_config(RunOptions("tiny"), 3)  # no lr: the grid's middle
    assert (tc.seed, tc.lr, tc.seq_len) == (3, 3e-3, 128)
