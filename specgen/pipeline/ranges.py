"""Frame-aligned byte ranges: how one capture file becomes many tasks, without reading it.

The walk reads only size prefixes (4 bytes per frame, from a 1 MiB window while frames are
small) and cuts the file at the first frame boundary past every `target` bytes, so no task holds
a whole capture and every range starts on a frame. It also counts the frames it finds: that
count is the "frames found in the input" the decode job reconciles its output against. A frame
cut by the end of the file, or a size prefix no frame can have (after which nothing can be
framed), counts as one frame found; decoding turns it into one reject.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from types import ModuleType

from specgen.pipeline.inputs import DecodeInputError, Reads, Stream

TARGET = 32 * 1024 * 1024
"""Bytes per range: big enough that a task's start-up cost is noise, small enough for memory."""

WINDOW = 1024 * 1024
UNFRAMED_KEEP = 64 * 1024
"""Bytes a reject keeps of what follows an impossible size prefix (the rest cannot be framed)."""

PREAMBLES: dict[str, int] = {}
"""Protocol name -> bytes each direction starts with that are not a frame, skipped by the walk.

The hook for protocols with a protocol header: AMQP 1.0 opens each direction with the 8 bytes
`AMQP 0 1 0 0` (`{"amqp-1.0": 8}`). RabbitMQ Streams has none, so nothing is registered.
"""


@dataclass(frozen=True)
class Framing:
    """How frames follow each other in one direction's bytes."""

    size_prefix: struct.Struct  # counts the bytes after itself
    header: struct.Struct  # size, key, version
    max_size: int  # the largest size prefix a frame can have
    preamble: int = 0

    @property
    def min_size(self) -> int:
        """The smallest size prefix: a frame holds at least the rest of its header."""
        return self.header.size - self.size_prefix.size

    @classmethod
    def of(cls, codec: ModuleType, schema: ModuleType) -> Framing:
        """The framing of a generated codec package and its spark_schema module."""
        return cls(
            schema.SIZE_PREFIX,
            schema.FRAME_HEADER,
            codec.frame_reader.DEFAULT_MAX_FRAME_SIZE,
            PREAMBLES.get(codec.PROTOCOL, 0),
        )


@dataclass(frozen=True)
class Range:
    """One task's work: bytes [start, end) of one direction's file, starting on a frame."""

    path: str
    start: int
    end: int
    file_size: int
    capture: str
    connection: str
    direction: str
    frames: int  # frames the walk found in [start, end), a cut or unframeable tail included
    read_starts: list[int]
    read_ends: list[int]
    read_walls: list[float | None]

    @staticmethod
    def ddl() -> str:
        """The Spark DDL of a DataFrame of ranges."""
        return (
            "`path` STRING, `start` BIGINT, `end` BIGINT, `file_size` BIGINT, `capture` STRING, "
            "`connection` STRING, `direction` STRING, `frames` BIGINT, "
            "`read_starts` ARRAY<BIGINT>, `read_ends` ARRAY<BIGINT>, `read_walls` ARRAY<DOUBLE>"
        )


def split(stream: Stream, framing: Framing, target: int = TARGET) -> list[tuple[int, int, int]]:
    """(start, end, frames found) of consecutive frame-aligned ranges covering the file.

    An empty file has no range. Every range but the last ends on a frame boundary at least
    `target` bytes past its start; the last one ends at the end of the file, except after an
    impossible size prefix, where it keeps UNFRAMED_KEEP bytes for the reject.
    """
    size = stream.size
    if size == 0:
        return []
    width = framing.size_prefix.size
    unpack = framing.size_prefix.unpack_from
    ranges: list[tuple[int, int, int]] = []
    try:
        fd = os.open(stream.path, os.O_RDONLY)
    except OSError as e:
        raise DecodeInputError(f"{stream.path}: {e.strerror}") from None
    try:
        pos = min(framing.preamble, size)
        start, frames, end = 0, 0, size
        window, window_at, length = b"", 0, 0
        if pos < framing.preamble:
            frames = 1  # cut inside the protocol header
        while pos < size:
            if pos - start >= target and frames:
                ranges.append((start, pos, frames))
                start, frames = pos, 0
            frames += 1
            if size - pos < width:
                break  # cut inside the size prefix
            if pos + width > window_at + len(window):
                # a 1 MiB window while frames are small; past a big frame, just the prefix
                window = os.pread(fd, WINDOW if length < WINDOW else width, pos)
                window_at = pos
            (value,) = unpack(window, pos - window_at)
            if value < framing.min_size or value > framing.max_size:
                end = min(size, pos + UNFRAMED_KEEP)
                break  # nothing after an impossible size can be framed
            length = value + width
            pos += length
        ranges.append((start, end, frames))
    except OSError as e:
        raise DecodeInputError(f"{stream.path}: {e.strerror}") from None
    finally:
        os.close(fd)
    return ranges


def plan(
    streams: list[Stream],
    framing: Framing,
    indexes: dict[tuple[str, str], dict[str, Reads]],
    target: int = TARGET,
) -> list[Range]:
    """Every stream's ranges, each with the index reads that delivered its bytes."""
    out: list[Range] = []
    for s in streams:
        reads = indexes.get((s.capture, s.connection), {}).get(s.direction, Reads())
        for start, end, frames in split(s, framing, target):
            mine = reads.within(start, end)
            out.append(
                Range(
                    str(s.path.resolve()),
                    start,
                    end,
                    s.size,
                    s.capture,
                    s.connection,
                    s.direction,
                    frames,
                    mine.starts,
                    mine.ends,
                    mine.walls,
                )
            )
    return out
