"""The record walk of pcap and pcapng files: where each record starts, what is damaged.

A capture file is a file header and records (pcap), or blocks (pcapng), each with its length
in its header. One bad length used to end the walk, silently dropping the rest of the file.
Here a record is taken only when its header can be one, and a header that cannot is
**damage**: the bytes from it to the next record header that chains correctly (found by
scanning, as the frame walk resynchronises) are one `Damage`, and the walk goes on from there.

What counts as a record:

- **pcap**: its captured length is at most the file's snap length, or libpcap's largest
  (262,144) when that is more, as libpcap reads them (and at most MAX_RECORD), and it ends
  inside the file. A record that claims a length the snap length allows but whose
  successor is no record header is damage too when a record that chains starts inside it (its
  length is wrong, not its successor's header). A record that runs past the end of the file
  with nothing after it that chains is the file cut short: its packet keeps what is there.
- **pcapng**: its total length is at least 12, a multiple of 4, at most MAX_RECORD, inside the
  file, and repeated at the block's end (the trailer is the chain check pcapng gives).

A resynchronisation candidate must be more than plausible: for pcap a header with a sub-second
part below one second and a captured length of 1 to the snap length, not above the original
length, whose successor is such a header too or the end of the file; for pcapng a
block of a type the format defines, at a multiple of 4 from the damage (blocks are 4-aligned),
with its trailer. Candidates are found with numpy over a chunk at a time, so a damaged stretch
costs a scan, not a Python loop per byte.

Every byte after the file header is in exactly one record or one damage: the capture
reconciliation (`pcap_job`) checks file header + records + damage = the file's size.

A gzip-compressed file is read forward only (seeking back decompresses again from the start):
`Window` keeps the bytes from the current record on. A gzip stream that ends early or is
corrupt ends the walk where decompression stopped: the record it breaks (or nothing, when it
breaks between records) is damage that says so.
"""

from __future__ import annotations

import gzip
import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, NamedTuple, cast

import numpy as np

MAX_RECORD = 64 * 1024 * 1024
"""No record or block is longer: a length beyond it is damage (a packet of 64 MiB is none)."""

MAX_KEPT = 1024 * 1024
"""Bytes of a damaged stretch kept in its reject row; its offset and length say where all are."""

LIBPCAP_MAX_SNAPLEN = 262_144
"""libpcap's MAXIMUM_SNAPLEN: the longest record it reads whatever the file's snap length."""

PCAP_FILE_HEADER = 24
PCAP_RECORD_HEADER = 16
PCAP = -1
"""Record.type of a pcap record (pcapng records carry their block type)."""

SHB = 0x0A0D0D0A
SHB_MAGIC = b"\x0a\x0d\x0d\x0a"
BYTE_ORDER_LE = b"\x4d\x3c\x2b\x1a"
BYTE_ORDER_BE = b"\x1a\x2b\x3c\x4d"
IDB = 1
BLOCK_TYPES = frozenset({SHB, 1, 2, 3, 4, 5, 6, 0xA, 0xB, 0xBAD, 0x40000BAD})
"""The block types pcapng defines (section, interface, packet, simple packet, name
resolution, statistics, enhanced packet, decryption secrets, custom): what may be resynced to."""

CHUNK = 1024 * 1024

NEAR = 30 * 24 * 3600
"""Seconds a pcap resynchronisation candidate's time may lie from the last record's."""


class Record(NamedTuple):
    """One pcap record or pcapng block: `length` bytes of the file from `offset`. `data` is the
    whole record (header included) when read with data; `cut` when the file ends inside it.
    `anchor` when a walk started at this record reads it and everything after it as the walk
    that reached it does. Every record is one but a pcap record cut by the end of the file:
    whether a record that chains starts inside it is judged by the time of the record before
    it, which a walk started at it has not read. (A tuple: one is made per packet, and a
    frozen dataclass costs three times as much.)"""

    offset: int
    length: int
    type: int
    order: str
    data: bytes = b""
    cut: bool = False
    anchor: bool = True


