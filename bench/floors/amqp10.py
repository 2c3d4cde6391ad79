"""The floor of bench/amqp10.py: AMQP 1.0, hand-written for exactly the four frames it times.

What a careful programmer would write for these frames with precompiled `struct.Struct`s and
classes of its own: a `__slots__` class per performative, source, target and message section
(the generated class's name and fields, a plain `__init__`, and `_wire`, the encodings seen,
as the generated classes keep them), `Frame` and `Message` as the generated ones are, and the
value types these frames hold (`UInt`, `Symbol`, `Array`...), named as the generated ones are.

  decode  the 8-byte header (size against the bytes, doff, frame type), the descriptor (a
          smallulong code), the list's constructor, size and count (the count against the
          fields and the bytes, the size against the buffer), every field's constructor against
          the field's type (null allowed), every length against the bytes left, utf-8 and ascii
          of strings and symbols, mandatory fields, no bytes after the last field; the classes
          called with positional arguments, and the encodings seen kept on each (`_wire`, in the
          generated code's shape, so that the two can be compared). A fault raises this
          module's DecodeError (field and offset). Values nested in maps and arrays are read by
          one small reader of the constructors these frames hold; any other is refused.
  encode  the same objects to the smallest encodings (the generated encoder's choice for an
          object never decoded): trailing null fields left off, list8 or list32 by size.

`bench/amqp10.py` checks, before timing, that the floor decodes every codec's bytes to objects
that agree with the generated decoder's field by field (`_wire` included) and encodes to
specgen's bytes.
"""

from __future__ import annotations

import struct
from operator import attrgetter
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


# ---- the value types these frames hold, named as the generated ones


class UByte(int):
    __slots__ = ()


class UShort(int):
    __slots__ = ()


class UInt(int):
    __slots__ = ()


class ULong(int):
    __slots__ = ()


class Int(int):
    __slots__ = ()


class Timestamp(int):
    __slots__ = ()


class Symbol(str):
    __slots__ = ()


class Array(list[Any]):
    """Values of one type (`type`, an AMQP type name); `descriptor` when described."""

    __slots__ = ("type", "descriptor")

    def __init__(self, items: Any = (), type: str = "null", descriptor: Any = None) -> None:
        super().__init__(items)
        self.type = type
        self.descriptor = descriptor


# ---- the classes: the generated ones' names and fields, and `_wire`


class Open:
    __slots__ = (
        "container_id",
        "hostname",
        "max_frame_size",
        "channel_max",
        "idle_time_out",
        "outgoing_locales",
        "incoming_locales",
        "offered_capabilities",
        "desired_capabilities",
        "properties",
        "_wire",
    )

    def __init__(
        self,
        container_id: str | None = None,
        hostname: str | None = None,
        max_frame_size: int | None = None,
        channel_max: int | None = None,
        idle_time_out: int | None = None,
        outgoing_locales: list[str] | None = None,
        incoming_locales: list[str] | None = None,
        offered_capabilities: list[str] | None = None,
        desired_capabilities: list[str] | None = None,
        properties: dict[Any, Any] | None = None,
    ) -> None:
        self.container_id = container_id
        self.hostname = hostname
        self.max_frame_size = max_frame_size
        self.channel_max = channel_max
        self.idle_time_out = idle_time_out
        self.outgoing_locales = outgoing_locales
        self.incoming_locales = incoming_locales
        self.offered_capabilities = offered_capabilities
        self.desired_capabilities = desired_capabilities
        self.properties = properties
        self._wire: Any = None


class Source:
    __slots__ = (
        "address",
        "durable",
        "expiry_policy",
        "timeout",
        "dynamic",
        "dynamic_node_properties",
        "distribution_mode",
        "filter",
        "default_outcome",
        "outcomes",
        "capabilities",
        "_wire",
    )

    def __init__(
        self,
        address: Any = None,
        durable: int | None = None,
        expiry_policy: str | None = None,
        timeout: int | None = None,
        dynamic: bool | None = None,
        dynamic_node_properties: dict[Any, Any] | None = None,
        distribution_mode: str | None = None,
        filter: dict[Any, Any] | None = None,
        default_outcome: Any = None,
        outcomes: list[str] | None = None,
        capabilities: list[str] | None = None,
    ) -> None:
        self.address = address
        self.durable = durable
        self.expiry_policy = expiry_policy
        self.timeout = timeout
        self.dynamic = dynamic
        self.dynamic_node_properties = dynamic_node_properties
        self.distribution_mode = distribution_mode
        self.filter = filter
        self.default_outcome = default_outcome
        self.outcomes = outcomes
        self.capabilities = capabilities
        self._wire: Any = None


class Target:
    __slots__ = (
        "address",
        "durable",
        "expiry_policy",
        "timeout",
        "dynamic",
        "dynamic_node_properties",
        "capabilities",
        "_wire",
    )

    def __init__(
        self,
        address: Any = None,
        durable: int | None = None,
        expiry_policy: str | None = None,
        timeout: int | None = None,
        dynamic: bool | None = None,
        dynamic_node_properties: dict[Any, Any] | None = None,
        capabilities: list[str] | None = None,
    ) -> None:
        self.address = address
        self.durable = durable
        self.expiry_policy = expiry_policy
        self.timeout = timeout
        self.dynamic = dynamic
        self.dynamic_node_properties = dynamic_node_properties
        self.capabilities = capabilities
        self._wire: Any = None


