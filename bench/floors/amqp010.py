"""The floor of bench/amqp010.py: AMQP 0-10, hand-written for exactly the frames it times.

What a careful programmer would write for the shipped sample's frames (a message.transfer
command, its header segment, a body frame, session.completed, execution.sync, queue.declare,
connection.start) with precompiled `struct.Struct`s and classes of its own: a `__slots__` class
per command, control and struct (the generated class's name and fields, a plain `__init__`
taking them by keyword), `SessionHeader`, `Frame`, `Typed` and `Array` as the generated ones
are, and the enums these frames name, mapped through dicts as the generated code does.

Each `decode_*` makes the generated decoder's checks (the class and command codes, the session
header, packing flags that name no field, every length against the bytes left, utf-8, a map key
given twice, bytes after the fields; DecodeError naming the field and the byte offset) and
reads `bytes`, which is what a segment's payload is. Each `encode_*` writes the same bytes from
this module's objects (EncodeError for a value that does not fit). Typed values the sample's
frames do not hold (decimals, chars, binN but bin8, coded structs, lists) and the structs it
does not carry (reply-to, fragment-properties) are refused, not read.
"""

from __future__ import annotations

import struct
import uuid
from enum import IntEnum
from typing import Any


class DecodeError(ValueError):
    """Bytes this floor refuses: the field and the byte offset, as the generated error has."""

    def __init__(self, field: str, offset: int, reason: str) -> None:
        super().__init__(f"{field} at byte {offset}: {reason}")
        self.field = field
        self.offset = offset


class EncodeError(ValueError):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")


# ---- the enums these frames name, as the spec names them


class MessageAcceptMode(IntEnum):
    EXPLICIT = 0
    NONE = 1


class MessageAcquireMode(IntEnum):
    PRE_ACQUIRED = 0
    NOT_ACQUIRED = 1


class MessageDeliveryMode(IntEnum):
    NON_PERSISTENT = 1
    PERSISTENT = 2


class MessageDeliveryPriority(IntEnum):
    LOWEST = 0
    LOWER = 1
    LOW = 2
    BELOW_AVERAGE = 3
    MEDIUM = 4
    ABOVE_AVERAGE = 5
    HIGH = 6
    HIGHER = 7
    VERY_HIGH = 8
    HIGHEST = 9


class SegmentType(IntEnum):
    CONTROL = 0
    COMMAND = 1
    HEADER = 2
    BODY = 3


class Track(IntEnum):
    CONTROL = 0
    COMMAND = 1


# ---- the classes: the generated ones' names and fields


class Typed:
    """A value with its type, as a map holds it."""

    __slots__ = ("type", "value")

    def __init__(self, type: str, value: Any) -> None:
        self.type = type
        self.value = value


class Array:
    """Values of one type."""

    __slots__ = ("type", "values")

    def __init__(self, type: str, values: list[Any]) -> None:
        self.type = type
        self.values = values


class SessionHeader:
    __slots__ = ("sync",)

    def __init__(self, sync: bool = False) -> None:
        self.sync = sync


class MessageTransfer:
    __slots__ = ("session_header", "destination", "accept_mode", "acquire_mode")

    def __init__(
        self,
        session_header: SessionHeader,
        destination: str | None = None,
        accept_mode: int | None = None,
        acquire_mode: int | None = None,
    ) -> None:
        self.session_header = session_header
        self.destination = destination
        self.accept_mode = accept_mode
        self.acquire_mode = acquire_mode


class ExecutionSync:
    __slots__ = ("session_header",)

    def __init__(self, session_header: SessionHeader) -> None:
        self.session_header = session_header


class QueueDeclare:
    __slots__ = (
        "session_header",
        "queue",
        "alternate_exchange",
        "passive",
        "durable",
        "exclusive",
        "auto_delete",
        "arguments",
    )

    def __init__(
        self,
        session_header: SessionHeader,
        queue: str | None = None,
        alternate_exchange: str | None = None,
        passive: bool = False,
        durable: bool = False,
        exclusive: bool = False,
        auto_delete: bool = False,
        arguments: dict[str, Typed] | None = None,
    ) -> None:
        self.session_header = session_header
        self.queue = queue
        self.alternate_exchange = alternate_exchange
        self.passive = passive
        self.durable = durable
        self.exclusive = exclusive
        self.auto_delete = auto_delete
        self.arguments = arguments


class SessionCompleted:
    __slots__ = ("commands", "timely_reply")

    def __init__(
        self, commands: list[tuple[int, int]] | None = None, timely_reply: bool = False
    ) -> None:
        self.commands = commands
        self.timely_reply = timely_reply


class ConnectionStart:
    __slots__ = ("server_properties", "mechanisms", "locales")

    def __init__(
        self,
        server_properties: dict[str, Typed] | None = None,
        mechanisms: Array | None = None,
        locales: Array | None = None,
    ) -> None:
        self.server_properties = server_properties
        self.mechanisms = mechanisms
        self.locales = locales


