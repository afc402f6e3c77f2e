"""The report's colours and symbols, one table each, read by the HTML, the figures, the README
table and the CLI alike: a verdict looks the same wherever it stands, no two verdicts share a
colour (red is refuted's alone), and its symbol lets it read without colour. Each arm a figure
draws has one colour, the same in every figure (`arm_colour`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class VerdictStyle:
    symbol: str
    colour: str  # text, border and figure mark
    tint: str  # chip background


VERDICT_STYLES: dict[str, VerdictStyle] = {
    "confirmed": VerdictStyle("✓", "#1a7f37", "#dafbe1"),
    "conditional": VerdictStyle("◇", "#0969da", "#ddf4ff"),
    "mixed": VerdictStyle("◐", "#8250df", "#fbefff"),
    "refuted": VerdictStyle("✗", "#cf222e", "#ffebe9"),
    "contradicted-at-this-scale": VerdictStyle("↯", "#bc4c00", "#fff1e5"),
    "not-reproduced-at-this-scale": VerdictStyle("○", "#9a6700", "#fff8c5"),
    "inconclusive": VerdictStyle("?", "#6e7781", "#f6f8fa"),
    "run": VerdictStyle("▶", "#1b7c83", "#d8f5f2"),
    "untestable-here": VerdictStyle("–", "#bf3989", "#ffeff7"),
    "missing-results": VerdictStyle("…", "#424a53", "#eaeef2"),
    "error": VerdictStyle("!", "#1f2328", "#ffffff"),
}

# What a page's claim allows in a figure (its region, its boundary, the size it states): a
# neutral slate that no verdict wears, so the claim is never read as a verdict on it.
CLAIM_SHADE = "#4a6785"

# One colour per arm name, the same in every figure that draws it. Arms drawn in one figure
# differ; arms of different suites never meet in a figure and may share one. None is red.
ARM_COLOURS: dict[str, str] = {
    # FFNs (config.FFNS), and the two kinds where a figure draws the kind alone: plain and
    # gated are matplotlib's C0 and C1, the colours `budget.sweep.draw_sweep` gives them
    "plain": "#1f77b4", "gated": "#ff7f0e",
    "relu": "#1f77b4", "gelu": "#17becf", "gelu_tanh": "#0b7f8a", "silu": "#6a9fd8",
    "swiglu": "#ff7f0e", "geglu": "#2ca02c", "geglu_tanh": "#1b6e1b", "glu": "#9467bd",
    "reglu": "#bcbd22", "bilinear": "#7f7f7f",
    # norms (config.NORMS) and their placements (config.PLACEMENTS); warmup is a line style
    "rmsnorm": "#1f77b4", "layernorm": "#ff7f0e",
    "pre": "#1f77b4", "post": "#ff7f0e", "sandwich": "#2ca02c",
    # position schemes (config.POSITIONS) and RoPE's scalings (config.ROPE_SCALING_TYPES:
    # linear is position interpolation), drawn together in the position figures
    "none": "#7f7f7f", "learned": "#9467bd", "sinusoidal": "#bcbd22", "rope": "#1f77b4",
    "alibi": "#2ca02c", "linear": "#ff7f0e", "ntk": "#17becf", "dynamic": "#e377c2",
    "yarn": "#b8860b", "yarn-rescaled": "#e0b84c", "llama3": "#3949ab",
    # the width suite's arms: (a) trained at m and sliced, (b) nested, (c) trained at m/2
    "ordinary": "#1f77b4", "nested": "#ff7f0e", "narrow": "#2ca02c",
}

# Lines that are not arms (models, dtypes, implementations, phases), in order of appearance.
SERIES_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#17becf", "#e377c2", "#bcbd22",
                  "#7f7f7f")


def arm_colour(arm: str) -> str:
    """The colour of a suite's arm: its name's in `ARM_COLOURS`, else that of the scheme it is
    built from: "learned-16L" and "sinusoidal+scale" wear their scheme's, "rope+ntk" its
    scaling's, and a fine-tune ("rope+ntk+ft4x", "rope+ft4x") its model's (figures dash it).
    KeyError for an arm the table lacks: a figure must not invent one."""
    name = re.sub(r"\+ft\d+x$", "", arm)
    name = name.removeprefix("rope+")
    name = re.sub(r"-\d+L$", "", name).removesuffix("+scale")
    if name not in ARM_COLOURS:
        raise KeyError(f"no colour for arm {arm!r} in report.palette.ARM_COLOURS")
    return ARM_COLOURS[name]
