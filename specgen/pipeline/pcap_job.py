"""pcap and pcapng input for `specgen decode`: packets -> TCP streams -> the capture layout.

A pcap cannot be split at frame boundaries, and one connection's packets are spread over the
whole file, so the job has two Spark stages before the ordinary decode:

1. **Packets, in parallel over file ranges.** The driver walks the record headers of every
   uncompressed capture file (as it walks size prefixes of byte files) and cuts it into ranges
   of whole records; each task reads its range (`pcap.scan`) and keeps the TCP segments of
   the protocol's ports (`--port`, else the protocol's default ports), written as Parquet
   parts, one per bucket of 4-tuples (`bucket`); Spark gets back counts per range (packets
   read, packets skipped), damaged stretches and each bucket's payload bytes, never payloads.
2. **Streams, grouped by connection.** A task per bucket, the largest first, reads its parts
   a batch at a time and groups the segments by (file, client, server), in packet order; each
   group is one TCP 4-tuple,
   split into connections where a new SYN follows a FIN or RST, then reassembled per direction
   (`reassembly.reassemble`: sequence numbers unwrapped, first copy wins, out-of-order segments
   placed, holes become gaps). Every contiguous run of bytes is written as a byte file in the
   capture layout under OUT/streams/<capture>/, with an index of read events whose wall times
   are the packets' timestamps, so the report's latency sections work on pcap input.
3. **Decoding** is the ordinary job over OUT/streams (ranges, resynchronisation, Parquet,
   byte reconciliation per file). A run of bytes after a gap is its own byte file (connection
   `<name>@<offset>`), so no frame is ever stitched across missing bytes; the decoder
   resynchronises at its start as it does for any capture that starts mid-stream.

Without `--master`, a pcap input of at most one range's bytes (`--range-size`) runs both
stages' functions in this process, one task after another (`here`), and then the ordinary
decode, in this process too: Spark would start for longer than they take.

Each gap becomes a reject of kind "gap" (its length is the missing bytes, its TCP sequence
range is in the error text, it holds no bytes), and the pcap reconciliation checks, per
direction: TCP payload bytes = bytes in frames + bytes in rejects + retransmitted duplicates,
and the stream's extent = bytes kept + bytes missing in gaps; and over the job: packets read =
TCP segments kept + packets skipped.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
import math
import shutil
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from specgen.pipeline import collector, decode, openings, pcap, reassembly, records, unfinished
from specgen.pipeline.columns import REJECTS_SCHEMA
from specgen.pipeline.decode import Echo, Result
from specgen.pipeline.inputs import DecodeInputError
from specgen.pipeline.ranges import TARGET
from specgen.progress import Progress
from specgen.registry import SpecVersion
from specgen.registry import find as find_spec

STREAMS = "streams"
"""OUT's folder of reassembled byte files (the capture layout), decoded by the ordinary job."""

RANGE_TARGET = 64 * 1024 * 1024
"""Bytes of a capture file per stage-1 task."""

MIN_RANGE = 4 * 1024 * 1024
"""The smallest range target: below it a task's fixed costs outweigh what it shares out."""

ROWS_PER_BATCH = 4096

RANGE_FIELDS = [
    # a stage-1 task's rows, per range: "counts" (its packets, and its bytes in records and in
    # damage, and where the file ended when the range read to its end: for gzip the
    # decompressed size), "damage" (a damaged stretch of the file: index its offset, payload
    # its first bytes) and "bucket" (index a bucket it wrote segments to, length their payload
    # bytes); the segments themselves go to files (SEGMENT_ROWS), never through Spark
    ("kind", pa.string()),
    ("capture", pa.string()),
    ("index", pa.int64()),
    ("payload", pa.binary()),
    ("packets", pa.int64()),
    ("skipped", pa.int64()),
    ("length", pa.int64()),
    ("error", pa.string()),
    ("record_bytes", pa.int64()),
    ("damaged_bytes", pa.int64()),
    ("file_end", pa.int64()),
]
RANGE_ROWS = pa.schema(RANGE_FIELDS)
RANGE_DDL = (
    "`kind` STRING, `capture` STRING, `index` BIGINT, `payload` BINARY, `packets` BIGINT, "
    "`skipped` BIGINT, `length` BIGINT, `error` STRING, `record_bytes` BIGINT, "
    "`damaged_bytes` BIGINT, `file_end` BIGINT"
)

