"""The optional compiled build of the generated codecs: the same modules, compiled with mypyc.

    python -m specgen.compiled --out DIR [PACKAGE ...]
    PYTHONPATH=DIR python ...        # `import specgen_codecs` is then the compiled build

The pure-Python modules stay the reference; this compiles them unchanged. It works on whatever
`specgen_codecs` holds (the checkout's `generated/`, or the installed package), one protocol
package at a time, into DIR only: DIR/specgen_codecs is a copy of the package's Python files
with a compiled extension module beside each compiled one (Python's import system prefers the
extension), and DIR/build holds mypyc's C sources and objects. Nothing is written into the
repository or into what pip installed.

What is compiled: every module of a protocol package except its tests (`test_*.py`) and its
Arrow/Spark schema modules (`*spark*.py`): those build Arrow columns through pyarrow, which has
no type information, so mypyc could only make generic calls, and they are no codec's hot path
(and would make pyarrow a requirement of the build). The packages' `__init__.py` files are
compiled too: they subclass the compiled `FrameReader`, and an interpreted class cannot
subclass a compiled one.

Each package is rebuilt only when its sources change: DIR/.stamps/<package> holds the hash of
its Python files, of mypy's version and of the interpreter's ABI; a build whose stamp matches
is left as it is. Needs mypy (`pip install 'specgen[compiled]'`) and a C compiler with the
interpreter's headers.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.util
import inspect
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Sequence
from pathlib import Path

PACKAGE = "specgen_codecs"
_SKIP = ("test_*.py", "*spark*.py")


def source_root() -> Path:
    """The folder `specgen_codecs` is imported from: the checkout's generated/ when specgen runs
    from a checkout, else the installed package."""
    import specgen.locations  # noqa: F401  (in a checkout: specgen_codecs is its generated/)

    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{PACKAGE} is not importable: install specgen or run from a checkout")
    return Path(next(iter(spec.submodule_search_locations)))


def packages(root: Path) -> list[str]:
    """The protocol packages: the sub-folders of specgen_codecs that are packages."""
    return sorted(p.name for p in root.iterdir() if (p / "__init__.py").is_file())


def compiled_modules(folder: Path) -> list[Path]:
    """The modules of one protocol package that are compiled, relative to the package root."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        if any(path.match(pattern) for pattern in _SKIP):
            continue
        found.append(path)
    return found


def _abi() -> str:
    return f"{sys.implementation.cache_tag} {sysconfig.get_config_var('EXT_SUFFIX')}"


def stamp(folder: Path) -> str:
    """What a package's build depends on: its Python files, this module (what is compiled and
    how), mypy's version and the interpreter."""
    from mypy.version import __version__ as mypy_version

    digest = hashlib.sha256(f"{mypy_version} {_abi()}".encode())
    digest.update(f"{_SKIP} {_SETUP} {_BUILD_EXT}".encode())  # what is compiled, and how
    steps = (
        _after_preamble,
        structures_written_out,
        _init_param,
        hoist_classvars,
        builtin_subclasses_not_native,
        annotate_none_locals,
        prepare,
    )
    for step in steps:
        digest.update(inspect.getsource(step).encode())
    for path in sorted(folder.rglob("*.py")):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _copy_sources(root: Path, out: Path, package: str | None) -> None:
    """Copy the package's Python files (one protocol package, and the top level) into
    out/specgen_codecs, leaving the compiled extension modules already there."""
    target = out / PACKAGE
    target.mkdir(parents=True, exist_ok=True)
    # the top level: its __init__, py.typed and the runtime every package shares (interpreted)
    for path in [*root.glob("*.py"), root / "py.typed"]:
        if path.exists():
            shutil.copy2(path, target / path.name)
    if package is None:
        return
    shutil.rmtree(target / package, ignore_errors=True)
    shutil.copytree(
        root / package,
        target / package,
        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd"),
    )


def _is_dataclass(node: ast.ClassDef) -> bool:
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name == "dataclass":
            return True
    return False


def _is_classvar(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.AnnAssign):
        return False
    ann = stmt.annotation.value if isinstance(stmt.annotation, ast.Subscript) else stmt.annotation
    name = ann.attr if isinstance(ann, ast.Attribute) else getattr(ann, "id", "")
    return name == "ClassVar"


