"""Forward FLOPs of a `ModelConfig`: prefill of T tokens and one decode step at context T.

Convention (`torch.utils.flop_counter.FlopCounterMode`'s): 2 FLOPs per multiply-add, matrix
multiplications only, so a [n_out, n_in] weight costs 2·n_out·n_in FLOPs a token. Norms,
activations, softmax, RoPE, bias and residual adds are estimated apart (`elementwise_flops`).

Attention scores and values cost 4·H·hd FLOPs per (query, key) pair (QKᵀ and AV, hd
multiply-adds each per query head; grouped-query attention still does H dot products):

    full (non-causal):  T keys for each of T queries          -> B·T²
    causal (exact):     Σ_{i=0}^{T-1} (i+1) = T(T+1)/2 pairs   -> B·T(T+1)/2

An encoder (BERT) always attends to all T keys; sliding windows and chunked attention are
counted as full attention; MoE layers count the experts a token uses and the router. Prefill
counts the logits of every position; a decode step at context T is one new token per sequence
attending to T keys (T−1 cached and its own).

Shape legend: B = batch, T = seq_len (context for decode), d = d_model, m = d_ff, H = n_heads,
KV = n_kv_heads, hd = head_dim, V = vocab_size, L = n_layers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from blocklab.checks import is_int
from blocklab.config import ModelConfig
from blocklab.errors import InputError

# FLOPs per multiply-add.
FLOPS_PER_MAC = 2


@dataclass(frozen=True)
class Flops:
    """Matmul FLOPs of one forward pass, split by part; `attention_scores` is the causal or the
    full count as `causal` says, and both are kept."""

    tokens: int  # query tokens processed (B·T for prefill, B for decode)
    causal: bool
    attention_proj: int
    attention_scores_full: int
    attention_scores_causal: int
    ffn: int
    lm_head: int
    other: int  # BERT pooler on the first token

    @property
    def attention_scores(self) -> int:
        return self.attention_scores_causal if self.causal else self.attention_scores_full

    @property
    def total(self) -> int:
        return self.attention_proj + self.attention_scores + self.ffn + self.lm_head + self.other

    @property
    def ffn_share(self) -> float:
        return self.ffn / self.total

    def to_dict(self) -> dict:
        return {**asdict(self), "attention_scores": self.attention_scores, "total": self.total,
                "ffn_share": self.ffn_share}


def proj_flops_per_token(cfg: ModelConfig) -> int:
    """q, k, v and o projections of one layer for one token."""
    d, q_width, kv_width = cfg.d_model, cfg.n_heads * cfg.head_dim, cfg.n_kv_heads * cfg.head_dim
    macs = d * q_width + 2 * d * kv_width + q_width * d  # q, then k and v, then o
    return FLOPS_PER_MAC * macs


def ffn_flops_per_token(cfg: ModelConfig, moe: bool = False) -> int:
    """One layer's FFN for one token: 2 (plain) or 3 (gated) [m, d]-sized matrices; an MoE
    layer runs its experts_per_token routed and every shared expert (width moe_d_ff) and the
    router's [E, d] matmul."""
    matrices = 3 if cfg.gated else 2
    if not moe:
        return FLOPS_PER_MAC * matrices * cfg.d_model * cfg.d_ff
    active = cfg.experts_per_token + cfg.n_shared_experts
    return FLOPS_PER_MAC * cfg.d_model * (active * matrices * cfg.moe_d_ff + cfg.n_experts)


def ffn_flops_all_layers(cfg: ModelConfig) -> int:
    """FFN FLOPs of one token through every layer, dense and MoE layers each at their cost."""
    n_moe = cfg.n_moe_layers
    moe = n_moe * ffn_flops_per_token(cfg, moe=True) if n_moe else 0
    return (cfg.n_layers - n_moe) * ffn_flops_per_token(cfg) + moe


def score_flops_per_pair(cfg: ModelConfig) -> int:
    """One layer, one (query, key) pair, all query heads: QKᵀ and AV, hd multiply-adds each."""
    return FLOPS_PER_MAC * 2 * cfg.n_heads * cfg.head_dim


def causal_pairs(seq_len: int) -> int:
    """(query, key) pairs a causal mask keeps: Σ_{i=0}^{T-1} (i+1) = T(T+1)/2."""
    return seq_len * (seq_len + 1) // 2


def _check(name: str, value: int) -> int:
    if not is_int(value):
        raise InputError(f"{name} must be a positive integer, got {value!r}")
    return value


def _flops(cfg: ModelConfig, tokens: int, batch: int, full_pairs: int, causal_pairs_: int,
           causal: bool) -> Flops:
    layers = cfg.n_layers
    return Flops(
        tokens=tokens,
        causal=causal,
        attention_proj=layers * tokens * proj_flops_per_token(cfg),
        attention_scores_full=layers * full_pairs * score_flops_per_pair(cfg),
        attention_scores_causal=layers * causal_pairs_ * score_flops_per_pair(cfg),
        ffn=tokens * ffn_flops_all_layers(cfg),
        # Tied or not, the head is a [V, d] matmul on every token.
        lm_head=tokens * FLOPS_PER_MAC * cfg.vocab_size * cfg.d_model,
        # BERT's pooler: one [d, d] dense on the first token of each sequence.
        other=batch * FLOPS_PER_MAC * cfg.d_model * cfg.d_model if cfg.pooler else 0,
    )