@dataclass(frozen=True, slots=True)
class Damage:
    """`length` bytes from `offset` that hold no record; `data` their first MAX_KEPT bytes."""

    offset: int
    length: int
    reason: str
    data: bytes = b""


class Window:
    """Reads of a capture file at offsets that move forward (a plain file: anywhere).

    For a gzip file the bytes from the lowest offset still wanted are buffered; `release`
    drops those before an offset. A gzip stream that cannot be read on ends the file there:
    `broken` says why.
    """

    def __init__(self, f: IO[bytes], compressed: bool) -> None:
        self.f = f
        self.compressed = compressed
        self.base = 0
        self.buf = bytearray()
        self.eof: int | None = None if compressed else os.fstat(f.fileno()).st_size
        self.broken: str | None = None

    def __enter__(self) -> Window:
        return self

    def __exit__(self, *exc: object) -> None:
        self.f.close()

    def read_at(self, offset: int, n: int) -> bytes:
        if not self.compressed:
            self.f.seek(offset)
            return self.f.read(n)
        if offset < self.base:
            raise ValueError(f"read at {offset}, before {self.base}: a gzip file reads forward")
        need = offset + n - self.base
        while len(self.buf) < need and self.eof is None:
            chunk = self._read(max(need - len(self.buf), CHUNK))
            if chunk:
                self.buf += chunk
            else:
                self.eof = self.base + len(self.buf)
        at = offset - self.base
        return bytes(self.buf[at : at + n])

    def _read(self, n: int) -> bytes:
        try:
            # read1: one decompression step at a time, so a stream that breaks loses nothing
            # decompressed before the break (read(n) drops its whole call's bytes with it)
            return cast(gzip.GzipFile, self.f).read1(n)
        except (EOFError, OSError, zlib.error) as e:
            # bytes decompressed before the break were returned by earlier reads
            self.broken = f"{type(e).__name__}: {e}"
            return b""

    def release(self, offset: int) -> None:
        if self.compressed and offset > self.base:
            del self.buf[: offset - self.base]
            self.base = offset

    def ends_at(self, offset: int) -> bool:
        """Whether the file ends exactly at `offset`."""
        return not self.read_at(offset, 1) and self.eof == offset

    def end(self) -> int:
        """The file's size (for gzip: its decompressed size, reading on to find it)."""
        while self.eof is None:
            self.read_at(self.base + len(self.buf), CHUNK)
        return self.eof


def open_window(path: str | os.PathLike[str], compressed: bool) -> Window:
    # a 1 MiB buffer: a record and the header after it are read per packet, and 8 KiB held
    # only a few packets (measured: 12% less time reading a pcap's records)
    if compressed:
        f = cast(IO[bytes], gzip.open(path, "rb"))
    else:
        f = open(path, "rb", buffering=1 << 20)  # noqa: SIM115
    return Window(f, compressed)


# ---------------------------------------------------------------------------------------- pcap


@dataclass(frozen=True)
class PcapHeader:
    order: str
    nano: bool
    snaplen: int
    linktype: int

    @property
    def frac_max(self) -> int:
        """One second in the file's sub-second units (micro- or nanoseconds)."""
        return 1_000_000_000 if self.nano else 1_000_000

    @property
    def limit(self) -> int:
        """The longest record: the snap length, or libpcap's largest (262,144) when that is
        more: libpcap reads records longer than their file's snap length (dpkt's writer keeps
        the default snap length of 1,500 and writes longer packets whole), up to that."""
        return min(max(self.snaplen, LIBPCAP_MAX_SNAPLEN), MAX_RECORD)


PCAP_MAGIC = {
    b"\xa1\xb2\xc3\xd4": (">", False),
    b"\xd4\xc3\xb2\xa1": ("<", False),
    b"\xa1\xb2\x3c\x4d": (">", True),
    b"\x4d\x3c\xb2\xa1": ("<", True),
}


