"""`position`: train at length L, read at 1×, 2×, … 16× L: every position scheme, RoPE scaling.

Arms, all the same model except for how it learns positions (C21):

    none              no position signal (NoPE; causal masking alone orders tokens)
    learned           learned absolute table with L rows: cannot run past L, recorded, not
                      crashed
    learned-8L        learned table with (max multiple)·L rows, trained at L, so rows >= L only
                      ever see weight decay
    sinusoidal        fixed sin/cos table added to the embeddings
    sinusoidal+scale  the same with token embeddings × sqrt(d_model), the original
                      Transformer's recipe (Vaswani et al. 2017, §3.4): without it the
                      unit-amplitude table swamps N(0, 0.02²) embeddings and the arm trains
                      worse even within L
    rope              rotary q/k (theta 10,000), rotary table sized L and extended on demand
    alibi             linear distance bias on the attention scores

Each arm trains with `trainer.train` on stdlib windows of L tokens. Its model is then scored on
fixed validation windows of m·L tokens, m in the size's multiples:

    loss_beyond_L   mean loss at the positions p >= L of each window (`loss_beyond`): the
                    tokens the model reads at positions it never trained on (m >= 2)
    sliding         the same tokens scored with sliding windows of L (stride L/2), so no
                    position >= L is ever used: what the model gets without extrapolating
    per_position    the loss curve over positions, in buckets of L/8

Entry p of a per-position curve is the loss of predicting token p + 1 from tokens 0..p.

The trained RoPE model is also read with scaling applied at inference, training-free (same
weights, `config.replace(rope_scaling=...)`, factor m = eval length / L, original length L):
linear (position interpolation), ntk, dynamic, yarn with the paper's β and yarn with β re-derived
for our L (`yarn_betas`). It is also fine-tuned briefly at a longer length with each scaling
of the size's `finetune` (as the papers do; plain RoPE with the same fine-tune is the control)
and read again (C22, C30).

Two checks need no training: `rope_relative_error` measures |score(m, n) − score(m+s, n+s)| in
float64, float32, bfloat16 and float16 (C20), and every trained model is run at positions far
past its max_seq_len to see that outputs stay finite (C26). The passkey test (full size) trains a
separate passkey model per arm at L and scores retrieval by length and depth.

Order without positions (C29): every trained arm's next-token distribution after a validation
prefix is compared with the one after the same prefix with its first k − 1 tokens reversed and
its last token kept (`order_probe`, total-variation distance and KL). Cost (C31): one timed run
(alone, one thread) builds the none, rope and alibi models and interleaves their training steps
and KV-cache decode steps, counts parameters with `blocklab.budget`, and names the SDPA kernel
PyTorch dispatches for each (profiler op names) and the mask attention.py hands it.

`Summary.data` is a `summary.PositionData` (multiples m of L are string keys "2", "4", ...; a
read a learned table cannot make is the string "unavailable (table)"). Arm names: the seven
above, "rope+<scaling>" for training-free scaling, "rope[+<scaling>]+ft<k>x" fine-tuned.

What each size runs (`suites.evaluation`): tiny and quick train what C21, C29 and C30 grade
(none, learned-<max>L, sinusoidal+scale, rope, alibi) and time C31's cost run; `REPORTED_ONLY`
arms, the passkey models and the relative-error run are --size full only. Reads made inside a
graded run (the scalings, the order probe, the far-out check) ride along with it. Modules:
`timing` (SDPA probes, realistic-shape timing), `runs` (sizes, runs, plan, prices) and `summary`
(`PositionData`, statistics, tables); each imports only the ones before it.
"""

from __future__ import annotations

from blocklab.experiments.ladder import RUNGS
from blocklab.experiments.suites.base import Suite
from blocklab.experiments.suites.position.runs import plan, price, scale, shape, tune
from blocklab.experiments.suites.position.summary import PositionData, summarise

# How its runs become the metrics the registered rules read (`Suite.metric_version`).
METRIC_VERSION = ("2026-12-02: loss past L against sliding windows of L on the same validation "
                  "windows, % per seed; order probe TV and loss against the unigram entropy")
SUITE = Suite(
    name="position",
    description="Train at L, read at 1×..16× L: every position scheme and RoPE scaling; order "
                "without positions; position cost (C20–C22, C26, C29–C31)",
    plan=plan,
    summarise=summarise,
    data_type=PositionData,
    section="position",
    heading=("Length extrapolation (position suite)", "长度外推（position 实验）"),
    # C29–C31's figures (position_order, position_scaling, position_cost) sit with their claims.
    figures=("position_extrapolation", "passkey"),
    scale=scale, shape=shape, metric_version=METRIC_VERSION,
    default_seeds={"tiny": 1, "quick": 4, "full": 4, **dict.fromkeys(RUNGS, 4)},
    tune=tune,
    precisions=("fp32", "bf16"),
    price=price,
)
