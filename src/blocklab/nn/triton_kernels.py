"""Triton kernels for RMSNorm (forward and backward) and residual-add + RMSNorm.

The same maths and cast orders as `blocklab.nn.fused` (see there and `blocklab.nn.norm`):
one program normalises one row in float32 and stores y and 1/s; the backward runs over blocks
of rows, writing dx and one partial dγ per program, summed afterwards in float32.

    forward:  s = sqrt(mean(x²) + eps);  y = γ · (x/s).to(dtype)  (llama)
                                         y = ((x/s) · γ).to(dtype) (gemma)
    backward: x̂ = x/s;  dx = (1/s)(g·γ − x̂ · mean(g·γ·x̂));  dγ = Σ_rows g · x̂

Runs on CUDA tensors, or on CPU tensors under Triton's interpreter (TRITON_INTERPRET=1 set
before triton is imported), which is how the tests check it without a GPU.

Shape legend: N: rows (all leading axes flattened), d: the normalised axis.
"""

from __future__ import annotations

import os

import torch
from torch import Tensor

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
        raise RuntimeError(f"triton RMSNorm cannot run: {reason}")
    if cast not in _CASTS:
        raise ValueError(f"cast={cast!r} is not allowed; expected one of {list(_CASTS)}")


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
        raise ValueError(f"add_rms_norm: x {tuple(x.shape)} {x.dtype} and residual "
                         f"{tuple(residual.shape)} {residual.dtype} differ")
    return _TritonAddRMSNorm.apply(x, residual, weight, eps, cast, unit_offset)
