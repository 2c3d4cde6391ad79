"""specgen on the spec documents other projects carry (tests/real_specs/, issue 35 part 6).

Each document of tests/real_specs/manifest.toml goes through the command line as a user runs
it, from a folder of their own (tests/real_copies.py): `specgen ir` succeeds and reads it as
the protocol the manifest names; `specgen lint` reports (exit 0, or 1) and never crashes;
`specgen generate DOC --out DIR` succeeds; the package imports in a fresh interpreter and has
one command per command the document declares, counted here from the XML, not by specgen;
the package's own conformance tests (a round trip of every command) pass; and `specgen diff`
against the nearest shipped version answers without crashing, listing no change whose two
sides read the same.

The copies are kept as their projects have them (SOURCES.md names each one's commit and git
blob, checked here), so what fails is specgen's to fix, never the document's.
"""

from __future__ import annotations

import hashlib
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from real_copies import HERE, Document, Run, Workspace, changes, documents, reads_the_same

DOCS = documents()
IDS = [doc.path for doc in DOCS]
# what 1.0 types provide to be a frame body: a performative, or a SASL frame
FRAME_ARCHETYPES = {"frame", "sasl-frame"}


def declared_commands(path: Path) -> int:
    """The commands an AMQP XML document declares, counted from its elements alone: 0-8, 0-9
    and 0-9-1 declare <method>s in their <class>es; 0-10 <control>s and <command>s; 1.0
    <type>s that provide a frame (`provides="frame"` or `"sasl-frame"`, among others)."""
    elements = list(ET.parse(path).getroot().iter())

    def local(element: ET.Element) -> str:
        return element.tag.rsplit("}", 1)[-1]  # 0-10's and 1.0's elements are namespaced

    methods = [e for e in elements if local(e) == "method"]
    controls = [e for e in elements if local(e) in ("control", "command")]
    frames = [
        e
        for e in elements
        if local(e) == "type"
        and FRAME_ARCHETYPES & set(re.split(r"[\s,]+", e.get("provides", "").strip()))
    ]
    kinds = [found for found in (methods, controls, frames) if found]
    assert len(kinds) <= 1, f"{path.name} declares commands of more than one family"
    return len(kinds[0]) if kinds else 0


def _blob(path: Path) -> str:
    """The file's git blob id, as `git hash-object` computes it."""
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


# ---- the corpus itself


def test_each_copy_is_the_one_its_sources_name() -> None:
    """Every document here is listed in SOURCES.md in its project's section with the git blob
    it has, so none was edited (line endings and byte-order marks included)."""
    sources = (HERE / "SOURCES.md").read_text(encoding="utf-8")
    copies = sorted(p for p in HERE.rglob("*.xml"))
    assert len(copies) >= 12
    for copy in copies:
        rel = copy.relative_to(HERE)
        blob = _blob(copy)
        rows = [line for line in sources.splitlines() if blob in line]
        assert rows, f"{rel}: no row of SOURCES.md gives its blob {blob}"
        name = rel.relative_to(rel.parts[0]).as_posix()  # under its project's folder
        assert any(row.startswith(f"| {name} |") for row in rows), (rel, rows)


def test_the_manifest_covers_the_families_and_projects() -> None:
    assert len({doc.path for doc in DOCS}) == len(DOCS)
    assert all(doc.file.is_file() for doc in DOCS), [d.path for d in DOCS if not d.file.is_file()]
    assert len({doc.project for doc in DOCS}) >= 5
    assert {"amqp-0-9-1", "amqp-0-10", "amqp-1-0"} <= {doc.protocol for doc in DOCS}
    versions = {doc.spec.split()[1].rstrip(",") for doc in DOCS if doc.spec.startswith("AMQP ")}
    assert {"0-8", "0-9", "0-9-1", "0-10", "1.0"} <= versions, versions
    assert any(doc.path == "apache-qpid/amqp.0-9.xml" for doc in DOCS)


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_declared_is_what_the_document_declares(doc: Document) -> None:
    assert declared_commands(doc.file) == doc.declared


