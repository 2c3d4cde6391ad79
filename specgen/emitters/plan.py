"""Codec plans: what a generated decoder and encoder do, step by step, worked out from the IR.

Templates render plans; they never look at the spec and never decide layouts. The planner is
where the speed comes from:
  * runs of fixed-width fields are fused into one precompiled `struct.Struct`, and the length
    prefix of the variable field that ends a run (string, bytes, array) joins the run, so a
    `CorrelationId Stream` pair is one `unpack_from` and one bounds check;
  * nested structures and array items are decoded inline into locals (no call per field or per
    item), then built with one constructor call;
  * every length is checked against the bytes that remain before anything is allocated.
"""

from __future__ import annotations

import json
import keyword
import re
import struct
from dataclasses import dataclass, field, replace
from typing import Literal, assert_never, cast

from specgen.emitters import plan_described, plan_packed, pytext
from specgen.emitters.naming import PlanError as PlanError
from specgen.emitters.naming import attr_name as attr_name
from specgen.emitters.naming import isort_key as isort_key
from specgen.emitters.naming import snake as snake
from specgen.emitters.plan_described import DescribedPlan
from specgen.emitters.pytext import Code
from specgen.ir import (
    INT_WIDTHS,
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
    NamedType,
    Presence,
    Prim,
    PrimitiveType,
    Protocol,
    Ref,
    Struct,
    Switch,
    Typed,
    TypeRef,
    shape,
)

STRUCT_CODES = {
    "int8": "b",
    "int16": "h",
    "int32": "i",
    "int64": "q",
    "uint8": "B",
    "uint16": "H",
    "uint24": "3s",
    "uint32": "I",
    "uint64": "Q",
}
"""The one table of struct codes: integer type -> `struct` format character."""

FLOAT_CODES = {4: "f", 8: "d"}
# the module of a version without spec classes that each sender's messages go in (`by_sender`)
SENDER_MODULES = {"client": "client", "server": "server", "both": "either"}


def text_class(protocol: Protocol, name: str) -> str:
    """The Python class of a length-prefixed primitive's values: by its kind, not its name."""
    return "str" if protocol.type(name).kind == "string" else "bytes"


def class_name(command: Command, message: Message, versioned: bool, version: int) -> Code:
    """The one naming rule for message classes: the command's name as an identifier, then
    Request/Response when the command has more than one message, then V<n> when the message
    has more than one version (`DeclarePublisherRequest`, `DeliverV2`, `BasicGetOk`). A name
    that is no Python identifier even so (a letter outside ASCII) is a located SpecNameError."""
    base = re.sub(r"\W", "", command.name)
    suffix = {"request": "Request", "response": "Response", "oneway": ""}[message.kind]
    if len(command.messages) == 1:
        suffix = ""
    name = f"{base}{suffix}V{version}" if versioned else f"{base}{suffix}"
    return pytext.identifier(name, "message class", command.span)


# ---- steps -----------------------------------------------------------------------------


@dataclass
class Fixed:
    """One member of a fused run. Encoding packs `expr` as `conv` says: "" the value itself,
    "uint24" its three octets, "bool" 1 or 0, "part" item `part` of the `expr`_parts pair,
    "len" the length of `expr` (`null` when it is None and the type has a null length), "bits"
    the container packed from `bits`."""

    label: str  # Message.field.path, as DecodeError names it
    code: str  # struct code
    width: int
    local: str  # decode target
    expr: str  # encode: the value's attribute path or local
    conv: str = ""
    part: int = 0
    null: int | None = None
    bits: list[BitMember] = field(default_factory=list)


OCTET = "_OCTET"
"""The struct of one unsigned octet that every one-octet run packs with (each module using it
defines its own: `python_codec.OWN_STRUCTS`)."""


@dataclass
class Run:
    """Fixed-width members read and written with one precompiled struct.Struct."""

    items: list[Fixed]
    limit: str
    const: str = ""
    mark: str = ""  # encode: local remembering this run's part (a checksum in it is patched)
    post: list[object] = field(default_factory=list)  # decode steps right after the unpack
    prepare: list[object] = field(default_factory=list)  # encode steps right before the pack
    # "decode": read by a container's loop, never written (a byte needs no struct); "encode": a
    # constructor choice's, written by its encode, read by its containers' own runs
    only: Literal["", "decode", "encode"] = ""
    # decode: a byte run whose byte the caller has already seen is there (a container's loop
    # runs while `at < stop`), so it reads it without a check of its own
    present: bool = False
    # decode: the run is the one-octet length of the Text after it, which reads it (Text.short)
    text_length: bool = False

    @property
    def fmt(self) -> str:
        return ">" + "".join(i.code for i in self.items)

    @property
    def size(self) -> int:
        return sum(i.width for i in self.items)

    @property
    def byte(self) -> bool:
        """One unsigned octet (a short string's length, a bits container): decode indexes the
        buffer for it, which is quicker than an unpack and needs no field-name table."""
        return len(self.items) == 1 and self.items[0].code == "B"

    @property
    def field_names(self) -> str:
        """How a DecodeError names this run's fields: "Owner: field other.path", their owner (a
        message or structure; none for a named type's value) and each one's path in it, in
        packing order (a path has no spaces: labels are identifiers joined by dots)."""
        owner = self.items[0].label.split(".", 1)[0]
        if any(not i.label.startswith(owner + ".") for i in self.items):
            return " ".join(i.label for i in self.items)
        return f"{owner}: " + " ".join(i.label[len(owner) + 1 :] for i in self.items)


@dataclass
class Text:
    """string or bytes whose length the run before it read."""

    label: str
    local: str
    len_local: str
    expr: str
    limit: str
    is_string: bool
    null_length: int | None
    encoding: str
    raw: str  # encode: the content bytes
    errors: str = "strict"
    signed: bool = True  # the length is a signed number: a negative one is refused
    # decode: its length is one octet, alone in the run before: read here, and checked in one
    # test with the text's own bytes (a short string: AMQP's shortstr)
    short: bool = False


@dataclass
class BlobStep:
    label: str
    local: str
    len_local: str
    len_expr: str
    expr: str
    limit: str


@dataclass
class BitMember:
    local: str  # "" for a fixed tag
    shift: int
    mask: int
    value: int | None
    label: str
    expr: str
    boolean: bool = False

    @property
    def in_place(self) -> int:
        """The member's bits where they sit in the container."""
        return self.mask << self.shift

    @property
    def placed(self) -> int:
        """A fixed member's value where it sits in the container."""
        return (self.value or 0) << self.shift

    @property
    def bit(self) -> int:
        """A boolean member's bit where it sits in the container."""
        return 1 << self.shift


@dataclass
class BitsStep:
    """Split a container the run read into its members (decode)."""

    container: str
    members: list[BitMember]
    label: str


@dataclass
class Uint24:
    local: str
    raw: str


@dataclass
class ArrayStep:
    label: str
    local: str
    count_local: str
    limit: str
    min_item: int
    expr: str
    count_expr: str = ""  # encode, count_field arrays: the field that must equal len(expr)
    size_local: str = ""  # items fill exactly this many bytes
    size_expr: str = ""
    inner_limit: str = ""
    prim_code: str = ""  # fixed-width primitive items: one unpack for all
    prim_width: int = 0
    body: list[object] = field(default_factory=list)
    item_value: str = ""  # decode: the local holding one decoded item
    item_var: str = "item"  # encode: loop variable
    mark: str = ""
    annotation: str = ""
    # a checksummed array of structures (the Streams chunk's entries) keeps the bytes it was
    # decoded from, so an unchanged array re-encodes as one copy: the hidden slot on the owning
    # structure (`keep`), the decode locals of its start offset and per-item states, the encode
    # expression of the owner, the module constant mapping each item class to its state getter
    # and the getters' attribute names per class
    keep: str = ""
    keep_start: str = ""
    keep_states: str = ""
    keep_owner: str = ""
    keep_getters: str = ""
    keep_classes: list[tuple[str, list[str]]] = field(default_factory=list)
    keep_local: str = ""  # encode locals: the slot's value, one item's state and getter
    keep_state: str = ""
    keep_getter: str = ""
    keep_same: str = ""


