"""`width` suite: the FFN's width as a control point, sliced against nested-width training (C37).

Page 000's 2026 note: MoSE uses nested widths inside its experts, so the FFN's intermediate
width can become a control point of conditional computation, and multi-width training is part
of the method: slicing an ordinary model's width is not it. Three arms share the SwiGLU decoder
of the ffn suite (d_model d, m = d_ff) and everything else:

    ordinary  (a)  trained at m; read at m, m/2 and m/4 by keeping the first k channels
    nested    (b)  trained with nested widths: each step's loss the mean over m, m/2, m/4
                   (`TrainConfig.nested_widths`), equal tokens; read at each of them
    narrow    (c)  trained at m/2 alone: the model a nested m/2 should approach

A width k keeps the first k rows of gate_proj and up_proj and the first k columns of down_proj
in every layer (`blocklab.nn.narrowed`; `blocklab.reference.sliced_swiglu`), so a model read at
k costs what a model of width k costs: its parameters and FLOPs come from `blocklab.budget`.
Every arm trains at one learning rate, tuned on the ordinary arm on tuning seeds (nested-width
methods train with their baseline's hyperparameters; at --size quick two tuning seeds, a ×3 grid
grown at an edge and then refined at ×√3 either side of its interior best, `LrGrid.refine`);
arms with the same seed start from the same embeddings and attention weights and see the same
batches, so the contrasts are paired by seed.

`Summary.data` is a `summary.WidthData`. Modules: `runs` (arms, sizes, models, what a run
measures, the plan and its price) and `summary` (the contrasts, the tables).
"""

from __future__ import annotations

from blocklab.experiments.suites.base import Suite
from blocklab.experiments.suites.width import runs, summary

# How its runs become the metrics the registered rules read (`Suite.metric_version`).
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
