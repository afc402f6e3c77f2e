"""The ffn suite's runs: equal parameter counts, arms that really differ, the zero-gradient
probe, and the plan (tuning, each arm's lr, the longer runs)."""

import pytest
import torch

from blocklab.experiments.options import RunOptions
from blocklab.experiments.suites import get_suite
from blocklab.experiments.suites.base import TUNING_SEEDS
from blocklab.experiments.suites.ffn import runs as ffn
from blocklab.experiments.trainer import build_model
from blocklab.nn.ffn import equal_param_gated_width

TINY = RunOptions("tiny")


@pytest.mark.parametrize("size", ["quick", "full"])
def test_arms_hold_equal_parameters_within_one_percent_as_built(size):
    d = ffn.SIZES[size].d_model
    # count_params, the built model's count for every FFN (tests/budget/test_against_torch.py)
    counts = {arm: ffn.param_count(arm, ffn.SIZES[size]) for arm in ffn.ARMS}
    assert max(counts.values()) / min(counts.values()) - 1 < 0.01
    for arm in ffn.ARMS:
        gated = arm in ("glu", "reglu", "geglu", "swiglu", "bilinear")
        assert ffn.ffn_width(arm, d) == (equal_param_gated_width(4 * d) if gated else 4 * d)


def test_every_arm_changes_the_forward_output_and_nothing_else():
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


@pytest.mark.parametrize(("name", "widths"), [
    ("quick", ((64, ffn.GRADED_ARMS),)),  # only the arms C16 grades, at the size's own width
    ("full", ((96, ffn.ARMS), (48, ffn.TREND_ARMS), (64, ffn.TREND_ARMS)))])
def test_tuning_runs_every_arm_at_every_lr_on_seeds_no_evaluation_uses(name, widths):
    size = ffn.SIZES[name]
    specs = ffn.tune(RunOptions(name))
    assert len(specs) == (sum(len(arms) for _, arms in widths) * len(size.lr_grid.base)
                          * size.tuning_seeds)
    assert {(s.arm, s.payload["train"]["lr"], s.payload["model"]["d_model"]) for s in specs} == {
        (arm, lr, d) for d, arms in widths for arm in arms for lr in size.lr_grid.base}
    assert min(s.seed for s in specs) == TUNING_SEEDS
    assert {s.payload["train"]["init"] for s in specs} == {"fan_in"}
    lrs = {**dict.fromkeys(ffn.ARMS, 3e-3), "swiglu": 3e-2}
    evaluated = ffn.plan_at(RunOptions("full", range(2)), lrs)
    swiglu = [s for s in evaluated if s.arm == "swiglu" and s.payload["kind"] == "train"]
    assert {s.payload["train"]["lr"] for s in swiglu} == {3e-2}
    again = [s for s in evaluated if s.payload["kind"] == "sensitivity"]
    full = ffn.SIZES["full"]
    assert {(s.payload["train"]["init"], s.payload["train"]["lr"]) for s in again} == {
        (full.sensitivity_init, full.sensitivity_lr)}


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
