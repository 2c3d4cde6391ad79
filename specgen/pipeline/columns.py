"""One range of one capture file in, Arrow record batches of frames and rejects out.

`decode_range` is the whole per-task job, and both runners call it: the Spark job from
`mapInArrow`, `decode_local` in one plain process. It reads its range's bytes between the gaps
the driver's walk recorded, walks the size prefixes, decodes each frame with the generated codec
and builds columns batch by batch: the generated `message_columns` makes the decoded part
column-wise, this module adds where each frame was seen. A frame that does not decode is a
rejected frame and the walk goes on (its size prefix still frames the next one); each gap is one
unframed reject. A task never looks for frames in a gap nor anywhere else: where frames are is
the driver's walk's decision alone (`ranges.py`).
"""

from __future__ import annotations

import importlib
import operator
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Literal

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]

from specgen.pipeline import collector
from specgen.pipeline.inputs import DIRECTIONS
from specgen.pipeline.ranges import UNFRAMED_KEEP, Framing, Range, describe

BATCH_FRAMES = 8192
BATCH_BYTES = 16 * 1024 * 1024
"""A batch ends after this many frames or frame bytes, whichever comes first: frames of
many MiB must not make one batch hold hundreds of MiB."""

TIMESTAMP = pa.timestamp("us", tz="UTC")

SPEC_KEY = b"specgen.spec"
"""The key of a frames table's Parquet metadata that names the spec version it was decoded with
(`rabbitmq-stream/4.0`): each generated FRAMES_SCHEMA carries it, so every part written holds it
and `specgen report` reads that version's generated code."""

REJECTS_SCHEMA = pa.schema(
    [
        pa.field("capture", pa.string()),
        pa.field("connection", pa.string()),
        pa.field("direction", pa.string()),
        pa.field("offset", pa.int64()),
        pa.field("size", pa.int64()),
        pa.field("length", pa.int64()),
        pa.field("kind", pa.string()),
        pa.field("bytes", pa.binary()),
        pa.field("error", pa.string()),
        pa.field("field", pa.string()),
        pa.field("error_offset", pa.int32()),
    ]
)
"""Every byte of a file that is not in a frame row (nor a protocol header) is in exactly one of
these rows.

`kind` is "frame" for a frame that frames (its header does) but does not decode, and
"unframed" for bytes the walk skipped: from a header that does not frame to where it found
frames again, or to the end of the file (a frame cut by it included). `offset` and `length` are
exact: the bytes [offset, offset + length) of the file. `size` is the frame length the size
prefix claims (prefix included, as in frames.size), null when too few bytes were left for a
prefix. `bytes` holds a rejected frame whole, and the first UNFRAMED_KEEP (1 MiB) bytes of an
unframed span; `error_offset` is where in the rejected bytes the error is."""

REJECTS_DDL = (
    "`capture` STRING, `connection` STRING, `direction` STRING, `offset` BIGINT, `size` BIGINT, "
    "`length` BIGINT, `kind` STRING, `bytes` BINARY, `error` STRING, `field` STRING, "
    "`error_offset` INT"
)

Table = Literal["frames", "rejects"]

VIOLATION = pa.struct(
    [
        ("rule", pa.string()),
        ("message", pa.string()),
        ("field", pa.string()),
        ("value", pa.string()),
        ("text", pa.string()),
        ("spec", pa.string()),
    ]
)
VIOLATIONS = pa.field("violations", pa.list_(VIOLATION))
"""The frames table's last column, the pipeline's beside the codec's FRAMES_SCHEMA: the rules
of its spec a frame breaks alone or as its sender sent it (the version's generated `rules`),
each the rule's kind, the class and field, the value (its repr, at most VALUE_CHARS), a
sentence and the spec's file:line:col; null where it breaks none. A rule across messages (a
value against an earlier message's) is the report's, which reads each connection whole."""

VALUE_CHARS = 200


