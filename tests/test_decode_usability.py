"""What users of `specgen decode` and `specgen report` meet first: `report --json`, `decode
--max-rejects`, a Spark master that cannot be reached, publish-to-confirm counts on a capture
without its index, and index lines the reader does not understand.

`spark` is the session-wide fixture from tests/spark_fixtures.py: the in-process commands run
on it; the unreachable-master tests run the CLI in a subprocess, which never starts a JVM."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
from pyspark.sql import functions as F

from specgen import report
from specgen.analyses import for_columns
from specgen.cli import main
from specgen.pipeline import decode
from specgen.pipeline.inputs import load_index

ROOT = Path(__file__).resolve().parents[1]
STREAM = ROOT / "samples" / "rabbitmq-stream"
AMQP = ROOT / "samples" / "amqp-0-9-1"


def _untimed(sample: Path, to: Path) -> Path:
    """The sample's capture folders without their index files: no timestamps at all."""
    shutil.copytree(sample, to, ignore=shutil.ignore_patterns("*.index.jsonl"))
    assert not list(to.rglob("*.index.jsonl"))
    return to


def _decoded(protocol: str, sample: Path, out: Path) -> Path:
    result = decode.decode_local(protocol, sample, out, echo=lambda _: None)
    assert result.reconciled
    return out


@pytest.fixture(scope="module")
def stream_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _decoded("rabbitmq-stream", STREAM, tmp_path_factory.mktemp("stream") / "out")


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


# ---- report --json ---------------------------------------------------------------------------


def _text_sections(text: str) -> dict[str, list[str]]:
    """Title -> the lines under its underline, from the terminal report."""
    blocks = text.split("\n\n")
    out = {}
    for block in blocks[1:]:
        lines = block.splitlines()
        if len(lines) >= 2 and lines[1] == "=" * len(lines[0]):
            out[lines[0]] = lines[2:]
    return out


def _cells(line: str, spans: list[tuple[int, int]]) -> list[str]:
    return [line[a:b].strip() for a, b in spans]