class Attach:
    __slots__ = (
        "name",
        "handle",
        "role",
        "snd_settle_mode",
        "rcv_settle_mode",
        "source",
        "target",
        "unsettled",
        "incomplete_unsettled",
        "initial_delivery_count",
        "max_message_size",
        "offered_capabilities",
        "desired_capabilities",
        "properties",
        "_wire",
    )

    def __init__(
        self,
        name: str | None = None,
        handle: int | None = None,
        role: bool | None = None,
        snd_settle_mode: int | None = None,
        rcv_settle_mode: int | None = None,
        source: Source | None = None,
        target: Target | None = None,
        unsettled: dict[Any, Any] | None = None,
        incomplete_unsettled: bool | None = None,
        initial_delivery_count: int | None = None,
        max_message_size: int | None = None,
        offered_capabilities: list[str] | None = None,
        desired_capabilities: list[str] | None = None,
        properties: dict[Any, Any] | None = None,
    ) -> None:
        self.name = name
        self.handle = handle
        self.role = role
        self.snd_settle_mode = snd_settle_mode
        self.rcv_settle_mode = rcv_settle_mode
        self.source = source
        self.target = target
        self.unsettled = unsettled
        self.incomplete_unsettled = incomplete_unsettled
        self.initial_delivery_count = initial_delivery_count
        self.max_message_size = max_message_size
        self.offered_capabilities = offered_capabilities
        self.desired_capabilities = desired_capabilities
        self.properties = properties
        self._wire: Any = None


class Transfer:
    __slots__ = (
        "handle",
        "delivery_id",
        "delivery_tag",
        "message_format",
        "settled",
        "more",
        "rcv_settle_mode",
        "state",
        "resume",
        "aborted",
        "batchable",
        "_wire",
    )

    def __init__(
        self,
        handle: int | None = None,
        delivery_id: int | None = None,
        delivery_tag: bytes | None = None,
        message_format: int | None = None,
        settled: bool | None = None,
        more: bool | None = None,
        rcv_settle_mode: int | None = None,
        state: Any = None,
        resume: bool | None = None,
        aborted: bool | None = None,
        batchable: bool | None = None,
    ) -> None:
        self.handle = handle
        self.delivery_id = delivery_id
        self.delivery_tag = delivery_tag
        self.message_format = message_format
        self.settled = settled
        self.more = more
        self.rcv_settle_mode = rcv_settle_mode
        self.state = state
        self.resume = resume
        self.aborted = aborted
        self.batchable = batchable
        self._wire: Any = None


class Header:
    __slots__ = ("durable", "priority", "ttl", "first_acquirer", "delivery_count", "_wire")

    def __init__(
        self,
        durable: bool | None = None,
        priority: int | None = None,
        ttl: int | None = None,
        first_acquirer: bool | None = None,
        delivery_count: int | None = None,
    ) -> None:
        self.durable = durable
        self.priority = priority
        self.ttl = ttl
        self.first_acquirer = first_acquirer
        self.delivery_count = delivery_count
        self._wire: Any = None


class Properties:
    __slots__ = (
        "message_id",
        "user_id",
        "to",
        "subject",
        "reply_to",
        "correlation_id",
        "content_type",
        "content_encoding",
        "absolute_expiry_time",
        "creation_time",
        "group_id",
        "group_sequence",
        "reply_to_group_id",
        "_wire",
    )

    def __init__(
        self,
        message_id: Any = None,
        user_id: bytes | None = None,
        to: Any = None,
        subject: str | None = None,
        reply_to: Any = None,
        correlation_id: Any = None,
        content_type: str | None = None,
        content_encoding: str | None = None,
        absolute_expiry_time: int | None = None,
        creation_time: int | None = None,
        group_id: str | None = None,
        group_sequence: int | None = None,
        reply_to_group_id: str | None = None,
    ) -> None:
        self.message_id = message_id
        self.user_id = user_id
        self.to = to
        self.subject = subject
        self.reply_to = reply_to
        self.correlation_id = correlation_id
        self.content_type = content_type
        self.content_encoding = content_encoding
        self.absolute_expiry_time = absolute_expiry_time
        self.creation_time = creation_time
        self.group_id = group_id
        self.group_sequence = group_sequence
        self.reply_to_group_id = reply_to_group_id
        self._wire: Any = None


class ApplicationProperties:
    __slots__ = ("value", "_wire")

    def __init__(self, value: dict[Any, Any] | None = None) -> None:
        self.value = value
        self._wire: Any = None


class Data:
    __slots__ = ("value", "_wire")

    def __init__(self, value: bytes | None = None) -> None:
        self.value = value
        self._wire: Any = None


class Frame:
    """One frame: type, channel, the performative (`body`), the payload after it, and the
    extended header."""

    __slots__ = ("type", "channel", "body", "payload", "extended")

    def __init__(
        self,
        type: int = 0,
        channel: int = 0,
        body: Any = None,
        payload: bytes = b"",
        extended: bytes = b"",
    ) -> None:
        self.type = type
        self.channel = channel
        self.body = body
        self.payload = payload
        self.extended = extended


class Message:
    """A message as its sections, in the spec's order."""

    __slots__ = (
        "header",
        "delivery_annotations",
        "message_annotations",
        "properties",
        "application_properties",
        "body",
        "footer",
    )

    def __init__(self) -> None:
        self.header: Header | None = None
        self.delivery_annotations: Any = None
        self.message_annotations: Any = None
        self.properties: Properties | None = None
        self.application_properties: ApplicationProperties | None = None
        self.body: list[Data] | None = None
        self.footer: Any = None


