"""The decode job's reconciliation, from what is on disk: every byte of every file in one row.

Per byte file (capture, connection, direction) the frames table's `size` and the rejects
table's `length` must add up to the file's size from the inventory (less a protocol header the
walk skips), and the rows must tile the file: sorted by offset, each starts where the one before
ended, the first at the file's first frame and the last at its end. Frames plus rejected frames
must also equal the frames the walk found in the file.

The tables are read back with pyarrow a batch at a time, only the columns the checks need, and
the checks run on numpy arrays: each batch leaves, per file, a few contiguous spans (start,
end) of rows, not its rows, so millions of frames cost a few spans, not millions of Python
objects. Both runners (Spark and single-process) call `tally` on the folders they wrote.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]

BATCH_ROWS = 256 * 1024
WHERE = ("capture", "connection", "direction")
EXAMPLES = 3

Key = tuple[str, str, str]
Example = tuple[str, str, str, int, int, str, str]  # where, offset, length, kind, error


@dataclass
class FileTally:
    """One byte file: what the walk found in it and what the tables hold of it."""

    capture: str
    connection: str
    direction: str
    size: int  # bytes, from the inventory
    first: int  # where its first frame starts: after a protocol header, if any
    found: int = 0  # headers the walk found that frame
    frames: int = 0
    frame_bytes: int = 0
    rejected: int = 0  # rejects of kind "frame"
    rejected_bytes: int = 0
    unframed: int = 0  # rejects of kind "unframed"
    unframed_bytes: int = 0
    spans: list[tuple[int, int]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.capture}/{self.connection}.{self.direction}.bin"

    @property
    def total(self) -> int:
        """The bytes the rows account for, a protocol header included."""
        return self.first + self.frame_bytes + self.rejected_bytes + self.unframed_bytes

    def problem(self) -> str | None:
        """What is wrong with this file's rows, or None when they tile it and add up."""
        cursor = self.first
        for start, end in sorted(self.spans):
            if start > cursor:
                return f"bytes {cursor}..{start} are in no row"
            if start < cursor:
                return f"rows overlap at offset {start}"
            cursor = end
        if cursor < self.size:
            return f"bytes {cursor}..{self.size} are in no row"
        if cursor > self.size or self.total != self.size:
            return f"rows run past the end of the file, to offset {max(cursor, self.total)}"
        if self.frames + self.rejected != self.found:
            return (
                f"{self.frames} frames + {self.rejected} rejected frames != "
                f"{self.found} frames found"
            )
        return None


@dataclass
class Tally:
    files: dict[Key, FileTally]
    strays: dict[Key, int] = field(default_factory=dict)  # rows for files not in the input
    examples: list[Example] = field(default_factory=list)  # the first rejects, by file, offset


def tally(files: dict[Key, FileTally], frames_dir: Path, rejects_dir: Path) -> Tally:
    """Add every row of the Parquet parts in the two folders to its file's tally."""
    out = Tally(files)
    for path in sorted(frames_dir.glob("*.parquet")):
        for batch in _batches(path, [*WHERE, "offset", "size"]):
            for key, rows in _by_file(batch):
                offsets, lengths = _ints(rows, "offset"), _ints(rows, "size")
                t = _file(out, key, len(offsets))
                if t is None:
                    continue
                t.frames += len(offsets)
                t.frame_bytes += int(lengths.sum())
                t.spans += _spans(offsets, lengths)
    for path in sorted(rejects_dir.glob("*.parquet")):
        columns = [*WHERE, "offset", "length", "kind", "error"]
        for batch in _batches(path, columns):
            for key, rows in _by_file(batch):
                kinds = rows.column("kind").cast(pa.string())
                # a gap (pcap input) is bytes the capture never held, and a damaged stretch of
                # a capture file ("capture") is bytes of no connection: no part of any byte file
                outside = pc.is_in(kinds, value_set=pa.array(["gap", "capture"]))
                held = np.asarray(
                    pc.invert(outside.fill_null(False)).to_numpy(zero_copy_only=False),
                    dtype=bool,
                )
                if not held.all():
                    rows = rows.filter(pa.array(held))
                    kinds = rows.column("kind").cast(pa.string())
                if rows.num_rows == 0:
                    continue
                offsets, lengths = _ints(rows, "offset"), _ints(rows, "length")
                t = _file(out, key, len(offsets))
                if t is None:
                    continue
                framed = np.asarray(
                    pc.equal(kinds, "frame").fill_null(False).to_numpy(zero_copy_only=False),
                    dtype=bool,
                )
                t.rejected += int(framed.sum())
                t.rejected_bytes += int(lengths[framed].sum())
                t.unframed += int((~framed).sum())
                t.unframed_bytes += int(lengths[~framed].sum())
                t.spans += _spans(offsets, lengths)
                out.examples = _first(out.examples, key, rows, offsets, lengths)
    return out


