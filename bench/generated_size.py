"""Generated code's size against issue 36's goals: lines per package and per module kind.

    .venv/bin/python bench/generated_size.py [--before DIR] [--results DIR]

Counts the lines of every non-test module under generated/ (test_conformance.py left out), by
package and by kind (the module's name: commands, shared, spark_schema, a 0-10 class module
counts as `class module`), with the largest module. `--before DIR` counts another tree's
generated/ too (a checkout of an earlier commit) and prints both side by side. Goals: at most
46,000 lines in all, no module over 4,000, the amqp_0_9_1 package at most 7,000. Results go
to bench/results/generated_size.json.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GOALS = {"total": 46_000, "module": 4_000, "amqp_0_9_1": 7_000}
KINDS = {
    "commands",
    "shared",
    "spark_schema",
    "shared_spark",
    "dialogue",
    "values",
    "enums",
    "__init__",
    "frame_reader",
    "framing",
    "errors",
    "records",
    "base",
    "rules",  # issue 37: each version's rules as data, and the package's checking of them
    "violations",
    # the runtime every protocol shares, above the packages (issue 36)
    "arrow_columns",
    "automata",
    "lazy_init",
}


def count(generated: Path) -> dict[str, Any]:
    """Lines per package, per kind, and the largest module, of one generated/ tree."""
    packages: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    modules: dict[str, int] = {}
    for path in sorted(generated.rglob("*.py")):
        if path.name.startswith("test_"):
            continue
        lines = len(path.read_text(encoding="utf-8").splitlines())
        rel = path.relative_to(generated)
        modules[str(rel)] = lines
        if len(rel.parts) > 1:
            packages[rel.parts[0]] += lines
        kinds[path.stem if path.stem in KINDS else "class module"] += lines
    largest = max(modules, key=modules.__getitem__)
    return {
        "total": sum(modules.values()),
        "packages": dict(sorted(packages.items())),
        "kinds": dict(kinds.most_common()),
        "largest": [largest, modules[largest]],
        "over_goal": sorted(m for m, n in modules.items() if n > GOALS["module"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="another tree's generated/ to compare with")
    parser.add_argument("--results", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()
    after = count(ROOT / "generated")
    before = count(args.before) if args.before else None

    def row(name: str, key: str, sub: str | None = None) -> None:
        now = after[key] if sub is None else after[key].get(sub, 0)
        then = (
            "" if before is None else str(before[key] if sub is None else before[key].get(sub, 0))
        )
        print(f"{name:28} {then:>8} {now:>8}")

    print(f"{'':28} {'before' if before else '':>8} {'now':>8}")
    row("total lines", "total")
    for package in after["packages"]:
        row(f"  {package}", "packages", package)
    print("by module kind:")
    for kind in sorted(set(after["kinds"]) | set(before["kinds"] if before else ())):
        row(f"  {kind}", "kinds", kind)
    print(f"largest module: {after['largest'][0]} ({after['largest'][1]} lines)")
    if before:
        print(f"largest before: {before['largest'][0]} ({before['largest'][1]} lines)")
    met = {
        "total": after["total"] <= GOALS["total"],
        "module": not after["over_goal"],
        "amqp_0_9_1": after["packages"].get("amqp_0_9_1", 0) <= GOALS["amqp_0_9_1"],
    }
    for goal, ok in met.items():
        print(f"goal {goal} <= {GOALS[goal]:,}: {'met' if ok else 'NOT met'}")
    if after["over_goal"]:
        print("modules over the goal: " + ", ".join(after["over_goal"]))
    args.results.mkdir(parents=True, exist_ok=True)
    out = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "goals": GOALS}
    out |= {"now": after, "before": before, "met": met}
    (args.results / "generated_size.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
