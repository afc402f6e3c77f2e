"""Where a training step's time goes: torch.profiler over a few steps, each op's own (self) CPU
time put in one category, per step.

    matmul      aten::mm / addmm / bmm / addmv (forward and backward GEMMs)
    attention   the fused CPU attention kernels, and softmax / masking of matmul attention
    kernels     PyTorch's RMSNorm kernel (`F.rms_norm`, blocklab's "fast" norms) and its
                backward node
    elementwise plain tensor ops outside those: Hugging Face's norms, activations and RoPE
                (pow, mean, rsqrt, mul, silu, cat, neg ...), residual adds
    casts       dtype conversions (aten::_to_copy, and the copies they make): counted too
    loss        log-softmax and NLL of the next-token loss, forward and backward
    optimizer   everything under AdamW's step and the gradient-norm clipping (norms, scaling)
    other       the rest: autograd bookkeeping, views, allocation, zeroing

Used by `train_vs_hf.py --profile`; `profile_step(step, steps)` runs `step()` `steps` times under
the profiler and returns ms per step per category and the casts per step.
"""

from __future__ import annotations

from collections import defaultdict

from torch.profiler import ProfilerActivity, profile

CATEGORIES = ("matmul", "attention", "kernels", "elementwise", "casts", "loss", "optimizer",
              "other")
MATMUL = ("aten::mm", "aten::addmm", "aten::bmm", "aten::addmv", "aten::addmv_",
          "aten::baddbmm")
ATTENTION = ("scaled_dot_product", "flash_attention", "aten::_softmax", "aten::softmax",
             "aten::_softmax_backward_data", "aten::masked_fill", "aten::triu")
KERNELS = ("rms_norm",)
CASTS = ("aten::_to_copy", "aten::to", "aten::copy_")
LOSS = ("log_softmax", "nll_loss", "cross_entropy")
OPTIMIZER = ("Optimizer.step", "foreach", "linalg_vector_norm", "aten::stack",
             "clip_grad", "aten::lerp", "aten::addcdiv", "aten::addcmul")
ELEMENTWISE = ("aten::mul", "aten::add", "aten::sub", "aten::div", "aten::pow", "aten::mean",
               "aten::rsqrt", "aten::sqrt", "aten::silu", "aten::gelu", "aten::relu",
               "aten::neg", "aten::cat", "aten::sum", "aten::exp", "aten::tanh",
               "aten::embedding", "aten::index", "aten::where")


def category(chain: list[str]) -> str:
    """The category of one event given its name and its ancestors' names (innermost first)."""
    own = chain[0]
    if any(name.startswith("Optimizer.step") for name in chain):
        return "optimizer"
    if own.startswith(MATMUL):
        return "matmul"
    if any(key in name for name in chain for key in ATTENTION):
        return "attention"
    if any(key in name for name in chain for key in KERNELS):
        return "kernels"
    if own.startswith(CASTS) and any(n.startswith(("aten::_to_copy", "aten::to"))
                                     for n in chain):
        return "casts"
    if any(key in name for name in chain for key in LOSS):
        return "loss"
    if any(key in own for key in OPTIMIZER):
        return "optimizer"
    if own.startswith(ELEMENTWISE) or own.startswith(CASTS):
        return "elementwise"
    return "other"


def profile_step(step, steps: int = 3) -> dict:
    """{"ms": category -> ms per step, "casts": aten::_to_copy calls per step, "total_ms"}."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step()
    ms: dict[str, float] = defaultdict(float)
    casts = 0
    for event in prof.events():
        chain, parent = [event.name], event.cpu_parent
        while parent is not None:
            chain.append(parent.name)
            parent = parent.cpu_parent
        ms[category(chain)] += event.self_cpu_time_total / 1e3 / steps
        casts += event.name == "aten::_to_copy"
    return {"ms": {c: ms.get(c, 0.0) for c in CATEGORIES}, "casts": casts / steps,
            "total_ms": sum(ms.values())}
