"""The benchmarks' floors (bench/floors/) stand apart from the code they measure, and agree with it.

A floor is a hand-written codec of the frames a benchmark times, the yardstick of issue 28's
"specgen >= 0.8x the floor". If it built the generated classes or called generated helpers,
their cost would be in the yardstick too (issue 36). So:

  * no floor module imports specgen or specgen_codecs, or a bench script that does (read from
    their source with `ast`, and checked again by importing them in a fresh interpreter), and the
    check itself is shown to catch each way of doing so;
  * on every frame each benchmark times, the floor's decoded object agrees with the generated
    decoder's field by field (bench/floors/compare.py), and the floor's encoder given its own
    object, the generated encoder given its own, and the frame are the same bytes.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
FLOORS = BENCH / "floors"
GENERATED = {"specgen", "specgen_codecs"}

if str(BENCH) not in sys.path:  # the bench scripts import their neighbours (timing, floors)
    sys.path.insert(0, str(BENCH))


# ---- (a) what the floors import


def imports(source: str, package: str | None = None) -> Iterator[tuple[int, str]]:
    """(line, module) of every import in `source`: `import x.y`, `from x import y` (and `x.y`,
    which may be a module), relative ones resolved against `package`, and
    `importlib.import_module("x")` or `__import__("x")` with a literal name."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = (package or "").split(".") if package else []
                base = parts[: len(parts) - node.level + 1] if node.level <= len(parts) else []
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            yield node.lineno, module
            for alias in node.names:
                yield node.lineno, f"{module}.{alias.name}"
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            first = node.args[0]
            if name in ("import_module", "__import__") and isinstance(first, ast.Constant):
                if isinstance(first.value, str):
                    yield node.lineno, first.value


def _module_file(module: str, bench: Path) -> Path | None:
    """The file under `bench` that `module` names, as a bench script or floor imports it."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        path = bench.joinpath(*parts[:n])
        if path.with_suffix(".py").is_file():
            return path.with_suffix(".py")
        if (path / "__init__.py").is_file():
            return path / "__init__.py"
    return None


def _package_of(path: Path, bench: Path) -> str | None:
    """The package a bench file's relative imports start from (`floors` for bench/floors/x.py)."""
    return ".".join(path.relative_to(bench).parts[:-1]) or None


def reaches_generated(path: Path, bench: Path, seen: frozenset[Path] = frozenset()) -> list[str]:
    """The chain by which the bench file at `path` imports generated code (empty: it does not),
    following its imports of other bench files."""
    if path in seen:
        return []
    for line, module in imports(path.read_text(encoding="utf-8"), _package_of(path, bench)):
        where = f"{path.relative_to(bench)}:{line} imports {module}"
        if module.split(".")[0] in GENERATED:
            return [where]
        target = _module_file(module, bench)
        if target is not None and target != path:
            chain = reaches_generated(target, bench, seen | {path})
            if chain:
                return [where, *chain]
    return []


def forbidden(source: str, package: str | None = "floors", bench: Path = BENCH) -> list[str]:
    """What a floor module's `source` imports that it must not: specgen, specgen_codecs, or a
    bench file (under `bench`) that imports either, its chain of imports named."""
    out = []
    for line, module in imports(source, package):
        if module.split(".")[0] in GENERATED:
            out.append(f"line {line}: {module}")
            continue
        target = _module_file(module, bench)
        if target is not None:
            chain = reaches_generated(target, bench)
            if chain:
                out.append(f"line {line}: {module}, which " + " -> ".join(chain))
    return out


FLOOR_FILES = sorted(FLOORS.glob("*.py"))


def test_the_floors_are_there() -> None:
    names = {p.stem for p in FLOOR_FILES}
    assert {"streams", "amqp091", "amqp10", "amqp010", "compare"} <= names


@pytest.mark.parametrize("path", FLOOR_FILES, ids=lambda p: p.name)
def test_a_floor_imports_no_generated_code(path: Path) -> None:
    assert forbidden(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    "source",
    [
        "import specgen_codecs",
        "import specgen.locations",
        "from specgen_codecs.amqp_1_0 import values as t",
        "from specgen import locations",
        "import importlib\nimportlib.import_module('specgen_codecs.amqp_0_10')",
        "__import__('specgen')",
        "import codec",  # bench/codec.py imports specgen_codecs
        "from amqp10 import ours_objects",
        "from . import streams\nfrom codec import frames",
    ],
)
def test_the_import_check_catches_generated_code(source: str) -> None:
    assert forbidden(source) != []


