"""Position-wise feed-forward networks: plain two-matrix and gated three-matrix, and their widths.

    plain:  y = W_d φ(W_u x)                  2·d·m weights   (ReLU, GELU, SiLU FFNs)
    gated:  y = W_d (φ(W_g x) ⊙ W_u x)        3·d·m weights   (GLU, ReGLU, GeGLU, SwiGLU, Bilinear)

with d = d_model, m = d_ff, and biases (m + d plain, 2m + d gated) when `bias=True`. A gated
FFN matches a plain one of width m₀ in weights at m = 2·m₀/3 (`equal_param_gated_width`).
Submodules carry the Hugging Face Llama names (`gate_proj`, `up_proj`, `down_proj`) so that
checkpoints load by name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

from blocklab.config import FFNS, gated_ffn_width
from blocklab.errors import InputError
from blocklab.nn.linear import Linear
from blocklab.reference.ffn import equal_param_width


def _identity(x: torch.Tensor) -> torch.Tensor:
    return x


# name -> elementwise function; a gated FFN applies it to the gate branch only. A new gated FFN
# takes its kind in `blocklab.config.FFNS` and its function here, nothing else.
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

    Args:
        d_model: input and output width d.
        d_ff: hidden width m (4·d in GPT-2 and BERT).
        activation: a key of `ACTIVATIONS`.
        bias: biases on both projections (GPT-2, BERT).

    Shapes:
        x: [B, T, d_model] -> up_proj -> [B, T, d_ff] -> φ -> down_proj -> [B, T, d_model].
        Any leading shape works; only the last axis is mixed.
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

    Args:
        d_model: input and output width d.
        d_ff: hidden width m of each branch (Llama: about 2/3 · 4d, see `ffn_width`).
        activation: a key of `ACTIVATIONS`, applied to the gate branch only.
        bias: biases on all three projections.
        packed: hold gate and up as one `gate_up_proj` Linear(d_model, 2·d_ff), gate rows first,
            and split its output: the same function with one matmul instead of two. Its
            state dict then has `gate_up_proj.*` instead of `gate_proj.*` and `up_proj.*`.

    Shapes:
        x: [B, T, d_model] -> gate, up: [B, T, d_ff] -> [B, T, d_model].
        Any leading shape works; only the last axis is mixed.
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
    `cols` (the bias kept whole): slices of the one weight, so its gradient lands in the slice
    and nowhere else. Computes in x's floating dtype, as `blocklab.nn.linear.Linear`."""
    weight = layer.weight[rows][:, cols]
    bias = None if layer.bias is None else layer.bias[rows]
    if x.dtype != weight.dtype and x.dtype.is_floating_point:
        weight = weight.to(x.dtype)
        bias = None if bias is None else bias.to(x.dtype)
    return F.linear(x, weight, bias)


@contextmanager
def narrowed(model: nn.Module, width: int | None) -> Iterator[nn.Module]:
    """Run every FFN of `model` at its first `width` intermediate channels (gate, up and down
    sliced together; None or a width ≥ an FFN's d_ff: that FFN whole) until the block ends,
    then restore each FFN's previous width. The width control of nested-width FFNs (page
    000's 2026 note on MoSE): one trained model read at several widths.

        with narrowed(model, 48):
            logits = model(tokens)   # every FFN at its first 48 channels

    Backward outside the block is fine: the slices are views saved by autograd."""
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
    """The FFN named `kind`, a key of `blocklab.config.FFNS` (e.g. "gelu", "swiglu").

    `packed` applies to gated kinds only; asking for it on a plain FFN raises rather than being
    silently ignored.
    """
    if kind not in FFNS:
        raise InputError(f"ffn kind={kind!r} is not allowed; expected one of {sorted(FFNS)}")
    gated, activation = FFNS[kind]
    if gated:
        return GatedFeedForward(d_model, d_ff, activation=activation, bias=bias, packed=packed)
    if packed:
        raise InputError(f"ffn kind={kind!r} with packed=True is not allowed; expected a gated "
                         f"kind, one of {sorted(k for k, (g, _) in FFNS.items() if g)}")
    return FeedForward(d_model, d_ff, activation=activation, bias=bias)


def ffn_width(d_model: int, kind: str, d_ff: int | None = None, multiple_of: int = 1,
              ffn_dim_multiplier: float | None = None) -> int:
    """The hidden width m, by the same rule as `ModelConfig`.

    An explicit `d_ff` wins. Otherwise a plain FFN gets 4·d_model (the Transformer and GPT-2
    ratio) and a gated one gets `blocklab.config.gated_ffn_width`: Meta's Llama rule,
    int(2/3 · 4d) · ffn_dim_multiplier, rounded up to `multiple_of`.
    """
    _positive("ffn_width", "d_model", d_model)
    _positive("ffn_width", "multiple_of", multiple_of)
    if kind not in FFNS:
        raise InputError(f"ffn_width: kind={kind!r} is not allowed; expected one of "
                         f"{sorted(FFNS)}")
    if ffn_dim_multiplier is not None and not (isinstance(ffn_dim_multiplier, int | float)
                                               and ffn_dim_multiplier > 0):
        raise InputError(f"ffn_width: ffn_dim_multiplier={ffn_dim_multiplier!r} is not "
                         "allowed; expected a number > 0 or None")
    if d_ff is not None:
        _positive("ffn_width", "d_ff", d_ff)
        return d_ff
    if not FFNS[kind][0]:
        return 4 * d_model
    return gated_ffn_width(d_model, multiple_of, ffn_dim_multiplier)


def equal_param_gated_width(plain_width: int, multiple_of: int = 1) -> int:
    """Gated width whose 3·d·m weights match a plain FFN's 2·d·plain_width, rounded up.

    m = ceil(2·plain_width / 3 / multiple_of) · multiple_of, so the gated FFN is never smaller
    and at most 3·d·multiple_of weights larger. Meta's rule (`gated_ffn_width`) truncates
    2/3 · 4d to an integer first and can land one below this before rounding.
    """
    _positive("equal_param_gated_width", "plain_width", plain_width)
    _positive("equal_param_gated_width", "multiple_of", multiple_of)
    return equal_param_width(plain_width, multiple_of)

