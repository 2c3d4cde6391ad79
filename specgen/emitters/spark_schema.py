"""Emitter: the schema of `specgen decode`'s frames table for one protocol version.

`generated/<package>/<version>/spark_schema.py` holds the frames table as an Arrow schema, and
one column builder per message class that turns a list of decoded messages into one Arrow
struct column. Builders work column-wise: one list comprehension per leaf field, nested lists
flattened once per level, then `pa.StructArray.from_arrays` and `pa.ListArray.from_arrays`; no
per-row dicts, no per-field calls.

Type mapping (Spark, which reads the table, has no unsigned integers): every integer maps to the
narrowest signed Arrow integer that holds all its values, so uint8 -> int16, uint16 and uint24 ->
int32, uint32 -> int64, and uint64 -> decimal128(20, 0), exact over the whole range (an int64
would turn publishing ids and offsets above 2**63 negative without a word). A switch whose cases
are integers takes the narrowest type holding every case (`uint64 | int64` -> decimal128(20, 0));
a switch of structures becomes a struct with one nullable member per case. Strings are string,
bytes binary, arrays lists, structures structs; bit-field members are integers of the owner, as
in the dataclasses. A message without fields (Heartbeat) has no column: Parquet cannot store an
empty struct, and the `message` column already says everything about it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal, assert_never

from specgen.emitters import pytext, sharing
from specgen.emitters.plan import ModulePlan, PlanError, attr_name, isort_key, snake
from specgen.emitters.plan_packed import FieldPlan, PackedPlan, PrimPlan, StructPlan
from specgen.emitters.pytext import Code
from specgen.emitters.python_codec import VersionCode
from specgen.emitters.render import Renderer
from specgen.emitters.sharing import Block, block
from specgen.ir import (
    INT_WIDTHS,
    Alternatives,
    Array,
    BitField,
    Bits,
    Blob,
    Choice,
    Enum,
    Field,
    Map,
    Presence,
    Prim,
    Protocol,
    Ref,
    Struct,
    Switch,
    Typed,
    TypeRef,
    walk_fields,
)
from specgen.registry import SpecVersion

# (bits, Arrow type), narrowest first
_SIGNED = (
    (8, Code("pa.int8()")),
    (16, Code("pa.int16()")),
    (32, Code("pa.int32()")),
    (64, Code("pa.int64()")),
)
_DECIMAL = Code("pa.decimal128(20, 0)")

# Arrow types written as they are: expressions of the generated module, no spec text in them
_STRING = Code("pa.string()")
_BINARY = Code("pa.binary()")
_BOOL = Code("pa.bool_()")

# locals a builder must not take for a column's values
_TAKEN = {"msgs", "rows", "cid", "code", "x", "y", "pa", "row", "value"}


@dataclass
class Col:
    """One column type: its Arrow type (an expression of the generated module) and what
    builds it."""

    kind: Literal["leaf", "struct", "list", "union"]
    arrow: Code
    via: Code = Code("")  # leaf: build with this Arrow type, then cast (uint64 -> decimal is fast)
    convert: str = ""  # leaf: a function of the generated module that makes the values fit
    # struct: (column name, attribute, type, value may be None); union: (name, class, type, _)
    members: list[tuple[str, str, Col, bool]] = field(default_factory=list)
    item: Col | None = None


@dataclass
class Gather:
    """One Python list per column level: `pick` an attribute, `select` a union case, or
    `flatten` the lists of an array column into its items."""

    kind: Literal["pick", "select", "flatten"]
    target: str
    source: str
    name: str = ""  # attribute (pick) or class (select)
    guard: bool = False  # the source list may hold None


@dataclass
class Expr:
    """An Arrow array built from gathered lists (rendered recursively by the template)."""

    kind: Literal["leaf", "struct", "list"]
    source: str
    arrow: Code = Code("")
    via: Code = Code("")
    convert: str = ""
    names: list[str] = field(default_factory=list)
    children: list[Expr] = field(default_factory=list)
    item: Expr | None = None
    mask: bool = False  # the source list may hold None: null where it does


@dataclass
class ColumnPlan:
    column: str
    cls: str
    col: Col
    gathers: list[Gather]
    expr: Expr
    roles: dict[str, str]  # "correlation_id"/"response_code" -> local holding its values


@dataclass
class SchemaCode:
    """One version's frames-table module before it is rendered: its template context and a
    block per column builder (for comparing with the other versions')."""

    spec: SpecVersion
    plan: ModulePlan
    columns: list[ColumnPlan]
    context: dict[str, Any]
    blocks: list[Block]


def prepare(spec: SpecVersion, plan: ModulePlan, renderer: Renderer) -> SchemaCode:
    """A fused version's columns, their builders rendered, for `shared_builders` and `emit`."""
    protocol = plan.protocol
    mapper = _Mapper(protocol, plan.clashing)
    columns: list[ColumnPlan] = []
    fieldless: list[str] = []
    for m in plan.messages:
        mapper.owner = m.cls
        fields = m.message.fields_at(m.version)
        members = mapper.members(fields, f"{m.cls}")
        if not members:
            fieldless.append(m.cls)
            continue
        col = Col("struct", _struct_arrow(members), members=members)
        code = _Code()
        expr = code.struct(col, "msgs", False, [])
        roles: dict[str, str] = {
            f.role: code.picked[attr_name(f.name)]
            for f in fields
            if f.role and not isinstance(f.type, Bits) and attr_name(f.name) in code.picked
        }
        columns.append(ColumnPlan(snake(m.cls), m.cls, col, code.gathers, expr, roles))
    layouts = [m.message.follows.layout for m in plan.messages if m.message.follows is not None]
    if layouts:
        head = protocol.named_type(layouts[0]) if layouts[0] else None
        columns.append(_fragment_column(mapper, head if isinstance(head, Struct) else None))
    names = [c.column for c in columns]
    if len(set(names)) != len(names):
        raise PlanError(f"{protocol.source}: two message classes share a column name")
    frame = plan.frame
    header_columns = [
        (h.name, _int_col(*_int_range(_header_type(protocol, i))))
        for i, h in enumerate(frame.header)
        if h.role != "length"
    ]
    role_columns = _role_columns(protocol)
    code_names = {
        role: {v.value: v.name for v in e.values} for role, e in _role_enums(protocol).items()
    }
    blocks = [
        block("builder", c.column, renderer.macro("python/_spark_macros.j2", "builder", c))
        for c in columns
    ]
    context = {
        "title": spec.title or spec.protocol,
        "version": spec.version,
        "fieldless": fieldless,
        "header_columns": header_columns,
        "role_columns": role_columns,
        "code_names": code_names,
        "frame": frame,
    }
    return SchemaCode(spec, plan, columns, context, blocks)


def shared_builders(
    codes: list[SchemaCode], codecs: list[VersionCode], codec_shared: set[tuple[str, str]]
) -> set[tuple[str, str]]:
    """The column builders every version renders alike and whose classes (`codecs`' blocks)
    are shared too: a builder names its class in its signature, so both must be one."""
    found = sharing.shared([c.blocks for c in codes])
    for code, codec in zip(codes, codecs, strict=True):
        local = {name for b in codec.blocks if b.ident not in codec_shared for name in b.defines}
        found -= {b.ident for b in code.blocks if b.uses & local}
    return found


def emit(
    code: SchemaCode, renderer: Renderer, found: set[tuple[str, str]] | None = None
) -> dict[str, str]:
    """`spark_schema.py` of a fused version; the builders in `found` come from
    `shared_spark.py`."""
    found = found or set()
    local = [b for b in code.blocks if b.ident not in found]
    imports = {c.cls for c in code.columns if c.cls != "Fragment"} | {"Message"}
    imports |= {
        g.name
        for c in code.columns
        if ("builder", c.column) not in found
        for g in c.gathers
        if g.kind == "select" and g.name not in ("bytes", "str")
    }
    text = renderer.render(
        "python/spark_schema.py.j2",
        code.spec,
        code.plan.protocol,
        columns=code.columns,
        blocks=[b.text for b in local],
        used=sharing.used_names(local),
        shared_imports=sorted((f"_{key}" for kind, key in found), key=isort_key),
        imports=sorted(imports, key=isort_key),
        fragments=any(c.cls == "Fragment" for c in code.columns),
        **code.context,
    )
    return {"spark_schema.py": text}


def emit_packed(spec: SpecVersion, plan: ModulePlan, renderer: Renderer) -> dict[str, str]:
    """`spark_schema.py` of a segment layer's version: a row per frame, a struct column per
    control, command and header struct."""
    assert plan.packed is not None
    header_columns = [
        (h.name, _int_col(*_int_range(_header_type(plan.protocol, i))))
        for i, h in enumerate(plan.frame.header)
        if h.role != "length"
    ]
    body = renderer.trimmed_macro(
        "python/_packed_macros.j2",
        "spark_schema",
        packed_columns(plan.packed),
        header_columns,
        spec,
        spec.title or spec.protocol,
    )
    text = renderer.render("python/spark_schema.py.j2", spec, plan.protocol, packed_body=body)
    return {"spark_schema.py": text}


def emit_shared(
    codes: list[SchemaCode], found: set[tuple[str, str]], classes: set[str], renderer: Renderer
) -> dict[str, str]:
    """`shared_spark.py` of a package: the column builders in `found`, once, over `classes`
    (what the package's shared codec module defines)."""
    if not found:
        return {}
    latest = next((c for c in codes if c.spec.latest), codes[-1])
    blocks = [b for b in latest.blocks if b.ident in found]
    used = sharing.used_names(blocks)
    text = renderer.render(
        "python/shared_spark.py.j2",
        latest.spec,
        latest.plan.protocol,
        title=latest.spec.title or latest.spec.protocol,
        versions=[c.spec.version for c in codes],
        blocks=[b.text for b in blocks],
        classes=sorted(classes & used, key=isort_key),
        used=used,
    )
    return {"shared_spark.py": text}


def _fragment_column(mapper: _Mapper, head: Struct | None) -> ColumnPlan:
    """The column of the rows that hold the octets following a frame outside any framing (the
    frame reader's `Fragment`): the class of the message whose frame they follow, whether they
    start a message, and the head such octets start with (null where they do not)."""
    members = [
        ("follows", "follows", Col("leaf", _STRING), False),
        ("first", "first", Col("leaf", _BOOL), False),
    ]
    if head is not None:
        mapper.owner = "Fragment"
        members.append(("head", "head", mapper.col(head, "Fragment.head"), True))
    col = Col("struct", _struct_arrow(members), members=members)
    code = _Code()
    expr = code.struct(col, "msgs", False, [])
    return ColumnPlan("fragment", "Fragment", col, code.gathers, expr, {})


def _header_type(protocol: Protocol, index: int) -> str:
    t = protocol.frame.header[index].type
    assert isinstance(t, Prim)
    return t.name


def _role_columns(protocol: Protocol) -> list[tuple[str, Col]]:
    """One column per field role the protocol's messages use (the channel role is a header
    column), typed to hold every field with that role."""
    ranges: dict[str, list[tuple[int, int]]] = {}
    for _, m in protocol.messages():
        for _, f in walk_fields(m.fields):
            if f.role and f.role != "channel" and isinstance(f.type, Prim):
                if f.type.name in INT_WIDTHS:
                    ranges.setdefault(f.role, []).append(_int_range(f.type.name))
    return [
        (role, _int_col(min(r[0] for r in rs), max(r[1] for r in rs)))
        for role, rs in sorted(ranges.items())
    ]


def _role_enums(protocol: Protocol) -> dict[str, Enum]:
    """The enumeration each role's values come from, where the spec names one."""
    out: dict[str, Enum] = {}
    for _, m in protocol.messages():
        for _, f in walk_fields(m.fields):
            if f.role and f.enum and (e := protocol.enum(f.enum)) is not None:
                out.setdefault(f.role, e)
    return out


def _arrow_struct(fields: list[tuple[str, Code]]) -> Code:
    """`pa.struct([...])` of (name, Arrow type) members: a name (spec text) as its literal."""
    return Code(
        "pa.struct(["
        + ", ".join(f"pa.field({pytext.literal(n)}, {arrow})" for n, arrow in fields)
        + "])"
    )


def _struct_arrow(members: list[tuple[str, str, Col, bool]]) -> Code:
    return _arrow_struct([(n, c.arrow) for n, _, c, _ in members])


def _int_range(name: str) -> tuple[int, int]:
    width, signed = INT_WIDTHS[name]
    bits = width * 8
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def _int_col(low: int, high: int) -> Col:
    """The narrowest signed integer column holding low..high, else decimal128(20, 0)."""
    for bits, arrow in _SIGNED:
        if low >= -(1 << (bits - 1)) and high < (1 << (bits - 1)):
            return Col("leaf", arrow)
    if low < -(1 << 63) or high >= 1 << 64:
        raise PlanError(f"no Spark type holds integers {low}..{high}")
    # unsigned values build as uint64 and cast in Arrow: far faster than Python ints to decimal
    return Col("leaf", _DECIMAL, via=Code("pa.uint64()" if low >= 0 else ""))


class _Mapper:
    """IR types -> column types, naming nested classes as the Planner does."""

    def __init__(self, protocol: Protocol, clashing: set[str]) -> None:
        self.protocol = protocol
        self.clashing = clashing
        self.owner = ""

    def members(self, fields: tuple[Field, ...], label: str) -> list[tuple[str, str, Col, bool]]:
        out: list[tuple[str, str, Col, bool]] = []
        for f in fields:
            t = f.type
            match t:
                case Bits():
                    for m in t.members:
                        assert isinstance(m.type, BitField)
                        if m.type.value is None:
                            name = attr_name(m.name)
                            col = (
                                Col("leaf", _BOOL)
                                if m.type.boolean
                                else _int_col(0, (1 << m.type.bits) - 1)
                            )
                            out.append((name, name, col, False))
                case Presence():
                    pass  # worked out from which fields are present: no value of its own
                case Prim() if self.protocol.type(t.name).kind == "void":
                    pass  # always None
                case (
                    Prim()
                    | Ref()
                    | Array()
                    | Map()
                    | Struct()
                    | Switch()
                    | Choice()
                    | Blob()
                    | BitField()
                    | Alternatives()
                    | Typed()
                ):
                    name = attr_name(f.name)
                    maybe_none = f.optional or f.nullable or bool(f.present) or _has_empty_case(t)
                    out.append((name, name, self.col(t, f"{label}.{name}"), maybe_none))
                case _:
                    assert_never(t)
        return out

    def col(self, t: TypeRef, label: str) -> Col:
        match t:
            case Prim():
                p = self.protocol.type(t.name)
                if p.kind == "int":
                    return _int_col(*_int_range(t.name))
                return {
                    "string": Col("leaf", _STRING),
                    "bytes": Col("leaf", _BINARY),
                    "bool": Col("leaf", _BOOL),
                    "float": Col("leaf", Code("pa.float32()" if p.width == 4 else "pa.float64()")),
                    "timestamp": Col("leaf", Code('pa.timestamp("s", tz="UTC")')),
                    # a scale per value: exact as text (one decimal128(p, s) column would round)
                    "decimal": Col("leaf", _STRING, convert="_texts"),
                }[p.kind]
            case Ref() | Map() | Choice():
                # field tables and the like: any shape, any depth; kept as JSON text
                return Col("leaf", _STRING, convert="_json")
            case Blob():
                return Col("leaf", _BINARY)
            case Array():
                item = self.col(t.item, f"{label}[]")
                return Col("list", Code(f"pa.list_({item.arrow})"), item=item)
            case Struct():
                members = self.members(t.fields, label)
                if not members:
                    raise PlanError(f"{label}: Parquet cannot store the empty structure {t.name}")
                return Col("struct", _struct_arrow(members), members=members)
            case Switch():
                return self._switch(t, label)
            case Bits() | BitField() | Presence() | Alternatives() | Typed():
                raise PlanError(f"{label}: no Spark type for {type(t).__name__}")
            case _:
                assert_never(t)

    def _switch(self, t: Switch, label: str) -> Col:
        types = [c.type for c in t.cases if c.type is not None]
        if types and all(isinstance(x, Prim) and x.name in INT_WIDTHS for x in types):
            ranges = [_int_range(x.name) for x in types if isinstance(x, Prim)]
            return _int_col(min(r[0] for r in ranges), max(r[1] for r in ranges))
        if t.peek_bits:
            # one nullable member per case, the one the value's class selects set: a structure
            # case by its class, a string or bytes case by its Python type (named by its label)
            members: list[tuple[str, str, Col, bool]] = []
            for c in t.cases:
                x = c.type
                if isinstance(x, Struct):
                    cls = f"{self.owner}{x.name}" if x.name in self.clashing else x.name
                    members.append(
                        (snake(x.name), cls, self.col(x, f"{label}.{snake(x.name)}"), True)
                    )
                elif isinstance(x, Prim) and x.name not in INT_WIDTHS:
                    name = re.sub(r"\W+", "_", c.label.strip().lower()) or "value"
                    py = "str" if self.protocol.type(x.name).kind == "string" else "bytes"
                    members.append((name, py, self.col(x, f"{label}.{name}"), True))
                else:
                    raise PlanError(f"{label}: no Spark type for the peeked case {c.label!r}")
            if len({m[1] for m in members}) != len(members):
                raise PlanError(f"{label}: two cases of a peeked switch share a Python type")
            return Col("union", _struct_arrow(members), members=members)
        raise PlanError(f"{label}: no Spark type for a switch mixing {sorted(map(str, types))}")


def _has_empty_case(t: TypeRef) -> bool:
    return isinstance(t, Switch) and any(c.type is None for c in t.cases)


class _Code:
    """Works out a column builder: the lists to gather and the Arrow expression over them."""

    def __init__(self) -> None:
        self.gathers: list[Gather] = []
        self.used: set[str] = set(_TAKEN)
        self.picked: dict[str, str] = {}  # top-level attribute -> its local

    def local(self, path: list[str]) -> str:
        base = re.sub(r"\W", "_", "_".join(path)) or "values"
        name, n = base, 2
        while name in self.used:
            name, n = f"{base}_{n}", n + 1
        self.used.add(name)
        return name

    def expr(self, col: Col, source: str, maybe_none: bool, path: list[str]) -> Expr:
        if col.kind == "leaf":
            return Expr("leaf", source, arrow=col.arrow, via=col.via, convert=col.convert)
        if col.kind == "list":
            assert col.item is not None
            items = self.local([*path, "items"])
            self.gathers.append(Gather("flatten", items, source, guard=maybe_none))
            item = self.expr(col.item, items, False, [*path, "item"])
            return Expr("list", source, item=item, mask=maybe_none)
        if col.kind == "union":
            children = []
            for name, cls, member, _ in col.members:
                target = self.local([*path, name])
                self.gathers.append(Gather("select", target, source, cls))
                children.append(self.expr(member, target, True, [*path, name]))
            names = [name for name, _, _, _ in col.members]
            return Expr("struct", source, names=names, children=children, mask=maybe_none)
        return self.struct(col, source, maybe_none, path)

    def struct(self, col: Col, source: str, maybe_none: bool, path: list[str]) -> Expr:
        children = []
        for name, attr, member, member_none in col.members:
            target = self.local([*path, name])
            if not path:
                self.picked[attr] = target
            self.gathers.append(Gather("pick", target, source, attr, guard=maybe_none))
            children.append(self.expr(member, target, maybe_none or member_none, [*path, name]))
        names = [name for name, _, _, _ in col.members]
        return Expr("struct", source, names=names, children=children, mask=maybe_none)


@dataclass
class PackedMember:
    """One member of a packing-flag struct's column: its attribute, Arrow type and the
    generated converter that makes its values fit (`_same` when they already do)."""

    attr: str
    arrow: Code
    convert: str


@dataclass
class PackedColumn:
    column: str
    cls: str
    members: list[PackedMember]

    @property
    def arrow(self) -> Code:
        return _arrow_struct([(m.attr, m.arrow) for m in self.members])


@dataclass
class PackedColumns:
    """What a segment layer's frames table holds beside its frame header: a struct column per
    control and command with fields, and one per coded struct a command's header may carry."""

    plan: PackedPlan
    methods: list[PackedColumn]
    headers: list[PackedColumn]
    fieldless: list[str]


_RANGES = Code('pa.list_(pa.struct([pa.field("first", pa.int64()), pa.field("last", pa.int64())]))')


def packed_columns(packed: PackedPlan) -> PackedColumns:
    """The columns of a segment layer's frames table, from the plan of its structs."""
    prims: dict[str, PrimPlan] = {p.py: p for p in packed.prims}
    by_cls = {s.cls: s for s in packed.structs}

    def columns(structs: list[StructPlan]) -> tuple[list[PackedColumn], list[str]]:
        out: list[PackedColumn] = []
        fieldless: list[str] = []
        for s in structs:
            members = [m for f in s.fields if (m := _packed_member(f, prims)) is not None]
            if members:
                out.append(PackedColumn(snake(s.cls), s.cls, members))
            else:
                fieldless.append(s.cls)
        return out, fieldless

    methods, fieldless = columns(packed.methods)
    carried = dict.fromkeys(c for m in packed.methods for c in m.header)
    headers, _ = columns([by_cls[c] for c in carried if c in by_cls])
    names = [c.column for c in methods + headers]
    if len(set(names)) != len(names):
        raise PlanError(f"{packed.source}: two struct columns share a name")
    return PackedColumns(packed, methods, headers, fieldless)


def _packed_member(f: FieldPlan, prims: dict[str, PrimPlan]) -> PackedMember | None:
    """A field's column member: integers in the narrowest signed type holding them, text and
    bytes as they are, sequence sets and byte ranges as lists of (first, last), and values of
    any shape (maps, lists, arrays, coded and nested structs) as JSON text."""
    if f.kind == "bit":
        return PackedMember(f.attr, _BOOL, "_same")
    if f.kind == "struct":
        return PackedMember(f.attr, _STRING, "_json")
    p = prims[f.prim]
    if p.impl == "void":
        return None
    if p.impl == "int":
        signed = p.name.startswith("int") or p.name == "datetime"  # time_t: signed seconds
        width = p.fixed or 8
        bits = 8 * width
        low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        col = _int_col(low, high)
        return PackedMember(f.attr, col.arrow, "_decimals" if col.via else "_ints")
    simple: dict[str, tuple[Code, str]] = {
        "bool": (_BOOL, "_same"),
        "char": (_STRING, "_same"),
        "str": (_STRING, "_same"),
        "bin": (_BINARY, "_same"),
        "vbin": (_BINARY, "_same"),
        "uuid": (_STRING, "_text"),
        "dec": (_STRING, "_text"),
        "float": (Code("pa.float32()" if p.fixed == 4 else "pa.float64()"), "_same"),
        "ranges": (_RANGES, "_ranges"),
    }
    arrow, convert = simple.get(p.impl, (_STRING, "_json"))
    return PackedMember(f.attr, arrow, convert)
