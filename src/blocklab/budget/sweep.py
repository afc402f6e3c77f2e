"""Page 000's practice task: plain vs gated FFN budgets, varying exactly one of B, T, d, m.

The other three stay at the page's values (d=512, m=2048, B=2, T=1024). Each row holds, for a
bias-free plain and gated FFN at the same width m, the matrix parameters (2·d·m and 3·d·m) and the
intermediate activation elements (one [B, T, m] branch plain, two gated), all from
`blocklab.reference.ffn_budget`. Parameters move with d and m only; activations with B, T and m.
"""

from __future__ import annotations

import os
from pathlib import Path

from blocklab.errors import InputError
from blocklab.jsonio import atomic_path
from blocklab.reference.ffn import ffn_budget

PAGE_BASE = {"batch": 2, "seq_len": 1024, "d": 512, "m": 2048}
SWEEP_FACTORS = (0.25, 0.5, 1, 2, 4)
SWEEP_LABELS = {"batch": "B (batch)", "seq_len": "T (sequence length)", "d": "d (d_model)",
                "m": "m (d_ff)"}


def sweep(base: dict[str, int] | None = None,
          factors: tuple[float, ...] = SWEEP_FACTORS) -> list[dict]:
    """One row per (varied quantity, value); the other quantities stay at `base`."""
    base = {**PAGE_BASE, **(base or {})}
    rows = []
    for vary in ("batch", "seq_len", "d", "m"):
        # Scaled values below 1 are clamped to 1 and repeats dropped (B=2 · 1/4 is not a batch).
        values = dict.fromkeys(max(1, int(base[vary] * f)) for f in factors)
        for value in values:
            sizes = {**base, vary: value}
            plain = ffn_budget(sizes["d"], sizes["m"], sizes["batch"], sizes["seq_len"], False)
            gated = ffn_budget(sizes["d"], sizes["m"], sizes["batch"], sizes["seq_len"], True)
            rows.append({
                "vary": vary,
                "value": sizes[vary],
                **sizes,
                "plain_params": plain["total_params"],
                "gated_params": gated["total_params"],
                "branch_elements": plain["branch_elements"],
                "plain_intermediate": plain["intermediate_elements"],
                "gated_intermediate": gated["intermediate_elements"],
            })
    return rows


def draw_sweep(axes, rows: list[dict]) -> None:
    """Draw the four panels (vary B, T, d, m) of `sweep` rows on a 2×2 grid of matplotlib axes."""
    for ax, vary in zip(axes.flat, ("batch", "seq_len", "d", "m"), strict=True):
        part = [r for r in rows if r["vary"] == vary]
        x = [r["value"] for r in part]
        ax.plot(x, [r["plain_params"] for r in part], "o-", color="C0", label="plain params")
        ax.plot(x, [r["gated_params"] for r in part], "s-", color="C1", label="gated params")
        ax.plot(x, [r["plain_intermediate"] for r in part], "o--", color="C0",
                label="plain intermediate elements")
        ax.plot(x, [r["gated_intermediate"] for r in part], "s--", color="C1",
                label="gated intermediate elements")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xlabel(SWEEP_LABELS[vary])
        ax.set_ylabel("count")
        fixed = ", ".join(f"{k}={part[0][k]}" for k in ("batch", "seq_len", "d", "m")
                          if k != vary)
        ax.set_title(f"vary {vary} ({fixed})", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    axes.flat[0].legend(fontsize=8)


def plot_sweep(rows: list[dict], path: str | os.PathLike) -> Path:
    """Save a 2×2 figure of `rows` to `path` (format from its suffix), atomically; matplotlib is
    imported only here (Agg canvas, no pyplot state)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    path = Path(path)
    fmt = path.suffix.lstrip(".").lower()
    fig = Figure(figsize=(10, 8), layout="constrained")
    canvas = FigureCanvasAgg(fig)
    if fmt not in canvas.get_supported_filetypes():
        raise InputError(f"cannot save a plot as {path.name!r}; use one of "
                         f"{sorted(canvas.get_supported_filetypes())}")
    draw_sweep(fig.subplots(2, 2), rows)
    fig.suptitle("Plain vs gated FFN: parameters and intermediate activations")
    with atomic_path(path) as tmp:  # readers never see half a file
        fig.savefig(tmp, format=fmt)
    return path
