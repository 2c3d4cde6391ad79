"""Scale benchmark for `specgen decode`: Spark against one plain Python process, at 5 M frames.

    .venv/bin/python bench/scale.py [--frames N] [--work DIR] [--keep] [--cluster]

1. Writes a synthetic capture (default 5,000,000 frames, about 1 GiB) with the generated
   RabbitMQ Streams encoders: several connections, each a whole session (handshake, create and
   declare, mostly publishes and confirms or deliveries and credits, heartbeats, offsets, a few
   error responses, close), half of them with an index of ~64 KiB reads so timestamps are
   decoded too. 3,000 distinct Publish and Deliver frames are encoded once and repeated with
   patched ids, which keeps generating 5 M frames under half a minute.
2. Decodes it three times, each in a fresh subprocess so that peak memory is that run's alone:
   `decode_local` (one Python process, pyarrow's Parquet writer), Spark on local[1] and Spark on
   local[*], and with --cluster on a standalone cluster of 2 workers of 1 core each on loopback
   (started from pyspark's jars for that run, stopped after it: its start is not timed). While
   a run lasts, the RSS of its whole process tree (driver Python, JVM, Python workers; the
   cluster's master, workers and executors too) is summed every 0.2 s; the peak is reported,
   and the PSS peak next to it (sampled near the RSS peak, at most every 2 s: reading it costs
   the run CPU), since Python workers forked from one daemon share pages that an RSS sum counts
   twice. Each run's CPU seconds are recorded, and the share of the machine's CPU that other
   processes used meanwhile ("others"): the machine is shared, and a ratio measured while
   others load it understates Spark, which then cannot get both cores.
3. Checks that every run found, wrote and reconciled the same frames, with no rejects, and that
   the per-message counts and timestamps in the Parquet match what was generated, and that the
   pipeline's code did not change under the runs (the tree is shared); prints one table and
   writes it as JSON to bench/results/latest.json.

Frames/s is frames found / the wall time of the decode call (`run` or `decode_local`), after
imports and, for Spark, after the session is up; start-up and end-to-end are reported too.
This is a benchmark, not a test: about 10 minutes on the 2-core machine it was written for. It
exits 1 only when a run's output is wrong; a missed speed or memory target is reported, not
failed, since a shared machine's noise would make such a failure meaningless.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from specgen_codecs.rabbitmq_stream import v4_0 as rs

PROTOCOL = "rabbitmq-stream/4.0"
ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "latest.json"
DEFAULT_FRAMES = 5_000_000
CONNECTIONS = 12
SAMPLE_EVERY = 0.2  # seconds between two memory samples of a run's process tree

# targets from the issue
TARGET_RATIO = 1.6  # Spark on all (2) cores vs the single process (issue 28: close to 2x)
TARGET_PER_CORE = 0.5  # Spark's throughput per core within 2x of the single process
TARGET_MIB_PER_GIB = 4096  # peak memory of the whole job per GiB of capture

OK = int(rs.ResponseCode.OK)
FLUSH = 8 * 1024 * 1024  # bytes buffered per file before one write: few, large writes
READ_SIZE = 64 * 1024  # what `specgen capture` asks of a socket read

# Byte offsets inside encoded frames that the generator patches (8-byte header first). They
# follow from the generated structs; `check_patching` decodes patched frames to prove them.
PUBLISHER_ID_AT = 8  # PublishV1.publisher_id, uint8
PUBLISH_FIRST_MESSAGE_AT = 13  # after publisher_id (1) and the message count (4)
SUBSCRIPTION_ID_AT = 8  # DeliverV1.subscription_id, uint8
CHUNK_TIMESTAMP_AT = 17  # OsirisChunk.timestamp, int64
CHUNK_FIRST_OFFSET_AT = 33  # OsirisChunk.chunk_first_offset, uint64
CHUNK_ENTRIES_AT = 57  # the chunk's entries, which its crc covers
WALL_START = 1_763_900_000.0  # a fixed start (2025-11-23): the same capture on every run
MONO_START = 86_400.0  # the recorder host's monotonic clock then (a day of uptime)
U64 = struct.Struct(">Q")
I64 = struct.Struct(">q")
U32 = struct.Struct(">I")


# --------------------------------------------------------------------------------------------
# payloads and frame templates


_WORDS = (
    "order shipped customer sku quantity price warehouse eu-west us-east sensor reading "
    "temperature humidity device firmware status ok degraded retry invoice total currency "
    "EUR USD payment authorised session user click page view cart checkout tenant region"
).split()


class Payloads:
    """Message bodies that look like real ones: JSON-ish text in an AMQP 1.0 data section.

    Stream clients publish AMQP 1.0 encoded messages; text compresses in Parquet the way event
    payloads do, where random bytes would not compress at all and inflate the output.
    """

    def __init__(self, rng: random.Random) -> None:
        parts: list[str] = []
        n = 0
        while n < 1 << 18:
            word = rng.choice(_WORDS)
            piece = f'"{word}":{rng.randint(0, 99999)},' if rng.random() < 0.5 else word + " "
            parts.append(piece)
            n += len(piece)
        self.corpus = "".join(parts).encode()

    def message(self, rng: random.Random, size: int) -> bytes:
        """An AMQP 1.0 message of exactly `size` bytes (size >= 10)."""
        # data section: descriptor 0x00 0x53 0x75, then vbin8 (0xa0 len8) or vbin32 (0xb0 len32)
        head = 5 if size - 5 <= 255 else 8
        length = size - head
        at = rng.randrange(len(self.corpus) - length)
        body = self.corpus[at : at + length]
        if head == 5:
            return b"\x00\x53\x75\xa0" + bytes([length]) + body
        return b"\x00\x53\x75\xb0" + U32.pack(length) + body


def message_size(rng: random.Random) -> int:
    """10..2000 bytes, most of them small events: the median is ~37 bytes, the mean ~215."""
    return min(2000, max(10, int(10 * 200 ** (rng.random() ** 2))))


def batch_size(rng: random.Random) -> int:
    """1..50 messages per Publish frame or Deliver chunk: mostly one (a client publishing as
    events come), sometimes a burst; the mean is ~1.7."""
    u = rng.random()
    if u < 0.88:
        return 1
    if u < 0.99:
        return rng.randint(2, 8)
    return rng.randint(9, 50)


@dataclass(frozen=True)
class Template:
    """An encoded frame and where in it the per-use ids go."""

    frame: bytes
    ids: tuple[int, ...]  # offsets of the publishing ids (Publish); empty for Deliver
    count: int  # messages (Publish) or entries (Deliver)


def publish_templates(rng: random.Random, payloads: Payloads, n: int) -> list[Template]:
    out = []
    for _ in range(n):
        count = batch_size(rng)
        msgs = [
            rs.PublishV1PublishedMessage(i, payloads.message(rng, message_size(rng)))
            for i in range(count)
        ]
        frame = rs.encode(rs.PublishV1(publisher_id=0, published_messages=msgs))
        ids, at = [], PUBLISH_FIRST_MESSAGE_AT
        for m in msgs:
            assert m.message is not None
            ids.append(at)
            at += 12 + len(m.message)  # publishing id (8), length (4), message
        assert at == len(frame), "PublishV1 layout changed: fix PUBLISH_FIRST_MESSAGE_AT"
        out.append(Template(frame, tuple(ids), count))
    return out


def deliver_templates(rng: random.Random, payloads: Payloads, n: int) -> list[Template]:
    out = []
    for _ in range(n):
        count = batch_size(rng)
        entries = [payloads.message(rng, message_size(rng)) for _ in range(count)]
        # osiris: the chunk crc is CRC-32 of its data, i.e. every entry with its 4-byte header
        data = b"".join(U32.pack(len(e)) + e for e in entries)
        chunk = rs.OsirisChunk(
            magic_version=0x50,  # magic 0x5 in the high nibble, chunk format version 0
            chunk_type=int(rs.ChunkType.USER),
            num_entries=count,
            num_records=count,
            timestamp=0,
            epoch=1,
            chunk_first_offset=0,
            chunk_crc=zlib.crc32(data),
            data_length=len(data),
            trailer_length=0,
            bloom_size=0,
            reserved=0,
            messages=[rs.SimpleEntry(len(e), e) for e in entries],
        )
        frame = rs.encode(rs.DeliverV1(subscription_id=0, osiris_chunk=chunk))
        assert frame[CHUNK_ENTRIES_AT:] == data, "DeliverV1 layout changed: fix CHUNK_ENTRIES_AT"
        out.append(Template(frame, (), count))
    return out


def patch_publish(t: Template, publisher: int, first_id: int) -> bytearray:
    frame = bytearray(t.frame)
    frame[PUBLISHER_ID_AT] = publisher
    for i, at in enumerate(t.ids):
        U64.pack_into(frame, at, first_id + i)
    return frame


def patch_deliver(t: Template, subscription: int, first_offset: int, millis: int) -> bytearray:
    frame = bytearray(t.frame)
    frame[SUBSCRIPTION_ID_AT] = subscription
    I64.pack_into(frame, CHUNK_TIMESTAMP_AT, millis)
    U64.pack_into(frame, CHUNK_FIRST_OFFSET_AT, first_offset)
    return frame


def check_patching(publish: Template, deliver: Template) -> None:
    """The patch offsets are right: the generated decoder reads back what was patched in."""
    p = rs.decode(patch_publish(publish, 7, 1000), "client")
    assert isinstance(p, rs.PublishV1) and p.publisher_id == 7
    assert [m.publishing_id for m in p.published_messages] == list(
        range(1000, 1000 + publish.count)
    )
    d = rs.decode(patch_deliver(deliver, 3, 123456, 1_763_000_000_000), "server")
    assert isinstance(d, rs.DeliverV1) and d.subscription_id == 3
    c = d.osiris_chunk
    assert (c.chunk_first_offset, c.timestamp) == (123456, 1_763_000_000_000)
    entries = deliver.frame[CHUNK_ENTRIES_AT:]
    assert c.chunk_crc == zlib.crc32(entries)


# --------------------------------------------------------------------------------------------
# the capture


class Connection:
    """One connection's two byte files and, optionally, its index of reads."""

    def __init__(
        self, folder: Path, name: str, indexed: bool, rng: random.Random, start: float
    ) -> None:
        self.name = name
        self.rng = rng
        self.files = {d: open(folder / f"{name}.{d}.bin", "wb") for d in ("c2s", "s2c")}
        self.buffers = {d: bytearray() for d in ("c2s", "s2c")}
        self.written = {"c2s": 0, "s2c": 0}  # bytes sent so far
        self.read_to = {"c2s": 0, "s2c": 0}  # bytes covered by index reads so far
        self.next_read = {d: self._read_size() for d in ("c2s", "s2c")}
        self.index: IO[str] | None = None
        self.wall = start
        self.frames = 0
        self.counts: Counter[str] = Counter()
        self.correlation = 0
        if indexed:
            self.index = open(folder / f"{name}.index.jsonl", "w", encoding="utf-8")
            self._event("accept", peer=f"127.0.0.1:{rng.randint(40000, 60999)}")

    def cid(self) -> int:
        self.correlation += 1
        return self.correlation

    def send(self, direction: str, frame: bytes | bytearray, message: str) -> None:
        buffer = self.buffers[direction]
        buffer += frame
        if len(buffer) >= FLUSH:
            self.files[direction].write(buffer)
            buffer.clear()
        self.written[direction] += len(frame)
        self.frames += 1
        self.counts[message] += 1
        # ~20 µs between frames on average: a busy connection, hundreds of MiB in under a minute
        self.wall += 4e-5 * self.rng.random()
        if self.index is not None:
            while self.written[direction] - self.read_to[direction] >= self.next_read[direction]:
                self._read(direction, self.next_read[direction])
                self.next_read[direction] = self._read_size()

    def msg(self, direction: str, message: rs.Message) -> None:
        self.send(direction, rs.encode(message), type(message).__name__)

    def close(self) -> None:
        for direction, f in self.files.items():
            f.write(self.buffers[direction])
            f.close()
            rest = self.written[direction] - self.read_to[direction]
            if self.index is not None and rest:
                self._read(direction, rest)
        if self.index is not None:
            self._event("close", side="client")
            self.index.close()

    def _read_size(self) -> int:
        # a loaded socket fills the 64 KiB buffer; sometimes a read returns what has arrived
        return READ_SIZE if self.rng.random() < 0.8 else self.rng.randint(512, READ_SIZE)

    def _read(self, direction: str, length: int) -> None:
        self._event("read", direction=direction, offset=self.read_to[direction], length=length)
        self.read_to[direction] += length

    def _event(self, event: str, **data: Any) -> None:
        assert self.index is not None
        # one recorder process: its monotonic clock runs with the wall clock, from its own zero
        mono = MONO_START + (self.wall - WALL_START)
        line = {"event": event, "connection": self.name, **data}
        line.update(mono=round(mono, 6), wall=round(self.wall, 6))
        self.index.write(json.dumps(line) + "\n")


