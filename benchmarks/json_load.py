"""Reading stored results back into their dataclasses: the hand-written reflective decoder
blocklab used until it moved to pydantic, beside pydantic, cattrs and msgspec, in one process.

Times every suite summary (`<results>/<suite>/<size>/summary.json`, its `data` read as the
suite's `data_type`) and every stored run (`<run_id>.json`: its `final`, `curves` and `run`
read as `FinalMetrics`, `Curves` and `RunLabel`) of a results folder, best of `--repeats`
passes, and prints each candidate's time over the reflective decoder's. Every candidate reads
the text through `blocklab.jsonio.parse_json` first, as blocklab must: no candidate refuses a
key given twice by itself (the strictness table shows what each refuses alone). Then prints
that table: what each refuses of a damaged summary, as blocklab reads it (through parse_json)
and, for the JSON-level rows, alone on the text. The results are recorded in docs/json_load.md.
Needs cattrs and msgspec besides blocklab's own dependencies.

    pip install cattrs msgspec
    python benchmarks/json_load.py [RESULTS] [--size quick] [--repeats 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, Union

from pydantic import ConfigDict, TypeAdapter

from blocklab.errors import ResultsError
from blocklab.experiments.run_result import Curves, FinalMetrics, RunLabel
from blocklab.experiments.suites import SUITE_MODULES, get_suite
from blocklab.jsonio import decode, parse_json

try:  # the candidates blocklab did not choose are no dependency of it
    import cattrs
    import msgspec
except ImportError as err:
    raise SystemExit(f"{err.name} is not installed: pip install cattrs msgspec") from None


# --- the reflective decoder blocklab had (summaries.decode), kept here as the baseline ----------
def reflective(kind: Any, value: Any, where: str = "") -> Any:
    origin = typing.get_origin(kind)
    if kind is Any:
        return value
    if dataclasses.is_dataclass(kind):
        if not isinstance(value, dict):
            raise _mismatch(where, kind.__name__, value)
        hints = typing.get_type_hints(kind)
        names = [f.name for f in dataclasses.fields(kind)]
        extra = sorted(set(value) - set(names))
        missing = [n for n in names if n not in value]
        if extra or missing:
            raise ResultsError(f"{where or kind.__name__}: {kind.__name__} fields differ "
                               f"(missing {missing}, unknown {extra})")
        return kind(**{n: reflective(hints[n], value[n], f"{where}.{n}" if where else n)
                       for n in names})
    if origin in (Union, types.UnionType):
        members = typing.get_args(kind)
        if value is None:
            if type(None) in members:
                return None
            raise _mismatch(where, str(kind), value)
        for member in members:
            if member is not type(None):
                try:
                    return reflective(member, value, where)
                except ResultsError:
                    pass
        raise _mismatch(where, str(kind), value)
    if origin is list:
        if not isinstance(value, list):
            raise _mismatch(where, str(kind), value)
        (item,) = typing.get_args(kind)
        return [reflective(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is tuple:
        args = typing.get_args(kind)
        if not isinstance(value, list | tuple) or (args[-1] is not Ellipsis
                                                   and len(args) != len(value)):
            raise _mismatch(where, str(kind), value)
        items = [args[0]] * len(value) if args[-1] is Ellipsis else list(args)
        return tuple(reflective(t, v, f"{where}[{i}]") for i, (t, v) in enumerate(zip(items,
                                                                                        value,
                                                                                        strict=True)))
    if origin is dict:
        _, item = typing.get_args(kind)
        if not isinstance(value, dict):
            raise _mismatch(where, str(kind), value)
        return {k: reflective(item, v, f"{where}.{k}") for k, v in value.items()}
    if kind is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise _mismatch(where, "float", value)
    if kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise _mismatch(where, "int", value)
    if kind in (str, bool):
        if isinstance(value, kind):
            return value
        raise _mismatch(where, kind.__name__, value)
    raise TypeError(f"annotation {kind!r} at {where} is not supported")


def _mismatch(where: str, expected: str, value: Any) -> ResultsError:
    return ResultsError(f"{where or 'value'}: expected {expected}, found {value!r:.60}")


def reflective_build(kind: type, data: dict[str, Any]) -> Any:
    """What `RunResult.from_dict` did with a run's `final`, `curves` and `run`: kind(**data)
    after refusing unknown keys, the values unchecked."""
    unknown = set(data) - {f.name for f in dataclasses.fields(kind)}
    if unknown:
        raise ResultsError(f"unknown field(s) {sorted(unknown)}")
    return kind(**data)


# --- the candidates ------------------------------------------------------------------------------
# pydantic validates a stdlib dataclass from a dict only in lax mode ("3.0" would read as a
# float) or from JSON text in strict mode. `blocklab.jsonio.decode` writes a parsed value back
# as text (pydantic_core.to_json) and reads it strictly; "pydantic text" reads the text
# directly, which blocklab cannot do for a part of a document it has already parsed, as a bound.
_STRICT = ConfigDict(strict=True, extra="forbid")
_adapters: dict[Any, TypeAdapter] = {}


def pydantic_text(kind: Any, text: bytes) -> Any:
    if kind not in _adapters:
        _adapters[kind] = TypeAdapter(tuple[kind], config=_STRICT)
    return _adapters[kind].validate_json(b"[" + text + b"]")[0]


def _cattrs_converter() -> cattrs.Converter:
    """cattrs calls int(), float(), str() and bool() on a value by default ("2.5" -> 2): each
    is replaced by an exact check, int taken for float as JSON has it."""
    converter = cattrs.Converter(forbid_extra_keys=True)

    def exact(kind: type) -> Callable[[Any, Any], Any]:
        def structure(value: Any, _: Any) -> Any:
            if type(value) is kind or (kind is float and type(value) is int):
                return kind(value)
            raise TypeError(f"expected {kind.__name__}, found {value!r}")
        return structure

    for kind in (int, float, str, bool):
        converter.register_structure_hook(kind, exact(kind))
    # A union takes its first member that fits, as the reflective decoder did (cattrs has no
    # general union hook; its strategies tell members apart by their fields or a tag).
    def union(kind: Any) -> Callable[[Any, Any], Any]:
        members = typing.get_args(kind)

        def structure(value: Any, _: Any) -> Any:
            if value is None and type(None) in members:
                return None
            for member in members:
                try:
                    return converter.structure(value, member)
                except (TypeError, ValueError, KeyError, cattrs.BaseValidationError):
                    pass
            raise TypeError(f"expected {kind}, found {value!r}")
        return structure

    converter.register_structure_hook_factory(
        lambda kind: typing.get_origin(kind) in (Union, types.UnionType), union)
    return converter


_CATTRS = _cattrs_converter()


def cattrs_value(kind: Any, value: Any) -> Any:
    return _CATTRS.structure(value, kind)


def msgspec_value(kind: Any, value: Any) -> Any:
    return msgspec.convert(value, kind, strict=True)


# (name, read a summary's data: (kind, text, doc) -> data, read a run's typed part)
Reader = Callable[[Any, bytes, Any], Any]
CANDIDATES: list[tuple[str, Reader]] = [
    ("reflective", lambda kind, text, doc: reflective(kind, doc)),  # what blocklab had
    ("pydantic", lambda kind, text, doc: decode(kind, doc)),  # what blocklab has
    ("pydantic text", lambda kind, text, doc: pydantic_text(kind, text)),
    ("cattrs", lambda kind, text, doc: cattrs_value(kind, doc)),
    ("msgspec", lambda kind, text, doc: msgspec_value(kind, doc)),
]


def _data_text(text: bytes) -> bytes:
    """The `data` member of a summary's text, as JSON text (for the readers that read text)."""
    return json.dumps(json.loads(text)["data"]).encode()