class MessageDeliveryProperties:
    __slots__ = (
        "discard_unroutable",
        "immediate",
        "redelivered",
        "priority",
        "delivery_mode",
        "ttl",
        "timestamp",
        "expiration",
        "exchange",
        "routing_key",
        "resume_id",
        "resume_ttl",
    )

    def __init__(
        self,
        discard_unroutable: bool = False,
        immediate: bool = False,
        redelivered: bool = False,
        priority: int | None = None,
        delivery_mode: int | None = None,
        ttl: int | None = None,
        timestamp: int | None = None,
        expiration: int | None = None,
        exchange: str | None = None,
        routing_key: str | None = None,
        resume_id: str | None = None,
        resume_ttl: int | None = None,
    ) -> None:
        self.discard_unroutable = discard_unroutable
        self.immediate = immediate
        self.redelivered = redelivered
        self.priority = priority
        self.delivery_mode = delivery_mode
        self.ttl = ttl
        self.timestamp = timestamp
        self.expiration = expiration
        self.exchange = exchange
        self.routing_key = routing_key
        self.resume_id = resume_id
        self.resume_ttl = resume_ttl


class MessageProperties:
    __slots__ = (
        "content_length",
        "message_id",
        "correlation_id",
        "reply_to",
        "content_type",
        "content_encoding",
        "user_id",
        "app_id",
        "application_headers",
    )

    def __init__(
        self,
        content_length: int | None = None,
        message_id: uuid.UUID | None = None,
        correlation_id: bytes | None = None,
        reply_to: Any = None,
        content_type: str | None = None,
        content_encoding: str | None = None,
        user_id: bytes | None = None,
        app_id: bytes | None = None,
        application_headers: dict[str, Typed] | None = None,
    ) -> None:
        self.content_length = content_length
        self.message_id = message_id
        self.correlation_id = correlation_id
        self.reply_to = reply_to
        self.content_type = content_type
        self.content_encoding = content_encoding
        self.user_id = user_id
        self.app_id = app_id
        self.application_headers = application_headers


class Frame:
    """One frame: type, payload, track, channel and the four segment and frame flags."""

    __slots__ = (
        "type",
        "payload",
        "track",
        "channel",
        "first_segment",
        "last_segment",
        "first_frame",
        "last_frame",
    )

    def __init__(
        self,
        type: int,
        payload: bytes = b"",
        track: int = 0,
        channel: int = 0,
        first_segment: bool = True,
        last_segment: bool = True,
        first_frame: bool = True,
        last_frame: bool = True,
    ) -> None:
        self.type = type
        self.payload = payload
        self.track = track
        self.channel = channel
        self.first_segment = first_segment
        self.last_segment = last_segment
        self.first_frame = first_frame
        self.last_frame = last_frame


TYPE_CODES: dict[int, str] = {
    0x00: "bin8",
    0x01: "int8",
    0x02: "uint8",
    0x04: "char",
    0x08: "boolean",
    0x10: "bin16",
    0x11: "int16",
    0x12: "uint16",
    0x20: "bin32",
    0x21: "int32",
    0x22: "uint32",
    0x23: "float",
    0x27: "char-utf32",
    0x30: "bin64",
    0x31: "int64",
    0x32: "uint64",
    0x33: "double",
    0x38: "datetime",
    0x40: "bin128",
    0x48: "uuid",
    0x50: "bin256",
    0x60: "bin512",
    0x70: "bin1024",
    0x80: "vbin8",
    0x84: "str8-latin",
    0x85: "str8",
    0x86: "str8-utf16",
    0x90: "vbin16",
    0x94: "str16-latin",
    0x95: "str16",
    0x96: "str16-utf16",
    0xA0: "vbin32",
    0xA8: "map",
    0xA9: "list",
    0xAA: "array",
    0xAB: "struct32",
    0xC0: "bin40",
    0xC8: "dec32",
    0xD0: "bin72",
    0xD8: "dec64",
    0xF0: "void",
    0xF1: "bit",
}
"""Type code -> type name, as maps and arrays tag their values (the spec's table)."""


# ---- decoders and encoders

U16 = struct.Struct(">H")
U32 = struct.Struct(">I")
U64 = struct.Struct(">Q")
FLAGS2 = struct.Struct("<H")
PAIR = struct.Struct(">II")
FRAME = struct.Struct(">BBHBBHI")

ACCEPT = {int(m): m for m in MessageAcceptMode}
ACQUIRE = {int(m): m for m in MessageAcquireMode}
PRIORITY = {int(m): m for m in MessageDeliveryPriority}
DMODE = {int(m): m for m in MessageDeliveryMode}
SEGTYPE = {int(m): m for m in SegmentType}
TRACK = {int(m): m for m in Track}


def short(path: str, at: int, end: int, need: int) -> DecodeError:
    return DecodeError(path, at, f"needs {need} bytes, {max(0, end - at)} left")


def str8(data: bytes, at: int, end: int, path: str) -> tuple[str, int]:
    if at >= end:
        raise short(path, at, end, 1)
    n = data[at]
    at += 1
    if n > end - at:
        raise DecodeError(path, at - 1, f"size {n} but {end - at} bytes left")
    try:
        return data[at : at + n].decode(), at + n
    except UnicodeDecodeError as e:
        raise DecodeError(path, at + e.start, f"not utf-8: {e.reason}") from None