HEAD = struct.Struct(">IBBH")
U8X2 = struct.Struct(">BB")
U32 = struct.Struct(">I")
U32X2 = struct.Struct(">II")
U64 = struct.Struct(">Q")
I32 = struct.Struct(">i")
I64 = struct.Struct(">q")
U16 = struct.Struct(">H")


def _short(name: str, at: int) -> DecodeError:
    return DecodeError(name, at, "runs past the end")


def _bad(name: str, at: int, code: int) -> DecodeError:
    return DecodeError(name, at, f"format code {code:#04x} is not of the field's type")


# ---- field readers: (value, next position, format code); each checks its constructor


def r_uint(b: bytes, p: int, stop: int, name: str) -> tuple[Any, int, int]:
    code = b[p]
    if code == 0x52:
        if p + 2 > stop:
            raise _short(name, p)
        return UInt(b[p + 1]), p + 2, code
    if code == 0x43:
        return UInt(0), p + 1, code
    if code == 0x70:
        if p + 5 > stop:
            raise _short(name, p)
        return UInt(U32.unpack_from(b, p + 1)[0]), p + 5, code
    if code == 0x40:
        return None, p + 1, code
    raise _bad(name, p, code)


def r_ulong(b: bytes, p: int, stop: int, name: str) -> tuple[Any, int, int]:
    code = b[p]
    if code == 0x53:
        if p + 2 > stop:
            raise _short(name, p)
        return ULong(b[p + 1]), p + 2, code
    if code == 0x44:
        return ULong(0), p + 1, code
    if code == 0x80:
        if p + 9 > stop:
            raise _short(name, p)
        return ULong(U64.unpack_from(b, p + 1)[0]), p + 9, code
    if code == 0x40:
        return None, p + 1, code
    raise _bad(name, p, code)


def r_ushort(b: bytes, p: int, stop: int, name: str) -> tuple[Any, int, int]:
    code = b[p]
    if code == 0x60:
        if p + 3 > stop:
            raise _short(name, p)
        return UShort(U16.unpack_from(b, p + 1)[0]), p + 3, code
    if code == 0x40:
        return None, p + 1, code
    raise _bad(name, p, code)


def r_ubyte(b: bytes, p: int, stop: int, name: str) -> tuple[Any, int, int]:
    code = b[p]
    if code == 0x50:
        if p + 2 > stop:
            raise _short(name, p)
        return UByte(b[p + 1]), p + 2, code
    if code == 0x40:
        return None, p + 1, code
    raise _bad(name, p, code)


def r_bool(b: bytes, p: int, stop: int, name: str) -> tuple[Any, int, int]:
    code = b[p]
    if code == 0x41:
        return True, p + 1, code
    if code == 0x42:
        return False, p + 1, code
    if code == 0x56:
        if p + 2 > stop:
            raise _short(name, p)
        v = b[p + 1]
        if v > 1:
            raise DecodeError(name, p + 1, f"{v} is neither 0 (false) nor 1 (true)")
        return v == 1, p + 2, code
    if code == 0x40:
        return None, p + 1, code
    raise _bad(name, p, code)


def _var(b: bytes, p: int, stop: int, name: str, code: int) -> tuple[int, int]:
    """(start, end) of a variable-width value whose constructor is at `p`: width by its code."""
    if code < 0xB0:
        if p + 2 > stop:
            raise _short(name, p)
        start = p + 2
        end = start + b[p + 1]
    else:
        if p + 5 > stop:
            raise _short(name, p)
        start = p + 5
        end = start + U32.unpack_from(b, p + 1)[0]
    if end > stop:
        raise DecodeError(name, p + 1, "length runs past the end")
    return start, end


def r_string(b: bytes, p: int, stop: int, name: str) -> tuple[Any, int, int]:
    code = b[p]
    if code == 0xA1 or code == 0xB1:
        s, e = _var(b, p, stop, name, code)
        try:
            return str(b[s:e], "utf-8"), e, code
        except UnicodeDecodeError:
            raise DecodeError(name, s, "not UTF-8") from None
    if code == 0x40:
        return None, p + 1, code
    raise _bad(name, p, code)


def r_symbol(b: bytes, p: int, stop: int, name: str) -> tuple[Any, int, int]:
    code = b[p]
    if code == 0xA3 or code == 0xB3:
        s, e = _var(b, p, stop, name, code)
        try:
            return Symbol(b[s:e], "ascii"), e, code
        except UnicodeDecodeError:
            raise DecodeError(name, s, "not ASCII") from None
    if code == 0x40:
        return None, p + 1, code
    raise _bad(name, p, code)


def r_binary(b: bytes, p: int, stop: int, name: str) -> tuple[Any, int, int]:
    code = b[p]
    if code == 0xA0 or code == 0xB0:
        s, e = _var(b, p, stop, name, code)
        return b[s:e], e, code
    if code == 0x40:
        return None, p + 1, code
    raise _bad(name, p, code)


def r_timestamp(b: bytes, p: int, stop: int, name: str) -> tuple[Any, int, int]:
    code = b[p]
    if code == 0x83:
        if p + 9 > stop:
            raise _short(name, p)
        return Timestamp(I64.unpack_from(b, p + 1)[0]), p + 9, code
    if code == 0x40:
        return None, p + 1, code
    raise _bad(name, p, code)


