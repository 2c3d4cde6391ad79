"""`specgen decode PROTOCOL INPUT_DIR --out OUT_DIR`: captures to Parquet with Spark, reconciled.

The driver lists the captures and reads their indexes; Spark tasks walk every byte file's
frame headers (`ranges.py`, a few files per task, the largest first): they count the frames
found, resynchronise after bytes that do not frame (recording each such gap) and cut the file
into ranges that start on a frame or a gap. (`decode_local` walks them itself.) Spark
gets a small DataFrame of ranges, one partition each, and `mapInArrow` runs
`columns.decode_range` on every range inside a Python worker, which reads only its own bytes,
builds Arrow batches column-wise and writes them with pyarrow as that range's Parquet parts of
OUT_DIR/frames and OUT_DIR/rejects; Spark gets back only counts. The JVM never sees a capture's
bytes nor its decoded columns (so OUT_DIR must be on a filesystem every executor sees).

Then the written tables are read back (`reconcile.py`) and the job checks, per file, that its
frame rows, rejected frames and unframed spans hold every byte of the file exactly once, and
that frames + rejected frames = frames found; it fails when they do not.

`decode_local` does the same in one Python process with pyarrow's writer and the very same
per-range function: the baseline the Spark job is measured against.
"""

from __future__ import annotations

import functools
import re
import shutil
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, astuple, dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from specgen import outdir
from specgen.pipeline import collector, unfinished
from specgen.pipeline.columns import (
    REJECTS_SCHEMA,
    Codec,
    decode_range,
)
from specgen.pipeline.inputs import (
    BadIndex,
    DecodeInputError,
    Inventory,
    Reads,
    Stream,
    load_index,
    scan,
)
from specgen.pipeline.ranges import TARGET, Cut, Range, plan, split
from specgen.pipeline.reconcile import Example, FileTally, Key, Tally
from specgen.pipeline.reconcile import tally as check
from specgen.progress import Progress, seconds
from specgen.registry import find

Echo = Callable[[str], None]


class DecodeJobError(RuntimeError):
    """Spark failed while decoding; the message is Spark's first line."""


@dataclass(frozen=True)
class Job:
    codec: Codec
    input_dir: Path
    out: Path
    inventory: Inventory
    ranges: list[Range]
    warnings: list[str]

    @property
    def found(self) -> int:
        return sum(r.frames for r in self.ranges)

    def files(self) -> dict[Key, FileTally]:
        """A fresh tally per byte file, with what the walk found in it."""
        first = self.codec.framing.first_in  # after the sender's preamble, when there is one
        out = {
            (s.capture, s.connection, s.direction): FileTally(
                s.capture, s.connection, s.direction, s.size, first(s)
            )
            for s in self.inventory.streams
        }
        for r in self.ranges:
            out[(r.capture, r.connection, r.direction)].found += r.frames
        return out

    def summary(self) -> list[str]:
        inv = self.inventory
        connections = len({(s.capture, s.connection) for s in inv.streams})
        empty = f" ({len(inv.empty)} empty)" if inv.empty else ""
        gaps = sum(len(r.gap_starts) for r in self.ranges)
        skipped = sum(sum(r.gap_lengths) for r in self.ranges)
        unframed = f", and {_n(gaps, 'unframed span')} ({_n(skipped, 'byte')})" if gaps else ""
        lines = [
            f"decode: {_n(len(inv.captures), 'capture')}, {_n(connections, 'connection')}, "
            f"{_n(len(inv.streams), 'byte file')}{empty}, {_n(len(inv.indexes), 'index', 'indexes')}: "
            f"{_n(self.found, 'frame')} found in {_n(len(self.ranges), 'range')}{unframed}"
        ]
        if inv.ignored:
            n = len(inv.ignored)
            shown = ", ".join(inv.ignored[:5]) + (f" and {n - 5} more" if n > 5 else "")
            verb = "is" if n == 1 else "are"
            lines.append(f"ignored {_n(n, 'file')} that {verb} not part of a capture: {shown}")
        return lines + self.warnings