@dataclass
class KeepItem:
    """Decode: remember one decoded item's class and field values (a kept array's state)."""

    states: str
    cls: str
    args: list[str]


@dataclass
class KeepSet:
    """Decode: store a kept array's (list, bytes, states) in its structure's hidden slot."""

    local: str
    keep: str
    array: str
    start: str
    end: str
    states: str


@dataclass
class SwitchCase:
    values: tuple[int, ...]
    label: str
    body: list[object]
    value: str  # decode: local of the case's value ("None" for an empty case)
    cls: str = ""  # peek switch: the case's class


@dataclass
class SwitchStep:
    label: str
    local: str
    on_local: str  # decode
    on_expr: str  # encode
    on_label: str
    expr: str
    cases: list[SwitchCase]
    limit: str
    peek_bits: int = 0
    tag: str = ""  # decode, peek switch: local holding the peeked bits
    annotation: str = ""


@dataclass
class OptionalStep:
    """A trailing field a peer may leave out: absent (None) when the frame ends before it."""

    label: str
    local: str
    expr: str
    limit: str
    body: list[object]
    previous: str = ""  # encode: the optional field before it, which must then be present
    annotation: str = ""  # decode: the local's type, declared before the branches
    # decode, a Presence-flagged field: present when bit `flag_mask` of word `flag_word` of the
    # words in local `flag_words` is set (instead of "bytes left")
    flag_words: str = ""
    flag_word: int = 0
    flag_mask: int = 0
    presence: PresenceStep | None = None  # the step reading those words


@dataclass
class PresenceStep:
    """Flag words: read while the continuation bit is set (decode), worked out from which
    flagged fields are not None (encode)."""

    label: str
    local: str  # decode: the words, a list
    limit: str
    code: str
    width: int
    continuation: int  # mask of the continuation bit, 0 when there is none
    allowed: list[int]  # per word: the flag bits of this version's fields
    flags: list[tuple[str, int, int]] = field(default_factory=list)  # (encode expr, word, mask)

    @property
    def one_word(self) -> bool:
        """This version's flags fit one word: decode reads it into an int, no list or loop (a
        continuation bit is then a bit no field has)."""
        return len(self.allowed) == 1

    @property
    def disallowed(self) -> int:
        """One word's bits no field of this version has (the continuation bit among them)."""
        return ((1 << (8 * self.width)) - 1) & ~self.allowed_words[0]

    @property
    def allowed_words(self) -> tuple[int, ...]:
        """Per word, the bits that may be set: its flags, and "more" on all but the last."""
        last = len(self.allowed) - 1
        return tuple(a | (self.continuation if i < last else 0) for i, a in enumerate(self.allowed))


@dataclass
class BoolCheck:
    """Decode: a boolean octet the run read into `raw` is 0 or 1; `local` takes its truth."""

    label: str
    raw: str
    local: str
    run: Run
    item: int  # the octet's place in the run, for the error's offset

    @property
    def back(self) -> int:
        """How far before the run's end the octet is (the run is complete when rendered)."""
        return self.run.size - sum(i.width for i in self.run.items[: self.item])


@dataclass
class DecimalValue:
    """Decode: `local` is the decimal of the `value` and `scale` the run read."""

    local: str
    value: str
    scale: str


@dataclass
class DecimalParts:
    """Encode: split the decimal `expr` into the run's scale and value (`local`_parts)."""

    local: str
    expr: str


@dataclass
class NoneValue:
    """Decode: a void field, which has no octets, is None."""

    local: str


@dataclass
class RefStep:
    """A value of a named type, through its generated functions."""

    label: str
    local: str
    func: str  # _decode_<func> / _encode_<func>
    expr: str
    limit: str
    ctor: str = ""  # decode: local taking the constructor a Choice saw (in a container)
    ctor_expr: str = ""  # encode: expression giving the remembered constructor


@dataclass
class NamedPlan:
    """The generated functions of one named type: a map, an array, a constructor choice, or a
    structure of its own (a dataclass with encode and decode)."""

    name: str  # the spec's name
    func: str
    kind: str  # "map", "array", "choice", "struct"
    annotation: str
    label: str
    size_code: str = ""  # map/array: the byte-size prefix
    size_width: int = 0
    key_steps: list[object] = field(default_factory=list)  # map: decode the key into key_local
    key_local: str = ""
    key_expr: str = "key"
    item: RefStep | None = None  # map value / array item when it is a named type
    item_steps: list[object] = field(default_factory=list)  # else: its steps
    item_local: str = ""
    # map/array whose item is a constructor choice: the choice, planned for the loop to read
    # itself (no call per item)
    choice: NamedPlan | None = None
    cases: list[ChoiceCase] = field(default_factory=list)
    ctor_code: str = ""
    ctor_width: int = 0
    prefer: list[int] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    steps: list[object] = field(default_factory=list)  # struct: its fields, then its Build


@dataclass
class ChoiceCase:
    value: int
    label: str
    body: list[object]  # decode/encode steps of the value
    local: str  # decode: local holding the value
    # encode: which values this case can take: "int" (an int from `low` to `high`), or a kind
    # of value: "dict", "list", "float", "decimal", "bool", "string", "bytes", "void", "none"
    fits: str
    low: int = 0
    high: int = 0
    # a case whose value is one fixed-width number: its struct code and width, read through one
    # lookup (`_<FUNC>_FIXED`) instead of a branch of the chain each
    fixed_code: str = ""
    fixed_width: int = 0


@dataclass
class Mark:
    """Remember where a checksummed field's bytes start (decode)."""

    local: str


@dataclass
class ChecksumStep:
    """Compare a checksum field with the checksum of the bytes since `mark` (decode, unless the
    caller opted out)."""

    label: str  # the checksum field, as DecodeError names it
    local: str  # its decoded value
    mark: str  # decode: byte offset where the summed bytes start; encode: their first part
    algorithm: str
    over: str  # label of the summed field
    run_mark: str = ""  # encode: the part holding the checksum field, patched when sealing
    offset: int = 0  # the checksum field's offset and struct code in that part
    code: str = ""
    width: int = 0

    @property
    def over_text(self) -> Code:
        """`over` for inside the f-string of the mismatch's message."""
        return pytext.in_fstring(self.over)


@dataclass
class Build:
    local: str
    cls: str
    args: list[str]


Step = (
    Run
    | Text
    | BlobStep
    | BitsStep
    | Uint24
    | ArrayStep
    | KeepItem
    | KeepSet
    | SwitchStep
    | OptionalStep
    | PresenceStep
    | BoolCheck
    | DecimalValue
    | DecimalParts
    | NoneValue
    | RefStep
    | Mark
    | ChecksumStep
    | Build
)
"""Every kind of plan step: what the step lists hold (`MessagePlan.steps`; a NamedPlan's
`steps`, `key_steps` and `item_steps`; the `body` of a ChoiceCase, SwitchCase, ArrayStep or
OptionalStep; a Run's `post` and `prepare`). The lists stay `list[object]`, the type the
emitters that walk them generically take; code dispatching on a step's kind reads a list
through `_steps` and `match`es with one `case` per kind (or several kinds in one arm), ending in
`case _: assert_never(s)`, so mypy names the code that misses a kind added here."""


def _steps(body: list[object]) -> list[Step]:
    """A step list as the Steps it holds: the planner puts nothing else in one (every append
    builds a Step; the dispatch tests check every list of every fused plan)."""
    return cast("list[Step]", body)


@dataclass
class Attr:
    name: str
    annotation: str
    doc: str
    default: str = ""  # the constructor's default, a Python literal ("" for none)
    factory: str = ""  # or a mutable default's type, built per instance ("dict", "list")


@dataclass
class RecordsView:
    """A struct's blob of packed records: `records()` splits them out, `from_records` packs."""

    blob: str  # attribute holding the blob
    label: str  # Struct.attr, as errors name it
    const: str  # module constant prefix for the record prefix and the codecs
    prefix_code: str  # struct code of each record's length
    count: str  # attribute: how many records
    size: str  # attribute: decompressed length ("" when not compressed)
    compression: str  # attribute selecting the algorithm ("" when not compressed)
    codecs: tuple[tuple[int, str], ...]
    args: list[str]  # from_records: constructor arguments in attribute order


