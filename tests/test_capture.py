"""`specgen capture` as a user runs it, and the sample capture it recorded for the main job."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import IO, Any, TypeVar

import pytest

from specgen import capture
from specgen.capture import Capture
from specgen.cli import main
from specgen.pipeline import decode
from specgen.specs import ROOT

SAMPLE = ROOT / "samples" / "rabbitmq-stream"
SPECGEN = str(Path(sys.executable).with_name("specgen"))


def _echo_server(reverse: bool = True) -> tuple[socket.socket, threading.Thread]:
    """A loopback server answering every read with the same bytes (reversed, unless told),
    a thread per connection, so that connections can be open at the same time."""
    srv = socket.create_server(("127.0.0.1", 0))

    def echo(conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            while data := conn.recv(65536):
                conn.sendall(data[::-1] if reverse else data)

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            threading.Thread(target=echo, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return srv, thread


def _start(out: Path, target: int, *extra: str) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [SPECGEN, "capture", "--target", f"127.0.0.1:{target}", "--out", str(out), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()  # "capture: HOST:PORT -> ..."
    assert first.startswith("capture: 127.0.0.1:"), first + proc.stderr.read()  # type: ignore[union-attr]
    return proc, int(first.split()[1].rsplit(":", 1)[1])


def _talk(port: int, chunks: list[bytes]) -> bytes:
    """Send each chunk and read until as many bytes came back; then close."""
    got = b""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        for chunk in chunks:
            s.sendall(chunk)
            want = len(got) + len(chunk)
            while len(got) < want:
                data = s.recv(65536)
                if not data:
                    raise EOFError(f"the proxy closed after {len(got)} of {want} bytes")
                got += data
    return got


def test_capture_records_both_directions_and_stops_after_n_connections(tmp_path: Path) -> None:
    srv, _ = _echo_server()
    out = tmp_path / "cap"
    proc, port = _start(out, srv.getsockname()[1], "--connections", "2", "--duration", "60")
    try:
        assert _talk(port, [b"hello", b"world!"]) == b"olleh!dlrow"
        assert _talk(port, [b"x" * 100_000]) == b"x" * 100_000
        assert proc.wait(timeout=30) == 0  # stopped by itself after two connections
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        srv.close()
    assert (out / "conn-0001.c2s.bin").read_bytes() == b"helloworld!"
    assert (out / "conn-0001.s2c.bin").read_bytes() == b"olleh!dlrow"
    assert (out / "conn-0002.c2s.bin").read_bytes() == b"x" * 100_000
    events = [json.loads(x) for x in (out / "conn-0001.index.jsonl").read_text().splitlines()]
    assert events[0]["event"] == "accept" and events[0]["peer"].startswith("127.0.0.1:")
    reads = [e for e in events if e["event"] == "read"]
    assert [(e["direction"], e["offset"], e["length"]) for e in reads] == [
        ("c2s", 0, 5),
        ("s2c", 0, 5),
        ("c2s", 5, 6),
        ("s2c", 5, 6),
    ]
    assert all(e["wall"] > 1e9 and e["mono"] > 0 for e in events)
    assert [e["side"] for e in events if e["event"] == "close"][0] == "client"
    meta = json.loads((out / "capture.json").read_text())
    assert meta["connections"] == 2 and meta["bytes"] == {"c2s": 100_011, "s2c": 100_011}


def test_capture_stops_cleanly_on_sigterm_and_refuses_a_used_folder(tmp_path: Path) -> None:
    srv, _ = _echo_server()
    out = tmp_path / "cap"
    proc, port = _start(out, srv.getsockname()[1], "--duration", "600")
    try:
        _talk(port, [b"abc"])
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        srv.close()
    assert json.loads((out / "capture.json").read_text())["connections"] == 1
    again = subprocess.run(
        [SPECGEN, "capture", "--target", "127.0.0.1:1", "--out", str(out), "--duration", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 2
    assert again.stderr.strip().endswith(
        "not empty; specgen capture writes into a new or empty folder "
        "(--overwrite replaces what it wrote there and keeps other files)"
    )
    assert main(["capture", "--target", "127.0.0.1:1", "--out", str(tmp_path / "new")]) == 2
    # 0 connections would never be reached: refused like no limit at all
    argv = ["capture", "--target", "127.0.0.1:1", "--out", str(tmp_path / "new")]
    assert main([*argv, "--connections", "0"]) == main([*argv, "--duration", "0"]) == 2
    assert not (tmp_path / "new").exists()


def test_shipped_sample_round_trips_frame_by_frame() -> None:
    files = sorted(map(str, SAMPLE.glob("*/*.bin")))
    assert len(files) >= 10
    assert main(["frames", "rabbitmq-stream", *files, "--roundtrip"]) == 0


def test_shipped_sample_has_what_the_report_needs(tmp_path: Path) -> None:
    """Publishes, each offset type, errors: read back through the same decode as the job."""
    lines: list[str] = []
    result = decode.decode_local("rabbitmq-stream", SAMPLE, tmp_path / "out", echo=lines.append)
    assert result.rejects == 0 and result.frames == result.found > 300
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "out" / "frames").to_pylist()
    messages = {r["message"] for r in table}
    assert {
        "PublishV1",
        "PublishConfirm",
        "DeliverV1",
        "PublishError",
        "CreditResponse",
    } <= messages
    offset_types = {
        r["subscribe_request"]["offset_specification"]["offset_type"]
        for r in table
        if r["message"] == "SubscribeRequest"
    }
    assert offset_types == {1, 2, 3, 4, 5}
    codes: set[Any] = {r["response_code"] for r in table if r["response_code"] is not None}
    assert {1, 2, 3, 8} <= codes  # OK, no such stream, subscription in use, wrong password
    assert all(r["timestamp"] is not None for r in table)


# Faults. The in-process tests run `Capture` on an event loop in this thread and the client in
# a worker thread; every socket has a timeout and every wait a limit, so nothing can hang.

T = TypeVar("T")


def _in_process(cap: Capture, scenario: Callable[[int], Awaitable[T]]) -> T:
    """Start `cap`, run the scenario with its port, then wait until `cap` stops by itself."""

    async def main() -> T:
        _, port = await cap.start()
        result = await scenario(port)
        await cap.wait()
        return result

    return asyncio.run(asyncio.wait_for(main(), 5))


async def _until(done: Callable[[], bool]) -> None:
    async with asyncio.timeout(5):
        while not done():
            await asyncio.sleep(0.01)


def _events(path: Path) -> list[dict[str, Any]]:
    text = path.read_text()
    assert text == "" or text.endswith("\n")  # whole lines only
    return [json.loads(line) for line in text.splitlines()]


def _closes(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    closes = [e for e in events if e["event"] == "close"]
    assert len(closes) == 2
    return {e["direction"]: e for e in closes}


def _assert_index_matches_files(out: Path, name: str) -> dict[str, int]:
    """Every byte of each .bin file in exactly one read event, in order; returns the sizes."""
    reads = [e for e in _events(out / f"{name}.index.jsonl") if e["event"] == "read"]
    sizes = {}
    for d in ("c2s", "s2c"):
        path = out / f"{name}.{d}.bin"
        sizes[d] = path.stat().st_size if path.exists() else 0
        offset = 0
        for e in (e for e in reads if e["direction"] == d):
            assert e["offset"] == offset
            offset += e["length"]
        assert offset == sizes[d], d
    return sizes


def test_files_that_cannot_be_created_do_not_stop_the_traffic_or_the_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    srv, _ = _echo_server(reverse=False)
    out = tmp_path / "cap"
    cap = Capture(out, srv.getsockname(), max_connections=1)

    async def scenario(port: int) -> bytes:
        (out / "conn-0001.c2s.bin").mkdir()  # after start(), which wants an empty folder
        return await asyncio.to_thread(_talk, port, [b"hello", b"x" * 70_000])

    try:
        # before the fix: the connection never counted as finished, so this never returned
        assert _in_process(cap, scenario) == b"hello" + b"x" * 70_000
    finally:
        srv.close()
    events = _events(out / "conn-0001.index.jsonl")
    assert [e["event"] for e in events] == ["accept", "recording_stopped", "close", "close"]
    stop = events[1]
    assert stop["offsets"] == {"c2s": 0, "s2c": 0}
    assert stop["error"] == "cannot create conn-0001.c2s.bin: File exists"
    for close in _closes(events).values():
        assert close["received"] == close["delivered"] == 70_005 and close["recorded"] == 0
    meta = json.loads((out / "capture.json").read_text())
    assert meta["connections"] == 1 and meta["recording_stopped_total"] == 1
    assert meta["recording_stopped"][0]["error"] == stop["error"]
    assert meta["bytes"] == meta["delivered"] == {"c2s": 70_005, "s2c": 70_005}
    assert meta["recorded"] == {"c2s": 0, "s2c": 0}
    assert capsys.readouterr().err == (
        "capture: conn-0001: recording stopped at byte c2s 0, s2c 0: cannot create "
        "conn-0001.c2s.bin: File exists; its traffic is still forwarded\n"
    )


class _Disk:
    """Free bytes shared by every file (None: no limit), as on a real disk."""

    free: int | None = None


def _small_disk(monkeypatch: pytest.MonkeyPatch) -> _Disk:
    """Every file capture opens lives on a disk that can fill up.

    Why not a real full disk: a small tmpfs or loop mount needs root, and RLIMIT_FSIZE limits
    each file on its own and fails with EFBIG. A disk is shared by all files, takes no space
    for overwrites, gives space back on truncation and fails with ENOSPC after a short write:
    this model does exactly that, deterministically and in-process.
    """
    disk = _Disk()

    class DiskFile(io.FileIO):
        def write(self, b: bytes | memoryview) -> int:  # type: ignore[override]
            if disk.free is None:
                return super().write(b)
            pos, size = self.tell(), os.fstat(self.fileno()).st_size
            room = max(0, size - pos) + disk.free
            if room == 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            n = super().write(memoryview(b)[:room])
            disk.free -= max(0, pos + n - size)
            return n

        def truncate(self, size: int | None = None) -> int:
            before = os.fstat(self.fileno()).st_size
            after = super().truncate(size)
            if disk.free is not None:
                disk.free += max(0, before - after)
            return after

    _patch_open(monkeypatch, DiskFile)
    return disk


def _patch_open(monkeypatch: pytest.MonkeyPatch, raw: type[io.FileIO]) -> None:
    """capture's files open as `raw` (below any buffer or text layer the caller asks for)."""

    def opener(path: Path, mode: str = "r", buffering: int = -1, **text: Any) -> IO[Any]:
        f = raw(path, mode.replace("b", "").replace("t", ""))
        if buffering == 0:
            return f
        buffered = io.BufferedWriter(f)
        return buffered if "b" in mode else io.TextIOWrapper(buffered, **text)

    # the module's `open`, found before the builtin one
    monkeypatch.setattr(capture, "open", opener, raising=False)