@dataclass(frozen=True)
class Result:
    frames: int  # rows in the frames table
    rejects: int  # rows in the rejects table
    found: int  # frames the walk found
    rejected: int  # rejects of kind "frame"
    unframed: int  # rejects of kind "unframed"
    files: list[FileTally]
    problems: dict[str, str]  # file name -> what is wrong, for every file that does not reconcile
    examples: list[Example]  # a few rejects, for the summary

    @property
    def reconciled(self) -> bool:
        return self.frames + self.rejected == self.found and not self.problems

    @classmethod
    def of(cls, tally: Tally, found: int) -> Result:
        files = sorted(tally.files.values(), key=lambda t: t.name)
        problems = {t.name: p for t in files if (p := t.problem()) is not None}
        for (capture, connection, direction), rows in sorted(tally.strays.items()):
            name = f"{capture}/{connection}.{direction}.bin"
            problems[name] = f"{_n(rows, 'row')} for a file that is not in the input"
        return cls(
            frames=sum(t.frames for t in files),
            rejects=sum(t.rejected + t.unframed for t in files) + sum(tally.strays.values()),
            found=found,
            rejected=sum(t.rejected for t in files),
            unframed=sum(t.unframed for t in files),
            files=files,
            problems=problems,
            examples=tally.examples,
        )

    def lines(self, out: Path) -> list[str]:
        lines = [
            f"frames: {_n(self.frames, 'row')} in {out / 'frames'}",
            f"rejects: {_n(self.rejects, 'row')} in {out / 'rejects'}: "
            f"{_n(self.rejected, 'frame')} that did not decode, "
            f"{_n(self.unframed, 'unframed span')}",
        ]
        for capture, connection, direction, offset, length, kind, error in self.examples:
            lines.append(
                f"  reject {capture}/{connection}.{direction}.bin @{offset} "
                f"({_n(length, 'byte')}, {kind}): {error}"
            )
        lines += self._bytes()
        sign = "=" if self.frames + self.rejected == self.found else "!="
        files = len(self.files)
        good = files - sum(1 for t in self.files if t.name in self.problems)
        lines.append(
            f"reconciliation: {_n(self.frames, 'frame')} + {_n(self.rejected, 'rejected frame')} "
            f"{sign} {_n(self.found, 'frame')} found; "
            + (
                f"the rows hold every byte of {'the' if files == 1 else 'all'} "
                f"{_n(files, 'file')} exactly once"
                if good == files
                else f"{good} of {_n(files, 'file')} reconcile byte for byte"
            )
        )
        if not self.reconciled:
            bad = len(self.problems)
            lines.append(
                f"decode: FAILED: {_n(bad, 'file')} {'does' if bad == 1 else 'do'} not reconcile"
                if bad
                else "decode: FAILED: the output does not account for every frame found"
            )
        return lines

    def _bytes(self) -> list[str]:
        """A line per file when there are few files; else one line of totals and a line per
        file that does not reconcile."""
        protocol_header = any(t.first for t in self.files)
        terms = "frames + rejected frames + unframed" + (
            " + protocol header" if protocol_header else ""
        )

        def parts(t: FileTally) -> list[int]:
            return [t.frame_bytes, t.rejected_bytes, t.unframed_bytes] + (
                [t.first] if protocol_header else []
            )

        # (label, the terms, their sum, the size, what is wrong)
        rows: list[tuple[str, list[int], int, int, str | None]] = []
        if len(self.files) <= PER_FILE:
            title = f"bytes per file: {terms} = the file's size"
            shown = self.files
        else:
            title = f"bytes in all files, then in each that does not reconcile: {terms} = size"
            totals = [sum(column) for column in zip(*map(parts, self.files), strict=True)]
            size = sum(t.size for t in self.files)
            wrong = None if sum(totals) == size else "the sum is not the files' size"
            rows.append((f"all {len(self.files)} files", totals, sum(totals), size, wrong))
            shown = [t for t in self.files if t.name in self.problems]
        rows += [(t.name, parts(t), t.total, t.size, self.problems.get(t.name)) for t in shown]
        known = {t.name for t in self.files}
        strays = [(n, p) for n, p in self.problems.items() if n not in known]
        width = max([len(row[0]) for row in rows] + [len(n) for n, _ in strays], default=0)
        count = len(rows[0][1]) if rows else 0
        columns = [max(len(f"{row[1][i]:,}") for row in rows) for i in range(count)]
        right = max([len(f"{row[2]:,}") for row in rows], default=0)
        lines = [title]
        for label, terms_, total, size_, problem in rows:
            sums = " + ".join(f"{v:>{w},}" for v, w in zip(terms_, columns, strict=True))
            if problem is None:
                lines.append(f"  {label:<{width}}  {sums} = {total:>{right},} bytes: ok")
            else:
                short = "" if total == size_ else f", not {size_:,}"
                lines.append(
                    f"  {label:<{width}}  {sums} = {total:>{right},} bytes{short}: "
                    f"FAILED: {problem}"
                )
        lines += [f"  {name:<{width}}  FAILED: {problem}" for name, problem in strays]
        return lines