@dataclass
class StructClass:
    name: str
    attrs: list[Attr]
    spec_name: str
    records: RecordsView | None = None
    codec: str = ""  # a named structure: the suffix of its _decode_/_encode_ functions
    doc: str = ""
    # hidden slots (not dataclass fields) keeping a checksummed array's decoded bytes, with the
    # annotation of the array's items
    kept: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class FollowsPlan:
    """Octets after a message's frame: `count` attribute says how many, none when `unless`."""

    count: str
    unless: str = ""
    layout: str = ""  # the class of the structure such data may start with
    doc: str = ""
    more: str = ""  # the flag saying the message's octets go on after the next such frame


@dataclass
class MessagePlan:
    cls: str
    message: Message
    command: str
    version: int
    ident: tuple[int, ...]  # the message's identity, body keys included
    kind: str
    sender: str
    attrs: list[Attr]
    steps: list[object]
    func: str
    min_body: int
    runs: list[Run]
    dispatch: tuple[int, ...]  # what `decode` looks it up by: ident, then the version if any
    body_key: bytes = b""  # encode: the body key bytes that follow the header
    follows: FollowsPlan | None = None
    kept: list[ArrayStep] = field(default_factory=list)  # arrays keeping their decoded bytes


@dataclass
class HeaderField:
    name: str  # local and column name, snake case
    label: str  # as DecodeError names it: frame.size
    code: str
    offset: int
    width: int
    role: str  # "length", "dispatch", "version" or "carried"
    doc: str = ""

    @property
    def local(self) -> str:
        return self.name + "_" if self.name in _RESERVED else self.name

    @property
    def hex_format(self) -> str:
        """How a dispatch value is written: hex, two digits per byte."""
        return f"#0{2 + 2 * self.width}x"


@dataclass
class BodyKeyPlan:
    when: tuple[int, ...]
    fmt: str
    size: int
    labels: list[str]


@dataclass
class FramePlan:
    """Framing as the generated code needs it: offsets, struct formats, the length rule."""

    header: list[HeaderField]
    fmt: str
    size: int  # header bytes
    length: HeaderField
    counts: str  # "after" or "body"
    adjust: int  # a frame's bytes = its length field + adjust
    min_length: int
    trailer: list[tuple[str, str, int, int]]  # (label, struct code, width, fixed value)
    trailer_fmt: str
    trailer_size: int
    trailer_bytes: bytes
    dispatch: list[HeaderField]
    version: HeaderField | None
    carried: list[HeaderField]
    body_keys: list[BodyKeyPlan]
    preambles: dict[str, bytes]
    response_flag: int | None
    fields_doc: str  # "uint32 size, uint16 key, uint16 version"
    escape: int | None = None  # a length value saying a wider length follows (FrameLayout)
    wide_fmt: str = ""  # the header in that wide form: the escape as pad bytes, then the length
    wide_code: str = ""  # struct code of the wider length
    wide_width: int = 0
    # byte strings that may stand wherever a frame starts, each a message: (bytes, what it is)
    protocol_headers: list[tuple[bytes, str]] = field(default_factory=list)
    header_words: HeaderField | None = None  # the header's own size, in 4-octet words

    @property
    def key_fields(self) -> list[HeaderField]:
        """The header fields `decode` dispatches on, the version last."""
        return self.dispatch + ([self.version] if self.version else [])


@dataclass
class ModulePlan:
    protocol: Protocol
    messages: list[MessagePlan]
    structs: list[StructClass]
    frame: FramePlan
    named: list[NamedPlan]
    clashing: set[str]  # structure names laid out differently by different messages
    checksums: bool = False  # some message verifies a checksum (decoders import zlib)
    decimals: bool = False  # some value is a decimal (decoders import Decimal)
    # a segment layer's messages: packing-flag structs in segments (`plan_packed`), planned
    # there instead of as fused runs; `messages`, `structs` and `named` are then empty
    packed: plan_packed.PackedPlan | None = None
    # self-describing values (typedefs): described types are the messages (`plan_described`)
    described: DescribedPlan | None = None

    @property
    def layout(self) -> Literal["fused", "packed", "described"]:
        """How its messages are laid out, which names the back-end that writes its code: fused
        runs of fixed-width fields, packing-flag structs in segments, or described values."""
        if self.packed is not None:
            return "packed"
        if self.described is not None:
            return "described"
        return "fused"

    def message_class(self, ident: tuple[int, ...]) -> MessagePlan | None:
        return next((m for m in self.messages if m.ident == ident), None)

    @property
    def by_sender(self) -> bool:
        """Whether a version writes its own fused messages a module per sender: when its spec
        groups its commands in no classes (Streams' one table, whose only grouping is which
        peer sends each command). A spec with classes keeps them in `commands` (or, laid out
        alike in every version, in the package's module of their class)."""
        return bool(self.messages) and not any("." in m.command for m in self.messages)

    def module_of(self, sender: str | None) -> str:
        """The module of its version that the code of a message sent by `sender` is written
        into, or of a structure or named type (None): `commands` unless `by_sender`."""
        if not self.by_sender:
            return "commands"
        return "structures" if sender is None else SENDER_MODULES[sender]


# ---- planner -----------------------------------------------------------------------------

_MODULE_NAMES = ("Message", "DecodeError", "EncodeError", "FrameReader", "decode", "encode")
_RESERVED = {"from", "type", "id", "len", "bytes", "str", "list", "format", "hash", "int", "class"}


