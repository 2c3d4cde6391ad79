"""The generated RabbitMQ Streams codec against a real RabbitMQ server (Debian's 3.10 series).

Every byte sent comes from the generated `encode`, every byte read goes through the generated
`FrameReader`; after each test every frame the server sent must re-encode byte for byte. What
the server really does where it differs from the reference is recorded in the overlay
(specs/rabbitmq-stream/overlay.json) and asserted here on the server's own bytes.
"""

from __future__ import annotations

import random
import time
import zlib
from collections.abc import Iterator

import pika
import pytest
from rabbitmq import RabbitNode, installed_version
from stream_client import StreamClient

from specgen_codecs.rabbitmq_stream import v4_0 as rs

RC = rs.ResponseCode
OFFSET_FIRST, OFFSET_LAST, OFFSET_NEXT, OFFSET_OFFSET, OFFSET_TIMESTAMP = 1, 2, 3, 4, 5


@pytest.fixture
def client(rabbit: RabbitNode) -> Iterator[StreamClient]:
    c = StreamClient(port=rabbit.stream_port)
    c.handshake()
    yield c
    c.close()
    _assert_reencodes(c)


def _connect(rabbit: RabbitNode) -> StreamClient:
    return StreamClient(port=rabbit.stream_port)


def _assert_reencodes(c: StreamClient) -> None:
    """Every frame of the session, both ways, decodes and re-encodes to the very same bytes
    (Route and Partitions answers under the request's key included)."""
    both = [("server", f) for f in c.frames_received()] + [("client", f) for f in c.sent]
    for sender, frame in both:
        msg = rs.decode(frame, sender=sender)  # type: ignore[arg-type]
        again = rs.encode(msg)
        assert again == frame, f"{type(msg).__name__}: {frame.hex()} re-encodes as {again.hex()}"


def _stream(name: str) -> str:
    return f"specgen-{name}-{time.monotonic_ns()}"


def _create(c: StreamClient, stream: str) -> None:
    assert (
        c.request(rs.CreateRequest(c.next_id(), stream, []), rs.CreateResponse).response_code
        == RC.OK
    )


def _publish(c: StreamClient, publisher: int, messages: list[tuple[int, bytes]]) -> set[int]:
    """Publish (id, payload) pairs in batches of 100; the ids the server confirmed."""
    for i in range(0, len(messages), 100):
        batch = messages[i : i + 100]
        c.send(rs.PublishV1(publisher, [rs.PublishV1PublishedMessage(p, m) for p, m in batch]))
    wanted = {p for p, _ in messages}
    confirmed: set[int] = set()
    deadline = time.monotonic() + 60
    while not wanted <= confirmed:
        assert time.monotonic() < deadline, f"{len(wanted - confirmed)} publishes never confirmed"
        confirm = c.recv(rs.PublishConfirm, timeout=deadline - time.monotonic())
        assert confirm.publisher_id == publisher
        assert not confirmed & set(confirm.publishing_ids), "an id confirmed twice"
        confirmed.update(confirm.publishing_ids)
    assert not c.take(rs.PublishError)
    return confirmed


def _subscribe_from_first(c: StreamClient, subscription: int, stream: str, credit: int) -> None:
    sub = c.request(
        rs.SubscribeRequest(
            c.next_id(),
            subscription,
            stream,
            rs.SubscribeRequestOffsetSpecification(OFFSET_FIRST, None),
            credit,
            [],
        ),
        rs.SubscribeResponse,
    )
    assert sub.response_code == RC.OK


def _chunk_crc_ok(chunk: rs.OsirisChunk) -> bool:
    data = bytearray()
    for entry in chunk.messages:
        assert isinstance(entry, rs.SimpleEntry), "this client publishes no sub-batches"
        data += entry.size.to_bytes(4, "big") + entry.data
    return len(data) == chunk.data_length and zlib.crc32(data) == chunk.chunk_crc


