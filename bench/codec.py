"""Speed of the generated RabbitMQ Streams codec, decode and encode, against peers in the same run.

    .venv/bin/python bench/codec.py [--quick]

For each frame below and each direction, frames per second of:
  * specgen   the generated `decode` (Deliver: its chunk CRC verified, the default) / `encode`
  * no-crc    the generated `decode(..., verify_checksums=False)` (Deliver only)
  * floor     what a careful programmer would write for exactly that frame with precompiled
              `struct.Struct`s, making the same checks as the generated codec (the header's
              size, key and version, then every length and count before it is used, the CRC)
              AND building the same result objects (the generated classes called with
              positional arguments), because a hand-written codec returns objects too; on
              encode it writes the same bytes from the same message object. This is issue 28's
              floor: the goal is specgen >= 0.8x it.
  * tuples    (decode only, for information) the floor giving tuples instead of objects
  * rstream   rstream's `decode_frame` / `encode_frame` (a peer; it verifies the CRC too, but
              keeps a chunk's data as one blob where specgen splits it into entries): the goal
              is specgen >= 1.5x rstream
The codecs of one cell are timed in alternating rounds and each figure is its best round, so
load on the machine weighs on all of them alike; only ratios measured in the same run are
compared. Results go to bench/results/codec.json.
"""

from __future__ import annotations

import struct
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rstream.encoding import decode_frame, encode_frame
from timing import mark, rates, write_results  # bench/timing.py, beside this script

import specgen.locations  # noqa: F401  (maps specgen_codecs to this tree's generated/)
from specgen_codecs.rabbitmq_stream import v4_0 as rs

ROOT = Path(__file__).resolve().parents[1]

# ---- hand-written floors: what a careful programmer would write for exactly this frame

_HEAD = struct.Struct(">IHH")
_CREDIT = struct.Struct(">BH")
_PUB = struct.Struct(">Bi")
_QI = struct.Struct(">Qi")
_CONFIRM = struct.Struct(">Bi")
_CHUNK = struct.Struct(">BbbHIqQQIIIB3s")  # subscription, magic .. reserved
_ENTRY = struct.Struct(">I")


class Bad(ValueError):
    pass


def _header(b: bytes | memoryview, key: int) -> None:
    """The checks every floor makes first, as the generated decoder does: the size field counts
    the bytes after it, and the key and version are this frame's."""
    if len(b) < 8:
        raise Bad("header")
    size, k, version = _HEAD.unpack_from(b, 0)
    if size != len(b) - 4 or k != key or version != 1:
        raise Bad("header")


def floor_credit(b: bytes) -> tuple[Any, ...]:
    _header(b, 0x0009)
    if len(b) != 11:
        raise Bad("size")
    return _CREDIT.unpack_from(b, 8)


def floor_publish(b: bytes) -> tuple[int, list[tuple[int, bytes]]]:
    view = memoryview(b)
    _header(view, 0x0002)
    end = len(b)
    pid, n = _PUB.unpack_from(view, 8)
    at = 13
    if n < 0 or n * 12 > end - at:
        raise Bad("count")
    out = []
    for _ in range(n):
        if end - at < 12:
            raise Bad("truncated")
        publishing_id, length = _QI.unpack_from(view, at)
        at += 12
        if length < 0 or length > end - at:
            raise Bad("length")
        out.append((publishing_id, bytes(view[at : at + length])))
        at += length
    return pid, out


def floor_confirm(b: bytes) -> tuple[int, list[int]]:
    _header(b, 0x0003)
    pid, n = _CONFIRM.unpack_from(b, 8)
    if n < 0 or n * 8 > len(b) - 13:
        raise Bad("count")
    return pid, list(struct.unpack_from(f">{n}Q", b, 13))


