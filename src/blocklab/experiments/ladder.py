"""The ladder of model sizes a headline claim is measured on: each rung the same comparison at
`STEP` = 2× the training compute of the rung below (`blocklab.claims.ladder` reads them).

    RUNGS                 # ("rung1", "rung2", "rung3"): 2×, 4× and 8× the quick size
    multiple("rung2")     # 4: training compute over the quick size's
    width(64, 4, 16)      # 96: the quick width × 4^(1/4), on the 16-wide heads

2× rungs: four rungs give the trend two degrees of freedom at about 15× the quick compute
(4× rungs: 85×). The rule: parameters and tokens each grow × √STEP a rung: width × times^(1/4)
in whole heads at the quick depth, batch × times^(1/4), steps making 6 · params · tokens exactly
`multiple` × quick's; lengths in steps keep their share, lr grids move by the width ratio
(`centred`). The depth is held, so C16's trend reads width and tokens alone (at fixed
parameters the depth–width split matters little: Kaplan et al. 2020, §3.1). No PyTorch here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from blocklab.errors import InputError

if TYPE_CHECKING:
    from blocklab.config import ModelConfig

BASE = "quick"  # the rung 0 of every ladder
RUNGS = ("rung1", "rung2", "rung3")
STEP = 2  # training compute of a rung over the one below
_MULTIPLE = {BASE: 1, **{name: STEP ** (k + 1) for k, name in enumerate(RUNGS)}}


def multiple(size: str) -> int:
    """Training compute of `size` over the quick size's: 1, 2, 4, 8."""
    if size not in _MULTIPLE:
        raise InputError(f"ladder rung {size!r} is not allowed; expected one of "
                         f"{list(_MULTIPLE)}")
    return _MULTIPLE[size]


def rungs_above(flops: float, base_flops: float) -> float:
    """`flops` in rungs above the quick size's `base_flops`: log_STEP(flops / base)."""
    return math.log(flops / base_flops, STEP)


def width(base_width: int, times: int, head_width: int) -> int:
    """d_model at `times` × the base's compute: base_width × times^(1/4) (so the parameters
    grow × √times), rounded to a whole number of heads of `head_width`."""
    return max(1, round(base_width * times ** 0.25 / head_width)) * head_width


def batch(base_batch: int, times: int) -> int:
    """The batch at `times` × the base's compute: × times^(1/4), rounded."""
    return max(1, round(base_batch * times ** 0.25))


def share(k: int, steps: int, base_steps: int) -> int:
    """A length in steps (a warmup, an evaluation interval) keeping its share of `steps`,
    at least one step; 0 stays 0."""
    return max(1, round(k * steps / base_steps)) if k else 0


def centred(lrs: tuple[float, ...], base_width: int, width: int) -> tuple[float, ...]:
    """An lr grid moved by base_width / width, to 3 significant digits (one spelling per run
    id): Adam's best lr for hidden weights scales as 1 / width (Yang et al. 2022, "Tensor
    Programs V", Table 3)."""
    return tuple(float(f"{lr * base_width / width:.3g}") for lr in lrs)


def grown(size: str, config: Callable[[int], ModelConfig], d_model: int, batch_size: int,
          base_steps: int, head_width: int, window: int) -> tuple[int, int, int]:
    """(d_model, batch, steps) of the quick shape grown to rung `size` by the rule: steps
    making 6 · params · tokens `multiple(size)` × the quick run's, `config(d)` the suite's
    model at width d (its exact parameter count, `budget.count_params`)."""
    from blocklab.budget.params import count_params

    times = multiple(size)
    d, b = width(d_model, times, head_width), batch(batch_size, times)
    base_params, params = count_params(config(d_model)).total, count_params(config(d)).total
    n = round(times * base_params * (base_steps * batch_size * window) / (params * b * window))
    return d, b, max(1, n)
