"""pcap benchmark for `specgen decode`: a ~1 GiB pcap on Spark against one plain Python process.

    .venv/bin/python bench/pcap.py [--size 1G | --frames N] [--work DIR] [--keep] [--no-local1]
                                   [--cluster]

1. Generates bench/scale.py's synthetic RabbitMQ Streams capture (its `generate`, with an index
   on every connection: the index's read events say when each 64 KiB of a direction was sent)
   and turns it into the pcap tcpdump would have written on the server: Ethernet/IPv4/TCP,
   server 10.0.0.2:5552, one client address per connection, a SYN handshake (with an MSS
   option), every read split into segments of at most 1448 bytes (the last one with PSH), a
   pure ACK from the receiver after every second segment and at the end of each read, a FIN
   exchange at the end, random ISNs (one connection's client ISN is set so its sequence numbers
   wrap past 2**32), microsecond timestamps that never go backwards, and a UDP datagram now and
   then that is not the protocol's traffic. Headers are packed with `struct` templates and the
   pcap records written by hand: ~6 µs a packet, where dpkt objects per packet (as in
   tests/pcap_writer.py) cost ~95 µs, 100 s for this pcap. The IP and TCP checksums are left
   0, which neither dpkt nor specgen verifies (as with checksum offload).
2. Decodes the pcap, each run in a fresh subprocess whose process tree's RSS is summed every
   0.2 s as in bench/scale.py (its PSS near the RSS peak, at most every 2 s: reading it costs
   the measured run CPU) and whose CPU time is recorded, with the share of the machine's CPU
   that other processes used meanwhile (the machine is shared):
   - "single process": the same work in one plain Python process, no Spark: `pcap.packets` and
     `pcap.segment` over the whole file, the segments grouped by connection (all held until the
     end of the file), `reassembly.connections` and `reassemble`
     per direction, the byte files and indexes written in the layout the pcap job writes, then
     `decode_local` over them;
   - "Spark local[1]" and "Spark local[*]": `pcap_job.run` (what `specgen decode` runs on a
     pcap): stage 1 (packets from file ranges, written as Parquet parts per bucket of
     connections), stage 2 (reassembly, a bucket per task), the decode;
   - with --cluster, "Spark standalone 2x1 core": the same on a standalone cluster of 2 workers
     of 1 core each on loopback (bench/scale.py's `Cluster`), its processes measured too.
3. Checks every run: the frames found, written and reconciled, 0 rejects and 0 gaps, the pcap
   reconciliation (packets = segments + skipped; payload bytes = bytes kept + duplicates), the
   message counts and that every frame has a timestamp, the packet counts against what was
   written, and that each reassembled byte file equals the generated one (SHA-1); prints one
   table with issue 28's targets beside the figures (local[*] >= 1.3x the single process, peak
   < 2 GiB per GiB of pcap, the cluster at least as fast as local[*]) and writes it as JSON to
   bench/results/pcap.json. Exits 1 when a run is wrong.

Frames/s is frames found / the wall time of the whole decode call (pcap to Parquet: for Spark
after the session is up, which is reported as start-up); "streams s" is the part of it spent
turning packets into byte files, "decode s" the rest.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import heapq
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale  # noqa: E402  (bench/scale.py: the capture generator and the memory sampling)

PROTOCOL = scale.PROTOCOL
ROOT = scale.ROOT
RESULTS = ROOT / "bench" / "results" / "pcap.json"
DEFAULT_SIZE = 1 << 30  # bytes of pcap
BYTES_PER_FRAME = 256  # pcap bytes per frame of scale.py's capture (~239 payload + headers)
PORT = 5552
MSS = 1448
ACK_EVERY = 2  # the receiver acknowledges every second segment (delayed ACKs)
NOISE_EVERY = 97  # a UDP datagram (DNS) after every this many reads: packets to skip
SERVER_IP = bytes([10, 0, 0, 2])
MAC_CLIENT = b"\x02\x00\x00\x00\x00\x01"  # the router's side: every client arrives through it
MAC_SERVER = b"\x02\x00\x00\x00\x00\x02"
TARGET_RATIO = 1.3  # issue 28: Spark local[*] vs the single process on the pcap path
TARGET_MIB_PER_GIB = 2048  # issue 28: peak memory of the whole job per GiB of pcap
WRAP_CONNECTION = 0  # this connection's client ISN makes its sequence numbers wrap

# pcap file header (little-endian, microseconds, Ethernet) and per-packet headers
PCAP_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
RECORD = struct.Struct("<IIII")  # ts_sec, ts_usec, incl_len, orig_len
# Ethernet (dst, src, type), IPv4 (ver/ihl, tos, total length, id, DF, ttl, proto, checksum 0,
# src, dst), TCP (ports, seq, ack, data offset, flags, window, checksum 0, urgent pointer)
ETH_IP_TCP = struct.Struct("!6s6sHBBHHHBBH4s4sHHIIBBHHH")
ETH_IP_UDP = struct.Struct("!6s6sHBBHHHBBH4s4sHHHH")
FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10
MSS_OPTION = struct.pack("!BBH", 2, 4, MSS)
WINDOW = 502  # a scaled window, as Linux advertises it


# --------------------------------------------------------------------------------------------
# the pcap


@dataclass
class Written:
    """What the pcap holds, to check the runs against."""

    bytes: int = 0
    packets: int = 0
    segments: int = 0  # TCP packets on PORT: what the job keeps
    data_segments: int = 0
    skipped: int = 0  # the UDP datagrams
    payload_bytes: int = 0
    seconds: float = 0.0
    digests: dict[str, str] = field(default_factory=dict)  # "<connection>.<dir>.bin" -> sha1


@dataclass
class _Conn:
    name: str  # scale.py's name (conn-0001)
    client_ip: bytes
    client_port: int
    isn: dict[str, int]
    files: dict[str, Any]
    hashes: dict[str, Any]
    at: dict[str, int] = field(default_factory=lambda: {"c2s": 0, "s2c": 0})  # bytes sent
    port: int = PORT  # the server's

    @property
    def stream_name(self) -> str:
        """The name the pcap job gives the connection (reassembly.connection_name)."""
        ip = ".".join(map(str, self.client_ip))
        return f"{ip}_{self.client_port}-10.0.0.2_{self.port}"

    def seq(self, direction: str) -> int:
        """The next sequence number `direction` sends (after its SYN)."""
        return (self.isn[direction] + 1 + self.at[direction]) & 0xFFFFFFFF


class PcapWriter:
    def __init__(self, path: Path) -> None:
        self.f = open(path, "wb", buffering=16 << 20)
        self.f.write(PCAP_HEADER)
        self.last_us = 0
        self.ident = 0
        self.out = Written(bytes=len(PCAP_HEADER))

    def tcp(
        self,
        us: int,
        c: _Conn,
        direction: str,
        flags: int,
        payload: bytes | memoryview = b"",
        seq: int | None = None,
    ) -> None:
        us = self.last_us = max(us, self.last_us)  # a capture's timestamps do not go back
        other = "s2c" if direction == "c2s" else "c2s"
        if direction == "c2s":
            src, dst, sport, dport, mac_src, mac_dst = (
                c.client_ip, SERVER_IP, c.client_port, c.port, MAC_CLIENT, MAC_SERVER,
            )  # fmt: skip
        else:
            src, dst, sport, dport, mac_src, mac_dst = (
                SERVER_IP, c.client_ip, c.port, c.client_port, MAC_SERVER, MAC_CLIENT,
            )  # fmt: skip
        options = MSS_OPTION if flags & SYN else b""
        tcp_len = 20 + len(options)
        ack = c.seq(other) if flags & ACK else 0
        if seq is None:
            seq = c.seq(direction)
        self.ident = (self.ident + 1) & 0xFFFF
        size = 14 + 20 + tcp_len + len(payload)
        self.f.write(RECORD.pack(us // 1_000_000, us % 1_000_000, size, size))
        # fmt: off
        self.f.write(
            ETH_IP_TCP.pack(
                mac_dst, mac_src, 0x0800,
                0x45, 0, 20 + tcp_len + len(payload), self.ident, 0x4000, 64, 6, 0, src, dst,
                sport, dport, seq, ack, (tcp_len // 4) << 4, flags, WINDOW, 0, 0,
            )
        )
        # fmt: on
        if options:
            self.f.write(options)
        if payload:
            self.f.write(payload)
            self.out.data_segments += 1
            self.out.payload_bytes += len(payload)
        self.out.packets += 1
        self.out.segments += 1
        self.out.bytes += 16 + size

    def udp(self, us: int, n: int) -> None:
        us = self.last_us = max(us, self.last_us)
        query = struct.pack("!HHHHHH", n & 0xFFFF, 0x0100, 1, 0, 0, 0)  # a DNS query for "bench"
        payload = query + b"\x05bench\x00\x00\x01\x00\x01"
        self.ident = (self.ident + 1) & 0xFFFF
        size = 14 + 20 + 8 + len(payload)
        self.f.write(RECORD.pack(us // 1_000_000, us % 1_000_000, size, size))
        # fmt: off
        self.f.write(
            ETH_IP_UDP.pack(
                MAC_SERVER, MAC_CLIENT, 0x0800,
                0x45, 0, 20 + 8 + len(payload), self.ident, 0x4000, 64, 17, 0,
                bytes([10, 0, 1, 250]), bytes([10, 0, 0, 53]),
                53000 + n % 1000, 53, 8 + len(payload), 0,
            )
        )
        # fmt: on
        self.f.write(payload)
        self.out.packets += 1
        self.out.skipped += 1
        self.out.bytes += 16 + size

    def close(self) -> Written:
        self.f.close()
        return self.out


def _events(folder: Path, i: int, c: _Conn) -> list[tuple[int, int, int, str, str, int, int]]:
    """(µs, connection, n, what, direction, offset, length) of one connection, in time order:
    its handshake, its reads (from its index), its close."""
    reads = []
    with open(folder / f"{c.name}.index.jsonl", encoding="utf-8") as f:
        for line in f:
            e = json.loads(line)
            if e["event"] == "read" and e["length"]:
                us = round(e["wall"] * 1e6)
                reads.append((us, i, 0, "read", e["direction"], e["offset"], e["length"]))
    reads.sort()
    reads = [(us, i, n + 1, *rest) for n, (us, _, _, *rest) in enumerate(reads)]
    first, last = reads[0][0], reads[-1][0]
    return [
        (first - 1000, i, 0, "open", "", 0, 0),
        *reads,
        (last + 1000, i, len(reads) + 1, "close", "", 0, 0),
    ]


def write_pcap(folder: Path, path: Path, seed: int, port: int = PORT) -> Written:
    """The pcap of scale.py's capture in `folder` (every connection indexed), the server on
    `port`; any capture of that layout (bench/tshark.py's AMQP 0-9-1 one too)."""
    started = time.perf_counter()
    rng = random.Random(seed + 1000)
    conns = []
    names = sorted({p.name.split(".")[0] for p in folder.glob("*.c2s.bin")})
    for i, name in enumerate(names):
        isn = {"c2s": rng.getrandbits(32), "s2c": rng.getrandbits(32)}
        if i == WRAP_CONNECTION:  # wraps 16 MiB into the client's stream
            isn["c2s"] = (1 << 32) - (16 << 20)
        conns.append(
            _Conn(
                name,
                bytes([10, 0, 1, i + 1]),
                rng.randint(32768, 60999),
                isn,
                {d: open(folder / f"{name}.{d}.bin", "rb") for d in ("c2s", "s2c")},
                {d: hashlib.sha1() for d in ("c2s", "s2c")},
                port=port,
            )
        )
    w = PcapWriter(path)
    reads = 0
    for us, i, _, what, direction, offset, length in heapq.merge(
        *(_events(folder, i, c) for i, c in enumerate(conns))
    ):
        c = conns[i]
        if what == "open":
            w.tcp(us, c, "c2s", SYN, seq=c.isn["c2s"])
            w.tcp(us + 60, c, "s2c", SYN | ACK, seq=c.isn["s2c"])
            w.tcp(us + 120, c, "c2s", ACK)
        elif what == "close":
            # each FIN takes a sequence number: the peer acknowledges it, and the client's
            # last ACK carries its FIN's sequence number + 1
            w.tcp(us, c, "c2s", FIN | ACK)
            c.at["c2s"] += 1
            w.tcp(us + 50, c, "s2c", FIN | ACK)
            c.at["s2c"] += 1
            w.tcp(us + 100, c, "c2s", ACK)
        else:
            other = "s2c" if direction == "c2s" else "c2s"
            assert offset == c.at[direction], (c.name, direction, offset, c.at[direction])
            data = c.files[direction].read(length)
            assert len(data) == length
            c.hashes[direction].update(data)
            view = memoryview(data)
            n = (length + MSS - 1) // MSS
            t = us - (n - 1)  # 1 µs apart, the last at the read's time
            for k in range(n):
                piece = view[k * MSS : (k + 1) * MSS]
                w.tcp(t + k, c, direction, ACK | (PSH if k == n - 1 else 0), piece)
                c.at[direction] += len(piece)
                if k % ACK_EVERY == ACK_EVERY - 1 or k == n - 1:
                    w.tcp(t + k, c, other, ACK)
            reads += 1
            if reads % NOISE_EVERY == 0:
                w.udp(us, reads)
    for c in conns:
        for d, f in c.files.items():
            assert not f.read(1), f"{c.name}.{d}.bin: bytes left after its last read"
            f.close()
        for d in ("c2s", "s2c"):
            w.out.digests[f"{c.stream_name}.{d}.bin"] = c.hashes[d].hexdigest()
    out = w.close()
    out.seconds = time.perf_counter() - started
    return out


def parse_size(text: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgG]?)i?[bB]?", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"{text}: a size like 64M or 1G")
    scale_ = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]
    return int(float(m.group(1)) * scale_)