def _batches(path: Path, columns: list[str]) -> Iterator[Any]:
    # the file columns as dictionaries: a batch of one file is three one-word dictionaries
    reader = pq.ParquetFile(path, read_dictionary=[c for c in columns if c in WHERE])
    yield from reader.iter_batches(batch_size=BATCH_ROWS, columns=columns)


def _by_file(batch: Any) -> Iterator[tuple[Key, Any]]:
    """The batch's rows grouped by file: one group, without copying, in the usual case."""
    if batch.num_rows == 0:
        return
    codes, names = [], []
    for column in WHERE:
        array = batch.column(column)
        if not pa.types.is_dictionary(array.type):
            array = array.dictionary_encode()
        codes.append(np.asarray(array.indices.fill_null(0).to_numpy(zero_copy_only=False)))
        names.append(array.dictionary.to_pylist())
    code = (codes[0].astype(np.int64) * len(names[1]) + codes[1]) * len(names[2]) + codes[2]
    if code.min() == code.max():
        yield _key(names, codes, 0), batch
        return
    order = np.argsort(code, kind="stable")
    bounds = np.flatnonzero(np.diff(code[order])) + 1
    for part in np.split(order, bounds):
        yield _key(names, codes, int(part[0])), batch.take(pa.array(part))


def _key(names: list[list[Any]], codes: list[Any], row: int) -> Key:
    capture, connection, direction = (
        str(n[int(c[row])]) for n, c in zip(names, codes, strict=True)
    )
    return capture, connection, direction


def _ints(batch: Any, column: str) -> Any:
    # a null offset or length (never written by decode) becomes -1: a hole or overlap, reported
    return np.asarray(
        batch.column(column).cast(pa.int64()).fill_null(-1).to_numpy(zero_copy_only=False)
    )


def _file(out: Tally, key: Key, rows: int) -> FileTally | None:
    t = out.files.get(key)
    if t is None:
        out.strays[key] = out.strays.get(key, 0) + rows
    return t


def _spans(offsets: Any, lengths: Any) -> list[tuple[int, int]]:
    """The maximal runs of rows that follow each other exactly, as (start, end)."""
    if not len(offsets):
        return []
    if len(offsets) > 1 and not bool(np.all(offsets[1:] >= offsets[:-1])):
        order = np.argsort(offsets, kind="stable")
        offsets, lengths = offsets[order], lengths[order]
    ends = offsets + lengths
    breaks = np.flatnonzero(offsets[1:] != ends[:-1]) + 1
    firsts = np.concatenate(([0], breaks))
    lasts = np.concatenate((breaks - 1, [len(offsets) - 1]))
    return list(zip(offsets[firsts].tolist(), ends[lasts].tolist(), strict=True))


def _first(
    examples: list[Example], key: Key, rows: Any, offsets: Any, lengths: Any
) -> list[Example]:
    """The EXAMPLES first rejects by (file, offset), this batch's rows considered."""
    if examples and examples[-1][:3] < key and len(examples) >= EXAMPLES:
        return examples  # a later file: none of its rows can come first
    take = np.argsort(offsets, kind="stable")[:EXAMPLES]
    kinds = rows.column("kind").cast(pa.string())
    errors = rows.column("error")
    more = [
        (
            *key,
            int(offsets[i]),
            int(lengths[i]),
            str(kinds[int(i)].as_py()),
            str(errors[int(i)].as_py()),
        )
        for i in take
    ]
    return sorted(examples + more)[:EXAMPLES]