def test_a_full_disk_keeps_forwarding_and_the_index_matches_the_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    disk = _small_disk(monkeypatch)
    srv, _ = _echo_server(reverse=False)
    out = tmp_path / "cap"
    cap = Capture(out, srv.getsockname(), max_connections=2)
    chunks = [bytes([65 + i]) * 2000 for i in range(5)]

    async def scenario(port: int) -> list[bytes]:
        # room for the first exchange and part of the second
        disk.free = 6000
        first = await asyncio.to_thread(_talk, port, chunks)
        await _until(lambda: cap.finished == 1)
        disk.free = 0  # full before the second connection even starts
        return [first, await asyncio.to_thread(_talk, port, chunks)]

    try:
        assert _in_process(cap, scenario) == [b"".join(chunks)] * 2
    finally:
        srv.close()
    sizes = _assert_index_matches_files(out, "conn-0001")
    assert 2000 <= sizes["c2s"] < 10_000 and 2000 <= sizes["s2c"] < 10_000
    events = _events(out / "conn-0001.index.jsonl")
    (stop,) = [e for e in events if e["event"] == "recording_stopped"]
    assert stop["offsets"] == sizes  # where recording stopped: exactly what the files hold
    assert stop["error"].endswith(".bin: No space left on device")
    # taking back the part-written read freed the room for the last events
    for d, close in _closes(events).items():
        sender = {"c2s": "client", "s2c": "server"}[d]  # each side closed after the other
        assert close == close | {"side": sender, "received": 10_000, "delivered": 10_000}
        assert close["recorded"] == sizes[d]

    # no room for a single line: an empty index, no .bin files, still forwarded and counted
    assert (out / "conn-0002.index.jsonl").read_bytes() == b""
    assert not list(out.glob("conn-0002.*.bin"))
    meta = json.loads((out / "capture.json").read_text())  # written on the full disk
    assert meta["connections"] == 2 and meta["recording_stopped_total"] == 2
    assert [s["connection"] for s in meta["recording_stopped"]] == ["conn-0001", "conn-0002"]
    assert meta["recording_stopped"][1] == {
        "connection": "conn-0002",
        "direction": None,
        "offsets": {"c2s": 0, "s2c": 0},
        "error": "cannot write conn-0002.index.jsonl: No space left on device",
    }
    assert meta["bytes"] == meta["delivered"] == {"c2s": 20_000, "s2c": 20_000}
    assert meta["recorded"] == sizes
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(line.endswith("its traffic is still forwarded") for line in err)


