"""specgen's modules import one another without a cycle, and each layer only those below it.

Read statically, with `ast`, from every module of the package: top-level imports, imports inside
functions and `if TYPE_CHECKING:` blocks, relative imports, and `importlib.import_module(...)` /
`__import__(...)` calls whose name can be worked out from the source (a literal, an f-string or
`+` over names bound to literals, a subscript of a literal dict, a loop variable over a literal
collection). A cycle fails with its path, each step as `module:line`. A dynamic import whose
name comes from data at run time (the registry's generated packages) cannot be followed; each
such place is listed below with why, so that a new one, which could hide a cycle, fails too.

The same walk holds the layers of `LAYERS` apart: an import from a lower layer into a higher one
fails with where it is, even where no cycle closes yet.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

RUNTIME_NAMES = {
    # module -> the dynamic imports in it whose names only run time knows, and why
    "specgen.cli": "`specgen frames`: the generated codec and framing of the version asked for",
    "specgen.analyses.amqp_0_9_1": "the generated enums of the decoded version",
    "specgen.analyses.conversations": "the generated dialogue of the decoded version",
    "specgen.analyses.rabbitmq_stream": "the generated enums of the decoded version",
    "specgen.analyses.spec_rules": "the generated rules and spark_schema of the decoded version",
    "specgen.pipeline.columns": "the generated codec, spark_schema and framing of a version",
    "specgen.pipeline.pcap_job": "the generated framing module of the protocol",
}

LAYERS = ("specgen.pipeline", "specgen.analyses", "specgen.report", "specgen.cli")
"""Lowest first; each a module or a package, with all under it. A module of one layer may import
the layers below its own, never one above: the pipeline (decode, the sections a report is made
of) knows nothing of the protocols' analyses, the analyses nothing of the report that gathers
them, and none of them the command line."""


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int


@dataclass(frozen=True)
class Unresolved:
    module: str
    line: int
    text: str


def modules(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every module of `package` under `root`."""
    out = {}
    for path in sorted((root / package.replace(".", "/")).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


class _Names:
    """What a name may hold, as far as literals in the module say: module-level assignments of
    strings or collections of strings, and loop variables over them."""

    def __init__(self, tree: ast.Module) -> None:
        self.bound: dict[str, list[ast.expr]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.bound.setdefault(target.id, []).append(node.value)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                if node.value is not None:
                    self.bound.setdefault(node.target.id, []).append(node.value)
            elif isinstance(node, ast.For | ast.comprehension) and isinstance(
                node.target, ast.Name
            ):
                items = self.items(node.iter)
                if items is not None:
                    self.bound.setdefault(node.target.id, []).extend(ast.Constant(s) for s in items)

    def items(self, node: ast.expr, depth: int = 0) -> set[str] | None:
        """The strings a collection holds (a dict's keys), None when not all are literals."""
        if depth > 8:
            return None
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return _union(self.strings(e, depth + 1) for e in node.elts)
        if isinstance(node, ast.Dict):
            return _union(self.strings(k, depth + 1) for k in node.keys if k is not None)
        if isinstance(node, ast.Name) and node.id in self.bound:
            return _union(self.items(v, depth + 1) for v in self.bound[node.id])
        return None

    def strings(self, node: ast.expr, depth: int = 0) -> set[str] | None:
        """Every string `node` may evaluate to, None when that is not in the source."""
        if depth > 8:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return {node.value}
        if isinstance(node, ast.Name) and node.id in self.bound:
            return _union(self.strings(v, depth + 1) for v in self.bound[node.id])
        if isinstance(node, ast.JoinedStr):
            parts: list[set[str]] = []
            for value in node.values:
                part = (
                    self.strings(value.value, depth + 1)
                    if isinstance(value, ast.FormattedValue)
                    else self.strings(value, depth + 1)
                )
                if part is None:
                    return None
                parts.append(part)
            return {"".join(p) for p in itertools.product(*parts)}
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.strings(node.left, depth + 1), self.strings(node.right, depth + 1)
            if left is None or right is None:
                return None
            return {a + b for a in left for b in right}
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            values = [self._values(v) for v in self.bound.get(node.value.id, [])]
            return _union(values) if values else None
        return None

    def _values(self, node: ast.expr) -> set[str] | None:
        if isinstance(node, ast.Dict):
            return _union(self.strings(v) for v in node.values)
        return self.items(node)


def _union(sets: Iterator[set[str] | None] | list[set[str] | None]) -> set[str] | None:
    out: set[str] = set()
    for s in sets:
        if s is None:
            return None
        out |= s
    return out


def _dynamic(call: ast.Call) -> bool:
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    return name in ("import_module", "__import__") and bool(call.args)


def imports(name: str, path: Path, known: dict[str, Path]) -> tuple[list[Edge], list[Unresolved]]:
    """The modules of `known` that module `name` imports, wherever in it, and its dynamic
    imports whose names the source does not give."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    names = _Names(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    edges: list[Edge] = []
    unresolved: list[Unresolved] = []

    def add(target: str, line: int) -> None:
        # the longest known module the dotted name is or lies in (`a.b.func` -> `a.b`)
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            edges.append(Edge(name, target, line))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                full = f"{base}.{alias.name}"
                add(full if full in known else base, node.lineno)
        elif isinstance(node, ast.Call) and _dynamic(node):
            found = names.strings(node.args[0])
            if found is None:
                unresolved.append(Unresolved(name, node.lineno, ast.unparse(node)))
            else:
                for target in found:
                    add(target, node.lineno)
    return edges, unresolved


def graph(root: Path, package: str) -> tuple[dict[str, list[Edge]], list[Unresolved]]:
    known = modules(root, package)
    out: dict[str, list[Edge]] = {}
    unresolved: list[Unresolved] = []
    for name, path in known.items():
        edges, dynamic = imports(name, path, known)
        out[name] = edges
        unresolved += dynamic
    return out, unresolved


def cycles(edges: dict[str, list[Edge]]) -> list[list[Edge]]:
    """One cycle through each strongly connected group of modules (Tarjan), as its edges."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for e in edges.get(v, []):
            if e.target not in index:
                visit(e.target)
                low[v] = min(low[v], low[e.target])
            elif e.target in on_stack:
                low[v] = min(low[v], index[e.target])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return [_path(min(g), g, edges) for g in groups]


def _path(start: str, group: set[str], edges: dict[str, list[Edge]]) -> list[Edge]:
    """The shortest way from `start` back to itself inside `group` (breadth first)."""
    came: dict[str, Edge] = {}
    todo = [start]
    while todo:
        here = todo.pop(0)
        for e in sorted(edges.get(here, []), key=lambda e: (e.target, e.line)):
            if e.target not in group:
                continue
            if e.target == start:
                path = [e]
                while path[0].source != start:
                    path.insert(0, came[path[0].source])
                return path
            if e.target not in came:
                came[e.target] = e
                todo.append(e.target)
    raise AssertionError(f"{start} is in a cycle it cannot be reached back from")


def describe(cycle: list[Edge]) -> str:
    steps = [f"{e.source}:{e.line}" for e in cycle]
    return " -> ".join([*steps, cycle[0].source])


def layer(module: str, layers: tuple[str, ...]) -> int | None:
    """The index in `layers` of the one `module` is or lies in, None when it is in none."""
    for i, name in enumerate(layers):
        if module == name or module.startswith(f"{name}."):
            return i
    return None


def upward(edges: dict[str, list[Edge]], layers: tuple[str, ...]) -> list[Edge]:
    """The imports that run from a lower layer of `layers` into a higher one."""
    out = []
    for source in sorted(edges):
        low = layer(source, layers)
        for e in edges[source]:
            high = layer(e.target, layers)
            if low is not None and high is not None and high > low:
                out.append(e)
    return out


def test_specgen_has_no_import_cycle() -> None:
    edges, _ = graph(ROOT, "specgen")
    found = cycles(edges)
    assert not found, "import cycles (each step is where the import is):\n" + "\n".join(
        describe(c) for c in found
    )


def test_no_layer_imports_one_above_it() -> None:
    edges, _ = graph(ROOT, "specgen")
    # a layer renamed away would hold nothing and keep nothing apart
    empty = [name for i, name in enumerate(LAYERS) if all(layer(m, LAYERS) != i for m in edges)]
    assert not empty, f"LAYERS names what specgen no longer has: {', '.join(empty)}"
    found = upward(edges, LAYERS)
    assert not found, "imports from a lower layer into a higher one:\n" + "\n".join(
        f"{e.source}:{e.line} -> {e.target}" for e in found
    )


def test_every_dynamic_import_is_followed_or_explained() -> None:
    """A dynamic import the walk cannot follow could hide a cycle: each must be one of the
    known places that load generated code by a name only run time knows."""
    _, unresolved = graph(ROOT, "specgen")
    unexplained = [u for u in unresolved if u.module not in RUNTIME_NAMES]
    assert not unexplained, "\n".join(f"{u.module}:{u.line}: {u.text}" for u in unexplained)
    # and each explanation is still needed
    assert {u.module for u in unresolved} == set(RUNTIME_NAMES)


def test_the_front_ends_are_followed_through_their_table() -> None:
    """`frontends.frontend` imports its modules through importlib from a dict of names."""
    edges, _ = graph(ROOT, "specgen")
    targets = {e.target for e in edges["specgen.frontends"]}
    assert {"specgen.frontends.adoc", "specgen.frontends.rfc006"} <= targets


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("b_text", "line"),
    [
        ("from pkg import a\n", 1),
        ("def f():\n    from . import a\n", 2),
        ("import importlib\n\ndef f():\n    importlib.import_module('pkg.a')\n", 4),
        (
            "import importlib\n\nNAMES = ('a',)\n\ndef f():\n"
            "    for n in NAMES:\n        importlib.import_module(f'pkg.{n}')\n",
            7,
        ),
        ("import importlib\n\nX = {'k': 'pkg.a'}\n\ndef f(k):\n    __import__(X[k])\n", 6),
    ],
)
def test_a_cycle_fails_with_its_path(tmp_path: Path, b_text: str, line: int) -> None:
    """The walk sees a cycle however the way back is written, and prints it step by step."""
    root = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "import os\n\nfrom pkg.b import g\n",
            "pkg/b.py": b_text,
        },
    )
    edges, unresolved = graph(root, "pkg")
    assert not unresolved
    (cycle,) = cycles(edges)
    assert describe(cycle) == f"pkg.a:3 -> pkg.b:{line} -> pkg.a"


