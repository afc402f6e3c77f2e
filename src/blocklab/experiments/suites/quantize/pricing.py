"""The `quantize` suite's price: the estimated seconds of one of its runs on this machine."""

from __future__ import annotations

from blocklab.config import ModelConfig
from blocklab.experiments.suites.base import RunSpec
from blocklab.experiments.suites.quantize.planning import timing_payload
from blocklab.experiments.suites.quantize.sizes import SIZES

# Reference-machine seconds (`blocklab.experiments.estimate`) of what a calibration does not time:
# a timing run per size (torchao's int8 kernels: dynamic int8 without VNNI runs a slow path),
# and a quality run's quantizing (torchao's imports and quantize_ of every scheme) beside its
# forwards, which are priced from the calibration.
# quick: 15.5 s at 3 repeats, 21.0 at its 6 (a repeat of every scheme ≈ 1.3 s here)
_TIMING_REFERENCE_S = {"tiny": 1.1, "quick": 21.0, "full": 200.0}  # full: a guess
_QUALITY_REFERENCE_S = 0.6


def price(spec: RunSpec, cal) -> float | None:
    """Estimated seconds of one run on this machine from a calibration (`blocklab.experiments.
    estimate`): a timing run its size's reference time; a quality run the trainer's run, then
    a forward and a validation pass of the windows for every scheme of `quality_of_schemes`
    and `swiglu_errors`, and the quantizing."""
    from blocklab.experiments.estimate import TrainShape, training_s
    from blocklab.experiments.int8_measurements import SCHEMES, SWIGLU_SCHEMES

    payload = spec.payload
    if payload["kind"] == "timing":
        size = next((name for name, config in SIZES.items()
                     if any(timing_payload(t) == payload for t in config.timing)), "full")
        return cal.reference_s(_TIMING_REFERENCE_S[size])
    model = ModelConfig.from_dict(payload["model"])
    train = TrainShape.from_payload(payload["train"])
    b, t = train.batch_size, train.seq_len
    forward = cal.forward_s(model, b, t, payload["eval_windows"], t)
    return (training_s(model, train, cal) + 2 * (len(SCHEMES) + len(SWIGLU_SCHEMES) + 1)
            * forward + cal.reference_s(_QUALITY_REFERENCE_S))