class Planner:
    def __init__(self, protocol: Protocol) -> None:
        self.protocol = protocol
        self.struct_classes: dict[str, StructClass] = {}
        self.clashing: set[str] = set()
        self.owner = ""
        self.used: set[str] = set()
        self.runs: list[Run] = []
        self.checksums = False
        self.decimals = False
        self.presence: dict[str, tuple[PresenceStep, Presence]] = {}
        self.keeps: list[ArrayStep] = []
        self.kept: list[ArrayStep] = []
        self.struct_depth = 0  # arrays are kept in structures' slots, not in messages'

    def plan(self) -> ModulePlan:
        if self.protocol.frame.segments is not None:
            frame = plan_frame(self.protocol)
            packed = plan_packed.plan(self.protocol)
            return ModulePlan(self.protocol, [], [], frame, [], set(), packed=packed)
        if self.protocol.typedefs:
            # values that say their own type: described types, not commands, are the messages
            described = plan_described.plan(self.protocol)
            return ModulePlan(
                self.protocol, [], [], plan_frame(self.protocol), [], set(), described=described
            )
        todo = []
        for command in self.protocol.commands:
            for message in command.messages:
                high = message.versions.high or message.versions.low
                versions = list(range(message.versions.low, high + 1))
                for v in versions:
                    todo.append((command, message, v, len(versions) > 1))
        layouts: dict[str, set[str]] = {}
        for _, message, v, _ in todo:
            for s in _structs(message.fields_at(v)):
                layouts.setdefault(s.name, set()).add(_shape(s))
        # a structure named like a module-level name (a message class, the `Message` union,
        # the codec's functions) takes its owner's prefix too, or one would shadow the other
        taken = set(_MODULE_NAMES) | {class_name(c, m, vs, v) for c, m, v, vs in todo}
        self.clashing = {name for name, found in layouts.items() if len(found) > 1 or name in taken}
        # a structure holding one that takes its owner's prefix takes it too: one class could not
        # say which owner's inner class it holds (4.0's OsirisChunk holds DeliverV1/V2Message)
        inner: dict[str, set[str]] = {}
        for _, message, v, _ in todo:
            for s in _structs(message.fields_at(v)):
                inner.setdefault(s.name, set()).update(n.name for n in _structs(s.fields))
        grown = True
        while grown:
            grown = False
            for name, held in inner.items():
                if name not in self.clashing and held & self.clashing:
                    self.clashing.add(name)
                    grown = True
        frame = plan_frame(self.protocol)
        named = [self._named(n) for n in self.protocol.named]
        messages = [self._message(*item, frame) for item in todo]
        structs = [self.struct_classes[k] for k in sorted(self.struct_classes)]
        return ModulePlan(
            self.protocol,
            messages,
            structs,
            frame,
            named,
            self.clashing,
            self.checksums,
            self.decimals,
        )

    def _message(
        self, command: Command, message: Message, version: int, versioned: bool, frame: FramePlan
    ) -> MessagePlan:
        cls = class_name(command, message, versioned, version)
        self.owner = cls
        # the header fields decode() passes in are parameters of the body decoder: no field's
        # local may take their names
        self.used = {"buf", "at", "end", "parts", "msg", "struct", "word", "words"}
        self.used |= {h.local for h in frame.carried}
        self.runs = []
        self.presence = {}
        self.kept = []
        fields = message.fields_at(version)
        steps: list[object] = []
        attrs: list[Attr] = []
        args: list[str] = []
        required = tuple(f for f in fields if not f.optional and not f.present)
        run = self._struct_body(required, cls, "msg", steps, self._run("end"), args, attrs, "end")
        self._close(run, steps)
        previous = ""
        attrs[:] = _with_defaults(attrs, required)
        for f in fields[len(required) :]:
            steps.append(self._optional(f, cls, steps, args, attrs, previous))
            previous = f"msg.{attr_name(f.name)}" if f.optional else ""
        for h in frame.carried:  # passed in by decode() from the header
            attrs.append(Attr(h.name, "int", h.doc, "0"))
            args.append(h.local)
        steps.append(Build("msg", cls, args))
        sender: str = message.sender or command.sender
        if message.kind == "response" and message.sender is None:
            sender = {"client": "server", "server": "client"}.get(sender, sender)
        body_key = b""
        key = self.protocol.frame.body_key(message.ident)
        if key is not None:
            body_key = struct.pack(
                ">" + "".join(STRUCT_CODES[_int_name(f)] for f in key.fields),
                *message.ident[len(key.when) :],
            )
        dispatch = message.ident + ((version,) if frame.version else ())
        follows = None
        if message.follows is not None:
            layout = message.follows.layout
            target = self.protocol.named_type(layout) if layout else None
            follows = FollowsPlan(
                attr_name(message.follows.count),
                attr_name(message.follows.unless or ""),
                self._struct_name(target) if isinstance(target, Struct) else "",
                message.follows.doc,
                attr_name(message.follows.more or ""),
            )
        return MessagePlan(
            cls,
            message,
            command.name,
            version,
            message.ident,
            message.kind,
            sender,
            attrs,
            steps,
            snake(cls),
            _min_size_fields(self.protocol, fields),
            self.runs,
            dispatch,
            body_key,
            follows,
            self.kept,
        )

    def _optional(
        self,
        f: Field,
        cls: str,
        steps: list[object],
        args: list[str],
        attrs: list[Attr],
        previous: str,
    ) -> OptionalStep:
        body: list[object] = []
        n_attrs, n_args = len(attrs), len(args)
        label, expr = f"{cls}.{attr_name(f.name)}", f"msg.{attr_name(f.name)}"
        run = self._field(f, label, expr, body, self._run("end"), {}, args, attrs, "end")
        self._close(run, body)
        if len(attrs) != n_attrs + 1 or len(args) != n_args + 1:
            raise PlanError(f"{f.span}: {label}: an optional field must be one value")
        attrs[-1] = Attr(attrs[-1].name, f"{attrs[-1].annotation} | None", attrs[-1].doc, "None")
        for step in _steps(body):  # declared once, before the branches
            match step:
                case ArrayStep() | SwitchStep() if step.local == args[-1]:
                    step.annotation = ""
                case (
                    Run()
                    | Text()
                    | BlobStep()
                    | BitsStep()
                    | Uint24()
                    | ArrayStep()
                    | KeepItem()
                    | KeepSet()
                    | SwitchStep()
                    | OptionalStep()
                    | PresenceStep()
                    | BoolCheck()
                    | DecimalValue()
                    | DecimalParts()
                    | NoneValue()
                    | RefStep()
                    | Mark()
                    | ChecksumStep()
                    | Build()
                ):
                    pass  # declares no annotated local of the optional field's own
                case _:
                    assert_never(step)
        step = OptionalStep(label, args[-1], expr, "end", body, previous, attrs[-1].annotation)
        if f.present is not None:
            presence, t = self.presence[f.present[0]]
            word, mask = t.flag(f.present[1])
            while len(presence.allowed) <= word:
                presence.allowed.append(0)
            presence.allowed[word] |= mask
            presence.flags.append((expr, word, mask))
            step.flag_words, step.flag_word, step.flag_mask = presence.local, word, mask
            step.presence = presence
            step.previous = ""
        return step

    # ---- locals and runs

    def _local(self, name: str) -> str:
        base = snake(name)
        base = base + "_" if base in _RESERVED or keyword.iskeyword(base) else base
        local, n = base, 2
        while local in self.used:
            local, n = f"{base}_{n}", n + 1
        self.used.add(local)
        return local

    def _run(self, limit: str) -> Run:
        return Run([], limit)

    def _close(self, run: Run, steps: list[object]) -> None:
        if not run.items:
            steps.extend(run.post)
            return
        # one octet packs with its module's one struct for it (OCTET), not a constant of its
        # own per field (0-9-1's properties had thirteen alike)
        run.const = OCTET if run.byte else f"_{snake(self.owner).upper()}_{len(self.runs)}"
        self.runs.append(run)
        steps.append(run)
        steps.extend(run.post)

    def _seal(self, step: ChecksumStep) -> None:
        """Where encode(seal_checksums=True) patches the computed checksum in."""
        self.checksums = True
        for run in self.runs:
            offset = 0
            for item in run.items:
                if item.label == step.label:
                    run.mark = run.mark or self._local("ChecksumPart")
                    step.run_mark, step.offset = run.mark, offset
                    step.code, step.width = item.code, item.width
                    return
                offset += item.width
        raise PlanError(f"{step.label}: a checksum must be a fixed-width field before its data")

    def _keep(self, step: object, f: Field, expr: str) -> None:
        """A checksummed array whose items are structures, each case built by one Build: keep
        its bytes (see ArrayStep.keep)."""
        if (
            not self.struct_depth
            or not isinstance(step, ArrayStep)
            or step.prim_code
            or not step.inner_limit
        ):
            return
        builds: list[tuple[list[object], Build]] = []
        for s in _steps(step.body):
            match s:
                case SwitchStep():
                    for c in s.cases:
                        found = [b for b in c.body if isinstance(b, Build) and b.local == c.value]
                        if len(found) != 1:
                            return
                        builds.append((c.body, found[0]))
                case Build() if s.local == step.item_value:
                    builds.append((step.body, s))
                case (
                    Run()
                    | Text()
                    | BlobStep()
                    | BitsStep()
                    | Uint24()
                    | ArrayStep()
                    | KeepItem()
                    | KeepSet()
                    | OptionalStep()
                    | PresenceStep()
                    | BoolCheck()
                    | DecimalValue()
                    | DecimalParts()
                    | NoneValue()
                    | RefStep()
                    | Mark()
                    | ChecksumStep()
                    | Build()
                ):
                    pass  # builds no item of the array (reads its fields, builds a part)
                case _:
                    assert_never(s)
        if not builds or any(
            len(b.args) != len(self.struct_classes[b.cls].attrs) for _, b in builds
        ):
            return
        step.keep = f"_{attr_name(f.name)}_kept"
        step.keep_start = self._local(f.name + "KeptStart")
        step.keep_states = self._local(f.name + "States")
        step.keep_owner = expr
        step.keep_getters = f"_{snake(self.owner).upper()}_{snake(f.name).upper()}_STATES"
        step.keep_local = self._local(f.name + "Kept")
        step.keep_state = self._local("State")
        step.keep_getter = self._local("Getter")
        step.keep_same = self._local("Same")
        for body, b in builds:
            body.insert(body.index(b) + 1, KeepItem(step.keep_states, b.cls, b.args))
            names = [a.name for a in self.struct_classes[b.cls].attrs]
            if (b.cls, names) not in step.keep_classes:
                step.keep_classes.append((b.cls, names))
        self.keeps.append(step)
        self.kept.append(step)

    def _after(self, run: Run, steps: list[object], step: object) -> None:
        """A decode step that needs the values the open run will read."""
        if run.items:
            run.post.append(step)
        else:
            steps.append(step)

    # ---- fields

    def _struct_body(
        self,
        fields: tuple[Field, ...],
        label: str,
        expr: str,
        steps: list[object],
        run: Run,
        args: list[str],
        attrs: list[Attr] | None,
        limit: str,
    ) -> Run:
        env: dict[str, tuple[str, str]] = {}  # spec name -> (decode local, encode expr)
        sums = {f.checksum.over: f for f in fields if f.checksum is not None}
        for f in fields:
            summed = sums.pop(f.name, None)
            mark = ""
            if summed is not None:
                self._close(run, steps)
                run = self._run(limit)
                mark = self._local(f.name + "Start")
                steps.append(Mark(mark))
            run = self._field(
                f,
                f"{label}.{attr_name(f.name)}",
                f"{expr}.{attr_name(f.name)}",
                steps,
                run,
                env,
                args,
                attrs,
                limit,
            )
            if summed is not None:
                assert summed.checksum is not None
                self._keep(steps[-1] if steps else None, f, expr)
                self._close(run, steps)
                run = self._run(limit)
                step = ChecksumStep(
                    f"{label}.{attr_name(summed.name)}",
                    env[summed.name][0],
                    mark,
                    summed.checksum.algorithm,
                    f"{label}.{attr_name(f.name)}",
                )
                self._seal(step)
                steps.append(step)
        if sums:
            raise PlanError(f"{label}: checksum over {sorted(sums)[0]}, which does not follow it")
        return run

    def _field(
        self,
        f: Field,
        label: str,
        expr: str,
        steps: list[object],
        run: Run,
        env: dict[str, tuple[str, str]],
        args: list[str],
        attrs: list[Attr] | None,
        limit: str,
    ) -> Run:
        t = f.type
        match t:
            case Alternatives():
                raise PlanError(
                    f"{f.span}: {label} lists alternatives with nothing on the wire to choose; "
                    "it needs an overlay entry"
                )
            case Bits():
                return self._bits(f, t, label, expr, steps, run, env, args, attrs)
            case Presence():
                return self._presence(f, t, label, steps, run, env, limit)
            case Prim():
                local = self._bind(f, expr, env, args, attrs)
                ptype = self.protocol.type(t.name)
                if ptype.fixed:
                    return self._fixed(ptype, label, local, expr, steps, run)
                len_local = self._local(f.name + "Len")
                raw = self._local(f.name + "Raw")
                nullable = f.nullable and ptype.null_length is not None
                run.items.append(
                    Fixed(
                        label,
                        STRUCT_CODES[ptype.length_prefix],
                        INT_WIDTHS[ptype.length_prefix][0],
                        len_local,
                        raw,
                        "len",
                        null=ptype.null_length if nullable else None,
                    )
                )
                step = Text(
                    label,
                    local,
                    len_local,
                    expr,
                    limit,
                    ptype.kind == "string",
                    ptype.null_length if nullable else None,
                    ptype.encoding or "utf-8",
                    raw,
                    ptype.errors,
                    STRUCT_CODES[ptype.length_prefix].islower(),
                )
                run.prepare.append(step)
                if run.byte and step.null_length is None and not (run.post or run.present):
                    run.text_length = step.short = True
                self._close(run, steps)
                steps.append(step)
                return self._run(limit)
            case Ref():
                local = self._bind(f, expr, env, args, attrs)
                self._close(run, steps)
                target = self.protocol.named_type(t.name)
                if isinstance(target, Choice):
                    raise PlanError(
                        f"{f.span}: {label}: a constructor-chosen value needs a map or array to "
                        "remember its constructor in"
                    )
                steps.append(RefStep(label, local, _func(t.name), expr, limit))
                return self._run(limit)
            case Blob():
                local = self._bind(f, expr, env, args, attrs)
                self._close(run, steps)
                if t.length_field is None:
                    length_local, length_expr = "", ""
                else:
                    length_local, length_expr = env[t.length_field]
                steps.append(BlobStep(label, local, length_local, length_expr, expr, limit))
                return self._run(limit)
            case Array():
                local = self._bind(f, expr, env, args, attrs)
                return self._array(f, t, label, local, expr, steps, run, env, limit)
            case Struct():
                local = self._bind(f, expr, env, args, attrs)
                inner: list[str] = []
                before = len(self.keeps)
                self.struct_depth += 1
                run = self._struct_body(t.fields, label, expr, steps, run, inner, None, limit)
                self.struct_depth -= 1
                cls = self._struct_class(t)
                self._after(run, steps, Build(local, cls, inner))
                for a in self.keeps[before:]:
                    self._after(
                        run,
                        steps,
                        KeepSet(local, a.keep, a.local, a.keep_start, a.inner_limit, a.keep_states),
                    )
                    kept = (a.keep, a.annotation)
                    if kept not in self.struct_classes[cls].kept:
                        self.struct_classes[cls].kept.append(kept)
                del self.keeps[before:]
                return run
            case Switch():
                local = self._bind(f, expr, env, args, attrs)
                self._close(run, steps)
                steps.append(self._switch(t, label, local, expr, env, limit))
                return self._run(limit)
            case Map() | Choice() | BitField() | Typed():
                self._bind(f, expr, env, args, attrs)  # as before the match: then refused
                raise PlanError(f"{f.span}: {label}: no plan for {type(t).__name__}")
            case _:
                assert_never(t)

    def _bind(
        self,
        f: Field,
        expr: str,
        env: dict[str, tuple[str, str]],
        args: list[str],
        attrs: list[Attr] | None,
    ) -> str:
        """A field holding one value: its decode local, which `env` knows by the field's spec name
        (with `expr`, its encode expression) and the owner's constructor takes (`args`), and its
        attribute when the owner has a class of its own (`attrs`)."""
        local = self._local(f.name)
        env[f.name] = (local, expr)
        args.append(local)
        if attrs is not None:
            attrs.append(Attr(attr_name(f.name), self._annotation(f.type, f.nullable), _doc(f)))
        return local

    def _fixed(
        self,
        ptype: PrimitiveType,
        label: str,
        local: str,
        expr: str,
        steps: list[object],
        run: Run,
    ) -> Run:
        """A fixed-width primitive joins the open run; conversions follow the unpack."""
        kind, name = ptype.kind, ptype.name
        if kind == "int" and name == "uint24":
            raw = self._local(local + "Raw")
            run.items.append(Fixed(label, "3s", 3, raw, expr, "uint24"))
            self._after(run, steps, Uint24(local, raw))
        elif kind == "int":
            run.items.append(Fixed(label, STRUCT_CODES[name], ptype.width, local, expr))
        elif kind == "timestamp":
            run.items.append(Fixed(label, "Q", 8, local, expr))
        elif kind == "float":
            run.items.append(Fixed(label, FLOAT_CODES[ptype.width], ptype.width, local, expr))
        elif kind == "bool":
            raw = self._local(local + "Raw")
            run.items.append(Fixed(label, "B", 1, raw, expr, "bool"))
            self._after(run, steps, BoolCheck(label, raw, local, run, len(run.items) - 1))
        elif kind == "decimal":
            self.decimals = True
            scale, value = self._local(local + "Scale"), self._local(local + "Value")
            code = "i" if ptype.width == 5 else "q"
            run.items.append(Fixed(label, "B", 1, scale, local, "part", 0))
            run.items.append(Fixed(label, code, ptype.width - 1, value, local, "part", 1))
            run.prepare.append(DecimalParts(local, expr))
            self._after(run, steps, DecimalValue(local, value, scale))
        elif kind == "void":
            self._after(run, steps, NoneValue(local))
        else:
            raise PlanError(f"{label}: no plan for a {kind}")
        return run

    def _presence(
        self,
        f: Field,
        t: Presence,
        label: str,
        steps: list[object],
        run: Run,
        env: dict[str, tuple[str, str]],
        limit: str,
    ) -> Run:
        self._close(run, steps)
        words = self._local(f.name)
        cont = 0 if t.continuation is None else 1 << t.continuation
        step = PresenceStep(
            label, words, limit, STRUCT_CODES[f"uint{t.width * 8}"], t.width, cont, []
        )
        self.presence[f.name] = (step, t)
        env[f.name] = (words, "")
        steps.append(step)
        return self._run(limit)

    def _bits(
        self,
        f: Field,
        t: Bits,
        label: str,
        expr: str,
        steps: list[object],
        run: Run,
        env: dict[str, tuple[str, str]],
        args: list[str],
        attrs: list[Attr] | None,
    ) -> Run:
        container = self._local(f.name)
        owner_label, owner_expr = label.rsplit(".", 1)[0], expr.rsplit(".", 1)[0]
        members: list[BitMember] = []
        pos = t.width * 8 if t.order == "msb" else 0
        for m in t.members:
            assert isinstance(m.type, BitField)
            if t.order == "msb":
                pos -= m.type.bits
                shift = pos
            else:  # least significant first, as AMQP packs bit fields
                shift = pos
                pos += m.type.bits
            mask = (1 << m.type.bits) - 1
            if m.type.value is not None:
                members.append(
                    BitMember(
                        "", shift, mask, m.type.value, f"{owner_label}.{attr_name(m.name)}", ""
                    )
                )
                continue
            mlocal = self._local(m.name)
            mexpr = f"{owner_expr}.{attr_name(m.name)}"
            members.append(
                BitMember(
                    mlocal,
                    shift,
                    mask,
                    None,
                    f"{owner_label}.{attr_name(m.name)}",
                    mexpr,
                    m.type.boolean,
                )
            )
            env[m.name] = (mlocal, mexpr)
            args.append(mlocal)
            if attrs is not None:
                attrs.append(Attr(attr_name(m.name), "bool" if m.type.boolean else "int", _doc(m)))

        code = {1: "B", 2: "H", 4: "I", 8: "Q"}[t.width]
        run.items.append(Fixed(label, code, t.width, container, "", "bits", bits=members))
        self._after(run, steps, BitsStep(container, members, label))
        return run

    def _array(
        self,
        f: Field,
        t: Array,
        label: str,
        local: str,
        expr: str,
        steps: list[object],
        run: Run,
        env: dict[str, tuple[str, str]],
        limit: str,
    ) -> Run:
        step = ArrayStep(
            label,
            local,
            "",
            limit,
            _min_size(self.protocol, t.item),
            expr,
            annotation=self._annotation(t, False),
        )
        if t.count_prefix is not None:
            step.count_local = self._local(f.name + "Count")
            run.items.append(
                Fixed(
                    label,
                    STRUCT_CODES[t.count_prefix],
                    INT_WIDTHS[t.count_prefix][0],
                    step.count_local,
                    expr,
                    "len",
                )
            )
        else:
            assert t.count_field is not None
            step.count_local, step.count_expr = env[t.count_field]
        if t.size_field is not None:
            step.size_local, step.size_expr = env[t.size_field]
            step.inner_limit = self._local(f.name + "End")
            step.mark = self._local(f.name + "Mark")
        self._close(run, steps)
        inner = step.inner_limit or limit
        item = t.item
        if isinstance(item, Prim) and item.name in INT_WIDTHS and item.name != "uint24":
            step.prim_code = STRUCT_CODES[item.name]
            step.prim_width = INT_WIDTHS[item.name][0]
        else:
            step.item_var = self._local("Item")
            body: list[object] = []
            tmp: list[str] = []
            nullable = self._item_nullable(item)
            r = self._field(
                Field("Item", item, nullable=nullable),
                f"{label}[]",
                step.item_var,
                body,
                self._run(inner),
                {},
                tmp,
                None,
                inner,
            )
            self._close(r, body)
            step.body = body
            step.item_value = tmp[0]
        steps.append(step)
        return self._run(limit)

    def _switch(
        self,
        t: Switch,
        label: str,
        local: str,
        expr: str,
        env: dict[str, tuple[str, str]],
        limit: str,
    ) -> SwitchStep:
        cases = []
        for case in t.cases:
            if case.type is None:
                cases.append(SwitchCase(case.values, case.label, [], "None"))
                continue
            body: list[object] = []
            tmp: list[str] = []
            r = self._field(
                Field("Value", case.type), label, expr, body, self._run(limit), {}, tmp, None, limit
            )
            self._close(r, body)
            cls = ""  # a peek switch's encoder tells the cases apart by the value's class
            match case.type:
                case Struct():
                    cls = self._struct_class(case.type)
                case Prim() if case.type.name not in INT_WIDTHS:
                    cls = text_class(self.protocol, case.type.name)
                case (
                    Prim()
                    | Ref()
                    | Array()
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
                    if t.peek_bits:
                        raise PlanError(
                            f"{label}: the peeked case {case.label!r} has no class of its own"
                        )
                case _:
                    assert_never(case.type)
            cases.append(SwitchCase(case.values, case.label, body, tmp[0], cls))
        on_local = on_expr = on_label = ""
        if t.on is not None:
            if t.on not in env:
                raise PlanError(f"{label}: switch on {t.on}, which is not an earlier sibling")
            on_local, on_expr = env[t.on]
            on_label = f"{label.rsplit('.', 1)[0]}.{snake(t.on)}"
        tag = self._local("Tag") if t.peek_bits else ""
        return SwitchStep(
            label,
            local,
            on_local,
            on_expr,
            on_label,
            expr,
            cases,
            limit,
            t.peek_bits,
            tag,
            self._annotation(t, False),
        )

    # ---- classes for nested structures

    def _struct_name(self, t: Struct) -> Code:
        """A structure's class: its spec name, after its owner's when the name clashes."""
        name = f"{self.owner}{t.name}" if t.name in self.clashing else t.name
        return pytext.identifier(name, "structure class", getattr(t.name, "span", None))

    def _struct_class(self, t: Struct) -> Code:
        name = self._struct_name(t)
        if name not in self.struct_classes:
            attrs = []
            for f in t.fields:
                if isinstance(f.type, Bits):
                    for m in f.type.members:
                        assert isinstance(m.type, BitField)
                        if m.type.value is None:
                            kind = "bool" if m.type.boolean else "int"
                            attrs.append(Attr(attr_name(m.name), kind, _doc(m)))
                    continue
                annotation = self._annotation(f.type, f.nullable)
                attrs.append(Attr(attr_name(f.name), annotation, _doc(f)))
            self.struct_classes[name] = StructClass(name, attrs, t.name, _records(name, t, attrs))
        return name

    def _annotation(self, t: TypeRef, nullable: bool) -> str:
        match t:
            case Prim():
                base = _PY_CLASS[self.protocol.type(t.name).kind]
                return f"{base} | None" if nullable and base != "None" else base
            case Ref():
                target = self.protocol.named_type(t.name)
                if isinstance(target, Map):
                    return "dict[str, Any]"
                if isinstance(target, Array):
                    return "list[Any]"
                return "Any"
            case Blob():
                return "bytes"
            case Array():
                return f"list[{self._annotation(t.item, self._item_nullable(t.item))}]"
            case Struct():
                return self._struct_name(t)
            case Switch():
                opts = []
                for c in t.cases:
                    a = "None" if c.type is None else self._annotation(c.type, False)
                    if a not in opts:
                        opts.append(a)
                return " | ".join(sorted(opts, key=lambda a: a == "None"))
            case Map() | Choice() | Bits() | BitField() | Presence() | Alternatives() | Typed():
                return "int"
            case _:
                assert_never(t)

    def _item_nullable(self, t: TypeRef) -> bool:
        """Array items of a type that can say null are decoded as None when they do."""
        return isinstance(t, Prim) and self.protocol.type(t.name).null_length is not None

    # ---- named types: one decode and one encode function each

    def _named(self, n: NamedType) -> NamedPlan:
        t = n.type
        func = _func(n.name)
        self.owner = f"value_{func}"
        self.used = {
            *("buf", "at", "end", "parts", "value", "out", "stop", "key", "item", "ctor"),
            *("fixed", "number", "width", "constructors"),
        }
        self.runs = []
        label = n.name
        match t:
            case Map():
                return self._container(
                    n, func, "map", "dict[str, Any]", t.size_prefix, t.value, key=t.key
                )
            case Array() if t.size_prefix is not None:
                return self._container(n, func, "array", "list[Any]", t.size_prefix, t.item)
            case Choice():
                plan = self._choice(n, t, "end")
                for run in self.runs:
                    run.only = "encode"
                plan.runs = self.runs
                return plan
            case Struct():
                # a structure of its own (AMQ RFC 006's message head): its dataclass gets a codec
                cls = self._struct_class(t)
                self.struct_classes[cls].codec, self.struct_classes[cls].doc = func, n.doc
                plan = NamedPlan(n.name, func, "struct", cls, cls)
                args: list[str] = []
                run = self._struct_body(
                    t.fields, cls, "value", plan.steps, self._run("end"), args, None, "end"
                )
                self._close(run, plan.steps)
                plan.steps.append(Build("value", cls, args))
                plan.runs = self.runs
                return plan
            case (
                Array()  # counted, not sized: no plan for it as a named type
                | Prim()
                | Ref()
                | Switch()
                | Blob()
                | Bits()
                | BitField()
                | Presence()
                | Alternatives()
                | Typed()
            ):
                raise PlanError(f"{n.span}: {label}: a named {type(t).__name__} has no plan yet")
            case _:
                assert_never(t)

    def _choice(self, n: NamedType, t: Choice, limit: str) -> NamedPlan:
        """A constructor choice's plan: its cases read up to `limit` (its own function's `end`,
        or a container's `stop` where the container's loop reads them itself)."""
        label = n.name
        plan = NamedPlan(n.name, _func(n.name), "choice", "Any", label)
        plan.ctor_code = STRUCT_CODES[t.constructor]
        plan.ctor_width = INT_WIDTHS[t.constructor][0]
        for case in t.cases:
            if case.type is None:
                raise PlanError(f"{n.span}: {label}: constructor {case.label!r} has no type")
            code, width = self._one_number(case.type)
            # a fixed number's steps are not written (the lookup reads it): no run for them
            body, local = ([], "") if code else self._value(case.type, label, "value", limit)
            plan.cases.append(
                ChoiceCase(
                    case.values[0], case.label, body, local, *self._fits(case.type), code, width
                )
            )
        plan.prefer = [*t.prefer, *(c.values[0] for c in t.cases if c.values[0] not in t.prefer)]
        return plan

    def _one_number(self, t: TypeRef) -> tuple[str, int]:
        """The struct code and width of a type that is one fixed-width number, as it is in
        Python too (no check or conversion after the unpack); else ("", 0)."""
        if not isinstance(t, Prim):
            return "", 0
        p = self.protocol.type(t.name)
        if p.kind == "int" and p.name in STRUCT_CODES and p.name != "uint24":
            return STRUCT_CODES[p.name], p.width
        if p.kind == "timestamp":
            return "Q", 8
        if p.kind == "float":
            return FLOAT_CODES[p.width], p.width
        return "", 0

    def _container(
        self,
        n: NamedType,
        func: str,
        kind: Literal["map", "array"],
        annotation: str,
        size: str,
        item: TypeRef,
        key: TypeRef | None = None,
    ) -> NamedPlan:
        """A named map or array whose size prefix says how many bytes its entries fill: the
        steps of a `key` (a map's) and of an `item` (a map's value, an array's item), or the
        item's named type's functions."""
        label = n.name
        plan = NamedPlan(
            n.name, func, kind, annotation, label, STRUCT_CODES[size], INT_WIDTHS[size][0]
        )
        if key is not None:
            plan.key_steps, plan.key_local = self._value(key, f"{label}.key", "key", "stop", "Key")
            first = plan.key_steps[0] if plan.key_steps else None
            if isinstance(first, Run) and first.byte:
                first.present = True  # the loop's `while at < stop` holds its byte
        item_label = f"{label}[]"
        if isinstance(item, Ref):
            target = self.protocol.named_type(item.name)
            ctor = "ctor" if isinstance(target, Choice) else ""
            plan.item = RefStep(item_label, "item", _func(item.name), "item", "stop", ctor, "ctor")
            if isinstance(target, Choice):
                node = next(x for x in self.protocol.named if x.name == item.name)
                first = len(self.runs)
                plan.choice = self._choice(node, target, "stop")
                for run in self.runs[first:]:
                    run.only = "decode"
        else:
            plan.item_steps, plan.item_local = self._value(item, item_label, "item", "stop", "Item")
        plan.runs = self.runs
        return plan

    def _value(
        self, t: TypeRef, label: str, expr: str, limit: str, name: str = "Value"
    ) -> tuple[list[object], str]:
        """The steps of one value of `t` that `expr` holds, and the local they decode it into."""
        body: list[object] = []
        out: list[str] = []
        run = self._field(Field(name, t), label, expr, body, self._run(limit), {}, out, None, limit)
        self._close(run, body)
        return body, out[0]

    def _fits(self, t: TypeRef) -> tuple[str, int, int]:
        """Which Python values can be encoded as `t` (ChoiceCase.fits, low, high)."""
        match t:
            case Ref():
                target = self.protocol.named_type(t.name)
                if isinstance(target, Map | Array):
                    return ("dict" if isinstance(target, Map) else "list"), 0, 0
                return "none", 0, 0
            case Prim():
                p = self.protocol.type(t.name)
                if p.kind in ("int", "timestamp"):
                    width, signed = (p.width, p.signed) if p.kind == "int" else (8, False)
                    bits = width * 8
                    if signed:
                        return "int", -(1 << (bits - 1)), (1 << (bits - 1)) - 1
                    return "int", 0, (1 << bits) - 1
                return p.kind, 0, 0
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
                | Typed()
            ):
                return "none", 0, 0
            case _:
                assert_never(t)


