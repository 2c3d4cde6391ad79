"""pcap/pcapng reading (`specgen.pipeline.pcap`) and TCP reassembly (`.reassembly`).

Every capture here is written by dpkt's own writers (or, for what they cannot write, from
bytes built in the test, said where) into tmp_path, then read back and compared with the
packets and payloads the test constructed.
"""

from __future__ import annotations

import gzip
import random
import socket
import struct
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import dpkt  # type: ignore[import-untyped]
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specgen.pipeline import pcap
from specgen.pipeline import reassembly as _reassembly
from specgen.pipeline.pcap import Packet, Segment
from specgen.pipeline.reassembly import (
    SEQ_MOD,
    Conflict,
    Gap,
    connection_key,
    connection_name,
    connections,
    reassemble,
)

C4, S4 = "10.0.0.1", "10.0.0.2"
C6, S6 = "2001:db8::1", "2001:db8::2"
CPORT, SPORT = 40000, 5552
ACK = dpkt.tcp.TH_ACK
SYN = dpkt.tcp.TH_SYN
FIN = dpkt.tcp.TH_FIN | dpkt.tcp.TH_ACK
RST = dpkt.tcp.TH_RST

# ---------------------------------------------------------------------------- packet builders


def tcp(
    seq: int, payload: bytes = b"", flags: int = ACK, sport: int = CPORT, dport: int = SPORT
) -> bytes:
    return bytes(
        dpkt.tcp.TCP(sport=sport, dport=dport, seq=seq % SEQ_MOD, flags=flags, data=payload)
    )


def ip4(
    segment: bytes, src: str = C4, dst: str = S4, proto: int = 6, mf: int = 0, offset: int = 0
) -> bytes:
    packet = dpkt.ip.IP(
        src=socket.inet_aton(src), dst=socket.inet_aton(dst), p=proto, ttl=64, data=segment
    )
    packet.len = 20 + len(segment)
    packet.mf, packet.offset = mf, offset
    return bytes(packet)


def ip6(
    segment: bytes, src: str = C6, dst: str = S6, hop_by_hop: bool = False, fragment: bool = False
) -> bytes:
    # built by hand: dpkt's IP6 does not pack extension headers with a correct next-header chain
    ext = b""
    nxt = 6
    if fragment:  # the first fragment (offset 0, more fragments follow)
        ext = bytes([nxt, 0]) + struct.pack(">HI", 1, 77)
        nxt = 44
    if hop_by_hop:  # 8 bytes: one PadN option
        ext = bytes([nxt, 0]) + b"\x01\x04\x00\x00\x00\x00" + ext
        nxt = 0
    head = struct.pack(">IHBB", 0x60000000, len(ext) + len(segment), nxt, 64)
    return (
        head
        + socket.inet_pton(socket.AF_INET6, src)
        + socket.inet_pton(socket.AF_INET6, dst)
        + ext
        + segment
    )


def ethertype(net: bytes) -> bytes:
    return b"\x08\x00" if net[0] >> 4 == 4 else b"\x86\xdd"


def ethernet(net: bytes, vlans: Sequence[bytes] = ()) -> bytes:
    """Ethernet II; `vlans` are the tag protocol ids of the 802.1Q tags, outermost first."""
    tags = b"".join(tpid + struct.pack(">H", 100 + i) for i, tpid in enumerate(vlans))
    return b"\x02" * 6 + b"\x04" * 6 + tags + ethertype(net) + net


def sll(net: bytes) -> bytes:
    return struct.pack(">HHH", 0, 1, 6) + b"\x04" * 6 + b"\x00\x00" + ethertype(net) + net


def sll2(net: bytes) -> bytes:
    return ethertype(net) + struct.pack(">HiHBB", 0, 3, 1, 0, 6) + b"\x04" * 6 + b"\x00\x00" + net


def null(net: bytes, family: int, order: str) -> bytes:
    return struct.pack(order + "I", family) + net


def data_packet(seq: int, payload: bytes, flags: int = ACK) -> bytes:
    return ethernet(ip4(tcp(seq, payload, flags)))


# ---------------------------------------------------------------------------- capture writers


class LittleEndianPcap(dpkt.pcap.Writer):  # type: ignore[misc]
    # dpkt writes in the host's byte order (its private `__le`); both orders are forced here
    _Writer__le = True


class BigEndianPcap(dpkt.pcap.Writer):  # type: ignore[misc]
    _Writer__le = False


class BigEndianPcapng(dpkt.pcapng.Writer):  # type: ignore[misc]
    _Writer__le = False


