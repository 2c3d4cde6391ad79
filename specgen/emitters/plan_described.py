"""Planning self-describing values (`Protocol.typedefs`: AMQP 1.0's type system): every
format code as a primitive's encoding, every described type (a composite's list, a restricted
type's one value) as a class with its fields' constructors, defaults and columns, every
restricted type with choices as an enum. `Planner.plan()` calls `plan` when the IR has typedefs.

What the bytes mean comes from the IR alone: every format code, its category and width, which
type it belongs to, descriptors, fields, choices, archetypes. What is ours is how the types
meet Python's, one table (`PYTHON`): which builtin each type's values are, which get a wrapper
class so a value knows its type (`UInt(5)` is a uint, a plain `5` a long), and the value of
each zero-width encoding, which the spec says only in words ("the uint value 0").

The spec's text stays text here (docs, labels, names as the spec writes them): the templates
write it through `pytext`'s filters. What this module gives as code (class, field, constant
and table names, writers, defaults, enum values) is `Code`, built by `pytext.identifier`,
`pytext.literal` and `pytext.number`, so a name that cannot be a Python name is a located
error and a value is written from what it is, never from its spelling.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field

from specgen.emitters import pytext
from specgen.emitters.naming import PlanError, isort_key
from specgen.emitters.pytext import Code
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
SIGNED = frozenset({"byte", "short", "int", "long", "timestamp"})
"""Part 1's signed integers (sections 1.6.6 to 1.6.9: "-(2^7) to 2^7 - 1"...; 1.6.17: a
timestamp is a "64-bit signed integer"). The full text's labels say so too; the stripped copies
peers generate from keep no label, only these names, and their values are signed all the same."""
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
    def hex(self) -> Code:
        return Code(f"0x{self.code:02x}")


@dataclass
class Prim:
    name: str
    kind: str
    wrapper: str
    annotation: str
    decoded: str  # the class decoded values have
    encodings: list[Enc]  # smallest first
    doc: str  # the spec's text
    signed: bool = False

    @property
    def codes(self) -> list[int]:
        return [e.code for e in self.encodings]


@dataclass
class FieldPlan:
    attr: Code  # its attribute (and column) name
    name: str
    type: str
    annotation: str  # of one value (a `multiple` field holds a list of them)
    prim: str  # primitive it comes down to; "" for "*" or a composite
    composite: str  # class name (Code) when the type is a composite or described restricted
    mandatory: bool
    multiple: bool
    default: str  # Python literal (Code) or ""
    requires: tuple[str, ...]
    codes: list[int]  # constructors allowed (null aside)
    doc: str  # the spec's text, its whitespace normalised
    allowed: str = ""  # the name (Code) of its constructors' set in the module ("" for any)
    column: tuple[str, str] = ("", "")  # Arrow type, how a value becomes one
    writer: str = ""  # the function (Code) writing its value
    kind: str = ""  # its primitive's kind (int, string, ...; "" for "*" or a composite)

    @property
    def sample(self) -> Code:
        """A value of its type, for the conformance tests' mandatory fields (integers: 1)."""
        one = (
            ("1" if self.kind == "int" else SAMPLES.get(self.prim, "None"))
            if self.prim
            else f"c.{self.composite}()"
            if self.composite
            else 'b"x"'
        )
        return Code(f"[{one}]" if self.multiple else one)


SAMPLES: dict[str, str] = {
    "null": "None",
    "boolean": "True",
    "float": "1.5",
    "double": "1.5",
    "decimal32": 'b"\\x01" * 4',
    "decimal64": 'b"\\x01" * 8',
    "decimal128": 'b"\\x01" * 16',
    "char": 'Char("x")',
    "uuid": "uuid.UUID(int=1)",
    "binary": 'b"x"',
    "string": '"x"',
    "symbol": 'Symbol("x")',
    "list": "[1]",
    "map": '{"k": 1}',
}
"""A value of each non-integer primitive as code, for the conformance tests (`FieldPlan.sample`)."""


