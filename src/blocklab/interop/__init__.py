"""Hugging Face in and out: `config.json` <-> `ModelConfig` (`interop.hf_config`, no PyTorch)
and checkpoints, config.json + safetensors <-> `blocklab.nn.DecoderLM` (`interop.hf`).

The checkpoint functions are loaded on first use, so the budget calculator and the doctor read
configs through this package without importing PyTorch.
"""

from __future__ import annotations

from typing import Any

from blocklab.interop.hf_config import from_hf, to_hf

_CHECKPOINTS = ("blocklab_to_hf_name", "hf_to_blocklab_name", "load_hf", "save_hf")

__all__ = ["from_hf", "to_hf", *_CHECKPOINTS]


def __getattr__(name: str) -> Any:
    if name in _CHECKPOINTS:
        from blocklab.interop import hf
        return getattr(hf, name)
    raise AttributeError(f"module 'blocklab.interop' has no attribute {name!r}")
