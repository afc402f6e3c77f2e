"""Forward + backward time of every implementation of each `blocklab.nn.backends` op, on CPU.

`FAST_FALLBACK` and `COMPILED_KERNELS` in `blocklab/nn/backends.py` are set from this
benchmark:

    COMPILED_KERNELS  the ops whose C kernel ("cpu") beats the code Inductor generates from the
                      reference expression in float32; under backend="compiled" the others run
                      the reference expression and Inductor compiles it (one line per op below:
                      "C kernel vs Inductor")
    FAST_FALLBACK     what backend="fast" runs where no kernel can (bfloat16 on CPU): "lean" or
                      "reference", whichever is faster (`--dtype bfloat16`)

Implementations, each registered one (`blocklab.nn.backends.implementations(op)`) called
through `blocklab.nn.backends.implementation(op, name)` with the arguments the model's modules
pass (norm.py, ffn.py, position.py), so what is timed is what models run:

    reference  the readable expression (autograd of tensor ops)
    lean       the memory-saving autograd Functions (`blocklab.nn.lean`); the norms only: the
               lean gated activation (2.0-4.7× the reference's time, P and bar, float32 and
               bfloat16) and lean RoPE (1.3-1.4× in float32, 0.96-1.03× in bfloat16, no
               memory saved) won nowhere and were removed
    cpu        the hand-written C kernels (`blocklab.nn.cpu_kernels`); float32 only
    inductor   `torch.compile(reference, dynamic=False)`: Inductor's code for the reference
               expression alone, forward and backward (its compile time is reported apart)

Triton needs CUDA and is not run. In a compiled model Inductor may also fuse the reference
expression with its neighbours (the residual add, the projections' epilogues), which an op
compiled alone cannot show: a C kernel that only ties Inductor here loses inside a model.

Ops and operands (what a Llama-style `DecoderLM` hands each op; weights are float32 in both
precisions, as `DecoderLM(precision="bf16")` keeps them):

    rms_norm          x [N, d], gain [d] float32                 -> y; grads for x and gain
    add_rms_norm      x, residual [N, d], gain [d] float32       -> y, h = x + residual
    gated_activation  silu(gate) · up, gate, up [N, d_ff]        -> grads for gate and up
    rope              half_split, x [B, H, T, 64] as the transposed view of the projection's
                      [B, T, H, 64] output, cos, sin [1, 1, T, 64] float32 (no grad)

Configs: P (N = 8·512, d = 512, d_ff = 1376, rope x [8, 8, 512, 64]) and bar (N = 16·256,
d = 256, d_ff = 688, rope x [16, 4, 256, 64]). One process; after warm-up, each repeat times
one forward + backward of every implementation in turn (interleaved, so load from other jobs
falls on all alike) and the median over repeats is reported, with its ratio to the reference.

bfloat16 on a CPU without AVX-512 BF16 or AMX runs its elementwise maths by conversions to and
from float32, so bfloat16 figures there say little about machines with those units; the CPU
capability is printed with the figures.

    python benchmarks/backend_ops.py [--dtype float32|bfloat16|both] [--config P|bar|both]
                                     [--repeats 20] [--threads 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch

# Importing blocklab.nn imports norm, ffn and position, which register their implementations.
from blocklab.experiments.env import BF16_FLAGS, cpu_flags, cpu_model
from blocklab.experiments.suites.norm_cost.timing import saved_tensor_bytes
from blocklab.nn import backends

OPS = ("rms_norm", "add_rms_norm", "gated_activation", "rope")
IMPLS = ("reference", "lean", "cpu", "inductor")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
# name: rows N, d_model, d_ff, rope x [B, H, T, head_dim]
CONFIGS = {"P": {"rows": 8 * 512, "d": 512, "d_ff": 1376, "rope": (8, 8, 512, 64)},
           "bar": {"rows": 16 * 256, "d": 256, "d_ff": 688, "rope": (16, 4, 256, 64)}}
EPS = 1e-6
ACTIVATION = "silu"  # the gated activation timed (SwiGLU)
KEEP_MARGIN = 1.05  # the C kernel must beat Inductor by 5% to be worth keeping under "compiled"


def machine() -> dict:
    """The CPU, torch's CPU capability and the /proc/cpuinfo flags bfloat16 speed depends on."""
    return {"cpu": cpu_model(),
            "capability": torch.backends.cpu.get_cpu_capability(),
            "flags": cpu_flags(BF16_FLAGS), "torch": torch.__version__,
            "load_average": os.getloadavg()}