class LittleEndianPcapng(dpkt.pcapng.Writer):  # type: ignore[misc]
    _Writer__le = True


Frames = Sequence[tuple[float, bytes]]


def write_pcap(
    path: Path, frames: Frames, linktype: int = 1, nano: bool = False, big: bool = False
) -> Path:
    writer = BigEndianPcap if big else LittleEndianPcap
    with open(path, "wb") as f:
        w = writer(f, snaplen=65535, linktype=linktype, nano=nano)
        for ts, frame in frames:
            w.writepkt(frame, ts)
    return path


@dataclass
class Iface:
    linktype: int
    tsresol: int = 6
    tsoffset: int = 0


def write_pcapng(
    path: Path,
    packets: Sequence[tuple[int, int, bytes]],
    ifaces: Sequence[Iface],
    big: bool = False,
    mode: str = "wb",
) -> Path:
    """`packets`: (interface, timestamp in the interface's units, frame)."""
    idb = dpkt.pcapng.InterfaceDescriptionBlock if big else dpkt.pcapng.InterfaceDescriptionBlockLE
    opt = dpkt.pcapng.PcapngOption if big else dpkt.pcapng.PcapngOptionLE
    epb = dpkt.pcapng.EnhancedPacketBlock if big else dpkt.pcapng.EnhancedPacketBlockLE
    shb = dpkt.pcapng.SectionHeaderBlock if big else dpkt.pcapng.SectionHeaderBlockLE
    order = ">" if big else "<"
    blocks = []
    for iface in ifaces:
        opts = [opt(code=9, data=bytes([iface.tsresol]))]
        if iface.tsoffset:
            opts.append(opt(code=14, data=struct.pack(order + "q", iface.tsoffset)))
        opts.append(opt(code=0))
        blocks.append(idb(linktype=iface.linktype, snaplen=65535, opts=opts))
    writer = BigEndianPcapng if big else LittleEndianPcapng
    with open(path, mode) as f:
        w = writer(f, shb=shb(), idb=blocks)
        for iface_id, ticks, frame in packets:
            w.writepkt(
                epb(
                    iface_id=iface_id,
                    ts_high=ticks >> 32,
                    ts_low=ticks & 0xFFFFFFFF,
                    pkt_data=frame,
                )
            )
    return path


def gzipped(path: Path) -> Path:
    out = path.with_name(path.name + ".gz")
    out.write_bytes(gzip.compress(path.read_bytes()))
    return out


def read_segments(path: Path) -> list[Segment]:
    return [s for s in map(pcap.segment, pcap.packets(path)) if s is not None]


# ---------------------------------------------------------------------------- containers


FRAMES = [(1700000000.25 + i, data_packet(1000 + 10 * i, bytes([i]) * (i + 1))) for i in range(5)]


@pytest.mark.parametrize("big", [False, True])
@pytest.mark.parametrize("nano", [False, True])
def test_pcap_both_byte_orders_and_resolutions(tmp_path: Path, big: bool, nano: bool) -> None:
    path = write_pcap(tmp_path / "a.pcap", FRAMES, nano=nano, big=big)
    magic = {(False, False): "d4c3b2a1", (True, False): "a1b2c3d4"}
    magic |= {(False, True): "4d3cb2a1", (True, True): "a1b23c4d"}
    assert path.read_bytes()[:4].hex() == magic[big, nano]  # the writer did use that order
    assert pcap.detect(path) == "pcap"
    got = list(pcap.packets(path))
    assert [p.data for p in got] == [f for _, f in FRAMES]
    assert [p.ts_ns for p in got] == [1700000000_250000000 + i * 10**9 for i in range(5)]
    assert [p.ts for p in got] == [ts for ts, _ in FRAMES]
    assert {p.linktype for p in got} == {1}
    indexes = [p.index for p in got]
    assert indexes == sorted(set(indexes)) and indexes[0] == 24


def test_pcap_nanoseconds_kept_exactly(tmp_path: Path) -> None:
    # dpkt's writer rounds a float timestamp: the header is written by hand to hold 9 digits
    path = write_pcap(tmp_path / "n.pcap", FRAMES[:1], nano=True, big=True)
    raw = bytearray(path.read_bytes())
    raw[24:32] = struct.pack(">II", 1700000000, 123456789)
    path.write_bytes(bytes(raw))
    (packet,) = pcap.packets(path)
    assert packet.ts_ns == 1700000000_123456789
    assert packet.ts == pytest.approx(1700000000.123456789)


