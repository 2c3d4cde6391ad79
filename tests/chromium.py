"""Headless Chromium for the tests that check a generated page as a browser renders it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def dump_dom(page: Path, profile: Path, budget_ms: int = 5000) -> str:
    """The DOM of `page` after Chromium ran its scripts for up to `budget_ms` of virtual time.
    Skips when Chromium is not installed, unless SPECGEN_REQUIRE_SERVER says it must be."""
    chromium = shutil.which("chromium")
    if chromium is None:
        if os.environ.get("SPECGEN_REQUIRE_SERVER"):
            pytest.fail("SPECGEN_REQUIRE_SERVER is set and chromium is not installed")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    done = subprocess.run(
        [
            chromium,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={profile}",
            f"--virtual-time-budget={budget_ms}",
            "--dump-dom",
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    dom = done.stdout
    assert done.returncode == 0 and "</html>" in dom, done.stderr[-2000:]
    return dom
