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
import re
from dataclasses import dataclass, field

from specgen.ir import (
    INT_WIDTHS,
    Alternatives,
    Array,
    BitField,
    Bits,
    Blob,
    Field,
    Message,
    Prim,
    Protocol,
    Struct,
    Switch,
    TypeRef,
    to_data,
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


class PlanError(ValueError):
    pass


def isort_key(name: str) -> tuple[int, str]:
    """The order isort (and ruff) give imported names: CONSTANTS, Classes, functions."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name.lower())


def text_class(protocol: Protocol, name: str) -> str:
    """The Python class of a length-prefixed primitive's values: by its kind, not its name."""
    return "str" if protocol.type(name).kind == "string" else "bytes"


def snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    s = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", s)
    return s.lower()


# ---- steps -----------------------------------------------------------------------------


@dataclass
class Fixed:
    """One member of a fused run."""

    label: str  # Message.field.path, as DecodeError names it
    code: str  # struct code
    width: int
    local: str  # decode target
    expr: str  # encode source expression


@dataclass
class Run:
    """Fixed-width members read and written with one precompiled struct.Struct."""

    items: list[Fixed]
    limit: str
    const: str = ""
    mark: str = ""  # encode: local remembering this run's part (a checksum in it is patched)
    post: list[object] = field(default_factory=list)  # decode steps right after the unpack
    prepare: list[object] = field(default_factory=list)  # encode steps right before the pack

    @property
    def fmt(self) -> str:
        return ">" + "".join(i.code for i in self.items)

    @property
    def size(self) -> int:
        return sum(i.width for i in self.items)

    @property
    def cut_table(self) -> list[tuple[str, int, int]]:
        out, at = [], 0
        for i in self.items:
            out.append((i.label, at, i.width))
            at += i.width
        return out


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


@dataclass
class Build:
    local: str
    cls: str
    args: list[str]


@dataclass
class Attr:
    name: str
    annotation: str
    doc: str
    default: str = ""


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


@dataclass
class MessagePlan:
    cls: str
    message: Message
    command: str
    version: int
    key: int
    kind: str
    sender: str
    attrs: list[Attr]
    steps: list[object]
    func: str
    min_body: int
    runs: list[Run]


@dataclass
class ModulePlan:
    protocol: Protocol
    messages: list[MessagePlan]
    structs: list[StructClass]
    checksums: bool = False  # some message verifies a checksum (decoders import zlib)


# ---- planner -----------------------------------------------------------------------------

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

    def plan(self) -> ModulePlan:
        todo = []
        for command in self.protocol.commands:
            for message in command.messages:
                high = message.versions.high or message.versions.low
                versions = list(range(message.versions.low, high + 1))
                for v in versions:
                    todo.append((command.name, command.sender, message, v, len(versions) > 1))
        layouts: dict[str, set[str]] = {}
        for _, _, message, v, _ in todo:
            for s in _structs(message.fields_at(v)):
                layouts.setdefault(s.name, set()).add(_shape(s))
        self.clashing = {name for name, found in layouts.items() if len(found) > 1}
        messages = [self._message(*item) for item in todo]
        structs = [self.struct_classes[k] for k in sorted(self.struct_classes)]
        return ModulePlan(self.protocol, messages, structs, self.checksums)

    def _message(
        self, command: str, sender: str, message: Message, version: int, versioned: bool
    ) -> MessagePlan:
        suffix = {"request": "Request", "response": "Response", "oneway": ""}[message.kind]
        cls = f"{command}{suffix}V{version}" if versioned else f"{command}{suffix}"
        self.owner = cls
        self.used = {"buf", "at", "end", "parts", "msg", "struct"}
        self.runs = []
        fields = message.fields_at(version)
        steps: list[object] = []
        attrs: list[Attr] = []
        args: list[str] = []
        required = tuple(f for f in fields if not f.optional)
        run = self._struct_body(required, cls, "msg", steps, self._run("end"), args, attrs, "end")
        self._close(run, steps)
        previous = ""
        for f in fields[len(required) :]:
            steps.append(self._optional(f, cls, steps, args, attrs, previous))
            previous = f"msg.{snake(f.name)}"
        steps.append(Build("msg", cls, args))
        if message.kind == "response":
            sender = {"client": "server", "server": "client"}.get(sender, sender)
        return MessagePlan(
            cls,
            message,
            command,
            version,
            message.key,
            message.kind,
            sender,
            attrs,
            steps,
            snake(cls),
            _min_size_fields(fields),
            self.runs,
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
        label, expr = f"{cls}.{snake(f.name)}", f"msg.{snake(f.name)}"
        run = self._field(f, label, expr, body, self._run("end"), {}, args, attrs, "end")
        self._close(run, body)
        if len(attrs) != n_attrs + 1 or len(args) != n_args + 1:
            raise PlanError(f"{f.span}: {label}: an optional field must be one value")
        attrs[-1] = Attr(attrs[-1].name, f"{attrs[-1].annotation} | None", attrs[-1].doc, "None")
        for step in body:  # declared once, before the branches
            if isinstance(step, ArrayStep | SwitchStep) and step.local == args[-1]:
                step.annotation = ""
        return OptionalStep(label, args[-1], expr, "end", body, previous, attrs[-1].annotation)

    # ---- locals and runs

    def _local(self, name: str) -> str:
        base = snake(name)
        base = base + "_" if base in _RESERVED else base
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
        run.const = f"_{snake(self.owner).upper()}_{len(self.runs)}"
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
                f"{label}.{snake(f.name)}",
                f"{expr}.{snake(f.name)}",
                steps,
                run,
                env,
                args,
                attrs,
                limit,
            )
            if summed is not None:
                assert summed.checksum is not None
                self._close(run, steps)
                run = self._run(limit)
                step = ChecksumStep(
                    f"{label}.{snake(summed.name)}",
                    env[summed.name][0],
                    mark,
                    summed.checksum.algorithm,
                    f"{label}.{snake(f.name)}",
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
        if isinstance(t, Alternatives):
            raise PlanError(
                f"{f.span}: {label} lists alternatives with nothing on the wire to choose; it needs an overlay entry"
            )
        if isinstance(t, Bits):
            return self._bits(f, t, label, expr, steps, run, env, args, attrs)
        local = self._local(f.name)
        env[f.name] = (local, expr)
        args.append(local)
        if attrs is not None:
            attrs.append(Attr(snake(f.name), self._annotation(t, f.nullable), _doc(f)))
        if isinstance(t, Prim) and t.name in INT_WIDTHS:
            if t.name == "uint24":
                raw = self._local(f.name + "Raw")
                run.items.append(Fixed(label, "3s", 3, raw, f"{expr}.to_bytes(3, 'big')"))
                self._after(run, steps, Uint24(local, raw))
                return run
            run.items.append(Fixed(label, STRUCT_CODES[t.name], INT_WIDTHS[t.name][0], local, expr))
            return run
        if isinstance(t, Prim):
            ptype = self.protocol.type(t.name)
            len_local = self._local(f.name + "Len")
            raw = self._local(f.name + "Raw")
            nullable = f.nullable and ptype.null_length is not None
            len_expr = (
                f"{ptype.null_length} if {raw} is None else len({raw})"
                if nullable
                else f"len({raw})"
            )
            run.items.append(
                Fixed(
                    label,
                    STRUCT_CODES[ptype.length_prefix],
                    INT_WIDTHS[ptype.length_prefix][0],
                    len_local,
                    len_expr,
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
            )
            run.prepare.append(step)
            self._close(run, steps)
            steps.append(step)
            return self._run(limit)
        if isinstance(t, Blob):
            self._close(run, steps)
            length_local, length_expr = env[t.length_field]
            steps.append(BlobStep(label, local, length_local, length_expr, expr, limit))
            return self._run(limit)
        if isinstance(t, Array):
            return self._array(f, t, label, local, expr, steps, run, env, limit)
        if isinstance(t, Struct):
            inner: list[str] = []
            run = self._struct_body(t.fields, label, expr, steps, run, inner, None, limit)
            self._after(run, steps, Build(local, self._struct_class(t), inner))
            return run
        if isinstance(t, Switch):
            self._close(run, steps)
            steps.append(self._switch(t, label, local, expr, env, limit))
            return self._run(limit)
        raise PlanError(f"{f.span}: {label}: no plan for {type(t).__name__}")

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
        pack_terms: list[str] = []
        shift = t.width * 8
        for m in t.members:
            assert isinstance(m.type, BitField)
            shift -= m.type.bits
            mask = (1 << m.type.bits) - 1
            if m.type.value is not None:
                members.append(
                    BitMember("", shift, mask, m.type.value, f"{owner_label}.{snake(m.name)}", "")
                )
                if m.type.value:
                    pack_terms.append(f"{m.type.value << shift:#x}")
                continue
            mlocal = self._local(m.name)
            mexpr = f"{owner_expr}.{snake(m.name)}"
            members.append(
                BitMember(mlocal, shift, mask, None, f"{owner_label}.{snake(m.name)}", mexpr)
            )
            env[m.name] = (mlocal, mexpr)
            args.append(mlocal)
            if attrs is not None:
                attrs.append(Attr(snake(m.name), "int", _doc(m)))
            pack_terms.append(
                f"({mexpr} & {mask:#x}) << {shift}" if shift else f"{mexpr} & {mask:#x}"
            )
        code = {1: "B", 2: "H", 4: "I", 8: "Q"}[t.width]
        run.items.append(Fixed(label, code, t.width, container, " | ".join(pack_terms) or "0"))
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
            label, local, "", limit, _min_size(t.item), expr, annotation=self._annotation(t, False)
        )
        if t.count_prefix is not None:
            step.count_local = self._local(f.name + "Count")
            run.items.append(
                Fixed(
                    label,
                    STRUCT_CODES[t.count_prefix],
                    INT_WIDTHS[t.count_prefix][0],
                    step.count_local,
                    f"len({expr})",
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
            nullable = isinstance(item, Prim) and item.name in ("string", "bytes")
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
            if isinstance(case.type, Struct):
                cls = self._struct_class(case.type)
            elif isinstance(case.type, Prim) and case.type.name not in INT_WIDTHS:
                cls = text_class(self.protocol, case.type.name)
            elif t.peek_bits:
                raise PlanError(f"{label}: the peeked case {case.label!r} has no class of its own")
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

    def _struct_name(self, t: Struct) -> str:
        return f"{self.owner}{t.name}" if t.name in self.clashing else t.name

    def _struct_class(self, t: Struct) -> str:
        name = self._struct_name(t)
        if name not in self.struct_classes:
            attrs = []
            for f in t.fields:
                if isinstance(f.type, Bits):
                    for m in f.type.members:
                        assert isinstance(m.type, BitField)
                        if m.type.value is None:
                            attrs.append(Attr(snake(m.name), "int", _doc(m)))
                    continue
                attrs.append(Attr(snake(f.name), self._annotation(f.type, f.nullable), _doc(f)))
            self.struct_classes[name] = StructClass(name, attrs, t.name, _records(name, t, attrs))
        return name

    def _annotation(self, t: TypeRef, nullable: bool) -> str:
        if isinstance(t, Prim):
            if t.name in INT_WIDTHS:
                return "int"
            base = text_class(self.protocol, t.name)
            return f"{base} | None" if nullable else base
        if isinstance(t, Blob):
            return "bytes"
        if isinstance(t, Array):
            item_nullable = isinstance(t.item, Prim) and t.item.name in ("string", "bytes")
            return f"list[{self._annotation(t.item, item_nullable)}]"
        if isinstance(t, Struct):
            return self._struct_name(t)
        if isinstance(t, Switch):
            opts = []
            for c in t.cases:
                a = "None" if c.type is None else self._annotation(c.type, False)
                if a not in opts:
                    opts.append(a)
            return " | ".join(sorted(opts, key=lambda a: a == "None"))
        return "int"


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
            f"{f.span}: {name}.{snake(f.name)}: compressed records need their decompressed "
            "length, to bound what decompressing may allocate"
        )
    blob, length = snake(f.name), snake(f.type.length_field)
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

    def strip(node: object) -> object:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in ("span", "doc")}
        if isinstance(node, list):
            return [strip(x) for x in node]
        return node

    return json.dumps(strip(to_data(t)), sort_keys=True)


def _structs(fields: tuple[Field, ...]) -> list[Struct]:
    out: list[Struct] = []

    def visit(t: TypeRef) -> None:
        if isinstance(t, Struct):
            out.append(t)
            for f in t.fields:
                visit(f.type)
        elif isinstance(t, Array):
            visit(t.item)
        elif isinstance(t, Switch):
            for c in t.cases:
                if c.type is not None:
                    visit(c.type)

    for f in fields:
        visit(f.type)
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


def _min_size(t: TypeRef) -> int:
    """The fewest bytes one value of `t` can take on the wire (for refusing counts early)."""
    if isinstance(t, Prim):
        if t.name in INT_WIDTHS:
            return INT_WIDTHS[t.name][0]
        return 4 if t.name == "bytes" else 2
    if isinstance(t, Array):
        return INT_WIDTHS[t.count_prefix][0] if t.count_prefix else 0
    if isinstance(t, Struct):
        return _min_size_fields(t.fields)
    if isinstance(t, Bits):
        return t.width
    if isinstance(t, Switch):
        sizes = [0 if c.type is None else _min_size(c.type) for c in t.cases]
        return min(sizes) if sizes else 0
    return 0


def _min_size_fields(fields: tuple[Field, ...]) -> int:
    total = 0
    for f in fields:
        if f.optional:
            continue
        if isinstance(f.type, Prim) and f.type.name in ("string", "bytes"):
            total += 2 if f.type.name == "string" else 4
        else:
            total += _min_size(f.type)
    return total
