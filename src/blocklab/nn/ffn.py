"""Position-wise feed-forward networks: plain two-matrix and gated three-matrix, and their widths.

    plain:  y = W_d φ(W_u x)                  2·d·m weights   (ReLU, GELU, SiLU FFNs)
    gated:  y = W_d (φ(W_g x) ⊙ W_u x)        3·d·m weights   (GLU, ReGLU, GeGLU, SwiGLU, Bilinear)

with d = d_model, m = d_ff, and biases (m + d plain, 2m + d gated) when `bias=True`. Submodules
carry the Hugging Face Llama names (`gate_proj`, `up_proj`, `down_proj`): checkpoints load by name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

from blocklab.config import FFNS
from blocklab.errors import InputError
from blocklab.nn.linear import Linear, linear
from blocklab.reference.ffn import equal_param_width


def _identity(x: torch.Tensor) -> torch.Tensor:
    return x


# name -> elementwise function; a gated FFN applies it to the gate branch only.
ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": F.relu,
    "gelu": F.gelu,  # exact: x·Φ(x), with the erf
    "gelu_tanh": partial(F.gelu, approximate="tanh"),  # GPT-2's tanh approximation
    "silu": F.silu,  # x·sigmoid(x), also called swish
    "sigmoid": torch.sigmoid,  # the original GLU gate
    "identity": _identity,  # Bilinear: the gate is a second linear branch
}


def _positive(owner: str, name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InputError(f"{owner}: {name}={value!r} is not allowed; expected a positive integer")


def _activation(owner: str, name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    if name not in ACTIVATIONS:
        raise InputError(f"{owner}: activation={name!r} is not allowed; expected one of "
                         f"{sorted(ACTIVATIONS)}")
    return ACTIVATIONS[name]


class FeedForward(nn.Module):
    """Plain two-matrix FFN: y = down_proj(φ(up_proj(x))).

    Shapes: x: [..., d_model] -> up_proj -> [..., d_ff] -> φ -> down_proj -> [..., d_model].
    """

    def __init__(self, d_model: int, d_ff: int, activation: str = "gelu",
                 bias: bool = False) -> None:
        super().__init__()
        _positive("FeedForward", "d_model", d_model)
        _positive("FeedForward", "d_ff", d_ff)
        self.act = _activation("FeedForward", activation)
        self.activation = activation
        self.d_ff = d_ff
        self.width: int | None = None  # a prefix width k < d_ff while `narrowed`
        self.up_proj = Linear(d_model, d_ff, bias=bias)
        self.down_proj = Linear(d_ff, d_model, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: [B, T, d_model] -> [B, T, d_model] (-> [B, T, width] inside, when narrowed)."""
        if self.width is None:
            return self.down_proj(self.act(self.up_proj(x)))
        k = self.width
        return _linear(self.down_proj, self.act(_linear(self.up_proj, x, rows=slice(0, k))),
                       cols=slice(0, k))

    def extra_repr(self) -> str:
        return f"activation={self.activation!r}"


