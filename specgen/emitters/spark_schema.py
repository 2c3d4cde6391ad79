"""Emitter: the schema of `specgen decode`'s frames table for one protocol version.

`generated/<package>/<version>/spark_schema.py` holds the frames table as an Arrow schema, built
from one constant per message column and per structure (record) type, each written once and
named wherever it nests. One column builder for every protocol (`build_columns`, in the runtime's
`specgen_codecs.arrow_columns`) walks a column's Arrow type and turns a list of decoded messages into its
struct column: a member is the attribute of its name, read column-wise (one list per leaf,
nested lists flattened once per level, no per-row dicts); where the type does not tell how (a
value that may be None, a field table kept as JSON text, a switch's cases), a per-message table
(`_READ`) says so by path.

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
    (8, Code("INT8")),
    (16, Code("INT16")),
    (32, Code("INT32")),
    (64, Code("INT64")),
)
_DECIMAL = Code("DECIMAL")

# Arrow types written as they are: expressions of the generated module, no spec text in them
_STRING = Code("STRING")
_BINARY = Code("BINARY")
_BOOL = Code("BOOL")

# the leaf types a frames-table module names, as its constants: name -> Arrow type
ALIASES = {
    "INT8": Code("pa.int8()"),
    "INT16": Code("pa.int16()"),
    "INT32": Code("pa.int32()"),
    "INT64": Code("pa.int64()"),
    "DECIMAL": Code("pa.decimal128(20, 0)"),
    "FLOAT32": Code("pa.float32()"),
    "FLOAT64": Code("pa.float64()"),
    "STRING": Code("pa.string()"),
    "BINARY": Code("pa.binary()"),
    "BOOL": Code("pa.bool_()"),
    "SECONDS": Code('pa.timestamp("s", tz="UTC")'),
}


@dataclass
class Col:
    """One column type and what builds it; a leaf's Arrow type is an expression of the
    generated module (`_Types` writes the others)."""

    kind: Literal["leaf", "struct", "list", "union"]
    arrow: Code = Code("")
    via: Code = Code("")  # leaf: build with this Arrow type, then cast (uint64 -> decimal is fast)
    convert: str = ""  # leaf: how its values are made to fit ("_json", "_texts": `_how` says)
    # struct: (column name, attribute, type, value may be None); union: (name, class, type, _)
    members: list[tuple[str, str, Col, bool]] = field(default_factory=list)
    item: Col | None = None
    record: str = ""  # struct: the class of the structure it holds, named by a constant


@dataclass
class ColumnPlan:
    column: str
    cls: str
    col: Col
    const: str  # the module constant naming the column's Arrow type
    how: list[tuple[str, Code]]  # path -> how its values are read, where the type does not say
    roles: dict[str, str]  # "correlation_id"/"response_code" -> the attribute holding its values

    @property
    def read(self) -> Code:
        """`how` as the dict literal of the module's `_READ`."""
        return Code("{" + ", ".join(f"{pytext.literal(p)}: {h}" for p, h in self.how) + "}")


@dataclass
class SchemaCode:
    """One version's frames-table module before it is rendered: its template context and a
    block per Arrow type constant (for comparing with the other versions')."""

    spec: SpecVersion
    plan: ModulePlan
    columns: list[ColumnPlan]
    context: dict[str, Any]
    blocks: list[Block]


def prepare(spec: SpecVersion, plan: ModulePlan, renderer: Renderer) -> SchemaCode:
    """A fused version's columns, their Arrow type constants rendered, for `shared_types` and
    `emit`."""
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
        col = Col("struct", members=members)
        top = {attr for _, attr, _, _ in members}
        roles: dict[str, str] = {
            f.role: attr_name(f.name)
            for f in fields
            if f.role and not isinstance(f.type, Bits) and attr_name(f.name) in top
        }
        column = snake(m.cls)
        columns.append(ColumnPlan(column, m.cls, col, column.upper(), _how(col, ""), roles))
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
    types = _Types(protocol.source)
    for c in columns:
        types.column(c)
    blocks = [block(kind, const, Code(f"{const} = {expr}")) for kind, const, expr in types.defined]
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


