"""Causal multi-head attention with grouped-query heads, and the KV cache used for decoding.

    q = W_q x,  k = W_k x,  v = W_v x                      (per head; n_kv_heads ≤ n_heads)
    q, k <- q_norm(q), k_norm(k)                           (optional per-head RMSNorm, Qwen3)
    q, k <- RoPE(q), RoPE(k)                               (when the model uses RoPE)
    s    = scale · q kᵀ                                    (scale = 1/sqrt(head_dim) by default)
    s    <- cap · tanh(s / cap)                            (optional logit softcap, Gemma 2)
    y    = W_o softmax(s + bias + mask) v                  (bias: ALiBi; mask: causal, window)

Key/value head j serves query heads j·g … j·g + g − 1 with g = n_heads / n_kv_heads, the order of
Hugging Face's `repeat_kv`.

Shape legend:
    B: batch, T: new tokens (queries), T_k: keys (cached + new), H: n_heads, H_kv: n_kv_heads,
    head_dim: channels per head, r: rotated channels (rotary_dim).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from blocklab.errors import InputError
from blocklab.nn.linear import Linear
from blocklab.nn.position import LAYOUTS, apply_rotary


class LayerCache:
    """One layer's cached keys and values, [B, H_kv, length, head_dim] each: allocated once
    and written in place with `max_len`, else grown by concatenation (a copy per step)."""

    def __init__(self, max_len: int | None = None) -> None:
        if max_len is not None and (isinstance(max_len, bool) or not isinstance(max_len, int)
                                    or max_len < 1):
            raise InputError(f"KVCache max_len={max_len!r} is not allowed; expected a positive "
                             "integer or None")
        self.max_len = max_len
        self.length = 0
        self._k: Tensor | None = None
        self._v: Tensor | None = None

    def update(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Append k, v: [B, H_kv, T, head_dim]; return all keys and values so far,
        [B, H_kv, length + T, head_dim]."""
        t = k.shape[2]
        end = self.length + t
        if self.max_len is None:
            if self._k is None:
                self._k, self._v = k, v
            else:
                self._k = torch.cat((self._k, k), dim=2)
                self._v = torch.cat((self._v, v), dim=2)
        else:
            if end > self.max_len:
                raise InputError(f"KVCache is full: {self.length} cached + {t} new tokens exceed "
                                 f"max_len={self.max_len}; allocate a longer cache")
            if self._k is None:
                b, h, _, d = k.shape
                self._k = k.new_empty(b, h, self.max_len, d)
                self._v = v.new_empty(b, h, self.max_len, v.shape[-1])
            self._k[:, :, self.length:end] = k
            self._v[:, :, self.length:end] = v
        self.length = end
        return self._k[:, :, :end], self._v[:, :, :end]


class KVCache:
    """Keys and values of the tokens seen so far, one `LayerCache` per layer; `max_len`
    preallocates that many tokens (None grows on demand). `positions` ([length] or [B, length])
    holds the cached tokens' positions where the scheme needs them (ALiBi)."""

    def __init__(self, n_layers: int, max_len: int | None = None) -> None:
        if isinstance(n_layers, bool) or not isinstance(n_layers, int) or n_layers < 1:
            raise InputError(f"KVCache n_layers={n_layers!r} is not allowed; expected a positive "
                             "integer")
        self.layers = [LayerCache(max_len) for _ in range(n_layers)]
        self.positions: Tensor | None = None

    def __getitem__(self, layer: int) -> LayerCache:
        return self.layers[layer]

    def __len__(self) -> int:
        return len(self.layers)

    @property
    def length(self) -> int:
        """Tokens cached by the first layer (read it before a forward: layers update in turn)."""
        return self.layers[0].length


