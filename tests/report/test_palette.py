"""One colour per verdict and per arm (`blocklab.report.palette`): no two verdicts share a
colour, red is refuted's alone, and each arm of a family has its own; that the figures draw
them so is checked in test_figures."""

import colorsys

import pytest
from matplotlib.colors import to_rgb

from blocklab.config import FFNS, NORMS, PLACEMENTS, POSITIONS, ROPE_SCALING_TYPES
from blocklab.report import figures
from blocklab.report.palette import (
    ARM_COLOURS,
    CLAIM_SHADE,
    SERIES_COLOURS,
    VERDICT_STYLES,
    arm_colour,
)

REFUTED = VERDICT_STYLES["refuted"].colour


def is_red(colour) -> bool:
    """A saturated colour within 15° of pure red."""
    hue, saturation, value = colorsys.rgb_to_hsv(*to_rgb(colour))
    return min(hue, 1 - hue) * 360 <= 15 and saturation >= 0.5 and value >= 0.35


def test_no_two_verdicts_or_arms_of_a_figure_share_a_colour_and_red_is_refuteds():
    colours = [style.colour for style in VERDICT_STYLES.values()]
    assert len(set(colours)) == len(colours)
    assert is_red(REFUTED)
    others = [*colours, *ARM_COLOURS.values(), *SERIES_COLOURS, CLAIM_SHADE,
              figures.EFFECT_COLOUR]
    assert [c for c in others if is_red(c) and c != REFUTED] == []
    assert CLAIM_SHADE not in colours
    # every arm the suites name has a colour, distinct within the figures that draw it
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
