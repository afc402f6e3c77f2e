"""Which command a report figure names (`blocklab.report.figures.figure_command`): the suite's
for a figure a suite draws beside its tables, its own for any other. The ladder figure
(`fig_ladder`) on C16's ladder read from graded rungs: its fitted line stops at the top rung,
the rung that first decides a part is ringed, and its titles say where no line fits. A
figure says only what it draws: a forest plot's rows name their units, no panel is empty, and
the RoPE error figure draws the dtypes its data holds. Every arm a figure draws wears its
palette colour, and red is drawn for refuted alone."""

import copy
import math

import matplotlib.pyplot as plt
import pytest
from matplotlib.collections import Collection, PolyCollection
from matplotlib.colors import to_hex
from matplotlib.container import Container
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from blocklab.claims import ladder as ladder_module
from blocklab.claims.trend import LineFit
from blocklab.experiments.suites import SUITE_MODULES, get_suite
from blocklab.experiments.summaries import Interval
from blocklab.report import figures
from blocklab.report.figures import FIGURES, figure_command
from blocklab.report.palette import ARM_COLOURS, arm_colour

from ..claims.test_ladder import QUICK_FLOPS, _fake_rungs
from .test_ledger import part, row, rule
from .test_palette import REFUTED, is_red


def test_a_figure_names_its_own_command_else_that_of_the_one_suite_listing_it():
    doc = {"suites": {name: {"command": f"blocklab suite {name}", "summary": None}
                      for name in SUITE_MODULES},
           "rope": {"command": "blocklab verify --group rope"}}
    for name in SUITE_MODULES:
        for key in get_suite(name).figures:
            _, command = FIGURES[key]
            expected = (command(doc) if command is not None  # one of its own (scale_trend)
                        else f"blocklab suite {name}")
            assert figure_command(doc, key, command) == expected
    assert figure_command(doc, "scale_trend", FIGURES["scale_trend"][1]) == (
        "blocklab suite ffn; blocklab suite placement")
    assert figure_command(doc, "kv_cache", FIGURES["kv_cache"][1]).startswith(
        "blocklab budget")
    # one without a command of its own that no suite lists is a bug
    with pytest.raises(RuntimeError, match=r"figure kv_cache has no command of its own and "
                                           r"is listed by 0 suites \(none\), not one"):
        figure_command(doc, "kv_cache", None)


# The ladder figure (`fig_ladder`): a fitted line stops where the data stops.

# SwiGLU − ReLU falling ~0.4% a rung; GeGLU zig-zagging (no line fits; first decided at
# rung2); GLU flat (no trend)
LADDER_MEANS = {"quick": {"swiglu": -0.2, "geglu": 0.3, "glu": 0.1},
                "rung1": {"swiglu": -0.6, "geglu": -0.4, "glu": -0.1},
                "rung2": {"swiglu": -1.1, "geglu": 0.5, "glu": 0.05},
                "rung3": {"swiglu": -1.35, "geglu": -0.5, "glu": 0.0}}


def _ladder_doc(monkeypatch, tmp_path, sizes=("quick", "rung1", "rung2", "rung3")) -> dict:
    """C16's ladder as `ladder_dict` gives it, each rung of `sizes` graded from its design's
    first look of sd 0.3 around `LADDER_MEANS`, the others with no results stored."""
    _fake_rungs(monkeypatch, "C16", {size: LADDER_MEANS[size] for size in sizes}, sd=0.3)
    return ladder_module.ladder_dict(ladder_module.read_ladder("C16", tmp_path, {}))


def _drawn(doc: dict, name: str):
    with pytest.MonkeyPatch.context() as patch:
        fig = _drawn_figure(patch, figures.fig_ladder, doc)
    names = [t["part"] for t in doc["trends"]]
    return [ax for ax in fig.axes if ax.get_visible() and ax.get_title()][names.index(name)]