def _consume(
    c: StreamClient, subscription: int, count: int, timeout: float = 60
) -> list[tuple[int, bytes]]:
    """(offset, payload) of the next `count` messages, granting one credit per chunk."""
    out: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + timeout
    while len(out) < count:
        deliver = c.recv(
            rs.DeliverV1, timeout=deadline - time.monotonic(), subscription_id=subscription
        )
        chunk = deliver.osiris_chunk
        assert chunk.magic_version == 0x50  # magic 5, version 0
        assert chunk.num_entries == len(chunk.messages) == chunk.num_records
        assert _chunk_crc_ok(chunk)
        for i, entry in enumerate(chunk.messages):
            assert isinstance(entry, rs.SimpleEntry)
            out.append((chunk.chunk_first_offset + i, entry.data))
        c.send(rs.Credit(subscription, 1))
    return out


# ---- the opening sequence and its failures


def test_handshake(rabbit: RabbitNode) -> None:
    c = _connect(rabbit)
    opened = c.handshake()
    assert c.server_properties["product"] == "RabbitMQ"
    assert c.server_properties["version"] == installed_version()
    assert "PLAIN" in c.mechanisms
    assert c.auth_code == RC.OK
    assert opened.response_code == RC.OK
    props = {p.key: p.value for p in opened.connection_properties or []}
    assert props == {"advertised_host": "localhost", "advertised_port": str(rabbit.stream_port)}
    frames = c.frames_received()
    # overlay sasl-authenticate-response-data-is-optional: 14 bytes, nothing after the code
    auth = next(f for f in frames if f[4:6] == b"\x80\x13")
    assert len(auth) == 14 and auth[-2:] == b"\x00\x01"
    assert c.tune.frame_max > 0
    c.close()
    _assert_reencodes(c)


def test_wrong_password(rabbit: RabbitNode) -> None:
    c = _connect(rabbit)
    with pytest.raises(PermissionError):
        c.handshake(password="not-the-password")
    assert c.auth_code == RC.AUTHENTICATION_FAILURE
    auth = next(f for f in c.frames_received() if f[4:6] == b"\x80\x13")
    assert len(auth) == 14 and auth[-2:] == b"\x00\x08"
    c.pump(1.0)
    assert c.closed, "the server keeps a connection that failed authentication"
    _assert_reencodes(c)


def test_open_unknown_virtual_host(rabbit: RabbitNode) -> None:
    c = _connect(rabbit)
    opened = c.handshake(vhost="no-such-vhost")
    assert opened.response_code == RC.VIRTUAL_HOST_ACCESS_FAILURE
    assert opened.connection_properties is None  # overlay open-response-properties-are-optional
    c.close()
    _assert_reencodes(c)


def test_exchange_command_versions_is_answered_as_the_server_can(rabbit: RabbitNode) -> None:
    """Ask instead of assuming. 3.10 predates ExchangeCommandVersions and the commands it
    announces (StreamStats, super streams, Publish/Deliver v2): each is an unknown frame."""
    c = _connect(rabbit)
    c.handshake()
    ours = [rs.Command(k, 1, 2 if k in (rs.Key.PUBLISH, rs.Key.DELIVER) else 1) for k in rs.Key]
    c.send(rs.ExchangeCommandVersionsRequest(c.next_id(), ours))
    answer = c.recv(rs.ExchangeCommandVersionsResponse | rs.CloseRequest)  # type: ignore[arg-type]
    if installed_version().startswith("3.10."):  # type: ignore[union-attr]
        assert isinstance(answer, rs.CloseRequest)
        assert (answer.closing_code, answer.closing_reason) == (RC.UNKNOWN_FRAME, "unknown frame")
    else:  # a newer server: what it announces must be what we can speak
        assert isinstance(answer, rs.ExchangeCommandVersionsResponse)
        assert answer.response_code == RC.OK
        assert {k.key for k in answer.command} <= set(rs.Key)
    c.close()
    _assert_reencodes(c)


