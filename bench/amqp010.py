"""Speed of the generated AMQP 0-10 codec against hand-written `struct` floors, its FrameReader
against decoding the same frames at known offsets, and the import time of its version package.

    .venv/bin/python bench/amqp010.py [--quick] [--budget SECONDS]

The frames are the shipped sample's (samples/amqp-0-10/session-1), plus an execution.sync:

  * message.transfer   a command segment: session header, destination, accept and acquire mode
  * transfer header    its header segment: delivery-properties (priority, delivery-mode,
                       exchange, routing-key) and message-properties (content-length, message-id,
                       content-type, a two-entry application-headers map)
  * body frame         one whole frame (12-byte header included) carrying the message's body
  * session.completed  a control with a sequence set
  * execution.sync     a command with the sync flag set and no fields
  * queue.declare      a command: queue name, two bits
  * connection.start   a control: a map of server properties, two str16 arrays

Decode is segment payload -> object (`decode_command`, `decode_control`, `decode_header`) and,
for the body frame, frame bytes -> `Frame` (`decode`); encode is the reverse (`encode_method`,
`encode_header`, `encode`) of a decoded object.

The floor (the goal's yardstick, issue 28): what a careful programmer would write by hand for
exactly that frame, with precompiled `struct.Struct`s, making the same checks as the generated
decoder (every length against the bytes left, unknown packing flags, trailing bytes, utf-8, the
class and command codes, DecodeError naming the field and the byte offset; EncodeError for a value
that does not fit) AND building the same result objects (the generated classes, with keywords:
they are keyword-only; enums for the values the spec names), because a hand-written codec returns
objects too. The floors decode `bytes`, which is what a segment's payload is. Before timing,
every floor must decode to objects equal to the generated decoder's and encode to the same bytes
(the sample's bytes); a disagreement aborts the run. Typed values in maps and arrays of types
the floors do not spell out (decimals, chars, coded structs) go through the generated readers:
the sample's frames hold none.

There is no maintained Python peer for AMQP 0-10 on PyPI (qpid-python is Python 2 only and
unmaintained), so goal 2 (ahead of every peer) has no cell here.

Goals printed beside each figure: decode and encode >= 0.80x the floor (goal 1), FrameReader >=
0.95x decoding the same frames at known offsets (goal 3), import of specgen_codecs.amqp_0_10.v0_10
<= 20 ms (goal 7).

Timing: `rates` below: the functions of one row are timed in turn, in 15 alternating rounds of
about `budget / 15` seconds each, and each figure is its best round, so load on the machine weighs
on all of them alike (short rounds, many of them: on the shared 2-core machine a single cell still
moves by about 0.1x between runs); only ratios measured in the same run are reported. Results go to
bench/results/amqp010.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import struct
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from timing import rates  # noqa: E402  (bench/timing.py, beside this script)

import specgen.locations  # noqa: E402,F401  (specgen_codecs is this checkout's generated/)
from specgen_codecs.amqp_0_10 import values as _values  # noqa: E402
from specgen_codecs.amqp_0_10.v0_10 import (  # noqa: E402
    Array,
    Assembler,
    ConnectionStart,
    DecodeError,
    EncodeError,
    ExecutionSync,
    Frame,
    FrameReader,
    MessageDeliveryProperties,
    MessageProperties,
    MessageTransfer,
    QueueDeclare,
    SessionCompleted,
    SessionHeader,
    Typed,
    decode,
    encode,
)
from specgen_codecs.amqp_0_10.v0_10 import commands as c  # noqa: E402
from specgen_codecs.amqp_0_10.v0_10.enums import (  # noqa: E402
    MessageAcceptMode,
    MessageAcquireMode,
    MessageDeliveryMode,
    MessageDeliveryPriority,
    SegmentType,
    Track,
)

SAMPLE = ROOT / "samples" / "amqp-0-10" / "session-1"
RESULTS = ROOT / "bench" / "results" / "amqp010.json"
GOAL_FLOOR = 0.80
GOAL_READER = 0.95
GOAL_IMPORT_MS = 20.0


# ---------------------------------------------------------------------------------------------
# The hand-written floors
# ---------------------------------------------------------------------------------------------

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
    name = _values.TYPE_CODES.get(code)
    if name is None:
        raise DecodeError(f"{path}.type", at - 1, f"unknown type code 0x{code:02x}")
    got: tuple[Any, int] = _values._READERS[name](memoryview(data), at, end, path)  # the rare
    return got


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
        if code not in _values.TYPE_CODES:
            raise DecodeError(f"{path}[{key!r}].type", at, f"unknown type code 0x{code:02x}")
        value, at = value_of(code, data, at + 1, limit, f"{path}[{key!r}]")
        out[key] = Typed(_values.TYPE_CODES[code], value)
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
    if code not in _values.TYPE_CODES:
        raise DecodeError(f"{path}.type", at, f"unknown type code 0x{code:02x}")
    (count,) = U32.unpack_from(data, at + 1)
    at += 5
    items = []
    for i in range(count):
        item, at = value_of(code, data, at, limit, f"{path}[{i}]")
        items.append(item)
    if at != limit:
        raise DecodeError(path, at, f"{limit - at} bytes after the {count} values")
    return Array(_values.TYPE_CODES[code], items), at


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


def floor_transfer(data: bytes) -> MessageTransfer:
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


def floor_sync(data: bytes) -> ExecutionSync:
    sh, flags, at, end = method_start(data, b"\x03\x01", 0x0, "ExecutionSync", True)
    trailing("ExecutionSync", at, end)
    return ExecutionSync(session_header=sh)


def floor_declare(data: bytes) -> QueueDeclare:
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


def floor_completed(data: bytes) -> SessionCompleted:
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


def floor_start(data: bytes) -> ConnectionStart:
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
    if flags & 0x8:  # a struct the sample never carries: the generated reader
        reply_to, at = c._r_message_reply_to(memoryview(data), at, end, f"{p}.reply_to")
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


def floor_header(data: bytes) -> list[Any]:
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
        else:  # fragment-properties and the rest: the generated readers
            value, at = _values._r_struct32(memoryview(data), at - 8, end, path)
            out.append(value)
            continue
        if at != limit:
            raise DecodeError(path, at, f"{limit - at} bytes after the struct's fields")
        out.append(value)
    return out


def floor_body_frame(data: bytes) -> Frame:
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


TYPE_INFO = {name: code for code, name in _values.TYPE_CODES.items()}
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
        _values._WRITERS[name](out, value, path)


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


def floor_enc_transfer(m: MessageTransfer) -> bytes:
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


def floor_enc_sync(m: ExecutionSync) -> bytes:
    out = bytearray(b"\x03\x01")
    w_session_header(out, m.session_header, "ExecutionSync.session_header")
    out += b"\0\0"
    return bytes(out)


def floor_enc_declare(m: QueueDeclare) -> bytes:
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


def floor_enc_completed(m: SessionCompleted) -> bytes:
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


def floor_enc_start(m: ConnectionStart) -> bytes:
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
        c._w_message_reply_to(out, v.reply_to, f"{p}.reply_to")
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


def floor_enc_header(entries: list[Any]) -> bytes:
    out = bytearray()
    for i, entry in enumerate(entries):
        if type(entry) is MessageDeliveryProperties:
            enc_delivery(out, entry)
        elif type(entry) is MessageProperties:
            enc_properties(out, entry)
        else:
            _values._w_struct32(out, entry, f"header[{i}]")
    return bytes(out)


def floor_enc_body_frame(f: Frame) -> bytes:
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


# ---------------------------------------------------------------------------------------------
# The frames
# ---------------------------------------------------------------------------------------------


def sample_frames(direction: str = "c2s") -> bytes:
    """The sample's frames of one direction, without the protocol header."""
    data = (SAMPLE / f"conn-0001.{direction}.bin").read_bytes()
    assert data[:8] == b"AMQP\x01\x01\x00\n"
    return data[8:]


