"""`placement` suite: pre vs post vs sandwich norm at initialisation, in training at each arm's
tuned lr, and at the largest lr each trains stably (C12, C13, C19, C36).

    pre:       y = x + F(N(x))         post:  y = N(x + F(x))         sandwich:  y = x + P(F(N(x)))

(a) At initialisation, per placement × init (gpt2, xavier, depth) × depth L × seed, one forward
and backward pass: each layer's ‖∇W_down‖, the residual stream's RMS, its sensitivity
‖∂L/∂x_l‖·rms(x_l) (which no global rescaling of the stream moves, C12) and at the deepest L each
block's ‖J_l − I‖_F/√n (C36). Xiong et al. 2020 (Theorems 1–2, Xavier init) predict the slope of
log ‖∇W_down‖ of the last layer on log L: 0 post-LN, −0.5 pre-LN (the stream grows as √L and the
final norm divides by it); gpt2 init shrinks residual outputs by 1/√(2L), so it is measured beside.

(b) Training: placement × depth × warmup × seed, xavier init, clipping off (it would hide the
failure studied), each arm at its own tuned peak lr (`suites.tuning`), compared with pre-norm
paired by seed; the warmup effect is the interaction (post cold − post warm) − (pre cold − pre
warm). Warmup spends less lr (Σ lr, shown per arm): a confound shown, not removed.

Largest stable lr (C13, C19 at (b)'s deepest depth; (c) C36's stacks of 50+ layers): per arm and
seed, a doubling ladder of peak lrs bisected (stability taken as monotone in lr); a run is stable
when it finishes below the unigram entropy. Contrasts in doublings, paired by seed.

Tiny and quick plan what C13, C19 and C36 read; the depth trend and sandwich norm are --size
full only; (a) keeps every placement (the comparison C12's and C19's texts read).
"""

from __future__ import annotations

from blocklab.experiments.ladder import RUNGS
from blocklab.experiments.suites.base import Suite
from blocklab.experiments.suites.placement import runs, summary

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
