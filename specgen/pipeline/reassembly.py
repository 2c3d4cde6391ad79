"""TCP segments back into each direction's byte stream (no Spark here).

`connections` groups segments into connections (who is the client, port reuse) and
`reassemble` puts one direction's segments back in sequence order: retransmitted and
overlapping bytes are kept once (the first copy captured wins, a differing copy is reported),
missing bytes become gaps and the stream goes on after them.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from specgen.pipeline.pcap import Segment as Segment  # re-exported: reassembly's input

Direction = Literal["c2s", "s2c"]
Endpoint = tuple[str, int]

SEQ_MOD = 2**32
_HALF = 2**31


# ---------------------------------------------------------------------------- connections


def connection_key(
    seg: Segment, server_ports: Collection[int] = ()
) -> tuple[tuple[Endpoint, Endpoint], Direction]:
    """((client, server), direction of `seg`) judged from this one segment: see `_roles`."""
    src, dst = (seg.src, seg.sport), (seg.dst, seg.dport)
    client, server = _roles(src, dst, server_ports, _opener(seg))
    return (client, server), "c2s" if src == client else "s2c"


def _opener(seg: Segment) -> Endpoint | None:
    """The client, when the segment says who it is: a SYN comes from it, a SYN+ACK goes to it."""
    if not seg.syn:
        return None
    return (seg.dst, seg.dport) if seg.ack_flag else (seg.src, seg.sport)


def _roles(
    a: Endpoint, b: Endpoint, server_ports: Collection[int], client: Endpoint | None
) -> tuple[Endpoint, Endpoint]:
    """(client, server): the side on a server port is the server; failing that (neither or both
    are) the handshake says who opened; failing that (the capture began after it) the lower
    port is the server, as listening ports usually are lower than ephemeral ones."""
    if (a[1] in server_ports) != (b[1] in server_ports):
        return (b, a) if a[1] in server_ports else (a, b)
    if client in (a, b):
        return (a, b) if client == a else (b, a)
    if a[1] != b[1]:
        return (b, a) if a[1] < b[1] else (a, b)
    return (b, a) if a[0] < b[0] else (a, b)  # same port both sides: any fixed choice


def connection_name(client: Endpoint, server: Endpoint, number: int = 1) -> str:
    """A file-name-safe name: `10.0.0.1_40000-10.0.0.2_5552`, `...#2` for the second
    connection on the same addresses and ports (IPv6 colons become dots)."""
    name = f"{_safe(client[0])}_{client[1]}-{_safe(server[0])}_{server[1]}"
    return name if number == 1 else f"{name}#{number}"


def _safe(ip: str) -> str:
    return ip.replace(":", ".")


@dataclass
class Connection:
    client: Endpoint
    server: Endpoint
    number: int  # 1, then 2, 3 ... for each reuse of the same addresses and ports
    segments: list[Segment] = field(default_factory=list)

    @property
    def name(self) -> str:
        return connection_name(self.client, self.server, self.number)

    def direction(self, which: Direction) -> list[Segment]:
        sender = self.client if which == "c2s" else self.server
        return [s for s in self.segments if (s.src, s.sport) == sender]


@dataclass
class _Open:
    """What `connections` tracks per address-and-port pair: the current connection's segments
    and whether it has seen a FIN or RST (after which a new SYN is a new connection)."""

    segments: list[Segment] = field(default_factory=list)
    closed: bool = False
    isn: dict[Endpoint, int] = field(default_factory=dict)  # SYN sequence number per opener


def connections(
    segments: Iterable[Segment], server_ports: Collection[int] = ()
) -> list[Connection]:
    """The segments grouped into connections, in order of first segment; each connection's
    client and server are decided over all its segments (`_roles`), not segment by segment.

    Port reuse: a SYN after a FIN or RST on the same addresses and ports starts the next
    connection, unless it repeats the ISN of the SYN that opened the current one (a
    retransmitted SYN)."""
    groups: list[tuple[tuple[Endpoint, Endpoint], list[Segment]]] = []
    current: dict[tuple[Endpoint, Endpoint], _Open] = {}
    for seg in sorted(segments, key=lambda s: s.index):
        pair = _pair(seg)
        state = current.get(pair)
        if state is None or _reopens(state, seg):
            state = current[pair] = _Open()
            groups.append((pair, state.segments))
        state.segments.append(seg)
        state.closed = state.closed or seg.fin or seg.rst
        if seg.syn and not seg.ack_flag:
            state.isn.setdefault((seg.src, seg.sport), seg.seq)
    return _number(groups, server_ports)


def _pair(seg: Segment) -> tuple[Endpoint, Endpoint]:
    a, b = (seg.src, seg.sport), (seg.dst, seg.dport)
    return (a, b) if a <= b else (b, a)


def _reopens(state: _Open, seg: Segment) -> bool:
    if not (state.closed and seg.syn and not seg.ack_flag):
        return False
    return state.isn.get((seg.src, seg.sport)) != seg.seq


def _number(
    groups: list[tuple[tuple[Endpoint, Endpoint], list[Segment]]], server_ports: Collection[int]
) -> list[Connection]:
    seen: dict[tuple[Endpoint, Endpoint], int] = {}
    out: list[Connection] = []
    for pair, segs in groups:
        opener = next((c for c in map(_opener, segs) if c is not None), None)
        client, server = _roles(*pair, server_ports, opener)
        seen[pair] = seen.get(pair, 0) + 1
        out.append(Connection(client, server, seen[pair], segs))
    return out


# ---------------------------------------------------------------------------- reassembly


class Read(NamedTuple):
    """Bytes [offset, offset + length) of the stream came in one segment captured at `ts`."""

    offset: int
    length: int
    ts: float


@dataclass
class Part:
    """A maximal run of contiguous stream bytes starting at `offset` (the stream counts from
    ISN + 1, or from the first byte seen) whose first byte has sequence number `first_seq`."""

    offset: int
    data: bytes
    reads: list[Read]
    first_seq: int

    @property
    def end(self) -> int:
        return self.offset + len(self.data)


@dataclass(frozen=True)
class Gap:
    """Stream bytes [offset, offset + length) the capture does not hold: sequence numbers
    seq_start up to seq_end (exclusive, both modulo 2**32)."""

    offset: int
    length: int
    seq_start: int
    seq_end: int


@dataclass(frozen=True)
class Conflict:
    """A copy (packet `index`) whose bytes [offset, offset + length) differ from the bytes
    kept there, which came from the packets `kept` (captured earlier: the first copy wins)."""

    offset: int
    length: int
    index: int
    kept: tuple[int, ...]


@dataclass
class Reassembled:
    parts: list[Part]
    gaps: list[Gap]
    conflicts: list[Conflict]
    payload_bytes: int  # every captured payload byte of the segments, copies included
    started_mid_stream: bool  # no SYN: the stream starts at the lowest byte seen
    isn: int | None  # the SYN's sequence number, when seen
    length: int  # the stream's length: its first byte up to its last (sent, if not captured)

    @property
    def unique_bytes(self) -> int:
        return sum(len(p.data) for p in self.parts)

    @property
    def duplicate_bytes(self) -> int:
        return self.payload_bytes - self.unique_bytes

    @property
    def gap_bytes(self) -> int:
        return sum(g.length for g in self.gaps)

    def check(self) -> None:
        """Raise AssertionError unless every byte is accounted for: parts and gaps tile the
        stream [0, length) in order without overlap, and no byte was counted twice."""
        spans = sorted(
            [(p.offset, p.end) for p in self.parts]
            + [(g.offset, g.offset + g.length) for g in self.gaps]
        )
        at = 0
        for start, end in spans:
            _require(start == at and end > start, f"stream not tiled at {at}: {start}..{end}")
            at = end
        _require(at == self.length, f"parts and gaps end at {at}, the stream at {self.length}")
        _require(self.duplicate_bytes >= 0, "more unique bytes than payload bytes")
        _require(
            self.payload_bytes == self.unique_bytes + self.duplicate_bytes,
            "payload bytes != unique + duplicate bytes",
        )
        _require(
            self.unique_bytes + self.gap_bytes == self.length,
            "unique bytes + gap bytes != the stream's length",
        )

    def data(self) -> bytes:
        """The whole stream with every gap's bytes left out (for tests and small streams)."""
        return b"".join(p.data for p in self.parts)


