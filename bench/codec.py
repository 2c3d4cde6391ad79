"""Decode speed of the generated RabbitMQ Streams codec, against peers measured in the same run.

    .venv/bin/python bench/codec.py [--quick]

For each frame below, frames per second of:
  * specgen      the generated `decode` (Deliver: its chunk CRC verified, the default)
  * no-crc       the generated `decode(..., verify_checksums=False)` (Deliver only)
  * floor        a hand-written decoder of the same frame with precompiled `struct.Struct`s and
                 the same checks (the header's size, key and version, then every length and
                 count), giving tuples instead of dataclasses: the target
  * rstream      rstream's `decode_frame` (a peer; it verifies the CRC too, but keeps a chunk's
                 data as one blob where specgen splits it into entries)
and the ratios specgen/floor (the roadmap's target is >= 0.75x) and specgen/rstream. The
cost of the CRC check is the no-crc column against specgen. The decoders of one frame are timed
in alternating rounds and each figure is its best round, so load on the machine weighs on all of
them alike; results go to bench/results/codec.json.
"""

from __future__ import annotations

import json
import struct
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rstream.encoding import decode_frame

from specgen_codecs.rabbitmq_stream import v4_0 as rs

ROOT = Path(__file__).resolve().parents[1]

# ---- hand-written floors: what a careful programmer would write for exactly this frame

_HEAD = struct.Struct(">IHH")
_CREDIT = struct.Struct(">BH")
_PUB = struct.Struct(">Bi")
_QI = struct.Struct(">Qi")
_CONFIRM = struct.Struct(">Bi")
_CHUNK = struct.Struct(">BbbHIqQQIIIB3s")  # subscription, magic .. reserved
_ENTRY = struct.Struct(">I")


class Bad(ValueError):
    pass


def _header(b: bytes | memoryview, key: int) -> None:
    """The checks every floor makes first, as the generated decoder does: the size field counts
    the bytes after it, and the key and version are this frame's."""
    if len(b) < 8:
        raise Bad("header")
    size, k, version = _HEAD.unpack_from(b, 0)
    if size != len(b) - 4 or k != key or version != 1:
        raise Bad("header")


def floor_credit(b: bytes) -> tuple[Any, ...]:
    _header(b, 0x0009)
    if len(b) != 11:
        raise Bad("size")
    return _CREDIT.unpack_from(b, 8)


def floor_publish(b: bytes) -> tuple[int, list[tuple[int, bytes]]]:
    view = memoryview(b)
    _header(view, 0x0002)
    end = len(b)
    pid, n = _PUB.unpack_from(view, 8)
    at = 13
    if n < 0 or n * 12 > end - at:
        raise Bad("count")
    out = []
    for _ in range(n):
        if end - at < 12:
            raise Bad("truncated")
        publishing_id, length = _QI.unpack_from(view, at)
        at += 12
        if length < 0 or length > end - at:
            raise Bad("length")
        out.append((publishing_id, bytes(view[at : at + length])))
        at += length
    return pid, out


def floor_confirm(b: bytes) -> tuple[int, list[int]]:
    _header(b, 0x0003)
    pid, n = _CONFIRM.unpack_from(b, 8)
    if n < 0 or n * 8 > len(b) - 13:
        raise Bad("count")
    return pid, list(struct.unpack_from(f">{n}Q", b, 13))


def _floor_deliver(b: bytes, crc: bool) -> tuple[Any, ...]:
    view = memoryview(b)
    _header(view, 0x0008)
    end = len(b)
    fields = _CHUNK.unpack_from(view, 8)
    at = 8 + _CHUNK.size
    entries, data_length, chunk_crc = fields[3], fields[9], fields[8]
    if data_length > end - at:
        raise Bad("data length")
    if crc and zlib.crc32(view[at : at + data_length]) != chunk_crc:
        raise Bad("crc")
    out = []
    for _ in range(entries):
        (head,) = _ENTRY.unpack_from(view, at)
        at += 4
        if head >> 31:
            raise Bad("sub-batch")
        if head > end - at:
            raise Bad("length")
        out.append(bytes(view[at : at + head]))
        at += head
    return fields, out


def floor_deliver(b: bytes) -> tuple[Any, ...]:
    return _floor_deliver(b, True)


def floor_deliver_no_crc(b: bytes) -> tuple[Any, ...]:
    return _floor_deliver(b, False)


# ---- the frames