def shared_types(codes: list[SchemaCode]) -> set[tuple[str, str]]:
    """The Arrow type constants every version defines alike: generated once, in
    `shared_spark.py`."""
    return sharing.shared([c.blocks for c in codes])


def emit(
    code: SchemaCode, renderer: Renderer, found: set[tuple[str, str]] | None = None
) -> dict[str, str]:
    """`spark_schema.py` of a fused version; the constants in `found` come from
    `shared_spark.py`, and so do the leaf types and the column builder when there is one."""
    found = found or set()
    local = [b for b in code.blocks if b.ident not in found]
    consts = {c.const for c in code.columns}
    cases = sorted(
        {cls for c in code.columns for _, how in c.how for cls in _cases(how)}, key=isort_key
    )
    imports = {"Message", *(cls for cls in cases if cls not in ("bytes", "str"))}
    frame_types = [col.arrow for _, col in code.context["header_columns"]]
    frame_types += [col.arrow for _, col in code.context["role_columns"]]
    needs = sharing.used_names(local) | consts | set(frame_types)
    shared_names = {name for b in code.blocks if b.ident in found for name in b.defines}
    if found:
        shared_imports = sorted(needs & (shared_names | set(ALIASES)), key=isort_key)
        aliases: dict[str, Code] = {}
    else:
        shared_imports = []
        aliases = {k: v for k, v in ALIASES.items() if k in needs}
    text = renderer.render(
        "python/spark_schema.py.j2",
        code.spec,
        code.plan.protocol,
        columns=code.columns,
        blocks=[b.text for b in local],
        aliases=aliases,
        shared_imports=shared_imports,
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
        [(name, Col(col.kind, _spelled(col.arrow))) for name, col in header_columns],
        spec,
        spec.title or spec.protocol,
    )
    text = renderer.render("python/spark_schema.py.j2", spec, plan.protocol, packed_body=body)
    return {"spark_schema.py": text}


def emit_shared(
    codes: list[SchemaCode], found: set[tuple[str, str]], renderer: Renderer
) -> dict[str, str]:
    """`shared_spark.py` of a package: the leaf types, the column builder and the Arrow type
    constants in `found`, once."""
    if not found:
        return {}
    latest = next((c for c in codes if c.spec.latest), codes[-1])
    blocks = [b for b in latest.blocks if b.ident in found]
    text = renderer.render(
        "python/shared_spark.py.j2",
        latest.spec,
        latest.plan.protocol,
        title=latest.spec.title or latest.spec.protocol,
        versions=[c.spec.version for c in codes],
        blocks=[b.text for b in blocks],
        aliases=ALIASES,
    )
    return {"shared_spark.py": text}


def _spelled(arrow: Code) -> Code:
    """An Arrow type with its leaf constants spelled out (`INT64` -> `pa.int64()`)."""
    return Code(re.sub(r"\b[A-Z][A-Z0-9]*\b", lambda m: ALIASES.get(m[0], m[0]), arrow))


def _cases(how: str) -> list[str]:
    """The classes a union's `how` names: `(bytes, SubBatchEntry)` -> bytes, SubBatchEntry."""
    return re.findall(r"\w+", how) if how.startswith("(") else []


def _how(col: Col, path: str, maybe: bool = False) -> list[tuple[str, Code]]:
    """How the parts of a column are read where its Arrow type does not say, by path (`a.b`
    a struct's member, `a[]` a list's items): "maybe" a struct or list that may be None, "json"
    or "text" leaves converted, "exact" a decimal built from Python ints (not via uint64), and
    a union's classes, one per member in order (None first when the value may be None)."""
    out: list[tuple[str, Code]] = []
    if col.kind == "leaf":
        if col.convert:
            out.append((path, pytext.literal({"_json": "json", "_texts": "text"}[col.convert])))
        elif col.arrow == _DECIMAL and not col.via:
            out.append((path, pytext.literal("exact")))
        return out
    if col.kind == "union":
        cases = ["None"] * maybe + [cls for _, cls, _, _ in col.members]
        out.append((path, Code("(" + ", ".join(cases) + ")")))
        for name, _, member, _ in col.members:
            out += _how(member, f"{path}.{name}")  # a case's value may be None: no need to say
        return out
    if maybe and path:
        out.append((path, pytext.literal("maybe")))
    if col.kind == "list":
        assert col.item is not None
        return out + _how(col.item, f"{path}[]")
    for name, _, member, member_none in col.members:
        out += _how(member, f"{path}.{name}" if path else name, member_none)
    return out


