"""`specgen decode --master spark://...` on a real standalone cluster, started from pyspark's jars.

A master and one worker run on 127.0.0.1 on free ports (web UIs too), each in a process group of
its own, so the teardown stops exactly the processes this test started (the worker's executors
and their Python workers included) and nothing else. The CLI runs in a subprocess, as a user
would run it, and its tables must equal what local[*] writes.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyspark
import pytest
from test_decode import RANGE, build_captures, rows

from specgen.pipeline import decode
from specgen.specs import ROOT

SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"
START_TIMEOUT = 180.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait(
    ready: Callable[[], bool], what: str, procs: list[subprocess.Popen[bytes]], log: Path
) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while not ready():
        for p in procs:
            if p.poll() is not None:
                pytest.fail(
                    f"{what}: a Spark process exited with {p.returncode}:\n{log.read_text()[-3000:]}"
                )
        if time.monotonic() > deadline:
            pytest.fail(
                f"{what}: not ready after {START_TIMEOUT:.0f} s:\n{log.read_text()[-3000:]}"
            )
        time.sleep(0.25)


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the process group this test created for `proc`, and only that one."""
    group = proc.pid  # start_new_session: the group id is the leader's pid
    for sig, grace in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            proc.poll()
            try:
                os.killpg(group, 0)  # anyone left in the group?
            except ProcessLookupError:
                break
            time.sleep(0.2)
        else:
            continue
        break
    proc.wait(timeout=10)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """spark://127.0.0.1:PORT of a master with one registered worker, and the worker's folder."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    work = tmp_path / "worker"
    work.mkdir()
    procs: list[subprocess.Popen[bytes]] = []

    def start(args: list[str], log: Path) -> subprocess.Popen[bytes]:
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [str(SPARK_CLASS), *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=tmp_path,
                start_new_session=True,
            )
        procs.append(proc)
        return proc

    try:
        port = _free_port()
        master_log = tmp_path / "master.log"
        start(
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(_free_port()),
            ],
            master_log,
        )
        _wait(lambda: _accepts(port), "master", procs, master_log)
        url = f"spark://127.0.0.1:{port}"
        worker_log = tmp_path / "worker.log"
        start(
            [
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                "127.0.0.1",
                "--port",
                str(_free_port()),
                "--webui-port",
                str(_free_port()),
                "--cores",
                "2",
                "--memory",
                "3g",
                "--work-dir",
                str(work),
                url,
            ],
            worker_log,
        )
        _wait(
            lambda: b"Successfully registered with master" in worker_log.read_bytes(),
            "worker",
            procs,
            worker_log,
        )
        yield url, work
    finally:
        for proc in reversed(procs):
            _stop(proc)


def test_decode_on_a_standalone_cluster_equals_local(
    cluster: tuple[str, Path], spark: Any, tmp_path: Path
) -> None:
    url, work = cluster
    captures = build_captures(tmp_path / "captures")
    out = tmp_path / "cluster-out"
    cli = [sys.executable, "-m", "specgen", "decode", "rabbitmq-stream", str(captures.root)]
    proc = subprocess.run(
        # bigger ranges than local's below: fewer tasks, same tables (ranges never show in them)
        [*cli, "--out", str(out), "--master", url, "--range-size", str(RANGE * 4)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-5000:]
    assert "Traceback" not in proc.stderr
    line = (
        f"reconciliation: {len(captures.frames)} frames + 1 rejected frame = {captures.found} "
        "frames found; the rows hold every byte of all 7 files exactly once"
    )
    assert line in proc.stdout.splitlines()
    # the executors ran on the worker: it keeps a folder per application and executor
    assert list(work.glob("app-*/*/stderr"))

    local = tmp_path / "local-out"
    decode.run("rabbitmq-stream", captures.root, local, target=RANGE, echo=lambda _: None)
    assert rows(out / "frames") == rows(local / "frames")
    assert rows(out / "rejects") == rows(local / "rejects")
