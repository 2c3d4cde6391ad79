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

Two framing facts widen this, both read from the generated code, never from a protocol's
name. A length field may hold an escape (`LENGTH_ESCAPE`, AMQ RFC 006's 0xFFFF) saying a wider
length follows it (`WIDE_HEADER`): such a header frames as the wide one, in the walk, the scan
and the runs alike. And some messages say how many raw octets follow their frame outside any
framing (the codec's `following`, the classes with a FOLLOWS field: RFC 006's message
fragments after HANDLE SEND, NOTIFY and PREPARE): the walk decodes those frames (only those),
counts the octets as one more item found (a `fragment` row) and steps over frame and fragment
as one, so no range starts between them and no header is looked for inside a fragment; nor
does a range start while a message's octets go on after the next such frame (the codec's
`continued`: RFC 006's `partial`), so each task knows which fragments start a message (their
rows carry its head) from its own start; walk and tasks both start afresh after a gap. A
fragment cut by the end of the file is one gap from its first octet; one that claims more than
a frame may hold is a gap from there as a bad header is. A frame that says octets follow but
does not decode cannot say how many: the bytes after it are walked as frames, and fail as such.

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
offsets and, for a protocol that knows 54 (key, version) pairs, 54 in 2^32, so about 2e-10 per
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


def _codes(s: struct.Struct) -> str:
    return s.format.lstrip(_ORDER)


def _np_dtype(order: str, code: str) -> str:
    kind = _NUMPY_KIND.get(code.lower(), "i4")
    if code.isupper():
        kind = "u" + kind[1:]
    return ("<" if order == "<" else ">" if order in ">!" else "=") + kind


