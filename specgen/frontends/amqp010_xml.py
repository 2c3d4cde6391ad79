"""AMQP 0-10's XML (`amqp.0-10.xml`) -> the shared IR of its types, structs, domains and methods.

The document is read into this module's frozen dataclasses (`Model`: names resolved, codes
and widths checked), then `to_protocol` states all of it in the shared IR: controls and
commands whose packing flags say which fields are present, structs with their own size
prefixes and flags, the coded structs a header segment may carry, a command's result, the
domains as aliases and enums, the classes as constants. `specgen.emitters.amqp010` renders
that `Protocol` (after the overlay), so `specgen ir`, `lint`, `diff` and the codec see one IR.

Findings (`specgen lint`): each type's wire width in its attributes (`fixed-width`,
`variable-width`) is checked against the ABNF beside it in the XML (`<doc type="bnf">`) and
against the same rules as the flattened text (`amqp-0-10-text.txt`, found beside the XML)
states them; every disagreement is a finding, and the attributes decide.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import assert_never

from specgen import abnf
from specgen.frontends import amqp010_dialogue, xml_tree
from specgen.frontends.adoc import SpecError
from specgen.frontends.adoc_tree import SpecSyntaxError
from specgen.frontends.data import NO_DATA
from specgen.frontends.spec_text import read_spec_text
from specgen.frontends.xml_tree import Element
from specgen.ir import (
    ALL_VERSIONS,
    INT_WIDTHS,
    Command,
    Constant,
    Direction,
    Enum,
    EnumValue,
    Field,
    FindingLog,
    FrameLayout,
    Message,
    NamedType,
    Preamble,
    Presence,
    Prim,
    PrimitiveType,
    PrimKind,
    Protocol,
    Ref,
    Segments,
    SourceSpan,
    SpecRule,
    field_name,
)
from specgen.ir import Struct as IRStruct

TEXT = "amqp-0-10-text.txt"  # the flattened prose, read beside the XML for the ABNF check
PACKS = (0, 1, 2, 4)  # packing-flag widths the XML uses
SIZES = (0, 1, 2, 4)  # struct size-prefix widths


@dataclass(frozen=True)
class Type:
    """A primitive type: `<type name code fixed-width | variable-width>`."""

    name: str
    code: int | None  # None: no type code (sequence-no, byte-ranges, sequence-set)
    fixed: int | None  # octets of every value
    variable: int | None  # octets of the size prefix
    label: str
    doc: str
    span: SourceSpan


@dataclass(frozen=True)
class Choice:
    name: str
    value: int
    doc: str


@dataclass(frozen=True)
class Domain:
    """A typed alias, `<domain name type>`, with the `<choice>`s of its enum if it has one."""

    name: str  # qualified: "message.accept-mode"; top-level domains unqualified
    type: str  # qualified name of what it aliases (a type, domain or struct)
    choices: tuple[Choice, ...]
    label: str
    doc: str
    span: SourceSpan


@dataclass(frozen=True)
class StructField:
    name: str
    type: str  # qualified name of a type, domain or struct
    required: bool
    label: str
    doc: str
    span: SourceSpan
    prose: tuple[tuple[SourceSpan, str], ...] = ()  # its <rule>s and <exception>s, in words


@dataclass(frozen=True)
class Struct:
    """A struct: `size` octets of size prefix, `pack` octets of packing flags, and with a
    `code` a coded struct (the class code and its code follow the size)."""

    name: str  # qualified: "message.delivery-properties"
    cls: str  # "" for a top-level struct
    class_code: int | None
    code: int | None
    size: int
    pack: int
    fields: tuple[StructField, ...]
    label: str
    doc: str
    span: SourceSpan


@dataclass(frozen=True)
class Method:
    """A control or command: its class code and code, then its fields as a struct with two
    octets of packing flags and no size (a command has the session header before them)."""

    kind: str  # "control" or "command"
    name: str  # qualified: "connection.start"
    cls: str
    class_code: int
    code: int
    fields: tuple[StructField, ...]
    result: str | None  # qualified struct the command's result carries
    header: tuple[str, ...]  # coded structs its header segment may carry
    body: bool  # it has a body segment
    label: str
    doc: str
    span: SourceSpan
    roles: tuple[str, ...] = ()  # who implements it (`<implement role>`): the other side sends
    implement_span: SourceSpan | None = None  # its first <implement>
    header_required: SourceSpan | None = None  # a `<header required="true">`: where
    prose: tuple[tuple[SourceSpan, str], ...] = ()  # its <rule>s and <exception>s, in words


@dataclass(frozen=True)
class Class:
    name: str
    code: int
    label: str
    doc: str
    span: SourceSpan
    prose: tuple[tuple[SourceSpan, str], ...] = ()  # its own <rule>s, in words


@dataclass(frozen=True)
class Model:
    source: str
    major: int
    minor: int
    port: int
    types: tuple[Type, ...]
    constants: tuple[Constant, ...]
    domains: tuple[Domain, ...]
    structs: tuple[Struct, ...]
    classes: tuple[Class, ...]
    methods: tuple[Method, ...]

    def type(self, name: str) -> Type | None:
        return next((t for t in self.types if t.name == name), None)

    def domain(self, name: str) -> Domain | None:
        return next((d for d in self.domains if d.name == name), None)

    def struct(self, name: str) -> Struct | None:
        return next((s for s in self.structs if s.name == name), None)


def build(
    path: Path, rel: str, protocol: str, version: str, data: Mapping[str, Path] = NO_DATA
) -> tuple[Protocol, FindingLog]:
    """The front-end entry (see specgen.frontends)."""
    log = FindingLog()
    model = load(path, rel, log)
    proto = to_protocol(model, protocol, version)
    # the classes' dialogue grammars, as the text states them (specgen.frontends.amqp010_dialogue)
    found = amqp010_dialogue.read(
        path.parent / TEXT,
        _sibling(rel, TEXT),
        [c.name for c in model.classes],
        [m.name for m in model.methods],
        log,
    )
    return replace(proto, dialogues=found), log


def load(path: Path, rel: str, log: FindingLog | None = None) -> Model:
    """The document's model; raises SpecSyntaxError / SpecError naming file:line:column."""
    log = log if log is not None else FindingLog()
    root = xml_tree.parse(read_spec_text(path, rel), rel)
    if root.tag != "amqp":
        raise SpecError(root.span, f"the root element is <{root.tag}>, not <amqp>")
    types = tuple(_type(e) for e in root.findall("type"))
    names: set[str] = set()
    for t in types:
        if t.name in names:
            raise SpecError(t.span, f"type {t.name!r} is defined twice")
        names.add(t.name)
    codes: dict[int, str] = {}
    for t in types:
        if t.code is not None:
            if t.code in codes:
                raise SpecError(t.span, f"type code 0x{t.code:02x} is {codes[t.code]}'s too")
            codes[t.code] = t.name
    constants = tuple(
        Constant(
            name=_name(e),
            value=_int(e, "value"),
            doc=_doc(e),
            span=e.span,
        )
        for e in root.findall("constant")
    )
    domains: list[Domain] = []
    structs: list[Struct] = []
    classes: list[Class] = []
    methods: list[Method] = []
    for e in root.findall("domain"):
        domains.append(_domain(e, ""))
    for c in root.findall("class"):
        cls = Class(
            _name(c), _int(c, "code"), c.attr("label") or "", _doc(c), c.span, _rule_prose(c)
        )
        if any(k.code == cls.code for k in classes):
            raise SpecError(c.span, f"class code {cls.code} is used twice")
        classes.append(cls)
        for e in c.elements():
            if e.tag == "domain":
                domains.append(_domain(e, cls.name))
            elif e.tag == "struct":
                structs.append(_struct(e, cls))
            elif e.tag in ("control", "command"):
                method, result = _method(e, cls)
                methods.append(method)
                if result is not None:
                    structs.append(result)
    model = Model(
        source=rel,
        major=_int(root, "major"),
        minor=_int(root, "minor"),
        port=_int(root, "port"),
        types=types,
        constants=constants,
        domains=tuple(domains),
        structs=tuple(structs),
        classes=tuple(classes),
        methods=tuple(methods),
    )
    _check_names(model)
    _check_abnf(root, model, path.parent / TEXT, _sibling(rel, TEXT), log)
    return model