def prefill_flops(cfg: ModelConfig, batch: int, seq_len: int, causal: bool = True) -> Flops:
    """Forward pass over `seq_len` tokens for each of `batch` sequences; `causal=False`
    reports the full T² score count."""
    batch, seq_len = _check("batch", batch), _check("seq_len", seq_len)
    full = batch * seq_len * seq_len
    kept = batch * causal_pairs(seq_len) if cfg.causal else full
    return _flops(cfg, batch * seq_len, batch, full, kept, causal)


def decode_flops(cfg: ModelConfig, batch: int, context: int, causal: bool = True) -> Flops:
    """One decode step: one new token per sequence attending to `context` keys (itself and the
    context−1 cached tokens). With a single query row, causal and full counts coincide."""
    batch, context = _check("batch", batch), _check("context", context)
    pairs = batch * context
    return _flops(cfg, batch, batch, pairs, pairs, causal)


# Rough elementwise costs in FLOPs per element (estimates, not measured): RMSNorm squares, sums,
# scales by 1/rms and multiplies the gain (4); LayerNorm also subtracts the mean and adds a bias
# (7); an activation such as SiLU or GELU is counted as 4 (exp or tanh counted as one); the gate
# product and each residual add are 1; softmax takes max, subtracts, exponentiates, sums and
# divides (5 per score); RoPE is x·cos + rotate(x)·sin (3 per rotated element of q and k).
ELEMENTWISE_COST = {"rmsnorm": 4, "layernorm": 7, "activation": 4, "gate_product": 1,
                    "residual": 1, "softmax": 5, "rope": 3}


def elementwise_flops(cfg: ModelConfig, batch: int, seq_len: int, causal: bool = True) -> dict:
    """Rough non-matmul FLOPs of a prefill (see `ELEMENTWISE_COST`); not part of any total."""
    tokens, d, m, layers = batch * seq_len, cfg.d_model, cfg.d_ff, cfg.n_layers
    norms_per_layer = 4 if cfg.placement == "sandwich" else 2
    norm_cost = ELEMENTWISE_COST[cfg.norm]
    pairs = batch * (causal_pairs(seq_len) if causal and cfg.causal else seq_len * seq_len)
    rope = 0
    if cfg.position == "rope":
        rotated = (cfg.n_heads + cfg.n_kv_heads) * cfg.rotary_dim
        rope = layers * tokens * rotated * ELEMENTWISE_COST["rope"]
    out = {
        "norms": tokens * d * norm_cost * (layers * norms_per_layer + int(cfg.final_norm)),
        "activation": layers * tokens * m * (ELEMENTWISE_COST["activation"]
                                             + (ELEMENTWISE_COST["gate_product"]
                                                if cfg.gated else 0)),
        "softmax": layers * pairs * cfg.n_heads * ELEMENTWISE_COST["softmax"],
        "rope": rope,
        "residual": layers * 2 * tokens * d * ELEMENTWISE_COST["residual"],
    }
    out["total"] = sum(out.values())
    return out


# Backward FLOPs per element of one norm, in the convention of `ELEMENTWISE_COST` (whose
# "rmsnorm" 4 and "layernorm" 7 are the forward), for a kernel that keeps only the per-row
# statistics and recomputes the normalised x̂ = x·r (r = 1/rms or 1/std), as PyTorch's native
# LayerNorm backward does. Given the upstream dy and the gain γ, per element:
#     RMSNorm    x̂ = x·r (1); dγ += dy·x̂ (2); g = dy·γ (1); c = Σ g·x̂ (2);
#                dx = r·(g − x̂·c/d) (3)                                              -> 9
#     LayerNorm  x̂ = (x − μ)·r (2); dγ += dy·x̂ (2); dβ += dy (1); g = dy·γ (1); a = Σ g (1);
#                c = Σ g·x̂ (2); dx = r·(g − a/d − x̂·c/d) (4)                         -> 13
# The O(1) work per row (1/d, + ε, rsqrt) is left out, as in the forward costs.
NORM_BACKWARD_COST = {"rmsnorm": 9, "layernorm": 13}


def norm_flops_per_row(norm: str, d: int, backward: bool = False) -> int:
    """FLOPs to normalise one row of width `d` with `norm` ("rmsnorm" or "layernorm"):
    the forward (`ELEMENTWISE_COST`), plus the backward (`NORM_BACKWARD_COST`) when asked."""
    if norm not in NORM_BACKWARD_COST:
        raise InputError(f"norm {norm!r} is not allowed; expected one of "
                         f"{sorted(NORM_BACKWARD_COST)}")
    d = _check("d", d)
    return d * (ELEMENTWISE_COST[norm] + (NORM_BACKWARD_COST[norm] if backward else 0))
