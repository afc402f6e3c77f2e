"""Lean implementations of RMSNorm and residual-add + RMSNorm: autograd Functions in plain
PyTorch that save less for backward (the implementation "lean" of `blocklab.nn.backends`; any
dtype, any device), and the operand helpers the kernels of `cpu_kernels` and `triton_kernels`
share.

Each function here computes the same maths as the readable reference (`RMSNorm` with
impl="reference") and is tested against it. What they save is memory traffic and
saved-for-backward memory:

    RMSNorm     forward saves x, the per-row 1/s and the gain; backward recomputes
                x̂ = x · (1/s) instead of keeping it, then
                    dx = (1/s) · (g·γ − x̂ · mean(g·γ·x̂))        dγ = Σ_rows g · x̂
                (autograd on the reference keeps x², the mean, x̂ and its cast: 3-4 full tensors)
    add+RMSNorm h = x + residual, y = RMSNorm(h); returns (y, h) and saves h instead of both
                (the fused residual form of Liger-Kernel and flash-attention's `layer_norm`)

(A lean gated activation, recomputing φ in backward, and a lean RoPE, rotating the two halves
without a `rotate_half` copy, were removed: by `benchmarks/backend_ops.py` the first took 2-4.7×
the reference's time, the second 1.3-1.4× in float32 and tied it in bfloat16, saving nothing.)

Numerics follow `blocklab.nn.norm`: statistics in float32 (float64 stays float64), the gain
applied in the llama or gemma order, the output in the input dtype. Forward values are bit for
bit those of the reference; gradients are computed in float32 without the reference's rounding
of intermediate gradients to the input dtype, so in bfloat16 they agree to bfloat16 precision.

Shape legend: N: rows (all leading axes), d: the normalised axis.
"""

from __future__ import annotations

import torch
from torch import Tensor

from blocklab.errors import InputError

CASTS = ("llama", "gemma")


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.promote_types(dtype, torch.float32)


def _gain(weight: Tensor, unit_offset: bool, dtype: torch.dtype) -> Tensor:
    gain = weight.to(dtype)
    return 1.0 + gain if unit_offset else gain


def _rms_forward(x: Tensor, weight: Tensor, eps: float, cast: str,
                 unit_offset: bool) -> tuple[Tensor, Tensor]:
    """y (dtype of x) and 1/s [..., 1] (compute dtype)."""
    dtype = x.dtype
    if dtype == torch.float32 and weight.dtype == torch.float32:
        # One reduction pass without an x² temporary, one allocation (y), one in-place pass.
        # Both cast orders coincide in float32. On CPU every fresh [N, d] tensor costs page
        # faults comparable to a whole pass over the data, so this path avoids temporaries.
        d = x.shape[-1]
        rinv = torch.linalg.vector_norm(x, dim=-1, keepdim=True).square_().div_(d).add_(eps)
        rinv = rinv.rsqrt_()
        gain = 1.0 + weight if unit_offset else weight
        return torch.mul(x, rinv).mul_(gain), rinv
    # Other dtypes: the reference's own op order, so bfloat16 output is bit for bit the same.
    x32 = x.to(_compute_dtype(dtype))
    rinv = torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    normed = x32 * rinv
    if cast == "gemma":
        return normed.mul_(_gain(weight, unit_offset, normed.dtype)).to(dtype), rinv
    gain = 1.0 + weight if unit_offset else weight
    return (gain * normed.to(dtype)).to(dtype), rinv


def _rms_backward(grad: Tensor, x: Tensor, rinv: Tensor, weight: Tensor, cast: str,
                  unit_offset: bool, need_weight_grad: bool) -> tuple[Tensor, Tensor | None]:
    """dx (compute dtype) and dγ (weight dtype) from grad [..., d] and the saved x, 1/s.

    With x̂ = x·r (r = 1/s) and the raw row sums p = Σ_j g·γ·x:
        dx = r·(g·γ − x · r²·p/d)       dγ = Σ_rows r · g · x
    Both reductions are matrix-vector products of one buffer g·x, so the backward allocates
    two [N, d] tensors (that buffer and dx) and no x̂.
    """
    compute = rinv.dtype
    d = x.shape[-1]
    xc = x.to(compute)
    g = grad.to(compute)
    gain = _gain(weight, unit_offset, compute)
    gx = g * xc  # [..., d]
    p = torch.mv(gx.reshape(-1, d), gain).view(rinv.shape)  # Σ_j g·γ·x   [..., 1]
    dw = None
    if need_weight_grad:
        if cast == "llama" and x.dtype != compute:
            # the gain multiplied x̂ cast to x's dtype: use that rounded x̂
            x_hat = (xc * rinv).to(x.dtype).to(compute)
            dw = (g * x_hat).reshape(-1, d).sum(0)
        else:
            dw = torch.mv(gx.reshape(-1, d).t(), rinv.reshape(-1))  # Σ_rows r·g·x
        dw = dw.to(weight.dtype)
    coef = rinv.square().mul_(p).div_(d)  # r²·p/d   [..., 1]
    dx = torch.mul(g, gain, out=gx).addcmul_(xc, coef, value=-1.0).mul_(rinv)
    return dx, dw


