"""The position suite's summary (`PositionData`): statistics first, then tables. No PyTorch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Union

import numpy as np

from blocklab.experiments.options import RunOptions
from blocklab.experiments.suites.base import (
    Results,
    format_ci,
    format_ratio,
    mean_ci,
    median_ms,
    paired_difference,
    relative_pct,
)
from blocklab.experiments.suites.evaluation import full_only, graded_only, listed
from blocklab.experiments.suites.position.runs import (
    FAR_POSITION,
    SIZES,
    UNAVAILABLE,
    YARN_PAPER_BETAS,
    YARN_REFERENCE_LENGTH,
    CostRun,
    FiniteRead,
    LengthReads,
    OrderRead,
    OrderSetting,
    PasskeyGrid,
    Runs,
    arms,
    decode_runs,
    schemes,
    train_config,
    tuned_lrs,
    yarn_betas,
    yarn_ramp_pairs,
)
from blocklab.experiments.suites.position.timing import ShapeTimes
from blocklab.experiments.suites.tuning import lr_trials
from blocklab.experiments.suites.tuning import tuning_table as tuned_table
from blocklab.experiments.summaries import (
    RATIO_METHOD,
    ArmTuning,
    Interval,
    LrTrial,
    Summary,
    Table,
    TimeRatio,
)

# A read that cannot be made (a learned table past its length) is this string, not a number.
Read = Union[Interval, str]  # noqa: UP007 (decoded by `decode`, which reads typing.Union)


@dataclass(frozen=True)
class PerPosition:
    bucket: int  # positions per bucket
    loss: list[float | None]


@dataclass(frozen=True)
class PasskeySummary:
    by_length: dict[str, float | str]  # multiple of L -> accuracy (mean over depths and seeds)
    by_depth: dict[str, dict[str, float | str]]
    seeds: int


@dataclass(frozen=True)
class PositionArm:
    """One position scheme (or RoPE scaling) read at every multiple of L (keys "2", "4", ...)."""

    loss_at_L: Interval
    loss_beyond_L: dict[str, Read]
    sliding: dict[str, Interval | None]  # None: the arm is compared with plain RoPE's windows
    extrapolated_minus_sliding: dict[str, Read]
    extrapolated_vs_sliding_pct: dict[str, Read]
    per_position: dict[str, PerPosition | str | None]
    passkey: PasskeySummary | None


@dataclass(frozen=True)
class YarnRamp:
    beta_fast: float
    beta_slow: float
    ramp_pairs: list[int]


@dataclass(frozen=True)
class YarnBetas:
    paper: YarnRamp
    rescaled: YarnRamp
    rotary_pairs: int
    reference_length: int


@dataclass(frozen=True)
class PositionRun:
    seed: int
    status: str
    val_loss: float | None
    unigram_entropy: float | None
    ms_per_step: float | None


@dataclass(frozen=True)
class OrderProbe:
    """C29 over one arm's seeds: the next-token change when a prefix's first prefix_len − 1
    tokens are reversed, and val loss − unigram entropy (nats; < 0: it uses its context)."""

    prefix_len: int
    prefixes: int  # per seed
    tv: Interval  # mean total-variation distance, in [0, 1]
    kl: Interval  # mean KL(p ‖ q), nats
    loss_minus_unigram: Interval


@dataclass(frozen=True)
class SchemeCost:
    """C31, one position scheme: parameters, median step times, SDPA kernels and masks."""

    params: int  # blocklab.budget.count_params
    params_module: int  # counted on the built module
    train_ms: float  # median training step (forward, backward, clip, AdamW)
    decode_ms: float  # median decode step per token (KV cache, no grad)
    train_vs_none: TimeRatio  # scheme / none per repeat: geometric mean, 95% t on log ratios
    decode_vs_none: TimeRatio
    kernels_train: list[str]  # aten ops dispatched for SDPA, forward and backward
    kernels_decode: list[str]
    masks_train: list[str]  # "is_causal", "none" or "<dtype> mask [shape]"
    masks_decode: list[str]
    flash_train: bool | str  # SDPA restricted to FLASH_ATTENTION accepts it, or its refusal
    flash_decode: bool | str


@dataclass(frozen=True)
class ShapeTiming:
    """C31's step times at one model shape (reported, never graded): a no-grad prefill of
    `prompt_tokens`, then `decode_tokens` single-token steps, per scheme, over `repeats`."""

    label: str
    d_model: int
    n_layers: int
    n_heads: int
    batch_size: int
    prompt_tokens: int  # the timed prefill's length, and the KV cache each decode step reads
    decode_tokens: int
    repeats: int
    threads: int
    prefill_ms: dict[str, float]  # median per scheme
    decode_ms: dict[str, float]  # median per token, per scheme
    prefill_vs_none: dict[str, TimeRatio]  # scheme / none per repeat (`TimeRatio.paired`)
    decode_vs_none: dict[str, TimeRatio]
    wall_time_s: float


@dataclass(frozen=True)
class PositionCost:
    threads: int
    L: int
    batch_size: int
    prompt_tokens: int
    decode_tokens: int
    repeats: int
    params: dict[str, int]  # count_params total for every scheme of PARAM_SCHEMES
    schemes: dict[str, SchemeCost]  # timed at the suite's toy shape: per-op overhead
    realistic: ShapeTiming | None = None


@dataclass(frozen=True)
class FineTune:
    """The RoPE fine-tune: `steps` at `factor`·L tokens, scaling factor `scale`; `arms`: each
    scaling kind ("none": the control) -> its arm name."""

    factor: int
    scale: int
    steps: int
    lr: float
    arms: dict[str, str]


@dataclass(frozen=True)
class PositionData:
    L: int
    mults: list[int]
    eval_lengths: list[int]
    arms: dict[str, PositionArm]
    relative_error: dict[str, list[list[float | None]]]  # dtype -> [[shift, max error], ...]
    relative_error_blocklab: dict[str, list[list[float | None]]]
    finite_past_max_seq_len: dict[str, list[FiniteRead]]
    yarn: YarnBetas
    train: dict[str, list[PositionRun]]
    order: dict[str, OrderProbe]  # arm -> C29's order probe
    cost: PositionCost | None  # C31's timed run (None: not stored)
    finetune: FineTune | None
    lr_trials: list[LrTrial] = field(default_factory=list)
    lr_tuning: list[ArmTuning] = field(default_factory=list)


def arm_statistics(size: str, runs: Runs, seeds: Sequence[int]) -> dict[str, PositionArm]:
    """Every arm read (each RoPE variant an arm of its own) over `seeds`, in read order."""
    reads: dict[str, dict[int, LengthReads]] = {}  # arm -> seed -> its reads
    passkey: dict[str, dict[int, PasskeyGrid]] = {}
    for run in runs.arms:
        if run.status == "ok" and run.reads is not None:
            reads.setdefault(run.arm, {})[run.seed] = run.reads
            for name, variant in run.variants.items():
                reads.setdefault(name, {})[run.seed] = variant.reads()
    for pk in runs.passkey:
        for name, grid in pk.accuracy.items():
            passkey.setdefault(name, {})[pk.seed] = grid
    rope = reads.get("rope", {})
    return {name: _arm_statistics(size, name, by_seed, rope, list(seeds), passkey.get(name))
            for name, by_seed in reads.items()}


def _arm_statistics(size: str, name: str, by_seed: dict[int, LengthReads],
                    rope: dict[int, LengthReads], seeds: list[int],
                    passkey: dict[int, PasskeyGrid] | None) -> PositionArm:
    """One arm over `seeds`: loss at L; per longer multiple the loss past L against the sliding
    windows (a scaled variant's: plain RoPE's, `rope`) in nats and %, paired; per position."""
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
        # aligned by seed with `sliding`: a failed seed shrinks n, not the pairing
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
        pct[m] = mean_ci(relative_pct(losses, sliding))
    for m in [str(m) for m in mults]:
        curves = [c for c in (r.per_position.get(m) for r in by_seed.values()) if c]
        if curves:
            width = max(1, L // 8)
            mean = np.mean(np.asarray(curves, dtype=np.float64), axis=0)
            per_position[m] = PerPosition(bucket=width, loss=[
                float(mean[i:i + width].mean()) for i in range(0, mean.size, width)])
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


def shape_timing(times: ShapeTimes | None) -> ShapeTiming | None:
    """Medians and each scheme's `TimeRatio.paired` to "none"; None for an older run."""
    if times is None:
        return None
    prefill, decode = times.prefill_s, times.decode_s
    shape = {k: v for k, v in vars(times).items() if k not in ("prefill_s", "decode_s")}
    return ShapeTiming(
        **shape, prefill_ms={k: median_ms(v) for k, v in prefill.items()},
        decode_ms={k: median_ms(v) for k, v in decode.items()},
        prefill_vs_none={k: TimeRatio.paired(v, prefill["none"]) for k, v in prefill.items()},
        decode_vs_none={k: TimeRatio.paired(v, decode["none"]) for k, v in decode.items()})


