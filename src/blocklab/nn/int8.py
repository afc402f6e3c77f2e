"""Int8 weight quantization of a `DecoderLM`: real (torchao) for speed, written out for the maths.

Symmetric int8, the convention of torchao's `Int8Tensor` (so the two agree bit for bit):

    s = max(|w|) / 127.5 over a group (clamped below at float32 eps)
    q = clamp(round(w · (1/s)), −128, 127)            round half to even
    ŵ = q · s                                         |ŵ − w| ≤ s/2 inside the group

A group is the whole matrix ("per-tensor", one scale) or one output row ("per-row", one scale per
output channel). Two ways to run a quantized linear layer (`MODES`):

    weight-only   int8 weights, float activations: y = (x @ q.T) · s; halves/quarters the bytes
                  a decode step reads, the FLOPs stay float
    dynamic       int8 weights and int8 activations (per-token scales chosen at run time):
                  y = (q_x @ q.T) · s_x · s, an int8 GEMM (with int32 accumulation)

Which linear layers (`PARTS`): "ffn", "attention" or "all"; embeddings and `lm_head` stay
float. SwiGLU's gate and up read the same x and can be quantized as one [2m, d] matrix
(`SWIGLU_SCHEMES`, C33): per row that equals quantizing them apart; per tensor the smaller
matrix takes the larger one's scale and loses resolution.

Shape legend: d: d_model, m: d_ff, [n_out, n_in]: a weight matrix.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Callable, Iterator

import torch
from torch import Tensor, nn

from blocklab.errors import InputError
from blocklab.nn.ffn import GatedFeedForward

QMIN, QMAX = -128, 127
# torchao's symmetric int8 range: max|w| maps to (QMAX − QMIN) / 2 = 127.5 codes.
HALF_RANGE = (QMAX - QMIN) / 2
PARTS = ("none", "ffn", "attention", "all")
MODES = ("weight-only", "dynamic")
GRANULARITIES = ("per-tensor", "per-row")
SWIGLU_SCHEMES = ("separate-per-row", "separate-per-tensor", "merged-per-row",
                  "merged-per-tensor")


def _check_choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise InputError(f"{name}={value!r} is not allowed; expected one of {list(allowed)}")


# --- the maths ---
def int8_scale(w: Tensor, granularity: str) -> Tensor:
    """Scale(s) of `w` [n_out, n_in]: [1, 1] per-tensor or [n_out, 1] per-row, float32."""
    _check_choice("granularity", granularity, GRANULARITIES)
    amax = w.float().abs().amax(dim=(0, 1) if granularity == "per-tensor" else 1, keepdim=True)
    return (amax / HALF_RANGE).clamp(min=torch.finfo(torch.float32).eps)


def quantize_int8(w: Tensor, scale: Tensor) -> Tensor:
    """q = clamp(round(w · (1/s)), −128, 127) as int8; `scale` broadcasts against w."""
    return torch.clamp(torch.round(w.float() * (1.0 / scale)), QMIN, QMAX).to(torch.int8)


def fake_quantize(w: Tensor, granularity: str, scale: Tensor | None = None) -> Tensor:
    """ŵ = q · s in w's dtype: what the int8 weight stands for (s from `int8_scale` unless
    given)."""
    scale = int8_scale(w, granularity) if scale is None else scale
    return (quantize_int8(w, scale).float() * scale).to(w.dtype)


def gated_ffn_weights(ffn: GatedFeedForward) -> tuple[Tensor, Tensor, Tensor]:
    """(gate [m, d], up [m, d], down [d, m]) of a gated FFN, packed or not."""
    if ffn.packed:
        gate, up = ffn.gate_up_proj.weight.split(ffn.d_ff, dim=0)
    else:
        gate, up = ffn.gate_proj.weight, ffn.up_proj.weight
    return gate, up, ffn.down_proj.weight


def quantize_swiglu(gate: Tensor, up: Tensor, down: Tensor,
                    scheme: str) -> tuple[Tensor, Tensor, Tensor]:
    """Dequantized (gate, up, down) under `scheme` (a key of SWIGLU_SCHEMES).

        separate-per-row      each matrix, one scale per output row
        separate-per-tensor   each matrix, one scale of its own
        merged-per-row        [gate; up] as one [2m, d] matrix, one scale per row
        merged-per-tensor     [gate; up] as one [2m, d] matrix, one scale for both

    down reads the hidden [.., m], not x: it is quantized on its own at that granularity.
    """
    _check_choice("scheme", scheme, SWIGLU_SCHEMES)
    how, granularity = scheme.split("-", 1)
    if how == "separate":
        return (fake_quantize(gate, granularity), fake_quantize(up, granularity),
                fake_quantize(down, granularity))
    merged = fake_quantize(torch.cat((gate, up), dim=0), granularity)  # [2m, d]
    q_gate, q_up = merged.split(gate.shape[0], dim=0)
    return q_gate, q_up, fake_quantize(down, granularity)


@torch.no_grad()
def swiglu_quantized_copy(model: nn.Module, scheme: str) -> nn.Module:
    """A deep copy of `model` with its gated FFN weights fake-quantized under `scheme`."""
    out = copy.deepcopy(model)
    found = 0
    for module in out.modules():
        if isinstance(module, GatedFeedForward):
            gate, up, down = quantize_swiglu(*gated_ffn_weights(module), scheme)
            if module.packed:
                module.gate_up_proj.weight.copy_(torch.cat((gate, up), dim=0))
            else:
                module.gate_proj.weight.copy_(gate)
                module.up_proj.weight.copy_(up)
            module.down_proj.weight.copy_(down)
            found += 1
    if not found:
        raise InputError("the model has no gated FFN (gate_proj, up_proj, down_proj) to "
                         "quantize; expected a gated ffn kind such as swiglu")
    return out


# --- real quantization with torchao ---
@contextlib.contextmanager
def quiet_torchao_import() -> Iterator[None]:
    """Keep the log lines of importing torchao (directly or through `transformers`) off
    stderr meanwhile: a warning per GPU extension it cannot load, and torch's pytree warning."""
    loggers = [logging.getLogger(name) for name in ("torchao", "torch.utils._pytree")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def torchao_config(mode: str, granularity: str = "per-row"):
    """torchao's config for `mode`, weights at `granularity`; `set_inductor_config` off, as it
    would change torch.compile's settings for every model in this process."""
    _check_choice("mode", mode, MODES)
    _check_choice("granularity", granularity, GRANULARITIES)
    with quiet_torchao_import():
        from torchao.quantization import (
            Int8DynamicActivationInt8WeightConfig,
            Int8WeightOnlyConfig,
            PerRow,
            PerTensor,
        )
    g = PerRow() if granularity == "per-row" else PerTensor()
    if mode == "weight-only":
        return Int8WeightOnlyConfig(granularity=g, set_inductor_config=False)
    return Int8DynamicActivationInt8WeightConfig(granularity=g, set_inductor_config=False)


def part_of(name: str) -> str | None:
    """"ffn" or "attention" for a linear layer's qualified name inside a DecoderLM
    (`layers.3.ffn.gate_proj`), None for anything else (`lm_head`)."""
    pieces = name.split(".")
    if len(pieces) >= 4 and pieces[0] == "layers":
        return {"ffn": "ffn", "attention": "attention"}.get(pieces[2])
    return None


def linear_filter(part: str) -> Callable[[nn.Module, str], bool]:
    """torchao `filter_fn`: True for the nn.Linear layers of `part` ("ffn", "attention", "all")."""
    _check_choice("part", part, PARTS[1:])
    wanted = ("ffn", "attention") if part == "all" else (part,)
    return lambda module, name: isinstance(module, nn.Linear) and part_of(name) in wanted


def quantize_model(model: nn.Module, part: str, mode: str,
                   granularity: str = "per-row") -> nn.Module:
    """`model` with the linear layers of `part` quantized to int8 by torchao, in place."""
    config = torchao_config(mode, granularity)
    if part == "none":
        return model
    with quiet_torchao_import():
        from torchao.quantization import quantize_
    quantize_(model, config, filter_fn=linear_filter(part))
    return model


@torch.no_grad()
def nonfinite_weights(model: nn.Module) -> dict[str, int]:
    """{name: count of NaN or ±inf entries} for every parameter of `model` that holds any;
    such a weight's int8 scale is NaN or inf, so no error measured through it means anything."""
    return {name: bad for name, weight in model.named_parameters()
            if (bad := int((~torch.isfinite(weight)).sum()))}


__all__ = ["GRANULARITIES", "MODES", "PARTS", "SWIGLU_SCHEMES", "fake_quantize",
           "gated_ffn_weights", "int8_scale", "linear_filter",
           "nonfinite_weights", "part_of", "quantize_int8", "quantize_model", "quantize_swiglu",
           "swiglu_quantized_copy", "torchao_config"]