# --------------------------------------------------------------------------------------------
# Elements


def _type(e: Element) -> Type:
    fixed = _int(e, "fixed-width") if e.attr("fixed-width") is not None else None
    variable = _int(e, "variable-width") if e.attr("variable-width") is not None else None
    if (fixed is None) == (variable is None):
        raise SpecError(
            e.span, f"type {_name(e)!r} needs exactly one of fixed-width, variable-width"
        )
    if variable is not None and variable not in (1, 2, 4):
        raise SpecError(e.attr_spans["variable-width"], f"variable-width={variable}: not 1, 2 or 4")
    code = _int(e, "code") if e.attr("code") is not None else None
    if code is not None and not 0 <= code <= 0xFF:
        raise SpecError(e.attr_spans["code"], f"type code {code} is not one octet")
    return Type(_name(e), code, fixed, variable, _label(e), _doc(e), e.span)


def _domain(e: Element, cls: str) -> Domain:
    choices: list[Choice] = []
    enum = e.find("enum")
    if enum is not None:
        for c in enum.findall("choice"):
            choice = Choice(_name(c), _int(c, "value"), _doc(c))
            if any(x.name == choice.name or x.value == choice.value for x in choices):
                raise SpecError(c.span, f"choice {choice.name}={choice.value} repeats another")
            choices.append(choice)
    type_ = e.attr("type")
    if not type_:
        raise SpecError(e.span, f"domain {_name(e)!r} has no type")
    return Domain(
        _qualify(cls, _name(e)), type_.strip(), tuple(choices), _label(e), _doc(e), e.span
    )


