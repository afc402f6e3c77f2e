"""`placement` suite: pre vs post vs sandwich norm, at initialisation, in training at each arm's
best lr, and at the largest lr each trains stably (C12, C13, C19, C36).

    pre:       y = x + F(N(x))         post:  y = N(x + F(x))         sandwich:  y = x + P(F(N(x)))

Part (a), at initialisation, no training. For every placement × init (gpt2, xavier, depth) ×
depth L × seed: one forward and backward pass of the next-byte loss on fixed validation windows,
then the gradient norm of every layer's FFN output matrix (`down_proj`, Xiong et al.'s W²), the
RMS of the residual stream each layer outputs, and the stream's sensitivity ‖∂L/∂x_l‖·rms(x_l)
where it enters each layer (C12: unlike a parameter gradient, no global rescaling of the stream
moves it); at the deepest L also each block's Jacobian's distance from the identity,
‖J_l − I‖_F/√n (C36's "gradient ≈ 1"), from Gaussian-probe vector-Jacobian products
(`blocklab.experiments.jacobian`). How the last (and first) layer's gradient scales
with depth is the least-squares slope of log ‖∇W²‖ on log L. Xiong et al. 2020, "On Layer
Normalization in the Transformer Architecture" (Theorems 1–2, Xavier initialisation): for
post-LN the last layer's gradient does not depend on L (slope 0), for pre-LN it falls as
1/√L (slope −0.5), because the pre-LN residual stream grows as √L and the final norm divides
by it. GPT-2's init shrinks the residual output projections by 1/√(2L), which keeps the stream
from growing, so the prediction is for xavier; gpt2 is measured beside it.

Part (b), training. placement × depth × warmup × seed, xavier init, gradient clipping OFF
(clipping would hide the failure being studied), otherwise the trainer's defaults. Each
(placement, depth, warmup) arm trains at its own peak lr, tuned on seeds of its own
(`suites.tuning`; at --size quick ×3 steps on two tuning seeds, refined around the best).
Outcomes are continuous: the final validation loss, the mean validation loss over the run and,
from the per-layer gradient norms the trainer logs, log2 of the first layer's gradient norm over
the last layer's. A run that diverges (NaN/inf or a loss above 4·ln 256) is counted as a
failure, apart from the losses. Post and sandwich cells are compared with the pre cell of the
same depth and warmup, paired by seed (same init streams and batches), and the warmup effect is
read as an interaction: (post cold − post warm) − (pre cold − pre warm), per seed, with its
interval. A warmup spends less learning rate (Σ lr over the steps, shown per arm): that confound
is shown, not removed.

Largest stable lr (C13, C19 at part (b)'s deepest depth; part (c), C36's deep stacks of 50
layers and more). Stability's natural outcome: per arm and seed, short runs on a doubling ladder
of peak lrs (`Sweep`), bisected, taking stability as monotone in lr; a run is stable when it
finishes and ends below the unigram entropy of the training bytes (a post-norm stack that
stalls at the byte-frequency model has stopped training). The contrasts are paired by seed in
doublings: without − with warmup for pre-norm, the warmup interaction, and pre − post. These
sweeps replace the deep grid of losses at one shared lr that C36 was once graded on.

What each size runs (`suites.evaluation`): tiny and quick plan what C13 and C19 read (part (b)
at its deepest depth, pre and post, with and without warmup, and that depth's sweep) and C36's
deep sweep; the depth trend and sandwich norm run at --size full only. The probes of (a) keep
every placement at every size (C12 grades the pre-norm ones; the others, about 57 s of one
core together at quick, are the comparison C12's and C19's texts and the figure read).

`Summary.data` is a `summary.PlacementData`. A probe and a largest-stable-lr run train no model
of their own and carry their record in `extra` (`ProbeRecord`, `StableLr`). Modules: `runs`
(grids, configs, the probe, the sweeps, plan and prices) and `summary` (`PlacementData`, every
statistic, the tables); `summary` imports `runs`, never the other way.
"""

from __future__ import annotations

from blocklab.experiments.ladder import RUNGS
from blocklab.experiments.suites.base import Suite
from blocklab.experiments.suites.placement import runs, summary

# How its runs become the metrics the registered rules read (`Suite.metric_version`).
METRIC_VERSION = ("2026-12-02: C12's log2 sensitivity spread over layers 1 … L−1; largest stable lr"
                  " on the size's ladder, read in doublings (Sweep.doublings); losses at each arm's"
                  " tuned lr, paired by seed")
SUITE = Suite("placement", "pre vs post vs sandwich norm: gradients at init and training, "
              "and deep stacks (C12, C13, C19, C36)", runs.plan, summary.summarise,
              summary.PlacementData,
              section="placement",
              heading=("Training and gradients (placement suite)", "训练与梯度（placement 实验）"),
              # The stable-lr figure (placement_deep) sits with C36's graded parts.
              figures=("placement_training", "placement_gradients"),
              # C19's and C36's registered rules need four paired seeds (blocklab.claims).
              scale=runs.scale, shape=runs.shape, metric_version=METRIC_VERSION,
              default_seeds={"tiny": 1, "quick": 4, "full": 5, **dict.fromkeys(RUNGS, 4)},
              tune=runs.tune,
              precisions=("fp32", "bf16"), price=runs.price)
