"""What the AMQP 0-8 and 0-9 live tests share: a codec generated at test time as a user would
make it, and one conversation with a real RabbitMQ held through it.

`generated` runs `specgen generate SPEC --out DIR` (no flags) and imports the version's module.
`converse` drives the plain-socket client of the 0-9-1 live test (tests/amqp_client.py), logged
in with a frame-max of 4096 so that bodies span several frames: open channels, take an access
ticket (the Access class of 0-8 and 0-9), declare an exchange and a queue and bind them, publish
1,000 messages with every basic property in a transaction, get one, consume the rest under a
prefetch limit and ack them, see the next get come back empty, provoke a channel error (a
passive declare of a missing queue: Channel.Close 404) and close. `check_wire` then holds every
byte to the codec: every frame the server sent must re-encode to its very bytes, the client's
byte stream must read back frame by frame, and the number of frames of each kind must be what
the conversation implies.

The methods the conversation uses have the same fields in 0-8 and 0-9 but one: 0-9's
Basic.Consume ends in a `filter` table that 0-8's lacks, given through `consume_fields`.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
import time
from collections import Counter
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from amqp_client import AmqpClient

from specgen.cli import main

N = 1_000
FRAME_MAX = 4096  # frame-min-size of 0-8 and 0-9: every body over 4,088 bytes takes two frames
TS = 1_700_000_000
PUBLISHER, CONSUMER, FAILING = 1, 2, 3  # channels


def generated(
    tmp_path_factory: pytest.TempPathFactory, spec: Path, package: str, module: str
) -> Iterator[ModuleType]:
    """For a session fixture: the codec generated from `spec` as given (no flags) into a folder
    `package`, and its version module (`amqp_0_9_1.amqp0_8`) imported under that package."""
    base = tmp_path_factory.mktemp(package)
    assert main(["generate", str(spec), "--out", str(base / package)]) == 0
    sys.path.insert(0, str(base))
    try:
        yield importlib.import_module(f"{package}.{module}")
    finally:
        sys.path.remove(str(base))


def sibling(codec: ModuleType, name: str) -> ModuleType:
    """A module of the generated package the version module `codec` belongs to (`framing`)."""
    return importlib.import_module(f"{codec.__name__.rpartition('.')[0]}.{name}")


def body(i: int) -> bytes:
    """1 to 16,384 bytes (one to five frames), every hundredth message empty (no body frame)."""
    if i % 100 == 0:
        return b""
    size = 1 + (i * 7919) % 16_384
    return bytes((i + k) % 251 for k in range(size))


def properties(codec: ModuleType, i: int, content: bytes, label: str) -> Any:
    """Every basic property set, the headers table with a field of every kind."""
    headers = sibling(codec, "values").Table(
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
        len(content),
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
        type=f"specgen.amqp{label}",
        user_id="guest",  # RabbitMQ checks it is the user logged in
        app_id="specgen-tests",
        cluster_id="specgen-cluster",
        channel=PUBLISHER,
    )


def frames_of(size: int) -> int:
    return -(-size // (FRAME_MAX - 8))


@dataclasses.dataclass
class Conversation:
    label: str  # "08": in the names of the exchange, queue, consumer and message type
    sent: list[tuple[Any, bytes, bytes]]  # per message: properties, header frame, body
    tickets: dict[int, int]  # channel -> the access ticket the server granted on it
    publishing: float  # seconds: channels, declarations and the transaction
    consuming: float  # seconds: the get, the consumer, the empty get

    @property
    def body_frames(self) -> int:
        return sum(frames_of(len(content)) for _, _, content in self.sent)


def converse(
    c: AmqpClient, a: ModuleType, label: str, consume_fields: dict[str, Any] | None = None
) -> Conversation:
    """The conversation of the module doc, on a client `c` logged in with FRAME_MAX, through
    the version module `a`; `consume_fields` are Basic.Consume's beyond 0-8's."""
    started = time.monotonic()
    tickets = {}
    for ch in (PUBLISHER, CONSUMER):
        c.call(a.ChannelOpen("", channel=ch), a.ChannelOpenOk)
        granted = c.call(
            a.AccessRequest("/data", False, False, True, True, True, channel=ch), a.AccessRequestOk
        )
        tickets[ch] = granted.ticket
    ticket = tickets[CONSUMER]
    exchange, queue, key = (
        f"specgen-{label}-x",
        f"specgen-{label}-{time.monotonic_ns()}",
        f"route-{label}",
    )
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
    sent: list[tuple[Any, bytes, bytes]] = []
    step = FRAME_MAX - 8
    for first in range(1, N + 1, 100):
        frames: list[bytes] = []
        for i in range(first, first + 100):
            content = body(i)
            props = properties(a, i, content, label)
            publish = a.BasicPublish(
                tickets[PUBLISHER], exchange, key, False, False, channel=PUBLISHER
            )
            header = a.encode(props)
            frames += [a.encode(publish), header]
            frames += [
                a.encode(a.ContentBody(content[k : k + step], PUBLISHER))
                for k in range(0, len(content), step)
            ]
            sent.append((props, header, content))
        c.send_raw(b"".join(frames))
    c.call(a.TxCommit(channel=PUBLISHER), a.TxCommitOk)
    queued = c.call(
        a.QueueDeclare(ticket, queue, True, False, False, False, False, {}, channel=CONSUMER),
        a.QueueDeclareOk,
    )
    assert queued.message_count == N
    published = time.monotonic()

    def received(channel: int) -> tuple[Any, bytes]:
        props = c.expect(a.BasicProperties)
        assert props.channel == channel
        got = bytearray()
        while len(got) < props.body_size:
            got += c.expect(a.ContentBody).payload
        return props, bytes(got)

    def check(i: int, props: Any, content: bytes) -> None:
        want_props, want_header, want_body = sent[i - 1]
        # the content header comes back as it went (field-table types too), on another channel
        as_sent = dataclasses.replace(props, channel=PUBLISHER)
        assert as_sent == want_props, f"message {i}: properties differ"
        assert a.encode(as_sent) == want_header, f"message {i}: header bytes differ"
        assert content == want_body, f"message {i}: body differs"

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
    check(1, *received(CONSUMER))
    c.send(a.BasicAck(1, False, channel=CONSUMER))

    # ---- consume the rest, acking every 25 (the prefetch limit of 50 holds the rest back)
    tag = c.call(
        a.BasicConsume(
            ticket,
            queue,
            f"specgen-{label}",
            False,
            False,
            False,
            False,
            channel=CONSUMER,
            **(consume_fields or {}),
        ),
        a.BasicConsumeOk,
    ).consumer_tag
    assert tag == f"specgen-{label}"
    for i in range(2, N + 1):
        deliver = c.expect(a.BasicDeliver)
        assert (deliver.consumer_tag, deliver.delivery_tag, deliver.redelivered) == (tag, i, False)
        assert (deliver.exchange, deliver.routing_key) == (exchange, key)
        check(i, *received(CONSUMER))
        if i % 25 == 0:
            c.send(a.BasicAck(i, True, channel=CONSUMER))
    c.call(a.BasicCancel(tag, False, channel=CONSUMER), a.BasicCancelOk)
    empty = c.call(a.BasicGet(ticket, queue, True, channel=CONSUMER), a.BasicGetEmpty)
    assert empty.cluster_id == ""
    consumed = time.monotonic()

    # ---- a channel error: the server closes the channel, the connection lives on
    missing = f"no-such-queue-{label}"
    c.call(a.ChannelOpen("", channel=FAILING), a.ChannelOpenOk)
    c.send(a.QueueDeclare(0, missing, True, False, False, False, False, {}, channel=FAILING))
    closed = c.receive()
    assert isinstance(closed, a.ChannelClose), closed
    assert (closed.channel, closed.reply_code) == (FAILING, a.NOT_FOUND)
    assert (closed.class_id, closed.method_id) == (50, 10)  # Queue.Declare
    assert missing in closed.reply_text
    c.send(a.ChannelCloseOk(channel=FAILING))

    for ch in (PUBLISHER, CONSUMER):
        c.call(a.ChannelClose(200, "done", 0, 0, channel=ch), a.ChannelCloseOk)
    c.close()
    assert not c.inbox
    return Conversation(label, sent, tickets, published - started, consumed - published)


@dataclasses.dataclass
class Wire:
    server: list[Any]  # every message the server sent, decoded, in order
    client_frames: int
    seconds: float  # to re-encode and count both directions


def check_wire(c: AmqpClient, a: ModuleType, talk: Conversation) -> Wire:
    """Every byte both ways through the codec, and the frames counted by kind against what the
    conversation implies."""
    started = time.monotonic()
    decoded = []
    server: Counter[str] = Counter()
    for frame in c.frames:
        msg = a.decode(frame, sender="server")
        again = a.encode(msg)
        assert again == frame, f"{type(msg).__name__}: {frame.hex()} re-encodes as {again.hex()}"
        decoded.append(msg)
        server[type(msg).__name__] += 1
    client: Counter[str] = Counter()
    reader = a.FrameReader(sender="client", preamble=True)
    reader.feed(bytes(c.sent))
    for _, frame in reader.frames():
        msg = a.decode(frame, sender="client")
        assert a.encode(msg) == frame, type(msg).__name__
        client[type(msg).__name__] += 1
    reader.finish()
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
        ContentBody=talk.body_frames,
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
        ContentBody=talk.body_frames,
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
    return Wire(decoded, client.total(), time.monotonic() - started)


def summary(version: str, talk: Conversation, wire: Wire) -> str:
    return (
        f"\nAMQP {version} live: {N} messages ({talk.body_frames} body frames at frame-max "
        f"{FRAME_MAX}) published in a transaction in {talk.publishing:.2f}s, got and consumed "
        f"in {talk.consuming:.2f}s; {len(wire.server)} server frames and {wire.client_frames} "
        f"client frames re-encoded byte for byte in {wire.seconds:.2f}s"
    )