def str16(data: bytes, at: int, end: int, path: str) -> tuple[str, int]:
    if end - at < 2:
        raise short(path, at, end, 2)
    n = data[at] << 8 | data[at + 1]
    at += 2
    if n > end - at:
        raise DecodeError(path, at - 2, f"size {n} but {end - at} bytes left")
    try:
        return data[at : at + n].decode(), at + n
    except UnicodeDecodeError as e:
        raise DecodeError(path, at + e.start, f"not utf-8: {e.reason}") from None


def vbin16(data: bytes, at: int, end: int, path: str) -> tuple[bytes, int]:
    if end - at < 2:
        raise short(path, at, end, 2)
    n = data[at] << 8 | data[at + 1]
    at += 2
    if n > end - at:
        raise DecodeError(path, at - 2, f"size {n} but {end - at} bytes left")
    return data[at : at + n], at + n


def u8(data: bytes, at: int, end: int, path: str) -> int:
    if at >= end:
        raise short(path, at, end, 1)
    return data[at]


def u64(data: bytes, at: int, end: int, path: str) -> int:
    if end - at < 8:
        raise short(path, at, end, 8)
    value: int = U64.unpack_from(data, at)[0]
    return value


# Typed values (maps, arrays): code -> (type name, struct or None)
FIXED = {
    0x00: ("bin8", None, 1),
    0x01: ("int8", struct.Struct(">b"), 1),
    0x02: ("uint8", struct.Struct(">B"), 1),
    0x08: ("boolean", None, 1),
    0x11: ("int16", struct.Struct(">h"), 2),
    0x12: ("uint16", U16, 2),
    0x21: ("int32", struct.Struct(">i"), 4),
    0x22: ("uint32", U32, 4),
    0x23: ("float", struct.Struct(">f"), 4),
    0x31: ("int64", struct.Struct(">q"), 8),
    0x32: ("uint64", U64, 8),
    0x33: ("double", struct.Struct(">d"), 8),
    0x38: ("datetime", U64, 8),
}
SIZED = {
    0x80: ("vbin8", 1, None),
    0x84: ("str8-latin", 1, "iso-8859-15"),
    0x85: ("str8", 1, "utf-8"),
    0x86: ("str8-utf16", 1, "utf-16-be"),
    0x90: ("vbin16", 2, None),
    0x94: ("str16-latin", 2, "iso-8859-15"),
    0x95: ("str16", 2, "utf-8"),
    0x96: ("str16-utf16", 2, "utf-16-be"),
    0xA0: ("vbin32", 4, None),
}


def value_of(code: int, data: bytes, at: int, end: int, path: str) -> tuple[Any, int]:
    fixed = FIXED.get(code)
    if fixed is not None:
        name, st, width = fixed
        if end - at < width:
            raise short(path, at, end, width)
        if st is not None:
            return st.unpack_from(data, at)[0], at + width
        if name == "boolean":
            if data[at] > 1:
                raise DecodeError(path, at, f"boolean octet {data[at]} is neither 0 nor 1")
            return data[at] == 1, at + 1
        return data[at : at + width], at + width
    sized = SIZED.get(code)
    if sized is not None:
        name, width, encoding = sized
        if end - at < width:
            raise short(path, at, end, width)
        n = int.from_bytes(data[at : at + width])
        at += width
        if n > end - at:
            raise DecodeError(path, at - width, f"size {n} but {end - at} bytes left")
        raw = data[at : at + n]
        if encoding is None:
            return raw, at + n
        try:
            return raw.decode(encoding), at + n
        except UnicodeDecodeError as e:
            raise DecodeError(path, at + e.start, f"not {encoding}: {e.reason}") from None
    if code == 0xA8:
        return map_of(data, at, end, path)
    if code == 0xAA:
        return array_of(data, at, end, path)
    if code == 0x48:
        if end - at < 16:
            raise short(path, at, end, 16)
        return uuid.UUID(bytes=data[at : at + 16]), at + 16
    if code == 0xF0:
        return None, at
    name = TYPE_CODES.get(code)
    if name is None:
        raise DecodeError(f"{path}.type", at - 1, f"unknown type code 0x{code:02x}")
    raise DecodeError(path, at - 1, f"a {name} value is not in this floor")


def map_of(data: bytes, at: int, end: int, path: str) -> tuple[dict[str, Typed], int]:
    if end - at < 4:
        raise short(path, at, end, 4)
    (size,) = U32.unpack_from(data, at)
    at += 4
    if size > end - at:
        raise DecodeError(path, at - 4, f"size {size} but {end - at} bytes left")
    limit = at + size
    if limit - at < 4:
        raise short(f"{path}.count", at, limit, 4)
    (count,) = U32.unpack_from(data, at)
    at += 4
    out: dict[str, Typed] = {}
    for _ in range(count):
        key_at = at
        key, at = str8(data, at, limit, f"{path}.key")
        if key in out:
            raise DecodeError(f"{path}[{key!r}]", key_at, "the key appears twice")
        if at >= limit:
            raise short(f"{path}[{key!r}].type", at, limit, 1)
        code = data[at]
        if code not in TYPE_CODES:
            raise DecodeError(f"{path}[{key!r}].type", at, f"unknown type code 0x{code:02x}")
        value, at = value_of(code, data, at + 1, limit, f"{path}[{key!r}]")
        out[key] = Typed(TYPE_CODES[code], value)
    if at != limit:
        raise DecodeError(path, at, f"{limit - at} bytes after the {count} entries")
    return out, at


