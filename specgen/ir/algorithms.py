"""Shared algorithms over the IR: shapes, version merging, settling alternatives."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal
from typing import Any, Literal, assert_never

from specgen.ir.canonical import to_data
from specgen.ir.findings import FindingLog
from specgen.ir.nodes import (
    Alternatives,
    Array,
    BitField,
    Bits,
    Blob,
    Choice,
    Field,
    Map,
    Presence,
    Prim,
    Ref,
    Struct,
    Switch,
    Typed,
    TypeRef,
    Versions,
)
from specgen.ir.protocol import Protocol
from specgen.spans import SourceSpan

# --------------------------------------------------------------------------------------------
# Shared algorithms over the IR


_PROSE = ("span", "doc", "spec_name")


def shape(node: Any) -> Any:
    """A node as JSON data without source spans and prose: what the bytes mean, nothing else.
    Equal shapes are equal wire formats (layout equality, spec diffs). Prose is a doc, a span
    and the spec's spelling of a name the IR spells its own way."""

    def strip(data: Any) -> Any:
        if isinstance(data, dict):
            return {k: strip(v) for k, v in data.items() if k not in _PROSE}
        if isinstance(data, list):
            return [strip(x) for x in data]
        return data

    return strip(to_data(node))


def same(a: Any, b: Any) -> bool:
    """IR equality that ignores spans and prose."""
    return bool(shape(a) == shape(b))


# What only words or spells a meaning, beside `_PROSE`: a label (the one-line title beside a
# doc, of a type, an encoding, a constructor case, a field) and whether the spec writes an
# enumeration's values in hexadecimal.
_SPELLING = (*_PROSE, "label", "hex")


def meaning(node: Any) -> Any:
    """A node as JSON data without what only words or spells what its bytes mean: `shape`, less
    labels, an enumeration's choice of hexadecimal, the words beside a listed alternative, and
    how a default's number or truth value is written (`0x10`, `16` and `16u` are one value).
    Equal meanings are the same bytes on the wire: this is what `specgen diff` compares, and
    what it leaves out is prose, never a wire change."""

    def strip(data: Any) -> Any:
        if isinstance(data, dict):
            out = {k: strip(v) for k, v in data.items() if k not in _SPELLING}
            if data.get("kind") == "alternatives":
                out["options"] = [option[0] for option in data.get("options", ())]
            if "default" in out:
                out["default"] = spelled_value(data["default"])
            return out
        if isinstance(data, list):
            return [strip(x) for x in data]
        return data

    return strip(to_data(node))


_INTEGER = re.compile(
    r"(?P<sign>[+-]?)(?:0[xX](?P<hex>[0-9A-Fa-f]+)|0[bB](?P<bin>[01]+)|0[oO](?P<oct>[0-7]+)"
    r"|(?P<dec>[0-9]+))(?:[uU](?:ll|LL|[lL])?|(?:ll|LL|[lL])[uU]?)?"
)
_REAL = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][+-]?[0-9]+)?)[fFlLdD]?"
)


def spelled_number(text: str) -> int | Decimal | None:
    """The number a spec's text spells, or None when it spells none. Integers in decimal,
    hexadecimal (`0x`), binary (`0b`) or octal (`0o`), with C's suffixes (`u`, `U`, `L`, `UL`,
    `ULL`, ...); leading zeros are decimal (`010` is ten: these are specs, not C sources). Reals
    (`1.5`, `1e3`, `2.0f`) as exact decimals, so `1.0` and `1` are one value."""
    text = text.strip()
    m = _INTEGER.fullmatch(text)
    if m:
        digits, base = next(
            (m[g], b) for g, b in (("hex", 16), ("bin", 2), ("oct", 8), ("dec", 10)) if m[g]
        )
        value = int(digits, base)
        return -value if m["sign"] == "-" else value
    m = _REAL.fullmatch(text)
    if m:
        return Decimal(m["number"])
    return None


ValueKind = Literal["number", "bool", "text", "any"]
SpelledValue = tuple[str, Any] | None


def spelled_value(value: object, kind: ValueKind = "any") -> SpelledValue:
    """A value as the IR holds it (a number, a truth value or the spec's text, such as a
    default or a restricted type's choice), as what it means: ("number", n), ("bool", b) or
    ("text", s); None stays None. `kind` is what the value's type holds: a "text" value is
    compared as written; a "bool" one reads 0 and 1 as truth values; "any" reads whatever
    the text spells. Whichever form a front-end stores, int or text, compares alike."""
    if value is None:
        return None
    if kind == "text":
        if isinstance(value, bool):
            return ("text", "true" if value else "false")
        return ("text", str(value))
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float | Decimal):
        number: int | Decimal = value if not isinstance(value, float) else Decimal(repr(value))
        if kind == "bool" and number in (0, 1):
            return ("bool", number == 1)
        return ("number", number)
    text = str(value).strip()
    if kind in ("bool", "any") and text.lower() in ("true", "false"):
        return ("bool", text.lower() == "true")
    parsed = spelled_number(text)
    if parsed is None:
        return ("text", text)
    if kind == "bool" and parsed in (0, 1):
        return ("bool", parsed == 1)
    return ("number", parsed)


