"""`specgen decode`: captures written with the generated encoders, decoded with Spark and without.

The captures hold a whole session in both directions (handshake, publishes, confirms, an error
response, a subscription and a delivery), an index with reads that split frames, a folder of
captures at two depths, an empty file, files that belong to no capture, and every kind of bad
frame: an unknown key, a body that contradicts itself, a frame cut by the end of the file, a
tail too short for a size prefix and a file that is not frames at all.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generated.rabbitmq_stream import early as early_codec
from generated.rabbitmq_stream.v4_0 import (
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
from generated.rabbitmq_stream.v4_0 import spark_schema as schema40
from generated.rabbitmq_stream.v4_0 import test_conformance as conformance40
from specgen.cli import main
from specgen.emitters.plan import snake
from specgen.pipeline import decode
from specgen.pipeline.inputs import DecodeInputError, Stream, load_index, scan
from specgen.pipeline.ranges import split

RANGE = 512  # bytes per range: small, so that every file of some size is split
CONTRACT = [
    "capture",
    "connection",
    "direction",
    "timestamp",
    "offset",
    "size",
    "key",
    "command",
    "message",
    "kind",
    "version",
    "correlation_id",
    "response_code",
]
REJECT_COLUMNS = [
    "capture",
    "connection",
    "direction",
    "offset",
    "size",
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
    raw: bytes
    error: str  # a substring of the error
    field: str
    error_offset: int


@dataclass
class Captures:
    root: Path
    frames: list[Frame]
    rejects: list[Reject]
    frame_offsets: dict[Path, set[int]]  # every frame start (rejects included), per file


def _deliver() -> OsirisChunk:
    entries: list[SimpleEntry | SubBatchEntry] = [
        SimpleEntry(5, b"hello"),
        SubBatchEntry(0, 0, 2, 10, 10, b"0123456789"),
        SimpleEntry(0, b""),
    ]
    return OsirisChunk(
        5, 0, 3, 4, 1_700_000_000_123, 2**64 - 1, 100, 0xDEADBEEF, 9 + 21 + 4, 0, 0, 0, entries
    )


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
            [PublishV2PublishedMessage(10, "eu", b"x"), PublishV2PublishedMessage(11, None, None)],
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

    def stream(
        self, capture: str, connection: str, direction: str, items: list[Any], chunk: int = 0
    ) -> list[dict[str, Any]]:
        """Write one direction's file; items are messages, or (raw bytes, Reject fields).
        Returns the index's read events when `chunk` is given: reads of `chunk` bytes."""
        folder = self.root / capture
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{connection}.{direction}.bin"
        data = bytearray()
        mine: list[Frame] = []
        for item in items:
            at = len(data)
            self.offsets.setdefault(path, set()).add(at)
            if isinstance(item, tuple):
                raw, size, error, field, error_offset = item
                self.rejects.append(
                    Reject(
                        capture, connection, direction, at, size, raw, error, field, error_offset
                    )
                )
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
    # day1/conn-0002: an empty client file; the server's has a bad key, a bad body, a cut tail
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
            (bytes(bad_key), len(bad_key), "no layout for key 0x7777", "frame.key", 4),
            (bytes(bad_body), len(bad_body), "1000 items", "PublishConfirm.publishing_ids", 13),
            CreditResponse(6, 3),
            (tune[:-3], len(tune), "cut mid-frame: size says 12, 9 bytes follow", "frame", 13),
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
            (b"\x00\x00", None, "too few for the 4-byte size prefix", "frame.size", 2),
        ],
    )
    # more/day2/conn-0002: a file named like a capture that holds no frames at all
    junk = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"
    w.stream(
        "more/day2",
        "conn-0002",
        "c2s",
        [(junk, 0x47455420 + 4, "cannot be framed", "frame.size", 0)],
    )
    (root / "README.txt").write_text("captures for the decode tests\n")
    return Captures(root, w.frames, w.rejects, w.offsets)


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
    result = decode.run("rabbitmq-stream", captures.root, out, target=RANGE, echo=lines.append)
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


# ---- no Spark: the walk, the index, the single-process decoder -------------------------------