def _drawn_lines(ax) -> list:
    """The panel's lines in data coordinates (not markers alone, not the axes-wide ones)."""
    return [line for line in ax.get_lines() if line.get_linestyle() != "None"
            and line.get_transform() == ax.transData]


def test_a_ladder_line_stops_at_the_top_rung_and_only_a_dashed_segment_reaches_a_paper(
        monkeypatch, tmp_path):
    """The fit and its band stop at the top rung, a dashed segment alone reaches a paper; the
    rung that first decides a part is ringed; a title says where no line fits or no trend is
    detectable; a fit stored per seed draws its line but no band and no extrapolation."""
    doc = _ladder_doc(monkeypatch, tmp_path)
    top = QUICK_FLOPS * 8
    paper = {"source": "A paper 2099, far away", "flops": top * 1e6, "tokens": None,
             "effects": {"swiglu": -2.4}}
    doc["anchors"] = [paper]
    fit, extrapolation = figures._ladder_segments(doc, "swiglu")
    assert fit.kind == "fit" and fit.flops[0] == pytest.approx(QUICK_FLOPS)
    assert max(fit.flops) == pytest.approx(top) and fit.band is not None
    line = LineFit.from_dict(doc["trends"][0]["fit"])
    assert (fit.band[0][-1], fit.band[1][-1]) == pytest.approx(line.band(3.0))  # the line's
    assert extrapolation.kind == "extrapolation" and extrapolation.band is None
    assert extrapolation.flops == (top, paper["flops"])
    assert extrapolation.y == (pytest.approx(fit.y[-1]), -2.4)  # the line's end to the paper
    x = math.log2(paper["flops"] / QUICK_FLOPS)
    assert extrapolation.label == ("extrapolation to A paper 2099: not a finding\nextrapolated "
                                   "line at 1.9·10^18 FLOPs: "
                                   f"{figures._signed(line.at(x), *line.band(x))}%")
    assert figures._signed(-11.2, -40.1, 18.3) == "−11 [−40, +18]"
    assert figures._signed(0.0123, -0.03, 0.054) == "+0.012 [−0.030, +0.054]"
    # the parts the paper gives no effect for reach no further than the top rung
    assert [s.kind for s in figures._ladder_segments(doc, "geglu")] == ["fit"]
    # and so the figure: every line and band in data coordinates stops at the top rung but
    # the one dashed segment, which stops at the paper's compute
    ax = _drawn(doc, "swiglu")
    beyond = [line for line in _drawn_lines(ax) if max(line.get_xdata()) > top * (1 + 1e-9)]
    assert len(beyond) == 1 and beyond[0].get_linestyle() == "--"
    assert list(beyond[0].get_xdata()) == [top, paper["flops"]]
    assert list(beyond[0].get_ydata()) == [pytest.approx(fit.y[-1]), -2.4]
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert bands and all(max(p.vertices[:, 0].max() for p in c.get_paths()) <= top * (1 + 1e-9)
                         for c in bands)
    assert figures.fig_ladder(doc).startswith(b"\x89PNG")
    # the rung that first decides geglu is ringed
    trends = {t["part"]: t for t in doc["trends"]}
    seen = trends["geglu"]["appears"]
    rung = next(r for r in doc["rungs"] if r["size"] == seen["size"])
    assert seen["flops"] == rung["flops"] == QUICK_FLOPS * seen["multiple"]
    label = f"first decided here ({seen['verdict']})"
    assert figures._ladder_appears(doc, "geglu") == (seen["flops"], seen["value"], label)
    [ring] = [line for line in _drawn(doc, "geglu").get_lines() if line.get_label() == label]
    assert list(ring.get_xdata()) == [seen["flops"]] and list(ring.get_ydata()) == [
        seen["value"]]
    # the titles: no line fits geglu's zig-zag; glu's flat line shows no trend
    assert trends["geglu"]["line_fits"] is False
    p = trends["geglu"]["fit"]["lack_of_fit"]["p"]
    assert figures._ladder_title(doc, "geglu") == (
        f"geglu − relu\nno line fits (lack of fit p = {p:.2g})")
    assert trends["glu"]["direction"] == "none" and trends["glu"]["line_fits"] is True
    assert figures._ladder_title(doc, "glu") == (
        "glu − relu\ntrend: none detectable across 4 rungs")
    assert trends["swiglu"]["direction"] == "grows"
    assert figures._ladder_title(doc, "swiglu") == "swiglu − relu"
    # a part no stored rung decides: nothing marked
    trends["swiglu"]["appears"] = None
    assert figures._ladder_appears(doc, "swiglu") is None
    assert not any(line.get_label().startswith("first decided")
                   for line in _drawn(doc, "swiglu").get_lines())
    # a fit stored per seed (no unit): its line, no band, no extrapolation
    del trends["swiglu"]["fit"]["unit"]
    [segment] = figures._ladder_segments(doc, "swiglu")
    assert segment.kind == "fit" and segment.band is None
    assert max(segment.flops) == pytest.approx(top)


