"""Transformer block components: feed-forward, normalization, position encoding, attention,
the block that joins them and the decoder-only model built from a `ModelConfig`."""

from blocklab.nn.attention import Attention, KVCache, LayerCache, attention_mask
from blocklab.nn.block import Block
from blocklab.nn.ffn import FeedForward, GatedFeedForward, build_ffn, narrowed
from blocklab.nn.model import DecoderLM, build_attention, build_block, build_position
from blocklab.nn.norm import LayerNorm, RMSNorm, build_norm
from blocklab.nn.position import (
    ALiBi,
    LearnedPositions,
    RotaryEmbedding,
    SinusoidalPositions,
    alibi_slopes,
    apply_rotary,
    permute_half_split_to_interleaved,
    permute_interleaved_to_half_split,
)

__all__ = ["ALiBi", "Attention", "Block", "DecoderLM", "FeedForward", "GatedFeedForward", "KVCache",
           "LayerCache", "LayerNorm", "LearnedPositions", "RMSNorm", "RotaryEmbedding",
           "SinusoidalPositions", "alibi_slopes", "apply_rotary", "attention_mask",
           "build_attention", "build_block", "build_ffn", "narrowed", "build_norm",
           "build_position", "permute_half_split_to_interleaved",
           "permute_interleaved_to_half_split"]
