"""`quantize`: real int8 quantization of a DecoderLM, prefill and decode speed per scheme (C32), and
how SwiGLU's three matrices may be quantized (C33).

    timing    (timed, alone) a random-weight DecoderLM quantized by torchao in every scheme (ffn /
              attention / all linear layers × weight-only / dynamic int8), prefill and decode
              repeats interleaved, beside the float model with the quantized layers free: its
              speed-up is the bound 1 / (1 − f) no scheme beats, f their share of the time; the
              parts' own GEMMs give the k of the Amdahl estimate 1 / (1 − f + f/k).
    quality   per seed: a trained SwiGLU model's loss and logits error under every scheme, and
              C33: gate/up/down quantized separately against gate|up merged under one
              per-tensor or per-row scales (`runs.merge_comparison`).
"""

from __future__ import annotations

from blocklab.experiments.suites.base import Suite
from blocklab.experiments.suites.quantize import runs, summary

METRIC_VERSION = ("2026-12-02: C33's FFN output error of merged against separate per-tensor scales,"
                  " % per seed")
SUITE = Suite(
    name="quantize",
    description="int8 quantization (torchao): prefill/decode speed-up per scheme against the "
                "roofline (C32); SwiGLU's matrices quantized separately vs merged (C33)",
    plan=runs.plan,
    summarise=summary.summarise,
    data_type=summary.QuantizeData,
    section="deployment",
    heading=("int8 quantization (quantize suite)", "int8 量化（quantize 实验）"),
    # Its figure (quantize_speedup) sits with C32's graded parts.
    metric_version=METRIC_VERSION,
    default_seeds={"tiny": 1, "quick": 3, "full": 5},
    price=runs.price,
)
