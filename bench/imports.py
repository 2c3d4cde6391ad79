"""Import time of every generated version package, against issue 28's goal (<= 20 ms each).

    .venv/bin/python bench/imports.py [--rounds N]

Each version package listed by `specgen list` is imported in a fresh interpreter, `rounds` times
(default 15), alternating between packages so that load on the machine weighs on all of them
alike; the figure is the best round's `-X importtime` cumulative time of the package. Bytecode
is cached first and kept (PYTHONDONTWRITEBYTECODE is unset for the children), as it is for a
user's installed package: without it every import compiles thousands of generated lines and
measures the compiler. The interpreter's own start-up and `site` are not counted; the standard
library modules a package imports (struct, dataclasses, enum, ...) are, the first time they are
imported. Results go to bench/results/imports.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from specgen.registry import registry

ROOT = Path(__file__).resolve().parents[1]
GOAL_MS = 20.0


def packages() -> list[str]:
    """The importable name of every registered version's package."""
    return [version.import_name for version in registry()]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def import_us(name: str) -> int:
    """Microseconds `-X importtime` gives the package's own line (cumulative) in a fresh
    interpreter."""
    # nothing of specgen's first: what it imports (pathlib, importlib.resources, ...) would
    # then not be counted; `specgen_codecs` is the package pip installed (editable or not)
    code = f"import {name}"
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        env=_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    for line in out.splitlines():
        parts = [p.strip() for p in line.removeprefix("import time:").split("|")]
        if len(parts) == 3 and parts[2] == name:
            return int(parts[1])
    raise RuntimeError(f"{name} not in -X importtime's output")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    names = packages()
    for name in names:  # write the bytecode once, outside the rounds
        import_us(name)
    best: dict[str, int] = {}
    for _ in range(args.rounds):
        for name in names:
            us = import_us(name)
            best[name] = min(us, best.get(name, us))
    load = os.getloadavg()
    print(f"best of {args.rounds} fresh interpreters, bytecode cached; load average {load[0]:.1f}")
    print(f"{'package':45} {'import ms':>10}  goal")
    rows = []
    for name in names:
        ms = best[name] / 1000
        met = ms <= GOAL_MS
        print(f"{name:45} {ms:10.1f}  <= {GOAL_MS:.0f} ms  {'met' if met else 'NOT met'}")
        rows.append({"package": name, "ms": round(ms, 1), "goal_ms": GOAL_MS, "met": met})
    result = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "rounds": args.rounds,
        "load_average": [round(x, 2) for x in load],
        "rows": rows,
    }
    out = ROOT / "bench" / "results" / "imports.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"results: {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
