"""The fast layer's selection stays true: conftest's lists name tests and fixtures that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import NEEDS, SLOW

TESTS = Path(__file__).parent


@pytest.mark.parametrize("entry", sorted(SLOW))
def test_every_slow_entry_names_a_test_that_exists(entry: str) -> None:
    module, _, test = entry.partition("::")
    path = TESTS / f"{module}.py"
    assert path.is_file(), f"SLOW names {module}, which is not a test module"
    if test:
        assert re.search(rf"^def {re.escape(test)}\(", path.read_text(encoding="utf-8"), re.M), (
            f"SLOW names {entry}, which {module} does not define"
        )


@pytest.mark.parametrize("fixture", sorted(NEEDS))
def test_every_service_fixture_exists(fixture: str) -> None:
    """A renamed fixture would leave its users unmarked, in the fast layer."""
    defined = re.compile(rf"^@pytest\.fixture[^\n]*\ndef {re.escape(fixture)}\(", re.M)
    homes = ("conftest.py", "spark_fixtures.py", "chromium.py")
    assert any(defined.search((TESTS / home).read_text(encoding="utf-8")) for home in homes)
