"""`specgen decode`: captures written with the generated encoders, decoded with Spark and without.

The captures hold a whole session in both directions (handshake, publishes, confirms, an error
response, a subscription and a delivery), an index with reads that split frames, a folder of
captures at two depths, an empty file, files that belong to no capture, and every kind of bad
frame: an unknown key, a body that contradicts itself, a frame cut by the end of the file, a
tail too short for a size prefix and a file that is not frames at all. Then the bytes that do
not frame: an impossible size prefix mid-file (the issue's repro), garbage, a capture that
starts mid-frame, at every range cut around them and under random corruption; a bad index line.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import random
import re
import struct
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specgen.cli import main
from specgen.emitters.plan import snake
from specgen.pipeline import decode
from specgen.pipeline.columns import VIOLATIONS
from specgen.pipeline.inputs import DecodeInputError, Stream, load_index, scan
from specgen.pipeline.ranges import RUN, UNFRAMED_KEEP, split
from specgen.pipeline.reconcile import FileTally, Tally
from specgen_codecs.rabbitmq_stream import early as early_codec
from specgen_codecs.rabbitmq_stream.v4_0 import (
    Broker,
    CloseRequest,
    CloseResponse,
    ConnectionProperty,
    Credit,
    CreditResponse,
    DeclarePublisherRequest,
    DeclarePublisherResponse,
    DeliverV1,
    DeliverV2,
    Heartbeat,
    MetadataRequest,
    MetadataResponse,
    OpenRequest,
    OpenResponse,
    OsirisChunk,
    PeerPropertiesRequest,
    PeerPropertiesResponse,
    PeerProperty,
    Property,
    PublishConfirm,
    PublishError,
    PublishingError,
    PublishV1,
    PublishV1PublishedMessage,
    PublishV2,
    PublishV2PublishedMessage,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
    SimpleEntry,
    StreamMetadata,
    SubBatchEntry,
    SubscribeRequest,
    SubscribeRequestOffsetSpecification,
    SubscribeResponse,
    TuneRequest,
    TuneResponse,
)
from specgen_codecs.rabbitmq_stream.v4_0 import spark_schema as schema40
from specgen_codecs.rabbitmq_stream.v4_0 import test_conformance as conformance40

RANGE = 512  # bytes per range: small, so that every file of some size is split
CONTRACT = [
    "capture",
    "connection",
    "direction",
    "timestamp",
    "offset",
    "size",
    "key",
    "version",
    "command",
    "message",
    "kind",
    "correlation_id",
    "response_code",
]
REJECT_COLUMNS = [
    "capture",
    "connection",
    "direction",
    "offset",
    "size",
    "length",
    "kind",
    "bytes",
    "error",
    "field",
    "error_offset",
]
WALL0 = 1795426429.25


@dataclass
class Frame:
    capture: str
    connection: str
    direction: str
    offset: int
    raw: bytes
    msg: Any
    timestamp: float | None = None


@dataclass
class Reject:
    capture: str
    connection: str
    direction: str
    offset: int
    size: int | None
    kind: str  # "frame" or "unframed"
    raw: bytes  # all the bytes the reject covers
    error: str  # a substring of the error
    field: str
    error_offset: int


@dataclass
class Captures:
    root: Path
    frames: list[Frame]
    rejects: list[Reject]
    frame_offsets: dict[Path, set[int]]  # every frame start (rejects included), per file
    unframed: dict[Path, set[int]]  # every unframed reject's offset, per file

    @property
    def found(self) -> int:
        """Frames the walk finds: frames and rejected frames."""
        return len(self.frames) + sum(r.kind == "frame" for r in self.rejects)


def _deliver() -> OsirisChunk:
    entries: list[SimpleEntry | SubBatchEntry] = [
        SimpleEntry(5, b"hello"),
        SubBatchEntry(0, 0, 2, 10, 10, b"0123456789"),
        SimpleEntry(0, b""),
    ]
    length = 9 + 21 + 4

    def chunk(crc: int) -> OsirisChunk:
        return OsirisChunk(
            5, 0, 3, 4, 1_700_000_000_123, 2**64 - 1, 100, crc, length, 0, 0, 0, entries
        )

    # the chunk's CRC-32 covers its entries, the frame's last `length` bytes
    return chunk(zlib.crc32(DeliverV1(1, chunk(0)).encode()[-length:]))


def session_c2s() -> list[Any]:
    return [
        PeerPropertiesRequest(1, [PeerProperty("product", "specgen-test"), PeerProperty("v", "1")]),
        SaslHandshakeRequest(2),
        SaslAuthenticateRequest(3, "PLAIN", b"\x00guest\x00guest"),
        TuneResponse(1048576, 60),
        OpenRequest(4, "/"),
        DeclarePublisherRequest(5, 1, "orders-writer", "orders"),
        *[
            PublishV1(1, [PublishV1PublishedMessage(i * 2 + j, b"order %d" % i) for j in range(2)])
            for i in range(4)
        ],
        PublishV2(
            1,
            [PublishV2PublishedMessage(10, "eu", b"x"), PublishV2PublishedMessage(11, None, b"")],
        ),
        DeclarePublisherRequest(6, 2, "", "missing"),
        SubscribeRequest(
            7,
            1,
            "orders",
            SubscribeRequestOffsetSpecification(5, -1_700_000_000),
            10,
            [Property("k", "v")],
        ),
        SubscribeRequest(8, 2, "orders", SubscribeRequestOffsetSpecification(1, None), 1, []),
        Credit(1, 5),
        Heartbeat(),
        MetadataRequest(9, ["orders", "missing"]),
        CloseRequest(10, 0, "bye"),
    ]


def session_s2c() -> list[Any]:
    return [
        PeerPropertiesResponse(1, 1, [PeerProperty("product", "RabbitMQ")]),
        SaslHandshakeResponse(2, 1, ["PLAIN", "AMQPLAIN"]),
        SaslAuthenticateResponse(3, 1),
        TuneRequest(1048576, 60),
        OpenResponse(4, 1, [ConnectionProperty("advertised_host", "localhost")]),
        DeclarePublisherResponse(5, 1),
        PublishConfirm(1, [0, 1, 2, 3, 2**64 - 1]),
        DeclarePublisherResponse(6, 2),  # stream does not exist
        PublishError(1, [PublishingError(10, 0x10)]),
        SubscribeResponse(7, 1),
        SubscribeResponse(8, 1),
        DeliverV1(1, _deliver()),
        CreditResponse(4, 1),
        Heartbeat(),
        MetadataResponse(
            9,
            [Broker(0, "localhost", 5552)],
            [StreamMetadata("orders", 1, 0, [0]), StreamMetadata("missing", 2, 0xFFFF, [])],
        ),
        CloseResponse(10, 1),
    ]


class _Writer:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.frames: list[Frame] = []
        self.rejects: list[Reject] = []
        self.offsets: dict[Path, set[int]] = {}
        self.unframed: dict[Path, set[int]] = {}

    def stream(
        self, capture: str, connection: str, direction: str, items: list[Any], chunk: int = 0
    ) -> list[dict[str, Any]]:
        """Write one direction's file; items are messages, or (raw bytes, size, kind, error,
        field, error offset) of a reject. Returns the index's read events when `chunk` is
        given: reads of `chunk` bytes."""
        folder = self.root / capture
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{connection}.{direction}.bin"
        data = bytearray()
        mine: list[Frame] = []
        for item in items:
            at = len(data)
            self.offsets.setdefault(path, set()).add(at)
            self.unframed.setdefault(path, set())
            if isinstance(item, tuple):
                raw, size, kind, error, field, error_offset = item
                self.rejects.append(
                    Reject(
                        capture,
                        connection,
                        direction,
                        at,
                        size,
                        kind,
                        raw,
                        error,
                        field,
                        error_offset,
                    )
                )
                if kind == "unframed":
                    self.unframed[path].add(at)
            else:
                raw = item.encode()
                mine.append(Frame(capture, connection, direction, at, raw, item))
            data += raw
        path.write_bytes(bytes(data))
        self.frames += mine
        if not chunk:
            return []
        reads = []
        for i, start in enumerate(range(0, len(data), chunk)):
            length = min(chunk, len(data) - start)
            wall = round(WALL0 + i * 0.25 + (0.5 if direction == "s2c" else 0), 6)
            reads.append(
                {
                    "event": "read",
                    "connection": connection,
                    "direction": direction,
                    "offset": start,
                    "length": length,
                    "mono": 12.5 + i,
                    "wall": wall,
                }
            )
        for f in mine:
            last = f.offset + len(f.raw) - 1
            f.timestamp = reads[last // chunk]["wall"]
        return reads


def build_captures(root: Path) -> Captures:
    w = _Writer(root)
    # day1/conn-0001: a whole session, with an index whose reads split frames
    reads = w.stream("day1", "conn-0001", "c2s", session_c2s(), chunk=64)
    reads += w.stream("day1", "conn-0001", "s2c", session_s2c(), chunk=100)
    index = [
        {
            "event": "accept",
            "connection": "conn-0001",
            "peer": "127.0.0.1:5431",
            "mono": 12.4,
            "wall": WALL0,
        }
    ]
    index += sorted(reads, key=lambda e: (e["wall"], e["direction"]))
    index.append(
        {
            "event": "close",
            "connection": "conn-0001",
            "side": "client",
            "mono": 99.0,
            "wall": WALL0 + 99,
        }
    )
    lines = "".join(json.dumps(e) + "\n" for e in index)
    # a recorder killed mid-write leaves an unterminated last line: skipped, not an error
    (root / "day1" / "conn-0001.index.jsonl").write_text(lines + '{"event": "re')
    (root / "day1" / "capture.json").write_text('{"listen": "127.0.0.1:5552"}\n')
    (root / "day1" / "notes.txt").write_text("not part of the capture\n")
    # day1/conn-0002: an empty client file; the server's has a bad body, a frame of a key the
    # codec does not know (one unframed reject, exactly that frame) and a cut tail
    w.stream("day1", "conn-0002", "c2s", [])
    bad_key = bytearray(DeclarePublisherResponse(2, 1).encode())
    bad_key[4:6] = b"\x77\x77"
    bad_body = bytearray(PublishConfirm(1, [1, 2]).encode())
    bad_body[9:13] = (1000).to_bytes(4, "big")
    tune = TuneRequest(1, 2).encode()
    w.stream(
        "day1",
        "conn-0002",
        "s2c",
        [
            DeclarePublisherResponse(1, 1),
            (
                bytes(bad_body),
                len(bad_body),
                "frame",
                "1000 items",
                "PublishConfirm.publishing_ids",
                13,
            ),
            (
                bytes(bad_key),
                len(bad_key),
                "unframed",
                "no layout for key 0x7777 version 1; 14 bytes skipped, resynchronised at offset 57",
                "frame.key",
                4,
            ),
            CreditResponse(6, 3),
            (
                tune[:-3],
                len(tune),
                "unframed",
                "cut mid-frame: size says 12, 9 bytes follow",
                "frame",
                13,
            ),
        ],
    )
    # more/day2/conn-0001: many publishes and confirms, no index, two bytes of a frame at the end
    payload = bytes(range(256)) * 2
    w.stream(
        "more/day2",
        "conn-0001",
        "c2s",
        [DeclarePublisherRequest(1, 7, "", "events")]
        + [PublishV1(7, [PublishV1PublishedMessage(i, payload[: 50 + i * 7])]) for i in range(40)],
    )
    w.stream(
        "more/day2",
        "conn-0001",
        "s2c",
        [DeclarePublisherResponse(1, 1)]
        + [PublishConfirm(7, [i]) for i in range(40)]
        + [
            DeliverV2(3, 99, _deliver()),
            (b"\x00\x00", None, "unframed", "too few for the 4-byte size prefix", "frame.size", 2),
        ],
    )
    # more/day2/conn-0002: a file named like a capture that holds no frames at all
    junk = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"
    w.stream(
        "more/day2",
        "conn-0002",
        "c2s",
        [
            (
                junk,
                0x47455420 + 4,
                "unframed",
                "is outside 4..67108864; nothing frames and decodes in the 35 bytes",
                "frame.size",
                0,
            )
        ],
    )
    (root / "README.txt").write_text("captures for the decode tests\n")
    return Captures(root, w.frames, w.rejects, w.offsets, w.unframed)


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> Captures:
    return build_captures(tmp_path_factory.mktemp("decode") / "captures")


@pytest.fixture(scope="module")
def local_out(
    captures: Captures, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, decode.Result, list[str]]:
    out = tmp_path_factory.mktemp("local") / "out"
    lines: list[str] = []
    result = decode.decode_local(
        "rabbitmq-stream", captures.root, out, target=RANGE, echo=lines.append
    )
    return out, result, lines


@pytest.fixture(scope="module")
def spark_out(
    spark: Any, captures: Captures, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, decode.Result, list[str]]]:
    out = tmp_path_factory.mktemp("spark") / "out"
    lines: list[str] = []
    result = decode.run(
        "rabbitmq-stream", captures.root, out, "local[*]", target=RANGE, echo=lines.append
    )
    yield out, result, lines


def rows(path: Path) -> list[dict[str, Any]]:
    table = pq.read_table(path)
    return sorted(
        table.to_pylist(),
        key=lambda r: (r["capture"], r["connection"], r["direction"], r["offset"]),
    )


def plain(value: Any) -> Any:
    """A Parquet value as the dataclasses hold it: decimals as ints, union structs as the case."""
    if isinstance(value, Decimal):
        return int(value)
    if isinstance(value, dict):
        if set(value) == {"simple_entry", "sub_batch_entry"}:
            (case,) = [v for v in value.values() if v is not None]
            return plain(case)
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def columns_of(msg: Any) -> dict[str, Any]:
    """A message's fields as its struct column holds them: all but `key_on_wire`, the key a
    response came under, which is the frame's `key` column."""
    fields = dataclasses.asdict(msg)
    fields.pop("key_on_wire", None)
    return fields


