"""Checkpoints in and out: Hugging Face config.json + safetensors <-> `blocklab.nn.DecoderLM`."""

from blocklab.interop.hf import blocklab_to_hf_name, hf_to_blocklab_name, load_hf, save_hf

__all__ = ["blocklab_to_hf_name", "hf_to_blocklab_name", "load_hf", "save_hf"]