def test_pcapng_interfaces_link_types_and_resolutions(tmp_path: Path) -> None:
    eth = data_packet(1, b"over ethernet")
    raw = ip6(tcp(2, b"raw ipv6"))
    cooked = sll(ip4(tcp(3, b"cooked")))
    ifaces = [Iface(1), Iface(101, tsresol=9, tsoffset=100), Iface(113, tsresol=0x80 | 10)]
    path = write_pcapng(
        tmp_path / "a.pcapng",
        [(0, 1_700_000_000_000_001, eth), (1, 5_000_000_007, raw), (2, 3 * 1024 + 512, cooked)],
        ifaces,
    )
    assert pcap.detect(path) == "pcapng"
    got = list(pcap.packets(path))
    assert [(p.linktype, p.data) for p in got] == [(1, eth), (101, raw), (113, cooked)]
    assert [p.ts_ns for p in got] == [1_700_000_000_000_001_000, 105_000_000_007, 3_500_000_000]
    assert [s.payload for s in read_segments(path)] == [b"over ethernet", b"raw ipv6", b"cooked"]


def test_pcapng_sections_in_both_byte_orders(tmp_path: Path) -> None:
    # two sections back to back (as `cat a.pcapng b.pcapng` makes), one in each byte order:
    # interfaces are per section, and so is the byte order of every block length
    path = tmp_path / "two.pcapng"
    write_pcapng(path, [(0, 10, data_packet(1, b"first"))], [Iface(1)], big=False)
    write_pcapng(
        path, [(1, 20, ip4(tcp(2, b"second")))], [Iface(1), Iface(101)], big=True, mode="ab"
    )
    got = list(pcap.packets(path))
    assert [p.linktype for p in got] == [1, 101]
    assert [s.payload for s in read_segments(path)] == [b"first", b"second"]
    starts = [start for start, _ in pcap.ranges(path, 1)]
    assert [p.index for p in got] == [s for s in starts if s in {p.index for p in got}]
    assert [p for r in pcap.ranges(path, 1) for p in pcap.packets(path, *r)] == got


def test_pcapng_obsolete_packet_block(tmp_path: Path) -> None:
    # old Wireshark wrote Packet Blocks (type 2); dpkt's writer does not, so one is appended
    path = write_pcapng(tmp_path / "pb.pcapng", [(0, 7, data_packet(1, b"enhanced"))], [Iface(1)])
    old = dpkt.pcapng.PacketBlockLE(
        iface_id=0, ts_high=0, ts_low=9, pkt_data=data_packet(9, b"old")
    )
    with open(path, "ab") as f:
        f.write(bytes(old))
    got = list(pcap.packets(path))
    assert [p.ts_ns for p in got] == [7000, 9000]
    assert [s.payload for s in read_segments(path)] == [b"enhanced", b"old"]


@pytest.mark.parametrize("kind", ["pcap", "pcapng"])
def test_gzip(tmp_path: Path, kind: str) -> None:
    plain = tmp_path / f"a.{kind}"
    if kind == "pcap":
        write_pcap(plain, FRAMES)
    else:
        write_pcapng(plain, [(0, i + 1, f) for i, (_, f) in enumerate(FRAMES)], [Iface(1)])
    packed = gzipped(plain)
    assert pcap.detect(packed) == f"{kind}.gz"
    assert pcap.ranges(packed, 10) == [(0, pcap.TO_END)]
    assert list(pcap.packets(packed)) == list(pcap.packets(plain))
    assert list(pcap.packets(packed, *pcap.ranges(packed, 10)[0])) == list(pcap.packets(plain))


def test_gzip_read_without_going_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # seeking back in a gzip file decompresses it again from the start: reading must not,
    # but for the one step back to the start after dpkt has read the section header
    frames = [(0, i + 1, data_packet(i, b"x" * 100)) for i in range(2000)]
    packed = gzipped(write_pcapng(tmp_path / "a.pcapng", frames, [Iface(1)]))
    rewinds = []
    rewind = gzip._GzipReader._rewind  # type: ignore[attr-defined]

    def counted(self: object) -> None:
        rewinds.append(1)
        rewind(self)

    monkeypatch.setattr(gzip._GzipReader, "_rewind", counted)  # type: ignore[attr-defined]
    assert len(list(pcap.packets(packed))) == 2000
    assert len(rewinds) <= 1


def test_detect_rejects_other_files(tmp_path: Path) -> None:
    (tmp_path / "x.bin").write_bytes(b"\x00\x01\x02\x03 not a capture")
    (tmp_path / "x.gz").write_bytes(gzip.compress(b"plain text"))
    (tmp_path / "bad.gz").write_bytes(b"\x1f\x8b garbage")
    (tmp_path / "empty").write_bytes(b"")
    for name in ("x.bin", "x.gz", "bad.gz", "empty"):
        assert pcap.detect(tmp_path / name) is None
    with pytest.raises(pcap.BadCapture, match="x.bin"):
        pcap.ranges(tmp_path / "x.bin", 100)


