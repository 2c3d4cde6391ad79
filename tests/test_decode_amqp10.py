"""`specgen decode amqp-1-0` on a conversation qpid-proton's engine wrote: protocol headers that
stand where frames start (first, and again after SASL), walked, decoded and reconciled.

AMQP 1.0's protocol headers are no frames: "AMQP" read as a size is over a gigabyte. The walk
takes each as one message of 8 bytes wherever a frame could start, the tasks write it as a row
of its own (command "protocol-header", no frame header columns), and a gap resynchronises on
one as on a frame. The bytes are proton's (tests/proton_engine.py), so what the rows must say
comes from what proton was told to send.
"""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
from proton_engine import Conversation, converse

from specgen.pipeline import decode
from specgen_codecs.amqp_1_0.framing import PROTOCOL_HEADERS
from specgen_codecs.amqp_1_0.v1_0 import FrameReader, decode_message

SASL_HEADER, AMQP_HEADER = b"AMQP\x03\x01\x00\x00", b"AMQP\x00\x01\x00\x00"
MESSAGES = 300


@pytest.fixture(scope="module")
def conversation() -> Conversation:
    conv = converse(MESSAGES)
    assert conv.received == MESSAGES  # proton's own server read every message whole
    return conv


def _capture(folder: Path, c2s: bytes, s2c: bytes) -> Path:
    folder.mkdir(parents=True)
    (folder / "conn-0001.c2s.bin").write_bytes(c2s)
    (folder / "conn-0001.s2c.bin").write_bytes(s2c)
    return folder


def _decode(tmp_path: Path, c2s: bytes, s2c: bytes, target: int = 1 << 26) -> tuple[Any, ...]:
    capture = _capture(tmp_path / "capture", c2s, s2c)
    lines: list[str] = []
    result = decode.decode_local(
        "amqp-1-0", capture, tmp_path / "out", target=target, echo=lines.append
    )
    frames = pq.read_table(tmp_path / "out" / "frames").to_pylist()
    rejects = pq.read_table(tmp_path / "out" / "rejects").to_pylist()
    return result, frames, rejects, lines


def _messages(data: bytes) -> int:
    """How many frames and protocol headers the codec's own incremental reader finds."""
    reader = FrameReader()
    reader.feed(data)
    return sum(1 for _ in reader)


def _second_header(data: bytes) -> int:
    """Where the AMQP protocol header after SASL starts in one direction's bytes."""
    at = data.index(AMQP_HEADER, 8)
    assert data[:8] == SASL_HEADER
    return at


def test_a_proton_conversation_decodes_whole(tmp_path: Path, conversation: Conversation) -> None:
    c2s, s2c = bytes(conversation.c2s), bytes(conversation.s2c)
    result, frames, rejects, lines = _decode(tmp_path, c2s, s2c)
    assert rejects == [] and result.reconciled, lines
    by_direction = collections.Counter(r["direction"] for r in frames)
    # the codec's own incremental reader, fed the whole stream, finds the same messages
    assert by_direction == {
        "c2s": _messages(c2s),
        "s2c": _messages(s2c),
    }
    for direction, data in (("c2s", c2s), ("s2c", s2c)):
        rows = [r for r in frames if r["direction"] == direction]
        headers = [r for r in rows if r["command"] == "protocol-header"]
        assert [(r["offset"], r["size"]) for r in headers] == [(0, 8), (_second_header(data), 8)]
        assert [r["protocol_header"]["protocol_id"] for r in headers] == [3, 0]
        assert all(r["frame_type"] is None and r["channel"] is None for r in headers)
        assert sum(r["size"] for r in rows) == len(data)  # every byte in a row
    commands = collections.Counter((r["direction"], r["command"]) for r in frames)
    assert commands["c2s", "sasl-init"] == 1 and commands["s2c", "sasl-outcome"] == 1
    assert commands["c2s", "transfer"] == MESSAGES
    transfers = sorted((r for r in frames if r["command"] == "transfer"), key=lambda r: r["offset"])
    bodies = [decode_message(r["payload"]).body for r in transfers]
    sent = [b.value if hasattr(b, "value") else b[0].value for b in bodies]
    assert sent == conversation.bodies
    assert [r["transfer"]["delivery_tag"] for r in transfers] == [
        b"tag-%d" % i for i in range(MESSAGES)
    ]


