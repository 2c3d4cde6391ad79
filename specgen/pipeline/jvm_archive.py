"""The driver JVM's class-data archive: Spark's classes mapped from one file, not loaded one by one.

A Spark session's JVM loads and verifies thousands of classes while it starts and runs its
first jobs. Java's dynamic class-data sharing (CDS, JDK 13 and later) writes the classes a JVM
loaded into an archive as it exits; a JVM started with that archive maps them instead.
Measured here (2 cores, local[*], alternating runs): a session started in 3.3-3.8 s without it
and 1.6-1.7 s with it, its first Arrow job took 2.5 s against 1.4 s, and `decode` then `report`
of the Streams sample on local[*] 17.2 s against 12.9 s.

The archive is written once per machine and set-up (`key`: the Java binary, the Spark jars), by
`python -m specgen.pipeline.warm_jvm` (`build`; `.ci/setup` runs it), never by a command:
the JVM that writes it starts 3-4 s slower and takes seconds more to exit, which a user's first
`decode` should not pay unasked. `build`:

- takes a lock file (`O_EXCL`; a lock whose process is gone is taken over), starts a session
  whose JVM has `-XX:ArchiveClassesAtExit=<name>.<pid>.partial`, runs the kinds of job specgen
  runs (`warm_jvm`'s: Arrow tasks, Parquet written and read, the report's query shapes), stops
  it and lets the JVM exit;
- checks the file (a JVM that maps a damaged archive crashes, so `java -version` with it must
  exit 0) and only then renames it into place: no JVM ever maps a partial archive;
- writes what the archive was made for in a `.json` beside it, and removes the archives (and
  their `.json`) whose Java binary or Spark jars are gone, a removed virtual environment say.

Every session's driver JVM maps the archive when there is one, and so do the executors of a
standalone cluster on this machine (a loopback master; elsewhere the archive's path would name
another machine's file or none). The JVM's CDS warnings, which it writes to stdout, are
off: an archive it cannot use (say after a Java update under the same path) is skipped, as
`-Xshare:auto` does. A session that does not start with the archive starts again without it,
and the archive is removed. `SPECGEN_JVM_ARCHIVE=0` turns all of this off. The archive (about
180 MB) lives in the user's cache (`$SPECGEN_CACHE_DIR/jvm`, else `$XDG_CACHE_HOME/specgen/jvm`,
else `~/.cache/specgen/jvm`).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
"""The JVM's CDS warnings (written to stdout) are not the user's business."""

EXIT_WAIT = 120.0
"""Seconds `build` waits for its JVM to write the archive and exit."""


def folder() -> Path | None:
    """Where archives live (see the module doc), or None without a home to put them in."""
    if os.environ.get("SPECGEN_CACHE_DIR"):
        return Path(os.environ["SPECGEN_CACHE_DIR"]) / "jvm"
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "specgen" / "jvm"
    try:
        return Path.home() / ".cache" / "specgen" / "jvm"
    except RuntimeError:
        return None


def java() -> Path | None:
    """The Java binary spark-submit runs: $JAVA_HOME's, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def key(java_binary: Path) -> str:
    """What an archive is only good for: this Java binary (its path and when it was installed)
    and these Spark jars (their folder and names)."""
    import pyspark

    jars = _jars()
    names = sorted(p.name for p in jars.glob("*.jar")) if jars.is_dir() else []
    text = "\n".join(
        [str(java_binary), str(java_binary.stat().st_mtime_ns), str(jars), pyspark.__version__]
        + names
    )
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def _archive(where: Path, binary: Path) -> Path:
    """The archive for this Java binary and these Spark jars (`key`) in `where`."""
    return where / f"spark-{key(binary)}.jsa"


def _jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent / "jars"


def _sweep(where: Path, kept: Path) -> list[Path]:
    """Remove the archives, other than `kept`, whose Java binary or Spark jars are gone (a
    removed virtual environment, an updated Java): each is some 180 MB no JVM can use. An
    archive's `.json` beside it names what it was written for."""
    gone = []
    for found in sorted(where.glob("spark-*.json")):
        archive = found.with_suffix(".jsa")
        if archive == kept:
            continue
        try:
            made_for = json.loads(found.read_text(encoding="utf-8"))
            if Path(made_for["java"]).exists() and Path(made_for["jars"]).is_dir():
                continue
        except (OSError, ValueError, KeyError, TypeError):
            pass  # unreadable: written by nothing this module knows
        for path in (archive, found):
            with contextlib.suppress(OSError):
                path.unlink()
        gone.append(archive)
    return gone


class Plan:
    """The Java options of this process's session, and what to do once its JVM has exited."""

    def __init__(self, options: list[str], archive: Path | None = None) -> None:
        self.options = options
        self.archive = archive  # the archive this session maps, or writes
        self.writes = False  # whether this session's JVM writes it as it exits
        self._publish: Callable[[Any], None] | None = None
        self._proc: Any = None

    def started(self, spark: Any) -> None:
        """The session stands: one that writes the archive publishes it at exit at the latest
        (`build` calls `finish` itself)."""
        if self._publish is not None:
            self._proc = getattr(spark.sparkContext._gateway, "proc", None)
            atexit.register(self.finish)

    def finish(self) -> None:
        """Stop the session, let its JVM write the archive and put it in place (once)."""
        publish, self._publish = self._publish, None
        if publish is not None:
            publish(self._proc)


