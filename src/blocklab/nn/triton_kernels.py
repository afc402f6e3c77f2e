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


def _forward(x: Tensor, residual: Tensor | None, weight: Tensor, eps: float, cast: str,
             unit_offset: bool) -> tuple[Tensor, Tensor, Tensor]:
    """y, h (x + residual, or x itself) and 1/s [N], all as [N, d] / [N] views."""
    d = x.shape[-1]
    x2 = x.reshape(-1, d).contiguous()
    n = x2.shape[0]
    y = torch.empty_like(x2)
    rinv = torch.empty(n, dtype=torch.float32, device=x.device)
    if residual is not None:
        r2 = residual.reshape(-1, d).contiguous()
        h = torch.empty_like(x2)
    else:
        r2 = h = x2
    if n:
        _rms_fwd_kernel[(n,)](x2, r2, h, weight, y, rinv, x2.stride(0), r2.stride(0),
                              h.stride(0), y.stride(0), d, eps, BLOCK=_block(d),
                              GEMMA=cast == "gemma", OFFSET=unit_offset,
                              ADD=residual is not None)
    return y, h, rinv


def _programs(x: Tensor, n: int) -> int:
    if x.is_cuda:
        sms = torch.cuda.get_device_properties(x.device).multi_processor_count
        return max(1, min(n, 4 * sms))
    return max(1, min(n, 8))  # the interpreter: few programs, each looping over rows


def _backward(grad: Tensor, h: Tensor, rinv: Tensor, weight: Tensor, cast: str,
              unit_offset: bool) -> tuple[Tensor, Tensor]:
    """dh [N, d] in h's dtype and dγ in weight's dtype."""
    n, d = h.shape
    g2 = grad.reshape(-1, d).contiguous()
    dx = torch.empty_like(h)
    programs = _programs(h, n)
    dw_partial = torch.zeros(programs, d, dtype=torch.float32, device=h.device)
    if n:
        rows = triton.cdiv(n, programs)
        _rms_bwd_kernel[(programs,)](g2, h, weight, rinv, dx, dw_partial, g2.stride(0),
                                     h.stride(0), dx.stride(0), n, d, rows, BLOCK=_block(d),
                                     OFFSET=unit_offset,
                                     ROUND_XHAT=cast == "llama" and h.dtype != torch.float32)
    return dx, dw_partial.sum(0).to(weight.dtype)


class _TritonRMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, eps, cast, unit_offset):
        y, h, rinv = _forward(x, None, weight, eps, cast, unit_offset)
        ctx.save_for_backward(h, rinv, weight)
        ctx.cast, ctx.unit_offset, ctx.shape = cast, unit_offset, x.shape
        return y.view(x.shape)

    @staticmethod
    def backward(ctx, grad):
        h, rinv, weight = ctx.saved_tensors
        dx, dw = _backward(grad, h, rinv, weight, ctx.cast, ctx.unit_offset)
        return dx.view(ctx.shape), dw, None, None, None


class _TritonAddRMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, residual, weight, eps, cast, unit_offset):
        y, h, rinv = _forward(x, residual, weight, eps, cast, unit_offset)
        ctx.save_for_backward(h, rinv, weight)
        ctx.cast, ctx.unit_offset, ctx.shape = cast, unit_offset, x.shape
        return y.view(x.shape), h.view(x.shape)

    @staticmethod
    def backward(ctx, grad_y, grad_h):
        h, rinv, weight = ctx.saved_tensors
        dh, dw = _backward(grad_y, h, rinv, weight, ctx.cast, ctx.unit_offset)
        if grad_h is not None:
            dh = dh + grad_h.reshape(dh.shape).to(dh.dtype)
        dh = dh.view(ctx.shape)
        return dh, dh, dw, None, None, None


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
    return _TritonRMSNorm.apply(x, weight, eps, cast, unit_offset)


def add_rms_norm(x: Tensor, residual: Tensor, weight: Tensor, eps: float = 1e-6,
                 cast: str = "llama", unit_offset: bool = False) -> tuple[Tensor, Tensor]:
    """(y, h) with h = x + residual and y = RMSNorm(h), by Triton; all [..., d]."""
    _check(x, cast)
    if x.shape != residual.shape or x.dtype != residual.dtype:
        raise InputError(f"add_rms_norm: x {tuple(x.shape)} {x.dtype} and residual "
                         f"{tuple(residual.shape)} {residual.dtype} differ")
    return _TritonAddRMSNorm.apply(x, residual, weight, eps, cast, unit_offset)


# --- gated activations ------------------------------------------------------------------------
_GATED = {"silu": 0, "gelu": 1}

