"""AMQP 1.0 and AMQP 0-10 in the one IR, and `specgen diff` reading them.

Expected facts come from the documents themselves (counted in the XML here, or quoted from it),
never from the IR under test: the 0-10 XML's `<control>`/`<command>` elements, 1.0's
performatives and SASL frames with their descriptors, and the breaking edits the issue names.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from specgen import ir, overlay
from specgen.cli import main
from specgen.ir import Presence, Prim, Ref, Typed
from specgen.review.changes import NEW_CLIENT, compare
from specgen.sources import resolve
from specgen.specs import ROOT, build_ir, find

SPEC_010 = ROOT / "specs" / "amqp-0-10" / "amqp.0-10.xml"
SPEC_10 = ROOT / "specs" / "amqp-1-0"


def _ir(name: str) -> ir.Protocol:
    return build_ir(find(name))[0]


def test_every_0_10_control_and_command_is_a_command_with_its_codes() -> None:
    text = SPEC_010.read_text(encoding="utf-8")
    expected: set[tuple[int, int, int]] = set()
    for cls in re.finditer(r'<class name="[^"]+" code="(0x[0-9a-f]+)"(.*?)</class>', text, re.S):
        for m in re.finditer(r'<(control|command) name="[^"]+" code="(0x[0-9a-f]+)"', cls[2]):
            expected.add(({"control": 0, "command": 1}[m[1]], int(cls[1], 16), int(m[2], 16)))
    assert len(expected) == 84
    protocol = _ir("amqp-0-10")
    idents = {m.ident for _, m in protocol.messages()}
    assert idents == expected
    flow = protocol.command("Message.Flow")
    assert flow.span is not None and flow.span.file.endswith("amqp.0-10.xml")
    (message,) = flow.messages
    names = [f.name for f in message.fields]
    assert names == ["SessionHeader", "PackingFlags", "Destination", "Unit", "Value"]
    flags = message.fields[1].type
    assert flags == Presence(2, continuation=None, order="lsb")
    assert message.fields[4].type == Prim("uint32") and message.fields[4].present == (
        "PackingFlags",
        2,
    )
    assert message.fields[0].type == Ref("session.header")


def test_0_10_structs_keep_their_size_prefix_code_and_flags() -> None:
    protocol = _ir("amqp-0-10")
    named = {n.name: n.type for n in protocol.named}
    # <struct name="delivery-properties" size="4" code="0x1" pack="2"> in class message (0x04)
    dp = named["message.delivery-properties"]
    assert isinstance(dp, ir.Struct)
    assert (dp.size_prefix, dp.ident) == ("uint32", (4, 1))
    assert dp.fields[0].type == Presence(2, continuation=None, order="lsb")
    # <struct name="header" size="1" pack="1"> in class session
    header = named["session.header"]
    assert isinstance(header, ir.Struct) and header.size_prefix == "uint8" and not header.ident
    assert len(protocol.named) == SPEC_010.read_text(encoding="utf-8").count("<struct ")


def test_lsb_packing_flags_count_from_bit_0() -> None:
    flags = Presence(2, continuation=None, order="lsb")
    assert [flags.flag(i) for i in (0, 1, 8, 15)] == [(0, 1), (0, 2), (0, 256), (0, 32768)]
    assert Presence(2, continuation=0).flag(0) == (0, 0x8000)


def test_1_0_lists_every_performative_and_sasl_frame_by_descriptor() -> None:
    protocol = _ir("amqp-1-0/1.0")
    text = "".join(p.read_text(encoding="utf-8") for p in sorted(SPEC_10.glob("*.xml")))
    want: dict[str, tuple[int, int]] = {}
    for m in re.finditer(
        r'<type class="composite" name="([^"]+)"[^>]*provides="(frame|sasl-frame)"(.*?)</type>',
        text,
        re.S,
    ):
        code = re.search(r'<descriptor name="[^"]+" code="0x([0-9a-f]+):0x([0-9a-f]+)"', m[3])
        assert code is not None
        want[m[1]] = (0 if m[2] == "frame" else 1, int(code[1], 16) << 32 | int(code[2], 16))
    assert len(want) == 14
    got = {c.name: c.ident for c in protocol.commands}
    camel = {k: "".join(p.capitalize() for p in k.split("-")) for k in want}
    assert got == {camel[k]: v for k, v in want.items()}
    begin = protocol.command("Begin").messages[0]
    assert begin.descriptor is not None and begin.descriptor.name == "amqp:begin:list"
    handle_max = next(f for f in begin.fields if f.name == "HandleMax")
    assert handle_max.type == Typed("handle") and handle_max.nullable
    assert handle_max.default == 4294967295  # the value the spec's "4294967295" spells
    assert protocol.frame.header_words == "doff"


@pytest.mark.parametrize("name", ["amqp-1-0/1.0", "amqp-1-0/1.0-transport", "amqp-0-10"])
def test_the_ir_json_round_trips(name: str) -> None:
    protocol = _ir(name)
    assert ir.load(ir.dump(protocol)) == protocol


def _read(path: Path, fmt: str, protocol: str) -> ir.Protocol:
    return build_ir(resolve(str(path), protocol=protocol, format=fmt))[0]


def _copy(src: Path, tmp: Path) -> Path:
    out = tmp / src.name
    shutil.copytree(src, out)
    return out


def _edit(path: Path, old: str, new: str, after: str = "") -> None:
    text = path.read_text(encoding="utf-8")
    start = text.index(after) if after else 0
    at = text.index(old, start)
    path.write_text(text[:at] + new + text[at + len(old) :], encoding="utf-8")


def _diff(old: str, new: Path, fmt: str, *flags: str) -> int:
    return main(
        ["diff", old, str(new), "--spec-format", fmt, "--protocol", old.split("/")[0], *flags]
    )


def test_0_10_message_flow_value_narrowed_is_breaking(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _copy(SPEC_010.parent, tmp_path)
    spec = folder / SPEC_010.name
    assert _diff("amqp-0-10", spec, "amqp010-xml", "--fail-on-breaking") == 0
    capsys.readouterr()
    _edit(spec, '<field name="value" type="uint32">', '<field name="value" type="uint16">',
          after='<command name="flow"')  # fmt: skip
    assert _diff("amqp-0-10", spec, "amqp010-xml", "--fail-on-breaking") == 1
    out = capsys.readouterr().out
    assert "FIELD_WIDTH" in out and "Message.Flow" in out and "uint32 -> uint16" in out


def test_1_0_begin_handle_max_as_ushort_is_breaking(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _copy(SPEC_10, tmp_path)
    assert _diff("amqp-1-0/1.0", folder / "index.xml", "amqp10-xml", "--fail-on-breaking") == 0
    capsys.readouterr()
    _edit(
        folder / "transport.xml",
        '<field name="handle-max" type="handle"',
        '<field name="handle-max" type="ushort"',
    )
    assert _diff("amqp-1-0/1.0", folder / "index.xml", "amqp10-xml", "--fail-on-breaking") == 1
    out = capsys.readouterr().out
    assert "FIELD_TYPE" in out and "HandleMax: handle -> ushort" in out


def test_a_restricted_alias_of_the_same_encodings_is_no_wire_change(tmp_path: Path) -> None:
    # handle is <type class="restricted" source="uint">: writing uint instead changes no byte
    folder = _copy(SPEC_10, tmp_path)
    _edit(
        folder / "transport.xml",
        '<field name="handle-max" type="handle"',
        '<field name="handle-max" type="uint"',
    )
    old = _ir("amqp-1-0/1.0")
    new = _read(folder / "index.xml", "amqp10-xml", "amqp-1-0")
    assert compare(old, new).breaking == []


def test_a_trailing_field_added_to_a_composite_breaks_only_old_readers(tmp_path: Path) -> None:
    folder = _copy(SPEC_10, tmp_path)
    # the last field of <type name="end">: its error; add one after it, not mandatory
    _edit(
        folder / "transport.xml",
        "</type>",
        '  <field name="reason" type="string"/>\n    </type>',
        after='<type class="composite" name="end"',
    )
    # and one to a composite that is no frame (the rejected delivery state), mandatory
    _edit(
        folder / "messaging.xml",
        "</type>",
        '  <field name="why" type="string" mandatory="true"/>\n    </type>',
        after='<type class="composite" name="rejected"',
    )
    review = compare(_ir("amqp-1-0/1.0"), _read(folder / "index.xml", "amqp10-xml", "amqp-1-0"))
    by_rule = {c.rule: c for c in review.changes if c.category == "wire"}
    trailing = by_rule["FIELD_ADDED_TRAILING"]
    assert "Reason" in trailing.where and trailing.breaking  # End is sent by both sides
    added = by_rule["FIELD_ADDED"]
    assert "type rejected" in added.where and added.breaking


def test_a_trailing_flagged_field_breaks_only_the_new_writer(tmp_path: Path) -> None:
    # queue.declare is implemented by the server alone: the client writes it
    folder = _copy(SPEC_010.parent, tmp_path)
    spec = folder / SPEC_010.name
    _edit(spec, "</command>", '  <field name="extra" type="uint16"/>\n    </command>',
          after='<command name="declare" code="0x1" label="declare queue"')  # fmt: skip
    review = compare(_ir("amqp-0-10"), _read(spec, "amqp010-xml", "amqp-0-10"))
    (change,) = [c for c in review.changes if c.category == "wire"]
    assert change.rule == "FIELD_ADDED_TRAILING" and "Queue.Declare" in change.where
    assert change.breaks == (NEW_CLIENT,)


def test_0_10_struct_size_prefix_is_breaking(tmp_path: Path) -> None:
    folder = _copy(SPEC_010.parent, tmp_path)
    spec = folder / SPEC_010.name
    _edit(spec, 'size="4" code="0x1" pack="2"', 'size="2" code="0x1" pack="2"',
          after='<struct name="delivery-properties"')  # fmt: skip
    review = compare(_ir("amqp-0-10"), _read(spec, "amqp010-xml", "amqp-0-10"))
    rules = {c.rule for c in review.breaking}
    assert "STRUCT_FRAMING" in rules


def _overlay(tmp_path: Path, *entries: dict[str, object]) -> list[overlay.Entry]:
    path = tmp_path / "overlay.json"
    base = {"reason": "a test erratum", "evidence": ["this test"]}
    path.write_text(json.dumps({"entries": [{**base, **e} for e in entries]}, indent=1))
    return overlay.load(path, tmp_path)


def test_overlays_address_any_node_of_1_0_and_0_10(tmp_path: Path) -> None:
    p10 = overlay.apply(
        _ir("amqp-1-0/1.0"),
        _overlay(
            tmp_path,
            {"id": "a", "op": "set", "target": "typedef:begin.handle-max",
             "attributes": {"default": "65535"}},
            {"id": "b", "op": "set", "target": "message:Begin.HandleMax",
             "attributes": {"default": "65535"}},
            {"id": "c", "op": "set", "target": "constant:PORT", "attributes": {"value": 5673}},
            {"id": "d", "op": "set", "target": "frame", "attributes": {"header_words": None}},
        ),
    )  # fmt: skip
    begin = next(t for t in p10.typedefs if t.name == "begin")
    assert next(f for f in begin.fields if f.name == "handle-max").default == "65535"
    field = next(f for f in p10.command("Begin").messages[0].fields if f.name == "HandleMax")
    assert field.default == "65535"
    assert next(c for c in p10.constants if c.name == "PORT").value == 5673
    assert p10.frame.header_words is None and p10.overlays == ("a", "b", "c", "d")

    p010 = overlay.apply(
        _ir("amqp-0-10"),
        _overlay(
            tmp_path,
            {"id": "e", "op": "replace", "target": "message:MessageFlow.Value",
             "node": {"name": "Value", "type": {"kind": "prim", "name": "uint16"},
                      "present": ["PackingFlags", 2]}},
            {"id": "f", "op": "set", "target": "named:session.header",
             "attributes": {"doc": "the session header"}},
            {"id": "g", "op": "set", "target": "enum:MessageAcceptMode",
             "attributes": {"hex": True}},
        ),
    )  # fmt: skip
    value = p010.command("Message.Flow").messages[0].fields[-1]
    assert value.type == Prim("uint16") and value.present == ("PackingFlags", 2)
    assert next(n for n in p010.named if n.name == "session.header").doc == "the session header"
    assert compare(_ir("amqp-0-10"), p010).breaking  # the overlay narrowed a field


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"target": "typedef:nosuch", "attributes": {"doc": "x"}}, "no typedef 'nosuch'"),
        ({"target": "constant:PORT", "attributes": {"colour": 1}}, "has no attribute 'colour'"),
        ({"target": "message:Begin.Nope", "attributes": {"doc": "x"}}, "no field 'Nope'"),
        # the IR's own rules hold: a primitive has encodings
        ({"target": "typedef:begin", "attributes": {"klass": "primitive"}}, "has no encoding"),
    ],
)
def test_a_bad_overlay_entry_names_itself(
    tmp_path: Path, entry: dict[str, object], message: str
) -> None:
    entries = _overlay(tmp_path, {"id": "bad", "op": "set", **entry})
    with pytest.raises(overlay.OverlayError, match=message) as e:
        overlay.apply(_ir("amqp-1-0/1.0"), entries)
    assert "overlay.json:" in str(e.value) and "bad" in str(e.value)


def test_an_overlay_on_a_field_inside_a_struct_keeps_the_struct(tmp_path: Path) -> None:
    # editing one member of a struct must not lose the struct's size prefix and code
    entries = _overlay(
        tmp_path,
        {"id": "s", "op": "set", "target": "named:message.delivery-properties.Priority",
         "attributes": {"doc": "set by an overlay"}},
    )  # fmt: skip
    before = next(n for n in _ir("amqp-0-10").named if n.name == "message.delivery-properties")
    after = next(
        n
        for n in overlay.apply(_ir("amqp-0-10"), entries).named
        if n.name == "message.delivery-properties"
    )
    assert isinstance(before.type, ir.Struct) and isinstance(after.type, ir.Struct)
    assert (after.type.size_prefix, after.type.ident) == (
        before.type.size_prefix,
        before.type.ident,
    )
    assert next(f for f in after.type.fields if f.name == "Priority").doc == "set by an overlay"
