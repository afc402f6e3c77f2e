"""Parameter, FLOPs and memory budgets of a Transformer config; a model zoo; a config doctor.

Pure functions over `blocklab.config.ModelConfig`; no torch (a test enforces it), so
`blocklab budget` starts fast. `model_budget` returns the JSON document `blocklab budget --json`
prints; its keys are stable. `params.per_layer` is one layer (the dense one of an interleaved
MoE model; its MoE layers are under `params.moe_layer`). FLOPs follow `flops.py`.
`memory.weights_bytes` is in the weight dtype, `memory.kv_cache_bytes` at (batch, seq_len) in
the activation dtype.
"""

from __future__ import annotations

from typing import Any

from blocklab.config import ModelConfig

from .flops import decode_flops, elementwise_flops, prefill_flops
from .memory import (
    DTYPE_BITS,
    activation_dtype,
    ffn_branch_elements,
    intensity,
    kv_cache_bytes,
    layer_activation_elements,
    nbytes,
)
from .params import count_params
from .zoo import list_zoo, load_zoo, resolve_model

__all__ = ["count_params", "decode_flops", "list_zoo", "load_zoo", "model_budget",
           "prefill_flops", "resolve_model"]

FLOP_CONVENTION = ("2 FLOPs per multiply-add; matmuls only (norms, activations, softmax, RoPE, "
                   "bias and residual adds excluded, estimated under 'elementwise_prefill'); "
                   "causal scores count T(T+1)/2 (query, key) pairs")


def model_budget(cfg: ModelConfig, *, batch: int = 1, seq_len: int = 4096, dtype: str = "bf16",
                 causal: bool = True, label: str | None = None) -> dict[str, Any]:
    """The budget document of `cfg` at (batch, seq_len)."""
    params = count_params(cfg)
    prefill = prefill_flops(cfg, batch, seq_len, causal)
    decode = decode_flops(cfg, batch, seq_len, causal)
    act = activation_dtype(dtype)
    notes = []
    if cfg.windowed_layers and cfg.sliding_window < seq_len:
        notes.append(f"sliding_window={cfg.sliding_window} < seq_len in {cfg.windowed_layers} "
                     f"of {cfg.n_layers} layers: FLOPs and KV cache are counted as full "
                     f"attention in every layer (an upper bound)")
    if not cfg.causal:
        notes.append("encoder (bidirectional): scores are always the full T² count; decode and "
                     "KV-cache figures are hypothetical")
    if cfg.n_experts:
        notes.append(f"MoE: {cfg.n_moe_layers} of {cfg.n_layers} layers hold {cfg.n_experts} "
                     f"routed + {cfg.n_shared_experts} shared experts of width {cfg.moe_d_ff}; "
                     f"params count every expert, FLOPs the {cfg.experts_per_token} routed + "
                     f"shared experts a token uses and the router; activation memory and "
                     f"elementwise estimates use the dense width d_ff={cfg.d_ff}")
    if cfg.nope_every:
        notes.append(f"{cfg.n_nope_layers} of {cfg.n_layers} layers use no position encoding "
                     f"(every {cfg.nope_every}th); elementwise RoPE cost counts every layer")
    if causal and cfg.causal:
        notes.append("causal: scores counted over T(T+1)/2 (query, key) pairs")
    layer_acts = layer_activation_elements(cfg, batch, seq_len)
    branch = ffn_branch_elements(cfg, batch, seq_len)
    return {
        "model": label or cfg.name or "model",
        "settings": {"batch": batch, "seq_len": seq_len, "dtype": dtype, "activation_dtype": act,
                     "causal": causal,
                     "scores": ("full, encoder" if not cfg.causal else
                                "causal, T(T+1)/2 pairs" if causal else "full, T² pairs")},
        "config": {k: getattr(cfg, k) for k in (
            "vocab_size", "d_model", "n_layers", "n_heads", "n_kv_heads", "head_dim", "d_ff",
            "ffn", "norm", "placement", "position", "max_seq_len", "tie_embeddings")},
        "params": {
            "total": params.total,
            **params.buckets(),
            "per_layer": params.per_layer,
            "layer": dict(params.layer),
            **({"moe_layer": dict(params.moe_layer), "n_moe_layers": params.n_moe_layers}
               if params.moe_layer else {}),
            "components": params.components(),
        },
        "flops": {
            "convention": FLOP_CONVENTION,
            "prefill": prefill.to_dict(),
            "decode": decode.to_dict(),
            "elementwise_prefill": elementwise_flops(cfg, batch, seq_len, causal),
        },
        "memory": {
            "weights_bytes": nbytes(params.total, dtype),
            "weights_bytes_by_dtype": {k: nbytes(params.total, k) for k in DTYPE_BITS},
            "kv_cache_bytes": kv_cache_bytes(cfg, batch, seq_len, act),
            "activation_dtype": act,
            "ffn_branch_elements": branch,
            "ffn_branch_bytes": nbytes(branch, act),
            "layer_activation_elements": layer_acts,
            "layer_activation_bytes": nbytes(layer_acts["total"], act),
            "layer_activation_bytes_fused": nbytes(layer_acts["total_fused"], act),
            "intensity": intensity(cfg, params, batch, seq_len, dtype, causal),
        },
        "notes": notes,
    }
