"""A whole protocol version as the IR holds it, and its dialogue grammars."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import assert_never

from specgen.abnf_ast import Rule
from specgen.ir.errors import IRError
from specgen.ir.nodes import (
    BUILTIN,
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
    FrameLayout,
    Map,
    Message,
    NamedType,
    Presence,
    Prim,
    PrimitiveType,
    Ref,
    Struct,
    Switch,
    Typed,
    TypeDef,
    TypeRef,
    _check_typedefs,
    _types_in,
    walk_fields,
    walk_type,
)
from specgen.ir.rules import SpecRule
from specgen.spans import SourceSpan


@dataclass(frozen=True, slots=True)
class Dialogue:
    """A dialogue grammar: the command sequences a spec allows, as ABNF over steps (`C:OPEN`,
    `S:OPEN-OK`), e.g. one AMQP 0-9-1 class's `<doc type="grammar">`. The rules are kept as
    written; `specgen.dialogue` states what they mean and compiles them."""

    name: str  # the class, e.g. "connection"
    rules: tuple[Rule, ...]
    start: str  # the rule a conversation is, e.g. "connection"
    span: SourceSpan | None = None
    doc: str = ""  # the grammar text as the spec writes it

    def __post_init__(self) -> None:
        if not any(r.name.lower() == self.start.lower() for r in self.rules):
            raise IRError(f"{self.span}: dialogue {self.name} has no rule {self.start}")


@dataclass(frozen=True, slots=True)
class Protocol:
    name: str  # "rabbitmq-stream"
    version: str  # the spec document's version label, e.g. "4.0"
    source: str  # the spec file, relative path
    types: tuple[PrimitiveType, ...]
    frame: FrameLayout
    enums: tuple[Enum, ...]
    constants: tuple[Constant, ...]
    commands: tuple[Command, ...]
    overlays: tuple[str, ...] = ()  # ids of the overlay entries applied, in order
    named: tuple[NamedType, ...] = ()
    # a self-describing type system (AMQP 1.0): every value carries its own constructor
    typedefs: tuple[TypeDef, ...] = ()
    dialogues: tuple[Dialogue, ...] = ()  # the spec's dialogue grammars, one per class
    # names the spec gives types, each for its `type` (AMQP 0-10's domains): fields hold the
    # type itself, so these are for readers of the code and the tools, not the wire
    aliases: tuple[NamedType, ...] = ()
    # what the spec says values and senders must be (`specgen.ir.rules`); no codec reads them
    rules: tuple[SpecRule, ...] = ()

    def __post_init__(self) -> None:
        _check_typedefs(self.typedefs)
        self._check_rules()
        idents: dict[tuple[int, ...], str] = {}
        for c in self.commands:
            if c.ident in idents:
                raise IRError(f"{c.span}: ident {c.ident} of {c.name} is {idents[c.ident]}'s too")
            idents[c.ident] = c.name
        known = {t.name for t in self.types} | set(BUILTIN)
        names = {n.name for n in self.named}
        names |= {f"typed:{t.name}" for t in self.typedefs} | {"typed:*"}
        for n in self.named:
            for _, f in walk_type(n.type, n.name):
                self._check_field(f, known, names)
        seen: set[str] = set()
        for a in self.aliases:
            if a.name in seen:
                raise IRError(f"{a.span}: alias {a.name} is defined twice")
            seen.add(a.name)
            self._check_field(Field("Alias", a.type, span=a.span), known, names)
        for c in self.commands:
            for m in c.messages:
                for _, f in walk_fields(m.fields):
                    self._check_field(f, known, names)
                if m.follows is not None and m.follows.layout not in (None, *names):
                    raise IRError(f"{m.span}: {m.name}: no named type {m.follows.layout!r}")
                for name in (*([m.result] if m.result else []), *m.content_header):
                    if name not in names:
                        raise IRError(f"{m.span}: {m.name}: no named type {name!r}")

    def _check_rules(self) -> None:
        """Every rule's owner and field, and the field it compares with, exist."""
        if not self.rules:
            return
        for r in self.rules:
            for address, what in ((r.address, "applies to"), (r.other, "compares with")):
                if address and not self.has_address(address):
                    raise IRError(f"{r.span}: a {r.kind} rule {what} {address}: no such field")

    def has_address(self, address: str) -> bool:
        """Whether `KIND:NAME[.FIELD...]` (as rules address owners and fields) names a node."""
        return self.split_address(address) is not None

    def split_address(self, address: str) -> tuple[str, str | None] | None:
        """An address as (owner, field path or None), or None when it names nothing: names
        may hold dots (AMQP 0-10's `session.header`), so every owner is tried."""
        if address in ("", "frame"):
            return address, None
        if address.startswith("frame."):
            names = {f.name for f in (*self.frame.header, *self.frame.trailer)}
            field = address[len("frame.") :]
            return ("frame", field) if field in names else None
        kind, _, path = address.partition(":")
        for owner, paths in self._owners(kind):
            if path == owner:
                return f"{kind}:{owner}", None
            if path.startswith(f"{owner}.") and path[len(owner) + 1 :] in paths:
                return f"{kind}:{owner}", path[len(owner) + 1 :]
        return None

    def _owners(self, kind: str) -> Iterator[tuple[str, set[str]]]:
        """The nodes of one owner kind, each with the field paths inside it."""
        if kind == "message":
            for _, m in self.messages():
                yield m.name, {p for p, _ in walk_fields(m.fields)}
        elif kind == "named":
            for n in self.named:
                yield n.name, {p for p, _ in walk_type(n.type, "")}
        elif kind == "typedef":
            for t in self.typedefs:
                yield t.name, {f.name for f in t.fields}

    def _check_field(self, f: Field, known: set[str], names: set[str]) -> None:
        for t in _types_in(f.type):
            match t:
                case Prim():
                    if t.name not in known:
                        raise IRError(
                            f"{f.span}: {f.name}: type {t.name!r} is not defined by the spec"
                        )
                case Ref():
                    if t.name not in names:
                        raise IRError(f"{f.span}: {f.name}: no named type {t.name!r}")
                case Typed():
                    if f"typed:{t.name}" not in names:
                        raise IRError(f"{f.span}: {f.name}: no self-describing type {t.name!r}")
                case (
                    Array()
                    | Map()
                    | Struct()
                    | Switch()
                    | Choice()
                    | Blob()
                    | Bits()
                    | BitField()
                    | Presence()
                    | Alternatives()
                ):
                    pass  # names nothing (the types inside it come next)
                case _:
                    assert_never(t)
        if f.nullable and not self.can_be_null(f.type):
            raise IRError(f"{f.span}: {f.name}: its type has no way to say null on the wire")

    def can_be_null(self, t: TypeRef) -> bool:
        """Whether the wire format of `t` can say null (a length that means null, a void)."""
        match t:
            case Prim():
                p = self.type(t.name)
                return p.null_length is not None or p.kind == "void"
            case Ref():
                return self.can_be_null(self.named_type(t.name))
            case Choice():
                return any(c.type is not None and self.can_be_null(c.type) for c in t.cases)
            case Typed():
                return True  # a self-describing value may be the null constructor
            case (
                Array()
                | Map()
                | Struct()
                | Switch()
                | Blob()
                | Bits()
                | BitField()
                | Presence()
                | Alternatives()
            ):
                return False
            case _:
                assert_never(t)

    def type(self, name: str) -> PrimitiveType:
        if name in BUILTIN:
            return BUILTIN[name]
        for t in self.types:
            if t.name == name:
                return t
        raise IRError(f"{self.source}: type {name!r} is not defined by the spec")

    def named_type(self, name: str) -> TypeRef:
        for n in self.named:
            if n.name == name:
                return n.type
        raise IRError(f"{self.source}: no named type {name!r}")

    def command(self, name: str) -> Command:
        for c in self.commands:
            if c.name == name:
                return c
        raise IRError(f"{self.source}: no command {name!r}")

    def enum(self, name: str) -> Enum | None:
        return next((e for e in self.enums if e.name == name), None)

    def messages(self) -> Iterator[tuple[Command, Message]]:
        for c in self.commands:
            for m in c.messages:
                yield c, m
