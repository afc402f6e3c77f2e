"""The linear layer of every `blocklab.nn` model: `nn.Linear` computing in its input's dtype.

Under `precision="bf16"` bfloat16 activations meet float32 master weights: the weight is cast
for the matmul and the cast's backward returns its gradient in float32 (mixed precision without
autocast, whose casts would also wrap norms and RoPE). Parameters, state-dict keys and init are
`nn.Linear`'s, so checkpoints and torchao see the usual module.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn


def linear(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """x Wᵀ + b computed in x's floating dtype; x: [..., n_in], weight: [n_out, n_in]."""
    if x.dtype != weight.dtype and x.dtype.is_floating_point:
        weight = weight.to(x.dtype)
        bias = None if bias is None else bias.to(x.dtype)
    return F.linear(x, weight, bias)


class Linear(nn.Linear):
    """y = x Wᵀ + b computed in x's floating dtype; x: [..., in_features] -> [..., out_features].
    """

    def forward(self, x: Tensor) -> Tensor:
        return linear(x, self.weight, self.bias)