# ---- no Spark: the walk, the index, the single-process decoder -------------------------------


def test_ranges_are_frame_aligned_and_cover_every_file(captures: Captures) -> None:
    framing = decode._codec("specgen_codecs.rabbitmq_stream.v4_0").framing
    split_any = False
    for path, starts in captures.frame_offsets.items():
        stream = Stream("c", "conn", "c2s", path, path.stat().st_size)
        ranges = split(stream, framing, RANGE)
        assert ranges[0].start == 0 and ranges[-1].end == stream.size
        for before, after in zip(ranges, ranges[1:], strict=False):
            assert before.end == after.start  # contiguous, nothing skipped
        assert {r.start for r in ranges} <= starts  # every range starts on a frame or a gap
        gaps = [(r, g, n) for r in ranges for g, n in zip(r.gap_starts, r.gap_lengths, strict=True)]
        assert {g for _, g, _ in gaps} == captures.unframed[path]
        assert all(r.start <= g and g + n <= r.end for r, g, n in gaps)  # inside one range
        framed = starts - captures.unframed[path]
        assert sum(r.frames for r in ranges) == len(framed)
        split_any |= len(ranges) > 2
    assert split_any
    empty = captures.root / "day1" / "conn-0002.c2s.bin"
    assert split(Stream("c", "conn", "c2s", empty, 0), framing, RANGE) == []