class RMSNormFunction(torch.autograd.Function):
    """y = RMSNorm(x; γ) saving only x, 1/s and γ. See the module docstring for the backward."""

    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, eps: float, cast: str,
                unit_offset: bool) -> Tensor:
        y, rinv = _rms_forward(x, weight, eps, cast, unit_offset)
        ctx.save_for_backward(x, rinv, weight)
        ctx.cast, ctx.unit_offset = cast, unit_offset
        return y

    @staticmethod
    def backward(ctx, grad: Tensor):
        x, rinv, weight = ctx.saved_tensors
        dx, dw = _rms_backward(grad, x, rinv, weight, ctx.cast, ctx.unit_offset,
                               ctx.needs_input_grad[1])
        return dx.to(x.dtype), dw, None, None, None


class AddRMSNormFunction(torch.autograd.Function):
    """(y, h) with h = x + residual and y = RMSNorm(h); saves h, 1/s and γ only."""

    @staticmethod
    def forward(ctx, x: Tensor, residual: Tensor, weight: Tensor, eps: float, cast: str,
                unit_offset: bool) -> tuple[Tensor, Tensor]:
        h = x + residual
        y, rinv = _rms_forward(h, weight, eps, cast, unit_offset)
        ctx.save_for_backward(h, rinv, weight)
        ctx.cast, ctx.unit_offset = cast, unit_offset
        return y, h

    @staticmethod
    def backward(ctx, grad_y: Tensor, grad_h: Tensor | None):
        h, rinv, weight = ctx.saved_tensors
        dh, dw = _rms_backward(grad_y, h, rinv, weight, ctx.cast, ctx.unit_offset,
                               ctx.needs_input_grad[2])
        if grad_h is not None:
            dh = dh.add_(grad_h)
        dh = dh.to(h.dtype)
        return dh, dh, dw, None, None, None


def check_cast(cast: str) -> None:
    if cast not in CASTS:
        raise InputError(f"cast={cast!r} is not allowed; expected one of {list(CASTS)}")


def rms_norm(x: Tensor, weight: Tensor, eps: float = 1e-6, cast: str = "llama",
             unit_offset: bool = False) -> Tensor:
    """RMSNorm of x: [..., d] with gain weight: [d] -> [..., d] in x's dtype (autograd Function)."""
    check_cast(cast)
    return RMSNormFunction.apply(x, weight, eps, cast, unit_offset)


def add_rms_norm(x: Tensor, residual: Tensor, weight: Tensor, eps: float = 1e-6,
                 cast: str = "llama", unit_offset: bool = False) -> tuple[Tensor, Tensor]:
    """h = x + residual, y = RMSNorm(h); x, residual: [..., d] -> (y, h), both [..., d].

    The pre-norm residual step `h = x + sublayer_out; next = norm(h)` in one call, saving one
    tensor for backward instead of two.
    """
    check_cast(cast)
    if x.shape != residual.shape:
        raise InputError(f"add_rms_norm: x {tuple(x.shape)} and residual "
                         f"{tuple(residual.shape)} shapes differ")
    return AddRMSNormFunction.apply(x, residual, weight, eps, cast, unit_offset)


# --- operands the kernels of `cpu_kernels` and `triton_kernels` share ---------------------------
def rows_of(t: Tensor) -> tuple[Tensor, int]:
    """t: [..., m] as [N, m] rows and their stride, without a copy when the rows are evenly
    spaced with a contiguous last axis (the halves of a fused gate_up output are); the kernels
    of `cpu_kernels` and `triton_kernels` read such rows in place."""
    m = t.shape[-1]
    if t.stride(-1) == 1:
        try:
            rows = t.view(-1, m)
            return rows, rows.stride(0) if rows.shape[0] > 1 else m
        except RuntimeError:
            pass
    return t.contiguous().view(-1, m), m


def check_rope_operands(x: Tensor, cos: Tensor, sin: Tensor) -> None:
    """The operands a RoPE kernel takes: x [B, H, T, hd] and constant cos, sin [1 or B, 1, T, r]
    with r even and r <= hd; a one-line ValueError otherwise."""
    if x.dim() != 4 or cos.dim() != 4 or cos.shape != sin.shape \
            or cos.shape[-1] % 2 or cos.shape[-1] > x.shape[-1] or cos.shape[1] != 1 \
            or cos.shape[2] != x.shape[2] or cos.shape[0] not in (1, x.shape[0]):
        raise InputError(f"rope_half_split: x {tuple(x.shape)} and cos/sin "
                         f"{tuple(cos.shape)}/{tuple(sin.shape)} do not fit; expected x "
                         "[B, H, T, hd] and cos, sin [1 or B, 1, T, r], r even, r <= hd")
    if cos.requires_grad or sin.requires_grad:
        raise InputError("rope_half_split: cos and sin must not require grad")