def _floor_deliver(b: bytes, crc: bool) -> tuple[Any, ...]:
    view = memoryview(b)
    _header(view, 0x0008)
    end = len(b)
    fields = _CHUNK.unpack_from(view, 8)
    at = 8 + _CHUNK.size
    entries, data_length, chunk_crc = fields[3], fields[9], fields[8]
    if data_length > end - at:
        raise Bad("data length")
    if crc and zlib.crc32(view[at : at + data_length]) != chunk_crc:
        raise Bad("crc")
    out = []
    for _ in range(entries):
        (head,) = _ENTRY.unpack_from(view, at)
        at += 4
        if head >> 31:
            raise Bad("sub-batch")
        if head > end - at:
            raise Bad("length")
        out.append(bytes(view[at : at + head]))
        at += head
    return fields, out


def floor_deliver(b: bytes) -> tuple[Any, ...]:
    return _floor_deliver(b, True)


def floor_deliver_no_crc(b: bytes) -> tuple[Any, ...]:
    return _floor_deliver(b, False)


# ---- floors that build the generated objects (the goal's floor), and their encoders


def obj_credit(b: bytes) -> rs.Credit:
    return rs.Credit(*floor_credit(b))


def enc_credit(m: rs.Credit) -> bytes:
    return _CREDIT_FRAME.pack(7, 0x0009, 1, m.subscription_id, m.credit)


_CREDIT_FRAME = struct.Struct(">IHHBH")


def obj_publish(b: bytes) -> rs.PublishV1:
    pid, items = floor_publish(b)
    return rs.PublishV1(pid, [rs.PublishV1PublishedMessage(i, m) for i, m in items])


def enc_publish(m: rs.PublishV1) -> bytes:
    parts = [b"", _PUB.pack(m.publisher_id, len(m.published_messages))]
    for item in m.published_messages:
        data = item.message
        if not isinstance(data, bytes):
            raise Bad("sub-entry")
        parts.append(_QI.pack(item.publishing_id, len(data)))
        parts.append(data)
    parts[0] = _HEAD.pack(sum(map(len, parts)) + 4, 0x0002, 1)
    return b"".join(parts)


def obj_confirm(b: bytes) -> rs.PublishConfirm:
    pid, ids = floor_confirm(b)
    return rs.PublishConfirm(pid, ids)


def enc_confirm(m: rs.PublishConfirm) -> bytes:
    n = len(m.publishing_ids)
    return (
        _HEAD.pack(9 + 8 * n, 0x0003, 1)
        + _CONFIRM.pack(m.publisher_id, n)
        + struct.pack(f">{n}Q", *m.publishing_ids)
    )


def _obj_deliver(b: bytes, crc: bool) -> rs.DeliverV1:
    view = memoryview(b)
    _header(view, 0x0008)
    end = len(b)
    sub, magic, ctype, n, records, ts, epoch, first, chunk_crc, data_length, trailer, bloom, res = (
        _CHUNK.unpack_from(view, 8)
    )
    at = 8 + _CHUNK.size
    if data_length > end - at:
        raise Bad("data length")
    if crc and zlib.crc32(view[at : at + data_length]) != chunk_crc:
        raise Bad("crc")
    out: list[rs.SimpleEntry | rs.SubBatchEntry] = []
    for _ in range(n):
        (head,) = _ENTRY.unpack_from(view, at)
        at += 4
        if head >> 31:
            raise Bad("sub-batch")
        if head > end - at:
            raise Bad("length")
        out.append(rs.SimpleEntry(head, bytes(view[at : at + head])))
        at += head
    if at != end:
        raise Bad("size")
    chunk = rs.OsirisChunk(
        magic,
        ctype,
        n,
        records,
        ts,
        epoch,
        first,
        chunk_crc,
        data_length,
        trailer,
        bloom,
        int.from_bytes(res, "big"),
        out,
    )
    return rs.DeliverV1(sub, chunk)


def obj_deliver(b: bytes) -> rs.DeliverV1:
    return _obj_deliver(b, True)


def enc_deliver(m: rs.DeliverV1) -> bytes:
    c = m.osiris_chunk
    parts = [b""]
    for e in c.messages:
        if not isinstance(e, rs.SimpleEntry) or len(e.data) != e.size:
            raise Bad("entry")
        parts.append(_ENTRY.pack(e.size))
        parts.append(e.data)
    head = _CHUNK.pack(
        m.subscription_id,
        c.magic_version,
        c.chunk_type,
        c.num_entries,
        c.num_records,
        c.timestamp,
        c.epoch,
        c.chunk_first_offset,
        c.chunk_crc,
        c.data_length,
        c.trailer_length,
        c.bloom_size,
        c.reserved.to_bytes(3, "big"),
    )
    parts[0] = _HEAD.pack(4 + len(head) + sum(map(len, parts)), 0x0008, 1) + head
    return b"".join(parts)