def r_symbols(b: bytes, p: int, stop: int, name: str) -> tuple[Any, int, Any]:
    """A `multiple` symbol field: one symbol (as a list of one) or an array of symbols."""
    code = b[p]
    if code == 0xE0 or code == 0xF0:
        if code == 0xE0:
            if p + 3 > stop:
                raise _short(name, p)
            size, count = U8X2.unpack_from(b, p + 1)
            q, end = p + 3, p + 2 + size
        else:
            if p + 9 > stop:
                raise _short(name, p)
            size, count = U32X2.unpack_from(b, p + 1)
            q, end = p + 9, p + 5 + size
        if end > stop or q >= end:
            raise DecodeError(name, p + 1, "array size runs past the end")
        element = b[q]
        if element != 0xA3 and element != 0xB3:
            raise _bad(name, q, element)
        if count > end - q:
            raise DecodeError(name, q, f"{count} items cannot fit")
        items = Array((), "symbol", None)
        q += 1
        wide = element == 0xB3
        for _ in range(count):
            if wide:
                if q + 4 > end:
                    raise _short(name, q)
                s = q + 4
                q = s + U32.unpack_from(b, q)[0]
            else:
                if q + 1 > end:
                    raise _short(name, q)
                s = q + 1
                q = s + b[q]
            if q > end:
                raise _short(name, s)
            try:
                items.append(Symbol(b[s:q], "ascii"))
            except UnicodeDecodeError:
                raise DecodeError(name, s, "not ASCII") from None
        if q != end:
            raise DecodeError(name, q, "bytes after the last item")
        return items, q, (code, element, ())
    value, q, wire = r_symbol(b, p, stop, name)
    return (None if value is None else [value]), q, wire


def r_value(b: bytes, p: int, stop: int, name: str) -> tuple[Any, int, int]:
    """A value of the types these frames' maps and `*` fields hold."""
    if p >= stop:
        raise _short(name, p)
    code = b[p]
    if code == 0xA1 or code == 0xB1:
        return r_string(b, p, stop, name)
    if code == 0xA3 or code == 0xB3:
        return r_symbol(b, p, stop, name)
    if code == 0x54:
        if p + 2 > stop:
            raise _short(name, p)
        v = b[p + 1]
        return Int(v - 256 if v > 127 else v), p + 2, code
    if code == 0x71:
        if p + 5 > stop:
            raise _short(name, p)
        return Int(I32.unpack_from(b, p + 1)[0]), p + 5, code
    if code == 0xA0 or code == 0xB0:
        return r_binary(b, p, stop, name)
    if code in (0x43, 0x52, 0x70):
        return r_uint(b, p, stop, name)
    if code in (0x44, 0x53, 0x80):
        return r_ulong(b, p, stop, name)
    if code in (0x40, 0x41, 0x42, 0x56):
        return r_bool(b, p, stop, name)
    raise DecodeError(name, p, f"format code {code:#04x} is not in this floor")


