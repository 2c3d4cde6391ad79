"""The one place a Spark session is built, for `specgen decode`, `specgen report` and the tests.

Sized for the machine the project runs on (2 cores, 24 GiB): the driver JVM gets 4 GiB, a
standalone cluster's executors 2 GiB each; the decoding itself runs in Python workers, outside
the JVM heap. Python workers run this interpreter, so they import `specgen` and the codecs as
it does, on a standalone cluster too (run from a checkout, PYTHONPATH also points at it). The
web UI is off, Spark's console progress bar is on when stderr is a terminal (not in a log),
timestamps are UTC and written to Parquet as INT64 microseconds, which every Parquet reader
understands (Spark's default, INT96, is legacy). Ctrl-C is one line and exit 130 (`interrupt`).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO
from urllib.parse import urlparse, urlsplit

from pyspark.sql import SparkSession

from specgen.locations import CHECKOUT
from specgen.pipeline import interrupt, jvm_archive
from specgen.progress import Progress, seconds

DEFAULT_MASTER = "local[*]"

TASK_ATTEMPTS = 4
"""Attempts at a task before its job fails: a Python worker killed (out of memory, kill -9), an
executor lost or a task failing once costs a retry, not the run. Spark's default on a cluster
(spark.task.maxFailures); local mode tries each task once unless its master URL names a count,
so the session runs `local[N]` as `local[N,4]` (`with_retries`)."""

_LOCAL = re.compile(r"local(?:\[(\*|\d+)\])?")

CONF = {
    "spark.app.name": "specgen",
    "spark.ui.enabled": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.shuffle.partitions": "8",
    "spark.driver.memory": "4g",
    "spark.executor.memory": "2g",
    "spark.python.worker.faulthandler.enabled": "true",
    "spark.sql.execution.pyspark.udf.faulthandler.enabled": "true",
    # the frames table is wide (a struct column per message class); print its plans whole
    "spark.sql.debug.maxToStringFields": "1000",
    "spark.task.maxFailures": str(TASK_ATTEMPTS),
}

LOG4J = Path(__file__).with_name("log4j2.properties")

JAVA_OPTIONS = ("-XX:TieredStopAtLevel=1",)
"""The driver's and the executors' JVMs compile with their quick compiler only. Decoded data
never enters a JVM (tasks write their Parquet themselves), so the optimizing compiler had
nothing worth its time, and took it from the Python workers: a whole core for
seconds after a session starts, 4.3-4.7 s of CPU during a 2 M-frame decode on 2 cores (2.5-2.7
s without it). Measured here, alternating: that decode 11.9-12.3 s -> 11.2-11.9 s, the AMQP 1.0
sample's report 17.3 s -> 14.8 s, Streams' 15.4 s -> 14.8 s, the 2 M frames' 30.8 s -> 30.4 s;
on the 2-worker standalone cluster, the executors' too, that decode 16.1 s -> 14.1 s."""


def console_progress(stream: TextIO | None = None) -> str:
    """spark.ui.showConsoleProgress: Spark's stage bars redraw one line with carriage returns,
    which a log keeps glued to the next line; on only when stderr is a terminal, asked when the
    session starts (not when this module is imported)."""
    return "true" if (stream if stream is not None else sys.stderr).isatty() else "false"


CONNECT_TIMEOUT = 3.0
"""Seconds to wait for a standalone master's port before giving up on it."""

STANDALONE_PORT = 7077


class SessionError(RuntimeError):
    """A session on another master is already running in this process."""


class MasterUnreachable(RuntimeError):
    """Nothing answers at a standalone master's address: one line naming the URL."""


class Unavailable(RuntimeError):
    """Spark cannot be started here (no Java, a master that will not have us): an environment
    error, one line, exit 2 from every command."""