def test_a_summary_that_cannot_be_written_says_what_it_would_have_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    class Breaks(io.FileIO):
        """Takes the first write (capture.json's reserved space), fails the ones after."""

        writes = 0

        def write(self, b: bytes | memoryview) -> int:  # type: ignore[override]
            self.writes += 1
            if self.writes > 1:
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            return super().write(b)

    _patch_open(monkeypatch, Breaks)
    out = tmp_path / "cap"
    argv = ["capture", "--target", "127.0.0.1:1", "--out", str(out), "--duration", "0.05"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"specgen: {out / 'capture.json'}: not written (Input/output error);")
    assert '"connections": 0, "failed_connects": 0' in err and err.count("\n") == 1


def test_a_target_that_closes_mid_connection_is_blamed_and_undelivered_bytes_are_marked(
    tmp_path: Path,
) -> None:
    srv = socket.create_server(("127.0.0.1", 0))

    def answer_once_and_close() -> None:
        conn, _ = srv.accept()
        with conn:
            conn.settimeout(5)
            conn.recv(5)
            conn.sendall(b"bye")

    threading.Thread(target=answer_once_and_close, daemon=True).start()
    out = tmp_path / "cap"
    cap = Capture(out, srv.getsockname(), max_connections=1)

    def client(port: int) -> bytes:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"hello")
            got = b""
            while data := s.recv(100):  # the answer, then the server's close
                got += data
            # the client does not notice and goes on: these bytes reach the proxy only
            with contextlib.suppress(OSError):
                for _ in range(64):
                    s.sendall(b"z" * 65536)
        return got

    async def scenario(port: int) -> bytes:
        return await asyncio.to_thread(client, port)

    try:
        assert _in_process(cap, scenario) == b"bye"
    finally:
        srv.close()
    events = _events(out / "conn-0001.index.jsonl")
    closes = _closes(events)
    assert [e["direction"] for e in events if e["event"] == "close"] == ["s2c", "c2s"]
    s2c, c2s = closes["s2c"], closes["c2s"]
    assert s2c["side"] == "server" and "error" not in s2c
    assert s2c["received"] == s2c["recorded"] == s2c["delivered"] == 3
    # the server's socket failed when the proxy wrote to it: the server ended this direction
    assert c2s["side"] == "server" and c2s["error"]
    assert c2s["received"] == c2s["recorded"] > 5
    recorded = (out / "conn-0001.c2s.bin").read_bytes()
    assert len(recorded) == c2s["received"] and recorded.startswith(b"hellozzz")
    if sys.platform.startswith("linux"):  # what the server's TCP acknowledged: the hello only
        assert c2s["delivered"] == 5
    assert c2s["delivered"] < c2s["received"]