_H = struct.Struct(">h")
_I32 = struct.Struct(">I")


def _str16(b: Any, at: int, end: int) -> tuple[str | None, int]:
    if end - at < 2:
        raise Bad("truncated")
    (n,) = _H.unpack_from(b, at)
    at += 2
    if n == -1:
        return None, at
    if n < 0 or n > end - at:
        raise Bad("length")
    return str(b[at : at + n], "utf-8"), at + n


def _enc_str16(s: str | None) -> bytes:
    if s is None:
        return b"\xff\xff"
    raw = s.encode("utf-8")
    if len(raw) > 32767:
        raise Bad("length")
    return _H.pack(len(raw)) + raw


def _tuple_query_offset(b: bytes) -> tuple[Any, ...]:
    _header(b, 0x000B)
    end = len(b)
    if end < 12:
        raise Bad("truncated")
    (corr,) = _I32.unpack_from(b, 8)
    reference, at = _str16(b, 12, end)
    stream, at = _str16(b, at, end)
    if at != end:
        raise Bad("size")
    return corr, reference, stream


def obj_query_offset(b: bytes) -> rs.QueryOffsetRequest:
    return rs.QueryOffsetRequest(*_tuple_query_offset(b))


def enc_query_offset(m: rs.QueryOffsetRequest) -> bytes:
    body = _I32.pack(m.correlation_id) + _enc_str16(m.reference) + _enc_str16(m.stream)
    return _HEAD.pack(4 + len(body), 0x000B, 1) + body


_DP = struct.Struct(">IB")


def _tuple_declare_publisher(b: bytes) -> tuple[Any, ...]:
    _header(b, 0x0001)
    end = len(b)
    if end < 13:
        raise Bad("truncated")
    corr, pid = _DP.unpack_from(b, 8)
    reference, at = _str16(b, 13, end)
    stream, at = _str16(b, at, end)
    if at != end or reference is None:
        raise Bad("size")
    return corr, pid, reference, stream


def obj_declare_publisher(b: bytes) -> rs.DeclarePublisherRequest:
    return rs.DeclarePublisherRequest(*_tuple_declare_publisher(b))


def enc_declare_publisher(m: rs.DeclarePublisherRequest) -> bytes:
    body = (
        _DP.pack(m.correlation_id, m.publisher_id)
        + _enc_str16(m.publisher_reference)
        + _enc_str16(m.stream)
    )
    return _HEAD.pack(4 + len(body), 0x0001, 1) + body


def _tuple_open(b: bytes) -> tuple[Any, ...]:
    _header(b, 0x0015)
    end = len(b)
    if end < 12:
        raise Bad("truncated")
    (corr,) = _I32.unpack_from(b, 8)
    vhost, at = _str16(b, 12, end)
    if at != end:
        raise Bad("size")
    return corr, vhost


def obj_open(b: bytes) -> rs.OpenRequest:
    return rs.OpenRequest(*_tuple_open(b))


def enc_open(m: rs.OpenRequest) -> bytes:
    body = _I32.pack(m.correlation_id) + _enc_str16(m.virtual_host)
    return _HEAD.pack(4 + len(body), 0x0015, 1) + body


_HI = struct.Struct(">hI")
_HH = struct.Struct(">Hh")
_PORT = struct.Struct(">I")


