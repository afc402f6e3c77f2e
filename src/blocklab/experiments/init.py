"""Named weight initialisations, each parameter drawn from its own seeded stream.

    gpt2     Linear and Embedding weights ~ N(0, 0.02²); the residual output projections
             (`o_proj`, `down_proj`) ~ N(0, (0.02 / sqrt(2 · n_layers))²), so the residual
             stream's variance does not grow with depth (GPT-2 paper, §2.3; nanoGPT `c_proj`).
    xavier   Linear weights ~ U(±sqrt(6 / (fan_in + fan_out))) (Glorot & Bengio 2010);
             Embedding weights ~ N(0, 0.02²).
    default  PyTorch's own `reset_parameters` of every module (Kaiming-uniform Linear, N(0, 1)
             Embedding).

All three set biases to zero (except `default`, which keeps PyTorch's) and norm gains to their
identity: ones, or zeros for a `(1 + γ)` gain (`unit_offset`).

Each parameter's random stream is seeded from (seed, parameter name), not drawn one after the
other from a global generator. So two arms of an experiment that differ in one part, say the FFN,
still start from identical embeddings and attention weights wherever the names and shapes match.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable

import torch
from torch import nn

from blocklab.errors import InputError
from blocklab.nn.norm import LayerNorm, RMSNorm

_NORMS = (RMSNorm, LayerNorm, nn.LayerNorm, nn.RMSNorm)
_RESIDUAL_OUTPUTS = ("o_proj", "down_proj")
STD = 0.02


def param_generator(seed: int, name: str) -> torch.Generator:
    """A CPU generator seeded from sha256(f"{seed}/{name}"): one stream per parameter."""
    digest = hashlib.sha256(f"init/{seed}/{name}".encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "big") >> 1)


def _fill(param: torch.Tensor, draw: Callable[[torch.Tensor, torch.Generator], None],
          generator: torch.Generator) -> None:
    # Draw on the CPU, so the numbers do not depend on the device the model lives on.
    values = torch.empty(param.shape, dtype=torch.float32)
    draw(values, generator)
    with torch.no_grad():
        param.copy_(values)


def _init_norm(module: nn.Module) -> None:
    with torch.no_grad():
        if getattr(module, "weight", None) is not None:
            module.weight.fill_(0.0 if getattr(module, "unit_offset", False) else 1.0)
        if getattr(module, "bias", None) is not None:
            module.bias.zero_()


def _named_init(model: nn.Module, seed: int, n_layers: int, linear: str) -> None:
    residual_std = STD / math.sqrt(2 * n_layers)
    seen: set[int] = set()  # a tied lm_head keeps the embedding's draw (the first owner's)
    for name, module in model.named_modules():
        weight = getattr(module, "weight", None)
        if isinstance(weight, torch.Tensor):
            if id(weight) in seen:
                continue
            seen.add(id(weight))
        if isinstance(module, _NORMS):
            _init_norm(module)
        elif isinstance(module, nn.Linear):
            if linear == "xavier":
                def draw(t, g):
                    nn.init.xavier_uniform_(t, generator=g)
            else:
                std = residual_std if name.endswith(_RESIDUAL_OUTPUTS) else STD
                def draw(t, g, std=std):
                    nn.init.normal_(t, 0.0, std, generator=g)
            _fill(module.weight, draw, param_generator(seed, f"{name}.weight"))
            if module.bias is not None:
                with torch.no_grad():
                    module.bias.zero_()
        elif isinstance(module, nn.Embedding):
            _fill(module.weight, lambda t, g: nn.init.normal_(t, 0.0, STD, generator=g),
                  param_generator(seed, f"{name}.weight"))


def init_gpt2(model: nn.Module, seed: int, n_layers: int) -> None:
    _named_init(model, seed, n_layers, "gpt2")


def init_xavier(model: nn.Module, seed: int, n_layers: int) -> None:
    _named_init(model, seed, n_layers, "xavier")


def init_default(model: nn.Module, seed: int, n_layers: int) -> None:
    """PyTorch's own `reset_parameters`, module by module under a per-module seed."""
    seen: set[int] = set()
    for name, module in model.named_modules():
        reset = getattr(module, "reset_parameters", None)
        own = [p for p in module.parameters(recurse=False) if id(p) not in seen]
        if callable(reset) and own:
            seen.update(id(p) for p in own)
            digest = hashlib.sha256(f"init/{seed}/{name}".encode()).digest()
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(int.from_bytes(digest[:8], "big") >> 1)
                reset()


INITS: dict[str, Callable[[nn.Module, int, int], None]] = {
    "gpt2": init_gpt2,
    "xavier": init_xavier,
    "default": init_default,
}


def initialize(model: nn.Module, name: str, seed: int, n_layers: int) -> None:
    """Re-initialise every parameter of `model` in place by the named scheme."""
    if name not in INITS:
        raise InputError(f"init={name!r} is not allowed; expected one of {sorted(INITS)}")
    INITS[name](model, seed, n_layers)
