"""A minimal AMQP 1.0 client on a plain socket, built only on the generated codec.

It speaks just enough of the protocol for the live tests: the SASL and AMQP protocol headers,
SASL PLAIN or ANONYMOUS, open, begin, attaching sending and receiving links, transfers (split
into frames of the peer's max-frame-size, `more` on all but the last), flow and disposition.
Every byte it sends comes from the generated `encode` and is kept in `sent` (with a count of
the frames and headers in `sent_frames`); every byte it reads is kept in `received` and split
into frames by the generated `FrameReader` (each frame's own bytes kept in `raw_frames`, its
decoded form in `frames`), so a test can check that both streams read back and every server
frame re-encodes to its very bytes. Link and session state (credit, windows, delivery ids) is
the test's business: the client only remembers what it needs to fill in flow frames.
"""

from __future__ import annotations

import socket
import time
from collections import deque
from typing import Any, TypeVar

from generated.amqp_1_0.v1_0 import FrameReader
from generated.amqp_1_0.v1_0 import composites as c
from generated.amqp_1_0.v1_0.frames import Frame, ProtocolHeader, decode, encode
from generated.amqp_1_0.v1_0.types import Symbol

B = TypeVar("B")
AMQP, SASL = 0, 3  # protocol ids
AMQP_FRAME, SASL_FRAME = 0, 1  # frame types
SENDER, RECEIVER = False, True  # link roles
MAX_FRAME_SIZE = 32768  # what we accept: the server splits larger messages for us
WINDOW = 65535  # our session windows, as RabbitMQ's own


class ServerClosed(AssertionError):
    """The server closed the connection, the session or a link; the message says why."""


