"""The generated AMQP 0-9-1 codec (RabbitMQ's extended spec) against a real RabbitMQ.

A client on a plain socket that uses nothing but the generated codec (tests/amqp_client.py)
logs in, publishes 10,000 messages with every basic property set under publisher confirms,
then consumes them all back. Every property and body must come back as sent, every frame the
server sent must re-encode to its very bytes, and the client's whole byte stream must read
back frame by frame.
"""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

import pytest
from amqp_client import AmqpClient
from rabbitmq import RabbitNode

from specgen_codecs.amqp_0_9_1 import rabbitmq as amqp
from specgen_codecs.amqp_0_9_1.values import Table, Values

N = 10_000
BATCH = 500  # messages per sendall
CHANNEL = 1
LARGE_EVERY = 2_500  # every this many messages, one larger than a frame (several body frames)
TS = 1_700_000_000


def _headers(i: int) -> Table:
    """A headers table with most field kinds, a timestamp among them."""
    inner = Values([1, "two", None, True, Decimal("0.5"), b"\x00\x01", {"k": "v"}])
    headers = Table(
        {
            "i": i,
            "text": f"message №{i}",
            "long": 2**40 + i,
            "negative": -(2**31),
            "flag": i % 2 == 0,
            "price": Decimal("1234.56"),
            "void": None,
            "raw": b"\x00\xff\xce",
            "sent-at": TS + i,
            "nested": {"deeper": {"x": i, "list": inner}, "empty": {}},
            "array": [i, "s", [False, []]],
            "small": 7,
        }
    )
    headers.constructors["sent-at"] = ord("T")
    headers.constructors["small"] = ord("b")
    return headers


def _message(i: int) -> tuple[amqp.BasicProperties, bytes]:
    if i % LARGE_EVERY == 0:
        body = bytes((i + k) % 251 for k in range(300_000))
    else:
        body = f"message {i} ".encode() * (1 + i % 40)
    props = amqp.BasicProperties(
        0,
        len(body),
        content_type="application/x-specgen",
        content_encoding="identity",
        headers=_headers(i),
        delivery_mode=2,
        priority=i % 10,
        correlation_id=f"corr-{i}",
        reply_to=f"reply-{i % 7}",
        expiration="600000",
        message_id=f"msg-{i:05d}",
        timestamp=TS + i,
        type="specgen.test",
        user_id="guest",  # RabbitMQ checks it is the user logged in
        app_id="specgen-tests",
        reserved="specgen-cluster",  # cluster-id, deprecated: RabbitMQ 3.10 still accepts it
        channel=CHANNEL,
    )
    return props, body


def _content(props: amqp.BasicProperties, body: bytes, frame_max: int) -> list[amqp.Message]:
    step = frame_max - 8
    frames: list[amqp.Message] = [props]
    frames += [amqp.ContentBody(body[k : k + step], CHANNEL) for k in range(0, len(body), step)]
    return frames


class Confirms:
    """Publisher confirms: which delivery tags the server acked (one, or all up to one)."""

    def __init__(self, n: int) -> None:
        self.acked = bytearray(n + 1)
        self.low = 1  # lowest tag not acked yet
        self.frames = 0
        self.multiple = 0
        self.nacked: list[int] = []

    def take(self, msg: amqp.Message) -> None:
        if isinstance(msg, amqp.BasicNack):
            self.nacked.append(msg.delivery_tag)
            return
        assert isinstance(msg, amqp.BasicAck), f"unexpected {msg!r} while publishing"
        assert msg.channel == CHANNEL
        self.frames += 1
        tag = msg.delivery_tag
        assert 1 <= tag < len(self.acked), tag
        if msg.multiple:
            self.multiple += 1
            for t in range(self.low, tag + 1):
                self.acked[t] = 1
        else:
            assert not self.acked[tag], f"tag {tag} acked twice"
            self.acked[tag] = 1
        while self.low < len(self.acked) and self.acked[self.low]:
            self.low += 1

    def done(self) -> bool:
        return self.low == len(self.acked)