if triton is not None:

    @triton.jit
    def _phi(z, GELU: tl.constexpr):
        if GELU:
            return z * 0.5 * (1.0 + tl.math.erf(z * 0.7071067811865476))
        return z * tl.sigmoid(z)

    @triton.jit
    def _dphi(z, GELU: tl.constexpr):
        if GELU:
            cdf = 0.5 * (1.0 + tl.math.erf(z * 0.7071067811865476))
            return cdf + z * tl.exp(-0.5 * z * z) * 0.3989422804014327
        s = tl.sigmoid(z)
        return s * (1.0 + z * (1.0 - s))

    @triton.jit
    def _gated_fwd_kernel(G, U, Y, stride_g, stride_u, m, BLOCK: tl.constexpr,
                          GELU: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        mask = cols < m
        z = tl.load(G + row * stride_g + cols, mask=mask, other=0.0).to(tl.float32)
        u = tl.load(U + row * stride_u + cols, mask=mask, other=0.0).to(tl.float32)
        act = _phi(z, GELU).to(Y.dtype.element_ty).to(tl.float32)
        tl.store(Y + row * m + cols, (act * u).to(Y.dtype.element_ty), mask=mask)

    @triton.jit
    def _gated_bwd_kernel(DY, G, U, DG, DU, stride_g, stride_u, m, BLOCK: tl.constexpr,
                          GELU: tl.constexpr, NEED_DG: tl.constexpr, NEED_DU: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        mask = cols < m
        g = tl.load(DY + row * m + cols, mask=mask, other=0.0).to(tl.float32)
        z = tl.load(G + row * stride_g + cols, mask=mask, other=0.0).to(tl.float32)
        u = tl.load(U + row * stride_u + cols, mask=mask, other=0.0).to(tl.float32)
        if NEED_DU:
            act = _phi(z, GELU).to(DU.dtype.element_ty).to(tl.float32)
            tl.store(DU + row * m + cols, (g * act).to(DU.dtype.element_ty), mask=mask)
        if NEED_DG:
            tl.store(DG + row * m + cols, (g * u * _dphi(z, GELU)).to(DG.dtype.element_ty),
                     mask=mask)


def _gated_block(m: int) -> int:
    return min(1024, triton.next_power_of_2(m))


class _TritonGated(torch.autograd.Function):
    @staticmethod
    def forward(ctx, gate, up, activation):
        g2, sg = rows_of(gate)
        u2, su = rows_of(up)
        n, m = g2.shape
        y = torch.empty(gate.shape, dtype=gate.dtype, device=gate.device)
        if n and m:
            block = _gated_block(m)
            _gated_fwd_kernel[(n, triton.cdiv(m, block))](g2, u2, y, sg, su, m, BLOCK=block,
                                                          GELU=_GATED[activation] == 1)
        ctx.save_for_backward(gate, up)
        ctx.activation = activation
        return y

    @staticmethod
    def backward(ctx, grad):
        gate, up = ctx.saved_tensors
        g2, sg = rows_of(gate)
        u2, su = rows_of(up)
        n, m = g2.shape
        grad = grad.contiguous()
        need_dg, need_du = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        dg = torch.empty(gate.shape, dtype=gate.dtype, device=gate.device) if need_dg else None
        du = torch.empty(up.shape, dtype=up.dtype, device=up.device) if need_du else None
        if n and m and (need_dg or need_du):
            block = _gated_block(m)
            _gated_bwd_kernel[(n, triton.cdiv(m, block))](
                grad, g2, u2, dg if need_dg else grad, du if need_du else grad, sg, su, m,
                BLOCK=block, GELU=_GATED[ctx.activation] == 1, NEED_DG=need_dg,
                NEED_DU=need_du)
        return dg, du, None


def gated_activation(gate: Tensor, up: Tensor, activation: str = "silu") -> Tensor:
    """φ(gate) · up for gate, up: [..., m] -> [..., m] by Triton ("silu" or "gelu")."""
    if activation not in _GATED:
        raise InputError(f"gated_activation: activation={activation!r} is not allowed; "
                         f"expected one of {sorted(_GATED)}")
    if gate.shape != up.shape or gate.dtype != up.dtype:
        raise InputError(f"gated_activation: gate {tuple(gate.shape)} {gate.dtype} and up "
                         f"{tuple(up.shape)} {up.dtype} differ")
    reason = unavailable_reason(gate)
    if reason is not None:
        raise KernelUnavailable(f"triton gated activation cannot run: {reason}")
    return _TritonGated.apply(gate, up, activation)


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
    """x: [B, H, T, hd] (last axis contiguous), cos, sin: [1 or B, 1, T, r] -> [B, H, T, hd]."""
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


class _TritonRope(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, cos, sin):
        ctx.save_for_backward(cos, sin)
        return _rope_launch(x, cos, sin, inverse=False)

    @staticmethod
    def backward(ctx, grad):
        cos, sin = ctx.saved_tensors
        return _rope_launch(grad, cos, sin, inverse=True), None, None


def rope_half_split(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """The half_split RoPE rotation of x: [B, H, T, hd] by cos, sin: [1 or B, 1, T, r] (r even,
    r <= hd), by Triton; the same maths as `blocklab.nn.lean.rotate_half_split`. cos and sin
    are constants here (no gradient flows to them)."""
    reason = unavailable_reason(x)
    if reason is not None:
        raise KernelUnavailable(f"triton RoPE cannot run: {reason}")
    check_rope_operands(x, cos, sin)
    return _TritonRope.apply(x, cos, sin)