def _shown(value: Any) -> str:
    """A JSON value as the terminal table prints it."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def test_report_json_holds_the_text_tables_values(
    spark: Any, stream_out: Path, tmp_path: Path
) -> None:
    target = tmp_path / "tables" / "report.json"
    code, text, _ = _cli(
        "report", str(stream_out), "--html", str(tmp_path / "r.html"), "--json", str(target)
    )
    assert code == 0
    assert text.rstrip().endswith(f"report: {tmp_path / 'r.html'}, {target}")
    data = json.loads(target.read_text(encoding="utf-8"))
    assert data["source"] == str(stream_out)
    shown = _text_sections(text)
    assert [s["title"] for s in data["sections"]] == list(shown)
    tables = 0
    for section in data["sections"]:
        lines = shown[section["title"]]
        if section["columns"]:
            tables += 1
            header, rule = lines[0], lines[1]
            spans = [(m.start(), m.end()) for m in re.finditer(r"-+", rule)]
            # the header's cells sit in the rule's spans, possibly right-aligned past the last
            spans[-1] = (spans[-1][0], max(len(header), spans[-1][1]))
            assert _cells(header, spans) == section["columns"]
            rows = lines[2 : 2 + len(section["rows"])]
            assert [_cells(r, spans) for r in rows] == [
                [_shown(v) for v in row] for row in section["rows"]
            ], section["title"]
            lines = lines[2 + len(section["rows"]) :]
        assert lines == section["notes"], section["title"]
    assert tables >= 6
    # JSON-native: counts are numbers, times ISO strings, latencies numbers or null
    by_title = {s["title"]: s for s in data["sections"]}
    totals = dict(by_title["Totals"]["rows"])
    assert totals["frames"] == 425 and isinstance(totals["bytes"], int)
    assert isinstance(totals["duration s"], float)
    assert datetime.fromisoformat(totals["first frame (UTC)"]).tzinfo is not None
    confirm = by_title["Publish-to-confirm latency"]
    (total,) = [r for r in confirm["rows"] if r[0] == "all"]
    published, confirmed, unconfirmed = total[1:4]
    assert published == confirmed + unconfirmed and confirmed > 200
    assert all(isinstance(v, float) for v in total[5:])


def test_report_json_on_stdout_is_alone(spark: Any, stream_out: Path, tmp_path: Path) -> None:
    code, stdout, stderr = _cli(
        "report", str(stream_out), "--html", str(tmp_path / "r.html"), "--json"
    )
    assert code == 0
    data = json.loads(stdout)  # nothing else on stdout
    assert data["sections"][0]["title"] == "Totals"
    # stderr: what it computed, a line per step, then where the page went
    assert stderr.splitlines()[-1] == f"report: {tmp_path / 'r.html'}"
    assert all(line.startswith("report: ") for line in stderr.splitlines() if line)
    assert (tmp_path / "r.html").exists()


# ---- decode --max-rejects ----------------------------------------------------------------------


def _with_garbage(to: Path) -> Path:
    """One connection of the sample whose client bytes end in 20 bytes that do not frame: one
    unframed reject."""
    capture = to / "cap"
    capture.mkdir(parents=True)
    for name in ("conn-0002.c2s.bin", "conn-0002.s2c.bin"):
        shutil.copy(STREAM / "session-1" / name, capture / name)
    with (capture / "conn-0002.c2s.bin").open("ab") as f:
        f.write(b"\xff" * 20)
    return to


def test_max_rejects_fails_after_writing_the_tables(spark: Any, tmp_path: Path) -> None:
    captures = _with_garbage(tmp_path / "in")
    out = tmp_path / "out"
    code, stdout, stderr = _cli(
        "decode", "rabbitmq-stream", str(captures), "--out", str(out), "--max-rejects", "0"
    )
    assert code == 1, stdout + stderr
    assert stderr.splitlines()[-1] == (
        f"specgen: decode failed: 1 reject, more than --max-rejects 0; the tables are in {out}"
    )
    assert pq.read_table(out / "rejects").num_rows == 1
    assert pq.read_table(out / "frames").num_rows > 0
    code, _, stderr = _cli(
        "decode",
        "rabbitmq-stream",
        str(captures),
        "--out",
        str(out),
        "--overwrite",
        "--max-rejects",
        "1",
    )
    assert code == 0
    assert [ln for ln in stderr.splitlines() if not ln.startswith("decode: ")] == []  # progress


def test_max_rejects_must_not_be_negative(tmp_path: Path) -> None:
    code, _, stderr = _cli(
        "decode", "rabbitmq-stream", str(STREAM), "--out", str(tmp_path / "o"), "--max-rejects=-1"
    )
    assert code == 2 and stderr == "specgen: --max-rejects -1: must be 0 or more\n"
    assert not (tmp_path / "o").exists()


# ---- a master that cannot be reached -----------------------------------------------------------


def _nothing_listens() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"spark://127.0.0.1:{port}"


def _specgen(*argv: str) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "specgen", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    return done, time.monotonic() - start


def _tree(folder: Path) -> dict[str, int]:
    return {p.relative_to(folder).as_posix(): p.stat().st_size for p in folder.rglob("*")}


def test_decode_on_an_unreachable_master_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    master = _nothing_listens()
    out = tmp_path / "out"
    done, took = _specgen(
        "decode", "rabbitmq-stream", str(STREAM), "--out", str(out), "--master", master
    )
    assert done.returncode == 2  # an environment error: 2, as from `report` below
    assert done.stderr.splitlines() == [
        f"specgen: cannot reach Spark master {master} (connection refused)"
    ]
    assert took < 15, took
    assert done.stdout == ""  # checked before the captures are walked
    assert not out.exists()


def test_an_existing_out_stays_as_it_was(stream_out: Path, tmp_path: Path) -> None:
    out = shutil.copytree(stream_out, tmp_path / "out")
    before = _tree(out)
    master = _nothing_listens()
    done, took = _specgen(
        "decode",
        "rabbitmq-stream",
        str(STREAM),
        "--out",
        str(out),
        "--overwrite",
        "--master",
        master,
    )
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert _tree(out) == before
    done, took = _specgen("report", str(out), "--master", master)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"specgen: cannot reach Spark master {master} (connection refused)"
    ]
    assert took < 15, took
    assert _tree(out) == before  # no report.html


def test_a_capture_of_one_range_without_a_master_decodes_without_spark_to_the_same_tables(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No --master and at most one range's bytes: decoded in this process, where Spark's
    start-up would be most of the wait, into the tables Spark writes, row for row."""
    from specgen.pipeline import spark as spark_module

    on_spark, here = tmp_path / "spark", tmp_path / "here"
    with contextlib.redirect_stdout(io.StringIO()):
        args = ["decode", "rabbitmq-stream", str(STREAM), "--out"]
        assert main([*args, str(on_spark), "--master", "local[*]"]) == 0

    def no_spark(master: str | None = None) -> None:
        raise AssertionError(f"Spark started ({master})")

    monkeypatch.setattr(spark_module, "session", no_spark)
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        assert main([*args, str(here)]) == 0
    assert "decoding in this process: " in said.getvalue(), said.getvalue()
    assert "--master local[*] uses Spark" in said.getvalue()
    for table in ("frames", "rejects"):
        ours, theirs = (pq.read_table(d / table) for d in (here, on_spark))
        assert ours.schema == theirs.schema
        key = ["capture", "connection", "direction", "offset"]
        assert ours.sort_by([(k, "ascending") for k in key]).equals(
            theirs.sort_by([(k, "ascending") for k in key])
        ), table


