"""Issue 28's goals, each beside the latest figure the benchmark scripts recorded.

    .venv/bin/python bench/goals.py [--summary] [--results DIR]

Reads bench/results/*.json (each written by its script: codec.py, amqp091.py, amqp10.py,
amqp010.py, frame_reader.py, imports.py, compiled.py, generate.py, scale.py, pcap.py) and prints
one line per cell: the goal, the figure, met or not, and which script measured it and when;
`--summary` prints one line per goal instead (cells met, and the cell furthest from its goal).
It measures nothing itself; run the scripts for new figures. A missing results file is reported,
not guessed. `--results DIR` reads DIR/*.json instead (what the scripts wrote with their own
`--results DIR`, e.g. a run against another tree's generated code).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"

Line = tuple[str, str, float | None, float, str, bool]  # goal, cell, figure, target, unit, higher


def _load(name: str) -> dict[str, Any] | None:
    path = RESULTS / f"{name}.json"
    if not path.exists():
        return None
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _fused() -> Iterator[Line]:
    for script, peer in (("codec", "rstream"), ("amqp091", "pika")):
        data = _load(script) or {"rows": []}
        for row in data["rows"]:
            cell = f"{script}.py {row['frame']} {row['op']}"
            if row.get("vs_floor") is not None:
                yield "1 floor", cell, row["vs_floor"], row["goal_floor"], "x", True
            if row.get(f"vs_{peer}") is not None:
                yield f"2 {peer}", cell, row[f"vs_{peer}"], row[f"goal_{peer}"], "x", True


def _amqp10() -> Iterator[Line]:
    data = _load("amqp10") or {"rows": []}
    for row in data["rows"]:
        if row["operation"] == "decode" and row["bytes_from"] != "specgen":
            continue  # the goal is judged on specgen's own bytes; the others are shown by the script
        cell = f"amqp10.py {row['frame']} {row['operation']}"
        yield "1 floor", cell, row.get("vs_floor"), row.get("vs_floor_goal", 0.8), "x", True
        yield "2 _pyamqp", cell, row.get("vs_pyamqp"), row.get("vs_pyamqp_goal", 0.0), "x", True
    reader = data.get("frame_reader")
    if reader:
        yield "3 reader", "amqp10.py FrameReader", reader["ratio"], reader["goal"], "x", True


def _amqp010() -> Iterator[Line]:
    data = _load("amqp010") or {"rows": []}
    for row in data["rows"]:
        cell = f"amqp010.py {row['frame']} {row['op']}"
        yield "1 floor", cell, row["vs_floor"], row["goal"], "x", True
    reader = data.get("frame_reader")
    if reader:
        cell = "amqp010.py FrameReader"
        yield "3 reader", cell, reader["vs_known_offsets"], reader["goal"], "x", True


def _readers() -> Iterator[Line]:
    data = _load("frame_reader") or {"rows": []}
    for row in data["rows"]:
        cell = f"frame_reader.py {row['protocol']}"
        yield "3 reader", cell, row["reader_vs_known"], row["goal"], "x", True


def _compiled() -> Iterator[Line]:
    data = _load("compiled") or {"rows": []}
    for row in data["rows"]:
        if row.get("compiled_vs_floor") is not None:
            cell = f"compiled.py {row['cell']}"
            target = row["goal_compiled_vs_floor"]
            yield "4 mypyc", cell, row["compiled_vs_floor"], target, "x", True


def _generate() -> Iterator[Line]:
    data = _load("generate")
    if data:
        for name, seconds in data["median_seconds"].items():
            if "baseline" not in name:
                yield (
                    "5 generator",
                    f"generate.py {name}",
                    seconds,
                    data["goal_seconds"],
                    "s",
                    False,
                )


def _spark() -> Iterator[Line]:
    scale, pcap = _load("latest"), _load("pcap")
    if scale:
        yield (
            "6 spark",
            "scale.py local[*] vs one process",
            scale["spark_vs_single"],
            1.6,
            "x",
            True,
        )
        if scale.get("cluster_vs_local_all") is not None:
            cell = "scale.py 2-worker cluster vs local[*]"
            yield "6 spark", cell, scale["cluster_vs_local_all"], 1.0, "x", True
    if pcap:
        yield "6 spark", "pcap.py local[*] vs one process", pcap["spark_vs_single"], 1.3, "x", True
        cell = "pcap.py peak MiB per GiB of pcap"
        yield "6 spark", cell, pcap["peak_mib_per_gib"], 2048, " MiB", False
        if pcap.get("cluster_vs_local_all") is not None:
            cell = "pcap.py 2-worker cluster vs local[*]"
            yield "6 spark", cell, pcap["cluster_vs_local_all"], 1.0, "x", True


def _imports() -> Iterator[Line]:
    data = _load("imports") or {"rows": []}
    for row in data["rows"]:
        yield "7 import", f"imports.py {row['package']}", row["ms"], row["goal_ms"], " ms", False


def main() -> int:
    global RESULTS
    args = sys.argv[1:]
    summary = "--summary" in args
    if "--results" in args:
        at = args.index("--results")
        if at + 1 >= len(args):
            sys.exit("bench/goals.py: --results needs a folder")
        RESULTS = Path(args[at + 1])
    met = total = 0
    per_goal: dict[str, list[tuple[float, str, bool]]] = {}
    if not summary:
        print(f"{'goal':12} {'cell':58} {'figure':>10} {'target':>12}  ")
    for source in (
        _fused,
        _amqp10,
        _amqp010,
        _readers,
        _compiled,
        _generate,
        _spark,
        _imports,
    ):
        for goal, cell, figure, target, unit, higher in source():
            if figure is None:
                continue
            ok = figure >= target if higher else figure <= target
            met += ok
            total += 1
            sign = ">=" if higher else "<="
            shown = f"{figure:,.2f}{unit}" if unit == "x" else f"{figure:,.1f}{unit}"
            wanted = f"{sign} {target:g}{unit}"
            # how far from the goal, as a share of it (>= 1: met)
            share = figure / target if higher else (target / figure if figure else 0.0)
            per_goal.setdefault(goal.split()[0], []).append((share, f"{cell} {shown}", ok))
            if not summary:
                ok_text = "met" if ok else "NOT met"
                print(f"{goal:12} {cell[:58]:58} {shown:>10} {wanted:>12}  {ok_text}")
    if summary:
        for number, cells in sorted(per_goal.items()):
            worst = min(cells)
            hits = sum(ok for _, _, ok in cells)
            print(f"goal {number}: {hits:3} of {len(cells):3} cells met; furthest: {worst[1]}")
    missing = [
        name
        for name in (
            "codec",
            "amqp091",
            "amqp10",
            "amqp010",
            "frame_reader",
            "imports",
            "compiled",
            "generate",
            "latest",
            "pcap",
        )
        if not (RESULTS / f"{name}.json").exists()
    ]
    print(f"\n{met} of {total} cells meet their goal")
    if missing:
        print(f"no results yet from: {', '.join(missing)}")
    for name in ("codec", "amqp091", "amqp10", "amqp010", "frame_reader", "imports", "latest"):
        data = _load(name)
        if data and data.get("when"):
            print(f"  {name}.json measured {data['when']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