_PY_CLASS = {
    "int": "int",
    "timestamp": "int",
    "float": "float",
    "decimal": "Decimal",
    "bool": "bool",
    "string": "str",
    "bytes": "bytes",
    "void": "None",
}
"""The Python class of a primitive's values, by its kind."""


def _func(name: str) -> Code:
    """A named type's function suffix: `field-value` -> `field_value`."""
    func = re.sub(r"\W+", "_", snake(name)).strip("_")
    return pytext.name_part(
        func, f"named type {str(name)!r}: its function suffix", getattr(name, "span", None)
    )


def _int_name(f: Field) -> str:
    assert isinstance(f.type, Prim) and f.type.name in INT_WIDTHS, f.name
    return f.type.name


def plan_frame(protocol: Protocol) -> FramePlan:
    """The frame layout as offsets and struct formats."""
    frame = protocol.frame
    header: list[HeaderField] = []
    offset = 0
    for f in frame.header:
        name = _int_name(f)
        role = (
            "length"
            if f.name == frame.length
            else "dispatch"
            if f.name in frame.dispatch or f.name == frame.header_words
            else "version"
            if f.name == frame.version
            else "carried"
        )
        width = INT_WIDTHS[name][0]
        if name == "uint24":
            raise PlanError(f"{frame.span}: a 3-byte frame header field")
        header.append(
            HeaderField(
                attr_name(f.name),
                f"frame.{attr_name(f.name)}",
                STRUCT_CODES[name],
                offset,
                width,
                role,
                f.doc,
            )
        )
        offset += width
    length = next(h for h in header if h.role == "length")
    trailer = [
        (
            f"frame.{attr_name(f.name)}",
            STRUCT_CODES[_int_name(f)],
            INT_WIDTHS[_int_name(f)][0],
            int(f.default or 0),
        )
        for f in frame.trailer
    ]
    trailer_fmt = ">" + "".join(code for _, code, _, _ in trailer)
    trailer_bytes = struct.pack(trailer_fmt, *(v for _, _, _, v in trailer))
    if frame.length_counts == "after":
        adjust = length.offset + length.width
        min_length = offset - adjust + len(trailer_bytes)
    elif frame.length_counts == "frame":  # the length is the frame's, header included
        adjust = 0
        min_length = offset + len(trailer_bytes)
    else:
        adjust = offset + len(trailer_bytes)
        min_length = 0
    by_name = {f.name: h for f, h in zip(frame.header, header, strict=True)}
    body_keys = []
    for key in frame.body_keys:
        fmt = ">" + "".join(STRUCT_CODES[_int_name(f)] for f in key.fields)
        labels = [f"frame.{attr_name(f.name)}" for f in key.fields]
        body_keys.append(BodyKeyPlan(key.when, fmt, struct.calcsize(fmt), labels))
    plan = FramePlan(
        header,
        ">" + "".join(h.code for h in header),
        offset,
        length,
        frame.length_counts,
        adjust,
        min_length,
        trailer,
        trailer_fmt,
        len(trailer_bytes),
        trailer_bytes,
        # a header that gives its own size is read as a layout key too: its range is checked
        # with the frame type's (FRAME_KEYS), before the body is found after it
        [
            by_name[n]
            for n in (*([frame.header_words] if frame.header_words else []), *frame.dispatch)
        ],
        by_name[frame.version] if frame.version else None,
        [h for h in header if h.role == "carried"],
        body_keys,
        {p.sender: p.data for p in frame.preambles},
        frame.response_flag,
        ", ".join(f"{_int_name(f)} {attr_name(f.name)}" for f in frame.header),
    )
    plan.protocol_headers = [(h.data, h.doc) for h in frame.protocol_headers]
    if frame.header_words:
        plan.header_words = by_name[frame.header_words]
    if frame.length_escape is not None:
        # the wide form unpacks to the same locals: the escape value skipped as padding
        plan.escape = frame.length_escape.value
        plan.wide_code = STRUCT_CODES[frame.length_escape.wide]
        plan.wide_width = INT_WIDTHS[frame.length_escape.wide][0]
        plan.wide_fmt = ">" + "".join(
            "x" * h.width + plan.wide_code if h is length else h.code for h in header
        )
    return plan