def test_the_import_check_follows_imports_through_other_bench_files(tmp_path: Path) -> None:
    """A floor that imports a floor that imports a bench script that imports a helper that
    imports generated code is caught, and the chain is named."""
    bench = tmp_path / "bench"
    (bench / "floors").mkdir(parents=True)
    (bench / "floors" / "__init__.py").write_text("")
    (bench / "floors" / "shim.py").write_text("import script\n")
    (bench / "script.py").write_text("from helper import thing\n")
    (bench / "helper.py").write_text("import importlib\nimportlib.import_module('specgen')\n")
    (bench / "clean.py").write_text("import struct\n")
    found = forbidden("from . import shim\n", bench=bench)
    assert len(found) == 1 and "helper.py:2 imports specgen" in found[0], found
    assert forbidden("import clean\nfrom . import __init__\n", bench=bench) == []


@pytest.mark.parametrize(
    "source",
    ["import struct", "from floors import compare", "from . import compare", "import timing"],
)
def test_the_import_check_lets_plain_imports_be(source: str) -> None:
    assert forbidden(source) == []


def test_importing_the_floors_loads_no_generated_code() -> None:
    """In a fresh interpreter (this one has specgen loaded), importing every floor module leaves
    specgen and specgen_codecs unimported."""
    modules = ", ".join(f"floors.{p.stem}" for p in FLOOR_FILES if p.stem != "__init__")
    code = (
        f"import sys; sys.path.insert(0, {str(BENCH)!r}); import {modules}; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('specgen', 'specgen_codecs')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=BENCH
    )
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


# ---- (b) the floors agree with the generated codecs on every bench frame


def _agree(name: str, mine: Any, ours: Any) -> None:
    from floors.compare import differences

    problems = differences(mine, ours, name)
    assert problems == [], "\n".join(problems)


def _streams() -> list[tuple[str, bytes, str, Any, Any]]:
    import codec

    return [(n, f, s, d, e) for n, f, s, d, _, e in codec.frames() if d is not None]


STREAMS = _streams()


@pytest.mark.parametrize("name, frame, sender, fdec, fenc", STREAMS, ids=[c[0] for c in STREAMS])
def test_streams_floor_agrees(name: str, frame: bytes, sender: str, fdec: Any, fenc: Any) -> None:
    from specgen_codecs.rabbitmq_stream import v4_0 as rs

    ours, mine = rs.decode(frame, sender), fdec(frame)  # type: ignore[arg-type]
    _agree(name, mine, ours)
    assert fenc(mine) == rs.encode(ours) == frame


def test_every_streams_frame_but_the_sub_entry_batch_has_a_floor() -> None:
    import codec

    assert [n for n, _, _, d, _, _ in codec.frames() if d is None] == [
        "PublishV1 sub-entry gzip x100"
    ]


def _amqp091() -> list[tuple[str, Any, Any, Any]]:
    import amqp091

    return [(n, m, d, e) for n, m, d, _, e, _ in amqp091.cells()]


AMQP091 = _amqp091()


@pytest.mark.parametrize("name, msg, fdec, fenc", AMQP091, ids=[c[0] for c in AMQP091])
def test_amqp091_floor_agrees(name: str, msg: Any, fdec: Any, fenc: Any) -> None:
    from specgen_codecs.amqp_0_9_1 import v0_9_1 as g

    frame = g.encode(msg)
    ours, mine = g.decode(frame), fdec(frame)
    _agree(name, mine, ours)
    assert fenc(mine) == g.encode(ours) == frame


def _amqp10() -> list[Any]:
    import amqp10

    return amqp10.cases()


@pytest.mark.parametrize("case", _amqp10(), ids=lambda c: c.name)
def test_amqp10_floor_agrees(case: Any) -> None:
    """On specgen's bytes and on every installed peer's (proton's; `_pyamqp`'s when
    azure-servicebus is there): the floor's objects agree with the generated decoder's, the
    encodings seen included; the floor writes specgen's bytes; and bench/amqp10.py's own check
    (every codec reading every codec's bytes) finds nothing."""
    import amqp10

    from specgen_codecs.amqp_1_0 import v1_0 as amqp

    specgen = case.peers["specgen"]
    frame = specgen.encode()
    for writer, data in {"specgen": frame, "proton": case.peers["proton"].encode()}.items():
        _agree(f"{case.name} ({writer}'s bytes)", case.floor.decode(data), specgen.decode(data))
    ours, msg = specgen.decode(frame)
    assert case.floor.encode() == amqp.encode(ours) == frame
    if msg is not None:
        assert amqp.encode_message(msg) == ours.payload
    encoded, problems = amqp10.check(case)
    assert problems == [], "\n".join(problems)
    assert encoded["specgen"] == frame


def _amqp010() -> list[tuple[str, bytes, Any, Any, Any, Any]]:
    import amqp010

    return amqp010.cases()


AMQP010 = _amqp010()


@pytest.mark.parametrize("name, data, dec, enc, fdec, fenc", AMQP010, ids=[c[0] for c in AMQP010])
def test_amqp010_floor_agrees(
    name: str, data: bytes, dec: Any, enc: Any, fdec: Any, fenc: Any
) -> None:
    ours, mine = dec(data), fdec(data)
    _agree(name, mine, ours)
    assert fenc(mine) == enc(ours) == data
