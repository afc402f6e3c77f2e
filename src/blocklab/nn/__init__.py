"""Transformer block components: feed-forward, normalization, position encoding, attention,
the block that joins them and the decoder-only model built from a `ModelConfig`. The names
below are the ones other packages take from here; the rest live in their modules."""

from blocklab.nn.attention import Attention, KVCache
from blocklab.nn.ffn import narrowed
from blocklab.nn.model import DecoderLM
from blocklab.nn.norm import LayerNorm, RMSNorm
from blocklab.nn.position import RotaryEmbedding, apply_rotary

__all__ = ["Attention", "DecoderLM", "KVCache", "LayerNorm", "RMSNorm", "RotaryEmbedding",
           "apply_rotary", "narrowed"]