def merge_versions(layouts: list[tuple[int, tuple[Field, ...]]]) -> tuple[Field, ...]:
    """One field list for all versions: a field's `versions` says where it is on the wire."""
    first_version, merged = layouts[0]
    out = [_with_versions(f, Versions(first_version, None)) for f in merged]
    for version, layout in layouts[1:]:
        out = _merge_two(out, list(layout), version)
    return tuple(out)


def _with_versions(f: Field, versions: Versions) -> Field:
    return replace(f, versions=versions)


def _merge_two(old: list[Field], new: list[Field], version: int) -> list[Field]:
    """Align by name (longest common subsequence of same-typed fields); what only the old
    layout has ends at version-1, what only the new one has starts at `version`."""
    live = [f for f in old if f.versions.high is None]
    n, m = len(live), len(new)
    same = [[_same(live[i], new[j]) for j in range(m)] for i in range(n)]
    lcs = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            lcs[i][j] = lcs[i + 1][j + 1] + 1 if same[i][j] else max(lcs[i + 1][j], lcs[i][j + 1])
    result: list[Field] = [f for f in old if f.versions.high is not None]
    i = j = 0
    while i < n or j < m:
        if i < n and j < m and same[i][j]:
            result.append(_merge_field(live[i], new[j], version))
            i += 1
            j += 1
        elif j >= m or (i < n and lcs[i + 1][j] >= lcs[i][j + 1]):
            result.append(replace(live[i], versions=Versions(live[i].versions.low, version - 1)))
            i += 1
        else:
            result.append(replace(new[j], versions=Versions(version, None)))
            j += 1
    return result


def _same(a: Field, b: Field) -> bool:
    """The same field in two versions: same name, and the same type (structures by name)."""
    if a.name != b.name:
        return False
    match a.type, b.type:
        case (Struct(), Struct()) | (Array(item=Struct()), Array(item=Struct())):
            return True
        case _:
            return a.type == b.type


def _merge_field(a: Field, b: Field, version: int) -> Field:
    match a.type, b.type:
        case Struct() as x, Struct() as y:
            return replace(
                a, type=Struct(x.name, tuple(_merge_two(list(x.fields), list(y.fields), version)))
            )
        case Array(item=Struct() as x) as array, Array(item=Struct() as y):
            item = Struct(x.name, tuple(_merge_two(list(x.fields), list(y.fields), version)))
            return replace(a, type=replace(array, item=item))
        case _:
            return a  # no structure on both sides: nothing inside to merge


def settle_alternatives(protocol: Protocol, log: FindingLog) -> Protocol:
    """Alternatives the text leaves open (`uint64 (offset) | int64 (timestamp)`) that no overlay
    entry settled: when every option has the same fixed width, the bytes are the same whichever
    is meant, so the field is read as the first option and a finding says so. Options of
    different widths stay, and the planner refuses them: no reading of the text frames them."""

    def settle(f: Field) -> Field:
        t = f.type
        if isinstance(t, Alternatives):
            widths = {
                protocol.type(name).width if protocol.type(name).fixed else -1
                for name, _ in t.options
            }
            if len(widths) == 1 and -1 not in widths:
                first, label = t.options[0]
                log.add(
                    f.span or SourceSpan(protocol.source, 1),
                    "alternatives-same-width",
                    f"{f.name} is one of {', '.join(n for n, _ in t.options)}, all {widths.pop()} bytes",
                    f"read as {first}{f' ({label})' if label else ''}, the first listed; an overlay entry can say more",
                )
                note = f"One of {' | '.join(f'{n} ({lbl})' if lbl else n for n, lbl in t.options)}; read as {first}."
                return replace(f, type=Prim(first), doc=f"{f.doc} {note}".strip())
            return f
        return replace(f, type=_settle_type(t, settle)) if _has_fields(t) else f

    commands = tuple(
        replace(
            c,
            messages=tuple(
                replace(m, fields=tuple(settle(f) for f in m.fields)) for m in c.messages
            ),
        )
        for c in protocol.commands
    )
    return replace(protocol, commands=commands)


def _has_fields(t: TypeRef) -> bool:
    return isinstance(t, Struct | Array)


def _settle_type(t: TypeRef, settle: Callable[[Field], Field]) -> TypeRef:
    match t:
        case Struct():
            return Struct(t.name, tuple(settle(f) for f in t.fields))
        case Array():
            return replace(t, item=_settle_type(t.item, settle)) if _has_fields(t.item) else t
        case (
            Prim()
            | Ref()
            | Map()
            | Switch()
            | Choice()
            | Blob()
            | Bits()
            | BitField()
            | Presence()
            | Alternatives()
            | Typed()
        ):
            return t
        case _:
            assert_never(t)
