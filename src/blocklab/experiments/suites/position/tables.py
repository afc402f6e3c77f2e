"""`summarise`: the position suite's statistics (`stats`) first, then the tables and notes that
show them, and the typed `PositionData` the claims ledger and the report read."""

from __future__ import annotations

from blocklab.experiments.options import RunOptions
from blocklab.experiments.suites.base import Results, format_ci
from blocklab.experiments.suites.evaluation import full_only, graded_only, listed
from blocklab.experiments.suites.position.data import FiniteRead, PositionData, Read
from blocklab.experiments.suites.position.planning import tuned_lrs
from blocklab.experiments.suites.position.reads import FAR_POSITION
from blocklab.experiments.suites.position.records import decode_runs
from blocklab.experiments.suites.position.scaling import YARN_REFERENCE_LENGTH
from blocklab.experiments.suites.position.sizes import (
    SIZES,
    UNAVAILABLE,
    arms,
    schemes,
    train_config,
)
from blocklab.experiments.suites.position.stats import (
    arm_statistics,
    cost_summary,
    finetune_summary,
    finite_reads,
    order_summary,
    train_summary,
    yarn_summary,
)
from blocklab.experiments.suites.tuning import lr_trials
from blocklab.experiments.suites.tuning import tuning_table as tuned_table
from blocklab.experiments.summaries import RATIO_METHOD, Interval, Summary, Table, TimeRatio


def _cell(value: Read | None) -> str:
    if isinstance(value, str):
        return value
    return format_ci(value, 3) if isinstance(value, Interval) else "—"


def _ratio_text(ratio: TimeRatio) -> str:
    return f"{ratio.ratio:.3f} [{ratio.ci_low:.3f}, {ratio.ci_high:.3f}]"


def _pct_cell(stats: Read) -> str:
    if isinstance(stats, str):
        return stats
    if stats.mean is None:
        return "—"
    if not stats.resolved:
        return f"{stats.mean:+.1f}% (n={stats.n})"
    return f"{stats.mean:+.1f}% [{stats.ci_low:+.1f}, {stats.ci_high:+.1f}]"


def _finite_cell(value: bool | None, read: FiniteRead) -> str:
    if value is None:
        return "ValueError (table)" if read.error is not None else "—"
    return "finite" if value else "NaN/inf"


def summarise(options: RunOptions, results: Results) -> Summary:
    size, seeds = options.size, options.seeds
    tuned = [(spec, result) for spec, result in results if spec.payload.get("kind") == "tune"]
    evaluated = [(spec, result) for spec, result in results
                 if spec.payload.get("kind") != "tune"]
    config = SIZES[size]
    L, mults = config.L, config.mults
    longer = [str(m) for m in mults if m > 1]
    seed_list = list(seeds)
    # The statistics, every run decoded once ...
    trials = lr_trials(tuned)
    tunings = tuned_lrs(size, trials)
    runs = decode_runs(evaluated)
    arms_data = arm_statistics(size, runs, seed_list)
    relative = runs.relative_error
    finite = finite_reads(runs)
    yarn = yarn_summary(config)
    train = train_summary(runs)
    order = order_summary(runs, train, seed_list, config.order)
    cost = cost_summary(runs.cost)
    finetune = finetune_summary(config)

    # ... then the tables and notes that show them.
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
        "RoPE and its scalings: loss past L relative to sliding windows, % (C22)",
        ["arm", *[f"{m}×" for m in longer]],
        [[name, *[_pct_cell(arms_data[name].extrapolated_vs_sliding_pct[m]) for m in longer]]
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

    rotary_dim = config.model.d_model // config.model.n_heads
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
            [[name, c.params, f"{c.train_ms:.1f}", _ratio_text(c.train_vs_none),
              f"{c.decode_ms:.3f}", _ratio_text(c.decode_vs_none),
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

