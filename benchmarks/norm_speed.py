"""RMSNorm forward + backward speed against LayerNorm, on CPU in one process.

Compares, at d in {256, 1024, 4096} and 8192 rows in float32 (or `--dtype bfloat16`) with 2
threads:

    cpu        blocklab RMSNorm(impl="cpu"): the compiled one-pass C kernels (what
               impl="fast" picks for float32 on CPU)
    lean       blocklab RMSNorm(impl="lean"): the tensor-op autograd Function saving x and 1/s
    reference  blocklab RMSNorm(impl="reference"): the plain PyTorch expression
    torch      torch.nn.RMSNorm
    layernorm  F.layer_norm (a single C++ kernel each way)

Each repeat times every variant once, in turn, so load from other jobs on the machine falls on
all of them alike; the median over repeats is reported, as ratios to F.layer_norm and to the
reference. Achieved bandwidth counts the bytes a pass must move at least (forward: read x,
write y; backward: read x and g, write dx) over the time, as a fraction of the rate of a large
`tensor.copy_` (read + write) measured in the same process.

Every variant gets fresh outputs from the C allocator. Under glibc's default settings a large
fresh tensor is a new mapping whose pages fault on first touch; `--tune-malloc` applies
`blocklab.allocator` (what the trainer does) first, so freed memory is reused instead. The
setting is process-wide, so it falls on all variants alike; run both ways to see its share.

    python benchmarks/norm_speed.py [--repeats 15] [--tune-malloc] [--dtype bfloat16]
                                    [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch
import torch.nn.functional as F

from blocklab.allocator import tune_cpu_allocator
from blocklab.nn.norm import RMSNorm

ROWS = 8192
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
DIMS = (256, 1024, 4096)


def _time(fn, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def copy_bandwidth(repeats: int) -> float:
    """Bytes per second of src.copy_ on 64 MiB (counted as read + write)."""
    src = torch.randn(16 * 1024 * 1024)
    dst = torch.empty_like(src)
    times = [_time(lambda: dst.copy_(src)) for _ in range(repeats)]
    return 2 * src.numel() * 4 / statistics.median(times)


def _variants(d: int, dtype: torch.dtype) -> dict:
    cpu = RMSNorm(d, impl="cpu")  # float32 gains: blocklab's bfloat16 models keep them so
    lean = RMSNorm(d, impl="lean")
    reference = RMSNorm(d, impl="reference")
    torch_rms = torch.nn.RMSNorm(d, eps=1e-6).to(dtype)
    ln_w = torch.ones(d, dtype=dtype, requires_grad=True)
    ln_b = torch.zeros(d, dtype=dtype, requires_grad=True)
    return {
        "cpu": cpu,
        "lean": lean,
        "reference": reference,
        "torch": torch_rms,
        "layernorm": lambda x: F.layer_norm(x, (d,), ln_w, ln_b, 1e-5),
    }


def bench(d: int, repeats: int, dtype: torch.dtype = torch.float32) -> dict:
    x = torch.randn(ROWS, d, dtype=dtype, requires_grad=True)
    g = torch.randn(ROWS, d, dtype=dtype)
    variants = _variants(d, dtype)
    times: dict[str, list[float]] = {name: [] for name in variants}

    def step(fn):
        x.grad = None
        fn(x).backward(g)

    for _ in range(repeats):
        for name, fn in variants.items():
            times[name].append(_time(lambda fn=fn: step(fn), warmup=1))
    return {name: statistics.median(t) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--tune-malloc", action="store_true",
                        help="apply blocklab.allocator's glibc settings first")
    parser.add_argument("--json", default=None)
    parser.add_argument("--dtype", choices=tuple(DTYPES), default="float32",
                        help="of x and the gradient (bfloat16: the C norms' bfloat16 kernels)")
    args = parser.parse_args()
    dtype = DTYPES[args.dtype]
    torch.set_num_threads(2)
    allocator = tune_cpu_allocator() if args.tune_malloc else None
    load = os.getloadavg()
    bandwidth = copy_bandwidth(args.repeats)
    print(f"torch {torch.__version__}, threads 2, load average {load[0]:.2f} {load[1]:.2f} "
          f"{load[2]:.2f}, copy bandwidth {bandwidth / 1e9:.2f} GB/s, "
          f"allocator: {allocator or 'as is'}"
          + ("" if dtype == torch.float32 else f", {args.dtype}"))
    names = ("cpu", "lean", "reference", "torch", "layernorm")
    print(f"{'d':>5} " + " ".join(f"{n + ' ms':>14}" for n in names)
          + f" {'cpu/ln':>7} {'cpu/ref':>8} {'bw frac':>8}")
    results = {"load_average": load, "copy_bandwidth_Bps": bandwidth, "rows": ROWS,
               "allocator": allocator, "dtype": args.dtype, "dims": {}}
    for d in DIMS:
        t = bench(d, args.repeats, dtype)
        # fwd: read x, write y; bwd: read x, g, write dx (the minimum a one-pass kernel each
        # way moves).
        min_bytes = 5 * ROWS * d * dtype.itemsize
        frac = min_bytes / t["cpu"] / bandwidth
        ratios = {"cpu_over_layernorm": t["cpu"] / t["layernorm"],
                  "cpu_over_reference": t["cpu"] / t["reference"],
                  "lean_over_layernorm": t["lean"] / t["layernorm"],
                  "cpu_bandwidth_fraction": frac}
        results["dims"][d] = {**{f"{k}_s": v for k, v in t.items()}, **ratios}
        print(f"{d:>5} " + " ".join(f"{t[n] * 1e3:>14.2f}" for n in names)
              + f" {ratios['cpu_over_layernorm']:>7.2f} {ratios['cpu_over_reference']:>8.2f}"
              f" {frac:>8.2f}")
    print("targets: cpu/ln <= 0.93, cpu/ref <= 0.50")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