# --------------------------------------------------------------------------------------------
# CPU of a process tree and of the machine: how much of the machine a run had


machine_busy, cpu_seconds, rss = scale.machine_busy, scale.cpu_seconds, scale.rss


@dataclass
class Usage(scale.Peak):
    at_peak: dict[str, float] = field(default_factory=dict)  # MiB per kind of process


def kind(pid: int) -> str:
    """What a process of a run is: "jvm", "python worker" or "driver" (the run's Python)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().split(b"\0")
    except OSError:
        return "gone"
    if args and args[0].endswith(b"java"):
        cluster = (b"deploy.master.", b"deploy.worker.", b"CoarseGrainedExecutorBackend")
        return "cluster jvm" if any(c in a for a in args for c in cluster) else "jvm"
    if b"pyspark.daemon" in args or b"pyspark.worker" in args:
        return "python worker"
    return "driver" if b"--child" in args else "other"


PSS_EVERY = scale.PSS_EVERY


def watch(
    proc: subprocess.Popen[bytes], usage: Usage, stop: threading.Event, extra: list[int]
) -> None:
    """The tree's RSS summed every SAMPLE_EVERY seconds as in scale.watch, its PSS (scale's
    rss_and_pss) only near the RSS peak and at most every PSS_EVERY seconds, and each process's
    CPU time as last seen (a process that ends loses at most its last SAMPLE_EVERY seconds)."""
    pss_at = -PSS_EVERY
    while not stop.is_set():
        pids = scale.tree([proc.pid, *extra])
        sizes = {pid: rss(pid) for pid in pids}
        total = sum(sizes.values())
        if total > usage.rss:
            usage.at_peak = {}
            for pid, size in sizes.items():
                name = kind(pid)
                usage.at_peak[name] = usage.at_peak.get(name, 0) + size / 2**20
        for pid in pids:
            usage.cpu[pid] = max(usage.cpu.get(pid, 0.0), cpu_seconds(pid))
        now = time.perf_counter()
        if total >= 0.9 * usage.rss and now - pss_at >= PSS_EVERY:
            usage.pss = max(usage.pss, sum(scale.rss_and_pss(pid)[1] for pid in pids))
            pss_at = now
        usage.rss = max(usage.rss, total)
        usage.processes = max(usage.processes, len(pids))
        usage.samples += 1
        stop.wait(scale.SAMPLE_EVERY)


# --------------------------------------------------------------------------------------------
# one measured run (in its own process)


def single(capture: Path, out: Path) -> dict[str, Any]:
    """One plain Python process: packets -> segments -> byte files -> decode_local."""
    from specgen.pipeline import decode

    streams = out / "streams" / capture.name  # the pcap job's layout: OUT/streams/<capture>/
    shutil.rmtree(out, ignore_errors=True)
    streams.mkdir(parents=True)
    t0 = time.perf_counter()
    counts = write_streams(capture, streams, frozenset({PORT}))
    # what the streams left (garbage cycles, the last connection's segments) goes before the
    # decode: at 1 GiB the decode took 93 s without this, 80 s with it, 76 s in a new process
    gc.collect()
    streams_s = time.perf_counter() - t0
    decoded = decode.decode_local(PROTOCOL, out / "streams", out, overwrite=True)
    decode_s = time.perf_counter() - t0
    kept = sum(t.total for t in decoded.files)
    unique = counts["payload"] - counts["duplicates"]
    ok = kept == unique and counts["packets"] == counts["segments"] + counts["skipped"]
    return {
        "cores": 1,
        "streams_s": streams_s,
        "decode_s": decode_s,
        "frames": decoded.frames,
        "rejects": decoded.rejects,
        "found": decoded.found,
        "reconciled": decoded.reconciled and ok,
        **counts,
    }


def write_streams(capture: Path, streams: Path, ports: frozenset[int]) -> dict[str, Any]:
    """The pcap's connections as byte files and indexes in `streams`, as the pcap job writes
    them; the counts for its reconciliation. The cyclic collector is paused meanwhile, as the
    pcap job's stages pause it (`specgen.pipeline.collector`)."""
    from specgen.pipeline import collector

    with collector.paused():
        return _write_streams(capture, streams, ports)


