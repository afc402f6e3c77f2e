"""Helpers the interop tests share, imported as `from .conftest import ...`: tiny random
transformers models and the logits compared."""

import torch
import transformers

PARITY = dict(atol=1e-5, rtol=0.0)
# initializer_range above the 0.02 default spreads the logits (std about 0.8), so a wrong
# mapping cannot hide under the tolerance.
TINY = dict(vocab_size=128, hidden_size=64, intermediate_size=96, num_attention_heads=4,
            num_key_value_heads=2, initializer_range=0.1)
T = 24  # past every window and max_position_embeddings the tests set


def hf_model(model_type, **keys):
    """A random transformers causal LM of `model_type` with TINY sizes and `keys`, in eval mode."""
    torch.manual_seed(0)
    config = transformers.AutoConfig.for_model(model_type, **{**TINY, **keys})
    return transformers.AutoModelForCausalLM.from_config(config).eval()


def tiny_ids():
    """[2, T] token ids."""
    return torch.randint(0, TINY["vocab_size"], (2, T), generator=torch.Generator().manual_seed(1))


def logits(model, ids):
    """Logits of a transformers model or of ours, without a graph."""
    with torch.no_grad():
        out = model(ids)
    return out if isinstance(out, torch.Tensor) else out.logits
