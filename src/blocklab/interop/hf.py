"""Hugging Face checkpoints in and out: config.json + safetensors <-> `DecoderLM`.

Llama-family checkpoints (llama, mistral, qwen2, qwen3) from local files only; nothing is
downloaded. Tensor names map one to one (`_GLOBAL_TENSORS`, `_LAYER_TENSORS`); a tied
checkpoint stores no lm_head.

`load_hf(..., layout="interleaved")` reads q/k rows in Meta's order and permutes them to
Hugging Face's half-split order, or keeps them with `rope_layout="interleaved"`: the same
function either way.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import Tensor

from blocklab.checks import shown_value
from blocklab.config import ModelConfig
from blocklab.errors import CheckpointError, ConfigError, InputError
from blocklab.interop.hf_config import HF_LLAMA_FAMILY, from_hf, to_hf
from blocklab.jsonio import atomic_path, read_json, write_atomic
from blocklab.nn.model import DecoderLM
from blocklab.nn.position import LAYOUTS, permute_rotary_rows

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
INDEX_NAME = "model.safetensors.index.json"

# Per-layer tensors: Hugging Face name after "model.layers.{i}." -> ours after "layers.{i}.".
_LAYER_TENSORS = {
    **{f"self_attn.{p}_proj.{kind}": f"attention.{p}_proj.{kind}"
       for p in "qkvo" for kind in ("weight", "bias")},
    **{f"self_attn.{p}_norm.weight": f"attention.{p}_norm.weight" for p in "qk"},
    **{f"mlp.{p}_proj.{kind}": f"ffn.{p}_proj.{kind}"
       for p in ("gate", "up", "down") for kind in ("weight", "bias")},
    "input_layernorm.weight": "attn_norm.weight",
    # Despite its name this norm sits in front of the MLP, not behind the attention: Llama-family
    # layers are pre-norm throughout, so it is our ffn_norm (claim C11).
    "post_attention_layernorm.weight": "ffn_norm.weight",
}
_GLOBAL_TENSORS = {
    "model.embed_tokens.weight": "embed_tokens.weight",
    "model.norm.weight": "norm.weight",
    "lm_head.weight": "lm_head.weight",
}
_HF_LAYER = re.compile(r"model\.layers\.(\d+)\.(.+)")
_OUR_LAYER = re.compile(r"layers\.(\d+)\.(.+)")
# Buffers some older checkpoints saved; they are recomputed from the config.
_IGNORED = re.compile(r".*rotary_emb\.inv_freq")


def _rename(name: str, whole: dict[str, str], layer: re.Pattern, prefix: str,
            parts: dict[str, str]) -> str | None:
    if name in whole:
        return whole[name]
    match = layer.fullmatch(name)
    if match is None or match.group(2) not in parts:
        return None
    return f"{prefix}{match.group(1)}.{parts[match.group(2)]}"


def hf_to_blocklab_name(name: str) -> str | None:
    """Our state-dict key for a Hugging Face tensor name; None when it has no counterpart."""
    return _rename(name, _GLOBAL_TENSORS, _HF_LAYER, "layers.", _LAYER_TENSORS)


def blocklab_to_hf_name(name: str) -> str | None:
    """The Hugging Face tensor name for one of our state-dict keys; None when it has none."""
    return _rename(name, {v: k for k, v in _GLOBAL_TENSORS.items()}, _OUR_LAYER,
                   "model.layers.", {v: k for k, v in _LAYER_TENSORS.items()})


def _load_safetensors(file: Path) -> dict[str, Tensor]:
    try:
        return load_file(file)
    except (SafetensorError, OSError, ValueError) as err:
        message = " ".join(str(err).split())
        raise CheckpointError(f"{file} is not a readable safetensors file: {message}") from None


def _weight_map(index: Path) -> dict[str, str]:
    """The tensor name -> shard file map of a sharded checkpoint's index."""
    data = read_json(index, error=CheckpointError)
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not (isinstance(weight_map, dict) and weight_map
            and all(isinstance(v, str) for v in weight_map.values())):
        raise CheckpointError(f"{index} has no 'weight_map' object of tensor name -> shard file")
    return weight_map


