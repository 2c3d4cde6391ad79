"""The floor of bench/codec.py: RabbitMQ Streams 4.0, hand-written for exactly the frames it times.

Each `decode_*` makes the generated decoder's checks (the header: its size against the bytes,
the key and version; every count and length against the bytes before it is used; a publish's
message must be a simple entry, a deliver's entries too; utf-8 of every string; the chunk's
CRC; no byte after the last field) and builds this module's classes, called with positional
arguments. Each `encode_*` writes the same frame from them. `tuples_*` decode the same way to
tuples (shown by codec.py for information).

A sub-entry batch is not in this floor (codec.py times that frame without one).
"""

from __future__ import annotations

import struct
import zlib
from typing import Any


class Bad(ValueError):
    """A frame this floor refuses (the generated decoder raises its DecodeError there)."""


# ---- the classes: the generated ones' names and fields


class Credit:
    __slots__ = ("subscription_id", "credit")

    def __init__(self, subscription_id: int, credit: int) -> None:
        self.subscription_id = subscription_id
        self.credit = credit


class PublishV1PublishedMessage:
    __slots__ = ("publishing_id", "message")

    def __init__(self, publishing_id: int, message: bytes) -> None:
        self.publishing_id = publishing_id
        self.message = message


class PublishV1:
    __slots__ = ("publisher_id", "published_messages")

    def __init__(
        self, publisher_id: int, published_messages: list[PublishV1PublishedMessage]
    ) -> None:
        self.publisher_id = publisher_id
        self.published_messages = published_messages


class PublishConfirm:
    __slots__ = ("publisher_id", "publishing_ids")

    def __init__(self, publisher_id: int, publishing_ids: list[int]) -> None:
        self.publisher_id = publisher_id
        self.publishing_ids = publishing_ids


class SimpleEntry:
    __slots__ = ("size", "data")

    def __init__(self, size: int, data: bytes) -> None:
        self.size = size
        self.data = data


class OsirisChunk:
    __slots__ = (
        "magic_version",
        "chunk_type",
        "num_entries",
        "num_records",
        "timestamp",
        "epoch",
        "chunk_first_offset",
        "chunk_crc",
        "data_length",
        "trailer_length",
        "bloom_size",
        "reserved",
        "messages",
    )

    def __init__(
        self,
        magic_version: int,
        chunk_type: int,
        num_entries: int,
        num_records: int,
        timestamp: int,
        epoch: int,
        chunk_first_offset: int,
        chunk_crc: int,
        data_length: int,
        trailer_length: int,
        bloom_size: int,
        reserved: int,
        messages: list[SimpleEntry],
    ) -> None:
        self.magic_version = magic_version
        self.chunk_type = chunk_type
        self.num_entries = num_entries
        self.num_records = num_records
        self.timestamp = timestamp
        self.epoch = epoch
        self.chunk_first_offset = chunk_first_offset
        self.chunk_crc = chunk_crc
        self.data_length = data_length
        self.trailer_length = trailer_length
        self.bloom_size = bloom_size
        self.reserved = reserved
        self.messages = messages


class DeliverV1:
    __slots__ = ("subscription_id", "osiris_chunk")

    def __init__(self, subscription_id: int, osiris_chunk: OsirisChunk) -> None:
        self.subscription_id = subscription_id
        self.osiris_chunk = osiris_chunk


class QueryOffsetRequest:
    __slots__ = ("correlation_id", "reference", "stream")

    def __init__(self, correlation_id: int, reference: str | None, stream: str | None) -> None:
        self.correlation_id = correlation_id
        self.reference = reference
        self.stream = stream


class DeclarePublisherRequest:
    __slots__ = ("correlation_id", "publisher_id", "publisher_reference", "stream")

    def __init__(
        self, correlation_id: int, publisher_id: int, publisher_reference: str, stream: str | None
    ) -> None:
        self.correlation_id = correlation_id
        self.publisher_id = publisher_id
        self.publisher_reference = publisher_reference
        self.stream = stream


class OpenRequest:
    __slots__ = ("correlation_id", "virtual_host")

    def __init__(self, correlation_id: int, virtual_host: str | None) -> None:
        self.correlation_id = correlation_id
        self.virtual_host = virtual_host


class Broker:
    __slots__ = ("reference", "host", "port")

    def __init__(self, reference: int, host: str | None, port: int) -> None:
        self.reference = reference
        self.host = host
        self.port = port


class StreamMetadata:
    __slots__ = ("stream_name", "response_code", "leader_reference", "replicas_references")

    def __init__(
        self,
        stream_name: str | None,
        response_code: int,
        leader_reference: int,
        replicas_references: list[int],
    ) -> None:
        self.stream_name = stream_name
        self.response_code = response_code
        self.leader_reference = leader_reference
        self.replicas_references = replicas_references


