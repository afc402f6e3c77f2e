"""Hugging Face `config.json` in and out of `ModelConfig`: Llama, Mistral, Qwen2 and Qwen3 both
ways; Gemma, Gemma-2, GPT-2, BERT, MPT, ChatGLM and Llama 4 (text) in, for the budget
calculator. A config.json is read as transformers 5 reads it: where two keys of one
config.json disagree and transformers would silently take one, the read fails naming both.
Imports no torch (the budget calculator reads configs through it).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

from blocklab.checks import is_int, real, shown_value
from blocklab.config import LAYER_TYPES, ModelConfig, check_rope_scaling, positive_int
from blocklab.errors import ConfigError

# Hugging Face hidden_act -> our activation names.
_HF_ACTS = {"silu": "silu", "swish": "silu", "relu": "relu", "gelu": "gelu",
            "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu_fast": "gelu_tanh"}
_GATED_BY_ACT = {"silu": "swiglu", "relu": "reglu", "gelu": "geglu", "gelu_tanh": "geglu_tanh",
                 "sigmoid": "glu", "identity": "bilinear"}
_HF_ACT_OF = {"silu": "silu", "relu": "relu", "gelu": "gelu", "gelu_tanh": "gelu_pytorch_tanh"}
HF_LLAMA_FAMILY = ("llama", "mistral", "qwen2", "qwen3")


# ModelConfig field -> the config.json key it comes from, named in its errors (Llama family).
_HF_KEYS = {"vocab_size": "vocab_size", "d_model": "hidden_size", "n_layers": "num_hidden_layers",
            "n_heads": "num_attention_heads", "n_kv_heads": "num_key_value_heads",
            "head_dim": "head_dim", "d_ff": "intermediate_size", "norm_eps": "rms_norm_eps",
            "max_seq_len": "max_position_embeddings", "sliding_window": "sliding_window",
            "attn_scale": "query_pre_attn_scalar", "attn_logit_softcap": "attn_logit_softcapping",
            "final_logit_softcap": "final_logit_softcapping"}

# The config class default transformers 5 takes for a size a config.json leaves out; None
# means derived (hidden_size // num_attention_heads, or num_attention_heads).
HF_ABSENT_SIZES: dict[str, dict[str, int | None]] = {
    "llama": {"head_dim": None, "num_key_value_heads": None},
    "mistral": {"head_dim": None, "num_key_value_heads": 8},
    "qwen2": {"head_dim": None, "num_key_value_heads": 32},
    "qwen3": {"head_dim": 128, "num_key_value_heads": 32},
    "gemma": {"head_dim": 256, "num_key_value_heads": 16},
    "gemma2": {"head_dim": 256, "num_key_value_heads": 4},
    "llama4_text": {"head_dim": 128, "num_key_value_heads": 8},
}
# Sizes a config class refuses as null; elsewhere null means derived.
_HF_NOT_NULL: dict[str, tuple[str, ...]] = {
    "mistral": ("num_key_value_heads",), "qwen2": ("head_dim",), "qwen3": ("head_dim",),
    "gemma": ("head_dim", "num_key_value_heads"), "gemma2": ("head_dim", "num_key_value_heads"),
    "llama4_text": ("head_dim", "num_key_value_heads"),
}
# Config classes that refuse hidden_size % num_attention_heads != 0 even with head_dim given
# (LlamaConfig.validate_architecture, Gemma2Config.validate_architecture).
HF_HIDDEN_DIVISIBLE = ("llama", "gemma2")
# RotaryEmbeddingConfigMixin.default_theta where a config class overrides 10,000.
_HF_DEFAULT_THETA = {"llama4_text": 500000.0}
# The key each family's MLP reads its activation from, its default, and the alias it ignores.
_HF_ACT_KEYS = {"gemma": ("hidden_act", "gelu_pytorch_tanh", "hidden_activation"),
                "gemma2": ("hidden_activation", "gelu_pytorch_tanh", "hidden_act")}
_HF_ACT_KEYS_DEFAULT = ("hidden_act", "silu", "hidden_activation")
# rope_types transformers' ROPE_INIT_FUNCTIONS has and blocklab.nn computes ("ntk" is ours).
HF_ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "llama3")
# Layer-type names a per-layer-type rope_parameters is keyed by (Gemma 3 style).
_HF_LAYER_TYPES = ("full_attention", "sliding_attention", "chunked_attention")
_ORIGINAL = "original_max_position_embeddings"


@contextlib.contextmanager
def _named_by(keys: dict[str, str]) -> Iterator[None]:
    """Inside, an error about a ModelConfig field also names the config.json key it came from."""
    try:
        yield
    except ConfigError as err:
        field_name = re.match(r"ModelConfig\.(\w+)=", str(err))
        key = keys.get(field_name.group(1)) if field_name else None
        if key is None:
            raise
        raise ConfigError(f"config.json {key}: {err}") from None


def _need(hf: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if key in hf and hf[key] is not None:
            return hf[key]
    raise ConfigError(f"Hugging Face config is missing {' / '.join(keys)!r}")


def _key(hf: dict[str, Any], *keys: str) -> str:
    """The first of `keys` that `hf` sets (not null), else the first: where a value came from."""
    return next((key for key in keys if hf.get(key) is not None), keys[0])


def _hf_bool(hf: dict[str, Any], key: str, default: bool, where: str = "") -> bool:
    """A config.json switch, `default` when absent or null; Python's truthiness would read
    "false" as true, so anything but true or false fails naming the key."""
    value = hf.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ConfigError(f"config.json {where}{key}={shown_value(value)} is not allowed; "
                          "expected true or false")
    return value


def _hf_str(hf: dict[str, Any], key: str, default: str | None, where: str = "") -> str | None:
    """A config.json name (an activation, an attention type), `default` when absent or null."""
    value = hf.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise ConfigError(f"config.json {where}{key}={shown_value(value)} is not allowed; "
                          "expected a string")
    return value


def hf_size(hf: dict[str, Any], key: str, model_type: str | None = None) -> Any:
    """`head_dim` or `num_key_value_heads` as transformers 5 resolves it: the value written,
    else the class default (None: derived); a null the class refuses raises."""
    model_type = hf.get("model_type") if model_type is None else model_type
    absent = HF_ABSENT_SIZES.get(model_type) if isinstance(model_type, str) else None
    if absent is None:  # not a Llama-family type: null and absent both mean derived
        return hf.get(key)
    if key not in hf:
        return absent[key]
    if hf[key] is None and key in _HF_NOT_NULL.get(model_type, ()):
        default = f" (absent, it is {absent[key]})" if absent[key] is not None else ""
        raise ConfigError(f"config.json {key}=None is not allowed for {model_type}; expected an "
                          f"integer: transformers' {model_type} config refuses null{default}")
    return hf[key]


def hf_defaults_taken(hf: dict[str, Any], model_type: str | None = None) -> dict[str, int]:
    """{key: value} of sizes `hf` leaves out that transformers fills with a class default
    rather than deriving (Qwen3's head_dim of 128)."""
    model_type = hf.get("model_type") if model_type is None else model_type
    absent = HF_ABSENT_SIZES.get(model_type, {}) if isinstance(model_type, str) else {}
    return {key: value for key, value in absent.items() if value is not None and key not in hf}


def _hf_sizes(hf: dict[str, Any], model_type: str) -> tuple[Any, Any, dict[str, str]]:
    """(head_dim, n_kv_heads, their config.json keys) as transformers resolves them; refuses a
    hidden_size the heads do not divide where the config class does."""
    heads = _need(hf, "num_attention_heads")
    hidden = hf.get("hidden_size")
    if model_type in HF_HIDDEN_DIVISIBLE and is_int(hidden) and is_int(heads) and hidden % heads:
        raise ConfigError(f"config.json hidden_size={hidden} is not a multiple of "
                          f"num_attention_heads={heads}; transformers' {model_type} config refuses "
                          f"that even with head_dim={shown_value(hf.get('head_dim'))}: expected "
                          f"num_attention_heads dividing {hidden}")
    absent = HF_ABSENT_SIZES[model_type]
    # An error about a size the file leaves out says where the value came from.
    keys = {field_name: key if key in hf or absent[key] is None else
            f"{key} (absent: transformers' {model_type} default {absent[key]})"
            for field_name, key in (("head_dim", "head_dim"),
                                    ("n_kv_heads", "num_key_value_heads"))}
    kv = hf_size(hf, "num_key_value_heads", model_type)
    return hf_size(hf, "head_dim", model_type), heads if kv is None else kv, keys


def _hf_act(hf: dict[str, Any], model_type: str) -> str:
    """Our activation name for the key the family's MLP reads; an alias it ignores that names
    another activation is refused, naming both."""
    key, default, ignored = _HF_ACT_KEYS.get(model_type, _HF_ACT_KEYS_DEFAULT)
    name = _hf_str(hf, key, default) or default
    if model_type == "gemma" and name == "gelu":
        name = "gelu_pytorch_tanh"  # GemmaConfig: the released "gelu" meant the tanh form (#29402)
    act = _HF_ACTS.get(name)
    if act is None:
        raise ConfigError(f"config.json {key}={shown_value(hf[key])} is not allowed; "
                          f"expected one of {sorted(_HF_ACTS)}")
    other = _hf_str(hf, ignored, None)
    if other is not None and _HF_ACTS.get(other) != act:
        said = f"{key}={shown_value(hf[key])}" if hf.get(key) is not None else \
            f"{key} (absent: {default!r})"
        raise ConfigError(f"config.json {said} and {ignored}={shown_value(other)} disagree; "
                          f"transformers' {model_type} reads {key} and ignores {ignored}: "
                          "remove one or make them agree")
    return act


def _hf_alias(hf: dict[str, Any], key: str, alias: str, model_type: str,
              required: bool = True) -> tuple[str, Any]:
    """(the key used, its value) for a setting stored as `key` and also taken as `alias`
    (attribute_map, where the alias wins): both written and different is refused. Null counts
    as absent; absent raises when `required`."""
    if hf.get(alias) is None:
        if required:
            _need(hf, key, alias)
        return key, hf.get(key)
    if hf.get(key) is not None and hf[key] != hf[alias]:
        raise ConfigError(f"config.json {key}={shown_value(hf[key])} and {alias}="
                          f"{shown_value(hf[alias])} disagree; transformers' {model_type} "
                          f"stores {alias} as {key} and keeps {alias}: remove one or make them "
                          "agree")
    return alias, hf[alias]


class _Rope(NamedTuple):
    """One object's reading of RoPE: `key` is rope_scaling, rope_parameters or None (neither
    written); `effective` is every value transformers would use, for comparing two."""

    key: str | None
    theta: float
    theta_key: str | None  # the config.json key theta came from; None: the class default
    scaling: dict[str, Any] | None
    effective: dict[str, Any]


def _hf_rope(hf: dict[str, Any], model_type: str) -> tuple[float, dict[str, Any] | None,
                                                          dict[str, str]]:
    """(theta, scaling, the config.json keys they came from) as transformers 5 reads them
    (`convert_rope_params_to_dict`): a non-empty `rope_scaling` wins over `rope_parameters`; a
    nested `rope_theta` over the top-level one, over the class's `default_theta`. Two keys that
    disagree where transformers would silently take one are refused, naming both.
    """
    found = []
    for key in ("rope_scaling", "rope_parameters"):
        value = hf.get(key)
        if value is not None and not isinstance(value, dict):
            raise ConfigError(f"config.json {key}={shown_value(value)} is not allowed; expected "
                              "an object with 'rope_type' and 'rope_theta', or null")
        if value:
            found.append(_hf_rope_of(hf, model_type, key, value))
    if len(found) == 2 and found[0].effective != found[1].effective:
        differ = [k for k in dict.fromkeys([*found[0].effective, *found[1].effective])
                  if found[0].effective.get(k) != found[1].effective.get(k)]
        said = ", ".join(f"{k} {_said(found[0], k, model_type)} vs "
                         f"{_said(found[1], k, model_type)}" for k in differ)
        raise ConfigError(f"config.json rope_scaling and rope_parameters disagree: {said}; "
                          "transformers reads rope_scaling and ignores rope_parameters: remove "
                          "one or make them agree")
    rope = found[0] if found else _hf_rope_of(hf, model_type, None, {})
    return rope.theta, rope.scaling, {"rope_theta": rope.theta_key or "rope_theta",
                                      "rope_scaling": rope.key or "rope_scaling"}


def _said(rope: _Rope, key: str, model_type: str) -> str:
    """How `rope` gives `key` in a disagreement: the value, and where it came from when that is
    not the object itself."""
    if key not in rope.effective:
        return "(none)"
    value = shown_value(rope.effective[key])
    if key == "rope_theta" and rope.theta_key is None:
        return f"{value} (transformers' {model_type} default)"
    if key == "rope_theta" and rope.theta_key == "rope_theta":
        return f"{value} (from the top-level rope_theta)"
    if key == _ORIGINAL and _ORIGINAL not in (rope.scaling or {}):
        return f"{value} (from max_position_embeddings)"
    return value


def _hf_rope_of(hf: dict[str, Any], model_type: str, key: str | None,
                params: dict[str, Any]) -> _Rope:
    """RoPE as the object `hf[key]` (None: neither object) and the top-level keys give it."""
    for name, value in params.items():
        if name in _HF_LAYER_TYPES or isinstance(value, dict):
            raise ConfigError(f"config.json {key}.{name}: RoPE parameters per layer type are "
                              f"not read by transformers' {model_type} model, which takes one "
                              f"flat {key} object (rope_type, rope_theta, factor, ...); expected "
                              f"{key} without {name!r}")
    theta_key, theta = _hf_nested(hf, key, params, "rope_theta",
                                  _HF_DEFAULT_THETA.get(model_type, 10000.0))
    theta = _hf_float(theta_key or "rope_theta", theta)
    partial_key, partial = _hf_nested(hf, key, params, "partial_rotary_factor", None)
    if partial is not None and _hf_float(partial_key or "", partial) != 1.0:
        # LlamaRotaryEmbedding's default init uses the whole head_dim; the scaled inits rotate
        # int(head_dim * factor) channels and the forward then fails on mismatched shapes.
        raise ConfigError(f"config.json {partial_key}={shown_value(partial)} is not allowed for "
                          f"{model_type}; expected 1 or absent: transformers' {model_type} "
                          "rotates the whole head (it ignores partial_rotary_factor, or fails "
                          "with a scaled rope_type)")
    scaling = None
    if key is not None:
        where = f"config.json {key}"
        scaling = check_rope_scaling({k: v for k, v in params.items()
                                       if k not in ("rope_theta", "partial_rotary_factor")},
                                      "config.json ", key)
        if scaling is not None and scaling["rope_type"] not in HF_ROPE_TYPES:
            raise ConfigError(f"{where}.rope_type={shown_value(scaling['rope_type'])} is not a "
                              f"transformers rope_type; expected one of {list(HF_ROPE_TYPES)}")
    effective = {"rope_type": "default" if scaling is None else scaling["rope_type"],
                 "rope_theta": theta,
                 **{k: v for k, v in (scaling or {}).items() if v is not None}}
    original = _hf_original_length(hf, model_type, key, scaling)
    if original is not None:
        effective[_ORIGINAL] = original
    return _Rope(key, theta, theta_key, scaling, effective)


def _hf_nested(hf: dict[str, Any], key: str | None, params: dict[str, Any], name: str,
               default: Any) -> tuple[str | None, Any]:
    """(the config.json key it came from, value) of `name`: inside `params` = hf[key] first,
    then at the top level, then (None, `default`); two different values are refused."""
    if key is not None and name in params:
        if hf.get(name) is not None and hf[name] != params[name]:
            raise ConfigError(f"config.json {key}.{name}={shown_value(params[name])} and {name}="
                              f"{shown_value(hf[name])} disagree; transformers reads {key}.{name} "
                              f"and ignores the top-level {name}: remove one or make them agree")
        return f"{key}.{name}", params[name]
    return (name, hf[name]) if name in hf else (None, default)


def _hf_original_length(hf: dict[str, Any], model_type: str, key: str | None,
                        scaling: dict[str, Any] | None) -> int | None:
    """The pre-scaling length transformers uses: `{key}.original_max_position_embeddings` for
    yarn and llama3 (else max_position_embeddings), max_position_embeddings for dynamic; None
    for the others. Another key saying otherwise (the top-level one, Phi-3 style) is refused."""
    trained = hf.get("max_position_embeddings")
    if scaling is None or scaling["rope_type"] not in ("dynamic", "yarn", "llama3") \
            or trained is None:  # a missing max_position_embeddings is reported where it is read
        return None
    used_key, used = "max_position_embeddings", trained
    if _ORIGINAL in scaling:
        nested = scaling[_ORIGINAL]
        if scaling["rope_type"] == "dynamic" and nested != trained:
            raise ConfigError(f"config.json {key}.{_ORIGINAL}={shown_value(nested)} and "
                              f"max_position_embeddings={shown_value(trained)} disagree; "
                              "transformers' dynamic scaling starts at max_position_embeddings "
                              f"and ignores {key}.{_ORIGINAL}: remove one or make them agree")
        used_key, used = f"{key}.{_ORIGINAL}", nested
    if hf.get(_ORIGINAL) is not None and hf[_ORIGINAL] != used:
        raise ConfigError(f"config.json {_ORIGINAL}={shown_value(hf[_ORIGINAL])} and "
                          f"{used_key}={shown_value(used)} disagree; transformers' {model_type} "
                          f"reads {used_key} and ignores the top-level {_ORIGINAL}: remove one "
                          "or make them agree")
    return used


def _hf_float(key: str, value: Any) -> float:
    """A config.json number as a float; a string, list or out-of-range value fails naming key."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"config.json {key}={shown_value(value)} is not allowed; expected a "
                          "number")
    try:
        return float(value)
    except OverflowError:
        raise ConfigError(f"config.json {key}={shown_value(value)} is not allowed; expected a "
                          "finite number") from None


def from_hf(hf: dict[str, Any]) -> ModelConfig:
    """`ModelConfig` from a Hugging Face config.json dictionary, read as transformers 5 reads
    it for that model_type. Raises ConfigError naming the config.json key (and the field it
    sets) for a missing, mistyped or out-of-range value or an unsupported model_type, and naming
    both keys where two disagree and transformers would silently take one.
    """
    if not isinstance(hf, dict):
        raise ConfigError(f"Hugging Face config must be a JSON object, got {type(hf).__name__}")
    model_type = hf.get("model_type")
    read = _READERS.get(model_type) if isinstance(model_type, str) else None
    if read is None:
        raise ConfigError(f"unsupported Hugging Face model_type {shown_value(model_type)}; "
                          f"allowed: {sorted(_READERS)}")
    return read(hf, str(hf.get("_name_or_path", "") or ""))


def _from_hf_llama_family(hf: dict[str, Any], name: str) -> ModelConfig:
    """Llama, Mistral, Qwen2, Qwen3, Gemma and Gemma-2."""
    model_type = hf["model_type"]
    act = _hf_act(hf, model_type)
    theta, scaling, rope_keys = _hf_rope(hf, model_type)
    head_dim, kv, size_keys = _hf_sizes(hf, model_type)
    keys = {**_HF_KEYS, **rope_keys, **size_keys}
    bias = _hf_bool(hf, "attention_bias", False)
    common = dict(
        vocab_size=_need(hf, "vocab_size"), d_model=_need(hf, "hidden_size"),
        n_layers=_need(hf, "num_hidden_layers"), n_heads=_need(hf, "num_attention_heads"),
        n_kv_heads=kv, head_dim=head_dim, d_ff=_need(hf, "intermediate_size"),
        ffn=_GATED_BY_ACT[act], ffn_bias=_hf_bool(hf, "mlp_bias", False), norm="rmsnorm",
        norm_eps=_hf_float("rms_norm_eps", hf.get("rms_norm_eps", 1e-6)),
        max_seq_len=_need(hf, "max_position_embeddings"), position="rope", rope_theta=theta,
        rope_scaling=scaling, qk_norm=model_type == "qwen3",
        tie_embeddings=_hf_bool(hf, "tie_word_embeddings", model_type in ("gemma", "gemma2")),
        name=name)
    if model_type == "qwen2":  # q, k, v carry biases, o does not
        common.update(attn_bias=True, attn_out_bias=False)
    else:
        common.update(attn_bias=bias, attn_out_bias=bias)
    if model_type in ("mistral", "qwen2", "qwen3", "gemma2"):
        common.update(_hf_attention_layout(hf, model_type, common["n_layers"]))
    if model_type == "gemma":  # Gemma 1: pre-norm, (1 + γ) gains, scaled embeddings
        common.update(norm_unit_offset=True, norm_cast="gemma", embed_scale=True)
    if model_type == "gemma2":
        scalar = hf.get("query_pre_attn_scalar")
        if scalar is not None and not _hf_float("query_pre_attn_scalar", scalar) > 0:
            raise ConfigError(f"config.json query_pre_attn_scalar={shown_value(scalar)} is not "
                              "allowed; expected a number > 0 (the softmax scale is its "
                              "inverse square root)")
        common.update(placement="sandwich", norm_unit_offset=True, norm_cast="gemma",
                      embed_scale=True,
                      attn_scale=None if scalar is None else float(scalar) ** -0.5,
                      attn_logit_softcap=hf.get("attn_logit_softcapping"),
                      final_logit_softcap=hf.get("final_logit_softcapping"))
    with _named_by(keys):
        return ModelConfig(**common)


# The window each family's config class gives when config.json leaves `sliding_window` out (an
# explicit null means no window).
_HF_DEFAULT_WINDOW = 4096
_HF_DEFAULT_MAX_WINDOW_LAYERS = 28  # Qwen2Config / Qwen3Config
# Old layer-type names transformers still reads (configuration_utils._LEGACY_LAYER_TYPE_REMAP).
_HF_LEGACY_LAYER_TYPES = {"attention": "full_attention"}


def _hf_attention_layout(hf: dict[str, Any], model_type: str, n_layers: Any) -> dict[str, Any]:
    """`sliding_window` and `layer_types` as transformers 5 reads them:

    - mistral: the window (4096 when absent) on every layer; other `layer_types` fail;
    - qwen2, qwen3: only under `use_sliding_window`, on the layers `layer_types` marks
      sliding, else on layers i >= `max_window_layers` (default 28);
    - gemma2: on the layers `layer_types` marks sliding, else on even layers.

    A window no layer uses is dropped; one every layer uses needs no `layer_types`.
    """
    window = hf.get("sliding_window", _HF_DEFAULT_WINDOW)
    if window is not None:
        with _named_by({"sliding_window": "sliding_window"}):
            positive_int("sliding_window", window)
    if model_type in ("qwen2", "qwen3") and not _hf_bool(hf, "use_sliding_window", False):
        window = None
    with _named_by({"n_layers": "num_hidden_layers"}):
        positive_int("n_layers", n_layers)
    derived = None
    if model_type in ("qwen2", "qwen3"):
        first = hf.get("max_window_layers")
        if first is not None and not (isinstance(first, int) and not isinstance(first, bool)
                                      and first >= 0):
            raise ConfigError(f"config.json max_window_layers={shown_value(first)} is not "
                              "allowed; expected an integer >= 0 (the first windowed layer)")
        start = _HF_DEFAULT_MAX_WINDOW_LAYERS if first is None else first
        derived = ["sliding_attention" if window is not None and i >= start else
                   "full_attention" for i in range(n_layers)]
    elif model_type == "gemma2":
        derived = ["sliding_attention" if (i + 1) % 2 else "full_attention"
                   for i in range(n_layers)]
    given = hf.get("layer_types")
    if given is not None:
        names = [_HF_LEGACY_LAYER_TYPES.get(t, t) if isinstance(t, str) else t
                 for t in given] if isinstance(given, list) else []
        if len(names) != n_layers or any(t not in LAYER_TYPES for t in names):
            raise ConfigError(f"config.json layer_types={shown_value(given)} is not allowed; "
                              f"expected one of {list(LAYER_TYPES)} per layer, {n_layers} in "
                              "all")
        given = names
    if model_type == "mistral":
        every = ["sliding_attention" if window is not None else "full_attention"] * n_layers
        if given is not None and given != every:
            raise ConfigError(f"config.json layer_types={shown_value(given)} is not read by "
                              "transformers' mistral, which windows every layer when "
                              "sliding_window is set; model_type ministral reads per-layer "
                              "windows")
        types = every
    else:
        # Where both are given transformers reads layer_types alone; max_window_layers then is
        # only the class default that save_pretrained writes beside it, not a second opinion.
        types = derived if given is None else given
    if window is None and "sliding_attention" in types:
        # transformers builds no sliding mask for such a layer and fails at run time
        off = "sliding_window=None" if model_type == "gemma2" else "use_sliding_window is false"
        raise ConfigError(f"config.json layer_types marks sliding layers while {off}; "
                          "transformers cannot run it (set a window, or mark every layer "
                          "full_attention)")
    if window is None or "sliding_attention" not in types:
        return {"sliding_window": None, "layer_types": None}
    if all(t == "sliding_attention" for t in types):
        return {"sliding_window": window, "layer_types": None}
    return {"sliding_window": window, "layer_types": tuple(types)}


def _from_hf_gpt2(hf: dict[str, Any], name: str) -> ModelConfig:
    """GPT-2: a plain GELU (tanh) FFN, LayerNorm, learned positions, tied embeddings."""
    act = _HF_ACTS.get(_hf_str(hf, "activation_function", "gelu_new"), "gelu_tanh")
    # GPT2Config.attribute_map: hidden_size, num_hidden_layers, ... are other names of n_embd,
    # n_layer, ...; n_ctx is a leftover it no longer reads (n_positions defaults to 1024).
    (d_key, d), (layers_key, layers), (heads_key, heads) = (
        _hf_alias(hf, key, alias, "gpt2") for key, alias in (
            ("n_embd", "hidden_size"), ("n_layer", "num_hidden_layers"),
            ("n_head", "num_attention_heads")))
    pos_key, positions = _hf_alias(hf, "n_positions", "max_position_embeddings", "gpt2",
                                   required=False)
    n_ctx = hf.get("n_ctx")
    if n_ctx is not None:
        used = 1024 if positions is None else positions
        if n_ctx != used:
            said = f"{pos_key}={shown_value(used)}" if positions is not None else \
                "n_positions (absent: 1024)"
            raise ConfigError(f"config.json n_ctx={shown_value(n_ctx)} and {said} disagree; "
                              "transformers' gpt2 reads n_positions and ignores n_ctx: remove "
                              "one or make them agree")
        if positions is None:  # n_ctx alone, equal to n_positions' default
            pos_key, positions = "n_ctx", used
    if positions is None:
        _need(hf, "n_positions", "max_position_embeddings")
    inner = hf.get("n_inner")  # transformers: None means 4·n_embd
    keys = {"vocab_size": "vocab_size", "d_model": d_key, "n_layers": layers_key,
            "n_heads": heads_key, "d_ff": "n_inner" if inner is not None else d_key,
            "norm_eps": "layer_norm_epsilon", "max_seq_len": pos_key}
    with _named_by(keys):
        if inner is None:
            positive_int("d_model", d)  # before 4·d would repeat a string or a list
        return ModelConfig(
            vocab_size=_need(hf, "vocab_size"), d_model=d, n_layers=layers,
            n_heads=heads, d_ff=4 * d if inner is None else inner, ffn=act,
            ffn_bias=True, attn_bias=True, attn_out_bias=True, norm="layernorm",
            norm_eps=_hf_float("layer_norm_epsilon", hf.get("layer_norm_epsilon", 1e-5)),
            position="learned", max_seq_len=positions, tie_embeddings=True, name=name)


def _from_hf_bert(hf: dict[str, Any], name: str) -> ModelConfig:
    """BERT (budget only): post-norm LayerNorm encoder, token-type embeddings, a pooler."""
    act = _HF_ACTS.get(_hf_str(hf, "hidden_act", "gelu"), "gelu")
    keys = {**_HF_KEYS, "norm_eps": "layer_norm_eps", "type_vocab_size": "type_vocab_size"}
    with _named_by(keys):
        return ModelConfig(
            vocab_size=_need(hf, "vocab_size"), d_model=_need(hf, "hidden_size"),
            n_layers=_need(hf, "num_hidden_layers"), n_heads=_need(hf, "num_attention_heads"),
            d_ff=_need(hf, "intermediate_size"), ffn=act, ffn_bias=True, attn_bias=True,
            attn_out_bias=True, norm="layernorm",
            norm_eps=_hf_float("layer_norm_eps", hf.get("layer_norm_eps", 1e-12)),
            placement="post", final_norm=False, embed_norm=True, position="learned",
            max_seq_len=_need(hf, "max_position_embeddings"),
            type_vocab_size=hf.get("type_vocab_size", 2), pooler=True,
            tie_embeddings=True, causal=False, name=name)


def _from_hf_mpt(hf: dict[str, Any], name: str) -> ModelConfig:
    """MosaicML MPT (mosaicml/mpt-7b): LayerNorm without bias when `no_bias`, a plain GELU FFN
    of width expansion_ratio·d_model, ALiBi, tied embeddings."""
    attn = hf.get("attn_config") or {}
    if not isinstance(attn, dict):
        raise ConfigError(f"config.json attn_config={shown_value(attn)} is not allowed; expected "
                          "an object")
    if _hf_bool(attn, "rope", False, "attn_config."):
        raise ConfigError("config.json attn_config.rope=true is not supported for mpt; expected "
                          "ALiBi or learned positions")
    # MptConfig.attribute_map: hidden_size, num_attention_heads, num_hidden_layers are other
    # names of d_model, n_heads, n_layers.
    (d_key, d), (heads_key, heads), (layers_key, layers) = (
        _hf_alias(hf, key, alias, "mpt") for key, alias in (
            ("d_model", "hidden_size"), ("n_heads", "num_attention_heads"),
            ("n_layers", "num_hidden_layers")))
    keys = {"vocab_size": "vocab_size", "d_model": d_key, "n_layers": layers_key,
            "n_heads": heads_key, "n_kv_heads": "attn_config.kv_n_heads",
            "d_ff": "expansion_ratio", "norm_eps": "layer_norm_epsilon",
            "max_seq_len": "max_seq_len"}
    kind = _hf_str(attn, "attn_type", "multihead_attention", "attn_config.")
    kv = {"multiquery_attention": 1, "grouped_query_attention": attn.get("kv_n_heads")}.get(
        kind, heads)
    ratio = _need(hf, "expansion_ratio")
    with _named_by(keys):
        positive_int("d_model", d)  # before d·ratio, which would repeat a string or a list
    if not (real(ratio) and ratio > 0 and float(d * ratio).is_integer()):
        raise ConfigError(f"config.json expansion_ratio={shown_value(ratio)} is not allowed; "
                          "expected a number > 0 giving an integer d_model·expansion_ratio")
    bias = not _hf_bool(hf, "no_bias", False)
    # llm-foundry turns learned positions off when ALiBi is on (MPTConfig._validate_config).
    position = "alibi" if _hf_bool(attn, "alibi", False, "attn_config.") else (
        "learned" if _hf_bool(hf, "learned_pos_emb", True) else "none")
    with _named_by(keys):
        return ModelConfig(
            vocab_size=_need(hf, "vocab_size"), d_model=d, n_layers=layers,
            n_heads=heads, n_kv_heads=kv, d_ff=int(d * ratio), ffn="gelu", ffn_bias=bias,
            attn_bias=bias, attn_out_bias=bias, norm="layernorm", norm_bias=bias,
            norm_eps=_hf_float("layer_norm_epsilon", hf.get("layer_norm_epsilon", 1e-5)),
            position=position, max_seq_len=_need(hf, "max_seq_len"), tie_embeddings=True,
            name=name)


def _from_hf_chatglm(hf: dict[str, Any], name: str) -> ModelConfig:
    """THUDM ChatGLM2/3 (`modeling_chatglm.py`): multi-query groups, q/k/v bias only, RMSNorm,
    SwiGLU, RoPE on half of each head in adjacent pairs, untied `output_layer`."""
    keys = {"vocab_size": _key(hf, "padded_vocab_size", "vocab_size"), "d_model": "hidden_size",
            "n_layers": "num_layers", "n_heads": "num_attention_heads",
            "n_kv_heads": "multi_query_group_num", "head_dim": "kv_channels",
            "d_ff": "ffn_hidden_size", "norm_eps": "layernorm_epsilon", "rope_theta": "rope_ratio",
            "max_seq_len": "seq_length"}
    heads = _need(hf, "num_attention_heads")
    mqa = _hf_bool(hf, "multi_query_attention", False)
    kv = _need(hf, "multi_query_group_num") if mqa else heads
    linear_bias = _hf_bool(hf, "add_bias_linear", False)
    theta = 10000.0 * _hf_float("rope_ratio", hf.get("rope_ratio", 1))
    with _named_by(keys):
        return ModelConfig(
            vocab_size=_need(hf, "padded_vocab_size", "vocab_size"),
            d_model=_need(hf, "hidden_size"), n_layers=_need(hf, "num_layers"), n_heads=heads,
            n_kv_heads=kv, head_dim=hf.get("kv_channels"), d_ff=_need(hf, "ffn_hidden_size"),
            ffn="swiglu", ffn_bias=linear_bias,
            attn_bias=linear_bias or _hf_bool(hf, "add_qkv_bias", False),
            attn_out_bias=linear_bias,
            norm="rmsnorm" if _hf_bool(hf, "rmsnorm", True) else "layernorm",
            norm_eps=_hf_float("layernorm_epsilon", hf.get("layernorm_epsilon", 1e-5)),
            final_norm=_hf_bool(hf, "post_layer_norm", True),
            # RotaryEmbedding(kv_channels // 2): half of each head rotates, pairs (2i, 2i+1).
            position="rope", partial_rotary_factor=0.5, rope_layout="interleaved",
            rope_theta=theta, max_seq_len=_need(hf, "seq_length"),
            tie_embeddings=_hf_bool(hf, "tie_word_embeddings", False), name=name)


def _every(key: str, value: Any, indices: list[int], n_layers: int, expected: str) -> int:
    """k such that `indices` are exactly layers k-1, 2k-1, ... of n_layers; else raises naming
    `key` and its `value` as written."""
    step = indices[0] + 1 if indices else 0
    if step > 0 and indices == list(range(step - 1, n_layers, step)):
        return step
    raise ConfigError(f"config.json {key}={shown_value(value)} is not allowed; expected "
                      f"{expected} every k-th layer (k-1, 2k-1, ...) of "
                      f"num_hidden_layers={n_layers}")


def _from_hf_llama4(hf: dict[str, Any], name: str) -> ModelConfig:
    """Llama 4, the text model only: MoE FFNs (routed + one shared expert + a router) every
    `interleave_moe_layer_step` layers, dense SwiGLU of width intermediate_size_mlp elsewhere,
    NoPE every `no_rope_layer_interval`-th layer. Its q/k norm is weightless (not `qk_norm`)."""
    if hf.get("model_type") == "llama4":
        hf = _need(hf, "text_config")
        if not isinstance(hf, dict):
            raise ConfigError(f"config.json text_config={shown_value(hf)} is not allowed; "
                              "expected an object")
    theta, scaling, rope_keys = _hf_rope(hf, "llama4_text")
    head_dim, kv, size_keys = _hf_sizes(hf, "llama4_text")
    keys = {**_HF_KEYS, **rope_keys, **size_keys, "d_ff": "intermediate_size_mlp",
            "moe_d_ff": "intermediate_size", "n_experts": "num_local_experts",
            "experts_per_token": "num_experts_per_tok",
            "moe_every": _key(hf, "moe_layers", "interleave_moe_layer_step"),
            "nope_every": _key(hf, "no_rope_layers", "no_rope_layer_interval")}
    layers = _need(hf, "num_hidden_layers")
    with _named_by(keys):
        positive_int("n_layers", layers)  # the layer lists below are checked against it
    moe_layers = hf.get("moe_layers")
    if moe_layers is None:
        moe_every = hf.get("interleave_moe_layer_step", 1)
    elif isinstance(moe_layers, list) and all(isinstance(i, int) and not isinstance(i, bool)
                                              for i in moe_layers):
        moe_every = _every("moe_layers", moe_layers, moe_layers, layers, "the index of")
    else:
        raise ConfigError(f"config.json moe_layers={shown_value(moe_layers)} is not allowed; "
                          "expected a list of layer indices, every k-th layer (k-1, 2k-1, ...)")
    flags = hf.get("no_rope_layers")  # 1 = RoPE, 0 = NoPE, one entry per layer
    if flags is None or flags == []:
        nope = hf.get("no_rope_layer_interval", 4)
    elif isinstance(flags, list) and len(flags) == layers and all(
            isinstance(f, int) and f in (0, 1) for f in flags):
        nope_layers = [i for i, f in enumerate(flags) if not f]
        nope = _every("no_rope_layers", flags, nope_layers, layers, "0 (NoPE) at") \
            if nope_layers else None
    else:
        raise ConfigError(f"config.json no_rope_layers={shown_value(flags)} is not allowed; "
                          f"expected one 1 (RoPE) or 0 (NoPE) per layer, {layers} in all")
    bias = _hf_bool(hf, "attention_bias", False)
    with _named_by(keys):
        return ModelConfig(
            vocab_size=_need(hf, "vocab_size"), d_model=_need(hf, "hidden_size"),
            n_layers=layers, n_heads=_need(hf, "num_attention_heads"),
            n_kv_heads=kv, head_dim=head_dim,
            d_ff=_need(hf, "intermediate_size_mlp"), ffn="swiglu", attn_bias=bias,
            attn_out_bias=bias, norm="rmsnorm",
            norm_eps=_hf_float("rms_norm_eps", hf.get("rms_norm_eps", 1e-5)), position="rope",
            rope_theta=theta, rope_scaling=scaling,
            max_seq_len=_need(hf, "max_position_embeddings"),
            tie_embeddings=_hf_bool(hf, "tie_word_embeddings", False),
            n_experts=_need(hf, "num_local_experts"),
            experts_per_token=hf.get("num_experts_per_tok", 1), n_shared_experts=1,
            moe_d_ff=_need(hf, "intermediate_size"), moe_every=moe_every, nope_every=nope,
            name=name)


# model_type -> the reader of its config.json.
_READERS = {**dict.fromkeys((*HF_LLAMA_FAMILY, "gemma", "gemma2"), _from_hf_llama_family),
            "gpt2": _from_hf_gpt2, "bert": _from_hf_bert, "mpt": _from_hf_mpt,
            "chatglm": _from_hf_chatglm, "llama4": _from_hf_llama4,
            "llama4_text": _from_hf_llama4}


def to_hf(cfg: ModelConfig, model_type: str = "llama") -> dict[str, Any]:
    """A Hugging Face config.json dictionary for a Llama-family `model_type`."""
    if model_type not in HF_LLAMA_FAMILY:
        raise ConfigError(f"model_type={model_type!r} is not exportable; allowed: "
                         f"{list(HF_LLAMA_FAMILY)}")
    problems = []
    if not cfg.gated or cfg.activation not in _HF_ACT_OF:
        problems.append(f"ffn={cfg.ffn!r} (Llama-family MLPs are gated: swiglu, reglu, geglu)")
    if cfg.norm != "rmsnorm" or cfg.norm_unit_offset or cfg.norm_cast != "llama":
        problems.append("norm (Llama-family uses RMSNorm with a plain gain, llama cast)")
    if cfg.placement != "pre":
        problems.append(f"placement={cfg.placement!r} (Llama-family is pre-norm)")
    if not cfg.final_norm:
        problems.append("final_norm=False (Llama-family ends with a norm)")
    if cfg.residual_scale != 1.0:
        problems.append(f"residual_scale={cfg.residual_scale} (Llama-family adds the residual "
                        "unscaled: 1.0)")
    if cfg.position != "rope" or cfg.rope_layout != "half_split":
        problems.append(f"position={cfg.position!r}/{cfg.rope_layout} (needs half_split RoPE)")
    # What from_hf refuses, because transformers would read it differently:
    if cfg.partial_rotary_factor != 1.0:
        problems.append(f"partial_rotary_factor={cfg.partial_rotary_factor} (transformers' "
                        f"{model_type} rotates the whole head)")
    if cfg.rope_type not in HF_ROPE_TYPES:
        problems.append(f"rope_scaling {cfg.rope_type!r} (transformers has no such rope_type; "
                        "'dynamic' is its length-dependent form)")
    original = (cfg.rope_scaling or {}).get(_ORIGINAL, cfg.max_seq_len)
    if cfg.rope_type == "dynamic" and original != cfg.max_seq_len:
        problems.append(f"dynamic rope_scaling from {_ORIGINAL}={original} (transformers' "
                        f"dynamic scaling starts at max_position_embeddings={cfg.max_seq_len})")
    if model_type in HF_HIDDEN_DIVISIBLE and cfg.d_model % cfg.n_heads:
        problems.append(f"d_model={cfg.d_model} with n_heads={cfg.n_heads} (transformers' "
                        f"{model_type} needs hidden_size divisible by num_attention_heads)")
    if cfg.qk_norm != (model_type == "qwen3"):
        problems.append(f"qk_norm={cfg.qk_norm} (only qwen3 has it)")
    if model_type == "qwen2" and not (cfg.attn_bias and not cfg.attn_out_bias):
        problems.append("attention biases (qwen2 has q/k/v bias and no o bias)")
    if model_type != "qwen2" and cfg.attn_bias != cfg.attn_out_bias:
        problems.append(f"attention biases ({model_type} biases all of q, k, v, o or none)")
    if cfg.embed_scale or cfg.attn_scale is not None or cfg.attn_logit_softcap \
            or cfg.final_logit_softcap or cfg.embed_norm or not cfg.causal:
        problems.append("Gemma/BERT-only options")
    if problems:
        raise ConfigError(f"cannot export to {model_type}: " + "; ".join(problems))
    rope = {"rope_type": cfg.rope_type, "rope_theta": cfg.rope_theta, **(cfg.rope_scaling or {})}
    out: dict[str, Any] = {
        "architectures": [f"{model_type.capitalize()}ForCausalLM"],
        "model_type": model_type,
        "vocab_size": cfg.vocab_size,
        "hidden_size": cfg.d_model,
        "intermediate_size": cfg.d_ff,
        "num_hidden_layers": cfg.n_layers,
        "num_attention_heads": cfg.n_heads,
        "num_key_value_heads": cfg.n_kv_heads,
        "head_dim": cfg.head_dim,
        "hidden_act": _HF_ACT_OF[cfg.activation],
        "max_position_embeddings": cfg.max_seq_len,
        "rms_norm_eps": cfg.norm_eps,
        "rope_theta": cfg.rope_theta,
        "rope_scaling": cfg.rope_scaling,
        "rope_parameters": rope,
        "tie_word_embeddings": cfg.tie_embeddings,
        "torch_dtype": "float32",
    }
    if model_type in ("llama", "qwen3"):
        out["attention_bias"] = cfg.attn_bias
    if model_type == "llama":
        out["mlp_bias"] = cfg.ffn_bias
    elif cfg.ffn_bias:
        raise ConfigError(f"cannot export to {model_type}: ffn_bias=True (only llama has mlp_bias)")
    out.update(_hf_layout_keys(cfg, model_type))
    return out


def _hf_layout_keys(cfg: ModelConfig, model_type: str) -> dict[str, Any]:
    """The keys that make transformers window exactly the layers `cfg` windows."""
    windowed = [cfg.attention_window(i) is not None for i in range(cfg.n_layers)]
    window = cfg.sliding_window if any(windowed) else None
    if model_type == "llama":
        if window is not None:
            raise ConfigError("cannot export to llama: sliding_window is set (llama has none)")
        return {}
    if model_type == "mistral":
        if window is not None and not all(windowed):
            raise ConfigError(f"cannot export to mistral: only {sum(windowed)} of "
                              f"{cfg.n_layers} layers are windowed (mistral windows every "
                              "layer; qwen2 and qwen3 window some)")
        return {"sliding_window": window}  # null, not absent: absent means 4096
    # qwen2, qwen3: layer_types, and max_window_layers where a suffix is windowed (older readers).
    types = ["sliding_attention" if w else "full_attention" for w in windowed]
    out: dict[str, Any] = {"use_sliding_window": window is not None,
                           "sliding_window": window, "layer_types": types}
    first = windowed.index(True) if window is not None else cfg.n_layers
    if all(windowed[first:]):
        out["max_window_layers"] = first
    return out
