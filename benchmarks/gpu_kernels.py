"""blocklab's Triton kernels against Liger-Kernel and torch.compile on one CUDA device.

Forward + backward, bfloat16, d = 4096 (RMSNorm, add+RMSNorm, SwiGLU on [rows, d] / [rows, m])
and RoPE on q, k [B, H, T, 128]. Every variant is timed by `triton.testing.do_bench` (median)
in the same process; throughput is reported as a ratio to Liger-Kernel's and, for the
memory-bound norms, as a fraction of the device's bandwidth measured by a large copy. Bytes are
the least a fused pair must move (forward: read inputs, write outputs; backward: read the saved
inputs and the gradient, write the input gradients).

    python benchmarks/gpu_kernels.py [--rows 16384] [--json out.json]

Needs a CUDA device and `pip install liger-kernel` (Liger columns are skipped without it).
"""

from __future__ import annotations

import argparse
import json
import sys

import torch
import torch.nn.functional as F

from blocklab.nn import triton_kernels
from blocklab.nn.position import apply_rotary, rotary_cos_sin

D, M, HEAD_DIM = 4096, 11008, 128
DTYPE = torch.bfloat16


def _bench(fn) -> float:
    from triton.testing import do_bench
    return do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e-3


def copy_bandwidth() -> float:
    src = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    return 2 * src.numel() / _bench(lambda: dst.copy_(src))


def _fwd_bwd(fn, inputs, grads):
    def step():
        outs = fn(*inputs)
        outs = outs if isinstance(outs, tuple) else (outs,)
        torch.autograd.backward(outs, grads[:len(outs)])
    return step


def _liger():
    try:
        import liger_kernel.ops.rope as rope
        import liger_kernel.ops.swiglu as swiglu
        import liger_kernel.transformers.rms_norm as rms
    except ImportError:
        return None
    return rms, swiglu, rope


def cases(rows: int) -> dict:
    """name -> (bytes moved, {variant: step})."""
    dev = "cuda"
    x = torch.randn(rows, D, device=dev, dtype=DTYPE, requires_grad=True)
    r = torch.randn(rows, D, device=dev, dtype=DTYPE, requires_grad=True)
    w = torch.ones(D, device=dev, dtype=DTYPE, requires_grad=True)
    g = torch.randn(rows, D, device=dev, dtype=DTYPE)
    gate = torch.randn(rows // 4, M, device=dev, dtype=DTYPE, requires_grad=True)
    up = torch.randn(rows // 4, M, device=dev, dtype=DTYPE, requires_grad=True)
    gm = torch.randn(rows // 4, M, device=dev, dtype=DTYPE)
    B, H = 4, 32
    T = max(1, rows // B)  # B·T = rows tokens
    q = torch.randn(B, H, T, HEAD_DIM, device=dev, dtype=DTYPE, requires_grad=True)
    k = torch.randn(B, H, T, HEAD_DIM, device=dev, dtype=DTYPE, requires_grad=True)
    gq = torch.randn_like(q)
    inv_freq = 1.0 / 10000 ** (torch.arange(0, HEAD_DIM, 2, device=dev).float() / HEAD_DIM)
    cos, sin = rotary_cos_sin(torch.arange(T, device=dev), inv_freq)  # [T, hd] float32

    def rms_ref(a, b):
        a32 = a.float()
        return b * (a32 * torch.rsqrt(a32.pow(2).mean(-1, keepdim=True) + 1e-6)).to(a.dtype)

    compiled_rms = torch.compile(rms_ref)
    compiled_add = torch.compile(lambda a, b, c: (rms_ref(a + b, c), a + b))
    compiled_glu = torch.compile(lambda a, b: F.silu(a) * b)
    compiled_rope = torch.compile(lambda a, b: apply_rotary(a, b, cos, sin))
    e = x.element_size()
    out = {
        "rmsnorm": (5 * rows * D * e, {
            "blocklab": _fwd_bwd(lambda a, b: triton_kernels.rms_norm(a, b), (x, w), (g,)),
            "compile": _fwd_bwd(compiled_rms, (x, w), (g,))}),
        "add+rmsnorm": (8 * rows * D * e, {
            "blocklab": _fwd_bwd(lambda a, b, c: triton_kernels.add_rms_norm(a, b, c),
                                 (x, r, w), (g, g)),
            "compile": _fwd_bwd(compiled_add, (x, r, w), (g, g))}),
        "swiglu": (8 * gate.numel() * e, {
            "blocklab": _fwd_bwd(lambda a, b: triton_kernels.gated_activation(a, b),
                                 (gate, up), (gm,)),
            "compile": _fwd_bwd(compiled_glu, (gate, up), (gm,))}),
        "rope": (8 * q.numel() * e, {
            "blocklab": _fwd_bwd(lambda a, b: apply_rotary(a, b, cos, sin, impl="triton"),
                                 (q, k), (gq, gq)),
            "compile": _fwd_bwd(compiled_rope, (q, k), (gq, gq))}),
    }
    liger = _liger()
    if liger is not None:
        rms, swiglu, rope = liger
        lnorm = rms.LigerRMSNorm(D, eps=1e-6).to(dev, DTYPE)
        cos_l, sin_l = cos[None].to(DTYPE), sin[None].to(DTYPE)  # [1, T, hd]
        out["rmsnorm"][1]["liger"] = _fwd_bwd(lambda a: lnorm(a), (x,), (g,))
        out["swiglu"][1]["liger"] = _fwd_bwd(swiglu.LigerSiLUMulFunction.apply, (gate, up),
                                             (gm,))
        out["rope"][1]["liger"] = _fwd_bwd(
            lambda a, b: rope.LigerRopeFunction.apply(a, b, cos_l, sin_l), (q, k), (gq, gq))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=16384)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("gpu_kernels.py needs a CUDA device; none is visible", file=sys.stderr)
        return 2
    bandwidth = copy_bandwidth()
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, copy bandwidth "
          f"{bandwidth / 1e9:.0f} GB/s, bf16, d={D}")
    results = {"device": torch.cuda.get_device_name(), "copy_bandwidth_Bps": bandwidth,
               "kernels": {}}
    for name, (nbytes, variants) in cases(args.rows).items():
        times = {v: _bench(step) for v, step in variants.items()}
        row = {f"{v}_s": t for v, t in times.items()}
        row["blocklab_bandwidth_fraction"] = nbytes / times["blocklab"] / bandwidth
        for peer in ("liger", "compile"):
            if peer in times:
                row[f"blocklab_speedup_vs_{peer}"] = times[peer] / times["blocklab"]
        results["kernels"][name] = row
        print(f"{name:>12}: " + "  ".join(f"{v} {t * 1e6:8.1f} µs" for v, t in times.items())
              + "  " + "  ".join(f"{k.removeprefix('blocklab_')} {v:.2f}"
                                 for k, v in row.items() if not k.endswith("_s")))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
