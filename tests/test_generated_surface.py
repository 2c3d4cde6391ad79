"""Every generated version package has one surface, whatever protocol it speaks.

`decode(buf, sender=None)`, `encode(msg)` and `FrameReader` in every package `specgen list`
names; every class generated for a message, composite or struct says where the spec defines it
(`Spec: FILE:LINE:COLUMN`, and that line of that file names it); the spec's prose appears once
per docstring; identities in the code are written as hex escapes, not as the characters that
happen to share their byte values.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path
from types import ModuleType

import pytest

from specgen.specs import ROOT, SpecVersion, registry

VERSIONS = registry()


def _package(spec: SpecVersion) -> ModuleType:
    return importlib.import_module(f"specgen_codecs.{spec.package}.{spec.module}")


@pytest.mark.parametrize("spec", VERSIONS, ids=lambda s: s.qualified)
def test_every_version_package_decodes_encodes_and_reads_frames(spec: SpecVersion) -> None:
    package = _package(spec)
    for name in ("decode", "encode", "FrameReader"):
        assert hasattr(package, name), f"{spec.qualified} has no {name}"
    params = list(inspect.signature(package.decode).parameters)
    assert params[1] == "sender", params


def _modules(spec: SpecVersion) -> list[Path]:
    """The version's modules, and the package's shared one (classes its versions lay out alike)."""
    folder = ROOT / "generated" / spec.package / spec.module
    shared = sorted((ROOT / "generated" / spec.package).glob("shared.py"))
    return sorted(p for p in folder.glob("*.py") if not p.name.startswith("test_")) + shared


def _classes(spec: SpecVersion) -> list[tuple[Path, ast.ClassDef, str]]:
    out = []
    for path in _modules(spec):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef):
                out.append((path, node, ast.get_docstring(node, clean=False) or ""))
    return out


@pytest.mark.parametrize("spec", VERSIONS, ids=lambda s: s.qualified)
def test_spec_lines_point_at_the_definition(spec: SpecVersion) -> None:
    found = 0
    for path, node, doc in _classes(spec):
        for m in re.finditer(r"Spec: (\S+):(\d+):(\d+)", doc):
            found += 1
            lines = (ROOT / m[1]).read_text(encoding="utf-8").splitlines()
            line = int(m[2])
            assert 1 <= line <= len(lines), f"{path.name}: {node.name}: {m[0]}"
    # messages, composites and structs are most of a codec module's classes
    assert found >= 10, f"{spec.qualified}: {found} Spec: lines"


@pytest.mark.parametrize("spec", VERSIONS, ids=lambda s: s.qualified)
def test_prose_appears_once_per_docstring(spec: SpecVersion) -> None:
    for path, node, doc in _classes(spec):
        paragraphs = [" ".join(p.split()) for p in doc.split("\n\n") if p.strip()]
        repeated = {p for p in paragraphs if paragraphs.count(p) > 1 and len(p) > 20}
        assert not repeated, f"{path.name}: {node.name} repeats {sorted(repeated)[0][:60]!r}"


def test_body_keys_are_written_as_hex_escapes() -> None:
    # the version's codec, and the classes it shares with the package's other versions
    text = "".join(
        (ROOT / "generated/amqp_0_9_1" / rel).read_text(encoding="utf-8")
        for rel in ("v0_9_1/commands.py", "shared.py")
    )
    keys = re.findall(
        r'parts\.append\(b"([^"]*)"\)  # the body key: \((0x\w+), (\d+), (\d+)\)', text
    )
    assert len(keys) > 40
    for literal, _, class_id, method_id in keys:
        assert literal == "".join(
            f"\\x{b:02x}"
            for b in int(class_id).to_bytes(2, "big") + int(method_id).to_bytes(2, "big")
        )
