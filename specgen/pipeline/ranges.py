"""Frame-aligned byte ranges, and the one place that resynchronises after bytes that do not frame.

The driver walks every byte file once, reading whole frame headers (size, key, version) from a
1 MiB window while frames are small. A header *frames* when its size prefix is within the
protocol's min..max, the frame fits in the file and (key, version) is a pair the codec decodes
(`FRAME_KEYS`); each header that frames is one frame found, which decoding turns into one frame
row or one rejected frame (kind "frame"). That count and the file's size are what the decode job
reconciles its output against.

When a header does not frame (a size past the maximum or past the end of the file, an unknown
key, a frame cut by the end of the file, a prefix too short to read), the walk looks for the
earliest later offset where RUN consecutive frames frame *and* decode, or where a shorter run
ends the file, and the bytes skipped are one *gap*: one reject of kind "unframed" with its exact
offset and length. Cheap checks come first (a vectorised header check over 1 MiB windows), and
only a chain of RUN headers that frame is read whole and decoded. Two candidates go before the
scan: a frame of plausible size but unknown key is first tried as exactly one frame (its own
end), so a command the codec does not know costs one reject, not a byte scan; and when the
frame just before the bad header frames but does not decode, the scan starts inside it, since
its size prefix is then the likelier culprit (a corrupted size lands the walk mid-frame, and
without this the good frames it jumped over would be lost). If no run is found, everything to
the end of the file is the gap.

This is what Wireshark's TCP dissectors do on a lost segment, made stricter: `tcp_dissect_pdus`
gives up on the rest of a segment whose length field is impossible and picks up at a later
segment, and a dissector such as iSCSI's accepts a header there only if it passes a "bogosity
filter" (a known opcode, a data length under a threshold, an all-zero tag taken to mean "inside
a zero-filled data block"). One plausible header is weak evidence inside payloads, so here the
evidence is RUN headers chained exactly, every frame decoding.

The walk cuts the file at the first frame start or gap end past every `target` bytes, so a gap
never crosses a range boundary and no task holds a whole capture. The gaps are recorded in each
`Range`; a task (`columns.decode_range`) never resynchronises by itself, it follows them, so the
driver and the tasks cannot disagree about where frames are.
"""

from __future__ import annotations

import functools
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from types import ModuleType
from typing import Any

from specgen.pipeline.inputs import DIRECTIONS, DecodeInputError, Reads, Stream

TARGET = 32 * 1024 * 1024
"""Bytes per range: big enough that a task's start-up cost is noise, small enough for memory."""

WINDOW = 1024 * 1024
"""Bytes the walk reads at once while frames are small."""

SCAN = 1024 * 1024
"""Bytes of a gap checked at once, vectorised, for offsets whose header frames."""

RUN = 4
"""Frames in a row, each framing and decoding and each starting exactly where the one before
ends, that say the walk is back in step after a gap.

For random bytes one header is already strong evidence: a size within 4..64 MiB passes 1 in 64
offsets and one of RabbitMQ Streams' 54 (key, version) pairs 54 in 2^32, so about 2e-10 per
offset, or one false candidate per 5 GiB of noise, which must then also decode. But the bytes a
gap skips are seldom noise: they are the rest of a frame whose body is application data, and
payloads do hold frame-shaped bytes (a message body that is itself an encoded frame, a batch of
them, a recording of this protocol stored in a stream). Such embedded frames frame and decode
perfectly, so a run of one or two is easily fooled. A false start needs RUN embedded frames
back to back, chained exactly, each decoding, and then continuing as frames; when the embedded
frames end, the next "header" is body bytes again, the 2e-10 case. Four makes that need a
payload that is a stream of at least four consecutive frames. The price of a longer run is its
shadow: good frames fewer than RUN between two damaged spots are skipped with them, and every
candidate costs up to RUN decodes; four keeps the shadow at three frames."""

UNFRAMED_KEEP = 1024 * 1024
"""Bytes an unframed reject keeps of its gap (its `length` is always exact): a gap can be the
whole of a file that holds no frames at all, and a task reads only this prefix of it."""