@dataclass(frozen=True)
class Codec:
    """A generated codec package and its spark_schema module, imported once per worker."""

    name: str
    package: ModuleType
    schema: ModuleType
    framing: Framing
    verify_checksums: bool = True  # False: the caller trusts its transport (--no-verify-checksums)
    rules: ModuleType | None = None  # the version's rules; None for a package generated before

    @classmethod
    def load(cls, import_name: str, verify_checksums: bool = True) -> Codec:
        package = importlib.import_module(import_name)
        schema = importlib.import_module(f"{import_name}.spark_schema")
        protocol = importlib.import_module(import_name.rsplit(".", 1)[0] + ".framing")
        framing = Framing.of(package, protocol, verify_checksums)
        try:
            rules: ModuleType | None = importlib.import_module(f"{import_name}.rules")
        except ModuleNotFoundError as e:
            if e.name != f"{import_name}.rules":
                raise
            rules = None
        return cls(import_name, package, schema, framing, verify_checksums, rules)

    @property
    def frames_schema(self) -> Any:
        """The frames table: the codec's FRAMES_SCHEMA and the `violations` column."""
        return self.schema.FRAMES_SCHEMA.append(VIOLATIONS)


def _violations(found: list[Any]) -> list[dict[str, str | None]] | None:
    """A frame's `violations` cell."""
    if not found:
        return None
    return [
        {
            "rule": v.rule,
            "message": v.message,
            "field": v.field,
            "value": repr(v.value)[:VALUE_CHARS],
            "text": v.text,
            "spec": v.spec,
        }
        for v in found
    ]


class _Cells:
    """A frame's `violations` cell as its sender sent it: looked up by class where the class
    alone decides (most classes: their rules say only who sends them), by the values of the
    fields its rules read where those decide (a capture repeats the same exchange names frame
    after frame), else the message read."""

    def __init__(self, rules: ModuleType, sender: str) -> None:
        self.check = rules.violations
        self.of_class = rules.of_class
        self.rules: dict[str, tuple[Any, ...]] = rules.RULES
        self.nested: dict[str, tuple[str, ...]] = rules.NESTED
        self.sender = sender
        # class -> its cell, a _ByValues, or _READ: the whole message decides
        self.known: dict[type, Any] = {}

    def __call__(self, msg: Any) -> list[dict[str, str | None]] | None:
        cls = type(msg)
        cell = self.known.get(cls, _UNSEEN)
        if cell is _UNSEEN:
            cell = self.known[cls] = self._of(cls.__name__)
        if type(cell) is _ByValues:
            try:
                values = cell.read(msg)
            except AttributeError:  # a path through None or a list: the rules read it whole
                return _violations(self.check(msg, self.sender))
            try:
                # the values' types too: True and 1 are equal keys, and their reprs differ
                key = (tuple(map(type, values)), values)
                found = cell.memo.get(key, _UNSEEN)
            except TypeError:  # a value that cannot be a key (a table, a list)
                return _violations(self.check(msg, self.sender))
            if found is _UNSEEN:
                if len(cell.memo) >= _MEMO:
                    cell.memo.clear()
                found = cell.memo[key] = _violations(self.check(msg, self.sender))
            return found  # type: ignore[no-any-return]
        if cell is _READ:
            return _violations(self.check(msg, self.sender))
        return cell  # type: ignore[no-any-return]

    def _of(self, name: str) -> Any:
        found = self.of_class(name, self.sender)
        if found is not None:
            return _violations(found)
        rules = self.rules.get(name, ())
        fields = sorted({r.field for r in rules if r.kind != "sender"})
        # only rules on fields read by a path of attributes (a structure's member too): the
        # values at those paths decide the cell (a path through a list or None is read whole)
        if not fields or name in self.nested or not all(fields):
            return _READ
        return _ByValues(fields)


class _ByValues:
    """A class whose rules read only values at paths of attributes: its cells by those values."""

    def __init__(self, fields: list[str]) -> None:
        self.fields = fields
        get = operator.attrgetter(*fields)
        self.read: Callable[[Any], tuple[Any, ...]] = (
            get if len(fields) > 1 else lambda msg: (get(msg),)
        )
        self.memo: dict[Any, Any] = {}


_UNSEEN, _READ = object(), object()
_MEMO = 4096  # cells kept per class: values beyond are read again, the memo started afresh


