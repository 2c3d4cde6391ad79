"""A minimal AMQP 1.0 client on a plain socket, built only on the generated codec.

It speaks just enough of the protocol for the live tests: the SASL and AMQP protocol headers,
SASL PLAIN or ANONYMOUS, open, begin, attaching sending and receiving links, transfers (split
into frames of the peer's max-frame-size, `more` on all but the last), flow and disposition.
Every byte it sends comes from the generated `encode` and is kept in `sent` (with a count of
the frames and headers in `sent_frames`); every byte it reads is kept in `received` and split
into frames by the generated `FrameReader` (each frame's own bytes kept in `raw_frames`, its
decoded form in `frames`), so a test can check that both streams read back and every server
frame re-encodes to its very bytes.

The socket is never left unread: every send waits on select() for room to write *or* bytes to
read, and reads whatever the server sent meanwhile into the inbox, so the server's writer never
blocks on a full receive buffer of ours while we block on a full send buffer of theirs. The
session's flow control (2.5.6) is the client's: next-incoming-id, the windows both ways, updated
by every transfer and flow the test takes from the inbox, in order; transfer_frames refuses to
go beyond the server's incoming window, and when ours is half used the client reopens it with a
session flow. Link state (credit, delivery counts, settlement) is the test's business. `close`
ends the session and the connection as the spec has it: after our end (or close) the server may
still send frames before its answer; they are kept in `before_end` (`before_close`), and a
timeout says what did come. RabbitMQ 3.10 now and then never answers an end (see `close`).
"""

from __future__ import annotations

import select
import socket
import time
import warnings
from collections import deque
from typing import Any, TypeVar

from specgen_codecs.amqp_1_0.v1_0 import FrameReader
from specgen_codecs.amqp_1_0.v1_0 import commands as c
from specgen_codecs.amqp_1_0.v1_0.commands import Frame, ProtocolHeader, decode, encode
from specgen_codecs.amqp_1_0.values import Symbol

