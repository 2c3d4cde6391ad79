"""Speed of the generated RabbitMQ Streams codec, decode and encode, against peers in the same run.

    PYTHONPATH=. .venv/bin/python bench/codec.py [--quick] [--results DIR]

The codec measured is the `specgen_codecs` of the specgen that Python imports (the checkout
on PYTHONPATH, else the installed one); the first line printed names its folder.

For each frame below and each direction, frames per second of:
  * specgen   the generated `decode` (Deliver: its chunk CRC verified, the default) / `encode`
  * no-crc    the generated `decode(..., verify_checksums=False)` (Deliver only)
  * floor     bench/floors/streams.py: what a careful programmer would write for exactly that
              frame with precompiled `struct.Struct`s and classes of its own (one `__slots__`
              class per message and structure, the generated class's name and fields, a plain
              `__init__`), making the same checks as the generated codec (the header's size,
              key and version, then every length and count before it is used, utf-8, the CRC,
              no trailing bytes); on encode it writes the same bytes from its own decoded
              object. It imports no generated code, so a cost in the generated classes is not
              in the floor. This is issue 28's floor: the goal is specgen >= 0.8x it.
  * tuples    (decode only, for information) the floor giving tuples instead of objects
  * rstream   rstream's `decode_frame` / `encode_frame` (a peer; it verifies the CRC too, but
              keeps a chunk's data as one blob where specgen splits it into entries): the goal
              is specgen >= 1.5x rstream
Before anything is timed, each floor's decoded object must agree with the generated one field
by field (bench/floors/compare.py) and both encoders must give back the frame's bytes.
The codecs of one cell are timed in alternating rounds and each figure is its best round, so
load on the machine weighs on all of them alike; only ratios measured in the same run are
compared. Results go to bench/results/codec.json (--results DIR: DIR/codec.json instead).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from floors import streams as floor  # bench/floors/: the hand-written floors, no generated code
from floors.compare import differences
from rstream.encoding import decode_frame, encode_frame
from timing import mark, measured, rates, shown, write_results  # bench/timing.py

import specgen.locations  # noqa: F401  (specgen_codecs: the generated/ of specgen's checkout)
from specgen_codecs.rabbitmq_stream import v4_0 as rs

# ---- the frames


def _deliver() -> bytes:
    entries = [rs.SimpleEntry(len(p), p) for p in (bytes([i]) * (20 + i % 60) for i in range(100))]
    data_length = sum(4 + e.size for e in entries)
    chunk = rs.OsirisChunk(
        0x50, 0, 100, 100, 1_700_000_000_000, 1, 0, 0, data_length, 0, 0, 0, entries
    )
    return rs.encode(rs.DeliverV1(1, chunk), seal_checksums=True)


Cell = tuple[
    str, bytes, str, Callable[[bytes], Any] | None, Callable[[bytes], Any] | None, Any, bool
]


def frames() -> list[Cell]:
    """(name, frame, sender, floor decoder, tuples floor, floor encoder) for every measured
    frame (the floor's three None where it has none)."""
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
    metadata = rs.encode(
        rs.MetadataResponse(
            7,
            [rs.Broker(i, f"rabbit-{i}.example.com", 5552) for i in range(3)],
            [rs.StreamMetadata(f"stream-{i}", 1, i % 3, [0, 1, 2]) for i in range(4)],
        )
    )
    return [
        (
            "Credit",
            rs.encode(rs.Credit(1, 10)),
            "client",
            floor.decode_credit,
            floor.tuples_credit,
            floor.encode_credit,
        ),
        (
            "PublishV1 x100",
            publish,
            "client",
            floor.decode_publish,
            floor.tuples_publish,
            floor.encode_publish,
        ),
        ("PublishV1 sub-entry gzip x100", sub_entry, "client", None, None, None),
        (
            "PublishConfirm x100",
            rs.encode(rs.PublishConfirm(1, list(range(100)))),
            "server",
            floor.decode_confirm,
            floor.tuples_confirm,
            floor.encode_confirm,
        ),
        (
            "DeliverV1 x100",
            _deliver(),
            "server",
            floor.decode_deliver,
            floor.tuples_deliver,
            floor.encode_deliver,
        ),
        (
            "QueryOffset",
            rs.encode(rs.QueryOffsetRequest(3, "my-app-reference", "orders")),
            "client",
            floor.decode_query_offset,
            floor.tuples_query_offset,
            floor.encode_query_offset,
        ),
        (
            "DeclarePublisher",
            rs.encode(rs.DeclarePublisherRequest(3, 1, "my-app-reference", "orders")),
            "client",
            floor.decode_declare_publisher,
            floor.tuples_declare_publisher,
            floor.encode_declare_publisher,
        ),
        (
            "Open",
            rs.encode(rs.OpenRequest(2, "/")),
            "client",
            floor.decode_open,
            floor.tuples_open,
            floor.encode_open,
        ),
        (
            "MetadataResponse",
            metadata,
            "server",
            floor.decode_metadata,
            floor.tuples_metadata,
            floor.encode_metadata,
        ),
    ]  # type: ignore[return-value]


GOAL_FLOOR = 0.8
GOAL_RSTREAM = 1.5


def _mark(ratio: float | None, goal: float) -> str:
    if ratio is None:
        return f"{'-':>5}  (goal >= {goal}x)        "
    return mark(ratio, goal)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--quick", action="store_true", help="a short run (0.5 s per cell)")
    p.add_argument(
        "--results", type=Path, metavar="DIR", help="write DIR/codec.json, not bench/results/"
    )
    args = p.parse_args(argv)
    budget = 0.5 if args.quick else 2.0
    rows: list[dict[str, Any]] = []
    print(measured())
    print(
        f"{'frame':30} {'op':6} {'bytes':>5} {'specgen/s':>10} {'no-crc/s':>10} {'floor/s':>10} "
        f"{'tuples/s':>10} {'rstream/s':>10}  vs floor                     vs rstream"
    )
    for name, frame, sender, fdec, ftuples, fenc in frames():
        msg = rs.decode(frame, sender)  # type: ignore[arg-type]
        theirs = decode_frame(frame[4:])
        if rs.encode(msg) != frame:
            raise SystemExit(f"{name}: the generated encoder does not give the frame back")
        mine = None
        if fdec is not None:
            mine = fdec(frame)
            problems = differences(mine, msg, name)
            if problems:
                raise SystemExit(
                    "the floor disagrees with the generated decoder:\n" + "\n".join(problems)
                )
            if fenc(mine) != frame:
                raise SystemExit(f"{name}: the floor's encoder does not give the frame back")
        for op in ("decode", "encode"):
            fns: dict[str, Callable[[], Any]]
            if op == "decode":
                fns = {
                    "specgen": lambda f=frame, s=sender: rs.decode(f, s),
                    "rstream": lambda f=frame: decode_frame(f[4:]),
                }
                if name.startswith("Deliver"):
                    fns["no_crc"] = lambda f=frame, s=sender: rs.decode(
                        f, s, verify_checksums=False
                    )
                if fdec is not None:
                    fns["floor"] = lambda f=frame, fn=fdec: fn(f)
                    fns["tuples"] = lambda f=frame, fn=ftuples: fn(f)
            else:
                fns = {
                    "specgen": lambda m=msg: rs.encode(m),
                    "rstream": lambda t=theirs: encode_frame(t),
                }
                if fenc is not None:
                    fns["floor"] = lambda m=mine, fn=fenc: fn(m)
            got = rates(fns, budget)
            ours = got["specgen"]
            vs_floor = ours / got["floor"] if "floor" in got else None
            vs_rstream = ours / got["rstream"]
            row = {
                "frame": name,
                "op": op,
                "bytes": len(frame),
                **{k: round(v) for k, v in got.items()},
                "vs_floor": None if vs_floor is None else round(vs_floor, 2),
                "goal_floor": GOAL_FLOOR,
                "vs_rstream": round(vs_rstream, 2),
                "goal_rstream": GOAL_RSTREAM,
            }
            rows.append(row)

            def fmt(v: float | None) -> str:
                return "-" if v is None else f"{v:,.0f}"

            print(
                f"{name:30} {op:6} {len(frame):>5} {fmt(ours):>10} {fmt(got.get('no_crc')):>10} "
                f"{fmt(got.get('floor')):>10} {fmt(got.get('tuples')):>10} "
                f"{fmt(got['rstream']):>10}  {_mark(vs_floor, GOAL_FLOOR)}  "
                f"{_mark(vs_rstream, GOAL_RSTREAM)}"
            )
    out = write_results("codec", rows, args.results)
    print(f"results: {shown(out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