_ORDER = "<>!=@"
_UNSIGNED = {1: "B", 2: "H", 4: "I", 8: "Q"}
_NUMPY_KIND = {"b": "i1", "h": "i2", "i": "i4", "l": "i4", "q": "i8"}


@dataclass(frozen=True)
class Framing:
    """How frames follow each other in one direction's bytes, and what decodes them."""

    size_prefix: struct.Struct  # counts the bytes after itself
    header: struct.Struct  # the whole frame header, the length first
    max_size: int  # the largest size prefix a frame can have
    keys: frozenset[tuple[int, ...]]  # dispatch values `decode` knows (FRAME_KEYS)
    decode: Callable[..., Any]  # the codec's decode(frame, sender)
    decode_error: type[Exception]
    preamble: int = 0
    names: tuple[str, ...] = ()  # the header's fields
    dispatch: tuple[int, ...] = ()  # indexes of the header fields FRAME_KEYS holds, in order

    @property
    def width(self) -> int:
        return self.size_prefix.size

    @property
    def header_size(self) -> int:
        return self.header.size

    @property
    def min_size(self) -> int:
        """The smallest size prefix: a frame holds at least the rest of its header."""
        return self.header.size - self.size_prefix.size

    @cached_property
    def fast(self) -> struct.Struct:
        """The header as (size, key and version as one unsigned integer): one unpack and one set
        lookup per frame in the walk's hot loop."""
        order = self.header.format[0] if self.header.format[0] in _ORDER else "@"
        size_char = self.size_prefix.format.lstrip(_ORDER)
        rest = self.header.size - self.size_prefix.size
        if rest not in _UNSIGNED:
            raise ValueError(f"a {rest}-byte key and version cannot be read as one integer")
        return struct.Struct(order + size_char + _UNSIGNED[rest])

    @cached_property
    def packed_keys(self) -> frozenset[int]:
        """FRAME_KEYS as `fast` reads them."""
        out = set()
        for key in self.keys:
            values = [0] * len(self.names)
            values[0] = self.min_size
            for i, v in zip(self.dispatch, key, strict=True):
                values[i] = v
            try:
                out.add(self.fast.unpack(self.header.pack(*values))[1])
            except struct.error:
                continue  # a pair the header cannot hold is never on the wire
        return frozenset(out)

    def key(self, fields: tuple[int, ...]) -> tuple[int, ...]:
        """The dispatch values of an unpacked header."""
        return tuple(fields[i] for i in self.dispatch)

    def describe_key(self, fields: tuple[int, ...]) -> str:
        """`key 0x0001 version 1`: the dispatch values as the header names them."""
        words = []
        for i in self.dispatch:
            code = self.header.format.lstrip(_ORDER)[i]
            width = struct.calcsize(code)
            first = i == self.dispatch[0]
            words.append(
                f"{self.names[i]} {fields[i]:#0{2 + 2 * width}x}"
                if first
                else f"{self.names[i]} {fields[i]}"
            )
        return " ".join(words)

    @classmethod
    def of(cls, codec: ModuleType, framing: ModuleType, verify_checksums: bool = True) -> Framing:
        """The framing of a generated codec package, from its protocol's generated `framing`
        module; its `decode` verifies checksums unless `verify_checksums` is False.

        The walk reads frames whose length field comes first and counts the bytes after itself,
        with no trailer and no preamble: DecodeInputError names what else a framing has."""
        unsupported = []
        if framing.LENGTH_OFFSET != 0 or framing.LENGTH_ADJUST != framing.LENGTH.size:
            unsupported.append("a length field that is not first or counts only the body")
        if framing.TRAILER_SIZE:
            unsupported.append(f"a {framing.TRAILER_SIZE}-byte trailer")
        if any(framing.PREAMBLES.values()):
            unsupported.append("a protocol header before the first frame")
        if unsupported:
            raise DecodeInputError(
                f"{codec.PROTOCOL}: `specgen decode` cannot walk frames with "
                + " and ".join(unsupported)
                + " yet"
            )
        header = codec.commands.HEADER  # the version's own: signedness may differ
        order = header.format[0] if header.format[0] in _ORDER else ">"
        return cls(
            struct.Struct(order + header.format.lstrip(_ORDER)[0]),
            header,
            framing.DEFAULT_MAX_FRAME_SIZE,
            frozenset(codec.FRAME_KEYS),
            codec.decode
            if verify_checksums
            else functools.partial(codec.decode, verify_checksums=False),
            codec.DecodeError,
            0,
            framing.HEADER_FIELDS,
            framing.DISPATCH_INDEXES,
        )

    def first(self, file_size: int) -> int:
        """Where the first frame of a file of `file_size` bytes starts: after its preamble, or at
        0 when the file is too short to hold one (the file is then one gap)."""
        return self.preamble if file_size >= self.preamble else 0


