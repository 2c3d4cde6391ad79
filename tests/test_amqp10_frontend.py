"""The AMQP 1.0 XML front-end against facts from outside it.

Independent checks: the stripped XML copies qpid-proton and rabbitmq-codegen generate their
codecs from (the spec corpus, read here with the standard library's parser, not ours) hold the
same types, encodings, descriptors, fields and choices as the IR built from the published XML;
the transport text's embedded XML gives the same transport types as transport.xml. Then the
front-end's promises: findings at the text's own line and column, lint of what the XML leaves
undefined or contradictory, errors naming file:line:column, no entity expansion, and the IR
round-tripping through dump/load.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from specgen.frontends import amqp10_xml
from specgen.frontends.adoc import SpecError
from specgen.frontends.adoc_tree import SpecSyntaxError
from specgen.ir import Protocol, TypeDef, dump, load
from specgen.specs import ROOT, build_ir, find

SPEC_DIR = ROOT / "specs" / "amqp-1-0"
CORPUS = Path("/work/shared/specs-corpus/amqp-1.0")
PARTS = ("types", "transport", "messaging", "security", "transactions")


@pytest.fixture(scope="module")
def full() -> tuple[Protocol, list[str]]:
    proto, log = build_ir(find("amqp-1-0/1.0"))
    return proto, [str(f) for f in log.items]


@pytest.fixture(scope="module")
def transport() -> tuple[Protocol, list[str]]:
    proto, log = build_ir(find("amqp-1-0/1.0-transport"))
    return proto, [str(f) for f in log.items]


def _shape(t: TypeDef) -> dict[str, Any]:
    """What a type says about bytes, as the stripped copies can say it too."""
    return {
        "class": t.klass,
        "source": t.source,
        "provides": sorted(t.provides),
        "descriptor": None if t.descriptor is None else (t.descriptor.name, t.descriptor.code),
        "encodings": sorted((e.code, e.category, e.width, e.name) for e in t.encodings),
        "fields": [
            (f.name, f.type, f.mandatory, f.multiple, _spelled(f.default), sorted(f.requires))
            for f in t.fields
        ],
        "choices": [(c.name, c.value) for c in t.choices],
    }


def _spelled(default: object) -> object:
    """A default as the copies spell it: the IR holds numbers and booleans as values."""
    if isinstance(default, bool):
        return "true" if default else "false"
    return default if default is None else str(default)


def _stripped(folder: Path) -> dict[str, dict[str, Any]]:
    """Every type of a stripped copy, read with xml.etree (namespaces dropped)."""
    out: dict[str, dict[str, Any]] = {}
    for part in PARTS:
        root = ET.parse(folder / f"{part}.xml").getroot()
        for e in root.iter():
            e.tag = e.tag.rsplit("}", 1)[-1]
        for t in root.iter("type"):
            d = t.find("descriptor")
            descriptor = None
            if d is not None:
                domain, ident = d.get("code", "").split(":")
                descriptor = (d.get("name"), int(domain, 16) << 32 | int(ident, 16))
            out[t.get("name", "")] = {
                "class": t.get("class"),
                "source": t.get("source", ""),
                "provides": sorted(
                    p.strip() for p in t.get("provides", "").split(",") if p.strip()
                ),
                "descriptor": descriptor,
                "encodings": sorted(
                    (
                        int(x.get("code", ""), 16),
                        x.get("category"),
                        int(x.get("width", "")),
                        x.get("name", ""),
                    )
                    for x in t.findall("encoding")
                ),
                "fields": [
                    (
                        f.get("name"),
                        f.get("type"),
                        f.get("mandatory") == "true",
                        f.get("multiple") == "true",
                        f.get("default"),
                        sorted(r.strip() for r in f.get("requires", "").split(",") if r.strip()),
                    )
                    for f in t.findall("field")
                ],
                "choices": [(c.get("name"), c.get("value")) for c in t.findall("choice")],
            }
    return out


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the AMQP 1.0 spec corpus is not here")
@pytest.mark.parametrize("copy", ["stripped-rabbitmq-codegen", "stripped-qpid-proton"])
def test_every_type_matches_the_copies_peers_generate_from(
    full: tuple[Protocol, list[str]], copy: str
) -> None:
    ours = {t.name: _shape(t) for t in full[0].typedefs}
    theirs = _stripped(CORPUS / copy)
    assert sorted(ours) == sorted(theirs)
    differ = {
        (name, i)
        for name in ours
        for i, (a, b) in enumerate(zip(ours[name]["fields"], theirs[name]["fields"], strict=True))
        if a != b
    }
    for name in ours:
        assert {k: v for k, v in ours[name].items() if k != "fields"} == {
            k: v for k, v in theirs[name].items() if k != "fields"
        }, name
    if copy == "stripped-qpid-proton":
        # PROTON-1505 added defaults to four header fields (the corpus's SOURCES.md says so)
        assert {(n, ours[n]["fields"][i][0]) for n, i in differ} == {
            ("header", "durable"),
            ("header", "priority"),
            ("header", "first-acquirer"),
            ("header", "delivery-count"),
        }
    else:
        assert differ == set()


def test_the_transport_text_says_what_transport_xml_says(
    full: tuple[Protocol, list[str]], transport: tuple[Protocol, list[str]]
) -> None:
    xml = {t.name: _shape(t) for t in full[0].typedefs}
    text = {t.name: _shape(t) for t in transport[0].typedefs}
    from_text = {t.name for t in transport[0].typedefs if t.document.endswith(".txt")}
    assert len(from_text) == 27
    assert {name: text[name] for name in from_text} == {name: xml[name] for name in from_text}
    performatives = [t.name for t in transport[0].typedefs if "frame" in t.provides]
    assert performatives == [
        "open", "begin", "attach", "flow", "transfer", "disposition", "detach", "end", "close",
    ]  # fmt: skip


def test_encodings_of_the_transport_text_come_from_part_1(
    transport: tuple[Protocol, list[str]],
) -> None:
    proto, findings = transport
    primitives = [t for t in proto.typedefs if t.klass == "primitive"]
    assert len(primitives) == 24
    assert {t.document for t in primitives} == {"specs/amqp-1-0/types.xml"}
    assert all(
        e.span and e.span.file == "specs/amqp-1-0/types.xml"
        for t in primitives
        for e in t.encodings
    )
    assert any("encodings-from" in f and "types.xml" in f for f in findings)


def test_findings_point_at_the_texts_own_lines(transport: tuple[Protocol, list[str]]) -> None:
    text = (SPEC_DIR / "amqp-core-transport-v1.0.txt").read_text(encoding="utf-8").splitlines()
    unprovided = [f for f in transport[1] if "requires-unprovided" in f]
    # the transport part alone: source, target and delivery-state are Part 3's
    assert len(unprovided) == 4
    for finding in unprovided:
        _, line, column = finding.split(":", 3)[:3]
        field = finding.split(": ", 2)[2].split(" ", 1)[0].split(".")[1]
        assert text[int(line) - 1][int(column) - 1 :].startswith(f'<field name="{field}"')


def test_the_full_set_has_one_finding(full: tuple[Protocol, list[str]]) -> None:
    # AMQP 1.0 never defines global-tx-id (transactions.xml's declare.global-id requires it)
    assert full[1] == [
        "specs/amqp-1-0/transactions.xml:687:7: requires-unprovided: declare.global-id requires"
        " 'global-tx-id', which no type of this document provides -> any described value is"
        " accepted there"
    ]


def test_protocol_headers_and_definitions(full: tuple[Protocol, list[str]]) -> None:
    proto = full[0]
    assert [h.data for h in proto.frame.protocol_headers] == [
        b"AMQP\x00\x01\x00\x00",
        b"AMQP\x02\x01\x00\x00",
        b"AMQP\x03\x01\x00\x00",
    ]
    values = {c.name: c.value for c in proto.constants}
    assert (values["PORT"], values["SECURE-PORT"], values["MIN-MAX-FRAME-SIZE"]) == (
        5672,
        5671,
        512,
    )
    assert [f.name for f in proto.frame.header] == ["size", "doff", "type", "channel"]


def test_ir_round_trips(full: tuple[Protocol, list[str]]) -> None:
    assert load(dump(full[0])) == full[0]


LINT_DOC = """<?xml version="1.0"?>
<amqp name="types" xmlns="http://www.amqp.org/schema/amqp.xsd">
  <section name="encodings">
    <type name="null" class="primitive"><encoding code="0x40" category="fixed" width="0"/></type>
    <type name="ubyte" class="primitive"><encoding code="0x50" category="fixed" width="1"/></type>
    <type name="ulong" class="primitive"><encoding code="0x80" category="fixed" width="8"/></type>
    <type name="symbol" class="primitive"><encoding code="0xa3" category="variable" width="1"/></type>
    <type name="list" class="primitive"><encoding code="0xc0" category="compound" width="1"/></type>
  </section>
  <section name="definitions">
    <type name="mode" class="restricted" source="ubyte">
      <choice name="first" value="0"/>
      <choice name="second" value="1"/>
    </type>
    <type name="a" class="composite" source="list">
      <descriptor name="x:a:list" code="0x00000000:0x00000001"/>
      <field name="m" type="mode" default="third"/>
      <field name="s" type="*" requires="nothing-provides-this"/>
    </type>
    <type name="b" class="composite" source="list">
      <descriptor name="x:b:list" code="0x00000000:0x00000001"/>
    </type>
  </section>
