"""The report's plots: matplotlib (Agg canvas, no pyplot state) -> PNG -> base64 data URI.

Each `fig_*` reads the report document (`build.collect`), a suite's numbers through its typed
summary, and returns one figure's PNG bytes or None without data. Figure text stays in English
(CJK fonts are not guaranteed); the captions carry the language.
"""

from __future__ import annotations

import base64
import functools
import io
import math
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from blocklab.claims.anchors import short_source
from blocklab.claims.rules import confidence_text
from blocklab.claims.trend import LineFit
from blocklab.experiments.ladder import STEP, rungs_above
from blocklab.experiments.suites import get_suite
from blocklab.experiments.suites.evaluation import AT_FULL
from blocklab.experiments.suites.ffn.summary import FfnData
from blocklab.experiments.suites.norm_cost.summary import NormCostData
from blocklab.experiments.suites.placement.summary import PlacementData
from blocklab.experiments.suites.position.summary import PerPosition, PositionData, Read
from blocklab.experiments.suites.quantize.summary import QuantizeData
from blocklab.experiments.suites.width.summary import WidthData
from blocklab.experiments.summaries import Interval, TimeRatio, summary_from_dict
from blocklab.report.palette import CLAIM_SHADE, SERIES_COLOURS, VERDICT_STYLES, arm_colour

PART_LABELS = {"attention_proj": "attention projections", "attention_scores": "scores + values",
               "ffn": "FFN", "lm_head": "lm_head"}
PART_COLOURS = {"attention_proj": "#4c72b0", "attention_scores": "#dd8452", "ffn": "#55a868",
                "lm_head": "#8172b3"}
DPI = 110
T = TypeVar("T")
MARKERS = "osD^vP*X"  # lines that coincide stay distinguishable
# What was measured where no arm is drawn (a ladder's effects and its fit): near-black, beside
# the page's statements and published results in CLAIM_SHADE.
EFFECT_COLOUR = "#24292f"
# What a claim allows, hatched in CLAIM_SHADE: apart from the grey fill of ±margin beside it.
CLAIM_REGION = {"facecolor": "none", "edgecolor": CLAIM_SHADE, "hatch": "////", "alpha": 0.3,
                "lw": 0}


@dataclass(frozen=True)
class Figure:
    """A drawn figure (`png`), or the error that stopped it (`error`, png empty)."""

    key: str
    png: bytes
    command: str
    error: str | None = None

    @property
    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


def _new(width: float = 7.5, height: float = 3.8, ncols: int = 1, nrows: int = 1):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    fig = MplFigure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, squeeze=False)


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


def _plain_log_ticks(axis) -> None:
    """Ticks at 1, 2, 5 × 10^k labelled as plain numbers (0.5, 2) on a log axis."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(NullFormatter())


def _sparse_minor_labels(axis, limits) -> None:
    """On a log axis spanning under two decades, label only the 3 × 10^k minor ticks (beside
    the 10^k ones): every minor tick labelled would overlap; none leaves one label."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    low, high = limits
    if not (low > 0 and high / low < 100):
        axis.set_minor_formatter(NullFormatter())
        return

    def label(value: float, _) -> str:
        exponent = math.floor(math.log10(value) + 1e-9)
        return f"$3\\times10^{{{exponent}}}$" if round(value / 10**exponent, 6) == 3 else ""

    axis.set_minor_formatter(FuncFormatter(label))


def _say_empty(ax, why: str) -> None:
    """A panel with nothing to draw says why in its middle, in place of its axes."""
    ax.set_axis_off()
    ax.text(0.5, 0.5, why, ha="center", va="center", fontsize=9, color="grey", wrap=True,
            transform=ax.transAxes)


def _label(ax, x: str | None = None, y: str | None = None, title: str | None = None, *,
           grid: str | None = "both", legend: float | None = None, **legend_kw) -> None:
    """A panel's axis labels, title, grid (along `grid`) and legend (at `legend` points),
    set once its data is drawn (the legend lists what is drawn by then, each label once)."""
    if x is not None:
        ax.set_xlabel(x)
    if y is not None:
        ax.set_ylabel(y)
    if title is not None:
        ax.set_title(title, fontsize=10)
    if grid:
        ax.grid(True, axis=grid, alpha=0.3)
    if legend:
        handles, labels = ax.get_legend_handles_labels()
        shown = dict(zip(labels, handles, strict=True))  # a label drawn twice (one style): one entry
        ax.legend(shown.values(), shown.keys(), fontsize=legend, **legend_kw)


def _finite(values) -> list[float]:
    return [math.nan if v is None or not math.isfinite(float(v)) else float(v) for v in values]


# --- FFN -----------------------------------------------------------------------------------------
def fig_ffn_budget(doc: dict[str, Any]) -> bytes | None:
    rows = doc.get("ffn_budget", {}).get("rows") or []
    if not rows:
        return None
    from blocklab.budget.sweep import draw_sweep

    fig, axes = _new(9, 6.2, 2, 2)
    draw_sweep(axes, rows)
    return _png(fig)


def _summary(doc: dict[str, Any], suite: str, kind: type[T]
             ) -> tuple[T | None, list[dict[str, Any]]]:
    """(summary data as `kind`, the suite's `data_type`; stored runs) of a suite; (None, [])
    when it has not been run; ResultsError when the document's summary does not decode."""
    entry = doc["suites"][suite]
    if entry["summary"] is None:
        return None, []
    summary = summary_from_dict(entry["summary"], f"report document: summary of {suite}", kind)
    return summary.data, entry["runs"]


def _errorbar(ax, x: float, stats: Interval | None, **kwargs) -> None:
    """Mean with its 95% interval (a bare point with one seed, nothing without a mean)."""
    if stats is None or stats.mean is None:
        return
    mean = stats.mean
    if not stats.resolved:  # plot() takes the format as its third argument, not fmt=
        rest = {k: v for k, v in kwargs.items() if k not in ("capsize", "fmt")}
        ax.plot([x], [mean], kwargs.get("fmt", "o"), **rest)
    else:
        ax.errorbar([x], [mean], yerr=[[mean - stats.ci_low], [stats.ci_high - mean]],
                    **kwargs)


def _interval(ratio: TimeRatio) -> Interval:
    """A timing ratio as the interval of its geometric mean, for `_errorbar` and `_ci_bars`."""
    return Interval(ratio.repeats, ratio.ratio, ratio.ci_low, ratio.ci_high)