@dataclass(frozen=True)
class Framing:
    """How frames follow each other in one direction's bytes, and what decodes them."""

    size_prefix: struct.Struct  # the length field
    header: struct.Struct  # the whole frame header
    max_size: int  # the largest length field a frame can have
    keys: frozenset[tuple[int, ...]]  # dispatch values `decode` knows (FRAME_KEYS)
    decode: Callable[..., Any]  # the codec's decode(frame, sender)
    decode_error: type[Exception]
    preamble: int = 0  # kept for callers without a sender: always 0 (see `first`)
    names: tuple[str, ...] = ()  # the header's fields
    dispatch: tuple[int, ...] = ()  # indexes of the header fields FRAME_KEYS holds, in order
    length_index: int = 0  # which header field is the length
    length_offset: int = 0  # where the length field starts in the header
    adjust: int = -1  # frame bytes = length field + adjust; -1: the length field's width
    min_length: int = -1  # the smallest length field; -1: the rest of the header
    trailer: bytes = b""  # bytes every frame ends with
    preambles: tuple[tuple[str, bytes], ...] = ()  # sender -> bytes its direction starts with
    # byte strings that may stand wherever a frame starts, each one message (AMQP 1.0's
    # protocol headers, sent first and again after SASL); none of them frames as a header
    protocol_headers: tuple[bytes, ...] = ()
    # a segment layer (`framing.SEGMENTED`): frames join into messages, so decoding feeds
    # each frame to a fresh `Assemblies` per range, and the walk cuts only where no message is
    # open: (the flags field's index, a message's first frame's flags, its last frame's)
    assemblies: Callable[[], Any] | None = None
    message_flags: tuple[int, int, int] | None = None
    # a length field value that is no length: the header then has the `wide` layout, the same
    # fields with a wider length after the escape (AMQ RFC 006's 0xFFFF, then 4 octets)
    escape: int | None = None
    wide: struct.Struct | None = None
    # dispatch values of the messages whose frame raw octets follow, outside any framing, and
    # how many follow a decoded one (the codec's `following`); the octets are one fragment
    follows: frozenset[tuple[int, ...]] = frozenset()
    following: Callable[[Any], int] | None = None
    # whether a message's octets go on after the next such frame (a range never starts there)
    continued: Callable[[Any], bool] | None = None

    @property
    def width(self) -> int:
        return self.size_prefix.size

    @property
    def header_size(self) -> int:
        return self.header.size

    @property
    def reach(self) -> int:
        """The most bytes a header can take: the wide one's when the length may be escaped."""
        return max(self.header.size, self.wide.size if self.wide is not None else 0)

    def fields_at(self, data: bytes | memoryview, at: int) -> tuple[tuple[int, ...], int] | None:
        """(the header's fields, frame bytes = length field + this) of the header at `at` in
        `data`, the wide form read when the length field holds the escape; None when `data`
        ends before the header does."""
        if len(data) - at < self.header.size:
            return None
        fields = self.header.unpack_from(data, at)
        if self.escape is None or fields[self.length_index] != self.escape:
            return fields, self.length_adjust
        assert self.wide is not None
        if len(data) - at < self.wide.size:
            return None
        # the escape and the wider length both count: the frame is that much longer
        return self.wide.unpack_from(
            data, at
        ), self.length_adjust + self.wide.size - self.header.size

    def is_escaped(self, fields: tuple[int, ...]) -> bool:
        """Whether unpacked `fields` are a wide header's (their length is past the escape)."""
        return self.escape is not None and fields[self.length_index] >= self.escape

    @cached_property
    def length_adjust(self) -> int:
        return self.width if self.adjust < 0 else self.adjust

    @property
    def min_size(self) -> int:
        """The smallest length field: a frame holds at least the rest of its header."""
        return self.header.size - self.size_prefix.size if self.min_length < 0 else self.min_length

    @cached_property
    def packed(self) -> bool:
        """Whether the walk can use `fast`: the length first, counting the bytes after itself,
        no trailer, no protocol headers among the frames, and the rest of the header one 1-, 2-,
        4- or 8-byte integer."""
        return (
            self.length_offset == 0
            and self.length_index == 0
            and self.length_adjust == self.width
            and not self.trailer
            and not self.protocol_headers
            and self.escape is None
            and not self.follows
            and self.header.size - self.width in _UNSIGNED
        )

    @cached_property
    def fixed(self) -> bool:
        """Whether the walk can use its `_fixed` loop: one header layout (no escaped length), no
        octets outside the frames after a frame, and no segment layer to follow."""
        return self.escape is None and not self.follows and self.message_flags is None

    @cached_property
    def order(self) -> str:
        return self.header.format[0] if self.header.format[0] in _ORDER else "@"

    @cached_property
    def fast(self) -> struct.Struct:
        """The header as (size, key and version as one unsigned integer): one unpack and one set
        lookup per frame in the walk's hot loop."""
        size_char = _codes(self.size_prefix)
        rest = self.header.size - self.size_prefix.size
        if rest not in _UNSIGNED:
            raise ValueError(f"a {rest}-byte key and version cannot be read as one integer")
        return struct.Struct(self.order + size_char + _UNSIGNED[rest])

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

    @cached_property
    def field_offsets(self) -> tuple[int, ...]:
        """Where each header field starts in the header."""
        codes = _codes(self.header)
        order = self.order if self.order != "@" else "="
        return tuple(struct.calcsize(order + codes[:i]) for i in range(len(codes)))

    def protocol_header_at(self, data: bytes | memoryview, at: int) -> int:
        """The length of the protocol header that `data` holds at `at`, 0 when it holds none."""
        for h in self.protocol_headers:
            if data[at : at + len(h)] == h:
                return len(h)
        return 0

    def preamble_of(self, sender: str | None) -> bytes:
        """The bytes `sender`'s direction starts with before its first frame."""
        preambles = dict(self.preambles)
        # "both": each peer starts with the same bytes (AMQP 0-10's protocol header)
        return preambles.get(sender or "", preambles.get("both", b""))

    def key(self, fields: tuple[int, ...]) -> tuple[int, ...]:
        """The dispatch values of an unpacked header."""
        return tuple(fields[i] for i in self.dispatch)

    def describe_key(self, fields: tuple[int, ...]) -> str:
        """`key 0x0001 version 1`: the dispatch values as the header names them."""
        words = []
        for i in self.dispatch:
            code = _codes(self.header)[i]
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
        module; its `decode` verifies checksums unless `verify_checksums` is False."""
        escape = getattr(framing, "LENGTH_ESCAPE", None)
        following = getattr(codec, "following", None)
        # the messages that say octets follow them: their class names the count (FOLLOWS)
        follows = frozenset(
            tuple(cls.IDENT)
            for cls in vars(codec).values()
            if isinstance(cls, type) and getattr(cls, "FOLLOWS", None) and hasattr(cls, "IDENT")
        )
        # the version's own header where it has one: signedness may differ
        commands = getattr(codec, "commands", None)
        header = getattr(commands, "HEADER", framing.HEADER)
        order = header.format[0] if header.format[0] in _ORDER else ">"
        length_code = _codes(header)[framing.LENGTH_INDEX]
        return cls(
            struct.Struct(order + length_code),
            header,
            framing.DEFAULT_MAX_FRAME_SIZE,
            frozenset(codec.FRAME_KEYS),
            codec.decode
            if verify_checksums
            else functools.partial(codec.decode, verify_checksums=False),
            codec.DecodeError,
            0,
            tuple(framing.HEADER_FIELDS),
            tuple(framing.DISPATCH_INDEXES),
            framing.LENGTH_INDEX,
            framing.LENGTH_OFFSET,
            framing.LENGTH_ADJUST,
            framing.MIN_LENGTH,
            bytes(framing.TRAILER),
            tuple(sorted((k, bytes(v)) for k, v in framing.PREAMBLES.items() if v)),
            tuple(bytes(h) for h in framing.PROTOCOL_HEADERS),
            *_segments(codec, framing),
            escape,
            framing.WIDE_HEADER if escape is not None else None,
            follows if following is not None else frozenset(),
            following if follows else None,
            getattr(codec, "continued", None) if follows else None,
        )

    def opens(self, fields: tuple[int, ...]) -> int:
        """How the frame whose header is `fields` changes the count of open messages: +1 when
        it starts one that goes on, -1 when it ends one it did not start, else 0."""
        if self.message_flags is None:
            return 0
        at, start, end = self.message_flags
        flags = fields[at]
        return ((flags & start) == start) - ((flags & end) == end)

    def first(self, file_size: int, head: bytes | None = None, sender: str | None = None) -> int:
        """Where the first frame of a file of `file_size` bytes starts: after the preamble of
        `sender`'s direction when the file (`head`: its first bytes) starts with it, else at 0
        (a file too short for its preamble is then one gap)."""
        preamble = self.preamble_of(sender)
        if preamble and head is not None and head[: len(preamble)] == preamble:
            return len(preamble)
        return 0

    def first_in(self, stream: Stream) -> int:
        """`first` of one direction's byte file, its preamble read from the file itself."""
        preamble = self.preamble_of(DIRECTIONS.get(stream.direction))
        if not preamble or stream.size < len(preamble):
            return 0
        try:
            with open(stream.path, "rb") as f:
                head = f.read(len(preamble))
        except OSError as e:
            raise DecodeInputError(f"{stream.path}: {e.strerror}") from None
        return self.first(stream.size, head, DIRECTIONS[stream.direction])

    def frame_end(self, fields: tuple[int, ...], pos: int, adjust: int | None = None) -> int:
        """Where the frame whose header `fields` is at `pos` ends, -1 when the header does not
        frame (a length out of range, unknown dispatch values); `adjust`: as `fields_at` gives
        it (default: the short header's)."""
        value = fields[self.length_index]
        if not self.min_size <= value <= self.max_size or self.key(fields) not in self.keys:
            return -1
        return pos + value + (self.length_adjust if adjust is None else adjust)

    def fragment(
        self, frame: bytes | memoryview, fields: tuple[int, ...], sender: str | None
    ) -> tuple[int, bool]:
        """(how many octets follow the frame `frame` (header `fields`) outside any framing,
        whether its message's octets go on after the next such frame): 0 for a message that
        none follow, -1 when it says some may but does not decode (nobody can tell how many)."""
        if self.following is None or self.key(fields) not in self.follows:
            return 0, False
        try:
            msg = self.decode(frame, sender)
        except self.decode_error:
            return -1, False
        more = bool(self.continued(msg)) if self.continued is not None else False
        return int(self.following(msg)), more


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