def test_file_cut_short(tmp_path: Path) -> None:
    frames = [FRAMES[0], FRAMES[4]]  # the second carries 5 payload bytes
    path = write_pcap(tmp_path / "a.pcap", frames)
    whole = path.read_bytes()
    path.write_bytes(whole[:-3])  # the last record loses its last 3 bytes
    got = list(pcap.packets(path))
    assert [p.data for p in got] == [frames[0][1], frames[1][1][:-3]]
    (seg,) = [s for s in map(pcap.segment, got[1:]) if s is not None]
    assert seg.missing == 3
    path.write_bytes(whole[: 24 + 16 + len(FRAMES[0][1]) + 5])  # the next header is cut
    assert [p.data for p in pcap.packets(path)] == [FRAMES[0][1]]


# ---------------------------------------------------------------------------- ranges


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.integers(0, 300), min_size=0, max_size=30),
    target=st.integers(1, 4000),
    kind=st.sampled_from(["pcap", "pcapng"]),
)
def test_ranges_cut_on_records_and_cover_the_file(sizes: list[int], target: int, kind: str) -> None:
    frames = [(1000.0 + i, data_packet(i, bytes([i % 256]) * n)) for i, n in enumerate(sizes)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"a.{kind}"
        if kind == "pcap":
            write_pcap(path, frames)
        else:
            write_pcapng(
                path, [(0, i, f) for i, (_, f) in enumerate(frames)], [Iface(1), Iface(113)]
            )
        whole = list(pcap.packets(path))
        cuts = pcap.ranges(path, target)
        size = path.stat().st_size
        assert [p.data for p in whole] == [f for _, f in frames]
        if not cuts:
            assert kind == "pcap" and not frames
            return
        # contiguous, to the end of the file, each (but the last) at least `target` long
        assert all(a[1] == b[0] for a, b in zip(cuts, cuts[1:], strict=False))
        assert cuts[-1][1] == size
        assert all(end - start >= target for start, end in cuts[:-1])
        # every range starts on a record: a packet's, or (pcapng) a block ahead of the first
        # packet (section header, interfaces)
        records = {p.index for p in whole}
        assert cuts[0][0] == (24 if kind == "pcap" else 0)
        ahead = min(records, default=size)
        assert all(start in records or start < ahead for start, _ in cuts[1:])
        by_range = [p for start, end in cuts for p in pcap.packets(path, start, end)]
        assert by_range == whole


def test_ranges_of_a_pcap_follow_record_lengths(tmp_path: Path) -> None:
    path = write_pcap(tmp_path / "a.pcap", FRAMES, big=True)
    lengths = [16 + len(f) for _, f in FRAMES]
    starts = [24 + sum(lengths[:i]) for i in range(len(lengths))]
    assert [p.index for p in pcap.packets(path)] == starts
    assert pcap.ranges(path, 1) == list(
        zip(starts, [*starts[1:], path.stat().st_size], strict=True)
    )
    assert pcap.ranges(path, 10**9) == [(24, path.stat().st_size)]
    # 150 bytes: records of 71..75 bytes, so a range closes at the first record start 150
    # or more bytes past its own start: after three records, then the rest
    assert [sum(lengths[:3]), lengths[3]] == [216, 74]
    assert pcap.ranges(path, 150) == [(starts[0], starts[3]), (starts[3], path.stat().st_size)]


# ---------------------------------------------------------------------------- link layers


def packet(frame: bytes, linktype: int) -> Packet:
    return Packet(index=7, ts=1.5, ts_ns=1_500_000_000, linktype=linktype, data=frame)


V4 = ip4(tcp(123456, b"payload v4", ACK))
V6 = ip6(tcp(123456, b"payload v6", ACK), hop_by_hop=True)

LINKS = {
    "ethernet": (1, ethernet),
    "vlan": (1, lambda n: ethernet(n, [b"\x81\x00"])),
    "qinq": (1, lambda n: ethernet(n, [b"\x88\xa8", b"\x81\x00"])),
    "sll": (113, sll),
    "sll2": (276, sll2),
    "null-le": (0, lambda n: null(n, 2 if n[0] >> 4 == 4 else 30, "<")),
    "null-be": (0, lambda n: null(n, 2 if n[0] >> 4 == 4 else 10, ">")),
    "loop": (108, lambda n: null(n, 2 if n[0] >> 4 == 4 else 24, ">")),
    "raw": (101, lambda n: n),
    "raw-dlt12": (12, lambda n: n),
    "raw-dlt14": (14, lambda n: n),
}


@pytest.mark.parametrize("link", sorted(LINKS))
@pytest.mark.parametrize("version", [4, 6])
def test_link_layers(tmp_path: Path, link: str, version: int) -> None:
    linktype, wrap = LINKS[link]
    net = V4 if version == 4 else V6
    path = write_pcap(tmp_path / "a.pcap", [(2.5, wrap(net))], linktype=linktype)
    (seg,) = read_segments(path)
    src, dst = (C4, S4) if version == 4 else (C6, S6)
    assert (seg.src, seg.sport, seg.dst, seg.dport) == (src, CPORT, dst, SPORT)
    assert (seg.seq, seg.payload, seg.missing) == (123456, f"payload v{version}".encode(), 0)
    assert (seg.syn, seg.fin, seg.rst, seg.ack_flag) == (False, False, False, True)
    assert (seg.ts_ns, seg.index) == (2_500_000_000, 24)


def test_ethernet_padding_is_not_payload() -> None:
    frame = ethernet(ip4(tcp(1, b"ab"))) + b"\x00" * 10  # padded up to the 60-byte minimum
    seg = pcap.segment(packet(frame, 1))
    assert seg is not None and seg.payload == b"ab" and seg.missing == 0


def test_what_is_skipped_and_why() -> None:
    cases = {
        "fragment": [
            packet(ethernet(ip4(tcp(1, b"x" * 40), mf=1)), 1),
            packet(ethernet(ip4(b"tail of a segment", offset=185)), 1),
            packet(ethernet(ip6(tcp(1, b"x" * 40), fragment=True)), 1),
            packet(ethernet(ip6(tcp(1, b"x" * 40), fragment=True, hop_by_hop=True)), 1),
        ],
        "not-tcp": [packet(ethernet(ip4(b"\x00" * 8, proto=17)), 1)],
        "not-ip": [packet(b"\xff" * 12 + b"\x08\x06" + b"\x00" * 28, 1)],
        "linktype": [packet(V4, 147)],
        "malformed": [packet(ethernet(ip4(tcp(1))[:30]), 1), packet(b"\x45\x00", 101)],
    }
    tally: Counter[str] = Counter()
    for reason, packets in cases.items():
        for p in packets:
            assert pcap.segment(p) is None, reason
            assert pcap.skipped(p) == reason
    good = packet(ethernet(V4), 1)
    all_packets = [p for ps in cases.values() for p in ps] + [good]
    assert [s.payload for s in pcap.segments(all_packets, tally)] == [b"payload v4"]
    assert tally == Counter({k: len(v) for k, v in cases.items()} | {"tcp": 1})
    assert pcap.skipped(good) is None


def test_truncated_packets_count_missing_bytes() -> None:
    payload = bytes(range(200))
    for net in (ip4(tcp(500, payload)), ip6(tcp(500, payload), hop_by_hop=True)):
        frame = ethernet(net)
        seg = pcap.segment(packet(frame[:-150], 1))  # a snaplen 150 bytes short
        assert seg is not None
        assert seg.payload == payload[:50] and seg.missing == 150


# ---------------------------------------------------------------------------- reassembly helpers


_counter = iter(range(10**9))


def seg(
    seq: int,
    payload: bytes = b"",
    *,
    syn: bool = False,
    fin: bool = False,
    rst: bool = False,
    ack: bool = True,
    index: int | None = None,
    missing: int = 0,
    src: tuple[str, int] = (C4, CPORT),
    dst: tuple[str, int] = (S4, SPORT),
) -> Segment:
    i = next(_counter) if index is None else index
    return Segment(
        src=src[0], sport=src[1], dst=dst[0], dport=dst[1], seq=seq % SEQ_MOD, ack=0,
        syn=syn, fin=fin, rst=rst, payload=payload, ts=float(i), ts_ns=i * 10**9, index=i,
        missing=missing, ack_flag=ack,
    )  # fmt: skip


# ---------------------------------------------------------------------------- reassembly


def test_reordered_segments() -> None:
    segs = [
        seg(100, syn=True, ack=False),
        seg(111, b"world", index=50),
        seg(101, b"hello, ", index=60),
        seg(108, b"my ", index=55),
    ]
    # 101..108 "hello, " then 108..111 "my " then 111.. "world"
    r = reassemble(segs)
    r.check()
    assert r.data() == b"hello, my world"
    assert [(p.offset, p.first_seq) for p in r.parts] == [(0, 101)]
    assert r.parts[0].reads == [(0, 7, 60.0), (7, 3, 55.0), (10, 5, 50.0)]
    assert (r.gaps, r.conflicts, r.started_mid_stream, r.isn) == ([], [], False, 100)
    assert reassemble(list(reversed(segs))).data() == r.data()


def test_identical_duplicates_count_once() -> None:
    segs = [seg(1, b"abcdef"), seg(1, b"abcdef"), seg(4, b"defgh"), seg(3, b"cd")]
    r = reassemble(segs)
    r.check()
    assert r.data() == b"abcdefgh"
    assert (r.payload_bytes, r.unique_bytes, r.duplicate_bytes) == (19, 8, 11)
    assert r.conflicts == []


def test_differing_copy_reported_first_copy_kept() -> None:
    first = seg(1001, b"0123456789", index=10)
    later = seg(1004, b"34XY78", index=20)  # captured later, differs at stream bytes 5..6
    earlier = seg(1010, b"9abc", index=5)  # captured before `first`: its '9' wins over it
    r = reassemble([later, first, seg(1000, syn=True, ack=False, index=1), earlier])
    r.check()
    assert r.data() == b"0123456789abc"
    assert r.conflicts == [Conflict(offset=5, length=2, index=20, kept=(10,))]
    assert [(read.offset, read.length) for read in r.parts[0].reads] == [(0, 9), (9, 4)]


def test_conflicting_retransmission_later_in_capture_loses() -> None:
    r = reassemble([seg(1, b"AAAA", index=3), seg(1, b"BBBB", index=2)])
    assert r.data() == b"BBBB"
    assert r.conflicts == [Conflict(0, 4, 3, (2,))]


def test_missing_segment_is_a_gap_with_its_sequence_range() -> None:
    r = reassemble(
        [
            seg(9, syn=True, ack=False),
            seg(10, b"aaaa"),
            seg(20, b"cccc"),
            seg(24, fin=True),
            seg(30),
        ]
    )
    r.check()
    assert [(p.offset, p.data, p.first_seq) for p in r.parts] == [
        (0, b"aaaa", 10),
        (10, b"cccc", 20),
    ]
    # bytes 14..20 never seen; the FIN at 24 ends the stream: nothing follows a FIN, so the
    # segment at 30 after it (a bare ACK a broken stack sent) claims no bytes
    assert r.gaps == [Gap(4, 6, 14, 20)]
    assert r.length == 14 and r.unique_bytes + r.gap_bytes == 14


def test_the_ack_after_a_fin_is_not_a_missing_byte() -> None:
    """The FIN takes sequence number 24; the client's last ACK carries 25: no gap."""
    r = reassemble(
        [seg(9, syn=True, ack=False), seg(10, b"abcdefghijklmn"), seg(24, fin=True), seg(25)]
    )
    r.check()
    assert r.gaps == [] and r.length == 14


def test_gap_after_syn_before_the_first_byte_seen() -> None:
    r = reassemble([seg(99, syn=True, ack=False), seg(110, b"late")])
    r.check()
    assert r.gaps == [Gap(0, 10, 100, 110)] and r.parts[0].offset == 10


def test_sequence_numbers_wrap() -> None:
    isn = SEQ_MOD - 6
    payload = bytes(range(30))
    segs = [seg(isn, syn=True, ack=False)] + [
        seg(isn + 1 + i, payload[i : i + 5]) for i in range(0, 30, 5)
    ]
    random.Random(1).shuffle(segs)
    r = reassemble(segs)
    r.check()
    assert r.data() == payload and r.parts[0].first_seq == SEQ_MOD - 5
    del segs[[s.seq for s in segs].index(5)]  # stream bytes 10..15: seq 5..10, past the wrap
    r = reassemble(segs)
    assert r.gaps == [Gap(10, 5, 5, 10)] and r.data() == payload[:10] + payload[15:]


def test_capture_starting_mid_stream() -> None:
    r = reassemble([seg(5000, b"later"), seg(4990, b"retransmit"), seg(5005, b"!")])
    r.check()
    assert r.started_mid_stream and r.isn is None
    assert r.data() == b"retransmitlater!" and r.parts[0].first_seq == 4990
    assert r.gaps == []


def test_truncated_segment_leaves_a_gap_unless_retransmitted() -> None:
    cut = seg(101, b"abc", missing=7, index=2)
    rest = seg(111, b"klm", index=3)
    r = reassemble([seg(100, syn=True, ack=False, index=1), cut, rest])
    r.check()
    assert r.gaps == [Gap(3, 7, 104, 111)] and r.data() == b"abcklm"
    r = reassemble([seg(100, syn=True, ack=False, index=1), cut])  # the cut one is the last
    r.check()
    assert (r.gaps, r.length, r.data()) == ([Gap(3, 7, 104, 111)], 10, b"abc")
    full = seg(101, b"abcdefghij", index=4)  # the retransmission, whole
    r = reassemble([seg(100, syn=True, ack=False, index=1), cut, rest, full])
    r.check()
    assert r.gaps == [] and r.data() == b"abcdefghijklm" and r.conflicts == []


def test_truncated_packet_through_a_capture(tmp_path: Path) -> None:
    payload = bytes(range(256)) * 4
    frames = [
        (1.0, data_packet(1, b"", SYN)),
        (2.0, data_packet(2, payload)),
        (3.0, data_packet(2 + len(payload), b"tail")),
    ]
    path = write_pcap(tmp_path / "a.pcap", frames)
    raw = bytearray(path.read_bytes())
    # rewrite the second record as tcpdump -s 200 would have: caplen 200, orig_len unchanged
    second = 24 + 16 + len(frames[0][1])
    struct.pack_into("<I", raw, second + 8, 200)
    path.write_bytes(
        bytes(raw[: second + 16 + 200]) + bytes(raw[second + 16 + len(frames[1][1]) :])
    )
    segs = read_segments(path)
    assert [s.missing for s in segs] == [0, len(payload) - (200 - 54), 0]
    r = reassemble(segs)
    r.check()
    kept = 200 - 54
    assert r.data() == payload[:kept] + b"tail"
    assert r.gaps == [Gap(kept, len(payload) - kept, 2 + kept, 2 + len(payload))]


def test_connection_roles() -> None:
    mid = seg(1, b"x", src=(S4, SPORT), dst=(C4, CPORT))
    assert connection_key(mid, {SPORT}) == (((C4, CPORT), (S4, SPORT)), "s2c")
    # no port known: the SYN says who the client is, though its port is the lower one
    syn = seg(1, syn=True, ack=False, src=(C4, 80), dst=(S4, 9000))
    assert connection_key(syn, ()) == (((C4, 80), (S4, 9000)), "c2s")
    synack = seg(1, syn=True, ack=True, src=(S4, 9000), dst=(C4, 80))
    assert connection_key(synack, ()) == (((C4, 80), (S4, 9000)), "s2c")
    # nothing to go by: the lower port serves
    assert connection_key(seg(1, b"x", src=(C4, 80), dst=(S4, 9000)), ()) == (
        ((S4, 9000), (C4, 80)),
        "s2c",
    )
    assert connection_name((C4, CPORT), (S4, SPORT)) == "10.0.0.1_40000-10.0.0.2_5552"
    assert connection_name((C6, CPORT), (S6, SPORT), 2) == "2001.db8..1_40000-2001.db8..2_5552#2"


def test_connections_decide_roles_once_and_split_on_port_reuse() -> None:
    c, s = (C4, 80), (S4, 9000)  # the client has the lower port: only the SYN tells
    first = [
        seg(100, syn=True, ack=False, src=c, dst=s),
        seg(500, syn=True, ack=True, src=s, dst=c),
        seg(101, b"hi", src=c, dst=s),
        seg(501, b"yo", src=s, dst=c),
        seg(103, fin=True, src=c, dst=s),
        seg(503, fin=True, src=s, dst=c),
    ]
    retransmitted_syn = seg(100, syn=True, ack=False, src=c, dst=s)
    second = [
        seg(7000, syn=True, ack=False, src=c, dst=s),
        seg(7001, b"again", src=c, dst=s),
        seg(7006, rst=True, src=c, dst=s),
    ]
    other = [seg(1, b"other", src=(C4, 81), dst=s)]
    third = [seg(9000, syn=True, ack=False, src=c, dst=s), seg(9001, b"third", src=c, dst=s)]
    found = connections([*third, *second, *first, retransmitted_syn, *other])  # any order
    assert [(x.name, len(x.segments)) for x in found] == [
        ("10.0.0.1_80-10.0.0.2_9000", 7),
        ("10.0.0.1_80-10.0.0.2_9000#2", 3),
        ("10.0.0.2_9000-10.0.0.1_81", 1),
        ("10.0.0.1_80-10.0.0.2_9000#3", 2),
    ]
    assert reassemble(found[0].direction("c2s")).data() == b"hi"
    assert reassemble(found[0].direction("s2c")).data() == b"yo"
    assert reassemble(found[1].direction("c2s")).data() == b"again"
    assert reassemble(found[3].direction("c2s")).data() == b"third"


def test_empty_direction() -> None:
    r = reassemble([])
    r.check()
    assert (r.parts, r.gaps, r.length) == ([], [], 0)
    r = reassemble([seg(5, syn=True, ack=False), seg(6)])
    r.check()
    assert (r.parts, r.gaps, r.length, r.started_mid_stream) == ([], [], 0, False)


# ---------------------------------------------------------------------------- the whole way


@st.composite
def streams(draw: st.DrawFn) -> tuple[bytes, int, list[tuple[int, int, str]], bool, bool, int]:
    data = draw(st.binary(max_size=2000))
    isn = draw(st.one_of(st.integers(0, SEQ_MOD - 1), st.integers(SEQ_MOD - 2100, SEQ_MOD - 1)))
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(data) - 1)), max_size=20))))
    bounds = [0, *[c for c in cuts if 0 < c < len(data)], len(data)]
    pieces = [(a, b) for a, b in zip(bounds, bounds[1:], strict=False) if b > a]
    fates = st.sampled_from(["keep", "keep", "drop", "twice"])
    plan = [(a, b, draw(fates)) for a, b in pieces]
    # overlapping retransmissions of arbitrary spans, with the same bytes
    extra = draw(st.lists(st.tuples(st.integers(0, len(data)), st.integers(1, 300)), max_size=5))
    plan += [(a, min(len(data), a + n), "keep") for a, n in extra if a < len(data)]
    return data, isn, plan, draw(st.booleans()), draw(st.booleans()), draw(st.integers(0, 2**32))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=streams())