def _require(holds: bool, message: str) -> None:
    # not `assert`: the check must hold under python -O too
    if not holds:
        raise AssertionError(message)


class _Copy(NamedTuple):
    """One segment's captured payload placed in the stream."""

    start: int
    end: int
    packet: int  # the segment's packet index (`index` would shadow tuple.index)
    ts: float
    payload: bytes


def reassemble(segments: Iterable[Segment]) -> Reassembled:
    """One direction of one connection, its segments in any order, back into its stream."""
    ordered = sorted(segments, key=lambda s: s.index)  # capture order: the first copy wins
    if not ordered:
        return Reassembled([], [], [], 0, True, None, 0)
    unwrapped = _unwrap([s.seq for s in ordered])
    syn = next((i for i, s in enumerate(ordered) if s.syn), None)
    copies = [
        _Copy(u + s.syn, u + s.syn + len(s.payload), s.index, s.ts, s.payload)
        for s, u in zip(ordered, unwrapped, strict=True)
        if s.payload
    ]
    base = _base(unwrapped, syn, copies)
    if base is None:  # neither a SYN nor a byte of payload: no stream
        return Reassembled([], [], [], 0, True, None, 0)
    end = max([c.end for c in copies] + _ends(ordered, unwrapped), default=base)
    pieces = _winners(copies)
    # the first segment keeps its sequence number when unwrapped: positions are sequence
    # numbers modulo 2**32
    parts = _parts(pieces, base)
    return Reassembled(
        parts=parts,
        gaps=_gaps(parts, end - base, base),
        conflicts=_conflicts(copies, pieces, parts, base),
        payload_bytes=sum(len(c.payload) for c in copies),
        started_mid_stream=syn is None,
        isn=None if syn is None else ordered[syn].seq,
        length=max(0, end - base),
    )


