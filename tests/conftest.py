"""Shared fixtures: the spec documents and their IRs, built once per run."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from rabbitmq import RabbitNode, ServerUnavailable

from specgen.ir import FindingLog, Protocol
from specgen.specs import ROOT, SpecVersion, build_ir, find

# the session-wide Spark fixture lives beside this file (tests/ is on sys.path)
pytest_plugins = ["spark_fixtures"]

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


@pytest.fixture(scope="session")
def rabbit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RabbitNode]:
    """One private RabbitMQ node for the whole run, on loopback, stopped by pid at the end.

    Without the server installed the live tests skip, unless SPECGEN_REQUIRE_SERVER is set
    (.ci/run sets it): then that is a failure.
    """
    required = bool(os.environ.get("SPECGEN_REQUIRE_SERVER"))
    node = RabbitNode(tmp_path_factory.mktemp("rabbitmq"))
    try:
        node.start()
    except ServerUnavailable as e:
        if required:
            pytest.fail(f"SPECGEN_REQUIRE_SERVER is set and the server is unavailable: {e}")
        pytest.skip(str(e))
    try:
        yield node
    finally:
        node.stop()