@dataclass(frozen=True)
class Cut:
    """What the walk found in one range: bytes [start, end), its frames and its gaps."""

    start: int
    end: int
    frames: int  # headers that frame in [start, end)
    gap_starts: list[int]
    gap_lengths: list[int]


@dataclass(frozen=True)
class Range:
    """One task's work: bytes [start, end) of one direction's file, starting on a frame or a gap.

    Frames follow each other from `start` to `end` except over the gaps, bytes the driver found
    unframeable (sorted, inside [start, end)); the task decodes the frames and writes each gap as
    one unframed reject without looking for frames in it.
    """

    path: str
    start: int
    end: int
    file_size: int
    capture: str
    connection: str
    direction: str
    frames: int  # headers that frame in [start, end): frames plus rejected frames
    gap_starts: list[int]
    gap_lengths: list[int]
    read_starts: list[int]
    read_ends: list[int]
    read_walls: list[float | None]

    @staticmethod
    def ddl() -> str:
        """The Spark DDL of a DataFrame of ranges."""
        return (
            "`path` STRING, `start` BIGINT, `end` BIGINT, `file_size` BIGINT, `capture` STRING, "
            "`connection` STRING, `direction` STRING, `frames` BIGINT, "
            "`gap_starts` ARRAY<BIGINT>, `gap_lengths` ARRAY<BIGINT>, "
            "`read_starts` ARRAY<BIGINT>, `read_ends` ARRAY<BIGINT>, `read_walls` ARRAY<DOUBLE>"
        )


def split(stream: Stream, framing: Framing, target: int = TARGET) -> list[Cut]:
    """Consecutive ranges covering the file, with the frames and gaps the walk found in each.

    An empty file has no range. Every range but the last ends on a frame start or a gap start at
    least `target` bytes past its own start; the last one ends at the end of the file.
    """
    if stream.size == 0:
        return []
    try:
        fd = os.open(stream.path, os.O_RDONLY)
    except OSError as e:
        raise DecodeInputError(f"{stream.path}: {e.strerror}") from None
    try:
        return _Walk(fd, stream.size, framing, DIRECTIONS[stream.direction]).cuts(target)
    except OSError as e:
        raise DecodeInputError(f"{stream.path}: {e.strerror}") from None
    finally:
        os.close(fd)


