"""Shared fixtures: the spec documents and their IRs, built once per run."""

from __future__ import annotations

from pathlib import Path

import pytest

from specgen.ir import FindingLog, Protocol
from specgen.specs import ROOT, SpecVersion, build_ir, find

SPEC_DIR = ROOT / "specs" / "rabbitmq-stream"


def spec_line(path: Path, text: str) -> int:
    """1-based line of the first line of `path` containing `text` (read from the spec itself)."""
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if text in line:
            return i
    raise AssertionError(f"{text!r} not in {path}")


@pytest.fixture(scope="session")
def v40() -> SpecVersion:
    return find("rabbitmq-stream/4.0")


@pytest.fixture(scope="session")
def early() -> SpecVersion:
    return find("rabbitmq-stream/early")


@pytest.fixture(scope="session")
def ir40(v40: SpecVersion) -> tuple[Protocol, FindingLog]:
    return build_ir(v40)


@pytest.fixture(scope="session")
def ir_early(early: SpecVersion) -> tuple[Protocol, FindingLog]:
    return build_ir(early)
