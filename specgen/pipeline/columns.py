"""One range of one capture file in, Arrow record batches of frames and rejects out.

`decode_range` is the whole per-task job, and both runners call it: the Spark job from
`mapInArrow`, `decode_local` in one plain process. It reads its byte range once, walks the size
prefixes, decodes each frame with the generated codec and builds columns batch by batch: the
generated `message_columns` makes the decoded part column-wise, this module adds where each frame
was seen. A frame that does not decode is a reject and the walk goes on (the size prefix still
frames the next one); a frame cut by the end of the file, or an impossible size prefix, is a
reject that ends the walk.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Literal

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]

from specgen.pipeline.inputs import DIRECTIONS
from specgen.pipeline.ranges import Framing, Range

BATCH_FRAMES = 8192
BATCH_BYTES = 16 * 1024 * 1024
"""A batch ends after this many frames or frame bytes, whichever comes first: big Deliver
chunks must not make one batch hold hundreds of MiB."""

TIMESTAMP = pa.timestamp("us", tz="UTC")

REJECTS_SCHEMA = pa.schema(
    [
        pa.field("capture", pa.string()),
        pa.field("connection", pa.string()),
        pa.field("direction", pa.string()),
        pa.field("offset", pa.int64()),
        pa.field("size", pa.int64()),
        pa.field("bytes", pa.binary()),
        pa.field("error", pa.string()),
        pa.field("field", pa.string()),
        pa.field("error_offset", pa.int32()),
    ]
)
"""Every frame that did not decode. `size` is the frame length its size prefix claims (prefix
included, as in frames.size), null when too few bytes were left for a prefix; `bytes` is the
frame, or what is left of it when cut; `error_offset` is where in those bytes the error is."""

REJECTS_DDL = (
    "`capture` STRING, `connection` STRING, `direction` STRING, `offset` BIGINT, `size` BIGINT, "
    "`bytes` BINARY, `error` STRING, `field` STRING, `error_offset` INT"
)

Table = Literal["frames", "rejects"]


@dataclass(frozen=True)
class Codec:
    """A generated codec package and its spark_schema module, imported once per worker."""

    name: str
    package: ModuleType
    schema: ModuleType
    framing: Framing

    @classmethod
    def load(cls, import_name: str) -> Codec:
        package = importlib.import_module(import_name)
        schema = importlib.import_module(f"{import_name}.spark_schema")
        return cls(import_name, package, schema, Framing.of(package, schema))


def _where(r: Range, n: int) -> list[Any]:
    """The capture, connection and direction columns of `n` rows of one range."""
    return [pa.repeat(v, n).cast(pa.string()) for v in (r.capture, r.connection, r.direction)]


class _Frames:
    """One batch of a range's decoded frames, as plain lists until `build`."""

    def __init__(self, r: Range) -> None:
        self.r = r
        self.offsets: list[int] = []
        self.sizes: list[int] = []
        self.keys: list[int] = []
        self.versions: list[int] = []
        self.walls: list[float | None] = []
        self.msgs: list[Any] = []
        self.bytes = 0

    def build(self, codec: Codec) -> Any:
        n = len(self.offsets)
        stamps = pa.array(self.walls, pa.float64())
        decoded = codec.schema.message_columns(self.msgs)
        columns = {
            "timestamp": pc.round(pc.multiply(stamps, 1e6)).cast(pa.int64()).cast(TIMESTAMP),
            "offset": pa.array(self.offsets, pa.int64()),
            "size": pa.array(self.sizes, pa.int32()),
            "key": pa.array(self.keys, pa.int32()),
            "version": pa.array(self.versions, pa.int32()),
            **decoded,
        }
        schema = codec.schema.FRAMES_SCHEMA
        arrays = _where(self.r, n) + [columns[name] for name in schema.names[3:]]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