def pcap_header(head: bytes) -> PcapHeader | None:
    if len(head) < PCAP_FILE_HEADER or head[:4] not in PCAP_MAGIC:
        return None
    order, nano = PCAP_MAGIC[head[:4]]
    snaplen, linktype = struct.unpack_from(order + "II", head, 16)
    return PcapHeader(order, nano, snaplen, linktype & 0x0FFFFFFF)


def pcap_records(
    w: Window, header: PcapHeader, start: int, with_data: bool = True
) -> Iterator[Record | Damage]:
    """Every record and damaged stretch from `start` (a record start) to the end of the file."""
    record = struct.Struct(header.order + "IIII")
    limit = header.limit
    frac_max = header.frac_max
    offset = start
    # the seconds of the last record read, when its sub-second part is below a second: one that
    # is not is a damaged header whose time is no guide (None: resynchronise by chaining alone).
    # So what follows a record depends on that record only, as it does for a walk started there.
    last: int | None = None
    head = b""  # the next record's header when the last read reached it already
    while True:
        w.release(offset)
        if len(head) < PCAP_RECORD_HEADER:
            head = w.read_at(offset, PCAP_RECORD_HEADER)
        if not head:
            if w.broken is not None:
                yield _gzip_break(w, offset, offset)
            return
        if len(head) < PCAP_RECORD_HEADER:
            yield _damage(w, offset, None, "a record header cut short")
            return
        seconds, frac, incl, _ = record.unpack(head)
        if incl > limit:
            why = (
                f"record length {incl:,} is more than the snap length {header.snaplen:,} "
                f"and than any record a reader takes ({limit:,})"
            )
            stop = _resync_pcap(w, header, offset + 1, last)
            yield _damage(w, offset, stop, why)
            if stop is None:
                return
            offset, head = stop, b""
            continue
        end = offset + PCAP_RECORD_HEADER + incl
        # one read: the record (when its bytes are wanted) and the header after it
        if with_data:
            chunk = w.read_at(offset, end - offset + PCAP_RECORD_HEADER)
            data, after = chunk[: end - offset], chunk[end - offset :]
        else:
            data, after = b"", w.read_at(end, PCAP_RECORD_HEADER)
        if not after and not w.ends_at(end):  # the record runs past the end of the file
            stop = _resync_pcap(w, header, offset + 1, last)
            if stop is None and w.broken is not None:
                yield _gzip_break(w, offset, w.end())
                return
            if stop is not None:
                why = f"record of {incl:,} bytes runs past the end of the file"
                yield _damage(w, offset, stop, why)
                offset, head = stop, b""
                continue
            size = w.end() - offset  # the file was cut short inside its last record
            data = w.read_at(offset, size) if with_data else b""
            yield Record(offset, size, PCAP, header.order, data, cut=True, anchor=False)
            return
        if len(after) == PCAP_RECORD_HEADER and not (
            (fields := record.unpack(after))[1] < frac_max
            and 1 <= fields[2] <= limit
            and fields[3] >= fields[2]
        ):  # the same test as _pcap_plausible, inline: it runs once per record
            # the next header cannot be one: either it is damaged, or this record's length is
            # wrong and a record that chains starts inside this one
            stop = _resync_pcap(w, header, offset + 1, seconds, end)
            if stop is not None:
                why = f"record length {incl:,} does not lead to a record header"
                yield _damage(w, offset, stop, why)
                offset, head = stop, b""
                continue
        yield Record(offset, end - offset, PCAP, header.order, data)
        offset, head, last = end, after, seconds if frac < frac_max else None


