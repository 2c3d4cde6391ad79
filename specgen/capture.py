"""`specgen capture`: a recording TCP proxy for loopback traffic.

It sits between a client and a server and forwards bytes unchanged. Per connection it writes
both directions' raw bytes back to back, `<connection>.c2s.bin` and `<connection>.s2c.bin`,
plus `<connection>.index.jsonl`, one JSON event per line, each with `connection` and monotonic
and wall timestamps (`mono`, `wall`):

- `accept` (the client's `peer`), timed when the client connected;
- `read` for every read: `direction`, `offset` in that direction's file and `length`;
- `close` once per direction, when it ends: `direction`; `side`, who ended it: `client` or
  `server` when that peer closed its end or its socket failed (then with `error`; a direction
  whose receiver is gone is ended by the receiver), or `proxy` with a `reason` ("capture
  stopped"); and byte counts: `received` from the sender, `recorded` in the .bin file and
  `delivered`, handed to the receiver's socket (once that connection is over, only what its TCP
  acknowledged, on Linux: bytes sent into a reset were never delivered);
- `recording_stopped`: the connection's files could not be created or written (`error`); its
  bytes are still forwarded, but recorded only up to `offsets` (per direction).

Frames are not parsed here, so any protocol can be recorded and a decode bug never loses a
capture. A capture problem never breaks the traffic it observes: a file that cannot be created
or written (a full disk) stops recording that connection and says so in its index (if that can
still be written), in capture.json and on stderr. Files are written unbuffered and a read whose
bytes or event cannot both be written is taken back, so the index describes exactly the bytes
in the .bin files. A client whose target cannot be reached is closed, reported on stderr (the
first few, then at most one line a second) and counted in `failed_connects`: it is not a
connection and leaves no files.

It stops on its own after a duration or when a number of connections have finished, whichever
comes first, or on SIGINT/SIGTERM. Connections are the ones that reached the target, recorded
or not, so with the target down only the duration or a signal ends a capture. When it stops,
every open direction gets its `close` event (side `proxy`, reason "capture stopped") and
`capture.json` says what was recorded, from where to where; its space is taken when the capture
starts, so that a full disk does not keep the summary from being written.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import math
import signal
import socket
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from specgen import outdir

READ_SIZE = 1 << 16
CONNECT_TIMEOUT = 10.0
SUMMARY_RESERVE = 1 << 16
"""Bytes capture.json takes when the capture starts: the summary overwrites them at the end."""
SUMMARY_STOPS = 100
"""Connections whose recording stopped that capture.json lists (it counts all of them)."""
WARN_FIRST = 5
WARN_EVERY = 1.0
SENDER = {"c2s": "client", "s2c": "server"}
RECEIVER = {"c2s": "server", "s2c": "client"}
WRITES = ("capture.json", "conn-*.c2s.bin", "conn-*.s2c.bin", "conn-*.index.jsonl")
"""What a capture writes into its folder: what --overwrite removes first (`outdir`)."""
_TCP_CLOSE = 7  # tcpi_state of a connection that is over (reset, or closed both ways)


class CaptureError(ValueError):
    """The capture cannot start (folder not empty, address taken); the message says which."""


class SummaryError(CaptureError):
    """capture.json could not be written; the message says what it would have said."""


def _open(path: Path) -> BinaryIO:
    """A new file, unbuffered: what a write returned is in the OS, and a failed write is known
    at once, with how much of it was written (a buffer would fail later, for unknown bytes)."""
    return open(path, "xb", buffering=0)


def _write_all(f: BinaryIO, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = f.write(view)
        if not n:
            raise OSError(errno.EIO, "a write made no progress")
        view = view[n:]


def _cut(f: BinaryIO, size: int) -> bool:
    """Truncate `f` to `size` and write on from there; False if that failed."""
    try:
        f.truncate(size)
        f.seek(size)
    except OSError:
        return False
    return True


def _why(e: OSError) -> str:
    return e.strerror or str(e) or type(e).__name__


def _warn(line: str) -> None:
    print(f"capture: {line}", file=sys.stderr, flush=True)


def _tcp_acked(sock: socket.socket) -> tuple[int, int] | None:
    """(TCP state, bytes the peer acknowledged), where Linux says."""
    if not sys.platform.startswith("linux") or not hasattr(socket, "TCP_INFO"):
        return None
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    except OSError:
        return None
    if len(info) < 128:  # kernels before 4.1 have no tcpi_bytes_acked
        return None
    return info[0], struct.unpack_from("=Q", info, 120)[0]


@dataclass
class _Warnings:
    """stderr lines of one kind: the first few each, then at most one a second."""

    what: str
    shown: int = 0
    left_out: int = 0
    last: float = -math.inf

    def __call__(self, line: str) -> None:
        now = time.monotonic()
        if self.shown < WARN_FIRST or now - self.last >= WARN_EVERY:
            if self.left_out:
                line += f" (and {self.left_out} more {self.what} before it)"
            _warn(line)
            self.shown, self.last, self.left_out = self.shown + 1, now, 0
        else:
            self.left_out += 1

    def flush(self) -> None:
        if self.left_out:
            _warn(f"{self.left_out} more {self.what}")
            self.left_out = 0


def _counts() -> dict[str, int]:
    return {"c2s": 0, "s2c": 0}


@dataclass(eq=False)
class _Connection:
    name: str
    folder: Path
    on_stop: Callable[[dict[str, Any]], None]
    index: BinaryIO | None = None
    index_size: int = 0  # bytes of whole lines in the index
    files: dict[str, BinaryIO] = field(default_factory=dict)
    received: dict[str, int] = field(default_factory=_counts)
    recorded: dict[str, int] = field(default_factory=_counts)
    sent: dict[str, int] = field(default_factory=_counts)
    delivered: dict[str, int] = field(default_factory=_counts)
    stopped: dict[str, Any] | None = None
    stopped_at: tuple[float, float] = (0.0, 0.0)
    stop_noted: bool = False
    cancel_reasons: dict[str, tuple[str, str]] = field(default_factory=dict)

    def open(self, peer: str, mono: float, wall: float) -> None:
        index = f"{self.name}.index.jsonl"
        try:
            self.index = _open(self.folder / index)
        except OSError as e:
            self.stop_recording(None, f"cannot create {index}: {_why(e)}")
            return
        self.note("accept", peer=peer, mono=mono, wall=wall)
        for direction in SENDER:
            if self.stopped is not None:  # the accept event or the other file failed
                return
            name = f"{self.name}.{direction}.bin"
            try:
                self.files[direction] = _open(self.folder / name)
            except OSError as e:
                self.stop_recording(None, f"cannot create {name}: {_why(e)}")

    def _append(
        self, event: str, mono: float | None = None, wall: float | None = None, **data: Any
    ) -> None:
        """One index line, or an OSError and no line (nothing if the index is gone)."""
        if self.index is None:
            return
        line = {"event": event, "connection": self.name, **data}
        mono = time.monotonic() if mono is None else mono
        line.update(mono=round(mono, 6), wall=round(time.time() if wall is None else wall, 6))
        raw = (json.dumps(line) + "\n").encode()
        try:
            _write_all(self.index, raw)
        except OSError:
            if not _cut(self.index, self.index_size):
                # a part line that stays: a later line would be glued to it, so write no more
                with contextlib.suppress(OSError):
                    self.index.close()
                self.index = None
            raise
        self.index_size += len(raw)

    def note(self, event: str, **data: Any) -> None:
        """An event other than a read; an index that cannot take it stops the recording."""
        try:
            self._append(event, **data)
        except OSError as e:
            self.stop_recording(None, f"cannot write {self.name}.index.jsonl: {_why(e)}")

    def record(self, direction: str, data: bytes) -> None:
        if self.stopped is not None:
            return
        f = self.files[direction]
        start = self.recorded[direction]
        name = f"{self.name}.{direction}.bin"
        try:
            _write_all(f, data)
        except OSError as e:
            error = f"cannot write {name}: {_why(e)}"
        else:
            try:
                self._append("read", direction=direction, offset=start, length=len(data))
            except OSError as e:
                error = f"cannot write {self.name}.index.jsonl: {_why(e)}"
            else:
                self.recorded[direction] += len(data)
                return
        # take back this read's bytes, so that the index describes the file exactly
        if not _cut(f, start):
            error += f"; {name} may hold bytes after offset {start} that the index does not list"
        self.stop_recording(direction, error)

    def stop_recording(self, direction: str | None, error: str) -> None:
        if self.stopped is not None:
            return
        self.stopped = {
            "connection": self.name,
            "direction": direction,
            "offsets": dict(self.recorded),
            "error": error,
        }
        self.stopped_at = time.monotonic(), time.time()
        for f in self.files.values():
            with contextlib.suppress(OSError):
                f.close()
        self._note_stop()
        self.on_stop(self.stopped)

    def _note_stop(self) -> None:
        """The recording_stopped event, timed when it happened; tried again at each close
        event, so that an index that takes any line after the failure says why reads end."""
        if self.stopped is None or self.stop_noted:
            return
        with contextlib.suppress(OSError):
            mono, wall = self.stopped_at
            data = {k: self.stopped[k] for k in ("direction", "offsets", "error")}
            self._append("recording_stopped", mono=mono, wall=wall, **data)
            self.stop_noted = True

    def end(self, direction: str, side: str, delivered: int, **why: str) -> None:
        self.delivered[direction] = delivered
        self._note_stop()
        self.note(
            "close",
            direction=direction,
            side=side,
            received=self.received[direction],
            recorded=self.recorded[direction],
            delivered=delivered,
            **why,
        )

    def close(self) -> None:
        for f in [*self.files.values(), *([self.index] if self.index else [])]:
            with contextlib.suppress(OSError):
                f.close()


async def _writable(sock: socket.socket) -> None:
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_writer(sock.fileno(), wake)
    try:
        await ready
    finally:
        loop.remove_writer(sock.fileno())


async def _send(conn: _Connection, direction: str, sock: socket.socket, data: bytes) -> None:
    # not loop.sock_sendall: on a failure it does not say how much was sent
    view = memoryview(data)
    while view:
        try:
            n = sock.send(view)
        except (BlockingIOError, InterruptedError):
            await _writable(sock)
            continue
        conn.sent[direction] += n
        view = view[n:]


async def _settle(tasks: set[asyncio.Task[Any]]) -> None:
    """Wait for tasks that were cancelled (they end at once), even if this task is cancelled
    meanwhile: their close events must be written before the files are closed."""
    interrupted = False
    while not all(t.done() for t in tasks):
        try:
            await asyncio.wait(tasks)
        except asyncio.CancelledError:
            interrupted = True
    if interrupted:
        raise asyncio.CancelledError


@dataclass
class Capture:
    """A proxy from `listen` to `target` recording into `folder`."""

    folder: Path
    target: tuple[str, int]
    listen: tuple[str, int] = ("127.0.0.1", 0)
    duration: float | None = None
    max_connections: int | None = None
    overwrite: bool = False  # replace what a capture wrote in `folder` (`outdir`)
    connections: int = 0  # that reached the target
    finished: int = 0
    failed_connects: int = 0
    bytes: dict[str, int] = field(default_factory=_counts)  # received, per direction
    recorded: dict[str, int] = field(default_factory=_counts)
    delivered: dict[str, int] = field(default_factory=_counts)
    recording_stopped: list[dict[str, Any]] = field(default_factory=list)
    started: float = 0.0
    _done: asyncio.Event = field(default_factory=asyncio.Event)
    _listener: socket.socket | None = None
    _acceptor: asyncio.Task[None] | None = None
    _handlers: set[asyncio.Task[None]] = field(default_factory=set)
    _summary: BinaryIO | None = None
    _stopping: bool = False
    _connect_warnings: _Warnings = field(default_factory=lambda: _Warnings("failed connects"))
    _stop_warnings: _Warnings = field(default_factory=lambda: _Warnings("recording stops"))

    async def start(self) -> tuple[str, int]:
        """Bind and start accepting; returns the address clients should connect to."""
        self._prepare_folder()
        self._listener = await self._bind()
        host, port = self._listener.getsockname()[:2]
        self.listen = (host, port)
        self.started = time.time()
        try:
            self._reserve_summary()
        except OSError as e:
            self._listener.close()
            self._listener = None
            raise CaptureError(f"{self.folder}: cannot write capture.json: {_why(e)}") from None
        self._acceptor = asyncio.create_task(self._accept_loop())
        return host, port

    async def wait(self) -> None:
        """Until the duration ends or `max_connections` connections have finished."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._done.wait(), self.duration)
        await self.stop()

    async def stop(self) -> None:
        """End every connection (close events, files closed), then write capture.json."""
        if self._stopping:
            return
        self._stopping = True
        if self._acceptor is not None:
            self._acceptor.cancel()
            await asyncio.wait({self._acceptor})
        if self._listener is not None:
            self._listener.close()
        handlers = set(self._handlers)
        for task in handlers:
            task.cancel()
        if handlers:
            await asyncio.wait(handlers)
        self._connect_warnings.flush()
        self._stop_warnings.flush()
        self._write_summary()

    def finish(self) -> None:
        """Stop recording now (what a signal does)."""
        self._done.set()

    def _prepare_folder(self) -> None:
        try:
            outdir.check(self.folder, "capture", self.overwrite)
        except outdir.OutputError as e:
            raise CaptureError(str(e)) from None
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            if self.overwrite:
                outdir.clear(self.folder, WRITES)
        except OSError as e:
            raise CaptureError(
                f"{self.folder}: cannot make the capture folder: {_why(e)}"
            ) from None

    async def _bind(self) -> socket.socket:
        host, port = self.listen
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
            )
            sock = socket.create_server(infos[0][4][:2], family=infos[0][0])
        except OSError as e:
            raise CaptureError(f"cannot listen on {host}:{port}: {e}") from None
        sock.setblocking(False)
        return sock

    def _reserve_summary(self) -> None:
        path = self.folder / "capture.json"
        head = {"recording": True, **self._where(), "started": self.started}
        try:
            self._summary = _open(path)
            # valid JSON while recording: whitespace may follow the object
            _write_all(self._summary, json.dumps(head).encode().ljust(SUMMARY_RESERVE - 1) + b"\n")
        except OSError:
            # leave the folder as it was, so that the same command can be run again
            if self._summary is not None:
                with contextlib.suppress(OSError):
                    self._summary.close()
                    path.unlink()
            raise

    def _where(self) -> dict[str, str]:
        return {
            "listen": f"{self.listen[0]}:{self.listen[1]}",
            "target": f"{self.target[0]}:{self.target[1]}",
        }

    def _write_summary(self) -> None:
        if self._summary is None:
            return
        meta: dict[str, Any] = {
            **self._where(),
            "started": self.started,
            "stopped": time.time(),
            "connections": self.connections,
            "failed_connects": self.failed_connects,
            "bytes": self.bytes,
            "recorded": self.recorded,
            "delivered": self.delivered,
            "recording_stopped_total": len(self.recording_stopped),
            "recording_stopped": self.recording_stopped[:SUMMARY_STOPS],
        }
        data = (json.dumps(meta, indent=2) + "\n").encode()
        while len(data) > SUMMARY_RESERVE:  # stay within the space taken at the start
            meta["recording_stopped"].pop()
            data = (json.dumps(meta, indent=2) + "\n").encode()
        f, self._summary = self._summary, None
        try:
            f.seek(0)
            _write_all(f, data)
            f.truncate(len(data))
        except OSError as e:
            raise SummaryError(
                f"{self.folder / 'capture.json'}: not written ({_why(e)}); the connections' "
                f"files and indexes are complete. It would have said: {json.dumps(meta)}"
            ) from None
        finally:
            with contextlib.suppress(OSError):
                f.close()

    async def _accept_loop(self) -> None:
        assert self._listener is not None
        loop = asyncio.get_running_loop()
        while True:
            try:
                client, peer = await loop.sock_accept(self._listener)
            except OSError as e:
                # e.g. out of file descriptors: say so and try again, without spinning
                _warn(f"cannot accept a connection: {_why(e)}")
                await asyncio.sleep(0.5)
                continue
            task = asyncio.create_task(self._serve(client, f"{peer[0]}:{peer[1]}"))
            self._handlers.add(task)
            task.add_done_callback(self._handlers.discard)

    async def _serve(self, client: socket.socket, peer: str) -> None:
        accepted = time.monotonic(), time.time()
        try:
            try:
                server = await self._connect()
            except OSError as e:
                client.close()
                self.failed_connects += 1
                host, port = self.target
                self._connect_warnings(
                    f"cannot reach the target {host}:{port} for the client {peer}: {_why(e)}"
                )
                return
            except BaseException:
                client.close()
                raise
            await self._proxy(client, server, peer, accepted)
        except asyncio.CancelledError:
            # stop() cancels the handlers once it has taken over; other cancellations stay
            if not self._stopping:
                raise

    async def _connect(self) -> socket.socket:
        loop = asyncio.get_running_loop()
        host, port = self.target
        error = OSError(errno.EADDRNOTAVAIL, f"no address for {host}")
        for family, kind, proto, _, address in await loop.getaddrinfo(
            host, port, type=socket.SOCK_STREAM
        ):
            sock = socket.socket(family, kind, proto)
            try:
                sock.setblocking(False)
                await asyncio.wait_for(loop.sock_connect(sock, address), CONNECT_TIMEOUT)
            except TimeoutError:
                sock.close()
                error = OSError(errno.ETIMEDOUT, f"no answer in {CONNECT_TIMEOUT:g} s")
            except OSError as e:
                sock.close()
                error = e
            except BaseException:
                sock.close()
                raise
            else:
                return sock
        raise error

    async def _proxy(
        self,
        client: socket.socket,
        server: socket.socket,
        peer: str,
        accepted: tuple[float, float],
    ) -> None:
        for sock in (client, server):
            # forward each read at once, as asyncio's own transports do
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.connections += 1
        conn = _Connection(f"conn-{self.connections:04d}", self.folder, self._recording_stops)
        conn.open(peer, *accepted)
        ends = {"c2s": (client, server), "s2c": (server, client)}
        tasks = {
            asyncio.create_task(self._pump(conn, d, src, dst)): d for d, (src, dst) in ends.items()
        }
        try:
            pending = set(tasks)
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    failed = None if task.cancelled() else task.result()
                    if failed is not None:
                        # that socket is gone, and the other direction reads from or writes to
                        # it: end that one too rather than wait for bytes that cannot come
                        for other in pending:
                            conn.cancel_reasons[tasks[other]] = (
                                failed,
                                f"the {failed} connection failed",
                            )
                            other.cancel()
        finally:
            # stop() cancelled this task: the open directions end with the default reason
            for task in tasks:
                task.cancel()
            try:
                await _settle(set(tasks))
            finally:
                for sock in (client, server):
                    sock.close()
                conn.close()
                self._finished(conn)

    async def _pump(
        self, conn: _Connection, direction: str, src: socket.socket, dst: socket.socket
    ) -> str | None:
        """Forward one direction until it ends; returns the side whose socket failed, if any."""
        loop = asyncio.get_running_loop()
        sender, receiver = SENDER[direction], RECEIVER[direction]
        before = _tcp_acked(dst)  # the acknowledged count includes a SYN on some sockets

        def delivered() -> int:
            sent = conn.sent[direction]
            after = _tcp_acked(dst)
            if before is None or after is None or after[0] != _TCP_CLOSE:
                return sent  # still open: what was sent can still arrive
            return max(0, min(sent, after[1] - before[1]))

        try:
            while True:
                try:
                    data = await loop.sock_recv(src, READ_SIZE)
                except OSError as e:
                    conn.end(direction, sender, delivered(), error=_why(e))
                    return sender
                if not data:
                    conn.end(direction, sender, delivered())
                    # half-close: the receiver sees the end of this direction, as without us
                    with contextlib.suppress(OSError):
                        dst.shutdown(socket.SHUT_WR)
                    return None
                conn.received[direction] += len(data)
                self.bytes[direction] += len(data)
                conn.record(direction, data)
                try:
                    await _send(conn, direction, dst, data)
                except OSError as e:
                    conn.end(direction, receiver, delivered(), error=_why(e))
                    return receiver
        except asyncio.CancelledError:
            side, reason = conn.cancel_reasons.get(direction, ("proxy", "capture stopped"))
            conn.end(direction, side, delivered(), reason=reason)
            raise

    def _recording_stops(self, info: dict[str, Any]) -> None:
        self.recording_stopped.append(info)
        at = ", ".join(f"{d} {n}" for d, n in info["offsets"].items())
        self._stop_warnings(
            f"{info['connection']}: recording stopped at byte {at}: {info['error']}; "
            "its traffic is still forwarded"
        )

    def _finished(self, conn: _Connection) -> None:
        for d in SENDER:
            self.recorded[d] += conn.recorded[d]
            self.delivered[d] += conn.delivered[d]
        self.finished += 1
        if self.max_connections and self.finished >= self.max_connections:
            self._done.set()


def run(
    folder: Path,
    target: tuple[str, int],
    listen: tuple[str, int],
    duration: float | None,
    max_connections: int | None,
    overwrite: bool = False,
) -> Capture:
    """Record until the duration ends or enough connections finished (blocking)."""

    async def main() -> Capture:
        cap = Capture(folder, target, listen, duration, max_connections, overwrite)
        # SIGINT/SIGTERM end the capture cleanly: close events, files closed, capture.json
        # written; set first, so that a signal during start() is one too
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, cap.finish)
        host, port = await cap.start()
        print(
            f"capture: {host}:{port} -> {target[0]}:{target[1]}, recording into {folder}",
            flush=True,
        )
        await cap.wait()
        return cap

    return asyncio.run(main())


def parse_address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise CaptureError(f"{text!r}: expected HOST:PORT")
    return host or "127.0.0.1", int(port)
