"""The documents stay readable and their references true: the README is short enough to read in
ten minutes, and every link, heading anchor and repository path that README.md and the pages
under docs/ name exists. (Their figures are checked by the tests that recompute them: see
`docs_text`.)"""

from __future__ import annotations

import re

import docs_text
import pytest

from specgen.specs import ROOT

README_MAX_LINES = 300
# the folders of the checkout a document names paths in (`specgen/ir/`, `tests/test_x.py`, ...)
TOP = ("specgen/", "tests/", "bench/", "samples/", "grammars/", "templates/", "specs/")
TOP += ("generated/", ".ci/", "docs/")
# named, but not in the checkout: where an install puts grammars, templates and specs
INSTALLED_ONLY = ("specgen/_data",)
FENCE = re.compile(r"^```.*?^```[^\n]*$", re.S | re.M)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
DOCUMENTS = [p.relative_to(ROOT).as_posix() for p in docs_text.paths()]


def _prose(text: str) -> str:
    """The text outside fenced code blocks (a console block's `[x](y)` is no link)."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text without markup, lower case, punctuation
    dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading's anchor; a repeated heading's second anchor ends in -1, and so on."""
    seen: dict[str, int] = {}
    found = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", _prose(text), re.M):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def test_slug_follows_github() -> None:
    assert slug("Spark (goal 6)") == "spark-goal-6"
    assert slug("AMQP/Fast 0.8 (AMQ RFC 006)") == "amqpfast-08-amq-rfc-006"
    assert slug("What `specgen diff` says") == "what-specgen-diff-says"
    assert slug("The compiled codecs (goal 4; optional, not met)") == (
        "the-compiled-codecs-goal-4-optional-not-met"
    )
    assert anchors("# A\n\n```\n# not a heading\n```\n## A\n") == {"a", "a-1"}


def test_the_readme_reads_in_ten_minutes() -> None:
    lines = docs_text.README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines; at most {README_MAX_LINES}: move detail under docs/"
    )


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_relative_link_points_at_a_file_and_heading_that_exist(document: str) -> None:
    path = ROOT / document
    text = path.read_text(encoding="utf-8")
    broken = []
    for target in LINK.findall(_prose(text)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not a file here
            continue
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and (
            linked.suffix != ".md" or anchor not in anchors(linked.read_text(encoding="utf-8"))
        ):
            broken.append(f"{target}: no heading #{anchor} in {linked.relative_to(ROOT)}")
    assert broken == []


def test_the_readme_links_every_page_under_docs() -> None:
    readme = _prose(docs_text.README.read_text(encoding="utf-8"))
    linked = {target.partition("#")[0] for target in LINK.findall(readme)}
    pages = {p.relative_to(ROOT).as_posix() for p in docs_text.paths()[1:]}
    assert pages, "no pages under docs/"
    assert sorted(pages - linked) == []


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_path_a_document_names_exists(document: str) -> None:
    """A path in backticks under one of the checkout's folders (`specgen/ir/`,
    `tests/test_docs.py`) names a file or folder that exists: a module renamed or moved into a
    package fails here until the documents follow. Placeholders (`specs/<protocol>/`), globs and
    `file:line` places are not paths."""
    prose = _prose((ROOT / document).read_text(encoding="utf-8"))
    named = {
        token
        for token in re.findall(r"`([^`\n]+)`", prose)
        if token.startswith(TOP)
        and re.fullmatch(r"[\w./-]+", token)
        and not token.endswith("...")
        and not token.startswith(INSTALLED_ONLY)
    }
    assert sorted(token for token in named if not (ROOT / token).exists()) == []