def attention_mask(t_q: int, t_k: int, past: int, sliding_window: int | None = None,
                   device: torch.device | None = None) -> Tensor:
    """Boolean [T, T_k], True where query i (at index past + i) may attend to key j.

        causal:          j <= past + i
        sliding window:  j >  past + i − window   (the window holds `window` keys, itself included,
                                                   as Hugging Face's `sliding_window_overlay`)
    """
    q_idx = torch.arange(past, past + t_q, device=device)[:, None]  # [T, 1]
    k_idx = torch.arange(t_k, device=device)[None, :]  # [1, T_k]
    allowed = k_idx <= q_idx
    if sliding_window is not None:
        allowed = allowed & (k_idx > q_idx - sliding_window)
    return allowed


class Attention(nn.Module):
    """Causal multi-head attention with grouped-query heads (`n_kv_heads` divides `n_heads`).

    Args:
        n_kv_heads: H_kv; H_kv = H is multi-head, H_kv = 1 multi-query attention.
        head_dim: channels per head (need not equal d_model / n_heads).
        qkv_bias, out_bias: biases on q/k/v_proj (Qwen2) and on o_proj.
        q_norm, k_norm: modules over head_dim applied to q and k before RoPE (Qwen3).
        scale: softmax scale; None means 1 / sqrt(head_dim).
        logit_softcap: cap · tanh(s / cap) on the scores (Gemma 2); SDPA cannot apply it.
        sliding_window: each query sees at most this many keys, itself included (Mistral).
        packed_qkv: one `qkv_proj` (rows q, k, v) and one matmul; a different state dict.

    `forward(x, rope=None, bias=None, cache=None)`:
        x: [B, T, d_model]; rope: (cos, sin), each [T, r] or [B, T, r], for the positions of x;
        bias: additive float scores bias [1 or B, H, T, T_k] (ALiBi), covering cached keys;
        cache: this layer's `LayerCache`, updated in place. Returns [B, T, d_model].

    Without bias, window or softcap, SDPA runs with `is_causal=True` and no mask tensor (its
    fastest path).
    """

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int, head_dim: int,
                 qkv_bias: bool = False, out_bias: bool = False, *,
                 q_norm: nn.Module | None = None, k_norm: nn.Module | None = None,
                 rope_layout: str = "half_split", scale: float | None = None,
                 logit_softcap: float | None = None, sliding_window: int | None = None,
                 packed_qkv: bool = False) -> None:
        super().__init__()
        for name, value in (("d_model", d_model), ("n_heads", n_heads),
                            ("n_kv_heads", n_kv_heads), ("head_dim", head_dim)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"Attention: {name}={value!r} is not allowed; expected a "
                                 "positive integer")
        if n_heads % n_kv_heads:
            raise InputError(f"Attention: n_kv_heads={n_kv_heads} is not allowed; expected a "
                             f"divisor of n_heads={n_heads}")
        if rope_layout not in LAYOUTS:
            raise InputError(f"Attention: rope_layout={rope_layout!r} is not allowed; expected "
                             f"one of {list(LAYOUTS)}")
        if (q_norm is None) != (k_norm is None):
            raise InputError("Attention: give both q_norm and k_norm or neither")
        self.n_heads = n_heads
        self.n_kv_heads = n_kv_heads
        self.head_dim = head_dim
        self.rope_layout = rope_layout
        self.scale = 1.0 / math.sqrt(head_dim) if scale is None else float(scale)
        self.logit_softcap = logit_softcap
        self.sliding_window = sliding_window
        self.packed_qkv = packed_qkv
        if packed_qkv:
            self.qkv_proj = Linear(d_model, (n_heads + 2 * n_kv_heads) * head_dim,
                                      bias=qkv_bias)
        else:
            self.q_proj = Linear(d_model, n_heads * head_dim, bias=qkv_bias)
            self.k_proj = Linear(d_model, n_kv_heads * head_dim, bias=qkv_bias)
            self.v_proj = Linear(d_model, n_kv_heads * head_dim, bias=qkv_bias)
        self.o_proj = Linear(n_heads * head_dim, d_model, bias=out_bias)
        self.q_norm = q_norm
        self.k_norm = k_norm

    def forward(self, x: Tensor, rope: tuple[Tensor, Tensor] | None = None,
                bias: Tensor | None = None, cache: LayerCache | None = None) -> Tensor:
        B, T, _ = x.shape
        H, H_kv, hd = self.n_heads, self.n_kv_heads, self.head_dim
        if self.packed_qkv:
            qkv = self.qkv_proj(x).view(B, T, H + 2 * H_kv, hd).transpose(1, 2)
            q, k, v = qkv.split((H, H_kv, H_kv), dim=1)  # (B, H, T, hd), 2 × (B, H_kv, T, hd)
        else:
            q = self.q_proj(x).view(B, T, H, hd).transpose(1, 2)  # (B, H, T, hd)
            k = self.k_proj(x).view(B, T, H_kv, hd).transpose(1, 2)  # (B, H_kv, T, hd)
            v = self.v_proj(x).view(B, T, H_kv, hd).transpose(1, 2)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        if rope is not None:
            q, k = apply_rotary(q, k, rope[0], rope[1], self.rope_layout)
        past = 0
        if cache is not None:
            past = cache.length
            k, v = cache.update(k, v)  # (B, H_kv, T_k, hd)
        t_k = k.shape[2]

        if self.logit_softcap is not None:
            y = self._explicit(q, k, v, attention_mask(T, t_k, past, self.sliding_window,
                                                       x.device), bias)
        else:
            window_bites = self.sliding_window is not None and t_k > self.sliding_window
            if bias is None and not window_bites and (past == 0 or T == 1):
                # A branch, not `is_causal = past == 0 and T > 1`: when torch.compile traces T
                # symbolically that expression is a SymBool, which SDPA rejects.
                mask, is_causal = None, False
                if past == 0 and T > 1:
                    is_causal = True
            else:
                mask = attention_mask(T, t_k, past, self.sliding_window, x.device)  # [T, T_k]
                if bias is not None:
                    mask = bias.to(q.dtype).masked_fill(~mask, float("-inf"))
                is_causal = False
            # enable_gqa reads each key/value head once instead of materialising H copies.
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal,
                                               scale=self.scale, enable_gqa=H_kv != H)
        y = y.transpose(1, 2).reshape(B, T, H * hd)  # (B, T, H·hd)
        return self.o_proj(y)

    def _explicit(self, q: Tensor, k: Tensor, v: Tensor, allowed: Tensor,
                  bias: Tensor | None) -> Tensor:
        """softmax(softcap(scale · q kᵀ) + bias, masked) v, spelled out (softcap needs it);
        [B, H, T, hd]."""
        group = self.n_heads // self.n_kv_heads
        if group > 1:
            k = k.repeat_interleave(group, dim=1)  # (B, H, T_k, hd)
            v = v.repeat_interleave(group, dim=1)
        scores = (q @ k.transpose(-2, -1)) * self.scale  # (B, H, T, T_k)
        cap = self.logit_softcap
        scores = cap * torch.tanh(scores / cap)
        if bias is not None:
            scores = scores + bias.to(scores.dtype)
        scores = scores.masked_fill(~allowed, float("-inf"))
        # The softmax runs in float32 at least, as Hugging Face's eager attention does.
        weights = torch.softmax(scores, dim=-1, dtype=torch.promote_types(scores.dtype,
                                                                          torch.float32))
        return weights.to(v.dtype) @ v

    def extra_repr(self) -> str:
        return (f"n_heads={self.n_heads}, n_kv_heads={self.n_kv_heads}, "
                f"head_dim={self.head_dim}, scale={self.scale:.4g}, "
                f"logit_softcap={self.logit_softcap}, sliding_window={self.sliding_window}, "
                f"packed_qkv={self.packed_qkv}")