def _deliver() -> bytes:
    entries = [rs.SimpleEntry(len(p), p) for p in (bytes([i]) * (20 + i % 60) for i in range(100))]
    data_length = sum(4 + e.size for e in entries)
    chunk = rs.OsirisChunk(
        0x50, 0, 100, 100, 1_700_000_000_000, 1, 0, 0, data_length, 0, 0, 0, entries
    )
    return rs.encode(rs.DeliverV1(1, chunk), seal_checksums=True)


def frames() -> list[tuple[str, bytes, str, Callable[[bytes], Any] | None]]:
    """(name, frame, sender, floor) for every measured frame."""
    publish = rs.encode(
        rs.PublishV1(1, [rs.PublishV1PublishedMessage(i, b"m" * (16 + i % 48)) for i in range(100)])
    )
    sub_entry = rs.encode(
        rs.PublishV1(
            1,
            [
                rs.PublishV1PublishedMessage(
                    1, rs.SubBatchEntry.from_records([b"r" * 40] * 100, compression_type=1)
                )
            ],
        )
    )
    return [
        ("Credit", rs.encode(rs.Credit(1, 10)), "client", floor_credit),
        ("PublishV1 x100", publish, "client", floor_publish),
        ("PublishV1 sub-entry gzip x100", sub_entry, "client", None),
        (
            "PublishConfirm x100",
            rs.encode(rs.PublishConfirm(1, list(range(100)))),
            "server",
            floor_confirm,
        ),
        ("DeliverV1 x100", _deliver(), "server", floor_deliver),
    ]


def rates(fns: dict[str, Callable[[], Any]], budget: float) -> dict[str, float]:
    """Calls per second of each function: the best of seven rounds, each round timing every
    function in turn for about `budget / 7` seconds, so that what the machine is doing
    meanwhile weighs on all of them alike (ratios are what this benchmark reports)."""
    counts: dict[str, int] = {}
    for name, fn in fns.items():
        n, t = 1, 0.0
        while t < budget / 70:
            n *= 2
            start = time.perf_counter()
            for _ in range(n):
                fn()
            t = time.perf_counter() - start
        counts[name] = max(1, int(n * (budget / 7) / t))
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(7):
        for name, fn in fns.items():
            start = time.perf_counter()
            for _ in range(counts[name]):
                fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: counts[name] / best[name] for name in fns}


def main() -> int:
    budget = 0.5 if "--quick" in sys.argv else 2.0
    rows: list[dict[str, Any]] = []
    heads = ("specgen/s", "no-crc/s", "floor/s", "rstream/s")
    print(
        f"{'frame':32} {'bytes':>6} "
        + " ".join(f"{h:>11}" for h in heads)
        + "  vs floor  vs rstream"
    )
    for name, frame, sender, floor in frames():

        def ours_fn(frame: bytes = frame, sender: Any = sender) -> Any:
            return rs.decode(frame, sender)

        def no_crc_fn(frame: bytes = frame, sender: Any = sender) -> Any:
            return rs.decode(frame, sender, verify_checksums=False)

        def theirs_fn(frame: bytes = frame) -> Any:
            return decode_frame(frame[4:])

        fns: dict[str, Callable[[], Any]] = {"ours": ours_fn, "theirs": theirs_fn}
        if name.startswith("Deliver"):
            fns["no_crc"] = no_crc_fn
        if floor is not None:
            fns["floor"] = lambda f=floor, b=frame: f(b)
        got = rates(fns, budget)
        ours, theirs = got["ours"], got["theirs"]
        no_crc, floor_rate = got.get("no_crc"), got.get("floor")
        row = {
            "frame": name,
            "bytes": len(frame),
            "specgen": round(ours),
            "specgen_no_crc": None if no_crc is None else round(no_crc),
            "floor": None if floor_rate is None else round(floor_rate),
            "rstream": round(theirs),
            "vs_floor": None if floor_rate is None else round(ours / floor_rate, 2),
            "vs_rstream": round(ours / theirs, 2),
        }
        rows.append(row)

        def fmt(v: float | None) -> str:
            return "-" if v is None else f"{v:,.0f}"

        vs_floor = "-" if row["vs_floor"] is None else f"{row['vs_floor']:.2f}x"
        print(
            f"{name:32} {len(frame):>6} {fmt(ours):>11} {fmt(no_crc):>11} {fmt(floor_rate):>11} "
            f"{fmt(theirs):>11} {vs_floor:>9} {row['vs_rstream']:>9.2f}x"
        )
        if no_crc is not None:
            print(f"{'':32} CRC check costs {100 * (1 - ours / no_crc):.0f}% of the decode rate")
    out = ROOT / "bench" / "results" / "codec.json"
    out.write_text(
        json.dumps(
            {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": rows}, indent=2
        )
        + "\n"
    )
    print(f"results: {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
