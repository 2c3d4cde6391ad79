"""The intermediate representation every front-end produces and every emitter reads.

It says what the bytes mean and nothing about how a spec spelled them (Kaitai's idea) and carries
versions as data (Kafka's). Every node is frozen, validates itself on construction, keeps a
`SourceSpan` into the spec it came from, and round-trips through canonical JSON (`dump`/`load`).

Types are a small closed algebra, enough for the three spec families on the roadmap:
    Prim        fixed-width integers, length-prefixed `string` and `bytes`, `bits` containers
    Array       repeated item; count from a length prefix or from an earlier field
    Struct      named inline structure (Kafka's inline struct)
    Switch      layout chosen by an earlier field or by the top bits of the next byte
    Blob        raw bytes whose length an earlier field gives, optionally holding `Records`
    BitField    an unsigned integer inside the enclosing `bits` container
    Alternatives  what a spec says when it lists layouts without saying how to choose
                  (`uint64 (for offset) | int64 (for timestamp)`); never reaches an emitter
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import MISSING, dataclass, field, fields, replace
from typing import Any, Literal

IR_FORMAT = 1


class IRError(ValueError):
    """An IR node broke an invariant; the message names the node, the rule and the spec line."""


# --------------------------------------------------------------------------------------------
# Positions and versions


@dataclass(frozen=True, slots=True)
class SourceSpan:
    file: str  # path relative to the project root, never absolute
    line: int
    column: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"

    @classmethod
    def parse(cls, text: str) -> SourceSpan:
        file, line, column = text.rsplit(":", 2)
        return cls(file, int(line), int(column))


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive version range, Kafka style: `1+`, `2`, `1-3`."""

    low: int
    high: int | None = None  # None: open-ended

    def __post_init__(self) -> None:
        if self.low < 0 or (self.high is not None and self.high < self.low):
            raise IRError(f"bad version range {self.low}-{self.high}")

    def __contains__(self, version: object) -> bool:
        return (
            isinstance(version, int)
            and version >= self.low
            and (self.high is None or version <= self.high)
        )

    def __str__(self) -> str:
        if self.high is None:
            return f"{self.low}+"
        return str(self.low) if self.low == self.high else f"{self.low}-{self.high}"

    @classmethod
    def parse(cls, text: str) -> Versions:
        m = re.fullmatch(r"(\d+)(\+|-(\d+))?", text)
        if not m:
            raise IRError(f"bad version range {text!r}")
        low = int(m.group(1))
        if m.group(2) == "+":
            return cls(low, None)
        return cls(low, int(m.group(3)) if m.group(3) else low)


ALL_VERSIONS = Versions(1, None)

# --------------------------------------------------------------------------------------------
# Primitive types

IntName = Literal[
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint24", "uint32", "uint64"
]
INT_WIDTHS: dict[str, tuple[int, bool]] = {
    "int8": (1, True),
    "int16": (2, True),
    "int32": (4, True),
    "int64": (8, True),
    "uint8": (1, False),
    "uint16": (2, False),
    "uint24": (3, False),
    "uint32": (4, False),
    "uint64": (8, False),
}


@dataclass(frozen=True, slots=True)
class PrimitiveType:
    """A primitive as a spec's types section defines it."""

    name: str
    kind: Literal["int", "string", "bytes"]
    width: int = 0  # bytes, for "int"
    signed: bool = False
    length_prefix: str = ""  # for string/bytes: the integer type of the length
    null_length: int | None = None  # length value that means null, e.g. -1
    encoding: str = ""  # for string
    doc: str = ""
    span: SourceSpan | None = None

    def __post_init__(self) -> None:
        if self.kind == "int" and self.width not in (1, 2, 3, 4, 8):
            raise IRError(f"{self.name}: integer width {self.width} is not 1, 2, 3, 4 or 8")
        if self.kind != "int" and self.length_prefix not in INT_WIDTHS:
            raise IRError(f"{self.name}: length prefix {self.length_prefix!r} is not an integer")


