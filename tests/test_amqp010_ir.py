"""AMQP 0-10's codec is planned from the IR alone: what the IR holds for it (expected facts
read from the XML's text here, never from the IR), an overlay entry reaching the generated
code through `render_all`, and IR the codec's plan cannot render refused with a PlanError
that names the field."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from specgen import overlay
from specgen.emitters import plan_packed
from specgen.emitters.plan import PlanError
from specgen.generate import render_all
from specgen.ir import Field, Prim, Protocol, Ref
from specgen.specs import ROOT, build_ir, find

XML = ROOT / "specs" / "amqp-0-10" / "amqp.0-10.xml"
TEXT = XML.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def protocol() -> Protocol:
    return build_ir(find("amqp-0-10"))[0]


def _fields(protocol: Protocol) -> list[Field]:
    return [f for n in protocol.named for f in getattr(n.type, "fields", ())] + [
        f for _, m in protocol.messages() for f in m.fields
    ]


def test_results_and_content_headers_are_the_xmls(protocol: Protocol) -> None:
    # <command name="acquire" code="0x5"> ... <result type="acquired"/> in class message
    acquire = protocol.command("Message.Acquire").messages[0]
    assert acquire.result == "message.acquired"
    results = [m for _, m in protocol.messages() if m.result]
    assert len(results) == TEXT.count("<result")
    # <segments><header required="true"><entry type="delivery-properties"/> ...
    transfer = protocol.command("Message.Transfer").messages[0]
    assert transfer.content_header == (
        "message.delivery-properties",
        "message.fragment-properties",
        "message.message-properties",
    )
    entries = sum(len(m.content_header) for _, m in protocol.messages())
    assert entries == len(re.findall(r"<entry type=", TEXT))
    named = {n.name for n in protocol.named}
    assert all(m.result in named for m in results)


def test_fields_keep_the_xmls_names_and_required(protocol: Protocol) -> None:
    fields = [f for f in _fields(protocol) if f.spec_name]
    xml_fields = re.findall(r"<field name=\"([^\"]+)\"[^>]*?(/?)>", TEXT)
    assert len(fields) == len(xml_fields)
    assert sorted(f.spec_name for f in fields) == sorted(n for n, _ in xml_fields)
    required = len(re.findall(r"<field [^>]*required=\"true\"", TEXT))
    assert sum(f.required for f in fields) == required
    unit = protocol.command("Message.Flow").messages[0].fields[3]
    assert (unit.name, unit.spec_name, unit.required) == ("Unit", "unit", True)


def test_domains_classes_labels_and_the_protocol_header(protocol: Protocol) -> None:
    assert len(protocol.aliases) == TEXT.count("<domain ")
    destination = next(a for a in protocol.aliases if a.name == "message.destination")
    assert destination.type == Prim("str8") and destination.label == "destination for a message"
    reply_to = next(f for f in _fields(protocol) if f.spec_name == "reply-to")
    assert reply_to.type == Ref("message.reply-to")
    classes = re.findall(r"<class name=\"([^\"]+)\" code=\"(0x[0-9a-f]+)\"", TEXT)
    assert [(c.name, c.value) for c in protocol.constants if c.group == "class"] == [
        (name, int(code, 16)) for name, code in classes
    ]
    int8 = next(t for t in protocol.types if t.name == "int8")
    label = re.search(r"<type name=\"int8\"[^>]*label=\"([^\"]+)\"", TEXT)
    assert label is not None and int8.label == label[1]
    assert int8.doc.startswith("The int8 type is a signed integral value")
    (preamble,) = protocol.frame.preambles
    version = re.search(r"<amqp [^>]*major=\"(\d+)\" minor=\"(\d+)\"", TEXT, re.S)
    assert version is not None
    assert preamble.data == b"AMQP\x01\x01" + bytes((int(version[1]), int(version[2])))
    accept = protocol.enum("MessageAcceptMode")
    assert accept is not None and accept.spec_name == "message.accept-mode"


def test_an_overlay_reaches_the_generated_code(tmp_path: Path) -> None:
    path = tmp_path / "overlay.json"
    base = {"reason": "a test erratum", "evidence": ["this test"]}
    entries = [
        {"id": "frame-size", "op": "set", "target": "constant:MIN-MAX-FRAME-SIZE",
         "attributes": {"value": 8192}},
        {"id": "flow-value", "op": "replace", "target": "message:MessageFlow.Value",
         "node": {"name": "Value", "type": {"kind": "prim", "name": "uint16"},
                  "present": ["PackingFlags", 2], "spec_name": "value",
                  "doc": "credit, sixteen bits wide by this overlay"}},
        {"id": "destination", "op": "set", "target": "alias:message.destination",
         "attributes": {"label": "where this overlay sends it"}},
    ]  # fmt: skip
    path.write_text(json.dumps({"entries": [{**base, **e} for e in entries]}, indent=1))
    spec = replace(find("amqp-0-10"), overlay=path)
    files = render_all([spec])
    codec = "".join(
        files[f"amqp_0_10/v0_10/{module}.py"] for module in ("commands", "enums", "message")
    )
    assert "MIN_MAX_FRAME_SIZE = 8192\n" in codec and "4096" not in codec
    flow = codec[codec.index("class MessageFlow(") : codec.index("class MessageFlush(")]
    assert '"""value: credit, sixteen bits wide by this overlay"""' in flow
    assert '_short("MessageFlow.value", at, end, 2)' in flow
    assert "value, at = _UINT16.unpack_from(buf, at)[0], at + 2" in flow
    assert '_w_uint16(out, value, "MessageFlow.value")' in flow
    assert "uint32" not in flow
    assert '"message.destination": "str8",  # where this overlay sends it\n' in codec


def test_a_field_without_its_flag_is_refused(tmp_path: Path, protocol: Protocol) -> None:
    path = tmp_path / "overlay.json"
    entry = {"id": "extra", "op": "insert", "target": "MessageFlow", "reason": "a test",
             "evidence": ["this test"],
             "field": {"name": "Extra", "type": {"kind": "prim", "name": "uint8"}}}  # fmt: skip
    path.write_text(json.dumps({"entries": [entry]}))
    changed = overlay.apply(protocol, overlay.load(path, tmp_path))
    with pytest.raises(PlanError, match="MessageFlow.Extra is not flagged by flag 3"):
        plan_packed.plan(changed)


def test_a_void_field_is_refused(protocol: Protocol) -> None:
    flow = protocol.command("Message.Flow")
    (message,) = flow.messages
    fields = (*message.fields[:-1], replace(message.fields[-1], type=Prim("void")))
    commands = tuple(
        replace(c, messages=(replace(message, fields=fields),)) if c is flow else c
        for c in protocol.commands
    )
    with pytest.raises(PlanError, match="field Value is void"):
        plan_packed.plan(replace(protocol, commands=commands))
