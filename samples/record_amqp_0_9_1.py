"""Record the shipped AMQP 0-9-1 sample capture: a pika session with RabbitMQ, through `specgen capture`.

    .venv/bin/python samples/record_amqp_0_9_1.py [OUT]   (default samples/amqp-0-9-1)

Starts a private RabbitMQ node on loopback (the test suite's), runs `specgen capture` in front
of its AMQP port, and drives one pika BlockingConnection through the proxy: declare a queue,
publisher confirms, 200 messages with varied properties (header tables, priorities, message
ids, timestamps) and a few bodies larger than frame_max (several content-body frames), a
basic.consume that acks them, a basic.get, a reject and a nack, then close. Then it stops the
capture with SIGTERM and the node by pid. The tests decode the result without a server.
"""

from __future__ import annotations

import random
import sys
from decimal import Decimal
from pathlib import Path

import pika

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from recording import record  # noqa: E402

QUEUE = "sample-amqp-orders"
PUBLISHED = 200
BIG = {17: 140_000, 150: 270_000}  # index -> body size over frame_max (131072): 2 and 3 frames


def _properties(i: int, rnd: random.Random) -> pika.BasicProperties:
    headers: dict[str, object] | None = None
    if i % 3 == 0:
        headers = {
            "seq": i,
            "tenant": f"t-{i % 7}",
            "flag": i % 2 == 0,
            "price": Decimal("12.34"),
            "tags": ["a", i, True],
            "nested": {"level": 2, "name": "inner"},
            "raw": bytes([i % 256, 0, 255]),
        }
    return pika.BasicProperties(
        content_type="application/json" if i % 2 else "text/plain",
        content_encoding="utf-8" if i % 5 == 0 else None,
        headers=headers,
        delivery_mode=2 if i % 4 else 1,
        priority=i % 10 if i % 6 else None,
        correlation_id=f"corr-{i}" if i % 4 == 1 else None,
        reply_to="replies" if i % 8 == 3 else None,
        expiration="600000" if i % 9 == 0 else None,
        message_id=f"msg-{i:04d}",
        timestamp=1_700_000_000 + i if i % 2 == 0 else None,
        type="order.created" if i % 3 == 1 else None,
        user_id="guest" if i % 10 == 7 else None,
        app_id="specgen-sample" if i % 2 else None,
    )


def pika_session(port: int) -> None:
    params = pika.ConnectionParameters(
        host="127.0.0.1",
        port=port,
        credentials=pika.PlainCredentials("guest", "guest"),
        heartbeat=0,
        client_properties={"connection_name": "specgen-sample"},
    )
    conn = pika.BlockingConnection(params)
    ch = conn.channel()
    ch.queue_declare(QUEUE, durable=False, auto_delete=False, arguments={"x-max-priority": 10})
    ch.queue_purge(QUEUE)
    ch.confirm_delivery()
    rnd = random.Random(11)
    for i in range(PUBLISHED):
        body = rnd.randbytes(BIG[i]) if i in BIG else rnd.randbytes(rnd.randrange(0, 600))
        ch.basic_publish("", QUEUE, body, _properties(i, rnd), mandatory=i % 10 == 0)
    got = 0

    def on_message(c: object, method: object, props: object, body: bytes) -> None:
        nonlocal got
        ch.basic_ack(method.delivery_tag)  # type: ignore[attr-defined]
        got += 1
        if got >= PUBLISHED - 3:
            ch.stop_consuming()

    ch.basic_qos(prefetch_count=50)
    tag = ch.basic_consume(QUEUE, on_message)
    ch.start_consuming()
    ch.basic_cancel(tag)
    # three left in the queue: one get+ack, one get+reject, one get+nack
    method, _props, _body = ch.basic_get(QUEUE)
    assert method is not None
    ch.basic_ack(method.delivery_tag)
    method, _props, _body = ch.basic_get(QUEUE)
    assert method is not None
    ch.basic_reject(method.delivery_tag, requeue=False)
    method, _props, _body = ch.basic_get(QUEUE)
    assert method is not None
    ch.basic_nack(method.delivery_tag, requeue=False)
    empty = ch.basic_get(QUEUE)
    assert empty[0] is None  # basic.get-empty
    ch.queue_delete(QUEUE)
    ch.close()
    conn.close()


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "samples" / "amqp-0-9-1"
    return record(out, lambda node: node.amqp_port, pika_session)


if __name__ == "__main__":
    raise SystemExit(main())