PER_FILE = 20
"""Up to this many byte files, the reconciliation prints a line per file."""


def prepare(
    protocol: str,
    input_dir: Path,
    out: Path,
    overwrite: bool,
    target: int,
    verify_checksums: bool = True,
) -> Job:
    """Everything before decoding: the codec, the output check, the captures, the ranges."""
    with collector.paused():  # the walk reads every frame header
        return inputs(protocol, input_dir, out, overwrite, verify_checksums).plan(target)


@dataclass(frozen=True)
class Inputs:
    """The checked inputs of a job, before its byte files are walked."""

    codec: Codec
    input_dir: Path
    out: Path
    inventory: Inventory
    indexes: dict[tuple[str, str], dict[str, Reads]]
    warnings: list[str]

    def plan(self, target: int, cuts: list[list[Cut]] | None = None) -> Job:
        """The job: the byte files walked here, or their `cuts` from a walk elsewhere."""
        streams, framing = self.inventory.streams, self.codec.framing
        ranges = plan(streams, framing, self.indexes, target, cuts)
        return Job(self.codec, self.input_dir, self.out, self.inventory, ranges, self.warnings)


def inputs(
    protocol: str, input_dir: Path, out: Path, overwrite: bool, verify_checksums: bool = True
) -> Inputs:
    """The codec, the output check, the captures and their indexes."""
    spec = find(protocol)
    codec = _codec(spec.import_name, verify_checksums)
    inventory = scan(input_dir)
    check_out(out, overwrite, input_dir)
    indexes: dict[tuple[str, str], dict[str, Reads]] = {}
    warnings: list[str] = []
    for (capture, connection), path in inventory.indexes.items():
        try:
            indexes[(capture, connection)] = load_index(path, warnings.append)
        except BadIndex as e:
            # an index only supplies timestamps: the bytes decode anyway, untimed
            warnings.append(
                f"warning: {e}; the index is ignored: {capture}/{connection} gets no timestamps"
            )
    return Inputs(codec, input_dir, out, inventory, indexes, warnings)