def _read_tensors(path: Path) -> dict[str, Tensor]:
    single, index = path / WEIGHTS_NAME, path / INDEX_NAME
    if single.is_file() and index.is_file():  # a reader may take either: refused, not guessed
        raise CheckpointError(f"checkpoint {path} holds both {WEIGHTS_NAME} and {INDEX_NAME}; "
                              "expected one checkpoint: remove the one that is not current")
    if single.is_file():
        return _load_safetensors(single)
    if not index.is_file():
        raise CheckpointError(f"no {WEIGHTS_NAME} or {INDEX_NAME} in {path}")
    weight_map = _weight_map(index)
    root = path.resolve()
    shards: dict[str, dict[str, Tensor]] = {}
    for shard in sorted(set(weight_map.values())):
        file = (path / shard).resolve()
        if not file.is_relative_to(root):  # a shard is a file of this checkpoint, no other
            raise CheckpointError(f"{index} names shard {shard!r}, outside the checkpoint "
                                  f"folder {path}")
        if not file.is_file():
            raise CheckpointError(f"{index} names shard {shard!r}, which is not in {path}")
        shards[shard] = _load_safetensors(file)
    # The index and the shards must agree tensor by tensor: otherwise which copy a reader gets
    # depends on whether it reads by the index or by the files.
    held: dict[str, list[str]] = {}
    for shard, part in shards.items():
        for name in part:
            held.setdefault(name, []).append(shard)
    for name, where in sorted(held.items()):
        if len(where) > 1:
            raise CheckpointError(f"{index}: tensor {name} is stored in more than one shard "
                                  f"({', '.join(where)}); expected exactly one")
        if weight_map.get(name) != where[0]:
            named = ("does not name it" if name not in weight_map
                     else f"names shard {weight_map[name]} for it")
            raise CheckpointError(f"{index}: tensor {name} is in shard {where[0]}, but the "
                                  f"index {named}")
    absent = [f"{name} (in {shard})" for name, shard in sorted(weight_map.items())
              if name not in held]
    if absent:
        raise CheckpointError(f"{index} names tensors that their shards do not hold: "
                              f"{_listed(absent)}")
    return {name: t for part in shards.values() for name, t in part.items()}


def _widened(tensor: Tensor) -> Tensor:
    """float8 (no isfinite or comparison kernels on CPU) as float32, which holds it exactly."""
    return tensor.float() if tensor.dtype.itemsize == 1 else tensor


def _check_tied_head(tensors: dict[str, Tensor], config_path: Path) -> None:
    """Drop a stored lm_head that equals the embedding; refuse one that does not, rather than
    silently choose (transformers would overwrite it with the embedding)."""
    head, embed = tensors.get("lm_head.weight"), tensors.get("embed_tokens.weight")
    if head is None or embed is None:
        return
    if head.shape != embed.shape:
        difference = f"shape {tuple(head.shape)} against {tuple(embed.shape)}"
    else:
        common = torch.promote_types(head.dtype, embed.dtype)
        head, embed = _widened(head.to(common)), _widened(embed.to(common))
        if torch.allclose(head, embed, rtol=0.0, atol=0.0, equal_nan=True):
            del tensors["lm_head.weight"]
            return
        difference = f"max abs difference {(head - embed).abs().max().item():.3g}"
    raise CheckpointError(f"{config_path} says tie_word_embeddings: true, but the checkpoint's "
                          f"lm_head.weight differs from model.embed_tokens.weight ({difference}); "
                          "set tie_word_embeddings to false to load the stored head untied")


def _one_dtype(tensors: dict[str, Tensor], path: Path) -> torch.dtype:
    """The dtype every weight shares; a mix is refused (the cast is load_hf's `dtype`)."""
    names: dict[torch.dtype, list[str]] = {}
    for name, tensor in sorted(tensors.items()):
        names.setdefault(tensor.dtype, []).append(blocklab_to_hf_name(name) or name)
    if len(names) > 1:
        mix = [f"{str(dtype).removeprefix('torch.')} ({_listed(n, 3, ', ')})"
               for dtype, n in names.items()]
        raise CheckpointError(f"checkpoint {path} mixes dtypes: {'; '.join(mix)}; pass dtype= "
                              "to load_hf (e.g. torch.float32) to cast every tensor to one")
    dtype = next(iter(names))
    if dtype.itemsize == 1:
        raise CheckpointError(f"checkpoint {path} is stored in {str(dtype).removeprefix('torch.')}"
                              ", which blocklab.nn does not compute in; pass dtype= to load_hf "
                              "(torch.bfloat16 or torch.float32) to cast it")
    return dtype


def _warn_non_finite(tensors: dict[str, Tensor], path: Path) -> None:
    bad = []
    for name, tensor in sorted(tensors.items()):
        tensor = _widened(tensor)
        if not torch.isfinite(tensor).all():
            nan = int(tensor.isnan().sum())
            bad.append(f"{blocklab_to_hf_name(name) or name}: {nan} NaN, "
                       f"{int(tensor.isinf().sum())} inf")
    if bad:
        warnings.warn(f"checkpoint {path} has non-finite weights: {_listed(bad)}",
                      RuntimeWarning, stacklevel=3)


