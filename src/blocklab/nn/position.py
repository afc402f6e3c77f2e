"""Position encodings: rotary (RoPE), ALiBi, sinusoidal and learned absolute positions.

    tokens -> embed --(+ SinusoidalPositions / LearnedPositions)--> blocks
    attention:  q, k --(apply_rotary with RotaryEmbedding's cos, sin)--> softmax(q k^T / sqrt(d)
                                                                                 + ALiBi bias)

Shape legend:
    B: batch, H: heads, T: sequence length (T_q queries, T_k keys), head_dim: channels per head,
    r: rotary_dim (rotated channels, <= head_dim), d_model: model width.
"""

import math

import torch
from torch import Tensor, nn

from blocklab.errors import InputError, PositionsBeyondTable
from blocklab.nn.rope_scaling import rope_frequencies, rope_type_of

LAYOUTS = ("half_split", "interleaved")


def _check_layout(layout: str) -> None:
    if layout not in LAYOUTS:
        raise InputError(f"unknown RoPE layout {layout!r}; allowed: {', '.join(LAYOUTS)}")


def _check_positions(positions: Tensor, max_position: int | None = None) -> tuple[int, int]:
    """Integer positions of rank 1 or 2; returns (min, max), or (0, -1) when empty.

    A caller that made the positions itself passes their `max_position`, returned as
    (0, max_position) without reading the values back (a device sync, and a graph break under
    torch.compile).
    """
    if not isinstance(positions, Tensor):
        raise InputError(f"positions must be a tensor, got {type(positions).__name__}")
    dtype = positions.dtype
    if dtype.is_floating_point or dtype.is_complex or dtype == torch.bool:
        raise InputError(f"positions must be an integer tensor, got dtype {positions.dtype}")
    if positions.dim() not in (1, 2):
        raise InputError(f"positions must be [T] or [B, T], got shape {tuple(positions.shape)}")
    if positions.numel() == 0:
        return 0, -1
    if max_position is not None:
        return 0, max_position
    lo, hi = int(positions.min()), int(positions.max())
    if lo < 0:
        raise InputError(f"positions must be >= 0, got {lo}")
    return lo, hi


# --- RoPE ------------------------------------------------------------------------------------