def _records(name: str, t: Struct, attrs: list[Attr]) -> RecordsView | None:
    blobs = [f for f in t.fields if isinstance(f.type, Blob) and f.type.records is not None]
    if not blobs:
        return None
    if len(blobs) > 1:
        raise PlanError(f"{blobs[1].span}: {name}: one blob of records per structure")
    f = blobs[0]
    assert isinstance(f.type, Blob) and f.type.records is not None
    r = f.type.records
    if r.compression_field and not r.size_field:
        raise PlanError(
            f"{f.span}: {name}.{attr_name(f.name)}: compressed records need their decompressed "
            "length, to bound what decompressing may allocate"
        )
    blob, length = snake(f.name), snake(f.type.length_field or "")
    count, size = snake(r.count_field), snake(r.size_field or "")
    compression = snake(r.compression_field or "")
    derived = {
        blob: "data",
        length: "len(data)",
        count: "len(records)",
        size: "len(raw)",
        compression: compression,
    }
    args = []
    for a in attrs:
        if a.name in derived and a.name:
            args.append(derived[a.name])
        elif a.annotation == "int":
            args.append("0")  # reserved bits and the like
        else:
            raise PlanError(f"{f.span}: {name}.{a.name}: from_records cannot fill it")
    return RecordsView(
        blob,
        f"{name}.{blob}",
        f"_{snake(name).upper()}",
        STRUCT_CODES[r.item_prefix],
        count,
        size,
        compression,
        r.codecs,
        args,
    )


