"""What the quantize suite's summary holds (`Summary.data`, the suite's `data_type`):
`QuantizeData`.

Per int8 scheme its prefill and decode speed-ups with their bounds (`QuantTiming`) and its loss
on trained models (`QuantQuality`), and each way of quantizing SwiGLU (`SwigluQuant`). Frozen
dataclasses that `blocklab.experiments.summaries.decode` reads back field by field, so a renamed
or missing field fails naming it. No PyTorch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from blocklab.experiments.summaries import Interval, TimeRatio


@dataclass(frozen=True)
class QuantTiming:
    """One int8 scheme's prefill and decode time against nothing quantized (speed-up = time of
    the float model / time of this scheme in the same repeat, as a `TimeRatio`: the geometric
    mean of the paired ratios with a 95% Student t interval on their logs; > 1 faster), with
    the bound it cannot beat and an Amdahl estimate (`blocklab.experiments.int8_measurements`
    derives both)."""

    scheme: str  # "none", or "<part>/<mode>": ffn|attention|all / weight-only|dynamic
    part: str
    mode: str
    compiled: bool
    prefill_ms: dict[str, float]  # seq_len -> median ms
    # seq_len -> seconds per repeat (repeat i of every scheme interleaved with the others': the
    # pairs a comparison of two schemes reads, as C32's FFN-only against attention-only)
    prefill_s: dict[str, list[float]]
    prefill_speedup: dict[str, TimeRatio]  # seq_len -> float / scheme time, paired repeats
    decode_ms: float
    decode_speedup: TimeRatio
    logits_error: float | None  # ‖ŷ − y‖ / ‖y‖ of the prefill logits (random weights)
    flop_share: dict[str, float]  # seq_len -> FLOP share of the quantized layers (not time)
    time_share: dict[str, float | None]  # seq_len -> f, their share of the float prefill's time
    gemm_speedup: dict[str, float | None]  # seq_len -> k of the part's own GEMMs (eager)
    prefill_estimate: dict[str, float | None]  # seq_len -> Amdahl 1 / (1 − f + f/k)
    prefill_bound: dict[str, float | None]  # seq_len -> 1 / (1 − f): the layers made free
    decode_time_share: float | None  # f of a decode step
    decode_estimate: float | None  # 1 / (1 − f + f/S), S = the layers' bytes, float / int8
    decode_bound: float | None  # 1 / (1 − f) of a decode step
    compile_s: float | None


@dataclass(frozen=True)
class QuantQuality:
    """A trained model's validation loss under one scheme (torchao, eager), over seeds."""

    scheme: str
    val_loss: Interval
    delta: Interval  # scheme − float, nats/token, paired by seed
    logits_error: Interval


@dataclass(frozen=True)
class SwigluQuant:
    """C33: one way of quantizing SwiGLU's gate, up and down, over seeds."""

    scheme: str  # a key of blocklab.nn.int8.SWIGLU_SCHEMES
    ffn_error: Interval  # ‖FFN_q(x) − FFN(x)‖ / ‖FFN(x)‖ on the model's own FFN inputs
    logits_error: Interval
    delta: Interval  # val loss − float, nats/token
    error_vs_separate_pct: Interval  # 100·(ffn_error / same-granularity separate − 1), paired


@dataclass(frozen=True)
class QuantizeData:
    model: dict[str, Any]  # the timed (random-weight) ModelConfig
    seq_lens: list[int]
    decode_context: int
    repeats: int
    threads: int
    cpu_flags: dict[str, bool]  # avx2, avx512f, avx512_vnni, avx_vnni, amx_tile, amx_int8
    timings: list[QuantTiming]
    quality_model: dict[str, Any]  # the trained ModelConfig
    quality: list[QuantQuality]
    swiglu: list[SwigluQuant]
    # max |merged − separate| over every dequantized weight of the trained models
    merged_per_row_max_diff: float
    merged_per_tensor_max_diff: float
    # per-tensor merged scale / max(gate scale, up scale), every layer and seed (1.0: the max)
    merged_scale_over_max: list[float]
    # max / min of gate's and up's per-tensor int8 scales, every layer of every seed: merged under
    # one per-tensor scale, the matrix with the smaller scale is quantized on a grid this many
    # times coarser (1.0: equal scales, and merging costs nothing)
    gate_up_scale_ratio: list[float] = field(default_factory=list)
    # val loss with gate|up merged under one per-tensor scale − each at its own, nats/token,
    # paired by seed
    merged_tensor_loss_penalty: Interval = Interval(0)