def hoist_classvars(source: str) -> str:
    """Work around mypyc/mypyc#1122 (open in mypy 2.4): mypyc hands a compiled dataclass's
    `ClassVar` attributes to `dataclasses` as fields, so a class whose ClassVars have values
    fails at import ("non-default argument ... follows default argument"). The ClassVars (and
    the attribute docstrings after them) move to a plain base class `_<Name>ClassVars` defined
    just before the dataclass, which `dataclasses` does not look into: the class keeps every
    attribute and value. Applied to the staged copy only; a no-op on code without such
    classes (the templates' proposed shape)."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []  # (first line, end line, replacement), 0-based
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef) or not _is_dataclass(node):
            continue
        body = node.body
        moved: list[ast.stmt] = []
        for i, stmt in enumerate(body):
            if _is_classvar(stmt):
                moved.append(stmt)
                nxt = body[i + 1] if i + 1 < len(body) else None
                if (
                    isinstance(nxt, ast.Expr)
                    and isinstance(nxt.value, ast.Constant)
                    and isinstance(nxt.value.value, str)
                ):
                    moved.append(nxt)
        if not moved:
            continue
        indent = " " * node.col_offset
        base = f"_{node.name}ClassVars"
        if node.keywords:
            continue
        # the base takes the class's own bases, so the chain stays single (mypyc compiles no
        # multiple inheritance): Name -> _NameClassVars -> the bases it had
        bases = ", ".join(ast.get_source_segment(source, b) or "" for b in node.bases)
        block = [f"{indent}class {base}({bases}):\n" if bases else f"{indent}class {base}:\n"]
        for stmt in moved:
            assert stmt.end_lineno is not None
            block.extend(lines[stmt.lineno - 1 : stmt.end_lineno])
        block.append("\n\n")
        if len(moved) == len(body):
            edits.append(
                (
                    node.end_lineno or node.lineno,
                    node.end_lineno or node.lineno,
                    f"{indent}    pass\n",
                )
            )
        for stmt in moved:
            assert stmt.end_lineno is not None
            edits.append((stmt.lineno - 1, stmt.end_lineno, ""))
        # the class line: add the base (the first line that starts `class Name`)
        head = next(
            n for n in range(node.lineno - 1, len(lines)) if lines[n].lstrip().startswith("class ")
        )
        line = lines[head]
        at = line.index(node.name) + len(node.name)
        stop = line.rindex(")") + 1 if node.bases else at
        assert line[stop:].strip() == ":", f"a class header on one line: {line!r}"
        new = line[:at] + f"({base})" + line[stop:]
        edits.append((head, head + 1, new))
        first = min([d.lineno for d in node.decorator_list] + [node.lineno]) - 1
        edits.append((first, first, "".join(block)))
    for start, end, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        lines[start:end] = [text] if text else []
    out = "".join(lines)
    ast.parse(out)
    return out


_BUILTINS = {"int", "float", "str", "bytes", "bytearray", "dict", "list", "tuple", "set"}


def _after_preamble(tree: ast.Module) -> int:
    """The line after the module docstring and its `from __future__` imports: where an import
    the staged copy needs goes."""
    at = 0
    for i, stmt in enumerate(tree.body):
        docstring = i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
        if docstring or (isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"):
            at = stmt.end_lineno or stmt.lineno
    return at


def builtin_subclasses_not_native(source: str) -> str:
    """mypyc rejects a compiled (native) class that subclasses a builtin type other than
    object and Exception ("Inheriting from most builtin types is unimplemented"): the AMQP value
    types (`class Table(dict[str, Any])`, `class Symbol(str)`, ...). Such classes are marked
    `@mypyc_attr(native_class=False)`: they stay ordinary Python classes inside the compiled
    module, as they are in the pure build (mypy_extensions, which mypy installs, then is
    imported at run time). Applied to the staged copy only."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    marks = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        names = set()
        for base in node.bases:
            target = base.value if isinstance(base, ast.Subscript) else base
            if isinstance(target, ast.Name):
                names.add(target.id)
        if names & _BUILTINS:
            first = min([d.lineno for d in node.decorator_list] + [node.lineno]) - 1
            marks.append((first, " " * node.col_offset))
    if not marks:
        return source
    for first, indent in sorted(marks, reverse=True):
        lines.insert(first, f"{indent}@mypyc_attr(native_class=False)\n")
    lines.insert(_after_preamble(tree), "\nfrom mypy_extensions import mypyc_attr\n")
    out = "".join(lines)
    ast.parse(out)
    return out


