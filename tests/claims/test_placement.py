"""C12, C13 and C19 (`blocklab.claims.placement`): verdicts from fabricated placement
summaries, stored as `run_suite` stores them."""

import dataclasses

import pytest

from blocklab.claims import Context, run_claims
from blocklab.cli import main
from blocklab.experiments.options import RunRequest
from blocklab.experiments.suites.placement.summary import (
    GradientProbe,
    PlacementCell,
    PlacementData,
    PlacementEffect,
    SlopePrediction,
    StabilityEffect,
)
from blocklab.experiments.summaries import ArmTuning, Interval, LrTrial

from . import test_depth as td
from .conftest import ci, graded, store_summary


def _placement(pre_failures: int, effect: PlacementEffect,
               spread: dict[str, Interval], stable: StabilityEffect | None = None,
               interior: bool = True) -> PlacementData:
    grads = {p: {init: GradientProbe(
        depths=[2, 4, 8], last_layer_grad=[1.0, 0.7, 0.5], first_layer_grad=[1.0, 1.0, 1.0],
        slope_last=-0.5, slope_first=0.1, slope_last_ci=Interval(0),
        slope_first_ci=ci(0.1, -0.1, 0.3, 4), residual_rms_last=[None, None, None],
        per_layer_grad={"8": [1.0] * 8},
        # ‖∇W_down‖'s spread: context only, never graded (as large as xavier's at quick)
        layer_spread_log2={"8": ci(3.7, 3.2, 4.2, 4)},
        # with layer 0 (the embedding's input: larger, never graded) and without it (graded)
        sensitivity_spread_log2={"8": ci(3.0, 2.8, 3.2, 4)},
        sensitivity_spread_past_embedding_log2={"8": spread[init]},
        per_layer_sensitivity={"8": [4.0, *[1.0] * 6, 0.5, 1.0]})
        for init in spread} for p in ("pre", "post")}
    cells = []
    for p in ("pre", "post"):
        for w in (0, 100):
            failures = pre_failures if p == "pre" and w == 0 else 0
            cells.append(PlacementCell(
                placement=p, depth=12, warmup=w, lr=3e-3, failures=failures, runs=4,
                status={"ok": 4 - failures, "diverged": failures},
                val_loss=ci(2.0, 1.9, 2.1),
                delta_vs_pre=None if p == "pre" else ci(0.1, -0.5, 0.7), steps_done=300.0,
                val_auc=ci(2.5, 2.4, 2.6), grad_first_over_last_log2=ci(-1.0, -2.0, 0.0)))
    stable = stable or STABLE_HOLDS
    stability = [dataclasses.replace(td._arm(p, [3] * 4, 12), grid="sweep", warmup=w)
                 for p in ("pre", "post") for w in (0, 100)]
    tuning = [ArmTuning(f"{p}/12/{w}", (3e-3, 1e-2, 3e-2), 1e-2, interior, 0)
              for p in ("pre", "post") for w in (0, 100)]
    # each arm's tuning curve symmetric in log lr about its chosen 1e-2: no lr bias
    trials = [LrTrial(f"{p}/12/{w}", lr, 0, "ok", loss, 32)
              for p in ("pre", "post") for w in (0, 100)
              for lr, loss in zip((3e-3, 1e-2, 3e-2), (2.7, 2.5, 2.7), strict=True)]
    return PlacementData(
        init_gradients=grads,
        predictions=SlopePrediction(slope_last={"post": 0.0, "pre": -0.5}, init="xavier",
                                    source="test"),
        training=cells, effects=[effect], interaction_trend=ci(0.2, 0.1, 0.3, 4),
        unigram_entropy=None, seeds=4, steps=300, size={}, lr_tuning=tuning, lr_trials=trials,
        stability=stability, stability_effects=[stable])


def _effect(pre, interaction, post_ratio, post_vs_pre) -> PlacementEffect:
    return PlacementEffect(depth=12, lrs={"pre cold": 1e-2, "pre warm": 1e-2,
                                          "post cold": 1e-2, "post warm": 1e-2},
                           warmup=100, warmup_interaction=interaction,
                           pre_warmup_effect=pre, post_vs_pre_warm=post_vs_pre,
                           post_grad_first_over_last_log2=post_ratio,
                           pre_grad_first_over_last_log2=ci(0.5, 0.0, 1.0, 8))


