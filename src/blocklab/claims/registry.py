"""Registered rules: every part of every experimental claim, with the rule that grades it,
listed before any data is read (SPEC §6).

    from blocklab.claims.registry import registered
    registered("C16", "quick")  # {"swiglu": Rule(...), "geglu": Rule(...), "glu": Rule(...)}

`RULES` maps a claim id to a function of the suite size giving {part name: Rule} in grading
order, from the suites' plan constants, never from a stored summary (a part the plan did not
list has no rule). `CHANGED_AFTER_DATA` lists the rules edited after results had been seen (`rule_changes.toml`).
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, replace
from importlib import resources

from blocklab.claims.rules import Rule
from blocklab.errors import InputError, ResultsError
from blocklab.experiments.ladder import RUNGS
from blocklab.experiments.options import ALL_SIZES
from blocklab.experiments.suites.ffn import runs as ffn_suite
from blocklab.experiments.suites.norm_cost import summary as norm_cost_suite
from blocklab.experiments.suites.position import runs as position_suite

# --- C12: uneven gradient across one pre-norm stack ---------------------------------------------
# Only the pre-norm stack has a local identity term, so only it is graded. A parameter gradient
# such as ‖∇W_down‖ moves with the stream's size alone (any init that grows the stream confirmed
# it by construction); ‖∂L/∂x_l‖·rms(x_l) does not. One part per init; the claim needs each.
C12_INITS = ("gpt2", "xavier", "depth")
C12_RULE = Rule(
    metric="log2(max / min) of the residual stream's sensitivity ‖∂L/∂x_l‖·rms(x_l) over the "
           "inputs x_l of layers 1 … L−1 of one pre-norm stack at the deepest probed depth "
           "(layer 0's input is the embedding stream), at initialisation, per seed (1 = a "
           "relative change of one layer's input moves the loss twice as much as another's)",
    smallest_effect=1.0, margin=0.25, min_seeds=4, max_seeds=8, claimed=2.0, threshold=1.0,
    decides="confirmed when the CI at its level lies above 1 (a more than 2× spread) for an init; not "
            "reproduced at this scale when it lies below 1 or inside ±margin; otherwise "
            "inconclusive, as below min_seeds")


def c12_part_name(init: str) -> str:
    return f"pre-norm, {init} init"


# --- C13: the experiment the page designed (reported, not graded) ------------------------------
def _finding(metric: str, smallest_effect: float, margin: float) -> Rule:
    """A rule of C13's finding: registered like any other, graded never."""
    return Rule(metric=metric, smallest_effect=smallest_effect, margin=margin, min_seeds=4,
                max_seeds=8, claimed=0.0,
                decides="no verdict: the page states no result; the estimate is reported as "
                        "the finding")


C13_PART = "warmup interaction (the finding; nothing is claimed)"
C13_RULE = _finding("(post cold − post warm) − (pre cold − pre warm), final val loss, nats, at "
                    "the deepest depth, each arm at its own tuned peak lr, paired by seed",
                    0.05, 0.02)
C13_STABILITY_PART = "warmup interaction of the largest stable lr (the finding)"
C13_STABILITY_RULE = _finding("(post warm − post cold) − (pre warm − pre cold) of log2(largest "
                              "stable peak lr), doublings, at the deepest depth, paired by seed",
                              1.0, 0.5)

# --- C16: gated FFNs against ReLU ----------------------------------------------------------------
C16_ARMS = ("swiglu", "geglu", "glu")  # the headline part first
C16_SMALLEST_EFFECT_PCT = 0.5
C16_MARGIN_PCT = 0.25
C16_MIN_SEEDS = 5  # two paired seeds gave a CI of width 0.1% that three more seeds overturned


def c16_rule(arm: str, size: str = "quick") -> Rule:
    """Confirmed only when the whole interval lies beyond the low end of the page's stated
    gain (`threshold`: SwiGLU's "about 1–2%" is not confirmed by a 0.6% gain), or beyond δ
    where that is larger. At tiny, quick and full a sequential design of 5 to 10 seeds; on a
    ladder rung above quick one fixed look at `ffn.RUNG_SEEDS` seeds (chosen by simulation,
    docs/rung_seeds.md)."""
    low, high = ffn_suite.PAGE_GAIN_PCT[arm]
    rule = Rule(metric=f"(val loss {arm} − relu)/relu at equal parameters and tokens, % "
                       "(negative = better)",
                smallest_effect=C16_SMALLEST_EFFECT_PCT, margin=C16_MARGIN_PCT,
                min_seeds=C16_MIN_SEEDS, max_seeds=2 * C16_MIN_SEEDS,
                claimed=-(low + high) / 2, threshold=-low)
    if size in RUNGS:
        return replace(rule, min_seeds=ffn_suite.RUNG_SEEDS, max_seeds=ffn_suite.RUNG_SEEDS,
                       spending="fixed")
    return rule


