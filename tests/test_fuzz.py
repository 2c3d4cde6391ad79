"""bench/fuzz.py, briefly: a few hundred mutated inputs per generated version must raise nothing
but the version's DecodeError, re-encode whatever decodes to its own bytes, read the same in any
chunking, and stay fast and small (the 200,000-input run is bench/fuzz.py's default)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from specgen.registry import registry

ROOT = Path(__file__).resolve().parents[1]
INPUTS = 300
CELLS = ("non_decode_error", "roundtrip_diffs", "reader_diffs", "slow", "big_alloc")


def test_a_brief_fuzz_run_has_a_zero_table(tmp_path: Path) -> None:
    out = tmp_path / "fuzz.json"
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "fuzz.py"),
            "--inputs",
            str(INPUTS),
            "--seed",
            "0",
            "--json",
            str(out),
            "--show",
            "1",
            "--minimize-seconds",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert out.exists(), run.stderr[-3000:]
    results = json.loads(out.read_text(encoding="utf-8"))["versions"]
    # every version `specgen list` names was fuzzed, from seeds, and some inputs decoded whole
    assert sorted(r["version"] for r in results) == sorted(v.qualified for v in registry())
    for r in results:
        assert r["inputs"] == INPUTS and r["seeds"] > 0 and r["decoded"] > 0, r["version"]
    table = {r["version"]: {cell: r[cell] for cell in CELLS} for r in results}
    assert all(not any(cells.values()) for cells in table.values()), run.stdout
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
