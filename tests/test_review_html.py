"""The HTML review page: the fields it marks changed are exactly the ones the changes name.

A toy pair of IRs, built here, checks the marking against changes known by construction; real
reviews (two RabbitMQ Streams texts) are rendered, opened in headless Chromium, and the marked
rows of the DOM Chromium built are compared with the set computed from the `Change` objects.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from html.parser import HTMLParser
from pathlib import Path

import pytest
from chromium import DumpDom

from specgen.ir import (
    Array,
    Command,
    Field,
    FrameLayout,
    Message,
    Prim,
    PrimitiveType,
    Protocol,
    Struct,
    Versions,
    walk_fields,
)
from specgen.review.changes import Review, compare
from specgen.review.html import render
from specgen.sources import resolve
from specgen.specs import build_ir


def _corpus_file(name: str) -> Path | None:
    """A Streams corpus text: under $SPECGEN_CORPUS (the specs-corpus folder or its
    rabbitmq-stream folder), else ../shared next to the checkout, else /work/shared."""
    env = os.environ.get("SPECGEN_CORPUS")
    bases = [Path(env)] if env else []
    bases += [Path(__file__).resolve().parents[2] / "shared" / "specs-corpus"]
    bases += [Path("/work/shared/specs-corpus")]
    for base in bases:
        for folder in (base / "rabbitmq-stream", base):
            if (folder / name).is_file():
                return folder / name
    return None


# two consecutive corpus texts that parse today, with field changes between them
CORPUS_PAIR = (
    _corpus_file("2020-06-19_2fd743f2bd.adoc"),
    _corpus_file("2020-09-01_9a788362dd.adoc"),
)

# (side, command, message, version, dotted path)
Mark = tuple[str, str, str, int, str]


# --------------------------------------------------------------------------------------------
# Reading a page back


@dataclass
class Page(HTMLParser):
    """The field rows (with whether they are marked) and the command sections of a page."""

    rows: list[tuple[Mark, bool]] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "section" and "command" in a.get("class", "").split():
            self.sections.append(a["data-command"])
        if "data-side" in a:
            mark = (
                a["data-side"],
                a["data-command"],
                a["data-message"],
                int(a["data-version"]),
                a["data-path"],
            )
            self.rows.append((mark, "changed" in a.get("class", "").split()))

    @property
    def marked(self) -> set[Mark]:
        return {m for m, changed in self.rows if changed}

    @classmethod
    def read(cls, html: str) -> Page:
        page = cls()
        page.feed(html)
        page.close()
        return page


# --------------------------------------------------------------------------------------------
# A toy protocol, old and new


def _protocol(version: str, commands: tuple[Command, ...]) -> Protocol:
    frame = FrameLayout(
        header=(
            Field("Size", Prim("uint32")),
            Field("Key", Prim("uint16")),
            Field("Version", Prim("uint16")),
        ),
        length="Size",
        length_counts="after",
        dispatch=("Key",),
        version="Version",
        response_flag=0x8000,
    )
    string = PrimitiveType("string", "string", length_prefix="int16", null_length=-1)
    return Protocol("toy", version, "toy.adoc", (string,), frame, (), (), commands)


def _command(
    name: str, key: int, *messages: tuple[str, str, tuple[Field, ...]], sender: str = "client"
) -> Command:
    built = tuple(
        Message(
            mname,
            kind,  # type: ignore[arg-type]
            (key | (0x8000 if kind == "response" else 0),),
            Versions(1, 2) if any(f.versions.low == 2 for f in fields) else Versions(1, 1),
            fields,
            replies=(f"{name}Response",) if kind == "request" else (),
        )
        for mname, kind, fields in messages
    )
    return Command(name, (key,), sender, built)  # type: ignore[arg-type]


def _f(name: str, type_name: str, doc: str = "", versions: Versions | None = None) -> Field:
    return Field(name, Prim(type_name), doc=doc, versions=versions or Versions(1, None))


def _brokers(host: str, port: str) -> Field:
    broker = Struct("Broker", (_f("Reference", "uint16"), _f(host, "string"), _f("Port", port)))
    return Field("Brokers", Array(broker))


def _toy(new: bool) -> Protocol:
    open_ = _command(
        "Open",
        1,
        ("OpenRequest", "request", (_f("CorrelationId", "uint32"), _f("Vhost", "string"))),
        (
            "OpenResponse",
            "response",
            (
                _f("CorrelationId", "int32" if new else "uint32"),
                _f("ResponseCode", "uint32" if new else "uint16"),
            ),
        ),
    )
    query = _command(
        "Query",
        2,
        (
            "QueryRequest",
            "request",
            (_f("CorrelationId", "uint32"), _f("Stream", "string", "the stream" if new else "")),
        ),
        (
            "QueryReply" if new else "QueryResponse",
            "response",
            (
                _f("CorrelationId", "uint32"),
                _brokers("Hostname", "uint16") if new else _brokers("Host", "uint32"),
            ),
        ),
    )
    heartbeat = _command("Heartbeat", 3, ("Heartbeat", "oneway", ()), sender="both")
    gone = _command("Gone", 4, ("Gone", "oneway", (_f("Reason", "string"),)))
    publish_fields = (
        (_f("PublisherId", "uint8"), _f("FilterValue", "string", versions=Versions(2, None)))
        if new
        else (_f("PublisherId", "uint8"), _f("Stream", "string"))
    )
    publish = _command("Publish", 5, ("Publish", "oneway", publish_fields))
    route = _command("Route", 6, ("RouteQuery", "request", (_f("RoutingKey", "string"),)))
    commands = (
        (open_, query, heartbeat, publish, route)
        if new
        else (open_, query, heartbeat, gone, publish)
    )
    return _protocol("2" if new else "1", commands)


def test_toy_review_marks_exactly_the_changed_fields() -> None:
    review = compare(_toy(False), _toy(True), "toy <i>1</i>", "toy 2")
    rules = {c.rule for c in review.changes}
    # the premise: the comparison sees what the toy was built to change
    assert {
        "FIELD_WIDTH",
        "FIELD_SIGNEDNESS",
        "FIELD_RENAMED",
        "MESSAGE_RENAMED",
        "FIELD_REMOVED",
        "VERSION_ADDED",
        "COMMAND_ADDED",
        "COMMAND_REMOVED",
        "PROSE",
    } <= rules, rules
    page = Page.read(render(review))

    assert page.marked == {
        # the response's fields only: the request's CorrelationId has the same path and no change
        ("old", "Open", "OpenResponse", 1, "CorrelationId"),
        ("new", "Open", "OpenResponse", 1, "CorrelationId"),
        ("old", "Open", "OpenResponse", 1, "ResponseCode"),
        ("new", "Open", "OpenResponse", 1, "ResponseCode"),
        # nested in an array of structures: arrays are transparent in paths
        ("old", "Query", "QueryReply", 1, "Brokers.Port"),
        ("new", "Query", "QueryReply", 1, "Brokers.Port"),
        # a renamed field is marked under its own name on each side; a renamed message is
        # named (data-message) as on the new side, as the changes name it
        ("old", "Query", "QueryReply", 1, "Brokers.Host"),
        ("new", "Query", "QueryReply", 1, "Brokers.Hostname"),
        ("old", "Publish", "Publish", 1, "Stream"),
    }
    # a command with no change has no section; added and removed ones show one side only
    assert page.sections == ["Open", "Query", "Publish", "Route", "Gone"]
    sides = {(m[1], m[0]) for m, _ in page.rows}
    assert ("Route", "new") in sides and ("Route", "old") not in sides
    assert ("Gone", "old") in sides and ("Gone", "new") not in sides
    # both layouts of every version: Publish v2 is new-only, its FilterValue unmarked
    assert (("new", "Publish", "Publish", 2, "FilterValue"), False) in page.rows
    assert not any(m[:4] == ("old", "Publish", "Publish", 2) for m, _ in page.rows)
    # nested rows are there, under their parent
    assert (("old", "Query", "QueryReply", 1, "Brokers.Reference"), False) in page.rows


def test_page_escapes_text_and_colours_the_code_diff() -> None:
    review = compare(_toy(False), _toy(True), "toy <i>1</i>", "toy 2")
    code = "--- a/toy.py\n+++ b/toy.py\n@@ -1 +1 @@\n-x = '<script>'\n+x = 1 & 2\n y\n"
    html = render(replace(review, code=code))
    assert "toy &lt;i&gt;1&lt;/i&gt;" in html and "<i>1</i>" not in html
    assert "<script>'" not in html
    lines = re.findall(r'<span class="line (\w+)">([^<]*)</span>', html)
    assert [kind for kind, _ in lines] == ["file", "file", "hunk", "del", "add", "ctx"]
    assert lines[4][1] == "+x = 1 &amp; 2"
    # nothing outside the page: no URL but the in-page anchors
    assert not re.search(r'(?:src|href)="(?!#)', html)


def test_no_changes_renders_an_empty_review() -> None:
    review = compare(_toy(False), _toy(False))
    page = Page.read(render(review))
    assert page.rows == [] and page.sections == []


# --------------------------------------------------------------------------------------------
# Real reviews, in Chromium


def expected_marks(review: Review) -> set[Mark]:
    """The rows a review should mark, from its `Change` objects alone: every wire or names
    change at a message version, on each side it names a field path. The message is the one
    the change's `where` names ("Cmd / Msg v2 / ..."); that each path really is in that
    message at that version is checked against the IRs here."""
    out: set[Mark] = set()
    for c in review.changes:
        if c.category == "prose" or c.version is None or c.command is None:
            continue
        if not (c.old_path or c.new_path):
            continue
        message = re.sub(r" v\d+$", "", c.where.split(" / ")[1])
        for side, path in (("old", c.old_path), ("new", c.new_path)):
            if path:
                assert path in _paths(review, side, c.command, message, c.version), (c, side)
                out.add((side, c.command, message, c.version, ".".join(path)))
    return out


def _paths(
    review: Review, side: str, command: str, message: str, version: int
) -> set[tuple[str, ...]]:
    """The field paths of `message` (named as on the new side) at `version` on one side; on
    the old side, the message of the same kind (or the request that became one-way)."""
    pair = next(p for p in review.pairs if p.name == command)
    assert pair.old is not None and pair.new is not None
    kind = next(m.kind for m in pair.new.messages if m.name == message)
    cmd = pair.old if side == "old" else pair.new
    same = [m for m in cmd.messages if m.kind == kind]
    if not same and kind != "response":
        same = [m for m in cmd.messages if m.kind in ("request", "oneway")]
    return {tuple(p.split(".")) for m in same for p, _ in walk_fields(m.fields_at(version))}


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("rabbitmq-stream/early", "rabbitmq-stream/4.0"),
        pytest.param(
            str(CORPUS_PAIR[0]),
            str(CORPUS_PAIR[1]),
            marks=pytest.mark.skipif(
                None in CORPUS_PAIR, reason="the RabbitMQ Streams corpus is not available"
            ),
        ),
    ],
    ids=["early-4.0", "corpus-2020-06-19-2020-09-01"],
)
def test_real_review_marks_in_chromium(
    old: str, new: str, tmp_path: Path, chromium: DumpDom
) -> None:
    a, _ = build_ir(resolve(old))
    b, _ = build_ir(resolve(new))
    review = compare(a, b)
    expected = expected_marks(review)
    assert expected, "the pair was chosen for its field changes"
    page_file = tmp_path / "review.html"
    page_file.write_text(render(review), encoding="utf-8")
    dom = chromium(page_file, tmp_path / "profile", 5000)
    # the page lists every fetch its Content-Security-Policy refused; there must be none
    assert '<pre id="csp-violations"></pre>' in dom
    page = Page.read(dom)
    assert page.marked == expected, (page.marked - expected, expected - page.marked)
    changed_commands = {c.command for c in review.changes if c.command is not None}
    assert set(page.sections) == changed_commands
    assert len(page.sections) == len(changed_commands)  # one section each