def _compared_runs(data: FfnData, runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ffn runs of the compared arms: not the scale-trend widths, nor the sensitivity
    re-runs under another init and learning rate."""
    return [r for r in runs if r["d_model"] == data.size["d_model"] and r["init"] == data.init
            and r["arm"] in data.arms and r["lr"] == data.arms[r["arm"]].lr]


def fig_ffn_variants(doc: dict[str, Any]) -> bytes | None:
    data, runs = _summary(doc, "ffn", FfnData)
    if data is None or not data.arms:
        return None
    runs = _compared_runs(data, runs)
    arms = data.arms
    names = list(arms)
    fig, [[left, right]] = _new(10, 4.0, 2, 1)
    for i, arm in enumerate(names):
        colour, marker = arm_colour(arm), "s" if arms[arm].gated else "o"
        seeds = [r["final_val_loss"] for r in runs if r["arm"] == arm
                 and r["final_val_loss"] is not None]
        left.plot([i] * len(seeds), seeds, marker, color=colour, alpha=0.45, ms=5)
        _errorbar(left, i, arms[arm].val_loss, fmt="_", color="black", ms=18, capsize=4)
        if arm != data.baseline:
            _errorbar(right, i, arms[arm].rel_delta_pct, fmt=marker, color=colour, capsize=4)
    page = data.page
    for arm, gain in page.items():
        if arm in names:
            lo, hi = min(gain), max(gain)
            i = names.index(arm) + 0.3  # beside the measured point, not on it
            right.plot([i, i], [-lo, -hi], color=CLAIM_SHADE, lw=6, alpha=0.35,
                       solid_capstyle="round")
            right.plot([i], [-(lo + hi) / 2], "x", color=CLAIM_SHADE,
                       label="page's claim (a gain, so negative)" if arm == next(iter(page))
                       else None)
    right.axhline(0, color="grey", lw=1)
    for ax in (left, right):
        ax.set_xticks(range(len(names)), names, rotation=30)
    left.plot([], [], "o", color="grey", alpha=0.6, label="plain FFN")
    left.plot([], [], "s", color="grey", alpha=0.6, label="gated FFN")
    _label(left, y="final validation loss (nats/token)", title="seeds (dots) and mean [95% CI]",
           grid="y", legend=8)
    _label(right, y=f"Δ% vs {data.baseline} (negative = better)",
           title="paired difference [95% CI] and the page's claim", grid="y",
           legend=8 if page else None)
    return _png(fig)


@dataclass(frozen=True)
class _Segment:
    """A ladder panel's line: "fit" (over the rungs, with its band; None for a fit stored per
    seed) or "extrapolation" (from the line's end to a paper's point, no band)."""

    kind: str
    flops: tuple[float, ...]
    y: tuple[float, ...]
    band: tuple[tuple[float, ...], tuple[float, ...]] | None
    label: str


def _ladder_points(doc: dict[str, Any], name: str) -> list[tuple[dict[str, Any], dict]]:
    """(rung, its estimate of part `name`) for each rung with compute and a value for it."""
    found = []
    for rung in doc["rungs"]:
        part = next((p for p in rung["parts"] if p["name"] == name), None)
        if rung["flops"] and part and part["estimate"] and part["estimate"]["value"] is not None:
            found.append((rung, part["estimate"]))
    return found


def _ladder_segments(doc: dict[str, Any], name: str) -> list[_Segment]:
    """Part `name`'s lines: none without a fit; else the fit from the smallest to the top rung,
    then a segment from its end to each published result for the part past the top rung."""
    trend = next(t for t in doc["trends"] if t["part"] == name)
    fit, base = trend["fit"], doc["base_flops"]
    flops = [rung["flops"] for rung, _ in _ladder_points(doc, name)]
    if not fit or not base or not flops or max(flops) <= min(flops):
        return []
    first, top = rungs_above(min(flops), base), rungs_above(max(flops), base)
    xs = [first + (top - first) * k / 40 for k in range(41)]
    line = LineFit.from_dict(fit)
    band = None if line is None else tuple(zip(*(line.band(x) for x in xs), strict=True))
    segments = [_Segment("fit", tuple(base * STEP ** x for x in xs),
                         tuple(fit["intercept"] + fit["slope"] * x for x in xs), band,
                         "fit over the rungs" + ("" if band is None else
                                                 f" and its {fit['level']:.0%} band"))]
    if line is None:  # no band to state at the paper's compute: no extrapolation drawn
        return segments
    from blocklab.experiments.scale import flops_text

    unit = trend.get("unit", "%")
    for paper in doc["anchors"]:
        effect = (paper.get("effects") or {}).get(name)
        if effect is None or not paper.get("flops") or paper["flops"] <= max(flops):
            continue
        x = rungs_above(paper["flops"], base)
        low, high = line.band(x)
        segments.append(_Segment(
            "extrapolation", (max(flops), paper["flops"]), (line.at(top), effect), None,
            f"extrapolation to {_paper_label(paper)}: not a finding\nextrapolated line at "
            f"{flops_text(paper['flops'])} FLOPs: {_signed(line.at(x), low, high)}"
            f"{'%' if unit == '%' else ' ' + unit}"))
    return segments


def _signed(value: float, low: float, high: float) -> str:
    """'−11 [−40, +18]': a value and its interval, signed, to two digits of the largest."""
    largest = max(abs(value), abs(low), abs(high))
    digits = max(0, 1 - math.floor(math.log10(largest))) if largest > 0 else 0

    def text(v: float) -> str:
        return f"{v:+.{digits}f}".replace("-", "−")

    return f"{text(value)} [{text(low)}, {text(high)}]"


def _ladder_appears(doc: dict[str, Any], name: str) -> tuple[float, float, str] | None:
    """(FLOPs, estimate, label) of the rung that first decides part `name`, or None."""
    seen = next(t for t in doc["trends"] if t["part"] == name).get("appears")
    if not seen or not seen.get("flops") or seen.get("value") is None:
        return None
    return seen["flops"], seen["value"], f"first decided here ({seen['verdict']})"


def _ladder_title(doc: dict[str, Any], name: str) -> str:
    """The part's name, and a second line where no line fits the rung means or no trend is
    detectable."""
    trend = next(t for t in doc["trends"] if t["part"] == name)
    title = (f"{name} − relu" if doc["claim"] == "C16" else
             f"{name} ({trend.get('unit', '%')})" if doc["claim"] == "C19" else name)
    fit = trend["fit"]
    lack = fit and fit.get("lack_of_fit")
    if trend.get("line_fits") is False:
        return title + "\nno line fits" + (f" (lack of fit p = {lack['p']:.2g})" if lack else "")
    if fit and trend.get("direction") == "none":
        return title + f"\ntrend: none detectable across {fit['rungs']} rungs"
    return title


def fig_ladder(doc: dict[str, Any]) -> bytes | None:
    """A claim's ladder (`claims.ladder.ladder_dict`): a panel per part, its effect per rung
    against training FLOPs (mean, 95% CI), the first deciding rung ringed, the fit and band up
    to the top rung, then only a dashed extrapolation to each paper's point."""
    rungs = [r for r in doc["rungs"] if r["parts"] and r["flops"]]
    if not rungs:
        return None
    names = [t["part"] for t in doc["trends"]]
    cols = min(4, len(names))
    rows = math.ceil(len(names) / cols)
    fig, axes = _new(4.2 * cols, 3.8 * rows, cols, rows)
    papers = [a for a in doc["anchors"] if a.get("flops") and a.get("effects")]
    unplaced = [a for a in doc["anchors"] if not a.get("flops") and a.get("effects")]
    own: dict[Any, list[tuple[Any, str]]] = {}  # a panel's own legend entries (its numbers)
    for k, name in enumerate(names):
        ax = axes[k // cols, k % cols]
        for rung, e in _ladder_points(doc, name):
            low = e["value"] - e["ci_low"] if e["ci_low"] is not None else 0.0
            high = e["ci_high"] - e["value"] if e["ci_high"] is not None else 0.0
            ax.errorbar([rung["flops"]], [e["value"]], yerr=[[low], [high]], fmt="o",
                        color=EFFECT_COLOUR, capsize=4,
                        label="a rung's seeds: mean, 95% CI (what the fit reads)")
            ax.annotate(rung["size"], (rung["flops"], e["value"]), textcoords="offset points",
                        xytext=(5, 5), fontsize=7)
        seen = _ladder_appears(doc, name)
        if seen is not None:
            ax.plot([seen[0]], [seen[1]], "o", ms=15, mfc="none", mec="black", mew=1.4,
                    zorder=4, label=seen[2])
        for segment in _ladder_segments(doc, name):
            if segment.kind == "fit":
                ax.plot(segment.flops, segment.y, "-", color=EFFECT_COLOUR, lw=1.2,
                        label=segment.label)
                if segment.band is not None:
                    ax.fill_between(segment.flops, *segment.band, color=EFFECT_COLOUR,
                                    alpha=0.12, lw=0)
            else:
                (handle,) = ax.plot(segment.flops, segment.y, "--", color="grey", lw=0.8,
                                    alpha=0.5)
                own.setdefault(ax, []).append((handle, segment.label))
        trend = next(t for t in doc["trends"] if t["part"] == name)
        band = trend.get("band")
        if band:
            ax.axhspan(band[0], band[1], color=CLAIM_SHADE, alpha=0.1,
                       label="the page's statement (its band)")
        elif trend["boundary"] is not None:
            ax.axhline(trend["boundary"], color=CLAIM_SHADE, ls="--", lw=1.2,
                       label="the page's statement (its boundary)")
        for j, paper in enumerate(papers):
            if name in paper["effects"]:
                ax.plot([paper["flops"]], [paper["effects"][name]], MARKERS[(j + 6) % 8],
                        color=CLAIM_SHADE, ms=9, label=_paper_label(paper))
        for j, paper in enumerate(unplaced):  # no compute to place it at: on the right edge
            if name in paper["effects"]:
                ax.plot([1.0], [paper["effects"][name]], MARKERS[(j + 3) % 8], color=CLAIM_SHADE,
                        ms=9, transform=ax.get_yaxis_transform(), clip_on=False,
                        label=_paper_label(paper) + " (compute not given: right edge)")
        ax.axhline(0, color="grey", lw=1)
        ax.set_xscale("log")
        _sparse_minor_labels(ax.xaxis, ax.get_xlim())
        ax.set_xlabel("training compute (FLOPs, 6 · parameters · tokens)")
        ax.set_title(_ladder_title(doc, name), fontsize=9)
        ax.grid(True, alpha=0.3)
    for k in range(len(names), rows * cols):
        axes[k // cols, k % cols].set_visible(False)
    for r in range(rows):
        axes[r, 0].set_ylabel(doc.get("axis") or "effect", fontsize=8)
    handles: dict[str, Any] = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    # the entries every panel shares once, under the panels; each extrapolation's numbers in
    # its own panel
    fig.legend(list(handles.values()), list(handles), loc="outside lower center",
               ncols=min(3, len(handles)), fontsize=7)
    for ax, entries in own.items():
        ax.legend([h for h, _ in entries], [label for _, label in entries], fontsize=6)
    return _png(fig)


def _paper_label(paper: dict[str, Any]) -> str:
    """'Shazeer 2020, 34.4B tokens': the source's first words and its training tokens."""
    tokens = f", {paper['tokens'] / 1e9:.3g}B tokens" if paper.get("tokens") else ""
    return short_source(paper["source"]) + tokens


def _ladder_figure(doc: dict[str, Any], claim_id: str) -> bytes | None:
    found = doc.get("ladders", {}).get(claim_id)
    return None if not found or found.get("error") else fig_ladder(found)


def fig_ffn_loss_curves(doc: dict[str, Any]) -> bytes | None:
    data, runs = _summary(doc, "ffn", FfnData)
    if data is None:
        return None
    runs = [r for r in _compared_runs(data, runs) if r["val_step"]]
    if not runs:
        return None
    length = str(data.size["seq_len"])  # the validation curve at the trained length
    fig, [[ax]] = _new(7.5, 4.0)
    for r in runs:
        curve = r["val"][length]
        ax.plot(r["val_step"][:len(curve)], _finite(curve), "o-", ms=3, lw=1.2,
                color=arm_colour(r["arm"]), label=r["arm"])
    _label(ax, "optimizer step", "validation loss (nats/token)", legend=8, ncols=2)
    return _png(fig)


# --- width ---------------------------------------------------------------------------------------
WIDTH_ARMS = {"ordinary": ("(a) trained at m, sliced", "o-"),
              "nested": ("(b) nested-width training", "s-"),
              "narrow": ("(c) trained at m/2 alone", "D")}


def fig_width_control(doc: dict[str, Any]) -> bytes | None:
    """C37: each arm's validation loss against the FFN width k it is read at (mean, 95% CI);
    right: the same against the forward FLOPs per token of that width."""
    data, _ = _summary(doc, "width", WidthData)
    if data is None or not data.points:
        return None
    fig, axes = _new(10, 4.0, 2, 1)
    m = data.widths[0]
    for ax, key in ((axes[0, 0], "width"), (axes[0, 1], "flops_per_token")):
        for j, (arm, (name, style)) in enumerate(WIDTH_ARMS.items()):
            colour = arm_colour(arm)
            read = [p for p in data.points if arm in p.loss and p.loss[arm].mean is not None]
            xs = [getattr(p, key) * (1 + 0.02 * (j - 1)) for p in read]  # dodge
            points = [p.loss[arm] for p in read]
            if not points:
                continue
            ax.plot(xs, [iv.mean for iv in points], style, color=colour, ms=5, lw=1.2,
                    label=name)
            for x, iv in zip(xs, points, strict=True):
                if iv.resolved:  # one seed: the point alone, already drawn
                    _errorbar(ax, x, iv, fmt="none", color=colour, capsize=3)
    left = axes[0, 0]
    left.set_xscale("log", base=2)  # m, m/2, m/4 evenly spaced
    left.set_xticks(data.widths, [f"{k}\n" + ("m" if k == m else f"m/{m // k}")
                                  for k in data.widths])
    left.minorticks_off()
    _label(left, "FFN width k (first k channels kept)", "validation loss (nats/token)",
           "loss at each width [95% CI over seeds]", legend=8)
    _label(axes[0, 1], "forward FLOPs per token at width k (blocklab.budget)",
           title="the same against compute per token")
    return _png(fig)


# --- norm cost -----------------------------------------------------------------------------------
def fig_norm_cost(doc: dict[str, Any]) -> bytes | None:
    """RMSNorm's time over LayerNorm's per hidden size d, forward and forward + backward (where
    kernels were timed: --size full), and of a whole training step (where it was timed); without
    kernel timings the step's panel says where they run."""
    data, _ = _summary(doc, "norm-cost", NormCostData)
    if data is None or (not data.ratios and not data.step_time):
        return None
    ratios, steps = data.ratios, data.step_time
    kernels = [("fwd", "forward (no grad)"), ("fwdbwd", "forward + backward")] if ratios else []
    count = len(kernels) + bool(steps)
    fig, axes = _new(max(3.7 * count, 4.6), 3.9, count, 1)
    panels = list(axes[0])
    series = list(dict.fromkeys((r.impl.split(":")[-1], r.rows, r.threads) for r in ratios))
    for ax, (pass_name, title) in zip(panels, kernels, strict=False):
        for i, (kind, rows, threads) in enumerate(series):
            part = sorted((r for r in ratios if r.pass_name == pass_name and (
                r.impl.split(":")[-1], r.rows, r.threads) == (kind, rows, threads)),
                key=lambda r: r.d)
            if not part:
                continue
            x = [r.d * (1 + 0.04 * (i - len(series) / 2)) for r in part]  # dodge
            y, err = _ci_bars([_interval(r.time) for r in part])
            label = f"{kind}, {rows} rows" + (f", {threads} threads" if threads != 1 else "")
            ax.errorbar(x, y, yerr=err, fmt="o-", ms=3, lw=1, capsize=2,
                        color=SERIES_COLOURS[i % len(SERIES_COLOURS)], label=label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")  # a ratio: 0.5 and 2 are equally far from 1
        _plain_log_ticks(ax.yaxis)
        _label(ax, "d (hidden size)", title=title)
    if steps:
        step_ax = panels[-1]
        keys = sorted(steps, key=lambda k: (steps[k].threads, steps[k].path))
        for i, key in enumerate(keys):
            _errorbar(step_ax, i, _interval(steps[key].time), fmt="s", color="black", capsize=4)
        step_ax.set_xticks(range(len(steps)), [f"{steps[k].path}\n{steps[k].threads} "
                                               "thread(s)" for k in keys], fontsize=8)
        step_ax.set_xlim(-0.8, max(len(steps) - 0.2, 0.8))
        _label(step_ax, title="whole training step" + (
            "" if ratios else f"\n(per-kernel timings: run {AT_FULL})"))
    for ax in panels:
        ax.axhline(1.0, color="grey", lw=1)
        ax.axhline(0.93, color=CLAIM_SHADE, ls=":", lw=1, label="page: 7% less")
    _label(panels[0], y="time ratio RMSNorm / LayerNorm", grid=None, legend=7)
    return _png(fig)


# --- placement -----------------------------------------------------------------------------------
def fig_placement_training(doc: dict[str, Any]) -> bytes | None:
    _, runs = _summary(doc, "placement", PlacementData)
    runs = [r for r in runs if r["arm"].startswith("train/")]
    if not runs:
        return None
    # arm = train/<placement>/<depth>/<warmup>, each at its own tuned lr: one panel per depth,
    # colour by placement, line style by warmup.
    panels = list(dict.fromkeys(r["arm"].split("/")[2] for r in runs))
    warmups = list(dict.fromkeys(r["arm"].split("/")[3] for r in runs))
    styles = dict(zip(warmups, ("-", "--", ":", "-."), strict=False))
    fig, axes = _new(min(4.2 * len(panels), 12), 3.8, len(panels), 1)
    for ax, depth in zip(axes.flat, panels, strict=True):
        for r in runs:
            _, placement, d, warmup = r["arm"].split("/")
            if d != depth:
                continue
            ax.plot(r["step"], _finite(r["train_loss"]), styles.get(warmup, "-"), lw=1,
                    color=arm_colour(placement), alpha=0.85, label=f"{placement}, warmup {warmup}")
            if r["status"] != "ok" and r["step"]:
                ax.plot([r["step"][-1]], [_finite(r["train_loss"])[-1]], "x", ms=8,
                        color=arm_colour(placement))
        _label(ax, "optimizer step", "training loss (nats/token)",
               f"L={depth}, each arm at its tuned lr", legend=7)
    return _png(fig)


def fig_placement_gradients(doc: dict[str, Any]) -> bytes | None:
    data, _ = _summary(doc, "placement", PlacementData)
    if data is None or not data.init_gradients:
        return None
    grads = data.init_gradients
    inits = list(dict.fromkeys(i for by_init in grads.values() for i in by_init))
    fig, axes = _new(4.6 * len(inits), 7.2, len(inits), 2)
    predicted = data.predictions.slope_last
    for col, init in enumerate(inits):
        top, bottom = axes[0, col], axes[1, col]
        for placement, by_init in grads.items():
            if init not in by_init:
                continue
            g = by_init[init]
            colour = arm_colour(placement)
            deepest = str(max(g.depths))
            per_layer = _finite(g.per_layer_grad[deepest])
            top.plot(range(1, len(per_layer) + 1), per_layer, "o-", ms=3, color=colour,
                     label=placement)
            slope = g.slope_last
            label = placement + ("" if slope is None else f", slope {slope:+.2f}")
            if placement in predicted and init == data.predictions.init:
                label += f" (predicted {predicted[placement]:+.1f})"
            bottom.plot(g.depths, _finite(g.last_layer_grad), "o-", ms=4, color=colour,
                        label=label)
        bottom.set_xscale("log", base=2)
        for ax in (top, bottom):
            ax.set_yscale("log")
        _label(top, "layer (1 = next to the input)", "‖∇W_down‖",
               f"{init} init: each layer at L={deepest}", legend=7)
        _label(bottom, "depth L", "‖∇W_down‖ of the last layer",
               f"{init} init: last layer against depth", legend=7)
    return _png(fig)


def fig_placement_deep(doc: dict[str, Any]) -> bytes | None:
    """C13, C19 and C36: the largest stable peak lr per arm (one dot per seed, the geometric
    mean as a bar), at the training depth (left) and in the deep stacks (right)."""
    data, _ = _summary(doc, "placement", PlacementData)
    if data is None or not data.stability:
        return None
    fig, axes = _new(11, 3.9, 2, 1)
    for ax, grid in zip((axes[0, 0], axes[0, 1]), ("sweep", "deep"), strict=True):
        arms = [a for a in data.stability if a.grid == grid]
        if not arms:
            _say_empty(ax, f"no {'deep stack' if grid == 'deep' else 'training-depth'} "
                           "stability runs stored")
            continue
        for x, a in enumerate(arms):
            colour = arm_colour(a.placement)
            step = a.ladder[1] / a.ladder[0] if len(a.ladder) > 1 else 2.0
            lrs = [a.ladder[0] * step ** k for k in a.rungs if k is not None]
            ax.plot([x] * len(lrs), lrs, "o", ms=5, alpha=0.6, color=colour)
            if a.max_stable_lr is not None:
                ax.plot([x - 0.3, x + 0.3], [a.max_stable_lr] * 2, lw=2, color=colour)
        ax.axhline(a.ladder[0], color="grey", lw=0.8, ls=":")
        ax.axhline(a.ladder[-1], color="grey", lw=0.8, ls=":")
        ax.set_yscale("log", base=2)
        ax.set_xticks(range(len(arms)), [f"{a.placement}\n{'warmup' if a.warmup else 'no warmup'}"
                                         for a in arms], fontsize=8)
        _label(ax, y="largest stable peak lr", title=f"L={arms[0].depth}, {arms[0].steps} "
               "steps: largest stable lr per seed (dotted: the ladder's ends)")
    return _png(fig)


# --- position ------------------------------------------------------------------------------------
def _mean(stats: Read | float | None) -> float:
    """The mean of an Interval, or a mean stored as a number (a passkey accuracy); NaN for no
    mean, no interval or an unavailable read (str)."""
    if isinstance(stats, Interval):
        stats = stats.mean
    return float(stats) if isinstance(stats, int | float) else math.nan


def fig_position_extrapolation(doc: dict[str, Any]) -> bytes | None:
    data, _ = _summary(doc, "position", PositionData)
    if data is None or not data.arms or not data.mults:
        return None
    arms, mults, L = data.arms, data.mults, data.L
    base = [a for a in arms if "+" not in a]
    scaled = [a for a in arms if a == "rope" or a.startswith("rope+")]
    fig, axes = _new(12, 4.2, 3, 1)

    for ax, names, title in ((axes[0, 0], base, "position schemes"),
                             (axes[0, 1], scaled, "RoPE with scaling at inference")):
        if not names:
            _say_empty(ax, f"{title}: none stored")
            continue
        for i, name in enumerate(names):
            entry = arms[name]
            style = "--" if "+ft" in name else "-"
            loss = [_mean(entry.loss_at_L if m == 1 else entry.loss_beyond_L[str(m)])
                    for m in mults]
            ax.plot(mults, loss, MARKERS[i % len(MARKERS)] + style, ms=4, lw=1.3,
                    color=arm_colour(name), label=name)
        ax.set_xscale("log", base=2)
        ax.set_xticks(mults, [f"{m}×" for m in mults])
        _label(ax, f"evaluation length (× L = {L})", title=title, legend=6.5, ncols=2)
    if "rope" in arms:
        sliding = [math.nan if m == 1 else _mean(arms["rope"].sliding[str(m)]) for m in mults]
        axes[0, 1].plot(mults, sliding, ":", color=arm_colour("rope"), lw=1.5,
                        label="rope, sliding windows of L")
        axes[0, 1].legend(fontsize=6.5, ncols=2)
    axes[0, 0].set_ylabel("loss (nats/token)")
    # Per-position loss at the longest length read, bucketed, for the plain schemes.
    ax = axes[0, 2]
    longest = str(max(mults))
    curves = {name: c for name in base  # a str or None: no curve there
              if isinstance(c := arms[name].per_position.get(longest), PerPosition) and c.loss}
    if not curves:
        _say_empty(ax, f"no per-position loss stored at {longest}× L")
        return _png(fig)
    for name, curve in curves.items():
        width = curve.bucket
        ax.plot([width * (j + 0.5) for j in range(len(curve.loss))],
                _finite(curve.loss), "-", lw=1.2, color=arm_colour(name), label=name)
    if L:
        ax.axvline(L, color="grey", ls=":", lw=1, label="L (trained length)")
    _label(ax, "position", title=f"loss by position at {longest}× L", legend=6.5)
    return _png(fig)


def fig_passkey(doc: dict[str, Any]) -> bytes | None:
    data, _ = _summary(doc, "position", PositionData)
    if data is None:
        return None
    arms = {name: entry.passkey for name, entry in data.arms.items()
            if entry.passkey is not None}
    mults = data.mults
    if not arms or not mults:
        return None
    import numpy as np
    from matplotlib import colormaps

    grid = np.array([[_mean(pk.by_length.get(str(m))) for m in mults]  # n/a: not read
                     for pk in arms.values()])
    fig, [[ax]] = _new(1.2 * len(mults) + 3, 0.32 * len(arms) + 1.4)
    cmap = colormaps["viridis"].with_extremes(bad="#d0d0d0")  # grey: cannot run there
    image = ax.imshow(np.ma.masked_invalid(grid), vmin=0, vmax=1, cmap=cmap, aspect="auto")
    for (row, col), value in np.ndenumerate(grid):
        ax.text(col, row, "n/a" if math.isnan(value) else f"{value:.2f}", ha="center",
                va="center", fontsize=7, color="white" if value < 0.6 else "black")
    ax.set_xticks(range(len(mults)), [f"{m}× L" for m in mults])
    ax.set_yticks(range(len(arms)), list(arms))
    fig.colorbar(image, ax=ax, label="passkey accuracy")
    return _png(fig)


def _ci_bars(stats: list[Interval]) -> tuple[list[float], list[list[float]]]:
    """Means and matplotlib yerr ([below], [above]) of intervals; NaN / 0 where unresolved."""
    means = [_mean(s) for s in stats]
    below = [m - s.ci_low if s.resolved else 0.0 for m, s in zip(means, stats, strict=True)]
    above = [s.ci_high - m if s.resolved else 0.0 for m, s in zip(means, stats, strict=True)]
    return means, [below, above]


def fig_position_order(doc: dict[str, Any]) -> bytes | None:
    """C29: per arm, how far the next-token distribution moves when a prefix is reversed (TV),
    and the validation loss minus the unigram entropy."""
    data, _ = _summary(doc, "position", PositionData)
    if data is None or not data.order:
        return None
    names = list(data.order)
    fig, axes = _new(11, 3.6, 2, 1)
    for ax, field_name, label, title in (
            (axes[0, 0], "tv", "TV distance, prefix vs its reversal",
             "order seen by each trained decoder"),
            (axes[0, 1], "loss_minus_unigram", "val loss − unigram entropy (nats)",
             "context used beyond token frequencies")):
        means, err = _ci_bars([getattr(data.order[n], field_name) for n in names])
        ax.bar(range(len(names)), means, yerr=err, capsize=3,
               color=[arm_colour(n) for n in names])
        ax.axhline(0.0, color="grey", lw=1)
        ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
        _label(ax, y=label, title=title, grid="y")
    return _png(fig)


def fig_position_scaling(doc: dict[str, Any]) -> bytes | None:
    """C30: loss past L vs sliding windows (%) against the multiple of L, for plain RoPE and
    NTK / YaRN, training-free (solid) and fine-tuned (dashed)."""
    data, _ = _summary(doc, "position", PositionData)
    if data is None or not data.arms:
        return None
    longer = [m for m in data.mults if m > 1]
    ft = data.finetune.arms if data.finetune else {}
    named = {"none": "plain RoPE", "ntk": "NTK", "yarn": "YaRN"}
    lines = [("rope", "plain RoPE", "-"), ("rope+ntk", "NTK", "-"), ("rope+yarn", "YaRN", "-")]
    lines += [(arm, f"{named.get(kind, kind)}, fine-tuned", "--") for kind, arm in ft.items()]
    fig, [[ax]] = _new(7.5, 4.2)
    for arm, label, style in lines:
        if arm not in data.arms:
            continue
        stats = [data.arms[arm].extrapolated_vs_sliding_pct.get(str(m)) for m in longer]
        stats = [s if isinstance(s, Interval) else Interval(0) for s in stats]
        means, err = _ci_bars(stats)
        ax.errorbar(longer, means, yerr=err, fmt=style, marker="o", ms=3, capsize=3,
                    color=arm_colour(arm), label=label)
    from blocklab.claims.registry import COLLAPSE_PCT, WORKS_PCT

    ax.axhline(WORKS_PCT, color="grey", ls=":", lw=1)
    ax.axhline(COLLAPSE_PCT, color="grey", ls="-.", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_xticks(longer, [f"{m}×" for m in longer])
    _label(ax, f"read length / training length L={data.L}", "loss past L vs sliding windows (%)",
           "RoPE past its training length, with and without scaling", legend=7)
    return _png(fig)


def fig_position_cost(doc: dict[str, Any]) -> bytes | None:
    """C31: training and decode step time of each scheme relative to no positions."""
    data, _ = _summary(doc, "position", PositionData)
    if data is None or data.cost is None:
        return None
    schemes = [s for s in data.cost.schemes if s != "none"]
    fig, [[ax]] = _new(7.5, 3.6)
    width = 0.38
    for i, (phase, colour) in enumerate(zip(("train", "decode"), SERIES_COLOURS, strict=False)):
        means, err = _ci_bars([_interval(getattr(data.cost.schemes[s], f"{phase}_vs_none"))
                               for s in schemes])
        ax.bar([j + (i - 0.5) * width for j in range(len(schemes))], means, width, yerr=err,
               capsize=3, color=colour, label=f"{phase} step")
    ax.axhline(1.0, color="grey", lw=1)
    ax.axhline(1.1, color="grey", ls=":", lw=1)
    ax.set_xticks(range(len(schemes)), schemes)
    _label(ax, y="median time / median time without positions",
           title=f"position cost, 1 thread, {data.cost.repeats} interleaved repeats", grid="y",
           legend=8)
    return _png(fig)


def fig_rope_relative_error(doc: dict[str, Any]) -> bytes | None:
    """RoPE's relative-position error against the shift, a line per dtype (one colour in both
    panels): the position suite's relative-error run (naive, and through blocklab's numerics),
    else (it runs at --size full only) the float64 reference of `blocklab verify` alone."""
    data, _ = _summary(doc, "position", PositionData)
    pipelines = {} if data is None else {name: by_dtype for name, by_dtype in (
        ("positions, angles and rotation in the dtype", data.relative_error),
        ("blocklab: float32 angles and rotation", data.relative_error_blocklab)) if by_dtype}
    if not pipelines:
        float64 = doc["rope"]["float64_gap_by_shift"]
        if not float64:
            return None
        pipelines = {"float64 reference": {"float64": [[int(s), g] for s, g in float64.items()]}}
    dtypes = list(dict.fromkeys(dtype for by_dtype in pipelines.values() for dtype in by_dtype))
    fig, axes = _new(5 * len(pipelines), 3.9, len(pipelines), 1)
    for ax, (title, by_dtype) in zip(axes.flat, pipelines.items(), strict=True):
        for dtype, pairs in by_dtype.items():
            colour = SERIES_COLOURS[dtypes.index(dtype) % len(SERIES_COLOURS)]
            pairs = [(s, e) for s, e in pairs if s > 0]  # shift 0 is exact by construction
            ok = [(s, e) for s, e in pairs if e is not None and e > 0]
            ax.plot([s for s, _ in ok], [e for _, e in ok], "o-", ms=4, color=colour,
                    label=dtype)
            bad = [s for s, e in pairs if e is None]
            if bad:  # NaN/inf: drawn on the top edge
                ax.plot(bad, [0.97] * len(bad), "x", ms=8, color=colour,
                        transform=ax.get_xaxis_transform(), label=f"{dtype}: NaN/inf")
        ax.set(xscale="log", yscale="log")
        _label(ax, "shift s of both positions", "max |score(m,n) − score(m+s,n+s)|", title,
               legend=7)
    if dtypes == ["float64"]:
        axes[0, 0].text(0.97, 0.05, "float64 only: the other dtypes are the position\n"
                        f"suite's relative-error run, {AT_FULL}", transform=axes[0, 0].transAxes,
                        ha="right", va="bottom", fontsize=7, color="grey")
    return _png(fig)


# --- deployment ----------------------------------------------------------------------------------
def _deploy_figure(doc: dict[str, Any], phase: str, share: bool) -> bytes | None:
    """Per model, each part's FLOPs of `phase` against the context: stacked shares (`share`)
    or GFLOPs per token on a log axis."""
    models = doc.get("deployment", {}).get("models") or {}
    if not models:
        return None
    fig, axes = _new(3.4 * len(models), 3.6, len(models), 1)
    for ax, (name, rows) in zip(axes.flat, models.items(), strict=True):
        contexts = [r["context"] for r in rows]
        parts = [p for p in PART_LABELS if any(r[phase][p] for r in rows)]
        if share:
            values = [[r[phase][p] / r[phase]["total"] for r in rows] for p in parts]
            ax.stackplot(contexts, values, labels=[PART_LABELS[p] for p in parts],
                         colors=[PART_COLOURS[p] for p in parts], alpha=0.9)
            ax.set_ylim(0, 1)
        else:
            for p in parts:
                ax.plot(contexts, [r[phase][p] / 1e9 for r in rows], "o-", ms=3,
                        color=PART_COLOURS[p], label=PART_LABELS[p])
            ax.set_yscale("log")
        ax.set_xscale("log", base=2)
        _label(ax, "context length (tokens)", "share of FLOPs" if share else "GFLOPs per token",
               name)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels), fontsize=8)
    return _png(fig)


def fig_kv_cache(doc: dict[str, Any]) -> bytes | None:
    models = doc.get("deployment", {}).get("models") or {}
    if not models:
        return None
    fig, [[ax]] = _new(7.5, 4.0)
    for i, (name, rows) in enumerate(models.items()):
        contexts = [r["context"] for r in rows]
        ax.plot(contexts, [r["kv_cache_bytes"] / 2**30 for r in rows], "o-", ms=3,
                color=SERIES_COLOURS[i], label=f"{name} KV cache")
        ax.axhline(rows[0]["weights_bytes"] / 2**30, color=SERIES_COLOURS[i], ls=":", lw=1,
                   label=f"{name} weights")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    _label(ax, "context length (tokens)", "GiB (bf16, batch 1)", legend=7, ncols=2)
    return _png(fig)


def _suite_command(doc: dict[str, Any], suite: str) -> str:
    return doc["suites"][suite]["command"]


# --- scale trends ---------------------------------------------------------------------------------
def fig_scale_trend(doc: dict[str, Any]) -> bytes | None:
    """C16's SwiGLU − ReLU against model size and C19's warmup interaction against depth."""
    ffn, _ = _summary(doc, "ffn", FfnData)
    placement, _ = _summary(doc, "placement", PlacementData)
    by_size = ffn is not None and len(ffn.trend) > 1
    by_depth = placement is not None and len({e.depth for e in placement.effects}) > 1
    if not by_size and not by_depth:
        return None
    fig, [[left, right]] = _new(10, 3.8, 2, 1)
    if by_size:
        for point in ffn.trend:
            _errorbar(left, point.params, point.rel_delta_pct, fmt="o",
                      color=arm_colour("swiglu"), capsize=4)
        left.plot([p.params for p in ffn.trend], [p.rel_delta_pct.mean for p in ffn.trend],
                  color=arm_colour("swiglu"), lw=1)
        if "swiglu" in ffn.page:  # the page's gain over ReLU, %: (low, high)
            low, high = ffn.page["swiglu"]
            left.axhspan(-high, -low, color=CLAIM_SHADE, alpha=0.12,
                         label=f"page: {low:g}–{high:g}% better")
        left.set_xscale("log")
        _label(left, "parameters (ReLU model)", "SwiGLU − ReLU val loss, %",
               "C16: SwiGLU vs ReLU by model size", legend=7)
    else:
        _say_empty(left, "C16 by model size:\nfewer than two model sizes stored")
    if by_depth:
        chosen = sorted(placement.effects, key=lambda e: e.depth)
        for effect in chosen:
            _errorbar(right, effect.depth, effect.warmup_interaction, fmt="s",
                      color=arm_colour("post"), capsize=4)
        right.plot([e.depth for e in chosen], [e.warmup_interaction.mean for e in chosen],
                   color=arm_colour("post"), lw=1)
        _label(right, "depth (layers)", "(post cold − warm) − (pre cold − warm), nats",
               "C19: post-norm's need for warmup by depth (tuned lrs)")
    else:
        _say_empty(right, "C19 by depth:\nfewer than two depths stored")
    for ax in (left, right):
        ax.axhline(0.0, color="grey", lw=1)
    return _png(fig)


# --- quantization --------------------------------------------------------------------------------
def fig_quantize_speedup(doc: dict[str, Any]) -> bytes | None:
    """Speed-up of each int8 scheme over float32, prefill at the longest length and decode,
    with the bound each one cannot beat: the speed-up of the same model whose quantized layers
    cost nothing (Amdahl over their measured time share, 1 / (1 − f))."""
    data, _ = _summary(doc, "quantize", QuantizeData)
    if data is None or not data.timings:
        return None
    timings = [x for x in data.timings if x.scheme != "none" and not x.compiled]
    if not timings:
        return None
    seq = str(max(data.seq_lens))
    fig, axes = _new(11, 4.0, 2, 1)
    names = [x.scheme for x in timings]
    for ax, phase in ((axes[0, 0], "prefill"), (axes[0, 1], "decode")):
        for i, x in enumerate(timings):
            r = x.prefill_speedup.get(seq) if phase == "prefill" else x.decode_speedup
            bound = x.prefill_bound.get(seq) if phase == "prefill" else x.decode_bound
            colour = SERIES_COLOURS[0 if x.part == "ffn" else 1 if x.part == "attention" else 2]
            if r is not None:  # geometric mean of paired ratios, Student t on log ratios
                _errorbar(ax, i, _interval(r), fmt="o", color=colour, capsize=4, ms=6)
            if bound is not None:
                ax.plot([i - 0.3, i + 0.3], [bound, bound], color=colour, ls="--", lw=1)
        ax.set_xticks(range(len(names)), [n.replace("/", "\n") for n in names], fontsize=8)
        ax.set_xlim(-0.7, len(names) - 0.3)
        ax.axhline(1.0, color="grey", lw=1)
        ax.set_yscale("log")
        _plain_log_ticks(ax.yaxis)
    _label(axes[0, 0], y="speed-up over float32 (dashed: bound)",
           title=f"prefill of {seq} tokens")
    _label(axes[0, 1], title=f"decode, one token after {data.decode_context}")
    return _png(fig)


# --- the ledger: forest plots of the graded parts -------------------------------------------------
# A second cue beside the colour: each decision its own marker (inconclusive hollow).
DECISION_MARKERS = {"confirmed": "o", "not-reproduced-at-this-scale": "s",
                    "contradicted-at-this-scale": "D", "inconclusive": "o", "run": "^",
                    "refuted": "X", "conditional": "d", "untestable-here": "P"}
# The legend's word for a decision where it is not the decision's own.
DECISION_LABELS = {"not-reproduced-at-this-scale": "not reproduced",
                   "contradicted-at-this-scale": "contradicted", "run": "run (nothing claimed)"}


def decision_colour(decision: str) -> str:
    """The colour a part's decision is drawn in: its verdict's (`palette.VERDICT_STYLES`), the
    colour of its chip beside the figure."""
    return VERDICT_STYLES.get(decision, VERDICT_STYLES["inconclusive"]).colour


def experimental_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The ledger rows graded in parts from a suite's stored results (the claims whose command
    runs a suite), in ledger order; configs and facts graded in parts (C34) are not among
    them."""
    return [r for r in doc["ledger"] if r.get("parts") and not r.get("error")
            and "blocklab suite " in (r.get("command") or "")]


def forest_key(claim_id: str) -> str:
    return f"forest_{claim_id.lower()}"


def part_geometry(rule: dict[str, Any]) -> dict[str, Any]:
    """Where a part's rule draws, in the metric's units: the claimed side s (+1, −1; 0 for a
    band), the boundary b (δ on that side, or a stated threshold or bound), an equivalence
    claim's band and ±margin (None: not drawn). For drawing only: the decision is read."""
    test, claimed = rule.get("test", "effect"), float(rule["claimed"])
    delta, margin = abs(float(rule["smallest_effect"])), float(rule.get("margin") or 0.0)
    threshold = float(rule.get("threshold") or 0.0)
    drawn = {"test": test, "claimed": claimed, "delta": delta, "band": None, "margin": None}
    if test == "equivalence":
        return {**drawn, "side": 0, "boundary": None, "band": (claimed - margin, claimed + margin)}
    if test in ("at-most", "at-least"):
        return {**drawn, "side": -1 if test == "at-most" else 1, "boundary": threshold}
    side = 1 if claimed > 0 else -1
    return {**drawn, "side": side, "boundary": side * max(delta, side * threshold),
            "margin": margin if margin > 0 else None}


def interval_of(part: dict[str, Any]) -> tuple[float | None, float | None, str]:
    """(low, high, coverage) of the interval a part shows: the one its decision read
    (`interval`, at its level), else the estimate's stored 95% one."""
    iv = part.get("interval")
    if iv is not None:
        return iv["low"], iv["high"], confidence_text(iv["confidence"])
    e = part["estimate"]
    return e.get("ci_low"), e.get("ci_high"), "95%"


def normalised(part: dict[str, Any]) -> tuple[float | None, float | None, float | None]:
    """(value, low, high) of a part on the overview's shared axis, the interval the one its
    decision read: 1 + (s·x − s·b)/δ for a directional part (the boundary at 1, the claim
    holding to its right), (x − claimed)/margin for a band ([−1, 1]); low stays left."""
    g = part_geometry(part["rule"])
    e = part["estimate"]

    def f(x: float | None) -> float | None:
        if x is None:
            return None
        if g["test"] == "equivalence":
            half = (g["band"][1] - g["band"][0]) / 2 or 1.0
            return (x - g["claimed"]) / half
        scale = g["delta"] or abs(g["claimed"]) or 1.0
        return 1 + (g["side"] * x - g["side"] * g["boundary"]) / scale

    shown_low, shown_high, _ = interval_of(part)
    value, low, high = f(e.get("value")), f(shown_low), f(shown_high)
    if low is not None and high is not None and low > high:
        low, high = high, low
    return value, low, high


def _short_name(name: str, limit: int = 44) -> str:
    """`name` within `limit` characters: its head and its tail (where parts of one claim
    differ, as in '… works at 8×' and '… works at 16×') around an ellipsis."""
    if len(name) <= limit:
        return name
    tail = max(limit // 3, 10)
    head, end = name[:limit - tail - 1], name[-tail:]
    head = head[:head.rfind(" ")] if " " in head else head  # whole words either side
    end = end[end.find(" ") + 1:] if " " in end else end
    return f"{head.rstrip()} … {end.lstrip()}"


def _looks_text(part: dict[str, Any]) -> str:
    """'n=5, 2 looks, 99.64% CI': the seeds, the looks and the coverage of the interval
    drawn."""
    looks = part.get("looks") or []
    n = part["estimate"].get("n") or 0
    look = f"{len(looks)} look" + ("s" if len(looks) != 1 else "")
    low, high, coverage = interval_of(part)
    return f"n={n}, {look}" + (f", {coverage} CI" if low is not None and high is not None
                                 else "")


def _draw_estimate(ax, y: float, value, low, high, decision: str, clip=None) -> None:
    """The estimate (marker) and its interval (line) in the decision's colour and marker;
    `clip` (lo, hi): ends beyond it drawn at the edge as arrows."""
    colour = decision_colour(decision)
    marker = DECISION_MARKERS.get(decision, "o")
    face = "white" if decision == "inconclusive" else colour
    if low is not None and high is not None:
        lo, hi = (low, high) if clip is None else (max(low, clip[0]), min(high, clip[1]))
        if clip is None or hi >= lo:
            ax.plot([lo, hi], [y, y], color=colour, lw=2.2, solid_capstyle="butt")
        if clip is None:  # the interval's ends
            ax.plot([lo, lo], [y - 0.18, y + 0.18], color=colour, lw=1.2)
            ax.plot([hi, hi], [y - 0.18, y + 0.18], color=colour, lw=1.2)
        else:  # an end past the axis: an arrow at its edge
            if low < clip[0]:
                ax.plot([clip[0]], [y], "<", color=colour, ms=5)
            if high > clip[1]:
                ax.plot([clip[1]], [y], ">", color=colour, ms=5)
    if value is not None:
        shown = value if clip is None else min(max(value, clip[0]), clip[1])
        ax.plot([shown], [y], marker, ms=7, color=colour, markerfacecolor=face,
                markeredgewidth=1.5, zorder=5)


def _part_panel(ax, part: dict[str, Any], number: int) -> None:
    """One part on its own axis in its metric's units, labelled with its number in the claim
    (as its line of words), its name and its unit."""
    g = part_geometry(part["rule"])
    e = part["estimate"]
    low, high, _ = interval_of(part)
    margin = g["margin"] or 0.0
    points = [0.0, g["claimed"], g["boundary"], *(g["band"] or ()), -margin, margin,
              -g["side"] * g["delta"] if g["test"] == "effect" else None,
              e.get("value"), low, high]
    points = [p for p in points if p is not None and math.isfinite(p)]
    left, right = min(points), max(points)
    pad = 0.12 * (right - left or 1.0)
    left, right = left - pad, right + pad
    claims = part["decision"] != "run"  # a finding: nothing is claimed, nothing shaded
    if claims:  # the stretch the claim allows: its band, or from the boundary outwards
        span = g["band"] or ((g["boundary"], right) if g["side"] > 0 else (left, g["boundary"]))
        ax.axvspan(*span, **CLAIM_REGION)
    if g["margin"] is not None:
        ax.axvspan(-g["margin"], g["margin"], color="#8c959f", alpha=0.22, lw=0)
    ax.axvline(0.0, color="#8c959f", lw=0.8)
    if g["boundary"] is not None and claims:
        ax.axvline(g["boundary"], color=CLAIM_SHADE, ls="--", lw=1.0)
    if g["test"] == "effect" and claims:
        ax.axvline(-g["side"] * g["delta"], color=CLAIM_SHADE, ls=":", lw=0.9)
        if g["claimed"] != g["boundary"]:
            ax.plot([g["claimed"]], [0], "x", color=CLAIM_SHADE, ms=6, mew=1.5)
    _draw_estimate(ax, 0.0, e.get("value"), low, high, part["decision"])
    if e.get("value") is None:
        ax.text(0.5, 0.5, "no estimate: " + _short_name(part.get("reason", ""), 60),
                transform=ax.transAxes, ha="center", va="center", fontsize=7, color="#59636e")
    ax.set_xlim(left, right)
    ax.set_ylim(-0.6, 0.6)
    unit = _unit(part["rule"]["metric"])
    unit = f" ({unit})" if unit else ""
    ax.set_yticks([0], [f"{number}. {_short_name(part['name'], 54 - len(unit))}{unit}"],
                  fontsize=7)
    ax.tick_params(axis="x", labelsize=7, pad=1, length=2)
    ax.tick_params(axis="y", length=0)
    right_ax = ax.twinx()
    right_ax.set_ylim(-0.6, 0.6)
    right_ax.set_yticks([0], [_looks_text(part)], fontsize=7)
    right_ax.tick_params(axis="y", length=0)
    ax.spines[["top", "right", "left"]].set_visible(False)
    right_ax.spines[:].set_visible(False)


# (word in a rule's metric, the unit it names), the first found deciding: "log2(stable lr),
# doublings" is in doublings, "100·ln(speed-up), log-percent" in log-%, not %.
METRIC_UNITS = (("log-percent", "log-%"), ("doublings", "doublings"), ("nats", "nats"),
                ("log2(", "log2 ratio"), ("%", "%"))


def _unit(metric: str) -> str:
    """The unit a rule's metric is stated in ('%', 'nats', ...; '' where it names none)."""
    return next((unit for word, unit in METRIC_UNITS if word in metric), "")


def fig_forest(doc: dict[str, Any], claim_id: str) -> bytes | None:
    """A claim's parts, a row each in its metric's units (the title names a unit all share):
    the estimate and the interval its decision read in its decision's colour and marker, the
    claim's stretch hatched, the boundary dashed, δ opposite dotted, × the claimed size, grey
    ±margin; n and looks on the right."""
    row = next((r for r in experimental_rows(doc) if r["id"] == claim_id), None)
    if row is None:
        return None
    parts = row["parts"]
    fig, axes = _new(6.2, 0.5 * len(parts) + 0.55, 1, len(parts))
    for number, (ax, part) in enumerate(zip(axes[:, 0], parts, strict=True), start=1):
        _part_panel(ax, part, number)
    units = {_unit(p["rule"]["metric"]) for p in parts}
    shared = units.pop() if len(units) == 1 else ""
    title = claim_id + (f" (unit: {shared})" if shared else "")
    fig.suptitle(title, fontsize=8, x=0.01, ha="left")
    return _png(fig)


def fig_ledger_overview(doc: dict[str, Any]) -> bytes | None:
    """Every part of every experimental claim on one normalised axis (`normalised`), grouped
    by claim, in two columns; the claim's stretch shaded per row, decisions coloured as the
    verdict chips, intervals past the axis drawn to its edge with an arrow."""
    rows = experimental_rows(doc)
    if not rows:
        return None
    clip = (-4.0, 5.0)
    total = sum(len(r["parts"]) + 1 for r in rows)
    columns: list[list[dict[str, Any]]] = [[], []]
    count = 0
    for r in rows:  # claims in ledger order, split where the rows reach half
        columns[0 if count < total / 2 else 1].append(r)
        count += len(r["parts"]) + 1
    height = max(sum(len(r["parts"]) + 1 for r in col) for col in columns)
    fig, axes = _new(12.5, 0.2 * height + 1.3, 2, 1)
    for ax, col in zip(axes[0], columns, strict=True):
        labels, y = [], 0.0
        ticks = []
        for r in col:
            ax.text(clip[0], y, f" {r['id']}", fontsize=8, fontweight="bold", va="center")
            ax.axhline(y + 0.5, color="#d0d7de", lw=0.6)
            y -= 1
            for number, part in enumerate(r["parts"], start=1):
                g = part_geometry(part["rule"])
                low_end, high_end = ((-1.0, 1.0) if g["band"] is not None else (1.0, clip[1]))
                if part["decision"] != "run":  # a finding claims nothing: nothing shaded
                    ax.fill_between([low_end, high_end], y - 0.42, y + 0.42,
                                    **CLAIM_REGION)
                value, low, high = normalised(part)
                _draw_estimate(ax, y, value, low, high, part["decision"], clip)
                ticks.append(y)
                labels.append(f"{number}. {_short_name(part['name'], 44)}")
                y -= 1
        ax.set_yticks(ticks, labels, fontsize=6.5)
        ax.tick_params(axis="y", length=0)
        ax.set_ylim(y + 0.5, 0.6)
        ax.set_xlim(clip[0] - 0.1, clip[1] + 0.1)
        ax.axvline(0.0, color="#8c959f", lw=0.8)
        ax.axvline(1.0, color=CLAIM_SHADE, ls="--", lw=1.0)
        ax.axvline(-1.0, color=CLAIM_SHADE, ls=":", lw=0.8)
        ax.set_xlabel("normalised effect: boundary at 1 (bands: [−1, 1])", fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(True, axis="x", alpha=0.25)
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    drawn = {part["decision"] for r in rows for part in r["parts"]}
    handles = [Line2D([], [], marker=DECISION_MARKERS.get(d, "o"), ls="-",
                      color=decision_colour(d),
                      markerfacecolor="white" if d == "inconclusive" else decision_colour(d),
                      label=DECISION_LABELS.get(d, d.replace("-", " ")))
               for d in VERDICT_STYLES if d in drawn]
    handles.append(Patch(**CLAIM_REGION, label="what the claim allows"))
    fig.legend(handles=handles, loc="outside upper center", ncols=len(handles), fontsize=8)
    return _png(fig)


def forest_command(doc: dict[str, Any], claim_id: str | None = None) -> str:
    """The command that prints the parts a forest plot draws (the ledger's JSON)."""
    gen = doc["generated"]
    offset = f" --seed-offset {gen['seed_offset']}" if gen.get("seed_offset") else ""
    precision = gen.get("precision", "fp32")
    bf16 = "" if precision == "fp32" else f" --precision {precision}"
    ids = f" {claim_id}" if claim_id else ""
    return (f"blocklab claims{ids} --json --size {gen['size']} --results "
            f"{gen['results']}{offset}{bf16}")


# --- registry ------------------------------------------------------------------------------------
# key -> (figure function, command that reproduces its numbers given the document). The command
# is None for a figure a suite draws beside its tables (`Suite.figures`): that suite's command.
# The others keep their own: a figure shown with its claim (the subsections of C29–C32 and C36),
# which reads one suite's results; one drawn from two suites' results, or from no suite's.
FIGURES: dict[str, tuple[Callable[[dict[str, Any]], bytes | None],
                         Callable[[dict[str, Any]], str] | None]] = {
    "ffn_budget": (fig_ffn_budget, lambda doc: "blocklab budget --sweep --plot ffn_budget.png"),
    "ffn_variants": (fig_ffn_variants, None),
    "ffn_loss_curves": (fig_ffn_loss_curves, None),
    "width_control": (fig_width_control, None),
    "norm_cost": (fig_norm_cost, None),
    "placement_training": (fig_placement_training, None),
    "placement_gradients": (fig_placement_gradients, None),
    "placement_deep": (fig_placement_deep, lambda doc: _suite_command(doc, "placement")),
    # beside the ffn suite's tables (`Suite.figures`), from the ffn and placement suites' results
    "scale_trend": (fig_scale_trend, lambda doc: f"{_suite_command(doc, 'ffn')}; "
                                                 f"{_suite_command(doc, 'placement')}"),
    "position_extrapolation": (fig_position_extrapolation, None),
    "passkey": (fig_passkey, None),
    "position_order": (fig_position_order, lambda doc: _suite_command(doc, "position")),
    "position_scaling": (fig_position_scaling, lambda doc: _suite_command(doc, "position")),
    "position_cost": (fig_position_cost, lambda doc: _suite_command(doc, "position")),
    "rope_relative_error": (fig_rope_relative_error,
                            lambda doc: (_suite_command(doc, "position")
                                         if doc["suites"]["position"]["summary"]
                                         else doc["rope"]["command"])),
    "quantize_speedup": (fig_quantize_speedup, lambda doc: _suite_command(doc, "quantize")),
    "prefill_split": (functools.partial(_deploy_figure, phase="prefill", share=True),
                      lambda doc: "blocklab budget meta-llama-3-8b --seq 4096 --json"),
    "decode_split": (functools.partial(_deploy_figure, phase="decode", share=False),
                     lambda doc: "blocklab budget meta-llama-3-8b --seq 65536 --json"),
    "kv_cache": (fig_kv_cache, lambda doc: "blocklab budget meta-llama-3-8b --seq 131072"),
    "ledger_overview": (fig_ledger_overview, lambda doc: forest_command(doc)),
    # a claim's ladder of sizes (`blocklab ladder`), in its ledger row
    **{f"ladder_{claim}": (functools.partial(_ladder_figure, claim_id=claim),
                           lambda doc, claim=claim: doc["ladders"][claim]["command"])
       for claim in ("C16", "C18", "C19", "C21", "C30")},
}


def make_figures(doc: dict[str, Any]) -> dict[str, Figure]:
    """Every figure the document has data for, by key. The one broad except of the report: a
    figure that fails to draw becomes a `Figure` whose `error` says what and where (shown on
    the page, in report.json, exit code 1), so every other section stays readable."""
    out = {}
    drawers = dict(FIGURES)
    for row in experimental_rows(doc):  # one forest plot per experimental claim
        drawers[forest_key(row["id"])] = (
            lambda d, cid=row["id"]: fig_forest(d, cid),
            lambda d, cid=row["id"]: forest_command(d, cid))
    for key, (draw, command) in drawers.items():
        try:
            png = draw(doc)
        except Exception as err:  # recorded in the figure and reported; see the docstring
            out[key] = Figure(key, b"", figure_command(doc, key, command), _describe(err))
            continue
        if png is not None:
            out[key] = Figure(key, png, figure_command(doc, key, command))
    return out


def figure_command(doc: dict[str, Any], key: str,
                   command: Callable[[dict[str, Any]], str] | None) -> str:
    """The command that reproduces figure `key`'s numbers: its own (`command`), else that of
    the one suite of the document that lists it in `Suite.figures`."""
    if command is not None:
        return command(doc)
    owners = [name for name in doc["suites"] if key in get_suite(name).figures]
    if len(owners) != 1:  # a bug in FIGURES or in the suites' figures, not the user's input
        raise RuntimeError(f"figure {key} has no command of its own and is listed by "
                           f"{len(owners)} suites ({', '.join(owners) or 'none'}), not one")
    return _suite_command(doc, owners[0])


def _describe(err: Exception) -> str:
    """'Type: message (in function, file:line)' of the innermost frame that raised `err`."""
    last = traceback.extract_tb(err.__traceback__)[-1]  # at least make_figures' own frame
    return (f"{type(err).__name__}: {err} (in {last.name}, "
            f"{Path(last.filename).name}:{last.lineno})")
