"""How far a residual block is from the identity, and how much the loss feels the residual stream.

Two measurements of a decoder stack at initialisation (read by C12 and C36 through the placement
suite's gradient probe):

    identity_deviation     ‖J − I‖_F / √n and ‖J‖_F / √n of one block y = f(x), where
                           J = ∂y/∂x is the block Jacobian over all n = B·T·d entries. The
                           page's "gradient ≈ 1" is the identity term of J (pre-norm:
                           J = I + J_F·J_N); the first number is the size of everything that is
                           not that term, relative to it (0: the block is the identity).
    residual_sensitivity   per layer l, ‖∂L/∂x_l‖ · rms(x_l), x_l the residual stream ENTERING
                           layer l (and, last, the stream entering the final norm).

Neither needs J itself: both come from vector-Jacobian products, the backward pass autograd
already has. Shapes: x, y, every probe u are [B, T, d]; J is n × n with n = B·T·d (attention
mixes positions, so J is block-diagonal over the batch only).
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

    For a probe u with E[u uᵀ] = c·I, E‖Aᵀu‖² = c·‖A‖_F² and E‖u‖² = c·n, so

        ‖A‖_F² / n  ≈  Σ_k ‖Aᵀu_k‖² / Σ_k ‖u_k‖²        (A = J − I, or A = J)

    whatever the probes' scale c. Gaussian probes give a consistent estimate; the n vectors of
    an orthonormal basis give the exact value. Each Aᵀu is one backward pass: (J − I)ᵀu =
    Jᵀu − u, Jᵀu the vector-Jacobian product. Dividing by n makes widths, lengths and batch
    sizes comparable: ‖I‖_F / √n = 1.

    block: x [B, T, d] -> y [B, T, d]; x is detached here, so the block's parameters get no
    gradient from this call; probes: K ≥ 1 tensors shaped like x.
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
    """`count` standard-normal tensors shaped like `like`, drawn on the CPU from `generator`
    (so they do not depend on the device) and moved to `like`'s device and dtype."""
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
    """What one layer was called with: the residual stream x [B, T, d] and its keyword
    arguments (rope, bias, cache), so the layer can be called again on the same input."""

    x: Tensor
    kwargs: LayerKwargs


@contextmanager
def capture_stream(model: nn.Module) -> Iterator[list[LayerInput]]:
    """Record, during one forward pass of `model` (a `DecoderLM`), the residual stream entering
    every layer and the final norm, gradients retained: a list that fills with L + 1
    `LayerInput`s, layer 0 first, the final norm's last. Hooks are removed on exit."""
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
    """‖∂L/∂x‖ · rms(x) for a tensor x [B, T, d] whose gradient the backward pass kept.

    A perturbation of x with independent entries of sd ε·rms(x) moves the loss by
    ε·‖∂L/∂x‖·rms(x) in root mean square: the loss's sensitivity to a relative change of x. A
    global rescaling of the stream leaves it unchanged (∂L/∂x scales as 1/c when x scales as
    c, the final norm divides c out), so the 1/√L a final norm gives a growing stream cannot
    spread it; growth from one layer to the next still counts.
    """
    if x.grad is None:
        raise ValueError("stream_sensitivity: x has no gradient; capture it with "
                         "capture_stream and run the backward pass first")
    grad = torch.linalg.vector_norm(x.grad.double())
    rms = x.detach().double().pow(2).mean().sqrt()
    return float(grad * rms)


def residual_sensitivity(model: nn.Module, loss_of: Callable[[nn.Module], Tensor]
                         ) -> tuple[Tensor, list[float], list[LayerInput]]:
    """One forward and backward of `loss_of(model)` with the residual stream captured:
    (loss, `stream_sensitivity` of the L + 1 streams of `capture_stream`, those streams with
    their keyword arguments). Every parameter's `.grad` is left as `loss.backward()` leaves it.
    """
    with capture_stream(model) as inputs:
        loss = loss_of(model)
    loss.backward()
    return loss.detach(), [stream_sensitivity(i.x) for i in inputs], inputs


def layer_deviations(model: nn.Module, inputs: Sequence[LayerInput], probes: int,
                     seed: int) -> list[IdentityDeviation]:
    """`identity_deviation` of every layer of `model` at the input it was recorded with
    (`inputs` from `capture_stream`, the final norm's entry ignored), `probes` Gaussian probes
    per layer from a generator seeded with `seed`."""
    generator = torch.Generator().manual_seed(seed)
    out = []
    layers = list(model.layers)
    for layer, recorded in zip(layers, inputs[:len(layers)], strict=True):
        def block(x: Tensor, layer=layer, kwargs=recorded.kwargs) -> Tensor:
            return layer(x, **kwargs)

        out.append(identity_deviation(block, recorded.x,
                                      gaussian_probes(recorded.x, probes, generator)))
    return out
