"""Plans for protocols whose messages are segment payloads of packing-flag structs.

Such a protocol frames segments (`FrameLayout.segments`: first/last flags in the frame header)
and lays out its controls, commands and structs as a class code and code, then packing flags
counted from the least significant bit with no continuation bit (`Presence(order="lsb",
continuation=None)`), then the fields the flags say are present. Structs may carry a size
prefix (`Struct.size_prefix`) and codes (`Struct.ident`), and values of maps, lists and arrays
carry their type's code (`PrimitiveType.code`). `Planner(protocol).plan()` calls `plan` when the
IR has a segment layer; the plan is data (names, widths, codes, masks), the templates
(`_packed_macros.j2`, `_typed_value_macros.j2`, `_segment_macros.j2`) write the code.

What the bytes mean comes from the IR: every type's code and width, every struct's size prefix,
packing flags, codes and fields, the enums, the classes' and methods' codes, the protocol
header. What is ours is how the spec's types meet Python's, one table (`PRIMS`): which builtin
each primitive's values are and which of the codec's readers implements it (checked against
the IR's widths).

Spec text reaches the templates as data (`pytext.SpecText`): docs, spec names and labels, which
the templates write through `doc` or `literal`. What the templates write as code is planned here
as `pytext.Code`: names made from the spec's (classes, attributes, enums, reader suffixes) are
checked to be Python identifiers (`pytext.identifier`, a located error otherwise), and annotations
and sample values come from this module's own tables.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import assert_never

from specgen.emitters import pytext
from specgen.emitters.naming import PlanError, attr_name
from specgen.emitters.pytext import Code
from specgen.ir import (
    INT_WIDTHS,
    Alternatives,
    Array,
    BitField,
    Bits,
    Blob,
    Choice,
    Constant,
    Field,
    Map,
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
)

# type name -> (implementation, parameter, Python annotation). Implementations: int and
# float (a struct format), bool, bin (fixed octets), char (an encoding), uuid, dec (the
# mantissa's format), void, vbin, str (an encoding), ranges (a pair's format), map, list,
# array, struct32.
PRIMS: dict[str, tuple[str, str, str]] = {
    "bin8": ("bin", "", "bytes"),
    "int8": ("int", "b", "int"),
    "uint8": ("int", "B", "int"),
    "char": ("char", "iso-8859-15", "str"),
    "boolean": ("bool", "", "bool"),
    "bin16": ("bin", "", "bytes"),
    "int16": ("int", "h", "int"),
    "uint16": ("int", "H", "int"),
    "bin32": ("bin", "", "bytes"),
    "int32": ("int", "i", "int"),
    "uint32": ("int", "I", "int"),
    "float": ("float", "f", "float"),
    "char-utf32": ("char", "utf-32-be", "str"),
    "sequence-no": ("int", "I", "int"),
    "bin64": ("bin", "", "bytes"),
    "int64": ("int", "q", "int"),
    "uint64": ("int", "Q", "int"),
    "double": ("float", "d", "float"),
    "datetime": ("int", "q", "int"),  # POSIX time_t: seconds, signed
    "bin128": ("bin", "", "bytes"),
    "uuid": ("uuid", "", "uuid.UUID"),
    "bin256": ("bin", "", "bytes"),
    "bin512": ("bin", "", "bytes"),
    "bin1024": ("bin", "", "bytes"),
    "vbin8": ("vbin", "", "bytes"),
    "str8-latin": ("str", "iso-8859-15", "str"),
    "str8": ("str", "utf-8", "str"),
    "str8-utf16": ("str", "utf-16-be", "str"),
    "vbin16": ("vbin", "", "bytes"),
    "str16-latin": ("str", "iso-8859-15", "str"),
    "str16": ("str", "utf-8", "str"),
    "str16-utf16": ("str", "utf-16-be", "str"),
    "byte-ranges": ("ranges", "Q", "list[tuple[int, int]]"),
    "sequence-set": ("ranges", "I", "list[tuple[int, int]]"),
    "vbin32": ("vbin", "", "bytes"),
    "map": ("map", "", "dict[str, Typed]"),
    "list": ("list", "", "list[Typed]"),
    "array": ("array", "", "Array"),
    "struct32": ("struct32", "", "Any"),
    "bin40": ("bin", "", "bytes"),
    "dec32": ("dec", "i", "decimal.Decimal"),
    "bin72": ("bin", "", "bytes"),
    "dec64": ("dec", "q", "decimal.Decimal"),
    "void": ("void", "", "None"),
    "bit": ("void", "", "None"),
}
_FMT_WIDTH = {"b": 1, "B": 1, "h": 2, "H": 2, "i": 4, "I": 4, "q": 8, "Q": 8, "f": 4, "d": 8}


@dataclass
class PrimPlan:
    name: str
    py: Code  # `str8_latin`: the reader is `_r_str8_latin`
    impl: str
    param: str
    annotation: Code
    code: int | None
    fixed: int | None
    variable: int | None
    label: str
    doc: str
    sample: Code  # a literal of a value to round-trip ("": the template writes one from `impl`)

    @property
    def reader(self) -> Code:
        return Code("_r_" + self.py)

    @property
    def writer(self) -> Code:
        return Code("_w_" + self.py)


@dataclass
class FieldPlan:
    attr: Code
    name: str  # as the XML writes it
    kind: str  # "bit", "prim" or "struct"
    prim: Code  # the primitive's py name, or the struct's reader suffix
    cls: Code  # the struct's class name ("" for primitives)
    enum: Code  # the enum class its values come from ("" for none)
    annotation: Code  # of its values (an enum's: of the integers beside the enum's members)
    required: bool
    flag: int  # its packing flag's bit index
    doc: str
    sample: Code  # a primitive's sample literal; an enum's sample member's name

    @property
    def mask(self) -> int:
        """Its packing flag in the flags read as a little-endian integer."""
        return 1 << self.flag


@dataclass
class StructPlan:
    name: str  # qualified XML name
    cls: Code  # Python class
    py: Code  # reader/writer suffix
    size: int
    pack: int
    class_code: int | None
    code: int | None
    fields: list[FieldPlan]
    doc: str
    kind: str = "struct"  # "struct", "control" or "command"
    result: Code = Code("")  # a command's result struct class
    header: list[Code] = field(default_factory=list)  # its header segment's struct classes
    body: bool = False
    span: str = ""  # where the spec defines it

    @property
    def all_flags(self) -> int:
        return (1 << len(self.fields)) - 1 if self.pack else 0

    @property
    def flags_at(self) -> int:
        """Where its packing flags start in its encoding (a method's: in its payload)."""
        if self.kind == "command":
            return 4  # class code, code, the session header's size and flags
        if self.kind == "control":
            return 2
        return self.size + (2 if self.code is not None else 0)

    @property
    def absent(self) -> str:
        """Hex of its encoding with every field absent, from its XML attributes alone."""
        flags = bytes(self.pack)
        if self.kind == "command":
            return (bytes((self.class_code or 0, self.code or 0, 1, 0)) + flags).hex()
        if self.kind == "control":
            return (bytes((self.class_code or 0, self.code or 0)) + flags).hex()
        codes = bytes((self.class_code or 0, self.code or 0)) if self.code is not None else b""
        size = (len(codes) + self.pack).to_bytes(self.size, "big") if self.size else b""
        return (size + codes + flags).hex()


@dataclass
class EnumPlan:
    cls: str
    name: str
    members: list[tuple[str, int, str]]
    doc: str


@dataclass
class ConstPlan:
    name: Code  # CONST_NAME
    value: int
    doc: str
    group: str


@dataclass
class SegmentPlan:
    """The segment layer's frame header bits and the protocol header before the first frame."""

    flags: str  # the header field holding them
    first_segment: int
    last_segment: int
    first_frame: int
    last_frame: int
    protocol_header: bytes
    doc: str
    type_enum: Code  # the segment types' enum (the frame's dispatch field's)
    track_enum: Code  # the enum of the other header field that has one


@dataclass
class PackedPlan:
    source: str  # the spec document, as spans name it
    major: int  # the protocol header's version
    minor: int
    segments: SegmentPlan
    prims: list[PrimPlan]
    enums: list[EnumPlan]
    structs: list[StructPlan]
    methods: list[StructPlan]
    classes: list[ConstPlan]
    constants: list[ConstPlan]
    domains: list[tuple[str, str, str]] = field(default_factory=list)  # (name, base, label)

    @property
    def coded(self) -> list[StructPlan]:
        return [s for s in self.structs if s.code is not None]

    @property
    def by_cls(self) -> dict[str, StructPlan]:
        """Struct class -> its plan: the templates write a struct field's sample from it."""
        return {s.cls: s for s in self.structs}

    @property
    def prim_by_py(self) -> dict[str, PrimPlan]:
        return {p.py: p for p in self.prims}

    @property
    def sample_names(self) -> list[Code]:
        """The codec classes the conformance tests' sample values name."""
        return sorted({s.cls for s in self.structs + self.methods}, key=str.lower)

    @property
    def sample_enums(self) -> list[Code]:
        """The enums the conformance tests' sample values name."""
        return sorted({f.enum for s in self.structs + self.methods for f in s.fields if f.enum})

    @property
    def used_prims(self) -> list[PrimPlan]:
        """The primitives a struct's, control's or command's field is read and written as."""
        used = {f.prim for s in self.structs + self.methods for f in s.fields if f.kind == "prim"}
        return [p for p in self.prims if p.py in used]

    @property
    def controls(self) -> list[StructPlan]:
        return [m for m in self.methods if m.kind == "control"]

    @property
    def commands(self) -> list[StructPlan]:
        return [m for m in self.methods if m.kind == "command"]


def py(name: str) -> str:
    return name.replace("-", "_").replace(".", "_").lower()


def _suffix(name: str, what: str, span: SourceSpan | None) -> Code:
    """`py(name)` as the part of a name it is in the code (`_r_<suffix>`), checked."""
    return pytext.identifier(py(name), what, span if span is not None else _span(name))


def _span(text: str) -> SourceSpan | None:
    """Where a spec string came from (`pytext.SpecText.span`), when it says."""
    return getattr(text, "span", None)


def const(name: str) -> str:
    """`MIN-MAX-FRAME-SIZE` -> `MIN_MAX_FRAME_SIZE`."""
    return re.sub(r"[-.\s]+", "_", name).upper()


def plan(protocol: Protocol) -> PackedPlan:
    """The package's plan, from the IR alone (after the overlay)."""
    prims = [_prim(t) for t in protocol.types]
    by_prim = {p.name: p for p in prims}
    named: dict[str, tuple[NamedType, Struct]] = {}
    for n in protocol.named:
        if not isinstance(n.type, Struct):
            raise PlanError(f"{n.span}: named type {n.name} is no struct")
        named[n.name] = (n, n.type)
    coded = [s for _, s in named.values() if s.ident]
    if "struct32" in by_prim:
        if not coded:
            raise PlanError(f"{protocol.source}: struct32 is defined but no struct has a code")
    enums = [
        EnumPlan(e.name, e.spec_name or e.name, [(v.name, v.value, v.doc) for v in e.values], e.doc)
        for e in protocol.enums
    ]
    ctx = _Context(protocol, by_prim, named, set())
    structs: list[StructPlan] = []
    # structs used as fields come first: a struct that holds itself has no finite sample
    pending = list(named.values())
    for _ in range(len(pending) + 1):
        later = []
        for n, s in pending:
            nested = [f.type.name for f in s.fields if isinstance(f.type, Ref)]
            if any(t not in ctx.planned for t in nested):
                later.append((n, s))
                continue
            sp = _struct(ctx, n.name, s.name, s.fields, n.span)
            sp.size = INT_WIDTHS[s.size_prefix][0] if s.size_prefix else 0
            sp.class_code, sp.code = _codes(s.ident, n.span)
            sp.doc = n.doc
            if sp.code is not None and sp.size != 4:
                raise PlanError(f"{n.span}: coded struct {n.name} has a {sp.size}-octet size")
            ctx.planned.add(n.name)
            structs.append(sp)
        pending = later
    if pending:
        raise PlanError(f"{pending[0][0].span}: struct {pending[0][0].name} contains itself")
    order = {name: i for i, name in enumerate(named)}
    structs.sort(key=lambda s: order[s.name])
    classes = {s.name: s.cls for s in structs}  # checked names, for the methods' references
    kinds = _kinds(protocol)
    methods: list[StructPlan] = []
    for _, m in protocol.messages():
        if len(m.ident) != 3 or kinds.get(m.ident[0]) not in ("control", "command"):
            raise PlanError(f"{m.span}: {m.name}: {m.ident} is no control's or command's ident")
        kind = kinds[m.ident[0]]
        head = list(itertools.takewhile(lambda f: not isinstance(f.type, Presence), m.fields))
        # the templates write a command's session header by its class, SessionHeader
        want = ["SessionHeader"] if kind == "command" else []
        got = [named[f.type.name][1].name for f in head if isinstance(f.type, Ref)]
        if got != want or len(head) != len(want):
            raise PlanError(f"{m.span}: {m.name}: a {kind} starts with {want or 'its flags'}")
        mp = _struct(ctx, m.spec_name or m.name, m.name, m.fields[len(head) :], m.span)
        if any(f.attr == "session_header" for f in mp.fields):
            raise PlanError(f"{m.span}: {m.name} has a field named like the session header")
        mp.kind = kind
        mp.class_code, mp.code = m.ident[1], m.ident[2]
        mp.doc = m.doc
        mp.body = m.content
        for name in (*([m.result] if m.result else []), *m.content_header):
            if not named[name][1].ident:  # read back by its codes (`STRUCTS`)
                raise PlanError(f"{m.span}: {m.name}: {name} is no coded struct")
        if m.result:
            mp.result = classes[m.result]
        mp.header = [classes[h] for h in m.content_header]
        methods.append(mp)
    preamble = next((p.data for p in protocol.frame.preambles if len(p.data) == 8), b"")
    if not preamble.startswith(b"AMQP\x01\x01"):
        raise PlanError(f"{protocol.source}: no protocol header AMQP 1 1 major minor")
    seg = protocol.frame.segments
    assert seg is not None  # Planner plans a protocol here for its segment layer
    return PackedPlan(
        source=protocol.source,
        major=preamble[6],
        minor=preamble[7],
        segments=SegmentPlan(
            seg.flags,
            seg.first_segment,
            seg.last_segment,
            seg.first_frame,
            seg.last_frame,
            preamble,
            seg.doc,
            *_header_enums(protocol),
        ),
        prims=prims,
        enums=enums,
        structs=structs,
        methods=methods,
        classes=[_const(c) for c in protocol.constants if c.group == "class"],
        constants=[_const(c) for c in protocol.constants if c.group != "class"],
        domains=[(a.name, _type_name(a), a.label) for a in protocol.aliases],
    )


def _const(c: Constant) -> ConstPlan:
    name = pytext.identifier(const(c.name), "constant", c.span or _span(c.name))
    return ConstPlan(name, c.value, c.doc, c.group)


@dataclass
class _Context:
    """What planning a struct's fields reads: the IR, the primitives' plans, the structs by
    name and the names of those planned so far."""

    protocol: Protocol
    prims: dict[str, PrimPlan]
    named: dict[str, tuple[NamedType, Struct]]
    planned: set[str]  # struct names


def _kinds(protocol: Protocol) -> dict[int, str]:
    """Segment type -> "control", "command"...: the enum of the frame's dispatch field."""
    frame = protocol.frame
    field_ = next(f for f in frame.header if f.name == frame.dispatch[0])
    enum = protocol.enum(field_.enum or "")
    if enum is None:
        raise PlanError(f"{frame.span}: frame field {field_.name} names no enum of its values")
    return {v.value: v.name.lower() for v in enum.values}


def _header_enums(protocol: Protocol) -> tuple[Code, Code]:
    """The segment types' enum, with members named for what the segments carry, and the other
    enum a frame header field takes its values from."""
    frame = protocol.frame
    kinds = next(f.enum for f in frame.header if f.name == frame.dispatch[0])
    others = [f.enum for f in frame.header if f.enum and f.name != frame.dispatch[0]]
    enum = protocol.enum(kinds or "")
    names = {v.name for v in enum.values} if enum else set()
    if not {"CONTROL", "COMMAND", "HEADER", "BODY"} <= names or len(others) != 1:
        raise PlanError(
            f"{frame.span}: segment types CONTROL, COMMAND, HEADER, BODY and one more enum"
        )
    return (
        pytext.identifier(kinds or "", "enum", frame.span),
        pytext.identifier(others[0] or "", "enum", frame.span),
    )


def _codes(ident: tuple[int, ...], span: SourceSpan | None) -> tuple[int | None, int | None]:
    if not ident:
        return None, None
    if len(ident) != 2:
        raise PlanError(f"{span}: a coded struct's ident is its class code and code: {ident}")
    return ident[0], ident[1]


def _type_name(alias: NamedType) -> str:
    if not isinstance(alias.type, Prim | Ref):
        raise PlanError(f"{alias.span}: alias {alias.name} is no primitive or struct")
    return alias.type.name


def _prim(t: PrimitiveType) -> PrimPlan:
    if t.name not in PRIMS:
        raise PlanError(f"{t.span}: type {t.name!r} has no Python implementation here")
    impl, param, annotation = PRIMS[t.name]
    fixed = t.width if t.fixed else None
    variable = None if t.fixed else INT_WIDTHS[t.length_prefix][0]
    width = {
        "int": _FMT_WIDTH.get(param),
        "float": _FMT_WIDTH.get(param),
        "bool": 1,
        "char": 4 if param == "utf-32-be" else 1,
        "uuid": 16,
        "dec": 1 + _FMT_WIDTH.get(param, 0),
        "void": 0,
        "bin": fixed,
    }.get(impl)
    if fixed is not None and width != fixed:
        raise PlanError(f"{t.span}: {t.name} is {fixed} octets wide; {impl} makes {width}")
    if variable is not None and impl in ("int", "float", "bool", "char", "uuid", "dec", "void"):
        raise PlanError(f"{t.span}: {t.name} has a size prefix; {impl} has none")
    return PrimPlan(
        name=t.name,
        py=_suffix(t.name, "type", t.span),
        impl=impl,
        param=param,
        annotation=Code(annotation),  # PRIMS': this module's own
        code=t.code,
        fixed=fixed,
        variable=variable,
        label=t.label,
        doc=t.doc,
        sample=_sample(impl, param),
    )


def _sample(impl: str, param: str) -> Code:
    """A value exercising the encoding: the extreme integers, non-ASCII text, two ranges. Code
    of this module's own, written as the conformance tests have always spelled it."""
    if impl == "int":
        bits = 8 * _FMT_WIDTH[param]
        return pytext.number(-(1 << (bits - 1)) if param.islower() else (1 << bits) - 1)
    samples = {
        "float": "1.5" if param == "f" else "-2.25",
        "bool": "True",
        "char": '"\\u20ac"' if param == "iso-8859-15" else '"\\U0001f600"',
        "uuid": 'uuid.UUID("0123abcd-4567-89ef-0123-456789abcdef")',
        "dec": 'decimal.Decimal("-1.25")' if param == "i" else 'decimal.Decimal("123456789.000")',
        "void": "None",
        "bin": "",  # set by the template: bytes(range(width))
        "vbin": 'b"\\x00\\xff"',
        "str": '"\\u20acuro"' if param == "iso-8859-15" else '"h\\u00e9llo \\u03c0"',
        "ranges": "[(0, 2), (5, 6)]",
        "map": '{"a": Typed("str16", "x"), "n": Typed("int64", -1), "v": Typed("void", None)}',
        "list": '[Typed("uint8", 1), Typed("str8", "b"), Typed("map", {})]',
        "array": 'Array("str16", ["a", "b"])',
        "struct32": "",  # set by the template: one of the document's coded structs
    }
    return Code(samples[impl])


def _struct(
    ctx: _Context, name: str, cls: str, fields: tuple[Field, ...], span: SourceSpan | None
) -> StructPlan:
    """A struct's (or a method's, after its head) plan: its packing flags, then its fields,
    flag i saying whether field i is present. `name` is the spec's (qualified) name, `cls` its
    class's: both must make Python names."""
    pack, word = 0, ""
    if fields and isinstance(fields[0].type, Presence):
        flags = fields[0].type
        if (flags.order, flags.continuation) != ("lsb", None) or flags.width not in (1, 2, 4):
            raise PlanError(f"{fields[0].span}: {cls}: packing flags are 1, 2 or 4 octets, lsb")
        pack, word, fields = flags.width, fields[0].name, fields[1:]
    plans: list[FieldPlan] = []
    for i, f in enumerate(fields):
        # the templates take field i's flag to be bit i, and a struct without flags has no
        # absent fields
        if f.present != ((word, i) if pack else None):
            raise PlanError(f"{f.span}: {cls}.{f.name} is not flagged by flag {i}")
        plans.append(_field(ctx, f, i))
    names = [f.attr for f in plans]
    if len(set(names)) != len(names):
        raise PlanError(f"{name}: two fields share a Python name")
    return StructPlan(
        name=name,
        cls=pytext.identifier(cls, "class", span),
        py=_suffix(name, "struct or method", span),
        size=0,
        pack=pack,
        class_code=None,
        code=None,
        fields=plans,
        doc="",
        span=str(span or ""),
    )


def _field(ctx: _Context, f: Field, flag: int) -> FieldPlan:
    attr = pytext.identifier(attr_name(f.name), "field", f.span)
    spelled = f.spec_name or f.name
    none = Code("")
    match f.type:
        case Ref():
            if f.type.name not in ctx.named:
                raise PlanError(f"{f.span}: {f.name}: no struct {f.type.name}")
            sclass = pytext.identifier(ctx.named[f.type.name][1].name, "class", f.span)
            return FieldPlan(
                attr,
                spelled,
                "struct",
                _suffix(f.type.name, "struct", f.span),
                sclass,
                none,
                sclass,
                f.required,
                flag,
                f.doc,
                none,
            )
        case Prim():
            # the spec's own types, not the IR's builtin integers of the same names: those have
            # codes
            t = next((t for t in ctx.protocol.types if t.name == f.type.name), None)
            if t is None:
                raise PlanError(f"{f.span}: {f.name}: type {f.type.name} is not the spec's")
            p = ctx.prims[t.name]
            if t.kind == "bool" and t.width == 0:  # its flag alone says its value
                true = pytext.literal(True)
                return FieldPlan(
                    attr,
                    spelled,
                    "bit",
                    p.py,
                    none,
                    none,
                    Code("bool"),
                    f.required,
                    flag,
                    f.doc,
                    true,
                )
            if p.impl == "void":
                raise PlanError(
                    f"{f.span}: field {f.name} is void: a packing flag would say nothing"
                )
            sample = p.sample
            enum = none
            if f.enum:
                found = ctx.protocol.enum(f.enum)
                if found is None or not found.values:
                    raise PlanError(f"{f.span}: {f.name}: no enum {f.enum} with values")
                enum = pytext.identifier(found.name, "enum", found.span)
                sample = pytext.identifier(found.values[-1].name, "enum member", found.span)
            return FieldPlan(
                attr,
                spelled,
                "prim",
                p.py,
                none,
                enum,
                p.annotation,
                f.required,
                flag,
                f.doc,
                sample,
            )
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
            raise PlanError(f"{f.span}: {f.name}: a field is a primitive or a struct here")
        case _:
            assert_never(f.type)
