"""`specgen decode PROTOCOL INPUT_DIR --out OUT_DIR`: captures to Parquet with Spark, reconciled.

The driver lists the captures, reads their indexes and splits every byte file into
frame-aligned ranges by walking the size prefixes (`ranges.py`); that walk counts the frames
found. Spark gets a small DataFrame of ranges, one partition each, and `mapInArrow` runs
`columns.decode_range` on every range inside a Python worker, which reads only its own bytes,
builds Arrow batches column-wise and writes them with pyarrow as that range's Parquet parts of
OUT_DIR/frames and OUT_DIR/rejects; Spark gets back only counts. The JVM never sees a capture's
bytes nor its decoded columns (so OUT_DIR must be on a filesystem every executor sees). Then
the written tables are counted and the job checks that frames + rejects = frames found; it fails
when they do not add up.

`decode_local` does the same in one Python process with pyarrow's writer and the very same
per-range function: the baseline the Spark job is measured against.
"""

from __future__ import annotations

import functools
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq  # type: ignore[import-untyped]

from specgen.pipeline.columns import (
    REJECTS_SCHEMA,
    Codec,
    decode_range,
)
from specgen.pipeline.inputs import DecodeInputError, Inventory, load_index, scan
from specgen.pipeline.ranges import TARGET, Range, plan
from specgen.specs import find

Echo = Callable[[str], None]

MASTER_URL = re.compile(r"local(\[(\*|\d+)(,\d+)?\])?|spark://[^/\s]+|yarn|k8s://\S+")


class DecodeJobError(RuntimeError):
    """Spark failed while decoding; the message is Spark's first line."""


@dataclass(frozen=True)
class Job:
    codec: Codec
    input_dir: Path
    out: Path
    inventory: Inventory
    ranges: list[Range]

    @property
    def found(self) -> int:
        return sum(r.frames for r in self.ranges)

    def summary(self) -> list[str]:
        inv = self.inventory
        connections = len({(s.capture, s.connection) for s in inv.streams})
        empty = f" ({len(inv.empty)} empty)" if inv.empty else ""
        lines = [
            f"decode: {_n(len(inv.captures), 'capture')}, {_n(connections, 'connection')}, "
            f"{_n(len(inv.streams), 'byte file')}{empty}, {_n(len(inv.indexes), 'index', 'indexes')}: "
            f"{_n(self.found, 'frame')} found in {_n(len(self.ranges), 'range')}"
        ]
        if inv.ignored:
            n = len(inv.ignored)
            shown = ", ".join(inv.ignored[:5]) + (f" and {n - 5} more" if n > 5 else "")
            verb = "is" if n == 1 else "are"
            lines.append(f"ignored {_n(n, 'file')} that {verb} not part of a capture: {shown}")
        return lines


@dataclass(frozen=True)
class Result:
    frames: int
    rejects: int
    found: int
    examples: list[tuple[str, str, str, int, str]]  # a few rejects, for the summary

    @property
    def reconciled(self) -> bool:
        return self.frames + self.rejects == self.found

    def lines(self, out: Path) -> list[str]:
        lines = [
            f"frames: {self.frames} rows in {out / 'frames'}",
            f"rejects: {self.rejects} rows in {out / 'rejects'}",
        ]
        for capture, connection, direction, offset, error in self.examples:
            lines.append(f"  reject {capture}/{connection}.{direction}.bin @{offset}: {error}")
        sign = "=" if self.reconciled else "!="
        lines.append(
            f"reconciliation: {self.frames} frames + {self.rejects} rejects {sign} "
            f"{self.found} frames found in the input"
        )
        if not self.reconciled:
            lines.append("decode: FAILED: the output does not account for every frame found")
        return lines


def prepare(protocol: str, input_dir: Path, out: Path, overwrite: bool, target: int) -> Job:
    """Everything before decoding: the codec, the output check, the captures, the ranges."""
    spec = find(protocol)
    codec = _codec(spec.import_name)
    inventory = scan(input_dir)
    _check_out(out, overwrite, input_dir)
    indexes = {key: load_index(path) for key, path in inventory.indexes.items()}
    ranges = plan(inventory.streams, codec.framing, indexes, target)
    return Job(codec, input_dir, out, inventory, ranges)


