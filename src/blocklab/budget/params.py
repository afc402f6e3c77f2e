"""Parameter counts of a `ModelConfig`, per component, per layer and per bucket.

Every count is a product of the shapes the model builds. One layer holds::

    attention  q_proj [H·hd, d] (+H·hd bias)     k_proj, v_proj [KV·hd, d] (+KV·hd bias)
               o_proj [d, H·hd] (+d bias)        qk_norm: q_norm, k_norm of width hd (Qwen3)
    FFN        plain: up_proj [m, d], down_proj [d, m];  gated adds gate_proj [m, d]
               (+m per input projection and +d for down_proj when the FFN has biases)
    norms      attn_norm, ffn_norm; sandwich placement adds post_attn_norm, post_ffn_norm
               (RMSNorm: gain of width d; LayerNorm: gain and, unless disabled, bias)

An MoE layer (`n_experts` > 0, every `moe_every`-th layer) replaces the FFN by E routed and S
shared experts, each an FFN of width m_e = moe_d_ff, plus a router [E, d] (no bias)::

    gate_proj, up_proj, down_proj   (E + S) times the dense shapes with m_e in place of m
    router                          E·d

and the model adds, outside the layers::

    embed_tokens [V, d]; learned positions [max_seq_len, d]; token types [type_vocab, d] (BERT);
    embed_norm (BERT's embedding LayerNorm); final norm; pooler [d, d] + d (BERT);
    lm_head [V, d], counted 0 when tied to embed_tokens (one tensor, counted once).

Buckets (they sum to the total):
    embedding  = embed_tokens + positions + token types + embed_norm
    attention  = n_layers · (q_proj + k_proj + v_proj + o_proj), biases included
    ffn        = n_layers · (gate_proj + up_proj + down_proj + router), biases included
    norm       = n_layers · (layer norms + qk_norm) + final norm
    lm_head    = V · d when untied, else 0
    other      = pooler

Shape legend: d = d_model, m = d_ff, H = n_heads, KV = n_kv_heads, hd = head_dim,
V = vocab_size, E = n_experts, S = n_shared_experts.
"""

from __future__ import annotations

from dataclasses import dataclass

from blocklab.config import ModelConfig

# Per-layer components in display order.
LAYER_COMPONENTS = ("q_proj", "k_proj", "v_proj", "o_proj", "qk_norm", "gate_proj", "up_proj",
                    "down_proj", "router", "attn_norm", "ffn_norm", "post_attn_norm",
                    "post_ffn_norm")

ATTENTION_PARTS = ("q_proj", "k_proj", "v_proj", "o_proj")
FFN_PARTS = ("gate_proj", "up_proj", "down_proj", "router")
LAYER_NORM_PARTS = ("attn_norm", "ffn_norm", "post_attn_norm", "post_ffn_norm", "qk_norm")
EMBEDDING_PARTS = ("embed_tokens", "position_embedding", "token_type_embedding", "embed_norm")


def norm_params(cfg: ModelConfig, width: int) -> int:
    """Parameters of one norm over `width` features: a gain, plus a bias for LayerNorm."""
    if cfg.norm == "layernorm" and cfg.norm_bias:
        return 2 * width
    return width


def linear_params(n_in: int, n_out: int, bias: bool) -> int:
    """A [n_out, n_in] weight plus one bias per output feature."""
    return n_in * n_out + (n_out if bias else 0)