STREAM_FIELDS = [
    ("capture", pa.string()),
    ("connection", pa.string()),
    ("direction", pa.string()),
    ("payload_bytes", pa.int64()),
    ("unique_bytes", pa.int64()),
    ("duplicate_bytes", pa.int64()),
    ("segments", pa.int64()),
    ("parts", pa.int64()),
    ("mid_stream", pa.bool_()),
    ("gap_offsets", pa.list_(pa.int64())),
    ("gap_lengths", pa.list_(pa.int64())),
    ("gap_seqs", pa.list_(pa.string())),
    ("conflicts", pa.list_(pa.string())),
]
STREAMS_SCHEMA = pa.schema(STREAM_FIELDS)
STREAMS_DDL = (
    "`capture` STRING, `connection` STRING, `direction` STRING, `payload_bytes` BIGINT, "
    "`unique_bytes` BIGINT, `duplicate_bytes` BIGINT, `segments` BIGINT, `parts` BIGINT, "
    "`mid_stream` BOOLEAN, `gap_offsets` ARRAY<BIGINT>, `gap_lengths` ARRAY<BIGINT>, "
    "`gap_seqs` ARRAY<STRING>, `conflicts` ARRAY<STRING>"
)


@dataclass(frozen=True)
class CaptureFile:
    path: Path
    capture: str  # its name in the tables: the path relative to the input, or the file name
    size: int
    format: pcap.Format


def find(root: Path) -> list[CaptureFile]:
    """The pcap and pcapng files at `root` (a file, or a folder searched at any depth), told
    apart from other files by their magic numbers, not their names. A file given that is none
    is an input error saying what it is."""
    if root.is_file():
        fmt = pcap.detect(root)
        if fmt is None:
            raise DecodeInputError(pcap.not_a_capture(root))
        return [CaptureFile(root, root.name, root.stat().st_size, fmt)]
    out = []
    if root.is_dir():
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            if fmt := pcap.detect(path):
                rel = path.relative_to(root).as_posix()
                out.append(CaptureFile(path, rel, path.stat().st_size, fmt))
    return out


def plan(files: list[CaptureFile], target: int = RANGE_TARGET) -> list[tuple[str, str, int, int]]:
    """(path, capture, start, end) per stage-1 task: whole records, about `target` bytes each;
    a compressed file is one task (it cannot be read from the middle)."""
    out: list[tuple[str, str, int, int]] = []
    for f in files:
        try:
            cuts = pcap.ranges(f.path, target)
        except (OSError, ValueError) as e:
            raise DecodeInputError(f"{f.path}: {e}") from None
        out.extend((str(f.path), f.capture, start, end) for start, end in cuts)
    return out


# --------------------------------------------------------------------------------------------
# Stage 1: packets of a range -> segment rows


BUCKETS = 64
"""Stage 1 files each segment under one of this many buckets, by its 4-tuple; a stage-2 task
reassembles one bucket (every connection in it, whole)."""

SEGMENTS_DIR = ".segments"
"""OUT/streams/.segments/<bucket>/<range>.arrow: stage 1's segment rows, read by stage 2 and
removed after it (under OUT/streams, so --overwrite clears what a failed run left)."""


def bucket(capture: str, client: str, server: str) -> int:
    """A 4-tuple's bucket: the same in every Python process (str hashes are salted per
    process, a CRC is not)."""
    return zlib.crc32(f"{capture}\0{client}\0{server}".encode()) % BUCKETS


def _append(columns: dict[str, list[Any]], row: dict[str, Any]) -> None:
    """One row onto column lists: every column gets a value, None where the row has none."""
    for name, values in columns.items():
        values.append(row.get(name))