def test_sigterm_closes_every_open_connection_without_tracebacks(tmp_path: Path) -> None:
    srv, _ = _echo_server(reverse=False)
    out = tmp_path / "cap"
    proc, port = _start(out, srv.getsockname()[1], "--duration", "60")
    clients = []
    try:
        for _ in range(2):  # both open when the signal comes
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            clients.append(s)
            s.sendall(b"abc")
            assert s.recv(3) == b"abc"
        os.kill(proc.pid, signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=10)
        assert proc.returncode == 0
        # the proxy closed both clients' connections
        assert [s.recv(10) for s in clients] == [b"", b""]
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        for s in clients:
            s.close()
        srv.close()
    assert stderr == ""  # no CancelledError traceback, nor any other line
    assert (
        stdout
        == f"capture: 2 connections, 0 failed connects, 6 bytes client->server, 6 bytes server->client in {out}\n"
    )
    for name in ("conn-0001", "conn-0002"):
        events = _events(out / f"{name}.index.jsonl")
        assert events[-1]["event"] == "close"
        for d, close in _closes(events).items():
            assert close == close | {
                "direction": d,
                "side": "proxy",
                "reason": "capture stopped",
                "received": 3,
                "recorded": 3,
                "delivered": 3,
            }
        assert (out / f"{name}.c2s.bin").read_bytes() == b"abc"
    meta = json.loads((out / "capture.json").read_text())
    assert meta["connections"] == 2 and meta["bytes"] == {"c2s": 6, "s2c": 6}