def _where(r: Range, n: int) -> list[Any]:
    """The capture, connection and direction columns of `n` rows of one range."""
    return [pa.repeat(v, n).cast(pa.string()) for v in (r.capture, r.connection, r.direction)]


class _Frames:
    """One batch of a range's decoded frames, as plain lists until `build`."""

    def __init__(self, r: Range) -> None:
        self.r = r
        self.offsets: list[int] = []
        self.sizes: list[int] = []
        self.headers: list[tuple[int, ...] | None] = []  # None: a protocol header
        self.walls: list[float | None] = []
        self.msgs: list[Any] = []
        self.violations: list[list[dict[str, str | None]] | None] = []
        self.bytes = 0

    def appends(self) -> tuple[Callable[[Any], None], ...]:
        """The append of each list a frame adds to: its message, violations cell, offset,
        size, header and time."""
        return (
            self.msgs.append,
            self.violations.append,
            self.offsets.append,
            self.sizes.append,
            self.headers.append,
            self.walls.append,
        )

    def build(self, codec: Codec) -> Any:
        n = len(self.offsets)
        stamps = pa.array(self.walls, pa.float64())
        decoded = codec.schema.message_columns(self.msgs)
        columns = {
            "timestamp": pc.round(pc.multiply(stamps, 1e6)).cast(pa.int64()).cast(TIMESTAMP),
            "offset": pa.array(self.offsets, pa.int64()),
            "size": pa.array(self.sizes, pa.int32()),
            **decoded,
        }
        schema = codec.schema.FRAMES_SCHEMA
        names = codec.framing.names
        for column in codec.schema.HEADER_COLUMNS:
            i = names.index(column)
            columns[column] = pa.array(
                [None if h is None else h[i] for h in self.headers], schema.field(column).type
            )
        columns["violations"] = pa.array(self.violations, VIOLATIONS.type)
        schema = codec.frames_schema
        arrays = _where(self.r, n) + [columns[name] for name in schema.names[3:]]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


class _Rejects:
    """A batch of a range's rejects, as plain lists until `build`."""

    def __init__(self, r: Range) -> None:
        self.r = r
        self.offsets: list[int] = []
        self.sizes: list[int | None] = []
        self.lengths: list[int] = []
        self.kinds: list[str] = []
        self.data: list[bytes] = []
        self.errors: list[str] = []
        self.fields: list[str] = []
        self.error_offsets: list[int] = []
        self.bytes = 0

    def add(
        self,
        offset: int,
        size: int | None,
        length: int,
        kind: str,
        data: bytes,
        error: str,
        field: str,
        at: int,
    ) -> None:
        self.offsets.append(offset)
        self.sizes.append(size)
        self.lengths.append(length)
        self.kinds.append(kind)
        self.data.append(data)
        self.errors.append(error)
        self.fields.append(field)
        self.error_offsets.append(at)
        self.bytes += len(data)

    def build(self) -> Any:
        n = len(self.offsets)
        return pa.RecordBatch.from_arrays(
            [
                *_where(self.r, n),
                pa.array(self.offsets, pa.int64()),
                pa.array(self.sizes, pa.int64()),
                pa.array(self.lengths, pa.int64()),
                pa.array(self.kinds, pa.string()),
                pa.array(self.data, pa.binary()),
                pa.array(self.errors, pa.string()),
                pa.array(self.fields, pa.string()),
                pa.array(self.error_offsets, pa.int32()),
            ],
            schema=REJECTS_SCHEMA,
        )


def _head(layout: Any, data: bytes, error: type[Exception]) -> Any:
    """The `layout` a message's first octets start with, None when they hold no whole one
    (a writer may cut a message anywhere; the row keeps the octets either way)."""
    try:
        return layout.decode(data)[0]
    except error:
        return None


