"""`specgen capture` as a user runs it, and the sample capture it recorded for the main job."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from specgen.cli import main
from specgen.pipeline import decode
from specgen.specs import ROOT

SAMPLE = ROOT / "samples" / "rabbitmq-stream"
SPECGEN = str(Path(sys.executable).with_name("specgen"))


def _echo_server() -> tuple[socket.socket, threading.Thread]:
    """A loopback server that answers every read with the bytes reversed."""
    srv = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                while data := conn.recv(65536):
                    conn.sendall(data[::-1])

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
    got = b""
    with socket.create_connection(("127.0.0.1", port)) as s:
        for chunk in chunks:
            s.sendall(chunk)
            want = len(got) + len(chunk)
            while len(got) < want:
                got += s.recv(65536)
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
    assert again.stderr.strip().endswith("not empty; a capture needs a folder of its own")
    assert main(["capture", "--target", "127.0.0.1:1", "--out", str(tmp_path / "new")]) == 2


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