def _write_streams(capture: Path, streams: Path, ports: frozenset[int]) -> dict[str, Any]:
    from specgen.pipeline import pcap, pcap_job, reassembly

    t0 = time.perf_counter()
    groups: dict[Any, list[Any]] = {}
    packets = skipped = segments = 0
    for packet in pcap.packets(capture):
        packets += 1
        seg = pcap.segment(packet)
        if seg is None or not ({seg.sport, seg.dport} & ports):
            skipped += 1
            continue
        segments += 1
        key, _ = reassembly.connection_key(seg, ports)
        groups.setdefault(key, []).append(seg)
    read_s = time.perf_counter() - t0
    payload = duplicates = gaps = directions = 0
    for key in list(groups):
        for conn in reassembly.connections(groups.pop(key), ports):
            for _, _, result in pcap_job.write_connection(streams, conn):
                directions += 1
                payload += result.payload_bytes
                duplicates += result.duplicate_bytes
                gaps += len(result.gaps)
    return {
        "read_s": read_s,
        "packets": packets,
        "segments": segments,
        "skipped": skipped,
        "directions": directions,
        "gaps": gaps,
        "payload": payload,
        "duplicates": duplicates,
    }


PACKETS_LINE = re.compile(
    r"pcap: ([\d,]+) packets: ([\d,]+) TCP segments of those ports, ([\d,]+) other packets; "
    r"([\d,]+) directions"
)
GAPS_LINE = re.compile(r"; ([\d,]+) gaps? \(")


