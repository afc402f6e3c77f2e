"""Printed wording kept as data: a TOML file beside the module that prints it, each entry a
whole sentence in English and Chinese side by side (`key.en = "…"`, `key.zh = "…"`) under a
`[TABLE]` header; `{name}` fields are filled by the caller."""

from __future__ import annotations

import tomllib
from importlib.resources import files


def load(package: str, name: str) -> dict[str, dict[str, tuple[str, str]]]:
    """Table name -> key -> (English, Chinese), in the file's order."""
    data = tomllib.loads(files(package).joinpath(name).read_text("utf-8"))
    return {table: {key: (v["en"], v["zh"]) for key, v in entries.items()}
            for table, entries in data.items()}