@dataclass
class Generated:
    frames: int = 0
    bytes: int = 0
    files: int = 0
    connections: int = 0
    indexed_frames: int = 0  # frames of connections with an index: each gets a timestamp
    counts: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0


class Session:
    """A client's whole session on one connection: what it sends and what the server answers."""

    def __init__(
        self,
        conn: Connection,
        role: str,
        publish: list[Template],
        deliver: list[Template],
        created: set[str],
    ) -> None:
        self.c = conn
        self.role = role
        self.publish = publish
        self.deliver = deliver
        self.rng = conn.rng
        self.created = created  # streams that exist on the server, over all connections
        n = conn.rng.randint(1, 2)
        self.streams = [f"stream-{i}" for i in range(n)]
        self.producing = role in ("producer", "mixed")
        self.consuming = role in ("consumer", "mixed")
        self.next_id = [0] * n  # next publishing id, per publisher
        self.pending: list[list[int]] = [[] for _ in range(n)]  # unconfirmed, per publisher
        self.offset = [0] * n  # next chunk's first offset, per subscription
        self.chunks = 0
        self.credits = [rs.encode(rs.Credit(subscription_id=s, credit=1)) for s in range(n)]
        self.heartbeat = rs.encode(rs.Heartbeat())

    def run(self, quota: int) -> None:
        self.open()
        closing = 2 + 2 * len(self.streams) * (self.producing + self.consuming)
        stray_at = quota // 2 if self.producing else -1
        i = 0
        while self.c.frames + closing < quota:
            i += 1
            if self.producing and (not self.consuming or self.rng.random() < 0.5):
                self.publish_one()
            else:
                self.deliver_one()
            if i % 2000 == 0:  # both ends send heartbeats on a timer, whatever the traffic
                self.c.send("c2s", self.heartbeat, "Heartbeat")
                self.c.send("s2c", self.heartbeat, "Heartbeat")
            if i % 25000 == 0:
                self.metadata()
            if i == stray_at:
                self.stray_publisher()
        self.close()

    def open(self) -> None:
        c, ok = self.c, OK
        cid = c.cid()
        c.msg(
            "c2s",
            rs.PeerPropertiesRequest(
                cid,
                [
                    rs.PeerProperty("product", "RabbitMQ Stream"),
                    rs.PeerProperty("version", "1.1.1"),
                    rs.PeerProperty("platform", "Python"),
                    rs.PeerProperty("connection_name", c.name),
                ],
            ),
        )
        c.msg(
            "s2c",
            rs.PeerPropertiesResponse(
                cid,
                ok,
                [
                    rs.PeerProperty("cluster_name", "rabbit@bench"),
                    rs.PeerProperty("product", "RabbitMQ"),
                    rs.PeerProperty("version", "4.0.5"),
                ],
            ),
        )
        cid = c.cid()
        c.msg("c2s", rs.SaslHandshakeRequest(cid))
        c.msg("s2c", rs.SaslHandshakeResponse(cid, ok, ["PLAIN", "AMQPLAIN"]))
        cid = c.cid()
        c.msg("c2s", rs.SaslAuthenticateRequest(cid, "PLAIN", b"\x00guest\x00guest"))
        c.msg("s2c", rs.SaslAuthenticateResponse(cid, ok))
        c.msg("s2c", rs.TuneRequest(frame_max=1048576, heartbeat=60))
        c.msg("c2s", rs.TuneResponse(frame_max=1048576, heartbeat=60))
        cid = c.cid()
        c.msg("c2s", rs.OpenRequest(cid, "/"))
        c.msg(
            "s2c",
            rs.OpenResponse(
                cid,
                ok,
                [
                    rs.ConnectionProperty("advertised_host", "localhost"),
                    rs.ConnectionProperty("advertised_port", "5552"),
                ],
            ),
        )
        self.metadata()
        for n, stream in enumerate(self.streams):
            if self.producing:
                self.declare(n, stream)
            if self.consuming:
                self.subscribe(n, stream)

    def metadata(self) -> None:
        cid = self.c.cid()
        self.c.msg("c2s", rs.MetadataRequest(cid, list(self.streams)))
        self.c.msg(
            "s2c",
            rs.MetadataResponse(
                cid,
                [rs.Broker(0, "localhost", 5552)],
                [rs.StreamMetadata(s, OK, 0, []) for s in self.streams],
            ),
        )

    def declare(self, n: int, stream: str) -> None:
        c = self.c
        cid = c.cid()
        args = [rs.Argument("x-queue-type", "stream"), rs.Argument("max-length-bytes", "2e10")]
        c.msg("c2s", rs.CreateRequest(cid, stream, args))
        # clients create the stream they publish to every time: all but the first are told no
        exists = stream in self.created
        self.created.add(stream)
        code = int(rs.ResponseCode.STREAM_ALREADY_EXISTS) if exists else OK
        c.msg("s2c", rs.CreateResponse(cid, code))
        reference = f"{c.name}-writer-{n}"
        cid = c.cid()
        c.msg("c2s", rs.DeclarePublisherRequest(cid, n, reference, stream))
        c.msg("s2c", rs.DeclarePublisherResponse(cid, OK))
        cid = c.cid()
        c.msg("c2s", rs.QueryPublisherSequenceRequest(cid, reference, stream))
        c.msg("s2c", rs.QueryPublisherSequenceResponse(cid, OK, 0))

    def subscribe(self, n: int, stream: str) -> None:
        c = self.c
        reference = f"{c.name}-reader-{n}"
        cid = c.cid()
        c.msg("c2s", rs.QueryOffsetRequest(cid, reference, stream))
        # a new consumer has no stored offset yet: an error response, then it starts at first
        c.msg("s2c", rs.QueryOffsetResponse(cid, int(rs.ResponseCode.NO_OFFSET), 0))
        cid = c.cid()
        spec = rs.SubscribeRequestOffsetSpecification(int(rs.OffsetType.FIRST), None)
        props = [rs.Property("name", reference)]
        c.msg("c2s", rs.SubscribeRequest(cid, n, stream, spec, 10, props))
        c.msg("s2c", rs.SubscribeResponse(cid, OK))

    def publish_one(self) -> None:
        n = self.rng.randrange(len(self.streams))
        t = self.rng.choice(self.publish)
        first = self.next_id[n]
        self.c.send("c2s", patch_publish(t, n, first), "PublishV1")
        self.next_id[n] = first + t.count
        self.pending[n].extend(range(first, first + t.count))
        # the server confirms most publishes at once and folds some into the next confirm
        if self.rng.random() < 0.85:
            self.c.msg("s2c", rs.PublishConfirm(n, self.pending[n]))
            self.pending[n] = []

    def deliver_one(self) -> None:
        n = self.rng.randrange(len(self.streams))
        t = self.rng.choice(self.deliver)
        millis = int(self.c.wall * 1000)
        self.c.send("s2c", patch_deliver(t, n, self.offset[n], millis), "DeliverV1")
        self.offset[n] += t.count
        self.c.send("c2s", self.credits[n], "Credit")  # one credit back per chunk handled
        self.chunks += 1
        if self.chunks % 200 == 0:
            reference = f"{self.c.name}-reader-{n}"
            self.c.msg("c2s", rs.StoreOffset(reference, self.streams[n], self.offset[n] - 1))

    def stray_publisher(self) -> None:
        """A publisher declared on a stream that is gone: two error responses."""
        c = self.c
        cid = c.cid()
        c.msg("c2s", rs.DeclarePublisherRequest(cid, 9, "", "stream-gone"))
        c.msg("s2c", rs.DeclarePublisherResponse(cid, int(rs.ResponseCode.STREAM_DOES_NOT_EXIST)))
        c.send("c2s", patch_publish(self.publish[0], 9, 0), "PublishV1")
        code = int(rs.ResponseCode.PUBLISHER_DOES_NOT_EXIST)
        errors = [rs.PublishingError(i, code) for i in range(self.publish[0].count)]
        c.msg("s2c", rs.PublishError(9, errors))

    def close(self) -> None:
        c = self.c
        for n in range(len(self.streams)):
            if self.producing:
                cid = c.cid()
                c.msg("c2s", rs.DeletePublisherRequest(cid, n))
                c.msg("s2c", rs.DeletePublisherResponse(cid, OK))
            if self.consuming:
                cid = c.cid()
                c.msg("c2s", rs.UnsubscribeRequest(cid, n))
                c.msg("s2c", rs.UnsubscribeResponse(cid, OK))
        cid = c.cid()
        c.msg("c2s", rs.CloseRequest(cid, OK, "OK"))
        c.msg("s2c", rs.CloseResponse(cid, OK))


