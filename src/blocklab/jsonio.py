"""The one reader of JSON a user hands blocklab (a model config.json, a run config, a
checkpoint index), and the one cleaner of what blocklab writes as JSON (`json_safe`).

Every hostile file is refused the same way, as bad input on one line naming the file: one too
large to be a config (refused before it is read), one that is not UTF-8, malformed JSON, and
JSON nested deeper than any config is. The last matters because `json.loads` recurses once per
level: `'[' * 100_000` raises RecursionError, and a structure a few hundred levels deep that
does parse makes later recursion (repr in an error message, copying) fail instead. Imports
only the standard library and `blocklab.errors`, so the no-torch layers use it too.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path
from typing import Any

from blocklab.errors import InputError

MAX_BYTES = 16 * 2**20  # a config.json or an index is kilobytes
# Hugging Face configs nest 3 or 4 levels (text_config.rope_scaling.factor); 64 is generous and
# far below Python's recursion limit.
MAX_DEPTH = 64


def parse_json(text: str | bytes, source: str, error: type[InputError] = InputError) -> Any:
    """The JSON value in `text`; anything unreadable raises `error` naming `source`."""
    try:
        data = json.loads(text)
    except RecursionError:
        data = None
        depth = MAX_DEPTH + 1  # deeper than the parser can go
    except UnicodeDecodeError:  # bytes that are not UTF-8 (or UTF-16/32)
        raise error(f"{source}: not UTF-8 text") from None
    except json.JSONDecodeError as err:
        raise error(f"{source}: malformed JSON: {err}") from None
    else:
        depth = _depth(data)
    if depth > MAX_DEPTH:
        raise error(f"{source}: JSON nested more than {MAX_DEPTH} levels deep; a config nests a "
                    "few levels")
    return data


def read_json(path: str | os.PathLike, source: str | None = None,
              error: type[InputError] = InputError, max_bytes: int = MAX_BYTES) -> Any:
    """The JSON value in the file `path`; messages name it as `source` (default: the path).

    Raises `error` for a file that cannot be read, is larger than `max_bytes` (checked before
    reading), is not UTF-8, is malformed or nests more than MAX_DEPTH levels.
    """
    path = Path(path)
    source = str(path) if source is None else source
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise error(f"{source}: {size / 2**20:,.0f} MiB is too large for a config (at most "
                        f"{max_bytes // 2**20} MiB)")
        with path.open("rb") as handle:
            raw = handle.read(max_bytes + 1)  # the file may have grown since stat
    except OSError as err:
        raise error(f"{source}: cannot read it ({err.strerror or err})") from None
    if len(raw) > max_bytes:
        raise error(f"{source}: too large for a config (at most {max_bytes // 2**20} MiB)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise error(f"{source}: not UTF-8 text") from None
    return parse_json(text, source, error)


def _depth(data: Any) -> int:
    """Nesting depth of a parsed JSON value (a scalar is 0), without recursion."""
    deepest, stack = 0, [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            value = list(value.values())
        if isinstance(value, list):
            depth += 1
            deepest = max(deepest, depth)
            if depth > MAX_DEPTH:
                break
            stack.extend((item, depth) for item in value)
    return deepest


__all__ = ["MAX_BYTES", "MAX_DEPTH", "parse_json", "read_json"]


def json_safe(value: Any) -> Any:
    """Non-finite floats -> None, tuples -> lists, dataclasses -> dicts of their fields,
    recursively (strict JSON has no NaN)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json_safe(dataclasses.asdict(value))
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value