def _stable(pre_cold_vs_warm, interaction) -> StabilityEffect:
    return StabilityEffect(grid="sweep", depth=12, warmup=33, pre_cold_vs_warm=pre_cold_vs_warm,
                           post_warm_vs_cold=interaction, warmup_interaction=interaction,
                           pre_vs_post_warm=ci(1.0, 0.5, 1.5, 8),
                           pre_vs_post_cold=ci(2.0, 1.5, 2.5, 8))


HOLDS = _effect(ci(0.0, -0.02, 0.02, 8), ci(0.3, 0.1, 0.5, 8), ci(-2.0, -3.0, -1.5, 8),
                ci(-0.05, -0.08, -0.03, 8))
FAILS = _effect(ci(0.2, 0.1, 0.3, 8), ci(0.01, -0.1, 0.1, 8), ci(1.0, 0.5, 1.5, 8),
                ci(0.05, 0.03, 0.08, 8))
FEW = _effect(*[ci(0.0, -0.01, 0.01, 2)] * 4)
# the largest stable lr: pre-norm loses under half a doubling without warmup, and warmup
# raises post-norm's by two doublings more than pre-norm's
STABLE_HOLDS = _stable(ci(0.0, -0.5, 0.5, 8), ci(2.0, 1.5, 2.5, 8))
STABLE_FAILS = _stable(ci(-3.0, -3.5, -2.5, 8), ci(0.0, -0.3, 0.3, 8))
STABLE_FEW = _stable(*[ci(0.0, -0.01, 0.01, 2)] * 2)
UNTESTABLE = "untestable-here"
SPREAD = {"gpt2": ci(0.5, 0.3, 0.7, 8), "xavier": ci(3.0, 2.5, 3.5, 8),
          "depth": ci(0.2, 0.1, 0.3, 8)}


@pytest.mark.parametrize(("pre_failures", "effect", "stable", "c19", "parts"), [
    # every testable part holds; "more expressive" is untestable, so mixed at best
    (0, HOLDS, STABLE_HOLDS, "mixed", ["confirmed"] * 5 + [UNTESTABLE]),
    # One pre-norm failure: "trains without warmup" is not shown, whatever the losses say.
    (1, HOLDS, STABLE_HOLDS, "mixed",
     ["not-reproduced-at-this-scale", *["confirmed"] * 4, UNTESTABLE]),
    # The warmup interaction's interval (+0.01 [−0.1, +0.1]) holds both its claimed +0.05 and
    # no effect: undecided, and deciding it could make the claim mixed.
    (0, FAILS, STABLE_FAILS, "inconclusive",
     ["not-reproduced-at-this-scale", "not-reproduced-at-this-scale", "inconclusive",
      "not-reproduced-at-this-scale", "not-reproduced-at-this-scale", UNTESTABLE]),
    (0, FEW, STABLE_FEW, "inconclusive", ["inconclusive"] * 5 + [UNTESTABLE]),
])
def test_placement_verdict_logic(tmp_path, pre_failures, effect, stable, c19, parts):
    rows = graded(tmp_path, "placement", _placement(pre_failures, effect, SPREAD, stable),
                  "C12", "C13", "C19")
    assert rows["C13"].verdict == "run"
    assert rows["C13"].to_dict()["rule"]["min_seeds"] == 4
    assert [p.estimate.value for p in rows["C13"].parts] == [
        effect.warmup_interaction.mean, stable.warmup_interaction.mean]  # the stable-lr finding
    assert rows["C19"].verdict == c19 and rows["C19"].error is None
    assert [p.verdict for p in rows["C19"].parts] == parts
    assert rows["C19"].to_dict()["rule"]["min_seeds"] == 4
    # C12 on pre-norm only: xavier's 8× sensitivity spread holds, gpt2's 1.4× and depth's 1.1×
    # do not: it holds under one init of three, the condition it names.
    assert [p.verdict for p in rows["C12"].parts] == [
        "not-reproduced-at-this-scale", "confirmed", "not-reproduced-at-this-scale"]
    assert rows["C12"].verdict == "conditional"
    assert "It holds under the xavier init only." in rows["C12"].summary
    assert "只在 xavier 初始化下成立" in rows["C12"].summary_zh
    cell = rows["C13"].evidence["training"][1]
    assert cell["placement"] == "pre" and cell["delta_vs_pre"] is None