def test_publish_confirm_consume_10000(rabbit: RabbitNode) -> None:
    started = time.monotonic()
    c = AmqpClient(port=rabbit.amqp_port)
    c.open()
    assert c.server_properties["product"] == "RabbitMQ"
    caps = c.server_properties["capabilities"]
    assert caps["publisher_confirms"] is True and caps["basic.nack"] is True

    c.call(amqp.ChannelOpen("", channel=CHANNEL), amqp.ChannelOpenOk)
    c.call(amqp.ConfirmSelect(False, channel=CHANNEL), amqp.ConfirmSelectOk)
    queue = f"specgen-amqp-{time.monotonic_ns()}"
    declared = c.call(
        amqp.QueueDeclare(0, queue, False, False, True, True, False, {}, channel=CHANNEL),
        amqp.QueueDeclareOk,
    )
    assert (declared.queue, declared.message_count, declared.consumer_count) == (queue, 0, 0)

    # ---- publish, under confirms
    sent: list[tuple[amqp.BasicProperties, bytes, bytes]] = []  # properties, header frame, body
    confirms = Confirms(N)
    for first in range(1, N + 1, BATCH):
        frames: list[bytes] = []
        for i in range(first, min(first + BATCH, N + 1)):
            props, body = _message(i)
            publish = amqp.BasicPublish(0, "", queue, False, False, channel=CHANNEL)
            frames.append(amqp.encode(publish))
            content = [amqp.encode(m) for m in _content(props, body, c.frame_max)]
            sent.append((props, content[0], body))
            frames += content
        c.send_raw(b"".join(frames))
        c.poll()
        while c.inbox:
            confirms.take(c.next())
    while not confirms.done():
        confirms.take(c.next())
    assert confirms.nacked == []
    published = time.monotonic()

    # ---- consume them back
    c.call(amqp.BasicQos(0, 1000, False, channel=CHANNEL), amqp.BasicQosOk)
    tag = c.call(
        amqp.BasicConsume(0, queue, "specgen-consumer", False, False, False, False, {}, CHANNEL),
        amqp.BasicConsumeOk,
    ).consumer_tag
    assert tag == "specgen-consumer"
    for i in range(1, N + 1):
        deliver = c.expect(amqp.BasicDeliver)
        assert (deliver.consumer_tag, deliver.delivery_tag) == (tag, i)
        assert (deliver.redelivered, deliver.exchange, deliver.routing_key) == (False, "", queue)
        props = c.expect(amqp.BasicProperties)
        got = bytearray()
        while len(got) < props.body_size:
            got += c.expect(amqp.ContentBody).payload
        want_props, want_header, want_body = sent[i - 1]
        assert props == want_props, f"message {i}: properties differ"
        # and the same field-table types: RabbitMQ hands the content header back as it came
        assert props.headers is not None
        mine_props = amqp.decode(want_header)
        assert isinstance(mine_props, amqp.BasicProperties)
        mine = mine_props.headers
        assert _kinds(props.headers) == _kinds(mine), f"message {i}: header types differ"
        assert amqp.encode(props) == want_header, f"message {i}: header bytes differ"
        assert got == want_body, f"message {i}: body differs"
        if i % 500 == 0:
            c.send(amqp.BasicAck(i, True, channel=CHANNEL))
    consumed = time.monotonic()

    left = c.call(
        amqp.QueueDeclare(0, queue, True, False, False, False, False, {}, channel=CHANNEL),
        amqp.QueueDeclareOk,
    )
    assert (left.message_count, left.consumer_count) == (0, 1)
    c.call(amqp.BasicCancel(tag, False, channel=CHANNEL), amqp.BasicCancelOk)
    c.call(amqp.ChannelClose(200, "done", 0, 0, channel=CHANNEL), amqp.ChannelCloseOk)
    c.close()
    assert not c.inbox

    # ---- every byte, both ways
    for frame in c.frames:
        msg = amqp.decode(frame, sender="server")
        again = amqp.encode(msg)
        assert again == frame, f"{type(msg).__name__}: {frame.hex()} re-encodes as {again.hex()}"
    reader = amqp.FrameReader(sender="client", preamble=True)
    reader.feed(bytes(c.sent))
    client_frames = 0
    for _, frame in reader.frames():
        msg = amqp.decode(frame, sender="client")
        assert amqp.encode(msg) == frame, type(msg).__name__
        client_frames += 1
    reader.finish()
    large = N // LARGE_EVERY
    body_frames = N - large + large * -(-300_000 // (c.frame_max - 8))
    # StartOk TuneOk Open, ChannelOpen Select Declare, publishes, Qos Consume acks Declare Cancel
    # Close Close
    assert client_frames == 6 + 2 * N + body_frames + 2 + N // 500 + 1 + 1 + 2
    verified = time.monotonic()

    print(
        f"\nAMQP 0-9-1 live: {N} messages published and confirmed in "
        f"{published - started:.2f}s ({confirms.frames} Basic.Ack frames, "
        f"{confirms.multiple} with multiple), consumed in {consumed - published:.2f}s, "
        f"{len(c.frames)} server frames and {client_frames} client frames "
        f"({len(c.sent)} bytes) re-encoded byte for byte in {verified - consumed:.2f}s; "
        f"cluster-id accepted and returned"
    )


def _kinds(value: Any) -> Any:
    """The constructors a decoded table carries, recursively: what the server sent back must
    use the same types, not just equal values."""
    if isinstance(value, Table):
        return {k: (value.constructors.get(k), _kinds(v)) for k, v in value.items()}
    if isinstance(value, Values):
        return [(c, _kinds(v)) for c, v in zip(value.constructors, value, strict=True)]
    return None


@pytest.mark.parametrize("user_id", ["guest", "someone-else"])
def test_user_id_checked(rabbit: RabbitNode, user_id: str) -> None:
    """RabbitMQ refuses a user-id that is not the logged-in user (a channel error, 406)."""
    c = AmqpClient(port=rabbit.amqp_port)
    c.open()
    c.call(amqp.ChannelOpen("", channel=CHANNEL), amqp.ChannelOpenOk)
    c.call(amqp.ConfirmSelect(False, channel=CHANNEL), amqp.ConfirmSelectOk)
    props = amqp.BasicProperties(0, 1, user_id=user_id, channel=CHANNEL)
    c.send(
        amqp.BasicPublish(0, "", "no-such-queue", False, False, channel=CHANNEL),
        props,
        amqp.ContentBody(b"x", CHANNEL),
    )
    if user_id == "guest":
        ack = c.expect(amqp.BasicAck)
        assert (ack.delivery_tag, ack.multiple) == (1, False)
        c.call(amqp.ChannelClose(200, "done", 0, 0, channel=CHANNEL), amqp.ChannelCloseOk)
    else:
        close = c.receive()
        assert isinstance(close, amqp.ChannelClose), close
        assert close.reply_code == amqp.PRECONDITION_FAILED
        assert (close.class_id, close.method_id) == (60, 40)
        assert "user_id" in close.reply_text
        c.send(amqp.ChannelCloseOk(channel=CHANNEL))
    c.close()
    for frame in c.frames:
        assert amqp.encode(amqp.decode(frame, sender="server")) == frame