@pytest.mark.parametrize(
    "text",
    ["from pkg.top import f\n", "def g():\n    from pkg import top\n", "import pkg.top.inner\n"],
)
def test_a_lower_layer_importing_a_higher_one_is_found(tmp_path: Path, text: str) -> None:
    """No cycle needed: `low` reaching up into `top` is enough, however the import is written;
    `top` importing `low`, and a module in no layer importing either, are not."""
    root = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/low/__init__.py": "",
            "pkg/low/a.py": text,
            "pkg/low/b.py": "",
            "pkg/top/__init__.py": "from pkg.low import b\n",
            "pkg/top/inner.py": "",
            "pkg/free.py": "from pkg import low, top\n",
        },
    )
    edges, _ = graph(root, "pkg")
    assert cycles(edges) == []
    found = upward(edges, ("pkg.low", "pkg.top"))
    assert [(e.source, e.target) for e in found] == [
        ("pkg.low.a", "pkg.top.inner" if "inner" in text else "pkg.top")
    ]
    assert upward(edges, ("pkg.top", "pkg.low")) == [Edge("pkg.top", "pkg.low.b", 1)]


def test_a_name_known_only_at_run_time_is_reported(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "import importlib\n\ndef f(n):\n    return importlib.import_module(n)\n",
        },  # fmt: skip
    )
    edges, unresolved = graph(root, "pkg")
    assert cycles(edges) == []
    assert [(u.module, u.line) for u in unresolved] == [("pkg.a", 4)]
