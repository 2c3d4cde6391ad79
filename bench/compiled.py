"""Speed of the compiled build of the generated codecs (mypyc) against the pure-Python modules
and the hand-written floors, measured in the same run.

    .venv/bin/python bench/compiled.py [--quick] [--out DIR] [--only streams,0-9-1,1.0] [--no-build]

DIR (default: $SPECGEN_COMPILED, else ~/.cache/specgen/compiled) holds the compiled build;
`python -m specgen.compiled --out DIR` makes it first when its sources changed (see
specgen/compiled.py); --no-build times DIR as it is.

The two builds are the same module names, so each runs in its own worker process: one imports
the checkout's pure-Python `specgen_codecs`, the other the compiled one (the worker checks that
every codec module it loaded is a compiled extension). This process sends both workers the
same calls, in 7 alternating rounds per cell (each cell's functions timed in turn for about
`budget / 7` seconds, each figure its best round, as bench/codec.py's `rates` does), so load on
the machine weighs on all of them alike.

Cells:
  * Streams decode: every frame of bench/codec.py, with its floor (bench/floors/streams.py: a
    hand-written `struct` decoder with classes of its own, making the same checks) where it has
    one; DeliverV1 also without the CRC check
  * Streams encode, AMQP 0-9-1 decode and encode, AMQP 1.0 decode and encode (bench/amqp10.py's
    cases): pure-Python against compiled; no floor yet (a floor found in bench/codec.py's or
    bench/amqp10.py's `FLOORS` dict, keyed by cell name, is used)
Columns: the rate of each (calls per second), compiled/floor with the goal (>= 2x) beside it,
compiled/pure, pure/floor. Results go to bench/results/compiled.json.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GOAL = 2.0  # compiled / floor, issue 28 goal 4
ROUNDS = 7

Cells = dict[str, dict[str, Callable[[], Any]]]


# ---- worker side: the cells, built on whichever specgen_codecs this process imports


def _streams(cells: Cells) -> None:
    import codec  # bench/codec.py: its frames, and the floors of bench/floors/streams.py
    from floors import streams

    from specgen_codecs.rabbitmq_stream import v4_0 as rs

    floors = getattr(codec, "FLOORS", {})
    for name, frame, sender, floor, *_ in codec.frames():
        cell = f"streams decode {name}"
        fns: dict[str, Callable[[], Any]] = {
            "specgen": lambda f=frame, s=sender: rs.decode(f, s),
        }
        floor = floors.get(cell, floor)
        if floor is not None:
            fns["floor"] = lambda fl=floor, f=frame: fl(f)
        cells[cell] = fns
        if name.startswith("Deliver"):
            cells[f"streams decode {name} no-crc"] = {
                "specgen": lambda f=frame, s=sender: rs.decode(f, s, verify_checksums=False),
                "floor": lambda f=frame: streams.decode_deliver_no_crc(f),
            }
        msg = rs.decode(frame, sender)
        cells[f"streams encode {name}"] = {"specgen": lambda m=msg: rs.encode(m)}


def _amqp091(cells: Cells) -> None:
    from specgen_codecs.amqp_0_9_1 import v0_9_1 as a

    messages = {
        "Basic.Deliver": a.BasicDeliver("ctag-1", 42, False, "amq.direct", "some.routing.key"),
        "content header": a.BasicProperties(
            0,
            1200,
            content_type="application/json",
            delivery_mode=2,
            message_id="m-1",
            timestamp=1_700_000_000,
        ),
        "content body 1 KiB": a.ContentBody(b"x" * 1024),
    }
    for name, msg in messages.items():
        msg.channel = 1
        frame = a.encode(msg)
        cells[f"0-9-1 decode {name}"] = {"specgen": lambda f=frame: a.decode(f, "server")}
        cells[f"0-9-1 encode {name}"] = {"specgen": lambda m=msg: a.encode(m)}


def _amqp10(cells: Cells) -> None:
    try:
        import amqp10  # bench/amqp10.py: needs proton and azure-servicebus
    except ImportError as e:
        print(f"AMQP 1.0 cells left out: {e}", file=sys.stderr)
        return
    floors = getattr(amqp10, "FLOORS", {})
    for case in amqp10.cases():
        ours = case.peers["specgen"]
        frame = ours.encode()
        for op, fn in (
            ("decode", lambda o=ours, f=frame: o.decode(f)),
            ("encode", ours.encode),
        ):
            cell = f"1.0 {op} {case.name}"
            cells[cell] = {"specgen": fn}
            if cell in floors:
                cells[cell]["floor"] = lambda fl=floors[cell], f=frame: fl(f)


# group -> (its cells, the protocol package it times)
GROUPS: dict[str, tuple[Callable[[Cells], None], str]] = {
    "streams": (_streams, "rabbitmq_stream"),
    "0-9-1": (_amqp091, "amqp_0_9_1"),
    "1.0": (_amqp10, "amqp_1_0"),
}


def worker(kind: str, groups: list[str]) -> int:
    sys.path.insert(0, str(ROOT / "bench"))
    if kind == "pure":
        sys.path.insert(0, str(ROOT))
        import specgen.locations  # noqa: F401  (specgen_codecs: this checkout's generated/)
    import specgen_codecs

    cells: Cells = {}
    for group in groups:
        GROUPS[group][0](cells)
    loaded = {
        name: getattr(m, "__file__", "") or ""
        for name, m in sys.modules.items()
        if name.startswith("specgen_codecs.") and not name.endswith("__init__")
    }
    compiled = sorted(n for n, f in loaded.items() if f.endswith(".so"))
    if kind == "compiled":
        pure = sorted(
            n
            for n, f in loaded.items()
            if not f.endswith(".so") and not f.endswith("__init__.py") and "spark" not in n
        )
        if pure:
            raise SystemExit(f"not compiled in the compiled build: {pure}")
    elif compiled:
        raise SystemExit(f"compiled modules in the pure build: {compiled}")
    hello = {
        "package": specgen_codecs.__file__,
        "compiled": len(compiled),
        "cells": {c: sorted(fns) for c, fns in cells.items()},
    }
    print(json.dumps(hello), flush=True)
    for line in sys.stdin:
        cell, fn_name, n = json.loads(line)
        fn = cells[cell][fn_name]
        start = time.perf_counter()
        for _ in range(n):
            fn()
        print(json.dumps(time.perf_counter() - start), flush=True)
    return 0


# ---- the driver


class Worker:
    def __init__(self, kind: str, out: Path, groups: list[str]) -> None:
        env = dict(os.environ)
        if kind == "compiled":
            env["PYTHONPATH"] = os.pathsep.join([str(out), str(ROOT)])
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", kind, "--only", ",".join(groups)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        assert self.proc.stdout is not None
        self.hello = json.loads(self.proc.stdout.readline())

    def time(self, cell: str, fn: str, n: int) -> float:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps([cell, fn, n]) + "\n")
        self.proc.stdin.flush()
        return float(json.loads(self.proc.stdout.readline()))

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def rates(runs: dict[str, tuple[Worker, str, str]], budget: float) -> dict[str, float]:
    """Calls per second of each run (worker, cell, function): best of ROUNDS alternating rounds."""
    counts: dict[str, int] = {}
    for key, (w, cell, fn) in runs.items():
        n, t = 1, 0.0
        while t < budget / 70:
            n *= 2
            t = w.time(cell, fn, n)
        counts[key] = max(1, int(n * (budget / ROUNDS) / t))
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(ROUNDS):
        for key, (w, cell, fn) in runs.items():
            best[key] = min(best[key], w.time(cell, fn, counts[key]))
    return {key: counts[key] / best[key] for key in runs}


def main(argv: list[str]) -> int:
    groups = argv[argv.index("--only") + 1].split(",") if "--only" in argv else list(GROUPS)
    if "--worker" in argv:
        return worker(argv[argv.index("--worker") + 1], groups)
    budget = 0.5 if "--quick" in argv else 2.0
    default = os.environ.get("SPECGEN_COMPILED") or Path.home() / ".cache/specgen/compiled"
    out = Path(argv[argv.index("--out") + 1] if "--out" in argv else default).resolve()
    sys.path.insert(0, str(ROOT))
    from specgen.compiled import build

    if "--no-build" not in argv:
        started = time.perf_counter()
        built = build(out, sorted({GROUPS[g][1] for g in groups}))
        if any(s is not None for s in built.values()):
            print(f"compiled build made in {time.perf_counter() - started:.0f} s: {out}")
    pure, comp = Worker("pure", ROOT, groups), Worker("compiled", out, groups)
    print(f"pure:     {pure.hello['package']}")
    print(f"compiled: {comp.hello['package']} ({comp.hello['compiled']} extension modules)")
    heads = ("pure/s", "compiled/s", "floor/s")
    print(f"{'cell':44} " + " ".join(f"{h:>11}" for h in heads) + "  comp/floor (goal)  comp/pure")
    rows: list[dict[str, Any]] = []
    for cell, fns in pure.hello["cells"].items():
        runs = {"pure": (pure, cell, "specgen"), "compiled": (comp, cell, "specgen")}
        if "floor" in fns:
            runs["floor"] = (pure, cell, "floor")
        got = rates(runs, budget)
        floor = got.get("floor")
        row = {
            "cell": cell,
            "pure": round(got["pure"]),
            "compiled": round(got["compiled"]),
            "floor": None if floor is None else round(floor),
            "compiled_vs_floor": None if floor is None else round(got["compiled"] / floor, 2),
            "goal_compiled_vs_floor": GOAL if floor is not None else None,
            "compiled_vs_pure": round(got["compiled"] / got["pure"], 2),
            "pure_vs_floor": None if floor is None else round(got["pure"] / floor, 2),
        }
        rows.append(row)
        vs = "-" if floor is None else f"{row['compiled_vs_floor']:.2f}x"
        goal = (
            ""
            if floor is None
            else f"(>= {GOAL:.0f}x {'met' if got['compiled'] >= GOAL * floor else 'NOT met'})"
        )
        print(
            f"{cell:44} {got['pure']:>11,.0f} {got['compiled']:>11,.0f} "
            + (f"{'-':>11}" if floor is None else f"{floor:>11,.0f}")
            + f"  {vs:>6} {goal:15} {row['compiled_vs_pure']:>6.2f}x"
        )
    pure.close()
    comp.close()
    from mypy.version import __version__ as mypy_version

    result = ROOT / "bench" / "results" / "compiled.json"
    result.write_text(
        json.dumps(
            {
                "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "python": platform.python_version(),
                "mypy": mypy_version,
                "budget_seconds": budget,
                "goal_compiled_vs_floor": GOAL,
                "rows": rows,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"results: {result.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
