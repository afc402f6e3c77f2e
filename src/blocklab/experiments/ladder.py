"""The ladder of model sizes a headline claim is measured on: each rung the same registered
comparison at 4× the training compute of the rung below, so a verdict reached on a toy model
can be read against the trend it sits on (`blocklab.claims.ladder` fits it).

    RUNGS                 # ("rung1", "rung2", "rung3"): 4×, 16× and 64× the quick size
    multiple("rung2")     # 16: training compute over the quick size's (1 for "quick")
    width(64, 16, 16)     # 128: the quick width grown ×√2 per rung, on the 16-wide heads

The rule (one for every ladder; the suite applies it to its quick size): each rung doubles
the parameters and the training tokens, so 4× the compute (6 · parameters · tokens). The
parameters grow by width alone: d_model × √2 a rung, rounded to a whole number of the quick
size's heads' width, at the quick size's depth; the training tokens are then chosen so that
the rung's compute is exactly `multiple` × the quick size's (tokens ≈ ∝ parameters, since the
parameters only roughly double after rounding). They are split between the batch and the
steps: the batch grows × 2^(1/2) a rung (× 4^(1/4)), the steps take the rest. What else a
rung holds is fixed by rule: every length in steps (warmup, evaluation interval) keeps its
share of the steps, each tuned arm's lr grid is the quick size's moved by the width ratio
(`centred`), refined around its optimum and tuned on the quick size's tuning seeds, and one
precision serves every rung of a ladder.

Why the depth is held: C16 swaps the FFN at equal parameters, and at a fixed depth every
rung's FFN holds the same share of the block's parameters, so the trend reads width and
tokens alone; at fixed parameters the loss depends little on the depth–width split over a
wide range of shapes (Kaplan et al. 2020, "Scaling Laws for Neural Language Models", §3.1
and Figure 5: a few % across a wide range of aspect ratios d_model / depth; the rungs' run
32–88). No PyTorch here.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from blocklab.errors import InputError

BASE = "quick"  # the rung 0 of every ladder
RUNGS = ("rung1", "rung2", "rung3")
_MULTIPLE = {BASE: 1, **{name: 4 ** (k + 1) for k, name in enumerate(RUNGS)}}


def multiple(size: str) -> int:
    """Training compute of `size` over the quick size's: 1, 4, 16, 64."""
    if size not in _MULTIPLE:
        raise InputError(f"ladder rung {size!r} is not allowed; expected one of "
                         f"{list(_MULTIPLE)}")
    return _MULTIPLE[size]


def steps_up(size: str) -> int:
    """The rung's index: 0 for quick, k for rung k (each 4× the one below)."""
    return round(math.log(multiple(size), 4))


def width(base_width: int, times: int, head_width: int) -> int:
    """d_model at `times` × the base's compute: base_width × times^(1/4) (×√2 a rung, so the
    parameters double), rounded to a whole number of heads of `head_width`."""
    return max(1, round(base_width * times ** 0.25 / head_width)) * head_width


def batch(base_batch: int, times: int) -> int:
    """The batch at `times` × the base's compute: × times^(1/4) (×√2 a rung), rounded."""
    return max(1, round(base_batch * times ** 0.25))


def steps(base_params: int, base_tokens: int, params: int, times: int,
          tokens_per_step: int) -> int:
    """Steps that make 6 · params · tokens `times` × the base's 6 · base_params ·
    base_tokens, rounded to a whole step."""
    return max(1, round(times * base_params * base_tokens / (params * tokens_per_step)))


def centred(lrs: tuple[float, ...], base_width: int, width: int) -> tuple[float, ...]:
    """An lr grid moved by the width ratio base_width / width: Adam's best and largest stable
    lr for the hidden weights scale as 1 / width (Yang et al. 2022, "Tensor Programs V",
    Table 3), so a rung's grid starts where its optimum is expected and grows at an edge only
    where that guess is off. Each point rounded as the suites round rates."""
    from blocklab.experiments.suites.tuning import rounded

    return tuple(rounded(lr * base_width / width) for lr in lrs)


def grown(size: str, d_model: int, batch_size: int, base_steps: int, head_width: int,
          params: Callable[[int], int], window: int) -> tuple[int, int, int]:
    """(d_model, batch, steps) of the quick shape (`d_model`, `batch_size`, `base_steps` of
    `window`-token sequences, heads `head_width` wide) grown to rung `size` by the rule:
    width and batch × times^(1/4), steps filling `multiple(size)` × the quick compute, where
    `params(d)` is the exact parameter count of the suite's model at width d."""
    times = multiple(size)
    d = width(d_model, times, head_width)
    b = batch(batch_size, times)
    n = steps(params(d_model), base_steps * batch_size * window, params(d), times, b * window)
    return d, b, n