def _cut_fragment(
    msg: Any, octets: int, gap: int, length: int, r: Range, most: int
) -> tuple[int, str, str, int]:
    """(size, error, field, error offset) of a gap that starts where `msg`'s frame says
    `octets` follow it: cut by the end of the file, or more than a frame may hold."""
    field = f"{type(msg).__name__}.{getattr(msg, 'FOLLOWS', 'following')}"
    if octets > most:
        error = f"{field} says {octets} octets follow the frame, over {most}"
    else:
        error = f"cut mid-fragment: {field} says {octets} octets follow, {r.file_size - gap} do"
    if gap + length < r.file_size:
        error += f"; {length} bytes skipped, resynchronised at offset {gap + length}"
    return octets, error, field, 0


class RangeChanged(RuntimeError):
    """A task's bytes no longer frame where the driver's walk found frames: the file changed."""


def decode_range(r: Range, codec: Codec) -> Iterator[tuple[Table, Any]]:
    """("frames", batch in FRAMES_SCHEMA) and ("rejects", batch in REJECTS_SCHEMA) for one
    range: its frame rows and rejected frames add up to the frames the walk found in it, and
    with one unframed reject per gap they cover every byte of the range but a preamble.

    The range's bytes are read between its gaps, a stretch at a time; of a gap only the part a
    reject keeps is read. Between gaps every frame frames (the driver checked), so a size prefix
    that runs past the next gap means the file changed since the walk: RangeChanged.

    The cyclic garbage collector is paused while the range is read, and while its batches are
    written between yields (`collector`).
    """
    with collector.paused():
        yield from _decode_range(r, codec)