def run(
    protocol: str,
    input_dir: Path,
    out: Path,
    master: str | None = None,
    overwrite: bool = False,
    target: int = TARGET,
    echo: Echo = print,
    verify_checksums: bool = True,
    marked: bool = False,
) -> Result:
    """Decode with Spark on `master` (default local[*]; without one, input of at most one range
    of `target` bytes decodes in this process, as `decode_local` does); see the module
    docstring. Frames whose checksums do not match their bytes are rejects, unless
    `verify_checksums` is False. `out` is marked unfinished (`unfinished`) from the first table
    written until the last is reconciled; with `marked`, the caller marked it and finishes it
    itself."""
    from py4j.protocol import Py4JError  # type: ignore[import-untyped]
    from pyspark.errors import PySparkException

    from specgen.pipeline.spark import jobs, retries, start, tasks_done

    # the inputs are checked first, Spark started next (a Spark that cannot start leaves --out
    # as it was), then Spark tasks walk the byte files: the walk is a tenth of the work, and
    # done here it would leave all but one core idle meanwhile
    checked = inputs(protocol, input_dir, out, overwrite, verify_checksums)
    here = without_spark(master, sum(s.size for s in checked.inventory.streams), target)
    if here is not None:
        echo(here)
        return _in_process(checked, target, echo, marked)
    # absolute: executors on a cluster do not run in this process's folder
    dirs = {name: (out / name).resolve() for name in ("frames", "rejects")}
    progress = Progress("decode")
    spark = start(master, progress)
    before = jobs(spark)
    try:
        job = checked.plan(
            target, walk_on_spark(spark, target, checked.codec, checked.inventory.streams)
        )
    except (PySparkException, Py4JError) as e:
        raise DecodeJobError(first_line(e)) from None
    for line in job.summary():
        echo(line)
    try:
        outdir.clear(out, WRITES, keep=input_dir)
        unfinished.mark(out, "decode")  # again when `marked`: the clearing took the caller's
        for path in dirs.values():
            shutil.rmtree(path, ignore_errors=True)
            path.mkdir(parents=True)
        # Two tasks per core, each a bin of ranges: a Python task costs Spark about 55 ms of
        # the worker's time however little it does, and its JVM about 0.1 s of CPU (measured
        # here, local mode): a task per range cost a 2 M-frame capture's 34 ranges 2 s. Ranges
        # go largest first to the least loaded bin and bins run largest first, so no core idles
        # while a last large one runs alone. The index, which names each range's part files,
        # stays the walk's.
        todo = [
            [(i, astuple(job.ranges[i])) for i in b]
            for b in bins(
                [r.end - r.start for r in job.ranges],
                TASKS_PER_CORE * spark.sparkContext.defaultParallelism,
            )
        ]
        # Partition k of spark.range holds the number k alone: its task decodes the k-th bin
        # of `todo`, which travels with the task's function. (A DataFrame made from a Python
        # RDD of the ranges would run a second Python worker beside every decoding one.)
        ranges = spark.range(0, len(todo), 1, numPartitions=max(1, len(todo)))
        # Each task writes its range's Parquet part itself, with pyarrow, and hands Spark back
        # only its counts: the decoded columns never cross into the JVM. Measured on 5 M frames,
        # converting the wide nested frames schema to Spark rows and writing it from the JVM
        # cost 3x the decoding itself. A retried task rewrites the same part file.
        began = time.monotonic()
        size = sum(r.end - r.start for r in job.ranges)
        progress.line(f"decoding {_n(len(job.ranges), 'range')} ({size:,} bytes) in Spark tasks")
        with tasks_done(spark, progress, "tasks"):
            written = ranges.mapInArrow(
                functools.partial(
                    _write_partition,
                    todo,
                    job.codec.name,
                    job.codec.verify_checksums,
                    str(dirs["frames"]),
                    str(dirs["rejects"]),
                ),
                "`index` INT, `frames` BIGINT, `rejects` BIGINT",
            ).collect()
    except (PySparkException, Py4JError) as e:
        raise DecodeJobError(first_line(e)) from None
    progress.line(
        f"{_n(len(written), 'range')} decoded: {_n(sum(w.frames for w in written), 'frame')}, "
        f"{_n(sum(w.rejects for w in written), 'reject')} ({seconds(began)}); reconciling"
    )
    retries(spark, before, progress)  # the walk's and the decoding's
    schemas = {"frames": job.codec.frames_schema, "rejects": REJECTS_SCHEMA}
    for name, path in dirs.items():
        if not any(path.glob("*.parquet")):  # a table with no rows still has its schema
            pq.write_table(schemas[name].empty_table(), path / "part-00000.parquet")
    # counted from what is on disk, not from what the tasks said they wrote
    on_disk = sum(
        pq.ParquetFile(f).metadata.num_rows for f in sorted(dirs["frames"].glob("*.parquet"))
    )
    told = sum(w.frames for w in written)
    if told != on_disk:  # a part written by a task is not on disk (an unshared --out?)
        raise DecodeJobError(
            f"tasks wrote {told} frames, {dirs['frames']} holds {on_disk}: "
            "is --out on a filesystem every executor sees?"
        )
    result = Result.of(check(job.files(), dirs["frames"], dirs["rejects"]), job.found)
    for line in result.lines(out):
        echo(line)
    if not marked:
        unfinished.finish(out)
    return result