def _address(endpoint: tuple[str, int]) -> str:
    ip, port = endpoint
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def _endpoint(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host.strip("[]"), int(port)


SEGMENT_ROWS = pa.schema(
    [
        ("capture", pa.string()),
        ("index", pa.int64()),
        ("ts", pa.float64()),
        ("client", pa.string()),
        ("server", pa.string()),
        ("direction", pa.string()),
        ("seq", pa.int64()),
        ("ack", pa.int64()),
        ("ack_flag", pa.bool_()),
        ("syn", pa.bool_()),
        ("fin", pa.bool_()),
        ("rst", pa.bool_()),
        ("payload", pa.binary()),
        ("missing", pa.int64()),
    ]
)
"""A segment file's rows (Arrow IPC, uncompressed): what stage 2 needs of each segment. Stage 2
reads back every byte stage 1 writes, once, on the same machine: Parquet's encoding and
compression cost more there than they save (measured: stage 1 + 2 on a 256 MiB pcap took
6.2 s in one process with Parquet parts)."""


def stage1(
    ports: frozenset[int],
    segments_dir: str,
    todo: list[tuple[int, str, str, int, int]],
    batches: Iterable[Any],
) -> Iterator[Any]:
    """mapInArrow's function for stage 1: numbers of ranges in `todo` (task, path, capture,
    start, end) in; each range's segments written as
    Arrow IPC files, one per bucket (`bucket`) under `segments_dir`; out go its counts, its damaged
    stretches and a row per bucket it wrote (index: the bucket, length: its payload bytes).

    The payloads never cross into the JVM: measured on a 1 GiB pcap, carrying them through
    Spark's shuffle (and the cached stage-1 rows) took 4.6 GiB of memory per GiB of capture
    and as much time as it saved."""
    with collector.paused():
        yield from _stage1(ports, segments_dir, todo, batches)


def _stage1(
    ports: frozenset[int],
    segments_dir: str,
    todo: list[tuple[int, str, str, int, int]],
    batches: Iterable[Any],
) -> Iterator[Any]:
    for batch in batches:
        for k in batch.column(0).to_pylist():
            task, path, capture, start, end = todo[k]
            out: dict[str, list[Any]] = {name: [] for name, _ in RANGE_FIELDS}
            writers: dict[int, Any] = {}
            try:
                sizes = _range_segments(
                    ports, segments_dir, task, path, capture, start, end, out, writers
                )
            finally:
                for w in writers.values():
                    w.close()
            for b in sorted(writers):
                _append(out, {"kind": "bucket", "index": b, "length": sizes.get(b, 0)})
            yield pa.RecordBatch.from_pydict(out, schema=RANGE_ROWS)


def _range_segments(
    ports: frozenset[int],
    segments_dir: str,
    task: int,
    path: str,
    capture: str,
    start: int,
    end: int,
    out: dict[str, list[Any]],
    writers: dict[int, Any],
) -> dict[int, int]:
    """One range's segments onto their buckets' files (opened in `writers`), its damaged
    stretches and then its counts onto `out`; the payload bytes per bucket."""
    packets = skipped = 0
    tally = pcap.Tally()
    pending: dict[int, list[tuple[Any, ...]]] = {}
    sizes: dict[int, int] = {}
    # a 4-tuple's bucket, names and direction, worked out once: they depend on the addresses,
    # the ports and (where the ports do not tell the server) the handshake flags alone
    roles: dict[tuple[Any, ...], tuple[int, str, str, str]] = {}
    for item in pcap.scan(Path(path), start, end, tally):
        if isinstance(item, records.Damage):
            _append(
                out,
                {
                    "kind": "damage",
                    "capture": capture,
                    "index": item.offset,
                    "payload": item.data,
                    "length": item.length,
                    "error": item.reason,
                },
            )
            continue
        packets += 1
        seg = pcap.segment(item)
        if seg is None or (seg.sport not in ports and seg.dport not in ports):
            skipped += 1
            continue
        who = (seg.src, seg.sport, seg.dst, seg.dport, seg.syn, seg.ack_flag)
        role = roles.get(who)
        if role is None:
            (client, server), way = reassembly.connection_key(seg, ports)
            c, s = _address(client), _address(server)
            role = roles[who] = (bucket(capture, c, s), c, s, way)
        b, c, s, direction = role
        rows = pending.get(b)
        if rows is None:
            rows = pending[b] = []
        payload = bytes(seg.payload)
        rows.append(
            (seg.index, seg.ts, c, s, direction, seg.seq, seg.ack, seg.ack_flag, seg.syn,
             seg.fin, seg.rst, payload, seg.missing)
        )  # fmt: skip
        sizes[b] = sizes.get(b, 0) + len(payload)
        if len(rows) >= ROWS_PER_BATCH:
            _flush(writers, b, capture, rows, segments_dir, task)
            pending[b] = []
    for b, rows in pending.items():
        if rows:
            _flush(writers, b, capture, rows, segments_dir, task)
    _append(
        out,
        {
            "kind": "counts",
            "capture": capture,
            "packets": packets,
            "skipped": skipped,
            "record_bytes": tally.record_bytes,
            "damaged_bytes": tally.damaged_bytes,
            "file_end": tally.end,
            "error": tally.broken,
        },
    )
    return sizes


def _flush(
    writers: dict[int, Any],
    b: int,
    capture: str,
    rows: list[tuple[Any, ...]],
    folder: str,
    task: int,
) -> None:
    """A batch of one bucket's rows onto the range's file of that bucket."""
    if b not in writers:
        path = Path(folder) / f"{b:03d}" / f"{task:05d}.arrow"
        path.parent.mkdir(parents=True, exist_ok=True)
        writers[b] = pa.ipc.new_file(str(path), SEGMENT_ROWS)
    columns = [pa.array([capture] * len(rows), pa.string())]
    types = SEGMENT_ROWS.types[1:]
    columns += [
        pa.array(values, t) for values, t in zip(zip(*rows, strict=True), types, strict=True)
    ]
    writers[b].write_batch(pa.RecordBatch.from_arrays(columns, schema=SEGMENT_ROWS))


# --------------------------------------------------------------------------------------------
# Stage 2: segments of a 4-tuple -> byte files, an index, and what was lost


@dataclass
class _Group:
    capture: str
    client: str
    server: str
    ends: tuple[tuple[str, int], tuple[str, int]]  # client and server, parsed once a 4-tuple
    rows: list[reassembly.Segment] = field(default_factory=list)


def stage2(streams_dir: str, ports: frozenset[int], parts: list[Path]) -> Iterator[Any]:
    """One bucket's stage 2: its parts' segment rows (`parts` in stage-1 task order, so each
    4-tuple's rows come in packet order), grouped by (capture, client, server) and reassembled
    in that order; one summary row per reassembled direction out; the byte files are written."""
    with collector.paused():
        yield from _stage2(streams_dir, ports, parts)


def _stage2(streams_dir: str, ports: frozenset[int], parts: list[Path]) -> Iterator[Any]:
    # read a batch at a time, each let go once its rows are Python segments: never the
    # bucket's whole table beside them (nor a sorted copy of it)
    groups: dict[tuple[str, str, str], _Group] = {}
    for path in parts:
        with pa.memory_map(str(path)) as source:
            reader = pa.ipc.open_file(source)  # SEGMENT_ROWS
            for i in range(reader.num_record_batches):
                c = reader.get_batch(i).to_pydict()  # columns of Python values: no dict per row
                for capture, client, server, direction, *fields in zip(
                    c["capture"], c["client"], c["server"], c["direction"], c["index"], c["ts"],
                    c["seq"], c["ack"], c["ack_flag"], c["syn"], c["fin"], c["rst"],
                    c["payload"], c["missing"], strict=True,
                ):  # fmt: skip
                    key = (capture, client, server)
                    group = groups.get(key)
                    if group is None:
                        ends = (_endpoint(client), _endpoint(server))
                        group = groups[key] = _Group(capture, client, server, ends)
                    group.rows.append(_segment(group.ends, direction, *fields))
    for key in sorted(groups):
        group = groups.pop(key)
        group.rows.sort(key=attrgetter("index"))  # in order already: a check that costs O(n)
        yield from _finish(Path(streams_dir), group, ports)


def stage2_buckets(
    streams_dir: str,
    segments_dir: str,
    ports: frozenset[int],
    tasks: list[list[int]],
    batches: Iterable[Any],
) -> Iterator[Any]:
    """mapInArrow's function for stage 2: numbers of `tasks` (each a list of buckets) in; each
    bucket's parts (one per stage-1 range that had its segments) reassembled by `stage2`; one
    summary row per reassembled direction out."""
    for batch in batches:
        for k in batch.column(0).to_pylist():
            for b in tasks[k]:
                folder = Path(segments_dir) / f"{b:03d}"
                yield from stage2(streams_dir, ports, sorted(folder.glob("*.arrow")))


def _finish(streams: Path, group: _Group, ports: frozenset[int]) -> Iterator[Any]:
    summaries: dict[str, list[Any]] = {name: [] for name, _ in STREAM_FIELDS}
    # port reuse: reassembly.connections splits the 4-tuple where a new SYN follows a FIN/RST
    for conn in reassembly.connections(group.rows, ports):
        # a direction's reassembled bytes are written and let go before the next's are built
        for direction, segments, result in write_connection(streams / group.capture, conn):
            summary = {
                "capture": group.capture,
                "connection": conn.name,
                "direction": direction,
                "payload_bytes": result.payload_bytes,
                "unique_bytes": result.unique_bytes,
                "duplicate_bytes": result.duplicate_bytes,
                "segments": segments,
                "parts": len(result.parts),
                "mid_stream": result.started_mid_stream,
                "gap_offsets": [g.offset for g in result.gaps],
                "gap_lengths": [g.length for g in result.gaps],
                "gap_seqs": [f"{g.seq_start}..{g.seq_end}" for g in result.gaps],
                "conflicts": [str(c) for c in result.conflicts],
            }
            for key, value in summary.items():
                summaries[key].append(value)
            del result
    if summaries["capture"]:
        yield pa.RecordBatch.from_pydict(summaries, schema=STREAMS_SCHEMA)


def write_connection(
    folder: Path, conn: reassembly.Connection
) -> Iterator[tuple[str, int, reassembly.Reassembled]]:
    """Reassemble both directions of one connection into `folder` in the capture layout: a byte
    file per contiguous run (a run after a gap is `<name>@<offset>`) and an index whose read
    events carry the packets' times. Yields (direction, segments, what reassembly found) per
    direction that has segments, as each is written: one direction's bytes at a time."""
    folder.mkdir(parents=True, exist_ok=True)
    events: dict[str, list[str]] = {}
    for direction in ("c2s", "s2c"):
        segs = conn.direction(direction)
        if not segs:
            continue
        result = reassembly.reassemble(segs)
        _write_parts(folder, conn.name, direction, result.parts, events)
        yield direction, len(segs), result
        del result  # its bytes are written: not held while the other direction's are built
    for file_name, lines in events.items():
        (folder / f"{file_name}.index.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _write_parts(
    folder: Path,
    name: str,
    direction: str,
    parts: list[reassembly.Part],
    events: dict[str, list[str]],
) -> None:
    """A direction's byte files, and its read events under each file's name in `events`."""
    # each read's line as json.dumps writes it, formatted directly: an index holds one per packet
    head = f'{{"event": "read", "direction": "{direction}", "offset": '
    for i, part in enumerate(parts):
        file_name = name if i == 0 else f"{name}@{part.offset}"
        (folder / f"{file_name}.{direction}.bin").write_bytes(part.data)
        lines = events.setdefault(file_name, [])
        for offset, length, ts in part.reads:
            wall = repr(ts) if type(ts) is float and math.isfinite(ts) else json.dumps(ts)
            lines.append(f'{head}{offset - part.offset}, "length": {length}, "wall": {wall}}}')


def _segment(
    ends: tuple[tuple[str, int], tuple[str, int]],
    direction: str,
    index: int,
    ts: float,
    seq: int,
    ack: int,
    ack_flag: bool,
    syn: bool,
    fin: bool,
    rst: bool,
    payload: bytes,
    missing: int,
) -> reassembly.Segment:
    client, server = ends
    src, dst = (client, server) if direction == "c2s" else (server, client)
    return reassembly.Segment(
        src=src[0],
        sport=src[1],
        dst=dst[0],
        dport=dst[1],
        seq=seq,
        ack=ack,
        ack_flag=ack_flag,
        syn=syn,
        fin=fin,
        rst=rst,
        payload=payload,
        ts=ts,
        ts_ns=int(ts * 1e9),
        index=index,
        missing=missing,
    )


# --------------------------------------------------------------------------------------------
# The driver


@dataclass
class FileCounts:
    """What stage 1 read of one capture file, over all its ranges."""

    record_bytes: int = 0
    damaged_bytes: int = 0
    end: int | None = None  # where the file ended (gzip: its decompressed size)
    broken: str | None = None  # why a gzip stream stopped decompressing


@dataclass
class Streams:
    """What stages 1 and 2 made of the capture files."""

    packets: int
    skipped: int
    segments: int
    directions: list[dict[str, Any]]
    files: dict[str, FileCounts] = field(default_factory=dict)  # by capture name
    damage: list[dict[str, Any]] = field(default_factory=list)  # damaged stretches, in order

    @property
    def payload_bytes(self) -> int:
        return sum(d["payload_bytes"] for d in self.directions)

    @property
    def duplicate_bytes(self) -> int:
        return sum(d["duplicate_bytes"] for d in self.directions)

    @property
    def gap_bytes(self) -> int:
        return sum(sum(d["gap_lengths"]) for d in self.directions)


Tasks = Callable[[Callable[[Iterable[Any]], Iterator[Any]], int, str], list[dict[str, Any]]]
"""How a stage's tasks run: `(function, n, ddl)` -> the rows the function gives for the task
numbers 0..n-1 (mapInArrow's function: batches whose first column holds the numbers)."""


def on_spark(spark: Any) -> Tasks:
    """A stage's tasks as Spark tasks: partition k of spark.range holds k alone, and its task
    runs the k-th item of the list that travels with the function (no Python RDD, whose rows a
    second Python worker would feed)."""

    def run(fn: Callable[[Iterable[Any]], Iterator[Any]], n: int, ddl: str) -> list[dict[str, Any]]:
        ids = spark.range(0, n, 1, numPartitions=max(1, n))
        return [r.asDict() for r in ids.mapInArrow(fn, ddl).collect()]

    return run


def here(fn: Callable[[Iterable[Any]], Iterator[Any]], n: int, ddl: str) -> list[dict[str, Any]]:
    """A stage's tasks one after another in this process: the same functions, the same rows."""
    ids = pa.record_batch([pa.array(range(n), pa.int64())], names=["id"])
    return [row for batch in fn([ids]) for row in batch.to_pylist()]


def reassemble(
    tasks: Tasks, cores: int, files: list[CaptureFile], out: Path, ports: frozenset[int]
) -> Streams:
    """Stages 1 and 2, their tasks run by `tasks` on `cores` cores: OUT/streams holds the byte
    files afterwards."""
    streams_dir = (out / STREAMS).resolve()
    shutil.rmtree(streams_dir, ignore_errors=True)
    streams_dir.mkdir(parents=True)
    segments_dir = streams_dir / SEGMENTS_DIR
    # a few ranges per core even for a small capture (one 64 MiB range and a 36 MiB one
    # leave a core idle for half of stage 1), none below MIN_RANGE
    total = sum(f.size for f in files)
    per_core = decode.TASKS_PER_CORE * max(1, cores)
    planned = plan(files, max(MIN_RANGE, min(RANGE_TARGET, total // per_core)))
    # largest ranges first (a compressed file is one range of unknown size: first of all)
    order = sorted(range(len(planned)), key=lambda i: planned[i][2] - planned[i][3])
    todo = [(i, *planned[i]) for i in order]
    try:
        rows = tasks(
            functools.partial(stage1, ports, str(segments_dir), todo), len(todo), RANGE_DDL
        )
        by_file: dict[str, FileCounts] = {}
        packets = skipped = 0
        sizes: dict[int, int] = {}
        damage: list[dict[str, Any]] = []
        for r in rows:
            if r["kind"] == "counts":
                packets += r["packets"] or 0
                skipped += r["skipped"] or 0
                fc = by_file.setdefault(r["capture"], FileCounts())
                fc.record_bytes += r["record_bytes"] or 0
                fc.damaged_bytes += r["damaged_bytes"] or 0
                if r["file_end"] is not None:
                    fc.end = r["file_end"]
                fc.broken = fc.broken or r["error"]
            elif r["kind"] == "damage":
                damage.append({k: r[k] for k in ("capture", "index", "length", "error", "payload")})
            elif r["kind"] == "bucket":
                sizes[r["index"]] = sizes.get(r["index"], 0) + r["length"]
        damage.sort(key=lambda d: (d["capture"], d["index"]))
        n_segments = packets - skipped  # every packet read is a segment row or skipped
        # the buckets that have segments in a few bins per core (`decode.bins`: a Python task
        # costs Spark a fixed share), the largest first (as the ranges above)
        buckets = sorted(sizes)
        tasks2 = [
            [buckets[i] for i in b]
            for b in decode.bins([sizes[b] for b in buckets], decode.TASKS_PER_CORE * cores)
        ]
        directions: list[dict[str, Any]] = []
        if tasks2:
            directions = tasks(
                functools.partial(
                    stage2_buckets, str(streams_dir), str(segments_dir), ports, tasks2
                ),
                len(tasks2),
                STREAMS_DDL,
            )
    finally:
        shutil.rmtree(segments_dir, ignore_errors=True)
    return Streams(packets, skipped, n_segments, directions, by_file, damage)


def gap_rejects(streams: Streams, out: Path) -> int:
    """Write every gap as a reject of kind "gap" (no bytes; its length is what is missing)."""
    return _write_rejects(
        [
            {
                "capture": d["capture"],
                "connection": d["connection"],
                "direction": d["direction"],
                "offset": offset,
                "size": length,
                "length": length,
                "kind": "gap",
                "bytes": b"",
                "error": f"{length} bytes missing from the capture (TCP sequence {seqs})",
            }
            for d in streams.directions
            for offset, length, seqs in zip(
                d["gap_offsets"], d["gap_lengths"], d["gap_seqs"], strict=True
            )
        ],
        out / "rejects" / "part-gaps.parquet",
    )


def capture_rejects(streams: Streams, out: Path) -> int:
    """Write every damaged stretch of a capture file as a reject of kind "capture": its file
    offset and length, its first bytes, why (no connection: it belongs to none)."""
    return _write_rejects(
        [
            {
                "capture": d["capture"],
                "offset": d["index"],
                "size": d["length"],
                "length": d["length"],
                "kind": "capture",
                "bytes": d["payload"],
                "error": f"capture file offset {d['index']:,}, {d['length']:,} bytes: {d['error']}",
            }
            for d in streams.damage
        ],
        out / "rejects" / "part-capture.parquet",
    )


def _write_rejects(rows: list[dict[str, Any]], path: Path) -> int:
    """The rows as one Parquet part of the rejects table (none written for no rows)."""
    if rows:
        columns: dict[str, list[Any]] = {name: [] for name in REJECTS_SCHEMA.names}
        for row in rows:
            _append(columns, row)
        pq.write_table(pa.Table.from_pydict(columns, schema=REJECTS_SCHEMA), path)
    return len(rows)


def reconcile_files(files: list[CaptureFile], streams: Streams, echo: Echo) -> dict[str, str]:
    """Per capture file: file header + bytes in records + damaged bytes = the file's size (for
    gzip, its decompressed size). Echoes a line per file with damage or a problem, a warning
    per broken gzip stream; returns what is wrong, by file."""
    problems: dict[str, str] = {}
    total = header_total = records_total = damaged_total = 0
    for f in files:
        counts = streams.files.get(f.capture, FileCounts())
        header = pcap.file_header(f.format)
        compressed = f.format.endswith(".gz")
        size = counts.end if compressed else f.size
        got = header + counts.record_bytes + counts.damaged_bytes
        what = "decompressed size" if compressed else "size"
        if size is None:
            problems[f.capture] = "it was never read to its end"
        elif got != size:
            problems[f.capture] = f"{got:,} bytes accounted for, its {what} is {size:,}"
        else:
            total += size
        header_total += header
        records_total += counts.record_bytes
        damaged_total += counts.damaged_bytes
        if counts.broken is not None:
            echo(
                f"warning: {f.path}: the gzip stream breaks after {counts.end or 0:,} "
                f"decompressed bytes ({counts.broken}); decoded what came before it"
            )
        if counts.damaged_bytes or f.capture in problems:
            n = sum(1 for d in streams.damage if d["capture"] == f.capture)
            echo(
                f"  {f.capture}: {header:,} header + {counts.record_bytes:,} in records + "
                f"{counts.damaged_bytes:,} damaged ({n} stretch{'es' if n != 1 else ''}) = "
                + (f"{size:,} bytes: ok" if f.capture not in problems else "FAILED: ")
                + problems.get(f.capture, "")
            )
    n = len(files)
    echo(
        f"capture reconciliation: {n} file{'s' if n != 1 else ''}: {header_total:,} bytes of "
        f"file headers + {records_total:,} in records + {damaged_total:,} damaged "
        + (
            f"= {total:,} bytes, each file's size"
            if not problems
            else f"(FAILED for {len(problems)} file{'s' if len(problems) != 1 else ''})"
        )
    )
    return problems


def default_ports(spec: SpecVersion) -> frozenset[int]:
    """The protocol's default server ports, as its generated framing module states them."""
    try:
        framing = importlib.import_module(spec.framing_name)
    except ModuleNotFoundError:
        raise DecodeInputError(
            f"{spec.qualified}: no generated framing module {spec.framing_name} "
            "(run `specgen generate`); give --port"
        ) from None
    ports = frozenset(framing.PORTS)
    if not ports:
        raise DecodeInputError(
            f"{spec.qualified} names no default port in its protocol.toml; give --port"
        )
    return ports


def run(
    protocol: str,
    files: list[CaptureFile],
    out: Path,
    master: str | None,
    overwrite: bool,
    ports: frozenset[int],
    echo: Echo = print,
    **decode_options: Any,
) -> Result:
    """The whole pcap job: stages 1 and 2, the ordinary decode of OUT/streams, the gaps as
    rejects, then the packet and byte reconciliation."""
    from specgen.pipeline.spark import jobs, retries, start, tasks_done

    spec = find_spec(protocol)
    ports = ports or default_ports(spec)
    decode.check_out(out, overwrite, files[0].path.parent)
    total = sum(f.size for f in files)
    echo(
        f"pcap: {len(files)} capture file{'s' if len(files) != 1 else ''} "
        f"({total:,} bytes), TCP ports {', '.join(map(str, sorted(ports)))}"
    )
    in_process = decode.without_spark(
        master, total, decode_options.get("target", TARGET), "bytes of pcap"
    )
    if in_process is not None:  # the stages' own functions, one task after another
        echo(in_process)
        unfinished.mark(out, "decode")
        streams = reassemble(here, 1, files, out, ports)
    else:
        from py4j.protocol import Py4JError  # type: ignore[import-untyped]
        from pyspark.errors import PySparkException

        progress = Progress("decode")
        spark = start(master, progress)  # an environment error (exit 2) before any job runs
        unfinished.mark(out, "decode")  # until the last reject is written (see `unfinished`)
        before = jobs(spark)
        try:
            progress.line(f"reading packets and reassembling TCP ({total:,} bytes of pcap)")
            with tasks_done(spark, progress, "tasks"):
                cores = spark.sparkContext.defaultParallelism
                streams = reassemble(on_spark(spark), cores, files, out, ports)
        except (PySparkException, Py4JError) as e:
            raise decode.DecodeJobError(decode.first_line(e)) from None
        retries(spark, before, progress)
    echo(
        f"pcap: {streams.packets:,} packets: {streams.segments:,} TCP segments of those ports, "
        f"{streams.skipped:,} other packets; {len(streams.directions):,} directions reassembled"
    )
    # a shared port: connections whose client opened as another protocol does are set aside
    own, foreign = openings.set_aside(
        (out / STREAMS).resolve(),
        out,
        streams.directions,
        importlib.import_module(spec.framing_name),
    )
    streams = dataclasses.replace(streams, directions=own)
    for line in openings.lines(foreign, out):
        echo(line)
    if not streams.directions and foreign:
        shutil.rmtree(out / STREAMS, ignore_errors=True)
        raise DecodeInputError(
            f"every connection on port {', '.join(map(str, sorted(ports)))} speaks another "
            f"protocol than {spec.qualified} (their byte files are in {out / openings.OTHER})"
        )
    if not streams.directions:
        shutil.rmtree(out / STREAMS, ignore_errors=True)
        raise DecodeInputError(
            f"no TCP payload on port {', '.join(map(str, sorted(ports)))} in "
            f"{streams.packets:,} packets; give the server's port with --port"
        )
    result = decode.run(
        protocol,
        out / STREAMS,
        out,
        master,
        overwrite=True,
        echo=echo,
        marked=True,
        **decode_options,
    )
    gaps = gap_rejects(streams, out)
    damaged = capture_rejects(streams, out)
    file_problems = reconcile_files(files, streams, echo)
    kept = sum(t.total for t in result.files)
    unique = streams.payload_bytes - streams.duplicate_bytes
    ok = kept == unique and streams.packets == streams.segments + streams.skipped
    echo(
        f"pcap reconciliation: {streams.packets:,} packets = {streams.segments:,} segments + "
        f"{streams.skipped:,} skipped; TCP payload {streams.payload_bytes:,} bytes = "
        f"{kept:,} in frames and rejects + {streams.duplicate_bytes:,} retransmitted"
        + ("" if ok else f" (FAILED: {unique:,} unique bytes)")
        + f"; {gaps:,} gap{'s' if gaps != 1 else ''} ({streams.gap_bytes:,} bytes never captured)"
    )
    if damaged:
        echo(
            f"rejects: {damaged:,} damaged stretch{'es' if damaged != 1 else ''} of capture files "
            f"(kind 'capture') in {out / 'rejects'}"
        )
    unfinished.finish(out)
    problems = dict(result.problems)
    if not ok:
        print("specgen: decode: the pcap reconciliation failed", file=sys.stderr)
        problems["pcap"] = "bytes"
    for capture, problem in file_problems.items():
        print(f"specgen: decode: {capture}: {problem}", file=sys.stderr)
        problems[capture] = problem
    return dataclasses.replace(result, problems=problems) if problems else result
