"""What a run of the suite costs on this machine (`price`), from a calibration and the
reference machine's seconds of what a calibration does not time."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from blocklab.experiments.suites.base import RunSpec
from blocklab.experiments.suites.norm_cost.sizes import KINDS, NORM_NAMES, SIZES, model_config
from blocklab.experiments.suites.norm_cost.step import STEP_PATHS

if TYPE_CHECKING:
    from blocklab.experiments.estimate import Calibration

# the process's first torch.compile, one cold compile of one implementation at one shape (forward
# and backward, then the no-grad forward), and one call per element of a [rows, d] input
# (forward; forward+backward) of blocklab's kernels, the other kinds a multiple of it.
_INDUCTOR_WARM_REFERENCE_S = 5.0
_COLD_COMPILE_REFERENCE_S = 4.2
_ELEMENT_REFERENCE_S = {"fwd_s": 3.0e-9, "fwdbwd_s": 6.6e-9}  # blocklab's kernels
_KIND_FACTOR = {"blocklab": 1.0, "torch": 2.5, "plain": 4.5, "compiled": 1.2}


def price(spec: RunSpec, cal: Calibration) -> float | None:
    """Estimated seconds of one run on this machine from a calibration (`blocklab.experiments.
    estimate`): a kernels run is (per implementation and pass) its warm-up and block-sizing
    calls plus `repeats` blocks of at least block_s, and the cold compiles; a step run builds
    the four models and takes (warmup + repeats) steps of each; quality runs are the
    trainer's (the default)."""
    payload = spec.payload
    if payload["kind"] == "kernels":
        elements = payload["d"] * payload["rows"]
        kinds = KINDS if payload["compile"] else tuple(k for k in KINDS if k != "compiled")
        seconds = 0.0
        for kind in kinds:
            factor = _KIND_FACTOR[kind]
            for per_element in _ELEMENT_REFERENCE_S.values():
                call = cal.reference_s(per_element * elements * factor)
                # two norms; 2 warm-up calls, 1 sizing call and (forward) 1 saved-bytes call
                seconds += len(NORM_NAMES) * (4 * call + payload["repeats"]
                                              * max(call, cal.fixed_s(payload["block_s"])))
        if payload["compile"]:
            seconds += len(NORM_NAMES) * cal.reference_s(_COLD_COMPILE_REFERENCE_S)
            # The process's first compile, paid by a size's first kernels run.
            firsts = {(c.kernels.shapes[0], c.threads[0])
                      for c in SIZES.values() if c.kernels is not None}
            if ((payload["d"], payload["rows"]), payload["threads"]) in firsts:
                seconds += cal.reference_s(_INDUCTOR_WARM_REFERENCE_S)
        return seconds
    if payload["kind"] == "like-for-like":
        return _like_for_like_price(payload, cal)
    if payload["kind"] == "step":
        b, t = payload["batch_size"], payload["seq_len"]
        seconds = 0.0
        for norm in NORM_NAMES:
            model = model_config(norm, payload["d_model"], payload["n_layers"], t)
            seconds += len(STEP_PATHS) * (cal.build_s(model, b, t) + (
                payload["warmup"] + payload["repeats"]) * cal.step_s(model, b, t))
        return seconds
    return None


def _like_for_like_price(payload: dict[str, Any], cal: Calibration) -> float:
    """A like-for-like run priced as on a CPU, where F.rms_norm is not fused: the compiled
    kind, forward+backward only, two cold compiles, and the process's first compile at a size
    that plans no kernel runs (which would have paid it first)."""
    call = cal.reference_s(_ELEMENT_REFERENCE_S["fwdbwd_s"] * payload["d"] * payload["rows"]
                           * _KIND_FACTOR["compiled"])
    seconds = len(NORM_NAMES) * (4 * call + payload["repeats"]
                                 * max(call, cal.fixed_s(payload["block_s"])))
    seconds += len(NORM_NAMES) * cal.reference_s(_COLD_COMPILE_REFERENCE_S)
    alone = any(c.kernels is None and c.step.d_model == payload["d"]
                and c.step.batch_size * c.step.seq_len == payload["rows"]
                for c in SIZES.values())
    return seconds + (cal.reference_s(_INDUCTOR_WARM_REFERENCE_S) if alone else 0.0)