def _unwrap(seqs: list[int]) -> list[int]:
    """32-bit sequence numbers (in capture order) on an unbounded line: each one is placed
    within 2**31 of the one before it, which follows the stream across any number of wraps
    (so a direction may be longer than 4 GiB) as long as no two segments captured one after
    the other are 2 GiB apart. The first keeps its value."""
    out = [seqs[0]]
    for prev, seq in zip(seqs, seqs[1:], strict=False):
        delta = (seq - prev) % SEQ_MOD
        out.append(out[-1] + (delta - SEQ_MOD if delta >= _HALF else delta))
    return out


def _base(unwrapped: list[int], syn: int | None, copies: list[_Copy]) -> int | None:
    """Where the stream starts: ISN + 1 when a SYN was seen, else the lowest byte captured
    (and in both cases no later than that byte, should a sender put bytes before its ISN)."""
    first_byte = min((c.start for c in copies), default=None)
    if syn is None:
        return first_byte
    after_syn = unwrapped[syn] + 1
    return after_syn if first_byte is None else min(after_syn, first_byte)


def _ends(ordered: list[Segment], unwrapped: list[int]) -> list[int]:
    """Where segments say the sender's stream reached though the bytes may not be captured:
    a truncated segment's tail, a FIN (sent after the last byte) and a bare ACK (whose
    sequence number is the next byte to send). RSTs are left out: their sequence number
    may be the one the peer expected, not the sender's own."""
    ends = []
    fin: int | None = None  # where the FIN sits: it takes a sequence number but no byte
    for seg, u in zip(ordered, unwrapped, strict=True):
        start = u + seg.syn
        if seg.missing or seg.fin:
            ends.append(start + len(seg.payload) + seg.missing)
            if seg.fin:
                fin = start + len(seg.payload)
        elif not seg.payload and not seg.syn and not seg.rst:
            ends.append(start)
    # the ACK that follows a FIN carries the FIN's sequence number + 1: no byte was there
    return [e if fin is None else min(e, fin) for e in ends]


class _Piece(NamedTuple):
    """Stream bytes [start, end) kept from copy `copy` (the first captured over them)."""

    start: int
    end: int
    copy: _Copy


def _winners(copies: list[_Copy]) -> list[_Piece]:
    """For every captured position, the copy captured first: a sweep in sequence order with a
    heap of the copies covering the position, lowest packet index on top. Each step ends where
    the top copy ends or the next copy starts, so there are fewer than 2 steps per copy."""
    by_start = sorted(copies, key=lambda c: (c.start, c.packet))
    # the usual capture: no copy overlaps the next, so each copy is its own piece, as the
    # sweep would find it
    if all(a.end <= b.start for a, b in zip(by_start, by_start[1:], strict=False)):
        return [_Piece(c.start, c.end, c) for c in by_start]
    return _sweep(by_start)


