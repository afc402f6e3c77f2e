"""The `ffn` summary's tables and notes, built from its statistics (`FfnData`)."""

from __future__ import annotations

from blocklab.experiments.run_result import FAILED_STATUSES
from blocklab.experiments.suites.base import format_ci, format_level
from blocklab.experiments.suites.evaluation import full_only, listed
from blocklab.experiments.suites.ffn.configs import ffn_width
from blocklab.experiments.suites.ffn.data import FfnData
from blocklab.experiments.suites.ffn.sizes import (
    ARMS,
    BASELINE,
    DATA,
    PAGE_GAIN_PCT,
    SIZES,
    TREND_ARMS,
    Size,
    page_gain_text,
)
from blocklab.experiments.suites.tuning import mean_loss
from blocklab.experiments.summaries import Interval, Table


def _fmt(value: float | None, digits: int = 4) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def summary_tables(size: Size, data: FfnData) -> list[Table]:
    """The summary's tables, from its statistics (those the size ran)."""
    arms = data.arms
    base_params = arms[BASELINE].params
    widths = Table(
        "FFN arms at equal parameter count",
        ["arm", "FFN", "activation", "d_ff", "FFN weights/layer", "params", "vs relu"],
        [[arm, "gated" if a.gated else "plain", a.activation, a.d_ff,
          (3 if a.gated else 2) * size.d_model * a.d_ff, a.params,
          f"{100 * (a.params - base_params) / base_params:+.2f}%"]
         for arm, a in arms.items()],
        f"plain d_ff = 4·d = {4 * size.d_model}; gated d_ff = equal_param_gated_width(4·d) = "
        f"{ffn_width('swiglu', size.d_model)}; d_model={size.d_model}, "
        f"{size.n_layers} layer(s), bias-free, RMSNorm pre-norm, RoPE, untied embeddings.")
    quality = Table(
        f"Validation loss after {size.steps} steps (equal steps and tokens)",
        ["arm", "ok/div/stuck/no-learn", "val loss (nats) [95% CI]", "bits/byte",
         "Δ vs relu [95% CI]", "Δ% vs relu [95% CI]", "page: gain vs ReLU"],
        [[arm, _status_cell(a.status), format_level(a.val_loss, 4),
          _fmt(a.val_bpb.mean), _delta_cell(arm, a.delta_vs_relu, 4),
          _delta_cell(arm, a.rel_delta_pct, 2),
          "baseline" if arm == BASELINE else page_gain_text(arm)]
         for arm, a in arms.items()],
        "Δ = arm − relu, paired by seed (same init streams and batches); negative = lower loss "
        f"= better, so the page's '{page_gain_text('swiglu')}' for SwiGLU reads as Δ% ≈ "
        f"−{PAGE_GAIN_PCT['swiglu'][0]:g} to −{PAGE_GAIN_PCT['swiglu'][1]:g}. "
        f"Unigram entropy of the training bytes: {_fmt(data.unigram_entropy)} nats.")
    clock = Table(
        "Cost per step and loss at equal wall-clock",
        ["arm", "ms/step (timed)", "ms/step (training runs)", "step at T*",
         "val loss at T* [95% CI]", "Δ vs relu at T* [95% CI]"],
        [[arm, _fmt(a.ms_per_step, 2), _fmt(a.ms_per_step_train, 2),
          _fmt(a.equal_time_step, 0), format_level(a.val_loss_equal_time, 4),
          _delta_cell(arm, a.delta_vs_relu_equal_time, 4)] for arm, a in arms.items()],
        "Timed: median of interleaved single-thread steps (forward, backward, clip, AdamW). "
        "T* = the fastest arm's time for all its steps; each curve is read at step "
        "steps·ms_fastest/ms_arm by linear interpolation between validations. Slower arms are "
        "read before their cosine decay ends (a bias against them).")
    zeros = Table(
        "C17: FFN activation inputs with an exactly zero gradient",
        ["arm", "activation", "at init", "after training"],
        [[arm, a.activation, _fmt(a.zero_grad_fraction["init"], 3),
          _fmt(a.zero_grad_fraction["final"], 3)] for arm, a in arms.items()],
        "Fraction of elements of ∂loss/∂z that are exactly 0, z the input of φ (the gate branch "
        f"of gated FFNs), over all layers, on {size.batch_size} fixed validation windows of "
        f"{size.seq_len} bytes; mean over seeds.")
    tunings = {t.arm: t for t in data.lr_tuning}
    tuning_seeds = sorted({t.seed for t in data.lr_trials})
    grid = Table(
        "Learning rate per arm: final validation loss on the tuning seeds",
        ["arm", *(f"lr {lr:g}" for lr in data.lr_grid), "chosen"],
        [[arm, *(_fmt(mean_loss(data.lr_trials, arm, lr, size.d_model), 4)
                 if lr in tunings[arm].grid else "" for lr in data.lr_grid),
          f"{arms[arm].lr:g}" + ("" if tunings[arm].interior else " (grid edge)")
          + (f", grid +{tunings[arm].extended}" if tunings[arm].extended else "")]
         for arm in size.arms],
        f"{size.tuning_seeds} tuning seed(s) ({', '.join(map(str, tuning_seeds))}), disjoint "
        "from the evaluation seeds; each arm is then evaluated at its own chosen lr. A best lr "
        f"at an edge of the registered grid {{{', '.join(f'{lr:g}' for lr in size.lr_grid.base)}"
        f"}} grows the grid there (×{size.lr_grid.factor:g}, at most "
        f"{size.lr_grid.max_extensions} points) until it is interior"
        + (f", then an interior best is refined at ×{size.lr_grid.factor:g}^(±1/2) and the "
           "best of every point tried is chosen" if size.lr_grid.refine else "")
        + "; blank: not tried for that arm. '—' marks an lr at which a tuning run did not "
        "count (diverged, stuck, did not learn or above the unigram entropy).")
    trend_table = Table(
        "Scale trend: SwiGLU vs ReLU at each model width",
        ["d_model", "params (relu)", "lr relu", "lr swiglu", "Δ% vs relu [95% CI]"],
        [[p.d_model, p.params, f"{p.lrs['relu']:g}", f"{p.lrs['swiglu']:g}",
          format_ci(p.rel_delta_pct, 2)] for p in data.trend],
        "Each width with its own tuned lrs and the same seeds; change from the smallest to the "
        f"largest width, paired by seed: {format_ci(data.trend_change, 2)} points (negative: "
        "SwiGLU's advantage grows with size).")
    sensitivity = data.sensitivity
    init_table = Table(
        f"Sensitivity: {size.sensitivity_init} init and one shared lr "
        f"({size.sensitivity_lr:g}) instead of {size.init} init and tuned lrs",
        ["arm", f"Δ% vs relu, {size.init} + tuned lr", "val loss",
         f"Δ% vs relu, {size.sensitivity_init} + lr {size.sensitivity_lr:g}", "val loss"],
        [[arm, _delta_cell(arm, arms[arm].rel_delta_pct, 2), format_level(arms[arm].val_loss, 4),
          _delta_cell(arm, sensitivity.rel_delta_pct[arm], 2),
          format_level(sensitivity.val_loss[arm], 4)] for arm in size.sensitivity_arms],
        "The same evaluation seeds under both settings; Δ% paired by seed against relu under "
        "the same settings. A difference that changes sign or size between the two columns is "
        "an artefact of initialisation or learning rate, not of the FFN.")
    tables = [widths, grid, quality, trend_table if size.trend_widths else None,
              init_table if size.sensitivity_arms else None, clock if size.timing else None,
              zeros]
    return [t for t in tables if t is not None]