def _relayout_qk(tensors: dict[str, Tensor], cfg: ModelConfig, to: str) -> None:
    """Reorder in place the rows of every q/k projection weight and bias and QK-norm gain into
    the RoPE layout `to` (the gain is per channel of head_dim, so it moves with the channels)."""
    for name, tensor in list(tensors.items()):
        match = re.fullmatch(r"layers\.\d+\.attention\.(q|k)_(proj|norm)\.(weight|bias)", name)
        if match is None:
            continue
        which, kind, _ = match.groups()
        heads = 1 if kind == "norm" else cfg.n_heads if which == "q" else cfg.n_kv_heads
        tensors[name] = permute_rotary_rows(tensor, heads, cfg.head_dim, to, cfg.rotary_dim)


def _unpacked(tensors: dict[str, Tensor], cfg: ModelConfig) -> dict[str, Tensor]:
    """Split packed `qkv_proj` and `gate_up_proj` tensors into Hugging Face's separate ones."""
    q_rows, kv_rows = cfg.n_heads * cfg.head_dim, cfg.n_kv_heads * cfg.head_dim
    splits = {"qkv_proj": (("q_proj", "k_proj", "v_proj"), (q_rows, kv_rows, kv_rows)),
              "gate_up_proj": (("gate_proj", "up_proj"), (cfg.d_ff, cfg.d_ff))}
    out = {}
    for name, tensor in tensors.items():
        packed = next((f for f in splits if f".{f}." in name), None)
        if packed is None:
            out[name] = tensor
            continue
        parts, rows = splits[packed]
        for part, piece in zip(parts, tensor.split(rows, dim=0), strict=True):
            out[name.replace(packed, part)] = piece
    return out


def load_hf(path: str | os.PathLike, dtype: torch.dtype | None = None,
            layout: str = "half_split", rope_layout: str = "half_split") -> DecoderLM:
    """A `DecoderLM` from a local Hugging Face checkpoint directory.

    `dtype` casts every weight (None: the checkpoint's one dtype); `layout` is the RoPE layout
    of the checkpoint's q/k rows, `rope_layout` the returned model's. Everything is checked
    before the model is built: a one-line CheckpointError naming the file and tensors (a
    ConfigError for the config); NaN or inf weights only warn.
    """
    for name, value in (("layout", layout), ("rope_layout", rope_layout)):
        if value not in LAYOUTS:
            raise InputError(f"load_hf: {name}={value!r} is not allowed; expected one of "
                             f"{list(LAYOUTS)}")
    if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise InputError(f"load_hf: dtype={dtype!r} is not allowed; expected None or a floating "
                         "torch.dtype such as torch.float32 or torch.bfloat16")
    path = Path(path)
    config_path = path / CONFIG_NAME
    if not config_path.is_file():
        raise CheckpointError(f"no {CONFIG_NAME} in {path}")
    hf_config = read_json(config_path, error=CheckpointError)
    if not isinstance(hf_config, dict):
        raise CheckpointError(f"load_hf: {config_path} holds a JSON {type(hf_config).__name__}; "
                              "expected an object")
    if hf_config.get("model_type") not in HF_LLAMA_FAMILY:
        raise CheckpointError(f"load_hf: {config_path} has model_type="
                              f"{shown_value(hf_config.get('model_type'))}, which is not "
                              f"supported; expected one of {list(HF_LLAMA_FAMILY)}")
    try:
        cfg = from_hf(hf_config).replace(rope_layout=rope_layout)
    except ConfigError as err:  # the config's own error, so callers can tell it from the weights'
        raise ConfigError(f"{config_path}: {err}") from None

    tensors: dict[str, Tensor] = {}
    unexpected = []
    for hf_name, tensor in _read_tensors(path).items():
        ours = hf_to_blocklab_name(hf_name)
        if ours is None:
            if not _IGNORED.fullmatch(hf_name):
                unexpected.append(hf_name)
            continue
        if not tensor.dtype.is_floating_point:  # casting integers to floats would invent weights
            raise CheckpointError(f"checkpoint {path}: tensor {hf_name} is {tensor.dtype}; "
                                  "expected floating-point weights")
        tensors[ours] = tensor
    if cfg.tie_embeddings:  # tied checkpoints usually omit lm_head; a stored one must agree
        _check_tied_head(tensors, config_path)
    if layout != rope_layout:
        _relayout_qk(tensors, cfg, rope_layout)

    # Names and shapes are checked on a model without storage, before memory is spent on one
    # that a mistaken config (a vocabulary of millions against a small checkpoint) makes huge.
    with torch.device("meta"):
        shapes = {name: t.shape for name, t in DecoderLM(cfg).state_dict().items()}
    expected = {name for name in shapes
                if not (cfg.tie_embeddings and name == "lm_head.weight")}
    missing = sorted(expected - set(tensors))
    unexpected += sorted(set(tensors) - expected)
    if missing or unexpected:
        raise CheckpointError(f"checkpoint {path} does not match the config: missing "
                              f"{[blocklab_to_hf_name(n) or n for n in missing]}, unexpected "
                              f"{sorted(unexpected)}")
    wrong = [f"{blocklab_to_hf_name(n) or n}: {tuple(t.shape)} vs {tuple(shapes[n])}"
             for n, t in tensors.items() if t.shape != shapes[n]]
    if wrong:
        raise CheckpointError(f"checkpoint {path} has tensors of the wrong shape (checkpoint vs "
                              f"config {CONFIG_NAME}): {_listed(wrong)}")
    stored = _one_dtype(tensors, path) if dtype is None else dtype
    _warn_non_finite(tensors, path)
    model = DecoderLM(cfg)
    model.to(stored)
    # Copies into the existing parameters, so a tied lm_head stays tied.
    model.load_state_dict(tensors, strict=False)
    return model


