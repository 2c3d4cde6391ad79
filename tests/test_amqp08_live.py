"""AMQP 0-8, generated at test time from the corpus's XML with no code of its own, against a
real RabbitMQ (3.10 still answers the 0-8 protocol header with Connection.Start 8-0).

`specgen generate amqp0-8.xml --out DIR` makes the codec, exactly as a user would run it; the
plain-socket client of the 0-9-1 live test (tests/amqp_client.py) drives it: log in with a
frame-max of 4096 so that bodies span several frames, open channels, take an access ticket
(0-8's Access class), declare an exchange and a queue and bind them, publish 1,000 messages
with every basic property in a transaction, get one and see the next get come back empty,
consume the rest under a prefetch limit and ack them, provoke a channel error (a passive
declare of a missing queue: Channel.Close 404) and close. Every frame the server sent must
re-encode to its very bytes, the client's byte stream must read back frame by frame, and the
number of frames of each kind must be what the conversation implies.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
import time
from collections import Counter
from collections.abc import Iterator
from decimal import Decimal
from types import ModuleType
from typing import Any

import pytest
from amqp_client import AmqpClient
from corpus import corpus_file
from rabbitmq import RabbitNode

from specgen.cli import main

N = 1_000
FRAME_MAX = 4096  # AMQP 0-8's frame-min-size: every body over 4,088 bytes takes two frames
TS = 1_700_000_000
PUBLISHER, CONSUMER, FAILING = 1, 2, 3  # channels
SPEC = "amqp-0-8/amqp0-8.xml"
PACKAGE = "specgen_amqp08_live"  # the folder generated into, imported under this name


@pytest.fixture(scope="session")
def amqp08(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The AMQP 0-8 codec, generated from the XML as given (no flags) and imported."""
    spec = corpus_file(SPEC)
    if spec is None:
        pytest.skip(f"the spec corpus ({SPEC}) is not available: set SPECGEN_CORPUS")
    base = tmp_path_factory.mktemp("amqp08")
    assert main(["generate", str(spec), "--out", str(base / PACKAGE)]) == 0
    sys.path.insert(0, str(base))
    try:
        yield importlib.import_module(f"{PACKAGE}.amqp_0_9_1.amqp0_8")
    finally:
        sys.path.remove(str(base))


def _body(i: int) -> bytes:
    """1 to 16,384 bytes (one to five frames), every hundredth message empty (no body frame)."""
    if i % 100 == 0:
        return b""
    size = 1 + (i * 7919) % 16_384
    return bytes((i + k) % 251 for k in range(size))


def _properties(codec: ModuleType, table: type, i: int, body: bytes) -> Any:
    headers = table(
        {
            "i": i,
            "text": f"message №{i}",
            "long": 2**40 + i,
            "flag": i % 2 == 0,
            "price": Decimal("1234.56"),
            "void": None,
            "raw": b"\x00\xff\xce",
            "sent-at": TS + i,
            "nested": {"deeper": {"x": i}, "empty": {}},
            "array": [i, "s", [False, []]],
        }
    )
    headers.constructors["sent-at"] = ord("T")
    return codec.BasicProperties(
        0,
        len(body),
        content_type="application/x-specgen",
        content_encoding="identity",
        headers=headers,
        delivery_mode=2,
        priority=i % 10,
        correlation_id=f"corr-{i}",
        reply_to=f"reply-{i % 7}",
        expiration="600000",
        message_id=f"msg-{i:05d}",
        timestamp=TS + i,
        type="specgen.amqp08",
        user_id="guest",  # RabbitMQ checks it is the user logged in
        app_id="specgen-tests",
        cluster_id="specgen-cluster",
        channel=PUBLISHER,
    )