def start(master: str | None = None, progress: Progress | None = None) -> SparkSession:
    """`session`, its failures to start as Unavailable (MasterUnreachable stays itself); with
    `progress`, a line before and after a start (the JVM takes seconds)."""
    from py4j.protocol import Py4JError  # type: ignore[import-untyped]
    from pyspark.errors import PySparkException

    try:
        if progress is None or SparkSession.getActiveSession() is not None:
            return session(master)
        check_master(master or DEFAULT_MASTER)  # no "starting" for a master nobody runs
        began = time.monotonic()
        progress.line(f"starting Spark on {master or DEFAULT_MASTER}")
        spark = session(master)
        progress.line(f"Spark started ({seconds(began)})")
        return spark
    except SessionError as e:
        raise Unavailable(str(e)) from None
    except PySparkException as e:
        raise Unavailable(f"cannot start Spark (is Java 17 installed?): {e}") from e
    except Py4JError as e:  # the JVM started but the master would not have it: its first line
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise Unavailable(f"cannot start Spark on {master or DEFAULT_MASTER}: {first}") from e


def with_retries(master: str) -> str:
    """The master URL Spark is given: `local` and `local[N]` with TASK_ATTEMPTS tries per task;
    other URLs (a count already named, a cluster) as they are."""
    found = _LOCAL.fullmatch(master)
    return f"local[{found.group(1) or 1},{TASK_ATTEMPTS}]" if found else master


def session(master: str | None = None) -> SparkSession:
    """A Spark session on `master` (default local[*]), or the one this process already runs.

    A process holds one SparkContext: asking for another master while one runs is an error,
    not a silent reuse of the wrong cluster.
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        running = active.sparkContext.master
        if master is not None and running not in (master, with_retries(master)):
            raise SessionError(
                f"this process already runs Spark on {running}; cannot also use {master}"
            )
        return active
    master = master or DEFAULT_MASTER
    check_master(master)
    python = os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # Loopback masters: bind the driver to loopback too, so nothing listens on other interfaces
    # and Spark does not warn that the host name resolves to 127.0.0.1.
    here = master.startswith("local") or urlparse(master).hostname in ("127.0.0.1", "localhost")
    if here:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    pythonpath = os.pathsep.join(
        p for p in (str(CHECKOUT or ""), os.environ.get("PYTHONPATH")) if p
    )
    builder = SparkSession.builder.master(with_retries(master))
    for key, value in CONF.items():
        builder = builder.config(key, value)
    builder = builder.config("spark.ui.showConsoleProgress", console_progress())
    builder = (
        builder.config("spark.pyspark.python", python)
        .config("spark.pyspark.driver.python", python)
        .config("spark.executorEnv.PYTHONPATH", pythonpath)
    )
    java_options = [*JAVA_OPTIONS]
    if LOG4J.exists():
        java_options.append(f"-Dlog4j2.configurationFile={LOG4J.as_uri()}")
    # Spark's classes mapped from an archive (jvm_archive): by the driver's JVM, which runs
    # here whatever the master, and by the executors' of a cluster on this machine (elsewhere
    # the archive's path names nothing, or another machine's file)
    cds = jvm_archive.plan()
    builder = builder.config(
        "spark.driver.extraJavaOptions", " ".join([*java_options, *cds.options])
    )
    executors = [*JAVA_OPTIONS, *(cds.options if here and not cds.writes else ())]
    builder = builder.config("spark.executor.extraJavaOptions", " ".join(executors))
    if os.environ.get("SPARK_LOCAL_IP") == "127.0.0.1":
        builder = builder.config("spark.driver.host", "127.0.0.1").config(
            "spark.driver.bindAddress", "127.0.0.1"
        )
    # Ctrl-C waits until the session stands (the threads py4j starts meanwhile inherit the
    # mask), then meets ours instead of the handler the SparkContext installs (see interrupt)
    main = threading.current_thread() is threading.main_thread()
    if main:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        try:
            spark = builder.getOrCreate()
        except Exception:
            if cds.archive is None or cds.writes:
                raise
            # a JVM that cannot map its archive (damaged since it was checked) does not start:
            # once more without it (`build` writes a new one)
            jvm_archive.forget(cds)
            spark = builder.config(
                "spark.driver.extraJavaOptions", " ".join(java_options)
            ).getOrCreate()
    finally:
        if main:
            interrupt.install()
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    cds.started(spark)
    spark.sparkContext.setLogLevel("WARN")
    return spark


@contextmanager
def tasks_done(spark: SparkSession, progress: Progress | None, what: str) -> Iterator[None]:
    """While the body runs Spark jobs, how many of their tasks are done, now and then (Spark's
    own status tracker, polled every second from a thread of ours)."""
    if progress is None:
        yield
        return
    stop = threading.Event()

    def poll() -> None:
        tracker = spark.sparkContext.statusTracker()
        while not stop.wait(1.0):
            try:
                found = [tracker.getStageInfo(i) for i in tracker.getActiveStageIds()]
            except Exception:  # the session ending under us ends the polling
                return
            stages = [st for st in found if st is not None]
            if stages:
                total = sum(st.numTasks for st in stages)
                done = sum(st.numCompletedTasks for st in stages)
                progress.update(f"{done} of {total} {what} done")

    poller = threading.Thread(target=poll, name="specgen-progress", daemon=True)
    poller.start()
    try:
        yield
    finally:
        stop.set()
        poller.join()
        progress.done()


SMALL_QUERIES = 30_000
"""Rows (frames and rejects) up to which a report's queries run `interpreted`."""