LAST: list[Plan] = []
"""The plan of this process's last session (`build` finishes it)."""


def plan() -> Plan:
    """The options for the next session's JVM (see the module doc)."""
    made = _plan()
    LAST[:] = [made]
    return made


_writing = False  # whether the next session writes the archive: `build`'s, never a command's


def _plan() -> Plan:
    if os.environ.get("SPECGEN_JVM_ARCHIVE", "1") == "0":
        return Plan([])
    where, binary = folder(), java()
    if where is None or binary is None:
        return Plan([])
    try:
        archive = _archive(where, binary)
        name = archive.stem
        if archive.is_file():
            return Plan([f"-XX:SharedArchiveFile={archive}", *QUIET], archive)
        if not _writing:
            return Plan([])
        where.mkdir(parents=True, exist_ok=True)
        lock = where / f"{name}.lock"
        if not _take(lock):
            return Plan([])  # another process is writing it
    except OSError:
        return Plan([])  # no cache to write to: the session starts as it would without
    partial = where / f"{name}.{os.getpid()}.partial"
    made = Plan([f"-XX:ArchiveClassesAtExit={partial}", *QUIET], archive)
    made.writes = True
    made._publish = lambda proc: _publish(proc, binary, partial, archive, lock)
    return made


def build(session: Callable[[str], Any], jobs: Callable[[Any], None]) -> str:
    """The archive written now, if it is missing: a session of its own, started by `session`
    (a JVM writes the archive only as it exits, so run this in a process that starts no other
    session), given `jobs` to run (the kinds specgen runs, so that their classes are archived),
    then stopped. One line says what happened."""
    global _writing

    where, binary = folder(), java()
    if where is not None and binary is not None:
        with contextlib.suppress(OSError):
            present = _archive(where, binary)
            if present.is_file():
                return f"jvm archive: {present} (already there)"
    _writing = True
    try:
        spark = session("local[1]")
    finally:
        _writing = False
    made = LAST[-1] if LAST else None
    if made is None or not made.writes:  # off, or another process wrote or writes it meanwhile
        found = made.archive if made is not None else None
        if found is not None:
            return f"jvm archive: {found} (already there)"
        return (
            "jvm archive: none (off, no Java found, no cache folder, or another process writes it)"
        )
    jobs(spark)
    made.finish()
    assert made.archive is not None and binary is not None
    if not made.archive.is_file():
        return "jvm archive: not written (the JVM did not write a sound one)"
    made_for = {"java": str(binary), "jars": str(_jars())}
    made.archive.with_suffix(".json").write_text(json.dumps(made_for), encoding="utf-8")
    gone = _sweep(made.archive.parent, made.archive)
    swept = f"; {len(gone)} of Javas or Sparks no longer here removed" if gone else ""
    return f"jvm archive: {made.archive} ({made.archive.stat().st_size:,} bytes{swept})"


def forget(made: Plan) -> None:
    """Remove the archive a session could not start with (`build` writes another); the plan
    maps nothing from now on."""
    if made.archive is not None:
        with contextlib.suppress(OSError):
            made.archive.unlink()
    made.archive, made.options = None, []


def _take(lock: Path) -> bool:
    """The lock, or False while a live process holds it; a dead holder's lock (and the partial
    archive it left) is taken over."""
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                holder = int(lock.read_text() or "0")
            except (OSError, ValueError):
                holder = 0
            if holder and _alive(holder):
                return False
            with contextlib.suppress(OSError):
                lock.unlink()
            for left in lock.parent.glob(f"{lock.stem}.{holder}.partial"):
                with contextlib.suppress(OSError):
                    left.unlink()
            continue
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        return True
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _publish(proc: Any, binary: Path, partial: Path, archive: Path, lock: Path) -> None:
    """At exit: stop Spark, end its JVM (it exits when its stdin closes, writing the archive),
    check the archive and rename it into place; the lock goes either way."""
    try:
        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()
        if proc is not None and proc.stdin is not None:
            proc.stdin.close()
            proc.wait(timeout=EXIT_WAIT)
        if proc is not None and proc.returncode == 0 and _sound(binary, partial):
            os.replace(partial, archive)
    except Exception:  # noqa: BLE001 - a cache: whatever went wrong, the next run tries again
        pass
    finally:
        for path in (partial, lock):
            with contextlib.suppress(OSError):
                path.unlink()


def _sound(binary: Path, partial: Path) -> bool:
    """Whether a JVM maps the archive and runs: one that maps a damaged archive crashes."""
    if not partial.is_file() or partial.stat().st_size == 0:
        return False
    crash = partial.with_suffix(".crash")
    try:
        done = subprocess.run(
            [
                str(binary),
                f"-XX:SharedArchiveFile={partial}",
                f"-XX:ErrorFile={crash}",
                *QUIET,
                "-version",
            ],
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    finally:
        with contextlib.suppress(OSError):
            crash.unlink()
    return done.returncode == 0