def annotate_none_locals(source: str) -> str:
    """mypyc rejects a local variable whose only assignment is `x = None` ("Local variable "x"
    has inferred type None; add an annotation"), which mypy accepts: the 0-9-1 field-table
    decoder's void value (`value_19 = None`). Such an assignment becomes `x: None = None`.
    Applied to the staged copy only."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    edits = []
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        stores: dict[str, int] = {}
        for node in ast.walk(func):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                stores[node.id] = stores.get(node.id, 0) + 1
        for node in ast.walk(func):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Constant)
                and node.value.value is None
                and stores[node.targets[0].id] == 1
            ):
                edits.append((node.lineno - 1, node.targets[0]))
    for row, target in sorted(edits, key=lambda e: e[0], reverse=True):
        line = lines[row]
        at = target.end_col_offset
        assert at is not None and line[at:].lstrip().startswith("= None")
        lines[row] = line[:at] + ": None" + line[at:]
    out = "".join(lines)
    ast.parse(out)
    return out


def _decorator_name(dec: ast.expr) -> str:
    return dec.id if isinstance(dec, ast.Name) else ""


def _init_param(source: str, stmt: ast.AnnAssign) -> tuple[str, str, bool]:
    """A field's `__init__` parameter, the line that stores it, and whether it is keyword-only:
    as the fused packages' `lazy_init.init_source` makes them at run time."""
    assert isinstance(stmt.target, ast.Name)
    name = stmt.target.id
    ann = ast.get_source_segment(source, stmt.annotation)
    value = stmt.value
    if value is None:
        return f"{name}: {ann}", f"self.{name} = {name}", False
    if isinstance(value, ast.Call) and ast.unparse(value.func) in ("dataclasses.field", "field"):
        kw = {k.arg: k.value for k in value.keywords}
        flag = kw.get("kw_only")
        only = isinstance(flag, ast.Constant) and flag.value is True
        if "default_factory" in kw:
            make = ast.unparse(kw["default_factory"])
            return (
                f"{name}: {ann} | None = None",
                f"self.{name} = {make}() if {name} is None else {name}",
                only,
            )
        return f"{name}: {ann} = {ast.unparse(kw['default'])}", f"self.{name} = {name}", only
    return f"{name}: {ann} = {ast.unparse(value)}", f"self.{name} = {name}", False