@pytest.mark.parametrize(
    "make",
    [
        lambda n: rs.StreamStatsRequest(n, "s"),
        lambda n: rs.CreateSuperStreamRequest(n, "sup", ["sup-0"], ["0"], []),
        lambda n: rs.DeleteSuperStreamRequest(n, "sup"),
        lambda n: rs.PublishV2(1, [rs.PublishV2PublishedMessage(1, "f", b"x")]),
    ],
    ids=["StreamStats", "CreateSuperStream", "DeleteSuperStream", "PublishV2"],
)
def test_commands_3_10_does_not_know(rabbit: RabbitNode, make: object) -> None:
    if not (installed_version() or "").startswith("3.10."):
        pytest.skip("only 3.10 is known not to have these")
    c = _connect(rabbit)
    c.handshake()
    c.send(make(c.next_id()))  # type: ignore[operator]
    close = c.recv(rs.CloseRequest)
    assert (close.closing_code, close.closing_reason) == (RC.UNKNOWN_FRAME, "unknown frame")
    c.send(rs.CloseResponse(close.correlation_id, RC.OK))
    c.close()
    _assert_reencodes(c)


# ---- streams, publishers, consumers


def test_create_metadata_delete(client: StreamClient, rabbit: RabbitNode) -> None:
    stream = _stream("meta")
    _create(client, stream)
    again = client.request(rs.CreateRequest(client.next_id(), stream, []), rs.CreateResponse)
    assert again.response_code == RC.STREAM_ALREADY_EXISTS
    meta = client.request(
        rs.MetadataRequest(client.next_id(), [stream, "no-such-stream"]), rs.MetadataResponse
    )
    assert [(b.host, b.port) for b in meta.broker] == [("localhost", rabbit.stream_port)]
    found, missing = meta.stream_metadata
    assert (found.stream_name, found.response_code) == (stream, RC.OK)
    assert found.leader_reference == meta.broker[0].reference and found.replicas_references == []
    assert (missing.stream_name, missing.response_code) == (
        "no-such-stream",
        RC.STREAM_DOES_NOT_EXIST,
    )
    assert missing.leader_reference == 0xFFFF  # -1 as the uint16 the reference declares
    # the server tells the connections that use a stream when it goes away
    spec = rs.SubscribeRequestOffsetSpecification(OFFSET_NEXT, None)
    sub = client.request(
        rs.SubscribeRequest(client.next_id(), 1, stream, spec, 1, []), rs.SubscribeResponse
    )
    assert sub.response_code == RC.OK
    gone = client.request(rs.DeleteRequest(client.next_id(), stream), rs.DeleteResponse)
    assert gone.response_code == RC.OK
    update = client.recv(rs.MetadataUpdate)
    assert (update.metadata_info.code, update.metadata_info.stream) == (
        RC.STREAM_NOT_AVAILABLE,
        stream,
    )
    again = client.request(rs.DeleteRequest(client.next_id(), stream), rs.DeleteResponse)
    assert again.response_code == RC.STREAM_DOES_NOT_EXIST


def test_declare_publisher_reference_is_never_null(rabbit: RabbitNode) -> None:
    """overlay declare-publisher-reference-is-one-string: null is not 'no reference'."""
    c = _connect(rabbit)
    c.handshake()
    stream = _stream("nullref")
    _create(c, stream)
    good = rs.encode(rs.DeclarePublisherRequest(c.next_id(), 1, "", stream))
    c.send_raw(good)
    assert c.recv(rs.DeclarePublisherResponse).response_code == RC.OK
    null = bytearray(rs.encode(rs.DeclarePublisherRequest(c.next_id(), 2, "", stream)))
    null[13:15] = b"\xff\xff"  # the reference's int16 length: -1, as the type paragraph allows
    null[:4] = (len(null) - 4 + 0).to_bytes(4, "big")
    c.send_raw(bytes(null))
    close = c.recv(rs.CloseRequest)
    assert close.closing_code == RC.UNKNOWN_FRAME
    c.close()
    _assert_reencodes(c)


