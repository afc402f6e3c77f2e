"""The one reader of JSON a user hands blocklab (a config.json, a run config, an index) or that
blocklab stored (a result, a summary), and the one writer.

A hostile file is bad input, one line naming the file: too large (before it is read), not
UTF-8, malformed, nested too deep (`json.loads` recurses per level), or not strict JSON (RFC
8259: NaN, Infinity, a float overflow, a key given twice, a lone surrogate, each named where
it sits). `decode` reads stored JSON into dataclasses through strict pydantic
(docs/json_load.md). Every write is atomic: a reader sees the old file or the new, never half.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import math
import os
import secrets
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from blocklab.errors import InputError, ResultsError

MAX_BYTES = 16 * 2**20  # a config.json or an index is kilobytes
# Hugging Face configs nest 3 or 4 levels (text_config.rope_scaling.factor); 64 is generous and
# far below Python's recursion limit.
MAX_DEPTH = 64
_TOO_DEEP = f"JSON nested more than {MAX_DEPTH} levels deep; a config nests a few levels"


class _Unreadable(str):
    """The text of a number strict JSON has no float for (NaN, ±Infinity, 1e999), standing in
    for it so that the check after parsing can say where it sits."""

    def problem(self) -> str:
        if self in ("NaN", "Infinity", "-Infinity"):
            return f"{self} is not strict JSON (it has no nan, inf or -inf)"
        return f"{self[:40]} is too large for a float (it would read as inf)"


def _float(text: str) -> float | _Unreadable:
    value = float(text)
    return value if math.isfinite(value) else _Unreadable(text)


def parse_json(text: str | bytes, source: str, error: type[InputError] = InputError) -> Any:
    """The JSON value in `text`; anything unreadable or not strict JSON raises `error` naming
    `source` and where it sits ("model.d_model: NaN is not strict JSON")."""
    repeated: list[tuple[dict[str, Any], str]] = []  # (object, its key given twice)

    def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        data: dict[str, Any] = {}
        for key, value in pairs:
            if key in data:
                repeated.append((data, key))
            data[key] = value
        return data

    try:
        data = json.loads(text, parse_constant=_Unreadable, parse_float=_float,
                          object_pairs_hook=unique_keys)
    except RecursionError:
        raise error(f"{source}: {_TOO_DEEP}") from None  # deeper than the parser can go
    except UnicodeDecodeError:  # bytes that are not UTF-8 (or UTF-16/32)
        raise error(f"{source}: not UTF-8 text") from None
    except json.JSONDecodeError as err:
        raise error(f"{source}: malformed JSON: {err}") from None
    except ValueError as err:  # an integer of more digits than Python converts (4300)
        raise error(f"{source}: malformed JSON: {str(err).split(';')[0]}") from None
    problem = _check(data, {id(obj): key for obj, key in reversed(repeated)})
    if problem is None and repeated:  # (only in an object a repeated key then replaced)
        problem = f"key {repeated[0][1][:80]!r} is given twice in one object; keep one"
    if problem is not None:
        raise error(f"{source}: {problem}")
    return data


def _check(data: Any, repeated: dict[int, str]) -> str | None:
    """The first thing in document order that strict JSON does not allow, with where it sits,
    `_TOO_DEEP` (without), or None; iterative (no stack to exhaust). `repeated`: {id(object):
    a key it was given twice}."""
    stack: list[tuple[Any, int, tuple | None]] = [(data, 0, None)]  # (value, depth, trail)
    while stack:
        value, depth, trail = stack.pop()
        if isinstance(value, dict | list):
            if depth >= MAX_DEPTH:
                return _TOO_DEEP
            if isinstance(value, dict):
                if id(value) in repeated:
                    return (_at(trail) + f"key {repeated[id(value)][:80]!r} is given twice in "
                            "one object; keep one")
                items = list(value.items())
                for key, _ in items:
                    if _bad_text(key):
                        return _at(trail) + f"the key {key[:40]!r} {_bad_text(key)}"
            else:
                items = list(enumerate(value))
            stack.extend((item, depth + 1, (trail, key)) for key, item in reversed(items))
        elif isinstance(value, _Unreadable):
            return _at(trail) + value.problem()
        elif isinstance(value, str) and _bad_text(value):
            return _at(trail) + f"the string {value[:40]!r} {_bad_text(value)}"
    return None


def _bad_text(text: str) -> str | None:
    """Why `text` is no text (a lone surrogate, "\\ud800"), else None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        return f"holds a lone surrogate ({err.object[err.start]!r}), which is no character"
    return None


def _at(trail: tuple | None) -> str:
    """"model.d_model: " for the trail (((None, "model"), "d_model")), "" at the top."""
    keys = []
    while trail is not None:
        trail, key = trail
        keys.append(f"[{key}]" if isinstance(key, int) else f".{key[:80]}")
    return "".join(reversed(keys)).lstrip(".") + ": " if keys else ""


