"""`ModelConfig`: the one dataclass that describes a model, validated on construction.

String choices resolve through explicit registries (`FFNS`, `NORMS`, ...); unknown names and
keys raise a one-line `ConfigError` naming the field, the value and what is allowed. No torch:
`blocklab.budget` builds on it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from blocklab.checks import MAX_SIZE, is_int, real, refusal, shown_value
from blocklab.errors import ConfigError
from blocklab.reference.ffn import llama_ffn_width

# name -> (gated, activation); the activation acts on the gate branch of a gated FFN.
FFNS: dict[str, tuple[bool, str]] = {
    "relu": (False, "relu"),
    "gelu": (False, "gelu"),
    "gelu_tanh": (False, "gelu_tanh"),
    "silu": (False, "silu"),
    "glu": (True, "sigmoid"),
    "reglu": (True, "relu"),
    "geglu": (True, "gelu"),
    "geglu_tanh": (True, "gelu_tanh"),
    "swiglu": (True, "silu"),
    "bilinear": (True, "identity"),
}
NORMS = ("rmsnorm", "layernorm")
# Where the fp32 statistics are cast back (see docs/glossary.md, "numerics"):
#   llama: normalise in fp32, cast to the input dtype, then multiply the gain;
#   gemma: multiply the gain in fp32, then cast.
NORM_CASTS = ("llama", "gemma")
PLACEMENTS = ("pre", "post", "sandwich")
POSITIONS = ("none", "learned", "sinusoidal", "rope", "alibi")
ROPE_LAYOUTS = ("half_split", "interleaved")
ROPE_SCALING_TYPES = ("default", "linear", "dynamic", "ntk", "yarn", "llama3")
# Per-layer attention, named as transformers' `layer_types` names them.
LAYER_TYPES = ("full_attention", "sliding_attention")


def _bad(field_name: str, value: Any, allowed: str) -> ConfigError:
    return refusal(f"ModelConfig.{field_name}={shown_value(value)}", allowed, ConfigError)


@dataclass(frozen=True)
class ModelConfig:
    """A decoder (or, for budgets only, encoder) Transformer, one field per design choice.

    Sizes: `d_model`, `n_layers`, `n_heads`, `n_kv_heads` (grouped-query; defaults to n_heads),
    `head_dim` (defaults to d_model // n_heads), `d_ff` (defaults by rule: 4·d_model for plain
    FFNs, Meta's Llama rule `llama_ffn_width` for gated ones).
    """

    vocab_size: int = 256
    d_model: int = 256
    n_layers: int = 4
    n_heads: int = 4
    n_kv_heads: int | None = None
    head_dim: int | None = None
    d_ff: int | None = None
    ffn: str = "swiglu"
    ffn_multiple_of: int = 1
    ffn_dim_multiplier: float | None = None
    ffn_bias: bool = False
    attn_bias: bool = False  # q, k, v projections
    attn_out_bias: bool = False  # o projection
    norm: str = "rmsnorm"
    norm_eps: float = 1e-5
    norm_bias: bool = True  # LayerNorm only; RMSNorm has no bias
    norm_unit_offset: bool = False  # gain applied as (1 + γ), Gemma
    norm_cast: str = "llama"
    qk_norm: bool = False  # per-head RMSNorm of q and k before RoPE, Qwen3
    placement: str = "pre"
    final_norm: bool = True
    embed_norm: bool = False  # norm right after the embeddings (BERT)
    residual_scale: float = 1.0  # x·α + F(x); DeepNorm-style when α > 1
    position: str = "rope"
    max_seq_len: int = 2048
    rope_theta: float = 10000.0
    rope_layout: str = "half_split"
    partial_rotary_factor: float = 1.0
    rope_scaling: dict[str, Any] | None = None
    tie_embeddings: bool = False
    embed_scale: bool = False  # multiply embeddings by sqrt(d_model), Gemma
    attn_scale: float | None = None  # softmax scale; None means 1/sqrt(head_dim)
    attn_logit_softcap: float | None = None
    final_logit_softcap: float | None = None
    sliding_window: int | None = None
    # One entry per layer from LAYER_TYPES: which layers `sliding_window` applies to (Qwen2/3's
    # max_window_layers, Gemma 2's alternation). None: every layer, when a window is set.
    layer_types: tuple[str, ...] | None = None
    causal: bool = True
    type_vocab_size: int = 0  # BERT token-type embeddings (budget only)
    pooler: bool = False  # BERT pooler (budget only)
    # Mixture of experts (budget only; blocklab.nn refuses to build it). 0 experts: dense FFNs.
    n_experts: int = 0  # routed experts per MoE layer
    experts_per_token: int = 1  # routed experts each token uses (top-k)
    n_shared_experts: int = 0  # experts every token uses, beside the routed ones (Llama 4)
    moe_d_ff: int | None = None  # width of one expert; defaults to d_ff
    moe_every: int = 1  # layers moe_every-1, 2·moe_every-1, ... are MoE (Llama 4's step)
    nope_every: int | None = None  # layers nope_every-1, 2·nope_every-1, ... skip RoPE (Llama 4)
    name: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        _check_fields(self, _SIZES_AND_FLAGS)
        if self.n_experts and self.experts_per_token > self.n_experts:
            raise _bad("experts_per_token", self.experts_per_token,
                       f"at most n_experts={self.n_experts}")
        if not self.n_experts and (self.n_shared_experts or self.moe_d_ff is not None
                                   or self.moe_every != 1 or self.experts_per_token != 1):
            raise _bad("n_experts", self.n_experts,
                       "> 0 when n_shared_experts, moe_d_ff, moe_every or experts_per_token is set")
        if self.moe_every > self.n_layers:
            raise _bad("moe_every", self.moe_every, f"at most n_layers={self.n_layers}")
        if self.nope_every is not None and self.position != "rope":
            raise _bad("nope_every", self.nope_every, "None unless position='rope'")
        _check_fields(self, _CHOICES_AND_NUMBERS)

        # Derived sizes are resolved once here, so every consumer sees the same numbers.
        if self.n_kv_heads is None:
            object.__setattr__(self, "n_kv_heads", self.n_heads)
        if self.n_heads % self.n_kv_heads:
            raise _bad("n_kv_heads", self.n_kv_heads, f"a divisor of n_heads={self.n_heads}")
        if self.head_dim is None:
            if self.d_model % self.n_heads:
                raise _bad("n_heads", self.n_heads,
                           f"a divisor of d_model={self.d_model} (or set head_dim explicitly)")
            object.__setattr__(self, "head_dim", self.d_model // self.n_heads)
        if self.d_ff is None:
            width = (llama_ffn_width(self.d_model, self.ffn_multiple_of, self.ffn_dim_multiplier)
                     if self.gated else 4 * self.d_model)
            object.__setattr__(self, "d_ff", width)
        if self.n_experts and self.moe_d_ff is None:
            object.__setattr__(self, "moe_d_ff", self.d_ff)
        if self.position == "rope" and self.rotary_dim % 2:
            raise _bad("partial_rotary_factor", self.partial_rotary_factor,
                       f"a factor giving an even rotary dim (head_dim={self.head_dim} gives "
                       f"{self.rotary_dim})")
        if self.rope_scaling is not None:
            object.__setattr__(self, "rope_scaling",
                               check_rope_scaling(self.rope_scaling, theta=self.rope_theta))
        if self.layer_types is not None:
            object.__setattr__(self, "layer_types", self._checked_layer_types())

    def _checked_layer_types(self) -> tuple[str, ...]:
        """`layer_types` as a tuple (JSON gives a list), one known entry per layer, and a
        window to apply where a layer is marked sliding."""
        value = self.layer_types
        if not isinstance(value, list | tuple) or len(value) != self.n_layers \
                or not all(isinstance(t, str) and t in LAYER_TYPES for t in value):
            raise _bad("layer_types", value, f"None or one of {list(LAYER_TYPES)} per layer "
                       f"({self.n_layers} in all)")
        if self.sliding_window is None and "sliding_attention" in value:
            raise _bad("layer_types", value, "no 'sliding_attention' layer while "
                       "sliding_window is None")
        return tuple(value)

    # --- derived -----------------------------------------------------------------------------
    @property
    def gated(self) -> bool:
        return FFNS[self.ffn][0]

    @property
    def activation(self) -> str:
        return FFNS[self.ffn][1]

    @property
    def n_moe_layers(self) -> int:
        """Layers whose FFN is a mixture of experts: indices moe_every-1, 2·moe_every-1, ..."""
        return self.n_layers // self.moe_every if self.n_experts else 0

    @property
    def n_nope_layers(self) -> int:
        """Layers without RoPE (indices nope_every-1, 2·nope_every-1, ...); 0 when unset."""
        return self.n_layers // self.nope_every if self.nope_every else 0

    def attention_window(self, layer: int) -> int | None:
        """The sliding window of layer `layer` (keys each query sees, itself included); None
        where the layer attends to every earlier position."""
        if self.layer_types is None or self.layer_types[layer] == "sliding_attention":
            return self.sliding_window
        return None

    @property
    def windowed_layers(self) -> int:
        return sum(self.attention_window(i) is not None for i in range(self.n_layers))

    @property
    def rotary_dim(self) -> int:
        return int(self.head_dim * self.partial_rotary_factor)

    @property
    def rope_type(self) -> str:
        return "default" if self.rope_scaling is None else self.rope_scaling["rope_type"]

    # --- JSON ----------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        # layer_types came after run ids (hashes of this dict) were first issued: left out at
        # its default, so the ids of earlier runs stay what they were.
        if data["layer_types"] is None:
            del data["layer_types"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown ModelConfig key(s) {unknown}; allowed: {sorted(known)}")
        return cls(**data)  # __post_init__ checks each value, naming the field

    def replace(self, **changes: Any) -> ModelConfig:
        """A copy with `changes`; derived sizes (n_kv_heads, head_dim, d_ff) keep their values
        unless given (None derives them again); fewer layers keep the first `layer_types`."""
        data = self.to_dict()
        cut = changes.get("n_layers")
        if self.layer_types is not None and "layer_types" not in changes \
                and isinstance(cut, int) and 0 < cut < self.n_layers:
            data["layer_types"] = self.layer_types[:cut]
        data.update(changes)
        return ModelConfig.from_dict(data)


# Each field's rule, (check, what is expected). `__post_init__` checks the sizes and flags, then
# the MoE relations, then the choices and numbers: the error names the first rule broken.
_POSITIVE = (is_int, f"a positive integer (at most {MAX_SIZE})")
_POSITIVE_OR_NONE = (lambda v: v is None or is_int(v), _POSITIVE[1])
_COUNT = (lambda v: is_int(v, 0), f"an integer in [0, {MAX_SIZE}]")
_FLAG = (lambda v: isinstance(v, bool), "true or false")
_SCALE = (lambda v: real(v) and v > 0, "a finite number > 0")
_SCALE_OR_NONE = (lambda v: v is None or (real(v) and v > 0), "a finite number > 0 or None")


def _one_of(allowed) -> tuple[Any, str]:
    return (lambda v: isinstance(v, str) and v in allowed, f"one of {sorted(allowed)}")


_SIZES_AND_FLAGS: dict[str, tuple[Any, str]] = {
    **dict.fromkeys(("vocab_size", "d_model", "n_layers", "n_heads", "max_seq_len",
                     "ffn_multiple_of"), _POSITIVE),
    **dict.fromkeys(("n_kv_heads", "head_dim", "d_ff", "sliding_window", "moe_d_ff",
                     "nope_every"), _POSITIVE_OR_NONE),
    "type_vocab_size": _COUNT,
    **dict.fromkeys(("ffn_bias", "attn_bias", "attn_out_bias", "norm_bias", "norm_unit_offset",
                     "qk_norm", "final_norm", "embed_norm", "tie_embeddings", "embed_scale",
                     "causal", "pooler"), _FLAG),
    "name": (lambda v: isinstance(v, str), "a string"),
    **dict.fromkeys(("n_experts", "n_shared_experts"), _COUNT),
    **dict.fromkeys(("experts_per_token", "moe_every"), _POSITIVE),
}
_CHOICES_AND_NUMBERS: dict[str, tuple[Any, str]] = {
    "ffn": _one_of(FFNS),
    "norm": _one_of(NORMS),
    "norm_cast": _one_of(NORM_CASTS),
    "placement": _one_of(PLACEMENTS),
    "position": _one_of(POSITIONS),
    "rope_layout": _one_of(ROPE_LAYOUTS),
    "norm_eps": (lambda v: real(v) and v >= 0, "a finite number >= 0"),
    "rope_theta": (lambda v: real(v) and v > 1, "a finite number > 1"),
    "partial_rotary_factor": (lambda v: real(v) and 0 < v <= 1, "a number in (0, 1]"),
    "residual_scale": _SCALE,
    "ffn_dim_multiplier": _SCALE_OR_NONE,
    "attn_scale": _SCALE_OR_NONE,
    "attn_logit_softcap": _SCALE_OR_NONE,
    "final_logit_softcap": _SCALE_OR_NONE,
}


def _check_fields(config: ModelConfig, rules: dict[str, tuple[Any, str]]) -> None:
    for name, (check, expected) in rules.items():
        value = getattr(config, name)
        if not check(value):
            raise _bad(name, value, expected)


def positive_int(name: str, value: Any) -> None:
    """ModelConfig's rule for a size, for readers that check one before they compute with it."""
    if not is_int(value):
        raise _bad(name, value, _POSITIVE[1])


# What each scaled RoPE reads besides `rope_type`: (required keys, optional keys). The same keys
# as `blocklab.nn.rope_scaling` (which refuses any other) and transformers'
# `RotaryEmbeddingConfigMixin._validate_<type>_rope_parameters`; "ntk" is ours alone.
ROPE_SCALING_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    **dict.fromkeys(("linear", "ntk", "dynamic"),
                    (("factor",), ("original_max_position_embeddings",))),
    "yarn": (("factor",), ("original_max_position_embeddings", "attention_factor", "beta_fast",
                           "beta_slow", "mscale", "mscale_all_dim", "truncate")),
    "llama3": (("factor", "low_freq_factor", "high_freq_factor"),
               ("original_max_position_embeddings",)),
}
# What each key holds, as (check, what is expected). Null means "the default" only where
# transformers reads it so (YaRN's betas and attention factor); mscale 0 reads as unset there.
_ROPE_VALUES: dict[str, tuple[Any, str]] = {
    **dict.fromkeys(("factor", "low_freq_factor", "high_freq_factor"), _SCALE),
    "original_max_position_embeddings": (
        is_int, "a positive integer up to 2**53 (the context length trained on)"),
    **dict.fromkeys(("attention_factor", "beta_fast", "beta_slow"), (
        lambda v: v is None or (real(v) and v > 0), "a finite number > 0, or null")),
    **dict.fromkeys(("mscale", "mscale_all_dim"), (
        lambda v: v is None or (real(v) and v >= 0), "a finite number >= 0, or null")),
    # transformers reads a null truncate as false, the YaRN paper's default is true: say which.
    "truncate": (lambda v: isinstance(v, bool), "true or false"),
}


