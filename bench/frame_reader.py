"""The generated FrameReader against decoding the same frames at known offsets, in one run.

    .venv/bin/python bench/frame_reader.py [--quick]

For RabbitMQ Streams, AMQP 0-9-1 and AMQP/Fast 0.8, a stream of mixed frames (about 50 MB;
5 MB with --quick) is decoded twice:
  * reader   the version package's `FrameReader`, fed the stream in 64 KiB chunks as a socket
             would give them, iterated for its messages
  * known    the version package's `decode` over each frame's slice of the same buffer, the
             frame offsets known beforehand (what a reader cannot do better than)
and the ratio reader/known is issue 28's goal (>= 0.95x). The 0.8 stream holds frames only (no
fragments follow its HandleSend frames: their fragment size is 0), so both sides do the same
work. The two are timed in alternating rounds and each figure is its best round, so load on the
machine weighs on both alike. Results go to bench/results/frame_reader.json.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from timing import write_results  # bench/timing.py, beside this script

import specgen.locations  # noqa: F401  (maps specgen_codecs to this tree's generated/)
from specgen_codecs.amqp_0_9_1 import v0_9_1 as amqp
from specgen_codecs.amqp_fast_0_8 import v0_8 as fast
from specgen_codecs.rabbitmq_stream import v4_0 as rs

ROOT = Path(__file__).resolve().parents[1]
GOAL = 0.95
CHUNK = 65536


def _streams() -> tuple[list[bytes], str]:
    entries = [rs.SimpleEntry(len(p), p) for p in (bytes([i]) * (20 + i % 60) for i in range(10))]
    data_length = sum(4 + e.size for e in entries)
    chunk = rs.OsirisChunk(
        0x50, 0, 10, 10, 1_700_000_000_000, 1, 0, 0, data_length, 0, 0, 0, entries
    )
    frames = [
        rs.encode(rs.DeliverV1(1, chunk), seal_checksums=True),
        rs.encode(rs.Credit(1, 1)),
        rs.encode(rs.QueryOffsetResponse(4, 1, 12345)),
        rs.encode(rs.MetadataUpdate(rs.MetadataInfo(1, "orders"))),
    ]
    return frames, "server"


def _amqp091() -> tuple[list[bytes], str]:
    props = amqp.BasicProperties(0, 1024, "application/json", delivery_mode=2, channel=1)
    frames = [
        amqp.encode(amqp.BasicDeliver("ctag-1", 7, False, "amq.direct", "orders", 1)),
        amqp.encode(props),
        amqp.encode(amqp.ContentBody(b"x" * 1024, 1)),
        amqp.encode(amqp.BasicQosOk(1)),
        amqp.encode(amqp.Heartbeat(0)),
    ]
    return frames, "server"


def _fast08() -> tuple[list[bytes], str]:
    frames = [
        fast.encode(fast.HandleSend(1, 2, 0, 0, False, False, False, "orders")),
        fast.encode(fast.ChannelAck(1, 2, 3)),
        fast.encode(fast.HandleReply(1, 2, 200, "ok")),
        fast.encode(fast.ConnectionPing(True)),
    ]
    return frames, "client"


def stream(frames: list[bytes], size: int) -> tuple[bytes, list[tuple[int, int]]]:
    """`frames` repeated in turn to about `size` bytes, and each frame's span."""
    out, spans, at = [], [], 0
    while at < size:
        for f in frames:
            out.append(f)
            spans.append((at, at + len(f)))
            at += len(f)
    return b"".join(out), spans


def best(fns: dict[str, Callable[[], int]], rounds: int) -> dict[str, float]:
    """Seconds of each function's best round, the functions alternating round by round."""
    out = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            out[name] = min(out[name], time.perf_counter() - start)
    return out


def main() -> int:
    quick = "--quick" in sys.argv
    size = 5_000_000 if quick else 50_000_000
    rounds = 3 if quick else 5
    rows: list[dict[str, Any]] = []
    print(f"{'protocol':18} {'MB':>5} {'frames':>9} {'reader/s':>12} {'known/s':>12}  reader/known")
    cases: list[tuple[str, Any, Callable[[], tuple[list[bytes], str]]]] = [
        ("RabbitMQ Streams", rs, _streams),
        ("AMQP 0-9-1", amqp, _amqp091),
        ("AMQP/Fast 0.8", fast, _fast08),
    ]
    for name, package, make in cases:
        frames, sender = make()
        data, spans = stream(frames, size)
        decode = package.decode

        def reader(data: bytes = data, package: Any = package, sender: str = sender) -> int:
            r = package.FrameReader(sender=sender)
            n = 0
            for at in range(0, len(data), CHUNK):
                r.feed(data[at : at + CHUNK])
                for _ in r:
                    n += 1
            r.finish()
            return n

        def known(
            data: bytes = data,
            spans: list[tuple[int, int]] = spans,
            sender: str = sender,
            decode: Callable[..., Any] = decode,
        ) -> int:
            view = memoryview(data)
            n = 0
            for start, stop in spans:
                decode(view[start:stop], sender)
                n += 1
            return n

        assert reader() == known() == len(spans), name
        got = best({"reader": reader, "known": known}, rounds)
        ratio = got["known"] / got["reader"]
        rows.append(
            {
                "protocol": name,
                "bytes": len(data),
                "frames": len(spans),
                "reader_frames_per_s": round(len(spans) / got["reader"]),
                "known_frames_per_s": round(len(spans) / got["known"]),
                "reader_vs_known": round(ratio, 2),
                "goal": GOAL,
            }
        )
        verdict = "met" if ratio >= GOAL else "NOT met"
        print(
            f"{name:18} {len(data) / 1e6:>5.0f} {len(spans):>9,} "
            f"{len(spans) / got['reader']:>12,.0f} {len(spans) / got['known']:>12,.0f}  "
            f"{ratio:5.2f}x (goal >= {GOAL}x {verdict})"
        )
    out = write_results("frame_reader", rows)
    print(f"results: {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
