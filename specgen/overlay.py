"""Errata as data: what a spec's text gets wrong or leaves open about the bytes on the wire.

An overlay is one JSON document per protocol (`specs/<protocol>/overlay.json`), applied to the
IR after the front-end, entry by entry in file order, like rabbitmq-codegen's extensions. Each
entry names the spec versions it applies to, what it changes, why, and the evidence (which
peer or which document, which bytes). Entries never reach a template: the emitters only see the
IR they produced.

Operations
    replace  target `Message.Field[.Field...]`: the field is replaced (its versions kept unless
             the new field states its own)
    insert   target `Message[.Field...]` (a structure, or an array of structures): `field` is
             inserted before `before`, or at the end
    set      target `Command`: sets `sender` or `expects_response`; message kinds follow;
             target `Message`: sets `decode_keys` (other keys a peer puts on the wire for it, as
             the message's `decode_idents`);
             target `Message.Field[.Field...]`: sets `attributes` (`optional`, `nullable`)

Any other node of the IR, of any protocol, is addressed as `KIND:NAME[.MEMBER...]`:

    type:NAME            a primitive type            enum:NAME        an enumeration
    constant:NAME        a constant                  command:NAME     a command
    message:NAME[.F...]  a message or field below    named:NAME[.F...] a named structure or field
    typedef:NAME[.FIELD] a self-describing type (AMQP 1.0) or one of its composite fields
    alias:NAME           a name the spec gives a type (AMQP 0-10's domains)
    frame                the frame layout

`set` takes `attributes` (any attribute of that node but its name, as the IR's JSON writes it),
`replace` takes `node` (the whole node, in the IR's JSON). The result is checked as the
front-end's output is: an attribute the node does not have, or a value the IR refuses, is an
error naming the entry.

A target that does not exist is an error (the overlay went stale), and so are two entries with
the same target, unless the later one lists the earlier one's id in `waives`.

What the parser needs before an IR exists
    declare  target `domain:NAME`: a name a document uses as a field's type but never declares
             (AMQP 0-9's `content`); `type` is what it is on the wire, in the IR's JSON. The
             front-end reads it where the document names it (so an entry fills a gap only in the
             documents that have it, and is listed as applied only there); a front-end that
             cannot take declarations refuses them.

What the spec says values and senders must be (`Protocol.rules`, specgen.ir.rules)
    rule     target `rule:ADDRESS/KIND`, ADDRESS an owner and field as rules name them
             (`message:ConnectionTuneOk.ChannelMax`, `message:Credit`), KIND a rule kind;
             `action` says what to do:
               add      `rule` (its attributes in the IR's JSON: value, values, low, high,
                        other, unbounded, checkable, prose) is a rule the text leaves out
               correct  `rule` (attributes) changes every rule of that kind there
               waive    every rule of that kind there is dropped: the text states it wrongly
             An added or corrected rule names the entry in its `overlay`. Rule entries change
             no codec, so they are not among `Protocol.overlays` (which generated headers cite).

What generation needs to go on
    accept   target `finding:CODE`: the front-end's reading of a finding that decides bytes
             (`type-typo`, `version-unknown`, `duplicate-key`; see emitters/verify.py) is
             right for this protocol's documents, so `generate` takes it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, assert_never, cast

from specgen.ir import (
    RULE_KINDS,
    Alternatives,
    Array,
    BitField,
    Bits,
    Blob,
    Choice,
    Command,
    Direction,
    Field,
    IRError,
    Map,
    Message,
    MessageKind,
    Presence,
    Prim,
    Protocol,
    Ref,
    RuleKind,
    SourceSpan,
    SpecRule,
    Struct,
    Switch,
    Typed,
    TypeRef,
    attribute_from_data,
    field_from_data,
    from_data,
    type_from_data,
)


class OverlayError(ValueError):
    """An overlay entry cannot be applied; the message names the entry and its file line."""


@dataclass(frozen=True)
class Entry:
    id: str
    op: str
    target: str
    reason: str
    evidence: tuple[str, ...]
    versions: tuple[str, ...]  # spec versions it applies to; empty: all
    span: SourceSpan
    data: dict[str, Any]
    waives: tuple[str, ...] = ()

    def applies_to(self, version: str) -> bool:
        return not self.versions or version in self.versions


def load(path: Path, root: Path, label: str = "") -> list[Entry]:
    """The overlay's entries; spans name it `label` when given (`REV:PATH` for an overlay read
    from a git revision into a scratch folder), else its path under `root`."""
    try:
        rel = label or path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        rel = path.as_posix()
    try:
        data = path.read_bytes()
    except OSError as e:
        raise OverlayError(f"{path}: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8").replace("\r\n", "\n")
    except UnicodeDecodeError as e:
        # one line at the first bad byte, as the front-ends report a spec that is not UTF-8
        line = data.count(b"\n", 0, e.start) + 1
        start = data.rfind(b"\n", 0, e.start) + 1
        column = len(data[start : e.start].decode("utf-8", "replace")) + 1
        where = f"{rel}:{line}:{column}"
        raise OverlayError(f"{where}: not UTF-8 (byte 0x{data[e.start]:02x})") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise OverlayError(f"{rel}:{e.lineno}:{e.colno}: {e.msg}") from None
    lines = text.splitlines()
    entries = []
    for raw in doc.get("entries", []):
        entry_id = raw.get("id", "?")
        line = next((i + 1 for i, ln in enumerate(lines) if f'"id": "{entry_id}"' in ln), 1)
        span = SourceSpan(rel, line)
        missing = [k for k in ("id", "op", "target", "reason", "evidence") if not raw.get(k)]
        if missing:
            raise OverlayError(f"{span}: overlay entry {entry_id} lacks {', '.join(missing)}")
        if raw["op"] not in ("replace", "insert", "set", "declare", "accept", "rule"):
            raise OverlayError(f"{span}: {entry_id}: unknown op {raw['op']!r}")
        entries.append(
            Entry(
                id=raw["id"],
                op=raw["op"],
                target=raw["target"],
                reason=raw["reason"],
                evidence=tuple(raw["evidence"]),
                versions=tuple(raw.get("versions", ())),
                span=span,
                data=raw,
                waives=tuple(raw.get("waives", ())),
            )
        )
    return entries


@dataclass(frozen=True)
class Declared:
    """A type an overlay declares for a name the document leaves undeclared."""

    name: str
    type: TypeRef
    entry: str  # the overlay entry's id
    span: SourceSpan


def _named(
    entries: list[Entry], version: str, op: str, kind: str, what: str
) -> Iterator[tuple[Entry, str]]:
    """The `op` entries for `version`, each with the name its `kind:NAME` target gives."""
    for entry in entries:
        if entry.op != op or not entry.applies_to(version):
            continue
        prefix, _, name = entry.target.partition(":")
        if prefix != kind or not name:
            raise OverlayError(f"{entry.span}: {entry.id}: {op} targets {kind}:{what}")
        yield entry, name


def declarations(entries: list[Entry], version: str) -> dict[str, Declared]:
    """The `declare` entries for `version`, by the name they declare."""
    out: dict[str, Declared] = {}
    for entry, name in _named(entries, version, "declare", "domain", "NAME"):
        if name in out:
            raise OverlayError(f"{entry.span}: {entry.id}: {name} is declared by {out[name].entry}")
        if not isinstance(entry.data.get("type"), dict):
            raise OverlayError(f"{entry.span}: {entry.id}: declare takes `type` (the IR's JSON)")
        try:
            declared = type_from_data(entry.data["type"])
        except (IRError, TypeError, ValueError, KeyError) as e:
            raise OverlayError(f"{entry.span}: {entry.id}: {e}") from None
        out[name] = Declared(name, declared, entry.id, entry.span)
    return out


def acceptances(entries: list[Entry], version: str) -> dict[str, str]:
    """Finding codes the `accept` entries for `version` accept, with the entry's id."""
    return {code: e.id for e, code in _named(entries, version, "accept", "finding", "CODE")}