def test_declare_publisher_reference_over_256_characters(client: StreamClient) -> None:
    """overlay declare-publisher-reference-is-one-string: the reference's limit is the server's
    to enforce, not the framing's; the codec decodes and encodes any length the int16 allows."""
    stream = _stream("longref")
    _create(client, stream)
    answers: dict[int, int] = {}
    for n, publisher in ((256, 1), (257, 2), (1000, 3)):
        request = rs.DeclarePublisherRequest(client.next_id(), publisher, "r" * n, stream)
        frame = rs.encode(request)  # no refusal on our side
        assert rs.decode(frame, sender="client") == request
        answer = client.request(request, rs.DeclarePublisherResponse)
        answers[n] = answer.response_code
    client.request(rs.DeleteRequest(client.next_id(), stream), rs.DeleteResponse)
    if (installed_version() or "").startswith("3.10."):
        assert answers == {256: RC.OK, 257: RC.OK, 1000: RC.OK}, answers


def test_deliver_with_a_corrupted_data_byte_is_refused(client: StreamClient) -> None:
    """overlay osiris-chunk-crc-is-unsigned: the server's chunks carry zlib.crc32 of their data;
    the decoder checks it by default, and a flipped data byte is refused naming ChunkCrc."""
    stream = _stream("crc")
    _create(client, stream)
    assert (
        client.request(
            rs.DeclarePublisherRequest(client.next_id(), 1, "", stream), rs.DeclarePublisherResponse
        ).response_code
        == RC.OK
    )
    _publish(client, 1, [(i, b"payload %d" % i) for i in range(1, 21)])
    _subscribe_from_first(client, 1, stream, credit=1)
    deliver = client.recv(rs.DeliverV1, subscription_id=1)  # decoded, so its CRC matched
    frame = next(f for f in client.frames_received() if f[4:6] == b"\x00\x08")
    assert rs.encode(deliver) == frame
    data_at = len(frame) - deliver.osiris_chunk.data_length
    for at in (data_at + 4, data_at + 8, len(frame) - 1):  # inside the records, past entry headers
        bad = bytearray(frame)
        bad[at] ^= 0x40
        with pytest.raises(rs.DecodeError) as info:
            rs.decode(bytes(bad), sender="server")
        assert info.value.field == "DeliverV1.osiris_chunk.chunk_crc"
        assert info.value.offset == data_at
        # a caller who trusts its transport can opt out, and gets the bytes as they are
        trusted = rs.decode(bytes(bad), sender="server", verify_checksums=False)
        assert rs.encode(trusted) == bytes(bad)
    client.request(rs.DeleteRequest(client.next_id(), stream), rs.DeleteResponse)


def test_ten_thousand_messages_round_trip(client: StreamClient) -> None:
    """10,000 publishes of varied sizes: each confirmed once, all delivered byte-identical, in
    order, none lost; every chunk's CRC-32 matches its entries."""
    stream = _stream("bulk")
    _create(client, stream)
    pub = client.request(
        rs.DeclarePublisherRequest(client.next_id(), 7, "specgen-bulk", stream),
        rs.DeclarePublisherResponse,
    )
    assert pub.response_code == RC.OK
    rnd = random.Random(20261123)
    sizes = [0, 1, 255, 256, 4095, 65536] + [
        rnd.choice((rnd.randrange(64), rnd.randrange(4096))) for _ in range(9_994)
    ]
    payloads = [rnd.randbytes(n) for n in sizes]
    confirmed = _publish(client, 7, list(enumerate(payloads, start=1)))
    assert confirmed == set(range(1, 10_001))
    seq = client.request(
        rs.QueryPublisherSequenceRequest(client.next_id(), "specgen-bulk", stream),
        rs.QueryPublisherSequenceResponse,
    )
    assert (seq.response_code, seq.sequence) == (RC.OK, 10_000)
    _subscribe_from_first(client, 1, stream, credit=2)
    delivered = _consume(client, 1, 10_000)
    assert [o for o, _ in delivered] == list(range(10_000))
    assert [p for _, p in delivered] == payloads
    assert (
        client.request(
            rs.UnsubscribeRequest(client.next_id(), 1), rs.UnsubscribeResponse
        ).response_code
        == RC.OK
    )
    assert (
        client.request(
            rs.DeletePublisherRequest(client.next_id(), 7), rs.DeletePublisherResponse
        ).response_code
        == RC.OK
    )
    assert (
        client.request(rs.DeleteRequest(client.next_id(), stream), rs.DeleteResponse).response_code
        == RC.OK
    )