def generate(folder: Path, frames: int, seed: int, index_every: int = 2) -> Generated:
    """A capture of at least `frames` frames in CONNECTIONS connections into `folder`; every
    `index_every`-th connection, from the first, has an index (bench/pcap.py indexes all: its
    packets need the read times)."""
    started = time.perf_counter()
    rng = random.Random(seed)
    payloads = Payloads(rng)
    publish = publish_templates(rng, payloads, 2000)
    deliver = deliver_templates(rng, payloads, 1000)
    check_patching(publish[0], deliver[0])
    folder.mkdir(parents=True, exist_ok=True)
    roles = ["producer", "consumer", "mixed", "producer", "consumer", "producer"]
    out = Generated(connections=CONNECTIONS)
    created: set[str] = set()
    for i in range(CONNECTIONS):
        name = f"conn-{i + 1:04d}"
        indexed = i % index_every == 0
        conn = Connection(folder, name, indexed, rng, WALL_START + i * 0.75)
        quota = (frames - out.frames) // (CONNECTIONS - i)
        Session(conn, roles[i % len(roles)], publish, deliver, created).run(quota)
        conn.close()
        out.frames += conn.frames
        out.bytes += sum(conn.written.values())
        out.files += 2
        out.counts.update(conn.counts)
        if indexed:
            out.indexed_frames += conn.frames
    out.seconds = time.perf_counter() - started
    return out