def without_spark(master: str | None, size: int, target: int, what: str = "bytes") -> str | None:
    """The line saying input of `size` bytes (of `what`) decodes in this process, or None where
    it goes to Spark. Input of at most one range's bytes decodes here in about the time Spark
    takes to start (a 32 MiB range: 2-3 s; Spark 3-4 s and its JVM's first jobs); both ways
    write the same tables (tests/test_decode_usability.py, tests/test_pcap_decode.py). A master
    named, even local[*], is Spark."""
    if master is not None or size > target:
        return None
    return (
        f"decoding in this process: {size:,} {what}, at most one range ({target:,}), where "
        "Spark's start-up would cost more than it saves; --master local[*] uses Spark"
    )


def decode_local(
    protocol: str,
    input_dir: Path,
    out: Path,
    overwrite: bool = False,
    target: int = TARGET,
    echo: Echo = print,
    verify_checksums: bool = True,
) -> Result:
    """The same decoding in this process, written with pyarrow: no Spark, no JVM."""
    return _in_process(inputs(protocol, input_dir, out, overwrite, verify_checksums), target, echo)


def _in_process(checked: Inputs, target: int, echo: Echo, marked: bool = False) -> Result:
    """`decode_local` of checked inputs; with `marked`, the caller marked `out` unfinished and
    finishes it itself."""
    with collector.paused():  # the walk reads every frame header
        job = checked.plan(target)
    input_dir, out = checked.input_dir, checked.out
    for line in job.summary():
        echo(line)
    paths = {"frames": out / "frames", "rejects": out / "rejects"}
    outdir.clear(out, WRITES, keep=input_dir)
    unfinished.mark(out, "decode")
    for path in paths.values():
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
    files = {name: path / "part-00000.parquet" for name, path in paths.items()}
    schemas = {"frames": job.codec.frames_schema, "rejects": REJECTS_SCHEMA}
    with (
        pq.ParquetWriter(files["frames"], schemas["frames"]) as frames_writer,
        pq.ParquetWriter(files["rejects"], schemas["rejects"]) as rejects_writer,
    ):
        writers = {"frames": frames_writer, "rejects": rejects_writer}
        with ParquetThread() as writing:
            for r in job.ranges:
                for table, batch in decode_range(r, job.codec):
                    writing.write(writers[table], batch)
    with collector.paused():  # the reconciliation reads every row back
        result = Result.of(check(job.files(), paths["frames"], paths["rejects"]), job.found)
    for line in result.lines(out):
        echo(line)
    if not marked:
        unfinished.finish(out)
    return result


class ParquetThread:
    """Batches written by one thread beside the decode: Parquet's encoding releases the GIL,
    so the next batch decodes meanwhile (a tenth of a one-process decode's time was spent
    writing). Batches are written in the order given; at most `AHEAD` wait, so memory stays
    bounded; a write that fails raises in the caller, at the next write or on leaving."""

    AHEAD = 2

    def __enter__(self) -> ParquetThread:
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="specgen-parquet")
        self.pending: deque[Future[None]] = deque()
        self.failed = False
        return self

    def write(self, writer: Any, batch: Any) -> None:
        self.pending.append(self.pool.submit(self._write, writer, batch))
        while len(self.pending) > self.AHEAD:
            self.pending.popleft().result()

    def _write(self, writer: Any, batch: Any) -> None:
        if self.failed:
            return  # a batch after a failed one is not written: the output ends there
        try:
            writer.write_batch(batch)
        except BaseException:
            self.failed = True
            raise

    def __exit__(self, *exc: object) -> None:
        try:
            if exc[0] is None:
                while self.pending:
                    self.pending.popleft().result()
        finally:
            # on an error the batches not yet written are dropped: the output is unfinished
            for future in self.pending:
                future.cancel()
            self.pool.shutdown(wait=True)