class _Walk:
    """One file's walk: the hot loop over frames that frame, and the resynchronisation."""

    def __init__(self, fd: int, size: int, framing: Framing, sender: str) -> None:
        self.fd = fd
        self.size = size
        self.framing = framing
        self.sender = sender

    def cuts(self, target: int) -> list[Cut]:
        size, fd, f = self.size, self.fd, self.framing
        width, header = f.width, f.header_size
        lo, hi = f.min_size, f.max_size
        keys = f.packed_keys
        unpack = f.fast.unpack_from
        out: list[Cut] = []
        start = frames = 0
        gap_starts: list[int] = []
        gap_lengths: list[int] = []
        pos = f.first(size)
        if pos == 0 and f.preamble:  # too short for its preamble
            gap_starts, gap_lengths, pos = [0], [size], size
        window, at, window_end = b"", 0, 0
        length = 0  # of the frame just walked over; 0 after a gap
        while pos < size:
            if pos + header > window_end and size - pos >= header:
                # a 1 MiB window while frames are small; past a big frame, just its header
                window = os.pread(fd, WINDOW if length < WINDOW else header, pos)
                at, window_end = pos, pos + len(window)
            if pos + header <= window_end:
                value, kv = unpack(window, pos - at)
                end = pos + width + value
                if lo <= value <= hi and kv in keys and end <= size:
                    if pos - start >= target:
                        out.append(Cut(start, pos, frames, gap_starts, gap_lengths))
                        start, frames, gap_starts, gap_lengths = pos, 0, [], []
                    frames += 1
                    length = end - pos
                    pos = end
                    continue
            gap, resume, pulled_back = self._gap(pos, pos - length if length else -1)
            if pulled_back:
                frames -= 1  # the frame before was not one: it is the gap's start
            if gap - start >= target and gap > start:
                out.append(Cut(start, gap, frames, gap_starts, gap_lengths))
                start, frames, gap_starts, gap_lengths = gap, 0, [], []
            gap_starts.append(gap)
            gap_lengths.append(resume - gap)
            pos, length = resume, 0
            window, at, window_end = b"", 0, 0  # the walk may resume before the window
        out.append(Cut(start, size, frames, gap_starts, gap_lengths))
        return out

    def _gap(self, pos: int, previous: int) -> tuple[int, int, bool]:
        """(gap start, where the walk resumes, whether the gap starts at `previous`) for a header
        at `pos` that does not frame; `previous` is the start of the frame just walked over
        (-1 after a gap or at the start)."""
        f = self.framing
        head = os.pread(self.fd, f.header_size, pos)
        if len(head) == f.header_size:
            value, _ = f.fast.unpack(head)
            own_end = pos + f.width + value
            if f.min_size <= value <= f.max_size and own_end <= self.size:
                # it fits, so the key is what is wrong: try it as exactly one unknown frame
                if own_end == self.size or self._run(own_end):
                    return pos, own_end, False
        first = pos + 1
        if previous >= 0 and not self._decodes(previous, pos - previous):
            first = previous + 1  # the frame before may have led the walk astray
        resume = self._scan(first)
        if resume < pos:
            return previous, resume, True
        return pos, resume, False

    def _scan(self, first: int) -> int:
        """The earliest offset >= `first` where a run starts, or the end of the file."""
        header = self.framing.header_size
        last = self.size - header  # the last offset a whole header fits at
        base = first
        while base <= last:
            window = os.pread(self.fd, min(SCAN, last - base + 1) + header - 1, base)
            for candidate in self._plausible(window, base):
                if self._run(candidate):
                    return candidate
            base += SCAN
        return self.size

    def _plausible(self, window: bytes, base: int) -> list[int]:
        """The offsets in `window` (starting at file offset `base`) whose header has a size in
        range and a known (key, version): checked for every offset at once with numpy."""
        import numpy as np

        f = self.framing
        count = len(window) - f.header_size + 1
        if count <= 0:
            return []
        order = ">" if f.fast.format[0] in ">!" else "<" if f.fast.format[0] == "<" else "="
        size_char = f.fast.format[1]
        size_kind = _NUMPY_KIND.get(size_char.lower(), "i4")
        if size_char.isupper():
            size_kind = "u" + size_kind[1:]
        rest = f.header_size - f.width
        # unaligned views with a 1-byte stride: the header's fields read at every offset
        sizes = np.ndarray((count,), np.dtype(order + size_kind), window, 0, (1,))
        found = np.flatnonzero((sizes >= f.min_size) & (sizes <= f.max_size))
        if found.size:
            kv = np.ndarray((count,), np.dtype(f"{order}u{rest}"), window, f.width, (1,))
            known = np.fromiter(f.packed_keys, np.dtype(f"u{rest}"), len(f.packed_keys))
            found = found[np.isin(kv[found], known)]
        return [base + int(i) for i in found]

    def _run(self, start: int) -> bool:
        """Whether RUN frames starting at `start` frame, chain exactly and decode; fewer do when
        the end of the file comes first (it ends them, or cuts the next one)."""
        f = self.framing
        lo, hi, keys, unpack = f.min_size, f.max_size, f.packed_keys, f.fast.unpack
        spans: list[tuple[int, int]] = []
        pos = start
        while len(spans) < RUN and pos < self.size:
            head = os.pread(self.fd, f.header_size, pos)
            if len(head) < f.header_size:
                break  # the end of the file cuts this header: no more evidence to get
            value, kv = unpack(head)
            if not (lo <= value <= hi and kv in keys):
                return False
            end = pos + f.width + value
            if end > self.size:
                break  # the end of the file cuts this frame
            spans.append((pos, end - pos))
            pos = end
        return bool(spans) and all(self._decodes(at, length) for at, length in spans)

    def _decodes(self, at: int, length: int) -> bool:
        frame = os.pread(self.fd, length, at)
        if len(frame) != length:
            return False
        try:
            self.framing.decode(frame, self.sender)
        except self.framing.decode_error:
            return False
        return True