# --- timing -------------------------------------------------------------------------------------
def load_summaries(folder: Path, size: str) -> list[tuple[Any, bytes]]:
    found = []
    for suite in SUITE_MODULES:
        path = folder / suite / size / "summary.json"
        if path.is_file():
            found.append((get_suite(suite).data_type, path.read_bytes()))
    return found


def load_runs(folder: Path) -> list[bytes]:
    return [p.read_bytes() for p in sorted(folder.glob("*/*/*.json"))
            if p.name != "summary.json"]


def _typed_parts(doc: dict[str, Any]) -> list[tuple[type, dict[str, Any]]]:
    """The parts of a stored run read as dataclasses (as `RunResult.from_dict` reads them)."""
    parts = []
    if isinstance(doc.get("final"), dict):
        parts.append((FinalMetrics, doc["final"]))
    if isinstance(doc.get("curves"), dict):
        curves = {**doc["curves"]}
        curves.setdefault("layer_grad_norms", {})
        curves.setdefault("residual_rms", {})
        curves = {k: (v if v is not None else {}) for k, v in curves.items()}
        parts.append((Curves, curves))
    if isinstance(doc.get("run"), dict):
        parts.append((RunLabel, doc["run"]))
    return parts


def best_of(repeats: int, work: Callable[[], Any]) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def time_candidates(folder: Path, size: str, repeats: int) -> None:
    """Per candidate: its first pass over the summaries and over the runs (building its readers,
    what one command pays) and its best later pass; then one command's whole read, the strict
    parse included, over the reflective decoder's."""
    summaries = load_summaries(folder, size)
    runs = load_runs(folder)
    print(f"{folder}: {len(summaries)} summaries ({sum(len(t) for _, t in summaries) / 1e3:.0f}"
          f" kB), {len(runs)} runs ({sum(map(len, runs)) / 1e6:.1f} MB); best of {repeats}")
    parse = best_of(repeats, lambda: [parse_json(t, "f") for t in [*runs, *(t for _, t in
                                                                           summaries)]])
    docs = [(kind, _data_text(t), parse_json(t, "f")["data"]) for kind, t in summaries]
    run_docs = [d for d in (parse_json(t, "f") for t in runs) if isinstance(d, dict)]
    # A run's typed parts as text too, for the reader of text (written once here, before
    # timing: blocklab's own row, "pydantic", pays for writing each back)
    run_parts = [(kind, json.dumps(part).encode(), part) for d in run_docs
                 for kind, part in _typed_parts(d)]
    print(f"  parse_json (strict, the same for every candidate): {1e3 * parse:.0f} ms")
    print(f"  {'ms':22} {'summaries: first':>16} {'best':>6}   {'runs: first':>11} {'best':>6}"
          f"   {'one command':>11} {'× before':>8}")
    before = None
    for name, read in CANDIDATES:
        if name == "reflective":
            def read_run(k: Any, t: bytes, d: Any) -> Any:
                return reflective_build(k, d)
        else:
            read_run = read
        times = []
        for items, reader in ((docs, read), (run_parts, read_run)):
            try:
                first = best_of(1, lambda i=items, r=reader: [r(k, t, d) for k, t, d in i])
                times += [first, best_of(repeats, lambda i=items, r=reader: [
                    r(k, t, d) for k, t, d in i])]
            except (TypeError, msgspec.ValidationError) as err:
                times += [None, None]
                why = str(err).split(" - ")[0][:80]
        cells = [f"{1e3 * t:{w}.1f}" if t is not None else f"{'—':>{w}}"
                 for t, w in zip(times, (16, 6, 11, 6), strict=True)]
        line = f"  {name:22} {cells[0]} {cells[1]}   {cells[2]} {cells[3]}"
        if None in times:
            print(f"{line}   unsupported: {why}")
            continue
        command = parse + times[0] + times[2]
        before = before or command
        print(f"{line}   {1e3 * command:11.0f} {command / before:8.2f}")