def operands(op: str, cfg: dict, dtype: torch.dtype, gen: torch.Generator):
    """(args, tensors to differentiate, output gradients) for one call of op."""
    def randn(*shape, dt=dtype, grad=True):
        t = torch.randn(*shape, generator=gen).to(dt)
        return t.requires_grad_(grad)

    n, d = cfg["rows"], cfg["d"]
    if op == "rms_norm":
        x, w = randn(n, d), randn(d, dt=torch.float32)
        return (x, w, EPS, "llama", False), (x, w), (randn(n, d, grad=False),)
    if op == "add_rms_norm":
        x, r, w = randn(n, d), randn(n, d), randn(d, dt=torch.float32)
        grads = (randn(n, d, grad=False), randn(n, d, grad=False))  # for y and for h
        return (x, r, w, EPS, "llama", False), (x, r, w), grads
    if op == "gated_activation":
        gate, up = randn(n, cfg["d_ff"]), randn(n, cfg["d_ff"])
        return (gate, up, ACTIVATION), (gate, up), (randn(n, cfg["d_ff"], grad=False),)
    b, h, t, hd = cfg["rope"]
    x = randn(b, t, h, hd, grad=False).transpose(1, 2).requires_grad_(True)  # [B, H, T, hd]
    angles = torch.arange(t, dtype=torch.float32)[:, None] * torch.rand(hd, generator=gen)
    cos, sin = angles.cos()[None, None], angles.sin()[None, None]  # [1, 1, T, hd]
    return (x, cos, sin), (x,), (randn(b, h, t, hd, grad=False),)


def _fwd_bwd(fn, args, inputs, grads) -> None:
    out = fn(*args)
    outs = out if isinstance(out, tuple) else (out,)
    torch.autograd.grad(outs, inputs, grads)


def bench(op: str, cfg: dict, dtype: torch.dtype, repeats: int, warmup: int) -> dict:
    gen = torch.Generator().manual_seed(0)
    args, inputs, grads = operands(op, cfg, dtype, gen)
    x, other = args[0], args[1]  # the operand pair resolve() looks at
    gain = args[2] if op == "add_rms_norm" else other
    activation = ACTIVATION if op in backends.ACTIVATION_OPS else None
    fns, unavailable = {}, {}
    for name in backends.implementations(op):
        if name == "triton":  # CUDA only
            continue
        reason = backends.unavailable_reason(op, name, x, gain, activation)
        if reason is None:
            fns[name] = backends.implementation(op, name)
        else:
            unavailable[name] = reason
    fns["inductor"] = torch.compile(backends.implementation(op, "reference"), dynamic=False)

    tick = time.perf_counter()
    _fwd_bwd(fns["inductor"], args, inputs, grads)  # builds the forward and backward graphs
    compile_s = time.perf_counter() - tick
    for fn in fns.values():
        for _ in range(warmup):
            _fwd_bwd(fn, args, inputs, grads)

    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            tick = time.perf_counter()
            _fwd_bwd(fn, args, inputs, grads)
            times[name].append(time.perf_counter() - tick)
    ms = {name: statistics.median(t) * 1e3 for name, t in times.items()}
    ref = ms["reference"]
    result = {
        "op": op, "dtype": str(dtype).removeprefix("torch."),
        "shape": list(x.shape),
        "ms": {name: ms.get(name) for name in IMPLS},
        "ratio_to_reference": {name: ms[name] / ref for name in ms},
        # Bytes autograd keeps for backward beyond the inputs, each storage once.
        "saved_bytes": {name: saved_tensor_bytes(lambda fn=fn: fn(*args), exclude=inputs)
                        ["extra_bytes"] for name, fn in fns.items()},
        "unavailable": unavailable,
        "inductor_compile_s": compile_s,
        # What the model-wide backends run for these operands (resolve's own answer).
        "fast_runs": backends.resolve(op, "fast", x, gain, activation),
        "compiled_runs": backends.resolve(op, "compiled", x, gain, activation),
    }
    if "cpu" in fns:
        # > 1: the C kernel is faster; the median of per-repeat ratios (each repeat ran both
        # back to back, so load drifting over the run cancels), with its quartiles.
        result["c_kernel_vs_inductor"], result["c_kernel_vs_inductor_quartiles"] = \
            _paired(times["inductor"], times["cpu"])
        result["keep_c_kernel_under_compiled"] = result["c_kernel_vs_inductor"] >= KEEP_MARGIN
    if "lean" in fns:
        result["lean_vs_reference"], result["lean_vs_reference_quartiles"] = \
            _paired(times["reference"], times["lean"])  # > 1: lean is faster
    return result


def _paired(slow: list[float], fast: list[float]) -> tuple[float, list[float]]:
    """Median and quartiles of slow/fast over the repeats."""
    ratios = [a / b for a, b in zip(slow, fast, strict=True)]
    q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
    return statistics.median(ratios), [q[0], q[2]]


def _range(q: list[float]) -> str:
    return f"{q[0]:.2f}–{q[1]:.2f}"


