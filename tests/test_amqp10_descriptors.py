"""AMQP 1.0 descriptors: only a ulong or a symbol names a described type.

types.xml ("Descriptor Values"): "Descriptor values other than symbolic (symbol) or numeric
(ulong) are, while not syntactically invalid, reserved - this includes numeric types other
than ulong." So `0x00 0x52 0x17` (smalluint 23) is not the `end` performative (ulong 23): it is
a described value with a reserved descriptor. The codec follows that rule:

- where the spec requires a particular described type (a frame's performative, a message's
  sections), such a value is refused with DecodeError naming the reserved descriptor;
- anywhere else it decodes as a `Described` and re-encodes exactly as it came.

Refusing rather than remembering the encoding keeps every decoded performative one of the
spec's types: a frame that decodes re-encodes to its own bytes, and no frame decodes that a
peer following the spec would not write. The bytes below are built from the spec's encoding
table (0x52 smalluint, 0x70 uint, 0x53 smallulong, 0x80 ulong, 0xa3 sym8, 0x45 list0).
"""

from __future__ import annotations

import struct

import pytest

from specgen_codecs.amqp_1_0 import v1_0 as amqp
from specgen_codecs.amqp_1_0.v1_0.commands import BODIES, decode_value_wire

PERFORMATIVES = [cls for bodies in BODIES.values() for cls in bodies]
SECTIONS = [
    amqp.Header,
    amqp.DeliveryAnnotations,
    amqp.MessageAnnotations,
    amqp.Properties,
    amqp.ApplicationProperties,
    amqp.Data,
    amqp.AmqpSequence,
    amqp.AmqpValue,
    amqp.Footer,
]


def frame(frame_type: int, body: bytes) -> bytes:
    """A frame header (size, doff 2, type, channel 0) and the body."""
    return struct.pack(">IBBH", 8 + len(body), 2, frame_type, 0) + body


def reserved_descriptors(code: int) -> list[bytes]:
    """The descriptor `code` as a smalluint and as a uint: numeric, but not ulong."""
    out = [b"\x70" + code.to_bytes(4, "big")]
    if code < 256:
        out.insert(0, bytes([0x52, code]))
    return out


def test_the_issue_repro_end_with_a_smalluint_descriptor_is_refused() -> None:
    assert amqp.decode(bytes.fromhex("0000000c0200000000531745")).body == amqp.End()
    with pytest.raises(amqp.DecodeError) as e:
        amqp.decode(bytes.fromhex("0000000c0200000000521745"))
    assert e.value.field == "frame.body" and e.value.offset == 8
    assert "uint 23" in str(e.value) and "reserved" in str(e.value)


@pytest.mark.parametrize("cls", PERFORMATIVES, ids=lambda c: c.NAME)
def test_every_performative_needs_a_ulong_or_symbol_descriptor(cls: type) -> None:
    frame_type = next(t for t, bodies in BODIES.items() if cls in bodies)
    code = cls.DESCRIPTOR_CODE  # type: ignore[attr-defined]
    name = cls.DESCRIPTOR_NAME.encode()  # type: ignore[attr-defined]
    # the list's content does not matter here: the descriptor is checked first
    for descriptor in reserved_descriptors(code):
        with pytest.raises(amqp.DecodeError, match="reserved"):
            amqp.decode(frame(frame_type, b"\x00" + descriptor + b"\x45"))
    # the two encodings the spec allows do name it; what decodes re-encodes as it came
    for descriptor in (
        bytes([0x53, code]) if code < 256 else b"\x80" + code.to_bytes(8, "big"),
        b"\x80" + code.to_bytes(8, "big"),
        b"\xa3" + bytes([len(name)]) + name,
    ):
        data = frame(frame_type, b"\x00" + descriptor + b"\x45")
        try:
            decoded = amqp.decode(data)
        except amqp.DecodeError as e:
            # the descriptor named the type: its empty list then misses a mandatory field
            assert e.field.startswith(cls.NAME + ".") and "mandatory" in e.reason  # type: ignore[attr-defined]
            continue
        assert type(decoded.body) is cls
        assert amqp.encode(decoded) == data


@pytest.mark.parametrize("cls", SECTIONS, ids=lambda c: c.NAME)
def test_every_message_section_needs_a_ulong_or_symbol_descriptor(cls: type) -> None:
    code = cls.DESCRIPTOR_CODE  # type: ignore[attr-defined]
    value = b"\xa0\x00" if cls is amqp.Data else b"\x45"  # vbin8 empty, or list0
    for descriptor in reserved_descriptors(code):
        with pytest.raises(amqp.DecodeError, match="no message section"):
            amqp.decode_message(b"\x00" + descriptor + value)


def test_the_issue_repro_message() -> None:
    with pytest.raises(amqp.DecodeError, match="uint 117 .*reserved"):
        amqp.decode_message(bytes.fromhex("005275a000"))
    ok = bytes.fromhex("005375a000")
    assert amqp.encode_message(amqp.decode_message(ok)) == ok


@pytest.mark.parametrize(
    "data",
    [
        "005275a000",  # smalluint descriptor
        "007000000075a000",  # uint descriptor
        "00550a45",  # smalllong descriptor
        "00a10361626345",  # str8 descriptor: reserved too, not the symbol "abc"
        "0045a000",  # list0 as descriptor
    ],
)
def test_a_reserved_descriptor_is_a_described_value_that_reencodes_as_it_came(
    data: str,
) -> None:
    raw = bytes.fromhex(data)
    value, end = amqp.decode_value(raw)
    assert end == len(raw)
    assert isinstance(value, amqp.Described)
    assert amqp.encode_value(value, decode_value_wire(raw)[2]) == raw


# amqp-value (Part 3, amqp:amqp-value:* = 0x00000000:0x00000077) holding the str8 "x": a section
# v1_0 defines and the transport text does not
AMQP_VALUE = b"\x00\x53\x77\xa1\x01x"
AMQP_VALUE_BY_NAME = b"\x00\xa3\x11amqp:amqp-value:*\xa1\x01x"


@pytest.mark.parametrize("data", [AMQP_VALUE, AMQP_VALUE_BY_NAME], ids=["code", "symbol"])
def test_each_version_reads_only_its_own_described_types(data: bytes) -> None:
    # the versions share values.py; each passes it its own descriptor table
    from specgen_codecs.amqp_1_0 import transport, values

    ours, end = amqp.decode_value(data)
    assert (type(ours), ours.value, end) == (amqp.AmqpValue, "x", len(data))
    for decode in (transport.decode_value, values.decode_value):
        other, end = decode(data)
        assert type(other) is values.Described and other.value == "x" and end == len(data)
        assert values.encode_value(other, transport.decode_value_wire(data)[2]) == data
    assert not hasattr(transport, "AmqpValue")


def test_the_versions_share_one_frame_and_protocol_header() -> None:
    """What is the same in both versions is generated once (values.py) and imported by each:
    the frame, the protocol header and frame encoding; each version's `decode` still reads a
    frame's body with its own types."""
    from specgen_codecs.amqp_1_0 import transport, values

    for name in ("Frame", "ProtocolHeader"):
        assert getattr(amqp, name) is getattr(transport, name) is getattr(values, name)
    assert amqp.encode is transport.encode is values.encode_frame
    open_frame = amqp.encode(amqp.Frame(0, 3, amqp.Open(container_id="c")))
    assert type(transport.decode(open_frame).body) is transport.Open is not amqp.Open
    assert type(amqp.decode(open_frame).body) is amqp.Open
    assert transport.encode(transport.decode(open_frame)) == open_frame
