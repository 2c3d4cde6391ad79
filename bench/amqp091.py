"""Speed of the generated AMQP 0-9-1 codec against a hand-written floor and pika, in one run.

    .venv/bin/python bench/amqp091.py [--quick]

For each frame below (method frames, a content header and a body frame), decode and encode
rates, frames per second, of:
  * specgen   the generated `decode(frame)` / `encode(msg)` of `specgen_codecs.amqp_0_9_1.v0_9_1`
  * floor     what a careful programmer would write for exactly that frame with precompiled
              `struct.Struct`s: the same checks as the generated codec (the header's size
              against the bytes given, the frame-end octet, the type, class and method, every
              length and count before it is used, reserved bits clear, a duplicate table key;
              on encode, every length that must fit its prefix) AND the same result objects
              (the generated class called with positional arguments; a field table as the same
              `Table` with its constructors), because a hand-written codec returns objects too.
              This is issue 28's floor: the goal is specgen >= 0.8x it.
  * tuples    (decode only, for information) the floor giving a tuple instead of the object
  * pika      pika 1.4's `pika.frame.decode_frame(data)` and its frame objects' `marshal()`
              (`pika.frame.Method`, `Header`, `Body`), built beforehand as our messages are:
              the goal is specgen >= 2x pika.
The codecs of one cell are timed in alternating rounds and each figure is its best round, so
load on the machine weighs on all of them alike; only ratios measured in the same run are
compared. Results go to bench/results/amqp091.json.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pika.frame  # type: ignore[import-untyped]
import pika.spec  # type: ignore[import-untyped]
from timing import mark, rates, write_results  # bench/timing.py, beside this script

import specgen.locations  # noqa: F401  (maps specgen_codecs to this tree's generated/)
from specgen_codecs.amqp_0_9_1 import v0_9_1 as g
from specgen_codecs.amqp_0_9_1.values import Table

ROOT = Path(__file__).resolve().parents[1]
GOAL_FLOOR = 0.8
GOAL_PIKA = 2.0


class Bad(ValueError):
    pass


# ---- hand-written floors

_HEAD = struct.Struct(">BHI")
_METHOD_HEAD = struct.Struct(">BHIHH")
_B = struct.Struct(">B")
_H = struct.Struct(">H")
_I = struct.Struct(">I")
_Q = struct.Struct(">Q")
_QB = struct.Struct(">QB")
_HB = struct.Struct(">HB")
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


def floor_ack(b: bytes) -> g.BasicAck:
    channel = _method(b, 60, 80)
    if len(b) != 21:
        raise Bad("size")
    tag, bits = _QB.unpack_from(b, 11)
    if bits & 0xFE:
        raise Bad("reserved bits")
    return g.BasicAck(tag, bits != 0, channel)


def floor_ack_tuple(b: bytes) -> tuple[Any, ...]:
    channel = _method(b, 60, 80)
    if len(b) != 21:
        raise Bad("size")
    tag, bits = _QB.unpack_from(b, 11)
    if bits & 0xFE:
        raise Bad("reserved bits")
    return tag, bits != 0, channel


_ACK_FRAME = struct.Struct(">BHIHHQBB")


def floor_ack_encode(m: g.BasicAck) -> bytes:
    return _ACK_FRAME.pack(1, m.channel, 13, 60, 80, m.delivery_tag, 1 if m.multiple else 0, 0xCE)


def _publish(b: bytes) -> tuple[Any, ...]:
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


def floor_publish(b: bytes) -> g.BasicPublish:
    return g.BasicPublish(*_publish(b))


def floor_publish_encode(m: g.BasicPublish) -> bytes:
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


def _deliver(b: bytes) -> tuple[Any, ...]:
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


def floor_deliver(b: bytes) -> g.BasicDeliver:
    return g.BasicDeliver(*_deliver(b))


def floor_deliver_encode(m: g.BasicDeliver) -> bytes:
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


def _queue_declare(b: bytes) -> tuple[Any, ...]:
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


def floor_queue_declare(b: bytes) -> g.QueueDeclare:
    return g.QueueDeclare(*_queue_declare(b))


def floor_queue_declare_encode(m: g.QueueDeclare) -> bytes:
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
    _enc_table(parts, m.arguments)  # type: ignore[arg-type]
    return _frame(1, m.channel, b"".join(parts))


def _start(b: bytes) -> tuple[Any, ...]:
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


def floor_start(b: bytes) -> g.ConnectionStart:
    return g.ConnectionStart(*_start(b))


def floor_start_encode(m: g.ConnectionStart) -> bytes:
    parts = [b"\x00\x0a\x00\x0a", _BB.pack(m.version_major, m.version_minor)]
    _enc_table(parts, m.server_properties)  # type: ignore[arg-type]
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


def _header(b: bytes) -> tuple[Any, ...]:
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


def floor_header(b: bytes) -> g.BasicProperties:
    return g.BasicProperties(*_header(b))


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


def floor_header_encode(m: g.BasicProperties) -> bytes:
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


def floor_body(b: bytes) -> g.ContentBody:
    end = len(b)
    if end < 8:
        raise Bad("header")
    type_, channel, size = _HEAD.unpack_from(b, 0)
    if size != end - 8 or b[end - 1] != _FRAME_END or type_ != 3:
        raise Bad("header")
    return g.ContentBody(b[7 : end - 1], channel)


def floor_body_encode(m: g.ContentBody) -> bytes:
    return _HEAD.pack(3, m.channel, len(m.payload)) + m.payload + _END


# ---- the frames


def _props_table() -> dict[str, Any]:
    return {
        "product": "RabbitMQ",
        "version": "4.0.5",
        "platform": "Erlang/OTP 27.1",
        "copyright": "Copyright (c) 2007-2024 Broadcom Inc and/or its subsidiaries",
        "information": "Licensed under the MPL 2.0. Website: https://rabbitmq.com",
        "capabilities": {
            "publisher_confirms": True,
            "exchange_exchange_bindings": True,
            "basic.nack": True,
            "consumer_cancel_notify": True,
            "connection.blocked": True,
            "consumer_priorities": True,
            "authentication_failure_close": True,
            "per_consumer_qos": True,
            "direct_reply_to": True,
        },
        "cluster_name": "rabbit@host",
    }


Cell = tuple[str, Any, Callable[[bytes], Any], Callable[[bytes], Any], Callable[[Any], bytes], Any]


def cells() -> list[Cell]:
    """(name, our message, floor decode, tuples decode, floor encode, pika frame object)."""
    ch = 1
    ack = g.BasicAck(12345, False, ch)
    publish = g.BasicPublish(0, "amq.direct", "orders.created", False, False, ch)
    deliver = g.BasicDeliver("amq.ctag-abcdefghijklmnop", 12345, False, "amq.direct", "orders", ch)
    header = g.BasicProperties(
        0,
        1024,
        "application/json",
        None,
        {"x-trace": "abc123", "x-retries": 3},
        2,
        None,
        "corr-1",
        None,
        None,
        "msg-0001",
        1_700_000_000,
        channel=ch,
    )
    body = g.ContentBody(b"x" * 1024, ch)
    declare = g.QueueDeclare(
        0,
        "orders",
        False,
        True,
        False,
        False,
        False,
        {"x-queue-type": "quorum", "x-max-length": 100000},
        ch,
    )
    start = g.ConnectionStart(0, 9, _props_table(), b"PLAIN AMQPLAIN", b"en_US", 0)
    # decode each once, so the measured messages are what decode gives (tables with constructors)
    ack, publish, deliver, header, body, declare, start = (
        g.decode(g.encode(m)) for m in (ack, publish, deliver, header, body, declare, start)
    )
    props = pika.spec.BasicProperties(
        content_type="application/json",
        headers={"x-trace": "abc123", "x-retries": 3},
        delivery_mode=2,
        correlation_id="corr-1",
        message_id="msg-0001",
        timestamp=1_700_000_000,
    )
    pika_start = pika.spec.Connection.Start(0, 9, _props_table(), "PLAIN AMQPLAIN", "en_US")
    out: list[Cell] = [
        (
            "Basic.Publish",
            publish,
            floor_publish,
            _publish,
            floor_publish_encode,
            pika.frame.Method(ch, pika.spec.Basic.Publish(0, "amq.direct", "orders.created")),
        ),
        (
            "Basic.Deliver",
            deliver,
            floor_deliver,
            _deliver,
            floor_deliver_encode,
            pika.frame.Method(
                ch,
                pika.spec.Basic.Deliver(
                    "amq.ctag-abcdefghijklmnop", 12345, False, "amq.direct", "orders"
                ),
            ),
        ),
        (
            "Basic.Ack",
            ack,
            floor_ack,
            floor_ack_tuple,
            floor_ack_encode,
            pika.frame.Method(ch, pika.spec.Basic.Ack(12345, False)),
        ),
        (
            "content header",
            header,
            floor_header,
            _header,
            floor_header_encode,
            pika.frame.Header(ch, 1024, props),
        ),
        (
            "body frame 1 KiB",
            body,
            floor_body,
            floor_body,
            floor_body_encode,
            pika.frame.Body(ch, b"x" * 1024),
        ),
        (
            "Queue.Declare",
            declare,
            floor_queue_declare,
            _queue_declare,
            floor_queue_declare_encode,
            pika.frame.Method(
                ch,
                pika.spec.Queue.Declare(
                    0,
                    "orders",
                    durable=True,
                    arguments={"x-queue-type": "quorum", "x-max-length": 100000},
                ),
            ),
        ),
        (
            "Connection.Start",
            start,
            floor_start,
            _start,
            floor_start_encode,
            pika.frame.Method(0, pika_start),
        ),
    ]
    for name, msg, fdec, _, fenc, theirs in out:
        frame = g.encode(msg)
        assert fenc(msg) == frame, name
        assert fdec(frame) == msg, name
        if name != "Connection.Start":  # pika writes its own table constructors
            assert theirs.marshal() == frame, name
        assert pika.frame.decode_frame(frame)[0] == len(frame), name
    return out


def main() -> int:
    budget = 0.5 if "--quick" in sys.argv else 2.0
    rows: list[dict[str, Any]] = []
    print(
        f"{'frame':18} {'op':6} {'bytes':>5} {'specgen/s':>10} {'floor/s':>10} {'tuples/s':>10} "
        f"{'pika/s':>10}  vs floor                     vs pika"
    )
    for name, msg, fdec, ftup, fenc, theirs in cells():
        frame = g.encode(msg)
        for op in ("decode", "encode"):
            fns: dict[str, Callable[[], Any]]
            if op == "decode":
                fns = {
                    "specgen": lambda f=frame: g.decode(f),
                    "floor": lambda f=frame, fn=fdec: fn(f),
                    "tuples": lambda f=frame, fn=ftup: fn(f),
                    "pika": lambda f=frame: pika.frame.decode_frame(f),
                }
            else:
                fns = {
                    "specgen": lambda m=msg: g.encode(m),
                    "floor": lambda m=msg, fn=fenc: fn(m),
                    "pika": lambda t=theirs: t.marshal(),
                }
            got = rates(fns, budget)
            vs_floor = got["specgen"] / got["floor"]
            vs_pika = got["specgen"] / got["pika"]
            tuples = got.get("tuples")
            rows.append(
                {
                    "frame": name,
                    "op": op,
                    "bytes": len(frame),
                    "specgen": round(got["specgen"]),
                    "floor": round(got["floor"]),
                    "tuples": None if tuples is None else round(tuples),
                    "pika": round(got["pika"]),
                    "vs_floor": round(vs_floor, 2),
                    "goal_floor": GOAL_FLOOR,
                    "vs_pika": round(vs_pika, 2),
                    "goal_pika": GOAL_PIKA,
                }
            )
            tup = "-" if tuples is None else f"{tuples:,.0f}"
            print(
                f"{name:18} {op:6} {len(frame):>5} {got['specgen']:>10,.0f} {got['floor']:>10,.0f} "
                f"{tup:>10} {got['pika']:>10,.0f}  {mark(vs_floor, GOAL_FLOOR)}  "
                f"{mark(vs_pika, GOAL_PIKA)}"
            )
    out = write_results("amqp091", rows)
    print(f"results: {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
