"""How long `specgen generate` and `specgen check` take over every registered spec version.

    .venv/bin/python bench/generate.py [--rounds N]

The checkout's grammars, templates, specs, specgen and generated/ (with its format manifest)
are copied into a temporary folder, as a fresh clone has them, and every command runs there in
a child process (its imports counted), with the user's format cache in a folder of its own:

  * baseline        `--jobs 1 --no-cache`: one package after the other, black on every module
                    (what both commands did before the pool and the cache)
  * nothing cached  `--no-cache`: the pool, black on every module (a true cold start, as
                    after a change to every template)
  * fresh clone     the committed manifest, an empty user cache (CI's `specgen check` on a
                    fresh clone; `generate` after a pull)
  * warm cache      no manifest, the user cache filled by a run before (`--out`, an installed
                    specgen, texts no manifest knows yet)

Each figure is the median of the rounds (the scenarios take turns within a round, so load on
the machine weighs on all of them alike), beside the goal of 15 s and its ratio to the
baseline, with the CPU seconds the run used (its pool's workers included), which load on the
machine changes little. The machine's cores and load average are printed with the figures,
and each run's output is compared with the committed generated/ byte for byte. Results go to
bench/results/generate.json.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL = 15.0
COPIED = ("specgen", "grammars", "templates", "specs", "generated")
MANIFEST = ".format-manifest.json"

# name -> (extra arguments, the user cache emptied before each run, the manifest kept)
SCENARIOS: dict[str, tuple[tuple[str, ...], bool, bool]] = {
    "baseline": (("--jobs", "1", "--no-cache"), True, True),
    "nothing cached": (("--no-cache",), True, True),
    "fresh clone": ((), True, True),
    "warm cache": ((), False, False),
}
FORMATTED = re.compile(r"black formatted (\d+) of (\d+)")


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _clone(into: Path) -> Path:
    checkout = into / "checkout"
    checkout.mkdir()
    for name in COPIED:
        shutil.copytree(ROOT / name, checkout / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "pyproject.toml", checkout / "pyproject.toml")
    return checkout


def _same(a: Path, b: Path) -> bool:
    """The two trees hold the same files, byte for byte (the manifest aside)."""

    def files(root: Path) -> set[str]:
        return {
            p.relative_to(root).as_posix()
            for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.name != MANIFEST
        }

    names = files(a)
    return names == files(b) and all(filecmp.cmp(a / n, b / n, shallow=False) for n in names)


def _cpu() -> float:
    """CPU seconds of the children waited for so far (a child's pool workers included)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(
    checkout: Path, command: str, extra: tuple[str, ...], cache: Path
) -> tuple[float, float, str]:
    """Seconds the command took, the CPU seconds it used, how many modules black formatted."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "SPECGEN_CACHE_DIR": str(cache)}
    argv = [sys.executable, "-m", "specgen", command, *extra]
    start, cpu = time.perf_counter(), _cpu()
    proc = subprocess.run(argv, cwd=checkout, env=env, capture_output=True, text=True)
    took, cpu = time.perf_counter() - start, _cpu() - cpu
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv[2:])} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    found = FORMATTED.search(proc.stderr)
    return took, cpu, f"{found[1]}/{found[2]}" if found else "-"  # --out does not say


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="runs of each scenario (default 3)")
    args = ap.parse_args()
    load_before = _load()
    times: dict[str, list[float]] = {}
    cpus: dict[str, list[float]] = {}
    formatted: dict[str, str] = {}
    identical = True
    with tempfile.TemporaryDirectory(prefix="bench-generate-") as tmp:
        checkout = _clone(Path(tmp))
        manifest = (checkout / "generated" / MANIFEST).read_bytes()
        for r in range(args.rounds):
            for name, (extra, empty, keep) in SCENARIOS.items():
                cache = Path(tmp) / f"cache-{name.replace(' ', '-')}"
                if empty:
                    shutil.rmtree(cache, ignore_errors=True)
                for command in ("generate", "check"):
                    target = checkout / "generated" / MANIFEST
                    if keep:
                        target.write_bytes(manifest)
                    else:
                        target.unlink(missing_ok=True)
                        if r == 0 and command == "generate":  # fill the cache, untimed
                            _run(checkout, "check", extra, cache)
                    took, cpu, black = _run(checkout, command, extra, cache)
                    key = f"{command} ({name})"
                    times.setdefault(key, []).append(round(took, 2))
                    cpus.setdefault(key, []).append(round(cpu, 2))
                    formatted[key] = black
                    print(
                        f"  round {r + 1}: {key} {took:.1f} s, cpu {cpu:.1f} s, black {black}",
                        file=sys.stderr,
                    )
                    identical &= _same(checkout / "generated", ROOT / "generated")
        (checkout / "generated" / MANIFEST).write_bytes(manifest)
        # `generate --out` (the manifest of the checkout's generated/ helps) writes what
        # generated/ holds
        out = Path(tmp) / "out"
        took, cpu, black = _run(checkout, "generate", ("--out", str(out)), Path(tmp) / "cache-out")
        times["generate --out DIR (fresh clone)"] = [round(took, 2)]
        cpus["generate --out DIR (fresh clone)"] = [round(cpu, 2)]
        formatted["generate --out DIR (fresh clone)"] = black
        identical &= _same(out, ROOT / "generated")
    load_after = _load()

    medians = {k: statistics.median(v) for k, v in times.items()}
    cpu_medians = {k: statistics.median(v) for k, v in cpus.items()}
    print(f"{os.cpu_count()} cores; load average {load_before} before, {load_after} after")
    print(f"{'all versions':34} {'median':>8}   {'goal':>7}  met  {'cpu':>7}  black  vs baseline")
    for key, median in medians.items():
        command = key.split(" ")[0]
        base = medians.get(f"{command} (baseline)")
        ratio = f"{base / median:5.1f}x" if base and "baseline" not in key else ""
        met = "met" if median <= GOAL else "NOT"
        print(
            f"{key:34} {median:6.1f} s   <= {GOAL:.0f} s  {met:<4} {cpu_medians[key]:5.1f} s"
            f"  {formatted[key]:>5}  {ratio}"
        )
    print(f"output identical to the committed generated/: {'yes' if identical else 'NO'}")

    result = {
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "cores": os.cpu_count(),
        "load_average_before": load_before,
        "load_average_after": load_after,
        "rounds": args.rounds,
        "goal_seconds": GOAL,
        "seconds": times,
        "median_seconds": medians,
        "cpu_seconds": cpus,
        "median_cpu_seconds": cpu_medians,
        "black_formatted": formatted,
        "identical_output": identical,
    }
    out = ROOT / "bench" / "results" / "generate.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
