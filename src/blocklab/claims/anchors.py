"""Published results beside the claims, each at the scale it was measured at.

`anchors.json` holds, per source, the claims it bears on, the model and training, the metric and
the result; one reading per claim says how the paper and the page differ.

    anchors("C16")[0].source         # 'Shazeer 2020, "GLU Variants Improve Transformer", ...'
    anchors("C16")[0].flops          # 4.5e19: 6 · 220M parameters · 34.4B tokens
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from functools import cache
from importlib import resources

from blocklab.experiments.scale import flops_text


@dataclass(frozen=True)
class Anchor:
    claims: tuple[str, ...]
    source: str
    secondary: bool
    model: str
    params: int | None
    tokens: int | None
    setting: str
    metric: str
    result: str
    # The result per compared arm, in % of the baseline's metric (C16: {"swiglu": -2.4, ...}),
    # where the source gives one: what a ladder's figure draws.
    effects: Mapping[str, float] = field(default_factory=dict)

    @property
    def flops(self) -> float | None:
        """Training compute 6 · params · tokens, where the source gives both."""
        if self.params is None or self.tokens is None:
            return None
        return 6.0 * self.params * self.tokens

    def scale_text(self) -> str:
        """"220M parameters, 34.4B tokens, 4.5·10^19 FLOPs", as far as the source gives it."""
        bits = []
        if self.params is not None:
            bits.append(f"{self.params / 1e6:.3g}M parameters")
        if self.tokens is not None:
            bits.append(f"{self.tokens / 1e9:.3g}B tokens")
        if self.flops is not None:
            bits.append(f"{flops_text(self.flops)} FLOPs")
        return ", ".join(bits)

    def to_dict(self) -> dict:
        return {**asdict(self), "flops": self.flops, "scale": self.scale_text()}


def short_source(source: str) -> str:
    """A source's name: its text up to the first comma outside parentheses."""
    depth = 0
    for k, char in enumerate(source):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            return source[:k]
    return source


@cache
def _data() -> tuple[tuple[Anchor, ...], dict[str, str]]:
    raw = json.loads(resources.files("blocklab.claims").joinpath("anchors.json").read_text(
        encoding="utf-8"))
    rows = tuple(Anchor(**{**row, "claims": tuple(row["claims"])}) for row in raw["anchors"])
    return rows, dict(raw["readings"])


def anchors(claim_id: str) -> list[Anchor]:
    """The published results bearing on `claim_id`, in the file's order ([] when none)."""
    return [a for a in _data()[0] if claim_id in a.claims]


def reading(claim_id: str) -> str | None:
    """How the published results and the page's statement relate, for `claim_id`."""
    return _data()[1].get(claim_id)