# --- strictness ---------------------------------------------------------------------------------
def _summary_cases(kind: Any, doc: dict[str, Any]) -> list[tuple[str, Callable[[dict], None]]]:
    """(what is wrong, a change that makes a good `data` so) for the FFN summary's data."""
    arm = next(iter(doc["arms"]))

    def at_arm(**changes: Any) -> Callable[[dict], None]:
        return lambda d: d["arms"][arm].update(changes)

    return [
        ("unknown field", at_arm(delta_vs_ReLU=1)),
        ("missing field", lambda d: d["arms"][arm].pop("delta_vs_relu")),
        ("missing field with a default", lambda d: d["arms"][arm]["val_loss"].pop("sd")),
        ("int given 2.0", lambda d: d.update(seeds=2.0)),
        ("int given true", lambda d: d.update(seeds=True)),
        ("bool given 1", at_arm(gated=1)),
        ('float given "3.0"', lambda d: d["arms"][arm]["val_loss"].update(mean="3.0")),
        ("str given 7", at_arm(activation=7)),
        ("null for a float", at_arm(lr=None)),
        ("tuple of the wrong length", lambda d: d.update(page={arm: [1.0]})),
        ("list given an object", lambda d: d.update(lr_grid={"a": 1})),
        ('list of str given "swiglu"', lambda d: d.update(lr_at_edge="swiglu")),
        ("object given a list of pairs", at_arm(status=[["ok", 2]])),
    ]


