"""Named weight initialisations, each parameter drawn from its own seeded stream.

    gpt2     Linear and Embedding ~ N(0, 0.02²); residual outputs (`o_proj`, `down_proj`)
             ~ N(0, (0.02 / sqrt(2 · n_layers))²) (GPT-2 paper §2.3; nanoGPT `c_proj`)
    xavier   Linear ~ U(±sqrt(6 / (fan_in + fan_out))) (Glorot & Bengio 2010); Embedding
             ~ N(0, 0.02²)
    fan_in   Linear ~ N(0, 1 / fan_in): unit-variance pre-activations from a normed input at
             any width; residual outputs ~ N(0, 1 / (2 · n_layers · fan_in)); Embedding
             ~ N(0, 1), or N(0, 1 / d) when tied to the head
    depth    every Linear of layer i ~ N(0, (0.02 / sqrt(2 · (i + 1)))²) (torchtitan's
             `depth_init` std, here on every Linear of the layer); the rest ~ N(0, 0.02²)
    default  PyTorch's own `reset_parameters` of every module

All but `default` zero the biases and set norm gains to identity (zeros for a `(1 + γ)` gain).
Seeding each parameter from (seed, name) lets arms that differ in one part start from identical
weights wherever the names and shapes match.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable
from functools import partial

import torch
from torch import nn

from blocklab.nn.norm import LayerNorm, RMSNorm

_NORMS = (RMSNorm, LayerNorm, nn.LayerNorm, nn.RMSNorm)
_RESIDUAL_OUTPUTS = ("o_proj", "down_proj")
STD = 0.02
_LAYER = re.compile(r"layers\.(\d+)\.")  # DecoderLM names its layers layers.0, layers.1, …


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


def _linear_std(name: str, fan_in: int, n_layers: int, linear: str) -> float:
    """Normal std of a Linear weight under the "gpt2", "fan_in" or "depth" scheme."""
    if linear == "depth":  # by the layer's own index, `layers.<i>.…`; the head at STD
        layer = _LAYER.match(name)
        return STD / math.sqrt(2 * (int(layer.group(1)) + 1)) if layer else STD
    base = 1 / math.sqrt(fan_in) if linear == "fan_in" else STD
    return base / math.sqrt(2 * n_layers) if name.endswith(_RESIDUAL_OUTPUTS) else base


def _named_init(model: nn.Module, seed: int, n_layers: int, linear: str) -> None:
    linear_weights = {id(m.weight) for m in model.modules() if isinstance(m, nn.Linear)}
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
                std = _linear_std(name, module.weight.shape[1], n_layers, linear)
                def draw(t, g, std=std):
                    nn.init.normal_(t, 0.0, std, generator=g)
            _fill(module.weight, draw, param_generator(seed, f"{name}.weight"))
            if module.bias is not None:
                with torch.no_grad():
                    module.bias.zero_()
        elif isinstance(module, nn.Embedding):
            std = STD
            if linear == "fan_in":
                tied = id(module.weight) in linear_weights
                std = 1 / math.sqrt(module.weight.shape[1]) if tied else 1.0
            _fill(module.weight, lambda t, g, std=std: nn.init.normal_(t, 0.0, std, generator=g),
                  param_generator(seed, f"{name}.weight"))


def init_default(model: nn.Module, seed: int, n_layers: int) -> None:
    """PyTorch's own `reset_parameters`, module by module under a per-module seed."""
    seen: set[int] = set()
    for name, module in model.named_modules():
        reset = getattr(module, "reset_parameters", None)
        own = [p for p in module.parameters(recurse=False) if id(p) not in seen]
        if callable(reset) and own:
            seen.update(id(p) for p in own)
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(param_generator(seed, name).initial_seed())
                reset()


# name -> initialise(model, seed, n_layers), in place
INITS: dict[str, Callable[[nn.Module, int, int], None]] = {
    "gpt2": partial(_named_init, linear="gpt2"),
    "xavier": partial(_named_init, linear="xavier"),
    "fan_in": partial(_named_init, linear="fan_in"),
    "depth": partial(_named_init, linear="depth"),
    "default": init_default,
}
