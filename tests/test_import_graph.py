"""blocklab's modules import each other without a circle, and its packages only downwards.

Every import counts: at module level, inside a function (it runs when called, and is still a
dependency a reader must follow) and under `if TYPE_CHECKING:` (a type a module needs is a
module it depends on).
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

# The packages from the bottom up: a module may import its own package and those listed before
# it, never one after. Modules on one line do not import each other.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("blocklab",),  # the package's __init__: its version, nothing else
    ("errors",),
    ("checks",),  # what a value must be to enter, and the line that refuses it
    ("jsonio", "reference", "stats", "precision", "wording"),
    ("config", "verify"),
    ("nn",),
    ("interop",),
    ("budget",),
    ("experiments",),
    ("claims",),
    ("report",),
    ("cli",),
    ("__main__",),  # python -m blocklab
)


def _modules() -> dict[str, Path]:
    out = {}
    for path in (SRC / "blocklab").rglob("*.py"):
        name = ".".join(path.relative_to(SRC).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The blocklab modules `path` imports anywhere in it (module level, functions, TYPE_CHECKING
    blocks; relative imports resolved). `from package import submodule` depends on the
    submodule only."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom):
            module = node.module
            if node.level:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([module] if module else []))
            if module not in known:
                continue
            subs = {f"{module}.{a.name}" for a in node.names} & known
            found |= subs
            if len(subs) < len(node.names):  # a name defined in the module itself
                found.add(module)
    return found - {name}


def _package(module: str) -> str:
    """The top-level package (or module) of blocklab that `module` belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _upward(graph: dict[str, set[str]]) -> list[str]:
    """Every import from a package to one above it (or beside it on its layer)."""
    rank = {name: i for i, layer in enumerate(LAYERS) for name in layer}
    out = []
    for module, deps in sorted(graph.items()):
        for dep in sorted(deps):
            a, b = _package(module), _package(dep)
            if a != b and rank[b] >= rank[a]:
                out.append(f"{module} -> {dep}")
    return out


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One circle of imports in `graph`, or [] if there is none."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as err:
        return err.args[1]
    return []


def test_the_import_graph_has_no_circle_and_points_down():
    modules = _modules()
    graph = {name: _imports(path, name, set(modules)) for name, path in modules.items()}
    assert {_package(m) for m in modules} == {name for layer in LAYERS for name in layer}
    assert len(graph) > 50
    # the catalogue collects the check modules; the rules they import know none of them
    assert "blocklab.claims.checks" in graph["blocklab.claims.catalogue"]
    assert not {m for m in graph["blocklab.claims.registry"]
                if m.startswith("blocklab.claims.") and m != "blocklab.claims.rules"}
    assert _cycle(graph) == [] and _upward(graph) == []


def test_the_walk_reads_imports_inside_functions_and_type_checking(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                      "    from blocklab.nn import model\n"
                      "def f():\n    from blocklab.claims.ledger import run_claims\n"
                      "    from . import sibling\n")
    known = {"blocklab.nn", "blocklab.nn.model", "blocklab.claims.ledger", "blocklab.x",
             "blocklab.x.sibling"}
    assert _imports(module, "blocklab.x.m", known) == {
        "blocklab.nn.model", "blocklab.claims.ledger", "blocklab.x.sibling"}


def test_the_layer_check_and_the_cycle_finder_find_what_they_should():
    assert _upward({"blocklab.nn.model": {"blocklab.experiments.trainer"}}) == [
        "blocklab.nn.model -> blocklab.experiments.trainer"]
    assert _upward({"blocklab.jsonio": {"blocklab.stats"}}) == [  # beside it on its layer
        "blocklab.jsonio -> blocklab.stats"]
    assert _upward({"blocklab.cli.train": {"blocklab.nn.model"}}) == []
    assert sorted(_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})[1:]) == ["a", "b", "c"]
    assert _cycle({"a": {"b"}, "b": set()}) == []