def rotate_half(x: Tensor) -> Tensor:
    """``[x1, x2] -> [-x2, x1]``: channel i pairs with i + r/2 (Hugging Face / GPT-NeoX)."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rotate_interleaved(x: Tensor) -> Tensor:
    """``(x[2i], x[2i+1]) -> (-x[2i+1], x[2i])``: a complex number per pair (Meta / GPT-J)."""
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((-odd, even), dim=-1).flatten(-2)


def rotary_cos_sin(
    positions: Tensor,
    inv_freq: Tensor,
    layout: str = "half_split",
    attention_factor: float = 1.0,
) -> tuple[Tensor, Tensor]:
    """cos and sin of ``positions * inv_freq``, laid out for ``layout``, times ``attention_factor``.

    positions: [T] or [B, T] (integers); inv_freq: [r/2]. Returns cos, sin: [T, r] or [B, T, r]
    in ``inv_freq``'s dtype, angles ``[a0..a_{r/2-1}, a0..a_{r/2-1}]`` (half_split) or
    ``[a0, a0, a1, a1, ...]`` (interleaved).
    """
    _check_layout(layout)
    angles = positions.to(inv_freq.dtype)[..., None] * inv_freq  # [..., r/2]
    if layout == "half_split":
        angles = torch.cat((angles, angles), dim=-1)
    else:
        angles = angles.repeat_interleave(2, dim=-1)
    return angles.cos() * attention_factor, angles.sin() * attention_factor


def apply_rotary(
    q: Tensor,
    k: Tensor,
    cos: Tensor,
    sin: Tensor,
    layout: str = "half_split",
) -> tuple[Tensor, Tensor]:
    """Rotate the first ``r`` channels of every head of ``q`` and ``k``; pass the rest through.

        x[..., :r] <- x[..., :r] * cos + rotate(x[..., :r]) * sin

    with ``rotate`` = ``rotate_half`` (half_split) or ``rotate_interleaved`` (interleaved).

    q: [B, H_q, T, head_dim], k: [B, H_kv, T, head_dim]; cos, sin: [T, r] or [B, T, r].
    Returns q, k rotated, with the input shapes and dtypes.

    Numerics: rotated in float32 at least and cast back once at the end (Hugging Face casts
    cos, sin to the input dtype: equal for float32, one rounding instead of several for bf16).
    """
    _check_layout(layout)
    r = cos.shape[-1]
    if cos.shape != sin.shape:
        raise InputError(f"cos {tuple(cos.shape)} and sin {tuple(sin.shape)} shapes differ")
    if cos.dim() == 2:  # [T, r] -> [1, 1, T, r]
        cos, sin = cos[None, None], sin[None, None]
    elif cos.dim() == 3:  # [B, T, r] -> [B, 1, T, r], shared by all heads
        cos, sin = cos[:, None], sin[:, None]
    else:
        raise InputError(f"cos/sin must be [T, r] or [B, T, r], got shape {tuple(cos.shape)}")
    for name, x in (("q", q), ("k", k)):
        if x.dim() != 4 or r > x.shape[-1] or r % 2:
            raise InputError(
                f"{name} must be [B, H, T, head_dim] with head_dim >= rotary_dim={r} (even), "
                f"got shape {tuple(x.shape)}"
            )
    rotate = rotate_half if layout == "half_split" else rotate_interleaved
    return _rotated(q, cos, sin, rotate), _rotated(k, cos, sin, rotate)


def _rotated(x: Tensor, cos: Tensor, sin: Tensor, rotate) -> Tensor:
    """x [..., head_dim] rotated in its first r = cos.shape[-1] channels, in float32 at least."""
    r = cos.shape[-1]
    compute = torch.promote_types(x.dtype, torch.float32)
    x_rot = x[..., :r].to(compute)
    c, s = cos.to(compute), sin.to(compute)
    out = (x_rot * c + rotate(x_rot) * s).to(x.dtype)
    if r == x.shape[-1]:
        return out
    return torch.cat((out, x[..., r:]), dim=-1)


class RotaryEmbedding(nn.Module):
    """cos and sin for rotary position embeddings, cached and extended on demand.

    Args:
        head_dim: channels per attention head; ``int(head_dim * partial_rotary_factor)`` rotate.
        theta: RoPE base (10000 in the paper; Llama 3 uses 500000, Qwen2 1000000).
        layout: ``"half_split"`` (Hugging Face checkpoints) or ``"interleaved"`` (Meta).
        scaling: None for plain RoPE, or a dict with a ``rope_type`` of ``ROPE_SCALINGS``.
        max_seq_len: initial cache length, not a limit: later positions grow the cache.

    ``forward(positions)`` returns ``attention_factor * (cos, sin)`` of ``positions * inv_freq``
    in float32. With ``dynamic`` scaling, positions past ``original_max_position_embeddings``
    recompute ``inv_freq`` for ``max(positions) + 1`` and bypass the cache, as Hugging Face does.

    Shapes:
        positions: [T] or [B, T] (integer, >= 0)
        cos, sin:  [T, r] or [B, T, r] (float32)
    """

    def __init__(
        self,
        head_dim: int,
        *,
        theta: float = 10000.0,
        partial_rotary_factor: float = 1.0,
        layout: str = "half_split",
        scaling: dict | None = None,
        max_seq_len: int = 2048,
    ) -> None:
        super().__init__()
        _check_layout(layout)
        if isinstance(max_seq_len, bool) or not isinstance(max_seq_len, int) or max_seq_len < 1:
            raise InputError(f"max_seq_len must be an integer >= 1, got {max_seq_len!r}")
        self.head_dim = head_dim
        self.theta = theta
        self.partial_rotary_factor = partial_rotary_factor
        self.layout = layout
        self.scaling = None if scaling is None else dict(scaling)
        self.rope_type = rope_type_of(self.scaling)
        inv_freq, self.attention_factor = self._frequencies()
        self.rotary_dim = 2 * inv_freq.numel()
        # Past this length "dynamic" recomputes its frequencies; None for the static variants.
        self._dynamic_from = None
        if self.rope_type == "dynamic":
            self._dynamic_from = self.scaling["original_max_position_embeddings"]
        # Non-persistent: derived from the arguments, so they stay out of checkpoints.
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        positions = torch.arange(max_seq_len)
        cos, sin = rotary_cos_sin(positions, inv_freq, layout, self.attention_factor)
        self.register_buffer("cos_cached", cos, persistent=False)  # [max_seq_len, r]
        self.register_buffer("sin_cached", sin, persistent=False)

    def _frequencies(self, seq_len: int | None = None) -> tuple[Tensor, float]:
        return rope_frequencies(
            self.head_dim, self.theta, self.partial_rotary_factor, self.scaling, seq_len
        )

    def _rebuild_cache(self, length: int) -> None:
        # Recomputed from the arguments rather than from the buffers, which `.to(bfloat16)` may
        # have rounded.
        device = self.cos_cached.device
        inv_freq, _ = self._frequencies()
        inv_freq = inv_freq.to(device)
        positions = torch.arange(length, device=device)
        self.inv_freq = inv_freq
        self.cos_cached, self.sin_cached = rotary_cos_sin(
            positions, inv_freq, self.layout, self.attention_factor
        )

    def forward(self, positions: Tensor,
                max_position: int | None = None) -> tuple[Tensor, Tensor]:
        _, max_position = _check_positions(positions, max_position)
        seq_len = max_position + 1
        if self._dynamic_from is not None and seq_len > self._dynamic_from:
            inv_freq, attention_factor = self._frequencies(seq_len)
            inv_freq = inv_freq.to(self.cos_cached.device)
            return rotary_cos_sin(positions, inv_freq, self.layout, attention_factor)
        cached = self.cos_cached.shape[0]
        if seq_len > cached:  # grow geometrically so a growing sequence rebuilds rarely
            self._rebuild_cache(max(seq_len, 2 * cached))
        elif self.cos_cached.dtype != torch.float32:  # e.g. after module.to(torch.bfloat16)
            self._rebuild_cache(cached)
        positions = positions.to(self.cos_cached.device)
        return self.cos_cached[positions], self.sin_cached[positions]

    def extra_repr(self) -> str:
        return (
            f"head_dim={self.head_dim}, rotary_dim={self.rotary_dim}, theta={self.theta}, "
            f"layout={self.layout!r}, rope_type={self.rope_type!r}"
        )


def permute_rotary_rows(weight: Tensor, n_heads: int, head_dim: int, to: str,
                        rotary_dim: int | None = None) -> Tensor:
    """Reorder q or k projection rows into the RoPE layout `to` from the other one.

    Within each head, half-split row ``c * r/2 + i`` is interleaved row ``2i + c`` (c in {0, 1}),
    so each rotated pair moves together and q·k is unchanged; rows ``r:`` stay. Hugging Face's
    ``convert_llama_weights_to_hf.py`` applies the move to half-split to Meta checkpoints.

    weight: [n_heads * head_dim, ...] (a weight [n_heads * head_dim, d_model] or a bias).
    Returns a tensor of the same shape.
    """
    _check_layout(to)
    r = head_dim if rotary_dim is None else rotary_dim
    if r < 2 or r % 2 or r > head_dim:
        raise InputError(f"rotary_dim must be even and in [2, head_dim={head_dim}], got {r}")
    if weight.dim() < 1 or weight.shape[0] != n_heads * head_dim:
        raise InputError(
            f"weight must have n_heads * head_dim = {n_heads * head_dim} rows, "
            f"got shape {tuple(weight.shape)}"
        )
    rest = weight.shape[1:]
    w = weight.reshape(n_heads, head_dim, *rest)
    pairs = (r // 2, 2) if to == "half_split" else (2, r // 2)  # the rows' current order
    rot = w[:, :r].reshape(n_heads, *pairs, *rest).transpose(1, 2)
    w = torch.cat((rot.reshape(n_heads, r, *rest), w[:, r:]), dim=1)
    return w.reshape(weight.shape)


# --- ALiBi -----------------------------------------------------------------------------------


def alibi_slopes(n_heads: int) -> Tensor:
    """Per-head ALiBi slopes (Press et al. 2022, https://arxiv.org/abs/2108.12409).

    For ``n`` a power of two, ``2 ** (-8 (h + 1) / n)``, h = 0 .. n-1. Otherwise, with ``p`` the
    largest power of two below ``n``: the ``p`` slopes for ``p``, then the first ``n - p`` of
    every other slope for ``2p``, as in the authors' code.

    Returns [n_heads] float32.
    """
    if isinstance(n_heads, bool) or not isinstance(n_heads, int) or n_heads < 1:
        raise InputError(f"n_heads must be an integer >= 1, got {n_heads!r}")

    def geometric(n: int) -> list[float]:
        return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]

    p = 2 ** int(math.floor(math.log2(n_heads)))
    slopes = geometric(p) + geometric(2 * p)[0::2][: n_heads - p]
    return torch.tensor(slopes, dtype=torch.float32)


class ALiBi(nn.Module):
    """Attention with Linear Biases: an additive attention bias, no rotation of q or k.

        bias[b, h, i, j] = slope[h] * (k_positions[j] - q_positions[i])

    ``-slope * distance`` for past keys; future keys get a positive value, which the causal
    mask (not applied here) must remove. Computed per call, so any length works.

    Shapes:
        q_positions: [T_q] or [B, T_q]; k_positions: [T_k] or [B, T_k] (integer)
        returns:     [1, H, T_q, T_k] for 1-D positions, else [B, H, T_q, T_k] (float32;
                     cast to the query dtype before adding it to scores)
    """

    def __init__(self, n_heads: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.register_buffer("slopes", alibi_slopes(n_heads), persistent=False)  # [H]

    def forward(self, q_positions: Tensor, k_positions: Tensor,
                max_position: int | None = None) -> Tensor:
        _check_positions(q_positions, max_position)
        _check_positions(k_positions, max_position)
        q = q_positions if q_positions.dim() == 2 else q_positions[None]  # [1 or B, T_q]
        k = k_positions if k_positions.dim() == 2 else k_positions[None]  # [1 or B, T_k]
        distance = (k[:, None, :] - q[:, :, None]).to(torch.float32)  # [1 or B, T_q, T_k]
        slopes = self.slopes.to(device=distance.device, dtype=torch.float32)
        return slopes[None, :, None, None] * distance[:, None]  # [1 or B, H, T_q, T_k]

    def extra_repr(self) -> str:
        return f"n_heads={self.n_heads}"


# --- absolute positions ----------------------------------------------------------------------


class SinusoidalPositions(nn.Module):
    """The original Transformer's fixed position table (Vaswani et al. 2017), computed on demand.

        P[p, 2i]     = sin(p / base ** (2i / d_model))
        P[p, 2i + 1] = cos(p / base ** (2i / d_model))

    Angles in float64, rounded to float32 at the end: a float32 angle ``p * w`` is off by up to
    ``p * 2**-24`` radians (0.006 at p = 100000).

    Shapes:
        positions: [T] or [B, T] (integer, >= 0)
        returns:   [T, d_model] or [B, T, d_model] (float32)
    """

    def __init__(self, d_model: int, base: float = 10000.0) -> None:
        super().__init__()
        if isinstance(d_model, bool) or not isinstance(d_model, int) or d_model < 2 or d_model % 2:
            raise InputError(f"d_model must be an even integer >= 2, got {d_model!r}")
        if not base > 1.0:
            raise InputError(f"base must be a number > 1, got {base!r}")
        self.d_model = d_model
        self.base = base

    def forward(self, positions: Tensor, max_position: int | None = None) -> Tensor:
        _check_positions(positions, max_position)
        exponent = torch.arange(0, self.d_model, 2, dtype=torch.float64, device=positions.device)
        inv_freq = self.base ** (-exponent / self.d_model)  # [d_model/2]
        angles = positions.to(torch.float64)[..., None] * inv_freq  # [..., d_model/2]
        table = torch.stack((angles.sin(), angles.cos()), dim=-1).flatten(-2)  # sin even, cos odd
        return table.to(torch.float32)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, base={self.base}"


class LearnedPositions(nn.Module):
    """A learned absolute position table, ``nn.Embedding(max_seq_len, d_model)`` (GPT-2, BERT).

    Positions >= ``max_seq_len`` raise `PositionsBeyondTable` (an InputError) instead of
    indexing out of range.

    Shapes:
        positions: [T] or [B, T] (integer, >= 0)
        returns:   [T, d_model] or [B, T, d_model]
    """

    def __init__(self, max_seq_len: int, d_model: int) -> None:
        super().__init__()
        self.max_seq_len = max_seq_len
        self.embedding = nn.Embedding(max_seq_len, d_model)

    def forward(self, positions: Tensor, max_position: int | None = None) -> Tensor:
        _, max_position = _check_positions(positions, max_position)
        if max_position >= self.max_seq_len:
            raise PositionsBeyondTable(
                f"position {max_position} exceeds learned table of max_seq_len="
                f"{self.max_seq_len}; a learned table cannot extrapolate: shorten the sequence "
                "or use rope, alibi or sinusoidal positions"
            )
        return self.embedding(positions)
