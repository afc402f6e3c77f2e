"""The scale a suite's graded runs have: what "at this scale" means in a verdict.

    scale = Scale.of(config, tokens=steps * batch * seq_len, model="d 64 × 2 layers")
    scale.flops      # 6 · parameters · tokens, the usual estimate of training compute
    scale.text()     # "d 64 × 2 layers, 0.13M parameters, 0.31M tokens, 2.4·10^11 FLOPs"

Parameters are `blocklab.budget`'s exact count (embeddings included); tokens one run's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from blocklab.budget.params import count_params
from blocklab.config import ModelConfig


@dataclass(frozen=True)
class Scale:
    """The shape in words, the model's parameters and one run's training tokens."""

    model: str
    params: int
    tokens: int
    model_zh: str = ""

    @classmethod
    def of(cls, config: ModelConfig, tokens: int, model: str | None = None,
           model_zh: str | None = None) -> Scale:
        return cls(model or f"d {config.d_model} × {config.n_layers} layers",
                   count_params(config).total, tokens,
                   model_zh or f"d {config.d_model} × {config.n_layers} 层")

    @property
    def flops(self) -> float:
        """Training compute, 6 · parameters · tokens."""
        return 6.0 * self.params * self.tokens

    def text(self) -> str:
        return (f"{self.model}, {_count(self.params)} parameters, {_count(self.tokens)} tokens, "
                f"{flops_text(self.flops)} FLOPs")

    def text_zh(self) -> str:
        return (f"{self.model_zh}，{_count(self.params)} 参数，{_count(self.tokens)} 训练 token，"
                f"{flops_text(self.flops)} FLOPs")

    def to_dict(self) -> dict:
        return {"model": self.model, "params": self.params, "tokens": self.tokens,
                "flops": self.flops, "text": self.text(), "text_zh": self.text_zh()}


def _count(n: float) -> str:
    for div, unit in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if n >= div:
            return f"{n / div:.3g}{unit}"
    return f"{n:.0f}"


def flops_text(flops: float) -> str:
    """2.4e11 -> "2.4·10^11"."""
    if not flops > 0:
        return "0"
    exp = math.floor(math.log10(flops))
    return f"{flops / 10 ** exp:.2g}·10^{exp}"