@pytest.mark.parametrize(("means", "verdict"), [
    ((3.0, 3.0, 3.0), "confirmed"),  # every init: no artefact of one
    ((3.0, 0.2, 3.0), "conditional"),
    ((0.2, 0.2, 0.2), "not-reproduced-at-this-scale"),
    # every init's sensitivity within 2× (log2 < 1), though ‖∇W_down‖ spreads 13× (log2 3.7
    # [3.2, 4.2]) in the same stacks: that spread is reported, never graded
    ((0.5, 0.4, 0.1), "not-reproduced-at-this-scale"),
    # the third init not probed: an undecided part (conditional or confirmed), never dropped
    ((3.0, 3.0, None), "inconclusive"),
])
def test_c12_needs_the_spread_under_every_init(tmp_path, means, verdict):
    spread = {init: ci(m, m - 0.2, m + 0.2, 8)
              for init, m in zip(("gpt2", "xavier", "depth"), means, strict=True)
              if m is not None}
    row = graded(tmp_path, "placement", _placement(0, HOLDS, spread), "C12")["C12"]
    assert row.verdict == verdict
    assert [p.name for p in row.parts] == [
        "pre-norm, gpt2 init", "pre-norm, xavier init", "pre-norm, depth init"]
    assert (row.parts[2].verdict == "inconclusive") == (means[2] is None)
    assert row.evidence["spread_log2"]["xavier"]["mean"] == 3.7
    assert "log2 of ‖∇W_down‖" not in row.summary  # named as context, in its own sentence
    assert "Context, not graded" in row.summary and "+3.70" in row.summary
    # The sensitivity profile says where: the most sensitive input is layer 0's (4.0), the
    # least layer 7's (0.5); the final norm's input (the ninth value) is not a layer's.
    assert "largest entering layer 0, smallest entering layer 7" in row.summary


def test_claims_precision_reads_bf16_results_and_float32_only_suites_at_fp32(tmp_path, capsys,
                                                                           one_line_exit_2):
    # bf16 placement results hold, float32 ones fail: `--precision bf16` grades the former
    store_summary(tmp_path, "placement", _placement(0, FAILS, SPREAD, STABLE_FAILS))
    store_summary(tmp_path, "placement", _placement(0, HOLDS, SPREAD, STABLE_HOLDS),
                  folder="quick+bf16")
    ctx = Context(RunRequest(tmp_path, "quick", precision="bf16"))
    (row,) = run_claims(["C19"], ctx)
    assert row.verdict == "mixed" and row.parts[1].verdict == "confirmed"
    assert "--precision bf16" in row.command
    (fp32,) = run_claims(["C19"], Context(RunRequest(tmp_path, "quick")))
    assert fp32.verdict == "inconclusive" and "--precision" not in fp32.command
    # norm-cost measures float32 only: read at fp32 whatever is asked, and said so
    assert ctx.precision_of("norm-cost") == "fp32" and ctx.fp32_only == {"norm-cost"}
    assert main(["claims", "C19", "C18", "--precision", "bf16", "--results",
                 str(tmp_path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "norm-cost measure float32 only and were read at fp32" in out
    one_line_exit_2(["claims", "--precision", "fp16"],
                    "--precision='fp16' is not allowed; expected one of ['fp32', 'bf16']")


def test_c19_decides_a_loss_contrast_only_where_every_reading_of_its_lr_bias_agrees(tmp_path):
    """Pre-norm cold's lopsided curve biases its contrasts: the parts the bias flips stay
    inconclusive and say both readings; the unbiased parts are still decided by Holm."""
    data = _placement(0, HOLDS, SPREAD, STABLE_HOLDS)
    curve = {3e-3: 3.2, 1e-2: 2.5, 3e-2: 2.45}
    lopsided = [t if t.arm != "pre/12/0" else dataclasses.replace(t, val_loss=curve[t.lr])
                for t in data.lr_trials]
    row = graded(tmp_path, "placement", dataclasses.replace(data, lr_trials=lopsided), "C19")["C19"]
    first = row.parts[0]
    assert first.verdict == "inconclusive"
    assert ("read as measured it is confirmed, with the tuned rates' bias +0.097 removed "
            "not-reproduced-at-this-scale") in first.reason
    assert row.parts[2].verdict == "inconclusive" and "removed confirmed" in row.parts[2].reason
    assert [p.verdict for p in row.parts[1:2] + row.parts[3:5]] == ["confirmed"] * 3
    assert "Holm's step-down stopped" not in " ".join(p.reason for p in row.parts)