def test_a_spark_that_cannot_start_is_exit_2_from_decode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyspark.errors import PySparkException

    from specgen.pipeline import spark

    def no_java(master: str | None = None) -> None:
        raise PySparkException("Java gateway process exited before sending its port number")

    monkeypatch.setattr(spark, "session", no_java)
    out = tmp_path / "out"
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        # a master named: this small capture would otherwise decode without Spark
        code = main(
            ["decode", "rabbitmq-stream", str(STREAM), "--out", str(out), "--master", "local[*]"]
        )
    want = "specgen: cannot start Spark (is Java 17 installed?): Java gateway process exited"
    # progress lines (prefixed with the command) may come first; the error is one line
    errors = [line for line in err.getvalue().splitlines() if not line.startswith("decode: ")]
    assert code == 2 and len(errors) == 1 and errors[0].startswith(want), err.getvalue()
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.spark  # Spark starts in the child `specgen decode`, not through the fixture
def test_ctrl_c_during_decode_is_one_line_and_exit_130(tmp_path: Path) -> None:
    # a new session, as a terminal's foreground job: Ctrl-C reaches the whole process group
    # (the JVM, Spark's Python workers), not only specgen
    proc = subprocess.Popen(
        [sys.executable, "-m", "specgen", "decode", "rabbitmq-stream", str(STREAM)]
        + ["--out", str(tmp_path / "out"), "--master", "local[*]"],  # Spark, though it is small
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        start_new_session=True,
    )
    try:
        assert proc.stderr is not None
        # the progress line before the JVM starts: interrupted a second later, the JVM is still
        # starting (3 s or more), where a wait for the walk's summary could let this small
        # capture's whole decode finish first on a quiet machine
        first = ""
        while not first.endswith("\n") or "decode: starting Spark" not in first.splitlines()[-1]:
            line = proc.stderr.readline()
            assert line, first  # ended before starting Spark
            first += line
        time.sleep(1)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        err = first + err
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    # the JVM's own first line is Java's; besides its progress lines ("decode: starting
    # Spark"), everything specgen prints is one line
    lines = [
        line
        for line in err.splitlines()
        if not line.startswith(("WARNING: Using incubator", "decode: "))
    ]
    assert lines == ["specgen: decode: interrupted"], err
    assert "Traceback" not in out


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"", "(it is empty)"),
        (b"hello, not a capture", "(starts with 68 65 6c 6c 6f 2c 20 6e)"),
        (b"\x1f\x8b garbage", "a gzip file that cannot be read"),
    ],
)
def test_a_file_that_is_no_capture_says_what_it_is(
    tmp_path: Path, content: bytes, said: str
) -> None:
    bad = tmp_path / "x.pcap"
    bad.write_bytes(content)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["decode", "rabbitmq-stream", str(bad), "--out", str(tmp_path / "out")])
    assert code == 2
    line = err.getvalue().strip()
    assert line.startswith(f"specgen: {bad}: ") and said in line, line
    assert "not a folder" not in line
    assert not (tmp_path / "out").exists()


# ---- publish-to-confirm without timestamps -----------------------------------------------------


def _section(spark: Any, out: Path, title: str) -> report.Section:
    """One analysis section, without the rest of the report (as `report.build` calls it)."""
    frames = spark.read.parquet(str(out / "frames"))
    frames = frames.withColumn("ts", F.unix_micros("timestamp"))
    timed = frames.filter(F.col("ts").isNotNull()).limit(1).count() > 0
    (section,) = [
        s
        for plugin in for_columns(set(frames.columns))
        for s in plugin.sections(frames, timed)
        if s.title == title
    ]
    return section