@dataclass
class ClassPlan:
    cls: Code
    name: str
    klass: str  # composite or section
    descriptor_name: str
    descriptor_code: int
    fields: list[FieldPlan]
    provides: tuple[str, ...]
    source: str  # sections: the source type
    prim: str  # sections: its primitive ("" for "*")
    doc: str  # the spec's text
    section: str
    span: str = ""  # where the spec defines it
    allowed: str = ""  # sections: the name (Code) of its value's constructors' set ("" for any)
    annotation: str = "Any"  # sections: its value's annotation
    writer: str = ""  # sections: the function (Code) writing its value
    kind: str = "value"  # "oneway" for a frame's body (a performative), as messages say

    @property
    def column(self) -> Code:
        """Its struct column's name, and the name of its tests and column builder."""
        return pytext.identifier(snake(self.name), "column", getattr(self.name, "span", None))

    @property
    def readers(self) -> Code:
        """The name of its fields' reader tables (`read_fields`): `_OPEN_READERS`."""
        return pytext.identifier(
            f"_{upper(self.name)}_READERS", "readers", getattr(self.name, "span", None)
        )

    @property
    def field_path(self) -> Code:
        """An f-string naming field `i` in an error: `f"open.{Open.FIELDS[i]}"`."""
        return _fstring(f"{self.name}.", Code(f"{self.cls}.FIELDS[i]"))

    @property
    def code_hex(self) -> Code:
        return Code(f"0x{self.descriptor_code >> 32:08x}_{self.descriptor_code & 0xFFFFFFFF:08x}")


@dataclass
class EnumPlan:
    cls: Code
    name: str
    kind: str  # int, bool or symbol
    members: list[tuple[Code, Code, str]]  # (NAME, literal, doc: the spec's text on one line)
    doc: str  # the spec's text


@dataclass
class DescribedPlan:
    protocol: Protocol
    prims: list[Prim]
    classes: list[ClassPlan]
    enums: list[EnumPlan]
    constants: list[tuple[Code, int, str]]  # (NAME, value, doc: the spec's text on one line)
    encodings_from: str
    frame_archetypes: dict[int, str] = field(default_factory=dict)
    headers: list[tuple[str, bytes, str]] = field(default_factory=list)
    allowed: list[tuple[Code, list[int]]] = field(default_factory=list)
    """The constructor sets fields and sections allow, by the name the module gives them."""
    multiples: list[tuple[Code, Code, str]] = field(default_factory=list)
    """Writers of `multiple` fields: (name, the item's writer, the array's element type)."""
    writers: list[Code] = field(default_factory=list)
    """The value module's writers the composites call, sorted."""

    @property
    def composites(self) -> list[ClassPlan]:
        return [c for c in self.classes if c.klass == "composite"]

    @property
    def sections(self) -> list[ClassPlan]:
        return [c for c in self.classes if c.klass == "section"]

    @property
    def wrappers(self) -> list[str]:
        """The value classes, in the order an import lists them (as ruff sorts)."""
        names = [p.wrapper for p in self.prims if p.wrapper and p.kind != "array"]
        return sorted([*names, "Array", "Described"], key=isort_key)

    @property
    def defined(self) -> list[ClassPlan]:
        """The classes in the order a module defines them: the spec's, but a composite a field
        must hold (`Composite.CODECS` names its class) before the first class naming it."""
        by_cls: dict[str, ClassPlan] = {c.cls: c for c in self.classes}
        out: list[ClassPlan] = []
        placing: set[str] = set()

        def place(c: ClassPlan) -> None:
            if c in out:
                return
            if c.cls in placing:
                raise PlanError(f"{self.protocol.source}: {c.name} holds itself through its fields")
            placing.add(c.cls)
            for f in c.fields:
                if f.allowed and f.composite in by_cls:
                    place(by_cls[f.composite])
            out.append(c)

        for c in self.classes:
            place(c)
        return out

    def providing(self, archetype: str) -> list[ClassPlan]:
        return [c for c in self.classes if archetype in c.provides]


def camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[-_ ]", name) if p)


def snake(name: str) -> str:
    out = re.sub(r"[^A-Za-z0-9]", "_", name).lower()
    return out + "_" if out in _KEYWORDS or keyword.iskeyword(out) else out