def _shape(t: Struct) -> str:
    """A structure's layout without its spans and prose: equal shapes share one class."""
    return json.dumps(shape(t), sort_keys=True)


def _structs(fields: tuple[Field, ...]) -> list[Struct]:
    out: list[Struct] = []

    def visit(t: TypeRef) -> None:
        match t:
            case Struct():
                out.append(t)
                for f in t.fields:
                    visit(f.type)
            case Array():
                visit(t.item)
            case Switch():
                for c in t.cases:
                    if c.type is not None:
                        visit(c.type)
            case (
                Prim()
                | Ref()
                | Map()
                | Choice()
                | Blob()
                | Bits()
                | BitField()
                | Presence()
                | Alternatives()
                | Typed()
            ):
                pass  # a Ref is planned as a named type; _field lays out no structure in these
            case _:
                assert_never(t)

    for f in fields:
        visit(f.type)
    return out


_ZEROS = {
    "int": Code("0"),
    "bool": Code("False"),
    "str": Code('""'),
    "bytes": Code('b""'),
    "float": Code("0.0"),
}
"""The empty value of each attribute type: a well-formed wire value (an unset flag, an empty
string or table) a constructor may leave out."""
_FACTORIES = {"dict[str, Any]": "dict"}


def _with_defaults(attrs: list[Attr], fields: tuple[Field, ...]) -> list[Attr]:
    """Constructor defaults: a field the spec gives a default or a reserved value has it, a flag
    is unset, and every field after either has its type's empty value, as pika's classes do (Python keeps
    positional order: `QueueDeclare(queue="q1", durable=True)` leaves the reserved ticket and
    the other flags at their wire default). A field with no empty value (a structure) ends that:
    the fields before it stay required."""
    given: dict[str, int | str | bool] = {}
    for f in fields:
        members = f.type.members if isinstance(f.type, Bits) else ()
        for m in (f, *members):
            if m.default is not None:
                given[attr_name(m.name)] = m.default
    out, defaulting = [], False
    for a in attrs:
        if a.name in given:
            value = given[a.name]
            # a reserved longstr: empty text in the spec, bytes in Python
            text = (
                pytext.literal(value.encode())
                if a.annotation == "bytes" and isinstance(value, str)
                else pytext.literal(value)
            )
            out.append(replace(a, default=text))
            defaulting = True
        elif a.annotation == "bool":  # a flag: unset unless the caller sets it
            out.append(replace(a, default=Code("False")))
            defaulting = True
        elif defaulting and a.annotation in _ZEROS:
            out.append(replace(a, default=_ZEROS[a.annotation]))
        elif defaulting and (a.annotation in _FACTORIES or a.annotation.startswith("list[")):
            out.append(replace(a, factory=_FACTORIES.get(a.annotation, "list")))
        else:
            out.append(a)
            defaulting = False
    for i in range(len(out) - 1, -1, -1):  # a required field makes every field before it required
        if not (out[i].default or out[i].factory):
            out[:i] = [replace(a, default="", factory="") for a in out[:i]]
            break
    return out