def apply(protocol: Protocol, entries: list[Entry]) -> Protocol:
    seen: dict[str, str] = {}
    applied: list[str] = []
    for entry in entries:
        if entry.op in ("declare", "accept") or not entry.applies_to(protocol.version):
            continue  # declarations were the front-end's to read, acceptances are the log's
        if entry.target in seen and seen[entry.target] not in entry.waives:
            raise OverlayError(
                f"{entry.span}: {entry.id} targets {entry.target}, as {seen[entry.target]} does"
            )
        seen[entry.target] = entry.id
        if entry.op == "rule":
            protocol = _apply_rule(protocol, entry)
            continue  # no codec changes: `overlays` is what the generated headers cite
        protocol = _apply_one(protocol, entry)
        applied.append(entry.id)
    return replace(protocol, overlays=protocol.overlays + tuple(applied))


RULE_ACTIONS = ("add", "correct", "waive")
_RULE_ATTRIBUTES = frozenset(
    {"value", "values", "low", "high", "other", "unbounded", "checkable", "prose", "via"}
)


def _apply_rule(protocol: Protocol, entry: Entry) -> Protocol:
    """A `rule` entry: a rule added, the rules of one kind at one address corrected or
    waived. Every rule it makes is checked as the front-end's are."""
    prefix, _, rest = entry.target.partition(":")
    address, slash, kind = rest.rpartition("/")
    if prefix != "rule" or not slash or kind not in RULE_KINDS:
        raise OverlayError(
            f"{entry.span}: {entry.id}: a rule entry targets rule:ADDRESS/KIND, KIND one of "
            f"{', '.join(RULE_KINDS)} (not {entry.target!r})"
        )
    action = entry.data.get("action")
    if action not in RULE_ACTIONS:
        raise OverlayError(
            f"{entry.span}: {entry.id}: action {action!r} is none of {', '.join(RULE_ACTIONS)}"
        )
    attrs = entry.data.get("rule", {})
    if action != "waive":
        unknown = sorted(set(attrs) - _RULE_ATTRIBUTES) if isinstance(attrs, dict) else ["?"]
        if not isinstance(attrs, dict) or unknown or (action == "correct" and not attrs):
            raise OverlayError(
                f"{entry.span}: {entry.id}: {action} takes `rule`, an object of "
                f"{', '.join(sorted(_RULE_ATTRIBUTES))}"
                + (f" (not {unknown[0]!r})" if unknown and unknown != ["?"] else "")
            )
    where = protocol.split_address(address)
    if where is None:
        raise OverlayError(f"{entry.span}: {entry.id}: {address!r} names no field (stale overlay?)")
    owner, field = where
    decoded = {k: attribute_from_data(k, v) for k, v in attrs.items()}
    try:
        if action == "add":
            added = SpecRule(
                cast(RuleKind, kind),
                owner,
                field,
                entry.span,
                **{"prose": entry.reason, **decoded},
                overlay=entry.id,
            )
            return replace(protocol, rules=(*protocol.rules, added))
        hits = [r for r in protocol.rules if r.kind == kind and r.address == address]
        if not hits:
            raise OverlayError(
                f"{entry.span}: {entry.id}: no {kind} rule at {address} to {action} (stale overlay?)"
            )
        if action == "waive":
            return replace(protocol, rules=tuple(r for r in protocol.rules if r not in hits))
        rules = tuple(
            replace(r, **decoded, overlay=entry.id) if r in hits else r for r in protocol.rules
        )
        return replace(protocol, rules=rules)
    except (IRError, TypeError) as e:
        raise OverlayError(f"{entry.span}: {entry.id}: {e}") from None


