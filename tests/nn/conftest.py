"""Helpers the nn tests share, imported as `from .conftest import ...`."""

import torch


def randn(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    """A standard-normal tensor of `shape` from its own seeded generator (the global one is
    left alone)."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def forward_backward(module: torch.nn.Module, x: torch.Tensor, g: torch.Tensor):
    """y = module(x) and the gradients that g, the gradient of the loss at y, gives x and the
    module's weight: (y, x.grad, module.weight.grad)."""
    x = x.clone().requires_grad_()
    module.zero_grad()
    y = module(x)
    y.backward(g)
    return y, x.grad, module.weight.grad
