"""`quantize`: real int8 quantization of a DecoderLM, prefill and decode speed per scheme (C32), and
how SwiGLU's three matrices may be quantized (C33).

Two kinds of run:

    timing    (timed, alone) one random-weight DecoderLM of the size's shape, quantized by torchao
              in every scheme of `blocklab.experiments.int8_measurements.SCHEMES` (ffn /
              attention / all linear layers × weight-only / dynamic int8); prefill at each T
              and one-token decode on the KV cache, repeats interleaved (`measure_schemes`),
              with the float model whose quantized layers are free: its speed-up is the bound
              1 / (1 − f) no scheme can beat, f the layers' share of the time; the parts' own
              GEMMs timed alone give the k of the Amdahl estimate 1 / (1 − f + f/k) (decode:
              S = the layers' bytes, float / int8, in place of k). Eager always;
              torch.compile'd too where the size says so.
    quality   one per seed: a small SwiGLU model trained by the one training loop
              (`blocklab.experiments.trainer.train`), then its validation loss and logits error
              under every scheme (torchao), and the C33 comparison: gate/up/down quantized
              separately, or gate|up merged with one per-tensor scale or per-row scales
              (fake quantization written in `blocklab.nn.int8`): the FFN output error
              and validation loss of each, and per layer (`merge_comparison`) the merged
              against the separate weights and how far apart gate's and up's scales are.

Each run's `extra` holds its record (`TimingRecord`, `QualityRecord`); `Summary.data` is a
`summary.QuantizeData`. Modules: `timing` (the timing run and each scheme's speed-ups), `runs`
(sizes, the quality run, plan and prices) and `summary` (statistics, tables and notes).
"""

from __future__ import annotations

from blocklab.experiments.suites.base import Suite
from blocklab.experiments.suites.quantize import runs, summary

# How its runs become the metrics the registered rules read (`Suite.metric_version`).
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