# --------------------------------------------------------------------------------------------
# memory of a process tree


PAGE = os.sysconf("SC_PAGE_SIZE")


def descendants(root: int) -> list[int]:
    """`root` and every process below it, from the parent ids in /proc/*/stat."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # gone since the listing
        # the command name is in parentheses and may hold spaces: the fields follow the last ")"
        ppid = int(stat.rsplit(b")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    out, stack = [], [root]
    while stack:
        pid = stack.pop()
        out.append(pid)
        stack.extend(children.get(pid, []))
    return out


def rss_and_pss(pid: int) -> tuple[int, int]:
    """Resident and proportional set size of one process, in bytes (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            rss = int(f.read().split()[1]) * PAGE
        pss = 0
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    pss = int(line.split()[1]) * 1024
                    break
        return rss, pss
    except (OSError, ValueError, IndexError):
        return 0, 0


@dataclass
class Peak:
    rss: int = 0
    pss: int = 0
    processes: int = 0
    samples: int = 0
    cpu: dict[int, float] = field(default_factory=dict)  # pid -> CPU seconds, last seen


TICK = os.sysconf("SC_CLK_TCK")

PSS_EVERY = 2.0
"""Seconds between two PSS samples at least. Reading smaps_rollup walks a process's page
tables: ~0.1 s for the Spark JVM, which every 0.2 s took 40% of one of the machine's two cores
away from the run being measured."""


def machine_busy() -> float:
    """CPU seconds all cores have spent busy since boot (/proc/stat: all but idle and iowait)."""
    with open("/proc/stat", encoding="ascii") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return (sum(v) - v[3] - v[4]) / TICK


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of one process so far (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (OSError, ValueError, IndexError):
        return 0.0


def rss(pid: int) -> int:
    """Resident set size of one process, in bytes (0 when it is gone): statm, cheap."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * PAGE
    except (OSError, ValueError, IndexError):
        return 0


def tree(roots: list[int]) -> list[int]:
    """The processes of a run: its own tree, and a standalone cluster's (master, workers,
    executors, their Python workers) when it runs on one."""
    return [pid for root in roots for pid in descendants(root)]


def watch(
    proc: subprocess.Popen[bytes], peak: Peak, stop: threading.Event, extra: list[int]
) -> None:
    """Sum the tree's RSS every SAMPLE_EVERY seconds until `stop`, its PSS only near the RSS
    peak and at most every PSS_EVERY seconds; keep the peaks, and each process's CPU time as
    last seen (a process that ends loses at most its last SAMPLE_EVERY seconds)."""
    pss_at = -PSS_EVERY
    while not stop.is_set():
        pids = tree([proc.pid, *extra])
        total = sum(rss(pid) for pid in pids)
        for pid in pids:
            peak.cpu[pid] = max(peak.cpu.get(pid, 0.0), cpu_seconds(pid))
        now = time.perf_counter()
        if total >= 0.9 * peak.rss and now - pss_at >= PSS_EVERY:
            peak.pss = max(peak.pss, sum(rss_and_pss(pid)[1] for pid in pids))
            pss_at = now
        peak.rss = max(peak.rss, total)
        peak.processes = max(peak.processes, len(pids))
        peak.samples += 1
        stop.wait(SAMPLE_EVERY)


# --------------------------------------------------------------------------------------------
# a standalone cluster on loopback


class Cluster:
    """A Spark standalone master and `workers` workers of one core each on 127.0.0.1, started
    from pyspark's jars as tests/test_spark_cluster.py does, each in a process group of its
    own, so `stop` ends exactly these processes (their executors and Python workers too)."""

    def __init__(self, folder: Path, workers: int = 2, memory: str = "3g") -> None:
        self.folder, self.workers, self.memory = folder, workers, memory
        self.procs: list[subprocess.Popen[bytes]] = []
        self.url = ""

    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def _start(self, args: list[str], log: Path) -> subprocess.Popen[bytes]:
        import pyspark

        spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [str(spark_class), *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
                cwd=self.folder,
                start_new_session=True,
            )
        self.procs.append(proc)
        return proc

    def _wait(self, ready: Any, what: str, log: Path, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if any(p.poll() is not None for p in self.procs) or time.monotonic() > deadline:
                raise SystemExit(f"cluster: {what} did not start:\n{log.read_text()[-2000:]}")
            time.sleep(0.25)

    def __enter__(self) -> Cluster:
        import socket

        def free() -> int:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port: int = s.getsockname()[1]
                return port

        def accepts(port: int) -> bool:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    return True
            except OSError:
                return False

        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            port = free()
            log = self.folder / "master.log"
            self._start(
                ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(free())],
                log,
            )  # fmt: skip
            self._wait(lambda: accepts(port), "the master", log)
            self.url = f"spark://127.0.0.1:{port}"
            for i in range(self.workers):
                log = self.folder / f"worker-{i}.log"
                work = self.folder / f"worker-{i}"
                work.mkdir(exist_ok=True)
                self._start(
                    ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                     "--port", str(free()), "--webui-port", str(free()), "--cores", "1",
                     "--memory", self.memory, "--work-dir", str(work), self.url],
                    log,
                )  # fmt: skip
                self._wait(
                    lambda log=log: b"Successfully registered with master" in log.read_bytes(),
                    f"worker {i}",
                    log,
                )
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop the process groups this object created, and only those."""
        import signal

        for proc in reversed(self.procs):
            for sig, grace in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 10.0)):
                try:
                    os.killpg(proc.pid, sig)  # start_new_session: the group id is the pid
                except ProcessLookupError:
                    break
                deadline = time.monotonic() + grace
                while time.monotonic() < deadline:
                    proc.poll()
                    try:
                        os.killpg(proc.pid, 0)
                    except ProcessLookupError:
                        break
                    time.sleep(0.2)
                else:
                    continue
                break
            proc.wait(timeout=10)
        self.procs = []