# --------------------------------------------------------------------------------------------
# Field types


@dataclass(frozen=True, slots=True)
class Prim:
    name: str  # int8 .. uint64, string, bytes


@dataclass(frozen=True, slots=True)
class Array:
    item: TypeRef
    count_prefix: str | None = "int32"  # integer type of the element count on the wire
    count_field: str | None = None  # or: the earlier sibling field holding the count
    size_field: str | None = None  # the items fill exactly this many bytes (sibling field)

    def __post_init__(self) -> None:
        if (self.count_prefix is None) == (self.count_field is None):
            raise IRError("an array has exactly one of count_prefix and count_field")


@dataclass(frozen=True, slots=True)
class Struct:
    name: str
    fields: tuple[Field, ...]

    def __post_init__(self) -> None:
        _check_unique(self.name, self.fields)


@dataclass(frozen=True, slots=True)
class Case:
    values: tuple[int, ...]  # discriminator values selecting this case
    type: TypeRef | None = None  # None: nothing more on the wire
    label: str = ""


@dataclass(frozen=True, slots=True)
class Switch:
    """A layout chosen by a value read earlier (`on`) or by the next byte's top bits (`peek_bits`).

    As a field's type its value is the chosen case's value (None for an empty case); as an array
    item (`peek_bits`) it is a tagged union of the cases' structures.
    """

    cases: tuple[Case, ...]
    on: str | None = None  # sibling field name
    peek_bits: int = 0  # or: top N bits of the next byte, not consumed

    def __post_init__(self) -> None:
        if (self.on is None) == (self.peek_bits == 0):
            raise IRError("a switch has exactly one of on and peek_bits")
        seen: set[int] = set()
        for case in self.cases:
            dup = seen.intersection(case.values)
            if dup:
                raise IRError(f"switch value {sorted(dup)[0]} selects two cases")
            seen.update(case.values)


COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")
"""Compression algorithms a generated codec knows by name (gzip from the standard library, the
others from the `compression` extra): gzip, snappy (framing format), lz4 (frame format), zstd."""


@dataclass(frozen=True, slots=True)
class Records:
    """What a blob's bytes hold: `count_field` records, each a big-endian `item_prefix` length and
    that many bytes, the whole compressed with the algorithm the `compression_field` value names."""

    count_field: str  # sibling field: how many records
    item_prefix: str  # integer type of each record's length
    compression_field: str | None = None  # sibling field selecting the algorithm
    codecs: tuple[tuple[int, str], ...] = ()  # compression_field value -> algorithm
    size_field: str | None = None  # sibling field: the records' length once decompressed

    def __post_init__(self) -> None:
        if self.item_prefix not in INT_WIDTHS:
            raise IRError(f"record length prefix {self.item_prefix!r} is not an integer")
        if (self.compression_field is None) != (not self.codecs):
            raise IRError("records name a compression field exactly when they list codecs")
        for value, name in self.codecs:
            if name not in COMPRESSIONS:
                raise IRError(f"compression {value}: {name!r} is not one of {COMPRESSIONS}")


@dataclass(frozen=True, slots=True)
class Blob:
    length_field: str  # sibling field holding the length in bytes
    records: Records | None = None  # what the bytes hold, when the spec says


@dataclass(frozen=True, slots=True)
class Checksum:
    """A field whose value is a checksum of the bytes of a later sibling field."""

    algorithm: Literal["crc32"]
    over: str  # the sibling field whose bytes are summed

    def __post_init__(self) -> None:
        if self.algorithm != "crc32":
            raise IRError(f"checksum algorithm {self.algorithm!r} is not crc32")