def run(
    protocol: str,
    input_dir: Path,
    out: Path,
    master: str | None = None,
    overwrite: bool = False,
    target: int = TARGET,
    echo: Echo = print,
) -> Result:
    """Decode with Spark on `master` (default local[*]); see the module docstring."""
    from py4j.protocol import Py4JError  # type: ignore[import-untyped]
    from pyspark.errors import PySparkException

    from specgen.pipeline.spark import SessionError, session

    job = prepare(protocol, input_dir, out, overwrite, target)
    for line in job.summary():
        echo(line)
    # absolute: executors on a cluster do not run in this process's folder
    dirs = {name: (out / name).resolve() for name in ("frames", "rejects")}
    for path in dirs.values():
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
    try:
        spark = session(master)
        ranges = spark.createDataFrame(
            spark.sparkContext.parallelize(
                [(i, *astuple(r)) for i, r in enumerate(job.ranges)],
                numSlices=max(1, len(job.ranges)),
            ),
            "`index` INT, " + Range.ddl(),
        )
        # Each task writes its range's Parquet part itself, with pyarrow, and hands Spark back
        # only its counts: the decoded columns never cross into the JVM. Measured on 5 M frames,
        # converting the wide nested frames schema to Spark rows and writing it from the JVM
        # cost 3x the decoding itself. A retried task rewrites the same part file.
        written = ranges.mapInArrow(
            functools.partial(
                _write_partition, job.codec.name, str(dirs["frames"]), str(dirs["rejects"])
            ),
            "`index` INT, `frames` BIGINT, `rejects` BIGINT",
        ).collect()
    except (PySparkException, Py4JError, SessionError) as e:
        raise DecodeJobError(_first_line(e)) from None
    schemas = {"frames": job.codec.schema.FRAMES_SCHEMA, "rejects": REJECTS_SCHEMA}
    for name, path in dirs.items():
        if not any(path.glob("*.parquet")):  # a table with no rows still has its schema
            pq.write_table(schemas[name].empty_table(), path / "part-00000.parquet")
    # counted from what is on disk, not from what the tasks said they wrote
    counts = {
        name: sum(pq.ParquetFile(f).metadata.num_rows for f in sorted(path.glob("*.parquet")))
        for name, path in dirs.items()
    }
    told = sum(w.frames for w in written)
    if told != counts["frames"]:  # a part written by a task is not on disk (an unshared --out?)
        raise DecodeJobError(
            f"tasks wrote {told} frames, {dirs['frames']} holds {counts['frames']}: "
            "is --out on a filesystem every executor sees?"
        )
    rejects = pq.read_table(
        dirs["rejects"], columns=["capture", "connection", "direction", "offset", "error"]
    ).to_pylist()
    examples = sorted(
        (x["capture"], x["connection"], x["direction"], x["offset"], x["error"]) for x in rejects
    )[:3]
    result = Result(counts["frames"], counts["rejects"], job.found, examples)
    for line in result.lines(out):
        echo(line)
    return result


def decode_local(
    protocol: str,
    input_dir: Path,
    out: Path,
    overwrite: bool = False,
    target: int = TARGET,
    echo: Echo = print,
) -> Result:
    """The same decoding in this process, written with pyarrow: no Spark, no JVM."""
    job = prepare(protocol, input_dir, out, overwrite, target)
    for line in job.summary():
        echo(line)
    paths = {"frames": out / "frames", "rejects": out / "rejects"}
    for path in paths.values():
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
    files = {name: path / "part-00000.parquet" for name, path in paths.items()}
    schemas = {"frames": job.codec.schema.FRAMES_SCHEMA, "rejects": REJECTS_SCHEMA}
    examples: list[tuple[str, str, str, int, str]] = []
    with (
        pq.ParquetWriter(files["frames"], schemas["frames"]) as frames_writer,
        pq.ParquetWriter(files["rejects"], schemas["rejects"]) as rejects_writer,
    ):
        writers = {"frames": frames_writer, "rejects": rejects_writer}
        for r in job.ranges:
            for table, batch in decode_range(r, job.codec):
                writers[table].write_batch(batch)
                if table == "rejects":
                    examples += [
                        (x["capture"], x["connection"], x["direction"], x["offset"], x["error"])
                        for x in batch.select(
                            ["capture", "connection", "direction", "offset", "error"]
                        ).to_pylist()
                    ]
    counts = {name: pq.ParquetFile(path).metadata.num_rows for name, path in files.items()}
    result = Result(counts["frames"], counts["rejects"], job.found, sorted(examples)[:3])
    for line in result.lines(out):
        echo(line)
    return result


