"""One Transformer layer: attention and FFN sublayers, each inside a residual with its norms.

With α = residual_scale (1 normally; DeepNorm's α > 1 up-weights the residual stream) and
N_a = attn_norm, N_f = ffn_norm, P_a = attn_post_norm, P_f = ffn_post_norm:

    pre:       h = α·x + attn(N_a(x))            y = α·h + ffn(N_f(h))
    post:      h = N_a(α·x + attn(x))            y = N_f(α·h + ffn(h))
    sandwich:  h = α·x + P_a(attn(N_a(x)))       y = α·h + P_f(ffn(N_f(h)))      (Gemma 2)

    pre:       x ──┬──────────────────(+)── h ──┬─────────────────(+)── y
                   └─ N_a ── attn ─────┘        └─ N_f ── ffn ─────┘

    post:      x ──┬──────────(+)── N_a ── h ──┬─────────(+)── N_f ── y
                   └─ attn ────┘               └─ ffn ────┘

    sandwich:  x ──┬───────────────────────(+)── h ──┬──────────────────────(+)── y
                   └─ N_a ── attn ── P_a ───┘        └─ N_f ── ffn ── P_f ───┘

Pre-norm keeps an identity path from x to y (the Jacobian is I + …); in post-norm every path
passes through a norm (see `blocklab.reference.residual`).
"""

from __future__ import annotations

from torch import Tensor, nn

from blocklab.config import PLACEMENTS
from blocklab.errors import InputError
from blocklab.nn.attention import LayerCache


class Block(nn.Module):
    """A decoder layer assembled from its parts; it reads no config.

    Args:
        attention: called as `attention(x, rope=..., bias=..., cache=...)` (an `Attention`).
        attn_norm, ffn_norm: N_a and N_f of the module docstring.
        attn_post_norm, ffn_post_norm: P_a and P_f; sandwich only, and required.
        residual_scale: α, multiplying the residual stream before each sum.

    Shapes:
        x: [B, T, d_model] -> [B, T, d_model]; rope, bias, cache pass through to `attention`.
    """

    def __init__(self, attention: nn.Module, ffn: nn.Module, attn_norm: nn.Module,
                 ffn_norm: nn.Module, *, placement: str = "pre",
                 attn_post_norm: nn.Module | None = None, ffn_post_norm: nn.Module | None = None,
                 residual_scale: float = 1.0) -> None:
        super().__init__()
        if placement not in PLACEMENTS:
            raise InputError(f"Block: placement={placement!r} is not allowed; expected one of "
                             f"{list(PLACEMENTS)}")
        has_post = (attn_post_norm is not None, ffn_post_norm is not None)
        if placement == "sandwich" and not all(has_post):
            raise InputError("Block: placement='sandwich' needs attn_post_norm and ffn_post_norm")
        if placement != "sandwich" and any(has_post):
            raise InputError(f"Block: placement={placement!r} takes no attn_post_norm or "
                             "ffn_post_norm; expected placement='sandwich' for those")
        self.placement = placement
        self.residual_scale = float(residual_scale)
        self.attention = attention
        self.ffn = ffn
        self.attn_norm = attn_norm
        self.ffn_norm = ffn_norm
        self.attn_post_norm = attn_post_norm
        self.ffn_post_norm = ffn_post_norm

    def _scaled(self, x: Tensor) -> Tensor:
        # Skip the multiply at α = 1: it would copy the whole residual stream for nothing.
        return x if self.residual_scale == 1.0 else x * self.residual_scale

    def forward(self, x: Tensor, rope: tuple[Tensor, Tensor] | None = None,
                bias: Tensor | None = None, cache: LayerCache | None = None) -> Tensor:
        if self.placement == "pre":
            h = self._scaled(x) + self.attention(self.attn_norm(x), rope=rope, bias=bias,
                                                 cache=cache)
            return self._scaled(h) + self.ffn(self.ffn_norm(h))
        if self.placement == "post":
            h = self.attn_norm(self._scaled(x) + self.attention(x, rope=rope, bias=bias,
                                                                cache=cache))
            return self.ffn_norm(self._scaled(h) + self.ffn(h))
        attn = self.attention(self.attn_norm(x), rope=rope, bias=bias, cache=cache)
        h = self._scaled(x) + self.attn_post_norm(attn)
        return self._scaled(h) + self.ffn_post_norm(self.ffn(self.ffn_norm(h)))

    def extra_repr(self) -> str:
        return f"placement={self.placement!r}, residual_scale={self.residual_scale}"