def test_with_fewer_than_three_rungs_a_ladder_draws_its_points_alone(monkeypatch, tmp_path):
    doc = _ladder_doc(monkeypatch, tmp_path, sizes=("quick", "rung1"))
    for trend in doc["trends"]:
        assert trend["fit"] is None and figures._ladder_segments(doc, trend["part"]) == []
        assert "\n" not in figures._ladder_title(doc, trend["part"])
        ax = _drawn(doc, trend["part"])
        assert _drawn_lines(ax) == []
        assert not any(isinstance(c, PolyCollection) for c in ax.collections)
        points = [line for line in ax.get_lines() if line.get_marker() == "o"
                  and not line.get_label().startswith("first decided")]
        assert sorted(x for line in points for x in line.get_xdata()) == [QUICK_FLOPS,
                                                                           2 * QUICK_FLOPS]
    assert figures.fig_ladder(doc).startswith(b"\x89PNG")


# A figure says only what it draws.

def _drawn_figure(monkeypatch, draw, *args):
    """The matplotlib figure `draw(*args)` rasterizes (None when it draws nothing)."""
    found = []
    monkeypatch.setattr(figures, "_png", lambda fig: found.append(fig) or b"png")
    return found[0] if draw(*args) is not None else None


def test_a_forest_plots_rows_name_their_units_and_its_title_only_a_shared_one(monkeypatch):
    metrics = {"trains without warmup": "val loss without − with warmup, nats",
               "stable without warmup": "log2(largest stable peak lr) without − with, doublings",
               "gradients vanish": "log2(‖∇ first layer‖ / ‖∇ last layer‖) of post-norm",
               "prefill share": "100·FFN FLOPs / the whole prefill's, %",
               "speeds prefill": "100·ln(prefill speed-up), log-percent (+9.53 = ×1.10)",
               "adds no parameters": "parameters RoPE adds (exact)"}
    c19 = row("C19", "inconclusive", [part(name, "inconclusive", 0.3, -0.2, 0.8, the_rule=rule(
        metric=metric)) for name, metric in metrics.items()], "blocklab suite placement")
    fig = _drawn_figure(monkeypatch, figures.fig_forest, {"ledger": [c19]}, "C19")
    assert fig._suptitle.get_text() == "C19"  # no unit holds for every row
    labels = [ax.get_yticklabels()[0].get_text() for ax in fig.axes[:len(metrics)]]
    assert labels == ["1. trains without warmup (nats)", "2. stable without warmup (doublings)",
                      "3. gradients vanish (log2 ratio)", "4. prefill share (%)",
                      "5. speeds prefill (log-%)", "6. adds no parameters"]
    c19["parts"] = c19["parts"][3:4] * 2
    fig = _drawn_figure(monkeypatch, figures.fig_forest, {"ledger": [c19]}, "C19")
    assert fig._suptitle.get_text() == "C19 (unit: %)"


