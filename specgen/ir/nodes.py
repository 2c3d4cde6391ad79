"""The IR's nodes: versions, primitive types, field types, fields, messages, commands, frame
layouts and self-describing types, each validating itself on construction."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Literal, assert_never

from specgen.ir.errors import IRError
from specgen.spans import SourceSpan

# --------------------------------------------------------------------------------------------
# Positions and versions


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


PrimKind = Literal["int", "float", "decimal", "timestamp", "bool", "string", "bytes", "void"]

_FIXED_WIDTHS: dict[str, tuple[int, ...]] = {
    "int": (1, 2, 3, 4, 8),
    "float": (4, 8),  # IEEE 754 binary32, binary64
    "decimal": (5, 9),  # a scale octet, then a signed 32- or 64-bit value
    "timestamp": (8,),  # seconds since the epoch, unsigned
    "bool": (0, 1),  # 0 or 1; 0 bytes: a flag whose presence bit is its value (AMQP 0-10 `bit`)
    "void": (0,),  # no bytes: the value None
}


@dataclass(frozen=True, slots=True)
class PrimitiveType:
    """A primitive as a spec defines it: what kind of value it is and how its bytes say it."""

    name: str
    kind: PrimKind
    width: int = 0  # bytes, for the fixed-width kinds
    signed: bool = False
    length_prefix: str = ""  # for string/bytes: the integer type of the length
    null_length: int | None = None  # length value that means null, e.g. -1
    encoding: str = ""  # for string: the text encoding ("utf-8", "latin-1", "utf-16-be")
    # for string: "strict" refuses bytes the encoding cannot read; "surrogateescape" keeps them
    # (a str that encodes back to the same bytes), for formats that call binary data a string
    errors: Literal["strict", "surrogateescape"] = "strict"
    doc: str = ""
    span: SourceSpan | None = None
    # the type's code where values carry their type (a self-describing map, list or array)
    code: int | None = None
    label: str = ""  # the spec's one-line title beside its doc ("8-bit signed integral value")

    def __post_init__(self) -> None:
        if self.kind == "bytes" and self.width and not self.length_prefix:
            pass  # `width` opaque octets, no length on the wire (a UUID, AMQP 0-10's bin40)
        elif self.kind in ("string", "bytes"):
            if self.length_prefix not in INT_WIDTHS:
                raise IRError(
                    f"{self.name}: length prefix {self.length_prefix!r} is not an integer"
                )
        elif self.kind not in _FIXED_WIDTHS:
            raise IRError(f"{self.name}: no primitive kind {self.kind!r}")
        elif self.width not in _FIXED_WIDTHS[self.kind]:
            raise IRError(
                f"{self.name}: a {self.kind} is {' or '.join(map(str, _FIXED_WIDTHS[self.kind]))}"
                f" bytes wide, not {self.width}"
            )

    @property
    def fixed(self) -> bool:
        """Whether every value takes `width` bytes."""
        return self.kind not in ("string", "bytes") or not self.length_prefix


BUILTIN: dict[str, PrimitiveType] = {
    name: PrimitiveType(name, "int", width, signed) for name, (width, signed) in INT_WIDTHS.items()
}
"""The integer primitives every protocol has, by the names the IR uses for them."""


# --------------------------------------------------------------------------------------------
# Field types


@dataclass(frozen=True, slots=True)
class Prim:
    name: str  # a BUILTIN integer or a name in Protocol.types


@dataclass(frozen=True, slots=True)
class Ref:
    """A named type of `Protocol.named`; recursion goes through these."""

    name: str


@dataclass(frozen=True, slots=True)
class Array:
    item: TypeRef
    count_prefix: str | None = "int32"  # integer type of the element count on the wire
    count_field: str | None = None  # or: the earlier sibling field holding the count
    size_field: str | None = None  # the items fill exactly this many bytes (sibling field)
    size_prefix: str | None = None  # or: a prefix of this integer type says it (no count)

    def __post_init__(self) -> None:
        counted = (self.count_prefix is not None) + (self.count_field is not None)
        if counted > 1 or (counted == 0) != (self.size_prefix is not None):
            raise IRError(
                "an array has exactly one of count_prefix, count_field and (alone) size_prefix"
            )
        if self.size_prefix is not None and self.size_prefix not in INT_WIDTHS:
            raise IRError(f"array size prefix {self.size_prefix!r} is not an integer")


@dataclass(frozen=True, slots=True)
class Map:
    """Key/value pairs, one after the other, filling the bytes a `size_prefix` gives."""

    key: TypeRef
    value: TypeRef
    size_prefix: str = "uint32"

    def __post_init__(self) -> None:
        if self.size_prefix not in INT_WIDTHS:
            raise IRError(f"map size prefix {self.size_prefix!r} is not an integer")


@dataclass(frozen=True, slots=True)
class Struct:
    """Fields in order. A `size_prefix` (an integer type) says how many octets the struct's
    encoding takes, before it; a coded struct's `ident` (its class code and code, one octet each)
    follows the size, so a reader can tell which struct it holds."""

    name: str
    fields: tuple[Field, ...]
    size_prefix: str | None = None
    ident: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        _check_unique(self.name, self.fields)
        if self.size_prefix is not None and self.size_prefix not in INT_WIDTHS:
            raise IRError(f"struct {self.name}: size prefix {self.size_prefix!r} is no integer")


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


@dataclass(frozen=True, slots=True)
class Choice:
    """An encoding chosen by a constructor read from the wire (and consumed), each case giving
    the layout that follows it. Decoders keep the constructor they saw, so a decoded value
    encodes back to its own bytes; a value made afresh takes the first case in `prefer` (then
    in case order) whose Python type holds it."""

    constructor: str  # integer type of the constructor
    cases: tuple[Case, ...]
    prefer: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.constructor not in INT_WIDTHS:
            raise IRError(f"constructor type {self.constructor!r} is not an integer")
        seen: set[int] = set()
        for case in self.cases:
            if len(case.values) != 1:
                raise IRError(f"constructor case {case.label!r} needs exactly one value")
            if case.values[0] in seen:
                raise IRError(f"constructor {case.values[0]} selects two cases")
            seen.add(case.values[0])
        if not set(self.prefer) <= seen:
            raise IRError(f"preferred constructors {sorted(set(self.prefer) - seen)} have no case")


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
    length_field: str | None  # sibling field holding the length; None: the rest of the frame
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
    """A big-endian unsigned container split into BitField members, taken from its most
    significant bit down (`msb`) or from its least significant bit up (`lsb`, as AMQP packs
    consecutive bit fields into octets). Members fill the container: unused bits are spelled
    as fixed zero members."""

    width: int  # container width in bytes
    members: tuple[Field, ...]
    order: Literal["msb", "lsb"] = "msb"

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
    value: int | None = None  # fixed value (a tag bit, an unused bit)
    boolean: bool = False  # a one-bit flag, True or False in code


@dataclass(frozen=True, slots=True)
class Presence:
    """Flag words saying which later fields are present: `width`-byte words, each field's flag
    taken from the most significant bit down (`msb`, AMQP 0-9-1's property flags) or from the
    least significant bit up (`lsb`, AMQP 0-10's packing flags, whose words are little-endian
    octets: flag 8 is bit 0 of the second octet); while a word's `continuation` bit is set another
    word follows (None: one word, all bits flags). A field names its flag with `Field.present`.
    The words are worked out on encode from which fields are None, so they are no attribute."""

    width: int
    continuation: int | None = 0  # bit number (0: least significant) that says "more words"
    order: Literal["msb", "lsb"] = "msb"

    def __post_init__(self) -> None:
        if self.width not in (1, 2, 4, 8):
            raise IRError(f"flag words of {self.width} bytes")

    @property
    def per_word(self) -> int:
        return self.width * 8 - (self.continuation is not None)

    def flag(self, index: int) -> tuple[int, int]:
        """(word, bit mask) of the index-th flag."""
        word, at = divmod(index, self.per_word)
        if self.order == "lsb":
            return word, 1 << at
        return word, 1 << (self.width * 8 - 1 - at)


@dataclass(frozen=True, slots=True)
class Alternatives:
    options: tuple[tuple[str, str], ...]  # (type name, label) as the spec lists them


@dataclass(frozen=True, slots=True)
class Typed:
    """A self-describing value: a constructor (a format code, or a descriptor and the value it
    describes) saying how the bytes after it are encoded, drawn from the `Protocol.typedefs`
    entry `name`: one of that primitive's encodings, that composite's described list, or a
    restricted type's source. `name` "*" takes any described type providing one of `requires`
    (the constructor's descriptor chooses); with a type named, `requires` narrows its values."""

    name: str
    requires: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.name == "*" and not self.requires:
            raise IRError(f"a value of any type names the archetypes it requires ({self.name})")


TypeRef = (
    (Prim | Ref | Array | Map | Struct | Switch | Choice | Blob | Bits | BitField | Presence)
    | Alternatives
    | Typed
)
"""Every kind of field type: the one union code dispatching on a type's kind takes. Such code
`match`es with one `case` per kind (or several kinds in one arm) and ends in
`case _: assert_never(t)`, so mypy names the code that misses a kind added here."""


@dataclass(frozen=True, slots=True)
class NamedType:
    """A type a spec names and uses in several places, possibly from inside itself."""

    name: str
    type: TypeRef
    doc: str = ""
    span: SourceSpan | None = None
    label: str = ""  # the spec's one-line title beside its doc


# --------------------------------------------------------------------------------------------
# Fields, messages, commands


Role = Literal["", "correlation_id", "response_code", "channel"]
"""What a field means to tools beyond its codec: the decode pipeline gives each role used by a
protocol one column (requests matched to responses, error codes, channels)."""


@dataclass(frozen=True, slots=True)
class Field:
    name: str  # the spec's word, e.g. "SubscriptionId"
    type: TypeRef
    versions: Versions = ALL_VERSIONS
    doc: str = ""
    span: SourceSpan | None = None
    nullable: bool = False  # the format can say null (checked against the type by Protocol)
    max_length: int | None = None  # "max 256 characters"
    enum: str | None = None  # name of an Enum the values come from
    role: Role = ""
    # absent when the frame ends before it: a trailing field a peer leaves out (decoded as None)
    optional: bool = False
    checksum: Checksum | None = None  # decoders verify it (callers may opt out)
    present: tuple[str, int] | None = None  # on the wire when flag N of that Presence field is set
    default: int | str | bool | None = None  # the spec's default value, for constructors
    multiple: bool = False  # one value, or an array of them (a self-describing field)
    # the spec says a writer includes it (a flagged field's flag set); readers still accept
    # a peer's message without it, so this documents, it does not reject
    required: bool = False
    spec_name: str = ""  # the name as the spec writes it ("max-frame-size")

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", self.name):
            raise IRError(f"{self.span}: field name {self.name!r} is not a spec identifier")
        if self.nullable and self.optional:
            raise IRError(f"{self.span}: {self.name}: optional and nullable: None would mean both")
        if self.required and self.optional:
            raise IRError(f"{self.span}: {self.name}: required and optional")
        if self.present and (self.nullable or self.optional):
            raise IRError(f"{self.span}: {self.name}: a flagged field is None when absent")
        if self.checksum and not (isinstance(self.type, Prim) and self.type.name in INT_WIDTHS):
            raise IRError(f"{self.span}: {self.name}: a checksum is an integer field")


MessageKind = Literal["request", "response", "oneway"]
Direction = Literal["client", "server", "both"]


@dataclass(frozen=True, slots=True)
class Follows:
    """Raw octets that follow a message's frame on the stream, outside any framing: as many as
    the message's integer field `count` says (AMQ RFC 006: after HANDLE SEND, `fragment-size`
    octets of message data). When the boolean field `unless` (a bit member may be named) is
    set, nothing follows (the data travels out of band). `layout` names the `Protocol.named`
    structure such data starts with when the spec says it may (the message head). When the
    boolean field `more` is set, further octets of the same message follow the next such frame
    (RFC 006's `partial`: "The intermediate commands have 'partial' set to 1"); so the octets
    after a frame of a direction's first such message, or after one whose `more` was clear,
    start a message, with `layout`."""

    count: str
    unless: str | None = None
    layout: str | None = None
    doc: str = ""
    more: str | None = None


@dataclass(frozen=True, slots=True)
class Message:
    """One frame layout: a request, a response or a one-way message of a command."""

    name: str  # the spec's rule name, e.g. "DeclarePublisherRequest"
    kind: MessageKind
    ident: tuple[int, ...]  # the values of FrameLayout.dispatch (and body keys) on the wire
    versions: Versions
    fields: tuple[Field, ...]
    doc: str = ""
    span: SourceSpan | None = None
    # other identities peers put on the wire for this layout; decoders accept them, encoders
    # write `ident`
    decode_idents: tuple[tuple[int, ...], ...] = ()
    replies: tuple[str, ...] = ()  # names of the messages that may answer this one
    synchronous: bool = False  # the sender waits for a reply before sending more
    content: bool = False  # content frames (a header, then bodies) follow this message
    sender: Direction | None = None  # who sends it, when the spec says per message
    follows: Follows | None = None  # raw octets after the frame, outside any framing
    # a described value: this descriptor, then the fields as a self-describing list (each field
    # a `Typed` value); trailing absent fields are left off and the list's own width (0, 1 or
    # 4 octets of size and count) is the smallest that holds the rest
    descriptor: Descriptor | None = None
    result: str | None = None  # the `Protocol.named` structure the peer's result for it carries
    # the `Protocol.named` structures its content's header may carry, each identified by its
    # own `Struct.ident` (AMQP 0-10: a header segment of coded structs)
    content_header: tuple[str, ...] = ()
    spec_name: str = ""  # the name as the spec writes it ("connection.start-ok")

    def __post_init__(self) -> None:
        _check_unique(self.name, self.fields)
        optional = [f.optional for f in self.fields]
        if any(optional) and not all(optional[optional.index(True) :]):
            raise IRError(f"{self.span}: {self.name}: only trailing fields can be optional")
        flags = {f.name for f in self.fields if isinstance(f.type, Presence)}
        for f in self.fields:
            if f.present and f.present[0] not in flags:
                raise IRError(f"{f.span}: {f.name}: flag word {f.present[0]!r} is not a field")
        if self.follows is not None:
            _check_follows(self)
        if len(set(self.content_header)) != len(self.content_header):
            raise IRError(f"{self.span}: {self.name}: its content header names a structure twice")

    def fields_at(self, version: int) -> tuple[Field, ...]:
        return _project(self.fields, version)


@dataclass(frozen=True, slots=True)
class Command:
    name: str  # the spec's name, e.g. "DeclarePublisher" or "Basic.Get"
    ident: tuple[int, ...]  # what identifies it in its spec: a key, or (class id, method id)
    sender: Direction  # who sends the request (or the one-way message)
    messages: tuple[Message, ...]
    doc: str = ""
    span: SourceSpan | None = None

    def __post_init__(self) -> None:
        kinds = [m.kind for m in self.messages]
        if len(set(kinds)) != len(kinds):
            raise IRError(f"{self.span}: command {self.name} has two {kinds} messages")

    def message(self, kind: MessageKind) -> Message | None:
        return next((m for m in self.messages if m.kind == kind), None)

    @property
    def expects_response(self) -> bool:
        return any(m.replies for m in self.messages)


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
    hex: bool = False  # the spec writes the values in hexadecimal
    over: str = ""  # the type whose values these are, when the spec names one (a restricted type)
    spec_name: str = ""  # the name as the spec writes it ("message.accept-mode")

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
    group: str = ""  # the spec's class of the constant, e.g. "hard-error"


@dataclass(frozen=True, slots=True)
class Preamble:
    """Bytes a direction starts with that are no frame (a protocol header)."""

    sender: Literal["client", "server", "both"]
    data: bytes
    doc: str = ""


@dataclass(frozen=True, slots=True)
class BodyKey:
    """Leading body fields that extend a message's identity when the header's dispatch values
    are `when` (AMQP's class and method ids after frame type 1)."""

    when: tuple[int, ...]
    fields: tuple[Field, ...]


@dataclass(frozen=True, slots=True)
class LengthEscape:
    """A length-field value that is no length: a wider integer follows the field and holds the
    length, counted as the field counts (AMQ RFC 006: a 2-octet size, or 0xFFFF then a 4-octet
    size). Lengths below `value` take the short form and the others the wide one, so every
    frame has exactly one encoding."""

    value: int
    wide: str  # integer type of the wider length


@dataclass(frozen=True, slots=True)
class FrameLayout:
    """What surrounds every message, as data.

    `header` fields come first; `length` names the one holding the frame's length, which
    counts the bytes after itself (`after`) or the body's bytes between header and trailer
    (`body`). The `trailer` (fixed-value fields) closes every frame. A message is found by the
    values of the `dispatch` header fields, extended by `body_keys` read at the start of the
    body; `version` names a header field matched against a message's version range. Header
    fields that are none of these (a channel) travel with every message as attributes.
    """

    header: tuple[Field, ...]
    length: str
    length_counts: Literal["after", "body", "frame"]  # "frame": the whole frame, itself included
    dispatch: tuple[str, ...]
    version: str | None = None
    trailer: tuple[Field, ...] = ()
    body_keys: tuple[BodyKey, ...] = ()
    preambles: tuple[Preamble, ...] = ()
    response_flag: int | None = None  # bit set in the first dispatch field of a response
    span: SourceSpan | None = None
    # byte strings either peer may send where a frame could start, each a message of its own:
    # AMQP 1.0's protocol headers, which open the connection and again follow the SASL layer
    protocol_headers: tuple[Preamble, ...] = ()
    length_escape: LengthEscape | None = None  # the length field may say "a wider one follows"
    # the header field giving the header's own size in 4-octet words: octets past the fields
    # above are an extended header, before the body (AMQP 1.0's doff)
    header_words: str | None = None
    segments: Segments | None = None  # frames carry parts of segments, which make up messages

    def __post_init__(self) -> None:
        names = [f.name for f in self.header]
        if self.header_words is not None and self.header_words not in names:
            raise IRError(f"{self.span}: frame field {self.header_words!r} is not in the header")
        if self.segments is not None and self.segments.flags not in names:
            raise IRError(f"{self.span}: frame field {self.segments.flags!r} is not in the header")
        if self.length_escape is not None:
            short = next((f for f in self.header if f.name == self.length), None)
            wide = self.length_escape.wide
            if short is not None and isinstance(short.type, Prim) and wide in INT_WIDTHS:
                width = INT_WIDTHS.get(short.type.name, (0, False))[0]
                if INT_WIDTHS[wide][0] <= width:
                    raise IRError(f"{self.span}: escaped length {wide} is no wider than the field")
                if not 0 < self.length_escape.value < 1 << (8 * width):
                    raise IRError(f"{self.span}: length escape does not fit the length field")
            else:
                raise IRError(f"{self.span}: a length escape needs integer length fields")
        for name in (self.length, *self.dispatch, *([self.version] if self.version else [])):
            if name not in names:
                raise IRError(f"{self.span}: frame field {name!r} is not in the header")
        for f in (*self.header, *self.trailer, *(k for b in self.body_keys for k in b.fields)):
            if not (isinstance(f.type, Prim) and f.type.name in INT_WIDTHS):
                raise IRError(f"{self.span}: frame field {f.name} is not an integer")
        for f in self.trailer:
            if not isinstance(f.default, int):
                raise IRError(f"{self.span}: trailer field {f.name} needs its fixed value")

    @property
    def carried(self) -> tuple[Field, ...]:
        """Header fields every message carries as an attribute (not length, dispatch, version)."""
        fixed = {self.length, *self.dispatch, self.version}
        return tuple(f for f in self.header if f.name not in fixed)

    def body_key(self, ident: tuple[int, ...]) -> BodyKey | None:
        return next((b for b in self.body_keys if ident[: len(b.when)] == b.when), None)


@dataclass(frozen=True, slots=True)
class Segments:
    """A segment layer: each frame carries part of a segment, the segment's type is the frame's
    dispatch value, and bits of the header field `flags` mark a frame as its segment's first or
    last, and the segment as its message's first or last (AMQP 0-10: a command's segment, then
    a header segment, then body segments)."""

    flags: str
    first_segment: int
    last_segment: int
    first_frame: int
    last_frame: int
    doc: str = ""


# --------------------------------------------------------------------------------------------
# Self-describing types (AMQP 1.0, Part 1): a value's bytes start with a constructor saying
# how it is encoded, so one value has several legal encodings and a field may hold any type
# that provides the archetype it requires.

EncodingCategory = Literal["fixed", "variable", "compound", "array"]


@dataclass(frozen=True, slots=True)
class Encoding:
    """One way a primitive is written: its format code and what follows it. `width` is the
    value's bytes for a fixed encoding, else the bytes of the size (and count) prefix."""

    code: int
    category: EncodingCategory
    width: int
    name: str = ""  # "smalluint"; "" for the type's plain encoding
    label: str = ""
    span: SourceSpan | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.code <= 0xFF or self.code == 0:
            raise IRError(f"{self.span}: format code {self.code:#x} is not one octet above 0")
        if self.category == "fixed" and self.width not in (0, 1, 2, 4, 8, 16):
            raise IRError(f"{self.span}: a fixed encoding of {self.width} bytes")
        if self.category != "fixed" and self.width not in (1, 4):
            raise IRError(f"{self.span}: a {self.category} encoding with a {self.width}-byte size")


@dataclass(frozen=True, slots=True)
class Descriptor:
    """What a described value is: a symbolic name and a numeric code (domain << 32 | id)."""

    name: str
    code: int


@dataclass(frozen=True, slots=True)
class TypeChoice:
    """A value a restricted type allows: text as its type's values are written, a number or a
    boolean in one spelling whatever the spec's ("2" for "0x02" or "2u"; "false")."""

    name: str
    value: str
    doc: str = ""


@dataclass(frozen=True, slots=True)
class CompositeField:
    """A field of a composite type, by the spec's names: its value is encoded with its own
    constructor as one item of the composite's list."""

    name: str  # "max-frame-size"
    type: str  # a TypeDef name, or "*": any type providing `requires`
    mandatory: bool = False
    multiple: bool = False  # an array of the type (or, briefly, one value alone)
    default: int | bool | str | None = None  # its value (a number, a boolean), or a choice's name
    requires: tuple[str, ...] = ()  # archetypes the value must provide
    label: str = ""
    doc: str = ""
    span: SourceSpan | None = None

    def as_field(self) -> Field:
        """This field as a message's field: a self-describing value, null when not mandatory."""
        return Field(
            field_name(self.name),
            Typed(self.type, self.requires),
            doc=self.doc or self.label,
            span=self.span,
            nullable=not self.mandatory,
            multiple=self.multiple,
            default=self.default,
        )


def field_name(name: str) -> str:
    """A spec's name as a field's: `consumer-tag` -> `ConsumerTag`, `reserved-1` -> `Reserved1`."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[-\s_]+", name) if part)


TypeClass = Literal["primitive", "composite", "restricted"]


@dataclass(frozen=True, slots=True)
class TypeDef:
    """A type of a self-describing type system.

    primitive   its `encodings`
    composite   a described list: `descriptor`, then `fields` in order
    restricted  the values of `source` (a type name, or "*"), limited to `choices` when listed;
                with a `descriptor` it is a described value of its own (a message section)
    """

    name: str
    klass: TypeClass
    source: str = ""
    encodings: tuple[Encoding, ...] = ()
    descriptor: Descriptor | None = None
    fields: tuple[CompositeField, ...] = ()
    choices: tuple[TypeChoice, ...] = ()
    provides: tuple[str, ...] = ()  # archetypes
    section: str = ""  # the document's section ("performatives", "delivery-state")
    document: str = ""  # the file of a multi-file spec that defines it
    label: str = ""
    doc: str = ""
    span: SourceSpan | None = None

    def __post_init__(self) -> None:
        if self.klass == "primitive" and not self.encodings:
            raise IRError(f"{self.span}: primitive {self.name} has no encoding")
        if self.klass != "primitive" and self.encodings:
            raise IRError(f"{self.span}: only primitives have encodings ({self.name})")
        if self.klass == "composite" and self.descriptor is None:
            raise IRError(f"{self.span}: composite {self.name} has no descriptor")
        if self.klass == "restricted" and not self.source:
            raise IRError(f"{self.span}: restricted {self.name} names no source type")
        names = [f.name for f in self.fields]
        if len(set(names)) != len(names):
            raise IRError(f"{self.span}: {self.name} repeats a field name")


def _check_typedefs(typedefs: tuple[TypeDef, ...]) -> None:
    """Names unique, every type named exists, every format code and descriptor used once."""
    if not typedefs:
        return
    by_name: dict[str, TypeDef] = {}
    for t in typedefs:
        if t.name in by_name:
            raise IRError(f"{t.span}: type {t.name} is defined twice")
        by_name[t.name] = t
    codes: dict[int, str] = {}
    descriptors: dict[int, str] = {}
    for t in typedefs:
        for e in t.encodings:
            if e.code in codes:
                raise IRError(f"{e.span}: format code {e.code:#04x} is {codes[e.code]}'s too")
            codes[e.code] = t.name
        if t.descriptor is not None:
            if t.descriptor.code in descriptors:
                raise IRError(
                    f"{t.span}: descriptor {t.descriptor.code:#x} is "
                    f"{descriptors[t.descriptor.code]}'s too"
                )
            descriptors[t.descriptor.code] = t.name
        if t.klass == "restricted" and t.source != "*" and t.source not in by_name:
            raise IRError(f"{t.span}: {t.name} restricts undefined type {t.source!r}")
        for f in t.fields:
            if f.type != "*" and f.type not in by_name:
                raise IRError(f"{f.span}: {t.name}.{f.name}: type {f.type!r} is not defined")


def primitive_of(typedefs: tuple[TypeDef, ...], name: str) -> TypeDef | None:
    """The primitive a type name comes down to through restrictions (None for "*")."""
    by_name = {t.name: t for t in typedefs}
    seen: set[str] = set()
    while name in by_name and name not in seen:
        seen.add(name)
        t = by_name[name]
        if t.klass == "primitive":
            return t
        if t.klass == "composite":
            return by_name.get("list")
        name = t.source
    return None


def _check_follows(message: Message) -> None:
    """`follows` names a required top-level integer field and, for `unless`, a boolean flag
    (a top-level field or a member of a top-level bits field) of the same message."""
    assert message.follows is not None
    top = {f.name: f for f in message.fields}
    count = top.get(message.follows.count)
    if count is None or not isinstance(count.type, Prim) or count.type.name not in INT_WIDTHS:
        raise IRError(
            f"{message.span}: {message.name}: follows counts {message.follows.count!r}, "
            "which is no integer field of it"
        )
    if count.optional or count.present:
        raise IRError(f"{message.span}: {message.name}: follows counts an optional field")
    # a bit member is an attribute of the message itself; a nested structure's is not
    flat = [
        m for f in message.fields for m in (f.type.members if isinstance(f.type, Bits) else (f,))
    ]
    for role, name in (("unless", message.follows.unless), ("more", message.follows.more)):
        if name is None:
            continue
        flag = next((f for f in flat if f.name == name), None)
        if flag is None or not (
            isinstance(flag.type, BitField) and flag.type.boolean and flag.type.value is None
        ):
            raise IRError(
                f"{message.span}: {message.name}: follows {role} {name!r}, which is no "
                "boolean flag of it"
            )


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
    match t:
        case Struct():
            return Struct(t.name, _project(t.fields, version))
        case Array():
            return replace(t, item=_project_type(t.item, version))
        case Switch() | Choice():
            return replace(
                t,
                cases=tuple(
                    replace(c, type=None if c.type is None else _project_type(c.type, version))
                    for c in t.cases
                ),
            )
        case (
            Prim()
            | Ref()
            | Map()
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


def walk_fields(members: tuple[Field, ...], path: str = "") -> Iterator[tuple[str, Field]]:
    """Every field below `members`, with its dotted path."""
    for f in members:
        here = f"{path}.{f.name}" if path else f.name
        yield here, f
        yield from walk_type(f.type, here)


def walk_type(t: TypeRef, path: str) -> Iterator[tuple[str, Field]]:
    """Every field inside `t` (not through named types), with its dotted path."""
    match t:
        case Struct():
            yield from walk_fields(t.fields, path)
        case Array():
            yield from walk_type(t.item, path)
        case Map():
            yield from walk_type(t.key, path)
            yield from walk_type(t.value, path)
        case Switch() | Choice():
            for c in t.cases:
                if c.type is not None:
                    yield from walk_type(c.type, path)
        case Bits():
            yield from walk_fields(t.members, path)
        case Prim() | Ref() | Blob() | BitField() | Presence() | Alternatives() | Typed():
            pass
        case _:
            assert_never(t)


def _types_in(t: TypeRef) -> Iterator[TypeRef]:
    """`t` and the types inside it, not through fields of structures nor named types."""
    yield t
    match t:
        case Array():
            yield from _types_in(t.item)
        case Map():
            yield from _types_in(t.key)
            yield from _types_in(t.value)
        case Switch() | Choice():
            for c in t.cases:
                if c.type is not None:
                    yield from _types_in(c.type)
        case (
            Prim()
            | Ref()
            | Struct()
            | Blob()
            | Bits()
            | BitField()
            | Presence()
            | Alternatives()
            | Typed()
        ):
            pass
        case _:
            assert_never(t)
