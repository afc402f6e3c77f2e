"""The `quantize` suite's sizes, the quality run (`run_quality`, with C33's `merge_comparison` per
layer), the plan and its prices."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from blocklab.config import ModelConfig
from blocklab.experiments.int8_records import SchemeLoss, SwigluError
from blocklab.experiments.options import RunOptions
from blocklab.experiments.results import train_identity
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.base import Results, RunSpec
from blocklab.experiments.suites.quantize.timing import TimedShape, run_timing, timing_payload

if TYPE_CHECKING:
    from torch import Tensor

    from blocklab.experiments.trainer import TrainConfig


@dataclass(frozen=True)
class QualityShape:
    """The trained SwiGLU model; every scheme is scored on `eval_windows` validation windows."""

    d_model: int
    n_layers: int
    n_heads: int
    seq_len: int
    batch_size: int
    steps: int
    lr: float
    warmup_steps: int
    eval_windows: int


@dataclass(frozen=True)
class Size:
    """What one suite size times (one run per shape) and trains (one run per seed)."""

    timing: tuple[TimedShape, ...]
    quality: QualityShape


# Dynamic int8 on a CPU without VNNI/AMX runs a slow path, which bounds what quick can afford.
# Quick times 6 repeats: C32's t interval on 5 degrees of freedom (3 repeats' is 2.4× as wide).
SIZES: dict[str, Size] = {
    "tiny": Size(
        timing=(TimedShape(d_model=64, n_layers=1, n_heads=2, d_ff=176, seq_lens=(32,),
                           decode_steps=2, repeats=3, compile=False),),
        quality=QualityShape(d_model=32, n_layers=1, n_heads=2, seq_len=32, batch_size=4,
                             steps=8, lr=3e-3, warmup_steps=2, eval_windows=4)),
    "quick": Size(
        timing=(TimedShape(d_model=1024, n_layers=2, n_heads=8, d_ff=2816, seq_lens=(512,),
                           decode_steps=4, repeats=6, compile=False),),
        quality=QualityShape(d_model=128, n_layers=2, n_heads=4, seq_len=128, batch_size=16,
                             steps=300, lr=3e-3, warmup_steps=20, eval_windows=32)),
    "full": Size(
        timing=(TimedShape(d_model=1024, n_layers=4, n_heads=8, d_ff=2816,
                           seq_lens=(512, 1024, 2048), decode_steps=8, repeats=5, compile=False),
                TimedShape(d_model=2048, n_layers=2, n_heads=16, d_ff=5632,
                           seq_lens=(512, 1024), decode_steps=8, repeats=5, compile=False),
                TimedShape(d_model=1024, n_layers=2, n_heads=8, d_ff=2816, seq_lens=(512,),
                           decode_steps=8, repeats=5, compile=True)),
        quality=QualityShape(d_model=256, n_layers=4, n_heads=4, seq_len=128, batch_size=32,
                             steps=1000, lr=2e-3, warmup_steps=50, eval_windows=64)),
}


def quality_configs(options: RunOptions, seed: int) -> tuple[ModelConfig, TrainConfig]:
    from blocklab.experiments.trainer import TrainConfig

    q = SIZES[options.size].quality
    mc = ModelConfig(vocab_size=256, d_model=q.d_model, n_layers=q.n_layers,
                     n_heads=q.n_heads, ffn="swiglu", max_seq_len=q.seq_len)
    tc = TrainConfig.for_run(options, seed, steps=q.steps, batch_size=q.batch_size,
                             seq_len=q.seq_len, lr=q.lr, warmup_steps=q.warmup_steps,
                             eval_every=0, log_every=0, eval_batches=1, threads=1)
    return mc, tc


def merge_comparison(gate: Tensor, up: Tensor, down: Tensor,
                     row_scale: Tensor | None = None) -> dict[str, float]:
    """One layer's C33 numbers from its float weights gate, up [m, d] and down [d, m]:

        per_row_diff     max |ŵ_merged − ŵ_separate| with gate|up one [2m, d] matrix of per-row
                         scales: 0 exactly, as each row keeps its scale (`row_scale` [2m, 1]
                         replaces them, so a test can show the comparison fail)
        per_tensor_diff  the same under one per-tensor scale for gate|up
        gate_scale, up_scale   each matrix's own per-tensor scale
        scale_ratio      max / min of the two: how much coarser the smaller one's grid gets
        merged_over_max  the merged per-tensor scale / the larger of the two (1.0)
    """
    import torch

    from blocklab.nn.int8 import fake_quantize, int8_scale, quantize_swiglu

    def largest(a, b):
        return max(float((x - y).abs().max()) for x, y in zip(a, b, strict=True))

    if row_scale is None:
        merged_row = quantize_swiglu(gate, up, down, "merged-per-row")
    else:
        merged_row = (*fake_quantize(torch.cat((gate, up)), "per-row", row_scale)
                      .split(gate.shape[0]), fake_quantize(down, "per-row"))
    per_tensor = largest(quantize_swiglu(gate, up, down, "merged-per-tensor"),
                         quantize_swiglu(gate, up, down, "separate-per-tensor"))
    s_gate, s_up = (float(int8_scale(w, "per-tensor")) for w in (gate, up))
    merged_scale = float(int8_scale(torch.cat((gate, up)), "per-tensor"))
    return {"per_row_diff": largest(merged_row,
                                    quantize_swiglu(gate, up, down, "separate-per-row")),
            "per_tensor_diff": per_tensor, "gate_scale": s_gate, "up_scale": s_up,
            "scale_ratio": max(s_gate, s_up) / min(s_gate, s_up),
            "merged_over_max": merged_scale / max(s_gate, s_up)}


@dataclass(frozen=True)
class TrainedModel:
    """The training under a quality run (`data`: `Corpus.info()`)."""

    val_loss: float | None
    steps_done: int
    data: dict[str, Any]


@dataclass(frozen=True)
class LayerMerge:
    """One layer's `merge_comparison`."""

    per_row_diff: float
    per_tensor_diff: float
    gate_scale: float
    up_scale: float
    scale_ratio: float
    merged_over_max: float


