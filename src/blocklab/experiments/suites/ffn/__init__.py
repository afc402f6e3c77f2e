"""`ffn` suite: plain vs gated FFNs at equal parameter count (claims C16, C17).

Seven arms share everything except the FFN of every layer:

    plain  relu, gelu                              y = W_d φ(W_u x)           d_ff = 4·d
    gated  glu, reglu, geglu, swiglu, bilinear     y = W_d (φ(W_g x) ⊙ W_u x)  d_ff = ⌈2·4d/3⌉

so every arm holds (within 3·d weights a layer) the same 2·d·4d FFN weights
(`blocklab.nn.ffn.equal_param_gated_width`). Each arm × seed is one trainer run on the default
`stdlib` corpus with the same optimiser, schedule and token budget; arms with the same seed
start from the same embeddings and attention weights and see the same batches in the same order
(the trainer draws every parameter from its own (seed, name) stream and batches from (seed,
step)), so differences are paired by seed.

Fair arms. Weights start from the `fan_in` init (std 1/√fan_in: unit-variance pre-activations,
where GELU and SiLU are curved; gpt2's fixed 0.02 leaves them nearly linear at small width).
Each arm trains at its own learning rate, tuned on seeds of its own (`suites.tuning`: the grid
grows at an edge until its best is interior; at --size quick ×3 steps on two tuning seeds,
refined at ×√3 around the best, so a half-step miss does not put lr bias into a gap to ReLU).
Sensitivity: relu, gelu and swiglu run again at the old settings (gpt2 init, one shared lr).
Scale trend: relu and swiglu are also tuned and trained at other widths.

What each size runs (`suites.evaluation`): tiny and quick tune and train only what C16 grades
(relu, glu, geglu, swiglu at their own width); the other arms, the sensitivity re-runs, the
trend widths and the timing run run at --size full only, and the summary names them.

Two extra measurements ride along:

    timing      one run, not per seed: every arm's optimizer step timed round-robin (the arms
                interleaved, so load from other processes falls on all of them alike); the
                median ms/step sets the equal-wall-clock comparison below.
    zero grads  (C17) in every training run, at initialisation and after training, on fixed
                validation windows: the fraction of the FFN activation's inputs (the gate branch
                of a gated FFN, the up branch of a plain one) whose loss gradient is exactly 0.
                ReLU zeroes it for every negative input; SiLU, GELU and sigmoid do not.

Equal wall-clock: arm a's validation curve is put on a time axis t = step · ms_a (ms_a its
timed ms/step). T* is the time at which the fastest arm finishes its steps; every run's curve
is interpolated linearly at T*, i.e. at step `steps · ms_fastest / ms_a`. Slower arms are read
mid-schedule, before their cosine decay has ended, which favours the fastest arm somewhat: a
run given only T* from the start would decay earlier and end a little lower.

A run counts towards the statistics when its status is "ok" and its final validation loss is
below the unigram entropy of the training bytes (the loss of the best context-free model).

`Summary.data` is a `summary.FfnData`; deltas are arm − relu, so negative is better. Modules:
`runs` (sizes, models, what a run measures, the plan) and `summary` (statistics, tables).
"""

from __future__ import annotations

from blocklab.experiments.ladder import RUNGS
from blocklab.experiments.suites.base import Suite
from blocklab.experiments.suites.ffn import runs, summary

# How its runs become the metrics the registered rules read (`Suite.metric_version`).
METRIC_VERSION = ("2026-12-02: C16's % gain over ReLU of the final validation loss at each arm's "
                  "tuned lr, paired by seed")
SUITE = Suite("ffn", "plain vs gated FFNs at equal parameter count (C16, C17)", runs.plan,
              summary.summarise, summary.FfnData, section="ffn",
              heading=("Variants at equal parameter count (ffn suite)",
                       "等参数量下的 FFN 变体（ffn 实验）"),
              figures=("ffn_variants", "ffn_loss_curves", "scale_trend"),
              # C16's registered rule needs five paired seeds (blocklab.claims.ffn).
              scale=runs.scale, shape=runs.shape, metric_version=METRIC_VERSION,
              default_seeds={"tiny": 1, "quick": 5, "full": 8,
                             **dict.fromkeys(RUNGS, runs.RUNG_SEEDS)},
              tune=runs.tune,
              precisions=("fp32", "bf16"), price=runs.price, longer=runs.longer)