def test_index_reads_and_unterminated_last_line(captures: Captures, tmp_path: Path) -> None:
    reads = load_index(captures.root / "day1" / "conn-0001.index.jsonl")
    assert reads["c2s"].starts[:3] == [0, 64, 128]
    assert reads["c2s"].walls[0] == WALL0
    bad = tmp_path / "conn-0001.index.jsonl"
    bad.write_text(
        '{"event": "read", "direction": "c2s", "offset": 0, "length": 4}\nnot json\n{}\n'
    )
    with pytest.raises(DecodeInputError, match=r"conn-0001.index.jsonl:2: not a JSON line"):
        load_index(bad)
    bad.write_text('{"event": "read", "direction": "sideways", "offset": 0, "length": 4}\n')
    with pytest.raises(DecodeInputError, match=r":1: a read event needs direction"):
        load_index(bad)


def test_scan_finds_captures_at_any_depth_and_lists_other_files(captures: Captures) -> None:
    inventory = scan(captures.root)
    assert inventory.captures == ["day1", "more/day2"]
    assert sorted(inventory.ignored) == ["README.txt", "day1/notes.txt"]
    assert [(s.capture, s.connection, s.direction) for s in inventory.empty] == [
        ("day1", "conn-0002", "c2s")
    ]
    one = scan(captures.root / "day1")
    assert one.captures == ["day1"]  # a capture folder given itself: named after itself


def test_decode_local_frames_match_what_was_encoded(
    captures: Captures, local_out: tuple[Path, decode.Result, list[str]]
) -> None:
    out, result, lines = local_out
    table = pq.read_table(out / "frames")
    assert table.schema.names[: len(CONTRACT)] == CONTRACT
    # the codec's columns, then the pipeline's: the rules of the spec each frame breaks
    assert table.schema == schema40.FRAMES_SCHEMA.append(VIOLATIONS)
    got = rows(out / "frames")
    want = sorted(captures.frames, key=lambda f: (f.capture, f.connection, f.direction, f.offset))
    assert len(got) == len(want) == result.frames
    struct_columns = set(schema40.MESSAGE_COLUMNS.values())
    for row, frame in zip(got, want, strict=True):
        msg = frame.msg
        fields = {f.name for f in dataclasses.fields(msg)}
        expected = {
            "capture": frame.capture,
            "connection": frame.connection,
            "direction": frame.direction,
            "offset": frame.offset,
            "size": len(frame.raw),
            "key": msg.KEY,
            "command": msg.COMMAND,
            "message": type(msg).__name__,
            "kind": msg.KIND,
            "version": msg.VERSION,
            "correlation_id": msg.correlation_id if "correlation_id" in fields else None,
            "response_code": msg.response_code if "response_code" in fields else None,
        }
        assert {k: row[k] for k in expected} == expected
        stamp = row["timestamp"]
        if frame.timestamp is None:
            assert stamp is None
        else:
            assert round(stamp.timestamp(), 6) == frame.timestamp
        own = snake(type(msg).__name__)
        assert {c for c in struct_columns if row[c] is not None} == ({own} if fields else set())
        if fields:
            assert plain(row[own]) == columns_of(msg)
    publish = next(r for r in got if r["message"] == "PublishConfirm" and r["capture"] == "day1")
    assert publish["publish_confirm"]["publishing_ids"][-1] == Decimal(2**64 - 1)  # exact uint64
    assert any(r["response_code"] == 2 for r in got)  # the error response is a frame like any