class _Cutter:
    """The ranges a walk builds: where the current one started and its gaps (the walk keeps
    the count of its frames, a local in its hot loop)."""

    def __init__(self, walk: _Walk, target: int) -> None:
        self.walk, self.target = walk, target
        self.out: list[Cut] = []
        self.start = 0
        self.pos, self.gap_starts, self.gap_lengths = walk._start()

    def at(self, pos: int, frames: int) -> int:
        """End the current range, of `frames` frames, at `pos`, a frame or gap start; the
        frames of the next one (none yet)."""
        self.out.append(Cut(self.start, pos, frames, self.gap_starts, self.gap_lengths))
        self.start, self.gap_starts, self.gap_lengths = pos, [], []
        return 0

    def gap(
        self, pos: int, length: int, frames: int, resume: int = -1, fragment: bool = False
    ) -> tuple[int, int]:
        """Record the gap of a header at `pos` that does not frame (`length`: of the frame just
        walked over, 0 after a gap or a fragment): (where the walk resumes, the current range's
        frames). `resume`: where the gap ends when the caller knows (a fragment cut by the end
        of the file), else the walk looks for it. `fragment`: the gap starts where the frame
        before says octets follow, so it stays in that frame's range (its task says why)."""
        if resume >= 0:
            gap, pulled_back = pos, False
        else:
            gap, resume, pulled_back = self.walk._gap(pos, pos - length if length else -1)
        if pulled_back:
            frames -= 1  # the frame before was not one: it is the gap's start
        if gap - self.start >= self.target and gap > self.start and not fragment:
            frames = self.at(gap, frames)
        self.gap_starts.append(gap)
        self.gap_lengths.append(resume - gap)
        return resume, frames

    def done(self, frames: int) -> list[Cut]:
        self.out.append(Cut(self.start, self.walk.size, frames, self.gap_starts, self.gap_lengths))
        return self.out