INTERPRETED = {
    "spark.sql.codegen.wholeStage": "false",
    # Spark's own setting for expressions without generated code (it names it a testing one)
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}


@contextmanager
def interpreted(session: SparkSession) -> Iterator[None]:
    """Spark SQL's expressions evaluated as they are while the body runs, not compiled to Java
    first (whole-stage and per-expression code generation off), then the settings as they were.

    Generating and compiling each query's Java code costs a fresh JVM more than a small table's
    rows take to read: measured on the AMQP 1.0 sample's report (31 jobs), 6.7-7.1 s with code
    generation, 5.5-5.7 s without; the same report again in the same session 3.8-4.0 s against
    2.8 s. Per row compiled code is the faster: on bench/scale.py's Streams mix, 20,001 frames
    took 6.2-6.3 s compiled and 5.6-5.7 s interpreted, 400,000 frames 10.1 s compiled and
    14.1-14.8 s interpreted. So `report` asks for this only up to SMALL_QUERIES rows. The
    figures are the same either way (each report's JSON compared byte for byte)."""
    before = {key: session.conf.get(key, None) for key in INTERPRETED}
    for key, value in INTERPRETED.items():
        session.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in before.items():
            if old is None:
                session.conf.unset(key)
            else:
                session.conf.set(key, old)


def jobs(spark: SparkSession) -> set[int]:
    """The ids of the jobs this session has run (and runs): `retries` counts those after."""
    return set(spark.sparkContext.statusTracker().getJobIdsForGroup())


def retries(spark: SparkSession, before: set[int], progress: Progress) -> int:
    """The task attempts that failed, and were tried again (`TASK_ATTEMPTS`), in the jobs run
    since `jobs` gave `before`, from Spark's status tracker; a line says how many, if any."""
    tracker = spark.sparkContext.statusTracker()
    failed = 0
    for job in jobs(spark) - before:
        info = tracker.getJobInfo(job)
        for stage in info.stageIds if info is not None else ():
            found = tracker.getStageInfo(stage)
            failed += found.numFailedTasks if found is not None else 0
    if failed:
        progress.line(f"{failed} failed task attempt{'s' if failed != 1 else ''} tried again")
    return failed


def check_master(master: str) -> None:
    """A plain TCP connect to a `spark://` master (any of an HA list), before the JVM starts.

    Without it, an unreachable master costs a minute of spark-submit retrying and a hundred
    lines of Java stack trace; a connect tells the same in milliseconds. Other masters (local,
    yarn, k8s) are not checked: they have no single address to try.
    """
    if not master.startswith("spark://"):
        return
    reasons = []
    for address in master.removeprefix("spark://").split(","):
        try:
            parts = urlsplit(f"//{address}")
            host, port = parts.hostname, parts.port or STANDALONE_PORT
        except ValueError:  # a port that is not a number, or out of range
            host, port = None, 0
        if not host:
            reasons.append(f"{address}: not HOST:PORT")
            continue
        try:
            with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT):
                return  # one master answers: Spark finds the leader itself
        except TimeoutError:
            reasons.append(f"no answer in {CONNECT_TIMEOUT:g} s")
        except socket.gaierror:
            reasons.append(f"unknown host {host}")
        except OSError as e:
            reasons.append((e.strerror or type(e).__name__).lower())
    why = "; ".join(dict.fromkeys(reasons))
    raise MasterUnreachable(f"cannot reach Spark master {master} ({why})")