@pytest.fixture(scope="module")
def drawn(tiny_report):
    """{figure key: matplotlib figure} of every figure of the tiny report, not rasterized."""
    found = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(figures, "_png", lambda fig: found.append(fig) or b"png")
        made = figures.make_figures(tiny_report[1])
    assert {key: f.error for key, f in made.items() if f.error} == {}
    return dict(zip(made, found, strict=True))  # each drawn figure rasterized once, in order


def _has_data(ax) -> bool:
    return (any(line.get_transform() == ax.transData and len(line.get_xdata())
                for line in ax.get_lines())
            or any(isinstance(c, Collection) and len(c.get_paths()) for c in ax.collections)
            or any(isinstance(p, Rectangle) and p.get_transform() == ax.transData
                   for p in ax.patches)
            or any(isinstance(i, AxesImage) for i in ax.images))


def test_no_figure_draws_an_empty_panel_and_norm_cost_draws_the_kernels_timed(monkeypatch,
                                                                            tiny_report, drawn):
    """Every panel of every figure of the tiny report draws data or says in words why it
    has none (a twin axis drawn over a panel is part of it)."""
    for key, fig in drawn.items():
        for ax in fig.axes:
            if not ax.get_visible():
                continue
            panel = [a for a in fig.axes if a.get_position().bounds == ax.get_position().bounds]
            assert any(_has_data(a) or a.texts for a in panel), (key, ax.get_title())
    # at --size tiny no kernel is timed: the norm-cost figure is the training step's panel
    # alone, which says where the per-kernel timings run; its kernel panels where they were
    [step] = _drawn_figure(monkeypatch, figures.fig_norm_cost, tiny_report[1]).axes
    assert step.get_title() == ("whole training step\n(per-kernel timings: run at --size "
                                "full only)")
    doc = copy.deepcopy(tiny_report[1])
    time = {"ratio": 0.9, "ci_low": 0.85, "ci_high": 0.95, "repeats": 5}
    doc["suites"]["norm-cost"]["summary"]["data"]["ratios"] = [
        {"d": d, "rows": 64, "threads": 1, "impl": "rmsnorm:lean",
         "layernorm_impl": "layernorm:torch", "pass_name": pass_name, "time": time}
        for d in (256, 1024) for pass_name in ("fwd", "fwdbwd")]
    fig = _drawn_figure(monkeypatch, figures.fig_norm_cost, doc)
    assert [ax.get_title() for ax in fig.axes] == ["forward (no grad)", "forward + backward",
                                                   "whole training step"]
    assert all(_has_data(ax) for ax in fig.axes)


def test_the_rope_error_figure_draws_the_dtypes_its_data_holds(monkeypatch, tiny_report):
    def dtypes(fig) -> list[list[str]]:
        return [[line.get_label() for line in ax.get_lines()] for ax in fig.axes]

    doc = copy.deepcopy(tiny_report[1])
    data = doc["suites"]["position"]["summary"]["data"]
    data["relative_error"] = data["relative_error_blocklab"] = {}  # run at --size full only
    fig = _drawn_figure(monkeypatch, figures.fig_rope_relative_error, doc)
    assert dtypes(fig) == [["float64"]]
    assert "float64 only" in fig.axes[0].texts[0].get_text()
    data["relative_error"] = {"float32": [[1, 1e-7], [100, 1e-5]],
                              "bfloat16": [[1, 1e-2], [100, None]]}
    data["relative_error_blocklab"] = {"bfloat16": [[1, 1e-3], [100, 1e-3]]}
    fig = _drawn_figure(monkeypatch, figures.fig_rope_relative_error, doc)
    assert dtypes(fig) == [["float32", "bfloat16", "bfloat16: NaN/inf"], ["bfloat16"]]
    assert not fig.axes[0].texts
    # a dtype wears one colour in both panels
    assert fig.axes[0].get_lines()[1].get_color() == fig.axes[1].get_lines()[0].get_color()