@dataclass(frozen=True, slots=True)
class Bits:
    """A big-endian unsigned container split into BitField members (most significant first)."""

    width: int  # container width in bytes
    members: tuple[Field, ...]

    def __post_init__(self) -> None:
        total = 0
        for m in self.members:
            if not isinstance(m.type, BitField):
                raise IRError(f"{m.name}: a bits container holds only bit fields")
            total += m.type.bits
        if total != self.width * 8:
            raise IRError(f"bit fields add up to {total} bits, container has {self.width * 8}")


@dataclass(frozen=True, slots=True)
class BitField:
    bits: int
    value: int | None = None  # fixed value (a tag bit)


@dataclass(frozen=True, slots=True)
class Alternatives:
    options: tuple[tuple[str, str], ...]  # (type name, label) as the spec lists them


TypeRef = Prim | Array | Struct | Switch | Blob | Bits | BitField | Alternatives


# --------------------------------------------------------------------------------------------
# Fields, messages, commands


Role = Literal["", "correlation_id", "response_code"]


@dataclass(frozen=True, slots=True)
class Field:
    name: str  # the spec's word, e.g. "SubscriptionId"
    type: TypeRef
    versions: Versions = ALL_VERSIONS
    doc: str = ""
    span: SourceSpan | None = None
    nullable: bool = False
    max_length: int | None = None  # "max 256 characters"
    enum: str | None = None  # name of an Enum the values come from
    role: Role = ""
    # absent when the frame ends before it: a trailing field a peer leaves out (decoded as None)
    optional: bool = False
    checksum: Checksum | None = None  # decoders verify it (callers may opt out)

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", self.name):
            raise IRError(f"{self.span}: field name {self.name!r} is not a spec identifier")
        if self.nullable and not (isinstance(self.type, Prim) and self.type.name in NULLABLE):
            raise IRError(f"{self.span}: {self.name}: only string and bytes can be null")
        if self.nullable and self.optional:
            raise IRError(f"{self.span}: {self.name}: optional and nullable: None would mean both")
        if self.checksum and not (isinstance(self.type, Prim) and self.type.name in INT_WIDTHS):
            raise IRError(f"{self.span}: {self.name}: a checksum is an integer field")


NULLABLE = ("string", "bytes")

MessageKind = Literal["request", "response", "oneway"]
Direction = Literal["client", "server", "both"]


@dataclass(frozen=True, slots=True)
class Message:
    """One frame layout: a request, a response or a one-way message of a command."""

    name: str  # the spec's rule name, e.g. "DeclarePublisherRequest"
    kind: MessageKind
    key: int  # the key on the wire, response bit included
    versions: Versions
    fields: tuple[Field, ...]
    doc: str = ""
    span: SourceSpan | None = None
    # other keys peers put on the wire for this layout; decoders accept them, encoders write `key`
    decode_keys: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        _check_unique(self.name, self.fields)
        optional = [f.optional for f in self.fields]
        if any(optional) and not all(optional[optional.index(True) :]):
            raise IRError(f"{self.span}: {self.name}: only trailing fields can be optional")

    def fields_at(self, version: int) -> tuple[Field, ...]:
        return _project(self.fields, version)


@dataclass(frozen=True, slots=True)
class Command:
    name: str  # the spec's section name, e.g. "DeclarePublisher"
    key: int  # without the response bit
    sender: Direction  # who sends the request (or the one-way message)
    expects_response: bool
    messages: tuple[Message, ...]
    doc: str = ""
    span: SourceSpan | None = None

    def __post_init__(self) -> None:
        kinds = [m.kind for m in self.messages]
        if len(set(kinds)) != len(kinds):
            raise IRError(f"{self.span}: command {self.name} has two {kinds} messages")

    def message(self, kind: MessageKind) -> Message | None:
        return next((m for m in self.messages if m.kind == kind), None)


@dataclass(frozen=True, slots=True)
class EnumValue:
    name: str  # UPPER_SNAKE, derived from the spec's label
    value: int
    doc: str = ""