def verdict_lines(r: dict) -> list[str]:
    """One line per op: what this run says about COMPILED_KERNELS or FAST_FALLBACK."""
    op = r["op"]
    if "c_kernel_vs_inductor" in r:
        keep = r["keep_c_kernel_under_compiled"]
        listed = op in backends.COMPILED_KERNELS
        return [f"  {op}: C kernel vs Inductor: {r['c_kernel_vs_inductor']:.2f}× "
                f"[{_range(r['c_kernel_vs_inductor_quartiles'])}] ("
                + ("keeps the C kernel under 'compiled'" if keep
                   else "Inductor's code is as fast")
                + f"; COMPILED_KERNELS {'has' if listed else 'lacks'} it"
                + ("" if keep == listed else ": DISAGREES with this run") + ")"]
    set_to = backends.FAST_FALLBACK[op]
    if "lean_vs_reference" not in r:
        return [f"  {op}: no C kernel ({r['unavailable'].get('cpu', '')}) and no lean "
                f"implementation: the reference runs (FAST_FALLBACK has {set_to}"
                + ("" if set_to == "reference" else ": DISAGREES") + ")"]
    faster = "lean" if r["lean_vs_reference"] > 1 else "reference"
    saves = r["saved_bytes"]["lean"] < r["saved_bytes"]["reference"]
    # "lean" is the right fallback when it is faster or, slower, saves memory for backward.
    agrees = set_to == faster or (set_to == "lean" and saves)
    return [f"  {op}: no C kernel ({r['unavailable'].get('cpu', '')}); lean vs reference: "
            f"{r['lean_vs_reference']:.2f}× [{_range(r['lean_vs_reference_quartiles'])}], "
            f"saved for backward {_mib(r['saved_bytes']['lean'])} vs "
            f"{_mib(r['saved_bytes']['reference'])} MiB ({faster} is faster; FAST_FALLBACK has "
            f"{set_to}" + ("" if agrees else ": DISAGREES with this run") + ")"]


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", choices=(*DTYPES, "both"), default="float32",
                        help="bfloat16 is slow on CPUs without AVX-512 BF16 / AMX")
    parser.add_argument("--config", choices=(*CONFIGS, "both"), default="both")
    parser.add_argument("--ops", nargs="+", choices=OPS, default=list(OPS))
    parser.add_argument("--repeats", type=int, default=20, help="timed calls per implementation")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls per implementation")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    dtypes = list(DTYPES) if args.dtype == "both" else [args.dtype]
    configs = list(CONFIGS) if args.config == "both" else [args.config]
    info = machine()
    results = []
    for config in configs:
        for dtype in dtypes:
            for op in args.ops:
                r = bench(op, CONFIGS[config], DTYPES[dtype], args.repeats, args.warmup)
                r["config"] = config
                results.append(r)
    out = {"machine": info, "threads": args.threads, "repeats": args.repeats,
           "warmup": args.warmup, "keep_margin": KEEP_MARGIN,
           "COMPILED_KERNELS": list(backends.COMPILED_KERNELS),
           "FAST_FALLBACK": dict(backends.FAST_FALLBACK), "results": results}
    if args.json:
        print(json.dumps(out, indent=2))
        return

    flags = " ".join(f"{f}={'yes' if v else 'no'}" for f, v in info["flags"].items())
    load = info["load_average"]
    print(f"{info['cpu']}; torch {info['torch']} CPU capability {info['capability']}; {flags}")
    print(f"threads {args.threads}, median of {args.repeats} forward+backward calls after "
          f"{args.warmup} warm-up; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if not (info["flags"]["avx512_bf16"] or info["flags"]["amx_bf16"]):
        print("no AVX-512 BF16 / AMX here: bfloat16 is computed through float32 conversions")
    cpus = os.cpu_count() or 1
    if load[0] + args.threads > cpus + 0.5:
        print(f"BUSY MACHINE: load average {load[0]:.2f} on {cpus} CPUs; at --threads "
              f"{args.threads} the timings below include waiting for other processes (more so "
              "with more threads), so compare ratios rather than milliseconds")
    head = "".join(f"{name + ' ms':>13}{'/ref':>6}" for name in IMPLS)
    for config in configs:
        for dtype in dtypes:
            rows = [r for r in results if r["config"] == config and r["dtype"] == dtype]
            print(f"\nconfig {config}, {dtype}")
            print(f"{'op':<17}{head}  {'fast':>9} {'compiled':>9} {'compile s':>9}")
            for r in rows:
                cells = ""
                for name in IMPLS:
                    t = r["ms"][name]
                    cells += (f"{'n/a':>13}{'':>6}" if t is None else
                              f"{t:>13.3f}{r['ratio_to_reference'][name]:>6.2f}")
                print(f"{r['op']:<17}{cells}  {r['fast_runs']:>9} {r['compiled_runs']:>9} "
                      f"{r['inductor_compile_s']:>9.1f}")
            print("  saved for backward beyond the inputs, MiB: " + "; ".join(
                f"{r['op']} " + " ".join(f"{name} {_mib(n)}"
                                         for name, n in r["saved_bytes"].items())
                for r in rows))
            for r in rows:
                for line in verdict_lines(r):
                    print(line)
    print("\n/ref: time over the reference's (below 1 is faster). fast, compiled: what "
          "backend='fast' and 'compiled' run for these operands. compile s: the inductor "
          "version's first call (short where Inductor's on-disk cache had the graph). C kernel "
          "vs Inductor: the median over repeats of Inductor's time over the C kernel's, kept "
          f"under 'compiled' from {KEEP_MARGIN:.2f}×; lean vs reference likewise; [..]: the "
          "quartiles of those ratios. Inductor compiled one op alone here; in a model it may "
          "also fuse the reference expression with its neighbours.")


if __name__ == "__main__":
    main()
