"""Speed of the generated AMQP 0-10 codec against hand-written `struct` floors, its FrameReader
against decoding the same frames at known offsets, and the import time of its version package.

    PYTHONPATH=. .venv/bin/python bench/amqp010.py [--quick] [--budget SECONDS] [--results DIR]
        [--no-save]

The codec measured is the `specgen_codecs` of the specgen that Python imports (the checkout
on PYTHONPATH, else the installed one; this script's checkout when Python finds no specgen);
the first line printed names its folder. The import time is measured for the same one.

The frames are the shipped sample's (samples/amqp-0-10/session-1), plus an execution.sync:

  * message.transfer   a command segment: session header, destination, accept and acquire mode
  * transfer header    its header segment: delivery-properties (priority, delivery-mode,
                       exchange, routing-key) and message-properties (content-length, message-id,
                       content-type, a two-entry application-headers map)
  * body frame         one whole frame (12-byte header included) carrying the message's body
  * session.completed  a control with a sequence set
  * execution.sync     a command with the sync flag set and no fields
  * queue.declare      a command: queue name, two bits
  * connection.start   a control: a map of server properties, two str16 arrays

Decode is segment payload -> object (`decode_command`, `decode_control`, `decode_header`) and,
for the body frame, frame bytes -> `Frame` (`decode`); encode is the reverse (`encode_method`,
`encode_header`, `encode`) of a decoded object.

The floor (the goal's yardstick, issue 28; bench/floors/amqp010.py): what a careful programmer
would write by hand for exactly that frame, with precompiled `struct.Struct`s and classes of its
own (a `__slots__` class per command, control and struct, the generated class's name and fields,
a plain `__init__`; its own `SessionHeader`, `Frame`, `Typed`, `Array` and the enums these
frames name), making the same checks as the generated decoder (every length against the bytes
left, unknown packing flags, trailing bytes, utf-8, the class and command codes, DecodeError
naming the field and the byte offset; EncodeError for a value that does not fit). It imports no
generated code, so a cost in the generated classes is not in the floor. The floors decode
`bytes`, which is what a segment's payload is, and encode their own decoded objects. Before
timing, every floor's object must agree with the generated decoder's field by field
(bench/floors/compare.py) and both encoders must give back the sample's bytes; a disagreement
aborts the run. Typed values in maps and arrays of types the floors do not spell out (decimals,
chars, coded structs) are refused by them: the sample's frames hold none.

There is no maintained Python peer for AMQP 0-10 on PyPI (qpid-python is Python 2 only and
unmaintained), so goal 2 (ahead of every peer) has no cell here.

Goals printed beside each figure: decode and encode >= 0.80x the floor (goal 1), FrameReader >=
0.95x decoding the same frames at known offsets (goal 3), import of specgen_codecs.amqp_0_10.v0_10
<= 20 ms (goal 7).

Timing: `rates` below: the functions of one row are timed in turn, in 15 alternating rounds of
about `budget / 15` seconds each, and each figure is its best round, so load on the machine weighs
on all of them alike (short rounds, many of them: on the shared 2-core machine a single cell still
moves by about 0.1x between runs); only ratios measured in the same run are reported. Results go to
bench/results/amqp010.json (--results DIR: DIR/amqp010.json instead; --no-save: nowhere).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if importlib.util.find_spec("specgen") is None:  # no specgen installed nor on PYTHONPATH
    sys.path.insert(0, str(ROOT))

from floors import amqp010 as floor  # noqa: E402  (bench/floors/: no generated code)
from floors.compare import differences  # noqa: E402
from timing import measured, rates, shown  # noqa: E402  (bench/timing.py, beside this script)

import specgen.locations  # noqa: E402,F401  (specgen_codecs: the generated/ of specgen's checkout)
from specgen_codecs.amqp_0_10.v0_10 import (  # noqa: E402
    Assembler,
    ConnectionStart,
    ExecutionSync,
    FrameReader,
    MessageTransfer,
    QueueDeclare,
    SessionCompleted,
    SessionHeader,
    decode,
    encode,
)
from specgen_codecs.amqp_0_10.v0_10 import commands as c  # noqa: E402

SAMPLE = ROOT / "samples" / "amqp-0-10" / "session-1"
RESULTS = ROOT / "bench" / "results"
GOAL_FLOOR = 0.80
GOAL_READER = 0.95
GOAL_IMPORT_MS = 20.0


# ---------------------------------------------------------------------------------------------
# The frames
# ---------------------------------------------------------------------------------------------


def sample_frames(direction: str = "c2s") -> bytes:
    """The sample's frames of one direction, without the protocol header."""
    data = (SAMPLE / f"conn-0001.{direction}.bin").read_bytes()
    assert data[:8] == b"AMQP\x01\x01\x00\n"
    return data[8:]