def cases() -> list[tuple[str, bytes, Callable[[Any], Any], Callable[[Any], Any], Any, Any]]:
    """(name, bytes, generated decode, generated encode, floor decode, floor encode)."""
    first: dict[str, bytes] = {}
    for direction in ("s2c", "c2s"):
        reader = FrameReader()
        reader.feed(sample_frames(direction))
        assembler = Assembler()
        for frame in reader:
            segment = assembler.add(frame)
            if segment is None:
                continue
            value = segment.decode()
            name = {
                MessageTransfer: "message.transfer",
                list: "transfer header",
                bytes: "body frame",
                SessionCompleted: "session.completed",
                QueueDeclare: "queue.declare",
                ConnectionStart: "connection.start",
            }.get(type(value))
            if name is None or name in first:
                continue
            first[name] = encode(frame) if name == "body frame" else segment.payload
    first["execution.sync"] = encode(ExecutionSync(session_header=SessionHeader(sync=True)))
    return [
        ("message.transfer", first["message.transfer"], c.decode_command, c.encode_method,
         floor_transfer, floor_enc_transfer),
        ("transfer header", first["transfer header"], c.decode_header, c.encode_header,
         floor_header, floor_enc_header),
        ("body frame", first["body frame"], decode, encode, floor_body_frame, floor_enc_body_frame),
        ("session.completed", first["session.completed"], c.decode_control, c.encode_method,
         floor_completed, floor_enc_completed),
        ("execution.sync", first["execution.sync"], c.decode_command, c.encode_method,
         floor_sync, floor_enc_sync),
        ("queue.declare", first["queue.declare"], c.decode_command, c.encode_method,
         floor_declare, floor_enc_declare),
        ("connection.start", first["connection.start"], c.decode_control, c.encode_method,
         floor_start, floor_enc_start),
    ]  # fmt: skip


