"""Write the shipped AMQP/Fast 0.8 (AMQ RFC 006) sample capture with the generated codec.

    .venv/bin/python samples/record_amqp_fast_0_8.py [OUT]     (default samples/amqp-fast-0-8)
    .venv/bin/python samples/record_amqp_fast_0_8.py --check [OUT]

No server speaks AMQP/Fast 0.8 any more, so this script plays both peers of one connection and
writes what `specgen capture` would have recorded between them: OUT/session-1/ with
conn-0001.c2s.bin, conn-0001.s2c.bin, conn-0001.index.jsonl (one read event per write, at the
times the script's clock gives) and capture.json; and pcap/OUT.pcap.gz, the same session as
tcpdump would have seen it on port 3018 (tests/pcap_writer.py: a handshake, segments at the
recorded times, a FIN exchange). Everything comes from a seeded generator
and a fixed start time, so a second run writes the same bytes.

The session, in the document's commands: the 2-octet initiation, CONNECTION CHALLENGE /
RESPONSE / TUNE (both ways, FRAME_MAX 131072) / OPEN / REPLY, CHANNEL OPEN / REPLY, three
HANDLE OPENs (a producer, a consumer, a browser), HANDLE CONSUMEs on two destinations and one
dynamic destination the server names with HANDLE CREATED, then 500 HANDLE SENDs to four
destinations, each followed by its message (a head with its properties and headers, then the
body) and every fifth confirmed with a HANDLE REPLY; messages past 32 KiB go as several
fragments of 32 KiB, `partial` set on all but the last. Messages to consumed destinations come back as
HANDLE NOTIFYs with the same fragments, acknowledged with CHANNEL ACK every 50. Then a browse:
HANDLE QUERY on the audit destination, a HANDLE INDEX whose list of message numbers fills its
long string (a frame over 0xFFFF octets: its size is escaped, 0xFFFF and four octets), HANDLE BROWSE and its HANDLE
NOTIFY (not delivered); then HANDLE CLOSE, CHANNEL CLOSE and CONNECTION CLOSE both ways.

Afterwards (and alone with --check) it reads each byte file back with the generated
FrameReader and checks that every frame re-encodes to its exact bytes and every fragment is
the octets its frame announced: the sample must be one the codec reads losslessly.
"""

from __future__ import annotations

import gzip
import json
import random
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import pcap_writer  # noqa: E402

import specgen.locations  # noqa: E402, F401  (specgen_codecs is this checkout's generated/)
from specgen_codecs.amqp_fast_0_8.framing import PREAMBLES  # noqa: E402
from specgen_codecs.amqp_fast_0_8.v0_8 import (  # noqa: E402
    ChannelAck,
    ChannelClose,
    ChannelOpen,
    ChannelReply,
    ConnectionChallenge,
    ConnectionClose,
    ConnectionOpen,
    ConnectionReply,
    ConnectionResponse,
    ConnectionTune,
    FrameReader,
    HandleBrowse,
    HandleClose,
    HandleConsume,
    HandleCreated,
    HandleIndex,
    HandleNotify,
    HandleOpen,
    HandleQuery,
    HandleReply,
    HandleSend,
    MessageHead,
    decode,
    encode,
    following,
)

MESSAGES = 500
FRAME_MAX = 131072  # both peers' FRAME_MAX: frames and fragments up to this
FRAGMENT = 32768  # the peers' fragment size: a message longer than this goes as several
BIG = {41: 70_000, 207: 100_000, 388: 45_000}  # index -> body size: 3, 4 and 2 fragments
DESTINATIONS = ("orders", "invoices", "audit", "tmp.sample-1")
CONSUMED = ("orders", "invoices", "tmp.sample-1")  # what the consumer handle takes
CONFIRM_EVERY = 5  # every fifth send asks for a HANDLE REPLY (a non-zero confirm-tag)
ACK_EVERY = 50
LONG_STRING = 0xFFFF  # octets a long string holds: a full one makes a frame past 0xFFFF
START = 1795700000.0  # the capture's first wall-clock second (fixed: the bytes are the same)
OK = 200
PORT = 3018  # the server's port in the pcap: the framing's default (PORTS)


class Session:
    """Both peers' bytes, and one read event per write at the script's clock."""

    def __init__(self) -> None:
        self.rnd = random.Random(8)
        self.data = {"c2s": bytearray(), "s2c": bytearray()}
        self.events: list[dict[str, Any]] = []
        self.clock = START

    def wait(self, low: float, high: float) -> None:
        self.clock += self.rnd.uniform(low, high)

    def write(self, direction: str, data: bytes) -> None:
        out = self.data[direction]
        self.events.append(
            {
                "event": "read",
                "connection": "conn-0001",
                "direction": direction,
                "offset": len(out),
                "length": len(data),
                "mono": round(self.clock - START + 100.0, 6),
                "wall": round(self.clock, 6),
            }
        )
        out += data
        self.wait(0.00002, 0.00008)

    def client(self, *messages: Any) -> None:
        self.write("c2s", b"".join(m if isinstance(m, bytes) else encode(m) for m in messages))

    def server(self, *messages: Any) -> None:
        self.write("s2c", b"".join(m if isinstance(m, bytes) else encode(m) for m in messages))

    def reply_time(self) -> None:
        """The server's think time before an answer: mostly fast, sometimes slow."""
        if self.rnd.random() < 0.1:
            self.wait(0.004, 0.02)
        else:
            self.wait(0.0002, 0.0015)