@dataclass(frozen=True, slots=True)
class Enum:
    name: str
    values: tuple[EnumValue, ...]
    doc: str = ""
    span: SourceSpan | None = None

    def __post_init__(self) -> None:
        names = [v.name for v in self.values]
        if len(set(names)) != len(names):
            raise IRError(f"{self.span}: enum {self.name} repeats a name")


@dataclass(frozen=True, slots=True)
class Constant:
    name: str
    value: int
    doc: str = ""
    span: SourceSpan | None = None


@dataclass(frozen=True, slots=True)
class FrameLayout:
    """What surrounds every message: `Size Key Version` and how responses are told apart."""

    size_type: str  # integer type of the size prefix (bytes after the prefix)
    key_type: str
    version_type: str
    response_flag: int | None  # bit set in the key of a response; None: same key both ways
    span: SourceSpan | None = None


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

    def __post_init__(self) -> None:
        keys: dict[int, str] = {}
        for c in self.commands:
            if c.key in keys:
                raise IRError(f"{c.span}: key {c.key:#06x} of {c.name} is {keys[c.key]}'s too")
            keys[c.key] = c.name
        for name in (self.frame.size_type, self.frame.key_type, self.frame.version_type):
            if name not in INT_WIDTHS:
                raise IRError(f"{self.frame.span}: frame field type {name!r} is not an integer")

    def type(self, name: str) -> PrimitiveType:
        for t in self.types:
            if t.name == name:
                return t
        raise IRError(f"{self.source}: type {name!r} is not defined by the spec")

    def command(self, name: str) -> Command:
        for c in self.commands:
            if c.name == name:
                return c
        raise IRError(f"{self.source}: no command {name!r}")

    def enum(self, name: str) -> Enum | None:
        return next((e for e in self.enums if e.name == name), None)


def _check_unique(owner: str, members: tuple[Field, ...]) -> None:
    seen: dict[str, Versions] = {}
    for f in members:
        prev = seen.get(f.name)
        if prev is not None and _overlap(prev, f.versions):
            raise IRError(f"{f.span}: {owner} defines {f.name} twice for the same versions")
        seen[f.name] = f.versions


def _overlap(a: Versions, b: Versions) -> bool:
    a_high = a.high if a.high is not None else 1 << 30
    b_high = b.high if b.high is not None else 1 << 30
    return a.low <= b_high and b.low <= a_high


def _project(members: tuple[Field, ...], version: int) -> tuple[Field, ...]:
    """The fields present at `version`, nested structures projected too."""
    out: list[Field] = []
    for f in members:
        if version in f.versions:
            out.append(replace(f, type=_project_type(f.type, version)))
    return tuple(out)


def _project_type(t: TypeRef, version: int) -> TypeRef:
    if isinstance(t, Struct):
        return Struct(t.name, _project(t.fields, version))
    if isinstance(t, Array):
        return replace(t, item=_project_type(t.item, version))
    if isinstance(t, Switch):
        return replace(
            t,
            cases=tuple(
                replace(c, type=None if c.type is None else _project_type(c.type, version))
                for c in t.cases
            ),
        )
    return t


def walk_fields(members: tuple[Field, ...], path: str = "") -> Iterator[tuple[str, Field]]:
    """Every field below `members`, with its dotted path."""
    for f in members:
        here = f"{path}.{f.name}" if path else f.name
        yield here, f
        yield from _walk_type(f.type, here)


def _walk_type(t: TypeRef, path: str) -> Iterator[tuple[str, Field]]:
    if isinstance(t, Struct):
        yield from walk_fields(t.fields, path)
    elif isinstance(t, Array):
        yield from _walk_type(t.item, path)
    elif isinstance(t, Switch):
        for c in t.cases:
            if c.type is not None:
                yield from _walk_type(c.type, path)
    elif isinstance(t, Bits):
        yield from walk_fields(t.members, path)


# --------------------------------------------------------------------------------------------
# Canonical JSON

