"""How Spark's peak memory grows with the capture: a Streams capture of 1 GiB against one of 4 GiB.

    .venv/bin/python bench/memory.py [--small GIB] [--large GIB] [--work DIR] [--results DIR]

Issue 39 asks that the pipeline's memory stay bounded as captures grow: Spark local[*]'s peak on
a 4 GiB Streams capture at most 1.3x its peak on 1 GiB. This script writes bench/scale.py's
Streams mix at both sizes (frames in proportion: 2,000,001 frames are 0.44 GiB), decodes each
with `specgen decode` on local[*] and with `decode_local` in one process, each run in a fresh
process whose whole process tree's memory is sampled every 0.2 s (bench/scale.py's `measure`:
driver, JVM, Python workers), checks that every run found, wrote and reconciled every frame,
and prints each peak and the ratio of the large capture's to the small one's beside the goal;
the rows go to bench/results/memory.json. A capture and its output are removed after its runs.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
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
    args = p.parse_args(argv)
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
    for problem in problems:
        print(f"WRONG: {problem}", file=sys.stderr)
    print(f"results: {write_results('memory', rows, args.results)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
