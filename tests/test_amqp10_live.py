"""The generated AMQP 1.0 codec against a real RabbitMQ (3.10, its rabbitmq_amqp1_0 plugin).

A client on a plain socket that uses nothing but the generated codec (tests/amqp10_client.py)
logs in with SASL PLAIN and ANONYMOUS, then on one connection and one session attaches a
sending and a receiving link to one queue and moves 10,000 messages through it: properties,
application properties of many types and data bodies of varied sizes, some larger than the
negotiated max-frame-size (several transfer frames, `more` on all but the last). The sender
leaves its deliveries unsettled and counts the server's accepted dispositions; the receiver
grants credit in batches and settles with accepted dispositions. The sender keeps within the
server's session incoming window as well as its link credit; the client reads the server's frames
while its own writes wait, and ends the session reading past whatever the server still sends
before its end. Every message must arrive in order as sent, every server frame must re-encode to
its very bytes, and each direction's byte stream must read back frame by frame.
"""

from __future__ import annotations

import math
import time
from typing import Any

import pytest
from amqp10_client import AMQP_FRAME, Amqp10Client
from rabbitmq import RabbitNode, installed_version

from specgen_codecs.amqp_1_0.v1_0 import FrameReader
from specgen_codecs.amqp_1_0.v1_0 import commands as c
from specgen_codecs.amqp_1_0.v1_0.commands import (
    Frame,
    Message,
    ProtocolHeader,
    decode,
    decode_message,
    encode,
    encode_message,
)
from specgen_codecs.amqp_1_0.values import Int, Symbol, Timestamp, UByte, UInt, ULong

N = 10_000
BATCH = 250  # deliveries per sendall
CREDIT = 500  # link credit the receiver grants at a time
SETTLE = 100  # deliveries the receiver settles per disposition
LARGE_EVERY = 500  # every this many messages, one larger than a frame
MAX_FRAME_SIZE = 32768  # ours: the server echoes it, so it is the connection's both ways
SENDER_HANDLE, RECEIVER_HANDLE = 0, 1
TS = 1_700_000_000_000  # ms


