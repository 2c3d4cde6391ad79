"""Packets and TCP segments out of pcap and pcapng capture files (no Spark here).

`detect` tells the container by its magic number, `ranges` cuts an uncompressed file into byte
ranges that start and end on record boundaries (so Spark tasks can read them in parallel),
`packets` yields the packets whose record starts in a range (`scan` yields the damaged stretches
too and counts the range's bytes) and `segment` peels the link layer, IP and TCP off one packet.
The record walk, with its damage and resynchronisation, is `records`; packet blocks are read by
hand, dpkt parses interface blocks and the protocol headers.
"""

from __future__ import annotations

import gzip
import itertools
import os
import socket
import struct
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

import dpkt  # type: ignore[import-untyped]

from specgen.pipeline import records
from specgen.pipeline.inputs import DecodeInputError

Format = Literal["pcap", "pcapng", "pcap.gz", "pcapng.gz"]

TO_END = 2**63 - 1
"""The end of a range that runs to the end of the file (a gzip file's only range: its
uncompressed size is unknown without decompressing it all)."""

NS = 1_000_000_000

_GZIP_MAGIC = b"\x1f\x8b"
_SHB = records.SHB
_IDB = records.IDB
_PB = 2  # the obsolete Packet Block; old Wireshark versions still wrote it
_EPB = 6
# Simple Packet Blocks (3) carry neither interface nor timestamp: they are skipped like every
# other block that holds no packet.
_OPT_TSRESOL = 9
_OPT_TSOFFSET = 14

LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_LOOP = 108
LINKTYPE_SLL = 113
LINKTYPE_SLL2 = 276
# raw IP: 101 is the pcap LINKTYPE; 12 and 14 are the DLT_RAW values some writers put in the
# file instead (14 on OpenBSD); 228 and 229 are raw IPv4 and raw IPv6 only.
_RAW = frozenset({101, 12, 14, 228, 229})
_TCP = 6


class BadCapture(DecodeInputError):
    """A capture file that cannot be read: the message names the path (and the offset)."""


class Packet(NamedTuple):
    """One captured packet. `index` is the byte offset of its record in the (uncompressed)
    file: unique and ordered within the file, and the same whichever range read it. A named
    tuple, like `Segment`: one is made per packet, and a frozen dataclass cost 5x the time."""

    index: int  # type: ignore[assignment]  # hides tuple.index, which nothing here calls
    ts: float
    ts_ns: int
    linktype: int
    data: bytes


class Segment(NamedTuple):
    """One TCP segment. `missing` counts the payload bytes the sender sent but the capture did
    not keep (a snaplen shorter than the packet): they follow `payload` in sequence space.
    `ack` is the acknowledgement number, `ack_flag` the ACK flag (a SYN with it answers).
    A named tuple: one is made per packet (and again per row in the pcap job's stage 2), and a
    frozen dataclass's `__init__` (a call per field) cost 1.3 µs of each against 0.2 µs."""

    src: str
    sport: int
    dst: str
    dport: int
    seq: int
    ack: int
    syn: bool
    fin: bool
    rst: bool
    payload: bytes
    ts: float
    ts_ns: int
    index: int  # type: ignore[assignment]  # hides tuple.index, which nothing here calls
    missing: int = 0
    ack_flag: bool = False


# ---------------------------------------------------------------------------- containers


def detect(path: Path | str) -> Format | None:
    """The capture format by its magic number, or None for anything else."""
    with open(path, "rb") as f:
        head = f.read(4)
    if head[:2] == _GZIP_MAGIC:
        try:
            with gzip.open(path, "rb") as g:
                inner = _kind(g.read(4))
        except (OSError, EOFError):
            return None
        return None if inner is None else _gz(inner)
    return _kind(head)


def not_a_capture(path: Path | str) -> str:
    """Why `path` is no capture file, for a message: what it starts with."""
    with open(path, "rb") as f:
        head = f.read(8)
    if not head:
        return f"{path}: not a pcap or pcapng file (it is empty)"
    shown = " ".join(f"{b:02x}" for b in head)
    if head[:2] == _GZIP_MAGIC:
        try:
            with gzip.open(path, "rb") as g:
                inner = g.read(8)
        except (OSError, EOFError) as e:
            return f"{path}: a gzip file that cannot be read ({e})"
        shown = " ".join(f"{b:02x}" for b in inner) or "nothing"
        return f"{path}: a gzip file, but no pcap or pcapng in it (it starts with {shown})"
    return (
        f"{path}: not a pcap or pcapng file (starts with {shown}); give pcap files, or the "
        "folder a capture was recorded into"
    )


