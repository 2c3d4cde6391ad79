"""The floor of bench/amqp091.py: AMQP 0-9-1, hand-written for exactly the frames it times.

Each `decode_*` makes the generated decoder's checks (the header's size against the bytes
given, the frame-end octet, the type, class and method, every length and count before it is
used, reserved bits clear, utf-8 (with surrogateescape, as the generated code) of every string,
a table key given twice, no byte after the last field) and builds this module's classes, called
with positional arguments; a field table is this module's `Table`, a dict that keeps each
value's constructor as the generated one does. Each `encode_*` writes the same frame from them
(every length checked against its prefix). `tuples_*` decode the same way to a tuple (shown by
amqp091.py for information).
"""

from __future__ import annotations

import struct
from decimal import Decimal
from typing import Any


class Bad(ValueError):
    """A frame this floor refuses (the generated decoder raises its DecodeError there)."""


# ---- the classes: the generated ones' names and fields


class Table(dict[str, Any]):
    """A field table: a dict, plus `constructors`, the constructor each value arrived with."""

    __slots__ = ("constructors",)

    def __init__(self) -> None:
        super().__init__()
        self.constructors: dict[str, int] = {}


class BasicAck:
    __slots__ = ("delivery_tag", "multiple", "channel")

    def __init__(self, delivery_tag: int, multiple: bool, channel: int) -> None:
        self.delivery_tag = delivery_tag
        self.multiple = multiple
        self.channel = channel


class BasicPublish:
    __slots__ = ("reserved1", "exchange", "routing_key", "mandatory", "immediate", "channel")

    def __init__(
        self,
        reserved1: int,
        exchange: str,
        routing_key: str,
        mandatory: bool,
        immediate: bool,
        channel: int,
    ) -> None:
        self.reserved1 = reserved1
        self.exchange = exchange
        self.routing_key = routing_key
        self.mandatory = mandatory
        self.immediate = immediate
        self.channel = channel


class BasicDeliver:
    __slots__ = (
        "consumer_tag",
        "delivery_tag",
        "redelivered",
        "exchange",
        "routing_key",
        "channel",
    )

    def __init__(
        self,
        consumer_tag: str,
        delivery_tag: int,
        redelivered: bool,
        exchange: str,
        routing_key: str,
        channel: int,
    ) -> None:
        self.consumer_tag = consumer_tag
        self.delivery_tag = delivery_tag
        self.redelivered = redelivered
        self.exchange = exchange
        self.routing_key = routing_key
        self.channel = channel


class QueueDeclare:
    __slots__ = (
        "reserved1",
        "queue",
        "passive",
        "durable",
        "exclusive",
        "auto_delete",
        "no_wait",
        "arguments",
        "channel",
    )

    def __init__(
        self,
        reserved1: int,
        queue: str,
        passive: bool,
        durable: bool,
        exclusive: bool,
        auto_delete: bool,
        no_wait: bool,
        arguments: Table,
        channel: int,
    ) -> None:
        self.reserved1 = reserved1
        self.queue = queue
        self.passive = passive
        self.durable = durable
        self.exclusive = exclusive
        self.auto_delete = auto_delete
        self.no_wait = no_wait
        self.arguments = arguments
        self.channel = channel


class ConnectionStart:
    __slots__ = (
        "version_major",
        "version_minor",
        "server_properties",
        "mechanisms",
        "locales",
        "channel",
    )

    def __init__(
        self,
        version_major: int,
        version_minor: int,
        server_properties: Table,
        mechanisms: bytes,
        locales: bytes,
        channel: int,
    ) -> None:
        self.version_major = version_major
        self.version_minor = version_minor
        self.server_properties = server_properties
        self.mechanisms = mechanisms
        self.locales = locales
        self.channel = channel


