"""A minimal RabbitMQ Streams client built only on the generated codec and a socket.

It exists to make the generated code talk to a real server: every byte it sends comes from
`encode`, every byte it reads goes through `FrameReader`. Frames that are not the awaited
response (Deliver, PublishConfirm, Heartbeat, MetadataUpdate, ...) wait in `inbox`.
"""

from __future__ import annotations

import itertools
import socket
import time
from collections import deque
from typing import Any, TypeVar

from specgen_codecs.rabbitmq_stream import v4_0 as rs

M = TypeVar("M")


class StreamClient:
    def __init__(self, host: str = "127.0.0.1", port: int = 5552, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.reader = rs.FrameReader(sender="server")
        self.inbox: deque[rs.Message] = deque()
        self._ids = itertools.count(1)
        self.sent: list[bytes] = []
        self.received = bytearray()  # every byte the server sent, for byte-level checks
        self.closed = False

    def next_id(self) -> int:
        return next(self._ids)

    # ---- wire

    def send(self, msg: rs.Message) -> None:
        frame = rs.encode(msg)
        self.sent.append(frame)
        self.sock.sendall(frame)

    def send_raw(self, frame: bytes) -> None:
        self.sock.sendall(frame)

    def _fill(self, deadline: float) -> bool:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        self.sock.settimeout(remaining)
        try:
            data = self.sock.recv(1 << 20)
        except TimeoutError:
            return False
        if not data:
            self.closed = True
            return False
        self.received += data
        self.reader.feed(data)
        self.inbox.extend(self.reader)
        return True

    def recv(self, kind: type[M], timeout: float | None = None, **match: Any) -> M:
        """The first frame of `kind` (whose attributes equal `match`), waiting for it."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            for i, msg in enumerate(self.inbox):
                if isinstance(msg, kind) and all(getattr(msg, k) == v for k, v in match.items()):
                    del self.inbox[i]
                    return msg
            if not self._fill(deadline):
                seen = [type(m).__name__ for m in self.inbox]
                state = "closed by the server" if self.closed else "timed out"
                raise TimeoutError(
                    f"no {getattr(kind, '__name__', kind)} {match or ''}: {state}; inbox {seen}"
                )

    def take(self, kind: type[M]) -> list[M]:
        """Every frame of `kind` already received."""
        out = [m for m in self.inbox if isinstance(m, kind)]
        self.inbox = deque(m for m in self.inbox if not isinstance(m, kind))
        return out

    def pump(self, seconds: float) -> None:
        """Read whatever arrives in the next `seconds`."""
        deadline = time.monotonic() + seconds
        while self._fill(deadline):
            pass

    def request(self, msg: Any, response: type[M]) -> M:
        self.send(msg)
        return self.recv(response, correlation_id=msg.correlation_id)

    # ---- the opening sequence of the reference's Authentication section

    def handshake(
        self,
        user: str = "guest",
        password: str = "guest",
        vhost: str = "/",
        heartbeat: int | None = None,
    ) -> rs.OpenResponse:
        peer = self.request(
            rs.PeerPropertiesRequest(self.next_id(), [rs.PeerProperty("product", "specgen-tests")]),
            rs.PeerPropertiesResponse,
        )
        self.server_properties = {p.key: p.value for p in peer.peer_properties}
        mechanisms = self.request(rs.SaslHandshakeRequest(self.next_id()), rs.SaslHandshakeResponse)
        self.mechanisms = mechanisms.mechanisms
        auth = self.request(
            rs.SaslAuthenticateRequest(
                self.next_id(), "PLAIN", b"\x00" + user.encode() + b"\x00" + password.encode()
            ),
            rs.SaslAuthenticateResponse,
        )
        self.auth_code = auth.response_code
        if auth.response_code != rs.ResponseCode.OK:
            raise PermissionError(
                f"SaslAuthenticate answered {rs.ResponseCode(auth.response_code)!r}"
            )
        tune = self.recv(rs.TuneRequest)
        self.tune = tune
        self.send(
            rs.TuneResponse(tune.frame_max, tune.heartbeat if heartbeat is None else heartbeat)
        )
        opened = self.request(rs.OpenRequest(self.next_id(), vhost), rs.OpenResponse)
        return opened

    def frames_received(self) -> list[bytes]:
        """The server's bytes cut into whole frames by their size prefixes."""
        out, at = [], 0
        while at + 4 <= len(self.received):
            size = int.from_bytes(self.received[at : at + 4], "big")
            if at + 4 + size > len(self.received):
                break
            out.append(bytes(self.received[at : at + 4 + size]))
            at += 4 + size
        return out

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
