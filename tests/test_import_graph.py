"""blocklab's modules import each other without a circle (module-level imports; an import
inside a function runs only when called, so it cannot leave a module half-initialised)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def _modules() -> dict[str, Path]:
    out = {}
    for path in (SRC / "blocklab").rglob("*.py"):
        name = ".".join(path.relative_to(SRC).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The blocklab modules `path` imports at module level (also under `if`: TYPE_CHECKING
    blocks are skipped). `from package import submodule` depends on the submodule only."""
    found: set[str] = set()
    body = ast.parse(path.read_text(encoding="utf-8")).body
    nodes = []
    for node in body:
        if isinstance(node, ast.If):
            if "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            nodes += node.body
        else:
            nodes.append(node)
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom) and node.module in known:
            subs = {f"{node.module}.{a.name}" for a in node.names} & known
            found |= subs
            if len(subs) < len(node.names):  # a name defined in the module itself
                found.add(node.module)
    return found - {name}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_import_graph_has_no_circle():
    modules = _modules()
    graph = {name: _imports(path, name, set(modules)) for name, path in modules.items()}
    assert len(graph) > 50 and graph["blocklab.claims.sequential"]  # the walk sees imports
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