</amqp>
"""


def test_lint_lists_what_the_xml_leaves_undefined_or_contradictory(tmp_path: Path) -> None:
    doc = tmp_path / "bad.xml"
    doc.write_text(LINT_DOC, encoding="utf-8")
    _, log = amqp10_xml.build(doc, "bad.xml", "amqp-1-0", "test")
    found = {(f.code, str(f.span)) for f in log.items}
    assert found == {
        ("default-not-a-choice", "bad.xml:17:7"),
        ("requires-unprovided", "bad.xml:18:7"),
        ("descriptor-reused", "bad.xml:20:5"),
        ("framing-not-drawn", "bad.xml:1:1"),
        ("no-protocol-header", "bad.xml:1:1"),
    }
    result = subprocess.run(
        [sys.executable, "-m", "specgen", "lint", str(doc), "--protocol", "amqp-1-0"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert "descriptor-reused" in result.stdout and "default-not-a-choice" in result.stdout, (
        result.stdout + result.stderr
    )


def test_malformed_xml_names_file_line_column(tmp_path: Path) -> None:
    doc = tmp_path / "broken.xml"
    doc.write_text(LINT_DOC.replace("</section>\n  <section", "</sectoin>\n  <section", 1))
    with pytest.raises(SpecSyntaxError) as e:
        amqp10_xml.build(doc, "broken.xml", "amqp-1-0", "test")
    assert str(e.value).startswith("broken.xml:9:")


def test_malformed_embedded_xml_names_the_texts_line(tmp_path: Path) -> None:
    original = (SPEC_DIR / "amqp-core-transport-v1.0.txt").read_text(encoding="utf-8")
    text = original.replace(
        '<field name="hostname" type="string"/>', '<field name="hostname" type="string">', 1
    )
    doc = tmp_path / "transport.txt"
    doc.write_text(text, encoding="utf-8")
    (tmp_path / "types.xml").write_text((SPEC_DIR / "types.xml").read_text(encoding="utf-8"))
    with pytest.raises(SpecSyntaxError) as e:
        amqp10_xml.build(doc, "transport.txt", "amqp-1-0", "test")
    # the snippet's <field> never closes: the error is at its </type>, named in the text
    line, column = str(e.value).split(":")[1:3]
    assert text.splitlines()[int(line) - 1][int(column) - 1 :].startswith("</type>")
    assert line == "855" and "transport.txt:855:" in str(e.value).split(" at ", 1)[1]


def test_no_part_1_is_an_error(tmp_path: Path) -> None:
    doc = tmp_path / "transport.txt"
    doc.write_text((SPEC_DIR / "amqp-core-transport-v1.0.txt").read_text(encoding="utf-8"))
    with pytest.raises(SpecError, match="types.xml"):
        amqp10_xml.build(doc, "transport.txt", "amqp-1-0", "test")


def test_entities_are_never_expanded(tmp_path: Path) -> None:
    doc = tmp_path / "entity.xml"
    doc.write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE amqp [<!ENTITY x "boom">]>\n'
        + LINT_DOC.split("\n", 1)[1],
        encoding="utf-8",
    )
    with pytest.raises(SpecSyntaxError) as e:
        amqp10_xml.build(doc, "entity.xml", "amqp-1-0", "test")
    assert str(e.value).startswith("entity.xml:2:")


def test_cross_references_read_as_the_rendered_spec_does(full: tuple[Protocol, list[str]]) -> None:
    # the OASIS text (the seed) renders <xref name="sender-settle-mode" choice="settled"/> as
    # the word "settled": the docs the codec carries must read the same
    seed = (SPEC_DIR / "amqp-core-transport-v1.0.txt").read_text(encoding="utf-8")
    transfer = next(t for t in full[0].typedefs if t.name == "transfer")
    settled = " ".join(next(f for f in transfer.fields if f.name == "settled").doc.split())
    for words in (
        "If the negotiated value for snd-settle-mode at attachment is settled, then this field",
        "If the negotiated value for snd-settle-mode at attachment is unsettled, then this field",
    ):
        assert words in seed
        assert words in settled