def test_decode_local_rejects_and_reconciliation(
    captures: Captures, local_out: tuple[Path, decode.Result, list[str]]
) -> None:
    out, result, lines = local_out
    assert pq.read_table(out / "rejects").schema.names == REJECT_COLUMNS
    got = rows(out / "rejects")
    want = sorted(captures.rejects, key=lambda r: (r.capture, r.connection, r.direction, r.offset))
    assert len(got) == len(want) == result.rejects == 5
    for row, reject in zip(got, want, strict=True):
        assert (row["capture"], row["connection"], row["direction"], row["offset"]) == (
            reject.capture,
            reject.connection,
            reject.direction,
            reject.offset,
        )
        assert (row["size"], row["length"], row["kind"]) == (
            reject.size,
            len(reject.raw),
            reject.kind,
        )
        assert row["bytes"] == reject.raw
        assert reject.error in row["error"], row["error"]
        assert (row["field"], row["error_offset"]) == (reject.field, reject.error_offset)
    n = len(captures.frames)
    assert result.found == captures.found == n + 1 and result.reconciled
    assert (result.rejected, result.unframed) == (1, 4)
    assert (
        f"reconciliation: {n} frames + 1 rejected frame = {n + 1} frames found; "
        "the rows hold every byte of all 7 files exactly once"
    ) in lines
    assert lines[0].startswith(
        "decode: 2 captures, 4 connections, 7 byte files (1 empty), 1 index:"
    )
    assert lines[0].endswith(" ranges, and 4 unframed spans (64 bytes)")
    assert lines[1] == "ignored 2 files that are not part of a capture: README.txt, day1/notes.txt"
    assert "bytes per file: frames + rejected frames + unframed = the file's size" in lines
    spaced = [" ".join(line.split()) for line in lines]
    assert "day1/conn-0002.s2c.bin 25 + 29 + 27 = 81 bytes: ok" in spaced
    assert "more/day2/conn-0002.c2s.bin 0 + 0 + 35 = 35 bytes: ok" in spaced
    assert "more/day2/conn-0001.s2c.bin 953 + 0 + 2 = 955 bytes: ok" in spaced


