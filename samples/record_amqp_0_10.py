"""Write the shipped AMQP 0-10 sample capture with the generated codec: no server here speaks 0-10.

    .venv/bin/python samples/record_amqp_0_10.py [OUT]     (default samples/amqp-0-10)
    .venv/bin/python samples/record_amqp_0_10.py --check [OUT]

It plays one connection as a client and a broker would, into the layout `specgen capture`
writes (OUT/session-1: conn-0001.c2s.bin, conn-0001.s2c.bin, conn-0001.index.jsonl,
capture.json), and the same session as a pcap on port 5672 (pcap/amqp-0-10.pcap beside OUT,
beside the sample so that `specgen decode` of the sample's folder is not mixed input; by
tests/pcap_writer.py: a packet per write, at most 1,448 octets each). The session: both
protocol headers; connection.start, start-ok (PLAIN), tune (a max frame size of 4096),
tune-ok, open, open-ok; session.attach, attached and command-point on channel 1;
queue.declare; 300 message.transfer commands from the client, each with a header segment
(delivery-properties with a routing key, message-properties with a content type, an
application header and, every 7th, a message id) and a body segment, 200 to amq.direct and
100 to amq.topic, bodies of 0 to 900 octets and every 25th of 5,000 to 12,000 (several
frames); the broker's session.completed after every 20 of the client's commands; a
message.subscribe and message.flow, then the broker's 200 transfers to that destination, which
the client accepts (message.accept, 10 at a time) but for one it rejects and one it releases,
with its own session.completed for them; then session.detach, detached, connection.close and
close-ok.

The timeline is made up but plausible and fixed (a seeded random, a fixed start), so the
script writes the same bytes every time: each write is one index `read` event, client sends
and broker replies a fraction of a millisecond apart.

Afterwards (and alone with --check) it reads each byte file back with the generated FrameReader
and Assemblies and checks that every frame, and every message's segments, re-encode to their
exact bytes.
"""

from __future__ import annotations

import json
import random
import sys
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import pcap_writer  # noqa: E402

import specgen.locations  # noqa: E402,F401  (maps specgen_codecs to this checkout's generated/)
from specgen_codecs.amqp_0_10.v0_10 import (  # noqa: E402
    PROTOCOL_HEADER,
    Array,
    Assemblies,
    ConnectionClose,
    ConnectionCloseOk,
    ConnectionOpen,
    ConnectionOpenOk,
    ConnectionStart,
    ConnectionStartOk,
    ConnectionTune,
    ConnectionTuneOk,
    FrameReader,
    MessageAccept,
    MessageDeliveryProperties,
    MessageFlow,
    MessageProperties,
    MessageReject,
    MessageRelease,
    MessageSubscribe,
    MessageTransfer,
    QueueDeclare,
    Segment,
    SessionAttach,
    SessionAttached,
    SessionCommandPoint,
    SessionCompleted,
    SessionDetach,
    SessionDetached,
    SessionHeader,
    Typed,
    encode,
    encode_frame,
    encode_header,
    encode_method,
    frames_of,
)
from specgen_codecs.amqp_0_10.v0_10.enums import SegmentType, Track  # noqa: E402

START = 1795600000.0  # the made-up wall clock the session starts at
MAX_FRAME = 4096
CHANNEL = 1
QUEUE = "sample-010-orders"
CONSUMER = "orders-consumer"
PUBLISHED = {"amq.direct": 200, "amq.topic": 100}
DELIVERED = 200
REJECT, RELEASE = 57, 58  # the broker's nth transfer (0-based) the client rejects, releases
COMPLETE_EVERY = 20
PORT = 5672  # the pcap's server port: AMQP's, shared by 0-9-1 and 1.0


