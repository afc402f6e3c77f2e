"""Normalization layers: RMSNorm and LayerNorm over the last axis.

Numerics policy: the statistics are computed in float32 (float64 stays float64) and the result
is cast back, so the output dtype always equals the input dtype. Where the gain is applied
relative to that cast is named by `cast`:

    llama: y = γ · (x / s).to(dtype)          normalise in fp32, cast, then multiply the gain
    gemma: y = ((x / s) · (1 + γ)).to(dtype)  multiply the gain in fp32, then cast

with s = sqrt(mean(x²) + eps) over the last axis. Both reproduce Hugging Face bit for bit in
bfloat16 (`LlamaRMSNorm`, `Gemma2RMSNorm`); the two orders round differently, see
https://github.com/huggingface/transformers/pull/29402.

Per-head QK-norm (Qwen3) is `RMSNorm(head_dim)` on q: [B, n_heads, T, head_dim].
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from blocklab.errors import InputError
from blocklab.nn import backends

CASTS = ("llama", "gemma")


def _check_dim_eps(owner: str, dim: int, eps: float) -> None:
    if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:
        raise InputError(f"{owner}: dim={dim!r} is not allowed; expected a positive integer")
    if not (isinstance(eps, int | float) and math.isfinite(eps) and eps >= 0):
        raise InputError(f"{owner}: eps={eps!r} is not allowed; expected a finite number >= 0")


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    # At least float32: half-precision sums of squares overflow and lose digits; float64 input
    # (Jacobian checks) keeps its precision instead of being rounded to float32.
    return torch.promote_types(dtype, torch.float32)


def reference_rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float, cast: str = "llama",
                       unit_offset: bool = False) -> torch.Tensor:
    """RMSNorm of x: [..., d] with gain weight: [d], spelled out; -> [..., d], dtype of x."""
    dtype = x.dtype
    x32 = x.to(_compute_dtype(dtype))
    # The mean of squares (Hugging Face calls it `variance`; nothing is centred).
    normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    if cast == "gemma":
        gain = weight.to(normed.dtype)
        if unit_offset:
            gain = 1.0 + gain
        return (normed * gain).to(dtype)
    gain = 1.0 + weight if unit_offset else weight
    # Same op order as LlamaRMSNorm: `weight * normed.to(dtype)`. Hugging Face returns the
    # promoted dtype when weight is float32 and x is bfloat16; we cast that product back so
    # the output dtype is always the input dtype (values are unchanged when dtypes agree).
    return (gain * normed.to(dtype)).to(dtype)


def library_rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """`reference_rms_norm` with cast "llama" and a plain gain, by PyTorch's `F.rms_norm`; the
    same values in every dtype. x: [..., d], weight: [d] -> [..., d], dtype of x."""
    d = x.shape[-1:]
    if weight.dtype == x.dtype == _compute_dtype(x.dtype):
        return F.rms_norm(x, d, weight, eps)
    # F.rms_norm multiplies its gain before casting back (the gemma order) and wants one dtype;
    # below float32, or with a gain of another dtype, it normalises and the gain follows.
    return (weight * F.rms_norm(x, d, eps=eps)).to(x.dtype)


class RMSNorm(nn.Module):
    """Root-mean-square normalization with a learned per-channel gain, no centring, no bias.

        s = sqrt(mean(x², last axis) + eps)
        y = g ⊙ x / s,   g = weight            (unit_offset=False, weight starts at ones)
                         g = 1 + weight        (unit_offset=True, weight starts at zeros; Gemma)

    `unit_offset` stores the gain as an offset from one, so weight decay pulls it towards 1;
    `cast` is "llama" or "gemma" (module docstring); `impl` a backend (`blocklab.nn.backends`).

    Shapes: x: [..., dim] -> y: [..., dim], same dtype as x.
    """

    def __init__(self, dim: int, eps: float = 1e-6, unit_offset: bool = False,
                 cast: str = "llama", impl: str = "fast") -> None:
        super().__init__()
        _check_dim_eps("RMSNorm", dim, eps)
        if cast not in CASTS:
            raise InputError(f"RMSNorm: cast={cast!r} is not allowed; expected one of "
                             f"{list(CASTS)}")
        self.impl = backends.check_choice("RMSNorm", impl)
        self.dim = dim
        self.eps = eps
        self.unit_offset = unit_offset
        self.cast = cast
        self.weight = nn.Parameter(torch.empty(dim))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # Either way the initial gain is exactly 1.
        if self.unit_offset:
            nn.init.zeros_(self.weight)
        else:
            nn.init.ones_(self.weight)

    @property
    def runs(self) -> str:
        """What forward computes with: "F.rms_norm" or "reference"."""
        plain = self.cast == "llama" and not self.unit_offset
        return "F.rms_norm" if self.impl == "fast" and plain else "reference"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.runs == "F.rms_norm":
            return library_rms_norm(x, self.weight, self.eps)
        return reference_rms_norm(x, self.weight, self.eps, self.cast, self.unit_offset)

    def extra_repr(self) -> str:
        return (f"{self.dim}, eps={self.eps}, unit_offset={self.unit_offset}, cast={self.cast!r}, "
                f"impl={self.impl!r}")


class LayerNorm(nn.Module):
    """Layer normalization: centre, scale to unit variance, then gain and optional bias.

        μ = mean(x),  σ = sqrt(mean((x − μ)²) + eps)   over the last axis
        y = weight ⊙ (x − μ) / σ + bias

    Computed by `F.layer_norm` in float32 (float64 stays float64), gain and bias included, then
    cast back (the gemma order). `bias=False` gives the bias-free LayerNorm.

    Shapes: x: [..., dim] -> y: [..., dim], same dtype as x.
    """

    def __init__(self, dim: int, eps: float = 1e-5, bias: bool = True) -> None:
        super().__init__()
        _check_dim_eps("LayerNorm", dim, eps)
        self.dim = dim
        self.eps = eps
        self.weight = nn.Parameter(torch.empty(dim))
        self.bias = nn.Parameter(torch.empty(dim)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.ones_(self.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        compute = _compute_dtype(dtype)
        bias = None if self.bias is None else self.bias.to(compute)
        y = F.layer_norm(x.to(compute), (self.dim,), self.weight.to(compute), bias, self.eps)
        return y.to(dtype)

    def extra_repr(self) -> str:
        return f"{self.dim}, eps={self.eps}, bias={self.bias is not None}"


NORMS: dict[str, type[nn.Module]] = {"rmsnorm": RMSNorm, "layernorm": LayerNorm}


def build_norm(kind: str, dim: int, eps: float, bias: bool = True, unit_offset: bool = False,
               cast: str = "llama", impl: str = "fast") -> nn.Module:
    """The norm named `kind` (a key of `NORMS`) over a last axis of size `dim`. `bias` applies
    to LayerNorm only; `unit_offset`, `cast` and `impl` to RMSNorm only, which checks them
    (LayerNorm with `unit_offset=True` raises)."""
    if kind not in NORMS:
        raise InputError(f"norm kind={kind!r} is not allowed; expected one of {sorted(NORMS)}")
    if kind == "rmsnorm":
        return RMSNorm(dim, eps=eps, unit_offset=unit_offset, cast=cast, impl=impl)
    if unit_offset:
        raise InputError("norm kind='layernorm' with unit_offset=True is not allowed; "
                         "expected unit_offset=False (the (1 + γ) gain is an RMSNorm option)")
    return LayerNorm(dim, eps=eps, bias=bias)