def test_capture_write_read_reassemble(
    case: tuple[bytes, int, list[tuple[int, int, str]], bool, bool, int],
) -> None:
    data, isn, plan, with_syn, with_fin, seed = case
    frames: list[bytes] = []
    written: list[tuple[int, int]] = []
    for a, b, fate in plan:
        copies = {"keep": 1, "drop": 0, "twice": 2}[fate]
        frames += [data_packet(isn + 1 + a, data[a:b])] * copies
        written += [(a, b)] * copies
    if with_syn:
        frames.append(data_packet(isn, b"", SYN))
    if with_fin:
        frames.append(data_packet(isn + 1 + len(data), b"", FIN))
    random.Random(seed).shuffle(frames)
    with tempfile.TemporaryDirectory() as tmp:
        path = write_pcap(Path(tmp) / "a.pcap", [(float(i), f) for i, f in enumerate(frames)])
        r = reassemble(read_segments(path))
    r.check()
    covered = [False] * len(data)
    for a, b in written:
        covered[a:b] = [True] * (b - a)
    if not any(covered) and not with_syn:
        assert (r.parts, r.gaps, r.length) == ([], [], 0)
        return
    first = 0 if with_syn else covered.index(True)
    last = len(data) if with_fin else max(b for a, b in written if b > a) if written else 0
    assert r.started_mid_stream is not with_syn
    assert r.length == max(0, last - first)
    assert r.payload_bytes == sum(b - a for a, b in written)
    assert r.conflicts == []
    for part in r.parts:
        assert part.data == data[first + part.offset : first + part.end]
        assert part.first_seq == (isn + 1 + first + part.offset) % SEQ_MOD
        assert all(covered[first + part.offset : first + part.end])
        assert sum(read.length for read in part.reads) == len(part.data)
    for gap in r.gaps:
        assert not any(covered[first + gap.offset : first + gap.offset + gap.length])
        assert gap.seq_start == (isn + 1 + first + gap.offset) % SEQ_MOD
        assert gap.seq_end == (gap.seq_start + gap.length) % SEQ_MOD
    assert r.unique_bytes == sum(covered[first:last])


@pytest.mark.parametrize("seed", range(40))
def test_reassembly_takes_whole_copies_only_where_the_sweep_would(seed: int) -> None:
    """`_winners`' shortcut (no copy overlaps the next) gives the sweep's pieces, and copies
    that overlap still go through the sweep."""
    rng = random.Random(seed)
    copies, at = [], 1000
    for packet in rng.sample(range(100), rng.randint(1, 30)):
        at += rng.choice([0, 0, 0, 5]) - (
            rng.randint(1, 20) if seed % 2 and rng.random() < 0.2 else 0
        )
        length = rng.randint(1, 50)
        copies.append(_reassembly._Copy(at, at + length, packet, 0.0, bytes(length)))
        at += length
    by_start = sorted(copies, key=lambda c: (c.start, c.packet))
    assert _reassembly._winners(copies) == _reassembly._sweep(by_start)