def _kind(head: bytes) -> Literal["pcap", "pcapng"] | None:
    if head in records.PCAP_MAGIC:
        return "pcap"
    if head == records.SHB_MAGIC:
        return "pcapng"
    return None


def _gz(inner: Literal["pcap", "pcapng"]) -> Format:
    return "pcap.gz" if inner == "pcap" else "pcapng.gz"


def _format(path: Path | str) -> Format:
    fmt = detect(path)
    if fmt is None:
        raise BadCapture(not_a_capture(path))
    return fmt


def ranges(path: Path | str, target_bytes: int) -> list[tuple[int, int]]:
    """Byte ranges [start, end) of about `target_bytes` each, starting and ending on record
    boundaries and together covering every record and damaged stretch;
    `packets(path, start, end)` reads one.

    A range starts only where a walk from it reads the same as a walk from the start of the
    file (an anchor record, see `records.Record`), so reading range by range gives what
    reading the whole file does.

    A gzip file is one range (0, TO_END): it cannot be entered anywhere but at its start.
    """
    if target_bytes <= 0:
        raise ValueError(f"target_bytes must be positive, not {target_bytes}")
    fmt = _format(path)
    if fmt.endswith(".gz"):
        return [(0, TO_END)]
    size = os.path.getsize(path)
    if fmt == "pcap":
        with open(path, "rb") as f:
            header = records.pcap_header(f.read(records.PCAP_FILE_HEADER))
        if header is not None:
            starts, resume = _clean_records(path, header, size)
            if resume is None:
                return _cut(starts, size, target_bytes)
            with records.open_window(path, compressed=False) as w:
                # the general walk from the last record read that the quick one did not vouch
                # for: the same records from there as a walk from the start (see below)
                items = _walk(w, fmt, path, resume, with_data=False)
                if not starts:
                    first = next(items, None)
                    starts = [] if first is None else [first.offset]
                rest = _starts(w, fmt, path, items)
                return _cut(itertools.chain(starts, rest), size, target_bytes)
    with records.open_window(path, compressed=False) as w:
        # a range starts on a record, never on damage, but for the first: a walk resynchronises
        # after damage by the time of the record before it, which a range must have read too
        items = _walk(w, fmt, path, 0, with_data=False)
        first = next(items, None)
        if first is None:
            return []
        later = _starts(w, fmt, path, items)
        return _cut(itertools.chain([first.offset], later), size, target_bytes)


def _starts(
    w: records.Window,
    fmt: Format,
    path: Path | str,
    items: Iterable[records.Record | records.Damage],
) -> Iterator[int]:
    """The records of a walk a range may start at: where a walk started there reads what the
    walk from the start does. A record that is no anchor (a pcap record cut by the end of the
    file, judged by the time of the record before it) is one only when a walk started at it
    reads it the same (it is the file's last item)."""
    for item in items:
        if isinstance(item, records.Record) and (
            item.anchor
            or list(itertools.islice(_walk(w, fmt, path, item.offset, with_data=False), 2))
            == [item]
        ):
            yield item.offset


_CHUNK = 8 * 1024 * 1024


