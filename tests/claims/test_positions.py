"""C21 and C29–C31: the exact order probes, and verdicts on stored synthetic position
summaries."""

import dataclasses
from pathlib import Path

import pytest
import torch

from blocklab.claims import positions as cp
from blocklab.claims.registry import (
    C31_ALIBI_FLOPS_PART,
    C31_ROPE_FLOPS_PART,
    C31_ROPE_PARAMS_PART,
    C31_ROPE_SDPA_PART,
    registered,
)
from blocklab.experiments.suites.position.summary import (
    FineTune,
    OrderProbe,
    PositionArm,
    PositionCost,
    PositionData,
    SchemeCost,
    ShapeTiming,
    YarnBetas,
    YarnRamp,
)
from blocklab.experiments.summaries import Interval, TimeRatio
from blocklab.nn import Attention

from .conftest import ci, graded


# --- exact probes ---------------------------------------------------------------------------------
def test_bidirectional_attention_without_positions_is_equivariant_and_scores_asymmetric():
    for seed in range(3):
        assert cp.equivariance_error(causal=False, seed=seed) <= 1e-12
        assert cp.equivariance_error(causal=True, seed=seed) > 1e-3
    # and scores are asymmetric unless W_q = W_k
    assert cp.score_asymmetry(seed=0) > 1e-3
    assert cp.score_asymmetry(seed=0, tied=True) <= 1e-12


