"""Which implementation each op of `blocklab.nn` runs: one registry and one explicit switch.

The ops that have more than one implementation, and the implementations:

    op                 reference              lean                cpu           triton
    rms_norm           the plain expression   autograd Function   C kernel      Triton kernel
    add_rms_norm       h = x + r; norm(h)     one Function        one C pass    one kernel
    gated_activation   φ(gate) · up           -                   C kernel      Triton kernel
    rope               x·cos + rotate(x)·sin  -                   C kernel      Triton kernel

    reference  the readable definition; every other implementation is tested against it, and
               it runs whatever it is given (any dtype, device and gated activation)
    lean       pure PyTorch autograd Functions that save less for backward (`blocklab.nn.lean`);
               the norms only: a lean gated activation and a lean RoPE were never faster than
               the reference (`benchmarks/backend_ops.py`) and were removed
    cpu        hand-written C, one pass each way (`blocklab.nn.cpu_kernels`); float32 on CPU,
               where a C compiler built them; torch.library custom ops, so the compiler
               traces through them
    triton     Triton kernels (`blocklab.nn.triton_kernels`); CUDA

Each implementation is registered with its `Capabilities`: the dtypes and devices it takes and,
for the gated activation, the activations it has code for. `resolve` checks them (then whether
the kernels loaded here): a kernel is never handed an activation it was not written for.

A model runs one backend (`DecoderLM(config, backend=...)`, `--backend`), modelled on Hugging
Face's `attn_implementation`:

    reference  every op its reference implementation
    fast       eager; each op the fastest implementation that can run the call at hand:
               triton on CUDA, cpu for float32 on CPU, else `FAST_FALLBACK` (measured by
               `benchmarks/backend_ops.py`), else the reference
    compiled   `torch.compile` over the model; inside the graph an op runs a hand-written kernel
               only where it beats the code Inductor generates from the reference expression
               (`COMPILED_KERNELS`, by the same benchmark), else the reference expression, which
               Inductor fuses with its neighbours

A module's `impl` holds a backend name or an implementation name; `resolve` turns it into the
implementation for one call. An implementation asked for by name that cannot run the call
raises `KernelUnavailable` (naming the op, the implementation, what it cannot do and what it
supports); a backend never fails, it picks what can run. `DecoderLM.backends()` says what each
op runs, and training results record it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from blocklab.errors import InputError, KernelUnavailable

BACKENDS = ("reference", "fast", "compiled")
IMPLEMENTATIONS = ("reference", "lean", "cpu", "triton")
CHOICES = BACKENDS + IMPLEMENTATIONS
OPS = ("rms_norm", "add_rms_norm", "gated_activation", "rope")
# Ops called with an activation name; `resolve` needs it to check the kernels' declared sets.
ACTIVATION_OPS = ("gated_activation",)

# What "fast" runs where no kernel can (float64 and float16 on CPU; no C compiler), by
# benchmarks/backend_ops.py: the lean norms take 0.75-0.81× the reference's time in bfloat16
# (P and bar, one thread) and save the normalised copies for backward. The other ops have no
# implementation besides the kernels that beats the reference.
FAST_FALLBACK = {"rms_norm": "lean", "add_rms_norm": "lean", "gated_activation": "reference",
                 "rope": "reference"}
# Ops whose C kernel beats Inductor's code for the reference expression on CPU float32, by the
# same benchmark (one thread, configs P and bar, median of per-repeat ratios, kept from 1.05×):
# RMSNorm 1.24-1.39×, add + RMSNorm 1.20-1.39×, the gated activation 1.08-1.13×, RoPE
# 1.38-1.56×. Elsewhere (bfloat16, CUDA) "compiled" runs the reference expression, which
# Inductor fuses with its neighbours.
COMPILED_KERNELS = ("rms_norm", "add_rms_norm", "gated_activation", "rope")


@dataclass(frozen=True)
class Capabilities:
    """What one registered implementation can run, declared when it is registered.

    dtypes: the dtypes of the op's first operand (x, gate) it takes.
    devices: the device types it runs on (x.device.type); None: any.
    activations: the gated activations it has code for; None: any (the reference, which
        applies the activation function itself) or an op that takes none.
    """

    dtypes: frozenset[torch.dtype]
    devices: frozenset[str] | None = None
    activations: frozenset[str] | None = None

    def refusal(self, x: Tensor, activation: str | None) -> str | None:
        """What about a call on x with `activation` this implementation cannot do, or None."""
        if self.activations is not None and activation not in self.activations:
            return f"activation {activation!r} (it supports {_listed(self.activations)})"
        if x.dtype not in self.dtypes:
            return f"dtype {_dtype(x.dtype)} (it supports {_listed(map(_dtype, self.dtypes))})"
        if self.devices is not None and x.device.type not in self.devices:
            return f"device {x.device.type!r} (it supports {_listed(self.devices)})"
        return None


def _dtype(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _listed(names) -> str:
    return ", ".join(sorted(names))


FLOATS = frozenset({torch.float16, torch.bfloat16, torch.float32, torch.float64})
# Triton's interpreter (TRITON_INTERPRET=1, read when triton is imported) runs the kernels on
# CPU tensors; that is how they are tested without a GPU.
_TRITON_DEVICES = frozenset({"cuda", "cpu"}) \
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0") else frozenset({"cuda"})
ANYWHERE = Capabilities(dtypes=FLOATS)
# The C kernels also take bfloat16 (bfloat16 in and out, float32 inside; eager mode).
CPU_KERNEL_BF16 = Capabilities(dtypes=frozenset({torch.float32, torch.bfloat16}),
                               devices=frozenset({"cpu"}))
TRITON_KERNEL = Capabilities(dtypes=frozenset({torch.float16, torch.bfloat16, torch.float32}),
                             devices=_TRITON_DEVICES)


# Why a registered kernel family cannot run a call it declared it can (it did not build or
# load, or reads the call's second operand in another dtype), or None: (x, other) -> reason.
Probe = Callable[[Tensor, "Tensor | None"], "str | None"]


@dataclass(frozen=True)
class Registered:
    fn: Callable[..., object]
    capabilities: Capabilities
    loaded: Probe | None = None


_REGISTRY: dict[tuple[str, str], Registered] = {}


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


def register(op: str, name: str, fn: Callable[..., object],
             capabilities: Capabilities, loaded: Probe | None = None) -> None:
    """Make `fn` the implementation `name` of `op`, able to run what `capabilities` declares
    when `loaded` (x, other) says nothing against it (done once, by the module defining it).

    The probe is how this registry learns about kernels without importing them: the kernel
    modules import this one for their fallbacks, so an import back would be a circle."""
    if op not in OPS or name not in IMPLEMENTATIONS:
        raise ValueError(f"cannot register {name!r} for {op!r}: unknown op or implementation")
    if not isinstance(capabilities, Capabilities):
        raise TypeError(f"register({op!r}, {name!r}): capabilities must be a Capabilities, "
                        f"not {type(capabilities).__name__}")
    _REGISTRY[op, name] = Registered(fn, capabilities, loaded)


def implementations(op: str) -> tuple[str, ...]:
    """The implementations registered for `op`, in the order of IMPLEMENTATIONS."""
    return tuple(name for name in IMPLEMENTATIONS if (op, name) in _REGISTRY)


def implementation(op: str, name: str) -> Callable[..., object]:
    """The callable registered as implementation `name` of `op`."""
    return _entry(op, name).fn


def capabilities(op: str, name: str) -> Capabilities:
    """What implementation `name` of `op` declared it can run."""
    return _entry(op, name).capabilities


def _entry(op: str, name: str) -> Registered:
    try:
        return _REGISTRY[op, name]
    except KeyError:
        raise KernelUnavailable(f"{op} has no implementation {name!r}; it has "
                                f"{list(implementations(op))}") from None


def unavailable_reason(op: str, name: str, x: Tensor, other: Tensor | None = None,
                       activation: str | None = None) -> str | None:
    """Why implementation `name` cannot run `op` on x (other, activation), or None when it can.

    The reference runs whatever it is given; any other implementation must be registered,
    declare the activation, x's dtype and x's device, and (kernels) have loaded.
    """
    if name == "reference":
        return None
    if (op, name) not in _REGISTRY:
        return f"{op} has no {name!r} implementation (it has {_listed(implementations(op))})"
    entry = _REGISTRY[op, name]
    refused = entry.capabilities.refusal(x, activation)
    if refused is not None:
        return f"unsupported {refused}"
    return None if entry.loaded is None else entry.loaded(x, other)


def resolve(op: str, impl: str, x: Tensor, other: Tensor | None = None,
            activation: str | None = None) -> str:
    """The implementation ("reference", "lean", "cpu" or "triton") that `impl` means for one
    call of `op` on x, with `other` the op's second operand whose dtype matters (the norm's
    gain, the gated activation's up, RoPE's cos) and `activation` the gated activation's name
    (required for the ops in ACTIVATION_OPS).

    A backend never fails: it takes the first of its candidates whose `unavailable_reason` is
    None, the reference last. An implementation named explicitly raises `KernelUnavailable`
    (a RuntimeError) with the reason when it cannot run the call.
    """
    if op in ACTIVATION_OPS and activation is None:
        raise InputError(f"resolve({op!r}): activation is required, to check what each "
                         "implementation supports")
    if impl in IMPLEMENTATIONS:
        reason = unavailable_reason(op, impl, x, other, activation)
        if reason is not None:
            raise KernelUnavailable(f"{op} impl={impl!r} cannot run here: {reason}; use "
                                    "impl='fast' or 'reference'")
        return impl
    if impl == "compiled" or torch.compiler.is_compiling():
        candidates = ("cpu",) if op in COMPILED_KERNELS and x.device.type == "cpu" else ()
    elif impl == "fast":
        candidates = ("triton" if x.is_cuda else "cpu", FAST_FALLBACK[op])
    else:
        raise InputError(f"impl={impl!r} is not allowed; expected one of {list(CHOICES)}")
    for name in candidates:
        if unavailable_reason(op, name, x, other, activation) is None:
            return name
    return "reference"
