"""Emitter: conformance tests for one protocol version, derived from the IR.

For every message layout (command x request/response x version) the generated module holds:
  * boundary samples: every integer at its minimum, then at its maximum (non-ASCII strings, long
    arrays), strings and bytes null, and one sample per case of every switch;
  * a hypothesis strategy that draws any valid message, derived fields (counts, sizes,
    lengths) computed from what they describe, as an encoder must write them.
The test bodies live in the template; this module only works out values, strategies and sizes,
as the data of `conformance_nodes`, which the template writes out.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, assert_never

from specgen.emitters import conformance_nodes as n
from specgen.emitters import pytext
from specgen.emitters.plan import ModulePlan, attr_name, isort_key, snake
from specgen.emitters.render import Renderer
from specgen.ir import (
    INT_WIDTHS,
    Alternatives,
    Array,
    BitField,
    Bits,
    Blob,
    Choice,
    Field,
    Map,
    Message,
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

TEXT = "ünïcødé ✓ 流 "  # non-ASCII on purpose: UTF-8 lengths differ from character counts
LONG_ARRAY = {"prim": 300, "other": 12}


@dataclass
class Obj:
    cls: str
    args: list[Any]


def _ranges(name: str) -> tuple[int, int]:
    width, signed = INT_WIDTHS[name]
    bits = width * 8
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def _derived(fields: tuple[Field, ...]) -> dict[str, tuple[str, str]]:
    """Sibling fields whose value follows from another: name -> (kind, the field it describes)."""
    out: dict[str, tuple[str, str]] = {}
    for f in fields:
        t = f.type
        if isinstance(t, Array) and t.count_field:
            out[t.count_field] = ("count", f.name)
        if isinstance(t, Array) and t.size_field:
            out[t.size_field] = ("size", f.name)
        if isinstance(t, Blob) and t.length_field:
            out[t.length_field] = ("length", f.name)
    return out


class _Builder:
    def __init__(self, protocol: Protocol, clashing: set[str]) -> None:
        self.protocol = protocol
        self.clashing = clashing
        flat = _flat_table(protocol)
        self.max_table: dict[str, Any] = flat[0] if flat else MAX_TABLE
        self.owner = ""

    def nullable(self, t: TypeRef) -> bool:
        """Whether values of `t` can be null on the wire (array items are decoded so)."""
        return isinstance(t, Prim) and self.protocol.type(t.name).null_length is not None

    def any_nullable(self, fields: tuple[Field, ...]) -> bool:
        for f in fields:
            t = f.type
            if isinstance(t, Prim) and f.nullable:
                return True
            while isinstance(t, Array):
                if self.nullable(t.item):
                    return True
                t = t.item
            if isinstance(t, Struct) and self.any_nullable(t.fields):
                return True
        return False

    def struct_name(self, t: Struct) -> str:
        return f"{self.owner}{t.name}" if t.name in self.clashing else t.name

    # ---- boundary samples: python values, written as their literals (pytext.literal)

    def sample(self, fields: tuple[Field, ...], mode: str, case: int) -> list[Any]:
        values: dict[str, Any] = {}
        derived = _derived(fields)
        order: list[str] = []
        for f in fields:
            if isinstance(f.type, Bits):
                for m in f.type.members:
                    assert isinstance(m.type, BitField)
                    if m.type.value is None:
                        order.append(m.name)
                        if m.name not in derived:
                            if m.type.boolean:
                                values[m.name] = mode == "max"
                            else:
                                values[m.name] = (1 << m.type.bits) - 1 if mode == "max" else 0
                continue
            if isinstance(f.type, Presence):
                continue  # worked out from the fields it flags
            order.append(f.name)
            if f.name in derived:
                continue
            if (f.optional or f.present) and mode == "min":
                values[f.name] = None  # left out: the frame ends before it
                continue
            if isinstance(f.type, Switch) and f.type.on:
                chosen = f.type.cases[case % len(f.type.cases)]
                values[f.type.on] = chosen.values[0]
                values[f.name] = (
                    None if chosen.type is None else self.value(chosen.type, mode, case, f)
                )
                continue
            if f.name not in values:
                values[f.name] = self.value(f.type, mode, case, f)
        for name, (kind, target) in derived.items():
            v = values[target]
            values[name] = (
                len(v)
                if kind in ("count", "length")
                else sum(self.size(_item(fields, target), x) for x in v)
            )
        return [values[n] for n in order]

    def value(self, t: TypeRef, mode: str, case: int, f: Field | None) -> Any:
        match t:
            case Prim() if t.name in INT_WIDTHS:
                lo, hi = _ranges(t.name)
                return hi if mode == "max" else lo
            case Ref():
                target = self.protocol.named_type(t.name)
                if isinstance(target, Map):
                    return dict(self.max_table) if mode == "max" else {}
                return list(MAX_ARRAY) if mode == "max" else []
            case Prim() if self.protocol.type(t.name).fixed:
                p = self.protocol.type(t.name)
                top = mode == "max"
                return {
                    "timestamp": (1 << 64) - 1 if top else 0,
                    "float": (3.4028234663852886e38 if p.width == 4 else 1.7976931348623157e308)
                    if top
                    else 0.0,
                    "decimal": Decimal("-21474836.48") if top else Decimal("0"),
                    "bool": top,
                    "void": None,
                }[p.kind]
            case Prim():
                nullable = f is not None and f.nullable
                if mode == "null" and nullable:
                    return None
                ptype = self.protocol.type(t.name)
                if ptype.kind == "bytes":
                    if INT_WIDTHS[ptype.length_prefix][0] == 1:
                        return bytes(range(255)) if mode == "max" else b""
                    return bytes(range(256)) * 2 if mode == "max" else b""
                if mode != "max":
                    return ""
                limit = f.max_length if f is not None and f.max_length else 40
                limit = min(limit, (1 << (8 * INT_WIDTHS[ptype.length_prefix][0] - 1)) // 4)
                return (TEXT * (limit // len(TEXT) + 1))[:limit]
            case Blob():
                return bytes(range(256)) if mode == "max" else b""
            case Array():
                if mode != "max":
                    return []
                if isinstance(t.item, Switch) and t.item.peek_bits:
                    return [
                        self.value(c.type, mode, case, None)
                        for c in t.item.cases
                        if c.type is not None
                    ] * 3
                length = (
                    LONG_ARRAY["prim"]
                    if isinstance(t.item, Prim) and t.item.name in INT_WIDTHS
                    else LONG_ARRAY["other"]
                )
                return [
                    self.value(
                        t.item, mode, case, Field("Item", t.item, nullable=self.nullable(t.item))
                    )
                    for _ in range(length)
                ]
            case Struct():
                return Obj(self.struct_name(t), self.sample(t.fields, mode, case))
            case Switch():  # peek switch outside an array
                c = t.cases[case % len(t.cases)]
                return None if c.type is None else self.value(c.type, mode, case, None)
            case Map() | Choice() | Bits() | BitField() | Presence() | Alternatives() | Typed():
                raise TypeError(t)
            case _:
                assert_never(t)

    def size(self, t: TypeRef, v: Any) -> int:
        match t:
            case Prim() if t.name in INT_WIDTHS:
                return INT_WIDTHS[t.name][0]
            case Prim():
                ptype = self.protocol.type(t.name)
                prefix = INT_WIDTHS[ptype.length_prefix][0]
                if v is None:
                    return prefix
                return prefix + len(v.encode() if isinstance(v, str) else v)
            case Blob():
                return len(v)
            case Array():
                prefix = INT_WIDTHS[t.count_prefix][0] if t.count_prefix else 0
                return prefix + sum(self.size(t.item, x) for x in v)
            case Switch():
                for c in t.cases:
                    if (
                        c.type is not None
                        and isinstance(c.type, Struct)
                        and isinstance(v, Obj)
                        and v.cls == self.struct_name(c.type)
                    ):
                        return self.size(c.type, v)
                return (
                    0
                    if v is None
                    else self.size(next(c.type for c in t.cases if c.type is not None), v)
                )
            case Struct():
                assert isinstance(v, Obj)
                total, i = 0, 0
                for f in t.fields:
                    if isinstance(f.type, Bits):
                        total += f.type.width
                        i += sum(
                            1
                            for m in f.type.members
                            if isinstance(m.type, BitField) and m.type.value is None
                        )
                        continue
                    total += self.size(f.type, v.args[i])
                    i += 1
                return total
            case (
                Ref()
                | Map()
                | Choice()
                | Bits()
                | BitField()
                | Presence()
                | Alternatives()
                | Typed()
            ):
                raise TypeError(t)
            case _:
                assert_never(t)

    # ---- hypothesis strategies: one composite function per class

    def strategies(self, cls: str, fields: tuple[Field, ...], out: dict[str, n.Composite]) -> str:
        """Register `_st_<cls>` in `out`; returns its name."""
        name = f"_st_{snake(cls)}"
        if name in out:
            return name
        out[name] = n.Composite(name, cls, (), ())  # reserve: recursion on shared structures
        lines: list[tuple[str, n.Expr]] = []
        derived = _derived(fields)
        args: list[str] = []
        previous_optional = ""
        for f in fields:
            if isinstance(f.type, Bits):
                for m in f.type.members:
                    assert isinstance(m.type, BitField)
                    if m.type.value is None:
                        args.append(attr_name(m.name))
                        if m.name not in derived:
                            bit: n.Strategy = (
                                n.Booleans()
                                if m.type.boolean
                                else n.Integers(0, (1 << m.type.bits) - 1)
                            )
                            lines.append((attr_name(m.name), n.Draw(bit)))
                continue
            if isinstance(f.type, Presence):
                continue
            local = attr_name(f.name)
            args.append(local)
            if f.name in derived:
                continue
            if isinstance(f.type, Switch) and f.type.on:
                on = snake(f.type.on)
                values = tuple(sorted(v for c in f.type.cases for v in c.values))
                lines = [(a, b) for a, b in lines if a != on]
                lines.append((on, n.Draw(n.Sampled(values))))
                branches = [n.Branch(c.values, self.case_draw(c.type, out)) for c in f.type.cases]
                lines.append((local, n.Chosen(on, tuple(branches[:-1]), branches[-1].value)))
                continue
            strategy = self.strategy(f.type, f, out)
            inner = n.Draw(n.NoneOr(strategy) if f.present or f.optional else strategy)
            drawn: n.Expr = inner
            if f.optional:
                # absent or present; once one optional field is absent, all after it are too
                if previous_optional:
                    drawn = n.ThenNone(previous_optional, inner)
                previous_optional = local
            lines.append((local, drawn))
        for dname, (kind, target) in derived.items():
            tl = snake(target)
            if kind in ("count", "length"):
                lines.append((snake(dname), n.Len((tl,))))
            else:
                item = _item(fields, target)
                lines.append((snake(dname), n.SumOf(self.size_expr(item, ("x",)), "x", (tl,))))
        out[name] = n.Composite(name, cls, tuple(lines), tuple(args))
        return name

    def strategy(self, t: TypeRef, f: Field | None, out: dict[str, n.Composite]) -> n.Strategy:
        match t:
            case Prim() if t.name in INT_WIDTHS:
                return n.Integers(*_ranges(t.name))
            case Ref():
                if isinstance(self.protocol.named_type(t.name), Map):
                    return n.Defined("TABLES")
                return n.Lists(n.Defined("VALUES"), 3)
            case Prim() if self.protocol.type(t.name).fixed:
                p = self.protocol.type(t.name)
                fixed: dict[str, n.Strategy] = {
                    "timestamp": n.Unsigned(64),
                    "float": n.Floats(p.width * 8),
                    "decimal": n.Defined("DECIMALS"),
                    "bool": n.Booleans(),
                    "void": n.Nones(),
                }
                return fixed[p.kind]
            case Prim():
                nullable = f is not None and f.nullable
                base: n.Strategy
                if self.protocol.type(t.name).kind == "bytes":
                    base = n.Binary(64)
                else:
                    base = n.Text(min(f.max_length, 60) if f is not None and f.max_length else 60)
                return n.NoneOr(base) if nullable else base
            case Blob():
                return n.Binary(64)
            case Array():
                item = self.strategy(
                    t.item, Field("Item", t.item, nullable=self.nullable(t.item)), out
                )
                return n.Lists(item, 4)
            case Struct():
                return n.StructDraw(self.strategies(self.struct_name(t), t.fields, out))
            case Switch():
                return n.OneOf(
                    tuple(self.strategy(c.type, None, out) for c in t.cases if c.type is not None)
                )
            case Map() | Choice() | Bits() | BitField() | Presence() | Alternatives() | Typed():
                raise TypeError(t)
            case _:
                assert_never(t)

    def case_draw(self, t: TypeRef | None, out: dict[str, n.Composite]) -> n.Draw | None:
        """A switch case's drawn value; None for a case that carries nothing."""
        return None if t is None else n.Draw(self.strategy(t, None, out))

    def size_expr(self, t: TypeRef, v: n.Path) -> n.Size:
        """The size on the wire of the value of type `t` at `v`, as the template computes it."""
        match t:
            case Prim() if t.name in INT_WIDTHS:
                return n.Const(INT_WIDTHS[t.name][0])
            case Prim():
                prefix = INT_WIDTHS[self.protocol.type(t.name).length_prefix][0]
                kind = self.protocol.type(t.name).kind
                return n.Prefixed(prefix, n.Len(v, encoded=kind == "string"))
            case Blob():
                return n.Len(v)
            case Struct():
                return n.Plus(
                    tuple(
                        n.Const(f.type.width)
                        if isinstance(f.type, Bits)
                        else self.size_expr(f.type, (*v, snake(f.name)))
                        for f in t.fields
                    )
                )
            case Array():
                prefix = INT_WIDTHS[t.count_prefix][0] if t.count_prefix else 0
                return n.Plus((n.Const(prefix), n.SumOf(self.size_expr(t.item, ("y",)), "y", v)))
            case Switch():
                return n.ByClass(
                    tuple(
                        n.ClassCase(self.struct_name(c.type), self.size_expr(c.type, v))
                        for c in t.cases
                        if isinstance(c.type, Struct)
                    ),
                    v,
                )
            case (
                Ref()
                | Map()
                | Choice()
                | Bits()
                | BitField()
                | Presence()
                | Alternatives()
                | Typed()
            ):
                raise TypeError(t)
            case _:
                assert_never(t)


