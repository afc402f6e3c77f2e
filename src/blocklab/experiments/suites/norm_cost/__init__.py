"""`norm-cost`: what RMSNorm saves over LayerNorm in compute, time and memory, and what it costs in
quality.

The page says RMSNorm needs "about 7% less compute" than LayerNorm at nearly the same quality
(C18). What "compute" means is decided by counting (`count_compute`, no run needed): FLOPs per
normalised row of width d by `blocklab.budget.flops`' conventions (forward RMSNorm 4, LayerNorm
7 per element; backward 9 and 13), bytes an ideal fused kernel moves per row, and the norms'
share of a training step's FLOPs at the step model's shape and at meta-llama-3-8b's. Timings
are reported beside the counts, never graded. Four kinds of run:

    kernels    one run per (d, rows) shape: every implementation below, forward (no grad) and
               forward+backward, timed in R repeats; within a repeat each implementation runs
               once, in an order rotated by one every repeat, so machine drift hits all alike.
               Bytes saved for backward are counted by `saved_tensor_bytes` (exact, no timing).
    like-for-like
               one run at the step model's shape (d = d_model, rows = batch · seq_len): RMSNorm
               against LayerNorm with equally fused kernels (`time_like_for_like`): PyTorch's
               own where both F.rms_norm and F.layer_norm run fused (`torch_norms_fused`), else
               both through torch.compile (on a CPU F.rms_norm is a composite of six ops while
               F.layer_norm is one fused kernel); the summary says which.
    step       one run: a small DecoderLM with norm="rmsnorm" and one with "layernorm" (same
               everything else, same initial weights where names match), training steps
               alternated between the models, on two code paths:
                   blocklab       the models as built (blocklab's RMSNorm, LayerNorm as
                                  F.layer_norm)
                   like-for-like  both norms by PyTorch's functional ops (F.rms_norm and
                                  F.layer_norm), the residual added apart in both (the name is
                                  kept for stored results; on a CPU F.rms_norm is unfused)
    quality    trainer runs of the same two models on stdlib, paired by seed; the paired Δ val
               loss is judged against an equivalence margin.

What each size runs (`suites.evaluation`): tiny and quick plan the quality runs C18 grades and
the step and like-for-like timings; the kernel runs (reported, not graded) are --size full only.

Implementations (the RMSNorm and LayerNorm of one row share a "kind", and ratios compare within
a kind, so an implementation detail is never credited to the normalisation):

    kind       RMSNorm                                   LayerNorm
    blocklab   blocklab.nn.RMSNorm                       blocklab.nn.LayerNorm (F.layer_norm)
    torch      torch.nn.RMSNorm (F.rms_norm)             torch.nn.LayerNorm (F.layer_norm)
    plain      x · rsqrt(mean(x²) + ε) · g               (x − μ) · rsqrt(mean((x − μ)²) + ε) · g + b
    compiled   torch.compile(plain)                      torch.compile(plain)

Time ratios are RMSNorm / LayerNorm per repeat (a repeat's two timings are paired): the
geometric mean of the paired ratios with a 95% Student t interval on their logs
(`TimeRatio.paired`), valid at the few repeats a timing has, where a bootstrap is not. Every
timing runs on a stated number of CPU threads (one in tiny and quick: on a shared 2-core
machine two threads contend with other work and slow down many-fold).

Modules: `timing` (what a timing run measures and stores), `runs` (sizes, plan, prices) and
`summary` (`NormCostData`, the analytic counts, the equivalence verdict, the tables).
"""

from __future__ import annotations

from blocklab.experiments.ladder import RUNGS
from blocklab.experiments.suites.base import Suite
from blocklab.experiments.suites.norm_cost import runs, summary

# How its runs become the metrics the registered rules read (`Suite.metric_version`).
METRIC_VERSION = ("2026-12-02: C18's RMSNorm − LayerNorm final validation loss, paired by seed")
SUITE = Suite(
    name="norm-cost",
    description="RMSNorm vs LayerNorm: kernel time and saved memory, training step time, and "
                "paired quality (C18)",
    plan=runs.plan,
    summarise=summary.summarise,
    data_type=summary.NormCostData,
    section="normalization",
    heading=("RMSNorm vs LayerNorm cost (norm-cost suite)",
             "RMSNorm 与 LayerNorm 的开销（norm-cost 实验）"),
    figures=("norm_cost",),
    # Seeds are the paired quality runs; timings get their repeats instead.
    scale=runs.scale, metric_version=METRIC_VERSION,
    default_seeds={"tiny": 2, "quick": 3, "full": 8, **dict.fromkeys(RUNGS, 3)},
    price=runs.price,
)