# Every arm a figure draws wears its palette colour. SHOWN_AS: the legend words a figure gives an
# arm instead of its name.
SHOWN_AS = {**{name: arm for arm, (name, _) in figures.WIDTH_ARMS.items()},
            "plain RoPE": "rope", "NTK": "ntk", "YaRN": "yarn"}


def _colours(artist) -> list[str]:
    if isinstance(artist, Line2D):
        found = [artist.get_color(), artist.get_markerfacecolor(),
                 artist.get_markeredgecolor()]
    elif isinstance(artist, Patch):
        found = [artist.get_facecolor(), artist.get_edgecolor()]
    elif isinstance(artist, Collection):
        found = [*artist.get_facecolors(), *artist.get_edgecolors()]
    else:
        found = [artist.get_color()]
    return [to_hex(c) for c in found if not isinstance(c, str) or c not in ("none", "auto")]


def _arm(name: str) -> str | None:
    """The arm a legend entry or tick label names (its first line, before a comma)."""
    name = SHOWN_AS.get(name, name.split("\n")[0].split(",")[0].strip())
    try:
        arm_colour(name)
    except KeyError:
        return None
    return name


def _arm_artists(ax):
    """(arm, colour) of each artist an axis draws for an arm: a line or marker labelled with
    it, and on a categorical axis a marker or bar on the tick that names it."""
    for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
        arm = _arm(label)
        if arm is not None:  # a line, or the data line of an error bar
            yield arm, to_hex((handle[0] if isinstance(handle, Container) else handle)
                              .get_color())
    ticks = {float(x): _arm(label.get_text()) for x, label in zip(
        ax.get_xticks(), ax.get_xticklabels(), strict=True)}
    if not any(ticks.values()):
        return
    for line in ax.get_lines():
        xs = set(map(float, line.get_xdata()))
        if len(xs) == 1 and ticks.get(xs.pop()) and to_hex(line.get_color()) != "#000000":
            yield ticks[float(line.get_xdata()[0])], to_hex(line.get_color())
    for bar in ax.patches:
        if isinstance(bar, Rectangle) and ticks.get(bar.get_x() + bar.get_width() / 2):
            yield ticks[bar.get_x() + bar.get_width() / 2], to_hex(bar.get_facecolor())


def test_every_arm_a_figure_draws_wears_its_palette_colour_and_red_is_refuteds_alone(drawn):
    seen: dict[str, set[str]] = {}
    for key, fig in drawn.items():
        for artist in fig.findobj(lambda a: isinstance(a, Line2D | Patch | Collection)):
            red = {c for c in _colours(artist) if is_red(c)}
            assert red <= {REFUTED}, (key, artist, red)
        for ax in fig.axes:
            for arm, colour in _arm_artists(ax):
                assert colour == arm_colour(arm), (key, arm, colour)
                seen.setdefault(arm, set()).add(key)
    assert {"ffn_variants", "ffn_loss_curves"} <= seen["relu"]
    assert {"placement_training", "placement_gradients", "placement_deep"} <= seen["pre"]
    assert {"position_extrapolation", "position_order", "position_scaling"} <= seen["rope"]
    assert {"ordinary", "nested", "narrow"} <= set(seen)
    # the budget's plain and gated FFN lines (drawn by budget.sweep) match the palette's too
    sweep = {line.get_label(): to_hex(line.get_color())
             for line in drawn["ffn_budget"].axes[0].get_lines()}
    assert sweep["plain params"] == ARM_COLOURS["plain"]
    assert sweep["gated params"] == ARM_COLOURS["gated"]


def test_an_interval_of_one_seed_is_drawn_as_a_bare_point():
    # One seed has a mean and no interval: the point is plotted in the caller's format.
    fig, ax = plt.subplots()
    figures._errorbar(ax, 1.0, Interval(n=1, mean=2.5), fmt="s", color="black", capsize=4)
    [line] = ax.get_lines()
    assert (line.get_xdata()[0], line.get_ydata()[0], line.get_marker()) == (1.0, 2.5, "s")
    plt.close(fig)