class BasicProperties:
    """A content header: weight, body size, the fourteen properties (None: absent), channel."""

    __slots__ = (
        "weight",
        "body_size",
        "content_type",
        "content_encoding",
        "headers",
        "delivery_mode",
        "priority",
        "correlation_id",
        "reply_to",
        "expiration",
        "message_id",
        "timestamp",
        "type",
        "user_id",
        "app_id",
        "reserved",
        "channel",
    )

    def __init__(
        self,
        weight: int,
        body_size: int,
        content_type: str | None,
        content_encoding: str | None,
        headers: Table | None,
        delivery_mode: int | None,
        priority: int | None,
        correlation_id: str | None,
        reply_to: str | None,
        expiration: str | None,
        message_id: str | None,
        timestamp: int | None,
        type: str | None,
        user_id: str | None,
        app_id: str | None,
        reserved: str | None,
        channel: int,
    ) -> None:
        self.weight = weight
        self.body_size = body_size
        self.content_type = content_type
        self.content_encoding = content_encoding
        self.headers = headers
        self.delivery_mode = delivery_mode
        self.priority = priority
        self.correlation_id = correlation_id
        self.reply_to = reply_to
        self.expiration = expiration
        self.message_id = message_id
        self.timestamp = timestamp
        self.type = type
        self.user_id = user_id
        self.app_id = app_id
        self.reserved = reserved
        self.channel = channel


class ContentBody:
    __slots__ = ("payload", "channel")

    def __init__(self, payload: bytes, channel: int) -> None:
        self.payload = payload
        self.channel = channel


# ---- decoders and encoders

_HEAD = struct.Struct(">BHI")
_METHOD_HEAD = struct.Struct(">BHIHH")
_B = struct.Struct(">B")
_H = struct.Struct(">H")
_I = struct.Struct(">I")
_Q = struct.Struct(">Q")
_QB = struct.Struct(">QB")
_BB = struct.Struct(">BB")
_PROPS_HEAD = struct.Struct(">HHQH")
_FRAME_END = 0xCE
_END = b"\xce"


def _method(b: bytes, class_id: int, method_id: int) -> int:
    """The checks every method floor makes first: the header, its size, the frame end, the
    type and the method's identity; the channel."""
    end = len(b)
    if end < 12:
        raise Bad("header")
    type_, channel, size, c, m = _METHOD_HEAD.unpack_from(b, 0)
    if size != end - 8 or b[end - 1] != _FRAME_END or type_ != 1 or c != class_id or m != method_id:
        raise Bad("header")
    return channel


def _shortstr(b: Any, at: int, stop: int) -> tuple[str, int]:
    n = b[at]
    at += 1
    if n > stop - at:
        raise Bad("shortstr")
    return str(b[at : at + n], "utf-8", "surrogateescape"), at + n


def _longstr_bytes(b: Any, at: int, stop: int) -> tuple[bytes, int]:
    if stop - at < 4:
        raise Bad("longstr")
    (n,) = _I.unpack_from(b, at)
    at += 4
    if n > stop - at:
        raise Bad("longstr")
    return bytes(b[at : at + n]), at + n


_FIXED = {  # constructor -> its struct
    ord("b"): struct.Struct(">b"),
    ord("B"): struct.Struct(">B"),
    ord("s"): struct.Struct(">h"),
    ord("u"): struct.Struct(">H"),
    ord("I"): struct.Struct(">i"),
    ord("i"): struct.Struct(">I"),
    ord("l"): struct.Struct(">q"),
    ord("L"): struct.Struct(">Q"),
    ord("f"): struct.Struct(">f"),
    ord("d"): struct.Struct(">d"),
    ord("T"): struct.Struct(">Q"),
}
_DEC = struct.Struct(">BI")