@pytest.mark.parametrize(
    ("protocol", "sample", "title", "counts"),
    [
        # publisher, published, confirmed, unconfirmed, errored
        ("rabbitmq-stream", STREAM, "Publish-to-confirm latency", 5),
        # channel, published, acked or nacked, nacked
        ("amqp-0-9-1", AMQP, "Publish-to-confirm latency (Basic.Ack)", 4),
    ],
)
def test_confirms_count_without_timestamps(
    spark: Any, tmp_path: Path, protocol: str, sample: Path, title: str, counts: int
) -> None:
    timed = _section(spark, _decoded(protocol, sample, tmp_path / "timed"), title)
    untimed_out = _decoded(protocol, _untimed(sample, tmp_path / "in"), tmp_path / "untimed")
    untimed = _section(spark, untimed_out, title)
    assert timed.table is not None and untimed.table is not None
    assert [r[:counts] for r in untimed.table.values] == [r[:counts] for r in timed.table.values]
    confirmed = sum(int(r[2] or 0) for r in timed.table.values if r[0] != "all")
    assert confirmed > 0
    # only the latencies need timestamps
    assert all(v is None for r in untimed.table.values for v in r[counts:])
    assert any(isinstance(v, float) for r in timed.table.values for v in r[counts:])
    assert report.NO_TIMESTAMPS in untimed.notes and report.NO_TIMESTAMPS not in timed.notes


# ---- index lines the reader does not understand ------------------------------------------------

READ = '{"event": "read", "direction": "c2s", "offset": %d, "length": 4, "wall": 1700000000.5}'


def test_unknown_index_lines_are_one_warning_per_file(tmp_path: Path) -> None:
    index = tmp_path / "conn-0001.index.jsonl"
    lines = [
        '{"event": "accept", "peer": "127.0.0.1:1", "wall": 1700000000.0}',
        READ % 0,
        '{"event": "pause", "wall": 1700000000.6}',
        READ % 4,
        '{"no": "event"}',
        "[1, 2]",
        *['{"event": "resume"}'] * 40,
        '{"event": "close", "direction": "c2s", "side": "client"}',
    ]
    index.write_text("\n".join(lines) + "\n")
    warnings: list[str] = []
    reads = load_index(index, warnings.append)
    assert warnings == [
        f'warning: {index}:3: unknown index event "pause"; ignored, and 42 more lines like it'
    ]
    # the reads keep their timestamps
    assert reads["c2s"].starts == [0, 4] and reads["c2s"].walls == [1700000000.5] * 2
    index.write_text(READ % 0 + '\n{"no": "event"}\n')
    warnings.clear()
    load_index(index, warnings.append)
    assert warnings == [
        f'warning: {index}:2: a JSON line that is not an index event (no "event" field); ignored'
    ]


def test_decode_warns_once_per_index_and_keeps_timestamps(tmp_path: Path) -> None:
    captures = shutil.copytree(STREAM, tmp_path / "in")
    index = captures / "session-1" / "conn-0002.index.jsonl"
    index.write_text(index.read_text() + '{"event": "pause"}\n' * 3 + "{not json\n")
    other = captures / "session-1" / "conn-0003.index.jsonl"
    other.write_text('{"event": "pause"}\n' + other.read_text())
    said: list[str] = []
    result = decode.decode_local("rabbitmq-stream", captures, tmp_path / "out", echo=said.append)
    assert result.reconciled
    warnings = [line for line in said if line.startswith("warning:")]
    n = len(index.read_text().splitlines())
    assert warnings == [
        f'warning: {index}:{n - 3}: unknown index event "pause"; ignored, and 2 more lines like it',
        # a corrupt line still costs the connection its timestamps
        f"warning: {index}:{n}: not a JSON line; the index is ignored: "
        "session-1/conn-0002 gets no timestamps",
        f'warning: {other}:1: unknown index event "pause"; ignored',
    ]
    frames = pq.read_table(tmp_path / "out" / "frames", columns=["connection", "timestamp"])
    untimed = {r["connection"] for r in frames.to_pylist() if r["timestamp"] is None}
    assert untimed == {"conn-0002"}