# --------------------------------------------------------------------------------------------
# one measured run (in its own process)


def child(mode: str, master: str, capture: Path, out: Path, report: Path) -> None:
    """The body of one measured run: decode `capture` into `out`, timings to `report`."""
    started = time.perf_counter()
    from specgen.pipeline import decode

    timings: dict[str, Any] = {"imports_s": time.perf_counter() - started}
    if mode == "local":
        t0 = time.perf_counter()
        result = decode.decode_local(PROTOCOL, capture, out, overwrite=True)
        timings["decode_s"] = time.perf_counter() - t0
        timings["cores"] = 1
    else:
        from specgen.pipeline.spark import session

        t0 = time.perf_counter()
        spark = session(master)
        timings["session_s"] = time.perf_counter() - t0
        timings["cores"] = spark.sparkContext.defaultParallelism
        t0 = time.perf_counter()
        result = decode.run(PROTOCOL, capture, out, master=master, overwrite=True)
        timings["decode_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        spark.stop()
        timings["stop_s"] = time.perf_counter() - t0
    report.write_text(
        json.dumps(
            {
                **timings,
                "frames": result.frames,
                "rejects": result.rejects,
                "found": result.found,
                "reconciled": result.reconciled,
            }
        )
    )


@dataclass
class Run:
    label: str
    slug: str  # names its output folder and log
    mode: str
    master: str
    cores: int = 0
    frames: int = 0
    rejects: int = 0
    found: int = 0
    reconciled: bool = False
    decode_s: float = 0.0
    session_s: float = 0.0
    end_to_end_s: float = 0.0
    peak_rss_mib: float = 0.0
    peak_pss_mib: float = 0.0
    max_processes: int = 0
    output_mib: float = 0.0
    cpu_s: float = 0.0  # CPU seconds of the run's processes (a cluster's included)
    others_cpu: float = 0.0  # share of the machine's CPU other processes used meanwhile
    load: tuple[float, float] = (0.0, 0.0)  # 1-minute load average before and after
    checked: list[str] = field(default_factory=list)

    @property
    def fps(self) -> float:
        return self.found / self.decode_s if self.decode_s else 0.0


def measure(run: Run, capture: Path, out: Path, logs: Path, cluster: Cluster | None = None) -> Run:
    """Run one decode in a fresh process, watching its process tree's memory and CPU (and the
    cluster's, on a standalone cluster) and the CPU the rest of the machine used meanwhile."""
    report, log = logs / f"{run.slug}.json", logs / f"{run.slug}.log"
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        run.mode,
        "--master",
        run.master,
        "--capture",
        str(capture),
        "--out",
        str(out),
        "--report",
        str(report),
    ]
    peak, stop = Peak(), threading.Event()
    extra = cluster.pids() if cluster is not None else []
    before = {pid: cpu_seconds(pid) for pid in tree(extra)}  # the idle cluster's so far
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
    if code != 0 or not report.exists():
        # the log can be gone too: the work folder is under /tmp, on a shared machine
        tail = log.read_text(errors="replace").splitlines()[-30:] if log.exists() else []
        raise SystemExit(
            f"{run.label}: exit {code}"
            + (f"; the end of {log}:\n" + "\n".join(tail) if tail else f"; {log} is gone")
        )
    data = json.loads(report.read_text())
    run.cores = data["cores"]
    run.frames, run.rejects, run.found = data["frames"], data["rejects"], data["found"]
    run.reconciled = data["reconciled"]
    run.decode_s = data["decode_s"]
    run.session_s = data.get("session_s", 0.0)
    run.peak_rss_mib = peak.rss / 2**20
    run.peak_pss_mib = peak.pss / 2**20
    run.max_processes = peak.processes
    return run