def r_map(b: bytes, p: int, stop: int, name: str) -> tuple[Any, int, Any]:
    code = b[p]
    if code == 0xC1:
        if p + 3 > stop:
            raise _short(name, p)
        size, count = U8X2.unpack_from(b, p + 1)
        q, end = p + 3, p + 2 + size
    elif code == 0xD1:
        if p + 9 > stop:
            raise _short(name, p)
        size, count = U32X2.unpack_from(b, p + 1)
        q, end = p + 9, p + 5 + size
    elif code == 0x40:
        return None, p + 1, code
    else:
        raise _bad(name, p, code)
    if end > stop:
        raise DecodeError(name, p + 1, "map size runs past the end")
    if count > end - q or count % 2:
        raise DecodeError(name, p + 1, f"{count} items")
    out = {}
    codes = []
    for _ in range(count // 2):
        k, q, kc = r_value(b, q, end, name)
        v, q, vc = r_value(b, q, end, name)
        out[k] = v
        codes.append(kc)
        codes.append(vc)
    if q != end:
        raise DecodeError(name, q, "bytes after the last item")
    return out, q, (code, tuple(codes))


def _list(b: bytes, p: int, end: int, fields: int, name: str) -> tuple[int, int, int, int]:
    """(count, first field, stop, list code) of a composite's list at `p`."""
    if p >= end:
        raise _short(name, p)
    code = b[p]
    if code == 0xC0:
        if p + 3 > end:
            raise _short(name, p)
        size, count = U8X2.unpack_from(b, p + 1)
        q, stop = p + 3, p + 2 + size
    elif code == 0xD0:
        if p + 9 > end:
            raise _short(name, p)
        size, count = U32X2.unpack_from(b, p + 1)
        q, stop = p + 9, p + 5 + size
    elif code == 0x45:
        return 0, p + 1, p + 1, code
    else:
        raise DecodeError(name, p, f"format code {code:#04x}: a composite is a list")
    if stop > end or stop < q:
        raise DecodeError(name, p + 1, "list size runs past the end")
    if count > fields:
        raise DecodeError(name, p, f"{count} fields; {name} has {fields}")
    if count > stop - q:
        raise DecodeError(name, p + 1, f"{count} items cannot fit")
    return count, q, stop, code


def _descriptor(b: bytes, p: int, end: int, code: int, name: str) -> int:
    if p + 3 > end or b[p] != 0 or b[p + 1] != 0x53 or b[p + 2] != code:
        raise DecodeError(name, p, f"not described by smallulong {code:#04x}")
    return p + 3


def _frame(b: bytes) -> tuple[int, int, bytes]:
    """(channel, where the body starts, extended header) of an AMQP frame."""
    n = len(b)
    if n < 8:
        raise DecodeError("frame.size", 0, f"needs 8 bytes, {n} left")
    size, doff, frame_type, channel = HEAD.unpack_from(b)
    if size != n:
        raise DecodeError("frame.size", 0, f"size {size} but the frame has {n} bytes")
    if doff < 2 or doff * 4 > size:
        raise DecodeError("frame.doff", 4, f"data offset {doff}")
    if frame_type != 0:
        raise DecodeError("frame.type", 5, f"frame type {frame_type} is not 0 (AMQP)")
    start = doff * 4
    if start >= n:
        raise DecodeError("frame.body", start, "no performative")
    return channel, start, b"" if start == 8 else b[8:start]


def _done(obj: Any, count: int, lcode: int, w: list[Any], q: int, stop: int, name: str) -> Any:
    if q != stop:
        raise DecodeError(name, q, f"{stop - q} bytes after the last field")
    obj._wire = (0, 0x53, (lcode, tuple(w[:count])) if lcode != 0x45 else 0x45)
    return obj


# ---- decoders of whole frames and of the message


def decode_open(b: bytes) -> Frame:
    channel, p, ext = _frame(b)
    n = len(b)
    p = _descriptor(b, p, n, 0x10, "open")
    count, q, stop, lcode = _list(b, p, n, 10, "open")
    v: list[Any] = [None] * 10
    w: list[Any] = [None] * 10
    if count > 0:
        v[0], q, w[0] = r_string(b, q, stop, "open.container-id")
    if count > 1:
        v[1], q, w[1] = r_string(b, q, stop, "open.hostname")
    if count > 2:
        v[2], q, w[2] = r_uint(b, q, stop, "open.max-frame-size")
    if count > 3:
        v[3], q, w[3] = r_ushort(b, q, stop, "open.channel-max")
    if count > 4:
        v[4], q, w[4] = r_uint(b, q, stop, "open.idle-time-out")
    if count > 5:
        v[5], q, w[5] = r_symbols(b, q, stop, "open.outgoing-locales")
    if count > 6:
        v[6], q, w[6] = r_symbols(b, q, stop, "open.incoming-locales")
    if count > 7:
        v[7], q, w[7] = r_symbols(b, q, stop, "open.offered-capabilities")
    if count > 8:
        v[8], q, w[8] = r_symbols(b, q, stop, "open.desired-capabilities")
    if count > 9:
        v[9], q, w[9] = r_map(b, q, stop, "open.properties")
    if v[0] is None:
        raise DecodeError("open.container-id", p, "mandatory field is null or absent")
    body = _done(Open(*v), count, lcode, w, q, stop, "open")
    return Frame(0, channel, body, b[stop:], ext)


def _source(b: bytes, p: int, end: int) -> tuple[Any, int, Any]:
    p = _descriptor(b, p, end, 0x28, "attach.source")
    count, q, stop, lcode = _list(b, p, end, 11, "source")
    v: list[Any] = [None] * 11
    w: list[Any] = [None] * 11
    if count > 0:
        v[0], q, w[0] = r_value(b, q, stop, "source.address")
    if count > 1:
        v[1], q, w[1] = r_uint(b, q, stop, "source.durable")
    if count > 2:
        v[2], q, w[2] = r_symbol(b, q, stop, "source.expiry-policy")
    if count > 3:
        v[3], q, w[3] = r_uint(b, q, stop, "source.timeout")
    if count > 4:
        v[4], q, w[4] = r_bool(b, q, stop, "source.dynamic")
    if count > 5:
        v[5], q, w[5] = r_map(b, q, stop, "source.dynamic-node-properties")
    if count > 6:
        v[6], q, w[6] = r_symbol(b, q, stop, "source.distribution-mode")
    if count > 7:
        v[7], q, w[7] = r_map(b, q, stop, "source.filter")
    if count > 8:
        if b[q] != 0x40:
            raise DecodeError("source.default-outcome", q, "not in this floor")
        q, w[8] = q + 1, 0x40
    if count > 9:
        v[9], q, w[9] = r_symbols(b, q, stop, "source.outcomes")
    if count > 10:
        v[10], q, w[10] = r_symbols(b, q, stop, "source.capabilities")
    obj = _done(Source(*v), count, lcode, w, q, stop, "source")
    return obj, q, obj._wire


def _target(b: bytes, p: int, end: int) -> tuple[Any, int, Any]:
    p = _descriptor(b, p, end, 0x29, "attach.target")
    count, q, stop, lcode = _list(b, p, end, 7, "target")
    v: list[Any] = [None] * 7
    w: list[Any] = [None] * 7
    if count > 0:
        v[0], q, w[0] = r_value(b, q, stop, "target.address")
    if count > 1:
        v[1], q, w[1] = r_uint(b, q, stop, "target.durable")
    if count > 2:
        v[2], q, w[2] = r_symbol(b, q, stop, "target.expiry-policy")
    if count > 3:
        v[3], q, w[3] = r_uint(b, q, stop, "target.timeout")
    if count > 4:
        v[4], q, w[4] = r_bool(b, q, stop, "target.dynamic")
    if count > 5:
        v[5], q, w[5] = r_map(b, q, stop, "target.dynamic-node-properties")
    if count > 6:
        v[6], q, w[6] = r_symbols(b, q, stop, "target.capabilities")
    obj = _done(Target(*v), count, lcode, w, q, stop, "target")
    return obj, q, obj._wire


def decode_attach(b: bytes) -> Frame:
    channel, p, ext = _frame(b)
    n = len(b)
    p = _descriptor(b, p, n, 0x12, "attach")
    count, q, stop, lcode = _list(b, p, n, 14, "attach")
    v: list[Any] = [None] * 14
    w: list[Any] = [None] * 14
    if count > 0:
        v[0], q, w[0] = r_string(b, q, stop, "attach.name")
    if count > 1:
        v[1], q, w[1] = r_uint(b, q, stop, "attach.handle")
    if count > 2:
        v[2], q, w[2] = r_bool(b, q, stop, "attach.role")
    if count > 3:
        v[3], q, w[3] = r_ubyte(b, q, stop, "attach.snd-settle-mode")
    if count > 4:
        v[4], q, w[4] = r_ubyte(b, q, stop, "attach.rcv-settle-mode")
    if count > 5:
        if b[q] == 0x40:
            q, w[5] = q + 1, 0x40
        else:
            v[5], q, w[5] = _source(b, q, stop)
    if count > 6:
        if b[q] == 0x40:
            q, w[6] = q + 1, 0x40
        else:
            v[6], q, w[6] = _target(b, q, stop)
    if count > 7:
        v[7], q, w[7] = r_map(b, q, stop, "attach.unsettled")
    if count > 8:
        v[8], q, w[8] = r_bool(b, q, stop, "attach.incomplete-unsettled")
    if count > 9:
        v[9], q, w[9] = r_uint(b, q, stop, "attach.initial-delivery-count")
    if count > 10:
        v[10], q, w[10] = r_ulong(b, q, stop, "attach.max-message-size")
    if count > 11:
        v[11], q, w[11] = r_symbols(b, q, stop, "attach.offered-capabilities")
    if count > 12:
        v[12], q, w[12] = r_symbols(b, q, stop, "attach.desired-capabilities")
    if count > 13:
        v[13], q, w[13] = r_map(b, q, stop, "attach.properties")
    for i, field in ((0, "name"), (1, "handle"), (2, "role")):
        if v[i] is None:
            raise DecodeError(f"attach.{field}", p, "mandatory field is null or absent")
    body = _done(Attach(*v), count, lcode, w, q, stop, "attach")
    return Frame(0, channel, body, b[stop:], ext)


def decode_transfer(b: bytes) -> Frame:
    channel, p, ext = _frame(b)
    n = len(b)
    p = _descriptor(b, p, n, 0x14, "transfer")
    count, q, stop, lcode = _list(b, p, n, 11, "transfer")
    v: list[Any] = [None] * 11
    w: list[Any] = [None] * 11
    if count > 0:
        v[0], q, w[0] = r_uint(b, q, stop, "transfer.handle")
    if count > 1:
        v[1], q, w[1] = r_uint(b, q, stop, "transfer.delivery-id")
    if count > 2:
        v[2], q, w[2] = r_binary(b, q, stop, "transfer.delivery-tag")
    if count > 3:
        v[3], q, w[3] = r_uint(b, q, stop, "transfer.message-format")
    if count > 4:
        v[4], q, w[4] = r_bool(b, q, stop, "transfer.settled")
    if count > 5:
        v[5], q, w[5] = r_bool(b, q, stop, "transfer.more")
    if count > 6:
        v[6], q, w[6] = r_ubyte(b, q, stop, "transfer.rcv-settle-mode")
    if count > 7:
        if b[q] != 0x40:
            raise DecodeError("transfer.state", q, "not in this floor")
        q, w[7] = q + 1, 0x40
    if count > 8:
        v[8], q, w[8] = r_bool(b, q, stop, "transfer.resume")
    if count > 9:
        v[9], q, w[9] = r_bool(b, q, stop, "transfer.aborted")
    if count > 10:
        v[10], q, w[10] = r_bool(b, q, stop, "transfer.batchable")
    if v[0] is None:
        raise DecodeError("transfer.handle", p, "mandatory field is null or absent")
    body = _done(Transfer(*v), count, lcode, w, q, stop, "transfer")
    return Frame(0, channel, body, b[stop:], ext)


def decode_message(b: bytes) -> Message:
    """The four sections bench/amqp10.py's message has, in the spec's order, each optional."""
    n = len(b)
    msg = Message()
    p = 0
    if p + 3 <= n and b[p] == 0 and b[p + 1] == 0x53 and b[p + 2] == 0x70:
        count, q, stop, lcode = _list(b, p + 3, n, 5, "header")
        v: list[Any] = [None] * 5
        w: list[Any] = [None] * 5
        if count > 0:
            v[0], q, w[0] = r_bool(b, q, stop, "header.durable")
        if count > 1:
            v[1], q, w[1] = r_ubyte(b, q, stop, "header.priority")
        if count > 2:
            v[2], q, w[2] = r_uint(b, q, stop, "header.ttl")
        if count > 3:
            v[3], q, w[3] = r_bool(b, q, stop, "header.first-acquirer")
        if count > 4:
            v[4], q, w[4] = r_uint(b, q, stop, "header.delivery-count")
        msg.header = _done(Header(*v), count, lcode, w, q, stop, "header")
        p = stop
    if p + 3 <= n and b[p] == 0 and b[p + 1] == 0x53 and b[p + 2] == 0x73:
        count, q, stop, lcode = _list(b, p + 3, n, 13, "properties")
        v = [None] * 13
        w = [None] * 13
        if count > 0:
            v[0], q, w[0] = r_value(b, q, stop, "properties.message-id")
        if count > 1:
            v[1], q, w[1] = r_binary(b, q, stop, "properties.user-id")
        if count > 2:
            v[2], q, w[2] = r_value(b, q, stop, "properties.to")
        if count > 3:
            v[3], q, w[3] = r_string(b, q, stop, "properties.subject")
        if count > 4:
            v[4], q, w[4] = r_value(b, q, stop, "properties.reply-to")
        if count > 5:
            v[5], q, w[5] = r_value(b, q, stop, "properties.correlation-id")
        if count > 6:
            v[6], q, w[6] = r_symbol(b, q, stop, "properties.content-type")
        if count > 7:
            v[7], q, w[7] = r_symbol(b, q, stop, "properties.content-encoding")
        if count > 8:
            v[8], q, w[8] = r_timestamp(b, q, stop, "properties.absolute-expiry-time")
        if count > 9:
            v[9], q, w[9] = r_timestamp(b, q, stop, "properties.creation-time")
        if count > 10:
            v[10], q, w[10] = r_string(b, q, stop, "properties.group-id")
        if count > 11:
            v[11], q, w[11] = r_uint(b, q, stop, "properties.group-sequence")
        if count > 12:
            v[12], q, w[12] = r_string(b, q, stop, "properties.reply-to-group-id")
        msg.properties = _done(Properties(*v), count, lcode, w, q, stop, "properties")
        p = stop
    if p + 3 <= n and b[p] == 0 and b[p + 1] == 0x53 and b[p + 2] == 0x74:
        value, p, vwire = r_map(b, p + 3, n, "application-properties")
        section = ApplicationProperties(value)
        section._wire = (0, 0x53, vwire)
        msg.application_properties = section
    while p < n:
        if p + 3 > n or b[p] != 0 or b[p + 1] != 0x53 or b[p + 2] != 0x75:
            raise DecodeError("message", p, "not a data section")
        value, p, vwire = r_binary(b, p + 3, n, "data")
        if value is None:
            raise DecodeError("data", p - 1, "format code 0x40 is not of its type")
        section = Data(value)
        section._wire = (0, 0x53, vwire)
        if msg.body is None:
            msg.body = []
        msg.body.append(section)
    return msg


# ---- encoders: the smallest encoding of every field, as for an object never decoded


def w_uint(out: bytearray, v: Any) -> None:
    if v is None:
        out.append(0x40)
    elif v == 0:
        out.append(0x43)
    elif 0 < v < 256:
        out += bytes((0x52, v))
    else:
        out.append(0x70)
        out += U32.pack(v)


def w_ulong(out: bytearray, v: Any) -> None:
    if v is None:
        out.append(0x40)
    elif v == 0:
        out.append(0x44)
    elif 0 < v < 256:
        out += bytes((0x53, v))
    else:
        out.append(0x80)
        out += U64.pack(v)


def w_ushort(out: bytearray, v: Any) -> None:
    if v is None:
        out.append(0x40)
    else:
        out.append(0x60)
        out += U16.pack(v)


def w_ubyte(out: bytearray, v: Any) -> None:
    if v is None:
        out.append(0x40)
    else:
        out += bytes((0x50, v))


def w_bool(out: bytearray, v: Any) -> None:
    out.append(0x40 if v is None else 0x41 if v else 0x42)


def w_null(out: bytearray, v: Any) -> None:
    """A field these frames leave null (a delivery state, a default outcome)."""
    if v is not None:
        raise EncodeError("field", "not in this floor")
    out.append(0x40)


def _w_var(out: bytearray, small: int, raw: bytes) -> None:
    n = len(raw)
    if n < 256:
        out += bytes((small, n))
    else:
        out.append(small + 0x10)
        out += U32.pack(n)
    out += raw


def w_string(out: bytearray, v: Any) -> None:
    if v is None:
        out.append(0x40)
    else:
        _w_var(out, 0xA1, v.encode())


def w_symbol(out: bytearray, v: Any) -> None:
    if v is None:
        out.append(0x40)
    else:
        _w_var(out, 0xA3, v.encode("ascii"))


def w_binary(out: bytearray, v: Any) -> None:
    if v is None:
        out.append(0x40)
    else:
        _w_var(out, 0xA0, v)


def w_timestamp(out: bytearray, v: Any) -> None:
    if v is None:
        out.append(0x40)
    else:
        out.append(0x83)
        out += I64.pack(v)


def w_value(out: bytearray, v: Any) -> None:
    if v is None:
        out.append(0x40)
    elif isinstance(v, Symbol):
        w_symbol(out, v)
    elif isinstance(v, str):
        w_string(out, v)
    elif isinstance(v, bool):
        w_bool(out, v)
    elif isinstance(v, Int):
        if -128 <= v < 128:
            out += bytes((0x54, v & 0xFF))
        else:
            out.append(0x71)
            out += I32.pack(v)
    elif isinstance(v, bytes):
        w_binary(out, v)
    else:
        raise EncodeError("value", f"{type(v).__name__} is not in this floor")


def _w_compound(out: bytearray, small: int, body: bytearray, count: int) -> None:
    if len(body) + 1 < 256 and count < 256:
        out += bytes((small, len(body) + 1, count))
    else:
        out.append(small + 0x10)
        out += U32X2.pack(len(body) + 4, count)
    out += body


def w_map(out: bytearray, v: Any) -> None:
    if v is None:
        out.append(0x40)
        return
    body = bytearray()
    for k, x in v.items():
        w_value(body, k)
        w_value(body, x)
    _w_compound(out, 0xC1, body, 2 * len(v))


def w_symbols(out: bytearray, v: Any) -> None:
    """A `multiple` symbol field: one symbol alone, several as an array of sym8."""
    if v is None:
        out.append(0x40)
    elif len(v) == 1:
        w_symbol(out, v[0])
    else:
        body = bytearray((0xA3,))
        for s in v:
            raw = s.encode("ascii")
            body.append(len(raw))
            body += raw
        _w_compound(out, 0xE0, body, len(v))


def _w_list(out: bytearray, code: int, fields: tuple[Any, ...], writers: tuple[Any, ...]) -> None:
    """0x00 smallulong `code`, then the list of the fields up to the last one set."""
    count = len(fields)
    while count and fields[count - 1] is None:
        count -= 1
    out += bytes((0, 0x53, code))
    if not count:
        out.append(0x45)
        return
    body = bytearray()
    for i in range(count):
        writers[i](body, fields[i])
    _w_compound(out, 0xC0, body, count)


_OPEN = (w_string, w_string, w_uint, w_ushort, w_uint) + (w_symbols,) * 4 + (w_map,)
_SOURCE = (w_value, w_uint, w_symbol, w_uint, w_bool, w_map, w_symbol, w_map, w_null)
_SOURCE += (w_symbols, w_symbols)
_TARGET = (w_value, w_uint, w_symbol, w_uint, w_bool, w_map, w_symbols)
_TRANSFER = (w_uint, w_uint, w_binary, w_uint, w_bool, w_bool, w_ubyte, w_null)
_TRANSFER += (w_bool, w_bool, w_bool)
_HEADER = (w_bool, w_ubyte, w_uint, w_bool, w_uint)
_PROPERTIES = (w_value, w_binary, w_value, w_string, w_value, w_value, w_symbol, w_symbol)
_PROPERTIES += (w_timestamp, w_timestamp, w_string, w_uint, w_string)


# the fields of an object as a tuple, in their order (one C call)
_SOURCE_FIELDS = attrgetter(*Source.__slots__[:-1])
_TARGET_FIELDS = attrgetter(*Target.__slots__[:-1])
_ATTACH_FIELDS = attrgetter(*Attach.__slots__[:-1])
_HEADER_FIELDS = attrgetter(*Header.__slots__[:-1])
_PROPERTIES_FIELDS = attrgetter(*Properties.__slots__[:-1])


def _w_source(out: bytearray, v: Any) -> None:
    if v is None:
        out.append(0x40)
    else:
        _w_list(out, 0x28, _SOURCE_FIELDS(v), _SOURCE)


def _w_target(out: bytearray, v: Any) -> None:
    if v is None:
        out.append(0x40)
    else:
        _w_list(out, 0x29, _TARGET_FIELDS(v), _TARGET)


_ATTACH = (w_string, w_uint, w_bool, w_ubyte, w_ubyte, _w_source, _w_target, w_map, w_bool)
_ATTACH += (w_uint, w_ulong, w_symbols, w_symbols, w_map)


def _frame_bytes(frame: Frame, out: bytearray) -> bytes:
    out += frame.payload
    HEAD.pack_into(out, 0, len(out), 2, frame.type, frame.channel)
    return bytes(out)


def encode_open(frame: Frame) -> bytes:
    o = frame.body
    out = bytearray(8)
    _w_list(out, 0x10, _values_open(o), _OPEN)
    return _frame_bytes(frame, out)


def _values_open(o: Any) -> tuple[Any, ...]:
    return (
        o.container_id,
        o.hostname,
        o.max_frame_size,
        o.channel_max,
        o.idle_time_out,
        o.outgoing_locales,
        o.incoming_locales,
        o.offered_capabilities,
        o.desired_capabilities,
        o.properties,
    )


def encode_attach(frame: Frame) -> bytes:
    out = bytearray(8)
    _w_list(out, 0x12, _ATTACH_FIELDS(frame.body), _ATTACH)
    return _frame_bytes(frame, out)


def encode_transfer(frame: Frame) -> bytes:
    x = frame.body
    out = bytearray(8)
    fields = (x.handle, x.delivery_id, x.delivery_tag, x.message_format, x.settled, x.more)
    fields += (x.rcv_settle_mode, x.state, x.resume, x.aborted, x.batchable)
    _w_list(out, 0x14, fields, _TRANSFER)
    return _frame_bytes(frame, out)


def encode_message(msg: Message) -> bytes:
    out = bytearray()
    if msg.header is not None:
        _w_list(out, 0x70, _HEADER_FIELDS(msg.header), _HEADER)
    if msg.properties is not None:
        _w_list(out, 0x73, _PROPERTIES_FIELDS(msg.properties), _PROPERTIES)
    if msg.application_properties is not None:
        out += b"\x00\x53\x74"
        w_map(out, msg.application_properties.value)
    for section in msg.body or ():
        out += b"\x00\x53\x75"
        w_binary(out, section.value)
    return bytes(out)