def check_rope_scaling(scaling: Any, prefix: str = "ModelConfig.", name: str = "rope_scaling",
                        theta: float | None = None) -> dict[str, Any] | None:
    """`scaling` checked key by key and normalised to {"rope_type": ..., <its keys>}; None for
    plain RoPE. Errors name the key path (`{prefix}{name}.factor=`); a `rope_theta` inside (v5
    configs) must equal `theta` when given."""
    where = f"{prefix}{name}"
    if not isinstance(scaling, dict):
        raise ConfigError(f"{where}={shown_value(scaling)} is not allowed; expected an object "
                          "with 'rope_type' and 'factor', or null")
    scaling = dict(scaling)
    if "type" in scaling and "rope_type" in scaling and scaling["type"] != scaling["rope_type"]:
        raise ConfigError(f"{where}.type={shown_value(scaling['type'])} and {name}.rope_type="
                          f"{shown_value(scaling['rope_type'])} disagree; transformers reads "
                          "rope_type: keep one")
    kind = scaling.pop("type", None)  # transformers v4 wrote "type"
    scaling.setdefault("rope_type", kind)
    if "rope_theta" in scaling:
        inner = scaling.pop("rope_theta")
        if theta is not None and inner != theta:
            raise ConfigError(f"{where}.rope_theta={shown_value(inner)} and {prefix}rope_theta="
                              f"{shown_value(theta)} disagree; set rope_theta alone")
    kind = scaling["rope_type"]
    if kind is None:
        if len(scaling) > 1:
            # transformers 5 reads {"factor": 8} as "default" and only warns that the factor is
            # unused; whoever wrote a factor meant some scaling, so say which ones exist.
            raise ConfigError(
                f"{where}={shown_value({k: v for k, v in scaling.items() if k != 'rope_type'})} "
                f"is not allowed; expected a 'rope_type' (or v4 'type') key, one of "
                f"{list(ROPE_SCALING_TYPES)}")
        return None  # {}: no scaling
    if not isinstance(kind, str) or kind not in ROPE_SCALING_TYPES:
        raise ConfigError(f"{where}.rope_type={shown_value(kind)} is not allowed; expected a "
                          f"rope_type in {ROPE_SCALING_TYPES}")
    others = sorted(k for k in scaling if k != "rope_type")
    if kind == "default":
        if others:  # transformers warns and drops them; a factor was meant to scale something
            raise ConfigError(f"{where}.{others[0]}={shown_value(scaling[others[0]])} is not "
                              "read under rope_type 'default'; expected a scaling rope_type "
                              f"such as 'linear' or 'yarn', or no {others[0]!r}")
        return None
    required, optional = ROPE_SCALING_KEYS[kind]
    unknown = [k for k in others if k not in required + optional]
    if unknown:
        raise ConfigError(f"{where} has key(s) {unknown} that rope_type {kind!r} does not read; "
                          f"expected keys from {sorted(required + optional)}")
    missing = [k for k in required if k not in scaling]
    if missing:
        raise ConfigError(f"{where}={shown_value(scaling)} is not allowed; expected "
                          f"{' and '.join(repr(k) for k in missing)} for rope_type {kind!r} "
                          f"({_ROPE_VALUES[missing[0]][1]})")
    for key in others:
        check, expected = _ROPE_VALUES[key]
        if not check(scaling[key]):
            raise ConfigError(f"{where}.{key}={shown_value(scaling[key])} is not allowed; "
                              f"expected {expected}")
    # Two keys bounding one range: transformers only warns, blocklab.nn refuses.
    if kind == "yarn":
        fast, slow = (32 if scaling.get("beta_fast") is None else scaling["beta_fast"],
                      1 if scaling.get("beta_slow") is None else scaling["beta_slow"])
        if not fast > slow:
            raise ConfigError(f"{where}.beta_fast={shown_value(fast)} is not allowed with "
                              f"{name}.beta_slow={shown_value(slow)}; expected beta_fast > "
                              "beta_slow (null or absent: 32 and 1)")
    if kind == "llama3" and not scaling["high_freq_factor"] > scaling["low_freq_factor"]:
        raise ConfigError(f"{where}.high_freq_factor={shown_value(scaling['high_freq_factor'])} "
                          f"is not allowed with {name}.low_freq_factor="
                          f"{shown_value(scaling['low_freq_factor'])}; expected high_freq_factor "
                          "> low_freq_factor")
    return scaling
