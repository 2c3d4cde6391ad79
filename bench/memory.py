"""How Spark's peak memory grows with the capture: a Streams capture of 1 GiB against one of 4 GiB.

    .venv/bin/python bench/memory.py [--small GIB] [--large GIB] [--work DIR] [--results DIR]
    .venv/bin/python bench/memory.py --pcap [--results DIR]

Issue 39 asks that the pipeline's memory stay bounded as captures grow: Spark local[*]'s peak on
a 4 GiB Streams capture at most 1.3x its peak on 1 GiB. This script writes bench/scale.py's
Streams mix at both sizes (frames in proportion: 2,000,001 frames are 0.44 GiB), decodes each
with `specgen decode` on local[*] and with `decode_local` in one process, each run in a fresh
process whose whole process tree's memory is sampled every 0.2 s (bench/scale.py's `measure`:
driver, JVM, Python workers), checks that every run found, wrote and reconciled every frame,
and prints each peak and the ratio of the large capture's to the small one's beside the goal;
the rows go to bench/results/memory.json. A capture and its output are removed after its runs.

With `--pcap`, the other half of the goal: a pcap of 256 MiB against one of 1 GiB (Spark
local[*]'s peak at most 1.3x), each written, decoded and checked by bench/pcap.py (one process
and local[*]); the rows go to bench/results/memory_pcap.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pcap  # noqa: E402  (bench/pcap.py: the pcap, its runs and their checks)
import scale  # noqa: E402  (bench/scale.py: the Streams mix and the measured run)
from timing import write_results  # noqa: E402

GOAL = 1.3
FRAMES_PER_GIB = 2_000_001 / (477_125_239 / 2**30)  # bench/scale.py's mix


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--small", type=float, default=1.0, help="GiB of the small capture")
    p.add_argument("--large", type=float, default=4.0, help="GiB of the large capture")
    p.add_argument("--work", type=Path, help="scratch folder (default: a temporary one)")
    p.add_argument("--results", type=Path, help="write DIR/memory.json, not bench/results/")
    p.add_argument("--pcap", action="store_true", help="a pcap of 256 MiB against 1 GiB")
    args = p.parse_args(argv)
    if args.pcap:
        return pcaps(args.results)
    work = args.work or Path(tempfile.mkdtemp(prefix="specgen-memory-"))
    rows: list[dict[str, Any]] = []
    problems: list[str] = []
    try:
        for gib in (args.small, args.large):
            capture, logs = work / "capture", work / "logs"
            shutil.rmtree(capture, ignore_errors=True)
            logs.mkdir(parents=True, exist_ok=True)
            generated = scale.generate(capture, int(gib * FRAMES_PER_GIB), 1)
            print(f"{generated.bytes / 2**30:.2f} GiB: {generated.frames:,} frames", flush=True)
            for run in (
                scale.Run("single process", "single", "local", "-"),
                scale.Run("Spark local[*]", "spark-all", "spark", "local[*]"),
            ):
                out = work / f"out-{run.slug}"
                scale.measure(run, capture, out, logs)
                problems += [
                    f"{gib} GiB {run.label}: {p}" for p in scale.check(run, out, generated)
                ]
                shutil.rmtree(out, ignore_errors=True)
                rows.append(
                    {
                        "run": run.label,
                        "gib": round(generated.bytes / 2**30, 2),
                        "frames": generated.frames,
                        "frames_per_s": round(run.fps),
                        "peak_rss_mib": round(run.peak_rss_mib),
                        "peak_pss_mib": round(run.peak_pss_mib),
                    }
                )
                print(
                    f"  {run.label:<16}{run.fps:>10,.0f} frames/s, "
                    f"peak {run.peak_rss_mib:,.0f} MiB",
                    flush=True,
                )
            shutil.rmtree(capture, ignore_errors=True)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{'run':<16}{'GiB':>6}{'frames':>14}{'frames/s':>12}{'peak MiB':>10}{'PSS MiB':>9}")
    for row in rows:
        print(
            f"{row['run']:<16}{row['gib']:>6.2f}{row['frames']:>14,}{row['frames_per_s']:>12,}"
            f"{row['peak_rss_mib']:>10,}{row['peak_pss_mib']:>9,}"
        )
    growth(rows)
    for problem in problems:
        print(f"WRONG: {problem}", file=sys.stderr)
    print(f"results: {write_results('memory', rows, args.results)}")
    return 1 if problems else 0


def growth(rows: list[dict[str, Any]]) -> None:
    """Each run's peak at the large size against the small, printed (Spark's beside the goal)
    and kept in both rows as `growth`."""
    for label in ("single process", "Spark local[*]"):
        small, large = (r for r in rows if r["run"] == label)
        ratio = large["peak_rss_mib"] / small["peak_rss_mib"]
        for r in (small, large):
            r["growth"] = round(ratio, 2)
        goal = (
            f" (goal <= {GOAL}x {'met' if ratio <= GOAL else 'NOT met'})"
            if "Spark" in label
            else ""
        )
        print(f"{label}: peak at {large['gib']} GiB / at {small['gib']} GiB = {ratio:.2f}x{goal}")


def pcaps(results: Path | None) -> int:
    """The pcap half: bench/pcap.py at 256 MiB and at 1 GiB (one process, local[*]), each
    run's peak beside the other size's."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="specgen-memory-pcap-") as scratch:
        for size in ("256M", "1G"):
            summary = Path(scratch) / f"pcap-{size}.json"
            if pcap.main(["--size", size, "--no-local1", "--results", str(summary)]) != 0:
                print(f"WRONG: bench/pcap.py --size {size} failed its checks", file=sys.stderr)
                return 1
            data = json.loads(summary.read_text())
            for run in data["runs"]:
                rows.append(
                    {
                        "run": "Spark local[*]" if run["mode"] == "spark" else run["label"],
                        "gib": round(data["pcap"]["bytes"] / 2**30, 2),
                        "frames": run["found"],
                        "frames_per_s": run["frames_per_s"],
                        "vs_single": run["vs_single"],
                        "peak_rss_mib": round(run["peak_rss_mib"]),
                        "peak_pss_mib": round(run["peak_pss_mib"]),
                        "rss_at_peak": run["rss_at_peak"],
                    }
                )
    print(f"{'run':<16}{'GiB':>6}{'frames':>12}{'frames/s':>10}{'vs one':>8}{'peak MiB':>10}")
    for row in rows:
        print(
            f"{row['run']:<16}{row['gib']:>6.2f}{row['frames']:>12,}{row['frames_per_s']:>10,}"
            f"{row['vs_single']:>7.2f}x{row['peak_rss_mib']:>10,}"
        )
    growth(rows)
    print(f"results: {write_results('memory_pcap', rows, results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
