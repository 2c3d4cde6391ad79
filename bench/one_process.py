"""`specgen decode` in one plain process, this checkout against an earlier tree, on the Streams mix.

    .venv/bin/python bench/one_process.py --before TREE [--label TEXT] [--frames N] [--rounds R]

Issue 39 asks one process to decode the Streams mix at least twice as fast as the code of the
day it was filed, measured on the same machine. This script:

1. writes a synthetic Streams capture with bench/scale.py's generator (default 2,000,000
   frames, about 480 MB: publishes, confirms, deliveries with their chunks, credits, the rest
   of each session);
2. decodes it with `decode_local` (one Python process, pyarrow's Parquet writer, the
   `violations` column where the tree has it) from this checkout and from TREE (an extracted
   earlier tree: `git archive 5037a5c | tar -x -C /tmp/before`), each run in a fresh process
   with that tree alone on its path, the two alternating for R rounds so that what the machine
   does meanwhile weighs on both;
3. checks that both found, wrote and reconciled every frame, and prints each tree's best and
   median frames/s and CPU microseconds per frame, and the ratio of the best with its goal
   (at least 2x); the rows go to bench/results/one_process.json.

Frames/s is frames / the wall time of the `decode_local` call (imports excluded).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import ROOT, write_results  # noqa: E402

PROTOCOL = "rabbitmq-stream"
GOAL = 2.0

CHILD = """
import json, sys, time
from pathlib import Path
from specgen.pipeline.decode import decode_local
capture, out = Path(sys.argv[1]), Path(sys.argv[2])
wall, cpu = time.perf_counter(), time.process_time()
result = decode_local({protocol!r}, capture, out, overwrite=True, echo=lambda _: None)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
print(json.dumps({{"frames": result.frames, "rejects": result.rejects,
                  "reconciled": result.reconciled, "wall": wall, "cpu": cpu}}))
"""


def tree_path(tree: Path, scratch: Path) -> str:
    """PYTHONPATH that makes `tree`'s specgen and its generated/ (as specgen_codecs) the ones
    imported: a tree is a checkout, where generated/ installs as specgen_codecs."""
    link = scratch / f"codecs-{abs(hash(str(tree)))}"
    link.mkdir(parents=True, exist_ok=True)
    target = link / "specgen_codecs"
    if not target.exists():
        target.symlink_to(tree / "generated")
    return os.pathsep.join([str(tree), str(link)])


def decode_once(tree: Path, capture: Path, scratch: Path) -> dict[str, Any]:
    out = scratch / "out"
    shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": tree_path(tree, scratch)}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD.format(protocol=PROTOCOL), str(capture), str(out)],
        env=env,
        cwd=scratch,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: decode failed\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--before", type=Path, required=True, help="an extracted earlier tree")
    p.add_argument("--label", help="what the earlier tree is (its commit, say); default its path")
    p.add_argument("--frames", type=int, default=2_000_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--work", type=Path, help="scratch folder (default: a temporary one)")
    p.add_argument("--results", type=Path, help="write DIR/one_process.json, not bench/results/")
    args = p.parse_args(argv)
    import scale  # bench/scale.py: the Streams capture generator

    work = args.work or Path(tempfile.mkdtemp(prefix="specgen-one-process-"))
    try:
        capture = work / "capture"
        shutil.rmtree(capture, ignore_errors=True)
        capture.mkdir(parents=True)
        generated = scale.generate(capture, args.frames, 1)
        print(f"wrote {generated.frames:,} Streams frames, {generated.bytes:,} bytes")
        trees = {"before": args.before.resolve(), "now": ROOT}
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
        for i in range(args.rounds):
            for name, tree in trees.items():
                run = decode_once(tree, capture, work)
                runs[name].append(run)
                print(f"round {i + 1} {name:<7}{run['frames'] / run['wall']:>12,.0f} frames/s")
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    problems = [
        f"{name}: {run['frames']:,} frames, {run['rejects']} rejects, reconciled {run['reconciled']}"
        for name, rs in runs.items()
        for run in rs
        if run["frames"] != generated.frames or run["rejects"] or not run["reconciled"]
    ]
    rows = []
    for name, rs in runs.items():
        rates = [r["frames"] / r["wall"] for r in rs]
        rows.append(
            {
                "tree": name if name == "now" else f"before ({args.label or args.before})",
                "frames": generated.frames,
                "best_frames_per_s": round(max(rates)),
                "median_frames_per_s": round(statistics.median(rates)),
                "cpu_us_per_frame": round(min(r["cpu"] for r in rs) / generated.frames * 1e6, 2),
            }
        )
    ratio = rows[1]["best_frames_per_s"] / rows[0]["best_frames_per_s"]
    rows[1]["ratio"] = round(ratio, 2)
    rows[1]["goal"] = GOAL
    print(f"{'tree':<40}{'best/s':>12}{'median/s':>12}{'CPU us/frame':>14}")
    for row in rows:
        print(
            f"{row['tree'][:39]:<40}{row['best_frames_per_s']:>12,}"
            f"{row['median_frames_per_s']:>12,}{row['cpu_us_per_frame']:>14.2f}"
        )
    met = "met" if ratio >= GOAL else "NOT met"
    print(f"now / before: {ratio:.2f}x (goal >= {GOAL}x {met})")
    for problem in problems:
        print(f"WRONG: {problem}", file=sys.stderr)
    print(f"results: {write_results('one_process', rows, args.results)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