def upper(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", name).upper()


_KEYWORDS = {"global", "class", "from", "import", "type", "def", "in", "is", "not", "and", "or"}
"""Names a field's attribute does not take as they are (besides Python's keywords): `type_`."""


def _fstring(text: str, expr: Code) -> Code:
    """An f-string of `text` (any string: `pytext.in_fstring`), then `{expr}`:
    `_fstring("open.", Code("x"))` is `f"open.{x}"`."""
    return Code(f'f"{pytext.in_fstring(text)}{{{expr}}}"')


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
                    _class_name(t),
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
                    _class_name(t),
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
                (
                    pytext.identifier(upper(c.name), "choice", t.span),
                    _literal(c.value, kind, f"{t.span}: {t.name}'s choice {c.name}"),
                    " ".join(c.doc.split()),
                )
                for c in t.choices
            ]
            if len({m[0] for m in members}) != len(members):
                raise PlanError(f"{t.span}: {t.name} repeats a choice name")
            enums.append(EnumPlan(_class_name(t), t.name, kind, members, _doc(t)))
    constants = [
        (pytext.identifier(upper(c.name), "constant", c.span), c.value, " ".join(c.doc.split()))
        for c in protocol.constants
    ]
    encodings_from = next(
        (t.document for t in protocol.typedefs if t.klass == "primitive" and t.document),
        protocol.source,
    )
    headers = [  # (a name in capitals, never written; the bytes; the spec's text)
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
    sets: dict[tuple[int, ...], Code] = {}

    def name(codes: list[int], label: str) -> Code:
        key = tuple(codes)
        if key not in sets:
            sets[key] = pytext.identifier(upper(label), "constructor set")
        return sets[key]

    def writer(prim: str) -> Code:
        """The value module's writer of a primitive's values (any value's for "")."""
        return Code(f"e_{pytext.identifier(prim, 'type')}" if prim else "encode_any")

    writers: set[Code] = set()
    multiples: dict[Code, tuple[Code, str]] = {}
    for c in out.classes:
        if set(c.provides) & set(out.frame_archetypes.values()):
            c.kind = "oneway"
        c.writer = writer(c.prim)
        if c.klass == "section":
            writers.add(c.writer)
        for f in c.fields:
            item = writer(f.prim)
            writers.add(item)
            f.writer = item
            if f.multiple:
                f.writer = Code(f"{item}_or_array")
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


def _literal(value: int | str, kind: str, where: str) -> Code:
    """A choice's or a default's value as a Python value of `kind`. The front-end gives a number
    as an int (a default) or in decimal (a choice), a boolean as a bool or "true"/"false"; an
    overlay may give either as text, which must then be such a spelling (`where` names the
    field or choice in the error)."""
    if kind == "bool":
        if isinstance(value, bool) or value in ("true", "false"):
            return pytext.literal(value is True or value == "true")
        raise PlanError(f"{where}: {value!r} is not a boolean -> true or false")
    if kind == "int":
        if isinstance(value, int) and not isinstance(value, bool):
            return pytext.number(value)
        if isinstance(value, str) and re.fullmatch(r"-?(0x[0-9a-fA-F]+|0|[1-9][0-9]*)", value):
            return pytext.number(int(value, 0))
        raise PlanError(f"{where}: {value!r} is not a number -> an integer, in decimal or 0x hex")
    return pytext.literal(value)


def _class_name(t: TypeDef) -> Code:
    return pytext.identifier(camel(t.name), "class", t.span)


def _doc(t: TypeDef) -> str:
    """A type's text (its doc, else its label) as the spec gives it: templates write it with
    the `doc` filter."""
    return t.doc or t.label


def _prim(t: TypeDef) -> Prim:
    if t.name not in PYTHON:
        raise PlanError(
            f"{t.span}: primitive {t.name!r} has no Python mapping (emitters/plan_described.PYTHON)"
        )
    kind, wrapper, annotation = PYTHON[t.name]
    signed = (
        t.name in SIGNED
        or bool(re.search(r"-\(2\^", t.label))
        or any(re.search(r"two's-complement|\bsigned integer", e.label) for e in t.encodings)
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
    composite = _class_name(t) if t is not None and t.descriptor is not None else ""
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
        default = _literal(
            value, kind if kind in ("bool", "int") else "text", f"{f.span}: {f.name}'s default"
        )
    return FieldPlan(
        pytext.identifier(snake(f.name), "field", f.span),
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
        " ".join((f.doc or f.label).split()),
    )


# AMQP type -> (Arrow type, how a value becomes a cell); anything else is JSON text
SPARK: dict[str, tuple[str, str]] = {
    "boolean": ("pa.bool_()", "plain"),
    "ubyte": ("pa.int16()", "plain"),
    "ushort": ("pa.int32()", "plain"),
    "uint": ("pa.int64()", "plain"),
    "ulong": ("pa.decimal128(20, 0)", "plain"),
    "byte": ("pa.int8()", "plain"),
    "short": ("pa.int16()", "plain"),
    "int": ("pa.int32()", "plain"),
    "long": ("pa.int64()", "plain"),
    "float": ("pa.float32()", "plain"),
    "double": ("pa.float64()", "plain"),
    "timestamp": ('pa.timestamp("ms", tz="UTC")', "plain"),
    "char": ("pa.string()", "plain"),
    "string": ("pa.string()", "plain"),
    "symbol": ("pa.string()", "plain"),
    "binary": ("pa.binary()", "plain"),
    "uuid": ("pa.string()", "text"),
}
"""Spark has no unsigned integers: each takes the narrowest signed type holding all its values
(ulong is decimal128(20, 0), exact over its range)."""


def spark_column(f: FieldPlan) -> tuple[str, str]:
    """(Arrow type, conversion) of a field's column; the Arrow type is code."""
    if f.multiple or not f.prim or f.prim not in SPARK:
        return (Code("pa.string()"), "json")
    arrow, how = SPARK[f.prim]
    return (Code(arrow), how)
