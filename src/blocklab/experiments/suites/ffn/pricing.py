"""The `ffn` suite's price: the estimated seconds of one of its runs on this machine."""

from __future__ import annotations

from blocklab.config import ModelConfig
from blocklab.experiments.suites.base import RunSpec


def price(spec: RunSpec, cal) -> float | None:
    """Estimated seconds of one run on this machine (`blocklab.experiments.estimate`): a
    training run is the trainer's run plus `train_arm`'s two zero-gradient probes (one more
    model build, and a forward+backward each, priced as a step); the timing run builds every arm
    `rounds` times and takes timing_steps + 1 steps of each."""
    from blocklab.experiments.estimate import TrainShape, training_s

    payload = spec.payload
    if payload["kind"] == "timing":
        b, t, precision = payload["batch_size"], payload["seq_len"], payload.get("precision",
                                                                                  "fp32")
        models = [ModelConfig.from_dict(m) for m in payload["models"]]
        return payload["rounds"] * sum(
            cal.build_s(m, b, t, precision) + (payload["steps"] + 1) * cal.step_s(m, b, t,
                                                                                   precision)
            for m in models)
    model = ModelConfig.from_dict(payload["model"])
    train = TrainShape.from_payload(payload["train"])
    b, t, precision = train.batch_size, train.seq_len, train.precision
    return (training_s(model, train, cal) + cal.build_s(model, b, t, precision)
            + 2 * cal.step_s(model, b, t, precision))