# ---- specgen on each document, as a user runs it


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_ir(doc: Document, tmp_path: Path) -> None:
    run = Workspace(doc, tmp_path).ir()
    assert not run.traceback and run.returncode == 0, run.says()
    assert json.loads(run.stdout)["name"] == doc.protocol


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_lint(doc: Document, tmp_path: Path) -> None:
    run = Workspace(doc, tmp_path).lint()
    assert not run.traceback and run.returncode in (0, 1), run.says()


_GENERATED: dict[str, tuple[Workspace, Run]] = {}


def _generated(doc: Document, tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """The document generated once for the tests that read the package (a failed generation
    is not tried again); fails as generate did."""
    if doc.path not in _GENERATED:
        space = Workspace(doc, tmp_path_factory.mktemp("real-spec"))
        _GENERATED[doc.path] = (space, space.generate())
    space, run = _GENERATED[doc.path]
    assert not run.traceback and run.returncode == 0, run.says()
    return space


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_generate_imports_with_every_declared_command(
    doc: Document, tmp_path_factory: pytest.TempPathFactory
) -> None:
    space = _generated(doc, tmp_path_factory)
    imported = space.import_all()
    assert imported.returncode == 0, imported.says()
    counted, generated = space.count_commands()
    assert generated is not None, counted.says()
    assert generated == declared_commands(doc.file) == doc.declared


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_generated_conformance_tests_round_trip(
    doc: Document, tmp_path_factory: pytest.TempPathFactory
) -> None:
    ran = _generated(doc, tmp_path_factory).round_trip()
    assert ran.returncode == 0, ran.says()
    assert re.search(r"\d+ passed", ran.stdout), ran.says()


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_diff_against_the_nearest_shipped_version(doc: Document, tmp_path: Path) -> None:
    run = Workspace(doc, tmp_path).diff()
    assert not run.traceback and run.returncode in (0, 1), run.says()


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_diff_lists_no_change_whose_two_sides_read_the_same(doc: Document, tmp_path: Path) -> None:
    """A change shown as `array -> array` is a false alarm: whatever differs, it is not what
    the reviewer is shown (and a stripped copy differs from the full text in prose only)."""
    run = Workspace(doc, tmp_path).diff("--format", "json")
    assert not run.traceback and run.returncode in (0, 1), run.says()
    alike = [f"{c['rule']} {c['where']}: {c['summary']}" for c in changes(run) if reads_the_same(c)]
    assert not alike, f"{len(alike)} changes read the same on both sides, e.g. {alike[:3]}"


def _headers_by_rule(doc: Document) -> set[bytes]:
    """The protocol headers the document's version opens with, by each version's own rule,
    read here from the document's root, independently of specgen."""
    if doc.format == "amqp10-xml":  # 'AMQP', protocol id 0, 2 or 3, then 1 0 0
        return {b"AMQP" + bytes((pid, 1, 0, 0)) for pid in (0, 2, 3)}
    root = ET.parse(doc.file).getroot()
    version = tuple(int(root.get(a, "0")) for a in ("major", "minor") if root.get(a))
    if root.get("revision") is not None:
        version += (int(root.get("revision", "0")),)
    if version in ((0, 9, 1), (0, 91)):  # 0-9-1, also as Qpid numbers it
        return {b"AMQP\x00\x00\x09\x01"}
    return {b"AMQP\x01\x01" + bytes(version)}  # 0-8 (8 0), 0-9 (0 9), 0-10 (0 10)


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_the_protocol_header_is_the_versions(
    doc: Document, tmp_path_factory: pytest.TempPathFactory
) -> None:
    space = _generated(doc, tmp_path_factory)
    framing = next(space.out.glob("*/framing.py")).read_text(encoding="utf-8")
    module: dict[str, object] = {}
    exec(compile(framing, "framing.py", "exec"), module)  # noqa: S102 - the package's own module
    preambles = module["PREAMBLES"]
    headers = module.get("PROTOCOL_HEADERS", ())
    assert isinstance(preambles, dict) and isinstance(headers, tuple)
    assert set(preambles.values()) | set(headers) == _headers_by_rule(doc)