def _metadata(b: bytes, objects: bool) -> Any:
    _header(b, 0x800F)
    end = len(b)
    if end < 16:
        raise Bad("truncated")
    corr, n = _DPII.unpack_from(b, 8)
    at = 16
    if n < 0 or n * 8 > end - at:
        raise Bad("count")
    brokers = []
    for _ in range(n):
        if end - at < 2:
            raise Bad("truncated")
        (ref,) = _U16.unpack_from(b, at)
        host, at = _str16(b, at + 2, end)
        if end - at < 4:
            raise Bad("truncated")
        (port,) = _PORT.unpack_from(b, at)
        at += 4
        brokers.append(rs.Broker(ref, host, port) if objects else (ref, host, port))
    if end - at < 4:
        raise Bad("truncated")
    (n,) = _I32S.unpack_from(b, at)
    at += 4
    if n < 0 or n * 12 > end - at:
        raise Bad("count")
    streams = []
    for _ in range(n):
        name, at = _str16(b, at, end)
        if end - at < 8:
            raise Bad("truncated")
        code, leader, k = _SM.unpack_from(b, at)
        at += 8
        if k < 0 or k * 2 > end - at:
            raise Bad("count")
        replicas = list(struct.unpack_from(f">{k}H", b, at))
        at += 2 * k
        item = (name, code, leader, replicas)
        streams.append(rs.StreamMetadata(*item) if objects else item)
    if at != end:
        raise Bad("size")
    return rs.MetadataResponse(corr, brokers, streams) if objects else (corr, brokers, streams)


_DPII = struct.Struct(">Ii")
_U16 = struct.Struct(">H")
_I32S = struct.Struct(">i")
_SM = struct.Struct(">HHi")


def obj_metadata(b: bytes) -> rs.MetadataResponse:
    result: rs.MetadataResponse = _metadata(b, True)
    return result


def enc_metadata(m: rs.MetadataResponse) -> bytes:
    parts = [b"", _DPII.pack(m.correlation_id, len(m.broker))]
    for br in m.broker:
        parts += [_U16.pack(br.reference), _enc_str16(br.host), _PORT.pack(br.port)]
    parts.append(_I32S.pack(len(m.stream_metadata)))
    for sm in m.stream_metadata:
        k = len(sm.replicas_references)
        parts += [
            _enc_str16(sm.stream_name),
            _SM.pack(sm.response_code, sm.leader_reference, k),
            struct.pack(f">{k}H", *sm.replicas_references),
        ]
    parts[0] = _HEAD.pack(sum(map(len, parts)) + 4, 0x800F, 1)
    return b"".join(parts)


# ---- the frames


def _deliver() -> bytes:
    entries = [rs.SimpleEntry(len(p), p) for p in (bytes([i]) * (20 + i % 60) for i in range(100))]
    data_length = sum(4 + e.size for e in entries)
    chunk = rs.OsirisChunk(
        0x50, 0, 100, 100, 1_700_000_000_000, 1, 0, 0, data_length, 0, 0, 0, entries
    )
    return rs.encode(rs.DeliverV1(1, chunk), seal_checksums=True)


Cell = tuple[
    str, bytes, str, Callable[[bytes], Any] | None, Callable[[bytes], Any] | None, Any, bool
]


def frames() -> list[Cell]:
    """(name, frame, sender, floor building objects, tuples floor, floor encoder, whether
    rstream's encode_frame writes the frame back) for every measured frame."""
    publish = rs.encode(
        rs.PublishV1(1, [rs.PublishV1PublishedMessage(i, b"m" * (16 + i % 48)) for i in range(100)])
    )
    sub_entry = rs.encode(
        rs.PublishV1(
            1,
            [
                rs.PublishV1PublishedMessage(
                    1, rs.SubBatchEntry.from_records([b"r" * 40] * 100, compression_type=1)
                )
            ],
        )
    )
    metadata = rs.encode(
        rs.MetadataResponse(
            7,
            [rs.Broker(i, f"rabbit-{i}.example.com", 5552) for i in range(3)],
            [rs.StreamMetadata(f"stream-{i}", 1, i % 3, [0, 1, 2]) for i in range(4)],
        )
    )
    return [
        ("Credit", rs.encode(rs.Credit(1, 10)), "client", obj_credit, floor_credit, enc_credit),
        ("PublishV1 x100", publish, "client", obj_publish, floor_publish, enc_publish),
        ("PublishV1 sub-entry gzip x100", sub_entry, "client", None, None, None),
        (
            "PublishConfirm x100",
            rs.encode(rs.PublishConfirm(1, list(range(100)))),
            "server",
            obj_confirm,
            floor_confirm,
            enc_confirm,
        ),
        ("DeliverV1 x100", _deliver(), "server", obj_deliver, floor_deliver, enc_deliver),
        (
            "QueryOffset",
            rs.encode(rs.QueryOffsetRequest(3, "my-app-reference", "orders")),
            "client",
            obj_query_offset,
            _tuple_query_offset,
            enc_query_offset,
        ),
        (
            "DeclarePublisher",
            rs.encode(rs.DeclarePublisherRequest(3, 1, "my-app-reference", "orders")),
            "client",
            obj_declare_publisher,
            _tuple_declare_publisher,
            enc_declare_publisher,
        ),
        ("Open", rs.encode(rs.OpenRequest(2, "/")), "client", obj_open, _tuple_open, enc_open),
        (
            "MetadataResponse",
            metadata,
            "server",
            obj_metadata,
            lambda b: _metadata(b, False),
            enc_metadata,
        ),
    ]  # type: ignore[return-value]