@dataclass(frozen=True)
class ParamCounts:
    """Parameter counts of one model: `layer` holds one layer's components, `model` the
    components outside the layers. In an interleaved MoE model (`moe_every` > 1) `layer` is each
    dense layer and `moe_layer` each MoE layer."""

    n_layers: int
    layer: dict[str, int]
    model: dict[str, int]
    moe_layer: dict[str, int] | None = None
    n_moe_layers: int = 0  # layers counted by moe_layer, not by layer

    def _layers(self, parts: tuple[str, ...]) -> int:
        dense = (self.n_layers - self.n_moe_layers) * sum(self.layer[p] for p in parts)
        moe = self.n_moe_layers * sum(self.moe_layer[p] for p in parts) if self.moe_layer else 0
        return dense + moe

    @property
    def per_layer(self) -> int:
        """Parameters of one layer of `layer`'s kind (a dense layer when layers are mixed)."""
        return sum(self.layer.values())

    @property
    def total(self) -> int:
        return self._layers(LAYER_COMPONENTS) + sum(self.model.values())

    def buckets(self) -> dict[str, int]:
        """The six buckets of the module docstring; they sum to `total`."""
        return {"embedding": sum(self.model[p] for p in EMBEDDING_PARTS),
                "attention": self._layers(ATTENTION_PARTS), "ffn": self._layers(FFN_PARTS),
                "norm": self._layers(LAYER_NORM_PARTS) + self.model["final_norm"],
                "lm_head": self.model["lm_head"], "other": self.model["pooler"]}

    def components(self) -> dict[str, int]:
        """Whole-model count of every component (layer components times n_layers)."""
        return {**{p: self.model[p] for p in EMBEDDING_PARTS},
                **{p: self._layers((p,)) for p in LAYER_COMPONENTS},
                **{p: self.model[p] for p in ("final_norm", "pooler", "lm_head")}}


def _layer(cfg: ModelConfig, moe: bool) -> dict[str, int]:
    """One layer's components; `moe` swaps the FFN for E + S experts and a router."""
    d, hd = cfg.d_model, cfg.head_dim
    m = cfg.moe_d_ff if moe else cfg.d_ff
    copies = cfg.n_experts + cfg.n_shared_experts if moe else 1
    q_width, kv_width = cfg.n_heads * hd, cfg.n_kv_heads * hd
    ffn_in = copies * linear_params(d, m, cfg.ffn_bias)
    sandwich = cfg.placement == "sandwich"
    return {
        "q_proj": linear_params(d, q_width, cfg.attn_bias),
        "k_proj": linear_params(d, kv_width, cfg.attn_bias),
        "v_proj": linear_params(d, kv_width, cfg.attn_bias),
        "o_proj": linear_params(q_width, d, cfg.attn_out_bias),
        # q_norm and k_norm: one RMSNorm gain of width head_dim each, shared by all heads.
        "qk_norm": 2 * hd if cfg.qk_norm else 0,
        "gate_proj": ffn_in if cfg.gated else 0,
        "up_proj": ffn_in,
        "down_proj": copies * linear_params(m, d, cfg.ffn_bias),
        # The router scores every routed expert for each token: a [E, d] weight, no bias.
        "router": cfg.n_experts * d if moe else 0,
        "attn_norm": norm_params(cfg, d),
        "ffn_norm": norm_params(cfg, d),
        # Sandwich placement (Gemma-2) also normalises each sublayer's output: 4 norms a layer.
        "post_attn_norm": norm_params(cfg, d) if sandwich else 0,
        "post_ffn_norm": norm_params(cfg, d) if sandwich else 0,
    }


def count_params(cfg: ModelConfig) -> ParamCounts:
    """Exact parameter counts of `cfg` (see the module docstring for what each holds)."""
    d = cfg.d_model
    n_moe = cfg.n_moe_layers
    if n_moe in (0, cfg.n_layers):  # dense everywhere, or MoE everywhere: every layer alike
        layer, moe_layer, n_moe = _layer(cfg, moe=n_moe > 0), None, 0
    else:
        layer, moe_layer = _layer(cfg, moe=False), _layer(cfg, moe=True)
    model = {
        "embed_tokens": cfg.vocab_size * d,
        # A learned absolute table (GPT-2 wpe, BERT) has one row per position; sinusoidal, RoPE,
        # ALiBi and NoPE have no parameters.
        "position_embedding": cfg.max_seq_len * d if cfg.position == "learned" else 0,
        "token_type_embedding": cfg.type_vocab_size * d,
        "embed_norm": norm_params(cfg, d) if cfg.embed_norm else 0,
        "final_norm": norm_params(cfg, d) if cfg.final_norm else 0,
        "pooler": linear_params(d, d, True) if cfg.pooler else 0,
        # Tied: lm_head reuses embed_tokens' tensor, so it adds no parameters.
        "lm_head": 0 if cfg.tie_embeddings else cfg.vocab_size * d,
    }
    return ParamCounts(n_layers=cfg.n_layers, layer=layer, model=model, moe_layer=moe_layer,
                       n_moe_layers=n_moe)