def check(run: Run, out: Path, generated: Generated) -> list[str]:
    """What the Parquet holds against what was generated; the problems found (none: [])."""
    import pyarrow.compute as pc  # type: ignore[import-untyped]
    import pyarrow.dataset as ds  # type: ignore[import-untyped]

    problems = []
    if not run.reconciled:
        problems.append("not reconciled")
    if run.found != generated.frames:
        problems.append(f"found {run.found} frames, {generated.frames} were generated")
    if run.rejects:
        problems.append(f"{run.rejects} rejects")
    table = ds.dataset(out / "frames", format="parquet").to_table(columns=["message", "timestamp"])
    counts = {
        str(row["values"]): int(row["counts"])
        for row in pc.value_counts(table["message"]).to_pylist()
    }
    if counts != dict(generated.counts):
        diff = {
            k: (counts.get(k, 0), generated.counts.get(k, 0))
            for k in set(counts) | set(generated.counts)
            if counts.get(k, 0) != generated.counts.get(k, 0)
        }
        problems.append(f"message counts differ (written, generated): {diff}")
    stamped = len(table) - table["timestamp"].null_count
    if stamped != generated.indexed_frames:
        problems.append(f"{stamped} frames with a timestamp, {generated.indexed_frames} expected")
    run.output_mib = sum(p.stat().st_size for p in out.rglob("*.parquet")) / 2**20
    return problems