def cost_summary(record: CostRun | None) -> PositionCost | None:
    """C31's timed run, ratios to "none" by `TimeRatio.paired`."""
    if record is None:
        return None
    train, decode_s = record.train_s, record.decode_s
    schemes = {}
    for name in train:
        k = record.kernels[name]
        schemes[name] = SchemeCost(
            params=record.params[name], params_module=record.params_module[name],
            train_ms=median_ms(train[name]), decode_ms=median_ms(decode_s[name]),
            train_vs_none=TimeRatio.paired(train[name], train["none"]),
            decode_vs_none=TimeRatio.paired(decode_s[name], decode_s["none"]),
            kernels_train=k.train, kernels_decode=k.decode, masks_train=k.train_mask,
            masks_decode=k.decode_mask, flash_train=k.flash_train,
            flash_decode=k.flash_decode)
    return PositionCost(threads=record.threads, L=record.L, batch_size=record.batch_size,
                        prompt_tokens=record.prompt_tokens, decode_tokens=record.decode_tokens,
                        repeats=record.repeats, params=record.params, schemes=schemes,
                        realistic=shape_timing(record.realistic))


def _cell(value: Read | None, digits: int = 3, unit: str = "") -> str:
    if isinstance(value, str):
        return value
    return format_ci(value, digits, unit) if isinstance(value, Interval) else "—"


