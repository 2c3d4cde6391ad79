"""Record the shipped sample capture: a real session with RabbitMQ, through `specgen capture`.

    .venv/bin/python samples/record_rabbitmq_stream.py [OUT]   (default samples/rabbitmq-stream)

Starts a private RabbitMQ node on loopback (the test suite's), runs `specgen capture` in front
of its stream port, and drives through the proxy: a session on the generated codec (create,
publish with confirms, consume with each offset type, credit, offsets, a few errors, close),
a connection with a wrong password, and an rstream producer (single messages and sub-entry
batches, uncompressed and gzip) and consumer. Then it stops the
capture with SIGTERM and the node by pid. The main job decodes the result without a server.
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from recording import record  # noqa: E402
from stream_client import StreamClient  # noqa: E402

from specgen_codecs.rabbitmq_stream import v4_0 as rs  # noqa: E402

RC = rs.ResponseCode
STREAM = "sample-orders"


def codec_session(port: int) -> None:
    c = StreamClient(port=port)
    c.handshake()
    c.request(
        rs.CreateRequest(c.next_id(), STREAM, [rs.Argument("max-length-bytes", "10000000")]),
        rs.CreateResponse,
    )
    c.request(rs.CreateRequest(c.next_id(), STREAM, []), rs.CreateResponse)  # already exists
    c.request(rs.MetadataRequest(c.next_id(), [STREAM, "no-such-stream"]), rs.MetadataResponse)
    c.request(
        rs.DeclarePublisherRequest(c.next_id(), 1, "sample-app", STREAM),
        rs.DeclarePublisherResponse,
    )
    rnd = random.Random(7)
    published = 0
    for _ in range(5):
        msgs = [
            rs.PublishV1PublishedMessage(published + i + 1, rnd.randbytes(rnd.randrange(10, 900)))
            for i in range(40)
        ]
        c.send(rs.PublishV1(1, msgs))
        published += len(msgs)
        time.sleep(0.3)  # several chunks, several chunk timestamps
    while len({i for m in c.take(rs.PublishConfirm) for i in m.publishing_ids}) < published:
        c.pump(0.2)
    c.send(rs.PublishV1(9, [rs.PublishV1PublishedMessage(1, b"no such publisher")]))  # PublishError
    c.request(
        rs.QueryPublisherSequenceRequest(c.next_id(), "sample-app", STREAM),
        rs.QueryPublisherSequenceResponse,
    )
    stamp = int(time.time() * 1000) - 1000
    specs = [
        (1, None),
        (2, None),
        (3, None),
        (4, 120),
        (5, stamp),
    ]  # first last next offset timestamp
    for sid, (offset_type, offset) in enumerate(specs, start=1):
        spec = rs.SubscribeRequestOffsetSpecification(offset_type, offset)
        c.request(rs.SubscribeRequest(c.next_id(), sid, STREAM, spec, 2, []), rs.SubscribeResponse)
    c.request(
        rs.SubscribeRequest(
            c.next_id(), 1, STREAM, rs.SubscribeRequestOffsetSpecification(1, None), 2, []
        ),
        rs.SubscribeResponse,
    )  # subscription id in use
    c.request(
        rs.SubscribeRequest(
            c.next_id(), 9, "no-such-stream", rs.SubscribeRequestOffsetSpecification(1, None), 2, []
        ),
        rs.SubscribeResponse,
    )
    for _ in range(6):
        c.pump(0.3)
        for sid in range(1, 6):
            c.send(rs.Credit(sid, 1))
    c.send(
        rs.PublishV1(1, [rs.PublishV1PublishedMessage(published + 1, b"for the next subscriber")])
    )
    c.pump(1.0)
    c.send(rs.Credit(42, 1))  # unknown subscription: the server answers this one
    c.send(rs.StoreOffset("sample-app", STREAM, 150))
    time.sleep(0.5)
    c.request(rs.QueryOffsetRequest(c.next_id(), "sample-app", STREAM), rs.QueryOffsetResponse)
    c.send(rs.Heartbeat())
    for sid in range(1, 6):
        c.request(rs.UnsubscribeRequest(c.next_id(), sid), rs.UnsubscribeResponse)
    c.request(rs.DeletePublisherRequest(c.next_id(), 1), rs.DeletePublisherResponse)
    c.request(rs.CloseRequest(c.next_id(), RC.OK, "sample done"), rs.CloseResponse)
    c.close()


def wrong_password(port: int) -> None:
    c = StreamClient(port=port)
    try:
        c.handshake(password="wrong")
    except PermissionError:
        pass
    c.pump(0.5)
    c.close()


SUB_ENTRIES = {0: 8, 1: 12}  # compression (none, gzip) -> records in the sub-entry batch


async def rstream_session(port: int) -> None:
    from rstream import CompressionType, Consumer, ConsumerOffsetSpecification, OffsetType, Producer

    async with Producer(
        "127.0.0.1", port, username="guest", password="guest", load_balancer_mode=True
    ) as p:
        for i in range(50):
            await p.send_wait(STREAM, f"rstream message {i}".encode())
        # what the Java, Go and Python clients publish when batching on the client side
        for compression, n in SUB_ENTRIES.items():
            records = [f"rstream sub-entry {compression}.{i} ".encode() * 3 for i in range(n)]
            await p.send_sub_entry(STREAM, records, compression_type=CompressionType(compression))
    got: list[bytes] = []
    done = asyncio.Event()
    consumer = Consumer(
        "127.0.0.1", port, username="guest", password="guest", load_balancer_mode=True
    )
    await consumer.start()

    async def on_message(msg: object, context: object) -> None:
        got.append(bytes(msg))  # type: ignore[call-overload]
        if len(got) >= 251 + sum(SUB_ENTRIES.values()):  # 201 above, then these 50 and batches
            done.set()

    await consumer.subscribe(
        STREAM, on_message, offset_specification=ConsumerOffsetSpecification(OffsetType.FIRST, None)
    )
    await asyncio.wait_for(done.wait(), 30)
    await consumer.close()
    async with Producer(
        "127.0.0.1", port, username="guest", password="guest", load_balancer_mode=True
    ) as p:
        await p.delete_stream(STREAM)


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "samples" / "rabbitmq-stream"

    def drive(port: int) -> None:
        codec_session(port)
        wrong_password(port)
        asyncio.run(rstream_session(port))

    return record(out, lambda node: node.stream_port, drive)


if __name__ == "__main__":
    raise SystemExit(main())
