"""Helpers the front-ends share to read a spec's rules (`specgen.ir.rules`) onto the IR."""

from __future__ import annotations

from dataclasses import replace

from specgen.ir import Field, Protocol, SpecRule, walk_fields


def field_path(fields: tuple[Field, ...], name: str) -> str | None:
    """The IR path of the field called `name`: itself at the top, or a member of a packed
    `Bits` (`Bits1.NoWait`); None when the message has no such field."""
    return next((path for path, f in walk_fields(fields) if f.name == name), None)


def bind(rules: list[SpecRule], owner: str, fields: tuple[Field, ...]) -> list[SpecRule]:
    """Rules read off fields before their message existed, now owned by `owner`: each field
    name made its path, and an `other` of ".NAME" (a sibling field) made that field's address.
    A rule whose field is not there (a reserved field the IR left out) keeps its prose only."""
    out: list[SpecRule] = []
    for r in rules:
        path = field_path(fields, r.field) if r.field else None
        other = r.other
        if other.startswith("."):
            sibling = field_path(fields, other[1:])
            other = f"{owner}.{sibling}" if sibling else ""
            if sibling is None:
                r = _prose_only(r, f"names {r.other[1:]}, which the message does not have")
        if r.field is not None and path is None:
            gone = _prose_only(r, f"of field {r.field}, which is not on the wire")
            out.append(replace(gone, owner=owner, field=None))
            continue
        out.append(replace(r, owner=owner, field=path, other=other))
    return out


def _prose_only(r: SpecRule, why: str) -> SpecRule:
    prose = r.prose or r.kind
    return replace(r, checkable=False, other="", prose=f"{prose} ({why})")


def settle_others(protocol: Protocol, rules: list[SpecRule]) -> list[SpecRule]:
    """The rules with every `other` the document does not define (a method an older document
    lacks) made prose-only, so a rule never points at nothing."""
    return [
        r
        if not r.other or protocol.has_address(r.other)
        else _prose_only(r, f"compares with {r.other}, which this document does not define")
        for r in rules
    ]