def test_ranges_cut_anywhere_give_the_same_rows(tmp_path: Path, conversation: Conversation) -> None:
    c2s, s2c = bytes(conversation.c2s), bytes(conversation.s2c)
    whole = _decode(tmp_path / "whole", c2s, s2c)[1]
    result, cut, rejects, lines = _decode(tmp_path / "cut", c2s, s2c, target=8)
    assert rejects == [] and result.reconciled, lines
    (found,) = [line for line in lines if line.startswith("decode: ")]
    assert int(found.split(" in ")[-1].split()[0]) > 100, found  # a range every few frames
    key = ("direction", "offset", "size", "command")
    assert sorted(tuple(r[k] for k in key) for r in cut) == sorted(
        tuple(r[k] for k in key) for r in whole
    )


@pytest.mark.parametrize("junk", [b"\xff" * 37, b"AMQ", b"AMQP\x07\x01"])
def test_a_gap_resynchronises_on_the_protocol_header(
    tmp_path: Path, conversation: Conversation, junk: bytes
) -> None:
    s2c = bytes(conversation.s2c)
    at = _second_header(s2c)
    broken = s2c[:at] + junk + s2c[at:]
    result, frames, rejects, lines = _decode(tmp_path, bytes(conversation.c2s), broken)
    assert result.reconciled, lines
    ((reject),) = rejects
    assert (reject["direction"], reject["kind"]) == ("s2c", "unframed")
    assert (reject["offset"], reject["length"], reject["bytes"]) == (at, len(junk), junk)
    rows = [r for r in frames if r["direction"] == "s2c"]
    assert len(rows) == _messages(s2c)  # nothing after the junk is lost
    assert any(r["offset"] == at + len(junk) and r["command"] == "protocol-header" for r in rows)


def test_a_stream_cut_inside_a_protocol_header_leaves_a_gap(
    tmp_path: Path, conversation: Conversation
) -> None:
    c2s = bytes(conversation.c2s)
    at = _second_header(c2s)
    result, frames, rejects, lines = _decode(tmp_path, c2s[: at + 5], bytes(conversation.s2c))
    assert result.reconciled, lines
    ((reject),) = rejects
    assert (reject["offset"], reject["length"], reject["kind"]) == (at, 5, "unframed")
    assert [r["command"] for r in frames if r["direction"] == "c2s"] == [
        "protocol-header",
        "sasl-init",
    ]


def test_the_framing_names_every_protocol_header() -> None:
    assert set(PROTOCOL_HEADERS) == {AMQP_HEADER, SASL_HEADER, b"AMQP\x02\x01\x00\x00"}


@pytest.mark.parametrize("chunk", [1, 3, 7, 8, 4096])
def test_the_frame_reader_finds_protocol_headers_split_across_feeds(
    conversation: Conversation, chunk: int
) -> None:
    """Protocol headers (first, and again after SASL) split anywhere across feeds come out as
    the same messages, at the same offsets, as when the stream is fed whole; a frame's first
    octets are never taken for a protocol header's."""
    for data in (conversation.c2s, conversation.s2c):
        whole = FrameReader()
        whole.feed(data)
        want = list(whole.frames())
        reader, got = FrameReader(), []
        for i in range(0, len(data), chunk):
            reader.feed(data[i : i + chunk])
            got.extend(reader.frames())
        reader.finish()
        assert got == want
        headers = [raw for _, raw in got if raw in PROTOCOL_HEADERS]
        assert headers[:2] == [SASL_HEADER, AMQP_HEADER]  # SASL first, AMQP after it
        assert b"".join(raw for _, raw in got) == data
