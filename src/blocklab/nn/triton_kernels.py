"""Triton kernels: RMSNorm, residual-add + RMSNorm, gated activations and RoPE (each forward
and backward).

The same maths and cast orders as `blocklab.nn.lean` (see there and `blocklab.nn.norm`):
one program normalises one row in float32 and stores y and 1/s; the backward runs over blocks
of rows, writing dx and one partial dγ per program, summed afterwards in float32.

    forward:  s = sqrt(mean(x²) + eps);  y = γ · (x/s).to(dtype)  (llama)
                                         y = ((x/s) · γ).to(dtype) (gemma)
    backward: x̂ = x/s;  dx = (1/s)(g·γ − x̂ · mean(g·γ·x̂));  dγ = Σ_rows g · x̂

Gated activations: y = φ(gate) · up (SwiGLU, exact-GELU GeGLU) over [N, m] rows, where gate
and up may be strided views (the halves of a fused gate_up output); φ(gate) is rounded to the
input dtype before the product, as the eager `act(gate) * up` rounds it, and recomputed in
backward from the saved gate and up.

RoPE (half_split layout): one program rotates one head vector in place of the two halves,
    out1 = x1·c1 − x2·s1,  out2 = x2·c2 + x1·s2   (channels past r copied)
and the backward applies the inverse rotation to the gradient:
    dx1 = g1·c1 + g2·s2,   dx2 = g2·c2 − g1·s1.

Runs on CUDA tensors, or on CPU tensors under Triton's interpreter (TRITON_INTERPRET=1 set
before triton is imported), which is how the tests check it without a GPU.

The kernels are torch.library custom ops: `torch.ops.blocklab.triton_rms_norm`,
`triton_add_rms_norm`, `triton_rms_norm_backward`, `triton_gated_activation`,
`triton_gated_activation_backward`, `triton_rope`. Each has a fake implementation (its outputs'
shapes, dtypes and devices from its inputs'), and the forward ones an autograd formula calling
the backward ones, so torch.compile keeps each launch as one opaque call in its forward and
backward graphs instead of breaking the graph at the launch. They are `custom_op`s, not
`triton_op`s: a triton_op is traced into Inductor's own Triton code, which needs CUDA, and
these must also run on CPU tensors under the interpreter. Importing this module registers them
(cheaply, whether or not triton is installed); nothing is compiled or launched before a call.

Gradients are the kernels' first-order ones, also under create_graph=True (as before they were
custom ops): the norm and gated backward ops have no autograd formula of their own, so
differentiating their outputs again raises instead of silently dropping terms. RoPE is linear:
its backward is the same op rotating the other way, differentiable in turn.

Outputs are fresh contiguous tensors (a custom op's output must not alias an input); a
gradient that is not needed comes back from a backward op as an empty [0] tensor.

Shape legend: N: rows (all leading axes flattened), d: the normalised axis.
"""

from __future__ import annotations

import os

import torch
from torch import Tensor

from blocklab.errors import InputError, KernelUnavailable
from blocklab.nn.lean import check_rope_operands, rows_of

try:
    import triton
    import triton.language as tl
except ImportError:  # the package is optional; `unavailable_reason` says so
    triton = None
    tl = None

_CASTS = ("llama", "gemma")


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def unavailable_reason(x: Tensor) -> str | None:
    """Why the kernels cannot run on x, or None when they can."""
    if triton is None:
        return "the triton package is not installed"
    if not (x.is_cuda or _interpreting()):
        return (f"x is on {x.device.type}; the kernels need a CUDA tensor (or "
                "TRITON_INTERPRET=1 set before importing triton)")
    if x.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        return f"dtype {x.dtype} is not supported (float32, float16 or bfloat16)"
    return None


def available(x: Tensor) -> bool:
    return unavailable_reason(x) is None


