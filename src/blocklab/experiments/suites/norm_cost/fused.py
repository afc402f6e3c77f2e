"""Like for like: RMSNorm against LayerNorm timed with equally fused kernels
(`time_like_for_like`), PyTorch's own where both of its functional norms run fused here
(`torch_norms_fused`), else both through torch.compile (`like_method`)."""

from __future__ import annotations

from blocklab.experiments.env import torch_threads
from blocklab.experiments.suites.norm_cost.implementations import EPS
from blocklab.experiments.suites.norm_cost.kernels import time_kernels
from blocklab.experiments.suites.norm_cost.records import LikeForLikeTimes
from blocklab.experiments.suites.norm_cost.sizes import PASSES


def _backward_nodes(y) -> int:
    """Autograd nodes between the output `y` and its leaves (AccumulateGrad not counted): 1
    when one fused op computed y, one per elementary op when a composite did."""
    seen, stack = set(), [y.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(child for child, _ in node.next_functions)
    return sum(1 for node in seen if "AccumulateGrad" not in node.name())


def torch_norms_fused(d: int = 8) -> dict[str, bool]:
    """{norm: whether PyTorch's functional norm (F.rms_norm, F.layer_norm) runs as one fused op
    on this build and CPU}, read off the autograd graph of one call on a [2, d] input.

    In torch 2.13 on CPU, F.rms_norm dispatches to aten::_fused_rms_norm, whose CPU kernel is
    `rms_norm_composite` (`_fused_rms_norm_cuda` exists for CUDA only): pow, mean, add, rsqrt
    and two muls, each its own kernel and its own backward node. F.layer_norm runs
    aten::native_layer_norm, one fused CPU kernel with one fused backward.
    """
    import torch
    import torch.nn.functional as F

    x = torch.randn(2, d, requires_grad=True)
    weight = torch.ones(d, requires_grad=True)
    bias = torch.zeros(d, requires_grad=True)
    rms = F.rms_norm(x, (d,), weight, EPS)
    ln = F.layer_norm(x, (d,), weight, bias, EPS)
    return {"rmsnorm": _backward_nodes(rms) == 1, "layernorm": _backward_nodes(ln) == 1}


# What each like-for-like method times, by norm (the kinds of `build_implementations`).
LIKE_KERNELS = {
    "torch-fused": {"rmsnorm": "torch.nn.RMSNorm (F.rms_norm, fused)",
                    "layernorm": "torch.nn.LayerNorm (F.layer_norm, fused)"},
    "torch.compile": {"rmsnorm": "torch.compile of x·rsqrt(mean(x²) + ε)·γ (inductor)",
                      "layernorm": "torch.compile of (x − μ)·rsqrt(mean((x − μ)²) + ε)·γ + β "
                                   "(inductor)"},
}
_LIKE_KIND = {"torch-fused": "torch", "torch.compile": "compiled"}


def like_method(fused: dict[str, bool]) -> str:
    """The like-for-like method: PyTorch's own kernels when both norms run fused, else both
    through torch.compile, which fuses each pass of each the same way."""
    return "torch-fused" if all(fused.values()) else "torch.compile"


def time_like_for_like(d: int, rows: int, *, repeats: int, threads: int,
                       block_s: float = 0.01, seed: int = 0) -> LikeForLikeTimes:
    """RMSNorm and LayerNorm on a [rows, d] input timed with equally fused kernels
    (`like_method` of `torch_norms_fused`) by `time_kernels`: forward+backward, the training
    pass the claim is about, plus the no-grad forward when both are PyTorch's fused kernels
    (a compiled module compiles once more for it, ~2 s each here; the --size full kernel runs
    time the compiled forward). Compiled ones compile cold. Returns time_kernels' record with
    the method, `torch_fused`, the kernels (norm -> what ran) and the kind of
    `build_implementations` timed (`LikeForLikeTimes`)."""
    with torch_threads(threads):
        fused = torch_norms_fused()
    method = like_method(fused)
    kind = _LIKE_KIND[method]
    passes = PASSES if kind != "compiled" else ("fwdbwd",)
    timed = time_kernels(d, rows, repeats=repeats, compile=kind == "compiled",
                         threads=threads, block_s=block_s, seed=seed, kinds=(kind,),
                         passes=passes)
    return LikeForLikeTimes(**{**vars(timed), "kind": "like-for-like"}, method=method,
                            torch_fused=fused, kernels=dict(LIKE_KERNELS[method]),
                            timed_kind=kind)