def spark_run(master: str, capture: Path, out: Path) -> dict[str, Any]:
    from specgen.pipeline import pcap_job
    from specgen.pipeline.spark import session

    t0 = time.perf_counter()
    spark = session(master)
    data: dict[str, Any] = {
        "session_s": time.perf_counter() - t0,
        "cores": spark.sparkContext.defaultParallelism,
    }
    lines: list[tuple[float, str]] = []

    def echo(line: str) -> None:
        lines.append((time.perf_counter() - t0, line))
        print(line, flush=True)

    files = pcap_job.find(capture)
    t0 = time.perf_counter()
    result = pcap_job.run(
        PROTOCOL, files, out, master, overwrite=True, ports=frozenset(), echo=echo
    )
    data["decode_s"] = time.perf_counter() - t0
    for at, line in lines:
        if m := PACKETS_LINE.match(line):
            data["streams_s"] = at
            packets, segments, skipped, directions = (int(g.replace(",", "")) for g in m.groups())
            data.update(packets=packets, segments=segments, skipped=skipped, directions=directions)
        if line.startswith("pcap reconciliation") and (m := GAPS_LINE.search(line)):
            data["gaps"] = int(m.group(1).replace(",", ""))
    t0 = time.perf_counter()
    spark.stop()
    data["stop_s"] = time.perf_counter() - t0
    data.update(
        frames=result.frames,
        rejects=result.rejects,
        found=result.found,
        reconciled=result.reconciled,
    )
    return data