class _Types:
    """The Arrow type constants of a version: one per record (structure) and per message
    column, in the order they can be defined (a record before its users)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.defined: list[tuple[str, str, Code]] = []  # (kind, constant, Arrow type)
        self.exprs: dict[str, Code] = {}

    def column(self, c: ColumnPlan) -> None:
        self._define("column", c.const, self.arrow(c.col, top=True))

    def arrow(self, col: Col, top: bool = False) -> Code:
        if col.kind == "leaf":
            return col.arrow
        if col.kind == "list":
            assert col.item is not None
            return Code(f"pa.list_({self.arrow(col.item)})")
        expr = _dict_struct([(name, self.arrow(member)) for name, _, member, _ in col.members])
        if top or not col.record:
            return expr
        return Code(self._define("record", snake(col.record).upper(), expr))

    def _define(self, kind: str, const: str, expr: Code) -> str:
        if const in ALIASES or const in ("FRAMES_SCHEMA", "HEADER_COLUMNS", "ROLE_COLUMNS"):
            raise PlanError(f"{self.source}: the Arrow type constant {const} names another")
        if const in self.exprs:
            if self.exprs[const] != expr:
                raise PlanError(f"{self.source}: two Arrow types are named {const}")
            return const
        self.exprs[const] = expr
        self.defined.append((kind, const, expr))
        return const


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
    col = Col("struct", members=members)
    return ColumnPlan("fragment", "Fragment", col, "FRAGMENT", _how(col, ""), {})


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


def _dict_struct(fields: list[tuple[str, Code]]) -> Code:
    """`pa.struct({...})` of (name, Arrow type) members: a name (spec text) as its literal."""
    return Code("pa.struct({" + ", ".join(f"{pytext.literal(n)}: {a}" for n, a in fields) + "})")


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
                    "float": Col("leaf", Code("FLOAT32" if p.width == 4 else "FLOAT64")),
                    "timestamp": Col("leaf", Code("SECONDS")),
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
                return Col("list", item=item)
            case Struct():
                members = self.members(t.fields, label)
                if not members:
                    raise PlanError(f"{label}: Parquet cannot store the empty structure {t.name}")
                cls = f"{self.owner}{t.name}" if t.name in self.clashing else t.name
                return Col("struct", members=members, record=cls)
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
            return Col("union", members=members)
        raise PlanError(f"{label}: no Spark type for a switch mixing {sorted(map(str, types))}")


def _has_empty_case(t: TypeRef) -> bool:
    return isinstance(t, Switch) and any(c.type is None for c in t.cases)


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
        return _dict_struct([(m.attr, m.arrow) for m in self.members])


@dataclass
class PackedColumns:
    """What a segment layer's frames table holds beside its frame header: a struct column per
    control and command with fields, and one per coded struct a command's header may carry."""

    plan: PackedPlan
    methods: list[PackedColumn]
    headers: list[PackedColumn]
    fieldless: list[str]

    @property
    def aliases(self) -> dict[str, Code]:
        """The leaf type constants the columns name."""
        used = {
            name
            for c in self.methods + self.headers
            for m in c.members
            for name in re.findall(r"\b[A-Z][A-Z0-9]*\b", m.arrow)
        }
        return {k: v for k, v in ALIASES.items() if k in used}


_RANGES = Code('pa.list_(pa.struct({"first": INT64, "last": INT64}))')


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
        "float": (Code("FLOAT32" if p.fixed == 4 else "FLOAT64"), "_same"),
        "ranges": (_RANGES, "_ranges"),
    }
    arrow, convert = simple.get(p.impl, (_STRING, "_json"))
    return PackedMember(f.attr, arrow, convert)
