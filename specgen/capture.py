"""`specgen capture`: a recording TCP proxy for loopback traffic.

It sits between a client and a server and forwards bytes unchanged. Per connection it writes
both directions' raw bytes back to back, `<connection>.c2s.bin` and `<connection>.s2c.bin`,
plus `<connection>.index.jsonl`: one line per read (direction, byte offset in that direction's
file, length, monotonic and wall timestamps) and the accept and close events. Frames are not
parsed here, so any protocol can be recorded and a decode bug never loses a capture.

It stops on its own after a duration or a number of finished connections, whichever comes
first, or on SIGINT/SIGTERM, and writes `capture.json` (what was recorded, from where to where)
when it stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

READ_SIZE = 1 << 16


class CaptureError(ValueError):
    """The capture cannot start (folder not empty, address taken); the message says which."""


@dataclass
class _Connection:
    name: str
    folder: Path
    index: IO[str] = field(init=False)
    files: dict[str, IO[bytes]] = field(init=False)
    offsets: dict[str, int] = field(default_factory=lambda: {"c2s": 0, "s2c": 0})

    def __post_init__(self) -> None:
        self.files = {d: open(self.folder / f"{self.name}.{d}.bin", "wb") for d in ("c2s", "s2c")}
        self.index = open(self.folder / f"{self.name}.index.jsonl", "w", encoding="utf-8")

    def event(self, event: str, **data: Any) -> None:
        line = {"event": event, "connection": self.name, **data}
        line.update(mono=round(time.monotonic(), 6), wall=round(time.time(), 6))
        self.index.write(json.dumps(line) + "\n")

    def record(self, direction: str, data: bytes) -> None:
        self.files[direction].write(data)
        self.event("read", direction=direction, offset=self.offsets[direction], length=len(data))
        self.offsets[direction] += len(data)

    def close(self) -> None:
        for f in self.files.values():
            f.close()
        self.index.close()


@dataclass
class Capture:
    """A proxy from `listen` to `target` recording into `folder`."""

    folder: Path
    target: tuple[str, int]
    listen: tuple[str, int] = ("127.0.0.1", 0)
    duration: float | None = None
    max_connections: int | None = None
    connections: int = 0
    finished: int = 0
    bytes: dict[str, int] = field(default_factory=lambda: {"c2s": 0, "s2c": 0})
    _done: asyncio.Event | None = None
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def start(self) -> tuple[str, int]:
        """Bind and start accepting; returns the address clients should connect to."""
        self.folder.mkdir(parents=True, exist_ok=True)
        if any(self.folder.iterdir()):
            raise CaptureError(f"{self.folder}: not empty; a capture needs a folder of its own")
        self._done = asyncio.Event()
        try:
            self._server = await asyncio.start_server(self._accept, *self.listen)
        except OSError as e:
            raise CaptureError(f"cannot listen on {self.listen[0]}:{self.listen[1]}: {e}") from None
        host, port = self._server.sockets[0].getsockname()[:2]
        self.listen = (host, port)
        self.started = time.time()
        return host, port

    async def wait(self) -> None:
        """Until the duration ends or `max_connections` connections have finished."""
        assert self._done is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._done.wait(), self.duration)
        await self.stop()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        meta = {
            "listen": f"{self.listen[0]}:{self.listen[1]}",
            "target": f"{self.target[0]}:{self.target[1]}",
            "started": self.started,
            "stopped": time.time(),
            "connections": self.connections,
            "bytes": self.bytes,
        }
        (self.folder / "capture.json").write_text(json.dumps(meta, indent=2) + "\n")

    async def _accept(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        conn = _Connection(f"conn-{self.connections:04d}", self.folder)
        peer = client_w.get_extra_info("peername")
        conn.event("accept", peer=f"{peer[0]}:{peer[1]}")
        try:
            server_r, server_w = await asyncio.open_connection(*self.target)
        except OSError as e:
            conn.event("close", side="proxy", error=f"cannot reach the target: {e}")
            conn.close()
            client_w.close()
            self._tasks.discard(task)
            self._finished()
            return
        try:
            await asyncio.gather(
                self._pump(conn, "c2s", client_r, server_w),
                self._pump(conn, "s2c", server_r, client_w),
            )
        finally:
            conn.close()
            for w in (client_w, server_w):
                w.close()
            self._tasks.discard(task)
            self._finished()

    async def _pump(
        self,
        conn: _Connection,
        direction: str,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        side = "client" if direction == "c2s" else "server"
        try:
            while data := await reader.read(READ_SIZE):
                conn.record(direction, data)
                self.bytes[direction] += len(data)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError) as e:
            conn.event("close", side=side, error=str(e))
        else:
            conn.event("close", side=side)
        # half-close: the other side sees the end of this direction, as without the proxy
        with contextlib.suppress(OSError):
            if writer.can_write_eof():
                writer.write_eof()

    def finish(self) -> None:
        """Stop recording now (what a signal does)."""
        if self._done is not None:
            self._done.set()

    def _finished(self) -> None:
        self.finished += 1
        if self.max_connections and self.finished >= self.max_connections and self._done:
            self._done.set()


def run(
    folder: Path,
    target: tuple[str, int],
    listen: tuple[str, int],
    duration: float | None,
    max_connections: int | None,
) -> Capture:
    """Record until the duration ends or enough connections finished (blocking)."""

    async def main() -> Capture:
        cap = Capture(folder, target, listen, duration, max_connections)
        host, port = await cap.start()
        # SIGINT/SIGTERM end the capture cleanly: files closed, capture.json written
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, cap.finish)
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