_TYPE_TAGS: dict[str, type] = {
    "prim": Prim,
    "array": Array,
    "struct": Struct,
    "switch": Switch,
    "blob": Blob,
    "bits": Bits,
    "bitfield": BitField,
    "alternatives": Alternatives,
}
_TAG_OF = {cls: tag for tag, cls in _TYPE_TAGS.items()}


def to_data(node: Any) -> Any:
    """A node as plain JSON data; defaults are left out so the dump stays short and stable."""
    if isinstance(node, SourceSpan | Versions):
        return str(node)
    if isinstance(node, tuple):
        return [to_data(x) for x in node]
    if hasattr(node, "__dataclass_fields__"):
        out: dict[str, Any] = {}
        if type(node) in _TAG_OF:
            out["kind"] = _TAG_OF[type(node)]
        for f in fields(node):
            value = getattr(node, f.name)
            if f.default is not MISSING and value == f.default:
                continue
            out[f.name] = to_data(value)
        return out
    return node


def _from_data(cls: Any, data: Any) -> Any:
    kw: dict[str, Any] = {}
    for f in fields(cls):
        if f.name not in data:
            continue
        kw[f.name] = _decode_value(f.name, data[f.name])
    return cls(**kw)


_NODE_LISTS = {
    "types": PrimitiveType,
    "enums": Enum,
    "constants": Constant,
    "commands": Command,
    "messages": Message,
    "fields": Field,
    "members": Field,
    "cases": Case,
}


def _decode_value(name: str, value: Any) -> Any:
    if name == "span":
        return SourceSpan.parse(value)
    if name == "versions":
        return Versions.parse(value)
    if name == "frame":
        return _from_data(FrameLayout, value)
    if name == "records":
        return None if value is None else _from_data(Records, value)
    if name == "checksum":
        return None if value is None else _from_data(Checksum, value)
    if name == "codecs":
        return tuple((int(v), str(a)) for v, a in value)
    if name in ("type", "item"):
        return None if value is None else type_from_data(value)
    if name == "values" and value and isinstance(value[0], dict):
        return tuple(_from_data(EnumValue, v) for v in value)
    if name == "options":
        return tuple(tuple(o) for o in value)
    if name in _NODE_LISTS:
        return tuple(_from_data(_NODE_LISTS[name], v) for v in value)
    if isinstance(value, list):
        return tuple(value)
    return value


def type_from_data(data: dict[str, Any]) -> TypeRef:
    tag = data.get("kind")
    if tag not in _TYPE_TAGS:
        raise IRError(f"unknown type kind {tag!r}")
    body = {k: v for k, v in data.items() if k != "kind"}
    result: TypeRef = _from_data(_TYPE_TAGS[tag], body)
    return result


def field_from_data(data: dict[str, Any]) -> Field:
    result: Field = _from_data(Field, data)
    return result


def dump(protocol: Protocol) -> str:
    """Canonical JSON: sorted keys, two-space indent, spec order for lists, newline at the end."""
    data = to_data(protocol)
    data["ir_format"] = IR_FORMAT
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def load(text: str) -> Protocol:
    data = json.loads(text)
    if data.pop("ir_format", None) != IR_FORMAT:
        raise IRError(f"IR format is not {IR_FORMAT}")
    result: Protocol = _from_data(Protocol, data)
    return result


@dataclass(frozen=True, slots=True)
class Finding:
    """A contradiction or ambiguity in a spec, as `specgen lint` reports it."""

    span: SourceSpan
    code: str  # short stable id, e.g. "head-undefined"
    message: str
    resolution: str = ""

    def __str__(self) -> str:
        text = f"{self.span}: {self.code}: {self.message}"
        return f"{text} -> {self.resolution}" if self.resolution else text


@dataclass(slots=True)
class FindingLog:
    items: list[Finding] = field(default_factory=list)

    def add(self, span: SourceSpan, code: str, message: str, resolution: str = "") -> None:
        self.items.append(Finding(span, code, message, resolution))