def _decode_range(r: Range, codec: Codec) -> Iterator[tuple[Table, Any]]:
    framing = codec.framing
    decode: Callable[..., Any] = codec.framing.decode  # with the codec's checksum choice
    decode_error: type[Exception] = codec.package.DecodeError
    sender = DIRECTIONS[r.direction]
    # the rules each frame breaks, as its sender sent it: a second look, after decoding
    cell_of = _Cells(codec.rules, sender) if codec.rules else None
    hsize = framing.header_size
    li = framing.length_index
    lo, hi = framing.min_size, framing.max_size
    protocol_header_at = framing.protocol_header_at if framing.protocol_headers else None
    unpack_header = framing.header.unpack_from
    fields_at = framing.fields_at
    # without an escape a header is one unpack and its frame's length one addition
    plain = framing.escape is None
    adjust = framing.length_adjust
    following = framing.following  # None: no message says octets follow its frame
    fragment_of: Callable[..., Any] | None = getattr(codec.package, "Fragment", None)
    continued = framing.continued
    # what a message's first octets start with, decoded into the fragment row when they hold it
    head_of = getattr(codec.package, "FRAGMENT_HEAD", None)
    cut: tuple[Any, int] | None = None  # (message, octets) of a fragment the next gap starts at
    going_on = False  # the last message octets followed goes on after the next (the walk
    # starts no range there, and both start afresh after a gap)
    rejects = _Rejects(r)
    batch = _Frames(r)
    # the batch's lists' appends, bound once per batch: six per frame in the loop below
    add_msg, add_cell, add_offset, add_size, add_header, add_wall = batch.appends()
    # a segment layer's frames join into messages; a row carries the message its frame completes
    messages = framing.assemblies() if framing.assemblies is not None else None
    # timestamps: the read that delivered each frame's last byte, found by a moving pointer
    starts, ends, walls = r.read_starts, r.read_ends, r.read_walls
    i, reads = 0, len(ends)
    with open(r.path, "rb") as f:
        fd = f.fileno()
        pos = r.start
        preamble = framing.preamble_of(sender)
        if r.start == 0 and preamble and r.file_size >= len(preamble):
            pos = framing.first(r.file_size, os.pread(fd, len(preamble), 0), sender)
        for gap, gap_length in [*zip(r.gap_starts, r.gap_lengths, strict=True), (r.end, 0)]:
            if gap > pos:
                data = os.pread(fd, gap - pos, pos)
                view = memoryview(data)
                n, here = len(data), 0
                while here < n:
                    at = pos + here
                    header: tuple[int, ...] | None = None
                    own = protocol_header_at(view, here) if protocol_header_at else 0
                    if own and not (
                        n - here >= hsize and lo <= unpack_header(view, here)[li] <= hi
                    ):
                        length = own  # a protocol header: a message with no frame header
                    elif plain and n - here >= hsize:
                        header = unpack_header(view, here)
                        length = header[li] + adjust
                    else:
                        got = fields_at(view, here)
                        if got is None:
                            raise RangeChanged(f"{r.path} @{at}: the walk found a frame here")
                        header = got[0]
                        length = header[li] + got[1]
                    if length > n - here:
                        raise RangeChanged(
                            f"{r.path} @{at}: a {length}-byte frame runs past {gap}, where the walk "
                            "found the next frame or gap"
                        )
                    frame = view[here : here + length]
                    try:
                        msg = decode(frame, sender)
                        if messages is not None:
                            msg = messages.add(msg) or msg
                    except decode_error as e:
                        if messages is not None:
                            messages.reset()  # what was open cannot be finished now
                        rejects.add(
                            at,
                            length,
                            length,
                            "frame",
                            bytes(frame),
                            str(e),
                            getattr(e, "field", ""),
                            getattr(e, "offset", 0),
                        )
                    else:
                        add_msg(msg)
                        add_cell(cell_of(msg) if cell_of else None)
                        add_offset(at)
                        add_size(length)
                        add_header(header)
                        last = at + length - 1
                        while i < reads and ends[i] <= last:
                            i += 1
                        add_wall(walls[i] if i < reads and starts[i] <= last else None)
                        batch.bytes += length
                        octets = following(msg) if following is not None else 0
                        if octets > 0 and fragment_of is not None:
                            # the octets after the frame, outside any framing: a row of their
                            # own, unless the walk found them cut (the gap that starts there)
                            start = here + length
                            if start + octets <= n and octets <= hi:
                                data = bytes(view[start : start + octets])
                                first = not going_on
                                going_on = bool(continued(msg)) if continued else False
                                fragment = fragment_of(data, msg, first)
                                if first and head_of is not None:
                                    fragment.head = _head(head_of, data, decode_error)
                                add_msg(fragment)
                                add_cell(cell_of(fragment) if cell_of else None)
                                add_offset(pos + start)
                                add_size(octets)
                                add_header(None)
                                last = pos + start + octets - 1
                                while i < reads and ends[i] <= last:
                                    i += 1
                                add_wall(walls[i] if i < reads and starts[i] <= last else None)
                                batch.bytes += octets
                                length += octets
                            elif start == n and gap < r.end:
                                cut = (msg, octets)
                            else:
                                raise RangeChanged(
                                    f"{r.path} @{pos + start}: {octets} octets follow the frame "
                                    f"at {at}, and run past {gap}, where the walk found the "
                                    "next frame or gap"
                                )
                        if len(batch.msgs) >= BATCH_FRAMES or batch.bytes >= BATCH_BYTES:
                            yield "frames", batch.build(codec)
                            batch = _Frames(r)
                            add_msg, add_cell, add_offset, add_size, add_header, add_wall = (
                                batch.appends()
                            )
                    finally:
                        frame.release()
                    here += length
                view.release()
            if gap_length:
                if messages is not None:
                    messages.reset()  # no message continues over bytes that do not frame
                kept = min(gap_length, UNFRAMED_KEEP)
                # a header's worth past a short gap too: why it does not frame is read from it
                head = os.pread(fd, max(kept, framing.reach), gap)
                size: int | None
                if cut is not None:  # the walk ended the frames where a fragment starts
                    size, error, field, at = _cut_fragment(cut[0], cut[1], gap, gap_length, r, hi)
                else:
                    size, error, field, at = describe(
                        head, gap, gap_length, r.file_size, framing, sender
                    )
                rejects.add(gap, size, gap_length, "unframed", head[:kept], error, field, at)
                going_on = False
            cut = None
            if rejects.bytes >= BATCH_BYTES:
                yield "rejects", rejects.build()
                rejects = _Rejects(r)
            pos = gap + gap_length
    if batch.msgs:
        yield "frames", batch.build(codec)
    if rejects.offsets:
        yield "rejects", rejects.build()