# --------------------------------------------------------------------------------------------
# the report


def summary(runs: list[Run], generated: Generated) -> tuple[list[str], dict[str, Any]]:
    single, one, full = runs[:3]
    cluster = runs[3] if len(runs) > 3 else None
    gib = generated.bytes / 2**30
    ratio = full.fps / single.fps
    per_core = ratio / full.cores
    scaling = full.fps / one.fps
    spark_peak = max(one.peak_rss_mib, full.peak_rss_mib)
    per_gib = full.peak_rss_mib / gib
    header = (
        f"{'run':<26}{'frames/s':>10}{'wall s':>9}{'peak MiB':>10}{'vs single':>11}"
        f"{'start-up s':>12}{'end-to-end s':>14}{'peak PSS MiB':>14}{'CPU s':>8}{'others':>8}"
    )
    lines = [
        f"capture: {generated.frames:,} frames, {generated.bytes:,} bytes ({gib:.2f} GiB), "
        f"{generated.connections} connections, {generated.files} byte files "
        f"(generated in {generated.seconds:.0f} s)",
        "",
        header,
        "-" * len(header),
    ]
    for r in runs:
        lines.append(
            f"{r.label:<26}{r.fps:>10,.0f}{r.decode_s:>9.1f}{r.peak_rss_mib:>10,.0f}"
            f"{r.fps / single.fps:>10.2f}x{r.session_s:>12.1f}{r.end_to_end_s:>14.1f}"
            f"{r.peak_pss_mib:>14,.0f}{r.cpu_s:>8.0f}{r.others_cpu:>8.0%}"
        )
    cluster_ratio = cluster.fps / full.fps if cluster is not None else None
    lines += [
        "",
        "CPU s: the run's processes (a cluster's included), end to end; others: the share of "
        "the machine's CPU that other processes used during the run (the machine is shared)",
        f"Spark {full.master} (= local[{full.cores}] here) vs single process: {ratio:.2f}x "
        f"(target >= {TARGET_RATIO:.1f}x)",
        f"per core: {per_core:.2f}x (target within 2x, i.e. >= {TARGET_PER_CORE:.2f}x)",
        f"scaling 1 -> {full.cores} cores: {scaling:.2f}x",
        f"peak memory per GiB of capture: {per_gib:,.0f} MiB (target < {TARGET_MIB_PER_GIB})",
        *(
            [
                f"standalone cluster ({cluster.cores} workers x 1 core) vs local[*]: "
                f"{cluster_ratio:.2f}x (target >= 1.0x)"
            ]
            if cluster is not None and cluster_ratio is not None
            else []
        ),
        "correctness: "
        + (
            "every run found, wrote and reconciled the same "
            f"{single.found:,} frames, 0 rejects; message counts and timestamps match the "
            "generated capture"
            if not any(r.checked for r in runs)
            else "; ".join(f"{r.label}: {', '.join(r.checked)}" for r in runs if r.checked)
        ),
    ]
    data = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": _git_commit(),
        "machine": {
            "cpus": os.cpu_count(),
            "memory_gib": round(os.sysconf("SC_PHYS_PAGES") * PAGE / 2**30, 1),
            "python": platform.python_version(),
            "pyspark": _version("pyspark"),
            "pyarrow": _version("pyarrow"),
        },
        "capture": {
            "frames": generated.frames,
            "bytes": generated.bytes,
            "connections": generated.connections,
            "byte_files": generated.files,
            "frames_with_timestamps": generated.indexed_frames,
            "generate_s": round(generated.seconds, 1),
            "messages": dict(generated.counts.most_common()),
        },
        "runs": [
            {
                **{k: _round(v) for k, v in asdict(r).items() if k != "checked"},
                "frames_per_s": round(r.fps),
                "vs_single": round(r.fps / single.fps, 3),
                "problems": r.checked,
            }
            for r in runs
        ],
        "spark_vs_single": round(ratio, 3),
        "per_core_vs_single": round(per_core, 3),
        "scaling_1_to_n_cores": round(scaling, 3),
        "peak_mib_per_gib": round(per_gib),
        "cluster_vs_local_all": round(cluster_ratio, 3) if cluster_ratio is not None else None,
        "peak_mib_any_spark_run": round(spark_peak),
        "targets_met": {
            "spark_vs_single": ratio >= TARGET_RATIO,
            "per_core": per_core >= TARGET_PER_CORE,
            "memory": per_gib < TARGET_MIB_PER_GIB,
            **({"cluster": cluster_ratio >= 1.0} if cluster_ratio is not None else {}),
            "correct": not any(r.checked for r in runs),
        },
        "summary": lines,
    }
    return lines, data