def _frames_of(size: int) -> int:
    return -(-size // (FRAME_MAX - 8))


def test_amqp08_conversation(rabbit: RabbitNode, amqp08: ModuleType) -> None:
    a = amqp08
    package = a.__name__.rpartition(".")[0]
    table = importlib.import_module(f"{package}.values").Table
    # the header RabbitMQ answers 0-8 on, derived from the XML's major and minor alone
    framing = importlib.import_module(f"{package}.framing")
    assert framing.PREAMBLES == {"client": b"AMQP\x01\x01\x08\x00"}
    started = time.monotonic()
    c = AmqpClient(port=rabbit.amqp_port, codec=a)
    c.open(version=(8, 0), frame_max=FRAME_MAX)
    assert c.frame_max == FRAME_MAX
    assert c.server_properties["product"] == "RabbitMQ"

    tickets = {}
    for ch in (PUBLISHER, CONSUMER):
        c.call(a.ChannelOpen("", channel=ch), a.ChannelOpenOk)
        granted = c.call(
            a.AccessRequest("/data", False, False, True, True, True, channel=ch), a.AccessRequestOk
        )
        tickets[ch] = granted.ticket
    ticket = tickets[CONSUMER]
    exchange, queue, key = "specgen-08-x", f"specgen-08-{time.monotonic_ns()}", "route-08"
    c.call(
        a.ExchangeDeclare(
            ticket, exchange, "direct", False, False, True, False, False, {}, channel=CONSUMER
        ),
        a.ExchangeDeclareOk,
    )
    # exclusive, so it goes with the connection; not auto-delete, so it outlives the consumer
    declared = c.call(
        a.QueueDeclare(ticket, queue, False, False, True, False, False, {}, channel=CONSUMER),
        a.QueueDeclareOk,
    )
    assert (declared.queue, declared.message_count, declared.consumer_count) == (queue, 0, 0)
    c.call(a.QueueBind(ticket, queue, exchange, key, False, {}, channel=CONSUMER), a.QueueBindOk)

    # ---- publish, in one transaction: the commit's answer says every message is queued
    c.call(a.TxSelect(channel=PUBLISHER), a.TxSelectOk)
    sent: list[tuple[Any, bytes, bytes]] = []  # properties, header frame, body
    for first in range(1, N + 1, 100):
        frames: list[bytes] = []
        for i in range(first, first + 100):
            body = _body(i)
            props = _properties(a, table, i, body)
            publish = a.BasicPublish(
                tickets[PUBLISHER], exchange, key, False, False, channel=PUBLISHER
            )
            header = a.encode(props)
            step = FRAME_MAX - 8
            frames += [a.encode(publish), header]
            frames += [
                a.encode(a.ContentBody(body[k : k + step], PUBLISHER))
                for k in range(0, len(body), step)
            ]
            sent.append((props, header, body))
        c.send_raw(b"".join(frames))
    c.call(a.TxCommit(channel=PUBLISHER), a.TxCommitOk)
    queued = c.call(
        a.QueueDeclare(ticket, queue, True, False, False, False, False, {}, channel=CONSUMER),
        a.QueueDeclareOk,
    )
    assert queued.message_count == N
    published = time.monotonic()

    def content(channel: int) -> tuple[Any, bytes]:
        props = c.expect(a.BasicProperties)
        assert props.channel == channel
        got = bytearray()
        while len(got) < props.body_size:
            got += c.expect(a.ContentBody).payload
        return props, bytes(got)

    def check(i: int, props: Any, body: bytes) -> None:
        want_props, want_header, want_body = sent[i - 1]
        # the content header comes back as it went (field-table types too), on another channel
        as_sent = dataclasses.replace(props, channel=PUBLISHER)
        assert as_sent == want_props, f"message {i}: properties differ"
        assert a.encode(as_sent) == want_header, f"message {i}: header bytes differ"
        assert body == want_body, f"message {i}: body differs"

    # ---- get one, under a prefetch limit for what follows
    c.call(a.BasicQos(0, 50, False, channel=CONSUMER), a.BasicQosOk)
    got = c.call(a.BasicGet(ticket, queue, False, channel=CONSUMER), a.BasicGetOk)
    assert (got.delivery_tag, got.redelivered, got.exchange, got.routing_key) == (
        1,
        False,
        exchange,
        key,
    )
    assert got.message_count == N - 1
    check(1, *content(CONSUMER))
    c.send(a.BasicAck(1, False, channel=CONSUMER))

    # ---- consume the rest, acking every 25 (the prefetch limit of 50 holds the rest back)
    tag = c.call(
        a.BasicConsume(ticket, queue, "specgen-08", False, False, False, False, channel=CONSUMER),
        a.BasicConsumeOk,
    ).consumer_tag
    assert tag == "specgen-08"
    for i in range(2, N + 1):
        deliver = c.expect(a.BasicDeliver)
        assert (deliver.consumer_tag, deliver.delivery_tag, deliver.redelivered) == (tag, i, False)
        assert (deliver.exchange, deliver.routing_key) == (exchange, key)
        check(i, *content(CONSUMER))
        if i % 25 == 0:
            c.send(a.BasicAck(i, True, channel=CONSUMER))
    c.call(a.BasicCancel(tag, False, channel=CONSUMER), a.BasicCancelOk)
    empty = c.call(a.BasicGet(ticket, queue, True, channel=CONSUMER), a.BasicGetEmpty)
    assert empty.cluster_id == ""
    consumed = time.monotonic()

    # ---- a channel error: the server closes the channel, the connection lives on
    c.call(a.ChannelOpen("", channel=FAILING), a.ChannelOpenOk)
    c.send(
        a.QueueDeclare(0, "no-such-queue-08", True, False, False, False, False, {}, channel=FAILING)
    )
    closed = c.receive()
    assert isinstance(closed, a.ChannelClose), closed
    assert (closed.channel, closed.reply_code) == (FAILING, a.NOT_FOUND)
    assert (closed.class_id, closed.method_id) == (50, 10)  # Queue.Declare
    assert "no-such-queue-08" in closed.reply_text
    c.send(a.ChannelCloseOk(channel=FAILING))

    for ch in (PUBLISHER, CONSUMER):
        c.call(a.ChannelClose(200, "done", 0, 0, channel=ch), a.ChannelCloseOk)
    c.close()
    assert not c.inbox

    # ---- every byte, both ways, and the frames counted by kind
    server: Counter[str] = Counter()
    for frame in c.frames:
        msg = a.decode(frame, sender="server")
        again = a.encode(msg)
        assert again == frame, f"{type(msg).__name__}: {frame.hex()} re-encodes as {again.hex()}"
        server[type(msg).__name__] += 1
    client: Counter[str] = Counter()
    reader = a.FrameReader(sender="client", preamble=True)
    reader.feed(bytes(c.sent))
    for _, frame in reader.frames():
        msg = a.decode(frame, sender="client")
        assert a.encode(msg) == frame, type(msg).__name__
        client[type(msg).__name__] += 1
    reader.finish()
    body_frames = sum(_frames_of(len(body)) for _, _, body in sent)
    assert server == Counter(
        ConnectionStart=1,
        ConnectionTune=1,
        ConnectionOpenOk=1,
        ChannelOpenOk=3,
        AccessRequestOk=2,
        ExchangeDeclareOk=1,
        QueueDeclareOk=2,
        QueueBindOk=1,
        TxSelectOk=1,
        TxCommitOk=1,
        BasicQosOk=1,
        BasicGetOk=1,
        BasicConsumeOk=1,
        BasicDeliver=N - 1,
        BasicProperties=N,
        ContentBody=body_frames,
        BasicCancelOk=1,
        BasicGetEmpty=1,
        ChannelClose=1,
        ChannelCloseOk=2,
        ConnectionCloseOk=1,
    )
    assert client == Counter(
        ConnectionStartOk=1,
        ConnectionTuneOk=1,
        ConnectionOpen=1,
        ChannelOpen=3,
        AccessRequest=2,
        ExchangeDeclare=1,
        QueueDeclare=3,
        QueueBind=1,
        TxSelect=1,
        BasicPublish=N,
        BasicProperties=N,
        ContentBody=body_frames,
        TxCommit=1,
        BasicQos=1,
        BasicGet=2,
        BasicAck=1 + N // 25,  # after the get, then at 25, 50, ... 1,000
        BasicConsume=1,
        BasicCancel=1,
        ChannelCloseOk=1,
        ChannelClose=2,
        ConnectionClose=1,
    )
    verified = time.monotonic()
    print(
        f"\nAMQP 0-8 live: {N} messages ({body_frames} body frames at frame-max {FRAME_MAX}) "
        f"published in a transaction in {published - started:.2f}s, got and consumed in "
        f"{consumed - published:.2f}s; {len(c.frames)} server frames and "
        f"{client.total()} client frames re-encoded byte for byte in "
        f"{verified - consumed:.2f}s"
    )
