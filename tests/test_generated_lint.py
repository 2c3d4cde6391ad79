"""The committed generated code passes ruff as the project's own code does (CI runs `ruff check .`
over the whole checkout): the fast layer says so too, naming the rule and the file, so that an
emitter ordering imports as ruff would not (`INT8` after `INT64`) fails here, not in CI."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from specgen.specs import ROOT


def _ruff() -> list[str]:
    beside = Path(sys.executable).with_name("ruff")  # the venv's, installed by the [dev] extra
    found = str(beside) if beside.exists() else shutil.which("ruff")
    if found is None:
        pytest.skip("ruff is not installed")
    return [found]


def test_generated_code_passes_ruff() -> None:
    proc = subprocess.run(
        [*_ruff(), "check", "--no-cache", "generated"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