def _apply_one(protocol: Protocol, entry: Entry) -> Protocol:
    kind, colon, _ = entry.target.partition(":")
    if (colon and kind in NODE_KINDS) or entry.target == "frame":
        try:
            return _apply_node(protocol, entry)
        except (IRError, TypeError, ValueError, KeyError) as e:
            if isinstance(e, OverlayError):
                raise
            raise OverlayError(f"{entry.span}: {entry.id}: {e}") from None
    if entry.op == "set":
        return _set(protocol, entry)
    return _apply_fields(protocol, entry)


def _apply_fields(protocol: Protocol, entry: Entry) -> Protocol:
    head, *path = entry.target.split(".")
    hits = [(c, m) for c in protocol.commands for m in c.messages if m.name == head]
    if not hits:
        raise OverlayError(f"{entry.span}: {entry.id}: no message {head!r} (stale overlay?)")
    commands = list(protocol.commands)
    for command, message in hits:
        new_fields = _edit(message.fields, path, entry)
        try:
            new_message = replace(message, fields=new_fields)
        except IRError as e:
            raise OverlayError(f"{entry.span}: {entry.id}: {e}") from None
        i = commands.index(command)
        commands[i] = replace(
            commands[i],
            messages=tuple(new_message if m is message else m for m in commands[i].messages),
        )
    return replace(protocol, commands=tuple(commands))


def _new_field(entry: Entry, old: Field | None) -> Field:
    data = dict(entry.data["field"])
    data.setdefault("span", str(entry.span))
    data.setdefault("doc", entry.reason)
    new = field_from_data(data)
    if old is not None and "versions" not in entry.data["field"]:
        new = replace(new, versions=old.versions)
    return new


