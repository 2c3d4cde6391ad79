"""Speed of the generated AMQP 0-9-1 codec against a hand-written floor and pika, in one run.

    PYTHONPATH=. .venv/bin/python bench/amqp091.py [--quick] [--results DIR]

The codec measured is the `specgen_codecs` of the specgen that Python imports (the checkout
on PYTHONPATH, else the installed one); the first line printed names its folder.

For each frame below (method frames, a content header and a body frame), decode and encode
rates, frames per second, of:
  * specgen   the generated `decode(frame)` / `encode(msg)` of `specgen_codecs.amqp_0_9_1.v0_9_1`
  * floor     bench/floors/amqp091.py: what a careful programmer would write for exactly that
              frame with precompiled `struct.Struct`s and classes of its own (one `__slots__`
              class per message, the generated class's name and fields, a plain `__init__`; a
              field table as its own `Table`, a dict keeping each value's constructor): the same
              checks as the generated codec (the header's size against the bytes given, the
              frame-end octet, the type, class and method, every length and count before it is
              used, reserved bits clear, utf-8, a duplicate table key; on encode, every length
              that must fit its prefix). It imports no generated code, so a cost in the
              generated classes is not in the floor. On encode it writes the same bytes from its
              own decoded object. This is issue 28's floor: the goal is specgen >= 0.8x it.
  * tuples    (decode only, for information) the floor giving a tuple instead of the object
  * pika      pika 1.4's `pika.frame.decode_frame(data)` and its frame objects' `marshal()`
              (`pika.frame.Method`, `Header`, `Body`), built beforehand as our messages are:
              the goal is specgen >= 2x pika.
Before anything is timed, each floor's decoded object must agree with the generated one field
by field (bench/floors/compare.py) and the floor's, specgen's and pika's encoders must give
back the frame's bytes (pika's but for Connection.Start, whose table it writes with its own
constructors).
The codecs of one cell are timed in alternating rounds and each figure is its best round, so
load on the machine weighs on all of them alike; only ratios measured in the same run are
compared. Results go to bench/results/amqp091.json (--results DIR: DIR/amqp091.json instead).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pika.frame  # type: ignore[import-untyped]
import pika.spec  # type: ignore[import-untyped]
from floors import amqp091 as floor  # bench/floors/: the hand-written floors, no generated code
from floors.compare import differences
from timing import mark, measured, rates, shown, write_results  # bench/timing.py

import specgen.locations  # noqa: F401  (specgen_codecs: the generated/ of specgen's checkout)
from specgen_codecs.amqp_0_9_1 import v0_9_1 as g

GOAL_FLOOR = 0.8
GOAL_PIKA = 2.0


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
            floor.decode_publish,
            floor.tuples_publish,
            floor.encode_publish,
            pika.frame.Method(ch, pika.spec.Basic.Publish(0, "amq.direct", "orders.created")),
        ),
        (
            "Basic.Deliver",
            deliver,
            floor.decode_deliver,
            floor.tuples_deliver,
            floor.encode_deliver,
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
            floor.decode_ack,
            floor.tuples_ack,
            floor.encode_ack,
            pika.frame.Method(ch, pika.spec.Basic.Ack(12345, False)),
        ),
        (
            "content header",
            header,
            floor.decode_header,
            floor.tuples_header,
            floor.encode_header,
            pika.frame.Header(ch, 1024, props),
        ),
        (
            "body frame 1 KiB",
            body,
            floor.decode_body,
            floor.decode_body,
            floor.encode_body,
            pika.frame.Body(ch, b"x" * 1024),
        ),
        (
            "Queue.Declare",
            declare,
            floor.decode_queue_declare,
            floor.tuples_queue_declare,
            floor.encode_queue_declare,
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
            floor.decode_start,
            floor.tuples_start,
            floor.encode_start,
            pika.frame.Method(0, pika_start),
        ),
    ]
    for name, msg, fdec, _, fenc, theirs in out:
        frame = g.encode(msg)
        problems = differences(fdec(frame), msg, name)
        if problems:
            raise SystemExit(
                "the floor disagrees with the generated decoder:\n" + "\n".join(problems)
            )
        if fenc(fdec(frame)) != frame:
            raise SystemExit(f"{name}: the floor's encoder does not give the frame back")
        if name != "Connection.Start":  # pika writes its own table constructors
            assert theirs.marshal() == frame, name
        assert pika.frame.decode_frame(frame)[0] == len(frame), name
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--quick", action="store_true", help="a short run (0.5 s per cell)")
    p.add_argument(
        "--results", type=Path, metavar="DIR", help="write DIR/amqp091.json, not bench/results/"
    )
    args = p.parse_args(argv)
    budget = 0.5 if args.quick else 2.0
    rows: list[dict[str, Any]] = []
    print(measured())
    print(
        f"{'frame':18} {'op':6} {'bytes':>5} {'specgen/s':>10} {'floor/s':>10} {'tuples/s':>10} "
        f"{'pika/s':>10}  vs floor                     vs pika"
    )
    for name, msg, fdec, ftup, fenc, theirs in cells():
        frame = g.encode(msg)
        mine = fdec(frame)  # the floor encodes its own object, as specgen encodes its own
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
                    "floor": lambda m=mine, fn=fenc: fn(m),
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
    out = write_results("amqp091", rows, args.results)
    print(f"results: {shown(out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