# --- C18: RMSNorm's cost and quality -------------------------------------------------------------
# "Compute" is decided by exact counts, read three ways, each decided without a test; a CPU
# timing measures kernels and this machine, not the formula: reported, never graded.
C18_ABOUT_PCT = 7.0  # the page's saving
C18_BAND_PCT = 2.0  # "about": 5–9%
C18_FLOPS_PART = "the norm needs about 7% fewer FLOPs"
C18_BYTES_PART = "the norm moves about 7% fewer bytes"
C18_STEP_FLOPS_PART = "a training step needs about 7% fewer FLOPs"
C18_QUALITY_PART = "nearly the same quality"
C18_COMPUTE_DECIDES = (
    "analytic, decided without a test: confirmed when the exact saving lies inside "
    f"[{C18_ABOUT_PCT - C18_BAND_PCT:g}, {C18_ABOUT_PCT + C18_BAND_PCT:g}]% (about 7% less, "
    "RMSNorm cheaper); not reproduced otherwise, saying whether it lies above the band (far "
    "more than 7%), below it (far less) or on the opposite side (RMSNorm dearer)")


def _c18_compute_rule(metric: str) -> Rule:
    return Rule(metric=metric + " (analytic: an exact count)", smallest_effect=C18_BAND_PCT,
                margin=C18_BAND_PCT, min_seeds=1, claimed=C18_ABOUT_PCT, test="equivalence",
                decides=C18_COMPUTE_DECIDES)


C18_COMPUTE_RULES = {
    C18_FLOPS_PART: _c18_compute_rule(
        "100·(1 − RMSNorm FLOPs / LayerNorm FLOPs) per normalised row, forward+backward, "
        "blocklab.budget's per-element conventions, %, the same at every width d (positive = "
        "RMSNorm needs less)"),
    C18_BYTES_PART: _c18_compute_rule(
        "100·(1 − RMSNorm bytes / LayerNorm bytes) moved per normalised row by an ideal fused "
        "kernel, forward+backward, at meta-llama-3-8b's width in bf16, % (positive = RMSNorm "
        "moves less)"),
    C18_STEP_FLOPS_PART: _c18_compute_rule(
        "100·(1 − training-step FLOPs with RMSNorm / with LayerNorm) for meta-llama-3-8b at "
        "batch 1 × its context, matmuls 3× forward plus every norm forward+backward, other "
        "elementwise work left out (an upper bound), % (positive = RMSNorm needs less)"),
}


# How a claimed band ("the same", "costs little") is decided.
EQUIVALENCE_DECIDES = ("confirmed when the (1 − 2·level) CI lies inside ±margin (two one-sided "
                       "tests); not reproduced at this scale when the CI at its level lies wholly "
                       "outside it; otherwise inconclusive, as below min_seeds")


def c18_quality_rule(margin: float = norm_cost_suite.EQUIVALENCE_MARGIN,
                     size: str = "quick") -> Rule:
    """C18's quality part at `size`; `margin` is the norm-cost suite's planned equivalence
    margin. The design starts where the size's plan starts: 3–6 seeds, at --size full (8
    planned seeds) 8–16, so that no size's first look lies past its design's last."""
    first = 8 if size == "full" else 3
    return Rule(metric="Δ validation loss RMSNorm − LayerNorm, nats/token, paired by seed",
                smallest_effect=margin, margin=margin, min_seeds=first, max_seeds=2 * first,
                claimed=0.0, test="equivalence", decides=EQUIVALENCE_DECIDES)