class _Walk:
    """One file's walk: the hot loop over frames that frame, and the resynchronisation."""

    def __init__(self, fd: int, size: int, framing: Framing, sender: str) -> None:
        self.fd = fd
        self.size = size
        self.framing = framing
        self.sender = sender

    def _start(self) -> tuple[int, list[int], list[int]]:
        """(where the walk starts, the gap before it): after the sender's preamble when the
        file starts with it, else 0; a file too short for its preamble is one gap."""
        preamble = self.framing.preamble_of(self.sender)
        if not preamble:
            return 0, [], []
        if self.size < len(preamble):
            return self.size, [0], [self.size]
        head = os.pread(self.fd, len(preamble), 0)
        return self.framing.first(self.size, head, self.sender), [], []

    def _trailer_ok(self, end: int, window: bytes = b"", at: int = 0) -> bool:
        trailer = self.framing.trailer
        if not trailer:
            return True
        n = len(trailer)
        if at <= end - n and end <= at + len(window):
            return window[end - n - at : end - at] == trailer
        return os.pread(self.fd, n, end - n) == trailer

    def cuts(self, target: int) -> list[Cut]:
        """The file's ranges, walked frame by frame: the packed loop when the framing allows it
        (one unpack and one set lookup per frame), else the generic one."""
        if self.framing.packed:
            return self._packed(target)
        if self.framing.fixed:
            return self._fixed(target)
        return self._generic(target)

    def _packed(self, target: int) -> list[Cut]:
        size, fd, f = self.size, self.fd, self.framing
        width, header = f.width, f.header_size
        lo, hi = f.min_size, f.max_size
        keys = f.packed_keys
        unpack = f.fast.unpack_from
        cut = _Cutter(self, target)
        pos, frames, limit = cut.pos, 0, target
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
                    if pos >= limit:
                        frames = cut.at(pos, frames)
                        limit = pos + target
                    frames += 1
                    length = end - pos
                    pos = end
                    continue
            pos, frames = cut.gap(pos, length, frames)
            length, limit = 0, cut.start + target
            window, at, window_end = b"", 0, 0  # the walk may resume before the window
        return cut.done(frames)

    def _fixed(self, target: int) -> list[Cut]:
        """`_generic` for a header of one layout whose frames are frames alone (no escaped
        length, no octets after a frame, no segment layer): the length check, the dispatch
        lookup and the trailer compare written out, without a call per frame; the same cuts."""
        size, fd, f = self.size, self.fd, self.framing
        header = f.header_size
        unpack = f.header.unpack_from
        li, adjust = f.length_index, f.length_adjust
        lo, hi = f.min_size, f.max_size
        # one dispatch field (most protocols): its value looked up alone, no tuple per frame
        one = f.dispatch[0] if len(f.dispatch) == 1 else -1
        keys: frozenset[Any] = frozenset(k[0] for k in f.keys) if one >= 0 else f.keys
        key = f.key
        trailer = f.trailer
        tn = len(trailer)
        headers = bool(f.protocol_headers)
        cut = _Cutter(self, target)
        pos, frames, limit = cut.pos, 0, target
        window, at, window_end = b"", 0, 0
        length = 0  # of the frame just walked over; 0 after a gap
        while pos < size:
            if pos + header > window_end and window_end < size:
                window = os.pread(fd, WINDOW if length < WINDOW else header, pos)
                at, window_end = pos, pos + len(window)
            if pos + header <= window_end:
                fields = unpack(window, pos - at)
                value = fields[li]
                end = pos + value + adjust
                if (
                    lo <= value <= hi
                    and (fields[one] if one >= 0 else key(fields)) in keys
                    and pos < end <= size
                    and (
                        not tn
                        or (
                            window[end - tn - at : end - at] == trailer
                            if at <= end - tn and end <= window_end
                            else os.pread(fd, tn, end - tn) == trailer
                        )
                    )
                ):
                    if pos >= limit:
                        frames = cut.at(pos, frames)
                        limit = pos + target
                    frames += 1
                    length = end - pos
                    pos = end
                    continue
            if headers:
                length = self._protocol_header(pos, window, at)
                if length:
                    if pos >= limit:
                        frames = cut.at(pos, frames)
                        limit = pos + target
                    frames += 1
                    pos += length
                    continue
            pos, frames = cut.gap(pos, length, frames)
            length, limit = 0, cut.start + target
            window, at, window_end = b"", 0, 0  # the walk may resume before the window
        return cut.done(frames)

    def _generic(self, target: int) -> list[Cut]:
        size, fd, f = self.size, self.fd, self.framing
        reach = f.reach
        fields_at, frame_end, trailer_ok = f.fields_at, f.frame_end, self._trailer_ok
        follows = f.follows
        cut = _Cutter(self, target)
        pos, frames, limit = cut.pos, 0, target
        window, at, window_end = b"", 0, 0
        length = 0  # of the frame just walked over; 0 after a gap or a fragment
        step = 0  # bytes walked over last: past a big one, read just a header
        # a message's octets go on after the next frame octets follow: no range starts here,
        # so a task knows which octets start a message (`Fragment.first`) from its own start
        going_on = False
        opens = f.opens if f.message_flags is not None else None
        open_messages = 0  # a segment layer's: a range starts only where none is open
        while pos < size:
            if pos + reach > window_end and window_end < size:
                window = os.pread(fd, WINDOW if step < WINDOW else reach, pos)
                at, window_end = pos, pos + len(window)
            got = fields_at(window, pos - at) if pos < window_end else None
            if got is not None:
                end = frame_end(got[0], pos, got[1])
                if pos < end <= size and trailer_ok(end, window, at):
                    if pos >= limit and not going_on and not open_messages:
                        frames = cut.at(pos, frames)
                        limit = pos + target
                    if opens is not None:
                        # a capture may start inside a message: an end it did not see start
                        open_messages = max(0, open_messages + opens(got[0]))
                    frames += 1
                    length = step = end - pos
                    if follows and f.key(got[0]) in follows:
                        # the frame and the octets it says follow it are walked over as one
                        # (a range never starts inside them): one more row, a fragment
                        fragment, more = self._fragment(pos, end, got[0], window, at)
                        if fragment > 0 and end + fragment <= size and fragment <= f.max_size:
                            frames += 1
                            step += fragment
                            pos, length, going_on = end + fragment, 0, more
                            continue
                        if fragment > 0:
                            # cut by the end of the file (one gap to it), or more than any
                            # frame may hold (a gap from its start, as for a bad header)
                            to = -1 if fragment > f.max_size else size
                            pos, frames = cut.gap(end, 0, frames, to, fragment=True)
                            length = step = 0
                            going_on = False
                            limit = cut.start + target
                            window, at, window_end = b"", 0, 0
                            continue
                    pos = end
                    continue
            if f.protocol_headers:
                length = self._protocol_header(pos, window, at)
                if length:
                    step = length
                    if pos >= limit:
                        frames = cut.at(pos, frames)
                        limit = pos + target
                    frames += 1
                    pos += length
                    continue
            pos, frames = cut.gap(pos, length, frames)
            length = step = 0
            going_on = False  # the tasks too start afresh after a gap
            open_messages = 0  # decoding starts messages afresh after a gap
            limit = cut.start + target
            window, at, window_end = b"", 0, 0  # the walk may resume before the window
        return cut.done(frames)

    def _fragment(
        self, pos: int, end: int, fields: tuple[int, ...], window: bytes, at: int
    ) -> tuple[int, bool]:
        """`Framing.fragment` of the frame [pos, end) (header `fields`)."""
        if at <= pos and end <= at + len(window):
            frame: bytes | memoryview = memoryview(window)[pos - at : end - at]
        else:
            frame = os.pread(self.fd, end - pos, pos)
        return self.framing.fragment(frame, fields, self.sender)

    def _protocol_header(self, pos: int, window: bytes = b"", at: int = 0) -> int:
        """The length of a protocol header at `pos`, 0 when none stands there."""
        longest = max(len(h) for h in self.framing.protocol_headers)
        if not at <= pos or pos + longest > at + len(window):
            window, at = os.pread(self.fd, longest, pos), pos
        return self.framing.protocol_header_at(window, pos - at)

    def _gap(self, pos: int, previous: int) -> tuple[int, int, bool]:
        """(gap start, where the walk resumes, whether the gap starts at `previous`) for a header
        at `pos` that does not frame; `previous` is the start of the frame just walked over
        (-1 after a gap or at the start)."""
        f = self.framing
        got = f.fields_at(os.pread(self.fd, f.reach, pos), 0)
        if got is not None:
            value = got[0][f.length_index]
            own_end = pos + got[1] + value
            if f.min_size <= value <= f.max_size and pos < own_end <= self.size:
                # it fits, so the key (or trailer) is what is wrong: try it as exactly one frame
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
            # a wide header's extra bytes too, for a candidate at the window's last offsets
            more = self.framing.reach - header
            window = os.pread(self.fd, min(SCAN, last - base + 1) + header - 1 + more, base)
            for candidate in sorted(self._plausible(window, base) + self._headers_in(window, base)):
                if self._run(candidate):
                    return candidate
            base += SCAN
        return self.size

    def _headers_in(self, window: bytes, base: int) -> list[int]:
        """The offsets in `window` (at file offset `base`) where a protocol header starts."""
        out = []
        for h in self.framing.protocol_headers:
            i = window.find(h)
            while i >= 0:
                out.append(base + i)
                i = window.find(h, i + 1)
        return out

    def _plausible(self, window: bytes, base: int) -> list[int]:
        """The offsets in `window` (starting at file offset `base`) whose header has a length in
        range, known dispatch values and the trailer where it ends: checked for every offset at
        once with numpy, the trailer for the candidates only."""
        import numpy as np

        f = self.framing
        count = len(window) - f.header_size + 1
        if count <= 0:
            return []
        order = f.order
        codes = _codes(f.header)
        offsets = f.field_offsets
        # unaligned views with a 1-byte stride: the header's fields read at every offset
        sizes = np.ndarray(
            (count,),
            np.dtype(_np_dtype(order, codes[f.length_index])),
            window,
            offsets[f.length_index],
            (1,),
        )
        found = np.flatnonzero((sizes >= f.min_size) & (sizes <= f.max_size))
        wide: list[int] = []
        if f.escape is not None:
            # an escaped length is no length: each such header is checked whole, wide
            escaped = sizes[found] == f.escape
            wide = [int(i) for i in found[escaped]]
            found = found[~escaped]
        if found.size and f.packed:
            rest = f.header_size - f.width
            o = "<" if order == "<" else ">" if order in ">!" else "="
            kv = np.ndarray((count,), np.dtype(f"{o}u{rest}"), window, f.width, (1,))
            known = np.fromiter(f.packed_keys, np.dtype(f"u{rest}"), len(f.packed_keys))
            return [base + int(i) for i in found[np.isin(kv[found], known)]]
        for n, i in enumerate(f.dispatch):
            if not found.size:
                break
            dtype = np.dtype(_np_dtype(order, codes[i]))
            field = np.ndarray((count,), dtype, window, offsets[i], (1,))
            values = np.array(sorted({k[n] for k in f.keys}), dtype=np.int64)
            found = found[np.isin(field[found].astype(np.int64), values)]
        out = []
        for i in found.tolist():
            end = base + i + int(sizes[i]) + f.length_adjust
            if end <= self.size and self._trailer_ok(end, window, base):
                out.append(base + i)
        for i in wide:
            got = f.fields_at(window, i)
            end = -1 if got is None else f.frame_end(got[0], base + i, got[1])
            if base + i < end <= self.size and self._trailer_ok(end, window, base):
                out.append(base + i)
        return sorted(out)

    def _run(self, start: int) -> bool:
        """Whether RUN frames starting at `start` frame, chain exactly and decode; fewer do when
        the end of the file comes first (it ends them, or cuts the next one)."""
        f = self.framing
        spans: list[tuple[int, int]] = []
        pos = start
        while len(spans) < RUN and pos < self.size:
            head = os.pread(self.fd, f.reach, pos)
            own = f.protocol_header_at(head, 0) if f.protocol_headers else 0
            if own:
                spans.append((pos, own))
                pos += own
                continue
            got = f.fields_at(head, 0)
            if got is None:
                break  # the end of the file cuts this header: no more evidence to get
            end = f.frame_end(got[0], pos, got[1])
            if end <= pos:
                return False
            if end > self.size:
                break  # the end of the file cuts this frame
            if not self._trailer_ok(end):
                return False
            spans.append((pos, end - pos))
            pos = end
            if f.follows and f.key(got[0]) in f.follows:
                # the octets it says follow are no frames: the run goes on after them
                start = spans[-1][0]
                fragment, _ = f.fragment(os.pread(self.fd, end - start, start), got[0], self.sender)
                if fragment < 0 or fragment > f.max_size:
                    return False
                pos += fragment
                if pos > self.size:
                    break  # the end of the file cuts the fragment
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


