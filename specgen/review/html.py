"""A review as one self-contained HTML page: the changelog, both layouts of every changed command
side by side with the changed fields marked, and the generated code's diff.

The page loads nothing (a Content-Security-Policy forbids every fetch; styles are inline) and
shows everything without a script: the fields are marked here, when the page is rendered, and
the changelog's filters are CSS. Every text is escaped by the template (autoescape); nothing is
passed as markup. The template sits beside the report's, under `templates/` (package data when installed; see
`specgen.locations`).

Rows are identified for tools and tests by `data-side`, `data-command`, `data-message`,
`data-version` and `data-path`. The command and message are named as a `Change` names them (the
new side's name, else the old's), on both sides, so a renamed message still lines up with its
changes; the path is the side's own (a renamed field's old name on the old side).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Literal, assert_never

import jinja2

from specgen import locations
from specgen.ir import (
    Alternatives,
    Array,
    BitField,
    Bits,
    Blob,
    Choice,
    Command,
    Field,
    Map,
    Message,
    MessageKind,
    Presence,
    Prim,
    Ref,
    Struct,
    Switch,
    Typed,
    TypeRef,
)
from specgen.review.changes import NEW_CLIENT, OLD_CLIENT, Change, CommandPair, Review

TEMPLATES = locations.TEMPLATES / "review"

Side = Literal["old", "new"]
# (side, command, message, version, dotted path): one field row of one layout
Mark = tuple[str, str, str, int, str]
# only these say something about a field's bytes or name; prose is listed, never marked
MARKED_CATEGORIES = ("wire", "names")
KINDS: tuple[MessageKind, ...] = ("request", "oneway", "response")


@dataclass(frozen=True)
class Row:
    """One field of a layout, nested fields under their parent."""

    path: str
    depth: int
    name: str
    type: str
    notes: str
    changes: tuple[Change, ...]  # the wire and names changes that name this field

    @property
    def changed(self) -> bool:
        return bool(self.changes)

    @property
    def breaking(self) -> bool:
        return any(c.breaking for c in self.changes)

    @property
    def title(self) -> str:
        return "\n".join(f"{c.rule}: {c.summary}" for c in self.changes)


@dataclass(frozen=True)
class Layout:
    """One side of one version of one message; `rows` is None when that side lacks it."""

    side: Side
    name: str  # the message's name on this side
    rows: tuple[Row, ...] | None


@dataclass(frozen=True)
class VersionView:
    version: int
    old: Layout | None  # None: the command has no old side at all (added), and so on
    new: Layout | None


@dataclass(frozen=True)
class MessageView:
    name: str  # as changes name it: the new side's, else the old's
    kind: str
    versions: tuple[VersionView, ...]


@dataclass(frozen=True)
class CommandView:
    anchor: str
    name: str
    status: Literal["added", "removed", "changed"]
    old: Command | None
    new: Command | None
    changes: tuple[Change, ...]
    messages: tuple[MessageView, ...]


@dataclass(frozen=True)
class CodeLine:
    kind: Literal["file", "hunk", "add", "del", "ctx"]
    text: str


def render(review: Review) -> str:
    """The review page, as one string of HTML."""
    marks = field_marks(review)
    commands = _command_views(review, marks)
    anchors = {c.name: c.anchor for c in commands}
    return (
        _environment()
        .get_template("review.html.j2")
        .render(
            review=review,
            counts=_counts(review),
            changes=review.changes,
            anchors=anchors,
            commands=commands,
            code=_code_lines(review.code) if review.code else None,
            deployments=(OLD_CLIENT, NEW_CLIENT),
        )
    )


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


# --------------------------------------------------------------------------------------------
# Which rows are marked


def field_marks(review: Review) -> dict[Mark, list[Change]]:
    """Every field row a wire or names change names, with the changes naming it."""
    marks: dict[Mark, list[Change]] = defaultdict(list)
    for c in review.changes:
        if c.category not in MARKED_CATEGORIES or c.command is None or c.version is None:
            continue
        message = change_message(c)
        if message is None:
            continue
        for side, path in (("old", c.old_path), ("new", c.new_path)):
            if path:  # a reordering at the top of a message names no one field
                marks[(side, c.command, message, c.version, ".".join(path))].append(c)
    return dict(marks)


def change_message(change: Change) -> str | None:
    """The message a field change is in (None for changes above any message)."""
    return change.message


# --------------------------------------------------------------------------------------------
# Commands and their layouts


def _command_views(review: Review, marks: dict[Mark, list[Change]]) -> list[CommandView]:
    by_command: dict[str, list[Change]] = defaultdict(list)
    for c in review.changes:
        if c.command is not None:
            by_command[c.command].append(c)
    views: list[CommandView] = []
    for pair in review.pairs:
        if pair.name not in by_command:
            continue
        status: Literal["added", "removed", "changed"] = (
            "added" if pair.old is None else "removed" if pair.new is None else "changed"
        )
        views.append(
            CommandView(
                anchor=f"command-{len(views) + 1}",
                name=pair.name,
                status=status,
                old=pair.old,
                new=pair.new,
                changes=tuple(by_command[pair.name]),
                messages=tuple(
                    _message_view(pair, old, new, marks) for old, new in message_pairs(pair)
                ),
            )
        )
    return views


def message_pairs(pair: CommandPair) -> list[tuple[Message | None, Message | None]]:
    """A command's messages matched old to new by kind, as the comparison matches them: a
    request that became one-way (or back) is the same frame."""
    a, b = pair.old, pair.new
    if a is None or b is None:
        side = a or b
        assert side is not None
        return [(m, None) if a else (None, m) for m in _in_kind_order(side)]
    out: list[tuple[Message | None, Message | None]] = []
    for kind in KINDS:
        ma, mb = a.message(kind), b.message(kind)
        if ma is None and kind != "response":
            ma = a.message(_swapped(kind))
            if ma is None or b.message(ma.kind) is not None:
                ma = None
        if ma is None and mb is None:
            continue
        if mb is None and kind != "response" and b.message(_swapped(kind)) is not None:
            continue  # paired from the other side
        out.append((ma, mb))
    return out


def _swapped(kind: MessageKind) -> MessageKind:
    return "oneway" if kind == "request" else "request"


def _in_kind_order(command: Command) -> list[Message]:
    return sorted(command.messages, key=lambda m: KINDS.index(m.kind))


def _message_view(
    pair: CommandPair,
    old: Message | None,
    new: Message | None,
    marks: dict[Mark, list[Change]],
) -> MessageView:
    main = new or old
    assert main is not None
    versions = sorted(_versions(old) | _versions(new))
    return MessageView(
        name=main.name,
        kind=main.kind,
        versions=tuple(
            VersionView(
                version=v,
                old=_layout("old", pair, main.name, old, v, marks) if pair.old else None,
                new=_layout("new", pair, main.name, new, v, marks) if pair.new else None,
            )
            for v in versions
        ),
    )


def _versions(m: Message | None) -> set[int]:
    """The versions the comparison walks: an open range counts as its first version only."""
    if m is None:
        return set()
    high = m.versions.high if m.versions.high is not None else m.versions.low
    return set(range(m.versions.low, high + 1))


def _layout(
    side: Side,
    pair: CommandPair,
    message: str,
    m: Message | None,
    version: int,
    marks: dict[Mark, list[Change]],
) -> Layout:
    if m is None or version not in _versions(m):
        return Layout(side, m.name if m else "", None)

    def changes(path: str) -> tuple[Change, ...]:
        return tuple(marks.get((side, pair.name, message, version, path), ()))

    return Layout(side, m.name, tuple(_rows(m.fields_at(version), 0, "", changes)))


def _rows(
    members: tuple[Field, ...],
    depth: int,
    prefix: str,
    changes: Callable[[str], tuple[Change, ...]],
) -> list[Row]:
    """The fields in wire order, each followed by the fields inside its type (as
    `ir.walk_fields` walks them, so paths match the comparison's)."""
    out: list[Row] = []
    for f in members:
        path = f"{prefix}.{f.name}" if prefix else f.name
        out.append(Row(path, depth, f.name, type_label(f.type), _notes(f), changes(path)))
        for inner in _inner_fields(f.type):
            out.extend(_rows(inner, depth + 1, path, changes))
    return out


def _inner_fields(t: TypeRef) -> list[tuple[Field, ...]]:
    match t:
        case Struct():
            return [t.fields]
        case Array():
            return _inner_fields(t.item)  # arrays are transparent in paths
        case Map():
            return _inner_fields(t.key) + _inner_fields(t.value)
        case Switch() | Choice():
            return [inner for c in t.cases if c.type is not None for inner in _inner_fields(c.type)]
        case Bits():
            return [t.members]
        case Prim() | Ref() | Blob() | BitField() | Presence() | Alternatives() | Typed():
            return []
        case _:
            assert_never(t)


def type_label(t: TypeRef) -> str:
    """A type as a reviewer reads it: `uint16`, `[Broker]`, `OsirisChunk`, `map<K, V>`."""
    match t:
        case Prim() | Ref():
            return t.name
        case Array():
            return f"[{type_label(t.item)}]{_count(t)}"
        case Struct():
            return t.name
        case Map():
            return f"map<{type_label(t.key)}, {type_label(t.value)}>"
        case Switch():
            on = t.on if t.on is not None else f"top {t.peek_bits} bits"
            return f"switch on {on}"
        case Choice():
            return f"choice by {t.constructor}"
        case Blob():
            return f"bytes ({t.length_field or 'rest of frame'})"
        case Bits():
            return f"bits ({t.width * 8})"
        case BitField():
            return f"{t.bits} bit{'s' if t.bits != 1 else ''}"
        case Presence():
            return f"presence flags ({t.width * 8})"
        case Alternatives():
            return " | ".join(name for name, _ in t.options)
        case Typed():
            return "typed"
        case _:
            assert_never(t)


def _count(a: Array) -> str:
    """How the items are counted, when not by the usual int32 prefix."""
    if a.count_prefix == "int32":
        return ""
    if a.count_prefix is not None:
        return f" count {a.count_prefix}"
    if a.count_field is not None:
        return f" count {a.count_field}"
    size = a.size_field or a.size_prefix
    return f" size {size}"


def _notes(f: Field) -> str:
    notes = []
    if str(f.versions) != "1+":
        notes.append(f"v{f.versions}")
    if f.nullable:
        notes.append("nullable")
    if f.optional:
        notes.append("optional")
    if f.enum:
        notes.append(f"enum {f.enum}")
    if f.max_length is not None:
        notes.append(f"max {f.max_length}")
    if f.present is not None:
        notes.append(f"if {f.present[0]} flag {f.present[1]}")
    return ", ".join(notes)


# --------------------------------------------------------------------------------------------
# Header counts and the code diff


def _counts(review: Review) -> dict[str, int]:
    counts = {
        "wire": len(review.of("wire")),
        "breaking": len(review.breaking),
        "names": len(review.of("names")),
        "prose": len(review.of("prose")),
    }
    for deployment in (OLD_CLIENT, NEW_CLIENT):
        counts[deployment] = sum(deployment in c.breaks for c in review.changes)
    return counts


def _code_lines(diff: str) -> list[CodeLine]:
    return [CodeLine(_code_kind(line), line) for line in diff.splitlines()]


def _code_kind(line: str) -> Literal["file", "hunk", "add", "del", "ctx"]:
    if line.startswith(("+++", "---", "diff ")):
        return "file"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    return "ctx"