def _struct(e: Element, cls: Class | None) -> Struct:
    size = _int(e, "size") if e.attr("size") is not None else 0
    pack = _int(e, "pack") if e.attr("pack") is not None else 0
    if size not in SIZES:
        raise SpecError(e.attr_spans.get("size", e.span), f"struct size={size}: not 0, 1, 2 or 4")
    if pack not in PACKS:
        raise SpecError(e.attr_spans.get("pack", e.span), f"struct pack={pack}: not 0, 1, 2 or 4")
    code = _int(e, "code") if e.attr("code") is not None else None
    if code is not None and size == 0:
        raise SpecError(e.span, f"coded struct {_name(e)!r} has no size prefix to follow")
    fields = _fields(e)
    if pack and len(fields) > 8 * pack:
        raise SpecError(e.span, f"{len(fields)} fields do not fit {pack} octets of flags")
    name = cls.name if cls else ""
    return Struct(
        name=_qualify(name, _name(e)),
        cls=name,
        class_code=cls.code if cls and code is not None else None,
        code=code,
        size=size,
        pack=pack,
        fields=fields,
        label=_label(e),
        doc=_doc(e),
        span=e.span,
    )


def _method(e: Element, cls: Class) -> tuple[Method, Struct | None]:
    result_name: str | None = None
    result_struct: Struct | None = None
    result = e.find("result")
    if result is not None:
        inner = result.find("struct")
        if inner is not None:
            result_struct = _struct(inner, cls)
            result_name = result_struct.name
        elif result.attr("type"):
            result_name = (result.attr("type") or "").strip()
        else:
            raise SpecError(result.span, "<result> names no type and holds no struct")
    header: tuple[str, ...] = ()
    header_required: SourceSpan | None = None
    body = False
    segments = e.find("segments")
    if segments is not None:
        head = segments.find("header")
        if head is not None:
            header = tuple((x.attr("type") or "").strip() for x in head.findall("entry"))
            if (head.attr("required") or "").strip() == "true":
                header_required = head.span
        body = segments.find("body") is not None
    fields = _fields(e)
    if len(fields) > 16:
        raise SpecError(e.span, f"{len(fields)} fields do not fit two octets of packing flags")
    method = Method(
        kind=e.tag,
        name=_qualify(cls.name, _name(e)),
        cls=cls.name,
        class_code=cls.code,
        code=_int(e, "code"),
        fields=fields,
        result=result_name,
        header=header,
        body=body,
        label=_label(e),
        doc=_doc(e),
        span=e.span,
        roles=tuple(sorted({(i.attr("role") or "").strip() for i in e.findall("implement")})),
        implement_span=next((i.span for i in e.findall("implement")), None),
        header_required=header_required,
        prose=_rule_prose(e),
    )
    return method, result_struct


