"""Which implementation each op of `blocklab.nn` runs: one registry and one explicit switch.

The ops that have more than one implementation, and the implementations:

    op                 reference              lean                cpu           triton
    rms_norm           the plain expression   autograd Function   C kernel      Triton kernel
    add_rms_norm       h = x + r; norm(h)     one Function        one C pass    one kernel
    gated_activation   φ(gate) · up           Function            C kernel      Triton kernel
    rope               x·cos + rotate(x)·sin  two halves, no copy C kernel      Triton kernel

    reference  the readable definition; every other implementation is tested against it
    lean       pure PyTorch autograd Functions that save less for backward (`blocklab.nn.lean`);
               any dtype and device
    cpu        hand-written C, one pass each way (`blocklab.nn.cpu_kernels`); float32 on CPU,
               where a C compiler built them; torch.library custom ops, so the compiler
               traces through them
    triton     Triton kernels (`blocklab.nn.triton_kernels`); CUDA

A model runs one backend (`DecoderLM(config, backend=...)`, `--backend`), modelled on Hugging
Face's `attn_implementation`:

    reference  every op its reference implementation
    fast       eager; each op the fastest implementation that can run on the tensor at hand:
               triton on CUDA, cpu for float32 on CPU, else `FAST_FALLBACK` (measured by
               `benchmarks/backend_ops.py`)
    compiled   `torch.compile` over the model; inside the graph an op runs a hand-written kernel
               only where it beats the code Inductor generates from the reference expression
               (`COMPILED_KERNELS`, by the same benchmark), else the reference expression, which
               Inductor fuses with its neighbours

A module's `impl` holds a backend name or an implementation name; `resolve` turns it into the
implementation for one call. An implementation asked for by name that cannot run raises
`KernelUnavailable`; a backend never fails, it picks what can run. `DecoderLM.backends()` says
what each op runs, and training results record it.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from blocklab.errors import InputError, KernelUnavailable

BACKENDS = ("reference", "fast", "compiled")
IMPLEMENTATIONS = ("reference", "lean", "cpu", "triton")
CHOICES = BACKENDS + IMPLEMENTATIONS
OPS = ("rms_norm", "add_rms_norm", "gated_activation", "rope")

# What "fast" runs where no kernel can, by benchmarks/backend_ops.py (float32 and bfloat16, CPU):
# the lean norms are faster than the reference (and save memory); the lean gated activation
# recomputes φ in backward and takes about 3× the reference's time, whose autograd backward is
# one silu_backward; lean RoPE saves nothing (both keep only cos and sin) and is 1.3-1.8×
# slower than the reference.
FAST_FALLBACK = {"rms_norm": "lean", "add_rms_norm": "lean", "gated_activation": "reference",
                 "rope": "reference"}
# Ops whose C kernel beats Inductor's code for the reference expression on CPU float32, by the
# same benchmark (one thread, configs P and bar, median of per-repeat ratios, kept from 1.05×):
# RMSNorm 1.24-1.39×, add + RMSNorm 1.20-1.39×, the gated activation 1.08-1.13×, RoPE
# 1.38-1.56×. Elsewhere (bfloat16, CUDA) "compiled" runs the reference expression, which
# Inductor fuses with its neighbours.
COMPILED_KERNELS = ("rms_norm", "add_rms_norm", "gated_activation", "rope")

_REGISTRY: dict[tuple[str, str], Callable[..., object]] = {}


def check_choice(owner: str, impl: str) -> str:
    """`impl` if it names a backend or an implementation; else a one-line InputError."""
    if impl not in CHOICES:
        raise InputError(f"{owner}: impl={impl!r} is not allowed; expected a backend "
                         f"{list(BACKENDS)} or an implementation {list(IMPLEMENTATIONS)}")
    return impl


def check_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise InputError(f"backend={backend!r} is not allowed; expected one of "
                         f"{list(BACKENDS)}")
    return backend


def register(op: str, name: str, fn: Callable[..., object]) -> None:
    """Make `fn` the implementation `name` of `op` (done once, by the module defining it)."""
    if op not in OPS or name not in IMPLEMENTATIONS:
        raise ValueError(f"cannot register {name!r} for {op!r}: unknown op or implementation")
    _REGISTRY[op, name] = fn


def implementation(op: str, name: str) -> Callable[..., object]:
    """The callable registered as implementation `name` of `op`."""
    return _REGISTRY[op, name]


def _kernel_reason(op: str, name: str, x: Tensor, other: Tensor | None) -> str | None:
    """Why kernel family `name` cannot run `op` on x (and other), or None."""
    if name == "cpu":
        from blocklab.nn import cpu_kernels
        return cpu_kernels.unavailable_reason(x, other)
    from blocklab.nn import triton_kernels
    reason = triton_kernels.unavailable_reason(x)
    # The Triton norms and RoPE cast a float32 gain or cos/sin themselves; gate and up of the
    # gated activation are read as one dtype.
    if reason is None and op == "gated_activation" and other is not None \
            and other.dtype != x.dtype:
        reason = f"gate and up of different dtypes ({x.dtype}, {other.dtype})"
    return reason


def _kernel_runs(op: str, name: str, x: Tensor, other: Tensor | None) -> bool:
    return _kernel_reason(op, name, x, other) is None


def resolve(op: str, impl: str, x: Tensor, other: Tensor | None = None) -> str:
    """The implementation ("reference", "lean", "cpu" or "triton") that `impl` means for one
    call of `op` on x, with `other` the op's second operand whose dtype matters (the norm's
    gain, the gated activation's up, RoPE's cos).

    A backend never fails; an implementation named explicitly raises `KernelUnavailable`
    (a RuntimeError) with the reason when it cannot run on x.
    """
    if impl in ("reference", "lean"):
        return impl
    if impl in ("cpu", "triton"):
        reason = _kernel_reason(op, impl, x, other)
        if reason is not None:
            raise KernelUnavailable(f"{op} impl={impl!r} cannot run here: {reason}; use "
                                    "impl='fast' or 'lean'")
        return impl
    if impl == "compiled" or torch.compiler.is_compiling():
        if op in COMPILED_KERNELS and x.device.type == "cpu" and _kernel_runs(op, "cpu", x, other):
            return "cpu"
        return "reference"
    if impl != "fast":
        raise InputError(f"impl={impl!r} is not allowed; expected one of {list(CHOICES)}")
    if x.is_cuda:
        if _kernel_runs(op, "triton", x, other):
            return "triton"
    elif _kernel_runs(op, "cpu", x, other):
        return "cpu"
    return FAST_FALLBACK[op]