def read_json(path: str | os.PathLike, source: str | None = None,
              error: type[InputError] = InputError, max_bytes: int = MAX_BYTES) -> Any:
    """The JSON value in the file `path` (`parse_json`), at most `max_bytes` (checked before
    reading); errors name it as `source` (default: the path)."""
    path = Path(path)
    source = str(path) if source is None else source
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise error(f"{source}: {size / 2**20:,.0f} MiB is too large for a config or a "
                        f"result (at most {max_bytes // 2**20} MiB)")
        with path.open("rb") as handle:
            raw = handle.read(max_bytes + 1)  # the file may have grown since stat
    except OSError as err:
        raise error(f"{source}: cannot read it ({err.strerror or err})") from None
    if len(raw) > max_bytes:
        raise error(f"{source}: too large for a config or a result (at most "
                    f"{max_bytes // 2**20} MiB)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise error(f"{source}: not UTF-8 text") from None
    return parse_json(text, source, error)


# --- reading typed ------------------------------------------------------------------------------
def decode(kind: Any, value: Any, where: str = "") -> Any:
    """`value` (parsed JSON) as an instance of the annotation `kind`, checked all the way down
    (a dataclass takes exactly its fields; null only where None is allowed). ResultsError
    names the path of the first mismatch: "<where>.arms.swiglu.counted: expected int, found
    2.5"."""
    if kind is Any:
        return value
    # imported here: the commands that read no stored result (budget, doctor) skip its ~40 ms
    from pydantic import ValidationError
    from pydantic_core import to_json

    try:
        # pydantic reads a stdlib dataclass strictly from JSON text only (lax mode takes "3.0"
        # as a float): so the value is written back (in Rust, ~0.1 ms) and read strictly.
        return _adapter(kind).validate_json(b"[" + to_json(value) + b"]")[0]
    except ValidationError as err:
        loc = err.errors(include_url=False)[0]["loc"][1:]
        raise ResultsError(_mismatch_at(kind, value, loc, where)) from None


@functools.cache
def _adapter(kind: Any) -> Any:
    """The strict pydantic TypeAdapter of `kind`, built once (~40 ms); the config rides on a
    one-item tuple, as a dataclass takes none of its own there."""
    from pydantic import ConfigDict, TypeAdapter

    return TypeAdapter(tuple[kind], config=ConfigDict(strict=True, extra="forbid"))


def _mismatch_at(kind: Any, value: Any, loc: tuple, where: str) -> str:
    """What is wrong where pydantic's first error (`loc`) points, followed down `kind` and
    `value` to the first union (named whole), a dataclass whose keys are not its fields, or
    the value that does not fit."""
    for key in loc:
        origin = typing.get_origin(kind)
        if dataclasses.is_dataclass(kind) and isinstance(value, dict):
            fields = dataclasses.fields(kind)
            unknown = sorted(set(value) - {f.name for f in fields})
            missing = [f.name for f in fields if f.name not in value
                       and f.default is f.default_factory is dataclasses.MISSING]
            if unknown or missing:
                return (f"{where or kind.__name__}: {kind.__name__} fields differ (missing "
                        f"{missing}, unknown {unknown})")
            kind, value = typing.get_type_hints(kind)[key], value[key]
            where = f"{where}.{key}" if where else key
        elif origin is dict and isinstance(value, dict) and key in value:
            kind, value = typing.get_args(kind)[1], value[key]
            where = f"{where}.{key}"
        elif (origin in (list, tuple) and isinstance(value, list) and isinstance(key, int)
              and key < len(value)):
            args = typing.get_args(kind)
            if origin is tuple and args[-1] is not Ellipsis and len(args) != len(value):
                break  # a pair given one number
            kind, value = args[0 if origin is list or args[-1] is Ellipsis else key], value[key]
            where = f"{where}[{key}]"
        else:  # a union (pydantic's next key names a member), or the value itself
            break
    name = getattr(kind, "__name__", None) or str(kind).replace("typing.", "")
    return f"{where or 'value'}: expected {name}, found {shown(value)}"


def shown(value: Any) -> str:
    """`value` as an error message shows it: its repr, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def json_safe(value: Any, named: bool = False) -> Any:
    """Non-finite floats -> None (`named`: the strings "NaN", "Infinity", "-Infinity"),
    tuples -> lists, dataclasses -> dicts of their fields, recursively (strict JSON has no NaN)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json_safe(dataclasses.asdict(value), named)
    if isinstance(value, float) and not math.isfinite(value):
        if not named:
            return None
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {str(k): json_safe(v, named) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v, named) for v in value]
    return value


def output_json(value: Any, indent: int | None = None, ensure_ascii: bool = True) -> str:
    """`value` as strict JSON for `--json` output: a non-finite float is written by name (a
    float16 overflow keeps its meaning; jq reads it)."""
    return json.dumps(json_safe(value, named=True), indent=indent, ensure_ascii=ensure_ascii,
                      allow_nan=False)


# --- writing ------------------------------------------------------------------------------------
@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A hidden temporary name beside `path` for a writer that creates its own file (a figure,
    a checkpoint): renamed over `path` when the block ends, removed if it raises."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp{path.suffix}"
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` so that a reader sees the old file or the new one, never half.
    Created 0666 under the process umask, as by open(); the umask is never changed (other
    threads' files would feel it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # One try from the moment a temporary name is ours: a KeyboardInterrupt from a signal
    # handler between any two statements still removes it.
    tmp: Path | None = None
    try:
        for _ in range(100):
            tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                             | getattr(os, "O_CLOEXEC", 0), 0o666)
            except FileExistsError:
                tmp = None  # another writer's: never ours to remove
                continue
            break
        else:  # pragma: no cover - 100 collisions of 48 random bits
            raise FileExistsError(f"no free temporary name beside {path}")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        if isinstance(err, OSError) and err.filename is None and err.errno is not None:
            # A full disk or a quota says nothing of where: name the file being written.
            raise OSError(err.errno, err.strerror, str(path)) from err
        raise