def _fields(e: Element) -> tuple[StructField, ...]:
    out: list[StructField] = []
    for f in e.findall("field"):
        type_ = f.attr("type")
        if not type_:
            raise SpecError(f.span, f"field {_name(f)!r} has no type")
        field = StructField(
            name=_name(f),
            type=type_.strip(),
            required=(f.attr("required") or "").strip() == "true",
            label=_label(f),
            doc=_doc(f),
            span=f.span,
            prose=_rule_prose(f),
        )
        if any(x.name == field.name for x in out):
            raise SpecError(f.span, f"field {field.name!r} appears twice")
        out.append(field)
    return tuple(out)


# --------------------------------------------------------------------------------------------
# Names


def _check_names(model: Model) -> None:
    """Every field, domain, result and header entry names something the document defines;
    names resolve as `resolve` says. Python names stay unique."""
    methods: set[str] = set()
    for m in model.methods:
        if m.name in methods:
            raise SpecError(m.span, f"{m.kind} {m.name} is defined twice")
        methods.add(m.name)
    for d in model.domains:
        resolve(model, d.type, d.name.rpartition(".")[0], d.span)
    for s in model.structs:
        for f in s.fields:
            resolve(model, f.type, s.cls, f.span)
    for m in model.methods:
        for f in m.fields:
            resolve(model, f.type, m.cls, f.span)
        for name in (m.result, *m.header):
            if name is None:
                continue
            kind, target = resolve(model, name, m.cls, m.span)
            struct = model.struct(target)
            if kind != "struct" or struct is None or struct.code is None:
                raise SpecError(m.span, f"{m.name}: {name!r} is no coded struct")
    seen: dict[str, SourceSpan] = {}
    for name, span in [(s.name, s.span) for s in model.structs] + [
        (m.name, m.span) for m in model.methods
    ]:
        py = class_name(name)
        if py in seen:
            raise SpecError(span, f"{name} and the definition at {seen[py]} share a Python name")
        seen[py] = span
    coded: dict[tuple[int, int], str] = {}
    for s in model.structs:
        if s.code is not None and s.class_code is not None:
            key = (s.class_code, s.code)
            if key in coded:
                raise SpecError(s.span, f"struct code {key} is {coded[key]}'s too")
            coded[key] = s.name
    for kind in ("control", "command"):
        ids: dict[tuple[int, int], str] = {}
        for m in model.methods:
            if m.kind == kind:
                if (m.class_code, m.code) in ids:
                    raise SpecError(
                        m.span, f"{kind} code {m.code} is {ids[m.class_code, m.code]}'s"
                    )
                ids[m.class_code, m.code] = m.name


def resolve(model: Model, name: str, cls: str, span: SourceSpan) -> tuple[str, str]:
    """("type" | "domain" | "struct", qualified name) that `name`, written in class `cls`,
    means: a qualified `class.name` as written; else the class's own domain or struct; else a
    top-level type, domain or struct."""
    candidates = [name] if "." in name else [_qualify(cls, name), name] if cls else [name]
    for c in candidates:
        if model.domain(c) is not None:
            return "domain", c
        if model.struct(c) is not None:
            return "struct", c
        if "." not in c and model.type(c) is not None:
            return "type", c
    raise SpecError(span, f"type {name!r} is not defined by the document")


def base_type(model: Model, name: str, cls: str, span: SourceSpan) -> tuple[str, str, str]:
    """What a field's type is on the wire: (kind, target, enum domain or "") with kind "type"
    (a primitive) or "struct"; domains are followed to what they alias, keeping the first one
    that has choices (the field's values are that domain's enum)."""
    enum = ""
    seen: set[str] = set()
    kind, target = resolve(model, name, cls, span)
    while kind == "domain":
        if target in seen:
            raise SpecError(span, f"domain {target!r} aliases itself")
        seen.add(target)
        domain = model.domain(target)
        assert domain is not None  # resolve found it
        if domain.choices and not enum:
            enum = domain.name
        kind, target = resolve(model, domain.type, target.rpartition(".")[0], domain.span)
    return kind, target, enum


def _qualify(cls: str, name: str) -> str:
    return f"{cls}.{name}" if cls else name


def class_name(qualified: str) -> str:
    """`message.delivery-properties` -> `MessageDeliveryProperties`; a name that starts with
    its class's keeps one copy: `message.message-properties` -> `MessageProperties`."""
    cls, _, local = qualified.rpartition(".")
    if cls and local.startswith(f"{cls}-"):
        qualified = local
    return "".join(w[:1].upper() + w[1:] for w in re.split(r"[-.\s]+", qualified) if w)