def source_digest() -> str:
    """A digest of the code the runs measure: the pipeline and the generated codec.

    Others work in the same tree; a run that starts after an edit measures other code than the
    runs before it, and the comparison would be meaningless without this check.
    """
    h = hashlib.sha256()
    for folder in (ROOT / "specgen" / "pipeline", ROOT / "generated" / "rabbitmq_stream" / "v4_0"):
        for path in sorted(folder.glob("*.py")):
            h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:12]


def _round(value: Any) -> Any:
    return round(value, 2) if isinstance(value, float) else value


def _git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        )
        return out.stdout.strip()
    except OSError:
        return ""


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return ""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--frames", type=int, default=DEFAULT_FRAMES, help="frames to generate")
    p.add_argument("--work", type=Path, help="work folder (default: a new one under /tmp)")
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    p.add_argument("--seed", type=int, default=1, help="seed of the synthetic capture")
    p.add_argument("--results", type=Path, default=RESULTS, help="where the JSON summary goes")
    p.add_argument(
        "--cluster",
        action="store_true",
        help="also run on a standalone cluster of 2 workers (1 core each) on loopback",
    )
    # a measured run re-enters this script in a fresh process
    p.add_argument("--child", choices=["local", "spark"], help=argparse.SUPPRESS)
    p.add_argument("--master", default="local[*]", help=argparse.SUPPRESS)
    p.add_argument("--capture", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--report", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args.child, args.master, args.capture, args.out, args.report)
        return 0

    work = args.work or Path(tempfile.mkdtemp(prefix="specgen-scale-", dir="/tmp"))
    work.mkdir(parents=True, exist_ok=True)
    capture, logs = work / "capture", work / "logs"
    logs.mkdir(exist_ok=True)
    started = time.perf_counter()
    try:
        print(f"work folder: {work}", flush=True)
        shutil.rmtree(capture, ignore_errors=True)
        print(f"generating {args.frames:,} frames ...", flush=True)
        generated = generate(capture, args.frames, args.seed)
        print(
            f"generated {generated.frames:,} frames, {generated.bytes:,} bytes "
            f"({generated.bytes / 2**30:.2f} GiB) in {generated.seconds:.0f} s",
            flush=True,
        )
        runs = [
            Run("single process", "single", "local", "-"),
            Run("Spark local[1]", "spark-1", "spark", "local[1]"),
            Run(f"Spark local[*] ({os.cpu_count()} cores)", "spark-all", "spark", "local[*]"),
        ]
        if args.cluster:
            runs.append(Run("Spark standalone 2x1 core", "spark-cluster", "spark", ""))
        digest = source_digest()
        for run in runs:
            out = work / f"out-{run.slug}"
            print(f"{run.label}: decoding ...", flush=True)
            before = source_digest()
            if run.slug == "spark-cluster":
                with Cluster(work / "cluster") as cluster:
                    run.master = cluster.url
                    measure(run, capture, out, logs, cluster)
            else:
                measure(run, capture, out, logs)
            run.checked = check(run, out, generated)
            if {before, source_digest()} != {digest}:
                run.checked.append(
                    "specgen/pipeline or the codec changed during the benchmark: "
                    "the runs measured different code; run it again"
                )
            print(
                f"{run.label}: {run.found:,} frames in {run.decode_s:.1f} s = "
                f"{run.fps:,.0f} frames/s, peak {run.peak_rss_mib:,.0f} MiB, "
                f"{'ok' if not run.checked else '; '.join(run.checked)}",
                flush=True,
            )
            if not args.keep:
                shutil.rmtree(out, ignore_errors=True)  # ~1 GiB each; the disk is shared
        lines, data = summary(runs, generated)
        data["total_s"] = round(time.perf_counter() - started)
        data["source_digest"] = digest
        print("\n" + "\n".join(lines))
        print(f"\ntotal: {data['total_s']} s")
        args.results.parent.mkdir(parents=True, exist_ok=True)
        args.results.write_text(json.dumps(data, indent=2) + "\n")
        print(f"summary written to {args.results}")
        return 0 if data["targets_met"]["correct"] else 1
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
