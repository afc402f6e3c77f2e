"""The `width` suite's price: the estimated seconds of one of its runs on this machine."""

from __future__ import annotations

from blocklab.config import ModelConfig
from blocklab.experiments.suites.base import RunSpec


def price(spec: RunSpec, cal) -> float | None:
    """A training run priced as the trainer's (`estimate.training_s`); nested training as one
    such run per nested width (a step runs the model once at each), then one evaluation per
    width read, priced as a step each."""
    from blocklab.experiments.estimate import TrainShape, training_s

    payload = spec.payload
    model = ModelConfig.from_dict(payload["model"])
    train = TrainShape.from_payload(payload["train"])
    widths = payload["train"].get("nested_widths") or [model.d_ff]
    b, t, precision = train.batch_size, train.seq_len, train.precision
    seconds = sum(training_s(model.replace(d_ff=k), train, cal) for k in widths)
    return seconds + len(payload["read_widths"]) * cal.step_s(model, b, t, precision)
