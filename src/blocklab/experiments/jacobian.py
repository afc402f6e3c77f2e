"""How far a residual block is from the identity, and how much the loss feels the residual stream.

    identity_deviation     ‖J − I‖_F / √n and ‖J‖_F / √n of one block y = f(x), J = ∂y/∂x
                           over all n = B·T·d entries (pre-norm: J = I + J_F·J_N)
    residual_sensitivity   per layer l, ‖∂L/∂x_l‖ · rms(x_l), x_l the stream ENTERING layer l
                           (and, last, the final norm)

Both come from vector-Jacobian products, never J itself. x, y and every probe u are [B, T, d].
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict, cast

import torch
from torch import Tensor, nn

if TYPE_CHECKING:
    from blocklab.nn.attention import LayerCache


@dataclass(frozen=True)
class IdentityDeviation:
    """`deviation` = ‖J − I‖_F / √n, `gain` = ‖J‖_F / √n (1 for J = I, or any orthogonal J)."""

    deviation: float
    gain: float


def identity_deviation(block: Callable[[Tensor], Tensor], x: Tensor,
                       probes: Sequence[Tensor]) -> IdentityDeviation:
    """Hutchinson estimates of ‖J − I‖_F / √n and ‖J‖_F / √n for y = block(x), J = ∂y/∂x.

    For probes u with E[u uᵀ] = c·I:  ‖A‖_F² / n ≈ Σ_k ‖Aᵀu_k‖² / Σ_k ‖u_k‖²  (A = J − I or J),
    each Aᵀu one vector-Jacobian product ((J − I)ᵀu = Jᵀu − u); the n basis vectors give the
    exact value. block: x [B, T, d] -> y [B, T, d] (x detached: no parameter gradient);
    probes: K ≥ 1 tensors shaped like x.
    """
    if not probes:
        raise ValueError("identity_deviation needs at least one probe vector")
    x = x.detach().requires_grad_(True)
    with torch.enable_grad():
        y = block(x)
    if y.shape != x.shape:
        raise ValueError(f"identity_deviation: block output {tuple(y.shape)} differs from its "
                         f"input {tuple(x.shape)}; J − I needs a square Jacobian")
    off, whole, scale = 0.0, 0.0, 0.0
    for k, u in enumerate(probes):
        u = u.to(dtype=y.dtype, device=y.device)
        (jt_u,) = torch.autograd.grad(y, x, u, retain_graph=k < len(probes) - 1)  # Jᵀu
        # Sums in float64: the three sums are over n entries and are divided by each other.
        off += float((jt_u - u).double().pow(2).sum())
        whole += float(jt_u.double().pow(2).sum())
        scale += float(u.double().pow(2).sum())
    return IdentityDeviation(math.sqrt(off / scale), math.sqrt(whole / scale))


def gaussian_probes(like: Tensor, count: int, generator: torch.Generator) -> list[Tensor]:
    """`count` standard-normal tensors shaped like `like`, drawn on the CPU (device-free)."""
    return [torch.randn(like.shape, generator=generator, dtype=torch.float32)
            .to(device=like.device, dtype=like.dtype) for _ in range(count)]


class LayerKwargs(TypedDict, total=False):
    """The keyword arguments a decoder layer is called with (`blocklab.nn.block`); none for the
    final norm."""

    rope: tuple[Tensor, Tensor] | None
    bias: Tensor | None
    cache: LayerCache | None


@dataclass(frozen=True)
class LayerInput:
    """One layer's call: the residual stream x [B, T, d] and its keyword arguments."""

    x: Tensor
    kwargs: LayerKwargs


@contextmanager
def capture_stream(model: nn.Module) -> Iterator[list[LayerInput]]:
    """A list that fills, during one forward of `model`, with the L + 1 `LayerInput`s entering
    every layer and the final norm, gradients retained."""
    found: list[LayerInput] = []

    def keep(module: nn.Module, args: tuple, kwargs: dict) -> None:
        x = args[0]
        if x.requires_grad:
            x.retain_grad()  # ∂L/∂x_l is a non-leaf gradient: autograd frees it otherwise
        found.append(LayerInput(x, cast(LayerKwargs, dict(kwargs))))

    handles = [layer.register_forward_pre_hook(keep, with_kwargs=True) for layer in model.layers]
    handles.append(model.norm.register_forward_pre_hook(keep, with_kwargs=True))
    try:
        yield found
    finally:
        for handle in handles:
            handle.remove()


def stream_sensitivity(x: Tensor) -> float:
    """‖∂L/∂x‖ · rms(x) for x [B, T, d] with a kept gradient: the rms change of the loss per
    relative change ε of x, unchanged by a global rescaling a norm divides out.
    """
    if x.grad is None:
        raise ValueError("stream_sensitivity: x has no gradient; capture it with "
                         "capture_stream and run the backward pass first")
    grad = torch.linalg.vector_norm(x.grad.double())
    rms = x.detach().double().pow(2).mean().sqrt()
    return float(grad * rms)


def residual_sensitivity(model: nn.Module, loss_of: Callable[[nn.Module], Tensor]
                         ) -> tuple[Tensor, list[float], list[LayerInput]]:
    """(loss, `stream_sensitivity` of the L + 1 captured streams, those streams) of one
    forward and backward of `loss_of(model)`."""
    with capture_stream(model) as inputs:
        loss = loss_of(model)
    loss.backward()
    return loss.detach(), [stream_sensitivity(i.x) for i in inputs], inputs


def layer_deviations(model: nn.Module, inputs: Sequence[LayerInput], probes: int,
                     seed: int) -> list[IdentityDeviation]:
    """`identity_deviation` of every layer at its recorded input (`capture_stream`), with
    `probes` Gaussian probes a layer from one generator seeded with `seed`."""
    generator = torch.Generator().manual_seed(seed)
    out = []
    layers = list(model.layers)
    for layer, recorded in zip(layers, inputs[:len(layers)], strict=True):
        def block(x: Tensor, layer=layer, kwargs=recorded.kwargs) -> Tensor:
            return layer(x, **kwargs)

        out.append(identity_deviation(block, recorded.x,
                                      gaussian_probes(recorded.x, probes, generator)))
    return out