class Session:
    """Both directions' bytes and the index of when each write happened."""

    def __init__(self, rnd: random.Random) -> None:
        self.rnd = rnd
        self.now = START
        self.data = {"c2s": bytearray(), "s2c": bytearray()}
        self.events: list[dict[str, Any]] = [
            {
                "event": "accept",
                "connection": "conn-0001",
                "peer": "127.0.0.1:40100",
                "mono": 100.0,
                "wall": START,
            }
        ]
        self.next_id = {"c2s": 0, "s2c": 0}  # each sender's next command id

    def write(self, direction: str, data: bytes, pause: float = 0.0002) -> None:
        self.now += pause * (0.5 + self.rnd.random())
        buf = self.data[direction]
        self.events.append(
            {
                "event": "read",
                "connection": "conn-0001",
                "direction": direction,
                "offset": len(buf),
                "length": len(data),
                "mono": 100.0 + self.now - START,
                "wall": round(self.now, 6),
            }
        )
        buf += data

    def control(self, direction: str, value: Any, channel: int = 0) -> None:
        segment = Segment(
            type=SegmentType.CONTROL,
            payload=encode_method(value),
            track=Track.CONTROL,
            channel=channel,
        )
        self.write(direction, b"".join(encode_frame(f) for f in frames_of(segment, MAX_FRAME)))

    def command(
        self,
        direction: str,
        value: Any,
        header: list[Any] | None = None,
        body: bytes | None = None,
        pause: float = 0.0002,
    ) -> int:
        """Write a command with its header and body segments; its command id."""
        parts = [(SegmentType.COMMAND, encode_method(value))]
        if header is not None:
            parts.append((SegmentType.HEADER, encode_header(header)))
        if body is not None:
            parts.append((SegmentType.BODY, body))
        frames = []
        for i, (kind, payload) in enumerate(parts):
            segment = Segment(
                type=kind,
                payload=payload,
                track=Track.COMMAND,
                channel=CHANNEL,
                first_segment=i == 0,
                last_segment=i == len(parts) - 1,
            )
            frames += frames_of(segment, MAX_FRAME)
        self.write(direction, b"".join(encode_frame(f) for f in frames), pause)
        ident = self.next_id[direction]
        self.next_id[direction] += 1
        return ident


def _headers(i: int, exchange: str, size: int) -> list[Any]:
    delivery = MessageDeliveryProperties(
        delivery_mode=2 if i % 2 else 1,
        priority=i % 10,
        routing_key=f"orders.{i % 4}",
        exchange=exchange,
    )
    props = MessageProperties(
        content_length=size,
        content_type="application/octet-stream" if i % 3 else "text/plain",
        application_headers={"seq": Typed("uint32", i), "tenant": Typed("str16", f"t-{i % 7}")},
    )
    if i % 7 == 0:
        props.message_id = uuid.UUID(int=i + 1)
    return [delivery, props]


def _body(i: int, rnd: random.Random) -> bytes:
    size = rnd.randrange(5000, 12000) if i % 25 == 24 else rnd.randrange(0, 900)
    return rnd.randbytes(size)


def play() -> Session:
    rnd = random.Random(10)
    s = Session(rnd)
    s.write("c2s", PROTOCOL_HEADER)
    s.write("s2c", PROTOCOL_HEADER)
    s.control(
        "s2c",
        ConnectionStart(
            server_properties={"product": Typed("str16", "specgen-sample")},
            mechanisms=Array("str16", ["PLAIN"]),
            locales=Array("str16", ["en_US"]),
        ),
    )
    s.control(
        "c2s",
        ConnectionStartOk(
            client_properties={"product": Typed("str16", "sample-client")},
            mechanism="PLAIN",
            response=b"\x00guest\x00guest",
            locale="en_US",
        ),
    )
    s.control(
        "s2c",
        ConnectionTune(channel_max=32, max_frame_size=MAX_FRAME, heartbeat_min=0, heartbeat_max=60),
    )
    s.control("c2s", ConnectionTuneOk(channel_max=32, max_frame_size=MAX_FRAME, heartbeat=0))
    s.control("c2s", ConnectionOpen(virtual_host="/"))
    s.control("s2c", ConnectionOpenOk(known_hosts=Array("str16", [])))
    name = b"sample-session-1"
    s.control("c2s", SessionAttach(name=name), CHANNEL)
    s.control("s2c", SessionAttached(name=name), CHANNEL)
    s.control("c2s", SessionCommandPoint(command_id=0, command_offset=0), CHANNEL)
    s.control("s2c", SessionCommandPoint(command_id=0, command_offset=0), CHANNEL)

    def completed(direction: str, upto: int) -> None:
        s.control(direction, SessionCompleted(commands=[(0, upto)]), CHANNEL)

    s.command(
        "c2s", QueueDeclare(queue=QUEUE, durable=True, session_header=SessionHeader(sync=True))
    )
    completed("s2c", 0)
    i = 0
    for exchange, count in PUBLISHED.items():
        for _ in range(count):
            body = _body(i, rnd)
            s.command(
                "c2s",
                MessageTransfer(destination=exchange, accept_mode=1, acquire_mode=0),
                _headers(i, exchange, len(body)),
                body,
            )
            i += 1
            if s.next_id["c2s"] % COMPLETE_EVERY == 0:
                s.now += 0.002 * rnd.random()  # the broker's disk
                completed("s2c", s.next_id["c2s"] - 1)
    completed("s2c", s.next_id["c2s"] - 1)
    s.command(
        "c2s", MessageSubscribe(queue=QUEUE, destination=CONSUMER, accept_mode=0, acquire_mode=0)
    )
    s.command("c2s", MessageFlow(destination=CONSUMER, unit=0, value=DELIVERED))
    s.command("c2s", MessageFlow(destination=CONSUMER, unit=1, value=0xFFFFFFFF))
    completed("s2c", s.next_id["c2s"] - 1)
    pending: list[int] = []
    for n in range(DELIVERED):
        body = _body(n, rnd)
        ident = s.command(
            "s2c",
            MessageTransfer(destination=CONSUMER, accept_mode=0, acquire_mode=0),
            _headers(n, "amq.direct", len(body)),
            body,
            pause=0.0004,
        )
        if n == REJECT:
            s.command(
                "c2s",
                MessageReject(transfers=[(ident, ident)], code=403, text="refused by the sample"),
            )
        elif n == RELEASE:
            s.command("c2s", MessageRelease(transfers=[(ident, ident)], set_redelivered=True))
        else:
            pending.append(ident)
        if len(pending) == 10 or n == DELIVERED - 1:
            s.command("c2s", MessageAccept(transfers=_runs(pending)))
            completed("c2s", ident)
            completed("s2c", s.next_id["c2s"] - 1)
            pending = []
    s.control("c2s", SessionDetach(name=name), CHANNEL)
    s.control("s2c", SessionDetached(name=name, code=0), CHANNEL)
    s.control("c2s", ConnectionClose(reply_code=200, reply_text="bye"))
    s.control("s2c", ConnectionCloseOk())
    return s