def stream(target: int) -> tuple[bytes, list[tuple[int, int]]]:
    """The sample's frames (both directions) repeated to about `target` bytes, and each
    frame's span."""
    unit = sample_frames("c2s") + sample_frames("s2c")
    data = unit * max(1, target // len(unit))
    spans = []
    at = 0
    while at < len(data):
        size = data[at + 2] << 8 | data[at + 3]
        spans.append((at, at + size))
        at += size
    return data, spans


def import_ms(runs: int = 15) -> float:
    """The fastest of `runs` cold imports of the version package, in ms (-X importtime's
    cumulative figure: the package and everything it imports that was not imported yet)."""
    best = float("inf")
    code = "import specgen.locations; import specgen_codecs.amqp_0_10.v0_10"
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", code],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
            check=True,
        )
        for line in done.stderr.splitlines():
            m = re.match(
                r"import time:\s+\d+ \|\s+(\d+) \|\s+specgen_codecs\.amqp_0_10\.v0_10$", line
            )
            if m:
                best = min(best, int(m.group(1)) / 1000)
    return best


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--quick", action="store_true", help="a short run (0.5 s per row)")
    p.add_argument("--budget", type=float, default=None, help="seconds per row (default 2)")
    p.add_argument("--no-save", action="store_true", help="do not write bench/results")
    args = p.parse_args(argv)
    budget = args.budget or (0.5 if args.quick else 2.0)
    rows: list[dict[str, Any]] = []
    failed: list[str] = []

    print(
        f"AMQP 0-10, decode and encode against the hand-written floor (goal >= {GOAL_FLOOR:.2f}x)"
    )
    print(f"{'frame':20} {'op':6} {'bytes':>6} {'specgen/s':>11} {'floor/s':>11}  vs floor  goal")
    for name, data, dec, enc, fdec, fenc in cases():
        ours = dec(data)
        if fdec(data) != ours:
            raise SystemExit(f"{name}: the floor decodes {fdec(data)!r}, specgen {ours!r}")
        if enc(ours) != data or fenc(ours) != data:
            raise SystemExit(f"{name}: an encoder does not give the decoded bytes back")
        timed: list[tuple[str, dict[str, Callable[[], Any]]]] = [
            ("decode", {"specgen": partial(dec, data), "floor": partial(fdec, data)}),
            ("encode", {"specgen": partial(enc, ours), "floor": partial(fenc, ours)}),
        ]
        for op, fns in timed:
            got = rates(fns, budget, rounds=15)
            ratio = got["specgen"] / got["floor"]
            ok = ratio >= GOAL_FLOOR
            if not ok:
                failed.append(f"{name} {op}")
            print(
                f"{name:20} {op:6} {len(data):6} {got['specgen']:11,.0f} {got['floor']:11,.0f}"
                f"  {ratio:7.2f}x  >= {GOAL_FLOOR:.2f}x {'met' if ok else 'NOT MET'}"
            )
            rows.append(
                {"frame": name, "op": op, "bytes": len(data), "specgen_per_s": got["specgen"],
                 "floor_per_s": got["floor"], "vs_floor": ratio, "goal": GOAL_FLOOR, "met": ok}
            )  # fmt: skip

    data, spans = stream(20_000_000 if not args.quick else 4_000_000)
    chunk = 65536

    def reader() -> int:
        r = FrameReader()
        n = 0
        for i in range(0, len(data), chunk):
            r.feed(data[i : i + chunk])
            for _ in r:
                n += 1
        r.finish()
        return n

    def known() -> int:
        view = memoryview(data)
        n = 0
        for start, stop in spans:
            decode(view[start:stop])
            n += 1
        return n

    assert reader() == known() == len(spans)
    best = {"reader": float("inf"), "known": float("inf")}
    for _ in range(3 if args.quick else 5):
        for key, fn in (("reader", reader), ("known", known)):
            start = time.perf_counter()
            fn()
            best[key] = min(best[key], time.perf_counter() - start)
    reader_ratio = best["known"] / best["reader"]
    reader_ok = reader_ratio >= GOAL_READER
    if not reader_ok:
        failed.append("FrameReader")
    mb = len(data) / 1e6
    print()
    print(
        f"FrameReader over {mb:.0f} MB ({len(spans):,} frames, fed in {chunk // 1024} KiB chunks)"
    )
    print(
        f"  reader {mb / best['reader']:7.1f} MB/s, known offsets {mb / best['known']:7.1f} MB/s:"
        f" {reader_ratio:.2f}x  >= {GOAL_READER:.2f}x {'met' if reader_ok else 'NOT MET'}"
    )

    ms = import_ms()
    import_ok = ms <= GOAL_IMPORT_MS
    if not import_ok:
        failed.append("import")
    print()
    print(
        f"import specgen_codecs.amqp_0_10.v0_10: {ms:.1f} ms (best of 15, -X importtime)"
        f"  <= {GOAL_IMPORT_MS:.0f} ms {'met' if import_ok else 'NOT MET'}"
    )
    print()
    print("peers: none (no maintained Python AMQP 0-10 codec on PyPI): goal 2 has no cell here")
    print("goals not met: " + (", ".join(failed) if failed else "none"))

    if not args.no_save:
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text(
            json.dumps(
                {
                    "python": platform.python_version(),
                    "machine": platform.machine(),
                    "budget_s": budget,
                    "rows": rows,
                    "frame_reader": {"mb": mb, "frames": len(spans), "chunk": chunk,
                                     "vs_known_offsets": reader_ratio, "goal": GOAL_READER,
                                     "met": reader_ok},
                    "import_ms": {"ms": ms, "goal": GOAL_IMPORT_MS, "met": import_ok},
                },
                indent=2,
            )
            + "\n"
        )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