def test_each_offset_specification(client: StreamClient) -> None:
    """first, last, next, offset and timestamp, on a stream of three chunks published apart."""
    stream = _stream("offsets")
    _create(client, stream)
    assert (
        client.request(
            rs.DeclarePublisherRequest(client.next_id(), 1, "", stream), rs.DeclarePublisherResponse
        ).response_code
        == RC.OK
    )
    stamps = []
    for batch in range(3):
        stamps.append(int(time.time() * 1000))
        _publish(client, 1, [(batch * 10 + i + 1, f"{batch}:{i}".encode()) for i in range(10)])
        time.sleep(1.1)  # a new chunk and a later chunk timestamp for each batch

    def subscribe(sid: int, offset_type: int, offset: int | None) -> None:
        spec = rs.SubscribeRequestOffsetSpecification(offset_type, offset)
        answer = client.request(
            rs.SubscribeRequest(client.next_id(), sid, stream, spec, 10, []), rs.SubscribeResponse
        )
        assert answer.response_code == RC.OK

    subscribe(1, OFFSET_FIRST, None)
    assert [o for o, _ in _consume(client, 1, 30)] == list(range(30))
    # A batch is one chunk on a quiet server, but a busy one may flush mid-batch (seen: the last
    # chunk began at 29), so each assertion names the chunk by what it must hold, not its size.
    subscribe(2, OFFSET_LAST, None)
    last = client.recv(rs.DeliverV1, subscription_id=2).osiris_chunk
    first = last.chunk_first_offset
    assert 20 <= first <= 29, f"the last chunk starts at {first}, outside the last batch"
    assert last.messages[0].data == f"2:{first - 20}".encode()  # type: ignore[union-attr]
    assert first + last.num_records == 30, "the last chunk does not end at the last message"
    subscribe(3, OFFSET_OFFSET, 15)
    # the chunk holding offset 15 starts at or before it, in its batch; the client skips to its
    # offset itself
    held = client.recv(rs.DeliverV1, subscription_id=3).osiris_chunk
    assert 10 <= held.chunk_first_offset <= 15 < held.chunk_first_offset + held.num_records
    subscribe(4, OFFSET_TIMESTAMP, stamps[2])
    assert client.recv(rs.DeliverV1, subscription_id=4).osiris_chunk.chunk_first_offset == 20
    subscribe(5, OFFSET_NEXT, None)
    client.pump(1.0)
    assert not [d for d in client.take(rs.DeliverV1) if d.subscription_id == 5], (
        "next delivered old data"
    )
    _publish(client, 1, [(31, b"after next")])
    fresh = client.recv(rs.DeliverV1, subscription_id=5).osiris_chunk
    assert (fresh.chunk_first_offset, fresh.messages[0].data) == (30, b"after next")  # type: ignore[union-attr]
    for sid in range(1, 6):
        assert (
            client.request(
                rs.UnsubscribeRequest(client.next_id(), sid), rs.UnsubscribeResponse
            ).response_code
            == RC.OK
        )
    client.request(rs.DeleteRequest(client.next_id(), stream), rs.DeleteResponse)


