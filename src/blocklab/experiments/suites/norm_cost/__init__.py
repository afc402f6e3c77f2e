"""`norm-cost`: what RMSNorm saves over LayerNorm in compute, time and memory, and what it costs in
quality (C18: "about 7% less compute" at nearly the same quality).

"Compute" is decided by counting (`summary.count_compute`): FLOPs per normalised row by
`blocklab.budget.flops` (forward RMSNorm 4, LayerNorm 7 per element; backward 9 and 13), bytes
an ideal fused kernel moves, and the norms' share of a training step. Timings are reported
beside the counts, never graded:

    kernels        per (d, rows) shape: each implementation below, forward and forward+backward,
                   repeats interleaved in a rotating order; bytes saved for backward counted
    like-for-like  at the step model's shape, both norms equally fused: PyTorch's own kernels
                   where both run fused, else both through torch.compile (on a CPU F.rms_norm is
                   a composite while F.layer_norm is one fused kernel)
    step           rmsnorm and layernorm DecoderLMs, steps alternated, on two code paths:
                   blocklab's modules, and both norms by PyTorch's functional ops
    quality        trainer runs of the two models paired by seed, Δ val loss against an
                   equivalence margin

    kind       RMSNorm                                   LayerNorm
    blocklab   blocklab.nn.RMSNorm                       blocklab.nn.LayerNorm (F.layer_norm)
    torch      torch.nn.RMSNorm (F.rms_norm)             torch.nn.LayerNorm (F.layer_norm)
    plain      x · rsqrt(mean(x²) + ε) · g               (x − μ) · rsqrt(mean((x − μ)²) + ε) · g + b
    compiled   torch.compile(plain)                      torch.compile(plain)

Ratios compare within a kind, so an implementation detail is never credited to the norm: the
geometric mean of per-repeat RMSNorm / LayerNorm ratios with a Student t interval on their logs
(`TimeRatio.paired`). Tiny and quick plan the quality runs and the step and like-for-like
timings; the kernel runs are --size full only.
"""

from __future__ import annotations

from blocklab.experiments.ladder import RUNGS
from blocklab.experiments.suites.base import Suite
from blocklab.experiments.suites.norm_cost import runs, summary

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
