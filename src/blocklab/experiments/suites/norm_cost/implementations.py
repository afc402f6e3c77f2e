"""The RMSNorm and LayerNorm implementations the kernel runs time, by kind (`KINDS`): blocklab's,
PyTorch's, plain elementary ops and torch.compile of the plain ones (`build_implementations`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from blocklab.experiments.suites.norm_cost.sizes import KINDS

if TYPE_CHECKING:
    from torch import nn

EPS = 1e-5  # the same ε for every implementation; the cost does not depend on it


def _plain_norms():
    import torch
    from torch import nn

    class PlainRMSNorm(nn.Module):
        """RMSNorm spelled in elementary ops (what a user writes without a fused kernel)."""

        def __init__(self, dim: int) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(dim))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * self.weight

    class PlainLayerNorm(nn.Module):
        """LayerNorm spelled in the same elementary ops plus the centring and the bias."""

        def __init__(self, dim: int) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(dim))
            self.bias = nn.Parameter(torch.zeros(dim))

        def forward(self, x):
            centred = x - x.mean(-1, keepdim=True)
            return centred * torch.rsqrt(centred.pow(2).mean(-1, keepdim=True) + EPS) \
                * self.weight + self.bias

    return PlainRMSNorm, PlainLayerNorm


def build_implementations(d: int, kinds: Sequence[str] = KINDS) -> dict[str, nn.Module]:
    """'norm:kind' -> a module mapping [rows, d] -> [rows, d] (compiled ones not yet called)."""
    import torch
    from torch import nn

    from blocklab.nn import LayerNorm, RMSNorm

    plain_rms, plain_ln = _plain_norms()
    makers: dict[str, Callable[[], nn.Module]] = {
        "rmsnorm:blocklab": lambda: RMSNorm(d, eps=EPS),
        "layernorm:blocklab": lambda: LayerNorm(d, eps=EPS),
        "rmsnorm:torch": lambda: nn.RMSNorm(d, eps=EPS),
        "layernorm:torch": lambda: nn.LayerNorm(d, eps=EPS),
        "rmsnorm:plain": lambda: plain_rms(d),
        "layernorm:plain": lambda: plain_ln(d),
        "rmsnorm:compiled": lambda: torch.compile(plain_rms(d), dynamic=False),
        "layernorm:compiled": lambda: torch.compile(plain_ln(d), dynamic=False),
    }
    return {name: make() for name, make in makers.items() if name.split(":")[1] in kinds}