def test_probe_uses_the_modules_weights_as_its_forward_does():
    torch.manual_seed(0)
    attn = Attention(16, 2, 2, 8).double().eval()
    x = torch.randn(2, 6, 16, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(cp.attention_outputs(attn, x, causal=True), attn(x),
                                   rtol=0, atol=1e-12)
        # Bidirectional, by hand: softmax(q kᵀ / √8) v per head, no mask.
        q, k, v = (proj(x).view(2, 6, 2, 8).transpose(1, 2)
                   for proj in (attn.q_proj, attn.k_proj, attn.v_proj))
        y = torch.softmax(q @ k.transpose(-2, -1) / 8 ** 0.5, -1) @ v
        ref = attn.o_proj(y.transpose(1, 2).reshape(2, 6, 16))
        torch.testing.assert_close(cp.attention_outputs(attn, x, causal=False), ref,
                                   rtol=0, atol=1e-12)


# --- verdicts from synthetic summaries ----------------------------------------------------------
def _arm(pcts) -> PositionArm:
    """An arm read at each multiple: a percentage, an Interval, or a string for a read not made."""
    reads = {m: (p if isinstance(p, str | Interval) else ci(p)) for m, p in pcts.items()}
    return PositionArm(loss_at_L=ci(2.0), loss_beyond_L=reads,
                       sliding={m: None for m in pcts}, extrapolated_minus_sliding=reads,
                       extrapolated_vs_sliding_pct=reads, per_position={}, passkey=None)


def _cost(rope_train=1.02, alibi_train=1.5, *, decode=1.0, rope_mask="is_causal",
          kernels=True, realistic=True) -> PositionCost:
    """A cost run's summary: `decode` scales every decode time and ratio (the toy shape's and
    the realistic shape's), so a verdict that ignores timings cannot move with it."""
    kernel = ["aten::_scaled_dot_product_flash_attention_for_cpu"] if kernels else []

    def scheme(train, mask):
        r = 1.03 * decode
        return SchemeCost(params=1000, params_module=1000, train_ms=10 * train,
                          decode_ms=1.0 * decode,
                          train_vs_none=TimeRatio(train, train - 0.01, train + 0.01, 20),
                          decode_vs_none=TimeRatio(r, r - 0.02, r + 0.02, 20),
                          kernels_train=kernel, kernels_decode=kernel,
                          masks_train=[mask], masks_decode=["none"], flash_train=True,
                          flash_decode=True)

    def ratios(value):
        return {"none": TimeRatio(1.0, 1.0, 1.0, 6), "rope": TimeRatio(value, value - 0.1,
                                                                       value + 0.1, 6),
                "alibi": TimeRatio(1.4 * value, 1.3 * value, 1.5 * value, 6)}

    shape = ShapeTiming(label="realistic shape", d_model=1024, n_layers=2, n_heads=16,
                        batch_size=1, prompt_tokens=1024, decode_tokens=32, repeats=6,
                        threads=1, prefill_ms={"none": 600.0, "rope": 610.0, "alibi": 840.0},
                        decode_ms={k: 15.0 * decode for k in ("none", "rope", "alibi")},
                        prefill_vs_none=ratios(1.02), decode_vs_none=ratios(1.01 * decode),
                        wall_time_s=25.0)
    return PositionCost(threads=1, L=128, batch_size=16, prompt_tokens=96, decode_tokens=32,
                        repeats=20, params={"none": 1000, "rope": 1000, "alibi": 1000},
                        schemes={"none": scheme(1.0, "is_causal"),
                                 "rope": scheme(rope_train, rope_mask),
                                 "alibi": scheme(alibi_train, "float32 mask [1, 2, 128, 128]")},
                        realistic=shape if realistic else None)


def _data(arms, *, cost=None, tv=0.2) -> PositionData:
    ramp = YarnRamp(beta_fast=32.0, beta_slow=1.0, ramp_pairs=[0, 1])
    order = {"none": OrderProbe(prefix_len=64, prefixes=64, tv=ci(tv, tv - 0.05, tv + 0.05),
                                kl=ci(0.5), loss_minus_unigram=ci(-1.5, -1.6, -1.4))}
    return PositionData(
        L=128, mults=[1, 2, 4, 8, 16], eval_lengths=[128, 256, 512, 1024, 2048], arms=arms,
        relative_error={}, relative_error_blocklab={}, finite_past_max_seq_len={},
        yarn=YarnBetas(paper=ramp, rescaled=ramp, rotary_pairs=8, reference_length=128),
        train={}, order=order, cost=cost,
        finetune=FineTune(factor=4, scale=16, steps=40, lr=1e-3,
                          arms={"none": "rope+ft4x", "ntk": "rope+ntk+ft4x",
                                "yarn": "rope+yarn+ft4x"}))


def _row(tmp_path: Path, data: PositionData, cid: str):
    return graded(tmp_path, "position", data, cid)[cid]


def _c30_arms(scaled_16=3.0, plain_16=40.0):
    good = {"2": 1.0, "4": 2.0, "8": 3.0, "16": scaled_16}
    return {"rope": _arm({"2": 1.0, "4": 2.0, "8": 20.0, "16": plain_16}),
            "rope+ntk": _arm(good), "rope+yarn": _arm(good), "rope+ntk+ft4x": _arm(good),
            "rope+yarn+ft4x": _arm(good),
            "rope+ft4x": _arm({"2": 1.0, "4": 2.0, "8": 10.0, "16": 30.0})}


# C21: extrapolation bands
def _extrapolation(arms: dict[str, PositionArm]) -> PositionData:
    return dataclasses.replace(_data(arms), mults=[1, 2, 4, 8],
                               eval_lengths=[128, 256, 512, 1024], order={}, finetune=None)


def test_extrapolation_grades_against_the_page(tmp_path):
    unusable = "unavailable (table)"
    arms = {
        "learned": _arm({"2": unusable, "4": unusable, "8": unusable}),
        # The quick plan's long table (16·L rows, `position.runs.arms`): a learned-8L arm is no
        # arm of that plan, and no rule is registered for it.
        "learned-16L": _arm({"2": 40.0, "4": 60.0, "8": 80.0}),
        "sinusoidal": _arm({"2": 30.0, "4": 40.0, "8": 60.0}),  # handicapped: not graded
        "sinusoidal+scale": _arm({"2": 3.0, "4": 12.0, "8": 40.0}),
        "alibi": _arm({"2": 0.1, "4": 0.2, "8": 0.3}),
        "rope": _arm({"2": 2.0, "4": 4.0, "8": 30.0}),
        "rope+ntk": _arm({"2": 1.0, "4": 2.0, "8": 4.0}),
        "rope+yarn": _arm({"2": 1.0, "4": 2.0, "8": 4.5}),
        "rope+linear": _arm({"2": 30.0, "4": 30.0, "8": 30.0}),  # not named by the page
    }
    row = _row(tmp_path, _extrapolation(arms), "C21")
    assert row.verdict == "confirmed", row.summary
    assert "L = 128 (3 seed(s))" in row.summary
    names = [p.name for p in row.parts]
    assert names[0] == "learned absolute (learned-16L) collapses at 2×"
    assert "sinusoidal (sinusoidal+scale) works at 2×" in names
    assert names[-2:] == ["RoPE works at 8× with ntk scaling", "RoPE works at 8× with yarn scaling"]
    assert row.to_dict()["rule"]["min_seeds"] == 4

    arms["rope"] = _arm({"2": 2.0, "4": 9.0, "8": 30.0})  # RoPE degrades at 4×
    arms["rope+yarn"] = _arm({"2": 1.0, "4": 2.0, "8": 9.0})  # YaRN degrades at 8×: no rescue
    arms["alibi"] = dataclasses.replace(arms["alibi"], extrapolated_vs_sliding_pct={
        "2": ci(0.1, 0.0, 0.2), "4": ci(4.0, 2.0, 6.0), "8": ci(0.3, 0.2, 0.4)})
    rows = graded(tmp_path, "position", _extrapolation(arms), "C21", "C22")
    row = rows["C21"]
    assert row.verdict == "mixed"
    by_name = {p.name: p for p in row.parts}
    failed = [p.name for p in row.parts if p.verdict == "not-reproduced-at-this-scale"]
    assert failed == ["RoPE works at 4×", "RoPE works at 8× with yarn scaling"]
    assert by_name["ALiBi works at 4×"].verdict == "inconclusive"  # CI across 5%
    # Undecided, it cannot change the verdict: 2 or 3 of 9 statements fail either way.
    # C22 shows the scaled arms' reads: intervals as plain objects, unmade reads as strings.
    assert rows["C22"].error is None
    scaled = rows["C22"].evidence["scaled_arms"]
    assert set(scaled) == {"rope+ntk", "rope+yarn"} and scaled["rope+yarn"]["8"]["mean"] == 9.0


def test_extrapolation_needs_four_seeds(tmp_path):
    # the design's first look is at 4 seeds: 3, however clear, decide nothing
    three_seeds = {m: ci(0.1, 0.0, 0.2, n=3) for m in ("2", "4", "8")}
    arms = {"alibi": dataclasses.replace(_arm({"2": 0.1}), extrapolated_vs_sliding_pct=three_seeds)}
    row = _row(tmp_path, _extrapolation(arms), "C21")
    assert row.verdict == "inconclusive"
    assert [p.estimate.n for p in row.parts] == [3, 3, 3]
    assert all("needs at least 4" in p.reason for p in row.parts)


# C30: RoPE past 8×
def test_c30_grades_the_statement_and_the_warning_read_both_ways(tmp_path):
    # Scaled RoPE works to 16×, plain RoPE drops: the warning holds only read without scaling,
    # so the claim is conditional on that reading.
    row = _row(tmp_path, _data(_c30_arms()), "C30")
    assert row.verdict == "conditional", row.summary
    parts = {p.name: p for p in row.parts}
    statement = [n for n in parts if not n.startswith("warning")]
    plain = [n for n in parts if n.startswith("warning (no scaling): ")]
    scaled = [n for n in parts if n.startswith("warning (with scaling): ")]
    assert "RoPE + ntk (training-free) works at 16×" in statement
    assert "RoPE + yarn after a 40-step fine-tune works at 8×" in statement
    assert plain == ["warning (no scaling): plain RoPE drops clearly at 16×",
                     "warning (no scaling): RoPE fine-tuned without scaling drops clearly at 16×"]
    assert scaled == [f"warning (with scaling): RoPE + {k} {how} drops clearly at 16×"
                      for k in ("ntk", "yarn")
                      for how in ("(training-free)", "after a 40-step fine-tune")]
    assert (len(statement), len(plain), len(scaled)) == (8, 2, 4)
    assert row.figure == "position_scaling"
    assert all(parts[n].verdict == "confirmed" for n in statement + plain)
    assert all(parts[n].verdict == "not-reproduced-at-this-scale" for n in scaled)
    readings = {k: r["status"] for k, r in row.evidence["readings"].items()}
    assert readings == {"scaled": "holds", "warning_plain": "holds", "warning_scaled": "fails"}
    assert row.evidence["parts"][scaled[0]]["reading"] == "warning_scaled"
    # Both readings are graded by the same band rule on the same read, asking opposite grades.
    works, drops = (parts["RoPE + ntk (training-free) works at 16×"].rule,
                    parts["warning (with scaling): RoPE + ntk (training-free) drops clearly at 16×"
                          ].rule)
    assert works.metric == drops.metric and works.metric.endswith("rope+ntk at 16×")
    assert (works.test, drops.test) == ("at-most", "at-least")
    assert works.threshold == drops.threshold == 5.0 and works.decides == drops.decides
    # The combining rule is stated in both languages, with the verdict it gives.
    assert "read without scaling" in row.summary and "read with scaling" in row.summary
    assert "Combined:" in row.summary and row.summary.count(": conditional.") == 1
    assert "otherwise mixed" in row.summary and "部分成立" in row.summary_zh
    assert "两种读法" in row.summary_zh and "合并规则" in row.summary_zh
    assert "有条件成立" in row.summary_zh
    assert "warning read with scaling" in row.combines


def test_c30_when_scaled_rope_drops_at_16x_or_only_plain_rope_holds(tmp_path):
    # Scaled arms drop at 16×: the statement holds at 8× only, the warning holds both ways.
    row = _row(tmp_path, _data(_c30_arms(scaled_16=12.0)), "C30")
    readings = {k: r["status"] for k, r in row.evidence["readings"].items()}
    assert readings == {"scaled": "partly", "warning_plain": "holds", "warning_scaled": "holds"}
    assert row.verdict == "mixed"  # 4 of the 10 statement and no-scaling parts fail
    # scalings that fail at 16×: 4 scaled arms and 2 plain at 16× fail, 4 at 8× hold (the
    # warning read with scaling, which holds here, does not count towards "not reproduced")
    arms = _c30_arms(scaled_16=40.0, plain_16=3.0)
    arms["rope+ft4x"] = _arm({"2": 1.0, "4": 2.0, "8": 3.0, "16": 3.0})
    row = _row(tmp_path, _data(arms), "C30")
    assert row.verdict == "not-reproduced-at-this-scale"
    assert row.evidence["readings"]["warning_scaled"]["status"] == "holds"
    bad = _c30_arms(scaled_16=40.0)
    bad["rope+ntk+ft4x"] = _arm({"2": 1.0, "4": 2.0, "8": 3.0, "16": 3.0})
    bad["rope+yarn+ft4x"] = _arm({"2": 1.0, "4": 2.0, "8": 3.0, "16": 3.0})
    row = _row(tmp_path, _data(bad), "C30")
    assert row.verdict == "mixed"  # only training-free fails at 16×: the statement in part


def test_c30_reads_no_warning_below_16x_and_is_not_confirmed_then(tmp_path):
    data = dataclasses.replace(_data(_c30_arms()), mults=[1, 2, 4, 8],
                               eval_lengths=[128, 256, 512, 1024])
    row = _row(tmp_path, data, "C30")
    assert all(p.verdict == "confirmed" for p in row.parts) and len(row.parts) == 4
    readings = {k: r["status"] for k, r in row.evidence["readings"].items()}
    assert readings == {"scaled": "holds", "warning_plain": "not read",
                        "warning_scaled": "not read"}
    # what is read holds; 16× and the warning cannot be read at this size: mixed
    assert row.verdict == "mixed" and "reads only up to 8×" in row.summary


def test_c30_grades_against_the_5_percent_edge_only(tmp_path):
    # Intervals wholly past 5% that straddle C21's 25% edge: "drops" holds and "works" fails
    # (C21 would call both unclear); an interval across 5% stays unclear.
    arms = _c30_arms()
    arms["rope"].extrapolated_vs_sliding_pct["16"] = ci(28.5, 24.4, 32.6)
    arms["rope+ntk"].extrapolated_vs_sliding_pct["16"] = ci(19.3, 11.9, 26.7)
    arms["rope+ft4x"].extrapolated_vs_sliding_pct["16"] = ci(6.2, 1.7, 10.6)
    row = _row(tmp_path, _data(arms), "C30")
    parts = {p.name: p for p in row.parts}
    assert parts["warning (no scaling): plain RoPE drops clearly at 16×"].verdict == "confirmed"
    assert parts["RoPE + ntk (training-free) works at 16×"].verdict == (
        "not-reproduced-at-this-scale")
    assert parts["warning (with scaling): RoPE + ntk (training-free) drops clearly at 16×"
                 ].verdict == "confirmed"
    control = parts["warning (no scaling): RoPE fine-tuned without scaling drops clearly at 16×"]
    assert control.verdict == "inconclusive" and "straddles" in control.reason
    assert "lower end is above 5%" in control.rule.decides
    assert control.decision.seeds_needed is not None or "more than" in control.reason


def test_c29_conditional_with_the_nope_order_probe(tmp_path):
    row = _row(tmp_path, _data({}), "C29")
    assert row.verdict == "conditional"
    assert [p.verdict for p in row.parts] == ["confirmed", "confirmed"]
    assert row.evidence["bidirectional_equivariance_error"] <= 1e-12
    row = _row(tmp_path, _data({}, tv=0.01), "C29")
    # CI [-0.04, 0.06] holds both no effect and δ = 0.02: undecided.
    assert row.parts[0].verdict == "inconclusive"
    assert row.verdict == "conditional"  # exact: causal masking alone breaks equivariance


def test_c31_is_decided_by_counts_and_the_sdpa_call(tmp_path):
    row = _row(tmp_path, _data({}, cost=_cost()), "C31")
    assert row.verdict == "confirmed", row.summary
    assert all(p.verdict == "confirmed" and p.decision is None for p in row.parts)
    by_name = {p.name: p for p in row.parts}
    assert by_name[C31_ROPE_PARAMS_PART].estimate.value == 0
    assert by_name[C31_ROPE_SDPA_PART].estimate.value == 0
    assert by_name[C31_ROPE_FLOPS_PART].estimate.value < 0.01  # %: 0.003% at Llama 3 8B
    assert "adds 0 at Llama 3 8B's shape" in row.summary
    # the timings are shown, labelled, and grade nothing
    assert "Per-op overhead at a toy shape" in row.summary
    assert "At a realistic shape (d_model 1024" in row.summary
    assert "玩具形状下的逐算子开销" in row.summary_zh
    shown = row.evidence["timings_reported_not_graded"]
    assert shown["toy_shape"]["label"] == "per-op overhead at a toy shape"
    assert shown["realistic_shape"]["d_model"] == 1024
    # a summary from before the realistic timing still decides, and says what is missing
    old = _row(tmp_path, _data({}, cost=_cost(realistic=False)), "C31")
    assert old.verdict == "confirmed" and "No realistic-shape timing" in old.summary
    # the verdict and counts do not move with the timings
    for cost in (_cost(decode=3.0), _cost(decode=0.3), _cost(rope_train=1.3, decode=3.0),
                 _cost(alibi_train=0.7, decode=0.3)):
        moved = _row(tmp_path, _data({}, cost=cost), "C31")
        assert moved.verdict == row.verdict
        assert [(p.name, p.verdict, p.estimate.value) for p in moved.parts] == \
            [(p.name, p.verdict, p.estimate.value) for p in row.parts]
    assert cp.combine_c31([dataclasses.replace(p, verdict="refuted")
                           if p.name == C31_ALIBI_FLOPS_PART else p for p in row.parts]) == "mixed"
    # counts at every size
    rules = registered("C31", "quick")
    assert registered("C31", "tiny") == rules == registered("C31", "full")
    for name, rule in rules.items():
        assert rule.test == "at-most" and rule.max_seeds is None, name
        assert "without a test" in rule.decides and "time" not in rule.metric, name
    assert rules[C31_ROPE_FLOPS_PART].threshold == 1.0
    assert rules[C31_ROPE_PARAMS_PART].threshold == 0.0 == rules[C31_ROPE_SDPA_PART].threshold


def test_c31_parts_count_by_hand_refuted_where_rope_calls_sdpa_otherwise(tmp_path):
    # (counts at Llama 3 8B's shape do not depend on this machine's scale)
    parts = cp.c31_parts(_cost(rope_mask="float32 mask [1, 2, 128, 128]"))
    sdpa = next(p for p in parts if p.name == C31_ROPE_SDPA_PART)
    assert sdpa.verdict == "refuted" and sdpa.estimate.value == 1
    assert "training mask" in sdpa.reason and cp.combine_c31(parts) == "refuted"
    row = _row(tmp_path, _data({}, cost=_cost(kernels=False)), "C31")
    assert row.verdict == "inconclusive"  # deciding the SDPA part could refute or confirm
    parts = {p.name: p for p in cp.c31_parts(_cost())}
    assert parts[C31_ROPE_FLOPS_PART].estimate.value == pytest.approx(
        100 * cp.flop_shares()["rope"]["share"], rel=1e-9)
    assert parts["ALiBi adds no parameters"].estimate.value == 0
    # a scheme that added parameters in the suite's model is refuted, not timed
    extra = dataclasses.replace(_cost(), params={"none": 1000, "rope": 1064, "alibi": 1000})
    rope = {p.name: p for p in cp.c31_parts(extra)}[C31_ROPE_PARAMS_PART]
    assert rope.verdict == "refuted" and rope.estimate.value == 64


def test_position_params_and_flops_at_llama_3_8b_by_hand():
    # RoPE adds no parameters; a learned table adds rows × width (Llama 3 8B: d_model 4096)
    counts = cp.zoo_params()
    assert counts["rope"] == counts["none"] == counts["alibi"] == counts["sinusoidal"]
    assert counts["learned"] - counts["none"] == 4096 * 4096
    T, layers, heads, d = 4096, 32, 32, 4096
    shares = cp.flop_shares(T)
    # ALiBi: one add per score element of every layer (the whole [H, T, T] mask, causal
    # positions included) + slope × distance built once: (32 + 1) × 32 × 4,096²
    assert shares["alibi"]["flops"] == layers * heads * T * T + heads * T * T \
        == 33 * 32 * 16_777_216 == 17_716_740_096
    # absolute: one add per input element; sinusoidal on demand adds an angle and a sin/cos
    assert shares["absolute"]["flops"] == 3 * T * d == 50_331_648
    # RoPE: 32 layers × 4,096 tokens × (32 query + 8 key heads) × 128 rotated dims × 3 FLOPs
    assert shares["rope"]["flops"] == 32 * T * (32 + 8) * 128 * 3 == 2_013_265_920
    # a prefill costs at least 2 FLOPs per weight of the 32 layers per token
    floor = 2 * 218_103_808 * 32 * T
    for scheme, most in (("rope", 1e-4), ("alibi", 1e-2), ("absolute", 1e-2)):
        assert 0 < shares[scheme]["share"] < shares[scheme]["flops"] / floor < most, scheme
    # ALiBi's share at any length: below (L + 1) / (2 · L · head_dim) = 33 / 8,192
    assert cp.alibi_share_bound() == 33 / (2 * 32 * 128)
    assert cp.flop_shares(65_536)["alibi"]["share"] < cp.alibi_share_bound()