def _value(b: Any, at: int, stop: int) -> tuple[Any, int, int]:
    if at >= stop:
        raise Bad("value")
    ctor = b[at]
    at += 1
    s = _FIXED.get(ctor)
    if s is not None:
        if stop - at < s.size:
            raise Bad("value")
        return s.unpack_from(b, at)[0], ctor, at + s.size
    if ctor == 83:  # S
        raw, at = _longstr_bytes(b, at, stop)
        return raw.decode("utf-8", "surrogateescape"), ctor, at
    if ctor == 116:  # t
        if at >= stop:
            raise Bad("value")
        return b[at] != 0, ctor, at + 1
    if ctor == 70:  # F
        table, at = _table(b, at, stop)
        return table, ctor, at
    if ctor == 120:  # x
        raw, at = _longstr_bytes(b, at, stop)
        return raw, ctor, at
    if ctor == 86:  # V
        return None, ctor, at
    if ctor == 68:  # D
        if stop - at < 5:
            raise Bad("value")
        scale, v = _DEC.unpack_from(b, at)
        return Decimal(v).scaleb(-scale), ctor, at + 5
    raise Bad("constructor")


def _table(b: Any, at: int, stop: int) -> tuple[Table, int]:
    if stop - at < 4:
        raise Bad("table")
    (size,) = _I.unpack_from(b, at)
    at += 4
    if size > stop - at:
        raise Bad("table")
    end = at + size
    out = Table()
    ctors = out.constructors
    while at < end:
        key, at = _shortstr(b, at, end)
        if key in out:
            raise Bad("key twice")
        out[key], ctors[key], at = _value(b, at, end)
    return out, at


def _enc_value(parts: list[bytes], value: Any, ctor: int) -> None:
    parts.append(_B.pack(ctor))
    s = _FIXED.get(ctor)
    if s is not None:
        parts.append(s.pack(value))
    elif ctor == 83:
        raw = value.encode("utf-8", "surrogateescape")
        parts.append(_I.pack(len(raw)))
        parts.append(raw)
    elif ctor == 116:
        parts.append(b"\x01" if value else b"\x00")
    elif ctor == 70:
        _enc_table(parts, value)
    elif ctor == 120:
        parts.append(_I.pack(len(value)))
        parts.append(value)
    elif ctor == 86:
        pass
    else:
        raise Bad("constructor")


def _enc_table(parts: list[bytes], table: Table) -> None:
    mark = len(parts)
    parts.append(b"")
    ctors = table.constructors
    for key, value in table.items():
        raw = key.encode("utf-8", "surrogateescape")
        if len(raw) > 255:
            raise Bad("key")
        parts.append(_B.pack(len(raw)))
        parts.append(raw)
        _enc_value(parts, value, ctors[key])
    parts[mark] = _I.pack(sum(map(len, parts[mark + 1 :])))


def _short(s: str) -> bytes:
    raw = s.encode("utf-8", "surrogateescape")
    if len(raw) > 255:
        raise Bad("shortstr")
    return _B.pack(len(raw)) + raw


def _frame(type_: int, channel: int, body: bytes) -> bytes:
    return _HEAD.pack(type_, channel, len(body)) + body + _END


def decode_ack(b: bytes) -> BasicAck:
    channel = _method(b, 60, 80)
    if len(b) != 21:
        raise Bad("size")
    tag, bits = _QB.unpack_from(b, 11)
    if bits & 0xFE:
        raise Bad("reserved bits")
    return BasicAck(tag, bits != 0, channel)


def tuples_ack(b: bytes) -> tuple[Any, ...]:
    channel = _method(b, 60, 80)
    if len(b) != 21:
        raise Bad("size")
    tag, bits = _QB.unpack_from(b, 11)
    if bits & 0xFE:
        raise Bad("reserved bits")
    return tag, bits != 0, channel


_ACK_FRAME = struct.Struct(">BHIHHQBB")


def encode_ack(m: BasicAck) -> bytes:
    return _ACK_FRAME.pack(1, m.channel, 13, 60, 80, m.delivery_tag, 1 if m.multiple else 0, 0xCE)


