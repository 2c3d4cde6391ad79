"""A generated package tried as its users would: imported module by module in a fresh
interpreter, and its own conformance tests run there; and the text its modules hold."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

# root is the package `generate --out` wrote (its protocol packages share its runtime modules)
_IMPORT_ALL = """
import importlib, pathlib, sys
root = pathlib.Path(sys.argv[1])
for p in sorted(root.rglob("*.py")):
    if p.name.startswith("test_"):
        continue
    parts = (root.name, *p.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    importlib.import_module(".".join(parts))
"""


def _python(args: list[str], root: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root.parent)}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=900
    )


def import_everything(root: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Import every module under `root` (the package `generate --out` wrote), run in `cwd`."""
    return _python(["-c", _IMPORT_ALL, str(root)], root, cwd)


def run_own_tests(root: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """pytest on every generated test module under `root`."""
    tests = sorted(str(p) for p in root.rglob("test_*.py"))
    assert tests, f"no generated tests under {root}"
    return _python(["-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests], root, cwd)


def string_constants(root: Path) -> list[str]:
    """Every string constant of every module under `root`, as Python reads it."""
    return [
        node.value
        for p in sorted(root.rglob("*.py"))
        for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]