@dataclasses.dataclass(frozen=True)
class _Scaled:
    factor: float


@dataclasses.dataclass(frozen=True)
class _Tuned:
    factor: float
    steps: int


_UNION = dict[str, _Scaled | _Tuned]

# (what is wrong, the text of a summary whose data holds it)
_TEXT_CASES = [
    ("NaN token", '{"data": {"seeds": NaN}}'),
    ("Infinity token", '{"data": {"seeds": Infinity}}'),
    ("1e999 (reads as inf)", '{"data": {"seeds": 1e999}}'),
    ("key given twice", '{"data": {"seeds": 2, "seeds": 3}}'),
    ("lone surrogate", '{"data": {"init": "\\ud800"}}'),
]


def _refuses(read: Callable[[], Any]) -> str:
    try:
        read()
    except (ResultsError, ValueError, TypeError, cattrs.BaseValidationError,
            msgspec.ValidationError, msgspec.DecodeError):
        return "refused"
    except Exception as err:  # noqa: BLE001 (the table says what it was)
        return type(err).__name__
    return "ACCEPTED"


def strictness(folder: Path, size: str) -> None:
    ffn = folder / "ffn" / size / "summary.json"
    if not ffn.is_file():
        print(f"strictness: no {ffn}")
        return
    kind = get_suite("ffn").data_type
    good = json.loads(ffn.read_bytes())["data"]
    names = [name for name, _ in CANDIDATES]
    print(f"\nstrictness (the FFN summary's data, {ffn}):")
    print(f"  {'damage':30} " + " ".join(f"{n:>13}" for n in names))
    for what, change in _summary_cases(kind, good):
        doc = json.loads(json.dumps(good))
        change(doc)
        text = json.dumps(doc).encode()
        cells = [_refuses(lambda r=read, t=text: r(kind, t, parse_json(t, "f")))
                 for _, read in CANDIDATES]
        print(f"  {what:30} " + " ".join(f"{c:>13}" for c in cells))
    # A good value no candidate may refuse: a union of two dataclasses, as the position suite's
    # run records hold (a scaled read or a fine-tuned one).
    expected = {"a": _Scaled(2.0), "b": _Tuned(2.0, 10)}
    good_union = {"a": {"factor": 2}, "b": {"factor": 2.0, "steps": 10}}
    text = json.dumps(good_union).encode()
    cells = []
    for _, read in CANDIDATES:
        try:
            cells.append("reads" if read(_UNION, text, good_union) == expected else "misreads")
        except Exception as err:  # noqa: BLE001 (the table says what it was)
            cells.append(type(err).__name__[:12])
    print(f"  {'good: union of 2 dataclasses':30} " + " ".join(f"{c:>13}" for c in cells))
    print("  JSON-level damage: every candidate reads after parse_json, which refuses each; "
          "alone on the text:")
    alone = {"pydantic": lambda t: pydantic_text(dict[str, dict[str, Any]], t),
             "msgspec": lambda t: msgspec.json.decode(t),
             "json.loads": lambda t: json.loads(t)}
    print(f"  {'damage':30} {'parse_json':>12} " + " ".join(f"{n:>12}" for n in alone))
    for what, text in _TEXT_CASES:
        cells = [_refuses(lambda t=text: parse_json(t, "f"))]
        cells += [_refuses(lambda r=read, t=text: r(t.encode())) for read in alone.values()]
        print(f"  {what:30} " + " ".join(f"{c:>12}" for c in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", default="runs", help="a results folder")
    parser.add_argument("--size", default="quick", help="the size folder of the summaries")
    parser.add_argument("--repeats", type=int, default=5, help="passes; the best is shown")
    args = parser.parse_args()
    folder = Path(args.results)
    time_candidates(folder, args.size, args.repeats)
    strictness(folder, args.size)


if __name__ == "__main__":
    main()