# --- C19: pre-norm vs post-norm and warmup -------------------------------------------------------
# One per statement, all on one contrast (deepest depth, highest lr), paired by seed.
# Continuous outcomes only: a count of failed runs never decides a part.
C19_MIN_SEEDS = 4
C19_SEEDS = {"min_seeds": C19_MIN_SEEDS, "max_seeds": 2 * C19_MIN_SEEDS}
C19_EXPRESSIVE_PART = "post-norm more expressive"
C19_RULES = {
    "pre-norm trains without warmup": Rule(
        metric="pre-norm final val loss without − with warmup, each at its own tuned peak lr, "
               "nats (0 = warmup not needed)",
        smallest_effect=0.05, margin=0.05, **C19_SEEDS, claimed=0.0, test="equivalence",
        decides="confirmed when the (1 − 2·level) CI lies inside ±margin (two one-sided tests) and no "
                "pre-norm run failed; not reproduced at this scale when the CI at its level lies wholly "
                "outside ±margin or a pre-norm run failed; otherwise inconclusive"),
    "pre-norm is stable without warmup": Rule(
        metric="pre-norm log2(largest stable peak lr) without − with warmup, doublings, "
               "paired by seed (0 = warmup not needed; −1 = half the lr without it)",
        smallest_effect=1.0, margin=1.0, **C19_SEEDS, claimed=-1.0, threshold=-1.0, test="at-least",
        decides="confirmed when the CI at its level's lower bound lies above −1 (without warmup the "
                "largest stable lr is less than one doubling lower: non-inferiority); not "
                "reproduced at this scale when its upper bound lies below −1; otherwise "
                "inconclusive, as below min_seeds"),
    "post-norm needs warmup": Rule(
        metric="(post cold − post warm) − (pre cold − pre warm), final val loss, each arm at "
               "its own tuned peak lr, nats (positive = skipping warmup hurts post-norm more)",
        smallest_effect=0.05, margin=0.02, **C19_SEEDS, claimed=0.1),
    "post-norm needs warmup to be stable": Rule(
        metric="(post warm − post cold) − (pre warm − pre cold) of log2(largest stable peak "
               "lr), doublings, paired by seed (positive = warmup raises post-norm's stable "
               "lr more than pre-norm's)",
        smallest_effect=1.0, margin=0.5, **C19_SEEDS, claimed=1.0),
    "post-norm gradients vanish in the lower layers": Rule(
        metric="log2(‖∇ first layer‖ / ‖∇ last layer‖) of post-norm during training, after "
               "warmup, at its tuned peak lr (negative = the bottom gets less)",
        smallest_effect=1.0, margin=0.25, **C19_SEEDS, claimed=-1.0),
    C19_EXPRESSIVE_PART: Rule(
        metric="post − pre final val loss with warmup near convergence, each at its own "
               "tuned peak lr, nats (negative = post-norm better)",
        smallest_effect=0.02, margin=0.02, **C19_SEEDS, claimed=-0.02,
        decides="untestable here: representational ability shows near convergence, and no "
                "size of this suite trains near convergence (the quick runs end in early "
                "training, where the loss measures trainability); the estimate after the "
                "suite's steps is shown, not graded"),
}

# --- C21 and C30: the loss past the training length L against sliding windows of L -------------
WORKS_PCT = 5.0  # at most 5% worse than sliding windows: "works"
COLLAPSE_PCT = 25.0  # more than 25% worse (or unusable): "collapses"; in between: "degrades"
C21_MIN_SEEDS = 4
# No look at 3 seeds (O'Brien–Fleming spends 2e-5 of α at 3/8); at 8 the quick spreads decide
# about three parts in four, and 4 more seeds cost about 7 core-minutes.
C21_MAX_SEEDS = 8
C21_METRIC = "100·(loss past L − sliding-window loss)/sliding-window loss on the same tokens, %"
C21_DECIDES = (f"works when the CI at its level's upper end is below {WORKS_PCT:g}%; collapses when its "
               f"lower end is above {COLLAPSE_PCT:g}% or the model cannot run there; degrades "
               f"when the (1 − 2·level) CI lies inside ({WORKS_PCT:g}%, {COLLAPSE_PCT:g}%). A statement is "
               "confirmed when its interval shows the page's grade, not reproduced at this "
               "scale when its interval excludes it, otherwise inconclusive")
C30_DECIDES = (f"works when the CI at its level's upper end is below {WORKS_PCT:g}%; drops (degrades or "
               f"collapses) when its lower end is above {WORKS_PCT:g}% or the model cannot run "
               "there. A part is confirmed when its interval shows the page's grade, not "
               "reproduced at this scale when it shows the other, otherwise inconclusive")


def band_rule(metric: str, want: str, decides: str) -> Rule:
    """The rule of a statement about the loss past L (%, vs sliding windows): `want` is
    works (below WORKS_PCT), degrades (between the two), collapses (above COLLAPSE_PCT) or
    drops (above WORKS_PCT: degrades or collapses)."""
    shared = {"metric": metric, "smallest_effect": WORKS_PCT, "min_seeds": C21_MIN_SEEDS,
              "max_seeds": C21_MAX_SEEDS, "decides": decides}
    if want == "works":
        return Rule(**shared, margin=0.0, claimed=WORKS_PCT, threshold=WORKS_PCT, test="at-most")
    if want == "degrades":
        return Rule(**shared, margin=(COLLAPSE_PCT - WORKS_PCT) / 2,
                    claimed=(COLLAPSE_PCT + WORKS_PCT) / 2, test="equivalence")
    bound = COLLAPSE_PCT if want == "collapses" else WORKS_PCT
    return Rule(**shared, margin=0.0, claimed=bound, threshold=bound, test="at-least")


def c21_rule(arm: str, mult: str, want: str) -> Rule:
    return band_rule(f"{C21_METRIC}: {arm} at {mult}×", want, C21_DECIDES)


