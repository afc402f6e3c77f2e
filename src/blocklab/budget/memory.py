"""Bytes of weights and KV cache, activation element counts, and decode arithmetic intensity.

Weight bytes are the bare parameter bytes in one dtype (int4 = half a byte; real formats add
scales). Activations and the KV cache use fp32 or fp16 with such weights, bf16 otherwise.

    KV cache = 2 (K and V) · L · KV · hd · T · B · bytes

Arithmetic intensity of a decode step = matmul FLOPs / bytes read: every weight once (gathered
embedding tables left out unless a tied head reads them whole) plus the KV cache at context T.
Below the hardware's balance point (peak FLOP/s ÷ memory bandwidth) a step is memory-bound.

Shape legend: B = batch, T = seq_len, d = d_model, m = d_ff, H = n_heads, KV = n_kv_heads,
hd = head_dim, L = n_layers.
"""

from __future__ import annotations

import math

from blocklab.config import ModelConfig
from blocklab.errors import InputError
from blocklab.reference.ffn import ffn_budget

from .flops import decode_flops, prefill_flops
from .params import ParamCounts

# Bits per stored value.
DTYPE_BITS = {"fp32": 32, "bf16": 16, "fp16": 16, "int8": 8, "int4": 4}

# NVIDIA H100 SXM5 (H100 Tensor Core GPU datasheet): 989 TFLOP/s dense BF16 Tensor Core (the
# datasheet's 1,979 is with 2:4 sparsity) and 3.35 TB/s HBM3 bandwidth.
H100_SXM_BF16_FLOPS = 989e12
H100_SXM_BYTES_PER_S = 3.35e12
H100_SXM_BALANCE = H100_SXM_BF16_FLOPS / H100_SXM_BYTES_PER_S  # ≈ 295 FLOP per byte
HARDWARE_NOTE = ("H100 SXM: 989 TFLOP/s dense BF16 / 3.35 TB/s HBM3 ≈ 295 FLOP/byte "
                 "(NVIDIA H100 datasheet; 1,979 TFLOP/s there is with 2:4 sparsity)")


def check_dtype(dtype: str) -> str:
    if dtype not in DTYPE_BITS:
        raise InputError(f"dtype {dtype!r} is not allowed; expected one of {list(DTYPE_BITS)}")
    return dtype


def activation_dtype(weight_dtype: str) -> str:
    """The dtype activations and the KV cache are kept in for weights stored in `weight_dtype`."""
    check_dtype(weight_dtype)
    return weight_dtype if weight_dtype in ("fp32", "fp16") else "bf16"


def nbytes(count: int, dtype: str) -> int:
    """Bytes of `count` values stored in `dtype`, rounded up to a whole byte."""
    return math.ceil(count * DTYPE_BITS[check_dtype(dtype)] / 8)


def kv_cache_bytes(cfg: ModelConfig, batch: int, seq_len: int, dtype: str = "bf16") -> int:
    """K and V of every layer for `seq_len` positions of `batch` sequences."""
    return nbytes(2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * seq_len * batch, dtype)


def ffn_branch_elements(cfg: ModelConfig, batch: int, seq_len: int) -> int:
    """Elements of one FFN intermediate branch, [B, T, m] (the page-000 budget)."""
    return ffn_budget(cfg.d_model, cfg.d_ff, batch, seq_len, cfg.gated,
                      cfg.ffn_bias)["branch_elements"]


def layer_activation_elements(cfg: ModelConfig, batch: int, seq_len: int) -> dict[str, int]:
    """Elements of every tensor one layer's forward pass writes, each counted once.

    Norm outputs (2, or 4 sandwich), q, k, v, scores and probabilities as full [B, H, T, T]
    matrices (an unfused kernel's; `total_fused` leaves them out), the attention output, the
    FFN intermediates (plain 2, gated 4), the sublayer outputs and residual sums. A count, not
    a peak.
    """
    tokens, d, m = batch * seq_len, cfg.d_model, cfg.d_ff
    q_width, kv_width = cfg.n_heads * cfg.head_dim, cfg.n_kv_heads * cfg.head_dim
    out = {
        "norm_outputs": (4 if cfg.placement == "sandwich" else 2) * tokens * d,
        "qkv": tokens * (q_width + 2 * kv_width),
        "scores_and_probs": 2 * batch * cfg.n_heads * seq_len * seq_len,
        "attention_output": tokens * q_width,
        "ffn_intermediate": (4 if cfg.gated else 2) * tokens * m,
        "sublayer_outputs_and_residuals": 4 * tokens * d,
    }
    out["total"] = sum(out.values())
    out["total_fused"] = out["total"] - out["scores_and_probs"]
    return out


def decode_weight_params_read(cfg: ModelConfig, params: ParamCounts) -> int:
    """Parameters a decode step reads: all but the gathered embedding tables, plus the token
    table when the tied head reads it in full."""
    gathered = (params.model["embed_tokens"] + params.model["position_embedding"]
                + params.model["token_type_embedding"])
    tied_head = cfg.vocab_size * cfg.d_model if cfg.tie_embeddings else 0
    return params.total - gathered + tied_head


def intensity(cfg: ModelConfig, params: ParamCounts, batch: int, seq_len: int,
              dtype: str = "bf16", causal: bool = True) -> dict:
    """FLOPs per byte moved (every weight once and the KV cache) for one decode step at
    context T and for a prefill of T tokens, against `H100_SXM_BALANCE`."""
    act = activation_dtype(dtype)
    weights = nbytes(decode_weight_params_read(cfg, params), dtype)
    kv = kv_cache_bytes(cfg, batch, seq_len, act)
    decode = decode_flops(cfg, batch, seq_len, causal).total
    prefill = prefill_flops(cfg, batch, seq_len, causal).total
    decode_ai = decode / (weights + kv)
    prefill_ai = prefill / (weights + kv)
    return {
        "decode_flops": decode,
        "decode_bytes": weights + kv,
        "decode_flops_per_byte": decode_ai,
        "prefill_flops_per_byte": prefill_ai,
        "balance_flops_per_byte": H100_SXM_BALANCE,
        "hardware": HARDWARE_NOTE,
        "decode_bound": "memory" if decode_ai < H100_SXM_BALANCE else "compute",
        "prefill_bound": "memory" if prefill_ai < H100_SXM_BALANCE else "compute",
    }