@dataclass(frozen=True)
class QualityRecord:
    """A quality run's record (`run_quality`)."""

    kind: str
    model: dict[str, Any]
    train: TrainedModel
    quality: dict[str, SchemeLoss]
    swiglu: dict[str, SwigluError]
    layers: list[LayerMerge]
    merged_per_row_max_diff: float
    merged_per_tensor_max_diff: float
    merged_scale_over_max: list[float]


def run_quality(options: RunOptions, seed: int, progress: Any = False) -> RunResult:
    """Train the quality model on `seed`, then score it under every scheme (a `QualityRecord`)."""
    import time

    from blocklab.experiments.data import load_corpus, validation_windows
    from blocklab.experiments.env import torch_threads
    from blocklab.experiments.int8_measurements import quality_of_schemes, swiglu_errors
    from blocklab.experiments.trainer import train
    from blocklab.nn.int8 import gated_ffn_weights

    started = time.perf_counter()
    mc, tc = quality_configs(options, seed)
    model, trained = train(mc, tc, "stdlib", progress=progress, label=f"quantize seed {seed}")
    windows = validation_windows(load_corpus("stdlib").val, tc.seq_len,
                                 SIZES[options.size].quality.eval_windows)
    with torch_threads(1):
        quality = quality_of_schemes(model, windows)
        swiglu = swiglu_errors(model, windows)
        layers = [LayerMerge(**merge_comparison(*(w.detach()
                                                  for w in gated_ffn_weights(layer.ffn))))
                  for layer in model.layers]
    record = QualityRecord(
        kind="quality", model=mc.to_dict(),
        train=TrainedModel(val_loss=trained.final.val_loss, steps_done=trained.steps_done,
                           data=trained.data),
        quality=quality, swiglu=swiglu, layers=layers,
        merged_per_row_max_diff=max(x.per_row_diff for x in layers),
        merged_per_tensor_max_diff=max(x.per_tensor_diff for x in layers),
        merged_scale_over_max=[x.merged_over_max for x in layers])
    return RunResult(status=trained.status, wall_time_s=time.perf_counter() - started,
                     extra=dataclasses.asdict(record))


def plan(options: RunOptions, tuned: Results = ()) -> list[RunSpec]:
    """One timed run per timed shape, then one quality run per seed."""
    size = SIZES[options.size]
    specs = [RunSpec(f"timing d={t.d_model} L={t.n_layers} T={list(t.seq_lens)}"
                     f"{' compiled' if t.compile else ''}", "timing", 0, timing_payload(t),
                     lambda progress, t=t: run_timing(t), timed=True)
             for t in size.timing]
    for seed in options.seeds:
        mc, tc = quality_configs(options, seed)
        payload = {"suite": "quantize", "kind": "quality", "model": mc.to_dict(),
                   "train": train_identity(tc), "data": "stdlib",
                   "eval_windows": size.quality.eval_windows,
                   # the runs record each layer's gate and up scales (C33)
                   "layers": "scales"}
        specs.append(RunSpec(f"quality seed {seed}", "quality", seed, payload,
                             lambda progress, seed=seed: run_quality(options, seed, progress)))
    return specs


# Reference-machine seconds a calibration does not time: a timing run per size, and a quality
# run's quantizing (torchao's imports and quantize_ of every scheme).
_TIMING_REFERENCE_S = {"tiny": 1.1, "quick": 21.0, "full": 200.0}  # full: a guess
_QUALITY_REFERENCE_S = 0.6


def price(spec: RunSpec, cal) -> float | None:
    """Estimated seconds here: a timing run its size's reference time; a quality run the
    trainer's, two passes of the windows per scheme, and the quantizing."""
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