def structures_written_out(source: str) -> str:
    """A fused package's classes are `@structure`s, whose `__init__` the first instance compiles
    (`lazy_init.structure`); mypyc compiles no class with a decorator it does not know ("Non-extension
    classes may not inherit from extension classes"), and an `__init__` made at run time would
    stay interpreted. Each becomes `@dataclass(slots=True, init=False, repr=False, eq=False)`
    with its `__init__` written out, the same parameters and stores. Applied to the staged copy
    only. So is `lazy_init.structure` itself: `@dataclass_transform` (for type checkers) would set
    an attribute on a compiled function, which has none, and nothing here uses it."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []
    classes = 0  # the @structure classes rewritten: they need `dataclass` imported
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "structure":
            for dec in node.decorator_list:
                if isinstance(dec, ast.Call) and ast.unparse(dec.func) == "dataclass_transform":
                    edits.append((dec.lineno - 1, dec.end_lineno or dec.lineno, ""))
        if not isinstance(node, ast.ClassDef):
            continue
        decs = [d for d in node.decorator_list if _decorator_name(d) == "structure"]
        if not decs:
            continue
        classes += 1
        indent = " " * (node.col_offset + 4)
        params: list[str] = []
        stores: list[str] = []
        keyword: list[str] = []
        for field in node.body:
            if isinstance(field, ast.AnnAssign) and not _is_classvar(field):
                param, store, only = _init_param(source, field)
                (keyword if only else params).append(param)
                stores.append(store)
        signature = ", ".join(["self", *params, *(["*", *keyword] if keyword else [])])
        code = "".join(f"{indent}    {s}\n" for s in stores or ["pass"])
        init = f"\n{indent}def __init__({signature}) -> None:\n{code}"
        end = node.end_lineno or node.lineno
        edits.append((end, end, init))
        dec = decs[0]
        row = dec.lineno - 1
        line = lines[row]
        lines_dec = "@dataclass(slots=True, init=False, repr=False, eq=False)"
        edits.append((row, row + 1, line[: dec.col_offset - 1] + lines_dec + "\n"))
    if not edits:
        return source
    for start, end, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        lines[start:end] = [text] if text else []
    if classes:
        lines.insert(_after_preamble(tree), "\nfrom dataclasses import dataclass\n")
    out = "".join(lines)
    ast.parse(out)
    return out


def prepare(source: str) -> str:
    """A generated module as it is compiled: the four work-arounds above, nothing else."""
    return annotate_none_locals(
        builtin_subclasses_not_native(hoist_classvars(structures_written_out(source)))
    )


_SETUP = """
import sys
from setuptools import setup
from mypyc.build import mypycify
build_temp, paths = sys.argv[1], sys.argv[2:]
setup(
    name="specgen_codecs_compiled",
    ext_modules=mypycify(paths, opt_level="3", debug_level="0"),
    script_args=[*BUILD_EXT, build_temp],
)
"""
# setuptools' own options, handed to the script above (kept out of its text: they are not ours)
_BUILD_EXT = ["-q", "build_ext", "--inplace", "--build-temp"]


def build_package(root: Path, out: Path, package: str, *, force: bool = False) -> float | None:
    """Compile one protocol package into out; the seconds it took, or None if its stamp says
    the build in out is current."""
    folder = root / package
    want = stamp(folder)
    stamp_file = out / ".stamps" / package
    if not force and stamp_file.is_file() and stamp_file.read_text() == want:
        return None
    started = time.perf_counter()
    _copy_sources(root, out, package)
    stamp_file.unlink(missing_ok=True)
    for path in compiled_modules(folder):
        staged = out / PACKAGE / path.relative_to(root)
        staged.write_text(prepare(staged.read_text(encoding="utf-8")), encoding="utf-8")
    modules = [
        (out / PACKAGE / path.relative_to(root)).relative_to(out).as_posix()
        for path in compiled_modules(folder)
    ]
    build_temp = out / "build" / package
    env = dict(os.environ, PYTHONPATH=str(out), MYPY_CACHE_DIR=str(out / "build" / ".mypy_cache"))
    subprocess.run(
        [sys.executable, "-c", f"BUILD_EXT = {_BUILD_EXT!r}\n{_SETUP}", str(build_temp), *modules],
        cwd=out,
        env=env,
        check=True,
    )
    stamp_file.parent.mkdir(parents=True, exist_ok=True)
    stamp_file.write_text(want)
    return time.perf_counter() - started


def build(out: Path, only: Sequence[str] = (), *, force: bool = False) -> dict[str, float | None]:
    """Compile the protocol packages (all, or those named) into out; seconds per package (None:
    already current). Then `out` on sys.path first gives the compiled build."""
    from specgen.locations import CHECKOUT

    root = source_root()
    out = out.resolve()
    # never into the checkout, the sources or what pip installed (nor above them)
    for tree in (root.resolve(), root.resolve().parent, CHECKOUT and CHECKOUT.resolve()):
        if tree is not None and (out.is_relative_to(tree) or tree.is_relative_to(out)):
            raise SystemExit(f"--out {out} overlaps {tree}; name a folder outside it")
    _copy_sources(root, out, None)
    names = list(only) or packages(root)
    unknown = sorted(set(names) - set(packages(root)))
    if unknown:
        raise SystemExit(f"no such package in {root}: {', '.join(unknown)}")
    return {name: build_package(root, out, name, force=force) for name in names}


def is_compiled(module: object) -> bool:
    """Whether a module was loaded from a compiled extension (not from its .py file)."""
    path = getattr(module, "__file__", None) or ""
    return path.endswith(tuple(s for s in (sysconfig.get_config_var("EXT_SUFFIX"), ".so") if s))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m specgen.compiled", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--out", type=Path, required=True, help="folder to build into")
    parser.add_argument("--force", action="store_true", help="rebuild even if current")
    parser.add_argument("packages", nargs="*", help="protocol packages (default: all)")
    args = parser.parse_args(argv)
    total = time.perf_counter()
    for name, seconds in build(args.out, args.packages, force=args.force).items():
        print(f"{name}: " + ("current" if seconds is None else f"compiled in {seconds:.0f} s"))
    print(f"done in {time.perf_counter() - total:.0f} s; use: PYTHONPATH={args.out.resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
