"""Input nested past Python's stack is a DecodeError, never a RecursionError.

Each value is built by hand from its protocol's encoding, nested 1,000 deep (a peer never
nests that deep; the stack runs out near that), as the fuzzer first found them: AMQP 1.0
descriptors of descriptors (600 zero bytes), AMQP 0-9-1 field tables within field tables,
AMQP 0-10 maps within maps. The error names the type and a byte offset inside the input.
"""

from __future__ import annotations

import pytest

from specgen_codecs.amqp_0_9_1 import v0_9_1 as amqp091
from specgen_codecs.amqp_0_10 import v0_10 as amqp010
from specgen_codecs.amqp_1_0 import v1_0 as amqp10

DEPTH = 1000


def test_amqp10_descriptors_of_descriptors() -> None:
    frame = bytes.fromhex("0000025d02") + bytes(600)  # size 605, doff 2, then zeros
    with pytest.raises(amqp10.DecodeError) as info:
        amqp10.decode(frame)
    assert info.value.field == "value" and 8 <= info.value.offset < len(frame)
    assert "nested deeper than the stack allows" in info.value.reason
    with pytest.raises(amqp10.DecodeError, match="nested deeper"):
        amqp10.decode_message(bytes(600))
    reader = amqp10.FrameReader()
    reader.feed(frame)
    with pytest.raises(amqp10.DecodeError, match="nested deeper"):
        list(reader)


def test_amqp10_lists_within_lists() -> None:
    value = b"\x45"  # list0
    for _ in range(DEPTH):
        value = b"\xd0" + (len(value) + 4).to_bytes(4, "big") + (1).to_bytes(4, "big") + value
    with pytest.raises(amqp10.DecodeError, match="nested deeper"):
        amqp10.decode_value(value)


def test_amqp091_field_tables_within_field_tables() -> None:
    table = b"\0\0\0\0"
    for _ in range(DEPTH):
        entry = b"\x01kF" + table  # key "k", type F (field table)
        table = len(entry).to_bytes(4, "big") + entry
    body = bytes.fromhex("000a000b") + table + b"\x05PLAIN\x00\x00\x00\x01x\x05en_US"
    frame = b"\x01\x00\x00" + len(body).to_bytes(4, "big") + body + b"\xce"
    with pytest.raises(amqp091.DecodeError) as info:
        amqp091.decode(frame, "client")  # Connection.Start-Ok
    assert info.value.field == "table" and 0 < info.value.offset < len(frame)
    assert "nested deeper than the stack allows" in info.value.reason


def test_amqp010_maps_within_maps() -> None:
    m = b"\0\0\0\x04\0\0\0\0"  # an empty map: size 4, count 0
    for _ in range(DEPTH):
        body = b"\0\0\0\x01\x01k\xa8" + m  # count 1, key "k", type 0xa8 (map)
        m = len(body).to_bytes(4, "big") + body
    control = bytes.fromhex("01020f00") + m + b"\x05PLAIN\x00\x00\x00\x01x\x02en"
    with pytest.raises(amqp010.DecodeError) as info:
        amqp010.decode_control(control)  # connection.start-ok
    assert 0 < info.value.offset < len(control)
    assert "nested deeper than the stack allows" in info.value.reason
