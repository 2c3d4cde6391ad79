"""A minimal AMQP 0-9-1 (or 0-8) client on a plain socket, built only on a generated codec.

Every byte it sends comes from `encode` (and is kept in `sent`), every byte it reads goes
through `FrameReader.frames()` (each raw frame kept in `frames`, then decoded). Nothing here
knows the protocol beyond what the tests drive: it is a socket, a reader and a recorder. The
codec is RabbitMQ's 0-9-1 unless another version's module is given (AMQP 0-8's, generated at
test time); the protocol header is the codec's own.
"""

from __future__ import annotations

import importlib
import socket
import time
from collections import deque
from types import ModuleType
from typing import Any, TypeVar

from specgen_codecs.amqp_0_9_1 import rabbitmq as amqp

M = TypeVar("M")


class ServerClosed(AssertionError):
    """The server closed the channel or the connection; the message says why."""


class AmqpClient:
    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 5672,
        timeout: float = 30.0,
        codec: ModuleType = amqp,
    ) -> None:
        self.codec = codec
        package = codec.__name__.rpartition(".")[0]
        self.preamble: bytes = importlib.import_module(f"{package}.framing").PREAMBLES["client"]
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.reader = codec.FrameReader(sender="server")
        self.sent = bytearray()  # every byte sent, the protocol header included
        self.frames: list[bytes] = []  # every frame the server sent, as received
        self.inbox: deque[amqp.Message] = deque()
        self.frame_max = 131072

    # ---- wire

    def send_preamble(self) -> None:
        self.sent += self.preamble
        self.sock.sendall(self.preamble)

    def send(self, *msgs: amqp.Message) -> None:
        data = b"".join(self.codec.encode(m) for m in msgs)
        self.send_raw(data)

    def send_raw(self, data: bytes) -> None:
        self.sent += data
        self.sock.sendall(data)

    def _fill(self, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("no answer from the server")
        self.sock.settimeout(remaining)
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ServerClosed("the server closed the socket")
        self.reader.feed(chunk)
        for _, frame in self.reader.frames():
            self.frames.append(frame)
            self.inbox.append(self.codec.decode(frame, sender="server"))

    def poll(self) -> bool:
        """Read what is already there, without waiting; whether anything came."""
        self.sock.setblocking(False)
        try:
            chunk = self.sock.recv(1 << 20)
        except BlockingIOError:
            return False
        finally:
            self.sock.settimeout(self.timeout)
        if not chunk:
            raise ServerClosed("the server closed the socket")
        self.reader.feed(chunk)
        for _, frame in self.reader.frames():
            self.frames.append(frame)
            self.inbox.append(self.codec.decode(frame, sender="server"))
        return True

    def receive(self, timeout: float | None = None) -> amqp.Message:
        """The next message from the server, in order, whatever it is."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while not self.inbox:
            self._fill(deadline)
        return self.inbox.popleft()

    def next(self, timeout: float | None = None) -> amqp.Message:
        """The next message from the server; ServerClosed if it closes the channel or
        connection."""
        msg = self.receive(timeout)
        if isinstance(msg, self.codec.ConnectionClose | self.codec.ChannelClose):
            raise ServerClosed(f"{type(msg).__name__}: {msg.reply_code} {msg.reply_text}")
        return msg

    def expect(self, cls: type[M], timeout: float | None = None) -> M:
        msg = self.next(timeout)
        assert isinstance(msg, cls), f"expected {cls.__name__}, got {msg!r}"
        return msg

    def call(self, request: amqp.Message, reply: type[M]) -> M:
        self.send(request)
        return self.expect(reply)

    # ---- connection

    def open(
        self,
        user: str = "guest",
        password: str = "guest",
        vhost: str = "/",
        version: tuple[int, int] = (0, 9),
        frame_max: int | None = None,
    ) -> None:
        """Log in; `version` is what Connection.Start must say, `frame_max` a limit lower than
        the server's to propose in Connection.TuneOk."""
        amqp = self.codec
        self.send_preamble()
        start = self.expect(amqp.ConnectionStart)
        assert (start.version_major, start.version_minor) == version
        assert b"PLAIN" in start.mechanisms.split()
        self.server_properties: dict[str, Any] = start.server_properties
        client_properties = {
            "product": "specgen amqp_client",
            "platform": "Python",
            "capabilities": {
                "publisher_confirms": True,
                "basic.nack": True,
                "consumer_cancel_notify": True,
                "connection.blocked": True,
                "authentication_failure_close": True,
                "exchange_exchange_bindings": True,
                "per_consumer_qos": True,
            },
        }
        response = b"\x00" + user.encode() + b"\x00" + password.encode()
        self.send(amqp.ConnectionStartOk(client_properties, "PLAIN", response, "en_US"))
        tune = self.expect(amqp.ConnectionTune)
        self.frame_max = min(x for x in (tune.frame_max, frame_max, self.frame_max) if x)
        # heartbeat 0: the test is short and answers nothing on its own
        self.send(amqp.ConnectionTuneOk(tune.channel_max, self.frame_max, 0))
        self.call(amqp.ConnectionOpen(vhost, "", False), amqp.ConnectionOpenOk)

    def close(self) -> None:
        amqp = self.codec
        self.call(amqp.ConnectionClose(200, "bye", 0, 0), amqp.ConnectionCloseOk)
        self.sock.close()