class GatedFeedForward(nn.Module):
    """Gated FFN: y = down_proj(φ(gate_proj(x)) ⊙ up_proj(x)); SwiGLU when φ = SiLU.

        x ─┬─ gate_proj ─ φ ─┐
           │                  ⊙ ─ down_proj ─ y
           └─ up_proj ────────┘

    `packed` holds gate and up as one `gate_up_proj` Linear(d_model, 2·d_ff), gate rows first:
    the same function with one matmul, a different state dict.

    Shapes: x: [..., d_model] -> gate, up: [..., d_ff] -> [..., d_model].
    """

    def __init__(self, d_model: int, d_ff: int, activation: str = "silu", bias: bool = False,
                 packed: bool = False) -> None:
        super().__init__()
        _positive("GatedFeedForward", "d_model", d_model)
        _positive("GatedFeedForward", "d_ff", d_ff)
        self.act = _activation("GatedFeedForward", activation)
        self.activation = activation
        self.d_ff = d_ff
        self.width: int | None = None  # a prefix width k < d_ff while `narrowed`
        self.packed = packed
        if packed:
            self.gate_up_proj = Linear(d_model, 2 * d_ff, bias=bias)
        else:
            self.gate_proj = Linear(d_model, d_ff, bias=bias)
            self.up_proj = Linear(d_model, d_ff, bias=bias)
        self.down_proj = Linear(d_ff, d_model, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: [B, T, d_model] -> [B, T, d_model]; gate, up: [B, T, d_ff], or [B, T, width]
        when narrowed (the first `width` channels of each branch and of down_proj's input)."""
        if self.width is not None:
            k = self.width
            if self.packed:
                m = self.d_ff
                gate_up = _linear(self.gate_up_proj, x, rows=torch.cat(
                    [torch.arange(k), torch.arange(m, m + k)]).to(x.device))
                gate, up = gate_up.split(k, dim=-1)  # 2 × [B, T, k]
            else:
                gate = _linear(self.gate_proj, x, rows=slice(0, k))
                up = _linear(self.up_proj, x, rows=slice(0, k))
            return _linear(self.down_proj, self.act(gate) * up, cols=slice(0, k))
        if self.packed:
            gate, up = self.gate_up_proj(x).split(self.d_ff, dim=-1)  # 2 × [B, T, d_ff]
        else:
            gate, up = self.gate_proj(x), self.up_proj(x)
        return self.down_proj(self.act(gate) * up)

    def extra_repr(self) -> str:
        return f"activation={self.activation!r}, packed={self.packed}"


def _linear(layer: nn.Linear, x: torch.Tensor, rows: slice | torch.Tensor = slice(None),
            cols: slice = slice(None)) -> torch.Tensor:
    """`layer`(x) with only some of its weight's output `rows` (and their bias entries) or input
    `cols`: slices of the one weight, so its gradient lands in the slice and nowhere else."""
    return linear(x, layer.weight[rows][:, cols], None if layer.bias is None else layer.bias[rows])


@contextmanager
def narrowed(model: nn.Module, width: int | None) -> Iterator[nn.Module]:
    """Run every FFN of `model` at its first `width` intermediate channels (gate, up and down
    sliced together; None or a width ≥ an FFN's d_ff: that FFN whole) until the block ends:
    one trained model read at several widths (page 000's note on MoSE). Backward outside the
    block is fine: autograd saved the slices."""
    if width is not None and (isinstance(width, bool) or not isinstance(width, int)
                              or width < 1):
        raise InputError(f"narrowed: width={width!r} is not allowed; expected a positive "
                         "integer or None")
    ffns = [m for m in model.modules() if isinstance(m, FeedForward | GatedFeedForward)]
    if not ffns:
        raise InputError("narrowed: the model has no FeedForward or GatedFeedForward to narrow")
    before = [m.width for m in ffns]
    for m in ffns:
        m.width = None if width is None or width >= m.d_ff else width
    try:
        yield model
    finally:
        for m, w in zip(ffns, before, strict=True):
            m.width = w


def build_ffn(kind: str, d_model: int, d_ff: int, bias: bool = False,
              packed: bool = False) -> nn.Module:
    """The FFN named `kind`, a key of `blocklab.config.FFNS`; `packed` only for gated kinds."""
    if kind not in FFNS:
        raise InputError(f"ffn kind={kind!r} is not allowed; expected one of {sorted(FFNS)}")
    gated, activation = FFNS[kind]
    if gated:
        return GatedFeedForward(d_model, d_ff, activation=activation, bias=bias, packed=packed)
    if packed:
        raise InputError(f"ffn kind={kind!r} with packed=True is not allowed; expected a gated "
                         f"kind, one of {sorted(k for k, (g, _) in FFNS.items() if g)}")
    return FeedForward(d_model, d_ff, activation=activation, bias=bias)


def equal_param_gated_width(plain_width: int, multiple_of: int = 1) -> int:
    """Gated width whose 3·d·m weights match a plain FFN's 2·d·plain_width:
    m = ceil(2·plain_width / 3 / multiple_of) · multiple_of (never smaller)."""
    _positive("equal_param_gated_width", "plain_width", plain_width)
    _positive("equal_param_gated_width", "multiple_of", multiple_of)
    return equal_param_width(plain_width, multiple_of)