def child(mode: str, master: str, capture: Path, out: Path, report: Path) -> None:
    data = single(capture, out) if mode == "local" else spark_run(master, capture, out)
    report.write_text(json.dumps(data))


@dataclass
class Run(scale.Run):
    streams_s: float = 0.0  # of decode_s: packets to byte files
    packets: int = 0
    segments: int = 0
    skipped: int = 0
    directions: int = 0
    gaps: int = -1
    cpu_s: float = 0.0  # CPU seconds of the run's process tree
    others_cpu: float = 0.0  # share of the machine's CPU other processes used meanwhile
    load: tuple[float, float] = (0.0, 0.0)  # 1-minute load average before and after
    rss_at_peak: dict[str, float] = field(default_factory=dict)  # MiB per kind of process


def measure(
    run: Run, capture: Path, out: Path, logs: Path, cluster: scale.Cluster | None = None
) -> Run:
    """Run one decode in a fresh process, watching its process tree's memory and CPU (and the
    standalone cluster's, when it runs on one)."""
    report, log = logs / f"{run.slug}.json", logs / f"{run.slug}.log"
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child", run.mode, "--master", run.master,
        "--capture", str(capture), "--out", str(out), "--report", str(report),
    ]  # fmt: skip
    peak, stop = Usage(), threading.Event()
    extra = cluster.pids() if cluster is not None else []
    before = {pid: cpu_seconds(pid) for pid in scale.tree(extra)}  # the idle cluster's so far
    load_before, busy = os.getloadavg()[0], machine_busy()
    with open(log, "wb") as f:
        started = time.perf_counter()
        proc = subprocess.Popen(command, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT)
        watcher = threading.Thread(target=watch, args=(proc, peak, stop, extra), daemon=True)
        watcher.start()
        code = proc.wait()
        run.end_to_end_s = time.perf_counter() - started
        stop.set()
        watcher.join()
    busy = machine_busy() - busy
    run.cpu_s = sum(cpu - before.get(pid, 0.0) for pid, cpu in peak.cpu.items())
    run.others_cpu = max(0.0, busy - run.cpu_s) / (run.end_to_end_s * (os.cpu_count() or 1))
    run.load = (load_before, os.getloadavg()[0])
    run.rss_at_peak = {k: round(v) for k, v in sorted(peak.at_peak.items())}
    if code != 0 or not report.exists():
        tail = log.read_text(errors="replace").splitlines()[-30:] if log.exists() else []
        raise SystemExit(
            f"{run.label}: exit {code}"
            + (f"; the end of {log}:\n" + "\n".join(tail) if tail else f"; {log} is gone")
        )
    data = json.loads(report.read_text())
    for name in (
        "cores", "frames", "rejects", "found", "reconciled", "decode_s", "streams_s",
        "packets", "segments", "skipped", "directions", "gaps",
    ):  # fmt: skip
        setattr(run, name, data.get(name, getattr(run, name)))
    run.session_s = data.get("session_s", 0.0)
    run.peak_rss_mib = peak.rss / 2**20
    run.peak_pss_mib = peak.pss / 2**20
    run.max_processes = peak.processes
    return run