def describe(
    head: bytes, offset: int, length: int, file_size: int, framing: Framing
) -> tuple[int | None, str, str, int]:
    """(size the prefix claims, error, field, error offset) of the gap of `length` bytes at
    `offset`; `head` holds the file's bytes from `offset`, a whole header where the file has one.

    Why the bytes there do not frame is read from the bytes themselves, so the task that writes
    the reject needs nothing from the driver but the gap.
    """
    f = framing
    width, available = f.width, min(len(head), f.header_size)
    if offset < f.preamble:
        reason: tuple[int | None, str, str, int] = (
            None,
            f"cut in the {f.preamble}-byte protocol header",
            "preamble",
            length,
        )
    elif available < width:
        reason = (
            None,
            f"cut mid-frame: {available} bytes, too few for the {width}-byte size prefix",
            "frame.size",
            available,
        )
    else:
        (value,) = f.size_prefix.unpack_from(head)
        claimed = value + width
        if not f.min_size <= value <= f.max_size:
            error = f"size prefix {value} is outside {f.min_size}..{f.max_size}"
            reason = (claimed, error, "frame.size", 0)
        elif available < f.header_size or offset + claimed > file_size:
            error = f"cut mid-frame: size says {value}, {file_size - offset - width} bytes follow"
            reason = (claimed, error, "frame", min(file_size - offset, 2**31 - 1))
        else:
            fields = f.header.unpack_from(head)
            if f.key(fields) not in f.keys:
                error = f"no layout for {f.describe_key(fields)}"
                reason = (claimed, error, "frame.key", width)
            else:
                error = (
                    f"size prefix {value} leads to offset {offset + claimed}, where no frame "
                    "starts, and the frame does not decode"
                )
                reason = (claimed, error, "frame.size", 0)
    size, error, field, at = reason
    if offset + length < file_size:
        error += f"; {length} bytes skipped, resynchronised at offset {offset + length}"
    elif not error.startswith("cut "):  # a cut says itself why nothing follows
        error += f"; nothing frames and decodes in the {length} bytes to the end of the file"
    if length > UNFRAMED_KEEP:
        error += f" (the first {UNFRAMED_KEEP} are kept)"
    return size, error, field, at


def plan(
    streams: list[Stream],
    framing: Framing,
    indexes: dict[tuple[str, str], dict[str, Reads]],
    target: int = TARGET,
) -> list[Range]:
    """Every stream's ranges, each with its gaps and the index reads that delivered its bytes."""
    out: list[Range] = []
    for s in streams:
        reads = indexes.get((s.capture, s.connection), {}).get(s.direction, Reads())
        for cut in split(s, framing, target):
            mine = reads.within(cut.start, cut.end)
            out.append(
                Range(
                    str(s.path.resolve()),
                    cut.start,
                    cut.end,
                    s.size,
                    s.capture,
                    s.connection,
                    s.direction,
                    cut.frames,
                    cut.gap_starts,
                    cut.gap_lengths,
                    mine.starts,
                    mine.ends,
                    mine.walls,
                )
            )
    return out
