"""The AsciiDoc front-end against the two RabbitMQ Streams references."""

from __future__ import annotations

import re

from conftest import SPEC_DIR, spec_line

from specgen.ir import Array, FindingLog, Prim, Protocol, Struct, Switch


def _table_keys(path: str) -> dict[str, int]:
    """Command name -> key, read from the spec's commands table with a plain regex (an
    independent reading of the same text, not our grammar)."""
    text = (SPEC_DIR / path).read_text(encoding="utf-8")
    rows = re.findall(r"\|<<(\w+)>>\s*\n\|[^\n]*\n\|(\w+)", text)
    return {name: int(key, 0) for name, key in rows}


def test_v40_has_all_thirty_commands_with_their_table_keys(
    ir40: tuple[Protocol, FindingLog],
) -> None:
    protocol, _ = ir40
    keys = {c.name.lower(): c.ident[0] for c in protocol.commands}
    assert len(protocol.commands) == 30
    assert keys == _table_keys("PROTOCOL-4.0.adoc")
    assert sorted(keys.values()) == list(range(0x0001, 0x001F))


def test_v40_commands_that_expect_a_response_have_both_layouts(
    ir40: tuple[Protocol, FindingLog],
) -> None:
    protocol, _ = ir40
    for c in protocol.commands:
        kinds = {m.kind for m in c.messages}
        if c.expects_response:
            assert kinds == {"request", "response"}, c.name
        else:
            assert "request" not in kinds, c.name
        for m in c.messages:
            if m.kind == "response" and c.name != "Tune":  # Tune's answer reuses the key
                assert m.ident == (c.ident[0] | 0x8000,), m.name


def test_v40_publish_and_deliver_have_two_versions(ir40: tuple[Protocol, FindingLog]) -> None:
    protocol, _ = ir40
    publish = protocol.command("Publish").messages[0]
    deliver = protocol.command("Deliver").messages[0]
    assert (publish.versions.low, publish.versions.high) == (1, 2)
    assert (deliver.versions.low, deliver.versions.high) == (1, 2)
    v1 = [f.name for f in deliver.fields_at(1)]
    v2 = [f.name for f in deliver.fields_at(2)]
    assert v1 == ["SubscriptionId", "OsirisChunk"]
    assert v2 == ["SubscriptionId", "CommittedChunkId", "OsirisChunk"]
    item = publish.fields_at(2)[1].type
    assert isinstance(item, Array) and isinstance(item.item, Struct)
    assert [f.name for f in item.item.fields] == ["PublishingId", "FilterValue", "Message"]
    item1 = publish.fields_at(1)[1].type
    assert isinstance(item1, Array) and isinstance(item1.item, Struct)
    assert [f.name for f in item1.item.fields] == ["PublishingId", "Message"]


def test_early_has_its_own_seventeen_commands_keys_and_signed_types(
    ir_early: tuple[Protocol, FindingLog], ir40: tuple[Protocol, FindingLog]
) -> None:
    protocol, _ = ir_early
    assert len(protocol.commands) == 17
    assert {c.name.lower(): c.ident[0] for c in protocol.commands} == _table_keys(
        "PROTOCOL-early.adoc"
    )
    assert [f.type for f in protocol.frame.header[:2]] == [Prim("int32"), Prim("int16")]
    assert protocol.frame.response_flag is None
    credit_early = protocol.command("Credit")
    credit_40 = ir40[0].command("Credit")
    assert (credit_early.ident, credit_40.ident) == ((4,), (0x0009,))
    assert credit_early.messages[0].fields[0].type == Prim("int32")
    assert credit_40.messages[0].fields[0].type == Prim("uint8")


def test_subscribe_offset_is_a_switch_after_the_overlay(ir40: tuple[Protocol, FindingLog]) -> None:
    protocol, _ = ir40
    spec = protocol.command("Subscribe").messages[0].fields[3]
    assert isinstance(spec.type, Struct)
    offset = spec.type.fields[1].type
    assert isinstance(offset, Switch) and offset.on == "OffsetType"
    by_value = {v: c.type for c in offset.cases for v in c.values}
    assert by_value == {1: None, 2: None, 3: None, 4: Prim("uint64"), 5: Prim("int64")}


def test_spans_point_at_the_spec_lines(ir40: tuple[Protocol, FindingLog]) -> None:
    protocol, _ = ir40
    credit = protocol.command("Credit").messages[0]
    path = SPEC_DIR / "PROTOCOL-4.0.adoc"
    assert credit.span is not None
    assert credit.span.line == spec_line(path, "Credit => Key Version SubscriptionId Credit")
    assert credit.fields[1].doc == "the number of chunks that can be sent"


def test_response_codes_and_enums_come_from_the_text(ir40: tuple[Protocol, FindingLog]) -> None:
    protocol, _ = ir40
    codes = protocol.enum("ResponseCode")
    assert codes is not None
    assert {v.name: v.value for v in codes.values}["NO_OFFSET"] == 0x13
    offset_type = protocol.enum("OffsetType")
    assert offset_type is not None
    assert {v.name: v.value for v in offset_type.values} == {
        "NONE": 0,
        "FIRST": 1,
        "LAST": 2,
        "NEXT": 3,
        "OFFSET": 4,
        "TIMESTAMP": 5,
    }
