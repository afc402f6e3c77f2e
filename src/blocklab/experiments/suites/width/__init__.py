"""`width` suite: the FFN's width as a control point, sliced against nested-width training (C37).

Page 000's note: MoSE trains nested widths, so the FFN's width can be a control point of
conditional computation; slicing an ordinary model's width is not that. Three arms of the ffn
suite's SwiGLU decoder (m = d_ff):

    ordinary  (a)  trained at m; read at m, m/2 and m/4 by keeping the first k channels
    nested    (b)  each step's loss the mean over m, m/2, m/4 (`TrainConfig.nested_widths`)
    narrow    (c)  trained at m/2 alone: the model a nested m/2 should approach

Width k keeps the first k rows of gate_proj and up_proj and columns of down_proj
(`blocklab.nn.narrowed`), so it costs what a width-k model costs (`blocklab.budget`). Every arm
trains at the lr tuned on the ordinary arm (nested methods reuse their baseline's); contrasts
are paired by seed.
"""

from __future__ import annotations

from blocklab.experiments.suites.base import Suite
from blocklab.experiments.suites.width import runs, summary

METRIC_VERSION = ("2026-12-02: C37's % contrasts of the final validation loss at prefix widths "
                  "m, m/2, m/4, paired by seed")
SUITE = Suite("width", "the FFN's width as a control point: sliced vs nested-width training "
              "(C37)", runs.plan, summary.summarise, summary.WidthData, section="ffn",
              heading=("FFN width as a control point (width suite)",
                       "FFN 宽度作为控制点（width 实验）"),
              figures=("width_control",), scale=runs.scale, shape=runs.shape,
              metric_version=METRIC_VERSION,
              # C37's registered rules read six paired seeds first, eight at full
              # (blocklab.claims.registry.c37_rules).
              default_seeds={"tiny": 1, "quick": 6, "full": 8}, tune=runs.tune,
              precisions=("fp32", "bf16"), price=runs.price)