def array_of(data: bytes, at: int, end: int, path: str) -> tuple[Array, int]:
    if end - at < 4:
        raise short(path, at, end, 4)
    (size,) = U32.unpack_from(data, at)
    at += 4
    if size > end - at:
        raise DecodeError(path, at - 4, f"size {size} but {end - at} bytes left")
    limit = at + size
    if limit - at < 5:
        raise short(f"{path}.type", at, limit, 5)
    code = data[at]
    if code not in TYPE_CODES:
        raise DecodeError(f"{path}.type", at, f"unknown type code 0x{code:02x}")
    (count,) = U32.unpack_from(data, at + 1)
    at += 5
    items = []
    for i in range(count):
        item, at = value_of(code, data, at, limit, f"{path}[{i}]")
        items.append(item)
    if at != limit:
        raise DecodeError(path, at, f"{limit - at} bytes after the {count} values")
    return Array(TYPE_CODES[code], items), at


def session_header(data: bytes, at: int, end: int, path: str) -> tuple[SessionHeader, int]:
    if at >= end:
        raise short(path, at, end, 1)
    size = data[at]
    at += 1
    if size > end - at:
        raise DecodeError(path, at - 1, f"size {size} but {end - at} bytes left")
    if size < 1:
        raise short(f"{path}.packing_flags", at, at, 1)
    flags = data[at]
    if flags & 0xFE:
        raise DecodeError(f"{path}.packing_flags", at, f"flags 0x{flags:x} name no field")
    if size != 1:
        raise DecodeError(path, at + 1, f"{size - 1} bytes after the struct's fields")
    return SessionHeader(sync=flags == 1), at + 1


def method_start(data: bytes, codes: bytes, known: int, path: str, command: bool) -> Any:
    end = len(data)
    if end < 2:
        raise short("command.code", 0, end, 2)
    if data[0] != codes[0] or data[1] != codes[1]:
        raise DecodeError("command.code", 0, f"codes {data[0]}, {data[1]}: not {path}")
    at = 2
    sh = None
    if command:
        sh, at = session_header(data, at, end, f"{path}.session_header")
    if end - at < 2:
        raise short(f"{path}.packing_flags", at, end, 2)
    (flags,) = FLAGS2.unpack_from(data, at)
    if flags & ~known:
        raise DecodeError(f"{path}.packing_flags", at, f"flags 0x{flags:x} name no field")
    return sh, flags, at + 2, end


def trailing(path: str, at: int, end: int) -> None:
    if at != end:
        raise DecodeError(path, at, f"{end - at} bytes after the fields")


def decode_transfer(data: bytes) -> MessageTransfer:
    sh, flags, at, end = method_start(data, b"\x04\x01", 0x7, "MessageTransfer", True)
    destination = accept = acquire = None
    if flags & 1:
        destination, at = str8(data, at, end, "MessageTransfer.destination")
    if flags & 2:
        v = u8(data, at, end, "MessageTransfer.accept_mode")
        accept = ACCEPT.get(v, v)
        at += 1
    if flags & 4:
        v = u8(data, at, end, "MessageTransfer.acquire_mode")
        acquire = ACQUIRE.get(v, v)
        at += 1
    trailing("MessageTransfer", at, end)
    return MessageTransfer(
        session_header=sh, destination=destination, accept_mode=accept, acquire_mode=acquire
    )


def decode_sync(data: bytes) -> ExecutionSync:
    sh, flags, at, end = method_start(data, b"\x03\x01", 0x0, "ExecutionSync", True)
    trailing("ExecutionSync", at, end)
    return ExecutionSync(session_header=sh)


def decode_declare(data: bytes) -> QueueDeclare:
    sh, flags, at, end = method_start(data, b"\x08\x01", 0x7F, "QueueDeclare", True)
    queue = alternate = arguments = None
    if flags & 1:
        queue, at = str8(data, at, end, "QueueDeclare.queue")
    if flags & 2:
        alternate, at = str8(data, at, end, "QueueDeclare.alternate_exchange")
    if flags & 0x40:
        arguments, at = map_of(data, at, end, "QueueDeclare.arguments")
    trailing("QueueDeclare", at, end)
    return QueueDeclare(
        session_header=sh,
        queue=queue,
        alternate_exchange=alternate,
        passive=bool(flags & 4),
        durable=bool(flags & 8),
        exclusive=bool(flags & 0x10),
        auto_delete=bool(flags & 0x20),
        arguments=arguments,
    )