class _Rejects:
    """A range's rejects, as plain lists until `build`."""

    def __init__(self, r: Range) -> None:
        self.r = r
        self.offsets: list[int] = []
        self.sizes: list[int | None] = []
        self.data: list[bytes] = []
        self.errors: list[str] = []
        self.fields: list[str] = []
        self.error_offsets: list[int] = []

    def add(
        self, offset: int, size: int | None, data: bytes, error: str, field: str, at: int
    ) -> None:
        self.offsets.append(offset)
        self.sizes.append(size)
        self.data.append(data)
        self.errors.append(error)
        self.fields.append(field)
        self.error_offsets.append(at)

    def build(self) -> Any:
        n = len(self.offsets)
        r = self.r
        return pa.RecordBatch.from_arrays(
            [
                *_where(r, n),
                pa.array(self.offsets, pa.int64()),
                pa.array(self.sizes, pa.int64()),
                pa.array(self.data, pa.binary()),
                pa.array(self.errors, pa.string()),
                pa.array(self.fields, pa.string()),
                pa.array(self.error_offsets, pa.int32()),
            ],
            schema=REJECTS_SCHEMA,
        )


def decode_range(r: Range, codec: Codec) -> Iterator[tuple[Table, Any]]:
    """("frames", batch in FRAMES_SCHEMA) and ("rejects", batch in REJECTS_SCHEMA) for one
    range; its rows add up to the frames the walk found in it."""
    framing = codec.framing
    decode: Callable[..., Any] = codec.package.decode
    decode_error: type[Exception] = codec.package.DecodeError
    sender = DIRECTIONS[r.direction]
    width = framing.size_prefix.size
    unpack_size = framing.size_prefix.unpack_from
    unpack_header = framing.header.unpack_from
    with open(r.path, "rb") as f:
        data = os.pread(f.fileno(), r.end - r.start, r.start)
    view = memoryview(data)
    n = len(data)
    rejects = _Rejects(r)
    batch = _Frames(r)
    pos = 0
    if r.start == 0 and framing.preamble:
        pos = framing.preamble
        if n < pos:
            rejects.add(0, None, data, f"cut in the {pos}-byte protocol header", "preamble", n)
    # timestamps: the read that delivered each frame's last byte, found by a moving pointer
    starts, ends, walls = r.read_starts, r.read_ends, r.read_walls
    i, reads = 0, len(ends)
    while pos < n:
        at = r.start + pos
        if n - pos < width:
            rejects.add(
                at,
                None,
                bytes(view[pos:]),
                f"cut mid-frame: {n - pos} bytes, too few for the {width}-byte size prefix",
                "frame.size",
                n - pos,
            )
            break
        (size,) = unpack_size(view, pos)
        length = size + width
        if size < framing.min_size or size > framing.max_size:
            rest = r.file_size - at
            rejects.add(
                at,
                length,
                bytes(view[pos:]),
                f"size prefix {size} is outside {framing.min_size}..{framing.max_size}: "
                f"the {rest} bytes from here on cannot be framed"
                + (f" (the first {n - pos} are kept)" if n - pos < rest else ""),
                "frame.size",
                0,
            )
            break
        if length > n - pos:
            rejects.add(
                at,
                length,
                bytes(view[pos:]),
                f"cut mid-frame: size says {size}, {n - pos - width} bytes follow",
                "frame",
                n - pos,
            )
            break
        frame = view[pos : pos + length]
        try:
            msg = decode(frame, sender)
        except decode_error as e:
            rejects.add(
                at, length, bytes(frame), str(e), getattr(e, "field", ""), getattr(e, "offset", 0)
            )
        else:
            batch.msgs.append(msg)
            batch.offsets.append(at)
            batch.sizes.append(length)
            _, key, version = unpack_header(view, pos)  # a decoded frame holds a whole header
            batch.keys.append(key)
            batch.versions.append(version)
            last = at + length - 1
            while i < reads and ends[i] <= last:
                i += 1
            batch.walls.append(walls[i] if i < reads and starts[i] <= last else None)
            batch.bytes += length
            if len(batch.msgs) >= BATCH_FRAMES or batch.bytes >= BATCH_BYTES:
                yield "frames", batch.build(codec)
                batch = _Frames(r)
        finally:
            frame.release()
        pos += length
    if batch.msgs:
        yield "frames", batch.build(codec)
    if rejects.offsets:
        yield "rejects", rejects.build()
