"""Helpers the nn tests share, imported as `from .conftest import ...`."""

import torch
import transformers

EXACT = dict(atol=0.0, rtol=0.0)
F64 = dict(atol=1e-12, rtol=1e-12)


def randn(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    """A standard-normal tensor of `shape` from its own seeded generator (the global one is
    left alone)."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def hf_llama_config(head_dim, theta, scaling, max_position_embeddings, partial_rotary_factor=1.0):
    """A tiny LlamaConfig carrying rope_parameters the transformers-5 way (theta inside)."""
    rope = {"rope_type": "default", **scaling, "rope_theta": theta}
    if partial_rotary_factor != 1.0:
        rope["partial_rotary_factor"] = partial_rotary_factor
    return transformers.LlamaConfig(
        hidden_size=2 * head_dim, num_attention_heads=2, head_dim=head_dim, num_hidden_layers=1,
        intermediate_size=8, vocab_size=16, max_position_embeddings=max_position_embeddings,
        rope_parameters=rope)