def _segments(
    codec: ModuleType, framing: ModuleType
) -> tuple[Callable[[], Any] | None, tuple[int, int, int] | None]:
    """`Framing.assemblies` and `Framing.message_flags` of a segment layer, else Nones."""
    if not getattr(framing, "SEGMENTED", False):
        return None, None
    flags = tuple(framing.HEADER_FIELDS).index(framing.SEGMENT_FLAGS)
    first = framing.FIRST_SEGMENT | framing.FIRST_FRAME
    last = framing.LAST_SEGMENT | framing.LAST_FRAME
    return getattr(codec, "Assemblies", None), (flags, first, last)


def describe(
    head: bytes,
    offset: int,
    length: int,
    file_size: int,
    framing: Framing,
    sender: str | None = None,
) -> tuple[int | None, str, str, int]:
    """(size the length field claims, error, field, error offset) of the gap of `length` bytes at
    `offset`; `head` holds the file's bytes from `offset`, a whole header where the file has one;
    `sender` is who sent the file's bytes (its direction's preamble).

    Why the bytes there do not frame is read from the bytes themselves, so the task that writes
    the reject needs nothing from the driver but the gap.
    """
    f = framing
    width, available = f.width, min(len(head), f.header_size)
    reach = f.length_offset + width  # bytes up to the length field's end
    preamble = len(f.preamble_of(sender))
    name = f.names[f.length_index] if f.names else "size"
    if offset == 0 and preamble and file_size < preamble:
        reason: tuple[int | None, str, str, int] = (
            None,
            f"cut in the {preamble}-byte protocol header",
            "preamble",
            length,
        )
    elif available < reach:
        reason = (
            None,
            f"cut mid-frame: {available} bytes, too few for the {width}-byte size prefix"
            + (f" at header offset {f.length_offset}" if f.length_offset else ""),
            f"frame.{name}",
            available,
        )
    elif (
        f.escape is not None
        and f.size_prefix.unpack_from(head, f.length_offset)[0] == f.escape
        and len(head) < f.reach
    ):
        reason = (
            None,
            f"cut mid-frame: {len(head)} bytes, too few for the {f.reach}-byte header whose "
            f"size prefix {f.escape:#x} says a wider size follows",
            f"frame.{name}",
            len(head),
        )
    else:
        got = f.fields_at(head, 0)
        fields: tuple[int, ...] = ()
        if got is None:  # a header cut by the end of the file: only its size prefix is read
            (value,), adjust = f.size_prefix.unpack_from(head, f.length_offset), f.length_adjust
        else:
            fields, adjust = got
            value = fields[f.length_index]
        claimed = value + adjust
        # an escaped size: the wider one, after the escape, is what is wrong
        where = f.length_offset + (width if adjust != f.length_adjust else 0)
        if not f.min_size <= value <= f.max_size:
            error = f"size prefix {value} is outside {f.min_size}..{f.max_size}"
            if adjust != f.length_adjust:
                error = (
                    f"wide size {value} (after the escape {f.escape:#x}) is outside "
                    f"{f.min_size}..{f.max_size}"
                )
            reason = (claimed, error, f"frame.{name}", where)
        elif available < f.header_size or offset + claimed > file_size:
            follow = file_size - offset - reach
            error = f"cut mid-frame: size says {value}, {follow} bytes follow"
            reason = (claimed, error, "frame", min(file_size - offset, 2**31 - 1))
        else:
            dispatch = f.dispatch[0] if f.dispatch else 0
            tail = b""
            if f.trailer:
                tail = head[claimed - len(f.trailer) : claimed] if len(head) >= claimed else b""
            if f.key(fields) not in f.keys:
                error = f"no layout for {f.describe_key(fields)}"
                key_field = f.names[dispatch] if f.names and f.dispatch else "key"
                at = f.field_offsets[dispatch] + (claimed - value - f.length_adjust)
                reason = (claimed, error, f"frame.{key_field}", at)
            elif f.trailer and tail and tail != f.trailer:
                error = f"the frame ends with {tail.hex()}, not the trailer {f.trailer.hex()}"
                reason = (claimed, error, "frame.trailer", claimed - len(f.trailer))
            else:
                error = (
                    f"size prefix {value} leads to offset {offset + claimed}, where no frame "
                    "starts, and the frame does not decode"
                )
                reason = (claimed, error, f"frame.{name}", where)
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
    cuts: list[list[Cut]] | None = None,
) -> list[Range]:
    """Every stream's ranges, each with its gaps and the index reads that delivered its bytes;
    `cuts` holds each stream's `split` when it was already walked (by Spark tasks)."""
    out: list[Range] = []
    for i, s in enumerate(streams):
        reads = indexes.get((s.capture, s.connection), {}).get(s.direction, Reads())
        for cut in cuts[i] if cuts is not None else split(s, framing, target):
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