def _edit(fields: tuple[Field, ...], path: list[str], entry: Entry) -> tuple[Field, ...]:
    if entry.op == "insert" and not path:
        new = _new_field(entry, None)
        before = entry.data.get("before")
        out = list(fields)
        idx = next((i for i, f in enumerate(out) if f.name == before), None)
        if before is not None and idx is None:
            raise OverlayError(f"{entry.span}: {entry.id}: no field {before!r} to insert before")
        out.insert(len(out) if idx is None else idx, new)
        return tuple(out)
    name, rest = path[0], path[1:]
    out = []
    found = False
    for f in fields:
        if f.name != name:
            out.append(f)
            continue
        found = True
        if not rest and entry.op == "replace":
            out.append(_new_field(entry, f))
        elif not rest and entry.op == "set":
            try:
                out.append(replace(f, **entry.data["attributes"]))
            except IRError as e:
                raise OverlayError(f"{entry.span}: {entry.id}: {e}") from None
        else:
            out.append(replace(f, type=_edit_type(f.type, rest, entry)))
    if not found:
        raise OverlayError(
            f"{entry.span}: {entry.id}: no field {name!r} on the path {entry.target}"
        )
    return tuple(out)


def _edit_type(t: TypeRef, path: list[str], entry: Entry) -> TypeRef:
    return _through(t, entry, lambda fields: _edit(fields, path, entry))


def _through(
    t: TypeRef, entry: Entry, edit: Callable[[tuple[Field, ...]], tuple[Field, ...]]
) -> TypeRef:
    """`t` with `edit` done to the fields a path goes on into: a struct's own, an array's
    item's; a path through any other kind is refused."""
    match t:
        case Struct():
            return replace(t, fields=edit(t.fields))
        case Array():
            return replace(t, item=_through(t.item, entry, edit))
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
            raise OverlayError(
                f"{entry.span}: {entry.id}: {entry.target} goes through a {type(t).__name__}"
            )
        case _:
            assert_never(t)


def _set(protocol: Protocol, entry: Entry) -> Protocol:
    attr, value = entry.data.get("attribute"), entry.data.get("value")
    if "." in entry.target:
        attrs = entry.data.get("attributes")
        if (
            not isinstance(attrs, dict)
            or not attrs
            or not set(attrs) <= {"optional", "nullable"}
            or not all(isinstance(v, bool) for v in attrs.values())
        ):
            raise OverlayError(
                f"{entry.span}: {entry.id}: a field takes `attributes`: optional, nullable (true/false)"
            )
        return _apply_fields(protocol, entry)
    if attr == "decode_keys":
        return _set_decode_keys(protocol, entry, value)
    if attr not in ("sender", "expects_response"):
        raise OverlayError(f"{entry.span}: {entry.id}: cannot set {attr!r}")
    commands = []
    found = False
    for c in protocol.commands:
        if c.name == entry.target:
            found = True
            if attr == "sender":
                if value not in ("client", "server", "both"):
                    raise OverlayError(f"{entry.span}: {entry.id}: sender {value!r}")
                c = replace(c, sender=cast(Direction, value))
                c = replace(
                    c, messages=tuple(_rekind(m, c, c.expects_response) for m in c.messages)
                )
            else:
                c = replace(c, messages=tuple(_rekind(m, c, bool(value)) for m in c.messages))
        commands.append(c)
    if not found:
        raise OverlayError(f"{entry.span}: {entry.id}: no command {entry.target!r}")
    return replace(protocol, commands=tuple(commands))


def _set_decode_keys(protocol: Protocol, entry: Entry, value: Any) -> Protocol:
    keys = [int(k, 16) if isinstance(k, str) else k for k in value or ()]
    if not keys or not all(isinstance(k, int) and 0 <= k <= 0xFFFF for k in keys):
        raise OverlayError(f"{entry.span}: {entry.id}: decode_keys needs 16-bit keys")
    commands = []
    found = False
    for c in protocol.commands:
        messages = []
        for m in c.messages:
            if m.name == entry.target:
                found = True
                m = replace(m, decode_idents=tuple((k,) for k in keys))
            messages.append(m)
        commands.append(replace(c, messages=tuple(messages)))
    if not found:
        raise OverlayError(f"{entry.span}: {entry.id}: no message {entry.target!r}")
    return replace(protocol, commands=tuple(commands))


def _rekind(message: Message, command: Command, expects_response: bool) -> Message:
    if message.kind == "response":
        return message
    kind: MessageKind = "request" if expects_response else "oneway"
    replies = tuple(m.name for m in command.messages if m.kind == "response")
    return replace(message, kind=kind, replies=replies if expects_response else ())


# --------------------------------------------------------------------------------------------
# Any node, by kind and name

