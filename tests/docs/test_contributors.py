"""docs/contributors.md, performed: each recipe done on a toy through the public path."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from blocklab.budget.params import count_params
from blocklab.config import FFNS, ModelConfig
from blocklab.nn import ffn as nn_ffn
from blocklab.nn.model import DecoderLM


# --- an FFN kind ------------------------------------------------------------------------------
def test_an_ffn_kind_is_a_name_and_an_activation(monkeypatch):
    """Squared-ReLU gating, y = W_d (relu(W_g x)² ⊙ W_u x): one entry in config.FFNS, one in
    nn.ffn.ACTIVATIONS; the model, the parameter count and the reference backend follow."""
    monkeypatch.setitem(nn_ffn.ACTIVATIONS, "relu2", lambda x: F.relu(x).square())
    monkeypatch.setitem(FFNS, "sqreglu", (True, "relu2"))

    cfg = ModelConfig(vocab_size=32, d_model=16, n_layers=2, n_heads=2, ffn="sqreglu",
                      max_seq_len=8)
    torch.manual_seed(0)
    model = DecoderLM(cfg, backend="reference")
    # the budget counts it exactly, as for every kind
    assert count_params(cfg).total == sum(p.numel() for p in model.parameters())
    # the layer computes the stated formula
    mlp = model.layers[0].ffn
    x = torch.randn(3, 16)
    want = mlp.down_proj(F.relu(mlp.gate_proj(x)).square() * mlp.up_proj(x))
    torch.testing.assert_close(mlp(x), want, rtol=0, atol=1e-6)
    # and it trains: a finite loss and a gradient in every weight
    ids = torch.randint(0, 32, (2, 8))
    logits = model(ids[:, :-1])
    F.cross_entropy(logits.reshape(-1, 32), ids[:, 1:].reshape(-1)).backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())


def test_an_ffn_kind_without_its_activation_is_refused(monkeypatch):
    monkeypatch.setitem(FFNS, "sqreglu", (True, "relu2"))
    cfg = ModelConfig(vocab_size=32, d_model=16, n_layers=1, n_heads=2, ffn="sqreglu",
                      max_seq_len=8)
    with pytest.raises(ValueError, match="activation='relu2' is not allowed"):
        DecoderLM(cfg)
