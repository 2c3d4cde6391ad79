"""Planning self-describing values (`Protocol.typedefs`: AMQP 1.0's type system): every
format code as a primitive's encoding, every described type (a composite's list, a restricted
type's one value) as a class with its fields' constructors, defaults and columns, every
restricted type with choices as an enum. `Planner.plan()` calls `plan` when the IR has typedefs.

What the bytes mean comes from the IR alone: every format code, its category and width, which
type it belongs to, descriptors, fields, choices, archetypes. What is ours is how the types
meet Python's, one table (`PYTHON`): which builtin each type's values are, which get a wrapper
class so a value knows its type (`UInt(5)` is a uint, a plain `5` a long), and the value of
each zero-width encoding, which the spec says only in words ("the uint value 0").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from specgen.emitters.naming import PlanError
from specgen.ir import CompositeField, Encoding, Protocol, TypeDef

# AMQP type -> (value kind, wrapper class or "", Python annotation)
PYTHON: dict[str, tuple[str, str, str]] = {
    "null": ("null", "", "None"),
    "boolean": ("bool", "", "bool"),
    "ubyte": ("int", "UByte", "int"),
    "ushort": ("int", "UShort", "int"),
    "uint": ("int", "UInt", "int"),
    "ulong": ("int", "ULong", "int"),
    "byte": ("int", "Byte", "int"),
    "short": ("int", "Short", "int"),
    "int": ("int", "Int", "int"),
    "long": ("int", "Long", "int"),  # a plain int is a long; decoding gives plain ints
    "float": ("float", "Float", "float"),
    "double": ("float", "Double", "float"),  # a plain float is a double
    "decimal32": ("decimal", "Decimal32", "bytes"),
    "decimal64": ("decimal", "Decimal64", "bytes"),
    "decimal128": ("decimal", "Decimal128", "bytes"),
    "char": ("char", "Char", "str"),
    "timestamp": ("int", "Timestamp", "int"),
    "uuid": ("uuid", "", "uuid.UUID"),
    "binary": ("binary", "", "bytes"),
    "string": ("string", "", "str"),
    "symbol": ("symbol", "Symbol", "str"),
    "list": ("list", "", "list[Any]"),
    "map": ("map", "", "dict[Any, Any]"),
    "array": ("array", "Array", "list[Any]"),
}
PLAIN = {"long": "int", "double": "float"}  # decoded as the builtin, not the wrapper
ZERO_WIDTH: dict[str, object] = {
    "": None,
    "true": True,
    "false": False,
    "uint0": 0,
    "ulong0": 0,
    "list0": [],
}
"""Zero-width encodings' values by encoding name ("" for null's only encoding)."""


@dataclass
class Enc:
    code: int
    category: str
    width: int
    name: str
    label: str
    fmt: str = ""  # struct format of a fixed numeric value
    zero: object = None  # a zero-width encoding's value (None, True, False, 0 or [])
    low: int | None = None  # integer range this encoding holds
    high: int | None = None

    @property
    def hex(self) -> str:
        return f"0x{self.code:02x}"


@dataclass
class Prim:
    name: str
    kind: str
    wrapper: str
    annotation: str
    decoded: str  # the class decoded values have
    encodings: list[Enc]  # smallest first
    doc: str
    signed: bool = False

    @property
    def codes(self) -> list[int]:
        return [e.code for e in self.encodings]


@dataclass
class FieldPlan:
    attr: str
    name: str
    type: str
    annotation: str  # of one value (a `multiple` field holds a list of them)
    prim: str  # primitive it comes down to; "" for "*" or a composite
    composite: str  # class name when the type is a composite or described restricted
    mandatory: bool
    multiple: bool
    default: str  # Python literal or ""
    requires: tuple[str, ...]
    codes: list[int]  # constructors allowed (null aside)
    doc: str
    allowed: str = ""  # the name of its constructors' set in the module ("" for any)
    column: tuple[str, str, str] = ("", "", "")  # Arrow type, Spark type, how a value becomes one
    writer: str = ""  # the function writing its value
    kind: str = ""  # its primitive's kind (int, string, ...; "" for "*" or a composite)


@dataclass
class ClassPlan:
    cls: str
    name: str
    klass: str  # composite or section
    descriptor_name: str
    descriptor_code: int
    fields: list[FieldPlan]
    provides: tuple[str, ...]
    source: str  # sections: the source type
    prim: str  # sections: its primitive ("" for "*")
    doc: str
    section: str
    span: str = ""  # where the spec defines it
    allowed: str = ""  # sections: the name of its value's constructors' set ("" for any)
    annotation: str = "Any"  # sections: its value's annotation
    writer: str = ""  # sections: the function writing its value
    kind: str = "value"  # "oneway" for a frame's body (a performative), as messages say

    @property
    def column(self) -> str:
        return snake(self.name)

    @property
    def code_hex(self) -> str:
        return f"0x{self.descriptor_code >> 32:08x}_{self.descriptor_code & 0xFFFFFFFF:08x}"


@dataclass
class EnumPlan:
    cls: str
    name: str
    kind: str  # int, bool or symbol
    members: list[tuple[str, str, str]]  # (NAME, literal, doc)
    doc: str


@dataclass
class DescribedPlan:
    protocol: Protocol
    prims: list[Prim]
    classes: list[ClassPlan]
    enums: list[EnumPlan]
    constants: list[tuple[str, int, str]]
    encodings_from: str
    frame_archetypes: dict[int, str] = field(default_factory=dict)
    headers: list[tuple[str, bytes, str]] = field(default_factory=list)
    allowed: list[tuple[str, list[int]]] = field(default_factory=list)
    """The constructor sets fields and sections allow, by the name the module gives them."""
    multiples: list[tuple[str, str, str]] = field(default_factory=list)
    """Writers of `multiple` fields: (name, the item's writer, the array's element type)."""
    writers: list[str] = field(default_factory=list)
    """The value module's writers the composites call, sorted."""

    @property
    def composites(self) -> list[ClassPlan]:
        return [c for c in self.classes if c.klass == "composite"]

    @property
    def sections(self) -> list[ClassPlan]:
        return [c for c in self.classes if c.klass == "section"]

    @property
    def wrappers(self) -> list[str]:
        """The value classes, in the order an import lists them (natural, as ruff sorts)."""
        names = [p.wrapper for p in self.prims if p.wrapper and p.kind != "array"]

        def natural(name: str) -> list[object]:
            return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", name)]

        return sorted([*names, "Array", "Described"], key=natural)

    def providing(self, archetype: str) -> list[ClassPlan]:
        return [c for c in self.classes if archetype in c.provides]


def camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[-_ ]", name) if p)


def snake(name: str) -> str:
    out = re.sub(r"[^A-Za-z0-9]", "_", name).lower()
    return out + "_" if out in _KEYWORDS else out


def upper(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", name).upper()


_KEYWORDS = {"global", "class", "from", "import", "type", "def", "in", "is", "not", "and", "or"}


def plan(protocol: Protocol) -> DescribedPlan:
    types = {t.name: t for t in protocol.typedefs}
    prims = [_prim(t) for t in protocol.typedefs if t.klass == "primitive"]
    by_prim = {p.name: p for p in prims}
    if "array" not in by_prim or "list" not in by_prim or "null" not in by_prim:
        raise PlanError(
            f"{protocol.source}: a self-describing type system needs null, list and array"
        )

    def prim_of(name: str) -> str:
        seen = set()
        while name in types and name not in seen:
            seen.add(name)
            t = types[name]
            if t.klass == "primitive":
                return name
            if t.klass == "composite":
                return ""
            if t.descriptor is not None:
                return ""
            name = t.source
        return ""

    classes: list[ClassPlan] = []
    for t in protocol.typedefs:
        if t.descriptor is None:
            continue
        if t.klass == "composite":
            fields = [_field(f, types, by_prim, prim_of) for f in t.fields]
            classes.append(
                ClassPlan(
                    camel(t.name),
                    t.name,
                    "composite",
                    t.descriptor.name,
                    t.descriptor.code,
                    fields,
                    t.provides,
                    "list",
                    "list",
                    _doc(t),
                    t.section,
                    str(t.span or ""),
                )
            )
        else:
            source_prim = prim_of(t.source) if t.source != "*" else ""
            classes.append(
                ClassPlan(
                    camel(t.name),
                    t.name,
                    "section",
                    t.descriptor.name,
                    t.descriptor.code,
                    [],
                    t.provides,
                    t.source,
                    source_prim,
                    _doc(t),
                    t.section,
                    str(t.span or ""),
                )
            )
    names = [c.cls for c in classes]
    if len(set(names)) != len(names):
        raise PlanError(f"{protocol.source}: two described types share a class name")
    enums = []
    for t in protocol.typedefs:
        if t.klass == "restricted" and t.choices:
            p = prim_of(t.source)
            kind = (
                "bool" if p == "boolean" else "int" if p and by_prim[p].kind == "int" else "symbol"
            )
            members = [
                (upper(c.name), _literal(c.value, kind), " ".join(c.doc.split())) for c in t.choices
            ]
            if len({m[0] for m in members}) != len(members):
                raise PlanError(f"{t.span}: {t.name} repeats a choice name")
            enums.append(EnumPlan(camel(t.name), t.name, kind, members, _doc(t)))
    constants = [(upper(c.name), c.value, " ".join(c.doc.split())) for c in protocol.constants]
    encodings_from = next(
        (t.document for t in protocol.typedefs if t.klass == "primitive" and t.document),
        protocol.source,
    )
    headers = [
        (upper(h.doc.split(" protocol header")[0]), h.data, h.doc)
        for h in protocol.frame.protocol_headers
    ]
    out = DescribedPlan(protocol, prims, classes, enums, constants, encodings_from, headers=headers)
    out.frame_archetypes = _frame_archetypes(protocol, classes)
    _name_sets(out, by_prim)
    return out


def _frame_archetypes(protocol: Protocol, classes: list[ClassPlan]) -> dict[int, str]:
    """Which archetype the bodies of each frame type provide, from the commands the IR frames
    (their identity is the frame type, then the descriptor): the one every described type sent
    in frames of that type provides (1.0: `frame` in AMQP frames, `sasl-frame` in SASL ones)."""
    provides = {c.descriptor_code: set(c.provides) for c in classes}
    shared: dict[int, set[str]] = {}
    for command in protocol.commands:
        for m in command.messages:
            if m.descriptor is not None and m.descriptor.code in provides:
                kinds = provides[m.descriptor.code]
                shared[m.ident[0]] = shared.get(m.ident[0], kinds) & kinds
    out: dict[int, str] = {}
    for frame_type, kinds in sorted(shared.items()):
        if len(kinds) != 1:
            raise PlanError(
                f"frame type {frame_type}: its bodies share no one archetype ({sorted(kinds)})"
            )
        out[frame_type] = kinds.pop()
    return out


def _name_sets(out: DescribedPlan, by_prim: dict[str, Prim]) -> None:
    """Name each distinct constructor set once (`STRING`, `SYMBOL_OR_ARRAY`, `DESCRIBED`), and
    give fields their columns and samples."""
    sets: dict[tuple[int, ...], str] = {}

    def name(codes: list[int], label: str) -> str:
        key = tuple(codes)
        if key not in sets:
            sets[key] = upper(label)
        return sets[key]

    writers: set[str] = set()
    multiples: dict[str, tuple[str, str]] = {}
    for c in out.classes:
        if set(c.provides) & set(out.frame_archetypes.values()):
            c.kind = "oneway"
        c.writer = f"e_{c.prim}" if c.prim else "encode_any"
        if c.klass == "section":
            writers.add(c.writer)
        for f in c.fields:
            item = f"e_{f.prim}" if f.prim else "encode_any"
            writers.add(item)
            f.writer = item
            if f.multiple:
                f.writer = f"{item}_or_array"
                multiples[f.writer] = (item, f.prim or "null")
            if f.codes:
                base = f.prim or "composite"
                f.allowed = name(f.codes, f"{base}_or_array" if f.multiple else base)
            f.column = spark_column(f)
            f.kind = by_prim[f.prim].kind if f.prim else ""
        if c.klass == "section" and c.prim:
            c.allowed = name(by_prim[c.prim].codes, c.prim)
            c.annotation = by_prim[c.prim].annotation
    labels = list(sets.values())
    if len(set(labels)) != len(labels):
        raise PlanError(f"{out.protocol.source}: two constructor sets of one type")
    out.allowed = sorted(((n, list(k)) for k, n in sets.items()), key=lambda x: x[0])
    out.multiples = [(name, *multiples[name]) for name in sorted(multiples)]
    out.writers = sorted(writers)


def _literal(value: str, kind: str) -> str:
    if kind == "bool":
        return "True" if value == "true" else "False"
    if kind == "int":
        return str(int(value, 0))
    return repr(value)


def _doc(t: TypeDef) -> str:
    text = t.doc or t.label
    return text.replace("\\", "\\\\").replace('"""', "'''")


def _prim(t: TypeDef) -> Prim:
    if t.name not in PYTHON:
        raise PlanError(
            f"{t.span}: primitive {t.name!r} has no Python mapping (emitters/plan_described.PYTHON)"
        )
    kind, wrapper, annotation = PYTHON[t.name]
    signed = bool(re.search(r"-\(2\^", t.label)) or any(
        "two's-complement" in e.label for e in t.encodings
    )
    encs = [_enc(e, t, kind, signed) for e in t.encodings]
    encs.sort(key=lambda e: (e.width, e.code))
    decoded = (
        PLAIN.get(t.name)
        or wrapper
        or {
            "null": "None",
            "bool": "bool",
            "uuid": "uuid.UUID",
            "binary": "bytes",
            "string": "str",
            "list": "list",
            "map": "dict",
        }[kind]
    )
    return Prim(t.name, kind, wrapper, annotation, decoded, encs, _doc(t), signed)


_NUMERIC = {
    ("int", 1): "B",
    ("int", 2): "H",
    ("int", 4): "I",
    ("int", 8): "Q",
    ("float", 4): "f",
    ("float", 8): "d",
    ("char", 4): "I",
}


def _enc(e: Encoding, t: TypeDef, kind: str, signed: bool) -> Enc:
    out = Enc(e.code, e.category, e.width, e.name, e.label)
    if e.category == "fixed" and e.width == 0:
        if e.name not in ZERO_WIDTH:
            raise PlanError(
                f"{e.span}: zero-width encoding {e.name!r} of {t.name}: its value is unknown"
            )
        out.zero = ZERO_WIDTH[e.name]
        if kind == "int":
            out.low = out.high = int(out.zero)  # type: ignore[call-overload]
    elif e.category == "fixed" and kind in ("int", "float", "char"):
        fmt = _NUMERIC.get((kind, e.width))
        if fmt is None:
            raise PlanError(f"{e.span}: a {e.width}-byte {t.name}")
        out.fmt = fmt.lower() if signed and kind == "int" else fmt
        if kind == "int":
            bits = e.width * 8
            out.low, out.high = (
                (-(1 << bits - 1), (1 << bits - 1) - 1) if signed else (0, (1 << bits) - 1)
            )
    return out


def _field(
    f: CompositeField, types: dict[str, TypeDef], by_prim: dict[str, Prim], prim_of: object
) -> FieldPlan:
    assert callable(prim_of)
    prim = prim_of(f.type) if f.type != "*" else ""
    t = types.get(f.type)
    composite = camel(f.type) if t is not None and t.descriptor is not None else ""
    if prim:
        annotation = by_prim[prim].annotation
        codes = list(by_prim[prim].codes)
    elif composite:
        annotation = composite
        codes = [0]
    else:
        annotation = "Any"
        codes = []  # anything
    if f.multiple and codes:
        codes = codes + by_prim["array"].codes
    default = ""
    if f.default is not None and prim:
        kind = by_prim[prim].kind
        choice = next((c for c in (t.choices if t else ()) if f.default in (c.name, c.value)), None)
        value = choice.value if choice else f.default
        if kind == "bool":
            default = "True" if value == "true" else "False"
        elif kind == "int":
            default = str(int(value, 0))
        else:
            default = repr(value)
    return FieldPlan(
        snake(f.name),
        f.name,
        f.type,
        annotation,
        prim,
        composite,
        f.mandatory,
        f.multiple,
        default,
        f.requires,
        codes,
        " ".join((f.doc or f.label).split()).replace('"""', "'''"),
    )


# AMQP type -> (Arrow type, Spark type, how a value becomes a cell); anything else is JSON text
SPARK: dict[str, tuple[str, str, str]] = {
    "boolean": ("pa.bool_()", "BOOLEAN", "plain"),
    "ubyte": ("pa.int16()", "SMALLINT", "plain"),
    "ushort": ("pa.int32()", "INT", "plain"),
    "uint": ("pa.int64()", "BIGINT", "plain"),
    "ulong": ("pa.decimal128(20, 0)", "DECIMAL(20,0)", "plain"),
    "byte": ("pa.int8()", "TINYINT", "plain"),
    "short": ("pa.int16()", "SMALLINT", "plain"),
    "int": ("pa.int32()", "INT", "plain"),
    "long": ("pa.int64()", "BIGINT", "plain"),
    "float": ("pa.float32()", "FLOAT", "plain"),
    "double": ("pa.float64()", "DOUBLE", "plain"),
    "timestamp": ('pa.timestamp("ms", tz="UTC")', "TIMESTAMP", "plain"),
    "char": ("pa.string()", "STRING", "plain"),
    "string": ("pa.string()", "STRING", "plain"),
    "symbol": ("pa.string()", "STRING", "plain"),
    "binary": ("pa.binary()", "BINARY", "plain"),
    "uuid": ("pa.string()", "STRING", "text"),
}
"""Spark has no unsigned integers: each takes the narrowest signed type holding all its values
(ulong is DECIMAL(20,0), exact over its range)."""


def spark_column(f: FieldPlan) -> tuple[str, str, str]:
    """(Arrow type, Spark type, conversion) of a field's column."""
    if f.multiple or not f.prim or f.prim not in SPARK:
        return ("pa.string()", "STRING", "json")
    return SPARK[f.prim]
