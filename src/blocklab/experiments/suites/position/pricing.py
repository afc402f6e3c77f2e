"""Estimated seconds of each position run on this machine, from a calibration
(`blocklab.experiments.estimate`)."""

from __future__ import annotations

import dataclasses
from typing import Any

from blocklab.config import ModelConfig
from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import train_identity
from blocklab.experiments.suites.base import RunSpec
from blocklab.experiments.suites.position.realistic_cost import price as realistic_price
from blocklab.experiments.suites.position.scaling import SCALINGS
from blocklab.experiments.suites.position.sizes import (
    COST_SCHEMES,
    PARAM_SCHEMES,
    SIZES,
    PositionSize,
    arm_config,
    train_config,
)

# Reference-machine seconds (`blocklab.experiments.estimate`) of what is not a model step: the
# profiler's start in the cost run, the relative-error run (pure tensor maths).
_PROFILER_REFERENCE_S = 0.4
_RELATIVE_ERROR_REFERENCE_S = 0.03


def price(spec: RunSpec, cal) -> float | None:
    """Estimated seconds of one run on this machine from a calibration (`blocklab.experiments.
    estimate`), counted as `runs`, `passkey` and `cost` run it: a training run is the trainer's
    run, then `extrapolation` at every multiple (full windows and sliding ones), the order
    probe, the far-out check and, for rope, every training-free scaling and each fine-tune with
    its reads; a passkey run its training steps and grid; the cost run its builds, profiled
    calls and interleaved repeats."""
    from blocklab.experiments.estimate import TrainShape, evaluation_s, training_s

    payload = spec.payload
    kind = payload["kind"]
    if kind == "relative_error":
        return cal.reference_s(_RELATIVE_ERROR_REFERENCE_S)
    size = next(name for name, config in SIZES.items() if config.L == _L(payload)
                and _same_size(config, payload))
    config = SIZES[size]
    L, mults, n = config.L, config.mults, config.eval_windows
    model = ModelConfig.from_dict(payload["model"])
    train = TrainShape.from_payload(payload.get("train") or train_identity(train_config(
        RunOptions(size, precision=payload.get("precision", "fp32")), 0)))
    B, precision = train.batch_size, train.precision

    def forward(rows: int, length: int) -> float:
        return cal.forward_s(model, B, L, rows, length, precision)

    def read(multiples, sliding: bool) -> float:
        seconds = 0.0
        for m in multiples:
            seconds += evaluation_s(model, train, n, m * L, cal, batch_tokens=16384)
            if sliding and m > 1:
                windows = n * ((m * L - L) // (L // 2) + 1)
                seconds += evaluation_s(model, train, windows, L, cal, batch_tokens=16384)
        return seconds

    if kind == "train":
        order = config.order
        seconds = (training_s(model, train, cal) + read(mults, True)
                   + forward(2 * order.prefixes, order.prefix_len)
                   + 2 * (cal.build_s(model, B, L, precision) + forward(1, 16)))
        if spec.arm == "rope":
            longer = [m for m in mults if m > 1]
            seconds += len(SCALINGS) * read(longer, False)
            ft = config.finetune
            if ft:
                rows = max(1, B // ft.factor)
                seconds += len(ft.kinds) * (
                    ft.steps * cal.step_s(model, rows, ft.factor * L, precision)
                    + read(mults, False))
        return seconds
    if kind == "passkey":
        pk = config.passkey
        assert pk is not None, f"a passkey run at size {size}, which has none"
        grid = sum(forward(pk.n, m * L + 1) for m in mults) * len(pk.depths)
        seconds = (cal.build_s(model, pk.batch_size, L, precision)
                   + pk.steps * cal.step_s(model, pk.batch_size, L, precision) + grid)
        if spec.arm == "rope":
            seconds += len(SCALINGS) * grid * (len(mults) - 1) / len(mults)
        return seconds
    if kind == "cost":
        cost = config.cost
        assert cost is not None, f"size {size} has no timed cost run"
        n_decode = cost.decode_tokens
        seconds = cal.reference_s(_PROFILER_REFERENCE_S) + realistic_price(size, cal)
        for scheme in PARAM_SCHEMES:
            seconds += cal.build_s(arm_config(size, scheme), B, L, precision)
        for scheme in COST_SCHEMES:
            m = arm_config(size, scheme)
            step = cal.step_s(m, B, L, precision)
            prefill = cal.forward_s(m, B, L, 1, L - n_decode, precision)
            token = cal.forward_s(m, B, L, 1, 1, precision)
            seconds += (cal.build_s(m, B, L, precision) + 3 * step + 3 * (prefill + token)
                        + (cost.warmup + cost.repeats)
                        * (step + prefill + n_decode * token))
        return seconds
    return None


def _L(payload: dict[str, Any]) -> int:
    return payload.get("L") or payload.get("size_config", {}).get("L") or \
        payload["train"]["seq_len"]


def _same_size(size: PositionSize, payload: dict[str, Any]) -> bool:
    """Whether `payload` was planned from `size` (its model's width, depth and heads)."""
    model = payload["model"]
    return all(model[k] == v for k, v in dataclasses.asdict(size.model).items())