def check(run: Run, out: Path, generated: scale.Generated, written: Written) -> list[str]:
    """scale.check (frames, rejects, reconciliation, message counts, timestamps) and the pcap's
    own: packet counts, no gap, and every reassembled byte file equal to the generated one."""
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    problems = scale.check(run, out, generated)
    expected = (written.packets, written.segments, written.skipped, len(written.digests))
    got = (run.packets, run.segments, run.skipped, run.directions)
    if got != expected:
        problems.append(f"(packets, segments, skipped, directions) {got}, written {expected}")
    if run.gaps != 0:
        problems.append(f"{run.gaps} gaps")
    rejects = sum(pq.ParquetFile(p).metadata.num_rows for p in (out / "rejects").glob("*.parquet"))
    if rejects:
        problems.append(f"{rejects} rows in the rejects table")
    streams = out / "streams"
    files = {p.name: p for p in streams.rglob("*.bin")}
    if set(files) != set(written.digests):
        problems.append(f"byte files {sorted(set(files) ^ set(written.digests))[:4]} differ")
    for name, digest in written.digests.items():
        if name in files and _sha1(files[name]) != digest:
            problems.append(f"{name} differs from the generated byte file")
    return problems


def _sha1(path: Path) -> str:
    h = hashlib.sha1()
    with open(path, "rb") as f:
        while chunk := f.read(8 << 20):
            h.update(chunk)
    return h.hexdigest()


# --------------------------------------------------------------------------------------------
# the report