def _doc(f: Field) -> str:
    parts = [f.doc] if f.doc else []
    if f.max_length:
        (
            parts.append(f"At most {f.max_length} characters.")
            if f"max {f.max_length}" not in f.doc
            else None
        )
    if f.enum:
        parts.append(f"Values: {f.enum}.")
    return " ".join(p for p in parts if p)


def _min_size(protocol: Protocol, t: TypeRef) -> int:
    """The fewest bytes one value of `t` can take on the wire (for refusing counts early)."""
    match t:
        case Prim():
            p = protocol.type(t.name)
            return p.width if p.fixed else INT_WIDTHS[p.length_prefix][0]
        case Array():
            prefix = t.count_prefix or t.size_prefix
            return INT_WIDTHS[prefix][0] if prefix else 0
        case Map():
            return INT_WIDTHS[t.size_prefix][0]
        case Struct():
            return _min_size_fields(protocol, t.fields)
        case Bits() | Presence():
            return t.width
        case Switch():
            sizes = [0 if c.type is None else _min_size(protocol, c.type) for c in t.cases]
            return min(sizes) if sizes else 0
        case Ref():
            target = protocol.named_type(t.name)
            return 1 if isinstance(target, Choice) else _min_size(protocol, target)
        case Choice() | Blob() | BitField() | Alternatives() | Typed():
            return 0
        case _:
            assert_never(t)


def _min_size_fields(protocol: Protocol, fields: tuple[Field, ...]) -> int:
    return sum(_min_size(protocol, f.type) for f in fields if not (f.optional or f.present))