def decode_completed(data: bytes) -> SessionCompleted:
    _, flags, at, end = method_start(data, b"\x02\x0a", 0x3, "SessionCompleted", False)
    commands = None
    if flags & 1:
        path = "SessionCompleted.commands"
        if end - at < 2:
            raise short(path, at, end, 2)
        (n,) = U16.unpack_from(data, at)
        at += 2
        if n > end - at:
            raise DecodeError(path, at - 2, f"size {n} but {end - at} bytes left")
        if n % 8:
            raise DecodeError(path, at - 2, f"size {n} is no multiple of 8")
        commands = list(PAIR.iter_unpack(data[at : at + n]))
        at += n
    trailing("SessionCompleted", at, end)
    return SessionCompleted(commands=commands, timely_reply=bool(flags & 2))


def decode_start(data: bytes) -> ConnectionStart:
    _, flags, at, end = method_start(data, b"\x01\x01", 0x7, "ConnectionStart", False)
    props = mechanisms = locales = None
    if flags & 1:
        props, at = map_of(data, at, end, "ConnectionStart.server_properties")
    if flags & 2:
        mechanisms, at = array_of(data, at, end, "ConnectionStart.mechanisms")
    if flags & 4:
        locales, at = array_of(data, at, end, "ConnectionStart.locales")
    trailing("ConnectionStart", at, end)
    return ConnectionStart(server_properties=props, mechanisms=mechanisms, locales=locales)


def struct_start(data: bytes, at: int, end: int, path: str) -> tuple[int, int, int, int]:
    """A coded struct's size, codes and packing flags: (class code, code, flags, at, limit)."""
    if end - at < 4:
        raise short(path, at, end, 4)
    (size,) = U32.unpack_from(data, at)
    at += 4
    if size > end - at:
        raise DecodeError(path, at - 4, f"size {size} but {end - at} bytes left")
    if size < 4:
        raise short(path, at, at + size, 4)
    return data[at] << 8 | data[at + 1], FLAGS2.unpack_from(data, at + 2)[0], at + 4, at + size


def delivery_properties(
    data: bytes, flags: int, at: int, end: int
) -> tuple[MessageDeliveryProperties, int]:
    p = "MessageDeliveryProperties"
    if flags & ~0xFFF:
        raise DecodeError(f"{p}.packing_flags", at - 2, f"flags 0x{flags:x} name no field")
    priority = mode = ttl = timestamp = expiration = exchange = key = resume_id = resume_ttl = None
    if flags & 0x8:
        v = u8(data, at, end, f"{p}.priority")
        priority = PRIORITY.get(v, v)
        at += 1
    if flags & 0x10:
        v = u8(data, at, end, f"{p}.delivery_mode")
        mode = DMODE.get(v, v)
        at += 1
    if flags & 0x20:
        ttl = u64(data, at, end, f"{p}.ttl")
        at += 8
    if flags & 0x40:
        timestamp = u64(data, at, end, f"{p}.timestamp")
        at += 8
    if flags & 0x80:
        expiration = u64(data, at, end, f"{p}.expiration")
        at += 8
    if flags & 0x100:
        exchange, at = str8(data, at, end, f"{p}.exchange")
    if flags & 0x200:
        key, at = str8(data, at, end, f"{p}.routing_key")
    if flags & 0x400:
        resume_id, at = str16(data, at, end, f"{p}.resume_id")
    if flags & 0x800:
        resume_ttl = u64(data, at, end, f"{p}.resume_ttl")
        at += 8
    value = MessageDeliveryProperties(
        discard_unroutable=bool(flags & 1),
        immediate=bool(flags & 2),
        redelivered=bool(flags & 4),
        priority=priority,
        delivery_mode=mode,
        ttl=ttl,
        timestamp=timestamp,
        expiration=expiration,
        exchange=exchange,
        routing_key=key,
        resume_id=resume_id,
        resume_ttl=resume_ttl,
    )
    return value, at


def message_properties(data: bytes, flags: int, at: int, end: int) -> tuple[MessageProperties, int]:
    p = "MessageProperties"
    if flags & ~0x1FF:
        raise DecodeError(f"{p}.packing_flags", at - 2, f"flags 0x{flags:x} name no field")
    length = message_id = correlation = reply_to = ctype = cenc = user = app = headers = None
    if flags & 0x1:
        length = u64(data, at, end, f"{p}.content_length")
        at += 8
    if flags & 0x2:
        if end - at < 16:
            raise short(f"{p}.message_id", at, end, 16)
        message_id = uuid.UUID(bytes=data[at : at + 16])
        at += 16
    if flags & 0x4:
        correlation, at = vbin16(data, at, end, f"{p}.correlation_id")
    if flags & 0x8:  # a struct the sample never carries
        raise DecodeError(f"{p}.reply_to", at, "a reply-to is not in this floor")
    if flags & 0x10:
        ctype, at = str8(data, at, end, f"{p}.content_type")
    if flags & 0x20:
        cenc, at = str8(data, at, end, f"{p}.content_encoding")
    if flags & 0x40:
        user, at = vbin16(data, at, end, f"{p}.user_id")
    if flags & 0x80:
        app, at = vbin16(data, at, end, f"{p}.app_id")
    if flags & 0x100:
        headers, at = map_of(data, at, end, f"{p}.application_headers")
    value = MessageProperties(
        content_length=length,
        message_id=message_id,
        correlation_id=correlation,
        reply_to=reply_to,
        content_type=ctype,
        content_encoding=cenc,
        user_id=user,
        app_id=app,
        application_headers=headers,
    )
    return value, at


