"""`specgen decode --master spark://...` on a real standalone cluster, started from pyspark's jars.

The cluster (`spark_fixtures.cluster`) is a master and one worker on 127.0.0.1, each in a process
group of its own. The CLI runs in a subprocess, as a user would run it, and its tables must
equal what local[*] writes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from test_decode import RANGE, build_captures, rows

from specgen.pipeline import decode
from specgen.specs import ROOT


def test_decode_on_a_standalone_cluster_equals_local(
    cluster: tuple[str, Path, int], spark: Any, tmp_path: Path
) -> None:
    url, work, _ = cluster
    captures = build_captures(tmp_path / "captures")
    out = tmp_path / "cluster-out"
    cli = [sys.executable, "-m", "specgen", "decode", "rabbitmq-stream", str(captures.root)]
    proc = subprocess.run(
        # bigger ranges than local's below: fewer tasks, same tables (ranges never show in them)
        [*cli, "--out", str(out), "--master", url, "--range-size", str(RANGE * 4)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-5000:]
    assert "Traceback" not in proc.stderr
    line = (
        f"reconciliation: {len(captures.frames)} frames + 1 rejected frame = {captures.found} "
        "frames found; the rows hold every byte of all 7 files exactly once"
    )
    assert line in proc.stdout.splitlines()
    # the executors ran on the worker: it keeps a folder per application and executor
    assert list(work.glob("app-*/*/stderr"))

    local = tmp_path / "local-out"
    decode.run(
        "rabbitmq-stream", captures.root, local, "local[*]", target=RANGE, echo=lambda _: None
    )
    assert rows(out / "frames") == rows(local / "frames")
    assert rows(out / "rejects") == rows(local / "rejects")
