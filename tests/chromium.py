"""Headless Chromium for the tests that check a generated page as a browser renders it.

A pytest plugin (conftest loads it): tests reach the browser only through the `chromium`
fixture, which is how conftest tells the browser tests from the fast layer.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Protocol

import pytest


class DumpDom(Protocol):
    def __call__(self, page: Path, profile: Path, budget_ms: int = 5000) -> str: ...


@pytest.fixture
def chromium() -> DumpDom:
    """The DOM of a page after Chromium ran its scripts for up to `budget_ms` of virtual time.
    Skips when Chromium is not installed, unless SPECGEN_REQUIRE_SERVER says it must be."""
    exe = shutil.which("chromium")
    if exe is None:
        if os.environ.get("SPECGEN_REQUIRE_SERVER"):
            pytest.fail("SPECGEN_REQUIRE_SERVER is set and chromium is not installed")
        pytest.skip("chromium is not installed (apt-get install chromium)")

    def dump_dom(page: Path, profile: Path, budget_ms: int = 5000) -> str:
        done = subprocess.run(
            [
                exe,
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

    return dump_dom