def decode_header(data: bytes) -> list[Any]:
    end = len(data)
    at = 0
    out: list[Any] = []
    while at < end:
        path = f"header[{len(out)}]"
        codes, flags, at, limit = struct_start(data, at, end, path)
        if codes == 0x0401:
            value, at = delivery_properties(data, flags, at, limit)
        elif codes == 0x0403:
            value, at = message_properties(data, flags, at, limit)
        else:  # fragment-properties and the rest: the sample carries none
            raise DecodeError(path, at - 4, f"struct {codes:#06x} is not in this floor")
        if at != limit:
            raise DecodeError(path, at, f"{limit - at} bytes after the struct's fields")
        out.append(value)
    return out


def decode_body_frame(data: bytes) -> Frame:
    n = len(data)
    if n == 8 and data[:4] == b"AMQP":
        raise DecodeError("frame", 0, "a protocol header, not the body frame measured here")
    if n < 12:
        raise short("frame.header", 0, n, 12)
    flags, type_, size, reserved, track, channel, reserved2 = FRAME.unpack_from(data)
    if flags & 0xF0:
        raise DecodeError("frame.flags", 0, f"flags 0x{flags:02x}: the top 4 bits must be 0")
    if size < 12:
        raise DecodeError("frame.size", 2, f"size {size} is less than the 12-octet header")
    if reserved or track & 0xF0 or reserved2:
        raise DecodeError("frame.reserved", 4, "reserved bits must be 0")
    if size != n:
        raise DecodeError("frame.size", 2, f"size {size} but {n} bytes")
    return Frame(
        type=SEGTYPE.get(type_, type_),
        payload=data[12:],
        track=TRACK.get(track, track),
        channel=channel,
        first_segment=bool(flags & 8),
        last_segment=bool(flags & 4),
        first_frame=bool(flags & 2),
        last_frame=bool(flags & 1),
    )


# --- encoders -------------------------------------------------------------------------------


def bad(path: str, value: object, what: str) -> EncodeError:
    return EncodeError(path, f"{value!r} is not {what}")


def w_str8(out: bytearray, value: Any, path: str) -> None:
    if type(value) is not str:
        raise bad(path, value, "a str")
    b = value.encode()
    if len(b) > 255:
        raise EncodeError(path, f"{len(b)} octets do not fit a 1-octet size")
    out.append(len(b))
    out += b


def w_str16(out: bytearray, value: Any, path: str) -> None:
    if type(value) is not str:
        raise bad(path, value, "a str")
    b = value.encode()
    if len(b) > 0xFFFF:
        raise EncodeError(path, f"{len(b)} octets do not fit a 2-octet size")
    out += U16.pack(len(b))
    out += b


def w_vbin16(out: bytearray, value: Any, path: str) -> None:
    if not isinstance(value, bytes | bytearray):
        raise bad(path, value, "bytes")
    if len(value) > 0xFFFF:
        raise EncodeError(path, f"{len(value)} bytes do not fit a 2-octet size")
    out += U16.pack(len(value))
    out += value


def w_u8(out: bytearray, value: Any, path: str) -> None:
    if type(value) is bool or not isinstance(value, int) or not 0 <= value <= 0xFF:
        raise bad(path, value, "a uint8")
    out.append(value)


def w_u64(out: bytearray, value: Any, path: str) -> None:
    if type(value) is bool or not isinstance(value, int) or not 0 <= value <= 0xFFFFFFFFFFFFFFFF:
        raise bad(path, value, "a uint64")
    out += U64.pack(value)


def w_bool(value: Any, path: str) -> bool:
    if type(value) is not bool:
        raise bad(path, value, "a bool")
    return value


TYPE_INFO = {name: code for code, name in TYPE_CODES.items()}
FIXED_BY_NAME = {name: (code, st) for code, (name, st, _) in FIXED.items() if st is not None}
SIZED_BY_NAME = {name: (code, width, enc) for code, (name, width, enc) in SIZED.items()}


def w_value(out: bytearray, name: str, value: Any, path: str) -> None:
    fixed = FIXED_BY_NAME.get(name)
    if fixed is not None:
        if type(value) is bool or not isinstance(value, int | float):
            raise bad(path, value, f"a {name}")
        try:
            out += fixed[1].pack(value)
        except (struct.error, OverflowError):
            raise bad(path, value, f"a {name}") from None
        return
    sized = SIZED_BY_NAME.get(name)
    if sized is not None:
        _, width, enc = sized
        if enc is None:
            if not isinstance(value, bytes | bytearray):
                raise bad(path, value, "bytes")
            b = bytes(value)
        else:
            if type(value) is not str:
                raise bad(path, value, "a str")
            try:
                b = value.encode(enc)
            except UnicodeEncodeError:
                raise bad(path, value, f"{enc} text") from None
        if len(b) >= 1 << (8 * width):
            raise EncodeError(path, f"{len(b)} octets do not fit a {width}-octet size")
        out += len(b).to_bytes(width)
        out += b
        return
    if name == "map":
        w_map(out, value, path)
    elif name == "array":
        w_array(out, value, path)
    else:
        raise EncodeError(path, f"a {name} value is not in this floor")


