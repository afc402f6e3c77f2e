"""What one stored training run says: its final validation loss, the mean validation loss over
the run, and the first layer's gradient norm over the last layer's during training."""

from __future__ import annotations

import math

from blocklab.experiments.run_result import RunResult


def val_auc(result: RunResult | None, seq_len: int) -> float | None:
    """Mean validation loss over a finished run's evaluations: the area under its curve
    divided by its length (evaluations are evenly spaced)."""
    if result is None or result.status != "ok" or result.curves is None:
        return None
    values = result.curves.val.get(str(seq_len)) or []
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if not values or len(finite) != len(values):
        return None
    return sum(finite) / len(finite)


def first_over_last_log2(result: RunResult | None, warmup: int) -> float | None:
    """Mean over the logged steps at or after warmup of log2(‖∇ first layer‖ / ‖∇ last
    layer‖) (all of a layer's parameters), for a finished run."""
    if result is None or result.status != "ok" or result.curves is None:
        return None
    logged = result.curves.layer_grad_norms
    ratios = []
    for step, layers in zip(logged.step, logged.layer, strict=True):
        first, last = (layers[0], layers[-1]) if len(layers) > 1 else (None, None)
        if step >= warmup and first and last and math.isfinite(first) and math.isfinite(last):
            ratios.append(math.log2(first / last))
    return sum(ratios) / len(ratios) if ratios else None


def final_val(result: RunResult | None) -> float | None:
    value = None if result is None or result.final is None else result.final.val_loss
    return value if value is not None and math.isfinite(value) else None


def ok_val(result: RunResult | None) -> float | None:
    """The final val loss of a run that finished ("ok"); None for a failed or missing one."""
    return final_val(result) if result is not None and result.status == "ok" else None