def _resync_pcap(
    w: Window, header: PcapHeader, frm: int, near: int | None, until: int | None = None
) -> int | None:
    """The first offset at or after `frm` (before `until`) where a chain of two plausible
    record headers (or one and the end of the file) starts, or None. With `near` (the seconds
    of the last record read, unless its sub-second part says its time is damaged), a
    candidate's time must lie within NEAR of it: a header read 4 bytes late (sub-second part as
    seconds, captured length as sub-second part, original length as captured length) chains
    as well as the true one when the lengths agree, and only its time gives it away."""
    big = header.order == ">"
    frac_max = header.frac_max
    limit = header.limit
    pos = frm
    while until is None or pos < until:
        chunk = w.read_at(pos, CHUNK + PCAP_RECORD_HEADER)
        if len(chunk) < PCAP_RECORD_HEADER:
            return None
        n = len(chunk) - PCAP_RECORD_HEADER + 1
        if until is not None:
            n = min(n, until - pos)
        raw = np.frombuffer(chunk, dtype=np.uint8)
        fields = [_u32(raw, i, n, big) for i in (0, 4, 8, 12)]
        ts, frac, incl, orig = fields
        ok = (frac < frac_max) & (incl >= 1) & (incl <= limit) & (orig >= incl)
        if near is not None:
            ts64 = ts.astype(np.int64)
            ok &= (ts64 >= near - NEAR) & (ts64 <= near + NEAR)
        for i in np.flatnonzero(ok).tolist():
            q = pos + i
            if _pcap_chains(w, header, q):
                return q
        if len(chunk) < CHUNK + PCAP_RECORD_HEADER:
            return None
        pos += n
    return None


def _u32(raw: np.ndarray, at: int, n: int, big: bool) -> np.ndarray:
    """The uint32 at `at` past every one of the first `n` byte positions."""
    b = raw[at : at + n + 3].astype(np.uint32)
    if big:
        return (b[:n] << 24) | (b[1 : n + 1] << 16) | (b[2 : n + 2] << 8) | b[3 : n + 3]
    return b[:n] | (b[1 : n + 1] << 8) | (b[2 : n + 2] << 16) | (b[3 : n + 3] << 24)


def _pcap_chains(w: Window, header: PcapHeader, q: int) -> bool:
    record = struct.Struct(header.order + "IIII")
    head = w.read_at(q, PCAP_RECORD_HEADER)
    ts, _, incl, _ = record.unpack(head)
    end = q + PCAP_RECORD_HEADER + incl
    after = w.read_at(end, PCAP_RECORD_HEADER)
    if not after:
        return w.ends_at(end)
    if len(after) < PCAP_RECORD_HEADER:
        return False
    fields = record.unpack(after)
    return abs(fields[0] - ts) <= NEAR and _pcap_plausible(header, *fields)


def _pcap_plausible(header: PcapHeader, ts: int, frac: int, incl: int, orig: int) -> bool:
    """A record header as writers write them: its sub-second part below a second, a captured
    length of 1 to the snap length, not above the original length."""
    return frac < header.frac_max and 1 <= incl <= header.limit and orig >= incl


# -------------------------------------------------------------------------------------- pcapng