def _clean_records(
    path: Path | str, header: records.PcapHeader, size: int
) -> tuple[list[int], int | None]:
    """The record starts of a pcap file as far as every record is sound, read with `struct`
    from large reads, ~5x faster than `records.pcap_records`: (the starts, None) when all are,
    else (the starts before the last sound record, that record's start) for the general walk
    to go on from. A record is sound when its length is within the limit, it ends inside the
    file, and at its end either the file ends or a plausible header follows (the general walk's
    own tests). The general walk resumed at a sound record reads it as one (its length leads to
    a plausible header) and so reaches the next as a walk from the start would, with the same
    last time (its resynchronisation's guide)."""
    record = struct.Struct(header.order + "IIII")
    limit, frac_max = header.limit, header.frac_max
    starts: list[int] = []
    with open(path, "rb") as f:
        buf, base = b"", 0

        def head(at: int) -> tuple[int, int, int, int] | None:
            nonlocal buf, base
            if at - base + records.PCAP_RECORD_HEADER > len(buf) or at < base:
                f.seek(at)
                buf, base = f.read(_CHUNK), at
            if len(buf) - (at - base) < records.PCAP_RECORD_HEADER:
                return None
            fields: tuple[int, int, int, int] = record.unpack_from(buf, at - base)
            return fields

        offset = records.PCAP_FILE_HEADER
        if offset >= size:
            return [], offset
        first = head(offset)
        if first is None or first[2] > limit:
            return [], offset
        while True:
            incl = first[2]
            end = offset + records.PCAP_RECORD_HEADER + incl
            if end == size:
                starts.append(offset)
                return starts, None
            after = head(end) if end < size else None
            if after is None or not (
                after[1] < frac_max and 1 <= after[2] <= limit and after[3] >= after[2]
            ):
                return starts[:-1], starts[-1] if starts else offset
            starts.append(offset)
            offset, first = end, after


def _cut(starts: Iterable[int], size: int, target_bytes: int) -> list[tuple[int, int]]:
    """Ranges that begin on the given record starts, each closed at the first record start at
    least `target_bytes` past its own; the last runs to the end of the file (a record cut short
    by the end of the file belongs to it)."""
    cuts: list[int] = []
    for start in starts:
        if not cuts or start - cuts[-1] >= target_bytes:
            cuts.append(start)
    return list(zip(cuts, [*cuts[1:], size], strict=False))


def _walk(
    w: records.Window, fmt: Format, path: Path | str, start: int, with_data: bool = True
) -> Iterator[records.Record | records.Damage]:
    """The file's records and damaged stretches from `start` (pcapng: from its first block,
    whose interfaces the packets after `start` need)."""
    if fmt.startswith("pcapng"):
        head = w.read_at(0, 12)
        if len(head) < 12 or head[:4] != records.SHB_MAGIC:
            raise BadCapture(f"{path}: no pcapng section header")
        yield from records.pcapng_blocks(w, start if with_data else None)
        return
    header = records.pcap_header(w.read_at(0, records.PCAP_FILE_HEADER))
    if header is None:
        raise BadCapture(f"{path}: no pcap file header")
    yield from records.pcap_records(w, header, max(start, records.PCAP_FILE_HEADER), with_data)


def file_header(fmt: Format) -> int:
    """Bytes of the file before its first record (a pcapng file has none: its header is a
    block)."""
    return 0 if fmt.startswith("pcapng") else records.PCAP_FILE_HEADER


@dataclass
class Tally:
    """What reading one range of a capture file found: bytes in records and in damage (those
    starting in the range), and the file's size once the read reached its end (for gzip, the
    decompressed size: the only way to know it)."""

    record_bytes: int = 0
    damaged_bytes: int = 0
    end: int | None = None
    broken: str | None = None  # why a gzip stream stopped decompressing


def packets(path: Path | str, start: int | None = None, end: int | None = None) -> Iterator[Packet]:
    """The packets whose record starts in [start, end) (a range from `ranges`), in file order;
    the whole file without them. At the end of a file cut short, a pcap record yields what it
    holds (its packet's missing bytes show as a truncated segment). Damaged stretches are
    skipped: `scan` yields them too."""
    for item in scan(path, start, end):
        if isinstance(item, Packet):
            yield item