def w_map(out: bytearray, value: Any, path: str) -> None:
    if type(value) is not dict:
        raise bad(path, value, "a dict of str to Typed")
    start = len(out)
    out += U32.pack(0) + U32.pack(len(value))
    for key, item in value.items():
        w_str8(out, key, f"{path}.key")
        if type(item) is not Typed:
            raise bad(f"{path}[{key!r}]", item, "a Typed value")
        code = TYPE_INFO.get(item.type)
        if code is None:
            raise EncodeError(f"{path}[{key!r}].type", f"{item.type!r} is no type with a code")
        out.append(code)
        w_value(out, item.type, item.value, f"{path}[{key!r}]")
    size = len(out) - start - 4
    if size > 0xFFFFFFFF:
        raise EncodeError(path, f"{size} octets do not fit a 4-octet size")
    U32.pack_into(out, start, size)


def w_array(out: bytearray, value: Any, path: str) -> None:
    if type(value) is not Array:
        raise bad(path, value, "an Array")
    code = TYPE_INFO.get(value.type)
    if code is None:
        raise EncodeError(f"{path}.type", f"{value.type!r} is no type with a code")
    start = len(out)
    out += U32.pack(0)
    out.append(code)
    out += U32.pack(len(value.values))
    for i, item in enumerate(value.values):
        w_value(out, value.type, item, f"{path}[{i}]")
    U32.pack_into(out, start, len(out) - start - 4)


def w_session_header(out: bytearray, sh: Any, path: str) -> None:
    if type(sh) is not SessionHeader:
        raise bad(path, sh, "a SessionHeader")
    out += b"\x01\x01" if w_bool(sh.sync, f"{path}.sync") else b"\x01\x00"


def encode_transfer(m: MessageTransfer) -> bytes:
    out = bytearray(b"\x04\x01")
    w_session_header(out, m.session_header, "MessageTransfer.session_header")
    out += b"\0\0"
    flags = 0
    if m.destination is not None:
        flags |= 1
        w_str8(out, m.destination, "MessageTransfer.destination")
    if m.accept_mode is not None:
        flags |= 2
        w_u8(out, m.accept_mode, "MessageTransfer.accept_mode")
    if m.acquire_mode is not None:
        flags |= 4
        w_u8(out, m.acquire_mode, "MessageTransfer.acquire_mode")
    out[4] = flags
    return bytes(out)


def encode_sync(m: ExecutionSync) -> bytes:
    out = bytearray(b"\x03\x01")
    w_session_header(out, m.session_header, "ExecutionSync.session_header")
    out += b"\0\0"
    return bytes(out)


def encode_declare(m: QueueDeclare) -> bytes:
    p = "QueueDeclare"
    out = bytearray(b"\x08\x01")
    w_session_header(out, m.session_header, f"{p}.session_header")
    out += b"\0\0"
    flags = 0
    if m.queue is not None:
        flags |= 1
        w_str8(out, m.queue, f"{p}.queue")
    if m.alternate_exchange is not None:
        flags |= 2
        w_str8(out, m.alternate_exchange, f"{p}.alternate_exchange")
    if w_bool(m.passive, f"{p}.passive"):
        flags |= 4
    if w_bool(m.durable, f"{p}.durable"):
        flags |= 8
    if w_bool(m.exclusive, f"{p}.exclusive"):
        flags |= 0x10
    if w_bool(m.auto_delete, f"{p}.auto_delete"):
        flags |= 0x20
    if m.arguments is not None:
        flags |= 0x40
        w_map(out, m.arguments, f"{p}.arguments")
    out[4] = flags
    return bytes(out)


def encode_completed(m: SessionCompleted) -> bytes:
    p = "SessionCompleted"
    out = bytearray(b"\x02\x0a\0\0")
    flags = 0
    if m.commands is not None:
        flags |= 1
        if type(m.commands) is not list:
            raise bad(f"{p}.commands", m.commands, "a list of (lower, upper) pairs")
        if len(m.commands) * 8 > 0xFFFF:
            raise EncodeError(f"{p}.commands", "too many pairs for a 2-octet size")
        out += U16.pack(len(m.commands) * 8)
        for pair in m.commands:
            try:
                out += PAIR.pack(*pair)
            except (struct.error, TypeError):
                raise bad(f"{p}.commands", pair, "a (lower, upper) pair") from None
    if w_bool(m.timely_reply, f"{p}.timely_reply"):
        flags |= 2
    out[2] = flags
    return bytes(out)