def c30_rule(arm: str, mult: str, want: str) -> Rule:
    return band_rule(f"{C21_METRIC}: {arm} at {mult}×", want, C30_DECIDES)


@dataclass(frozen=True)
class BandPart:
    """One planned statement about an arm's loss at a multiple of L: `want` is works,
    degrades, collapses or drops."""

    name: str
    arm: str
    mult: str
    want: str


def c21_fair_arms(size: str) -> tuple[str, str]:
    """(learned, sinusoidal): C21's fair arms in the position suite's plan. A learned table
    long enough to be read past L (the table of L cannot run there, so it "collapses" by
    construction), and sinusoidal with the √d embedding scale of the original Transformer
    (without it the position signal drowns the token embedding)."""
    learned = next(a for a in position_suite.arms(size) if a.startswith("learned-"))
    return learned, "sinusoidal+scale"


def c21_plan(size: str) -> list[BandPart]:
    """C21's statements at the multiples the position suite reads at `size`; "8× with
    scaling" is each training-free RoPE scaling by name (no selection of the best)."""
    mults = {str(m) for m in position_suite.SIZES[size].mults}
    learned, sinusoidal = c21_fair_arms(size)
    scalings = [f"rope+{k}" for k in ("ntk", "yarn") if k in position_suite.SCALINGS]
    wanted = [
        BandPart(f"learned absolute ({learned}) collapses at 2×", learned, "2", "collapses"),
        BandPart(f"sinusoidal ({sinusoidal}) works at 2×", sinusoidal, "2", "works"),
        BandPart(f"sinusoidal ({sinusoidal}) degrades at 4×", sinusoidal, "4", "degrades"),
        *[BandPart(f"ALiBi works at {m}×", "alibi", m, "works") for m in ("2", "4", "8")],
        BandPart("RoPE works at 2×", "rope", "2", "works"),
        BandPart("RoPE works at 4×", "rope", "4", "works"),
        *[BandPart(f"RoPE works at 8× with {n.split('+')[1]} scaling", n, "8", "works")
          for n in scalings],
    ]
    return [p for p in wanted if p.mult in mults]


C30_MULTS = ("8", "16")


def c30_plan(size: str) -> dict[str, list[BandPart]]:
    """C30's parts by group (the statement "scaled", the warning read without and with
    scaling), at the multiples of C30_MULTS the suite reads at `size` (the warning's past 8×
    only), for the training-free scalings and the fine-tuned arms the suite plans."""
    plan = position_suite.SIZES[size]
    mults = [m for m in C30_MULTS if int(m) in plan.mults]
    past = [m for m in mults if int(m) > 8]
    ft = plan.finetune
    scaled: list[tuple[str, str]] = []  # (how it is named, arm) of each scaled arm
    for kind in ("ntk", "yarn"):
        scaled.append((f"RoPE + {kind} (training-free)", f"rope+{kind}"))
        if ft and kind in ft.kinds:
            scaled.append((f"RoPE + {kind} after a {ft.steps}-step fine-tune",
                           f"rope+{kind}+ft{ft.factor}x"))
    plain = [("plain RoPE", "rope")]
    if ft and None in ft.kinds:
        plain.append(("RoPE fine-tuned without scaling", f"rope+ft{ft.factor}x"))
    return {
        "scaled": [BandPart(f"{label} works at {m}×", arm, m, "works")
                   for label, arm in scaled for m in mults],
        "warning_plain": [BandPart(f"warning (no scaling): {label} drops clearly at {m}×", arm,
                                   m, "drops") for m in past for label, arm in plain],
        "warning_scaled": [BandPart(f"warning (with scaling): {label} drops clearly at {m}×",
                                    arm, m, "drops") for m in past for label, arm in scaled],
    }


# --- C29: order without positions (its experimental parts) ---------------------------------------
C29_ORDER_PART = "a causal NoPE decoder tells a prefix from its reversal (TV > 0)"
C29_UNIGRAM_PART = "a causal NoPE decoder beats the unigram entropy"
C29_ORDER_RULE = Rule(
    metric="total-variation distance between a NoPE decoder's next-token distributions after a "
           "validation prefix and after the same prefix with its first k − 1 tokens reversed "
           "(last token kept), mean over prefixes, per seed; in [0, 1]; > 0: it sees order",
    smallest_effect=0.02, margin=0.005, min_seeds=3, max_seeds=6, claimed=0.02,
    decides="confirmed (the causal decoder sees order) when the CI at its level over seeds lies above "
            "δ = 0.02; not reproduced at this scale when it lies below it or inside ±margin; "
            "otherwise inconclusive, as below min_seeds")
