"""Int8 quantization of a DecoderLM (torchao) by part and mode: prefill and decode vs float32.

One random-weight SwiGLU DecoderLM (head_dim 64, byte vocabulary, float32) and its int8 copies
(nothing, FFN only, attention only, all linear layers; weight-only or dynamic int8, by
`blocklab.nn.int8.quantize_model`) are timed side by side in one process by
`blocklab.experiments.int8_measurements.measure_schemes`: every repeat runs each scheme once, in an
order rotated by one per repeat; a prefill of T tokens per T, then one-token decode steps on the
KV cache of the first T (median of the steps). Prints median ms and the speed-up float / scheme
(ratio of the medians) next to two bounds:

    prefill   Amdahl 1 / (1 − s + s/k): s the part's FLOP share from `blocklab.budget`, k the
              int8 GEMM speed-up of the part's own linear layers timed alone at [T, d_model]
              (layer 0's nn.Linear modules quantized by the same torchao config, vs float);
              for "all", each part at its own k: 1 / (1 − s_f − s_a + s_f/k_f + s_a/k_a)
    decode    bytes a step reads, float / scheme (`decode_bytes`: quantized weights 4 → 1 byte,
              the KV cache unchanged)

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
import dataclasses
import json
import statistics
from typing import Any

import torch

from blocklab.config import ModelConfig
from blocklab.experiments.int8_measurements import (
    TIMING_VOCAB,
    amdahl,
    decode_bytes,
    measure_schemes,
    part_flop_share,
)
from blocklab.experiments.int8_records import SchemeTimes
from blocklab.experiments.suites.quantize.timing import cpu_flags
from blocklab.nn.int8 import MODES

med = statistics.median


def prefill_bound(cfg: ModelConfig, part: str, t: int, k: dict[str, float]) -> float:
    """Amdahl bound of quantizing `part` for a prefill of t tokens; k: part -> GEMM speed-up."""
    if part == "none":
        return 1.0
    if part != "all":
        return amdahl(part_flop_share(cfg, part, t), k[part])
    s = {p: part_flop_share(cfg, p, t) for p in ("ffn", "attention")}
    return 1.0 / (1.0 - sum(s.values()) + sum(s[p] / k[p] for p in s))


def summarise(cfg: ModelConfig, times: SchemeTimes, lens: list[str]) -> dict[str, Any]:
    """Median ms, speed-ups vs float and bounds per scheme; the GEMM k per mode, part and T."""
    gemm = times.gemm_s
    k = {mode: {p: {t: med(gemm[f"none/{p}"][t]) / med(gemm[f"{p}/{mode}"][t]) for t in lens}
                for p in ("ffn", "attention")} for mode in MODES}
    base_prefill, base_decode = times.prefill_s["none"], med(times.decode_s["none"])
    context = int(lens[0])  # decode continues the first prefill
    rows = []
    for name, prefill in times.prefill_s.items():
        part, mode = ("none", "none") if name == "none" else name.split("/")
        rows.append({
            "scheme": name,
            "prefill_ms": {t: 1e3 * med(prefill[t]) for t in lens},
            "prefill_speedup": {t: med(base_prefill[t]) / med(prefill[t]) for t in lens},
            "prefill_bound": {t: prefill_bound(cfg, part, int(t), {p: k[mode][p][t] for p in
                                                                  k.get(mode, {})})
                              for t in lens},
            "decode_ms": 1e3 * med(times.decode_s[name]),
            "decode_speedup": base_decode / med(times.decode_s[name]),
            "decode_bound": decode_bytes(cfg, "none", context) / decode_bytes(cfg, part, context),
            "logits_error": times.logits_error.get(name),
            "compile_s": times.compile_s.get(name)})
    return {"rows": rows, "gemm_speedup": k, "raw": dataclasses.asdict(times)}


def print_run(kind: str, run: dict[str, Any], lens: list[str]) -> None:
    head = "".join(f" {'T=' + t + ' ms':>10} {'×':>5} {'bound':>5}" for t in lens)
    print(f"\n{kind}: speed-up = float / scheme (medians); bound: Amdahl (prefill), bytes (decode)")
    print(f"{'scheme':22}{head} {'decode ms':>10} {'×':>5} {'bytes':>5} {'logits err':>10}"
          + ("  compile s" if kind == "compiled" else ""))
    for r in run["rows"]:
        cells = "".join(f" {r['prefill_ms'][t]:10.2f} {r['prefill_speedup'][t]:5.2f} "
                        f"{r['prefill_bound'][t]:5.2f}" for t in lens)
        err = "—" if r["logits_error"] is None else f"{r['logits_error']:.2e}"
        print(f"{r['scheme']:22}{cells} {r['decode_ms']:10.2f} {r['decode_speedup']:5.2f} "
              f"{r['decode_bound']:5.2f} {err:>10}"
              + (f"  {r['compile_s']:9.1f}" if kind == "compiled" else ""))
    print("int8 GEMM speed-up k (the part's layer-0 linear layers alone, eager, float / int8):")
    for mode, parts in run["gemm_speedup"].items():
        print(f"  {mode:12}" + "".join(f"  {p} T={t}: {parts[p][t]:.2f}"
                                       for p in parts for t in lens))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d-model", type=int, default=1024, help="width (head_dim 64)")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--seq", type=int, nargs="+", default=[512, 1024],
                        help="prefill lengths T; decode continues the first")
    parser.add_argument("--decode-steps", type=int, default=8, help="decode steps per repeat")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved repeats")
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    parser.add_argument("--compile", action="store_true", help="also time torch.compile'd models")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

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
        runs[kind] = summarise(cfg, times, lens)
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