NODE_KINDS = ("type", "enum", "constant", "command", "message", "named", "typedef", "alias")
_TOP: dict[str, str] = {  # kind -> the Protocol attribute holding those nodes
    "type": "types",
    "enum": "enums",
    "constant": "constants",
    "command": "commands",
    "named": "named",
    "typedef": "typedefs",
    "alias": "aliases",
}


def _changed(node: Any, entry: Entry) -> Any:
    """`node` as the entry's `set` or `replace` makes it (checked by the node's own rules)."""
    if entry.op == "replace":
        data = entry.data.get("node")
        if not isinstance(data, dict):
            raise OverlayError(f"{entry.span}: {entry.id}: replace takes `node`, the IR's JSON")
        return from_data(type(node), data)
    if entry.op != "set":
        raise OverlayError(f"{entry.span}: {entry.id}: {entry.target} takes set or replace")
    attrs = entry.data.get("attributes")
    if not isinstance(attrs, dict) or not attrs:
        raise OverlayError(f"{entry.span}: {entry.id}: set takes `attributes`")
    names = {f.name for f in fields(node)} - {"name"}
    unknown = sorted(set(attrs) - names)
    if unknown:
        raise OverlayError(
            f"{entry.span}: {entry.id}: {type(node).__name__} has no attribute {unknown[0]!r}"
            f" (it has: {', '.join(sorted(names))})"
        )
    return replace(node, **{k: attribute_from_data(k, v) for k, v in attrs.items()})


def _apply_node(protocol: Protocol, entry: Entry) -> Protocol:
    if entry.target == "frame":
        return replace(protocol, frame=_changed(protocol.frame, entry))
    kind, _, path = entry.target.partition(":")
    name, members = path, []
    if kind in ("message", "named", "typedef", "alias"):
        # names may hold dots (AMQP 0-10's `session.header`): the longest name that matches
        known = (
            [m.name for _, m in protocol.messages()]
            if kind == "message"
            else [n.name for n in getattr(protocol, _TOP[kind])]
        )
        heads = [k for k in known if path == k or path.startswith(f"{k}.")]
        if heads:
            name = max(heads, key=len)
            members = [m for m in path[len(name) + 1 :].split(".") if m]
        else:
            name = path.split(".")[0]
    if kind == "message":
        hits = [m for _, m in protocol.messages() if m.name == name]
        if not hits:
            raise OverlayError(f"{entry.span}: {entry.id}: no message {name!r} (stale overlay?)")
        commands = tuple(
            replace(
                c,
                messages=tuple(
                    _in_message(m, members, entry) if m.name == name else m for m in c.messages
                ),
            )
            for c in protocol.commands
        )
        return replace(protocol, commands=commands)
    attr = _TOP[kind]
    nodes = list(getattr(protocol, attr))
    i = next((i for i, n in enumerate(nodes) if n.name == name), None)
    if i is None:
        raise OverlayError(f"{entry.span}: {entry.id}: no {kind} {name!r} (stale overlay?)")
    node = nodes[i]
    if not members:
        nodes[i] = _changed(node, entry)
    elif kind == "named":
        nodes[i] = replace(node, type=_in_type(node.type, members, entry))
    elif kind == "typedef" and len(members) == 1:
        fields_ = list(node.fields)
        j = next((j for j, f in enumerate(fields_) if f.name == members[0]), None)
        if j is None:
            raise OverlayError(f"{entry.span}: {entry.id}: {name} has no field {members[0]!r}")
        fields_[j] = _changed(fields_[j], entry)
        nodes[i] = replace(node, fields=tuple(fields_))
    else:
        raise OverlayError(f"{entry.span}: {entry.id}: {kind} {name} has no member path")
    changes: dict[str, Any] = {attr: tuple(nodes)}
    return replace(protocol, **changes)


def _in_message(message: Message, members: list[str], entry: Entry) -> Message:
    if not members:
        return cast(Message, _changed(message, entry))
    return replace(message, fields=_in_fields(message.fields, members, entry))


def _in_fields(fields_: tuple[Field, ...], members: list[str], entry: Entry) -> tuple[Field, ...]:
    name, rest = members[0], members[1:]
    if not any(f.name == name for f in fields_):
        raise OverlayError(f"{entry.span}: {entry.id}: no field {name!r} on {entry.target}")
    return tuple(
        (_changed(f, entry) if not rest else replace(f, type=_in_type(f.type, rest, entry)))
        if f.name == name
        else f
        for f in fields_
    )


def _in_type(t: TypeRef, members: list[str], entry: Entry) -> TypeRef:
    return _through(t, entry, lambda fields: _in_fields(fields, members, entry))