C29_UNIGRAM_RULE = Rule(
    metric="NoPE decoder validation loss − unigram entropy of the training bytes, nats/token, "
           "per seed; < 0: it uses its context",
    smallest_effect=0.1, margin=0.02, min_seeds=3, max_seeds=6, claimed=-0.1,
    decides="confirmed (the decoder uses context) when the CI at its level over seeds lies below "
            "−δ = −0.1 nats; not reproduced at this scale when it lies above it or inside "
            "±margin; otherwise inconclusive, as below min_seeds")

# --- C31: what RoPE costs ------------------------------------------------------------------------
# Decided by counts, not by timings (see the 2026-12-01 change below): parameters, FLOP shares
# of a prefill at Llama 3 8B's shape and how SDPA is called.
C31_SHARE_PCT = 1.0  # "costs little": at most 1% of a prefill's FLOPs
C31_SHARE_TOKENS = 4096  # the prefill the shares are counted on (batch 1)
C31_ROPE_PARAMS_PART = "RoPE adds no parameters"
C31_ROPE_FLOPS_PART = f"RoPE's FLOPs are at most {C31_SHARE_PCT:g}% of a prefill"
C31_ROPE_SDPA_PART = "RoPE calls SDPA exactly as no positions does (same kernel and mask)"
C31_ALIBI_PARAMS_PART = "ALiBi adds no parameters"
C31_ALIBI_FLOPS_PART = f"ALiBi's bias FLOPs are at most {C31_SHARE_PCT:g}% of a prefill"
C31_ABSOLUTE_FLOPS_PART = (f"absolute positions' FLOPs are at most {C31_SHARE_PCT:g}% of a "
                           "prefill")
# How each scheme's FLOPs are counted (`claims.positions.position_flops`), in the rules' words.
C31_COUNTS = {
    "rope": "3 per rotated element of q and k, every layer (blocklab.budget's elementwise "
            "estimate)",
    "alibi": "one add per score element, every layer (blocklab hands SDPA the whole [H, T, T] "
             "bias as its mask, masked positions included), plus H·T² multiplies building "
             "slope × distance once per forward",
    "absolute": "one add per element of the [T, d_model] input (learned: a table lookup, no "
                "FLOPs; sinusoidal, computed on demand: plus an angle multiply and a sin or "
                "cos per element, 3 in all); the larger of the two",
}


def c31_params_rule(scheme: str) -> Rule:
    return Rule(
        metric=f"parameters {scheme} adds to the same model without positions "
               "(blocklab.budget.count_params), at Llama 3 8B's shape and in the position "
               "suite's model; the larger of the two (exact)",
        smallest_effect=0.0, margin=0.0, min_seeds=1, claimed=0.0, threshold=0.0,
        test="at-most",
        decides="a count, decided without a test: confirmed when exactly 0 at both shapes, "
                "refuted otherwise")


def c31_share_rule(scheme: str) -> Rule:
    return Rule(
        metric=f"100·{scheme}'s FLOPs / the whole prefill's (blocklab.budget's matmul and "
               f"elementwise FLOPs, plus these) at Llama 3 8B's shape, batch 1, T = "
               f"{C31_SHARE_TOKENS:,}, %; counted as {C31_COUNTS[scheme]} (analytic)",
        smallest_effect=C31_SHARE_PCT, margin=0.0, min_seeds=1, claimed=C31_SHARE_PCT,
        threshold=C31_SHARE_PCT, test="at-most",
        decides=f"analytic, decided without a test: confirmed when the share is at most "
                f"{C31_SHARE_PCT:g}%, refuted when above")


C31_SDPA_RULE = Rule(
    metric="mismatches between RoPE's and no positions' SDPA calls in the cost run (the mask "
           "argument and the aten kernels the profiler shows, for a training forward+backward "
           "and a decode step of the suite's model), plus one for each of those calls SDPA "
           "restricted to its flash backend refuses (exact; 0 = the same call)",
    smallest_effect=0.0, margin=0.0, min_seeds=1, claimed=0.0, threshold=0.0, test="at-most",
    decides="exact, decided without a test: confirmed when 0, refuted otherwise; inconclusive "
            "when the cost run recorded no kernels")


# --- C32 and C33: int8 quantization -------------------------------------------------------------
# C32: dynamic int8 (its GEMMs run in int8), eager, at the largest timed T; repeats play the
# part of seeds. Ratios of paired times are graded on 100·ln(ratio), whose t interval
# `rules.decide` rescales exactly to any level, with the percent sizes registered before any
# data mapped by the same monotone 100·ln(1 + p/100).
def log_pct(pct: float) -> float:
    """A percent change as log-percent, 100·ln(1 + pct/100): +10% → 9.531."""
    return 100 * math.log1p(pct / 100)