def _finite_cell(value: bool | None, read: FiniteRead) -> str:
    if value is None:
        return "ValueError (table)" if read.error is not None else "—"
    return "finite" if value else "NaN/inf"


def summarise(options: RunOptions, results: Results) -> Summary:
    size, seeds = options.size, options.seeds
    tuned = [(spec, r) for spec, r in results if spec.payload.get("kind") == "tune"]
    evaluated = [(spec, r) for spec, r in results if spec.payload.get("kind") != "tune"]
    config = SIZES[size]
    L, mults = config.L, config.mults
    longer = [str(m) for m in mults if m > 1]
    seed_list = list(seeds)
    trials = lr_trials(tuned)
    tunings = tuned_lrs(size, trials)
    runs = decode_runs(evaluated)
    arms_data = arm_statistics(size, runs, seed_list)
    relative = runs.relative_error
    finite: dict[str, list[FiniteRead]] = {}  # arm -> its reads far past max_seq_len
    train: dict[str, list[PositionRun]] = {}
    for run in runs.arms:
        if run.finite is not None:
            finite.setdefault(run.arm, []).append(run.finite)
        final = run.train.final
        train.setdefault(run.arm, []).append(PositionRun(
            seed=run.seed, status=run.status,
            val_loss=final.val_loss if final is not None else None,
            unigram_entropy=final.unigram_entropy if final is not None else None,
            ms_per_step=run.train.ms_per_step))
    rotary_dim = config.model.d_model // config.model.n_heads
    paper, rescaled = (YarnRamp(*betas, list(yarn_ramp_pairs(L, rotary_dim, *betas)))
                       for betas in (YARN_PAPER_BETAS, yarn_betas(L)))
    yarn = YarnBetas(paper, rescaled, rotary_dim // 2, YARN_REFERENCE_LENGTH)
    order = order_summary(runs, train, seed_list, config.order)
    cost = cost_summary(runs.cost)
    ft = config.finetune  # and the arm each scaling kind's fine-tune is read as
    finetune = None if not ft else FineTune(
        factor=ft.factor, scale=max(mults), steps=ft.steps, lr=ft.lr,
        arms={kind or "none": f"rope{'' if kind is None else '+' + kind}+ft{ft.factor}x"
              for kind in ft.kinds})

    tables = [
        Table(f"Loss (nats/token) on positions ≥ L, trained at L={L}",
              ["arm", "1× (all positions)", *[f"{m}× (p ≥ L)" for m in longer],
               f"sliding {longer[-1]}× (p ≥ L)"],
              [[name, _cell(a.loss_at_L) if a.loss_at_L.n else "—",
                *[_cell(a.loss_beyond_L[m]) for m in longer],
                *[_cell(a.sliding[m]) for m in longer[-1:]]] for name, a in arms_data.items()],
              "Mean [95% CI] over seeds. Scaled RoPE variants use factor m = length / L, same "
              "weights (training-free) unless named +ft. Sliding: the same tokens read in "
              "windows of L (stride L/2), never at a position ≥ L."),
        Table("Extrapolated − sliding-window loss on the same tokens (paired by seed)",
              ["arm", *[f"{m}×" for m in longer]],
              [[name, *[_cell(a.extrapolated_minus_sliding[m]) for m in longer]]
               for name, a in arms_data.items()],
              "< 0: the model gains from context longer than L; > 0: reading positions ≥ L "
              "costs more than it gains. Scaled variants are paired with plain RoPE's sliding "
              "windows."),
    ]
    rope_names = [name for name in arms_data if name.startswith("rope")]
    tables.append(Table(
        "RoPE and its scalings: loss past L relative to sliding windows, % (C30)",
        ["arm", *[f"{m}×" for m in longer]],
        [[name, *[_cell(arms_data[name].extrapolated_vs_sliding_pct[m], 1, "%") for m in longer]]
         for name in rope_names],
        "100·(extrapolated − sliding)/sliding per seed, mean [95% CI]: the quality lost by "
        "reading positions ≥ L instead of windows of L."))
    grid = config.train.lr_grid
    notes = []
    if tunings:
        tables.append(tuned_table(
            tunings.values(), trials, grid,
            f"{config.train.tuning_seeds} tuning seed(s), disjoint from the evaluation seeds, "
            "at L"))
    else:
        notes.append(f"Every arm trains at peak lr {train_config(options, 0).lr:g} (the middle "
                     f"of the grid {{{', '.join(f'{lr:g}' for lr in grid.base)}}}): each graded "
                     "part compares an arm with itself, not with the others; --size full tunes "
                     "every arm's lr on seeds of its own.")
    if runs.passkey:
        tables.append(Table("Passkey accuracy by length (mean over depths and seeds)",
                            ["arm", *[f"{m}×" for m in mults]],
                            [[name, *[a.passkey.by_length.get(str(m), "—") for m in mults]]
                             for name, a in arms_data.items() if a.passkey],
                            "Separate passkey models per arm, trained on passkey examples of "
                            "L bytes; exact match of all five digits."))
    else:
        notes.append(f"Passkey retrieval is not part of the {size} grid: no registered rule "
                     "grades it, and a model trained on passkey examples needs ~1,500 steps "
                     "before it retrieves at all (measured at d=64, 2 layers, L=128); the full "
                     "grid runs it.")
    if relative is not None:
        tables.append(Table(
            "RoPE: max |score(m, n) − score(m+s, n+s)| (C20)",
            ["pipeline", "dtype", *[f"s={s:g}" for s in relative.shifts]],
            [[pipeline, dtype,
              *["NaN/inf" if err is None else f"{err:.2e}" for _, err in pairs]]
             for pipeline, by_dtype in (("naive", relative.naive),
                                        ("blocklab", relative.blocklab))
             for dtype, pairs in by_dtype.items()],
            "naive: positions, angles and rotation all in dtype; blocklab: float32 angles "
            "(RotaryEmbedding), rotation in float32, q and k cast back to dtype. Scores "
            "q·k/√64 with q, k ~ N(0, 1), so errors are in logit units."))
    tables.append(Table(f"Logits finite at positions {FAR_POSITION:,} and on, far past "
                        "max_seq_len? (C26)", ["arm", "max_seq_len", "first position",
                                               "float32", "bfloat16"],
                        [[run.arm, run.finite.max_seq_len, run.finite.position,
                          _finite_cell(run.finite.float32, run.finite),
                          _finite_cell(run.finite.bfloat16, run.finite)]
                         for run in runs.arms if run.finite is not None and run.seed == 0],
                        "RoPE's table is sized max_seq_len and extended on demand."))

    notes.append(
        f"YaRN β: the paper's β_fast=32, β_slow=1 put the ramp over pairs "
        f"{tuple(yarn.paper.ramp_pairs)} of {rotary_dim // 2} at L={L}, head_dim={rotary_dim}; "
        f"'yarn-rescaled' uses β scaled by L/{YARN_REFERENCE_LENGTH}: "
        f"β_fast={yarn.rescaled.beta_fast:g}, β_slow={yarn.rescaled.beta_slow:g}, ramp over "
        f"pairs {tuple(yarn.rescaled.ramp_pairs)} (the same fractions of the spectrum as "
        "Llama 2 at 4096).")
    notes.append("dynamic NTK is given factor m, as the others: at a full-sequence read of "
                 "m·L tokens its base is θ·(m² − m + 1)^(r/(r−2)), i.e. static NTK at scale "
                 "m² − m + 1 (3, 13, 57 for m = 2, 4, 8); with factor 1 it would equal 'ntk'.")
    if finetune is not None:
        notes.append(f"+ft{finetune.factor}x variants: the RoPE model fine-tuned "
                     f"{finetune.steps} steps at {finetune.factor}·L tokens with that scaling "
                     f"(factor {finetune.scale}, the longest multiple read), then read at every "
                     f"length with it; rope+ft{finetune.factor}x is the control: the same "
                     "fine-tune without scaling.")
    else:
        notes.append(f"RoPE scaling in the {size} grid is training-free only (same weights); "
                     "the papers fine-tune, and the full grid does too.")
    if "learned" in arms_data:
        notes.append("learned (table L) cannot run past L: its reads there are recorded as "
                     f"'{UNAVAILABLE}' (the ValueError of LearnedPositions), not as a loss.")
    left_out = [a for a in schemes(size) if a not in arms(size) and a not in arms_data]
    full_only_items = []
    if left_out:
        graded = listed([a for a in arms(size) if a.startswith(("learned", "sinusoidal"))])
        full_only_items.append(f"the {listed(left_out)} arm{'s' if len(left_out) > 1 else ''} "
                               f"(C21 grades {graded} instead)")
    if graded_only(size) and relative is None:
        full_only_items.append("RoPE's relative-position error by dtype (C20's note; C20 itself "
                               "is checked in float64 by the ledger)")
    if full_only_items:
        notes.append(full_only(full_only_items))
    if order:
        tables.append(Table(
            "Order without positions: next-token change when a prefix is reversed (C29)",
            ["arm", "TV distance", "KL (nats)", "val loss − unigram entropy (nats)"],
            [[name, _cell(o.tv), _cell(o.kl), _cell(o.loss_minus_unigram)]
             for name, o in order.items()],
            f"{config.order.prefixes} validation prefixes of {config.order.prefix_len} tokens "
            f"per seed; the first {config.order.prefix_len - 1} reversed, the last kept (same "
            "tokens, same token read). TV = ½Σ|p − q| of the next-token distributions, mean "
            "[95% CI] over seeds. A bidirectional model without positions would give exactly "
            "0."))
    if cost:
        tables.append(Table(
            "Position cost: parameters, step time and SDPA kernel, 1 thread (C31)",
            ["scheme", "params", "train ms", "× none", "decode ms/token", "× none",
             "train kernel", "train mask", "decode mask"],
            [[name, c.params, f"{c.train_ms:.1f}", format_ratio(c.train_vs_none),
              f"{c.decode_ms:.3f}", format_ratio(c.decode_vs_none),
              ", ".join(k.removeprefix("aten::") for k in c.kernels_train),
              ", ".join(c.masks_train), ", ".join(c.masks_decode)]
             for name, c in cost.schemes.items()],
            f"Medians over {cost.repeats} interleaved repeats; × none: {RATIO_METHOD}, "
            f"{cost.repeats} repeats, 95% CI. Training: batch {cost.batch_size} × L={cost.L}; "
            f"decode: one token at a time after {cost.prompt_tokens} cached tokens. Kernels: "
            "the aten ops PyTorch dispatched (profiler names); masks: what attention.py hands "
            "SDPA."))
    data = PositionData(L=L, mults=list(mults), eval_lengths=[m * L for m in mults],
                        arms=arms_data,
                        relative_error=relative.naive if relative is not None else {},
                        relative_error_blocklab=(relative.blocklab if relative is not None
                                                 else {}),
                        finite_past_max_seq_len=finite, yarn=yarn, train=train, order=order,
                        cost=cost, finetune=finetune, lr_trials=trials,
                        lr_tuning=list(tunings.values()))
    return Summary("position", size, len(seeds), tables, notes, data, first_seed=seeds.start)
