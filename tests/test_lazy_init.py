"""The fused packages' classes get their `__init__` from their first instance (`specgen_codecs.lazy_init.structure`):
it must take and store what @dataclass(init=True) would, and importing must compile none."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import subprocess
import sys

import pytest

# the version packages whose classes are @structure (the fused back-end's)
VERSIONS = [
    "specgen_codecs.amqp_0_9_1.v0_9_1",
    "specgen_codecs.amqp_0_9_1.rabbitmq",
    "specgen_codecs.amqp_fast_0_8.v0_8",
    "specgen_codecs.rabbitmq_stream.v4_0",
    "specgen_codecs.rabbitmq_stream.early",
]


def _classes(version: str) -> list[type]:
    commands = importlib.import_module(f"{version}.commands")
    base = importlib.import_module(version.rsplit(".", 1)[0] + ".base")
    found = {
        id(c): c
        for c in vars(commands).values()
        if isinstance(c, type) and issubclass(c, base.Structure) and dataclasses.is_dataclass(c)
    }
    return sorted(found.values(), key=lambda c: c.__name__)


def _reference(cls: type) -> type:
    """What @dataclass(init=True) makes of the same fields, to compare signatures with."""
    spec = []
    for f in dataclasses.fields(cls):
        kw: dict[str, object] = {"kw_only": f.kw_only}
        if f.default is not dataclasses.MISSING:
            kw["default"] = f.default
        if f.default_factory is not dataclasses.MISSING:
            kw["default_factory"] = f.default_factory
        spec.append((f.name, object, dataclasses.field(**kw)))  # type: ignore[call-overload]
    return dataclasses.make_dataclass(cls.__name__, spec)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_class_takes_what_dataclass_would(version: str) -> None:
    classes = _classes(version)
    assert len(classes) > 10
    for cls in classes:
        fields = dataclasses.fields(cls)
        ref = _reference(cls)
        # every field given by keyword, each a distinct object: each lands in its own attribute
        given = {f.name: object() for f in fields}
        msg = cls(**given)
        assert all(getattr(msg, n) is v for n, v in given.items()), cls
        # positional as @dataclass orders them (kw_only ones by keyword)
        positional = [given[f.name] for f in fields if not f.kw_only]
        keywords = {f.name: given[f.name] for f in fields if f.kw_only}
        again = cls(*positional, **keywords)
        assert all(getattr(again, n) is v for n, v in given.items()), cls
        # only the mandatory fields: the others take @dataclass's defaults, a fresh one each time
        mandatory = {
            f.name: given[f.name]
            for f in fields
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        }
        ours, theirs, second = cls(**mandatory), ref(**mandatory), cls(**mandatory)
        for f in fields:
            assert getattr(ours, f.name) == getattr(theirs, f.name), (cls, f.name)
            if f.default_factory is not dataclasses.MISSING:
                assert getattr(ours, f.name) is not getattr(second, f.name), (cls, f.name)
        # the same parameters, in the same order, of the same kinds
        mine = inspect.signature(cls.__init__).parameters
        want = inspect.signature(ref.__init__).parameters
        assert [(p.name, p.kind) for p in mine.values()] == [
            (p.name, p.kind) for p in want.values()
        ], cls
        assert cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__"


def test_a_missing_field_or_an_unknown_one_is_refused_as_dataclass_does() -> None:
    from specgen_codecs.amqp_0_9_1.v0_9_1 import BasicQos

    with pytest.raises(TypeError, match="prefetch_count"):
        BasicQos(1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="nonsense"):
        BasicQos(1, 2, nonsense=3)  # type: ignore[call-arg]
    assert BasicQos(1, 2) == BasicQos(prefetch_size=1, prefetch_count=2, global_=False, channel=0)


def test_importing_compiles_no_init_and_the_first_instance_compiles_its_class_only() -> None:
    code = """
import specgen_codecs.amqp_0_9_1.v0_9_1 as v
from specgen_codecs.amqp_0_9_1.base import Structure
classes = [c for c in vars(v).values() if isinstance(c, type) and issubclass(c, Structure)]
assert classes and all("__init__" not in vars(c) for c in classes)
v.BasicAck(1)
assert "__init__" in vars(v.BasicAck)
assert all("__init__" not in vars(c) for c in classes if c is not v.BasicAck)
frame = v.BasicQos(5, 6).encode()
assert v.decode(frame) == v.BasicQos(5, 6) and "__init__" in vars(v.BasicQos)
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


@pytest.mark.parametrize("version", VERSIONS)
def test_the_compiled_build_writes_out_the_same_init(version: str) -> None:
    """specgen.compiled stages each @structure with its `__init__` written out (mypyc compiles
    no class with an unknown decorator): the same parameters, of the same kinds and defaults."""
    import ast
    from pathlib import Path

    from specgen.compiled import prepare

    written: dict[str, ast.FunctionDef] = {}
    for path in sorted({Path(inspect.getfile(cls)) for cls in _classes(version)}):
        tree = ast.parse(prepare(path.read_text(encoding="utf-8")))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for stmt in node.body:
                    if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
                        written[f"{path}:{node.name}"] = stmt
    for cls in _classes(version):
        node = written[f"{inspect.getfile(cls)}:{cls.__name__}"]
        args = node.args
        ours = [(a.arg, "positional") for a in args.args[1:]] + [
            (a.arg, "keyword") for a in args.kwonlyargs
        ]
        params = inspect.signature(cls.__init__).parameters.values()
        want = [(p.name, "keyword" if p.kind is p.KEYWORD_ONLY else "positional") for p in params][
            1:
        ]
        assert ours == want, cls
        defaults = [ast.literal_eval(d) for d in args.defaults] + [
            ast.literal_eval(d) for d in args.kw_defaults if d is not None
        ]
        assert defaults == [p.default for p in params if p.default is not p.empty], cls