def _message(i: int) -> Message:
    """Message `i`: properties, application properties of many types, one data body."""
    if i % LARGE_EVERY == 0:
        body = bytes((i + k) % 251 for k in range(70_000 + (i // LARGE_EVERY % 4) * 20_000))
    else:
        body = f"message {i} ".encode() * (i * 37 % 120)
    app = {
        "i": i,
        "tenant": f"t-{i % 7}",
        "even": i % 2 == 0,
        "ratio": i / 7,
        "small": UByte(i % 256),
        "count": UInt(i * 3),
        "big": ULong(2**40 + i),
        "neg": Int(-i),
        "kind": Symbol("order" if i % 3 else "refund"),
        "at": Timestamp(TS + i),
        "raw": bytes([i % 256, 0, 255]),
        "none": None,
    }
    props = c.Properties(
        message_id=f"msg-{i:05d}" if i % 4 else ULong(i),
        user_id=b"guest" if i % 10 == 3 else None,
        to=None,
        subject=f"subject {i % 5}",
        reply_to="/queue/replies" if i % 8 == 1 else None,
        correlation_id=f"corr-{i}" if i % 3 == 0 else None,
        content_type=Symbol("application/octet-stream"),
        creation_time=TS + i,
        group_id="g" if i % 2 else None,
        group_sequence=i,
    )
    return Message(
        properties=props, application_properties=c.ApplicationProperties(app), body=[c.Data(body)]
    )


def _kinds(value: dict[Any, Any]) -> dict[Any, type]:
    return {k: type(v) for k, v in value.items()}


@pytest.mark.parametrize("mechanism", ["PLAIN", "ANONYMOUS"])
def test_sasl_and_open(rabbit: RabbitNode, mechanism: str) -> None:
    c10 = Amqp10Client(port=rabbit.amqp_port)
    mechanisms, outcome = c10.sasl(mechanism)
    assert {"PLAIN", "ANONYMOUS"} <= set(mechanisms), mechanisms
    assert outcome.code == 0
    opened = c10.open(container_id=f"specgen-{mechanism.lower()}")
    # the node's name, with the machine's host name (not the "localhost" we started it as)
    assert opened.container_id is not None
    assert opened.container_id.split("@")[0] == rabbit.node.split("@")[0]
    assert opened.max_frame_size == MAX_FRAME_SIZE  # RabbitMQ 3.10 takes ours
    assert opened.properties is not None
    assert opened.properties["product"] == "RabbitMQ"
    assert opened.properties["cluster_name"] == opened.container_id
    assert opened.properties["version"] == installed_version()
    begun = c10.begin()
    assert begun.remote_channel == 0 and begun.next_outgoing_id == 0
    assert c10.close().error is None
    # the server's frames: SASL header, mechanisms, outcome, AMQP header, open, begin, end,
    # close (RabbitMQ 3.10 now and then loses its end: Amqp10Client.close, with a warning)
    kinds = [f.COMMAND if isinstance(f, Frame) else f.protocol_id for f in c10.frames]
    end = ["end"] if c10.end_answered else []
    assert kinds == [3, "sasl-mechanisms", "sasl-outcome", 0, "open", "begin", *end, "close"]
    for raw, frame in zip(c10.raw_frames, c10.frames, strict=True):
        assert encode(frame) == raw


class Receiver:
    """The receiving link: reassembles deliveries, checks each against what was sent, grants
    credit in batches and settles in ranges."""

    def __init__(self, client: Amqp10Client, sent: list[bytes]) -> None:
        self.c = client
        self.sent = sent  # each message's bare bytes, as sent
        self.count = 0  # whole deliveries received
        self.limit = 0  # deliveries the granted credit allows
        self.partial = bytearray()
        self.frames_of: list[int] = []  # transfer frames per delivery
        self.frames = 0
        self.transfers = 0  # transfer frames taken, all deliveries: the server's transfer ids
        self.delivery_id: int | None = None
        self.unsettled_from: int | None = None
        self.dispositions = 0

    def grant(self) -> None:
        if self.limit - self.count <= CREDIT // 2 and self.limit < N:
            self.limit = self.count + CREDIT
            self.c.send(self.c.flow_frame(RECEIVER_HANDLE, self.count, CREDIT))

    def settle(self) -> None:
        if self.unsettled_from is None:
            return
        assert self.delivery_id is not None
        disposition = c.Disposition(True, self.unsettled_from, self.delivery_id, True, c.Accepted())
        self.c.send(self.c.frame(disposition))
        self.unsettled_from = None
        self.dispositions += 1

    def take(self, t: c.Transfer, payload: bytes) -> None:
        assert t.handle == RECEIVER_HANDLE
        assert self.count < self.limit, "a delivery beyond the credit granted"
        first = not self.partial and self.frames == 0
        if first:
            # RabbitMQ repeats delivery-id and tag on every frame of a delivery; the first
            # one must carry them
            want = self.count if self.delivery_id is None else self.delivery_id + 1
            assert t.delivery_id == want, (t.delivery_id, want)
            assert t.delivery_tag is not None and t.message_format == 0
            assert not t.settled  # we asked for unsettled deliveries
            self.delivery_id = t.delivery_id
            if self.unsettled_from is None:
                self.unsettled_from = t.delivery_id
        elif t.delivery_id is not None:
            assert t.delivery_id == self.delivery_id
        self.frames += 1
        self.transfers += 1
        self.partial += payload
        if t.more:
            return
        i = self.count + 1
        data = bytes(self.partial)
        self.partial.clear()
        self.frames_of.append(self.frames)
        self.frames = 0
        self._check(i, data)
        self.count += 1
        if self.count % SETTLE == 0 or self.count == N:
            self.settle()
        self.grant()

    def _check(self, i: int, data: bytes) -> None:
        want = _message(i)
        got = decode_message(data)
        # the bare message comes back as sent, byte for byte, after what the server adds
        assert data.endswith(self.sent[i - 1]), f"message {i}: the bare message differs"
        assert got.header is not None and got.header.first_acquirer is True
        assert got.properties == want.properties, f"message {i}: properties differ"
        assert got.application_properties is not None and want.application_properties
        app, want_app = got.application_properties.value, want.application_properties.value
        assert app == want_app, f"message {i}: application-properties differ"
        assert app is not None and want_app is not None
        assert _kinds(app) == _kinds(want_app), f"message {i}: application-property types"
        assert got.body == want.body, f"message {i}: body differs"


def test_transfer_10000(rabbit: RabbitNode) -> None:
    started = time.monotonic()
    c10 = Amqp10Client(port=rabbit.amqp_port, max_frame_size=MAX_FRAME_SIZE)
    _, outcome = c10.sasl("PLAIN")
    assert outcome.code == 0
    assert c10.open().max_frame_size == MAX_FRAME_SIZE
    begun = c10.begin()
    assert begun.incoming_window and begun.incoming_window > 0

    queue = f"specgen-amqp10-{time.monotonic_ns()}"
    # /queue/<name> declares the queue; /amq/queue/<name> needs it to exist already
    attached = c10.attach_sender("sender", SENDER_HANDLE, f"/queue/{queue}")
    assert (attached.handle, attached.role) == (SENDER_HANDLE, True)
    assert attached.target is not None and attached.target.address == f"/queue/{queue}"
    credit = c10.expect(c.Flow)  # RabbitMQ grants the sender its credit at once
    assert credit.handle == SENDER_HANDLE and credit.link_credit is not None
    assert credit.link_credit >= N  # 65536 on 3.10: we need not wait for more
    attached = c10.attach_receiver("receiver", RECEIVER_HANDLE, f"/amq/queue/{queue}")
    assert (attached.handle, attached.role) == (RECEIVER_HANDLE, False)
    assert attached.source is not None and attached.source.address == f"/amq/queue/{queue}"
    assert attached.initial_delivery_count == 0

    sent: list[bytes] = []  # each message's bare bytes, as sent
    sent_frames_of: list[int] = []
    accepted = bytearray(N)  # per delivery id of ours: the server accepted and settled it
    settled_by_server = 0
    server_dispositions = 0
    send_limit = credit.link_credit  # deliveries the server's credit allows
    other: list[str] = []
    window_waits = 0  # batches cut short by the server's session incoming window
    receiver = Receiver(c10, sent)
    receiver.grant()

    def process(frame: Frame) -> None:
        nonlocal send_limit, settled_by_server, server_dispositions
        body = frame.body
        assert frame.type == AMQP_FRAME and frame.channel == 0
        if isinstance(body, c.Transfer):
            receiver.take(body, frame.payload)
        elif isinstance(body, c.Disposition):
            # the server settles our sender's deliveries: receiver role, accepted
            assert body.role is True and body.settled is True, body
            assert isinstance(body.state, c.Accepted), body
            server_dispositions += 1
            last = body.first if body.last is None else body.last
            assert body.first is not None and body.first <= last < len(sent), body
            for d in range(body.first, last + 1):
                assert not accepted[d], f"delivery {d} settled twice"
                accepted[d] = 1
            settled_by_server += last - body.first + 1
        elif isinstance(body, c.Flow) and body.handle == SENDER_HANDLE:
            assert body.link_credit is not None
            # RabbitMQ leaves delivery-count out: the credit counts from what we sent so far
            base = len(sent) if body.delivery_count is None else body.delivery_count
            send_limit = max(send_limit, base + body.link_credit)
        elif isinstance(body, c.Flow):
            other.append(f"flow(handle={body.handle})")  # the server's view of our receiver
            # its session state: one transfer id per transfer frame, every frame so far (the
            # client takes next-incoming-id from the flow, as 2.5.6 says: this counts apart)
            assert body.next_outgoing_id == (begun.next_outgoing_id or 0) + receiver.transfers
            assert body.next_incoming_id is not None
            assert body.next_incoming_id <= c10.next_outgoing_id, body
        else:
            raise AssertionError(f"unexpected {body!r}")

    while len(sent) < N or receiver.count < N or settled_by_server < N:
        room = min(send_limit - len(sent), N - len(sent), BATCH)
        chunks: list[bytes] = []
        count = 0
        for i in range(len(sent) + 1, len(sent) + room + 1):
            bare = encode_message(_message(i))
            tag = i.to_bytes(4, "big")
            if c10.frames_needed(SENDER_HANDLE, tag, len(bare)) > c10.remote_incoming_window:
                window_waits += 1  # the server's flow reopens its window
                break
            sent.append(bare)
            frames = c10.transfer_frames(SENDER_HANDLE, tag, bare)
            sent_frames_of.append(len(frames))
            chunks += [encode(f) for f in frames]
            count += len(frames)
        if count:
            c10.send_raw(b"".join(chunks), count)  # reads what the server sends meanwhile
            c10.poll()
        else:
            c10.wait()
        while c10.inbox:
            process(c10.next())
    transferred = time.monotonic()

    assert receiver.count == N and settled_by_server == N and all(accepted)
    assert receiver.partial == b""
    c10.close()
    assert not c10.inbox
    # what the server sent after our end, before its own (2.5.5: END_SENT still receives): no
    # delivery, all of them came; after our close only its end, if that came late
    assert not any(isinstance(f, Frame) and isinstance(f.body, c.Transfer) for f in c10.before_end)
    assert all(isinstance(f, Frame) and isinstance(f.body, c.End) for f in c10.before_close)

    # ---- frames: more than one for the large messages, both ways
    large = [i - 1 for i in range(LARGE_EVERY, N + 1, LARGE_EVERY)]
    for k in large:
        assert sent_frames_of[k] >= math.ceil(len(sent[k]) / MAX_FRAME_SIZE) > 1
        assert receiver.frames_of[k] >= math.ceil(len(sent[k]) / MAX_FRAME_SIZE) > 1
    assert sum(sent_frames_of) - N == sum(sent_frames_of[k] - 1 for k in large)
    small = set(range(N)) - set(large)
    assert all(receiver.frames_of[k] == 1 for k in small)
    assert all(len(raw) <= MAX_FRAME_SIZE for raw in c10.raw_frames)

    # ---- every byte, both ways
    for raw, frame in zip(c10.raw_frames, c10.frames, strict=True):
        again = encode(decode(raw))
        assert again == raw, f"{frame!r}: {raw.hex()} re-encodes as {again.hex()}"
        assert again == encode(frame)
    reader = FrameReader(max_frame_size=MAX_FRAME_SIZE)
    reader.feed(bytes(c10.received))
    server = list(reader)
    assert len(server) == len(c10.raw_frames)
    assert [f.COMMAND for f in server] == [f.COMMAND for f in c10.frames]
    reader = FrameReader()
    reader.feed(bytes(c10.sent))
    client = list(reader)
    assert len(client) == c10.sent_frames
    assert all(len(encode(f)) <= MAX_FRAME_SIZE for f in client)  # the negotiated limit
    assert b"".join(encode(f) for f in client) == bytes(c10.sent)
    headers = [f for f in client if isinstance(f, ProtocolHeader)]
    assert [h.protocol_id for h in headers] == [3, 0]
    # SASL init, open, begin, 2 attaches, transfers, credit flows, dispositions, end, close
    flows = sum(1 for f in client if isinstance(f, Frame) and isinstance(f.body, c.Flow))
    assert flows == math.ceil((N - CREDIT) / (CREDIT // 2)) + 1 + c10.session_flows
    assert (
        c10.sent_frames
        == 2 + 1 + 1 + 1 + 2 + sum(sent_frames_of) + flows + (receiver.dispositions) + 2
    )
    verified = time.monotonic()

    print(
        f"\nAMQP 1.0 live: {N} messages sent and received in {transferred - started:.2f}s "
        f"({sum(sent_frames_of)} transfer frames sent, {sum(receiver.frames_of)} received; "
        f"{server_dispositions} server dispositions settled all {N}; {receiver.dispositions} "
        f"of ours; {len(other)} server flows for the receiver; {window_waits} waits for the "
        f"session window; {c10.read_while_sending} bytes read in the middle of sends, which "
        f"found no room {c10.send_stalls} times; "
        f"{len(c10.before_end)} frames between our end and the server's, which "
        f"{'came' if c10.end_answered else 'never came (RabbitMQ 3.10 lost it)'}), "
        f"{len(c10.raw_frames)} server "
        f"frames ({len(c10.received)} bytes) and {c10.sent_frames} client frames "
        f"({len(c10.sent)} bytes) re-read and re-encoded in {verified - transferred:.2f}s"
    )