def scan(
    path: Path | str, start: int | None = None, end: int | None = None, tally: Tally | None = None
) -> Iterator[Packet | records.Damage]:
    """`packets`, and every damaged stretch that starts in the range, in file order; `tally`
    counts the range's bytes."""
    fmt = _format(path)
    lo = 0 if start is None else start
    hi = TO_END if end is None else end
    tally = Tally() if tally is None else tally
    with records.open_window(path, compressed=fmt.endswith(".gz")) as w:
        header = (
            None
            if fmt.startswith("pcapng")
            else records.pcap_header(w.read_at(0, records.PCAP_FILE_HEADER))
        )
        interfaces: list[_Interface] = []
        # a pcap walk starts at `lo`; a pcapng walk starts at the file's start, and of the
        # blocks before `lo` only the interfaces are read
        for item in _walk(w, fmt, path, lo):
            if item.offset >= hi:
                break
            mine = item.offset >= lo
            if isinstance(item, records.Damage):
                if mine:
                    tally.damaged_bytes += item.length
                    yield item
                continue
            packet: Packet | None = None
            problem: str | None = None
            try:
                if item.type == records.PCAP:
                    if mine and header is not None:
                        packet = _pcap_packet(item, header)
                elif item.type == _SHB:
                    interfaces = []
                elif item.type == _IDB:
                    # a placeholder keeps the later interfaces' numbers if this one is unreadable
                    interfaces.append(_Interface(-1, 6, 0))
                    interfaces[-1] = _interface(_idb(item))
                elif item.type in (_EPB, _PB) and mine:
                    packet = _packet(item, interfaces)
            except _Unreadable as e:
                problem = str(e)
            if not mine:
                continue
            if problem is not None:
                # a block whose length chains but whose content dpkt cannot read: damage too
                tally.damaged_bytes += item.length
                yield records.Damage(
                    item.offset, item.length, problem, item.data[: records.MAX_KEPT]
                )
                continue
            tally.record_bytes += item.length
            if packet is not None:
                yield packet
        else:
            tally.end = w.end()
        tally.broken = w.broken


def _pcap_packet(record: records.Record, header: records.PcapHeader) -> Packet:
    seconds, frac = struct.unpack_from(header.order + "II", record.data)
    ns = seconds * NS + (frac if header.nano else frac * 1000)
    return Packet(
        record.offset, ns / NS, ns, header.linktype, record.data[records.PCAP_RECORD_HEADER :]
    )


@dataclass(frozen=True)
class _Interface:
    linktype: int
    tsresol: int  # the if_tsresol byte: 6 = microseconds unless the option says otherwise
    tsoffset: int  # seconds added to every timestamp


class _Unreadable(Exception):
    """A block whose length is sound but whose content is not what its type says."""


def _idb(block: records.Record) -> Any:
    """An Interface Description Block parsed by dpkt (its options: resolution, offset)."""
    kind: Any = (
        dpkt.pcapng.InterfaceDescriptionBlockLE
        if block.order == "<"
        else dpkt.pcapng.InterfaceDescriptionBlock
    )
    try:
        return kind(block.data)
    except (dpkt.Error, struct.error, ValueError, IndexError) as e:
        raise _Unreadable(f"an interface block that cannot be read: {e or type(e).__name__}") from e


def _interface(idb: Any) -> _Interface:
    order = idb.__hdr_fmt__[0]
    tsresol, tsoffset = 6, 0
    for opt in idb.opts:
        if opt.code == _OPT_TSRESOL and len(opt.data) >= 1:
            tsresol = opt.data[0]
        elif opt.code == _OPT_TSOFFSET and len(opt.data) >= 8:
            (tsoffset,) = struct.unpack(order + "q", opt.data[:8])
    return _Interface(int(idb.linktype), tsresol, tsoffset)


def _packet(block: records.Record, interfaces: list[_Interface]) -> Packet:
    """An Enhanced Packet Block's (or the obsolete Packet Block's) packet, read by hand: its
    fixed fields, then `caplen` bytes that must fit before the options and the trailer."""
    data, order = block.data, block.order
    if block.type == _EPB:
        iface_id, ts_high, ts_low, caplen = struct.unpack_from(order + "IIII", data, 8)
        at = 28
    else:
        iface_id, _, ts_high, ts_low, caplen = struct.unpack_from(order + "HHIII", data, 8)
        at = 28
    if at + caplen > block.length - 4:
        raise _Unreadable(f"a captured length of {caplen:,} does not fit its block")
    if iface_id >= len(interfaces):
        raise _Unreadable(f"a packet of interface {iface_id}, which no block describes")
    iface = interfaces[iface_id]
    ns = _ticks_ns((ts_high << 32) | ts_low, iface.tsresol) + iface.tsoffset * NS
    return Packet(block.offset, ns / NS, ns, iface.linktype, data[at : at + caplen])


def _ticks_ns(ticks: int, tsresol: int) -> int:
    """Timestamp units -> nanoseconds: if_tsresol is a negative power of 10, or of 2 when its
    top bit is set (finer than a nanosecond rounds down)."""
    exponent = tsresol & 0x7F
    if tsresol & 0x80:
        return (ticks * NS) >> exponent
    scale: int = 10 ** abs(9 - exponent)
    return ticks * scale if exponent <= 9 else ticks // scale


