"""Hugging Face in and out: `config.json` <-> `ModelConfig` (`interop.hf_config`, no PyTorch)
and checkpoints, config.json + safetensors <-> `blocklab.nn.DecoderLM` (`interop.hf`)."""