class MetadataResponse:
    __slots__ = ("correlation_id", "broker", "stream_metadata")

    def __init__(
        self, correlation_id: int, broker: list[Broker], stream_metadata: list[StreamMetadata]
    ) -> None:
        self.correlation_id = correlation_id
        self.broker = broker
        self.stream_metadata = stream_metadata


# ---- decoders

_HEAD = struct.Struct(">IHH")
_CREDIT = struct.Struct(">BH")
_PUB = struct.Struct(">Bi")
_QI = struct.Struct(">Qi")
_CONFIRM = struct.Struct(">Bi")
_CHUNK = struct.Struct(">BbbHIqQQIIIB3s")  # subscription, magic .. reserved
_ENTRY = struct.Struct(">I")
_H = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">I")
_I32S = struct.Struct(">i")
_DP = struct.Struct(">IB")
_DPII = struct.Struct(">Ii")
_PORT = struct.Struct(">I")
_SM = struct.Struct(">HHi")


def _header(b: bytes | memoryview, key: int) -> None:
    """The checks every floor makes first, as the generated decoder does: the size field counts
    the bytes after it, and the key and version are this frame's."""
    if len(b) < 8:
        raise Bad("header")
    size, k, version = _HEAD.unpack_from(b, 0)
    if size != len(b) - 4 or k != key or version != 1:
        raise Bad("header")


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


def tuples_credit(b: bytes) -> tuple[Any, ...]:
    _header(b, 0x0009)
    if len(b) != 11:
        raise Bad("size")
    return _CREDIT.unpack_from(b, 8)


def decode_credit(b: bytes) -> Credit:
    return Credit(*tuples_credit(b))


def _publish(b: bytes, objects: bool) -> Any:
    _header(b, 0x0002)
    end = len(b)
    if end < 13:
        raise Bad("truncated")
    pid, n = _PUB.unpack_from(b, 8)
    at = 13
    if n < 0 or n * 12 > end - at:
        raise Bad("count")
    out = []
    for _ in range(n):
        if end - at < 12:
            raise Bad("truncated")
        publishing_id, length = _QI.unpack_from(b, at)
        at += 12
        if length < 0:  # the top bit: a sub-entry batch, not in this floor
            raise Bad("sub-entry")
        if length > end - at:
            raise Bad("length")
        data = b[at : at + length]
        out.append(
            PublishV1PublishedMessage(publishing_id, data) if objects else (publishing_id, data)
        )
        at += length
    if at != end:
        raise Bad("size")
    return PublishV1(pid, out) if objects else (pid, out)


def decode_publish(b: bytes) -> PublishV1:
    result: PublishV1 = _publish(b, True)
    return result


def tuples_publish(b: bytes) -> tuple[int, list[tuple[int, bytes]]]:
    result: tuple[int, list[tuple[int, bytes]]] = _publish(b, False)
    return result


def tuples_confirm(b: bytes) -> tuple[int, list[int]]:
    _header(b, 0x0003)
    end = len(b)
    if end < 13:
        raise Bad("truncated")
    pid, n = _CONFIRM.unpack_from(b, 8)
    if n < 0 or n * 8 != end - 13:  # too many for the bytes, or bytes after the last
        raise Bad("count")
    return pid, list(struct.unpack_from(f">{n}Q", b, 13))


def decode_confirm(b: bytes) -> PublishConfirm:
    return PublishConfirm(*tuples_confirm(b))


