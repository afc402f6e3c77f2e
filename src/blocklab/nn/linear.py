"""The linear layer of every `blocklab.nn` model: `nn.Linear` computing in its input's dtype.

Under `precision="bf16"` the model hands bfloat16 activations to float32 weights (the master
copies the optimizer updates). This layer then casts the weight and bias to bfloat16 for the
matmul, so the GEMM runs on bfloat16 units with float32 accumulation, and the cast's backward
returns the weight gradient in float32: mixed precision without autocast, whose casts would
also wrap the norms, activations and RoPE that have bfloat16 versions of their own.

It is an `nn.Linear` (same parameters, state-dict keys and init), so Hugging Face checkpoints,
`isinstance` checks and torchao's quantization see the usual module. Inputs in the weight's
dtype take `F.linear` directly, as `nn.Linear` does.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn


class Linear(nn.Linear):
    """y = x Wᵀ + b computed in x's floating dtype; x: [..., in_features] -> [..., out_features].
    """

    def forward(self, x: Tensor) -> Tensor:
        weight, bias = self.weight, self.bias
        if x.dtype != weight.dtype and x.dtype.is_floating_point:
            weight = weight.to(x.dtype)
            bias = None if bias is None else bias.to(x.dtype)
        return F.linear(x, weight, bias)