def cases() -> list[tuple[str, bytes, Callable[[Any], Any], Callable[[Any], Any], Any, Any]]:
    """(name, bytes, generated decode, generated encode, floor decode, floor encode)."""
    first: dict[str, bytes] = {}
    for direction in ("s2c", "c2s"):
        reader = FrameReader()
        reader.feed(sample_frames(direction))
        assembler = Assembler()
        for frame in reader:
            segment = assembler.add(frame)
            if segment is None:
                continue
            value = segment.decode()
            name = {
                MessageTransfer: "message.transfer",
                list: "transfer header",
                bytes: "body frame",
                SessionCompleted: "session.completed",
                QueueDeclare: "queue.declare",
                ConnectionStart: "connection.start",
            }.get(type(value))
            if name is None or name in first:
                continue
            first[name] = encode(frame) if name == "body frame" else segment.payload
    first["execution.sync"] = encode(ExecutionSync(session_header=SessionHeader(sync=True)))
    return [
        ("message.transfer", first["message.transfer"], c.decode_command, c.encode_method,
         floor.decode_transfer, floor.encode_transfer),
        ("transfer header", first["transfer header"], c.decode_header, c.encode_header,
         floor.decode_header, floor.encode_header),
        ("body frame", first["body frame"], decode, encode, floor.decode_body_frame,
         floor.encode_body_frame),
        ("session.completed", first["session.completed"], c.decode_control, c.encode_method,
         floor.decode_completed, floor.encode_completed),
        ("execution.sync", first["execution.sync"], c.decode_command, c.encode_method,
         floor.decode_sync, floor.encode_sync),
        ("queue.declare", first["queue.declare"], c.decode_command, c.encode_method,
         floor.decode_declare, floor.encode_declare),
        ("connection.start", first["connection.start"], c.decode_control, c.encode_method,
         floor.decode_start, floor.encode_start),
    ]  # fmt: skip