def _item(fields: tuple[Field, ...], name: str) -> TypeRef:
    t = next(f.type for f in fields if f.name == name)
    return t.item if isinstance(t, Array) else t


MAX_TABLE = {
    "int": -(1 << 63),
    "text": TEXT,
    "bytes": b"\x00\xff",
    "flag": True,
    "none": None,
    "float": 1.5,
    "decimal": Decimal("1.50"),
    "list": [1, "two", {"three": 3}],
    "table": {"nested": {"deeper": []}},
}
"""A field table exercising every kind of value a fresh table can hold."""
MAX_ARRAY = [1, "two", None, True, {"k": [2]}]


def _flat_table(protocol: Protocol) -> tuple[dict[str, Any], list[n.Strategy]] | None:
    """For field tables whose values are a few scalars (AMQ RFC 006: strings, integers,
    decimals, times; no nested tables): the widest table and the hypothesis strategies of the
    values the choice can hold. None for tables that may nest (AMQP 0-9-1), which MAX_TABLE and
    the template's VALUES cover."""
    maps = [n.type for n in protocol.named if isinstance(n.type, Map)]
    if not maps or not isinstance(maps[0].value, Ref):
        return None
    choice = protocol.named_type(maps[0].value.name)
    if not isinstance(choice, Choice):
        return None
    table: dict[str, Any] = {}
    strategies: list[n.Strategy] = []
    ints: list[tuple[int, int]] = []
    strategy: n.Strategy
    for case in choice.cases:
        t = case.type
        if not isinstance(t, Prim):
            return None  # a nested table or array
        if t.name in INT_WIDTHS:
            ints.append(_ranges(t.name))
            continue
        kind = protocol.type(t.name).kind
        if kind == "string":
            table["text"], strategy = TEXT, n.Text(12)
        elif kind == "bytes":
            table["bytes"], strategy = b"\x00\xff", n.Binary(12)
        elif kind == "decimal":
            table["decimal"], strategy = Decimal("1.50"), n.Defined("DECIMALS")
        else:
            return None
        strategies.append(strategy)
    if ints:
        # integers fill one range when the cases' ranges touch (int32, then uint32 above it)
        ints.sort()
        lo, hi = ints[0]
        for a, b in ints[1:]:
            if a > hi + 1:
                return None
            hi = max(hi, b)
        table["int"], table["big"] = lo, hi
        strategies.insert(0, n.Integers(lo, hi))
    return table, strategies