def test_a_lost_reject_fails_the_reconciliation(
    captures: Captures, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = decode.decode_range

    def drop_rejects(*args: Any) -> Iterator[Any]:
        return ((t, b) for t, b in real(*args) if t == "frames")

    monkeypatch.setattr(decode, "decode_range", drop_rejects)
    lines: list[str] = []
    result = decode.decode_local(
        "rabbitmq-stream", captures.root, tmp_path / "out", echo=lines.append
    )
    assert not result.reconciled
    n = len(captures.frames)
    assert (
        f"reconciliation: {n} frames + 0 rejected frames != {n + 1} frames found; "
        "4 of 7 files reconcile byte for byte"
    ) in lines
    spaced = [" ".join(line.split()) for line in lines]
    assert (
        "more/day2/conn-0002.c2s.bin 0 + 0 + 0 = 0 bytes, not 35: FAILED: bytes 0..35 are in no row"
        in spaced
    )
    assert (
        "day1/conn-0002.s2c.bin 25 + 0 + 0 = 25 bytes, not 81: FAILED: bytes 14..57 are in no row"
        in spaced
    )
    assert lines[-1] == "decode: FAILED: 3 files do not reconcile"


def test_every_protocol_with_a_frame_reader_decodes(tmp_path: Path) -> None:
    c = early_codec
    entries: list[Any] = [c.SimpleEntry(5, b"hello")]
    crc = zlib.crc32((5).to_bytes(4, "big") + b"hello")  # the chunk's CRC-32 covers its entries
    msgs = [
        c.PublishConfirm([1, 2]),
        c.Deliver(1, c.OsirisChunk(5, 1, 1, 0, 7, crc, 9, entries)),
        c.SubscribeResponse(3, 1),
    ]
    folder = tmp_path / "early"
    folder.mkdir()
    (folder / "conn-0001.s2c.bin").write_bytes(b"".join(m.encode() for m in msgs))
    lines: list[str] = []
    result = decode.decode_local(
        "rabbitmq-stream/early", folder, tmp_path / "out", echo=lines.append
    )
    assert (result.frames, result.rejects) == (3, 0)
    got = rows(tmp_path / "out" / "frames")
    assert [r["message"] for r in got] == [type(m).__name__ for m in msgs]
    assert plain(got[1]["deliver"]) == columns_of(msgs[1])


@pytest.mark.parametrize("version", ["v4_0", "early"])
def test_message_columns_hold_every_conformance_sample(version: str) -> None:
    conformance = importlib.import_module(
        f"specgen_codecs.rabbitmq_stream.{version}.test_conformance"
    )
    msgs = [msg for _, msg, _ in conformance.SAMPLES]
    _check_columns(
        importlib.import_module(f"specgen_codecs.rabbitmq_stream.{version}.spark_schema"), msgs
    )


@given(st.lists(st.one_of([s for _, s, _ in conformance40.STRATEGIES]), max_size=12))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_message_columns_hold_any_message(msgs: list[Any]) -> None:
    _check_columns(schema40, msgs)


def _check_columns(schema: Any, msgs: list[Any]) -> None:
    columns = schema.message_columns(msgs)
    first = schema.FRAMES_SCHEMA.names.index("command")
    assert list(columns) == schema.FRAMES_SCHEMA.names[first:]
    for name, array in columns.items():
        assert len(array) == len(msgs)
        assert array.type == schema.FRAMES_SCHEMA.field(name).type, name
    for i, msg in enumerate(msgs):
        own = schema.MESSAGE_COLUMNS.get(type(msg).__name__)
        for column in schema.MESSAGE_COLUMNS.values():
            value = columns[column][i].as_py()
            assert value is None if column != own else plain(value) == columns_of(msg)
        assert columns["message"][i].as_py() == type(msg).__name__


def test_integers_map_to_spark_types_that_hold_them() -> None:
    def leaf(column: str, *path: str) -> Any:
        t = schema40.FRAMES_SCHEMA.field(column).type
        for name in path:
            t = t.value_type if name == "[]" else t.field(name).type
        return t

    assert str(leaf("declare_publisher_request", "publisher_id")) == "int16"  # uint8
    assert str(leaf("credit", "credit")) == "int32"  # uint16
    assert str(leaf("declare_publisher_request", "correlation_id")) == "int64"  # uint32
    assert (
        str(leaf("publish_v1", "published_messages", "[]", "publishing_id")) == "decimal128(20, 0)"
    )
    # uint64 | int64, chosen by OffsetType: one type holds both
    assert str(leaf("subscribe_request", "offset_specification", "offset")) == "decimal128(20, 0)"
    assert "heartbeat" not in schema40.FRAMES_SCHEMA.names  # no fields, no struct column


def test_the_codec_package_does_not_need_pyarrow() -> None:
    code = (
        "import sys, specgen_codecs.rabbitmq_stream.v4_0 as c; "
        "c.decode(c.Heartbeat().encode()); assert 'pyarrow' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ---- bytes that do not frame: resynchronisation and the byte reconciliation -----------------

BAD_HEADER = struct.pack(">IHH", 1 << 31, 9, 1)  # the issue's impossible size prefix
V40 = "specgen_codecs.rabbitmq_stream.v4_0"


def credits(n: int, first: int = 0) -> list[bytes]:
    return [Credit(subscription_id=1, credit=i % 65536).encode() for i in range(first, first + n)]


def write_repro(root: Path, before: int = 100, after: int = 100_000) -> Path:
    """The issue's capture: `before` Credit frames, an impossible size prefix, `after` more."""
    folder = root / "cap"
    folder.mkdir(parents=True, exist_ok=True)
    f = credits(before + after)
    data = b"".join(f[:before]) + BAD_HEADER + b"".join(f[before:])
    (folder / "conn-0001.c2s.bin").write_bytes(data)
    return root


def decode_one(tmp: Path, data: bytes, target: int = RANGE) -> tuple[decode.Result, list[str]]:
    """decode_local of one client file holding `data`, into tmp/out."""
    folder = tmp / "in" / "cap"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "conn-0001.c2s.bin").write_bytes(data)
    lines: list[str] = []
    result = decode.decode_local(
        "rabbitmq-stream", tmp / "in", tmp / "out", overwrite=True, target=target, echo=lines.append
    )
    return result, lines


def spaced(lines: list[str]) -> list[str]:
    """The lines with their alignment collapsed to single spaces."""
    return [" ".join(line.split()) for line in lines]


def test_the_gap_reconciles_at_every_range_cut_around_it(tmp_path: Path) -> None:
    root = write_repro(tmp_path / "in", before=40, after=40)  # the gap is bytes 440..448
    stream = scan(root).streams[0]
    framing = decode._codec(V40).framing
    cut_at: set[int] = set()
    for target in [1, 7, 8, 11, 12, 22, *range(425, 461)]:
        ranges = split(stream, framing, target)
        boundaries = {r.start for r in ranges[1:]}
        assert not any(440 < b < 448 for b in boundaries)  # never inside the gap
        cut_at |= boundaries & {429, 440, 448, 459}
        lines: list[str] = []
        result = decode.decode_local(
            "rabbitmq-stream", root, tmp_path / "out", True, target, lines.append
        )
        assert result.reconciled, lines
        assert (result.frames, result.rejected, result.unframed, result.found) == (80, 0, 1, 80)
        got = rows(tmp_path / "out" / "rejects")
        assert [(r["offset"], r["length"], r["kind"], r["bytes"]) for r in got] == [
            (440, 8, "unframed", BAD_HEADER)
        ]
        offsets = [r["offset"] for r in rows(tmp_path / "out" / "frames")]
        assert offsets == list(range(0, 440, 11)) + list(range(448, 448 + 440, 11))
    # cut at the frame before the gap, the gap's start, its end, the frame after it
    assert cut_at == {429, 440, 448, 459}


def test_garbage_with_an_unknown_key_is_one_unframed_reject(tmp_path: Path) -> None:
    garbage = struct.pack(">IHH", 20, 0x7777, 1) + random.Random(7).randbytes(50)
    result, lines = decode_one(tmp_path, b"".join(credits(5)) + garbage + b"".join(credits(6)))
    assert result.reconciled and (result.frames, result.rejects) == (11, 1)
    (reject,) = rows(tmp_path / "out" / "rejects")
    assert (reject["offset"], reject["length"], reject["kind"], reject["size"]) == (
        55,
        58,
        "unframed",
        24,
    )
    assert reject["bytes"] == garbage
    assert reject["error"] == (
        "no layout for key 0x7777 version 1; 58 bytes skipped, resynchronised at offset 113"
    )
    assert "cap/conn-0001.c2s.bin 121 + 0 + 58 = 179 bytes: ok" in spaced(lines)


def test_a_frame_of_an_unknown_key_is_exactly_one_reject(tmp_path: Path) -> None:
    unknown = struct.pack(">IHH", 10, 0x0042, 1) + b"abcdef"  # well sized, a key nobody knows
    result, _ = decode_one(tmp_path, b"".join(credits(5)) + unknown + b"".join(credits(5)))
    assert result.reconciled and (result.frames, result.rejects) == (10, 1)
    (reject,) = rows(tmp_path / "out" / "rejects")
    assert {k: reject[k] for k in ("offset", "size", "length", "kind", "bytes", "error")} == {
        "offset": 55,
        "size": 14,
        "length": 14,
        "kind": "unframed",
        "bytes": unknown,
        "error": "no layout for key 0x0042 version 1; 14 bytes skipped, resynchronised at offset 69",
    }
    assert (reject["field"], reject["error_offset"]) == ("frame.key", 4)


def test_a_size_prefix_that_lands_mid_frame_costs_only_its_own_frame(tmp_path: Path) -> None:
    frames = credits(12)
    bad = bytearray(frames[5])
    bad[3] = 9  # size 7 -> 9: the walk lands 2 bytes into the next frame, which does not frame
    result, _ = decode_one(tmp_path, b"".join(frames[:5]) + bytes(bad) + b"".join(frames[6:]))
    assert result.reconciled and (result.frames, result.rejects) == (11, 1)
    (reject,) = rows(tmp_path / "out" / "rejects")
    # the frame before the bad header did not decode, so the scan started inside it
    assert (reject["offset"], reject["length"], reject["kind"], reject["bytes"]) == (
        55,
        11,
        "unframed",
        bytes(bad),
    )
    assert reject["error"].startswith("size prefix 9 leads to offset 68, where no frame starts")


def test_a_file_that_ends_mid_frame(tmp_path: Path) -> None:
    cut = PublishV1(1, [PublishV1PublishedMessage(7, b"x" * 40)]).encode()
    result, lines = decode_one(tmp_path, b"".join(credits(10)) + cut[:30])
    assert result.reconciled and (result.frames, result.rejects) == (10, 1)
    (reject,) = rows(tmp_path / "out" / "rejects")
    assert (reject["offset"], reject["size"], reject["length"], reject["kind"]) == (
        110,
        len(cut),
        30,
        "unframed",
    )
    assert reject["error"] == f"cut mid-frame: size says {len(cut) - 4}, 26 bytes follow"
    assert "cap/conn-0001.c2s.bin 110 + 0 + 30 = 140 bytes: ok" in spaced(lines)


def test_a_file_that_is_all_garbage_keeps_a_bounded_prefix(tmp_path: Path) -> None:
    garbage = random.Random(3).randbytes(3 * 1024 * 1024)
    result, lines = decode_one(tmp_path, garbage)
    assert result.reconciled and (result.frames, result.rejects) == (0, 1)
    (reject,) = rows(tmp_path / "out" / "rejects")
    assert (reject["offset"], reject["length"], reject["kind"]) == (0, len(garbage), "unframed")
    assert reject["bytes"] == garbage[:UNFRAMED_KEEP]
    assert reject["error"].endswith(
        f"nothing frames and decodes in the {len(garbage)} bytes to the end of the file "
        f"(the first {UNFRAMED_KEEP} are kept)"
    )
    assert "cap/conn-0001.c2s.bin 0 + 0 + 3,145,728 = 3,145,728 bytes: ok" in spaced(lines)


def test_a_capture_that_starts_mid_stream(tmp_path: Path) -> None:
    tail = PublishV1(1, [PublishV1PublishedMessage(7, b"hello")]).encode()[-9:]
    result, _ = decode_one(tmp_path, tail + b"".join(credits(10)))
    assert result.reconciled and (result.frames, result.rejects) == (10, 1)
    (reject,) = rows(tmp_path / "out" / "rejects")
    assert (reject["offset"], reject["length"], reject["kind"], reject["bytes"]) == (
        0,
        9,
        "unframed",
        tail,
    )
    assert reject["error"].endswith("; 9 bytes skipped, resynchronised at offset 9")
    assert [r["offset"] for r in rows(tmp_path / "out" / "frames")] == list(range(9, 119, 11))


@pytest.mark.parametrize(
    "bad, message",
    [
        ("{not json", "not a JSON line"),
        (
            '{"event": "read", "direction": "c2s", "length": 4}',
            "a read event needs direction (c2s or s2c), offset and length",
        ),
    ],
)
def test_a_corrupted_index_line_leaves_only_its_connection_untimed(
    bad: str, message: str, tmp_path: Path
) -> None:
    w = _Writer(tmp_path / "in")
    for connection in ("conn-0001", "conn-0002"):
        reads = w.stream("cap", connection, "c2s", session_c2s(), chunk=64)
        lines = [json.dumps(e) for e in reads]
        if connection == "conn-0001":
            lines.insert(2, bad)  # the third line, mid-file
        (tmp_path / "in" / "cap" / f"{connection}.index.jsonl").write_text("\n".join(lines) + "\n")
    out: list[str] = []
    result = decode.decode_local(
        "rabbitmq-stream", tmp_path / "in", tmp_path / "out", echo=out.append
    )
    index = tmp_path / "in" / "cap" / "conn-0001.index.jsonl"
    warnings = [line for line in out if line.startswith("warning:")]
    assert warnings == [
        f"warning: {index}:3: {message}; the index is ignored: cap/conn-0001 gets no timestamps"
    ]
    assert result.reconciled and result.frames == 2 * len(session_c2s())
    got = rows(tmp_path / "out" / "frames")
    stamps = {(r["connection"], r["timestamp"] is None) for r in got}
    assert stamps == {("conn-0001", True), ("conn-0002", False)}


def test_many_files_print_their_totals_and_every_file_that_fails() -> None:
    files = {}
    for i in range(25):
        t = FileTally("cap", f"conn-{i:04d}", "c2s", size=1000, first=0, found=10)
        t.frames, t.frame_bytes, t.spans = 10, 1000, [(0, 1000)]
        files[t.capture, t.connection, t.direction] = t
    broken = files["cap", "conn-0007", "c2s"]
    broken.frames, broken.frame_bytes, broken.spans = 9, 900, [(0, 500), (600, 1000)]
    result = decode.Result.of(Tally(files), found=250)
    assert not result.reconciled
    lines = spaced(result.lines(Path("out")))
    assert lines[2:6] == [
        "bytes in all files, then in each that does not reconcile: "
        "frames + rejected frames + unframed = size",
        "all 25 files 24,900 + 0 + 0 = 24,900 bytes, not 25,000: "
        "FAILED: the sum is not the files' size",
        "cap/conn-0007.c2s.bin 900 + 0 + 0 = 900 bytes, not 1,000: "
        "FAILED: bytes 500..600 are in no row",
        "reconciliation: 249 frames + 0 rejected frames != 250 frames found; "
        "24 of 25 files reconcile byte for byte",
    ]
    assert lines[-1] == "decode: FAILED: 1 file does not reconcile"


CLIENT_MESSAGES = st.one_of([s for _, s, sender in conformance40.STRATEGIES if sender == "client"])


@st.composite
def damage(draw: st.DrawFn) -> tuple[str, int, bytes]:
    kind = draw(st.sampled_from(["replace", "insert", "delete"]))
    return kind, draw(st.integers(0, 2**16)), draw(st.binary(min_size=1, max_size=12))


def damaged(raws: list[bytes], damages: list[tuple[str, int, bytes]]) -> tuple[bytes, list[int]]:
    """The frames back to back with the damage applied in order, and each frame's offset in the
    result, -1 when any of its bytes was overwritten or deleted, or bytes were inserted in it."""
    # every byte with its offset in the undamaged file, None where damage wrote it
    cells: list[tuple[int, int | None]] = list(
        zip(b"".join(raws), range(sum(map(len, raws))), strict=True)
    )
    for kind, position, payload in damages:
        at = position % (len(cells) + (kind == "insert")) if cells else 0
        if kind == "insert":
            cells[at:at] = [(b, None) for b in payload]
        elif kind == "replace":
            cells[at : at + len(payload)] = [(b, None) for b in payload]
        else:
            del cells[at : at + len(payload)]
    where = {origin: i for i, (_, origin) in enumerate(cells) if origin is not None}
    starts: list[int] = []
    origin = 0
    for raw in raws:
        at = where.get(origin, -1)
        whole = at >= 0 and all(where.get(origin + k) == at + k for k in range(len(raw)))
        starts.append(at if whole else -1)
        origin += len(raw)
    return bytes(b for b, _ in cells), starts


def spared(raws: list[bytes], data: bytes, starts: list[int]) -> list[int]:
    """The frames the walk must find: every frame from the start of the file up to the first
    damage, and after damage every frame of an undamaged stretch but its first, when the stretch
    holds RUN frames after its first (or runs to the end of the file) and no header elsewhere
    than a frame start claims bytes over the frame's start (a size that frames, or a well-sized
    frame of an unknown key that ends on a frame start: the walk may take it for a frame)."""
    framing = decode._codec(V40).framing
    real = {s for s in starts if s >= 0}
    claims = []
    for x in range(len(data) - framing.header_size + 1):
        size, kv = framing.fast.unpack_from(data, x)
        end = x + framing.width + size
        if x in real or not framing.min_size <= size <= framing.max_size or end > len(data):
            continue
        if kv in framing.packed_keys or end in real or end == len(data):
            claims.append((x, end))
    out: list[int] = []
    i = 0
    while i < len(raws):
        if starts[i] < 0:
            i += 1
            continue
        first = i  # a stretch of frames back to back, none damaged
        while (
            i + 1 < len(raws) and starts[i + 1] >= 0 and starts[i + 1] == starts[i] + len(raws[i])
        ):
            i += 1
        last = i
        i += 1
        if first == 0 and starts[0] == 0:
            out += range(first, last + 1)  # the walk is in step from the start
        elif last - first >= RUN or (
            last == len(raws) - 1 and starts[last] + len(raws[last]) == len(data)
        ):
            out += [
                k
                for k in range(first + 1, last + 1)
                if not any(x < starts[k] < end for x, end in claims)
            ]
    return out


@given(
    st.lists(CLIENT_MESSAGES, min_size=1, max_size=40),
    st.lists(damage(), min_size=1, max_size=3),
)
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
def test_damaged_captures_reconcile_and_keep_every_frame_clear_of_the_damage(
    msgs: list[Any], damages: list[tuple[str, int, bytes]]
) -> None:
    raws = [m.encode() for m in msgs]
    data, starts = damaged(raws, damages)
    expected = spared(raws, data, starts)
    with tempfile.TemporaryDirectory() as tmp:
        result, lines = decode_one(Path(tmp), data)
        assert result.reconciled, "\n".join(lines)
        got = {
            r["offset"]: (r["size"], r["message"])
            for r in pq.read_table(Path(tmp) / "out" / "frames").to_pylist()
        }
    for i in expected:
        assert got.get(starts[i]) == (len(raws[i]), type(msgs[i]).__name__), (i, starts[i])


# ---- the CLI's bad input: one line, exit 2, before any Spark starts ---------------------------


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda tmp: tmp / "nowhere", "nowhere: no such folder"),
        (
            lambda tmp: _file(tmp / "capture.bin"),
            "capture.bin: not a pcap or pcapng file (starts with 00 00 00 04 00 17 00 01); "
            "give pcap files, or the folder a capture was recorded into",
        ),
        (lambda tmp: _folder(tmp / "photos", "a.jpg"), "photos: no capture in it"),
    ],
)
def test_cli_bad_input_is_one_line(
    make: Any, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = make(tmp_path)
    assert main(["decode", "rabbitmq-stream", str(target), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("specgen: ") and message in err


def test_cli_refuses_an_existing_out_unknown_protocols_and_bad_masters(
    captures: Captures, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _folder(tmp_path / "out", "frames/part-0.parquet")
    assert main(["decode", "rabbitmq-stream", str(captures.root), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not empty; specgen decode writes into a new or empty" in err
    assert main(["decode", "no-such-protocol", str(captures.root), "--out", str(out)]) == 2
    assert "unknown spec 'no-such-protocol'" in capsys.readouterr().err
    fresh = str(tmp_path / "fresh")
    assert (
        main(["decode", "rabbitmq-stream", str(captures.root), "--out", fresh, "--master", "x"])
        == 2
    )
    assert "--master x: not a Spark master URL" in capsys.readouterr().err


def _file(path: Path) -> Path:
    path.write_bytes(b"\x00\x00\x00\x04\x00\x17\x00\x01")
    return path


def _folder(path: Path, name: str) -> Path:
    (path / name).parent.mkdir(parents=True, exist_ok=True)
    (path / name).write_bytes(b"x")
    return path


# ---- Spark ----------------------------------------------------------------------------------


def test_spark_writes_what_the_single_process_writes(
    spark_out: tuple[Path, decode.Result, list[str]],
    local_out: tuple[Path, decode.Result, list[str]],
) -> None:
    out, result, lines = spark_out
    local, local_result, local_lines = local_out
    assert (result.frames, result.rejects, result.found) == (
        local_result.frames,
        local_result.rejects,
        local_result.found,
    )
    assert rows(out / "frames") == rows(local / "frames")
    assert rows(out / "rejects") == rows(local / "rejects")
    assert [ln for ln in lines if ln.startswith("reconciliation:")] == [
        ln for ln in local_lines if ln.startswith("reconciliation:")
    ]


def test_spark_schema_is_the_generated_one(
    spark: Any, spark_out: tuple[Path, decode.Result, list[str]]
) -> None:
    out, _, _ = spark_out
    written = spark.read.parquet(str(out / "frames")).schema
    # the codec's columns, then the pipeline's `violations`
    assert written.fields[:-1] == schema40.spark_schema().fields
    assert written.fields[-1].name == VIOLATIONS.name
    assert (
        pq.read_table(out / "frames").schema.field("timestamp").type
        == schema40.FRAMES_SCHEMA.field("timestamp").type
    )


def test_cli_decode_overwrites_only_when_asked(
    spark: Any,
    captures: Captures,
    spark_out: tuple[Path, decode.Result, list[str]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    out, result, _ = spark_out
    argv = [
        "decode",
        "rabbitmq-stream",
        str(captures.root),
        "--out",
        str(out),
        "--range-size",
        "4096",
    ]
    assert main(argv) == 2
    assert "--overwrite replaces what it wrote there" in capsys.readouterr().err
    (out / "report.html").write_text("the page of the tables before")
    assert main([*argv, "--overwrite"]) == 0
    assert not (out / "report.html").exists()  # no page of old tables beside new ones
    captured = capsys.readouterr()
    stdout = captured.out
    # what it is doing, on stderr, each a whole line of its own
    progress = captured.err.splitlines()
    assert re.fullmatch(r"decode: decoding \d+ ranges \([\d,]+ bytes\) in Spark tasks", progress[0])
    assert re.fullmatch(
        rf"decode: \d+ ranges decoded: {result.frames} frames, {result.rejects} rejects "
        r"\(\d+\.\d s\); "
        "reconciling",
        progress[-1],
    )
    assert all(re.fullmatch(r"decode: \d+ of \d+ ranges done", ln) for ln in progress[1:-1])
    assert (
        f"reconciliation: {result.frames} frames + 1 rejected frame = {result.found} frames "
        "found; the rows hold every byte of all 7 files exactly once" in stdout.splitlines()
    )
    assert len(rows(out / "frames")) == result.frames


def test_the_issue_repro_keeps_every_good_frame(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lost = write_repro(tmp_path / "lost")
    out = tmp_path / "lost-out"
    assert main(["decode", "rabbitmq-stream", str(lost), "--out", str(out)]) == 0
    stdout = capsys.readouterr().out.splitlines()
    frames = pq.read_table(out / "frames", columns=["offset", "credit"]).sort_by("offset")
    assert frames.num_rows == 100_100
    assert frames["offset"].to_pylist() == list(range(0, 1100, 11)) + list(
        range(1108, 1108 + 100_000 * 11, 11)
    )
    assert [c["credit"] for c in frames["credit"].to_pylist()] == [
        i % 65536 for i in range(100_100)
    ]
    (reject,) = rows(out / "rejects")
    assert {k: reject[k] for k in ("offset", "size", "length", "kind", "bytes", "error")} == {
        "offset": 1100,
        "size": (1 << 31) + 4,
        "length": 8,
        "kind": "unframed",
        "bytes": BAD_HEADER,
        "error": "size prefix 2147483648 is outside 4..67108864; 8 bytes skipped, "
        "resynchronised at offset 1108",
    }
    assert "cap/conn-0001.c2s.bin 1,101,100 + 0 + 8 = 1,101,108 bytes: ok" in spaced(stdout)
    assert (
        "reconciliation: 100,100 frames + 0 rejected frames = 100,100 frames found; "
        "the rows hold every byte of the 1 file exactly once"
    ) in stdout


def test_a_reconciliation_that_fails_exits_1(
    spark: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = write_repro(tmp_path / "in", before=40, after=40)
    real = decode.check

    def lose_the_rejects(files: Any, frames: Path, rejects: Path) -> Any:
        for part in rejects.glob("*.parquet"):  # a part the job wrote is gone from --out
            part.unlink()
        return real(files, frames, rejects)

    monkeypatch.setattr(decode, "check", lose_the_rejects)
    argv = ["decode", "rabbitmq-stream", str(root), "--out", str(tmp_path / "out")]
    assert main([*argv, "--range-size", "100"]) == 1
    stdout = capsys.readouterr().out.splitlines()
    assert (
        "cap/conn-0001.c2s.bin 880 + 0 + 0 = 880 bytes, not 888: "
        "FAILED: bytes 440..448 are in no row"
    ) in spaced(stdout)
    assert stdout[-2] == (
        "reconciliation: 80 frames + 0 rejected frames = 80 frames found; "
        "0 of 1 file reconcile byte for byte"
    )
    assert stdout[-1] == "decode: FAILED: 1 file does not reconcile"


def test_a_deliver_whose_crc_does_not_match_is_a_reject_unless_trusted(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A flipped data byte in a Deliver chunk: by default one rejected frame naming ChunkCrc,
    the frames around it kept; with --no-verify-checksums it decodes as it is."""
    good = DeliverV1(1, _deliver()).encode()
    bad = bytearray(good)
    bad[-6] ^= 0x20  # inside the sub-entry batch's data, before the last (empty) entry
    folder = tmp_path / "in" / "cap"
    folder.mkdir(parents=True)
    (folder / "conn-0001.s2c.bin").write_bytes(good + bytes(bad) + good)
    out = tmp_path / "out"
    result = decode.decode_local("rabbitmq-stream", tmp_path / "in", out, echo=lambda _: None)
    assert result.reconciled
    (reject,) = rows(out / "rejects")
    assert (reject["offset"], reject["kind"], reject["field"]) == (
        len(good),
        "frame",
        "DeliverV1.osiris_chunk.chunk_crc",
    )
    assert reject["bytes"] == bytes(bad)
    assert "CRC-32" in reject["error"]
    assert pq.read_table(out / "frames").num_rows == 2
    # the caller who trusts its transport, through the CLI on Spark
    args = ["decode", "rabbitmq-stream", str(tmp_path / "in"), "--out", str(out), "--overwrite"]
    assert main([*args, "--no-verify-checksums"]) == 0
    capsys.readouterr()
    assert pq.read_table(out / "frames").num_rows == 3
    assert rows(out / "rejects") == []


def test_a_range_is_read_with_the_cyclic_collector_paused_and_given_back(
    captures: Captures,
) -> None:
    """`decode_range` pauses the cyclic garbage collector while it reads (decoded messages hold
    no cycles: `collector`) and turns it back on when it ends, read to the end or closed early;
    a collector the caller had turned off stays off."""
    import gc

    from specgen.pipeline.columns import Codec, decode_range

    out = captures.root.parent / "gc-out"
    job = decode.prepare("rabbitmq-stream", captures.root, out, True, RANGE, True)
    codec: Codec = job.codec
    r = job.ranges[0]
    assert gc.isenabled()
    seen = []
    for _ in decode_range(r, codec):
        seen.append(gc.isenabled())
    assert seen and not any(seen) and gc.isenabled()
    early = decode_range(r, codec)
    next(early)
    assert not gc.isenabled()
    early.close()
    assert gc.isenabled()
    gc.disable()
    try:
        for _ in decode_range(r, codec):
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_ranges_are_binned_largest_first_each_once_and_about_evenly() -> None:
    """`decode.bins` gives each range to one Spark task: every index once, no more bins than
    asked (nor empty ones), the bins by load and each bin's ranges largest first, and no bin
    over the mean by more than its largest range (the greedy bound)."""
    import random

    rng = random.Random(39)
    for _ in range(200):
        sizes = [rng.randint(1, 1 << 25) for _ in range(rng.randint(1, 60))]
        count = rng.randint(1, 10)
        got = decode.bins(sizes, count)
        assert sorted(i for b in got for i in b) == list(range(len(sizes)))
        assert 0 < len(got) <= min(count, len(sizes)) and all(got)
        loads = [sum(sizes[i] for i in b) for b in got]
        assert loads == sorted(loads, reverse=True)
        assert all(
            [sizes[i] for i in b] == sorted((sizes[i] for i in b), reverse=True) for b in got
        )
        assert max(loads) <= sum(sizes) / len(got) + max(sizes)
    assert decode.bins([], 4) == []
    assert decode.bins([5, 9, 1], 1) == [[1, 0, 2]]
