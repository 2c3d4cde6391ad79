"""What changed on the wire between two IRs of one protocol, and whom it breaks.

Two IRs are compared command by command, message by message, version by version and field by
field. Every difference becomes a `Change` with the rule that classified it. A change is:

* `wire`: the bytes a peer writes or expects differ. Whether that breaks anything is asked twice,
  once per deployment a rollout produces: an old client against a new server, and a new client
  against an old server. Each message is written by one side and read by the other (the
  command's sender writes the request, the other side its response), so "old writer, new
  reader" and "new writer, old reader" map onto those two deployments by the message's sender.
* `names`: only identifiers changed (a command, message, field or enum value renamed; an
  enumeration documented). Names never reach the wire, so these are never breaking.
* `prose`: descriptions only. Listed apart, never breaking.

The rules follow buf's breaking-change rules where protobuf has the same notion (a field's
number is our field's position; enum values are the same idea) and Kafka's message evolution
rules for versions: a change carried by a new message version is compatible, because peers
agree on versions before they use them; a change to an existing version is not. Unlike
protobuf, these formats have no field tags: every field's position depends on the widths of
those before it, so adding, removing, reordering or resizing a field breaks both directions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeVar, assert_never

from specgen.ir import (
    Alternatives,
    Array,
    BitField,
    Bits,
    Blob,
    Choice,
    Command,
    Constant,
    Enum,
    Field,
    Map,
    Message,
    NamedType,
    Presence,
    Prim,
    PrimitiveType,
    Protocol,
    Ref,
    SourceSpan,
    Struct,
    Switch,
    Typed,
    TypeDef,
    TypeRef,
    meaning,
    spelled_value,
    walk_fields,
)
from specgen.ir.algorithms import SpelledValue, ValueKind

Category = Literal["wire", "names", "prose"]
Named = TypeVar("Named", PrimitiveType, Enum, Constant, NamedType, TypeDef)

OLD_CLIENT = "old client, new server"
NEW_CLIENT = "new client, old server"

# Whom a change to one message breaks, as (old writer -> new reader, new writer -> old reader).
Pairing = tuple[bool, bool]
BOTH: Pairing = (True, True)
NONE: Pairing = (False, False)
OLD_TO_NEW: Pairing = (True, False)  # something an old writer sends that a new reader refuses
NEW_TO_OLD: Pairing = (False, True)  # something a new writer sends that an old reader refuses

RULES: dict[str, str] = {
    # framing
    "FRAME_FIELD_ADDED": (
        "every frame carries the new header field; a peer without it misreads every frame"
    ),
    "FRAME_FIELD_REMOVED": "every frame loses a header field an old peer still reads",
    "FRAME_FIELD_WIDTH": "a header field's width moves every byte after it in every frame",
    "FRAME_FIELD_SIGNEDNESS": "the same bytes; only values past the signed range read differently",
    "FRAME_LENGTH_RULE": "the peers would cut the byte stream into frames at different places",
    "FRAME_DISPATCH": "the peers would look for a frame's identity in different header fields",
    "FRAME_RESPONSE_FLAG": (
        "a response's key differs between the two texts: one peer's response is an "
        "unknown request to the other"
    ),
    "FRAME_TRAILER": "every frame ends differently",
    "FRAME_PREAMBLE": "the connection opens with different bytes",
    # types
    "TYPE_CHANGED": "every field of this type is written differently",
    "TYPE_ADDED": "a new type name; no bytes change until a field uses it",
    "TYPE_REMOVED": "a type name is gone; the fields that used it are compared one by one",
    "TYPE_SIGNEDNESS": "the same bytes; only values past the signed range read differently",
    "NAMED_TYPE_ADDED": "a new structure; no bytes change until a field uses it",
    "NAMED_TYPE_REMOVED": "a structure is gone; the fields that used it are compared one by one",
    "TYPEDEF_ENCODINGS": (
        "the type's format codes differ: a value one side writes has a constructor the other "
        "does not read"
    ),
    "TYPEDEF_SOURCE": "the restricted type stands for another type: its values are written differently",
    "TYPEDEF_DESCRIPTOR": "a described type travels under another descriptor",
    "TYPEDEF_CHOICES": "the values the restricted type allows differ",
    "TYPEDEF_CHOICE_RENAMED": "the same value under another name; names are not on the wire",
    "TYPEDEF_ENCODING_RENAMED": (
        "the same format code, category and width under another name; names are not on the wire"
    ),
    "TYPEDEF_PROVIDES": "which archetypes the type provides changed: fields that take them accept it or not",
    # commands
    "COMMAND_ADDED": (
        "old peers never send it; new peers send it only to peers that know it (an "
        "unknown key is answered with an error, the connection lives)"
    ),
    "COMMAND_REMOVED": "the side that still sends it meets a peer that no longer knows its key",
    "COMMAND_RENAMED": "the key is the same; names are not on the wire",
    "COMMAND_REKEYED": (
        "the same command travels under another key: each side reads the other's frames "
        "as a different command"
    ),
    "COMMAND_SENDER": (
        "a side that starts sending it meets old peers that do not expect it; a side that "
        "stops is refused by new peers; swapped roles leave both sides waiting"
    ),
    "COMMAND_RESPONSE": (
        "whether a response follows changed: one side waits for a reply the other never "
        "sends, or gets one it does not expect"
    ),
    # messages
    "MESSAGE_ADDED": "a frame the new writer sends that an old reader has no layout for",
    "MESSAGE_REMOVED": "a frame the old writer still sends that the new reader has no layout for",
    "MESSAGE_RENAMED": "the key and layout are the same; names are not on the wire",
    "MESSAGE_REKEYED": "the frame travels under another key",
    "VERSION_ADDED": (
        "a new version of the message: peers agree on versions before they use them, so "
        "old peers keep the versions they know"
    ),
    "VERSION_REMOVED": "an old peer still uses a version the new text no longer has",
    # fields
    "FIELD_ADDED": "no field tags: the frame's layout changes and every later field moves",
    "FIELD_ADDED_TRAILING": (
        "a field that may be absent, added last to a structure that says which fields it holds "
        "(a list's length, packing flags): an old writer's value reads as before, while a value "
        "in the new field reaches an old reader as an item its type does not have"
    ),
    "FIELD_REMOVED": "no field tags: the frame's layout changes and every later field moves",
    "FIELD_REORDERED": "no field tags: fields are read in order",
    "FIELD_RENAMED": "same position, same type; names are not on the wire",
    "FIELD_WIDTH": "a wider or narrower field moves every byte after it",
    "FIELD_SIGNEDNESS": "the same bytes; only values past the signed range read differently",
    "FIELD_TYPE": "the field is written as a different kind of value",
    "FIELD_LENGTH_PREFIX": "the length before the value has another width",
    "FIELD_ARRAY": "an array adds (or loses) a count before its items",
    "FIELD_MULTIPLE": (
        "one value or an array of them: a reader of single values refuses an array, and the "
        "other way round"
    ),
    "FIELD_DEFAULT": "an absent field now means another value: the two sides read it differently",
    "STRUCT_FRAMING": "the struct's size prefix or code differs: its bytes are cut differently",
    "FIELD_NULLABLE": "a new writer may send null, which an old reader refuses",
    "FIELD_NOT_NULLABLE": "an old writer may send null, which the new reader refuses",
    "FIELD_OPTIONAL": "a new writer may leave it out, which an old reader refuses",
    "FIELD_REQUIRED": "an old writer may leave it out, which the new reader refuses",
    "FIELD_MAX_LENGTH": "a longer value than the reader allows may be sent",
    "FIELD_ENUM": "which enumeration names the values; the values are the same",
    # enums and constants
    "ENUM_ADDED": "the values were already on the wire; the text now names them",
    "ENUM_REMOVED": "the values stay on the wire; the text stops naming them",
    "ENUM_VALUE_ADDED": (
        "old writers never send it; readers keep values they do not know as numbers"
    ),
    "ENUM_VALUE_REMOVED": (
        "an old writer may still send it; the number may come to mean something else"
    ),
    "ENUM_VALUE_RENUMBERED": "the same meaning travels as another number",
    "ENUM_VALUE_RENAMED": "the same number; names are not on the wire",
    "CONSTANT_CHANGED": "a value the peers must agree on differs",
    "CONSTANT_ADDED": "a new named value; nothing on the wire changes by itself",
    "CONSTANT_REMOVED": (
        "a named value is gone from the text; nothing on the wire changes by itself"
    ),
    # prose
    "PROSE": "descriptions only",
}


@dataclass(frozen=True)
class Change:
    rule: str  # a key of RULES
    category: Category
    where: str  # "Subscribe / SubscribeRequest v1 / OffsetSpecification.Offset"
    summary: str
    breaks: tuple[str, ...] = ()  # OLD_CLIENT and/or NEW_CLIENT
    command: str | None = None  # the command's name on the new side (else the old)
    message: str | None = None  # the message's name on the new side (else the old)
    old_path: tuple[str, ...] = ()  # the field path on the old side, if a field changed
    new_path: tuple[str, ...] = ()
    version: int | None = None
    old_span: SourceSpan | None = None
    new_span: SourceSpan | None = None

    @property
    def breaking(self) -> bool:
        return bool(self.breaks)

    @property
    def reason(self) -> str:
        return RULES[self.rule]


@dataclass(frozen=True)
class CommandPair:
    old: Command | None
    new: Command | None

    @property
    def name(self) -> str:
        side = self.new or self.old
        assert side is not None
        return side.name


@dataclass(frozen=True)
class Review:
    """Everything a reviewer sees: both IRs, the command pairing and the changes."""

    old: Protocol
    new: Protocol
    old_label: str
    new_label: str
    changes: tuple[Change, ...]
    pairs: tuple[CommandPair, ...]
    code: str | None = None  # unified diff of the generated modules, when asked for

    def of(self, category: Category) -> list[Change]:
        return [c for c in self.changes if c.category == category]

    @property
    def breaking(self) -> list[Change]:
        return [c for c in self.changes if c.breaking]


def compare(old: Protocol, new: Protocol, old_label: str = "", new_label: str = "") -> Review:
    differ = _Differ(old, new)
    differ.run()
    return Review(
        old,
        new,
        old_label or f"{old.name} {old.version}",
        new_label or f"{new.name} {new.version}",
        tuple(differ.changes),
        tuple(differ.pairs),
    )


# --------------------------------------------------------------------------------------------


def _key(ident: tuple[int, ...]) -> str:
    """A one-field key in hex (as the Streams reference writes keys); a (class, method) pair
    in decimal (as AMQP writes them)."""
    return f"{ident[0]:#06x}" if len(ident) == 1 else "/".join(str(k) for k in ident)


@dataclass
class _Differ:
    old: Protocol
    new: Protocol
    changes: list[Change] = field(default_factory=list)
    pairs: list[CommandPair] = field(default_factory=list)
    current: str | None = None  # the message being compared, for the changes inside it
    typedef_index: dict[int, dict[str, TypeDef]] = field(default_factory=dict)

    def add(
        self,
        rule: str,
        where: str,
        summary: str,
        pairing: Pairing = NONE,
        sender: str = "both",
        **extra: Any,
    ) -> None:
        cat: Category = "prose" if rule == "PROSE" else "wire"
        if rule in (
            "COMMAND_RENAMED",
            "MESSAGE_RENAMED",
            "FIELD_RENAMED",
            "ENUM_VALUE_RENAMED",
            "ENUM_ADDED",
            "ENUM_REMOVED",
            "FIELD_ENUM",
            "TYPE_ADDED",
            "TYPE_REMOVED",
            "NAMED_TYPE_ADDED",
            "NAMED_TYPE_REMOVED",
            "CONSTANT_ADDED",
            "CONSTANT_REMOVED",
            "TYPEDEF_ENCODING_RENAMED",
            "TYPEDEF_CHOICE_RENAMED",
        ):
            cat = "names"
        breaks = _deployments(pairing, sender) if cat == "wire" else ()
        breaks = extra.pop("breaks", breaks)
        if self.current is not None:
            extra.setdefault("message", self.current)
        self.changes.append(Change(rule, cat, where, summary, breaks, **extra))

    def run(self) -> None:
        self._frame()
        self._types()
        self._named()
        self._typedefs()
        self._enums()
        self._constants()
        self._commands()

    # ---- framing and types

    def _frame(self) -> None:
        a, b = self.old.frame, self.new.frame
        where = "frame"
        old_h = {f.name: f for f in a.header}
        new_h = {f.name: f for f in b.header}
        # header order, not set order: the changelog must not depend on the hash seed
        for name in (n for n in old_h if n not in new_h):
            self.add("FRAME_FIELD_REMOVED", where, f"header field {name} removed", BOTH)
        for name in (n for n in new_h if n not in old_h):
            self.add("FRAME_FIELD_ADDED", where, f"header field {name} added", BOTH)
        if [n for n in old_h if n in new_h] != [n for n in new_h if n in old_h]:
            self.add("FRAME_FIELD_WIDTH", where, "header fields reordered", BOTH)
        for name in (n for n in new_h if n in old_h):
            self._scalar(
                old_h[name].type,
                new_h[name].type,
                f"{where} / {name}",
                "FRAME_FIELD",
                "both",
                {},
            )
        if (a.length, a.length_counts) != (b.length, b.length_counts):
            self.add(
                "FRAME_LENGTH_RULE",
                where,
                f"length {a.length} ({a.length_counts}) -> {b.length} ({b.length_counts})",
                BOTH,
            )
        if a.dispatch != b.dispatch or meaning(a.body_keys) != meaning(b.body_keys):
            self.add("FRAME_DISPATCH", where, f"dispatch {a.dispatch} -> {b.dispatch}", BOTH)
        if a.response_flag != b.response_flag:
            self.add(
                "FRAME_RESPONSE_FLAG",
                where,
                f"response flag {_flag(a.response_flag)} -> {_flag(b.response_flag)}",
                BOTH,
            )
        if meaning(a.trailer) != meaning(b.trailer):
            self.add("FRAME_TRAILER", where, "the frame trailer changed", BOTH)
        if meaning(a.preambles) != meaning(b.preambles):
            self.add("FRAME_PREAMBLE", where, "the connection preamble changed", BOTH)

    def _named(self) -> None:
        """Structures the spec names (AMQP 0-10's structs), member by member."""
        old, new, gone, came, kept = _by_name(self.old.named, self.new.named)
        for name in gone:
            self.add("NAMED_TYPE_REMOVED", f"struct {name}", f"{name} removed")
        for name in came:
            self.add("NAMED_TYPE_ADDED", f"struct {name}", f"{name} added")
        for name in kept:
            a, b = old[name], new[name]
            where = f"struct {name}"
            ctx: dict[str, Any] = {"command": "", "version": 1}
            self._type(a.type, b.type, where, where, "both", ctx, (), ())
            if a.doc != b.doc:
                self.add("PROSE", where, "description changed")

    def _typedefs(self) -> None:
        """A self-describing type system's types (AMQP 1.0): encodings, the source a restricted
        type stands for, descriptors, allowed values, archetypes, and a composite's fields.
        Labels, docs and how a number is written are prose: an encoding is its format code,
        category and width, an allowed value what its text spells."""
        old, new, gone, came, kept = _by_name(self.old.typedefs, self.new.typedefs)
        for name in gone:
            self.add("TYPE_REMOVED", f"type {name}", f"type {name} removed")
        for name in came:
            self.add("TYPE_ADDED", f"type {name}", f"type {name} added")
        for name in kept:
            a, b = old[name], new[name]
            where = f"type {name}"
            if _codes(a) != _codes(b) or a.klass != b.klass:
                self.add("TYPEDEF_ENCODINGS", where, _encodings_change(a, b), BOTH)
            else:
                renamed = _encodings_renamed(a, b)
                if renamed:
                    self.add("TYPEDEF_ENCODING_RENAMED", where, renamed)
            if a.source != b.source and self._wire_of(a.source, self.old) != self._wire_of(
                b.source, self.new
            ):
                self.add("TYPEDEF_SOURCE", where, f"{a.source} -> {b.source}", BOTH)
            if meaning(a.descriptor) != meaning(b.descriptor):
                self.add("TYPEDEF_DESCRIPTOR", where, f"{_desc(a)} -> {_desc(b)}", BOTH)
            respelled = self._choices(a, b, where)
            if set(a.provides) != set(b.provides):
                self.add(
                    "TYPEDEF_PROVIDES",
                    where,
                    f"{', '.join(a.provides) or 'none'} -> {', '.join(b.provides) or 'none'}",
                    BOTH,
                )
            if a.klass == b.klass == "composite" and not any(
                m.descriptor == b.descriptor for _, m in self.new.messages()
            ):
                # composites that are no frame body (sections, delivery states, terminus...)
                fa = tuple(f.as_field() for f in a.fields)
                fb = tuple(f.as_field() for f in b.fields)
                self._fields(fa, fb, where, "both", "", 1, (), (), list_encoded=True)
            prose = _typedef_prose(a, b, respelled)
            if prose:
                self.add("PROSE", where, prose)

    def _choices(self, a: TypeDef, b: TypeDef, where: str) -> list[str]:
        """The values a restricted type allows, compared by what they spell (`0x02` is `2`)
        and, for the same value, by name; returns the values written differently (prose)."""
        old_kind, new_kind = self._value_kind(a.name, self.old), self._value_kind(b.name, self.new)
        va = {spelled_value(c.value, old_kind): c for c in a.choices}
        vb = {spelled_value(c.value, new_kind): c for c in b.choices}
        gone = [va[v].value for v in va if v not in vb]
        came = [vb[v].value for v in vb if v not in va]
        if gone or came:
            pairing = OLD_TO_NEW if gone and not came else NEW_TO_OLD if came else NONE
            if gone and came:
                pairing = BOTH
            said = ", ".join([*(f"-{v}" for v in gone), *(f"+{v}" for v in came)])
            self.add("TYPEDEF_CHOICES", where, said, pairing)
        kept = [v for v in vb if v in va]
        renamed = [
            f"{vb[v].value}: {va[v].name} -> {vb[v].name}" for v in kept if va[v].name != vb[v].name
        ]
        if renamed:
            self.add("TYPEDEF_CHOICE_RENAMED", where, ", ".join(renamed))
        return [
            f"{vb[v].name} {va[v].value} -> {vb[v].value}"
            for v in kept
            if _written(va[v].value) != _written(vb[v].value)
        ]

    def _value_kind(self, name: str, protocol: Protocol) -> ValueKind:
        """What a self-describing type's values are written as: text for a variable-width
        primitive (a string, symbol or binary), else a number or a truth value."""
        seen: set[str] = set()
        by_name = self._typedefs_of(protocol)
        while name in by_name and name not in seen:
            seen.add(name)
            t = by_name[name]
            if t.klass == "primitive":
                fixed = all(e.category == "fixed" for e in t.encodings)
                return "any" if fixed else "text"
            name = t.source
        return "any"

    def _default(self, f: Field, protocol: Protocol) -> SpelledValue:
        """What a field's default means: a restricted type's choice named by its value, the
        number or truth value its text spells (`4294967295u`, `0xFFFFFFFF`), text as written."""
        t, value = f.type, f.default
        kind: ValueKind = "any"
        match t:
            case Typed():
                by_name = self._typedefs_of(protocol)
                name, seen = t.name, set()
                while isinstance(value, str) and name in by_name and name not in seen:
                    seen.add(name)
                    choice = next(
                        (c for c in by_name[name].choices if c.name == value.strip()), None
                    )
                    if choice is not None:
                        value = choice.value
                        break
                    name = by_name[name].source
                kind = self._value_kind(t.name, protocol)
            case Prim():
                kind = _VALUE_KINDS.get(protocol.type(t.name).kind, "any")
            case BitField():
                kind = "bool" if t.bits == 1 else "number"
            case (
                Ref()
                | Array()
                | Map()
                | Struct()
                | Switch()
                | Choice()
                | Blob()
                | Bits()
                | Presence()
                | Alternatives()
            ):
                pass  # "any": a default's text alone says what it is
            case _:
                assert_never(t)
        return spelled_value(value, kind)

    def _wire_of(self, name: str, protocol: Protocol) -> tuple[object, ...]:
        """What a self-describing type is on the wire: a primitive's encodings, a described
        type's descriptor, or the archetypes an any-type field requires."""
        seen: set[str] = set()
        by_name = self._typedefs_of(protocol)
        while name in by_name and name not in seen:
            seen.add(name)
            t = by_name[name]
            if t.descriptor is not None:
                return ("described", t.descriptor.code, t.klass)
            if t.klass == "primitive":
                return ("primitive", _codes(t))
            name = t.source
        return ("any", name)

    def _typedefs_of(self, protocol: Protocol) -> dict[str, TypeDef]:
        """`protocol`'s self-describing types by name, built once per side."""
        found = self.typedef_index.get(id(protocol))
        if found is None:
            found = self.typedef_index[id(protocol)] = {t.name: t for t in protocol.typedefs}
        return found

    def _types(self) -> None:
        old, new, gone, came, kept = _by_name(self.old.types, self.new.types)
        for name in gone:
            self.add("TYPE_REMOVED", f"type {name}", f"type {name} removed")
        for name in came:
            self.add("TYPE_ADDED", f"type {name}", f"type {name} added")
        for name in kept:
            a, b = old[name], new[name]
            if meaning(a) == meaning(b):
                words = [
                    w
                    for w, x, y in (("description", a.doc, b.doc), ("label", a.label, b.label))
                    if x != y
                ]
                if words:
                    self.add("PROSE", f"type {name}", f"{_listed(words)} changed")
                continue
            if _same_but_sign(a, b):
                self.add("TYPE_SIGNEDNESS", f"type {name}", _describe_sign(a, b))
            else:
                self.add("TYPE_CHANGED", f"type {name}", _type_diff(a, b), BOTH)

    def _enums(self) -> None:
        old, new, gone, came, kept = _by_name(self.old.enums, self.new.enums)
        for name in gone:
            self.add("ENUM_REMOVED", f"enum {name}", f"enum {name} removed")
        for name in came:
            values = ", ".join(f"{v.name} {v.value}" for v in new[name].values)
            self.add("ENUM_ADDED", f"enum {name}", f"enum {name} added: {values}")
        for name in kept:
            self._enum(old[name], new[name])

    def _enum(self, a: Enum, b: Enum) -> None:
        where = f"enum {a.name}"
        by_name_a = {v.name: v for v in a.values}
        by_name_b = {v.name: v for v in b.values}
        by_value_a = {v.value: v for v in a.values}
        by_value_b = {v.value: v for v in b.values}
        moved = [
            (n, by_name_a[n].value, by_name_b[n].value)
            for n in by_name_a.keys() & by_name_b.keys()
            if by_name_a[n].value != by_name_b[n].value
        ]
        moved.sort(key=lambda m: m[1])
        if moved:
            deltas = {new - old for _, old, new in moved}
            how = (
                f"every one of {len(moved)} values moved by {deltas.pop():+d}"
                if len(deltas) == 1 and len(moved) > 2
                else ", ".join(f"{n} {o}->{v}" for n, o, v in moved)
            )
            self.add("ENUM_VALUE_RENUMBERED", where, how, BOTH, old_span=a.span, new_span=b.span)
        moved_names = {n for n, _, _ in moved}
        for v in b.values:
            if v.name in by_name_a or v.name in moved_names:
                continue
            if v.value in by_value_a and by_value_a[v.value].name not in by_name_b:
                self.add(
                    "ENUM_VALUE_RENAMED",
                    where,
                    f"{v.value}: {by_value_a[v.value].name} -> {v.name}",
                )
            else:
                self.add("ENUM_VALUE_ADDED", where, f"{v.name} = {v.value} added")
        for v in a.values:
            if v.name in by_name_b:
                continue
            if v.value in by_value_b and by_value_b[v.value].name not in by_name_a:
                continue  # reported as a rename above
            self.add("ENUM_VALUE_REMOVED", where, f"{v.name} = {v.value} removed", BOTH)
        if a.doc != b.doc:
            self.add("PROSE", where, "description changed")

    def _constants(self) -> None:
        old, new, gone, came, kept = _by_name(self.old.constants, self.new.constants)
        for name in gone:
            self.add("CONSTANT_REMOVED", f"constant {name}", f"{name} = {old[name].value} removed")
        for name in came:
            self.add("CONSTANT_ADDED", f"constant {name}", f"{name} = {new[name].value} added")
        for name in kept:
            if old[name].value != new[name].value:
                self.add(
                    "CONSTANT_CHANGED",
                    f"constant {name}",
                    f"{name}: {old[name].value} -> {new[name].value}",
                    BOTH,
                )

    # ---- commands

    def _commands(self) -> None:
        old = list(self.old.commands)
        new = list(self.new.commands)
        pairs: list[tuple[Command | None, Command | None]] = []
        new_by_name = {c.name.lower(): c for c in new}
        matched_new: set[str] = set()
        unmatched_old = []
        for c in old:
            other = new_by_name.get(c.name.lower())
            if other is not None:
                pairs.append((c, other))
                matched_new.add(other.name)
            else:
                unmatched_old.append(c)
        rest_new = [c for c in new if c.name not in matched_new]
        for c in unmatched_old:
            other = next((n for n in rest_new if n.ident == c.ident), None)
            if other is not None:
                rest_new.remove(other)
            pairs.append((c, other))
        pairs.extend((None, c) for c in rest_new)
        order = {c.name: i for i, c in enumerate(new)}
        pairs.sort(key=lambda p: order.get(p[1].name, -1) if p[1] else len(order))
        flag_old, flag_new = self.old.frame.response_flag, self.new.frame.response_flag
        for a, b in pairs:
            self.pairs.append(CommandPair(a, b))
            if a is None:
                assert b is not None
                self.add(
                    "COMMAND_ADDED",
                    b.name,
                    f"{b.name} added, key {_key(b.ident)}, sent by {_side(b.sender)}",
                    command=b.name,
                    new_span=b.span,
                )
                continue
            if b is None:
                self.add(
                    "COMMAND_REMOVED",
                    a.name,
                    f"{a.name} removed (key {_key(a.ident)})",
                    OLD_TO_NEW,
                    a.sender,
                    command=a.name,
                    old_span=a.span,
                )
                continue
            self._command(a, b, flag_old, flag_new)

    def _command(self, a: Command, b: Command, flag_old: int | None, flag_new: int | None) -> None:
        where = b.name
        spans: dict[str, Any] = {"command": b.name, "old_span": a.span, "new_span": b.span}
        if a.name != b.name:
            self.add("COMMAND_RENAMED", where, f"{a.name} -> {b.name}", **spans)
        if a.ident != b.ident:
            self.add(
                "COMMAND_REKEYED",
                where,
                f"key {_key(a.ident)} -> {_key(b.ident)}",
                BOTH,
                **spans,
            )
        if a.sender != b.sender:
            self.add(
                "COMMAND_SENDER",
                where,
                f"sent by {_side(a.sender)} -> {_side(b.sender)}",
                **spans,
                breaks=_sender_breaks(a.sender, b.sender),
            )
        if a.expects_response != b.expects_response:
            said = {True: "expects a response", False: "expects none"}
            self.add(
                "COMMAND_RESPONSE",
                where,
                f"{said[a.expects_response]} -> {said[b.expects_response]}",
                BOTH,
                **spans,
            )
        if a.doc != b.doc:
            self.add("PROSE", where, "command description changed", **spans)
        for ma, mb in _message_pairs(a, b):
            kind = (mb or ma).kind  # type: ignore[union-attr]
            sender = _writer(b if mb else a, kind)
            if ma is None:
                assert mb is not None
                self.add(
                    "MESSAGE_ADDED",
                    f"{where} / {mb.name}",
                    f"{mb.name} ({kind}) added",
                    NEW_TO_OLD,
                    sender,
                    command=b.name,
                    message=mb.name,
                    new_span=mb.span,
                )
            elif mb is None:
                self.add(
                    "MESSAGE_REMOVED",
                    f"{where} / {ma.name}",
                    f"{ma.name} ({kind}) removed",
                    OLD_TO_NEW,
                    sender,
                    command=b.name,
                    message=ma.name,
                    old_span=ma.span,
                )
            else:
                self.current = mb.name
                try:
                    self._message(a, b, ma, mb, sender, flag_old, flag_new)
                finally:
                    self.current = None

    def _message(
        self,
        ca: Command,
        cb: Command,
        a: Message,
        b: Message,
        sender: str,
        flag_old: int | None,
        flag_new: int | None,
    ) -> None:
        where = f"{cb.name} / {b.name}"
        extra: dict[str, Any] = {"command": cb.name, "old_span": a.span, "new_span": b.span}
        if a.name != b.name:
            self.add("MESSAGE_RENAMED", where, f"{a.name} -> {b.name}", **extra)
        if a.ident != b.ident and not _explained(ca, cb, a, b, flag_old, flag_new):
            self.add(
                "MESSAGE_REKEYED",
                where,
                f"key {_key(a.ident)} -> {_key(b.ident)}",
                BOTH,
                **extra,
            )
        if a.doc != b.doc:
            self.add("PROSE", where, "message description changed", **extra)
        va = _versions(a)
        vb = _versions(b)
        for v in sorted(vb - va):
            added = _layout(b.fields_at(v))
            base = max((w for w in vb if w < v), default=None)
            since = ""
            if base is not None:
                before = {p for p, _ in walk_fields(b.fields_at(base))}
                new_fields = [p for p, _ in walk_fields(b.fields_at(v)) if p not in before]
                since = f"; new against v{base}: {', '.join(new_fields) or 'types only'}"
            self.add(
                "VERSION_ADDED",
                f"{where} v{v}",
                f"version {v} added ({added}){since}",
                command=cb.name,
                version=v,
                new_span=b.span,
            )
        for v in sorted(va - vb):
            self.add(
                "VERSION_REMOVED",
                f"{where} v{v}",
                f"version {v} removed",
                BOTH,
                sender,
                command=cb.name,
                version=v,
                old_span=a.span,
            )
        for v in sorted(va & vb):
            label = f"{where} v{v}" if len(va | vb) > 1 else where
            self._fields(
                a.fields_at(v),
                b.fields_at(v),
                label,
                sender,
                cb.name,
                v,
                (),
                (),
                list_encoded=a.descriptor is not None and b.descriptor is not None,
            )

    # ---- fields

    def _fields(
        self,
        old: tuple[Field, ...],
        new: tuple[Field, ...],
        where: str,
        sender: str,
        command: str,
        version: int,
        old_prefix: tuple[str, ...],
        new_prefix: tuple[str, ...],
        list_encoded: bool = False,
    ) -> None:
        ctx: dict[str, Any] = {"command": command, "version": version}
        old_names = [f.name for f in old]
        new_names = [f.name for f in new]
        pairs: list[tuple[Field, Field]] = []
        removed = [f for f in old if f.name not in new_names]
        added = [f for f in new if f.name not in old_names]
        # a field gone and one come at the same position with the same layout: a rename
        for f in list(removed):
            i = old.index(f)
            twin = next(
                (g for g in added if new.index(g) == i and meaning(g.type) == meaning(f.type)),
                None,
            )
            if twin is not None:
                removed.remove(f)
                added.remove(twin)
                pairs.append((f, twin))
                self.add(
                    "FIELD_RENAMED",
                    _at(where, new_prefix, twin.name),
                    f"{f.name} -> {twin.name}",
                    old_path=(*old_prefix, f.name),
                    new_path=(*new_prefix, twin.name),
                    old_span=f.span,
                    new_span=twin.span,
                    **ctx,
                )
        for f in removed:
            self.add(
                "FIELD_REMOVED",
                _at(where, old_prefix, f.name),
                f"{f.name} ({_type_name(f.type)}) removed",
                BOTH,
                sender,
                old_path=(*old_prefix, f.name),
                old_span=f.span,
                **ctx,
            )
        trailing = [g for g in added if all(h in added for h in new[new.index(g) :])]
        for g in added:
            i = new.index(g)
            after = f" after {new[i - 1].name}" if i else " first"
            may_be_absent = g.present is not None or (list_encoded and g.nullable)
            if g in trailing and may_be_absent:
                self.add(
                    "FIELD_ADDED_TRAILING",
                    _at(where, new_prefix, g.name),
                    f"{g.name} ({_type_name(g.type)}) added last{after}",
                    NEW_TO_OLD,
                    sender,
                    new_path=(*new_prefix, g.name),
                    new_span=g.span,
                    **ctx,
                )
                continue
            self.add(
                "FIELD_ADDED",
                _at(where, new_prefix, g.name),
                f"{g.name} ({_type_name(g.type)}) added{after}",
                BOTH,
                sender,
                new_path=(*new_prefix, g.name),
                new_span=g.span,
                **ctx,
            )
        common = [n for n in old_names if n in new_names]
        if common != [n for n in new_names if n in old_names]:
            self.add(
                "FIELD_REORDERED",
                where,
                f"{', '.join(common)} -> {', '.join(n for n in new_names if n in old_names)}",
                BOTH,
                sender,
                old_path=old_prefix,
                new_path=new_prefix,
                **ctx,
            )
        pairs.extend((f, new[new_names.index(f.name)]) for f in old if f.name in new_names)
        for f, g in pairs:
            self._field(f, g, where, sender, command, version, old_prefix, new_prefix)

    def _field(
        self,
        f: Field,
        g: Field,
        where: str,
        sender: str,
        command: str,
        version: int,
        old_prefix: tuple[str, ...],
        new_prefix: tuple[str, ...],
    ) -> None:
        old_path, new_path = (*old_prefix, f.name), (*new_prefix, g.name)
        here = _at(where, new_prefix, g.name)
        ctx: dict[str, Any] = {
            "command": command,
            "version": version,
            "old_path": old_path,
            "new_path": new_path,
            "old_span": f.span,
            "new_span": g.span,
        }
        self._type(f.type, g.type, where, here, sender, ctx, old_path, new_path)
        if f.nullable != g.nullable:
            rule, pairing = (
                ("FIELD_NULLABLE", NEW_TO_OLD) if g.nullable else ("FIELD_NOT_NULLABLE", OLD_TO_NEW)
            )
            said = "may be null" if g.nullable else "may no longer be null"
            self.add(rule, here, f"{g.name} {said}", pairing, sender, **ctx)
        if f.optional != g.optional:
            rule, pairing = (
                ("FIELD_OPTIONAL", NEW_TO_OLD) if g.optional else ("FIELD_REQUIRED", OLD_TO_NEW)
            )
            said = "may be left out" if g.optional else "must be present"
            self.add(rule, here, f"{g.name} {said}", pairing, sender, **ctx)
        if f.max_length != g.max_length:
            longer_new = g.max_length is None or (
                f.max_length is not None and g.max_length > f.max_length
            )
            self.add(
                "FIELD_MAX_LENGTH",
                here,
                f"at most {f.max_length or 'any'} -> {g.max_length or 'any'} characters",
                NEW_TO_OLD if longer_new else OLD_TO_NEW,
                sender,
                **ctx,
            )
        if f.enum != g.enum:
            self.add("FIELD_ENUM", here, f"values named by {f.enum} -> {g.enum}", **ctx)
        if f.multiple != g.multiple:
            said = "one value or an array" if g.multiple else "one value only"
            self.add("FIELD_MULTIPLE", here, f"{g.name}: {said}", BOTH, sender, **ctx)
        # defaults compare by value: `4294967295`, `4294967295u` and `0xFFFFFFFF` are one
        # number, a choice's name its value; another spelling of the same value is prose
        same_default = self._default(f, self.old) == self._default(g, self.new)
        if not same_default and (g.nullable or g.optional or g.present is not None):
            # only where the field may be absent does its default reach a reader; elsewhere
            # it is what a constructor fills in, and every field is on the wire
            old_said, new_said = _written(f.default), _written(g.default)
            if old_said == new_said:  # the same word, standing for another value
                old_said += f" ({_written(self._default(f, self.old))})"
                new_said += f" ({_written(self._default(g, self.new))})"
            self.add(
                "FIELD_DEFAULT",
                here,
                f"default {old_said} -> {new_said}",
                BOTH,
                sender,
                **ctx,
            )
        if f.doc != g.doc:
            self.add("PROSE", here, "field description changed", **ctx)
        if same_default and _written(f.default) != _written(g.default):
            said = (
                f"default written {_written(f.default)} -> {_written(g.default)} (the same value)"
            )
            self.add("PROSE", here, said, **ctx)

    def _type(
        self,
        a: TypeRef,
        b: TypeRef,
        where: str,
        here: str,
        sender: str,
        ctx: dict[str, Any],
        old_path: tuple[str, ...],
        new_path: tuple[str, ...],
    ) -> None:
        if isinstance(a, Typed) and isinstance(b, Typed):
            wa, wb = self._wire_of(a.name, self.old), self._wire_of(b.name, self.new)
            if wa != wb or set(a.requires) != set(b.requires):
                self.add(
                    "FIELD_TYPE", here, f"{_type_name(a)} -> {_type_name(b)}", BOTH, sender, **ctx
                )
            return
        if isinstance(a, Struct) and isinstance(b, Struct):
            if (a.size_prefix, a.ident) != (b.size_prefix, b.ident):
                self.add(
                    "STRUCT_FRAMING",
                    here,
                    f"size {a.size_prefix or 'none'} code {_key(a.ident) if a.ident else 'none'}"
                    f" -> size {b.size_prefix or 'none'} code {_key(b.ident) if b.ident else 'none'}",
                    BOTH,
                    sender,
                    **ctx,
                )
        members = _members(a, b)
        if members is not None:
            command, version = str(ctx["command"]), int(str(ctx["version"]))
            self._fields(*members, where, sender, command, version, old_path, new_path)
            return
        if isinstance(a, Array) and isinstance(b, Array):
            if (a.count_prefix, a.count_field, a.size_field, a.size_prefix) != (
                b.count_prefix,
                b.count_field,
                b.size_field,
                b.size_prefix,
            ):
                self.add(
                    "FIELD_LENGTH_PREFIX",
                    here,
                    f"array count {_count(a)} -> {_count(b)}",
                    BOTH,
                    sender,
                    **ctx,
                )
            self._type(a.item, b.item, where, here, sender, ctx, old_path, new_path)
            return
        if isinstance(a, Array) != isinstance(b, Array):
            self.add(
                "FIELD_ARRAY",
                here,
                f"{_type_name(a)} -> {_type_name(b)}",
                BOTH,
                sender,
                **ctx,
            )
            return
        if isinstance(a, Prim) and isinstance(b, Prim):
            self._scalar(a, b, here, "FIELD", sender, ctx)
            return
        if isinstance(a, BitField) and isinstance(b, BitField):
            if a.bits != b.bits:
                self.add(
                    "FIELD_WIDTH", here, f"{a.bits} bits -> {b.bits} bits", BOTH, sender, **ctx
                )
            elif a.value != b.value:
                self.add(
                    "FIELD_TYPE", here, f"fixed value {a.value} -> {b.value}", BOTH, sender, **ctx
                )
            return
        if meaning(a) != meaning(b):
            self.add(
                "FIELD_TYPE",
                here,
                f"{_type_name(a)} -> {_type_name(b)}",
                BOTH,
                sender,
                **ctx,
            )

    def _scalar(
        self, a: TypeRef, b: TypeRef, here: str, prefix: str, sender: str, ctx: dict[str, Any]
    ) -> None:
        if not (isinstance(a, Prim) and isinstance(b, Prim)):
            if meaning(a) != meaning(b):
                self.add(
                    f"{prefix}_WIDTH",
                    here,
                    f"{_type_name(a)} -> {_type_name(b)}",
                    BOTH,
                    sender,
                    **ctx,
                )
            return
        ta, tb = self.old.type(a.name), self.new.type(b.name)
        if a.name == b.name and meaning(ta) == meaning(tb):
            return
        summary = f"{a.name} -> {b.name}"
        if ta.kind == "int" and tb.kind == "int":
            if ta.width != tb.width:
                grow = "widened" if tb.width > ta.width else "narrowed"
                self.add(f"{prefix}_WIDTH", here, f"{summary} ({grow})", BOTH, sender, **ctx)
            elif ta.signed != tb.signed:
                rule = "FRAME_FIELD_SIGNEDNESS" if prefix == "FRAME_FIELD" else "FIELD_SIGNEDNESS"
                self.add(rule, here, f"{summary} (same width, signedness)", NONE, sender, **ctx)
            return
        if prefix == "FIELD" and ta.kind == tb.kind and ta.kind in ("string", "bytes"):
            if ta.length_prefix != tb.length_prefix:
                self.add(
                    "FIELD_LENGTH_PREFIX",
                    here,
                    f"{summary} (length prefix {ta.length_prefix} -> {tb.length_prefix})",
                    BOTH,
                    sender,
                    **ctx,
                )
                return
            if meaning(_unnamed(ta)) == meaning(_unnamed(tb)):
                return  # the same format under another name
        self.add(
            f"{prefix}_WIDTH" if prefix == "FRAME_FIELD" else "FIELD_TYPE",
            here,
            summary,
            BOTH,
            sender,
            **ctx,
        )


# --------------------------------------------------------------------------------------------
# Helpers


def _by_name(
    old_items: Iterable[Named], new_items: Iterable[Named]
) -> tuple[dict[str, Named], dict[str, Named], list[str], list[str], list[str]]:
    """Both sides by name, and the names only the old side has, only the new, and both."""
    old = {x.name: x for x in old_items}
    new = {x.name: x for x in new_items}
    return (
        old,
        new,
        sorted(old.keys() - new.keys()),
        sorted(new.keys() - old.keys()),
        sorted(old.keys() & new.keys()),
    )


def _members(a: TypeRef, b: TypeRef) -> tuple[tuple[Field, ...], tuple[Field, ...]] | None:
    """The fields to compare one by one inside two types: a structure's, or (packed flags of
    the same container) a bit field's."""
    if isinstance(a, Struct) and isinstance(b, Struct):
        return a.fields, b.fields
    if isinstance(a, Bits) and isinstance(b, Bits) and (a.width, a.order) == (b.width, b.order):
        return a.members, b.members
    return None


def _deployments(pairing: Pairing, sender: str) -> tuple[str, ...]:
    """Which deployments a message change breaks, given who writes the message."""
    old_to_new, new_to_old = pairing
    out: set[str] = set()
    if sender in ("client", "both"):
        # the client writes: old client -> new server is old writer -> new reader
        if old_to_new:
            out.add(OLD_CLIENT)
        if new_to_old:
            out.add(NEW_CLIENT)
    if sender in ("server", "both"):
        if old_to_new:
            out.add(NEW_CLIENT)
        if new_to_old:
            out.add(OLD_CLIENT)
    return tuple(d for d in (OLD_CLIENT, NEW_CLIENT) if d in out)


def _sender_breaks(old: str, new: str) -> tuple[str, ...]:
    """A command's senders changed. Roles swapped: the peers wait for each other, both ways.
    A side that starts sending it meets old peers that do not expect it (a new server talking
    to an old client); a side that stops sending it is refused by new peers (an old server
    talking to a new client)."""
    was, now = _senders(old), _senders(new)
    if not was & now:
        return (OLD_CLIENT, NEW_CLIENT)
    out = set()
    if "server" in now - was or "client" in was - now:
        out.add(OLD_CLIENT)
    if "client" in now - was or "server" in was - now:
        out.add(NEW_CLIENT)
    return tuple(d for d in (OLD_CLIENT, NEW_CLIENT) if d in out)


def _senders(direction: str) -> set[str]:
    return {"client", "server"} if direction == "both" else {direction}


def _message_pairs(a: Command, b: Command) -> list[tuple[Message | None, Message | None]]:
    """Both sides' messages matched by kind; a request that became one-way (or back) is the
    same frame, so a lone sending message on each side pairs whatever its kind."""
    sends_a = [m for m in a.messages if m.kind != "response"]
    sends_b = [m for m in b.messages if m.kind != "response"]
    pairs: list[tuple[Message | None, Message | None]]
    if len(sends_a) == len(sends_b) == 1:
        pairs = [(sends_a[0], sends_b[0])]
    else:
        pairs = [(a.message(k), b.message(k)) for k in ("request", "oneway")]
    pairs.append((a.message("response"), b.message("response")))
    return [(x, y) for x, y in pairs if x is not None or y is not None]


def _writer(command: Command, kind: str) -> str:
    if kind != "response" or command.sender == "both":
        return command.sender
    return "server" if command.sender == "client" else "client"


def _explained(
    ca: Command, cb: Command, a: Message, b: Message, flag_old: int | None, flag_new: int | None
) -> bool:
    """A message's key change that its command's re-keying or the response flag accounts for
    (reported once there, not once per message)."""
    if len(a.ident) != 1 or len(b.ident) != 1 or len(ca.ident) != 1 or len(cb.ident) != 1:
        return False
    strip_old = a.ident[0] & ~(flag_old or 0)
    strip_new = b.ident[0] & ~(flag_new or 0)
    return strip_old == ca.ident[0] and strip_new == cb.ident[0]


def _versions(m: Message) -> set[int]:
    """The versions a message has; an open range ends at the last version any field names."""
    high = m.versions.high
    if high is None:
        bounds = [m.versions.low]
        for _, f in walk_fields(m.fields):
            bounds.append(f.versions.low)
            if f.versions.high is not None:
                bounds.append(f.versions.high + 1)  # the version after a field's last
        high = max(bounds)
    return set(range(m.versions.low, high + 1))


def _flag(flag: int | None) -> str:
    return "none" if flag is None else f"{flag:#06x}"


def _at(where: str, prefix: tuple[str, ...], name: str) -> str:
    return f"{where} / {'.'.join((*prefix, name))}"


def _type_name(t: TypeRef) -> str:
    match t:
        case Prim():
            return t.name
        case Array():
            return f"[{_type_name(t.item)}]"
        case Struct():
            return t.name
        case Typed():
            return t.name if t.name != "*" else f"any {'/'.join(t.requires)}"
        case Ref():
            return t.name
        case (
            Map() | Switch() | Choice() | Blob() | Bits() | BitField() | Presence() | Alternatives()
        ):
            return type(t).__name__.lower()  # "switch", "bitfield": the kind's name
        case _:
            assert_never(t)


def _encodings(t: TypeDef) -> str:
    return " ".join(f"{e.code:#04x}" for e in t.encodings) or t.klass


def _codes(t: TypeDef) -> tuple[tuple[int, str, int], ...]:
    """A type's encodings as the wire knows them: format code, category and width, in code
    order (which one the spec lists first is no byte of any value)."""
    return tuple(sorted((e.code, e.category, e.width) for e in t.encodings))


def _encodings_change(a: TypeDef, b: TypeDef) -> str:
    """Both sides' format codes, and what differs between them."""
    said = f"{_encodings(a)} -> {_encodings(b)}"
    if a.klass != b.klass:
        return f"{a.klass} -> {b.klass}" + (f" ({said})" if a.encodings or b.encodings else "")
    old = {e.code: e for e in a.encodings}
    new = {e.code: e for e in b.encodings}
    parts = [f"-{c:#04x}" for c in old if c not in new]
    parts += [f"+{c:#04x}" for c in new if c not in old]
    parts += [
        f"{c:#04x} {old[c].category} width {old[c].width} -> {new[c].category} width {new[c].width}"
        for c in new
        if c in old and (old[c].category, old[c].width) != (new[c].category, new[c].width)
    ]
    return f"{said} ({', '.join(parts)})" if parts else said


def _encodings_renamed(a: TypeDef, b: TypeDef) -> str:
    """The encodings (same code, category and width) whose names differ."""
    new = {e.code: e for e in b.encodings}
    return ", ".join(
        f"{e.code:#04x}: {e.name or '(plain)'} -> {new[e.code].name or '(plain)'}"
        for e in a.encodings
        if e.name != new[e.code].name
    )


def _typedef_prose(a: TypeDef, b: TypeDef, respelled: list[str]) -> str:
    """What differs in a type's words: its doc, its label, its encodings' labels, its
    choices' docs, and values written another way."""
    parts = []
    if a.doc != b.doc:
        parts.append("description")
    if a.label != b.label:
        parts.append("label")
    new = {e.code: e.label for e in b.encodings}
    if any(e.label != new.get(e.code, e.label) for e in a.encodings):
        parts.append("encoding labels")
    docs = {c.name: c.doc for c in b.choices}
    if any(c.doc != docs.get(c.name, c.doc) for c in a.choices):
        parts.append("choice descriptions")
    said = f"{_listed(parts)} changed" if parts else ""
    if respelled:
        written = f"values written {', '.join(respelled)} (the same values)"
        said = f"{said}; {written}" if said else written
    return said


def _listed(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


# what a primitive's values are written as, for comparing defaults by value
_VALUE_KINDS: dict[str, ValueKind] = {
    "int": "number",
    "float": "number",
    "decimal": "number",
    "timestamp": "number",
    "bool": "bool",
    "string": "text",
    "bytes": "text",
}


def _written(value: object) -> str:
    """A value as the spec writes it: text as is, a truth value as `true`/`false`; a spelled
    value (`spelled_value`) as what it spells."""
    if isinstance(value, tuple):
        value = value[1]
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _desc(t: TypeDef) -> str:
    return "none" if t.descriptor is None else f"{t.descriptor.name} ({_key((t.descriptor.code,))})"


def _layout(fields: tuple[Field, ...]) -> str:
    return " ".join(f"{f.name} {_type_name(f.type)}" for f in fields)


def _count(a: Array) -> str:
    return a.count_prefix or a.size_prefix or a.count_field or a.size_field or "rest of frame"


def _unnamed(t: PrimitiveType) -> PrimitiveType:
    return replace(t, name="")


def _same_but_sign(a: PrimitiveType, b: PrimitiveType) -> bool:
    return a.kind == b.kind == "int" and a.width == b.width and a.signed != b.signed


def _describe_sign(a: PrimitiveType, b: PrimitiveType) -> str:
    return f"{'signed' if a.signed else 'unsigned'} -> {'signed' if b.signed else 'unsigned'}"


def _type_diff(a: PrimitiveType, b: PrimitiveType) -> str:
    parts = []
    for attr in ("kind", "width", "signed", "length_prefix", "null_length", "encoding", "errors"):
        x, y = getattr(a, attr), getattr(b, attr)
        if x != y:
            parts.append(f"{attr} {x!r} -> {y!r}")
    if a.code != b.code:  # the type's code where values carry their type (0-10's maps)
        parts.append(f"code {_hex(a.code)} -> {_hex(b.code)}")
    return ", ".join(parts)


def _hex(code: int | None) -> str:
    return "none" if code is None else f"{code:#04x}"


def _side(sender: str) -> str:
    return "both sides" if sender == "both" else f"the {sender}"