def _value(v: Any) -> n.Value:
    """A sample value as the template writes it: runs of one value or one pair written once."""
    if isinstance(v, Obj):
        return n.Call(v.cls, _values(v.args))
    if isinstance(v, list):
        if len(v) > 3 and all(x == v[0] for x in v):
            return n.Repeat(_values(v[:1]), len(v))
        if len(v) > 3 and len(v) % 2 == 0 and v == v[:2] * (len(v) // 2):
            return n.Repeat(_values(v[:2]), len(v) // 2)
        return n.ListOf(_values(v))
    if isinstance(v, dict):
        return n.DictOf(tuple((_value(k), _value(x)) for k, x in v.items()))
    if isinstance(v, Decimal):
        return n.DecimalOf(str(v))
    if isinstance(v, bytes) and v and v == bytes(range(256)) * (len(v) // 256):
        return n.ByteRange(len(v) // 256)
    return n.Literal(pytext.literal(v))


def _values(vs: list[Any]) -> tuple[n.Value, ...]:
    return tuple(_value(v) for v in vs)


def _switch_cases(fields: tuple[Field, ...]) -> int:
    most = 1
    for f in fields:
        t = f.type
        while isinstance(t, Array):
            t = t.item
        if isinstance(t, Switch) and t.on:
            most = max(most, len(t.cases))
        if isinstance(t, Struct):
            most = max(most, _switch_cases(t.fields))
    return most


def emit_packed(spec: SpecVersion, plan: ModulePlan, renderer: Renderer) -> dict[str, str]:
    """A segment layer's conformance tests: packing-flag structs' cases come from their plan."""
    assert plan.packed is not None
    body = renderer.trimmed_macro("python/_packed_macros.j2", "conformance", plan.packed)
    return {
        "test_conformance.py": renderer.render(
            "python/test_conformance.py.j2", spec, plan.protocol, packed_body=body
        )
    }


def emit(spec: SpecVersion, plan: ModulePlan, renderer: Renderer) -> dict[str, str]:
    """A fused version's conformance tests: samples at each field's bounds, and strategies."""
    protocol = plan.protocol
    builder = _Builder(protocol, plan.clashing)
    strategies: dict[str, n.Composite] = {}
    cases: list[dict[str, Any]] = []
    for m in plan.messages:
        builder.owner = m.cls
        fields = m.message.fields_at(m.version)
        samples = []
        has_text = any(
            isinstance(f.type, Prim) and f.nullable for f in fields
        ) or builder.any_nullable(fields)
        modes = ["min", "max"] + (["null"] if has_text else [])
        for i in range(_switch_cases(fields)):
            for mode in modes if i == 0 else ["min"]:
                values = builder.sample(fields, mode, i)
                label = mode if i == 0 else f"case{i}"
                samples.append((label, n.Call(m.cls, _values(values))))
        # one more sample per switch case at max, so every case's widest value is exercised
        for i in range(1, _switch_cases(fields)):
            values = builder.sample(fields, "max", i)
            samples.append((f"case{i}-max", n.Call(m.cls, _values(values))))
        strategy = builder.strategies(m.cls, fields, strategies)
        cases.append(
            {
                "cls": m.cls,
                "sender": m.sender,
                "samples": samples,
                "strategy": strategy,
                "optional": [attr_name(f.name) for f in fields if f.optional],
                # its last field takes the rest of the frame: any cut of it is a shorter value
                "rest": any(
                    isinstance(f.type, Blob) and f.type.length_field is None for f in fields
                ),
                # the checksum fields' names as DecodeError spells them (their last part)
                "checksums": sorted(
                    "." + attr_name(f.name)
                    for _, f in walk_fields(fields)
                    if f.checksum is not None
                ),
            }
        )
    return {
        "test_conformance.py": renderer.render(
            "python/test_conformance.py.j2",
            spec,
            protocol,
            title=spec.protocol,
            version=spec.version,
            cases=cases,
            strategies=[strategies[name] for name in sorted(strategies)],
            classes=sorted(
                {c["cls"] for c in cases} | {s.name for s in plan.structs if not s.codec},
                key=isort_key,
            ),
            checksummed=[c["cls"] for c in cases if c["checksums"]],
            checksum_fields=sorted({f for c in cases for f in c["checksums"]}),
            versioned=plan.frame.version is not None,
            values=bool(plan.named) or plan.decimals,
            table_values=(_flat_table(protocol) or (None, None))[1],
            length_label=plan.frame.length.label,
            follows=[m.cls for m in plan.messages if m.follows is not None],
            packed_body="",
        )
    }


__all__ = ["emit", "Message"]
