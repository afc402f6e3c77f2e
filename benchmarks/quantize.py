"""Int8 quantization of a DecoderLM (torchao) by part and mode: prefill and decode vs float32.

One random-weight SwiGLU DecoderLM (head_dim 64, byte vocabulary, float32) and its int8 copies
(nothing, FFN only, attention only, all linear layers; weight-only or dynamic int8, by
`blocklab.nn.int8.quantize_model`) are timed side by side in one process by
`blocklab.experiments.int8_measurements.measure_schemes`: every repeat runs each scheme once, in an
order rotated by one per repeat; a prefill of T tokens per T, then one-token decode steps on the
KV cache of the first T (median of the steps). Prints median ms and the speed-up float / scheme
(geometric mean of the paired repeats) next to what `scheme_rows` derives, as the quantize suite
and `blocklab quantize` do:

    k         the int8 GEMM speed-up of the part's own layer-0 linear layers timed alone at
              [T, d_model] (eager)
    estimate  Amdahl 1 / (1 − f + f/k) (prefill) or 1 / (1 − f + f/S), S the weight bytes float /
              int8 (decode), f the quantized layers' share of the float model's time
    bound     1 / (1 − f), measured by the float model with those layers free

`--compile` also times torch.compile'd models (dynamic shapes; one scheme at a time with its
repeats back to back, as `measure_schemes` does it); warm-up including compilation is reported
apart, and k stays the eager GEMMs'. The CPU's int8 flags are printed: without VNNI (avx512_vnni,
avx_vnni) or AMX (amx_int8) torch's int8 GEMMs take a slow path, slower than float32.

    python benchmarks/quantize.py [--d-model 1024] [--layers 2] [--seq 512 1024]
                                  [--decode-steps 8] [--repeats 5] [--threads 2] [--compile]
                                  [--json]
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import torch

from blocklab.config import ModelConfig
from blocklab.experiments.int8_measurements import TIMING_VOCAB, measure_schemes
from blocklab.experiments.int8_records import SchemeTimes
from blocklab.experiments.suites.quantize.timing import cpu_flags, scheme_rows


def summarise(cfg: ModelConfig, seq: list[int], compiled: bool,
              times: SchemeTimes) -> list[dict[str, Any]]:
    """One row per scheme: median ms, speed-ups vs float, k, the estimates and the bounds."""
    return [{"scheme": r.scheme, "prefill_ms": r.prefill_ms,
             "prefill_speedup": {t: s.ratio for t, s in r.prefill_speedup.items()},
             "gemm_speedup": r.gemm_speedup, "prefill_estimate": r.prefill_estimate,
             "prefill_bound": r.prefill_bound, "decode_ms": r.decode_ms,
             "decode_speedup": r.decode_speedup.ratio, "decode_estimate": r.decode_estimate,
             "decode_bound": r.decode_bound, "logits_error": r.logits_error,
             "compile_s": r.compile_s} for r in scheme_rows(cfg, seq, compiled, times)]


def _cell(value: float | None, width: int = 5) -> str:
    return f"{'—':>{width}}" if value is None else f"{value:{width}.2f}"


def print_run(kind: str, rows: list[dict[str, Any]], lens: list[str]) -> None:
    head = "".join(f" {'T=' + t + ' ms':>10} {'×':>5} {'k':>5} {'est':>5} {'bound':>5}"
                   for t in lens)
    print(f"\n{kind}: speed-up = float / scheme; k, estimate and bound as the docstring says")
    print(f"{'scheme':22}{head} {'decode ms':>10} {'×':>5} {'est':>5} {'bound':>5} "
          f"{'logits err':>10}" + ("  compile s" if kind == "compiled" else ""))
    for r in rows:
        cells = "".join(f" {r['prefill_ms'][t]:10.2f} {r['prefill_speedup'][t]:5.2f} "
                        f"{_cell(r['gemm_speedup'][t])} {_cell(r['prefill_estimate'][t])} "
                        f"{_cell(r['prefill_bound'][t])}" for t in lens)
        err = "—" if r["logits_error"] is None else f"{r['logits_error']:.2e}"
        print(f"{r['scheme']:22}{cells} {r['decode_ms']:10.2f} {r['decode_speedup']:5.2f} "
              f"{_cell(r['decode_estimate'])} {_cell(r['decode_bound'])} {err:>10}"
              + (f"  {r['compile_s']:9.1f}" if kind == "compiled" else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d-model", type=int, default=1024, help="width (head_dim 64)")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--seq", type=int, nargs="+", default=[512, 1024],
                        help="prefill lengths T; decode continues the first")
    parser.add_argument("--decode-steps", type=int, default=8, help="decode steps per repeat")
    parser.add_argument("--repeats", type=int, default=5,
                        help="interleaved repeats (at least 2: each speed-up has an interval)")
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    parser.add_argument("--compile", action="store_true", help="also time torch.compile'd models")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    if args.repeats < 2:
        parser.error("--repeats must be at least 2")

    torch.set_num_threads(args.threads)
    # Llama's shape: SwiGLU, d_ff ≈ 8/3 · d_model rounded up to a multiple of 256.
    cfg = ModelConfig(vocab_size=TIMING_VOCAB, d_model=args.d_model, n_layers=args.layers,
                      n_heads=max(1, args.d_model // 64), ffn="swiglu", ffn_multiple_of=256,
                      max_seq_len=max(args.seq) + args.decode_steps)
    lens = [str(t) for t in args.seq]
    runs = {}
    for kind in ("eager", "compiled") if args.compile else ("eager",):
        times = measure_schemes(cfg, seq_lens=args.seq, decode_steps=args.decode_steps,
                                repeats=args.repeats, compile=kind == "compiled",
                                threads=args.threads)
        runs[kind] = summarise(cfg, args.seq, kind == "compiled", times)
    flags = cpu_flags()
    result = {"config": {"d_model": cfg.d_model, "n_layers": cfg.n_layers, "d_ff": cfg.d_ff,
                         "n_heads": cfg.n_heads, "seq_lens": args.seq,
                         "decode_steps": args.decode_steps, "repeats": args.repeats,
                         "threads": args.threads, "torch": torch.__version__},
              "cpu_flags": flags, "runs": runs}
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"d_model={cfg.d_model} layers={cfg.n_layers} d_ff={cfg.d_ff} heads={cfg.n_heads} "
          f"T={args.seq} decode steps={args.decode_steps} repeats={args.repeats} "
          f"threads={args.threads} torch {torch.__version__}")
    print("CPU int8 flags: " + ", ".join(f"{name}={'yes' if on else 'no'}"
                                         for name, on in flags.items()))
    if not any(flags[f] for f in ("avx512_vnni", "avx_vnni", "amx_int8")):
        print("no VNNI or AMX int8 here: int8 GEMMs take a slow path, expect int8 < float32")
    for kind, run in runs.items():
        print_run(kind, run, lens)


if __name__ == "__main__":
    main()