def test_store_and_query_offset(client: StreamClient) -> None:
    stream = _stream("store")
    _create(client, stream)
    none = client.request(
        rs.QueryOffsetRequest(client.next_id(), "specgen-ref", stream), rs.QueryOffsetResponse
    )
    assert none.response_code == RC.NO_OFFSET
    client.send(rs.StoreOffset("specgen-ref", stream, 42))  # no response: poll until it shows
    deadline = time.monotonic() + 10
    while True:
        got = client.request(
            rs.QueryOffsetRequest(client.next_id(), "specgen-ref", stream), rs.QueryOffsetResponse
        )
        if got.response_code == RC.OK or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert (got.response_code, got.offset) == (RC.OK, 42)
    client.request(rs.DeleteRequest(client.next_id(), stream), rs.DeleteResponse)


def test_subscription_and_publisher_errors(client: StreamClient) -> None:
    stream = _stream("errors")
    _create(client, stream)
    first = rs.SubscribeRequestOffsetSpecification(OFFSET_FIRST, None)
    sub = client.request(
        rs.SubscribeRequest(client.next_id(), 9, stream, first, 1, []), rs.SubscribeResponse
    )
    assert sub.response_code == RC.OK
    dup = client.request(
        rs.SubscribeRequest(client.next_id(), 9, stream, first, 1, []), rs.SubscribeResponse
    )
    assert dup.response_code == RC.SUBSCRIPTION_ID_ALREADY_EXISTS
    unknown = client.request(
        rs.SubscribeRequest(client.next_id(), 10, "no-such-stream", first, 1, []),
        rs.SubscribeResponse,
    )
    assert unknown.response_code == RC.STREAM_DOES_NOT_EXIST
    # Credit has no response, except this one: the server answers an unknown subscription
    client.send(rs.Credit(99, 5))
    credit = client.recv(rs.CreditResponse)
    assert (credit.response_code, credit.subscription_id) == (RC.SUBSCRIPTION_ID_DOES_NOT_EXIST, 99)
    assert (
        client.request(
            rs.UnsubscribeRequest(client.next_id(), 9), rs.UnsubscribeResponse
        ).response_code
        == RC.OK
    )
    again = client.request(rs.UnsubscribeRequest(client.next_id(), 9), rs.UnsubscribeResponse)
    assert again.response_code == RC.SUBSCRIPTION_ID_DOES_NOT_EXIST
    # publishing through a publisher that was never declared
    client.send(rs.PublishV1(42, [rs.PublishV1PublishedMessage(1, b"lost")]))
    error = client.recv(rs.PublishError)
    assert error.publisher_id == 42
    assert [(e.publishing_id, e.code) for e in error.publishing_error] == [
        (1, RC.PUBLISHER_DOES_NOT_EXIST)
    ]
    gone = client.request(
        rs.DeletePublisherRequest(client.next_id(), 42), rs.DeletePublisherResponse
    )
    assert gone.response_code == RC.PUBLISHER_DOES_NOT_EXIST
    client.request(rs.DeleteRequest(client.next_id(), stream), rs.DeleteResponse)


def test_route_and_partitions(client: StreamClient, rabbit: RabbitNode) -> None:
    """Super streams: 3.10 cannot create them over the stream protocol, so AMQP 0-9-1 declares
    one (a direct exchange bound to streams with a partition order, as the docs describe)."""
    name = _stream("super")
    amqp = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", rabbit.amqp_port))
    channel = amqp.channel()
    channel.exchange_declare(name, "direct", durable=True)
    for i in range(3):
        channel.queue_declare(f"{name}-{i}", durable=True, arguments={"x-queue-type": "stream"})
        channel.queue_bind(
            f"{name}-{i}", name, routing_key=str(i), arguments={"x-stream-partition-order": i}
        )
    amqp.close()
    route = client.request(rs.RouteRequest(client.next_id(), "1", name), rs.RouteResponse)
    assert (route.response_code, route.stream) == (RC.OK, [f"{name}-1"])
    parts = client.request(rs.PartitionsRequest(client.next_id(), name), rs.PartitionsResponse)
    assert (parts.response_code, parts.stream) == (RC.OK, [f"{name}-{i}" for i in range(3)])
    missing = client.request(
        rs.RouteRequest(client.next_id(), "1", "no-such-super"), rs.RouteResponse
    )
    assert (missing.response_code, missing.stream) == (RC.STREAM_DOES_NOT_EXIST, [])
    # overlay route/partitions-response-key-has-no-response-bit: what 3.10 puts on the wire
    keys = {
        f[4:6]
        for f in client.frames_received()
        if f[8:12]
        in (route.correlation_id.to_bytes(4, "big"), parts.correlation_id.to_bytes(4, "big"))
    }
    if (installed_version() or "").startswith("3.10."):
        assert keys == {b"\x00\x18", b"\x00\x19"}
        # the decoded answers remember the key they came under and give back their own bytes
        assert (route.key_on_wire, parts.key_on_wire) == (0x0018, 0x0019)
    for answer in (route, parts, missing):
        cid = answer.correlation_id.to_bytes(4, "big")
        frame = next(f for f in client.frames_received() if f[8:12] == cid)
        assert rs.encode(answer) == frame


