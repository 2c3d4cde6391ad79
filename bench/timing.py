"""What every codec benchmark under bench/ times the same way: calls per second in alternating
rounds, a ratio beside its goal, the results file.

Imported by the scripts beside it (a script's folder is first on its path). It imports no
generated code itself: the scripts measure the `specgen_codecs` of the specgen Python finds (the
checkout on PYTHONPATH, else the installed one), and `measured` names its folder.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def rates(fns: dict[str, Callable[[], Any]], budget: float, rounds: int = 7) -> dict[str, float]:
    """Calls per second of each function: the best of `rounds` rounds, each round timing every
    function in turn for about `budget / rounds` seconds, so that what the machine is doing
    meanwhile weighs on all of them alike (ratios are what these benchmarks report)."""
    counts: dict[str, int] = {}
    for name, fn in fns.items():
        n, t = 1, 0.0
        while t < budget / (10 * rounds):
            n *= 2
            start = time.perf_counter()
            for _ in range(n):
                fn()
            t = time.perf_counter() - start
        counts[name] = max(1, int(n * (budget / rounds) / t))
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            for _ in range(counts[name]):
                fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: counts[name] / best[name] for name in fns}


def mark(ratio: float, goal: float) -> str:
    """A ratio with its goal beside it: `0.83x (goal >= 0.8x met)`."""
    return f"{ratio:5.2f}x (goal >= {goal}x {'met' if ratio >= goal else 'NOT met'})"


def write_results(script: str, rows: list[dict[str, Any]], folder: Path | None = None) -> Path:
    """<folder>/<script>.json (bench/results/ by default): when it was measured, and the rows."""
    out = (folder or RESULTS) / f"{script}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    out.write_text(json.dumps({"when": when, "rows": rows}, indent=2) + "\n")
    return out


def measured() -> str:
    """Which generated code this run measures: the folder `specgen_codecs` was loaded from."""
    module = sys.modules.get("specgen_codecs")
    where = getattr(module, "__file__", None)
    return f"specgen_codecs: {'not imported' if where is None else Path(where).parent}"


def shown(path: Path) -> str:
    """`path` relative to the checkout these scripts are in when it is inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)