def main(
    protocol: str,
    input_dir: Path,
    out: Path,
    master: str | None,
    overwrite: bool,
    target: int = TARGET,
) -> int:
    """The CLI's `decode`: 0 when every frame found is accounted for, 1 otherwise or when Spark
    fails; input errors raise DecodeInputError, which the CLI prints as one line (exit 2)."""
    if target < 1:
        raise DecodeInputError(f"--range-size {target}: must be a positive number of bytes")
    if master is not None and not MASTER_URL.fullmatch(master):
        # caught here: a bad URL would otherwise end in a JVM stack trace from spark-submit
        raise DecodeInputError(
            f"--master {master}: not a Spark master URL "
            "(local[*], local[N], spark://HOST:PORT, yarn, k8s://HOST:PORT)"
        )
    try:
        result = run(protocol, input_dir, out, master, overwrite, target)
    except DecodeJobError as e:
        print(f"specgen: decode failed: {e}", file=sys.stderr, flush=True)
        return 1
    return 0 if result.reconciled else 1


@functools.cache
def _codec(import_name: str) -> Codec:
    try:
        return Codec.load(import_name)
    except ModuleNotFoundError as e:
        raise DecodeInputError(
            f"{import_name}: no generated {e.name} module; run `specgen generate`"
        ) from None
    except AttributeError as e:
        raise DecodeInputError(f"{import_name}: the codec has no frame reader: {e}") from None


def _write_partition(
    import_name: str, frames_dir: str, rejects_dir: str, batches: Iterator[Any]
) -> Iterator[Any]:
    """mapInArrow's function: ranges in, each decoded into its own Parquet parts; counts out."""
    import pyarrow as pa

    codec = _codec(import_name)
    schemas = {"frames": codec.schema.FRAMES_SCHEMA, "rejects": REJECTS_SCHEMA}
    folders = {"frames": Path(frames_dir), "rejects": Path(rejects_dir)}
    for batch in batches:
        for row in batch.to_pylist():
            index = row.pop("index")
            writers: dict[str, Any] = {}
            counts = {"frames": 0, "rejects": 0}
            try:
                for table, out in decode_range(Range(**row), codec):
                    if table not in writers:
                        path = folders[table] / f"part-{index:05d}.parquet"
                        writers[table] = pq.ParquetWriter(path, schemas[table])
                    writers[table].write_batch(out)
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


def _check_out(out: Path, overwrite: bool, input_dir: Path) -> None:
    if out.exists() and not out.is_dir():
        raise DecodeInputError(f"{out}: exists and is not a folder")
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise DecodeInputError(f"{out}: already exists; pass --overwrite to replace its tables")
    inside = input_dir.resolve()
    for table in ("frames", "rejects"):
        if inside.is_relative_to((out / table).resolve()):
            raise DecodeInputError(f"{out / table}: holds the input; choose another --out")


def _n(count: int, one: str, many: str = "") -> str:
    return f"{count} {one if count == 1 else many or one + 's'}"


def _first_line(e: Exception) -> str:
    """The line that says what went wrong: a Python worker's exception, else Spark's first line."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    raised = [ln for ln in lines if re.match(r"^[\w.]+(Error|Exception): ", ln)]
    text = (raised or lines or [type(e).__name__])[-1 if raised else 0]
    return text[:500]


__all__ = ["DecodeInputError", "DecodeJobError", "Result", "decode_local", "main", "run"]