def _message(i: int, rnd: random.Random) -> bytes:
    """A message: its head (the header block, with properties and headers), then its body."""
    size = BIG.get(i) or rnd.randrange(0, 900)
    if i % 3:  # order lines as JSON text, as many as fill the size
        lines = []
        while sum(map(len, lines)) < size:
            sku, qty = rnd.randrange(10_000), rnd.randrange(1, 20)
            lines.append(f'{{"order": {i}, "sku": "SKU-{sku:05d}", "qty": {qty}}}\n')
        body = "".join(lines).encode()[:size]
    else:  # an opaque payload: a few random octets, then zeros (a padded record)
        body = rnd.randbytes(min(size, 64)) + bytes(max(0, size - 64))
    head = MessageHead(
        body_size=len(body),
        persistent=i % 2 == 0,
        priority=i % 10,
        expiration=0 if i % 4 else int(START) + 3600,
        mime_type="application/octet-stream" if i % 3 else "text/plain",
        encoding="" if i % 5 else "gzip",
        msg_identifier=f"msg-{i:04d}",
        headers={"seq": i, "tenant": f"t-{i % 7}"},
    )
    return head.encode() + body


def _fragments(message: bytes) -> list[bytes]:
    return [message[at : at + FRAGMENT] for at in range(0, len(message), FRAGMENT)] or [b""]


def play() -> Session:
    s = Session()
    s.client(PREAMBLES["client"])
    s.reply_time()
    s.server(ConnectionChallenge(1, "PLAIN", {}))
    s.wait(0.0005, 0.001)
    s.client(ConnectionResponse("PLAIN", {"LOGIN": "guest", "PASSWORD": "guest"}))
    s.reply_time()
    tune = {"FRAME_MAX": FRAME_MAX, "CHANNEL_MAX": 16, "HANDLE_MAX": 64, "HEARTBEAT": 0}
    s.server(ConnectionTune({**tune, "TXN_LIMIT": 0}, {}))
    s.wait(0.0002, 0.0005)
    s.client(
        ConnectionTune({"FRAME_MAX": FRAME_MAX, "HEARTBEAT": 0}, {}),
        ConnectionOpen(1, "/", "specgen sample", {}),
    )
    s.reply_time()
    s.server(ConnectionReply(1, OK, "OK"))
    s.client(ChannelOpen(1, 2, False, False, {}, ""))
    s.reply_time()
    s.server(ChannelReply(1, 2, OK, "OK"))
    s.client(HandleOpen(1, 1, 3, producer=True, mime_type="application/octet-stream"))
    s.reply_time()
    s.server(HandleReply(1, 3, OK, "OK"))
    s.client(HandleOpen(1, 2, 4, consumer=True))
    s.reply_time()
    s.server(HandleReply(2, 4, OK, "OK"))
    s.client(HandleOpen(1, 3, 5, browser=True))
    s.reply_time()
    s.server(HandleReply(3, 5, OK, "OK"))
    for tag, dest in ((6, "orders"), (7, "invoices")):
        s.client(HandleConsume(2, tag, 0, 100, dest_name=dest))
        s.reply_time()
        s.server(HandleReply(2, tag, OK, "OK"))
    s.client(HandleConsume(2, 8, 0, 100, dynamic=True, exclusive=True))
    s.reply_time()
    s.server(HandleCreated(2, DESTINATIONS[3]), HandleReply(2, 8, OK, "OK"))

    delivered = 0
    tag = 100
    for i in range(MESSAGES):
        dest = DESTINATIONS[s.rnd.choices(range(4), (5, 3, 1, 1))[0]]
        parts = _fragments(_message(i, s.rnd))
        confirm = 0
        if i % CONFIRM_EVERY == 0:
            tag += 1
            confirm = tag
        for n, part in enumerate(parts):
            more = n < len(parts) - 1
            # the tag on every fragment of a message: "sent ... with the same tag"
            s.client(HandleSend(1, confirm, 0, len(part), partial=more, dest_name=dest), part)
        if confirm:
            s.reply_time()
            s.server(HandleReply(1, confirm, OK, "OK"))
        if dest in CONSUMED:
            s.wait(0.0001, 0.0006)
            delivered += 1
            for n, part in enumerate(parts):
                more = n < len(parts) - 1
                s.server(
                    HandleNotify(
                        2, delivered, len(part), partial=more, delivered=True, dest_name=dest
                    ),
                    part,
                )
            if delivered % ACK_EVERY == 0:
                s.wait(0.0001, 0.0003)
                s.client(ChannelAck(1, 0, delivered))
        s.wait(0.0001, 0.0008)

    # browsing the audit destination: its index is long, so its frame's size is escaped
    s.client(HandleQuery(3, 0, "audit", b"", ""))
    s.reply_time()
    # as many numbers as its long string holds; message-nbr says more are available
    numbers: list[str] = []
    while len(" ".join([*numbers, str(3 * len(numbers))])) <= LONG_STRING:
        numbers.append(str(3 * len(numbers)))
    s.server(HandleIndex(3, int(numbers[-1]), " ".join(numbers).encode()))
    s.wait(0.0005, 0.001)
    s.client(HandleBrowse(3, 0, 42))
    s.reply_time()
    part = _message(9000, s.rnd)
    s.server(HandleNotify(3, 42, len(part), dest_name="audit"), part)

    s.wait(0.001, 0.002)
    for handle in (1, 2, 3):
        s.client(HandleClose(handle, OK, "done"))
        s.reply_time()
        s.server(HandleClose(handle, OK, "OK"))
    s.client(ChannelClose(1, OK, "done"))
    s.reply_time()
    s.server(ChannelClose(1, OK, "OK"))
    s.client(ConnectionClose(OK, "bye"))
    s.reply_time()
    s.server(ConnectionClose(OK, "OK"))
    return s


