"""What a `quantize` run measures: a timing run times every int8 scheme on a random-weight
model (`run_timing`); a quality run trains a SwiGLU model and scores it under every scheme
and SwiGLU quantization (`run_quality`, with C33's `merge_comparison` per layer). Both are
what the plan's RunSpecs execute."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from blocklab.config import ModelConfig
from blocklab.experiments.options import RunOptions
from blocklab.experiments.run_result import RunResult
from blocklab.experiments.suites.quantize.records import (
    LayerMerge,
    QualityRecord,
    TimingRecord,
    TrainedModel,
)
from blocklab.experiments.suites.quantize.sizes import SIZES, THREADS, TimedShape

if TYPE_CHECKING:
    from torch import Tensor

    from blocklab.experiments.trainer import TrainConfig


def cpu_flags() -> dict[str, bool]:
    """The x86 features torch's int8 GEMMs depend on (from /proc/cpuinfo; all False elsewhere)."""
    from blocklab.experiments.env import cpu_flags as listed

    return listed(("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_tile", "amx_int8"))


def timing_config(t: TimedShape) -> ModelConfig:
    from blocklab.experiments.int8_measurements import TIMING_VOCAB

    return ModelConfig(vocab_size=TIMING_VOCAB, d_model=t.d_model, n_layers=t.n_layers,
                       n_heads=t.n_heads, d_ff=t.d_ff, ffn="swiglu",
                       max_seq_len=max(t.seq_lens) + t.decode_steps)


def run_timing(t: TimedShape) -> RunResult:
    import time

    from blocklab.experiments.int8_measurements import measure_schemes

    started = time.perf_counter()
    cfg = timing_config(t)
    times = measure_schemes(cfg, seq_lens=list(t.seq_lens), decode_steps=t.decode_steps,
                            repeats=t.repeats, compile=t.compile, threads=THREADS)
    record = TimingRecord(model=cfg.to_dict(), spec=t, cpu_flags=cpu_flags(), times=times)
    return RunResult(status="ok", wall_time_s=time.perf_counter() - started,
                     extra=record.extra())


def quality_configs(options: RunOptions, seed: int) -> tuple[ModelConfig, TrainConfig]:
    """The quality run's model and training at `options`' size: the one place the suite builds
    a TrainConfig (in `options`' precision and backend)."""
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

        per_row_diff     max |ŵ_merged − ŵ_separate| over gate, up and down, gate|up merged
                         as one [2m, d] matrix with one scale per row against each quantized
                         alone (`quantize_swiglu` "merged-per-row" / "separate-per-row"): 0
                         exactly, as each row keeps its own scale.
                         `row_scale` [2m, 1] replaces the merged matrix's per-row scales (a test
                         perturbs one to show the comparison can fail)
        per_tensor_diff  the same under one per-tensor scale for gate|up
        gate_scale, up_scale   each matrix's own per-tensor scale
        scale_ratio      max / min of the two: merged under one per-tensor scale, the matrix
                         with the smaller scale is quantized on a grid this many times coarser
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


def run_quality(options: RunOptions, seed: int, progress: Any = False) -> RunResult:
    """Train the quality model of `options`' size on `seed`, then score it under every scheme
    and SwiGLU quantization and compare its layers' merged and separate scales
    (`QualityRecord`); the status is the training run's."""
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
