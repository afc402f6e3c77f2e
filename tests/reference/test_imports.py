"""blocklab.reference is the independent side of every check: NumPy and the stdlib only, plus
the package's error types and input rules (`blocklab.errors`, `blocklab.checks`: leaf modules
with no maths in them)."""

import ast
from pathlib import Path

import blocklab.reference as reference

ALLOWED_TOP_LEVEL = {"__future__", "collections", "math", "numbers", "numpy"}
PACKAGE_DIR = Path(reference.__file__).parent


def _imports(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield 0, alias.name
        elif isinstance(node, ast.ImportFrom):
            yield node.level, node.module or ""


def test_imports_only_numpy_stdlib_and_itself():
    files = sorted(PACKAGE_DIR.glob("*.py"))
    assert files
    for path in files:
        for level, module in _imports(path):
            if level == 1:  # from .sibling import ...: stays inside blocklab.reference
                continue
            assert level == 0, f"{path.name} reaches outside the package: level {level}"
            if module in ("blocklab.errors", "blocklab.checks"):
                continue
            assert module.split(".")[0] in ALLOWED_TOP_LEVEL, f"{path.name} imports {module}"


def test_all_names_exist_and_are_sorted():
    assert reference.__all__ == sorted(reference.__all__)
    for name in reference.__all__:
        assert hasattr(reference, name), name