def _deliver(b: bytes, crc: bool, objects: bool) -> Any:
    _header(b, 0x0008)
    end = len(b)
    if end < 8 + _CHUNK.size:
        raise Bad("truncated")
    sub, magic, ctype, n, records, ts, epoch, first, chunk_crc, data_length, trailer, bloom, res = (
        _CHUNK.unpack_from(b, 8)
    )
    at = 8 + _CHUNK.size
    if data_length != end - at:  # the data runs past the frame, or bytes follow it
        raise Bad("data length")
    if n * 4 > data_length:
        raise Bad("count")
    if crc and zlib.crc32(memoryview(b)[at:end]) != chunk_crc:
        raise Bad("crc")
    out: list[Any] = []
    for _ in range(n):
        if end - at < 4:
            raise Bad("truncated")
        (head,) = _ENTRY.unpack_from(b, at)
        at += 4
        if head >> 31:  # a sub-batch entry, not in this floor
            raise Bad("sub-batch")
        if head > end - at:
            raise Bad("length")
        data = b[at : at + head]
        out.append(SimpleEntry(head, data) if objects else data)
        at += head
    if at != end:
        raise Bad("size")
    if not objects:
        fields = (sub, magic, ctype, n, records, ts, epoch, first, chunk_crc, data_length)
        return (*fields, trailer, bloom, res), out
    chunk = OsirisChunk(
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
    return DeliverV1(sub, chunk)


def decode_deliver(b: bytes) -> DeliverV1:
    result: DeliverV1 = _deliver(b, True, True)
    return result


def decode_deliver_no_crc(b: bytes) -> DeliverV1:
    result: DeliverV1 = _deliver(b, False, True)
    return result


def tuples_deliver(b: bytes) -> tuple[Any, ...]:
    result: tuple[Any, ...] = _deliver(b, True, False)
    return result


def tuples_query_offset(b: bytes) -> tuple[Any, ...]:
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


def decode_query_offset(b: bytes) -> QueryOffsetRequest:
    return QueryOffsetRequest(*tuples_query_offset(b))


def tuples_declare_publisher(b: bytes) -> tuple[Any, ...]:
    _header(b, 0x0001)
    end = len(b)
    if end < 13:
        raise Bad("truncated")
    corr, pid = _DP.unpack_from(b, 8)
    reference, at = _str16(b, 13, end)
    if reference is None:  # not nullable
        raise Bad("length")
    stream, at = _str16(b, at, end)
    if at != end:
        raise Bad("size")
    return corr, pid, reference, stream


def decode_declare_publisher(b: bytes) -> DeclarePublisherRequest:
    return DeclarePublisherRequest(*tuples_declare_publisher(b))


def tuples_open(b: bytes) -> tuple[Any, ...]:
    _header(b, 0x0015)
    end = len(b)
    if end < 12:
        raise Bad("truncated")
    (corr,) = _I32.unpack_from(b, 8)
    vhost, at = _str16(b, 12, end)
    if at != end:
        raise Bad("size")
    return corr, vhost


def decode_open(b: bytes) -> OpenRequest:
    return OpenRequest(*tuples_open(b))


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
        brokers.append(Broker(ref, host, port) if objects else (ref, host, port))
    if end - at < 4:
        raise Bad("truncated")
    (n,) = _I32S.unpack_from(b, at)
    at += 4
    if n < 0 or n * 10 > end - at:
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
        streams.append(StreamMetadata(*item) if objects else item)
    if at != end:
        raise Bad("size")
    return MetadataResponse(corr, brokers, streams) if objects else (corr, brokers, streams)


def decode_metadata(b: bytes) -> MetadataResponse:
    result: MetadataResponse = _metadata(b, True)
    return result


def tuples_metadata(b: bytes) -> tuple[Any, ...]:
    result: tuple[Any, ...] = _metadata(b, False)
    return result


# ---- encoders: the same frame from this module's objects

_CREDIT_FRAME = struct.Struct(">IHHBH")


def encode_credit(m: Credit) -> bytes:
    return _CREDIT_FRAME.pack(7, 0x0009, 1, m.subscription_id, m.credit)


def encode_publish(m: PublishV1) -> bytes:
    parts = [b"", _PUB.pack(m.publisher_id, len(m.published_messages))]
    for item in m.published_messages:
        data = item.message
        if not isinstance(data, bytes):
            raise Bad("sub-entry")
        parts.append(_QI.pack(item.publishing_id, len(data)))
        parts.append(data)
    parts[0] = _HEAD.pack(sum(map(len, parts)) + 4, 0x0002, 1)
    return b"".join(parts)


def encode_confirm(m: PublishConfirm) -> bytes:
    n = len(m.publishing_ids)
    return (
        _HEAD.pack(9 + 8 * n, 0x0003, 1)
        + _CONFIRM.pack(m.publisher_id, n)
        + struct.pack(f">{n}Q", *m.publishing_ids)
    )


def encode_deliver(m: DeliverV1) -> bytes:
    """Every entry written again (this floor's decoder keeps no bytes to copy)."""
    c = m.osiris_chunk
    parts = [b""]
    for e in c.messages:
        if not isinstance(e, SimpleEntry) or len(e.data) != e.size:
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


def _enc_str16(s: str | None) -> bytes:
    if s is None:
        return b"\xff\xff"
    raw = s.encode("utf-8")
    if len(raw) > 32767:
        raise Bad("length")
    return _H.pack(len(raw)) + raw


def encode_query_offset(m: QueryOffsetRequest) -> bytes:
    body = _I32.pack(m.correlation_id) + _enc_str16(m.reference) + _enc_str16(m.stream)
    return _HEAD.pack(4 + len(body), 0x000B, 1) + body


def encode_declare_publisher(m: DeclarePublisherRequest) -> bytes:
    if m.publisher_reference is None:
        raise Bad("publisher_reference")
    body = (
        _DP.pack(m.correlation_id, m.publisher_id)
        + _enc_str16(m.publisher_reference)
        + _enc_str16(m.stream)
    )
    return _HEAD.pack(4 + len(body), 0x0001, 1) + body


def encode_open(m: OpenRequest) -> bytes:
    body = _I32.pack(m.correlation_id) + _enc_str16(m.virtual_host)
    return _HEAD.pack(4 + len(body), 0x0015, 1) + body


def encode_metadata(m: MetadataResponse) -> bytes:
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
