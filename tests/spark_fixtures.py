"""Spark for the tests: one local session per test run, built the way `specgen decode` builds it,
and one standalone cluster for the tests of `--master spark://...`.

Starting a session costs 10-20 s, so every test that needs Spark shares this one; it starts on
first use, so runs without Spark tests never start a JVM. The cluster is a master and one
worker on 127.0.0.1 on free ports (web UIs too), each in a process group of its own, so the
teardown stops exactly the processes this run started (the worker's executors and their Python
workers included) and nothing else.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from specgen.pipeline.spark import session

    spark = session()  # local[*]: what `specgen decode` uses without --master
    try:
        yield spark
    finally:
        spark.stop()


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


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, int]]:
    """spark://127.0.0.1:PORT of a master with one registered worker, the worker's folder and
    its pid (the leader of its process group: its executors run below it). One per test run:
    an application's executors leave with it, so the next test's application gets fresh ones."""
    import pyspark  # here: a run without cluster tests need not import it

    spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
    tmp_path = tmp_path_factory.mktemp("cluster")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    work = tmp_path / "worker"
    work.mkdir()
    procs: list[subprocess.Popen[bytes]] = []

    def start(args: list[str], log: Path) -> subprocess.Popen[bytes]:
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [str(spark_class), *args],
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
        yield url, work, procs[-1].pid
    finally:
        for proc in reversed(procs):
            _stop(proc)