def attr_name(name: str) -> str:
    """`max-frame-size` -> `max_frame_size` (a keyword gets a trailing underscore)."""
    py = re.sub(r"[-\s]+", "_", name).lower()
    return f"{py}_" if keyword.iskeyword(py) else py


def const_name(name: str) -> str:
    return re.sub(r"[-.\s]+", "_", name).upper()


# --------------------------------------------------------------------------------------------
# Text


def _name(e: Element) -> str:
    name = e.attr("name")
    if not name or not name.strip():
        raise SpecError(e.span, f"<{e.tag}> has no name")
    return name.strip()


def _label(e: Element) -> str:
    return " ".join((e.attr("label") or "").split())


def _int(e: Element, attr: str) -> int:
    value = e.attr(attr)
    if value is None:
        raise SpecError(e.span, f"<{e.tag}> has no {attr} attribute -> give it one ({attr}=...)")
    try:
        return int(value.strip(), 0)
    except ValueError:
        span = e.attr_spans.get(attr, e.span)
        raise SpecError(span, f"{attr}={value!r} is not an integer") from None


def _doc(e: Element) -> str:
    """The element's untyped `<doc>` paragraphs, whitespace collapsed; its label without."""
    paras: list[str] = []
    for d in e.findall("doc"):
        if d.attr("type") is not None:
            continue  # pictures, bnf, grammars and scenarios are not prose
        text = "".join(_prose(c) for c in d.children)
        paras.extend(" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip())
    return "\n\n".join(paras) or _label(e)


def _prose(c: Element | str) -> str:
    if isinstance(c, str):
        return c
    if c.tag == "xref" and not c.text.strip():
        return c.attr("ref") or ""
    return "".join(_prose(x) for x in c.children)


def _rule_prose(e: Element) -> tuple[tuple[SourceSpan, str], ...]:
    """The `<rule>`s and `<exception>`s directly inside `e`: what the spec requires in words
    (an exception names the error its breach raises)."""
    out = []
    for r in e.elements():
        if r.tag not in ("rule", "exception"):
            continue
        name = (r.attr("name") or "").strip()
        error = (r.attr("error-code") or "").strip()
        head = f"{name} ({error})" if error else name
        words = _doc(r)
        out.append((r.span, f"{head}: {words}" if head and words else head or words))
    return tuple(out)


def _sibling(rel: str, name: str) -> str:
    return f"{rel.rsplit('/', 1)[0]}/{name}" if "/" in rel else name


# --------------------------------------------------------------------------------------------
# The ABNF check


def _check_abnf(
    root: Element, model: Model, text_path: Path, text_rel: str, log: FindingLog
) -> None:
    """Each type's width from its attributes against its ABNF in the XML and in the text."""
    for e in root.findall("type"):
        t = model.type(_name(e))
        assert t is not None
        for d in e.findall("doc"):
            if d.attr("type") != "bnf":
                continue
            where = d.attr_spans["type"]
            # the text starts right after `type="bnf">`
            column = where.column + len('type="bnf"') + 1
            try:
                rules = abnf.parse_rules(d.text, where.file, where.line, column)
            except SpecSyntaxError as e:  # a cross-check only: the attributes still decide
                log.add(e.span, "bnf-syntax", f"the ABNF of type {t.name} does not parse: {e}")
                continue
            if not rules:
                continue
            first = rules[0]
            if first.name.lower() != t.name:
                log.add(
                    first.span,
                    "bnf-name",
                    f"the ABNF of type {t.name} defines {first.name!r}",
                    f"the rule is read as {t.name}'s",
                )
            _compare(t, _width(rules, first.name, model), first.span, "XML", log)
    if not text_path.is_file():
        log.add(
            SourceSpan(root.span.file, 1, 1),
            "text-absent",
            f"no {text_path.name} beside the XML: its ABNF is not cross-checked",
            "the XML alone",
        )
        return
    text = read_spec_text(text_path, text_rel)
    # the text's finder gives one rule per block: a type's rules are its own and those after
    # it up to the next type's (`vbin8 = size octets`, then `size = uint8`, `octets = ...`)
    groups: list[tuple[Type, list[abnf.Rule]]] = []
    for block in abnf.find_blocks(text, text_rel, "inline"):
        try:
            rules = abnf.parse_rules(block.text, text_rel, block.line, block.column)
        except SpecSyntaxError as e:
            log.add(e.span, "text-abnf", f"ABNF the text states does not parse: {e}", "skipped")
            continue
        for rule in rules:
            t = model.type(rule.name.lower())
            if t is not None:
                groups.append((t, [rule]))
            elif groups:
                groups[-1][1].append(rule)
    seen: set[str] = set()
    for t, group in groups:
        seen.add(t.name)
        _compare(t, _width(tuple(group), group[0].name, model), group[0].span, "text", log)
    for t in model.types:
        if t.fixed != 0 and t.name not in seen:
            log.add(
                SourceSpan(text_rel, 1, 1),
                "text-missing",
                f"the text states no ABNF rule for type {t.name}",
                "the XML's attributes decide",
            )


def _compare(
    t: Type, width: tuple[str, int] | None, span: SourceSpan, where: str, log: FindingLog
) -> None:
    if width is None:
        return
    kind, n = width
    want = ("fixed", t.fixed) if t.fixed is not None else ("variable", t.variable)
    if (kind, n) != want:
        log.add(
            span,
            f"abnf-width-{where.lower()}",
            f"type {t.name}: the {where}'s ABNF says {kind} width {n}, its attributes "
            f"{want[0]} width {want[1]}",
            "the attributes decide",
        )


def _width(rules: tuple[abnf.Rule, ...], start: str, model: Model) -> tuple[str, int] | None:
    """("fixed", octets) or ("variable", octets of the size prefix) the rules give `start`,
    or None when they do not say (a map's entries)."""
    by_name = {r.name.lower(): r for r in rules}

    def fixed(expr: abnf.Expr, depth: int = 0) -> int | None:
        if depth > 20:
            return None
        match expr:
            case abnf.RuleRef():
                name = expr.name.lower()
                if name == "octet":
                    return 1
                if name in by_name and name != start.lower():
                    return fixed(by_name[name].expr, depth + 1)
                t = model.type(name)
                return t.fixed if t is not None else None
            case abnf.Seq():
                widths = [fixed(x, depth + 1) for x in expr.items]
                return None if None in widths else sum(w for w in widths if w is not None)
            case abnf.Repeat() if expr.high == expr.low:
                w = fixed(expr.expr, depth + 1)
                return None if w is None else w * expr.low
            case (
                abnf.Repeat()
                | abnf.Alt()
                | abnf.Step()
                | abnf.CharVal()
                | abnf.NumVal()
                | abnf.NumRange()
                | abnf.ProseVal()
            ):
                return None
            case _:
                assert_never(expr)

    rule = by_name[start.lower()]
    expr = rule.expr
    if isinstance(expr, abnf.Seq) and isinstance(expr.items[0], abnf.RuleRef):
        if expr.items[0].name.lower() == "size" and "size" in by_name:
            n = fixed(by_name["size"].expr)
            return None if n is None else ("variable", n)
    n = fixed(expr)
    return None if n is None else ("fixed", n)


# --------------------------------------------------------------------------------------------
# The shared IR


def to_protocol(model: Model, protocol: str, version: str) -> Protocol:
    """The whole document in the shared IR: every type (with its type code), struct (size
    prefix, packing flags counted from the least significant bit, class code and code),
    domain enum (over its type), control and command (its class code and code after the
    segment type; a command's session header first), and the frame header with its segment
    layer. The packing flags are a `Presence` field named `PackingFlags`; each field names its
    flag, and a `bit` field is its flag alone. Every domain is an alias of the type it comes to;
    the classes are constants of group "class"."""
    enums = tuple(
        Enum(
            name=class_name(d.name),
            values=tuple(EnumValue(const_name(c.name), c.value, c.doc) for c in d.choices),
            doc=d.doc,
            span=d.span,
            over=base_type(model, d.type, d.name.rpartition(".")[0], d.span)[1],
            spec_name=d.name,
        )
        for d in model.domains
        if d.choices
    )
    aliases = tuple(_alias(model, d) for d in model.domains)
    classes = tuple(Constant(c.name, c.code, c.doc, c.span, group="class") for c in model.classes)
    span = SourceSpan(model.source, 1, 1)

    def f(name: str, prim: str, domain: str = "") -> Field:
        # the frame's type and track take the values of the XML's domains of those names
        enum = class_name(domain) if model.domain(domain) is not None else None
        return Field(name, Prim(prim), span=span, enum=enum)

    frame = FrameLayout(
        header=(
            f("flags", "uint8"),
            f("type", "uint8", "segment-type"),
            f("size", "uint16"),
            f("reserved", "uint8"),
            f("track", "uint8", "track"),
            f("channel", "uint16"),
            f("reserved2", "uint32"),
        ),
        length="size",
        length_counts="frame",
        dispatch=("type",),
        span=span,
        # the transport section: "AMQP", class 1, instance 1, then the XML's major and minor;
        # the client sends it first and the server answers with its own
        preambles=(
            Preamble(
                "both",
                b"AMQP\x01\x01" + bytes((model.major, model.minor)),
                doc="the protocol header: AMQP, class 1, instance 1, major, minor",
            ),
        ),
        segments=Segments(
            "flags",
            first_segment=0x08,
            last_segment=0x04,
            first_frame=0x02,
            last_frame=0x01,
            doc="A control or command is one segment; a command with content is followed by "
            "a header segment (coded structs) and body segments.",
        ),
    )
    named = tuple(
        NamedType(s.name, _ir_struct(model, s), doc=s.doc, span=s.span, label=s.label)
        for s in model.structs
    )
    commands = tuple(_ir_command(model, m) for m in model.methods)
    rules = [
        *(r for c in model.classes for r in _prose_rules(c.prose, "", None, f"class {c.name}")),
        *(r for m in model.methods for r in _method_rules(model, m)),
        *(
            r
            for s in model.structs
            for r in _field_rules(model, f"named:{s.name}", s.fields, s.cls)
        ),
    ]
    return Protocol(
        name=protocol,
        version=version,
        source=model.source,
        types=tuple(_ir_type(t) for t in model.types),
        frame=frame,
        enums=enums,
        constants=model.constants + classes,
        commands=commands,
        named=named,
        aliases=aliases,
        rules=tuple(rules),
    )


def _method_rules(model: Model, m: Method) -> list[SpecRule]:
    """A control's or command's rules: who sends it (the other side of who implements it),
    its fields' rules, and its own in words."""
    owner = f"message:{class_name(m.name)}"
    out = _field_rules(model, owner, m.fields, m.cls)
    if len(m.roles) == 1 and m.roles[0] in ("client", "server"):
        sender = "server" if m.roles[0] == "client" else "client"
        out.append(
            SpecRule(
                "sender",
                owner,
                None,
                m.implement_span or m.span,
                value=sender,
                prose=f'<implement role="{m.roles[0]}">: sent by the {sender}',
            )
        )
    if m.header_required is not None:
        # a segment, no field: what checks a frame's fields cannot check this one
        out.append(
            SpecRule(
                "required",
                owner,
                None,
                m.header_required,
                checkable=False,
                prose='<header required="true">: its header segment is always sent',
            )
        )
    out.extend(_prose_rules(m.prose, owner, None))
    return out


def _field_rules(
    model: Model, owner: str, fields: tuple[StructField, ...], cls: str
) -> list[SpecRule]:
    """Each field's rules: `required`, the choices of the domain its values come from, and
    its own in words."""
    out: list[SpecRule] = []
    for sf in fields:
        name = field_name(sf.name)
        if sf.required:
            out.append(SpecRule("required", owner, name, sf.span, prose='required="true"'))
        enum = base_type(model, sf.type, cls, sf.span)[2]
        domain = model.domain(enum) if enum else None
        if domain is not None:
            listed = ", ".join(f"{c.name}={c.value}" for c in domain.choices)
            out.append(
                SpecRule(
                    "choice",
                    owner,
                    name,
                    domain.span,  # where the choices are stated
                    values=tuple(c.value for c in domain.choices),
                    via=f"domain {domain.name}",
                    prose=f"one of {domain.name}'s choices: {listed}",
                )
            )
        out.extend(_prose_rules(sf.prose, owner, name))
    return out


def _prose_rules(
    prose: tuple[tuple[SourceSpan, str], ...], owner: str, field: str | None, via: str = ""
) -> list[SpecRule]:
    return [
        SpecRule("prose", owner, field, span, checkable=False, prose=text or "(no words)", via=via)
        for span, text in prose
    ]


_SEGMENT = {"control": 0, "command": 1}  # the frame's segment type of each
_SIZE_PREFIX = {0: None, 1: "uint8", 2: "uint16", 4: "uint32"}
_TEXT = {"latin": "iso8859-15", "utf16": "utf-16-be"}
_KIND: dict[str, PrimKind] = {"float": "float", "double": "float", "datetime": "timestamp"}


def _ir_type(t: Type) -> PrimitiveType:
    """A `<type>` as a primitive: integers by name, then by what the label and width say."""

    def prim(
        kind: PrimKind, width: int = 0, signed: bool = False, prefix: str = "", text: str = ""
    ) -> PrimitiveType:
        return PrimitiveType(
            t.name,
            kind,
            width,
            signed,
            prefix,
            encoding=text,
            doc=t.doc,
            span=t.span,
            code=t.code,
            label=t.label,
        )

    if t.variable is not None:
        prefix = _SIZE_PREFIX[t.variable] or "uint8"
        if t.name.startswith("str"):
            return prim("string", prefix=prefix, text=_TEXT.get(t.name.rpartition("-")[2], "utf-8"))
        return prim("bytes", prefix=prefix)
    width = t.fixed or 0
    if t.name in INT_WIDTHS:
        return prim("int", width, INT_WIDTHS[t.name][1])
    if t.name == "sequence-no":  # an RFC 1982 serial number: unsigned arithmetic modulo 2^32
        return prim("int", width)
    if t.name in ("boolean", "bit"):
        return prim("bool", width)
    if t.name == "void":
        return prim("void")
    if t.name.startswith("dec"):
        return prim("decimal", width)
    if t.name in _KIND:
        return prim(_KIND[t.name], width)
    return prim("bytes", width)  # opaque octets: binN, uuid, the fixed-width characters


def _flagged(
    model: Model, fields: tuple[StructField, ...], cls: str, pack: int
) -> tuple[Field, ...]:
    out: list[Field] = []
    if pack:
        out.append(
            Field(
                "PackingFlags",
                Presence(pack, continuation=None, order="lsb"),
                doc="which of the fields after it are present",
            )
        )
    for i, sf in enumerate(fields):
        kind, target, enum = base_type(model, sf.type, cls, sf.span)
        out.append(
            Field(
                field_name(sf.name),
                Prim(target) if kind == "type" else Ref(target),
                doc=sf.doc or sf.label,
                span=sf.span,
                enum=class_name(enum) if enum else None,
                present=("PackingFlags", i) if pack else None,
                required=sf.required,
                spec_name=sf.name,
            )
        )
    return tuple(out)


def _alias(model: Model, d: Domain) -> NamedType:
    kind, target, _ = base_type(model, d.name, "", d.span)
    return NamedType(
        d.name,
        Prim(target) if kind == "type" else Ref(target),
        doc=d.doc,
        span=d.span,
        label=d.label,
    )


def _ir_struct(model: Model, s: Struct) -> IRStruct:
    return IRStruct(
        class_name(s.name),
        _flagged(model, s.fields, s.cls, s.pack),
        size_prefix=_SIZE_PREFIX[s.size],
        ident=(s.class_code, s.code) if s.class_code is not None and s.code is not None else (),
    )


def _ir_command(model: Model, m: Method) -> Command:
    head: tuple[Field, ...] = ()
    if m.kind == "command":
        head = (Field("SessionHeader", Ref("session.header"), doc="the command's session header"),)
    sender: Direction = (
        "client" if m.roles == ("server",) else "server" if m.roles == ("client",) else "both"
    )
    name = f"{field_name(m.cls)}.{field_name(m.name.rpartition('.')[2])}"

    def struct(ref: str) -> str:
        return resolve(model, ref, m.cls, m.span)[1]  # `_check_names`: a coded struct

    message = Message(
        name=class_name(m.name),
        kind="oneway",
        ident=(_SEGMENT[m.kind], m.class_code, m.code),
        versions=ALL_VERSIONS,
        fields=head + _flagged(model, m.fields, m.cls, 2),
        doc=m.doc,
        span=m.span,
        content=m.body,
        result=struct(m.result) if m.result else None,
        content_header=tuple(struct(h) for h in m.header),
        spec_name=m.name,
    )
    return Command(name, (m.class_code, m.code), sender, (message,), doc=m.doc, span=m.span)
