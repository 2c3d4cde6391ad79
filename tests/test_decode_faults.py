"""A decode survives a killed Python worker and a lost executor; one that cannot finish says so.

Issue 39: Spark retries a failed task on a cluster, but local mode tries each task once unless
its master URL says otherwise, so one worker killed (by the out-of-memory killer, say) lost the
whole run. The session now runs `local[N]` as `local[N,4]` and asks a cluster for 4 attempts
(`spark.TASK_ATTEMPTS`). Here a real worker is killed with SIGKILL in the middle of a decode of
200,000 frames: the run must finish with tables equal to an undisturbed run's and say that a
task was tried again. A run whose every attempt is killed must fail in a few lines, leave its
folder marked unfinished, and `specgen report` must refuse that folder in one line.

Only processes this test run started are killed, by pid: Python workers below this process's
own Spark JVM, and the executor below the standalone worker the cluster fixture started.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from specgen import cli
from specgen.pipeline import decode, unfinished
from specgen.pipeline.decode import DecodeJobError
from specgen.specs import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import scale  # noqa: E402  (bench/scale.py: the Streams capture generator of the scale bench)

pytestmark = pytest.mark.spark

FRAMES = 200_000  # about 44 MB: a few seconds of decoding, so a kill lands in a running task
RANGE = 1 << 20
KEYS = [("capture", "ascending"), ("connection", "ascending"), ("direction", "ascending")]


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("faults") / "captures"
    made = scale.generate(folder / "day1", FRAMES, seed=39)
    assert made.frames >= FRAMES
    return folder


def table(path: Path) -> Any:
    """A table's rows in file order: sorted by where each frame was, every column compared."""
    return pq.read_table(path).sort_by([*KEYS, ("offset", "ascending")])


def command(pid: int) -> str:
    """A process's command line ("" once it is gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def below(root: int) -> dict[int, str]:
    """Every process under `root` (not itself), with its command line (bench/scale.py's walk
    of /proc, which its memory sampling uses)."""
    return {pid: command(pid) for pid in scale.descendants(root)[1:]}


def python_workers(root: int) -> list[int]:
    """Spark's forked Python workers under `root`: the children of a `pyspark.daemon`."""
    found = below(root)
    return [
        worker
        for daemon, line in found.items()
        if "pyspark.daemon" in line
        for worker in below(daemon)
    ]


def cpu_ticks(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return -1
    user, system = stat[stat.rindex(b")") + 2 :].split()[11:13]
    return int(user) + int(system)


def busy(pids: list[int], window: float = 0.05) -> list[int]:
    """Those of `pids` that used CPU within `window` seconds: running a task, not idle (Spark
    keeps idle workers for the next task, and one killed idle is only discarded)."""
    before = {pid: cpu_ticks(pid) for pid in pids}
    time.sleep(window)
    return [pid for pid in pids if cpu_ticks(pid) > before[pid] >= 0]


@contextmanager
def killing(
    find: Callable[[], list[int]], most: int | None = None, gap: float = 0.0
) -> Iterator[list[int]]:
    """While the body runs, SIGKILL what `find` names as it appears: at most `most` processes
    (None: every one), `gap` seconds apart. Yields the pids killed."""
    killed: list[int] = []
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(0.005):
            for pid in find():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    continue
                killed.append(pid)
                if most is not None and len(killed) >= most:
                    return
                if stop.wait(gap):
                    return

    thread = threading.Thread(target=run, name="test-killer", daemon=True)
    thread.start()
    try:
        yield killed
    finally:
        stop.set()
        thread.join()


def test_a_killed_python_worker_costs_a_retry_not_the_run(
    spark: Any, capture: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    quiet = tmp_path / "undisturbed"
    decode.run("rabbitmq-stream", capture, quiet, "local[*]", target=RANGE, echo=lambda _: None)
    capfd.readouterr()
    out = tmp_path / "disturbed"

    def decoding() -> list[int]:
        """A worker busy decoding: once the tables are begun (the walk writes nothing), and
        busy over a window long enough that it is inside a task, not finishing one (a worker
        killed between tasks is only replaced, and nothing is tried again)."""
        return busy(python_workers(os.getpid()), 0.15) if (out / "frames").exists() else []

    # twice, a while apart: one kill may still land as a task ends; no task fails 4 times
    with killing(decoding, most=2, gap=0.3) as killed:
        result = decode.run(
            "rabbitmq-stream", capture, out, "local[*]", target=RANGE, echo=lambda _: None
        )
    assert killed, "no Python worker was running to kill"
    err = capfd.readouterr().err
    assert "failed task attempt" in err and "tried again" in err, err[-3000:]
    assert result.reconciled
    assert not (out / unfinished.MARK).exists()
    for name in ("frames", "rejects"):
        assert table(out / name).equals(table(quiet / name)), name
    assert table(out / "frames").num_rows >= FRAMES


def test_a_run_that_cannot_finish_is_marked_and_report_refuses_it(
    spark: Any, capture: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "failed"

    def decoding_workers() -> list[int]:
        """Every Python worker once the tables are begun (after the walk, which writes nothing):
        each decoding task's four attempts fail, and the job with them."""
        return python_workers(os.getpid()) if (out / "frames").exists() else []

    with killing(decoding_workers) as killed:
        with pytest.raises(DecodeJobError) as failed:
            decode.run(
                "rabbitmq-stream", capture, out, "local[*]", target=RANGE, echo=lambda _: None
            )
    assert len(killed) >= 4
    said = str(failed.value)
    assert re.fullmatch(r"Task \S+ in stage \S+ failed 4 times, the last time: .+", said), said
    assert "\n" not in said
    err = capfd.readouterr().err
    assert "\tat " not in err, "a Java stack trace reached the console"
    mark = (out / unfinished.MARK).read_text()
    assert "has not finished" in mark and "--overwrite" in mark

    assert cli.main(["report", str(out)]) == 2
    lines = capfd.readouterr().err.splitlines()
    assert len(lines) == 1 and "not a finished decode" in lines[0], lines
    assert "starting Spark" not in lines[0]


def test_a_lost_executor_on_a_standalone_cluster_costs_a_retry_not_the_run(
    cluster: tuple[str, Path, int], spark: Any, capture: Path, tmp_path: Path
) -> None:
    url, _, worker = cluster

    def busy_executors() -> list[int]:
        """An executor JVM of the worker this test started, once it runs Python tasks."""
        return [
            pid
            for pid, line in below(worker).items()
            if "CoarseGrainedExecutorBackend" in line and busy(python_workers(pid))
        ]

    out = tmp_path / "cluster-out"
    cli_args = [sys.executable, "-m", "specgen", "decode", "rabbitmq-stream", str(capture)]
    with killing(busy_executors, most=1) as killed:
        proc = subprocess.run(
            [*cli_args, "--out", str(out), "--master", url, "--range-size", str(RANGE)],
            capture_output=True,
            text=True,
            timeout=900,
            cwd=ROOT,
        )
    assert killed, "no executor was running tasks to kill"
    assert proc.returncode == 0, proc.stdout + proc.stderr[-5000:]
    assert "\tat " not in proc.stderr, "a Java stack trace reached the console"
    assert "tried again" in proc.stderr, proc.stderr[-3000:]
    local = tmp_path / "local-out"
    decode.run("rabbitmq-stream", capture, local, "local[*]", target=RANGE, echo=lambda _: None)
    for name in ("frames", "rejects"):
        assert table(out / name).equals(table(local / name)), name