# ---------------------------------------------------------------------------- protocols


def segment(packet: Packet) -> Segment | None:
    """The packet's TCP segment, or None: not IP, not TCP, an IP fragment or cut inside its
    headers (`skipped` says which)."""
    found = _decode(packet)
    return found if isinstance(found, Segment) else None


def skipped(packet: Packet) -> str | None:
    """Why `segment` gives None for the packet ("linktype", "not-ip", "not-tcp", "fragment",
    "malformed"), or None when it gives a segment."""
    found = _decode(packet)
    return found if isinstance(found, str) else None


def segments(packets: Iterable[Packet], tally: Counter[str] | None = None) -> Iterator[Segment]:
    """The TCP segments among the packets; `tally` counts the others by reason (see `skipped`)
    and the segments as "tcp"."""
    for packet in packets:
        found = _decode(packet)
        if tally is not None:
            tally["tcp" if isinstance(found, Segment) else found] += 1
        if isinstance(found, Segment):
            yield found


def _decode(packet: Packet) -> Segment | str:
    try:
        fast = _plain(packet)
        if fast is not None:
            return fast
        net = _network(packet.linktype, packet.data)
        if isinstance(net, str):
            return net
        if isinstance(net, dpkt.ip.IP):
            return _tcp4(net, packet)
        return _tcp6(net, packet)
    except (dpkt.Error, IndexError, struct.error):
        return "malformed"


_U16 = struct.Struct("!H")
_IP4 = struct.Struct("!BxHxxHxB")  # version/IHL, total length, flags/fragment offset, protocol
_IP6 = struct.Struct("!4xHB")  # payload length, next header
_TCP_HEADER = struct.Struct("!HHIIBB")  # ports, seq, ack, data offset, flags
_ETHERTYPE_IP4 = 0x0800
_ETHERTYPE_IP6 = 0x86DD
_FIN, _SYN, _RST, _ACK = 0x01, 0x02, 0x04, 0x10


def _plain(packet: Packet) -> Segment | None:
    """The common case read with `struct`, ~10x faster than dpkt's objects: a whole TCP header
    in IPv4 (not a fragment) or in IPv6 without extension headers, over Ethernet II (no VLAN
    tag), raw IP, or BSD/Linux loopback. None for anything else, which dpkt then reads
    (`_network`): the same Segment either way, field for field, as dpkt's reading gives."""
    linktype, data = packet.linktype, packet.data
    if linktype == LINKTYPE_ETHERNET:
        if len(data) < 14:
            return None
        ethertype = _U16.unpack_from(data, 12)[0]
        at = 14
        if ethertype == _ETHERTYPE_IP4:
            version = 4
        elif ethertype == _ETHERTYPE_IP6:
            version = 6
        else:
            return None
    elif linktype in _RAW or linktype in (LINKTYPE_NULL, LINKTYPE_LOOP):
        at = 0 if linktype in _RAW else 4
        if len(data) <= at:
            return None
        version = data[at] >> 4
    else:
        return None
    if version == 4:
        if len(data) < at + 20:
            return None
        v_hl, total, frag, proto = _IP4.unpack_from(data, at)
        ihl = (v_hl & 0xF) * 4
        if ihl < 20 or proto != _TCP or frag & 0x3FFF or len(data) < at + ihl:
            return None
        # dpkt: the IP payload ends where the total length says (Ethernet padding dropped)
        tcp = data[at + ihl : at + total] if total else data[at + ihl :]
        family, src, dst = socket.AF_INET, data[at + 12 : at + 16], data[at + 16 : at + 20]
        after_ip = total - ihl if total else -1
    elif version == 6:
        if len(data) < at + 40:
            return None
        plen, nxt = _IP6.unpack_from(data, at)
        if nxt != _TCP:
            return None
        tcp = data[at + 40 : at + 40 + plen] if plen else data[at + 40 :]
        family, src, dst = socket.AF_INET6, data[at + 8 : at + 24], data[at + 24 : at + 40]
        after_ip = plen if plen else -1
    else:
        return None
    if len(tcp) < 20:
        return None
    sport, dport, seq, ack, off, flags = _TCP_HEADER.unpack_from(tcp)
    header = (off >> 4) * 4
    if header < 20:
        return None
    payload = bytes(tcp[header:])
    sent = after_ip - header if after_ip >= 0 else len(payload)
    return Segment(
        src=socket.inet_ntop(family, src),
        sport=sport,
        dst=socket.inet_ntop(family, dst),
        dport=dport,
        seq=seq,
        ack=ack,
        syn=bool(flags & _SYN),
        fin=bool(flags & _FIN),
        rst=bool(flags & _RST),
        payload=payload,
        ts=packet.ts,
        ts_ns=packet.ts_ns,
        index=packet.index,
        missing=max(0, sent - len(payload)),
        ack_flag=bool(flags & _ACK),
    )


