"""The placement suite's Summary: its statistics, then its tables and notes in words."""

from __future__ import annotations

from blocklab.experiments.options import RunOptions
from blocklab.experiments.suites.base import Results, format_ci, format_level
from blocklab.experiments.suites.evaluation import full_only, graded_only, listed
from blocklab.experiments.suites.placement.data import PlacementData
from blocklab.experiments.suites.placement.sizes import (
    DATA,
    PREDICTED_SLOPE_LAST,
    SIZES,
    Size,
)
from blocklab.experiments.suites.placement.stats import statistics_of
from blocklab.experiments.suites.placement.stored import stored_results
from blocklab.experiments.suites.tuning import tuning_table as tuned_table
from blocklab.experiments.summaries import Interval, Summary, Table


def _g(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def _slope_cell(stats: Interval, fitted: float | None) -> str:
    if fitted is None:
        return "—"
    if not stats.resolved:
        return f"{fitted:+.2f}"
    return f"{fitted:+.2f} [{stats.ci_low:+.2f}, {stats.ci_high:+.2f}]"


def summarise(options: RunOptions, results: Results) -> Summary:
    size = SIZES[options.size]
    data = statistics_of(size, options.seeds, stored_results(results))
    return Summary("placement", options.size, len(options.seeds), _tables(size, data),
                   _notes(size, options.size), data, first_seed=options.seeds.start)


def _tables(size: Size, data: PlacementData) -> list[Table]:
    """The summary's tables, in order, from its statistics."""
    probe, training = size.probe, size.training
    gradients = data.init_gradients
    depth_columns = [f"L={d}" for d in probe.depths]
    last_table = Table(
        "At initialisation: ‖∇W_down‖ of the LAST layer vs depth",
        ["placement", "init", *depth_columns, "slope [95% CI]", "Xiong et al. (xavier)"],
        [[p, i, *[_g(v) for v in g.last_layer_grad],
          _slope_cell(g.slope_last_ci, g.slope_last),
          "—" if p not in PREDICTED_SLOPE_LAST else f"{PREDICTED_SLOPE_LAST[p]:+.1f}"]
         for p, by_init in gradients.items() for i, g in by_init.items()],
        "Slope: least squares of log ‖∇W_down‖ on log L, fitted to the geometric means over "
        "seeds; the interval is over per-seed slopes. Predicted: post-LN 0 (independent of L), "
        "pre-LN −0.5 (∝ 1/√L), for Xavier init (gpt2 init scales residual outputs by "
        "1/√(2L) and is outside the theorem).")
    first_table = Table(
        "At initialisation: ‖∇W_down‖ of the FIRST layer vs depth",
        ["placement", "init", *depth_columns, "slope [95% CI]"],
        [[p, i, *[_g(v) for v in g.first_layer_grad],
          _slope_cell(g.slope_first_ci, g.slope_first)]
         for p, by_init in gradients.items() for i, g in by_init.items()],
        "A negative slope means the gradient reaching the bottom of the stack shrinks as layers "
        "are added (vanishing with depth), whatever identity path the block has.")
    sensitivity_table = Table(
        "At initialisation: the residual stream's sensitivity and each block's distance from "
        "the identity (C12, C36)",
        ["placement", "init", *[f"sensitivity spread L={d}" for d in probe.depths],
         "‖J − I‖_F/√n (median over layers)", "‖J‖_F/√n (median)"],
        [[p, i, *[format_level(g.sensitivity_spread_log2.get(str(d), Interval(0)), 2)
                  for d in probe.depths],
          format_level(g.identity_deviation_median, 3), format_level(g.jacobian_gain_median, 3)]
         for p, by_init in gradients.items() for i, g in by_init.items()],
        "Sensitivity spread: log2(max / min) over one stack's layer inputs of ‖∂L/∂x_l‖·rms(x_l), "
        "mean [95% CI] over seeds (a global rescaling of the stream cancels; 1 = one layer's "
        "relative perturbation moves the loss twice as much as another's). ‖J − I‖_F/√n: each "
        "block's Jacobian ∂x_{l+1}/∂x_l at the deepest probed depth, from Gaussian-probe "
        "vector-Jacobian products (0 = the block is the identity, the page's 'gradient ≈ 1').")
    rms_table = Table(
        "At initialisation: RMS of the residual stream leaving the last layer",
        ["placement", "init", *depth_columns],
        [[p, i, *[_g(v) for v in g.residual_rms_last]]
         for p, by_init in gradients.items() for i, g in by_init.items()],
        "Post-norm ends every layer in a norm (RMS ≈ 1); the pre-norm stream grows with depth "
        "unless the init scales the residual outputs down.")
    spread_table = Table(
        "At initialisation: how unevenly the layers of ONE stack get gradient",
        ["placement", "init", *depth_columns],
        [[p, i, *[format_level(g.layer_spread_log2[str(d)], 2) for d in probe.depths]]
         for p, by_init in gradients.items() for i, g in by_init.items()],
        "log2(max / min) of ‖∇W_down‖ over the layers of one model, mean [95% CI] over seeds: "
        "1 means some layer gets twice the gradient of another. A factor that scales every "
        "layer alike (the final norm's 1/√L) cancels here.")
    tuning_table = tuned_table(
        data.lr_tuning, data.lr_trials, training.lr_grid,
        f"{training.tuning_seeds} tuning seed(s), disjoint from the evaluation seeds, each run "
        "as long as the evaluation runs")
    train_table = Table(
        f"Training {training.steps} steps, xavier init, no gradient clipping, each arm at its "
        "own tuned peak lr",
        ["placement", "depth", "warmup", "lr", "Σ lr over steps",
         "failed/runs (div, stuck, no learning)", "val loss [95% CI]", "Δ vs pre [95% CI]",
         "mean val loss over training", "log2 ‖∇first‖/‖∇last‖ [95% CI]"],
        [[r.placement, r.depth, r.warmup, f"{r.lr:g}", _g(r.lr_area),
          f"{r.failures}/{r.runs} ({r.status.get('diverged', 0)}, "
          f"{r.status.get('stuck', 0)}, {r.status.get('did_not_learn', 0)})",
          format_level(r.val_loss),
          "—" if r.delta_vs_pre is None else format_ci(r.delta_vs_pre, 3),
          format_level(r.val_auc), format_level(r.grad_first_over_last_log2, 2)]
         for r in data.training],
        "Val loss over the runs that finished and learned (status ok); runs that diverged, got "
        "stuck or did not learn (ended short of the registered share of the way from the "
        "unigram to the bigram reference) count in the failed column only"
        + ("" if training.stuck_patience is None else
           f" (a stuck run stops at warmup + {training.stuck_patience} steps)")
        + ". Δ = this − pre at the same "
        "depth and warmup (each at its own lr), paired by seed over the seeds where both "
        "finished (n shown); Σ lr over steps: the schedule's area, which warmup lowers (the "
        "warmup confound, shown rather than removed); "
        "negative = lower loss than pre-norm. Mean val loss over training: the area under the "
        "validation curve over its length. Gradient ratio: whole first layer over whole last "
        f"layer, logged every {training.log_every} steps after warmup. Unigram "
        f"entropy of the training bytes: {_g(data.unigram_entropy)} nats.")
    effect_table = Table(
        "Warmup and placement effects, paired by seed (final val loss, nats)",
        ["depth", "lrs", "warmup", "(post cold − warm) − (pre cold − warm) [95% CI]",
         "pre cold − pre warm [95% CI]", "post warm − pre warm [95% CI]",
         "log2 ‖∇first‖/‖∇last‖ post", "… pre"],
        [[e.depth, ", ".join(f"{k} {v:g}" for k, v in e.lrs.items()), e.warmup,
          format_ci(e.warmup_interaction),
          format_ci(e.pre_warmup_effect), format_ci(e.post_vs_pre_warm),
          format_level(e.post_grad_first_over_last_log2, 2),
          format_level(e.pre_grad_first_over_last_log2, 2)] for e in data.effects],
        "Positive interaction: leaving warmup out costs post-norm more than pre-norm. Seeds "
        "where any of the four runs failed drop out of the interaction (n shown); failures "
        "are in the training table. Gradient ratios from the runs with warmup. "
        + (f"Depth trend (interaction at the deepest minus the shallowest depth, paired by "
           f"seed): {format_ci(data.interaction_trend)} nats (positive: "
           "the need for warmup grows with depth)." if len(training.depths) > 1 else
           "Depth trend: at --size full only (this size trains one depth, the deepest)."))
    stability_table = Table(
        "Largest stable peak lr per arm (C13, C19 at the training depth; C36 in deep stacks)",
        ["grid", "placement", "depth", "warmup", "steps", "largest stable lr (geo. mean)",
         "log2 vs ladder start [95% CI]", "none stable / top stable", "val loss at each lr tried"],
        [[a.grid, a.placement, a.depth, a.warmup, a.steps, _g(a.max_stable_lr),
          format_level(a.log2_max_stable, 2), f"{a.censored_low}/{a.censored_high}",
          "; ".join(f"{lr}: {_g(_mean_of(v))}" for lr, v in a.loss_at_lr.items())]
         for a in data.stability],
        "Per seed, short runs on a doubling ladder of peak lrs, bisected (stability taken as "
        "monotone in lr); a run is stable when it finishes (no NaN/inf, loss never above "
        "4·ln 256), ends below the unigram entropy and, where the size registers it, learned (a "
        "quarter of the way from the unigram to the bigram reference): a rate at which a run "
        "only avoids diverging is not stable. Seeds with no stable rung count as one "
        "rung below the ladder, and those stable at the top as the top (both censored, "
        "counted). Loss at each lr: the mean final val loss of the sweep runs made there "
        "('—' when one did not finish).")
    stability_effect_table = Table(
        "Largest stable lr: contrasts paired by seed, in doublings (+1 = twice the lr)",
        ["grid", "depth", "warmup", "pre cold − pre warm", "post warm − post cold",
         "(post warm − cold) − (pre warm − cold)", "pre warm − post warm",
         "pre cold − post cold"],
        [[e.grid, e.depth, e.warmup, format_ci(e.pre_cold_vs_warm, 2),
          format_ci(e.post_warm_vs_cold, 2), format_ci(e.warmup_interaction, 2),
          format_ci(e.pre_vs_post_warm, 2), format_ci(e.pre_vs_post_cold, 2)]
         for e in data.stability_effects],
        "Positive post warm − post cold: warmup lets post-norm train at a larger lr; positive "
        "interaction: post-norm gains more from warmup than pre-norm; positive pre − post: "
        "pre-norm stays stable at a larger lr. '—': that arm is not swept at this size.")
    return [last_table, first_table, spread_table, sensitivity_table, rms_table, tuning_table,
            train_table, effect_table, stability_table, stability_effect_table]


def _notes(size: Size, size_name: str) -> list[str]:
    """The summary's notes: what each part ran at `size`, and what only --size full runs."""
    probe, training, sweep, deep = size.probe, size.training, size.sweep, size.deep
    notes = [
        f"(a) probe: d_model={probe.d_model}, n_heads={probe.n_heads}, depths "
        f"{list(probe.depths)}, inits {list(probe.inits)}, one forward/backward of the "
        f"next-byte loss on {probe.batch_size} fixed validation windows of {probe.seq_len} "
        "bytes; RMSNorm, SwiGLU (d_ff 8d/3), RoPE, final norm in every placement.",
        f"(b) training: d_model={training.d_model}, n_heads={training.n_heads}, depths "
        f"{list(training.depths)}, placements {list(training.placements)}, warmups "
        f"{list(training.warmups)}, each arm's peak lr tuned (table above), "
        f"seq_len={training.seq_len}, "
        f"batch={training.batch_size}, steps={training.steps}, cosine to 0.1·lr, AdamW wd 0.1, "
        "xavier init, clipping off, "
        + ("no stuck test" if training.stuck_patience is None else
           f"stuck after {training.stuck_patience} post-warmup steps above the unigram entropy")
        + f", 1 thread, data={DATA}.",
        f"Largest stable lr: at the training depth d_model={sweep.d_model}, depths "
        f"{list(sweep.depths)}, {sweep.steps} steps (warm arms: warmup {sweep.warmup}), "
        f"ladder {_g(sweep.ladder()[0])} … {_g(sweep.ladder()[-1])}; (c) deep stacks (C36): "
        f"d_model={deep.d_model}, depths {list(deep.depths)}, {deep.steps} steps (warm arms: "
        f"warmup {deep.warmup}), ladder {_g(deep.ladder()[0])} … {_g(deep.ladder()[-1])}; "
        "otherwise as (b).",
    ]
    left_out = _left_out(size) if graded_only(size_name) else []
    if left_out:
        notes.append(full_only(left_out, "C13 and C19 read part (b) at its deepest depth and "
                                         "highest lr, pre and post only"))
    return notes


def _mean_of(values: list[float | None]) -> float | None:
    return None if not values or None in values else sum(values) / len(values)


def _left_out(size: Size) -> list[str]:
    """What the full size's part (b) trains and `size`'s does not, in words."""
    full, training = SIZES["full"].training, size.training
    out = []
    if len(training.depths) < len(full.depths):
        out.append(f"part (b)'s depth trend (depths {listed([str(d) for d in full.depths])} "
                   "at full)")
    missing = [p for p in full.placements if p not in training.placements]
    if missing:
        out.append(f"{listed(missing)} norm in part (b)")
    if len(training.lr_grid.base) < len(full.lr_grid.base):
        out.append(f"part (b)'s finer lr grid "
                   f"({listed([f'{lr:g}' for lr in full.lr_grid.base])} at full)")
    return out