def pcapng_blocks(w: Window, data_from: int | None = 0) -> Iterator[Record | Damage]:
    """Every block and damaged stretch of a pcapng file, from its start (the byte order changes
    at each Section Header Block, whose byte-order magic follows its length). Blocks at or
    after `data_from`, and interface descriptions anywhere, come with their bytes."""
    offset = 0
    order = "<"
    while True:
        w.release(offset)
        head = w.read_at(offset, 12)
        if not head:
            if w.broken is not None:
                yield _gzip_break(w, offset, offset)
            return
        if len(head) < 12:
            yield _damage(w, offset, None, "a block header cut short")
            return
        block_order = order
        why = None
        if head[:4] == SHB_MAGIC:
            magic = head[8:12]
            if magic in (BYTE_ORDER_LE, BYTE_ORDER_BE):
                block_order = "<" if magic == BYTE_ORDER_LE else ">"
            else:
                why = "a section header without a byte-order magic"
        btype, length = struct.unpack_from(block_order + "II", head)
        if why is None:
            why = _block_fault(length)
        data = b""
        if why is None:
            wanted = btype == IDB or (data_from is not None and offset >= data_from)
            if wanted:  # one read: the block, its trailer included
                data = w.read_at(offset, length)
                trailer = data[-4:] if len(data) == length else b""
            else:
                trailer = w.read_at(offset + length - 4, 4)
            if len(trailer) < 4:
                stop = _resync_pcapng(w, order, offset + 4)
                if stop is None and w.broken is not None:
                    yield _gzip_break(w, offset, w.end())
                    return
                if stop is None:
                    yield _damage(w, offset, None, "a block cut short by the end of the file")
                    return
                why = f"block of {length:,} bytes runs past the end of the file"
            elif struct.unpack(block_order + "I", trailer)[0] != length:
                (copy,) = struct.unpack(block_order + "I", trailer)
                why = f"block length {length:,} is not repeated at its end ({copy:,} there)"
        if why is not None:
            stop = _resync_pcapng(w, order, offset + 4)
            yield _damage(w, offset, stop, why)
            if stop is None:
                return
            offset = stop
            if w.read_at(offset, 4) == SHB_MAGIC:
                order = "<" if w.read_at(offset + 8, 4) == BYTE_ORDER_LE else ">"
            continue
        order = block_order
        yield Record(offset, length, btype, order, data)
        offset += length


def _block_fault(length: int) -> str | None:
    if length < 12:
        return f"block length {length:,} is less than 12"
    if length % 4:
        return f"block length {length:,} is not a multiple of 4"
    if length > MAX_RECORD:
        return f"block length {length:,} is more than any block ({MAX_RECORD:,})"
    return None


def _resync_pcapng(w: Window, order: str, frm: int) -> int | None:
    """The first offset at or after `frm`, a multiple of 4 from it, where a block of a defined
    type starts whose length is sound and repeated at its end, or None."""
    pos = frm
    while True:
        chunk = w.read_at(pos, CHUNK + 12)
        usable = (len(chunk) - 12) // 4 * 4 + 4 if len(chunk) >= 12 else 0
        if usable <= 0:
            return None
        for i in range(0, usable, 4):
            q = pos + i
            btype4 = chunk[i : i + 4]
            if btype4 == SHB_MAGIC:
                magic = chunk[i + 8 : i + 12]
                if magic not in (BYTE_ORDER_LE, BYTE_ORDER_BE):
                    continue
                block_order = "<" if magic == BYTE_ORDER_LE else ">"
            else:
                block_order = order
            btype, length = struct.unpack_from(block_order + "II", chunk, i)
            if btype not in BLOCK_TYPES or _block_fault(length) is not None:
                continue
            trailer = w.read_at(q + length - 4, 4)
            if len(trailer) == 4 and struct.unpack(block_order + "I", trailer)[0] == length:
                return q
        if len(chunk) < CHUNK + 12:
            return None
        pos += usable


# -------------------------------------------------------------------------------------- shared


def _damage(w: Window, offset: int, stop: int | None, why: str) -> Damage:
    """The stretch from `offset` to `stop`, where a record that chains starts, or to the end
    of the file (None)."""
    end = w.end() if stop is None else stop
    if stop is not None:
        where = f"; the next record that chains starts at offset {stop:,}"
    else:
        where = "; no record follows"
        if w.broken is not None:
            where += f" (the gzip stream breaks there: {w.broken})"
    return Damage(offset, end - offset, why + where, w.read_at(offset, min(end - offset, MAX_KEPT)))


def _gzip_break(w: Window, offset: int, end: int) -> Damage:
    """A gzip stream that stopped decompressing: the record it cut (from `offset`) is damage;
    at a record boundary, an empty one that says so."""
    what = "the record it cuts is incomplete" if end > offset else "nothing more could be read"
    return Damage(
        offset,
        end - offset,
        f"the gzip stream breaks after {end:,} bytes ({w.broken}): {what}",
        w.read_at(offset, min(end - offset, MAX_KEPT)),
    )