def write(s: Session, out: Path) -> None:
    folder = out / "session-1"
    folder.mkdir(parents=True, exist_ok=True)
    for direction, data in s.data.items():
        (folder / f"conn-0001.{direction}.bin").write_bytes(bytes(data))
    sizes = {d: len(b) for d, b in s.data.items()}
    accept = {
        "event": "accept",
        "connection": "conn-0001",
        "peer": "127.0.0.1:40001",
        "mono": 100.0,
        "wall": START,
    }
    closes = [
        {
            "event": "close",
            "connection": "conn-0001",
            "direction": d,
            "side": side,
            "received": sizes[d],
            "recorded": sizes[d],
            "delivered": sizes[d],
            "mono": round(s.clock - START + 100.0, 6),
            "wall": round(s.clock, 6),
        }
        for d, side in (("c2s", "client"), ("s2c", "server"))
    ]
    lines = [accept, *s.events, *closes]
    (folder / "conn-0001.index.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in lines), encoding="utf-8"
    )
    capture = {
        "listen": "127.0.0.1:43018",
        "target": "127.0.0.1:3018",
        "started": START,
        "stopped": round(s.clock, 6),
        "connections": 1,
        "failed_connects": 0,
        "bytes": sizes,
        "recorded": sizes,
        "delivered": sizes,
        "recording_stopped_total": 0,
        "recording_stopped": [],
    }
    (folder / "capture.json").write_text(json.dumps(capture, indent=2) + "\n", encoding="utf-8")


def write_pcap(out: Path) -> Path:
    """The session as tcpdump would have seen it on the server's port (3018, the framing's
    PORTS), gzipped: pcap/OUT.pcap.gz beside OUT, with the other samples' pcaps, so that
    decoding OUT reads only the recording."""
    (out.parent / "pcap").mkdir(exist_ok=True)
    raw = out.parent / "pcap" / f"{out.name}.pcap"
    pcap_writer.write(raw, pcap_writer.session(out / "session-1", PORT))
    target = raw.with_suffix(".pcap.gz")
    # mtime 0: the same session gives the same bytes
    target.write_bytes(gzip.compress(raw.read_bytes(), 9, mtime=0))
    raw.unlink()
    return target


def check(folder: Path) -> int:
    """Every frame of every byte file re-encodes to its exact bytes, every fragment is as long
    as its frame said; prints a line per file and returns the number of problems."""
    problems = 0
    for path in sorted(folder.glob("session-*/*.bin")):
        sender = "client" if path.name.endswith(".c2s.bin") else "server"
        reader = FrameReader(sender, max_frame_size=FRAME_MAX, preamble=True)
        reader.feed(path.read_bytes())
        frames = fragments = due = 0
        for _, data in reader.frames():
            if due:
                fragments += 1
                problems += len(data) != due
                due = 0
                continue
            frames += 1
            msg = decode(data, sender)
            problems += encode(msg) != data
            due = following(msg)
        reader.finish()
        print(f"{path.relative_to(folder)}: {frames} frames, {fragments} fragments")
    return problems


def main() -> int:
    args = sys.argv[1:]
    only_check = "--check" in args
    args = [a for a in args if a != "--check"]
    out = Path(args[0]) if args else ROOT / "samples" / "amqp-fast-0-8"
    if not only_check:
        write(play(), out)
        print(f"{write_pcap(out).relative_to(out.parent)}: the same session as a pcap")
    problems = check(out)
    print("ok" if not problems else f"{problems} frames do not re-encode")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
