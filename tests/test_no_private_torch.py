"""The package uses public PyTorch only (private modules change without notice between
releases): no `torch._x` attribute chain, import or module imported by name in src/. A module's
name in any other string, a comment or `torch.__version__` is allowed.
"""

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "blocklab"
PRIVATE = re.compile(r"^torch(\.[A-Za-z0-9]\w*)*\._(?!_)")  # torch._x, torch.utils._x, not __x


def _dotted(node: ast.AST) -> str | None:
    """`a.b.c` for an attribute chain on a plain name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def private_uses(source: str) -> list[tuple[int, str]]:
    """(line, name) of every private PyTorch attribute, import, or module imported by name
    (`importlib.import_module("torch._x")`) in `source`."""
    tree = ast.parse(source)
    inner = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Attribute) and id(node) not in inner:
            dotted = _dotted(node)
            if dotted:
                names.append(dotted)
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
            if node.module == "torch" or node.module.startswith("torch."):
                names += [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Call) and (_dotted(node.func) or "").split(".")[-1] in (
                "import_module", "__import__"):
            names += [arg.value for arg in node.args
                      if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
        found += [(node.lineno, name) for name in names if PRIVATE.match(name)]
    return sorted(set(found))


def test_the_check_finds_what_it_should():
    bad = ("import torch._dynamo\nfrom torch._inductor.utils import fresh_cache\n"
           "from torch import _dynamo\nimport torch\ntorch._dynamo.reset()\n"
           "x = torch.utils._pytree.tree_map\nimportlib.import_module('torch._inductor')\n")
    assert sorted({line for line, _ in private_uses(bad)}) == [1, 2, 3, 5, 6, 7]
    good = ('"""Mentions torch._dynamo."""\nimport sys\nimport torch\n'
            "if 'torch._dynamo' in sys.modules:\n    v = torch.__version__\n"
            "torch.compiler.reset()  # not torch._dynamo.reset()\n"
            "logging.getLogger('torch.utils._pytree')\n")
    assert private_uses(good) == []


def test_no_private_torch_in_src():
    paths = sorted(SRC.rglob("*.py"))
    assert len(paths) > 10  # the package was found
    uses = [f"{path.relative_to(SRC.parent)}:{line}: {name} is private PyTorch"
            for path in paths for line, name in private_uses(path.read_text(encoding="utf-8"))]
    assert not uses, "\n".join(uses)