def encode_start(m: ConnectionStart) -> bytes:
    p = "ConnectionStart"
    out = bytearray(b"\x01\x01\0\0")
    flags = 0
    if m.server_properties is not None:
        flags |= 1
        w_map(out, m.server_properties, f"{p}.server_properties")
    if m.mechanisms is not None:
        flags |= 2
        w_array(out, m.mechanisms, f"{p}.mechanisms")
    if m.locales is not None:
        flags |= 4
        w_array(out, m.locales, f"{p}.locales")
    out[2] = flags
    return bytes(out)


def enc_delivery(out: bytearray, v: Any) -> None:
    p = "MessageDeliveryProperties"
    start = len(out)
    out += b"\0\0\0\0\x04\x01\0\0"
    flags = 0
    if w_bool(v.discard_unroutable, f"{p}.discard_unroutable"):
        flags |= 1
    if w_bool(v.immediate, f"{p}.immediate"):
        flags |= 2
    if w_bool(v.redelivered, f"{p}.redelivered"):
        flags |= 4
    if v.priority is not None:
        flags |= 8
        w_u8(out, v.priority, f"{p}.priority")
    if v.delivery_mode is not None:
        flags |= 0x10
        w_u8(out, v.delivery_mode, f"{p}.delivery_mode")
    if v.ttl is not None:
        flags |= 0x20
        w_u64(out, v.ttl, f"{p}.ttl")
    if v.timestamp is not None:
        flags |= 0x40
        w_u64(out, v.timestamp, f"{p}.timestamp")
    if v.expiration is not None:
        flags |= 0x80
        w_u64(out, v.expiration, f"{p}.expiration")
    if v.exchange is not None:
        flags |= 0x100
        w_str8(out, v.exchange, f"{p}.exchange")
    if v.routing_key is not None:
        flags |= 0x200
        w_str8(out, v.routing_key, f"{p}.routing_key")
    if v.resume_id is not None:
        flags |= 0x400
        w_str16(out, v.resume_id, f"{p}.resume_id")
    if v.resume_ttl is not None:
        flags |= 0x800
        w_u64(out, v.resume_ttl, f"{p}.resume_ttl")
    FLAGS2.pack_into(out, start + 6, flags)
    U32.pack_into(out, start, len(out) - start - 4)


def enc_properties(out: bytearray, v: Any) -> None:
    p = "MessageProperties"
    start = len(out)
    out += b"\0\0\0\0\x04\x03\0\0"
    flags = 0
    if v.content_length is not None:
        flags |= 1
        w_u64(out, v.content_length, f"{p}.content_length")
    if v.message_id is not None:
        flags |= 2
        if type(v.message_id) is not uuid.UUID:
            raise bad(f"{p}.message_id", v.message_id, "a uuid.UUID")
        out += v.message_id.bytes
    if v.correlation_id is not None:
        flags |= 4
        w_vbin16(out, v.correlation_id, f"{p}.correlation_id")
    if v.reply_to is not None:
        flags |= 8
        raise EncodeError(f"{p}.reply_to", "a reply-to is not in this floor")
    if v.content_type is not None:
        flags |= 0x10
        w_str8(out, v.content_type, f"{p}.content_type")
    if v.content_encoding is not None:
        flags |= 0x20
        w_str8(out, v.content_encoding, f"{p}.content_encoding")
    if v.user_id is not None:
        flags |= 0x40
        w_vbin16(out, v.user_id, f"{p}.user_id")
    if v.app_id is not None:
        flags |= 0x80
        w_vbin16(out, v.app_id, f"{p}.app_id")
    if v.application_headers is not None:
        flags |= 0x100
        w_map(out, v.application_headers, f"{p}.application_headers")
    FLAGS2.pack_into(out, start + 6, flags)
    U32.pack_into(out, start, len(out) - start - 4)


def encode_header(entries: list[Any]) -> bytes:
    out = bytearray()
    for i, entry in enumerate(entries):
        if type(entry) is MessageDeliveryProperties:
            enc_delivery(out, entry)
        elif type(entry) is MessageProperties:
            enc_properties(out, entry)
        else:
            raise bad(f"header[{i}]", entry, "a struct of this floor")
    return bytes(out)


def encode_body_frame(f: Frame) -> bytes:
    size = 12 + len(f.payload)
    if size > 0xFFFF:
        raise EncodeError("frame.size", f"{size} octets do not fit the 16-bit size")
    if not 0 <= f.type <= 0xFF:
        raise EncodeError("frame.type", f"{f.type} is not an octet")
    if not 0 <= f.track <= 0x0F:
        raise EncodeError("frame.track", f"{f.track} does not fit 4 bits")
    if not 0 <= f.channel <= 0xFFFF:
        raise EncodeError("frame.channel", f"{f.channel} is not a uint16")
    flags = (
        (8 if f.first_segment else 0)
        | (4 if f.last_segment else 0)
        | (2 if f.first_frame else 0)
        | (1 if f.last_frame else 0)
    )
    return FRAME.pack(flags, f.type, size, 0, f.track, f.channel, 0) + bytes(f.payload)