# ---- liveness, limits, closing


def test_heartbeats_both_ways(rabbit: RabbitNode) -> None:
    c = _connect(rabbit)
    c.handshake(heartbeat=1)
    c.send(rs.Heartbeat())
    c.recv(rs.Heartbeat, timeout=5)  # the server keeps a 1 s heartbeat too
    stream = _stream("alive")
    _create(c, stream)  # still served after the heartbeats
    c.request(rs.DeleteRequest(c.next_id(), stream), rs.DeleteResponse)
    c.close()
    _assert_reencodes(c)


def test_oversized_frames(rabbit: RabbitNode) -> None:
    """A message over the negotiated frame_max, both ways. 3.10 enforces frame_max on neither:
    it confirms the oversized publish and delivers it in a frame over frame_max. A FrameReader
    held to frame_max refuses that frame at its size prefix, before buffering its body."""
    c = _connect(rabbit)
    c.handshake()
    frame_max = c.tune.frame_max
    stream = _stream("big")
    _create(c, stream)
    pub = c.request(
        rs.DeclarePublisherRequest(c.next_id(), 1, "", stream), rs.DeclarePublisherResponse
    )
    assert pub.response_code == RC.OK
    big = bytes(range(256)) * (frame_max // 256 + 1)
    c.send(rs.PublishV1(1, [rs.PublishV1PublishedMessage(1, big)]))
    assert len(c.sent[-1]) > frame_max
    answer = c.recv(rs.PublishConfirm | rs.PublishError | rs.CloseRequest)  # type: ignore[arg-type]
    if (installed_version() or "").startswith("3.10."):
        assert answer == rs.PublishConfirm(1, [1])
    spec = rs.SubscribeRequestOffsetSpecification(OFFSET_FIRST, None)
    c.request(rs.SubscribeRequest(c.next_id(), 1, stream, spec, 1, []), rs.SubscribeResponse)
    deliver = c.recv(rs.DeliverV1, timeout=20)
    assert deliver.osiris_chunk.messages[0].data == big  # type: ignore[union-attr]
    frames = c.frames_received()
    assert len(frames[-1]) - 4 > frame_max  # the server's frame, over the limit it agreed to
    held = rs.FrameReader(sender="server", max_frame_size=frame_max)
    held.feed(b"".join(frames))
    with pytest.raises(rs.DecodeError) as info:
        list(held)
    assert info.value.field == "frame.size"
    assert info.value.stream_offset == sum(map(len, frames[:-1]))
    c.request(rs.DeleteRequest(c.next_id(), stream), rs.DeleteResponse)
    c.close()
    _assert_reencodes(c)


def test_close(rabbit: RabbitNode) -> None:
    c = _connect(rabbit)
    c.handshake()
    closed = c.request(
        rs.CloseRequest(c.next_id(), RC.OK, "specgen says goodbye"), rs.CloseResponse
    )
    assert closed.response_code == RC.OK
    c.pump(2.0)
    assert c.closed
    _assert_reencodes(c)
