"""The position suite's statistics, computed from its decoded runs before any table shows them:
each arm over seeds, passkey accuracy, finiteness, YaRN's ramps, training runs, the order probe,
the cost run and the fine-tune settings."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from blocklab.experiments.suites.base import mean_ci, paired_difference
from blocklab.experiments.suites.position.data import (
    FineTune,
    FiniteRead,
    OrderProbe,
    PasskeySummary,
    PerPosition,
    PositionArm,
    PositionCost,
    PositionRun,
    Read,
    SchemeCost,
    YarnBetas,
    YarnRamp,
)
from blocklab.experiments.suites.position.realistic_cost import shape_timing
from blocklab.experiments.suites.position.records import (
    CostRun,
    LengthReads,
    OrderRead,
    PasskeyGrid,
    Runs,
)
from blocklab.experiments.suites.position.scaling import (
    YARN_PAPER_BETAS,
    YARN_REFERENCE_LENGTH,
    yarn_betas,
    yarn_ramp_pairs,
)
from blocklab.experiments.suites.position.sizes import (
    SIZES,
    UNAVAILABLE,
    OrderSetting,
    PositionSize,
    arms,
)
from blocklab.experiments.summaries import Interval, TimeRatio


def _bucketed(curves: list[list[float | None]], width: int) -> list[float]:
    mean = np.mean(np.asarray(curves, dtype=np.float64), axis=0)
    return [float(mean[i:i + width].mean()) for i in range(0, mean.size, width)]


def _collect(runs: Runs) -> tuple[dict[str, dict[int, LengthReads]],
                                  dict[str, dict[int, PasskeyGrid]]]:
    """arm -> seed -> its reads (scaling variants as arms of their own), from the runs that
    trained, and arm -> seed -> passkey grid."""
    reads: dict[str, dict[int, LengthReads]] = {}
    passkey: dict[str, dict[int, PasskeyGrid]] = {}
    for run in runs.arms:
        if run.status == "ok" and run.reads is not None:
            reads.setdefault(run.arm, {})[run.seed] = run.reads
            for name, variant in run.variants.items():
                reads.setdefault(name, {})[run.seed] = variant.reads()
    for pk in runs.passkey:
        for name, grid in pk.accuracy.items():
            passkey.setdefault(name, {})[pk.seed] = grid
    return reads, passkey


def arm_statistics(size: str, runs: Runs, seeds: Sequence[int]) -> dict[str, PositionArm]:
    """Every arm read (each scaled or fine-tuned RoPE variant as an arm of its own) over
    `seeds`, in the order the runs read them (`PositionArm`)."""
    reads, passkey = _collect(runs)
    rope = reads.get("rope", {})
    return {name: _arm_statistics(size, name, by_seed, rope, list(seeds), passkey.get(name))
            for name, by_seed in reads.items()}


def _arm_statistics(size: str, name: str, by_seed: dict[int, LengthReads],
                    rope: dict[int, LengthReads], seeds: list[int],
                    passkey: dict[int, PasskeyGrid] | None) -> PositionArm:
    """One arm over `seeds`: loss at L; per longer multiple the loss past L, the sliding-window
    loss on the same tokens (a scaled variant, which has none of its own, is paired with plain
    RoPE's: `rope`) and their paired difference in nats and %; the bucketed per-position
    loss; the passkey accuracy where it has passkey runs."""
    config = SIZES[size]
    L, mults = config.L, config.mults
    longer = [str(m) for m in mults if m > 1]
    loss_at_L = mean_ci([r.loss_at_L for r in by_seed.values() if r.loss_at_L is not None])
    beyond: dict[str, Read] = {}
    sliding_at: dict[str, Interval | None] = {}
    minus: dict[str, Read] = {}
    pct: dict[str, Read] = {}
    per_position: dict[str, PerPosition | str | None] = {}
    for m in longer:
        # Aligned by seed with `sliding` below: a seed without a result is None here, so
        # one failed seed shrinks n instead of breaking the pairing.
        values = [by_seed[s].loss_beyond_L.get(m) if s in by_seed else None for s in seeds]
        # Scaled variants are compared with the plain RoPE model's sliding windows.
        own = any(m in r.sliding for r in by_seed.values())
        source = by_seed if own else rope
        sliding = [source[s].sliding.get(m) if s in source else None for s in seeds]
        sliding_at[m] = mean_ci(sliding) if own else None
        read = [v for v in values if v is not None]
        if any(v == UNAVAILABLE for v in read):
            # A table too short for m·L is so for every seed; one seed's alone is a fault.
            if not all(v == UNAVAILABLE for v in read):
                raise RuntimeError(f"arm {name} at {m}×L: {sum(v == UNAVAILABLE for v in read)} "
                                   f"of {len(read)} seeds could not run there; a position "
                                   "table is too short for every seed or for none")
            beyond[m] = minus[m] = pct[m] = UNAVAILABLE
            continue
        losses = [v if isinstance(v, float) else None for v in values]
        beyond[m] = mean_ci(losses)
        minus[m] = paired_difference(losses, sliding)
        pct[m] = mean_ci([100 * (x - y) / y for x, y in zip(losses, sliding, strict=True)
                          if x is not None and y is not None and math.isfinite(y)])
    for m in [str(m) for m in mults]:
        curves = [c for c in (r.per_position.get(m) for r in by_seed.values()) if c]
        if curves:
            per_position[m] = PerPosition(bucket=max(1, L // 8),
                                          loss=_bucketed(curves, max(1, L // 8)))
        elif m != "1" or name in arms(size):
            per_position[m] = UNAVAILABLE if m != "1" else None
    return PositionArm(
        loss_at_L=loss_at_L, loss_beyond_L=beyond, sliding=sliding_at,
        extrapolated_minus_sliding=minus, extrapolated_vs_sliding_pct=pct,
        per_position=per_position,
        passkey=_passkey_summary(passkey) if passkey is not None else None)


def _passkey_summary(by_seed: dict[int, PasskeyGrid]) -> PasskeySummary:
    by_depth: dict[str, dict[str, float | str]] = {}
    by_length: dict[str, float | str] = {}
    for m in next(iter(by_seed.values())):
        cells = [grid[m] for grid in by_seed.values()]
        depths = list(cells[0])
        if any(v == UNAVAILABLE for c in cells for v in c.values()):
            by_depth[m] = {d: UNAVAILABLE for d in depths}
            by_length[m] = UNAVAILABLE
            continue
        by_depth[m] = {d: float(np.mean([c[d] for c in cells])) for d in depths}
        by_length[m] = float(np.mean(list(by_depth[m].values())))
    return PasskeySummary(by_length=by_length, by_depth=by_depth, seeds=len(by_seed))


def finite_reads(runs: Runs) -> dict[str, list[FiniteRead]]:
    """arm -> its logits far past max_seq_len, one read per training run that made it."""
    finite: dict[str, list[FiniteRead]] = {}
    for run in runs.arms:
        if run.finite is not None:
            finite.setdefault(run.arm, []).append(run.finite)
    return finite


def yarn_summary(config: PositionSize) -> YarnBetas:
    """YaRN's ramp at the size's L and head_dim with the paper's β and with β rescaled."""
    L = config.L
    rotary_dim = config.model.d_model // config.model.n_heads
    beta_fast, beta_slow = yarn_betas(L)
    return YarnBetas(
        paper=YarnRamp(YARN_PAPER_BETAS[0], YARN_PAPER_BETAS[1],
                       list(yarn_ramp_pairs(L, rotary_dim, *YARN_PAPER_BETAS))),
        rescaled=YarnRamp(beta_fast, beta_slow,
                          list(yarn_ramp_pairs(L, rotary_dim, beta_fast, beta_slow))),
        rotary_pairs=rotary_dim // 2, reference_length=YARN_REFERENCE_LENGTH)


def train_summary(runs: Runs) -> dict[str, list[PositionRun]]:
    """arm -> every training run's status, val loss, unigram entropy and step time."""
    out: dict[str, list[PositionRun]] = {}
    for run in runs.arms:
        final = run.train.final
        out.setdefault(run.arm, []).append(PositionRun(
            seed=run.seed, status=run.status,
            val_loss=final.val_loss if final is not None else None,
            unigram_entropy=final.unigram_entropy if final is not None else None,
            ms_per_step=run.train.ms_per_step))
    return out


def order_summary(runs: Runs, train: dict[str, list[PositionRun]], seeds: list[int],
                   order: OrderSetting) -> dict[str, OrderProbe]:
    """arm -> its order probe over seeds, with val loss − unigram entropy of the same runs."""
    probes: dict[str, dict[int, OrderRead]] = {}
    for run in runs.arms:
        if run.order is not None:
            probes.setdefault(run.arm, {})[run.seed] = run.order
    out = {}
    for arm, by_seed in probes.items():
        ok = {r.seed: r for r in train.get(arm, []) if r.status == "ok"}
        gaps = [ok[s].val_loss - ok[s].unigram_entropy for s in seeds
                if s in ok and ok[s].val_loss is not None
                and ok[s].unigram_entropy is not None]
        out[arm] = OrderProbe(prefix_len=order.prefix_len, prefixes=order.prefixes,
                              tv=mean_ci([p.tv for p in by_seed.values()]),
                              kl=mean_ci([p.kl for p in by_seed.values()]),
                              loss_minus_unigram=mean_ci(gaps))
    return out


def cost_summary(record: CostRun | None) -> PositionCost | None:
    """C31's timed run as a `PositionCost`; ratios against "none" by `TimeRatio.paired` (the
    geometric mean of paired ratios, Student t on log ratios)."""
    if record is None:
        return None
    train, decode_s = record.train_s, record.decode_s
    schemes = {}
    for name in train:
        k = record.kernels[name]
        schemes[name] = SchemeCost(
            params=record.params[name], params_module=record.params_module[name],
            train_ms=1000 * float(np.median(train[name])),
            decode_ms=1000 * float(np.median(decode_s[name])),
            train_vs_none=TimeRatio.paired(train[name], train["none"]),
            decode_vs_none=TimeRatio.paired(decode_s[name], decode_s["none"]),
            kernels_train=k.train, kernels_decode=k.decode, masks_train=k.train_mask,
            masks_decode=k.decode_mask, flash_train=k.flash_train,
            flash_decode=k.flash_decode)
    return PositionCost(threads=record.threads, L=record.L, batch_size=record.batch_size,
                        prompt_tokens=record.prompt_tokens, decode_tokens=record.decode_tokens,
                        repeats=record.repeats, params=record.params, schemes=schemes,
                        realistic=shape_timing(record.realistic))


def finetune_summary(config: PositionSize) -> FineTune | None:
    """The size's RoPE fine-tune and the arm each scaling kind's fine-tune is read as."""
    ft = config.finetune
    if not ft:
        return None
    return FineTune(factor=ft.factor, scale=max(config.mults), steps=ft.steps, lr=ft.lr,
                    arms={kind or "none": f"rope{'' if kind is None else '+' + kind}"
                                          f"+ft{ft.factor}x" for kind in ft.kinds})