def _network(linktype: int, data: bytes) -> Any:
    """The dpkt IP or IP6 packet inside the link layer, or the reason there is none."""
    if linktype == LINKTYPE_ETHERNET:
        net = dpkt.ethernet.Ethernet(data).data  # dpkt strips 802.1Q / QinQ tags itself
    elif linktype == LINKTYPE_SLL:
        net = dpkt.sll.SLL(data).data
    elif linktype == LINKTYPE_SLL2:
        net = dpkt.sll2.SLL2(data).data
    elif linktype in (LINKTYPE_NULL, LINKTYPE_LOOP):
        # a 4-byte address family in the capturing host's byte order (network order for LOOP),
        # and AF_INET6 differs by OS (10, 24, 28, 30): the IP version nibble is the reliable
        # guide (dpkt's Loopback would take Linux's AF_INET6 for Ethernet)
        net = _ip(data[4:])
    elif linktype in _RAW:
        net = _ip(data)
    else:
        return "linktype"
    if isinstance(net, (dpkt.ip.IP, dpkt.ip6.IP6)):
        return net
    return "not-ip"


def _ip(data: bytes) -> Any:
    version = data[0] >> 4 if data else 0
    if version == 4:
        return dpkt.ip.IP(data)
    if version == 6:
        return dpkt.ip6.IP6(data)
    return None


def _tcp4(ip: Any, packet: Packet) -> Segment | str:
    if ip.p != _TCP:
        return "not-tcp"
    if ip.mf or ip.offset:
        # IP fragments are not reassembled: a fragmented TCP segment is rare on a LAN and
        # reassembling would need every fragment, across ranges; the caller counts them
        return "fragment"
    tcp = ip.data
    if not isinstance(tcp, dpkt.tcp.TCP):
        return "malformed"
    # the total length says what was sent (0 with TCP segmentation offload: unknown)
    sent = ip.len - ip.hl * 4 - tcp.off * 4 if ip.len else len(tcp.data)
    return _segment(socket.AF_INET, ip, tcp, sent, packet)


def _tcp6(ip: Any, packet: Packet) -> Segment | str:
    if dpkt.ip.IP_PROTO_FRAGMENT in ip.extension_hdrs:
        return "fragment"
    if ip.p != _TCP:
        return "not-tcp"
    tcp = ip.data
    if not isinstance(tcp, dpkt.tcp.TCP):
        return "malformed"
    headers = sum(int(ext.length) for ext in ip.all_extension_headers) + tcp.off * 4
    # the payload length says what was sent (0 for jumbograms and offloads: unknown)
    sent = ip.plen - headers if ip.plen else len(tcp.data)
    return _segment(socket.AF_INET6, ip, tcp, sent, packet)


def _segment(family: int, ip: Any, tcp: Any, sent: int, packet: Packet) -> Segment:
    payload = bytes(tcp.data)
    return Segment(
        src=socket.inet_ntop(family, ip.src),
        sport=int(tcp.sport),
        dst=socket.inet_ntop(family, ip.dst),
        dport=int(tcp.dport),
        seq=int(tcp.seq),
        ack=int(tcp.ack),
        syn=bool(tcp.flags & dpkt.tcp.TH_SYN),
        fin=bool(tcp.flags & dpkt.tcp.TH_FIN),
        rst=bool(tcp.flags & dpkt.tcp.TH_RST),
        payload=payload,
        ts=packet.ts,
        ts_ns=packet.ts_ns,
        index=packet.index,
        missing=max(0, sent - len(payload)),
        ack_flag=bool(tcp.flags & dpkt.tcp.TH_ACK),
    )
