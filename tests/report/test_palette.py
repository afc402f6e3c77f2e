"""One colour per verdict and per arm, everywhere (`blocklab.report.palette`): no two verdicts
share a colour, red is refuted's alone, and every arm a figure draws wears its palette colour,
so ReLU is the same colour in every figure. The figures are drawn from every suite's stored
results at --size tiny (`tiny_runs`), their artists read back before rasterizing."""

import colorsys

import pytest
from matplotlib.collections import Collection
from matplotlib.colors import to_hex, to_rgb
from matplotlib.container import Container
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from blocklab.config import FFNS, NORMS, PLACEMENTS, POSITIONS, ROPE_SCALING_TYPES
from blocklab.experiments.options import RunRequest
from blocklab.report import figures
from blocklab.report.palette import (
    ARM_COLOURS,
    CLAIM_SHADE,
    SERIES_COLOURS,
    VERDICT_STYLES,
    arm_colour,
)

REFUTED = VERDICT_STYLES["refuted"].colour
# Legend words a figure gives an arm instead of its name
SHOWN_AS = {**{name: arm for arm, (name, _) in figures.WIDTH_ARMS.items()},
            "plain RoPE": "rope", "NTK": "ntk", "YaRN": "yarn"}


def is_red(colour) -> bool:
    """A saturated colour within 15° of pure red."""
    hue, saturation, value = colorsys.rgb_to_hsv(*to_rgb(colour))
    return min(hue, 1 - hue) * 360 <= 15 and saturation >= 0.5 and value >= 0.35


def test_no_two_verdicts_share_a_colour_and_red_is_refuteds_alone():
    colours = [style.colour for style in VERDICT_STYLES.values()]
    assert len(set(colours)) == len(colours)
    assert is_red(REFUTED)
    others = [*colours, *ARM_COLOURS.values(), *SERIES_COLOURS, CLAIM_SHADE,
              figures.EFFECT_COLOUR]
    assert [c for c in others if is_red(c) and c != REFUTED] == []
    assert CLAIM_SHADE not in colours


def test_every_arm_the_suites_name_has_a_colour_distinct_within_its_figures():
    ffns = [*FFNS, "plain", "gated"]
    positions = [*POSITIONS, *(s for s in ROPE_SCALING_TYPES if s != "default"),
                 "yarn-rescaled"]
    for family in (list(FFNS), ["plain", "gated"], list(NORMS), list(PLACEMENTS), positions,
                   list(figures.WIDTH_ARMS)):
        assert len({arm_colour(arm) for arm in family}) == len(family), family
    assert set(ffns) <= set(ARM_COLOURS)
    # a run's arm wears the colour of the scheme it is built from; a fine-tune its model's
    assert arm_colour("learned-16L") == ARM_COLOURS["learned"]
    assert arm_colour("sinusoidal+scale") == ARM_COLOURS["sinusoidal"]
    assert arm_colour("rope+ntk") == arm_colour("rope+ntk+ft4x") == ARM_COLOURS["ntk"]
    assert arm_colour("rope+ft4x") == ARM_COLOURS["rope"]
    with pytest.raises(KeyError, match="no colour for arm 'moe'"):
        arm_colour("moe")


@pytest.fixture(scope="module")
def drawn(tiny_runs):
    """{figure key: matplotlib figure} of every figure of the tiny report."""
    from blocklab.report.build import collect

    doc = collect(RunRequest(tiny_runs, "tiny"))
    found = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(figures, "_png", lambda fig: found.append(fig) or b"png")
        made = figures.make_figures(doc)
    assert {key: f.error for key, f in made.items() if f.error} == {}
    return dict(zip(made, found, strict=True))  # each drawn figure rasterized once, in order


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


def test_red_is_drawn_only_for_refuted(drawn):
    for key, fig in drawn.items():
        for artist in fig.findobj(lambda a: isinstance(a, Line2D | Patch | Collection)):
            red = {c for c in _colours(artist) if is_red(c)}
            assert red <= {REFUTED}, (key, artist, red)


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


def test_every_arm_a_figure_draws_wears_its_palette_colour(drawn):
    seen: dict[str, set[str]] = {}
    for key, fig in drawn.items():
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