def summary_notes(size: Size, data: FfnData) -> list[str]:
    """The summary's notes: the budget, the widths, what counted, the lr grids, what the size
    left to full."""
    notes = [
        f"Budget: d_model={size.d_model}, n_layers={size.n_layers}, n_heads={size.n_heads}, "
        f"seq_len={size.seq_len}, batch={size.batch_size}, steps={size.steps} "
        f"({size.steps * size.batch_size * size.seq_len:,} training tokens a run), each arm at "
        f"its own lr from {{{', '.join(f'{lr:g}' for lr in data.lr_grid)}}}, "
        f"warmup={size.warmup_steps}, cosine to 0.1·lr, AdamW wd 0.1, clip 1.0, {size.init} "
        f"init, 1 thread, data={DATA}.",
        f"Widths: plain d_ff={4 * size.d_model}, gated d_ff={ffn_width('swiglu', size.d_model)}.",
        "A run counts when its status is ok and its final validation loss is below the unigram "
        "entropy; counted runs per arm: "
        + ", ".join(f"{arm} {a.counted}/{data.seeds}" for arm, a in data.arms.items()) + ".",
    ]
    if data.lr_at_edge:
        notes.append("Best lr still at an edge of the grid after growing it (the optimum may "
                     "lie beyond it): "
                     + ", ".join(f"{arm} {data.arms[arm].lr:g}" for arm in data.lr_at_edge)
                     + ".")
    grown = [t.words() for t in data.lr_tuning if t.extended]
    if grown:
        notes.append("Grid grown at an edge before evaluation: " + "; ".join(grown) + ".")
    left_out = _left_out(size)
    if left_out:
        notes.append(full_only(left_out, "C16 grades swiglu, geglu and glu against relu at "
                                         "equal steps and tokens; nothing else here is graded"))
    return notes


def _left_out(size: Size) -> list[str]:
    """What the full size runs and `size` does not, in words (the summary's note)."""
    full = SIZES["full"]
    out = []
    missing = [arm for arm in ARMS if arm not in size.arms]
    if missing:
        out.append(f"the {listed(missing)} arm{'s' if len(missing) > 1 else ''}")
    if set(size.sensitivity_arms) < set(full.sensitivity_arms):
        out.append(f"the sensitivity re-runs ({full.sensitivity_init} init, one shared lr) of "
                   f"{listed(full.sensitivity_arms)}")
    if not size.trend_widths and full.trend_widths:
        out.append(f"the scale trend of {listed(TREND_ARMS)} at other widths (d_model "
                   f"{listed([str(w) for w in full.trend_widths])} at full)")
    if not size.timing and full.timing:
        out.append("the timed step of every arm and the loss at equal wall-clock")
    return out


def _delta_cell(arm: str, stats: Interval, digits: int) -> str:
    return "—" if arm == BASELINE else format_ci(stats, digits)


def _status_cell(status: dict[str, int]) -> str:
    return "/".join(str(status.get(s, 0)) for s in ("ok", *FAILED_STATUSES))