GOAL_FLOOR = 0.8
GOAL_RSTREAM = 1.5


def _mark(ratio: float | None, goal: float) -> str:
    if ratio is None:
        return f"{'-':>5}  (goal >= {goal}x)        "
    return mark(ratio, goal)


def main() -> int:
    budget = 0.5 if "--quick" in sys.argv else 2.0
    rows: list[dict[str, Any]] = []
    print(
        f"{'frame':30} {'op':6} {'bytes':>5} {'specgen/s':>10} {'no-crc/s':>10} {'floor/s':>10} "
        f"{'tuples/s':>10} {'rstream/s':>10}  vs floor                     vs rstream"
    )
    for name, frame, sender, floor, tuples, floor_enc in frames():
        msg = rs.decode(frame, sender)  # type: ignore[arg-type]
        theirs = decode_frame(frame[4:])
        assert rs.encode(msg) == frame, name
        if floor is not None:
            assert floor(frame) == msg, name
            assert floor_enc(msg) == frame, name
        for op in ("decode", "encode"):
            fns: dict[str, Callable[[], Any]]
            if op == "decode":
                fns = {
                    "specgen": lambda f=frame, s=sender: rs.decode(f, s),
                    "rstream": lambda f=frame: decode_frame(f[4:]),
                }
                if name.startswith("Deliver"):
                    fns["no_crc"] = lambda f=frame, s=sender: rs.decode(
                        f, s, verify_checksums=False
                    )
                if floor is not None:
                    fns["floor"] = lambda f=frame, fn=floor: fn(f)
                    fns["tuples"] = lambda f=frame, fn=tuples: fn(f)
            else:
                fns = {
                    "specgen": lambda m=msg: rs.encode(m),
                    "rstream": lambda t=theirs: encode_frame(t),
                }
                if floor_enc is not None:
                    fns["floor"] = lambda m=msg, fn=floor_enc: fn(m)
            got = rates(fns, budget)
            ours = got["specgen"]
            vs_floor = ours / got["floor"] if "floor" in got else None
            vs_rstream = ours / got["rstream"]
            row = {
                "frame": name,
                "op": op,
                "bytes": len(frame),
                **{k: round(v) for k, v in got.items()},
                "vs_floor": None if vs_floor is None else round(vs_floor, 2),
                "goal_floor": GOAL_FLOOR,
                "vs_rstream": round(vs_rstream, 2),
                "goal_rstream": GOAL_RSTREAM,
            }
            rows.append(row)

            def fmt(v: float | None) -> str:
                return "-" if v is None else f"{v:,.0f}"

            print(
                f"{name:30} {op:6} {len(frame):>5} {fmt(ours):>10} {fmt(got.get('no_crc')):>10} "
                f"{fmt(got.get('floor')):>10} {fmt(got.get('tuples')):>10} "
                f"{fmt(got['rstream']):>10}  {_mark(vs_floor, GOAL_FLOOR)}  "
                f"{_mark(vs_rstream, GOAL_RSTREAM)}"
            )
    out = write_results("codec", rows)
    print(f"results: {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