def _sweep(by_start: list[_Copy]) -> list[_Piece]:
    """`_winners` of copies sorted by (start, packet), overlapping or not."""
    heap: list[tuple[int, int, _Copy]] = []
    pieces: list[_Piece] = []
    i, pos = 0, by_start[0].start if by_start else 0
    while i < len(by_start) or heap:
        if not heap:
            pos = max(pos, by_start[i].start)
        while i < len(by_start) and by_start[i].start <= pos:
            c = by_start[i]
            heapq.heappush(heap, (c.packet, c.end, c))
            i += 1
        while heap and heap[0][1] <= pos:
            heapq.heappop(heap)
        if not heap:
            continue
        top = heap[0][2]
        stop = min(top.end, by_start[i].start if i < len(by_start) else top.end)
        if pieces and pieces[-1].copy is top and pieces[-1].end == pos:
            pieces[-1] = _Piece(pieces[-1].start, stop, top)
        else:
            pieces.append(_Piece(pos, stop, top))
        pos = stop
    return pieces


def _parts(pieces: list[_Piece], base: int) -> list[Part]:
    """Contiguous pieces joined into parts: the chunks are memoryviews of the payloads, joined
    once per part (no copy grows byte by byte)."""
    parts: list[Part] = []
    chunks: list[memoryview] = []
    reads: list[Read] = []
    start = end = 0

    def close() -> None:
        data = b"".join(chunks)
        parts.append(Part(start - base, data, list(reads), start % SEQ_MOD))
        chunks.clear()
        reads.clear()

    for piece in pieces:
        if chunks and piece.start != end:
            close()
        if not chunks:
            start = piece.start
        c = piece.copy
        chunks.append(memoryview(c.payload)[piece.start - c.start : piece.end - c.start])
        reads.append(Read(piece.start - base, piece.end - piece.start, c.ts))
        end = piece.end
    if chunks:
        close()
    return parts


def _gaps(parts: list[Part], length: int, base: int) -> list[Gap]:
    """The holes between the parts, before the first and after the last up to `length`."""
    gaps: list[Gap] = []
    at = 0
    for start, end in [(p.offset, p.end) for p in parts] + [(length, length)]:
        if start > at:
            gaps.append(Gap(at, start - at, (base + at) % SEQ_MOD, (base + start) % SEQ_MOD))
        at = max(at, end)
    return gaps


def _conflicts(
    copies: list[_Copy], pieces: list[_Piece], parts: list[Part], base: int
) -> list[Conflict]:
    """Every copy that lost some of its bytes to an earlier copy and whose bytes differ from
    the kept ones there (copies that kept all their bytes are not compared: nothing to do)."""
    kept = {id(p.copy): 0 for p in pieces}
    for p in pieces:
        kept[id(p.copy)] += p.end - p.start
    starts = [p.offset for p in parts]
    piece_starts = [p.start for p in pieces]
    found: list[Conflict] = []
    for c in copies:
        if kept.get(id(c), 0) == len(c.payload):
            continue
        part = _part_at(parts, starts, c.start - base)
        conflict = _differs(c, part, pieces, piece_starts, base)
        if conflict is not None:
            found.append(conflict)
    return sorted(found, key=lambda x: (x.offset, x.index))


def _part_at(parts: list[Part], starts: list[int], offset: int) -> Part:
    return parts[bisect_right(starts, offset) - 1]


def _differs(
    c: _Copy, part: Part, pieces: list[_Piece], piece_starts: list[int], base: int
) -> Conflict | None:
    at = c.start - base - part.offset
    kept = memoryview(part.data)[at : at + len(c.payload)]
    if kept == c.payload:
        return None
    diffs = [i for i, (x, y) in enumerate(zip(kept, c.payload, strict=True)) if x != y]
    lo, hi = c.start + diffs[0], c.start + diffs[-1] + 1
    first = bisect_right(piece_starts, lo) - 1
    sources: set[int] = set()
    for p in pieces[first:]:
        if p.start >= hi:
            break
        sources.add(p.copy.packet)
    return Conflict(lo - base, hi - lo, c.packet, tuple(sorted(sources)))
