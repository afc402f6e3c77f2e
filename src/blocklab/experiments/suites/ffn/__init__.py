"""`ffn` suite: plain vs gated FFNs at equal parameter count (claims C16, C17).

Seven arms share everything except the FFN of every layer:

    plain  relu, gelu                              y = W_d φ(W_u x)           d_ff = 4·d
    gated  glu, reglu, geglu, swiglu, bilinear     y = W_d (φ(W_g x) ⊙ W_u x)  d_ff = ⌈2·4d/3⌉

so every arm holds (within 3·d weights a layer) the same 2·d·4d FFN weights. Arms with the same
seed start from the same shared weights and see the same batches, so differences (arm − relu;
negative is better) are paired by seed. Weights start from the `fan_in` init (gpt2's fixed 0.02
leaves GELU and SiLU nearly linear at small width) and each arm trains at its own tuned lr
(`suites.tuning`). Full only: sensitivity re-runs of relu, gelu and swiglu at the old settings
(gpt2 init, one shared lr), a scale trend of relu and swiglu at other widths, and a timing run.

C17 (zero grads): in every training run, at init and after training, the fraction of the FFN
activation's inputs whose loss gradient is exactly 0 (ReLU zeroes every negative input).

Equal wall-clock: arm a's curve on the time axis t = step · ms_a, read at T* (the fastest arm's
time for all its steps) by linear interpolation, i.e. at step `steps · ms_fastest / ms_a`; slower
arms are read before their cosine decay ends, which favours the fastest somewhat.

A run counts when its status is "ok" and it ends below the unigram entropy of the training bytes.
"""

from __future__ import annotations

from blocklab.experiments.ladder import RUNGS
from blocklab.experiments.suites.base import Suite
from blocklab.experiments.suites.ffn import runs, summary

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