def walk_on_spark(spark: Any, target: int, codec: Codec, streams: list[Stream]) -> list[list[Cut]]:
    """`ranges.split` of every byte file, in Spark tasks: the files spread over a few tasks per
    core, the largest first, each task onto the least loaded; an unreadable file is the same
    input error as when the driver walks it."""
    sized = [i for i, s in enumerate(streams) if s.size]
    out: list[list[Cut]] = [[] for _ in streams]
    if not sized:
        return out
    tasks = [
        [(sized[k], streams[sized[k]]) for k in b]
        for b in bins(
            [streams[i].size for i in sized],
            TASKS_PER_CORE * spark.sparkContext.defaultParallelism,
        )
    ]
    # the walk's rows as Arrow, as every other Spark task here gives them: a first Python RDD
    # job costs a session about 0.7 s of start-up more than a job of the kind that follows
    ids = spark.range(0, len(tasks), 1, numPartitions=len(tasks))
    walk = functools.partial(_walk_tasks, tasks, codec.name, codec.verify_checksums, target)
    walked = ids.mapInArrow(walk, WALK_DDL).collect()
    for row in sorted(walked, key=lambda r: r["index"]):  # a Row's .index is tuple.index
        if row["error"] is not None:
            raise DecodeInputError(row["error"])
        out[row["index"]] = [
            Cut(c["start"], c["end"], c["frames"], list(c["gap_starts"]), list(c["gap_lengths"]))
            for c in row["cuts"]
        ]
    return out


WALK_SCHEMA = pa.schema(
    [
        ("index", pa.int64()),
        ("error", pa.string()),
        (
            "cuts",
            pa.list_(
                pa.struct(
                    [
                        ("start", pa.int64()),
                        ("end", pa.int64()),
                        ("frames", pa.int64()),
                        ("gap_starts", pa.list_(pa.int64())),
                        ("gap_lengths", pa.list_(pa.int64())),
                    ]
                )
            ),
        ),
    ]
)
"""A walk task's rows: a byte file's number and its cuts (`Cut`), or the input error it is."""
WALK_DDL = (
    "`index` BIGINT, `error` STRING, `cuts` ARRAY<STRUCT<`start`: BIGINT, `end`: BIGINT, "
    "`frames`: BIGINT, `gap_starts`: ARRAY<BIGINT>, `gap_lengths`: ARRAY<BIGINT>>>"
)


def _walk_tasks(
    tasks: list[list[tuple[int, Stream]]],
    import_name: str,
    verify_checksums: bool,
    target: int,
    batches: Iterator[Any],
) -> Iterator[Any]:
    """mapInArrow's function for the walk: numbers of `tasks` in, WALK_SCHEMA rows out."""
    for batch in batches:
        for k in batch.column(0).to_pylist():
            rows = [
                {"index": i, "error": found, "cuts": None}
                if isinstance(found, str)
                else {"index": i, "error": None, "cuts": [asdict(c) for c in found]}
                for i, found in _walk_streams(import_name, verify_checksums, target, tasks[k])
            ]
            yield pa.RecordBatch.from_pylist(rows, schema=WALK_SCHEMA)


def _walk_streams(
    import_name: str, verify_checksums: bool, target: int, streams: list[tuple[int, Stream]]
) -> Iterator[tuple[int, list[Cut] | str]]:
    """A walk task: (index, its cuts) per stream, or (index, the input error)."""
    framing = _codec(import_name, verify_checksums).framing
    with collector.paused():
        for i, stream in streams:
            try:
                yield i, split(stream, framing, target)
            except DecodeInputError as e:
                yield i, str(e)


@functools.cache
def _codec(import_name: str, verify_checksums: bool = True) -> Codec:
    try:
        return Codec.load(import_name, verify_checksums)
    except ModuleNotFoundError as e:
        if e.name == f"{import_name}.spark_schema":  # generated, but with no table layout
            raise DecodeInputError(
                f"specgen decode does not read {import_name} yet: its package has no "
                "spark_schema module (regenerating does not make one)"
            ) from None
        raise DecodeInputError(
            f"{import_name}: no generated {e.name} module; run `specgen generate`"
        ) from None
    except AttributeError as e:
        raise DecodeInputError(f"{import_name}: the codec has no frame reader: {e}") from None


def check_protocol(protocol: str) -> None:
    """LookupError for a name nobody knows, DecodeInputError for a version decode cannot read."""
    _codec(find(protocol).import_name)


def decodes(import_name: str) -> bool:
    """Whether `specgen decode` reads frames of this generated version (`specgen list` says)."""
    try:
        _codec(import_name)
    except DecodeInputError:
        return False
    return True


