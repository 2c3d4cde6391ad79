"""One recorded session for the shipped samples: a private RabbitMQ node, `specgen capture` in
front of one of its ports, a client session driven through the proxy, then both stopped by pid.

Each `samples/record_*.py` gives its own client session; this is what they share.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rabbitmq import RabbitNode, free_port


def record(out: Path, port: Callable[[RabbitNode], int], drive: Callable[[int], None]) -> int:
    """Record `drive(proxy_port)` into `out`/session-1 (replacing `out`), with the capture in
    front of `port(node)`; the capture's exit code."""
    if out.exists():
        shutil.rmtree(out)
    with tempfile.TemporaryDirectory(prefix="specgen-sample-") as tmp:
        node = RabbitNode(Path(tmp))
        node.start()
        proxy_port = free_port()
        capture = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("specgen")),
                "capture",
                "--target", f"127.0.0.1:{port(node)}",
                "--listen", f"127.0.0.1:{proxy_port}",
                "--out", str(out / "session-1"),
                "--duration", "300",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        try:
            # the capture says when it listens (no probe connection, so no empty one recorded)
            assert capture.stdout is not None
            print(capture.stdout.readline().rstrip())
            drive(proxy_port)
            time.sleep(1.0)
        finally:
            os.kill(capture.pid, signal.SIGTERM)
            capture.wait(timeout=30)
            node.stop()
    files = sorted(p.name for p in (out / "session-1").iterdir())
    size = sum(p.stat().st_size for p in (out / "session-1").iterdir())
    print(f"recorded {len(files)} files, {size} bytes into {out}")
    return capture.returncode