C32_MODE = "dynamic"
C32_SPEED_PART = f"FFN-only int8 ({C32_MODE}) speeds prefill up at the largest timed T"
C32_LARGEST_PART = "FFN-only gains more than attention-only at the largest timed T"
C32_METHOD = ("the geometric mean of the per-repeat ratios over interleaved repeats, with a 95% "
              "Student t interval on the log ratios; δ, margin and claim are 5%, 2% and 10% "
              "mapped by 100·ln(1 + p/100)")
C32_SPEEDUP_RULE = Rule(
    metric="100·ln(prefill speed-up of FFN-only int8), log-percent (+9.53 = ×1.10), the "
           "speed-up float time / quantized time per repeat, " + C32_METHOD
           + " (positive = faster)",
    smallest_effect=log_pct(5.0), margin=log_pct(2.0), min_seeds=3, claimed=log_pct(10.0))
C32_LARGEST_RULE = Rule(
    metric="100·ln(prefill speed-up of FFN-only / speed-up of attention-only), log-percent, "
           "the ratio attention-only time / FFN-only time per repeat, " + C32_METHOD
           + " (positive = quantizing the FFN gains more)",
    smallest_effect=log_pct(5.0), margin=log_pct(2.0), min_seeds=3, claimed=log_pct(10.0))
# C32's stated reason is a part of its own: C23's exact count, "~99%" read as C23 reads it.
C32_REASON_PART = "the FFN holds ~99% of prefill FLOPs (the stated reason)"
C32_REASON_PCT = 95.0
C32_REASON_RULE = Rule(
    metric="100·FFN FLOPs / the whole prefill's at Llama 3 8B's shape, batch 1, T = 4,096 "
           "(blocklab.budget: every matmul, 2 FLOPs per multiply-add, causal scores), % (analytic)",
    smallest_effect=99.0 - C32_REASON_PCT, margin=0.0, min_seeds=1, claimed=99.0,
    threshold=C32_REASON_PCT, test="at-least",
    decides=f"analytic, decided without a test: confirmed when the share is at least "
            f"{C32_REASON_PCT:g}% (what would still be written ~99%), refuted when below")
# C33: the per-row exactness part is analytic (decided without a test, on the trained weights);
# the per-tensor part is graded on the FFN's output error, paired by seed.
C33_EXACT_PART = "merging gate|up with per-row scales equals separate quantization"
C33_TENSOR_PART = "one per-tensor scale for gate|up costs FFN output quality beyond δ"
C33_EXACT_RULE = Rule(
    metric="max |merged-per-row − separate-per-row| over the dequantized gate, up and down of "
           "the trained model, every layer of every seed (analytic: must be exactly 0)",
    smallest_effect=0.0, margin=0.0, min_seeds=1, claimed=0.0,
    decides="an identity, decided without a test: confirmed when the difference is exactly 0 "
            "on every layer of every seed, refuted otherwise; inconclusive when no trained "
            "layer was compared")
C33_DELTA = 1.0  # % more FFN output error: the δ registered before any data
# A reading at 10% is shown beside the decision (`quantization.c33_sensitivity`), never decides:
# 10% is what scales 25% apart cost when gate, up and down err alike (√((2 + 1.25²) / 3) ≈
# 1.09), about 0.14 bit of int8's resolution.
C33_SENSITIVITY_DELTA = 10.0
C33_TENSOR_RULE = Rule(
    metric="100·(FFN output error ‖FFN_q(x) − FFN(x)‖ / ‖FFN(x)‖ on the trained model's own FFN "
           "inputs with gate|up merged under one per-tensor scale / the same with gate and up "
           "each at its own per-tensor scale − 1), %, down at its own per-tensor scale in both, "
           "paired by seed (positive = merging is worse)",
    smallest_effect=C33_DELTA, margin=0.5, min_seeds=3, max_seeds=6, claimed=5.0,
    decides="δ = 1% more FFN output error, as registered before any data. One per-tensor scale for "
            "gate|up is the larger of the two, so the other matrix's grid only gets coarser: some "
            "growth is there by construction, and the question is whether it passes δ. Confirmed "
            "when the CI at its level lies wholly beyond +1%; not reproduced at this scale when it "
            "lies wholly short of +1%, or the (1 − 2·level) CI inside ±0.5%; otherwise "
            "inconclusive, as with fewer seeds than min_seeds. Seeds are added in blocks of 2 up "
            "to max_seeds, each look read at its share of the Lan–DeMets O'Brien–Fleming spending. "
            "The same interval read against 10% is shown as a sensitivity line and decides nothing")