def tuples_publish(b: bytes) -> tuple[Any, ...]:
    channel = _method(b, 60, 40)
    stop = len(b) - 1
    if stop - 11 < 3:
        raise Bad("truncated")
    (reserved1,) = _H.unpack_from(b, 11)
    exchange, at = _shortstr(b, 13, stop)
    if at >= stop:
        raise Bad("truncated")
    routing_key, at = _shortstr(b, at, stop)
    if at + 1 != stop:
        raise Bad("size")
    bits = b[at]
    if bits & 0xFC:
        raise Bad("reserved bits")
    return reserved1, exchange, routing_key, bits & 1 != 0, bits & 2 != 0, channel


def decode_publish(b: bytes) -> BasicPublish:
    return BasicPublish(*tuples_publish(b))


def encode_publish(m: BasicPublish) -> bytes:
    body = b"".join(
        (
            b"\x00\x3c\x00\x28",
            _H.pack(m.reserved1),
            _short(m.exchange),
            _short(m.routing_key),
            _B.pack((1 if m.mandatory else 0) | (2 if m.immediate else 0)),
        )
    )
    return _frame(1, m.channel, body)


def tuples_deliver(b: bytes) -> tuple[Any, ...]:
    channel = _method(b, 60, 60)
    stop = len(b) - 1
    consumer_tag, at = _shortstr(b, 11, stop)
    if stop - at < 9:
        raise Bad("truncated")
    tag, bits = _QB.unpack_from(b, at)
    if bits & 0xFE:
        raise Bad("reserved bits")
    exchange, at = _shortstr(b, at + 9, stop)
    if at >= stop:
        raise Bad("truncated")
    routing_key, at = _shortstr(b, at, stop)
    if at != stop:
        raise Bad("size")
    return consumer_tag, tag, bits != 0, exchange, routing_key, channel


def decode_deliver(b: bytes) -> BasicDeliver:
    return BasicDeliver(*tuples_deliver(b))


def encode_deliver(m: BasicDeliver) -> bytes:
    body = b"".join(
        (
            b"\x00\x3c\x00\x3c",
            _short(m.consumer_tag),
            _QB.pack(m.delivery_tag, 1 if m.redelivered else 0),
            _short(m.exchange),
            _short(m.routing_key),
        )
    )
    return _frame(1, m.channel, body)


def tuples_queue_declare(b: bytes) -> tuple[Any, ...]:
    channel = _method(b, 50, 10)
    stop = len(b) - 1
    if stop - 11 < 3:
        raise Bad("truncated")
    (reserved1,) = _H.unpack_from(b, 11)
    queue, at = _shortstr(b, 13, stop)
    if at >= stop:
        raise Bad("truncated")
    bits = b[at]
    if bits & 0xE0:
        raise Bad("reserved bits")
    arguments, at = _table(b, at + 1, stop)
    if at != stop:
        raise Bad("size")
    return (
        reserved1,
        queue,
        bits & 1 != 0,
        bits & 2 != 0,
        bits & 4 != 0,
        bits & 8 != 0,
        bits & 16 != 0,
        arguments,
        channel,
    )


def decode_queue_declare(b: bytes) -> QueueDeclare:
    return QueueDeclare(*tuples_queue_declare(b))


def encode_queue_declare(m: QueueDeclare) -> bytes:
    parts = [
        b"\x00\x32\x00\x0a",
        _H.pack(m.reserved1),
        _short(m.queue),
        _B.pack(
            (1 if m.passive else 0)
            | (2 if m.durable else 0)
            | (4 if m.exclusive else 0)
            | (8 if m.auto_delete else 0)
            | (16 if m.no_wait else 0)
        ),
    ]
    _enc_table(parts, m.arguments)
    return _frame(1, m.channel, b"".join(parts))


def tuples_start(b: bytes) -> tuple[Any, ...]:
    channel = _method(b, 10, 10)
    stop = len(b) - 1
    if stop - 11 < 2:
        raise Bad("truncated")
    major, minor = _BB.unpack_from(b, 11)
    props, at = _table(b, 13, stop)
    mechanisms, at = _longstr_bytes(b, at, stop)
    locales, at = _longstr_bytes(b, at, stop)
    if at != stop:
        raise Bad("size")
    return major, minor, props, mechanisms, locales, channel


