"""Shared fixtures: the spec documents and their IRs, built once per run; and the two test
layers.

The layers: `pytest -m "not slow"` is the fast one (no RabbitMQ server, no Spark, no browser,
no builds), `pytest` the full suite. Nothing is marked by hand where a fixture tells: a test
that asks for `rabbit` is marked `server`, for `spark` `spark`, for `chromium` `browser`, and
each of those `slow`; so are the modules and tests in SLOW, each with its reason. A test that starts one of them
without its fixture would slip into the fast layer, so outside those marks Spark finds no Java
and a RabbitMQ node refuses to start: such a test fails, it never quietly runs slow. A test that
starts Spark in a child process (not through the fixture) says so with `@pytest.mark.spark`.
"""

from __future__ import annotations

import atexit
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import codecs_under_test  # noqa: F401  (first: SPECGEN_TEST_COMPILED picks the compiled codecs)
import pytest
from rabbitmq import RabbitNode, ServerUnavailable

from specgen.ir import FindingLog, Protocol
from specgen.specs import ROOT, SpecVersion, build_ir, find

# the session-wide Spark fixture and the Chromium one live beside this file (tests/ is on
# sys.path)
pytest_plugins = ["spark_fixtures", "chromium"]

# fixture -> the mark its users get (each of these marks also makes a test slow)
NEEDS = {"rabbit": "server", "spark": "spark", "chromium": "browser"}
# modules ("test_x") and tests ("test_x::test_y", every parameter) too slow for the fast layer
SLOW = {
    "test_install": "builds a wheel, makes venvs and pip-installs specgen several times",
    "test_installed_use::test_a_copy_of_every_shipped_spec_passes_its_own_conformance_tests": (
        "generates a copy of every shipped spec, then runs their 3,500 tests in a child pytest"
    ),
    "test_installed_use::test_the_wheel_carries_the_manifest_and_generate_takes_the_installed_codecs": (
        "builds a wheel and a venv, then generates every spec from the install"
    ),
    "test_installed_use::test_installed_list_lint_and_errors_name_files_that_open": (
        "uses the installed wheel (a build and a venv)"
    ),
    "test_cli::test_generated_is_fresh_and_generation_is_deterministic": "three whole generations",
    "test_cli::test_check_reports_drift_with_a_diff": "two whole generations",
    "test_review_diff::test_every_corpus_version_lints_and_generates": "79 spec versions generated",
    "test_review_diff::test_generate_any_spec_file_and_run_its_conformance_tests": (
        "generates, then runs the generated tests in a child pytest"
    ),
    "test_review_diff::test_code_diff_shows_the_new_version": "renders both sides' codecs",
    "test_decode::test_damaged_captures_reconcile_and_keep_every_frame_clear_of_the_damage": (
        "decodes many damaged captures at many range sizes"
    ),
    "test_decode::test_the_gap_reconciles_at_every_range_cut_around_it": "a decode per cut",
    "test_fuzz": "300 mutated inputs per generated version",
    "test_spec_text_property::test_hostile_text_stays_text": (
        "generates a package per hostile example and front-end (CI also runs 1,000 beside it)"
    ),
    "test_spec_text::test_prose_holding_python_never_runs": (
        "generates, imports and runs every front-end's package from Python-laden prose"
    ),
    "test_spec_text::test_backslashes_in_prose_generate_importable_code": (
        "generates and imports every front-end's package from backslashed prose"
    ),
    "test_compiled": "compiles the codecs with mypyc (cached by their sources' hash) and runs "
    "their tests on the compiled build",
    "test_corpus_frontend": "walks every published Streams reference (the corpus)",
    "test_real_specs": "generates 18 real spec copies and runs each package's own tests",
    "test_review_diff::test_each_change_is_classified_as_the_changelog_tags_it": (
        "diffs every consecutive pair of the corpus"
    ),
    "test_amqp10_real_copies::test_a_uamqp_shaped_file_generates_and_passes_its_tests": (
        "generates 14 frame bodies, then runs the generated tests in a child pytest"
    ),
    "test_amqp10_real_copies::test_a_stripped_transport_writes_negative_ints": (
        "generates, then runs the generated tests in a child pytest"
    ),
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for fixture, mark in NEEDS.items():
            if fixture in used:
                item.add_marker(mark)
        module = item.module.__name__.rsplit(".", 1)[-1] if item.module else ""
        test = f"{module}::{getattr(item, 'originalname', item.name)}"
        if (
            module in SLOW
            or test in SLOW
            or any(item.get_closest_marker(m) for m in NEEDS.values())
        ):
            item.add_marker("slow")


@pytest.fixture(autouse=True)
def _only_marked_tests_start_services(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside the `spark` and `server` marks, starting Spark or RabbitMQ fails (see the
    module doc): JAVA_HOME names no Java, for this process and the ones it starts."""
    if request.node.get_closest_marker("spark") is None:
        monkeypatch.setenv("JAVA_HOME", "/nonexistent/unmarked-test-started-spark")
    if request.node.get_closest_marker("server") is None:

        def refuse(self: RabbitNode) -> None:
            raise AssertionError("this test starts RabbitMQ without the `rabbit` fixture")

        monkeypatch.setattr(RabbitNode, "start", refuse)


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
        node.stop()
        if required:
            pytest.fail(f"SPECGEN_REQUIRE_SERVER is set and the server is unavailable: {e}")
        pytest.skip(str(e))
    except BaseException:  # interrupted while it boots: what start() spawned goes too
        node.stop()
        raise
    # an interrupted run skips session teardown but still exits through atexit
    atexit.register(node.stop)
    try:
        yield node
    finally:
        node.stop()
        atexit.unregister(node.stop)


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_sessionstart(session: pytest.Session) -> None:
    """`kill PID` of a test run (SIGTERM) ends it as Ctrl-C does: Python exits through its
    atexit handlers, where the RabbitMQ fixture stops its node (pytest skips session teardown
    when interrupted). Python's default for SIGTERM exits at once, leaving the node running on
    its ports, where the next run's live tests meet it and fail."""
    signal.signal(signal.SIGTERM, _interrupted)