B = TypeVar("B")
AMQP, SASL = 0, 3  # protocol ids
AMQP_FRAME, SASL_FRAME = 0, 1  # frame types
SENDER, RECEIVER = False, True  # link roles
MAX_FRAME_SIZE = 32768  # what we accept: the server splits larger messages for us
WINDOW = 65535  # our session windows, as RabbitMQ's own
# how long close() awaits the server's end: RabbitMQ answers in milliseconds (close() took 40 ms
# at most in 70 runs of the 10,000-message test beside busy processes), or, by a race, never
END_WAIT = 5.0


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
        self.sock.setblocking(False)  # select() says when to read and when to write
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
        self.last_read = time.monotonic()  # when bytes last came
        self.read_while_sending = 0  # bytes read in the middle of a send
        self.send_stalls = 0  # times a send found no room (a blocking sendall would have hung)
        self.channel = 0
        self.session = False  # whether our session has begun (and not ended)
        # the session's flow control (2.5.6); transfer ids count transfer frames, delivery ids
        # deliveries (as proton does)
        self.next_outgoing_id = 0  # our session's next transfer id
        self.initial_outgoing_id = 0  # ... at our begin
        self.next_delivery_id = 0  # our session's next delivery id
        self.next_incoming_id = 0  # the server's next transfer id: its begin, then one a frame
        self.incoming_window = WINDOW  # transfers we accept before our next flow reopens it
        self.remote_incoming_window = 0  # transfers the server accepts: its begin, then flows
        self.remote_outgoing_window = 0  # transfers the server may still send
        self.session_flows = 0  # flows the client sent by itself, to reopen its window
        self.before_end: list[Frame | ProtocolHeader] = []  # what came after our end, before its
        self.before_close: list[Frame | ProtocolHeader] = []  # ... after our close, before its
        self.end_answered: bool | None = None  # whether the server answered our end (close())

    # ---- wire

    def send(self, *frames: Frame | ProtocolHeader) -> None:
        for f in frames:
            if isinstance(f, Frame) and isinstance(f.body, c.Flow):
                assert f.body.incoming_window is not None
                self.incoming_window = f.body.incoming_window  # what we advertise from now on
        self.send_raw(b"".join(encode(f) for f in frames), len(frames))

    def send_raw(self, data: bytes, count: int) -> None:
        """Bytes already encoded, `count` frames or headers of them. While the socket has no room
        the server's frames are read into the inbox; TimeoutError after `timeout` seconds in
        which no byte moved either way."""
        self.sent += data
        self.sent_frames += count
        view = memoryview(data)
        moved = time.monotonic()
        while view:
            left = self.timeout - (time.monotonic() - moved)
            readable, writable, _ = select.select([self.sock], [self.sock], [], max(left, 0))
            if readable:
                got = self._drain()
                self.read_while_sending += got
                if got:
                    moved = time.monotonic()
            if writable:
                try:
                    view = view[self.sock.send(view) :]
                    moved = time.monotonic()
                except BlockingIOError:
                    pass
            else:
                self.send_stalls += 1
            if not readable and not writable and left <= 0:
                raise TimeoutError(
                    f"the server read none of the {len(view)} bytes left to send in "
                    f"{self.timeout:.0f}s, nor sent any"
                )

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

    def _drain(self) -> int:
        """Read all the socket holds, without waiting; how many bytes."""
        got = 0
        while True:
            try:
                chunk = self.sock.recv(1 << 20)
            except BlockingIOError:
                return got
            self._take(chunk)
            self.last_read = time.monotonic()
            got += len(chunk)

    def poll(self) -> bool:
        """Read whatever is already there, without waiting; whether anything came."""
        return self._drain() > 0

    def wait(self, timeout: float | None = None) -> None:
        """Block until at least one frame is in the inbox (TimeoutError after `timeout`). The
        socket is read once more after the deadline: what came while this process was not
        scheduled counts."""
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        while not self.inbox:
            left = deadline - time.monotonic()
            readable, _, _ = select.select([self.sock], [], [], max(left, 0))
            if readable:
                self._drain()
            elif left <= 0:
                raise TimeoutError(
                    f"no frame from the server in {limit:.0f}s (the last bytes came "
                    f"{time.monotonic() - self.last_read:.1f}s ago; {self.reader.pending} bytes "
                    f"of an unfinished frame held)"
                )

    def receive(self, timeout: float | None = None) -> Frame | ProtocolHeader:
        """The next frame or protocol header from the server, in order, whatever it is; the
        session's flow state follows it (and a flow goes out if our window is half used)."""
        self.wait(timeout)
        frame = self.inbox.popleft()
        if isinstance(frame, Frame) and frame.type == AMQP_FRAME and self.session:
            self._track(frame.body)
        return frame

    def _track(self, body: Any) -> None:
        """2.5.6: receiving a transfer, receiving a flow."""
        if isinstance(body, c.Transfer):
            self.next_incoming_id += 1
            self.incoming_window -= 1
            self.remote_outgoing_window -= 1
            if self.incoming_window <= WINDOW // 2:
                self.session_flows += 1
                self.send(self.frame(self.session_flow()))
        elif isinstance(body, c.Flow):
            assert body.next_outgoing_id is not None and body.incoming_window is not None
            assert body.outgoing_window is not None
            self.next_incoming_id = body.next_outgoing_id
            self.remote_outgoing_window = body.outgoing_window
            base = body.next_incoming_id
            if base is None:  # the server had not seen our begin yet
                base = self.initial_outgoing_id
            self.remote_incoming_window = base + body.incoming_window - self.next_outgoing_id

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
        self.initial_outgoing_id = self.next_outgoing_id
        self.send(self.frame(c.Begin(None, self.next_outgoing_id, WINDOW, WINDOW)))
        begun = self.expect(c.Begin)
        assert begun.remote_channel == self.channel
        self.next_incoming_id = begun.next_outgoing_id or 0
        self.remote_incoming_window = begun.incoming_window or 0
        self.remote_outgoing_window = begun.outgoing_window or 0
        self.session = True
        return begun

    def session_flow(self) -> c.Flow:
        """The session's state alone (no link): reopens our incoming window."""
        return c.Flow(self.next_incoming_id, WINDOW, self.next_outgoing_id, WINDOW)

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

    def _room(self, handle: int, tag: bytes, settled: bool) -> int:
        """Payload bytes a transfer frame of this delivery can carry."""
        delivery_id = self.next_delivery_id
        largest = c.Transfer(handle, delivery_id, tag, 0, settled, True)
        return self.remote_max_frame_size - 8 - len(largest.encode())

    def frames_needed(self, handle: int, tag: bytes, size: int, settled: bool = False) -> int:
        """Transfer frames the next delivery of `size` payload bytes takes."""
        return max(1, -(-size // self._room(handle, tag, settled)))

    def transfer_frames(
        self, handle: int, tag: bytes, payload: bytes, settled: bool = False
    ) -> list[Frame]:
        """One delivery as transfer frames of at most the server's max-frame-size; it takes the
        session's next delivery id, and as many transfer ids as frames, which the server's
        incoming window must allow (frames_needed says how many beforehand)."""
        need = self.frames_needed(handle, tag, len(payload), settled)
        assert need <= self.remote_incoming_window, (
            f"{need} transfer frames, the server's incoming window allows "
            f"{self.remote_incoming_window}"
        )
        self.remote_incoming_window -= need
        room = self._room(handle, tag, settled)
        delivery_id = self.next_delivery_id
        self.next_delivery_id += 1
        first = c.Transfer(handle, delivery_id, tag, 0, settled, False)
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

    def close(self, end_wait: float = END_WAIT) -> c.Close:
        """End the session (if one began) and close the connection, the server's answers
        awaited; the socket closed. What the server sent after our end (close) and before its
        answer is kept in `before_end` (`before_close`).

        RabbitMQ 3.10 (its AMQP 1.0 plugin) now and then never answers an end: its session
        process hands the end to the session's writer process and stops at once, and the
        session's supervisor (one_for_all) then shuts the writer down, which does not trap
        exits, sometimes before it wrote the end to the socket. The session is gone all the
        same, and the close, which the connection's reader process answers by itself, still
        comes. So the end is awaited `end_wait` seconds; without it the close ends the session
        with the connection (2.5.2), `end_answered` is False and a warning says so."""
        lost: TimeoutError | None = None
        if self.session:
            self.session = False  # END_SENT: nothing more goes out on the session
            self.send(self.frame(c.End()))
            try:
                self._answer(c.End, self.before_end, end_wait)
            except TimeoutError as e:
                lost = e
            self.end_answered = lost is None
        self.send(self.frame(c.Close()))
        closed = self._answer(c.Close, self.before_close)
        self.sock.close()
        if self.end_answered is False:
            if any(isinstance(f, Frame) and isinstance(f.body, c.End) for f in self.before_close):
                self.end_answered = True  # late, after our close
            else:
                warnings.warn(
                    f"the server never answered our end ({lost}); its close did come: RabbitMQ "
                    f"3.10's session writer was shut down before it wrote the end",
                    RuntimeWarning,
                    stacklevel=2,
                )
        return closed

    def _answer(
        self, cls: type[B], before: list[Frame | ProtocolHeader], timeout: float | None = None
    ) -> B:
        """The server's `cls` answering ours: frames before it are kept in `before` (END_SENT
        and CLOSE_SENT may still receive, 2.5.5 and 2.4.6); an error in it, or a close when an
        end was awaited, is ServerClosed; TimeoutError if nothing came for `timeout` seconds
        (the client's own by default)."""
        name = getattr(cls, "NAME", cls.__name__)
        while True:
            try:
                frame = self.receive(timeout)
            except TimeoutError as e:
                kinds = [f.body.NAME if isinstance(f, Frame) else "header" for f in before]
                raise TimeoutError(
                    f"no {name} answered ours: {e}; before it came {len(before)} frames "
                    f"{kinds[:20]}"
                ) from e
            body = frame.body if isinstance(frame, Frame) else None
            if isinstance(body, c.Close) and cls is not c.Close:
                raise ServerClosed(f"close instead of {name}: {body.error!r}")
            if isinstance(body, cls):
                error = getattr(body, "error", None)
                if error is not None:
                    raise ServerClosed(f"{name}: {error!r}")
                return body
            before.append(frame)