def stream(target: int) -> tuple[bytes, list[tuple[int, int]]]:
    """The sample's frames (both directions) repeated to about `target` bytes, and each
    frame's span."""
    unit = sample_frames("c2s") + sample_frames("s2c")
    data = unit * max(1, target // len(unit))
    spans = []
    at = 0
    while at < len(data):
        size = data[at + 2] << 8 | data[at + 3]
        spans.append((at, at + size))
        at += size
    return data, spans


def import_ms(runs: int = 15) -> float:
    """The fastest of `runs` cold imports of the version package, in ms (-X importtime's
    cumulative figure: the package and everything it imports that was not imported yet)."""
    best = float("inf")
    code = "import specgen.locations; import specgen_codecs.amqp_0_10.v0_10"
    home = str(specgen.locations.PACKAGE.parent)  # where the measured specgen is imported from
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", code],
            capture_output=True,
            text=True,
            cwd=home,
            env={"PYTHONPATH": home, "PATH": "/usr/bin:/bin"},
            check=True,
        )
        for line in done.stderr.splitlines():
            m = re.match(
                r"import time:\s+\d+ \|\s+(\d+) \|\s+specgen_codecs\.amqp_0_10\.v0_10$", line
            )
            if m:
                best = min(best, int(m.group(1)) / 1000)
    return best


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--quick", action="store_true", help="a short run (0.5 s per row)")
    p.add_argument("--budget", type=float, default=None, help="seconds per row (default 2)")
    p.add_argument("--no-save", action="store_true", help="do not write bench/results")
    p.add_argument(
        "--results", type=Path, metavar="DIR", help="write DIR/amqp010.json, not bench/results/"
    )
    args = p.parse_args(argv)
    budget = args.budget or (0.5 if args.quick else 2.0)
    rows: list[dict[str, Any]] = []
    failed: list[str] = []
    print(measured())

    print(
        f"AMQP 0-10, decode and encode against the hand-written floor (goal >= {GOAL_FLOOR:.2f}x)"
    )
    print(f"{'frame':20} {'op':6} {'bytes':>6} {'specgen/s':>11} {'floor/s':>11}  vs floor  goal")
    for name, data, dec, enc, fdec, fenc in cases():
        ours = dec(data)
        mine = fdec(data)  # the floor encodes its own object, as specgen encodes its own
        problems = differences(mine, ours, name)
        if problems:
            raise SystemExit(
                "the floor disagrees with the generated decoder:\n" + "\n".join(problems)
            )
        if enc(ours) != data or fenc(mine) != data:
            raise SystemExit(f"{name}: an encoder does not give the decoded bytes back")
        timed: list[tuple[str, dict[str, Callable[[], Any]]]] = [
            ("decode", {"specgen": partial(dec, data), "floor": partial(fdec, data)}),
            ("encode", {"specgen": partial(enc, ours), "floor": partial(fenc, mine)}),
        ]
        for op, fns in timed:
            got = rates(fns, budget, rounds=15)
            ratio = got["specgen"] / got["floor"]
            ok = ratio >= GOAL_FLOOR
            if not ok:
                failed.append(f"{name} {op}")
            print(
                f"{name:20} {op:6} {len(data):6} {got['specgen']:11,.0f} {got['floor']:11,.0f}"
                f"  {ratio:7.2f}x  >= {GOAL_FLOOR:.2f}x {'met' if ok else 'NOT MET'}"
            )
            rows.append(
                {"frame": name, "op": op, "bytes": len(data), "specgen_per_s": got["specgen"],
                 "floor_per_s": got["floor"], "vs_floor": ratio, "goal": GOAL_FLOOR, "met": ok}
            )  # fmt: skip

    data, spans = stream(20_000_000 if not args.quick else 4_000_000)
    chunk = 65536

    def reader() -> int:
        r = FrameReader()
        n = 0
        for i in range(0, len(data), chunk):
            r.feed(data[i : i + chunk])
            for _ in r:
                n += 1
        r.finish()
        return n

    def known() -> int:
        view = memoryview(data)
        n = 0
        for start, stop in spans:
            decode(view[start:stop])
            n += 1
        return n

    assert reader() == known() == len(spans)
    best = {"reader": float("inf"), "known": float("inf")}
    for _ in range(3 if args.quick else 5):
        for key, fn in (("reader", reader), ("known", known)):
            start = time.perf_counter()
            fn()
            best[key] = min(best[key], time.perf_counter() - start)
    reader_ratio = best["known"] / best["reader"]
    reader_ok = reader_ratio >= GOAL_READER
    if not reader_ok:
        failed.append("FrameReader")
    mb = len(data) / 1e6
    print()
    print(
        f"FrameReader over {mb:.0f} MB ({len(spans):,} frames, fed in {chunk // 1024} KiB chunks)"
    )
    print(
        f"  reader {mb / best['reader']:7.1f} MB/s, known offsets {mb / best['known']:7.1f} MB/s:"
        f" {reader_ratio:.2f}x  >= {GOAL_READER:.2f}x {'met' if reader_ok else 'NOT MET'}"
    )

    ms = import_ms()
    import_ok = ms <= GOAL_IMPORT_MS
    if not import_ok:
        failed.append("import")
    print()
    print(
        f"import specgen_codecs.amqp_0_10.v0_10: {ms:.1f} ms (best of 15, -X importtime)"
        f"  <= {GOAL_IMPORT_MS:.0f} ms {'met' if import_ok else 'NOT MET'}"
    )
    print()
    print("peers: none (no maintained Python AMQP 0-10 codec on PyPI): goal 2 has no cell here")
    print("goals not met: " + (", ".join(failed) if failed else "none"))

    if not args.no_save:
        out = (args.results or RESULTS) / "amqp010.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(
            json.dumps(
                {
                    "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "python": platform.python_version(),
                    "machine": platform.machine(),
                    "budget_s": budget,
                    "rows": rows,
                    "frame_reader": {"mb": mb, "frames": len(spans), "chunk": chunk,
                                     "vs_known_offsets": reader_ratio, "goal": GOAL_READER,
                                     "met": reader_ok},
                    "import_ms": {"ms": ms, "goal": GOAL_IMPORT_MS, "met": import_ok},
                },
                indent=2,
            )
            + "\n"
        )  # fmt: skip
        print(f"results: {shown(out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
