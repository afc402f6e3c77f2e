"""The bundled model zoo: real Hugging Face configs with their published parameter counts.

Each `zoo/<name>.json` holds::

    {"name", "hf_id", "config": <config.json dict>, "published_params": int | null,
     "params_exact": bool, "params_source": str, "params_counts": str, "notes": str}

`resolve_model` turns a zoo name or a path (a config.json, or a folder holding one) into a
`ResolvedModel`. A file may be a Hugging Face config.json or a blocklab `ModelConfig` JSON
(recognised by its `d_model` key). Keys a Hugging Face config.json leaves out take the
transformers class default, as `from_pretrained` would (see `HF_DEFAULTS`).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from blocklab.config import ModelConfig
from blocklab.errors import InputError
from blocklab.interop.hf_config import from_hf
from blocklab.jsonio import parse_json, read_json

ZOO_FIELDS = ("name", "hf_id", "config", "published_params", "params_exact", "params_source",
              "params_counts", "notes")

# transformers 5.x class defaults of keys that `from_hf` needs and a config.json may
# omit (LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config, Gemma2Config `__init__` defaults).
HF_DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": {"max_position_embeddings": 2048},
    "mistral": {"max_position_embeddings": 131072},
    "qwen2": {"max_position_embeddings": 32768},
    "qwen3": {"max_position_embeddings": 32768},
    "gemma2": {"max_position_embeddings": 8192},
}


@dataclass(frozen=True)
class ZooEntry:
    """One zoo model: its Hugging Face config and where its parameter count comes from."""

    key: str  # file name without .json, what `load_zoo` takes
    name: str
    hf_id: str | None
    config: dict[str, Any]
    published_params: int | None
    params_exact: bool
    params_source: str
    params_counts: str
    notes: str


def _zoo_dir():
    return resources.files("blocklab.budget").joinpath("zoo")


def list_zoo() -> list[str]:
    return sorted(p.name[:-5] for p in _zoo_dir().iterdir() if p.name.endswith(".json"))


def load_zoo(name: str) -> ZooEntry:
    """The zoo entry `name`; an unknown name raises ValueError suggesting close names."""
    names = list_zoo()
    if name not in names:
        close = difflib.get_close_matches(name.lower(), names, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise InputError(f"unknown model {name!r}{hint} (`blocklab budget --list` lists the zoo; "
                         f"a path to a config.json also works)")
    text = _zoo_dir().joinpath(f"{name}.json").read_text(encoding="utf-8")
    data = _object(parse_json(text, f"zoo entry {name}"), f"zoo entry {name}")
    missing = [k for k in ZOO_FIELDS if k not in data]
    if missing:
        raise InputError(f"zoo entry {name} is missing field(s) {missing}")
    return ZooEntry(key=name, **{k: data[k] for k in ZOO_FIELDS})


def _object(data: Any, what: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise InputError(f"{what} must hold a JSON object, got {type(data).__name__}")
    return data


def with_hf_defaults(hf: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """`hf` with transformers' class defaults filled in for absent keys, and the keys filled."""
    model_type = hf.get("model_type")
    defaults = HF_DEFAULTS.get(model_type, {}) if isinstance(model_type, str) else {}
    filled = tuple(k for k in defaults if hf.get(k) is None)
    return {**hf, **{k: defaults[k] for k in filled}}, filled


def config_from_json(data: dict[str, Any]) -> tuple[ModelConfig, tuple[str, ...]]:
    """A `ModelConfig` from a Hugging Face config.json dict or a `ModelConfig` dict."""
    if "d_model" in data and "model_type" not in data:
        return ModelConfig.from_dict(data), ()
    hf, filled = with_hf_defaults(data)
    # from_hf names the key of any value of the wrong type or shape; anything else is a bug.
    return from_hf(hf), filled


@dataclass(frozen=True)
class ModelJSON:
    """A model's JSON as read, before any validation: what `doctor` inspects first."""

    label: str
    raw: dict[str, Any]  # the config.json dict (Hugging Face or ModelConfig layout)
    source: str  # "zoo" or the file path
    entry: ZooEntry | None = None


@dataclass(frozen=True, kw_only=True)
class ResolvedModel(ModelJSON):
    """A model ready for the calculator: its JSON and the `ModelConfig` built from it."""

    config: ModelConfig
    defaults_filled: tuple[str, ...] = ()  # keys taken from HF_DEFAULTS


def read_model_json(name_or_path: str) -> ModelJSON:
    """The JSON of a zoo name, a config.json path or a folder holding a config.json."""
    path = Path(name_or_path)
    looks_like_path = path.suffix == ".json" or "/" in name_or_path or path.exists()
    if looks_like_path and name_or_path not in list_zoo():
        if path.is_dir():
            path = path / "config.json"
        if not path.is_file():
            raise InputError(f"no such file: {path}")
        data = _object(read_json(path), str(path))
        label = str(data.get("_name_or_path") or data.get("name") or path)
        return ModelJSON(label=label, raw=data, source=str(path))
    entry = load_zoo(name_or_path)
    if not isinstance(entry.config, dict):
        raise InputError(f"zoo entry {entry.key}: 'config' must be a JSON object")
    return ModelJSON(label=entry.key, raw=entry.config, source="zoo", entry=entry)


def resolve_model(name_or_path: str) -> ResolvedModel:
    """A zoo name, a config.json path or a folder with a config.json, as a `ResolvedModel`."""
    found = read_model_json(name_or_path)
    try:
        cfg, filled = config_from_json(found.raw)
    except InputError as err:
        raise InputError(f"{found.source if found.source != 'zoo' else found.label}: {err}") \
            from None
    return ResolvedModel(found.label, found.raw, found.source, found.entry,
                         config=cfg.replace(name=found.label), defaults_filled=filled)