def test_a_target_that_is_down_is_reported_and_not_counted(tmp_path: Path) -> None:
    # bound but not listening: connections to it are refused, and no one else can take the port
    down = socket.socket()
    down.bind(("127.0.0.1", 0))
    target = down.getsockname()[1]
    out = tmp_path / "cap"
    # --connections 1 counts connections that reached the target: only the duration ends this
    proc, port = _start(out, target, "--connections", "1", "--duration", "1")
    began = time.monotonic()
    try:
        for _ in range(8):
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                with contextlib.suppress(ConnectionResetError):
                    assert s.recv(10) == b""  # closed by the proxy
        stdout, stderr = proc.communicate(timeout=10)
        assert proc.returncode == 0 and time.monotonic() - began >= 0.9
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        down.close()
    lines = stderr.splitlines()
    shown = [
        x
        for x in lines
        if x.startswith(
            f"capture: cannot reach the target 127.0.0.1:{target} for the client 127.0.0.1:"
        )
    ]
    assert all("Connect call failed" in x for x in shown)
    # the first five each, then the rest counted, at most one line a second
    assert 5 <= len(shown) < 8
    left_out = [int(m) for m in re.findall(r"(\d+) more failed connects", stderr)]
    assert len(shown) + sum(left_out) == 8 and len(lines) <= len(shown) + 1
    assert "0 connections, 8 failed connects" in stdout
    meta = json.loads((out / "capture.json").read_text())
    assert meta["connections"] == 0 and meta["failed_connects"] == 8
    assert sorted(p.name for p in out.iterdir()) == ["capture.json"]


@pytest.mark.parametrize("case", ["a file", "under a file", "unwritable", "read-only"])
def test_an_unusable_out_folder_is_a_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    (tmp_path / "file").write_text("x")
    out = {"a file": tmp_path / "file", "under a file": tmp_path / "file" / "cap"}.get(
        case, tmp_path / "cap"
    )
    if case == "unwritable":  # a folder that takes no files, whoever runs the test

        class Refuses(io.FileIO):
            def __init__(self, path: Path, mode: str) -> None:
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))

        _patch_open(monkeypatch, Refuses)
        want = f"{out}: cannot write capture.json: Permission denied"
    elif case == "read-only":
        if os.geteuid() == 0:
            pytest.skip("root writes into read-only folders")
        out.mkdir(mode=0o500)
        want = f"{out}: cannot write into {out}: permission denied"  # found before listening
    else:
        want = {
            "a file": f"{out}: exists and is not a folder",
            "under a file": f"{out}: cannot be made: {tmp_path / 'file'} is not a folder",
        }[case]
    argv = ["capture", "--target", "127.0.0.1:1", "--out", str(out), "--duration", "1"]
    assert main(argv) == 2
    assert capsys.readouterr().err == f"specgen: {want}\n"
    if out.is_dir():
        assert not list(out.iterdir())  # nothing left behind: the same command can run again
