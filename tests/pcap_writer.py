"""Turn a capture-proxy recording into the pcap tcpdump would have written of the same session.

Every read event of a connection's index becomes TCP segments (at most `mss` bytes each) of
that direction at that wall time, after a SYN handshake and before a FIN exchange, with the
sequence and acknowledgement numbers a real stack would use. Tests then damage the packet list
(reorder, duplicate, drop, start mid-connection) before writing it, and check what the decoder
makes of it against the recording itself.
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from pathlib import Path

import dpkt  # type: ignore[import-untyped]

CLIENT_IP = "10.0.0.1"
SERVER_IP = "10.0.0.2"


@dataclass
class Packet:
    ts: float
    direction: str  # c2s / s2c
    seq: int
    flags: int
    payload: bytes
    frame: bytes  # the Ethernet frame


@dataclass
class Connection:
    name: str
    client_port: int
    server_port: int
    packets: list[Packet]


def _frame(
    src: str, dst: str, sport: int, dport: int, seq: int, ack: int, flags: int, payload: bytes
) -> bytes:
    tcp = dpkt.tcp.TCP(
        sport=sport,
        dport=dport,
        seq=seq & 0xFFFFFFFF,
        ack=ack & 0xFFFFFFFF,
        flags=flags,
        win=65535,
        data=payload,
    )
    ip = dpkt.ip.IP(
        src=socket.inet_aton(src),
        dst=socket.inet_aton(dst),
        p=dpkt.ip.IP_PROTO_TCP,
        data=tcp,
        ttl=64,
    )
    ip.len = len(ip)  # dpkt computes lengths and checksums when the packet is packed
    eth = dpkt.ethernet.Ethernet(
        src=b"\x02\x00\x00\x00\x00\x01",
        dst=b"\x02\x00\x00\x00\x00\x02",
        type=dpkt.ethernet.ETH_TYPE_IP,
        data=ip,
    )
    return bytes(eth)


def connection(
    folder: Path,
    name: str,
    client_port: int,
    server_port: int,
    mss: int = 1448,
    isn: tuple[int, int] = (1_000_000, 2_000_000),
) -> Connection:
    """The packets of one recorded connection (`name`.c2s.bin, .s2c.bin, .index.jsonl)."""
    data = {d: (folder / f"{name}.{d}.bin").read_bytes() for d in ("c2s", "s2c")}
    reads = []
    for line in (folder / f"{name}.index.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event.get("event") == "read" and event.get("length"):
            reads.append((event["wall"], event["direction"], event["offset"], event["length"]))
    reads.sort()
    start = reads[0][0] - 0.001 if reads else 0.0
    seq = {"c2s": isn[0], "s2c": isn[1]}
    ends = {
        "c2s": (CLIENT_IP, SERVER_IP, client_port, server_port),
        "s2c": (SERVER_IP, CLIENT_IP, server_port, client_port),
    }
    other = {"c2s": "s2c", "s2c": "c2s"}
    packets: list[Packet] = []

    def add(ts: float, d: str, flags: int, payload: bytes = b"") -> None:
        src, dst, sport, dport = ends[d]
        ack = seq[other[d]] if flags & dpkt.tcp.TH_ACK else 0  # the next byte expected
        frame = _frame(src, dst, sport, dport, seq[d], ack, flags, payload)
        packets.append(Packet(ts, d, seq[d], flags, payload, frame))

    syn, ack_, fin, psh = dpkt.tcp.TH_SYN, dpkt.tcp.TH_ACK, dpkt.tcp.TH_FIN, dpkt.tcp.TH_PUSH
    add(start - 0.0003, "c2s", syn)
    seq["c2s"] += 1  # a SYN takes one sequence number
    add(start - 0.0002, "s2c", syn | ack_)
    seq["s2c"] += 1
    add(start - 0.0001, "c2s", ack_)
    for wall, d, offset, length in reads:
        chunk = data[d][offset : offset + length]
        for i in range(0, len(chunk), mss):
            piece = chunk[i : i + mss]
            add(wall, d, ack_ | psh, piece)
            seq[d] += len(piece)
    end = (reads[-1][0] if reads else start) + 0.001
    add(end, "c2s", fin | ack_)
    seq["c2s"] += 1
    add(end + 0.0001, "s2c", fin | ack_)
    seq["s2c"] += 1
    add(end + 0.0002, "c2s", ack_)
    return Connection(name, client_port, server_port, packets)


def write(path: Path, packets: list[Packet], nano: bool = False) -> None:
    with path.open("wb") as f:
        writer = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB, nano=nano)
        for p in packets:
            writer.writepkt(p.frame, ts=p.ts)


def session(folder: Path, server_port: int) -> list[Packet]:
    """Every recorded connection in `folder` as packets, in time order (client ports 40001...)."""
    names = sorted(p.name.split(".")[0] for p in folder.glob("*.index.jsonl"))
    conns = [connection(folder, name, 40001 + i, server_port) for i, name in enumerate(names)]
    return sorted((p for c in conns for p in c.packets), key=lambda p: p.ts)


def main(argv: list[str] | None = None) -> int:
    """`python tests/pcap_writer.py CAPTURE_FOLDER OUT.pcap [PORT]`: the pcap example of
    docs/pipeline.md is the shipped Streams session written this way (server port 5552 by default)."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (2, 3):
        print(main.__doc__, file=sys.stderr)
        return 2
    packets = session(Path(args[0]), int(args[2]) if len(args) == 3 else 5552)
    write(Path(args[1]), packets)
    print(f"{args[1]}: {len(packets)} packets")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