# --- C36 (b): the identity term of the block Jacobian ("gradient ≈ 1") ---------------------------
# "Gradient ≈ 1" is the identity term of ∂x_{l+1}/∂x_l = I + J_F·J_N: the median over the layers
# (one layer, such as layer 0 reading the embedding, must not set it). Graded under xavier, the
# init the deep stacks train with and of the probed inits the one with the largest branches,
# so the choice cannot flatter the claim.
C36_IDENTITY_INIT = "xavier"
C36_IDENTITY_THRESHOLD = 0.5
C36_IDENTITY_PART = "pre-norm block Jacobian ≈ I at initialisation (gradient ≈ 1)"
C36_IDENTITY_RULE = Rule(
    metric="median over the layers of one pre-norm stack (deepest probed depth, xavier init, at "
           "initialisation) of ‖J_l − I‖_F/√n, J_l = ∂x_{l+1}/∂x_l over all n = B·T·d entries, per "
           "seed (0: every block is the identity; 1: the non-identity part is as large as I)",
    smallest_effect=0.1, margin=0.0, min_seeds=4, max_seeds=8,
    claimed=C36_IDENTITY_THRESHOLD, threshold=C36_IDENTITY_THRESHOLD, test="at-most",
    decides="confirmed when the CI at its level's upper bound lies below 0.5 (the non-identity part "
            "is under half the identity's size: the identity dominates); not reproduced at "
            "this scale when its lower bound lies above 0.5; otherwise inconclusive, as below "
            "min_seeds")

# --- C36: pre-norm at depth ----------------------------------------------------------------------
C36_MIN_SEEDS = 4
C36_STABLE_PART = "deep pre-norm stays stable at a larger lr than post-norm"
C36_RULES = {
    C36_STABLE_PART: Rule(
        metric="pre − post log2(largest stable peak lr), both with warmup (post-norm's best "
               "schedule), at the deepest depth (50 layers and more), doublings, paired by "
               "seed (positive = pre-norm stays stable at a larger lr)",
        smallest_effect=1.0, margin=0.5, min_seeds=C36_MIN_SEEDS,
        max_seeds=2 * C36_MIN_SEEDS, claimed=1.0),
    C36_IDENTITY_PART: C36_IDENTITY_RULE,
}


# --- C37: the FFN's width as a control point (page 000, § 2026研究进展) ---------------------------
# δ and the margins are 2%, the size of the gains the pages quote: a width control that loses
# more than a gated FFN gains is not "little", and slicing that loses less is no failure.
C37_SMALLEST_EFFECT_PCT = 2.0
C37_MARGIN_PCT = 2.0
C37_SLICED_PARTS = {2: "slicing an ordinary FFN to m/2 is worse than nested training there",
                    4: "slicing an ordinary FFN to m/4 is worse than nested training there"}
C37_PRICE_PART = "nested training costs little at the full width m"
C37_NARROW_PART = "nested training at m/2 comes close to training at m/2 alone"


def c37_rules(size: str) -> dict[str, Rule]:
    """C37's parts at `size`, the warning first: 6–8 seeds (looks at 6 and 8), at --size full
    8–12 (looks at 8 and 12), where that size's plan starts. A first look at three quarters of
    the design, where O'Brien–Fleming spends enough of a part's share of α to decide it."""
    first, last = (8, 12) if size == "full" else (6, 8)
    design = {"min_seeds": first, "max_seeds": last}
    sliced = {name: Rule(metric=f"100·(val loss of the ordinary model sliced to m/{k} − the "
                                f"nested model's at m/{k}) / the nested model's, %, paired by "
                                "seed (positive = slicing worse)",
                         smallest_effect=C37_SMALLEST_EFFECT_PCT, margin=C37_MARGIN_PCT / 2,
                         claimed=C37_SMALLEST_EFFECT_PCT, **design)
              for k, name in C37_SLICED_PARTS.items()}
    return {**sliced,
            C37_PRICE_PART: Rule(metric="100·(val loss of the nested model at m − the ordinary "
                                        "model's) / the ordinary model's, %, paired by seed",
                                 smallest_effect=C37_MARGIN_PCT, margin=C37_MARGIN_PCT,
                                 claimed=0.0, test="equivalence", decides=EQUIVALENCE_DECIDES, **design),
            C37_NARROW_PART: Rule(metric="100·(val loss of the nested model at m/2 − the model "
                                         "trained at m/2 alone) / the latter's, %, paired by seed",
                                  smallest_effect=C37_MARGIN_PCT, margin=C37_MARGIN_PCT,
                                  claimed=0.0, test="equivalence", decides=EQUIVALENCE_DECIDES, **design)}


def _bands(parts: list[BandPart], rule: Callable[[str, str, str], Rule]) -> dict[str, Rule]:
    return {p.name: rule(p.arm, p.mult, p.want) for p in parts}