TASKS_PER_CORE = 2
"""Walking and decoding tasks per core (`bins`): two, so that a core whose first bin decodes
faster than its bytes promised takes another, and few, as each Python task costs Spark a fixed
share (2 M Streams frames on 2 cores, decode call: 12.5 s with a task per range, 34 tasks;
10.6-11.0 s with 2 per core, 10.7-12.4 s with 1, 4, 8 or 17)."""


def bins(sizes: list[int], count: int) -> list[list[int]]:
    """Indices of `sizes` in at most `count` bins of about equal total: largest first, each
    into the least loaded bin; the bins largest first, each bin's items largest first."""
    order = sorted(range(len(sizes)), key=lambda i: -sizes[i])
    out: list[list[int]] = [[] for _ in range(max(1, min(count, len(sizes))))]
    loads = [0] * len(out)
    for i in order:
        least = loads.index(min(loads))
        out[least].append(i)
        loads[least] += sizes[i]
    ranked = sorted(range(len(out)), key=lambda k: -loads[k])
    return [out[k] for k in ranked if out[k]]


def _write_partition(
    todo: list[list[tuple[int, tuple[Any, ...]]]],
    import_name: str,
    verify_checksums: bool,
    frames_dir: str,
    rejects_dir: str,
    batches: Iterator[Any],
) -> Iterator[Any]:
    """mapInArrow's function: numbers of bins of ranges in `todo` in, each range decoded into
    its own Parquet parts; a row of counts per range out."""
    import pyarrow as pa

    codec = _codec(import_name, verify_checksums)
    schemas = {"frames": codec.frames_schema, "rejects": REJECTS_SCHEMA}
    folders = {"frames": Path(frames_dir), "rejects": Path(rejects_dir)}
    for batch in batches:
        for index, fields in (item for k in batch.column(0).to_pylist() for item in todo[k]):
            writers: dict[str, Any] = {}
            counts = {"frames": 0, "rejects": 0}
            try:
                with ParquetThread() as writing:
                    for table, out in decode_range(Range(*fields), codec):
                        if table not in writers:
                            path = folders[table] / f"part-{index:05d}.parquet"
                            writers[table] = pq.ParquetWriter(path, schemas[table])
                        writing.write(writers[table], out)
                        counts[table] += out.num_rows
            finally:
                for w in writers.values():
                    w.close()
            yield pa.RecordBatch.from_pydict(
                {"index": [index], "frames": [counts["frames"]], "rejects": [counts["rejects"]]},
                schema=pa.schema(
                    [("index", pa.int32()), ("frames", pa.int64()), ("rejects", pa.int64())]
                ),
            )


WRITES = ("frames", "rejects", "streams", "report.html", unfinished.MARK)
"""What decode writes into --out (streams/: pcap input; the mark of an unfinished run), and the
report page made from it: what --overwrite removes (`outdir`), so no page of old tables stays
beside new ones."""


def check_out(out: Path, overwrite: bool, input_dir: Path) -> None:
    try:
        outdir.check(out, "decode", overwrite)
    except outdir.OutputError as e:
        raise DecodeInputError(str(e)) from None
    inside = input_dir.resolve()
    for table in ("frames", "rejects"):
        if inside.is_relative_to((out / table).resolve()):
            raise DecodeInputError(f"{out / table}: holds the input; choose another --out")


def _n(count: int, one: str, many: str = "") -> str:
    return f"{count:,} {one if count == 1 else many or one + 's'}"


def first_line(e: Exception) -> str:
    """The line that says what went wrong: a Python worker's exception, else the exception Spark
    raised (a job aborted after its task failed every attempt: which task, and its last failure),
    else Spark's first line. (py4j puts ": " before the Java exception's own line.)"""
    lines = [ln.strip().removeprefix(": ") for ln in str(e).splitlines() if ln.strip()]
    raised = [ln for ln in lines if re.match(r"^[\w.]+(Error|Exception): ", ln)]
    text = (raised or lines or [type(e).__name__])[-1 if raised else 0]
    text = re.sub(
        r"^[\w.]+: Job aborted due to stage failure: (Task \S+ in stage \S+ failed \d+ times?), "
        r"most recent failure: Lost task [^:]*: ",
        r"\1, the last time: ",
        text,
    )
    return text.rstrip(": ")[:500]


__all__ = ["DecodeInputError", "DecodeJobError", "Result", "decode_local", "run", "without_spark"]
