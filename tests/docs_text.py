"""The project's documents as the tests that check their figures read them: README.md and the
pages under docs/.

A command's output or a table may be shown in the README or on a page under docs/ (or both);
the tests find it wherever it is shown, require at least one document to show it, and check it
in every document that does.
"""

from __future__ import annotations

from pathlib import Path

from specgen.specs import ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"


def paths() -> list[Path]:
    """README.md, then every page under docs/ by name."""
    return [README, *sorted(DOCS.glob("*.md"))]


def documents() -> dict[str, str]:
    """Each document's text by its path from the checkout's root (`README.md`, `docs/x.md`)."""
    return {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in paths()}


def after(marker: str) -> list[str]:
    """The text after the first `marker` in each document that holds it; at least one must."""
    found = [text.split(marker, 1)[1] for text in documents().values() if marker in text]
    assert found, f"no document (README.md, docs/*.md) shows {marker!r}"
    return found