def summary(
    runs: list[Run], generated: scale.Generated, written: Written
) -> tuple[list[str], dict[str, Any]]:
    base = runs[0]
    full = next(r for r in runs if r.master == "local[*]")
    cluster = next((r for r in runs if r.slug == "spark-cluster"), None)
    gib = written.bytes / 2**30
    header = (
        f"{'run':<26}{'frames/s':>10}{'wall s':>9}{'streams s':>11}{'decode s':>10}"
        f"{'peak MiB':>10}{'vs single':>11}{'start-up s':>12}{'end-to-end s':>14}"
        f"{'peak PSS MiB':>14}{'CPU s':>8}{'others':>8}"
    )
    lines = [
        f"pcap: {written.bytes:,} bytes ({gib:.2f} GiB), {written.packets:,} packets "
        f"({written.data_segments:,} with payload, {written.segments - written.data_segments:,} "
        f"without, {written.skipped:,} UDP), {written.payload_bytes:,} payload bytes in "
        f"{generated.connections} connections (generated in "
        f"{generated.seconds:.0f} + {written.seconds:.0f} s)",
        f"frames: {generated.frames:,}",
        "",
        header,
        "-" * len(header),
    ]
    for r in runs:
        lines.append(
            f"{r.label:<26}{r.fps:>10,.0f}{r.decode_s:>9.1f}{r.streams_s:>11.1f}"
            f"{r.decode_s - r.streams_s:>10.1f}{r.peak_rss_mib:>10,.0f}"
            f"{r.fps / base.fps:>10.2f}x{r.session_s:>12.1f}{r.end_to_end_s:>14.1f}"
            f"{r.peak_pss_mib:>14,.0f}{r.cpu_s:>8.0f}{r.others_cpu:>8.0%}"
        )
    correct = not any(r.checked for r in runs)
    ratio, per_gib = full.fps / base.fps, full.peak_rss_mib / gib
    cluster_ratio = cluster.fps / full.fps if cluster is not None else None
    lines += [
        "",
        f"Spark {full.master} (= local[{full.cores}] here) vs single process: "
        f"{ratio:.2f}x (target >= {TARGET_RATIO:.1f}x); peak memory per GiB of pcap: "
        f"{per_gib:,.0f} MiB (target < {TARGET_MIB_PER_GIB:,}; single process "
        f"{base.peak_rss_mib / gib:,.0f})",
        *(
            [
                f"standalone cluster ({cluster.cores} workers x 1 core) vs local[*]: "
                f"{cluster_ratio:.2f}x (target >= 1.0x)"
            ]
            if cluster is not None and cluster_ratio is not None
            else []
        ),
        "at the peak: "
        + "; ".join(
            f"{r.label}: " + ", ".join(f"{k} {v:,.0f}" for k, v in r.rss_at_peak.items() if v >= 1)
            for r in runs
        )
        + " MiB",
        "CPU s: the run's process tree, end to end; others: the share of the machine's CPU "
        "that other processes used during the run (the machine is shared)",
        "correctness: "
        + (
            f"every run found, wrote and reconciled the same {base.found:,} frames, 0 rejects, "
            "0 gaps, every frame timestamped; the packets counted and the reassembled byte "
            "files equal what was written"
            if correct
            else "; ".join(f"{r.label}: {', '.join(r.checked)}" for r in runs if r.checked)
        ),
    ]
    data = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": scale._git_commit(),
        "machine": {
            "cpus": os.cpu_count(),
            "memory_gib": round(os.sysconf("SC_PHYS_PAGES") * scale.PAGE / 2**30, 1),
            "pyspark": scale._version("pyspark"),
            "dpkt": scale._version("dpkt"),
        },
        "pcap": {
            **{k: v for k, v in asdict(written).items() if k != "digests"},
            "seconds": round(written.seconds, 1),
            "connections": generated.connections,
            "frames": generated.frames,
            "generate_s": round(generated.seconds, 1),
            "mss": MSS,
            "ack_every": ACK_EVERY,
            "checksums": "zero (not verified by dpkt or specgen)",
        },
        "runs": [
            {
                **{k: scale._round(v) for k, v in asdict(r).items() if k != "checked"},
                "frames_per_s": round(r.fps),
                "vs_single": round(r.fps / base.fps, 3),
                "peak_mib_per_gib": round(r.peak_rss_mib / gib),
                "problems": r.checked,
            }
            for r in runs
        ],
        "correct": correct,
        "spark_vs_single": round(ratio, 3),
        "peak_mib_per_gib": round(per_gib),
        "cluster_vs_local_all": round(cluster_ratio, 3) if cluster_ratio is not None else None,
        "targets_met": {
            "spark_vs_single": ratio >= TARGET_RATIO,
            "memory": per_gib < TARGET_MIB_PER_GIB,
            **({"cluster": cluster_ratio >= 1.0} if cluster_ratio is not None else {}),
            "correct": correct,
        },
        "summary": lines,
    }
    return lines, data


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument(
        "--size", type=parse_size, default=DEFAULT_SIZE, help="pcap size, e.g. 64M (default 1G)"
    )
    p.add_argument("--frames", type=int, help="frames to generate (instead of --size)")
    p.add_argument("--work", type=Path, help="work folder (default: a new one under /tmp)")
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    p.add_argument("--seed", type=int, default=1, help="seed of the synthetic capture")
    p.add_argument("--no-local1", action="store_true", help="skip the Spark local[1] run")
    p.add_argument(
        "--cluster",
        action="store_true",
        help="also run on a standalone cluster of 2 workers (1 core each) on loopback",
    )
    p.add_argument("--results", type=Path, default=RESULTS, help="where the JSON summary goes")
    p.add_argument("--child", choices=["local", "spark"], help=argparse.SUPPRESS)
    p.add_argument("--master", default="local[*]", help=argparse.SUPPRESS)
    p.add_argument("--capture", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--report", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args.child, args.master, args.capture, args.out, args.report)
        return 0

    frames = args.frames or max(1000, args.size // BYTES_PER_FRAME)
    work = args.work or Path(tempfile.mkdtemp(prefix="specgen-pcap-", dir="/tmp"))
    work.mkdir(parents=True, exist_ok=True)
    folder, logs = work / "capture", work / "logs"
    capture = work / "pcap" / "capture.pcap"
    logs.mkdir(exist_ok=True)
    capture.parent.mkdir(exist_ok=True)
    started = time.perf_counter()
    try:
        print(f"work folder: {work}", flush=True)
        shutil.rmtree(folder, ignore_errors=True)
        print(f"generating {frames:,} frames ...", flush=True)
        generated = scale.generate(folder, frames, args.seed, index_every=1)
        print(
            f"generated {generated.frames:,} frames, {generated.bytes:,} bytes in "
            f"{generated.seconds:.0f} s; writing the pcap ...",
            flush=True,
        )
        written = write_pcap(folder, capture, args.seed)
        assert written.payload_bytes == generated.bytes, (written.payload_bytes, generated.bytes)
        print(
            f"pcap: {written.bytes:,} bytes ({written.bytes / 2**30:.2f} GiB), "
            f"{written.packets:,} packets in {written.seconds:.0f} s",
            flush=True,
        )
        if not args.keep:
            shutil.rmtree(folder)  # its digests are kept; the disk is shared
        runs = [Run("single process", "single", "local", "-")]
        if not args.no_local1:
            runs.append(Run("Spark local[1]", "spark-1", "spark", "local[1]"))
        runs.append(
            Run(f"Spark local[*] ({os.cpu_count()} cores)", "spark-all", "spark", "local[*]")
        )
        if args.cluster:
            runs.append(Run("Spark standalone 2x1 core", "spark-cluster", "spark", ""))
        digest = scale.source_digest()
        for run in runs:
            out = work / f"out-{run.slug}"
            print(f"{run.label}: decoding ...", flush=True)
            before = scale.source_digest()
            if run.slug == "spark-cluster":
                with scale.Cluster(work / "cluster") as cluster:
                    run.master = cluster.url
                    measure(run, capture, out, logs, cluster)
            else:
                measure(run, capture, out, logs)
            run.checked = check(run, out, generated, written)
            if {before, scale.source_digest()} != {digest}:
                run.checked.append(
                    "specgen/pipeline or the codec changed during the benchmark: "
                    "the runs measured different code; run it again"
                )
            print(
                f"{run.label}: {run.found:,} frames in {run.decode_s:.1f} s = "
                f"{run.fps:,.0f} frames/s (streams {run.streams_s:.1f} s), "
                f"peak {run.peak_rss_mib:,.0f} MiB, "
                f"{'ok' if not run.checked else '; '.join(run.checked)}",
                flush=True,
            )
            if not args.keep:
                shutil.rmtree(out, ignore_errors=True)
        lines, data = summary(runs, generated, written)
        data["total_s"] = round(time.perf_counter() - started)
        data["source_digest"] = digest
        print("\n" + "\n".join(lines))
        print(f"\ntotal: {data['total_s']} s")
        args.results.parent.mkdir(parents=True, exist_ok=True)
        args.results.write_text(json.dumps(data, indent=2) + "\n")
        print(f"summary written to {args.results}")
        return 0 if data["correct"] else 1
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