def _runs(ids: list[int]) -> list[tuple[int, int]]:
    """Command ids as a sequence set: runs of consecutive ids."""
    out: list[tuple[int, int]] = []
    for n in sorted(ids):
        if out and out[-1][1] == n - 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out


def write(session: Session, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for direction, data in session.data.items():
        (folder / f"conn-0001.{direction}.bin").write_bytes(bytes(data))
    session.events.append(
        {
            "event": "close",
            "connection": "conn-0001",
            "mono": 100.0 + session.now - START + 0.001,
            "wall": round(session.now + 0.001, 6),
        }
    )
    (folder / "conn-0001.index.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in session.events)
    )
    sizes = {d: len(b) for d, b in session.data.items()}
    capture = {
        "listen": "127.0.0.1:45672",
        "target": "127.0.0.1:5672",
        "started": START,
        "stopped": round(session.now + 0.002, 6),
        "connections": 1,
        "failed_connects": 0,
        "bytes": sizes,
        "recorded": sizes,
        "delivered": sizes,
        "recording_stopped_total": 0,
        "recording_stopped": [],
    }
    (folder / "capture.json").write_text(json.dumps(capture, indent=2) + "\n")


def check(folder: Path) -> int:
    """Frames and messages in each byte file that do not re-encode to their bytes (0: none)."""
    bad = 0
    for path in sorted(folder.glob("*.bin")):
        sender = "client" if ".c2s." in path.name else "server"
        reader = FrameReader(sender, preamble=True)
        reader.feed(path.read_bytes())
        messages = Assemblies()
        frames = whole = 0
        for _, raw in reader.frames():
            frame = FrameReader.decode(raw)
            frames += 1
            if encode(frame) != raw:
                bad += 1
            message = messages.add(frame)
            if message is None:
                continue
            whole += 1
            again = encode_method(message.method)
            if again != message.segments[0].payload:
                bad += 1
            if message.header and encode_header(message.header) != message.segments[1].payload:
                bad += 1
        reader.finish()
        print(f"{path.name}: {frames} frames, {whole} messages, all re-encode: {bad == 0}")
    return bad


def main() -> int:
    args = sys.argv[1:]
    only_check = "--check" in args
    args = [a for a in args if a != "--check"]
    out = Path(args[0]) if args else ROOT / "samples" / "amqp-0-10"
    folder = out / "session-1"
    if not only_check:
        write(play(), folder)
        # the same session as tcpdump would have seen it on the server's port
        pcaps = out.parent / "pcap"
        pcaps.mkdir(exist_ok=True)
        pcap_writer.write(pcaps / f"{out.name}.pcap", pcap_writer.session(folder, PORT))
    return 1 if check(folder) else 0


if __name__ == "__main__":
    sys.exit(main())
