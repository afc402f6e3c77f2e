"""What "compute" means, counted with no run (C18's analytic part): FLOPs and bytes of one norm
per row (`count_norm`), the norms' share of a training step (`step_share`), both at the suite's
step model and at a real model (`count_compute`)."""

from __future__ import annotations

from blocklab.experiments.suites.norm_cost.data import NormCompute, NormCount, StepShare
from blocklab.experiments.suites.norm_cost.sizes import NORM_NAMES, SIZES, model_config

# Per-row statistics a fused kernel keeps for backward (float32 whatever the input's dtype):
# RMSNorm the 1/rms, LayerNorm the mean and the 1/std. Parameters: γ; γ and β.
NORM_STATS = {"rmsnorm": 1, "layernorm": 2}
NORM_PARAMS = {"rmsnorm": 1, "layernorm": 2}
STAT_BYTES = 4
# The real model the counts are also read at (`blocklab.budget` zoo), in bf16 (2 bytes).
REAL_MODEL = "meta-llama-3-8b"
REAL_ELEMENT_BYTES = 2


def count_norm(norm: str, d: int, element_bytes: int = 4) -> NormCount:
    """FLOPs and bytes of `norm` on one row of width d.

    FLOPs: `budget.flops.norm_flops_per_row` (forward `ELEMENTWISE_COST`: RMSNorm 4 per
    element, LayerNorm 7; backward `NORM_BACKWARD_COST`: 9 and 13). Bytes: an ideal fused
    kernel touching each tensor once, `element_bytes` per element:

        training forward   read x, write y (2·d·e), write the row statistics (s·4)
        backward           read x and dy, write dx (3·d·e), read the statistics (s·4)
        per call           read γ (β) forward, read γ and write dγ (dβ) backward: (2p + 1)·d·e

    with s = NORM_STATS and p = NORM_PARAMS. The per-row bytes differ only by the statistics:
    both norms read and write the same activations.
    """
    from blocklab.budget.flops import norm_flops_per_row

    fwd_flops = norm_flops_per_row(norm, d)  # first: it refuses an unknown norm or d
    stats = NORM_STATS[norm] * STAT_BYTES
    fwd_bytes = 2 * d * element_bytes + stats
    return NormCount(
        norm=norm, d=d, element_bytes=element_bytes,
        fwd_flops=fwd_flops, fwdbwd_flops=norm_flops_per_row(norm, d, True),
        fwd_bytes=fwd_bytes, fwdbwd_bytes=fwd_bytes + 3 * d * element_bytes + stats,
        param_bytes=(2 * NORM_PARAMS[norm] + 1) * d * element_bytes)


def saving_pct(rms: float, ln: float) -> float:
    """100·(1 − rms / ln): how much less RMSNorm needs than LayerNorm, % (negative: more)."""
    return 100 * (1 - rms / ln)


def step_share(cfg, batch: int, seq_len: int, model: str) -> StepShare:
    """The norms' FLOPs in one training step of `cfg` ([batch, seq_len] tokens) with RMSNorm
    and with LayerNorm, everything else alike.

    Matmuls: 3× the forward (`budget.flops.prefill_flops`: backward = 2× forward, the 6·N
    rule); norms: `budget.flops.elementwise_flops`' forward norm count (2 per layer, 4 with
    sandwich placement, + the final norm) scaled to forward+backward. The other elementwise
    work (activations, softmax, RoPE) is left out of the step, so the saving is an upper
    bound.
    """
    from blocklab.budget.flops import (
        ELEMENTWISE_COST,
        NORM_BACKWARD_COST,
        elementwise_flops,
        prefill_flops,
    )

    matmul = 3 * prefill_flops(cfg, batch, seq_len).total
    norm_flops, calls = {}, 0
    for norm in NORM_NAMES:
        fwd = elementwise_flops(cfg.replace(norm=norm), batch, seq_len)["norms"]
        per_call = batch * seq_len * cfg.d_model * ELEMENTWISE_COST[norm]
        calls = fwd // per_call
        norm_flops[norm] = calls * batch * seq_len * cfg.d_model * (
            ELEMENTWISE_COST[norm] + NORM_BACKWARD_COST[norm])
    step = {norm: matmul + flops for norm, flops in norm_flops.items()}
    return StepShare(model=model, d_model=cfg.d_model, n_layers=cfg.n_layers, batch=batch,
                     seq_len=seq_len, norm_calls=calls, matmul_flops=matmul,
                     norm_flops=norm_flops, step_flops=step,
                     saving_pct=saving_pct(step["rmsnorm"], step["layernorm"]))


def count_compute(size: str) -> NormCompute:
    """C18's analytic part at `size`: per-row counts at the step model's width (float32, as
    the suite runs) and at the real model's (bf16), and the step shares of both models."""
    from blocklab.budget import resolve_model

    step = SIZES[size].step
    real = resolve_model(REAL_MODEL).config
    counts = [count_norm(norm, d, e) for d, e in ((step.d_model, 4),
                                                  (real.d_model, REAL_ELEMENT_BYTES))
              for norm in NORM_NAMES]
    by = {(c.norm, c.d, c.element_bytes): c for c in counts}
    bytes_saving = {
        f"d={d}/{e}B": saving_pct(by["rmsnorm", d, e].fwdbwd_bytes,
                                  by["layernorm", d, e].fwdbwd_bytes)
        for d, e in ((step.d_model, 4), (real.d_model, REAL_ELEMENT_BYTES))}
    rms, ln = counts[0], counts[1]
    suite_cfg = model_config("rmsnorm", step.d_model, step.n_layers, step.seq_len)
    steps = [step_share(suite_cfg, step.batch_size, step.seq_len, f"norm-cost {size}"),
             step_share(real, 1, real.max_seq_len, REAL_MODEL)]
    return NormCompute(counts=counts,
                       flops_saving_pct=saving_pct(rms.fwdbwd_flops, ln.fwdbwd_flops),
                       fwd_flops_saving_pct=saving_pct(rms.fwd_flops, ln.fwd_flops),
                       bytes_saving_pct=bytes_saving, steps=steps)
