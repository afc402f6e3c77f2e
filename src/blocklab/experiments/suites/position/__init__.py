"""`position`: train at length L, read at 1×, 2×, … 16× L: every position scheme, RoPE scaling.

Arms, the same model but for how it learns positions (C21):

    none              no position signal (NoPE; causal masking alone orders tokens)
    learned           learned absolute table with L rows: cannot run past L (recorded)
    learned-8L        a table of (max multiple)·L rows, trained at L
    sinusoidal        fixed sin/cos table added to the embeddings
    sinusoidal+scale  the same with token embeddings × sqrt(d_model) (Vaswani et al. 2017,
                      §3.4): without it the unit-amplitude table swamps N(0, 0.02²) embeddings
    rope              rotary q/k (theta 10,000)
    alibi             linear distance bias on the attention scores

Each trained model is read on validation windows of m·L tokens: `loss_beyond_L`, the mean loss
at positions p >= L (the positions never trained on), against `sliding`, the same tokens read in
windows of L (stride L/2), and the per-position curve. The RoPE model is also read with
training-free scaling (factor m = eval length / L) and after a brief fine-tune with each scaling
(C22, C30). No training: RoPE's relative-position error by dtype (C20) and finite logits far
past max_seq_len (C26). Order (C29): the next-token distribution after a prefix against the one
after it with its first k − 1 tokens reversed (`order_probe`). Cost (C31): one timed run of the
none, rope and alibi models (steps, decode, parameters, SDPA kernels and masks).

Multiples m are string keys ("2", "4", ...); a read a learned table cannot make is the string
"unavailable (table)". Tiny and quick train what C21, C29 and C30 grade and time C31; the
`REPORTED_ONLY` arms, the passkey models and the relative-error run are --size full only.
"""

from __future__ import annotations

from blocklab.experiments.ladder import RUNGS
from blocklab.experiments.suites.base import Suite
from blocklab.experiments.suites.position.runs import plan, price, scale, shape, tune
from blocklab.experiments.suites.position.summary import PositionData, summarise

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