if triton is not None:

    @triton.jit
    def _rms_fwd_kernel(X, R, H, W, Y, RINV, stride_x, stride_r, stride_h, stride_y, d, eps,
                        BLOCK: tl.constexpr, GEMMA: tl.constexpr, OFFSET: tl.constexpr,
                        ADD: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < d
        x = tl.load(X + row * stride_x + cols, mask=mask, other=0.0)
        if ADD:  # h = x + residual, rounded to x's dtype as the eager sum would be
            r = tl.load(R + row * stride_r + cols, mask=mask, other=0.0)
            x = (x.to(tl.float32) + r.to(tl.float32)).to(X.dtype.element_ty)
            tl.store(H + row * stride_h + cols, x, mask=mask)
        x = x.to(tl.float32)
        rinv = tl.rsqrt(tl.sum(x * x, axis=0) / d + eps)
        tl.store(RINV + row, rinv)
        normed = x * rinv
        w = tl.load(W + cols, mask=mask, other=0.0)
        if GEMMA:
            gain = w.to(tl.float32)
            if OFFSET:
                gain = gain + 1.0
            y = normed * gain
        else:
            if OFFSET:
                w = (w.to(tl.float32) + 1.0).to(W.dtype.element_ty)
            # llama: cast x̂ to the output dtype first, then multiply by the gain
            y = normed.to(Y.dtype.element_ty).to(tl.float32) * w.to(tl.float32)
        tl.store(Y + row * stride_y + cols, y.to(Y.dtype.element_ty), mask=mask)

    @triton.jit
    def _rms_bwd_kernel(DY, X, W, RINV, DX, DW, stride_dy, stride_x, stride_dx, n_rows, d,
                        rows_per_program, BLOCK: tl.constexpr, OFFSET: tl.constexpr,
                        ROUND_XHAT: tl.constexpr):
        pid = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < d
        gain = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
        if OFFSET:
            gain = gain + 1.0
        dw = tl.zeros([BLOCK], dtype=tl.float32)
        for i in range(0, rows_per_program):
            row = pid * rows_per_program + i
            m = cols < tl.where(row < n_rows, d, 0)  # no columns for rows past the end
            x = tl.load(X + row * stride_x + cols, mask=m, other=0.0).to(tl.float32)
            g = tl.load(DY + row * stride_dy + cols, mask=m, other=0.0).to(tl.float32)
            rinv = tl.load(RINV + tl.minimum(row, n_rows - 1))  # rows past the end: x, g are 0
            x_hat = x * rinv
            g_gain = g * gain
            mean_dot = tl.sum(g_gain * x_hat, axis=0) / d
            dx = (g_gain - x_hat * mean_dot) * rinv
            tl.store(DX + row * stride_dx + cols, dx.to(DX.dtype.element_ty), mask=m)
            if ROUND_XHAT:  # llama: the gain multiplied x̂ cast to x's dtype
                x_hat = x_hat.to(X.dtype.element_ty).to(tl.float32)
            dw += g * x_hat
        tl.store(DW + pid * d + cols, dw, mask=mask)


def _block(d: int) -> int:
    return triton.next_power_of_2(d)


# --- the kernels as custom ops (see the module docstring) -------------------------------------
# Each op checks its operands itself, so that a direct torch.ops.blocklab call cannot make a
# kernel read out of bounds or launch where it cannot run.
_FLOATS = (torch.float32, torch.float16, torch.bfloat16)
# a gain or cos/sin is loaded and widened to float32 by the kernel, whatever x's dtype
_CONSTANTS = (*_FLOATS, torch.float64)


def _launchable(op: str, x: Tensor) -> None:
    reason = unavailable_reason(x)
    if reason is not None:
        raise KernelUnavailable(f"blocklab::{op} cannot run: {reason}")


def _operand(op: str, name: str, t: Tensor, shape, like: Tensor,
             dtypes: tuple[torch.dtype, ...] = _FLOATS) -> None:
    """t must have `shape`, one of `dtypes` and like's device."""
    if t.shape != tuple(shape) or t.dtype not in dtypes or t.device != like.device:
        allowed = "/".join(str(d).removeprefix("torch.") for d in dtypes)
        raise InputError(f"blocklab::{op}: {name} is {t.dtype} {tuple(t.shape)} on {t.device}; "
                         f"expected {allowed} {tuple(shape)} on {like.device}")


def _rms_operands(op: str, x: Tensor, weight: Tensor, cast: str) -> None:
    _launchable(op, x)
    if cast not in _CASTS:
        raise InputError(f"blocklab::{op}: cast={cast!r} is not allowed; expected one of "
                         f"{list(_CASTS)}")
    _operand(op, "weight", weight, x.shape[-1:], x, _CONSTANTS)


def _forward(x: Tensor, residual: Tensor | None, weight: Tensor, eps: float, cast: str,
             unit_offset: bool) -> tuple[Tensor, Tensor | None, Tensor]:
    """x, residual: [..., d] -> (y: [..., d], h = x + residual: [..., d] or None without a
    residual, 1/s: [..., 1] float32), all fresh and contiguous."""
    d = x.shape[-1]
    x2 = x.reshape(-1, d).contiguous()
    n = x2.shape[0]
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    rinv = torch.empty(x.shape[:-1] + (1,), dtype=torch.float32, device=x.device)
    h = None
    r2 = h2 = x2  # without a residual the kernel neither reads R nor writes H
    if residual is not None:
        r2 = residual.reshape(-1, d).contiguous()
        h = torch.empty_like(y)
        h2 = h.view(-1, d)
    y2 = y.view(-1, d)
    if n:
        _rms_fwd_kernel[(n,)](x2, r2, h2, weight.contiguous(), y2, rinv, x2.stride(0),
                              r2.stride(0), h2.stride(0), y2.stride(0), d, eps,
                              BLOCK=_block(d), GEMMA=cast == "gemma", OFFSET=unit_offset,
                              ADD=residual is not None)
    return y, h, rinv


def _programs(x: Tensor, n: int) -> int:
    if x.is_cuda:
        sms = torch.cuda.get_device_properties(x.device).multi_processor_count
        return max(1, min(n, 4 * sms))
    return max(1, min(n, 8))  # the interpreter: few programs, each looping over rows


@torch.library.custom_op("blocklab::triton_rms_norm", mutates_args=())
def _rms_norm_op(x: Tensor, weight: Tensor, eps: float, cast: str,
                 unit_offset: bool) -> tuple[Tensor, Tensor]:
    """x: [..., d], weight: [d] -> (y: [..., d] in x's dtype, 1/s: [..., 1] float32, kept for
    the backward)."""
    _rms_operands("triton_rms_norm", x, weight, cast)
    y, _, rinv = _forward(x, None, weight, eps, cast, unit_offset)
    return y, rinv


@_rms_norm_op.register_fake
def _(x, weight, eps, cast, unit_offset):
    return x.new_empty(x.shape), x.new_empty(x.shape[:-1] + (1,), dtype=torch.float32)


@torch.library.custom_op("blocklab::triton_add_rms_norm", mutates_args=())
def _add_rms_norm_op(x: Tensor, residual: Tensor, weight: Tensor, eps: float, cast: str,
                     unit_offset: bool) -> tuple[Tensor, Tensor, Tensor]:
    """x, residual: [..., d] (one dtype), weight: [d] -> (y: [..., d], h = x + residual:
    [..., d], 1/s: [..., 1] float32)."""
    op = "triton_add_rms_norm"
    _rms_operands(op, x, weight, cast)
    _operand(op, "residual", residual, x.shape, x, (x.dtype,))
    return _forward(x, residual, weight, eps, cast, unit_offset)


@_add_rms_norm_op.register_fake
def _(x, residual, weight, eps, cast, unit_offset):
    return (x.new_empty(x.shape), x.new_empty(x.shape),
            x.new_empty(x.shape[:-1] + (1,), dtype=torch.float32))


@torch.library.custom_op("blocklab::triton_rms_norm_backward", mutates_args=())
def _rms_norm_backward_op(grad: Tensor, x: Tensor, rinv: Tensor, weight: Tensor, cast: str,
                          unit_offset: bool, weight_grad: bool) -> tuple[Tensor, Tensor]:
    """grad, x: [..., d] (x: the normalised input, h for add_rms_norm), 1/s: [..., 1],
    weight: [d] -> (dx: [..., d] in x's dtype, dγ: [d] in weight's dtype, or [0] when not
    weight_grad)."""
    op = "triton_rms_norm_backward"
    _rms_operands(op, x, weight, cast)
    _operand(op, "grad", grad, x.shape, x)
    _operand(op, "rinv", rinv, x.shape[:-1] + (1,), x, (torch.float32,))
    d = x.shape[-1]
    h = x.reshape(-1, d).contiguous()
    g2 = grad.reshape(-1, d).contiguous()
    n = h.shape[0]
    dx = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    dx2 = dx.view(-1, d)
    programs = _programs(h, n)
    dw_partial = torch.zeros(programs, d, dtype=torch.float32, device=x.device)
    if n:
        rows = triton.cdiv(n, programs)
        _rms_bwd_kernel[(programs,)](g2, h, weight.contiguous(), rinv.contiguous(), dx2,
                                     dw_partial, g2.stride(0), h.stride(0), dx2.stride(0), n, d,
                                     rows, BLOCK=_block(d), OFFSET=unit_offset,
                                     ROUND_XHAT=cast == "llama" and x.dtype != torch.float32)
    if not weight_grad:
        return dx, weight.new_empty((0,))
    return dx, dw_partial.sum(0).to(weight.dtype)


@_rms_norm_backward_op.register_fake
def _(grad, x, rinv, weight, cast, unit_offset, weight_grad):
    return x.new_empty(x.shape), weight.new_empty((x.shape[-1] if weight_grad else 0,))


def _rms_setup(ctx, inputs, output) -> None:
    x, weight, _, cast, unit_offset = inputs
    _, rinv = output
    ctx.save_for_backward(x, rinv, weight)
    ctx.cast, ctx.unit_offset = cast, unit_offset
    ctx.mark_non_differentiable(rinv)


def _rms_backward(ctx, grad: Tensor, _grad_rinv):
    x, rinv, weight = ctx.saved_tensors
    weight_grad = ctx.needs_input_grad[1]
    dx, dw = _rms_norm_backward_op(grad, x, rinv, weight, ctx.cast, ctx.unit_offset,
                                   weight_grad)
    return dx, dw if weight_grad else None, None, None, None


_rms_norm_op.register_autograd(_rms_backward, setup_context=_rms_setup)


def _add_rms_setup(ctx, inputs, output) -> None:
    _, _, weight, _, cast, unit_offset = inputs
    _, h, rinv = output
    ctx.save_for_backward(h, rinv, weight)
    ctx.cast, ctx.unit_offset = cast, unit_offset
    ctx.mark_non_differentiable(rinv)
    ctx.set_materialize_grads(False)  # an unused y or h arrives as None, not as zeros


def _add_rms_backward(ctx, grad_y: Tensor | None, grad_h: Tensor | None, _grad_rinv):
    h, rinv, weight = ctx.saved_tensors
    if grad_y is None:  # only h was used downstream
        return grad_h, grad_h, None, None, None, None
    weight_grad = ctx.needs_input_grad[2]
    dh, dw = _rms_norm_backward_op(grad_y, h, rinv, weight, ctx.cast, ctx.unit_offset,
                                   weight_grad)
    if grad_h is not None:
        dh = dh + grad_h.to(dh.dtype)
    return dh, dh, dw if weight_grad else None, None, None, None


_add_rms_norm_op.register_autograd(_add_rms_backward, setup_context=_add_rms_setup)


def _check(x: Tensor, cast: str) -> None:
    reason = unavailable_reason(x)
    if reason is not None:
        raise KernelUnavailable(f"triton RMSNorm cannot run: {reason}")
    if cast not in _CASTS:
        raise InputError(f"cast={cast!r} is not allowed; expected one of {list(_CASTS)}")


def rms_norm(x: Tensor, weight: Tensor, eps: float = 1e-6, cast: str = "llama",
             unit_offset: bool = False) -> Tensor:
    """RMSNorm of x: [..., d] with gain weight: [d] -> [..., d] in x's dtype, by Triton."""
    _check(x, cast)
    return _rms_norm_op(x, weight, eps, cast, unit_offset)[0]


def add_rms_norm(x: Tensor, residual: Tensor, weight: Tensor, eps: float = 1e-6,
                 cast: str = "llama", unit_offset: bool = False) -> tuple[Tensor, Tensor]:
    """(y, h) with h = x + residual and y = RMSNorm(h), by Triton; all [..., d]."""
    _check(x, cast)
    if x.shape != residual.shape or x.dtype != residual.dtype:
        raise InputError(f"add_rms_norm: x {tuple(x.shape)} {x.dtype} and residual "
                         f"{tuple(residual.shape)} {residual.dtype} differ")
    y, h, _ = _add_rms_norm_op(x, residual, weight, eps, cast, unit_offset)
    return y, h


# --- gated activations ------------------------------------------------------------------------
# The gated activations the kernels have code for, by name (a constexpr: each is compiled on
# its own branch, and a name without one fails to compile); blocklab.nn.ffn declares the same
# set at registration.
ACTIVATIONS = frozenset({"silu", "gelu"})

if triton is not None:

    @triton.jit
    def _phi(z, ACT: tl.constexpr):
        if ACT == "silu":
            y = z * tl.sigmoid(z)
        elif ACT == "gelu":  # exact: z·Φ(z)
            y = z * 0.5 * (1.0 + tl.math.erf(z * 0.7071067811865476))
        else:
            tl.static_assert(False, "gated activation without Triton code")
        return y

    @triton.jit
    def _dphi(z, ACT: tl.constexpr):
        if ACT == "silu":
            s = tl.sigmoid(z)
            dy = s * (1.0 + z * (1.0 - s))
        elif ACT == "gelu":
            cdf = 0.5 * (1.0 + tl.math.erf(z * 0.7071067811865476))
            dy = cdf + z * tl.exp(-0.5 * z * z) * 0.3989422804014327
        else:
            tl.static_assert(False, "gated activation without Triton code")
        return dy

    @triton.jit
    def _gated_fwd_kernel(G, U, Y, stride_g, stride_u, m, BLOCK: tl.constexpr,
                          ACT: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        mask = cols < m
        z = tl.load(G + row * stride_g + cols, mask=mask, other=0.0).to(tl.float32)
        u = tl.load(U + row * stride_u + cols, mask=mask, other=0.0).to(tl.float32)
        act = _phi(z, ACT).to(Y.dtype.element_ty).to(tl.float32)
        tl.store(Y + row * m + cols, (act * u).to(Y.dtype.element_ty), mask=mask)

    @triton.jit
    def _gated_bwd_kernel(DY, G, U, DG, DU, stride_g, stride_u, m, BLOCK: tl.constexpr,
                          ACT: tl.constexpr, NEED_DG: tl.constexpr, NEED_DU: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        mask = cols < m
        g = tl.load(DY + row * m + cols, mask=mask, other=0.0).to(tl.float32)
        z = tl.load(G + row * stride_g + cols, mask=mask, other=0.0).to(tl.float32)
        u = tl.load(U + row * stride_u + cols, mask=mask, other=0.0).to(tl.float32)
        if NEED_DU:
            act = _phi(z, ACT).to(DU.dtype.element_ty).to(tl.float32)
            tl.store(DU + row * m + cols, (g * act).to(DU.dtype.element_ty), mask=mask)
        if NEED_DG:
            tl.store(DG + row * m + cols, (g * u * _dphi(z, ACT)).to(DG.dtype.element_ty),
                     mask=mask)


def _gated_block(m: int) -> int:
    return min(1024, triton.next_power_of_2(m))


def _gated_operands(op: str, gate: Tensor, up: Tensor, activation: str) -> None:
    _launchable(op, gate)
    if activation not in ACTIVATIONS:
        raise InputError(f"blocklab::{op}: activation={activation!r} is not allowed; "
                         f"expected one of {sorted(ACTIVATIONS)}")
    _operand(op, "up", up, gate.shape, gate, (gate.dtype,))


@torch.library.custom_op("blocklab::triton_gated_activation", mutates_args=())
def _gated_op(gate: Tensor, up: Tensor, activation: str) -> Tensor:
    """φ(gate) · up; gate, up: [..., m] of one dtype (rows read in place where evenly spaced, as
    the two halves of a packed gate_up output are) -> [..., m]."""
    _gated_operands("triton_gated_activation", gate, up, activation)
    g2, sg = rows_of(gate)
    u2, su = rows_of(up)
    n, m = g2.shape
    y = torch.empty(gate.shape, dtype=gate.dtype, device=gate.device)
    if n and m:
        block = _gated_block(m)
        _gated_fwd_kernel[(n, triton.cdiv(m, block))](g2, u2, y, sg, su, m, BLOCK=block,
                                                      ACT=activation)
    return y


@_gated_op.register_fake
def _(gate, up, activation):
    return gate.new_empty(gate.shape)


@torch.library.custom_op("blocklab::triton_gated_activation_backward", mutates_args=())
def _gated_backward_op(grad: Tensor, gate: Tensor, up: Tensor, activation: str,
                       gate_grad: bool, up_grad: bool) -> tuple[Tensor, Tensor]:
    """grad, gate, up: [..., m] -> (d_gate, d_up): [..., m] each, or [0] when not asked for."""
    op = "triton_gated_activation_backward"
    _gated_operands(op, gate, up, activation)
    _operand(op, "grad", grad, gate.shape, gate)
    g2, sg = rows_of(gate)
    u2, su = rows_of(up)
    n, m = g2.shape
    grad = grad.contiguous()  # the kernel reads it as [N, m] rows
    dg = torch.empty(gate.shape if gate_grad else (0,), dtype=gate.dtype, device=gate.device)
    du = torch.empty(up.shape if up_grad else (0,), dtype=up.dtype, device=up.device)
    if n and m and (gate_grad or up_grad):
        block = _gated_block(m)
        _gated_bwd_kernel[(n, triton.cdiv(m, block))](
            grad, g2, u2, dg if gate_grad else grad, du if up_grad else grad, sg, su, m,
            BLOCK=block, ACT=activation, NEED_DG=gate_grad, NEED_DU=up_grad)
    return dg, du


@_gated_backward_op.register_fake
def _(grad, gate, up, activation, gate_grad, up_grad):
    return (gate.new_empty(gate.shape if gate_grad else (0,)),
            up.new_empty(up.shape if up_grad else (0,)))


def _gated_setup(ctx, inputs, output) -> None:
    gate, up, activation = inputs
    ctx.save_for_backward(gate, up)  # φ is recomputed in backward
    ctx.activation = activation


def _gated_backward(ctx, grad: Tensor):
    gate, up = ctx.saved_tensors
    gate_grad, up_grad = ctx.needs_input_grad[:2]
    dg, du = _gated_backward_op(grad, gate, up, ctx.activation, gate_grad, up_grad)
    return dg if gate_grad else None, du if up_grad else None, None


_gated_op.register_autograd(_gated_backward, setup_context=_gated_setup)


def gated_activation(gate: Tensor, up: Tensor, activation: str = "silu") -> Tensor:
    """φ(gate) · up for gate, up: [..., m] -> [..., m] by Triton ("silu" or "gelu")."""
    if activation not in ACTIVATIONS:
        raise InputError(f"gated_activation: activation={activation!r} is not allowed; "
                         f"expected one of {sorted(ACTIVATIONS)}")
    if gate.shape != up.shape or gate.dtype != up.dtype:
        raise InputError(f"gated_activation: gate {tuple(gate.shape)} {gate.dtype} and up "
                         f"{tuple(up.shape)} {up.dtype} differ")
    reason = unavailable_reason(gate)
    if reason is not None:
        raise KernelUnavailable(f"triton gated activation cannot run: {reason}")
    return _gated_op(gate, up, activation)


# --- RoPE -------------------------------------------------------------------------------------
if triton is not None:

    @triton.jit
    def _rope_kernel(X, C, S, OUT, H, T, sxb, sxh, sxt, scb, sct, half, hd,
                     BLOCK: tl.constexpr, PASS: tl.constexpr, INVERSE: tl.constexpr):
        pid = tl.program_id(0)  # one head vector: (b, h, t)
        t = pid % T
        h = (pid // T) % H
        b = pid // (T * H)
        cols = tl.arange(0, BLOCK)
        mask = cols < half
        x_row = X + b * sxb + h * sxh + t * sxt
        o_row = OUT + pid * hd  # OUT is contiguous [B, H, T, hd]
        c_row = C + b * scb + t * sct
        s_row = S + b * scb + t * sct
        x1 = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        x2 = tl.load(x_row + half + cols, mask=mask, other=0.0).to(tl.float32)
        c1 = tl.load(c_row + cols, mask=mask, other=0.0).to(tl.float32)
        c2 = tl.load(c_row + half + cols, mask=mask, other=0.0).to(tl.float32)
        s1 = tl.load(s_row + cols, mask=mask, other=0.0).to(tl.float32)
        s2 = tl.load(s_row + half + cols, mask=mask, other=0.0).to(tl.float32)
        if INVERSE:  # the transpose of the rotation, for the gradient
            o1 = x1 * c1 + x2 * s2
            o2 = x2 * c2 - x1 * s1
        else:
            o1 = x1 * c1 - x2 * s1
            o2 = x2 * c2 + x1 * s2
        tl.store(o_row + cols, o1.to(OUT.dtype.element_ty), mask=mask)
        tl.store(o_row + half + cols, o2.to(OUT.dtype.element_ty), mask=mask)
        if PASS:  # channels past the rotary width pass through
            rest = 2 * half + tl.arange(0, PASS)
            keep = rest < hd
            tl.store(o_row + rest, tl.load(x_row + rest, mask=keep, other=0.0), mask=keep)


def _rope_launch(x: Tensor, cos: Tensor, sin: Tensor, inverse: bool) -> Tensor:
    """x: [B, H, T, hd], cos, sin: [1 or B, 1, T, r] -> fresh contiguous [B, H, T, hd]."""
    if x.stride(-1) != 1:
        x = x.contiguous()
    B, H, T, hd = x.shape
    r = cos.shape[-1]
    cos = cos.expand(B, 1, T, r) if cos.shape[0] == 1 else cos
    sin = sin.expand(B, 1, T, r) if sin.shape[0] == 1 else sin
    if cos.stride(-1) != 1 or cos.stride() != sin.stride():
        cos, sin = cos.contiguous(), sin.contiguous()
    out = torch.empty(B, H, T, hd, dtype=x.dtype, device=x.device)
    if out.numel():
        rest = hd - r
        _rope_kernel[(B * H * T,)](x, cos, sin, out, H, T, x.stride(0), x.stride(1),
                                   x.stride(2), cos.stride(0), cos.stride(2), r // 2, hd,
                                   BLOCK=triton.next_power_of_2(max(r // 2, 1)),
                                   PASS=triton.next_power_of_2(rest) if rest else 0,
                                   INVERSE=inverse)
    return out


@torch.library.custom_op("blocklab::triton_rope", mutates_args=())
def _rope_op(x: Tensor, cos: Tensor, sin: Tensor, inverse: bool) -> Tensor:
    """The half-split rotation R (or its transpose when inverse) of x: [B, H, T, hd] by
    cos, sin: [1 or B, 1, T, r] -> [B, H, T, hd] in x's dtype."""
    _launchable("triton_rope", x)
    check_rope_operands(x, cos, sin)
    _operand("triton_rope", "cos", cos, cos.shape, x, _CONSTANTS)
    _operand("triton_rope", "sin", sin, cos.shape, x, _CONSTANTS)
    return _rope_launch(x, cos, sin, inverse)


@_rope_op.register_fake
def _(x, cos, sin, inverse):
    return x.new_empty(x.shape)


def _rope_setup(ctx, inputs, output) -> None:
    _, cos, sin, inverse = inputs
    ctx.save_for_backward(cos, sin)  # constants: the rotation is linear in x
    ctx.inverse = inverse


def _rope_backward(ctx, grad: Tensor):
    # The gradient of R x is Rᵀ grad, and of Rᵀ x is R grad: this op again, which is itself
    # differentiable, so create_graph=True needs no special case.
    cos, sin = ctx.saved_tensors
    return _rope_op(grad, cos, sin, not ctx.inverse), None, None, None


_rope_op.register_autograd(_rope_backward, setup_context=_rope_setup)


def rope_half_split(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """The half_split RoPE rotation of x: [B, H, T, hd] by cos, sin: [1 or B, 1, T, r] (r even,
    r <= hd), by Triton; the maths of `blocklab.nn.position.apply_rotary`'s half_split layout.
    cos and sin are constants here (no gradient flows to them)."""
    reason = unavailable_reason(x)
    if reason is not None:
        raise KernelUnavailable(f"triton RoPE cannot run: {reason}")
    check_rope_operands(x, cos, sin)
    return _rope_op(x, cos, sin, False)
