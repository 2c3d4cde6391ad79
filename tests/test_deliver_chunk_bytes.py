"""A decoded Streams Deliver keeps its chunk's entry bytes: an unchanged chunk re-encodes as one
copy of them, and any change to its entries (replaced, mutated in place, appended, deleted) is
noticed, the chunk then encoding exactly as a freshly built one with the same content."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import struct
import zlib

import pytest

import specgen.locations  # noqa: F401  (maps specgen_codecs to this tree's generated/)
from specgen_codecs.rabbitmq_stream import v4_0 as rs
from specgen_codecs.rabbitmq_stream.v4_0 import commands as rsc

_CHUNK = struct.Struct(">BbbHIqQQIIIB3s")


def _entries() -> list[rs.SimpleEntry | rs.SubBatchEntry]:
    return [
        rs.SimpleEntry(5, b"hello"),
        rs.SubBatchEntry(1, 0, 2, 9, 4, b"\x1f\x8b\x08\x00"),
        rs.SimpleEntry(3, b"abc"),
    ]


def _data_length(items: list[rs.SimpleEntry | rs.SubBatchEntry]) -> int:
    return sum(
        4 + len(e.data) if isinstance(e, rs.SimpleEntry) else 11 + len(e.data) for e in items
    )


def _deliver(items: list[rs.SimpleEntry | rs.SubBatchEntry], v2: bool = False) -> rs.Message:
    """A chunk with a right CRC, built field by field."""
    body = b"".join(
        struct.pack(">I", e.size) + e.data
        if isinstance(e, rs.SimpleEntry)
        else struct.pack(
            ">BHII",
            0x80 | e.compression_type << 4 | e.reserved,
            e.num_records,
            e.uncompressed_length,
            e.length,
        )
        + e.data
        for e in items
    )
    chunk = rs.OsirisChunk(
        0x50,
        0,
        len(items),
        4,
        1_700_000_000_000,
        1,
        100,
        zlib.crc32(body),
        len(body),
        0,
        0,
        0,
        list(items),
    )
    if v2:
        return rs.DeliverV2(7, 42, chunk)
    return rs.DeliverV1(7, chunk)


def _fresh(msg: rs.DeliverV1 | rs.DeliverV2) -> bytes:
    """The same content, rebuilt from scratch (no kept bytes), encoded."""
    c = msg.osiris_chunk
    items = [dataclasses.replace(e) for e in c.messages]
    chunk = dataclasses.replace(c, messages=items)
    assert chunk._messages_kept is None
    return dataclasses.replace(msg, osiris_chunk=chunk).encode()


def _fix_counts(msg: rs.DeliverV1 | rs.DeliverV2) -> None:
    c = msg.osiris_chunk
    c.num_entries = len(c.messages)
    c.data_length = _data_length(c.messages)


@pytest.mark.parametrize("v2", [False, True])
def test_unchanged_chunk_is_one_copy_of_its_bytes(v2: bool) -> None:
    frame = _deliver(_entries(), v2).encode()
    msg = rs.decode(frame)
    assert isinstance(msg, (rs.DeliverV1, rs.DeliverV2))
    kept = msg.osiris_chunk._messages_kept
    assert kept is not None and kept[0] is msg.osiris_chunk.messages
    assert msg.encode() == frame
    # the entries' bytes went out as the one kept part
    parts: list[bytes] = []
    encoder = rsc._encode_deliver_v2 if v2 else rsc._encode_deliver_v1
    encoder(msg, parts, False)
    assert any(p is kept[1] for p in parts)
    # not a field: fields(), repr and equality are as before
    assert "_messages_kept" not in {f.name for f in dataclasses.fields(msg.osiris_chunk)}
    assert "_messages_kept" not in repr(msg)
    assert msg == _deliver(_entries(), v2)


def _decoded() -> rs.DeliverV1:
    msg = rs.decode(_deliver(_entries()).encode())
    assert isinstance(msg, rs.DeliverV1)
    return msg


def _no_copy(msg: rs.DeliverV1) -> bool:
    kept = msg.osiris_chunk._messages_kept
    assert kept is not None
    parts: list[bytes] = []
    rsc._encode_deliver_v1(msg, parts, False)
    return not any(p is kept[1] for p in parts)


def test_replaced_entry() -> None:
    msg = _decoded()
    msg.osiris_chunk.messages[0] = rs.SimpleEntry(5, b"HELLO")
    assert _no_copy(msg)
    assert msg.encode() == _fresh(msg) != _deliver(_entries()).encode()
    assert rs.decode(msg.encode(), verify_checksums=False) == msg


def test_replaced_by_an_equal_entry_still_one_copy_is_right() -> None:
    msg = _decoded()
    msg.osiris_chunk.messages[0] = rs.SimpleEntry(5, b"hello")
    assert msg.encode() == _fresh(msg) == _deliver(_entries()).encode()


@pytest.mark.parametrize(
    "mutate",
    [
        lambda e: setattr(e[0], "data", b"HELLO"),
        lambda e: setattr(e[2], "data", b"xyz"),
        lambda e: setattr(e[1], "compression_type", 2),
        lambda e: setattr(e[1], "num_records", 3),
        lambda e: setattr(e[1], "reserved", 1),
    ],
)
def test_entry_mutated_in_place(mutate: object) -> None:
    msg = _decoded()
    mutate(msg.osiris_chunk.messages)  # type: ignore[operator]
    assert _no_copy(msg)
    assert msg.encode() == _fresh(msg)
    assert rs.decode(msg.encode(), verify_checksums=False) == msg


def test_mutated_size_is_still_checked() -> None:
    msg = _decoded()
    entry = msg.osiris_chunk.messages[0]
    assert isinstance(entry, rs.SimpleEntry)
    entry.size = 6  # no longer its data's length: an EncodeError, as for a fresh chunk
    with pytest.raises(rs.EncodeError):
        msg.encode()


def test_appended_and_deleted_entries() -> None:
    msg = _decoded()
    msg.osiris_chunk.messages.append(rs.SimpleEntry(2, b"zz"))
    with pytest.raises(rs.EncodeError):  # the count field still says 3
        msg.encode()
    _fix_counts(msg)
    assert _no_copy(msg)
    assert msg.encode() == _fresh(msg)
    msg = _decoded()
    del msg.osiris_chunk.messages[1]
    _fix_counts(msg)
    assert _no_copy(msg)
    assert msg.encode() == _fresh(msg)
    assert rs.decode(msg.encode(), verify_checksums=False) == msg


def test_new_list_and_changed_header_fields() -> None:
    msg = _decoded()
    msg.osiris_chunk.messages = list(reversed(msg.osiris_chunk.messages))
    assert _no_copy(msg)
    assert msg.encode() == _fresh(msg)
    msg = _decoded()
    msg.osiris_chunk.data_length += 1  # the size check still runs on the kept bytes
    with pytest.raises(rs.EncodeError):
        msg.encode()
    msg = _decoded()
    msg.osiris_chunk.timestamp = 5
    assert not _no_copy(msg)
    assert msg.encode() == _fresh(msg)


def test_seal_checksums_recomputes_the_crc() -> None:
    frame = _deliver(_entries()).encode()
    bad = bytearray(frame)
    struct.pack_into(">I", bad, 8 + 33, 0xDEADBEEF)  # a wrong chunk_crc field
    msg = rs.decode(bytes(bad), verify_checksums=False)
    assert isinstance(msg, rs.DeliverV1)
    assert msg.encode() == bytes(bad)  # the field's value, as decoded
    assert rs.encode(msg, seal_checksums=True) == frame  # the CRC of the kept bytes
    entry = msg.osiris_chunk.messages[0]
    assert isinstance(entry, rs.SimpleEntry)
    entry.data = b"HELLO"
    sealed = rs.encode(msg, seal_checksums=True)
    assert rs.decode(sealed) == rs.decode(sealed, verify_checksums=False)


def test_copies_and_pickles_keep_a_consistent_state() -> None:
    msg = _decoded()
    frame = msg.encode()
    for other in (copy.copy(msg), copy.deepcopy(msg), pickle.loads(pickle.dumps(msg))):
        assert other == msg and other.encode() == frame
    deep = copy.deepcopy(msg)
    entry = deep.osiris_chunk.messages[2]
    assert isinstance(entry, rs.SimpleEntry)
    entry.data = b"xyz"
    assert deep.encode() == _fresh(deep) != frame
    assert msg.encode() == frame
    replaced = dataclasses.replace(msg.osiris_chunk)
    assert replaced._messages_kept is None


def test_decoded_from_a_bytearray_keeps_its_own_copy() -> None:
    frame = bytearray(_deliver(_entries()).encode())
    msg = rs.decode(frame)
    frame[-1] ^= 0xFF  # the caller reuses its buffer
    frame.extend(b"more")  # and may resize it: nothing pins it
    assert msg.encode() == _deliver(_entries()).encode()


def test_entries_of_one_class_compared_at_once() -> None:
    """The common chunk, simple entries only: compared by one mapped getter, and still any
    change is seen."""
    items: list[rs.SimpleEntry | rs.SubBatchEntry] = [
        rs.SimpleEntry(1, bytes([i])) for i in range(50)
    ]
    frame = _deliver(items).encode()
    for change in range(4):
        msg = rs.decode(frame)
        assert isinstance(msg, rs.DeliverV1)
        entries = msg.osiris_chunk.messages
        if change == 0:
            assert msg.encode() == frame and not _no_copy(msg)
            continue
        if change == 1:
            entry = entries[49]
            assert isinstance(entry, rs.SimpleEntry)
            entry.data = b"\xff"
        elif change == 2:
            entries[10] = rs.SubBatchEntry(0, 0, 1, 1, 1, b"\x0a")
            msg.osiris_chunk.data_length = _data_length(entries)
        else:
            entries[0] = rs.PublishV1PublishedMessage(1, b"x")  # type: ignore[call-overload]
            with pytest.raises(rs.EncodeError):
                msg.encode()
            continue
        assert _no_copy(msg)
        assert msg.encode() == _fresh(msg) != frame