class Amqp10Client:
    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 5672,
        timeout: float = 30.0,
        max_frame_size: int | None = MAX_FRAME_SIZE,
    ) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.max_frame_size = max_frame_size
        self.remote_max_frame_size = 512  # the spec's minimum, until the server's open says
        # the reader hands back each frame's bytes: we decode them ourselves and keep both
        self.reader = FrameReader(max_frame_size=max_frame_size or 1 << 26)
        self.sent = bytearray()  # every byte sent, protocol headers included
        self.sent_frames = 0  # frames and protocol headers sent
        self.received = bytearray()  # every byte received
        self.raw_frames: list[bytes] = []  # each frame (or protocol header) as received
        self.frames: list[Frame | ProtocolHeader] = []  # ... and decoded
        self.inbox: deque[Frame | ProtocolHeader] = deque()
        self.channel = 0
        self.session = False  # whether our session has begun (and not ended)
        # transfer ids count transfer frames, delivery ids deliveries (as proton does)
        self.next_outgoing_id = 0  # our session's next transfer id
        self.next_delivery_id = 0  # our session's next delivery id
        self.next_incoming_id = 0  # the server's next transfer id: its begin, then one a frame

    # ---- wire

    def send(self, *frames: Frame | ProtocolHeader) -> None:
        self.send_raw(b"".join(encode(f) for f in frames), len(frames))

    def send_raw(self, data: bytes, count: int) -> None:
        """Bytes already encoded, `count` frames or headers of them."""
        self.sent += data
        self.sent_frames += count
        self.sock.sendall(data)

    def frame(self, body: Any, frame_type: int = AMQP_FRAME, payload: bytes = b"") -> Frame:
        """A frame on our session's channel (SASL frames go on channel 0)."""
        return Frame(frame_type, self.channel if frame_type == AMQP_FRAME else 0, body, payload)

    def _take(self, chunk: bytes) -> None:
        if not chunk:
            raise ServerClosed("the server closed the socket")
        self.received += chunk
        self.reader.feed(chunk)
        for _, raw in self.reader.frames():
            frame = decode(raw)
            self.raw_frames.append(raw)
            self.frames.append(frame)
            self.inbox.append(frame)

    def _fill(self, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("no answer from the server")
        self.sock.settimeout(remaining)
        self._take(self.sock.recv(1 << 20))

    def poll(self) -> bool:
        """Read whatever is already there, without waiting; whether anything came."""
        came = False
        self.sock.setblocking(False)
        try:
            while True:
                try:
                    chunk = self.sock.recv(1 << 20)
                except BlockingIOError:
                    return came
                self._take(chunk)
                came = True
        finally:
            self.sock.settimeout(self.timeout)

    def wait(self, timeout: float | None = None) -> None:
        """Block until at least one frame is in the inbox (TimeoutError after `timeout`)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while not self.inbox:
            self._fill(deadline)

    def receive(self, timeout: float | None = None) -> Frame | ProtocolHeader:
        """The next frame or protocol header from the server, in order, whatever it is."""
        self.wait(timeout)
        return self.inbox.popleft()

    def next(self, timeout: float | None = None) -> Frame:
        """The next frame; ServerClosed if it ends the connection, the session or a link with
        an error."""
        frame = self.receive(timeout)
        assert isinstance(frame, Frame), f"a protocol header in the middle: {frame!r}"
        body = frame.body
        if isinstance(body, c.Close | c.End) or (isinstance(body, c.Detach) and body.error):
            raise ServerClosed(f"{body.NAME}: {body.error!r}")
        return frame

    def expect(self, cls: type[B], timeout: float | None = None) -> B:
        """The next frame's performative, which must be a `cls`."""
        body = self.next(timeout).body
        assert isinstance(body, cls), f"expected {cls.__name__}, got {body!r}"
        return body

    def expect_header(self, protocol_id: int) -> None:
        header = self.receive()
        assert isinstance(header, ProtocolHeader), f"expected a protocol header, got {header!r}"
        assert (header.protocol_id, header.major, header.minor, header.revision) == (
            protocol_id,
            1,
            0,
            0,
        ), header

    # ---- connection

    def sasl(
        self, mechanism: str = "PLAIN", user: str = "guest", password: str = "guest"
    ) -> tuple[list[str], c.SaslOutcome]:
        """The SASL layer: the server's mechanisms and its outcome (code 0 is ok)."""
        self.send(ProtocolHeader(SASL))
        self.expect_header(SASL)
        mechanisms = self.expect(c.SaslMechanisms).sasl_server_mechanisms
        assert mechanisms is not None
        if mechanism == "PLAIN":
            response: bytes | None = b"\x00" + user.encode() + b"\x00" + password.encode()
        else:
            response = b"specgen@example.org"  # ANONYMOUS: trace information, RFC 4505
        self.send(self.frame(c.SaslInit(Symbol(mechanism), response, "localhost"), SASL_FRAME))
        outcome = self.expect(c.SaslOutcome)
        return list(mechanisms), outcome

    def open(self, container_id: str = "specgen-amqp10-client") -> c.Open:
        """The AMQP layer: its protocol header and open, both ways; the server's open."""
        self.send(
            ProtocolHeader(AMQP),
            self.frame(c.Open(container_id, "localhost", self.max_frame_size, 0)),
        )
        self.expect_header(AMQP)
        opened = self.expect(c.Open)
        # absent means no limit (the spec's default, 2^32 - 1)
        self.remote_max_frame_size = opened.max_frame_size or c.Open.DEFAULTS["max_frame_size"]
        return opened

    def begin(self) -> c.Begin:
        self.send(self.frame(c.Begin(None, self.next_outgoing_id, WINDOW, WINDOW)))
        begun = self.expect(c.Begin)
        assert begun.remote_channel == self.channel
        self.next_incoming_id = begun.next_outgoing_id or 0
        self.session = True
        return begun

    def attach_sender(self, name: str, handle: int, address: str) -> c.Attach:
        """A sending link to `address`, unsettled (the server settles with dispositions)."""
        self.send(
            self.frame(
                c.Attach(
                    name,
                    handle,
                    SENDER,
                    snd_settle_mode=0,  # unsettled
                    rcv_settle_mode=0,  # first
                    source=c.Source(f"specgen-{name}"),
                    target=c.Target(address),
                    initial_delivery_count=0,
                )
            )
        )
        return self.expect(c.Attach)

    def attach_receiver(self, name: str, handle: int, address: str) -> c.Attach:
        """A receiving link from `address`; no credit until `flow` grants it."""
        self.send(
            self.frame(
                c.Attach(
                    name,
                    handle,
                    RECEIVER,
                    snd_settle_mode=0,  # the server sends unsettled: we settle
                    rcv_settle_mode=0,
                    source=c.Source(address),
                    target=c.Target(f"specgen-{name}"),
                )
            )
        )
        return self.expect(c.Attach)

    def flow_frame(self, handle: int, delivery_count: int, link_credit: int) -> Frame:
        """A receiving link's credit: `link_credit` more after `delivery_count` deliveries."""
        return self.frame(
            c.Flow(
                self.next_incoming_id,
                WINDOW,
                self.next_outgoing_id,
                WINDOW,
                handle,
                delivery_count,
                link_credit,
            )
        )

    def transfer_frames(
        self, handle: int, tag: bytes, payload: bytes, settled: bool = False
    ) -> list[Frame]:
        """One delivery as transfer frames of at most the server's max-frame-size; it takes the
        session's next delivery id."""
        delivery_id = self.next_delivery_id
        self.next_delivery_id += 1
        first = c.Transfer(handle, delivery_id, tag, 0, settled, False)
        room = (
            self.remote_max_frame_size
            - 8
            - len(c.Transfer(handle, delivery_id, tag, 0, settled, True).encode())
        )
        if len(payload) <= room:
            self.next_outgoing_id += 1
            return [self.frame(first, payload=payload)]
        frames = []
        for at in range(0, len(payload), room):
            more = at + room < len(payload)
            body = first if at == 0 else c.Transfer(handle, more=more)
            body.more = more
            frames.append(self.frame(body, payload=payload[at : at + room]))
        self.next_outgoing_id += len(frames)
        return frames

    def close(self) -> c.Close:
        """End the session (if one began), close the connection, both answered; the socket
        closed."""
        if self.session:
            self.send(self.frame(c.End()))
            ended = self.receive()
            assert isinstance(ended, Frame) and isinstance(ended.body, c.End), ended
            assert ended.body.error is None, ended.body.error
            self.session = False
        self.send(self.frame(c.Close()))
        closed = self.receive()
        assert isinstance(closed, Frame) and isinstance(closed.body, c.Close), closed
        assert closed.body.error is None, closed.body.error
        self.sock.close()
        return closed.body