def _listed(items: list[str], limit: int = 4, sep: str = "; ") -> str:
    shown = sep.join(items[:limit])
    return shown + (f"{sep}and {len(items) - limit} more" if len(items) > limit else "")


def save_hf(model: DecoderLM, path: str | os.PathLike, model_type: str = "llama") -> None:
    """Write `model` as a Hugging Face checkpoint (config.json + model.safetensors) in `path`
    (created when missing), loadable by `transformers.AutoModelForCausalLM.from_pretrained`.

    Files are written atomically, q/k rows in half-split order, packed projections split; an
    older sharded checkpoint in `path` is removed once the new files are in place. Every refusal
    comes before anything is written.
    """
    cfg = model.config
    tensors = _unpacked({name: t.detach() for name, t in model.state_dict().items()}, cfg)
    if cfg.rope_layout == "interleaved":
        _relayout_qk(tensors, cfg, "half_split")
        cfg = cfg.replace(rope_layout="half_split")
    hf_config = to_hf(cfg, model_type)  # raises before anything is written
    hf_config["torch_dtype"] = str(tensors["embed_tokens.weight"].dtype).removeprefix("torch.")
    if cfg.tie_embeddings:
        tensors.pop("lm_head.weight", None)
    out: dict[str, Tensor] = {}
    for name, tensor in tensors.items():
        hf_name = blocklab_to_hf_name(name)
        if hf_name is None:
            raise InputError(f"save_hf: no Hugging Face name for tensor {name!r}")
        out[hf_name] = tensor.contiguous().clone()

    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise InputError(f"save_hf: path {str(path)!r} is a file or lies under one; it must be "
                         "a folder (created when missing)") from None
    stale = _stale_shards(path)  # an unreadable older index is refused before anything is written
    with atomic_path(path / WEIGHTS_NAME) as tmp:
        save_file(out, tmp, metadata={"format": "pt"})
    write_atomic(path / CONFIG_NAME, json.dumps(hf_config, indent=2, sort_keys=True) + "\n")
    # The older sharded checkpoint goes whole, its index first: until then a reader sees an
    # index beside model.safetensors, which load_hf refuses as ambiguous rather than guess.
    if stale is not None:
        (path / INDEX_NAME).unlink(missing_ok=True)
        for file in stale:
            file.unlink(missing_ok=True)


def _stale_shards(path: Path) -> list[Path] | None:
    """The shard files an older sharded checkpoint's index in `path` names (only safetensors
    files inside `path`, never the files save_hf writes); None when there is no index."""
    index = path / INDEX_NAME
    if not index.exists():
        return None
    try:
        weight_map = _weight_map(index)
    except CheckpointError as err:
        raise CheckpointError(f"save_hf: {path} holds an older {INDEX_NAME} that cannot be read, "
                              f"so its shards cannot be replaced ({err}); remove it or save to "
                              "another folder") from None
    root = path.resolve()
    keep = {root / WEIGHTS_NAME, root / CONFIG_NAME}
    files = {(path / shard).resolve() for shard in weight_map.values()}
    return sorted(f for f in files if f.is_relative_to(root) and f not in keep
                  and f.suffix == ".safetensors" and f.is_file())