def decode_start(b: bytes) -> ConnectionStart:
    return ConnectionStart(*tuples_start(b))


def encode_start(m: ConnectionStart) -> bytes:
    parts = [b"\x00\x0a\x00\x0a", _BB.pack(m.version_major, m.version_minor)]
    _enc_table(parts, m.server_properties)
    parts += [_I.pack(len(m.mechanisms)), m.mechanisms, _I.pack(len(m.locales)), m.locales]
    return _frame(1, m.channel, b"".join(parts))


# (flag, kind) of each property in order: s shortstr, t table, o octet, q long-long
_PROPS = (
    (0x8000, "s"),
    (0x4000, "s"),
    (0x2000, "t"),
    (0x1000, "o"),
    (0x0800, "o"),
    (0x0400, "s"),
    (0x0200, "s"),
    (0x0100, "s"),
    (0x0080, "s"),
    (0x0040, "q"),
    (0x0020, "s"),
    (0x0010, "s"),
    (0x0008, "s"),
    (0x0004, "s"),
)


def tuples_header(b: bytes) -> tuple[Any, ...]:
    end = len(b)
    if end < 22:
        raise Bad("header")
    type_, channel, size = _HEAD.unpack_from(b, 0)
    if size != end - 8 or b[end - 1] != _FRAME_END or type_ != 2:
        raise Bad("header")
    class_id, weight, body_size, flags = _PROPS_HEAD.unpack_from(b, 7)
    if class_id != 60 or flags & 3:
        raise Bad("flags")
    stop = end - 1
    at = 21
    values: list[Any] = [weight, body_size]
    for flag, kind in _PROPS:
        if not flags & flag:
            values.append(None)
        elif kind == "s":
            v, at = _shortstr(b, at, stop)
            values.append(v)
        elif kind == "o":
            if at >= stop:
                raise Bad("truncated")
            values.append(b[at])
            at += 1
        elif kind == "q":
            if stop - at < 8:
                raise Bad("truncated")
            values.append(_Q.unpack_from(b, at)[0])
            at += 8
        else:
            v, at = _table(b, at, stop)
            values.append(v)
    if at != stop:
        raise Bad("size")
    values.append(channel)
    return tuple(values)


def decode_header(b: bytes) -> BasicProperties:
    return BasicProperties(*tuples_header(b))


_NAMES = (
    "content_type",
    "content_encoding",
    "headers",
    "delivery_mode",
    "priority",
    "correlation_id",
    "reply_to",
    "expiration",
    "message_id",
    "timestamp",
    "type",
    "user_id",
    "app_id",
    "reserved",
)


def encode_header(m: BasicProperties) -> bytes:
    parts = [b"", b""]
    flags = 0
    for (flag, kind), name in zip(_PROPS, _NAMES, strict=True):
        v = getattr(m, name)
        if v is None:
            continue
        flags |= flag
        if kind == "s":
            parts.append(_short(v))
        elif kind == "o":
            parts.append(_B.pack(v))
        elif kind == "q":
            parts.append(_Q.pack(v))
        else:
            _enc_table(parts, v)
    parts[0] = _PROPS_HEAD.pack(60, m.weight, m.body_size, flags)
    return _frame(2, m.channel, b"".join(parts))


def decode_body(b: bytes) -> ContentBody:
    end = len(b)
    if end < 8:
        raise Bad("header")
    type_, channel, size = _HEAD.unpack_from(b, 0)
    if size != end - 8 or b[end - 1] != _FRAME_END or type_ != 3:
        raise Bad("header")
    return ContentBody(b[7 : end - 1], channel)


def encode_body(m: ContentBody) -> bytes:
    return _HEAD.pack(3, m.channel, len(m.payload)) + m.payload + _END