# The claims measured on the ladder of sizes (`blocklab.experiments.ladder`): the same
# registered rules grade each rung (C21 and C30 share the position suite's rungs).
LADDER_CLAIMS = ("C16", "C18", "C19", "C21", "C30")
# Does the precision move C16's comparison? Each gated arm's gap to ReLU in bf16 against fp32
# at the quick rung, same seeds: its own family, grading the ladder, never C16's verdict.
C16_PRECISION_MARGIN = C16_SMALLEST_EFFECT_PCT


C16_PRECISION_RULES = {
    arm: Rule(metric=f"(bf16 − fp32) of ({arm} − relu)/relu val loss, % points, paired by "
                     "seed, each precision at its own tuned rates",
              smallest_effect=C16_PRECISION_MARGIN, margin=C16_PRECISION_MARGIN,
              min_seeds=C16_MIN_SEEDS, claimed=0.0, test="equivalence",
              decides="confirmed (the precision does not move the gap) when the (1 − 2·level) "
                      "CI lies inside ±margin (two one-sided tests); not reproduced when the "
                      "CI at its level lies wholly outside it; otherwise inconclusive")
    for arm in C16_ARMS}

RULES: dict[str, Callable[[str], dict[str, Rule]]] = {
    "C12": lambda size: {c12_part_name(init): C12_RULE for init in C12_INITS},
    "C13": lambda size: {C13_PART: C13_RULE, C13_STABILITY_PART: C13_STABILITY_RULE},
    "C16": lambda size: {arm: c16_rule(arm, size) for arm in C16_ARMS},
    "C18": lambda size: {**C18_COMPUTE_RULES, C18_QUALITY_PART: c18_quality_rule(size=size)},
    "C19": lambda size: dict(C19_RULES),
    "C21": lambda size: _bands(c21_plan(size), c21_rule),
    "C29": lambda size: {C29_ORDER_PART: C29_ORDER_RULE, C29_UNIGRAM_PART: C29_UNIGRAM_RULE},
    "C30": lambda size: _bands([p for group in c30_plan(size).values() for p in group],
                               c30_rule),
    # RoPE's three, then ALiBi's and the absolute schemes' (the claim's "very little"); none
    # is a timing.
    "C31": lambda size: {C31_ROPE_PARAMS_PART: c31_params_rule("RoPE"),
                         C31_ROPE_FLOPS_PART: c31_share_rule("rope"),
                         C31_ROPE_SDPA_PART: C31_SDPA_RULE,
                         C31_ALIBI_PARAMS_PART: c31_params_rule("ALiBi"),
                         C31_ALIBI_FLOPS_PART: c31_share_rule("alibi"),
                         C31_ABSOLUTE_FLOPS_PART: c31_share_rule("absolute")},
    "C32": lambda size: {C32_SPEED_PART: C32_SPEEDUP_RULE, C32_LARGEST_PART: C32_LARGEST_RULE,
                         C32_REASON_PART: C32_REASON_RULE},
    "C33": lambda size: {C33_EXACT_PART: C33_EXACT_RULE, C33_TENSOR_PART: C33_TENSOR_RULE},
    "C36": lambda size: dict(C36_RULES),
    "C37": c37_rules,
}


def registered(claim_id: str, size: str = "quick") -> dict[str, Rule]:
    """{part name: Rule} of `claim_id` at suite size `size`, in the order the check grades
    them; {} for a claim with no registered rules (an analytic one)."""
    if size not in ALL_SIZES:
        raise InputError(f"size {size!r} is not allowed; expected one of {list(ALL_SIZES)}")
    if size in RUNGS and claim_id not in LADDER_CLAIMS:  # measured at tiny, quick, full only
        return {}
    plan = RULES.get(claim_id)
    return {} if plan is None else plan(size)


def rule_of(claim_id: str, size: str, part: str) -> Rule:
    """The registered rule of one part; a ResultsError when the plan of `size` lists no such
    part (a summary from another plan: it has no rule to be graded by)."""
    rules = registered(claim_id, size)
    if part not in rules:
        raise ResultsError(f"{claim_id} part {part!r} has no rule registered for size {size!r}; "
                           f"the registered parts are {list(rules)}")
    return rules[part]


# --- rules edited after results were seen --------------------------------------------------------
@dataclass(frozen=True)
class RuleChange:
    """A rule edited after results had been seen: when, which claims, and what changed."""

    date: str  # ISO date of the edit
    claims: tuple[str, ...]
    what: str


CHANGED_AFTER_DATA: tuple[RuleChange, ...] = tuple(
    RuleChange(c["date"], tuple(c["claims"]), c["what"])
    for c in tomllib.loads(resources.files("blocklab.claims").joinpath("rule_changes.toml")
                           .read_text("utf-8"))["change"])


def changes(claim_id: str) -> list[RuleChange]:
    """The entries of CHANGED_AFTER_DATA that affect `claim_id`, oldest first."""
    return [c for c in CHANGED_AFTER_DATA if claim_id in c.claims]