def test_ranges_are_frame_aligned_and_cover_every_file(captures: Captures) -> None:
    framing = decode._codec("generated.rabbitmq_stream.v4_0").framing
    split_any = False
    for path, starts in captures.frame_offsets.items():
        stream = Stream("c", "conn", "c2s", path, path.stat().st_size)
        ranges = split(stream, framing, RANGE)
        assert ranges[0][0] == 0 and ranges[-1][1] == stream.size
        for (_, end, _), (start, _, _) in zip(ranges, ranges[1:], strict=False):
            assert end == start  # contiguous, nothing skipped
        assert {start for start, _, _ in ranges} <= starts  # every range starts on a frame
        assert sum(frames for _, _, frames in ranges) == len(starts)
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
    assert table.schema == schema40.FRAMES_SCHEMA
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
            assert plain(row[own]) == dataclasses.asdict(msg)
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
        assert row["size"] == reject.size
        assert row["bytes"] == reject.raw
        assert reject.error in row["error"]
        assert (row["field"], row["error_offset"]) == (reject.field, reject.error_offset)
    found = len(captures.frames) + len(captures.rejects)
    assert result.found == found and result.reconciled
    assert (
        f"reconciliation: {len(captures.frames)} frames + 5 rejects = {found} frames found in the input"
        in lines
    )
    assert lines[0].startswith(
        "decode: 2 captures, 4 connections, 7 byte files (1 empty), 1 index:"
    )
    assert lines[1] == "ignored 2 files that are not part of a capture: README.txt, day1/notes.txt"


def test_a_lost_frame_fails_the_reconciliation(
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
    found = len(captures.frames) + len(captures.rejects)
    assert (
        f"reconciliation: {len(captures.frames)} frames + 0 rejects != {found} frames found in the input"
        in lines
    )


def test_every_protocol_with_a_frame_reader_decodes(tmp_path: Path) -> None:
    c = early_codec
    msgs = [
        c.PublishConfirm([1, 2]),
        c.Deliver(1, c.OsirisChunk(5, 1, 1, 0, 7, 0, 9, [c.SimpleEntry(5, b"hello")])),
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
    assert plain(got[1]["deliver"]) == dataclasses.asdict(msgs[1])


@pytest.mark.parametrize("version", ["v4_0", "early"])
def test_message_columns_hold_every_conformance_sample(version: str) -> None:
    conformance = importlib.import_module(f"generated.rabbitmq_stream.{version}.test_conformance")
    msgs = [msg for _, msg, _ in conformance.SAMPLES]
    _check_columns(
        importlib.import_module(f"generated.rabbitmq_stream.{version}.spark_schema"), msgs
    )


@given(st.lists(st.one_of([s for _, s, _ in conformance40.STRATEGIES]), max_size=12))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_message_columns_hold_any_message(msgs: list[Any]) -> None:
    _check_columns(schema40, msgs)


def _check_columns(schema: Any, msgs: list[Any]) -> None:
    columns = schema.message_columns(msgs)
    assert list(columns) == schema.FRAMES_SCHEMA.names[7:10] + schema.FRAMES_SCHEMA.names[11:]
    for name, array in columns.items():
        assert len(array) == len(msgs)
        assert array.type == schema.FRAMES_SCHEMA.field(name).type, name
    for i, msg in enumerate(msgs):
        own = schema.MESSAGE_COLUMNS.get(type(msg).__name__)
        for column in schema.MESSAGE_COLUMNS.values():
            value = columns[column][i].as_py()
            assert value is None if column != own else plain(value) == dataclasses.asdict(msg)
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
        "import sys, generated.rabbitmq_stream.v4_0 as c; "
        "c.decode(c.Heartbeat().encode()); assert 'pyarrow' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ---- the CLI's bad input: one line, exit 2, before any Spark starts ---------------------------


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda tmp: tmp / "nowhere", "nowhere: no such folder"),
        (lambda tmp: _file(tmp / "capture.bin"), "capture.bin: not a folder"),
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
    assert err.count("\n") == 1 and "already exists; pass --overwrite" in err
    assert main(["decode", "amqp-0-9-1", str(captures.root), "--out", str(out)]) == 2
    assert "unknown spec 'amqp-0-9-1'" in capsys.readouterr().err
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
    assert written == schema40.spark_schema()
    assert spark.createDataFrame([], schema40.SPARK_DDL).schema == schema40.spark_schema()
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
    assert "already exists" in capsys.readouterr().err
    assert main([*argv, "--overwrite"]) == 0
    stdout = capsys.readouterr().out
    assert (
        f"reconciliation: {result.frames} frames + {result.rejects} rejects = {result.found} "
        "frames found in the input" in stdout.splitlines()
    )
    assert len(rows(out / "frames")) == result.frames
