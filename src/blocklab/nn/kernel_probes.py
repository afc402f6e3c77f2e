"""Whether the C and Triton kernel families can run a call here: the probes their ops are
registered with (`backends.register(..., loaded=...)`).

Each probe imports its kernel module on first call only (building or importing the kernels
costs seconds), and lives apart from `backends`, which the kernel modules import for their
fallbacks: `backends` never imports a kernel module, so the registry and the kernels form no
circle.
"""

from __future__ import annotations

from torch import Tensor


def cpu(x: Tensor, other: Tensor | None) -> str | None:
    """Why the C kernels cannot take x and the op's second operand (gain, up, cos), or None."""
    from blocklab.nn import cpu_kernels
    return cpu_kernels.unavailable_reason(x, other)


def cpu_bf16(x: Tensor, other: Tensor | None) -> str | None:
    """As `cpu`, for the ops whose C kernels take bfloat16 too (in eager mode)."""
    from blocklab.nn import cpu_kernels
    return cpu_kernels.unavailable_reason(x, other, bfloat16=True)


def cpu_gated(x: Tensor, other: Tensor | None) -> str | None:
    """As `cpu_bf16`, and gate and up are read as one dtype."""
    return cpu_bf16(x, other) or _one_dtype(x, other)


def triton(x: Tensor, other: Tensor | None) -> str | None:
    """Why the Triton kernels cannot take x, or None. They cast a float32 gain or cos/sin
    themselves, so the second operand's dtype does not matter to the norms and RoPE."""
    from blocklab.nn import triton_kernels
    return triton_kernels.unavailable_reason(x)


def triton_gated(x: Tensor, other: Tensor | None) -> str | None:
    """As `triton`, and gate and up are read as one dtype."""
    return triton(x, other) or _one_dtype(x, other)


def _one_dtype(gate: Tensor, up: Tensor | None) -> str | None:
    """Why a gated kernel cannot read gate and up together (two dtypes), or None."""
    if up is not None and up.dtype != gate.dtype:
        return f"gate and up of different dtypes ({gate.dtype}, {up.dtype})"
    return None
