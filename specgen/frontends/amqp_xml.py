"""AMQP 0-9-1 XML spec -> IR, with what the XML contradicts or leaves open reported as findings.

The XML (`<amqp major minor revision port>`) gives constants, domains, and classes of methods;
this module maps them, and the framing the XML only names in constants, onto the IR. Earlier
versions of the same XML (0-8) are read by rule where they write things differently, each rule
that applies reported once as a finding: names spelt with spaces (`frame method`) are the
hyphenated names of 0-9-1 (`frame-method`); an `<amqp>` without `revision` (0-8's: `major="8"
minor="0"`) is versioned by major and minor alone and opens with the header of the versions
before 0-9-1, 'AMQP' 1 1 major minor (protocol class 1, instance 1; RabbitMQ's rabbit_reader
takes `<<"AMQP", 1, 1, 8, 0>>` as 0-8 and `<<"AMQP", 1, 1, 0, 9>>` as 0-9), where 0-9-1 writes
'AMQP' 0 major minor revision.

  * Domains resolve through `<domain name type>` chains to the base types: octet, short, long,
    longlong (uint8..uint64), bit, shortstr (uint8-prefixed UTF-8, bytes kept through
    surrogateescape), longstr (uint32-prefixed bytes), timestamp (8 bytes) and table
    (`Ref("table")`: a Map of shortstr keys to field values filling a uint32 byte count).
  * Frames: type octet, channel (uint16), size (uint32, counting the body), the body, the
    frame-end octet. Method frames carry class and method ids at the start of the body,
    content-header frames the class id. The numbers come from the XML's frame-* constants.
  * Every `<method>` is a Command "Class.Method" with one Message, identified on the wire by
    (frame-method, class index, method index). Consecutive bit fields pack into octets, least
    significant bit first, as AMQP does. Who sends a method comes from its `<chassis>` elements,
    which say who implements (receives) it.
  * A class's `<field>`s are its content-header properties: "Class.Properties", a Presence word
    (16 bits, bit 0 says another word follows) flagging which properties follow. Content bodies
    and heartbeats are commands of their own.

Field-table values: THE TAGS ARE RABBITMQ'S. The XML does not list the type octets at all; the
0-9-1 PDF's grammar (section 4.2.5.5) does, and RabbitMQ, its clients and the Qpid family use a
different list (RabbitMQ's "AMQP 0-9-1 errata: field types"; rabbit_binary_parser.erl and
rabbit_binary_generator.erl; the same tags in pika and the Java client). So
`field-types.toml` (shipped with the protocol: protocol.toml's `[data]`; or a file of that
name beside the XML; or `--data field-types=FILE`) lists per tag the IR type, what the grammar
says, what RabbitMQ reads and sends, and the evidence; RabbitMQ's tags decide, and each tag
where the grammar disagrees is reported (`field-type-tag`) at the XML's `table` domain.
A value made afresh takes the first tag of the file's `prefer` list whose type holds it.

Anything the builder cannot map raises SpecError naming file:line:column.
"""

from __future__ import annotations

import posixpath
import re
import textwrap
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from specgen import abnf, dialogue
from specgen.frontends import xml_tree
from specgen.frontends.adoc import SpecError
from specgen.frontends.amqp_versions import CLASS_AND_METHOD, fallback_header
from specgen.frontends.bits import pack_bits
from specgen.frontends.data import NO_DATA
from specgen.frontends.rules import bind, settle_others
from specgen.frontends.spec_text import read_spec_text
from specgen.frontends.xml_tree import Element
from specgen.ir import (
    BUILTIN,
    Array,
    BitField,
    Blob,
    BodyKey,
    Case,
    Choice,
    Command,
    Constant,
    Dialogue,
    Direction,
    Enum,
    EnumValue,
    Field,
    FindingLog,
    FrameLayout,
    Map,
    Message,
    MessageKind,
    NamedType,
    Preamble,
    Presence,
    Prim,
    PrimitiveType,
    PrimKind,
    Protocol,
    Ref,
    RuleKind,
    SourceSpan,
    SpecRule,
    TypeRef,
    Versions,
    spelled_number,
)
from specgen.ir import field_name as camel
from specgen.registry import relative

if TYPE_CHECKING:
    from specgen.overlay import Declared

FIELD_TYPES = "field-types.toml"
FIELD_TYPES_DATA = "field-types"  # its name among the protocol's data (protocol.toml [data])

INTS = {"octet": "uint8", "short": "uint16", "long": "uint32", "longlong": "uint64"}
BASE_TYPES = (*INTS, "bit", "shortstr", "longstr", "timestamp", "table")
FRAME_CONSTANTS = ("frame-method", "frame-header", "frame-body", "frame-heartbeat", "frame-end")
ERROR_CLASSES = ("soft-error", "hard-error")

# Attribute values that are names or refer to them, per element: 0-8 spells them with spaces.
NAME_ATTRIBUTES = {
    "constant": ("name", "class"),
    "domain": ("name", "type"),
    "class": ("name",),
    "method": ("name",),
    "field": ("name", "domain", "type"),
    "response": ("name",),
    "assert": ("method", "field"),
}

# Attributes the XML uses on these elements; any other is reported and ignored.
KNOWN_ATTRIBUTES = {
    "class": {"name", "handler", "index", "label"},
    "method": {"name", "index", "label", "synchronous", "content", "deprecated"},
    "field": {"name", "domain", "type", "label", "reserved"},
}

# Grammar vocabulary shared by field-types.toml's `spec` and `rabbitmq` columns.
TAG_VOCABULARY = {
    "boolean", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
    "float", "double", "decimal", "short-string", "long-string", "byte-array", "field-array",
    "timestamp", "field-table", "void",
}  # fmt: skip


def build(
    path: Path,
    rel: str,
    protocol: str,
    version: str,
    data: Mapping[str, Path] = NO_DATA,
    declared: Mapping[str, Declared] | None = None,
) -> tuple[Protocol, FindingLog]:
    """The front-end entry (see specgen.frontends): parse the XML, then build its IR. The
    field-table tags are `data["field-types"]`, else the file of that name beside the XML.
    `declared`: an overlay's types for names a document uses but never declares (AMQP 0-9's
    `content`), read only where the document has no domain of that name."""
    text = read_spec_text(path, rel)
    root, respelt = hyphenated(xml_tree.parse(text, rel))
    given = data.get(FIELD_TYPES_DATA)
    if given is not None:
        types_path, types_rel = given, relative(given)
    else:
        types_path = path.parent / FIELD_TYPES
        types_rel = posixpath.join(posixpath.dirname(rel), FIELD_TYPES)
        if not types_path.is_file():
            raise SpecError(
                root.span,
                f"no {FIELD_TYPES} beside the spec and none given (the field-table tags, which "
                f"the XML does not list): give --data {FIELD_TYPES_DATA}=FILE, or --protocol "
                "of a protocol that ships one",
            )
    tags = _FieldTypes.load(types_path, types_rel)
    builder = _Builder(root, tags, protocol, version, declared or {})
    if respelt:
        first = respelt[0][0]
        examples = ", ".join(repr(w) for w in list(dict.fromkeys(w for _, w in respelt))[:4])
        builder.log.add(
            first,
            "name-spelling",
            f"{len(respelt)} names are written with spaces, as AMQP 0-8 writes them "
            f"({examples}, ...)",
            "read with hyphens, as 0-9-1 writes them ('frame method' is frame-method)",
        )
    proto, log = builder.run()
    used = tuple(d.entry for d in (declared or {}).values() if d.name in builder.used)
    return replace(proto, dialogues=dialogues(root, text, log), overlays=used), log


def hyphenated(root: Element) -> tuple[Element, list[tuple[SourceSpan, str]]]:
    """The document with every name (NAME_ATTRIBUTES) that has spaces inside written with
    hyphens instead, and where each such name was and how it was written."""
    respelt: list[tuple[SourceSpan, str]] = []

    def visit(el: Element) -> Element:
        attrs = dict(el.attrs)
        for attr in NAME_ATTRIBUTES.get(el.tag, ()):
            value = attrs.get(attr)
            if value is not None and len(value.split()) > 1:
                attrs[attr] = "-".join(value.split())
                respelt.append((el.attr_spans.get(attr, el.span), value.strip()))
        children = tuple(c if isinstance(c, str) else visit(c) for c in el.children)
        return replace(el, attrs=attrs, children=children)

    return visit(root), respelt


# --------------------------------------------------------------------------------------------
# Names and prose


def upper_snake(name: str) -> str:
    return re.sub(r"[-\s]+", "_", name).upper()


def paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs, each with its whitespace collapsed."""
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip()]


def docs_of(element: Element) -> list[str]:
    """The paragraphs of an element's untyped `<doc>` children (not grammar or scenarios)."""
    out: list[str] = []
    for doc in element.findall("doc"):
        if doc.attr("type") is None:
            out.extend(paragraphs(doc.text))
    return out


def _join(*parts: str | list[str]) -> str:
    flat: list[str] = []
    for p in parts:
        flat.extend([p] if isinstance(p, str) else p)
    return "\n\n".join(p for p in flat if p)


def _integer(element: Element, name: str) -> int:
    value = element.attr(name)
    span = element.attr_spans.get(name, element.span)
    if value is None:
        raise SpecError(
            element.span, f"<{element.tag}> has no {name} attribute -> give it one ({name}=...)"
        )
    number = spelled_number(value)  # 10, 0x0A, 10u: every spelling real copies use
    if not isinstance(number, int):
        raise SpecError(span, f"{name}={value!r} is not an integer -> write it in decimal")
    return number


def _name(element: Element) -> str:
    name = element.attr("name")
    if not name or not name.strip():
        raise SpecError(element.span, f"<{element.tag}> has no name")
    return name.strip()


# --------------------------------------------------------------------------------------------
# field-types.toml


@dataclass(frozen=True)
class _Tag:
    tag: str
    type: str  # IR type name, "" when RabbitMQ has no such tag
    spec: str
    rabbitmq: str
    evidence: str
    span: SourceSpan


@dataclass(frozen=True)
class _FieldTypes:
    tags: tuple[_Tag, ...]
    prefer: tuple[str, ...]
    span: SourceSpan  # the file's first line

    @classmethod
    def load(cls, path: Path, rel: str) -> _FieldTypes:
        text = read_spec_text(path, rel)
        top = SourceSpan(rel, 1)
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise SpecError(top, f"{FIELD_TYPES}: {e}") from None
        lines = text.splitlines()

        def line_of(tag: str) -> SourceSpan:
            for i, line in enumerate(lines):
                if re.fullmatch(rf'\s*tag\s*=\s*"{re.escape(tag)}"\s*', line):
                    return SourceSpan(rel, i + 1)
            return top

        tags: list[_Tag] = []
        for entry in data.get("tag", []):
            span = line_of(str(entry.get("tag", "")))
            keys = ("tag", "type", "spec", "rabbitmq", "evidence")
            missing = [k for k in keys if not isinstance(entry.get(k), str)]
            if missing:
                raise SpecError(span, f"tag entry without {', '.join(missing)}")
            tag = _Tag(
                entry["tag"],
                entry["type"],
                entry["spec"],
                entry["rabbitmq"],
                entry["evidence"],
                span,
            )
            if len(tag.tag) != 1 or not tag.tag.isascii():
                raise SpecError(span, f"tag {tag.tag!r} is not one ASCII character")
            for column in ("spec", "rabbitmq"):
                value = getattr(tag, column)
                if value and value not in TAG_VOCABULARY:
                    raise SpecError(span, f"{column} {value!r} is not one of the file's words")
            if bool(tag.type) != bool(tag.rabbitmq):
                raise SpecError(span, f"tag {tag.tag!r}: a type exactly when RabbitMQ has it")
            if any(t.tag == tag.tag for t in tags):
                raise SpecError(span, f"tag {tag.tag!r} listed twice")
            tags.append(tag)
        if not tags:
            raise SpecError(top, f"{FIELD_TYPES} lists no tags")
        prefer = data.get("prefer", [])
        if not isinstance(prefer, list) or not all(isinstance(p, str) for p in prefer):
            raise SpecError(top, "prefer is not a list of tags")
        cases = {t.tag for t in tags if t.type}
        unknown = [p for p in prefer if p not in cases]
        if unknown:
            raise SpecError(top, f"preferred tags {unknown} are not RabbitMQ tags of the file")
        return cls(tuple(tags), tuple(prefer), top)


# --------------------------------------------------------------------------------------------
# The builder


@dataclass
class _Resolved:
    base: str  # one of BASE_TYPES
    chain: list[Element]  # the domain elements passed through, nearest first


@dataclass
class _Method:
    cls: Element
    element: Element
    class_name: str
    name: str  # the XML's method name, "get-ok"
    class_index: int
    index: int
    sender: Direction
    replies: list[str]  # XML method names of its <response>s that exist


class _Builder:
    def __init__(
        self,
        root: Element,
        tags: _FieldTypes,
        protocol: str,
        version: str,
        declared: Mapping[str, Declared],
    ) -> None:
        self.root = root
        self.declared = declared
        self.used: set[str] = set()  # the declared names the document uses
        self.path = root.span.file
        self.tags = tags
        self.protocol = protocol
        self.version = version
        self.log = FindingLog()
        self.domains: dict[str, Element] = {}
        self.resolved: dict[str, _Resolved] = {}
        self.constants: dict[str, tuple[int, Element]] = {}
        self.rules: list[SpecRule] = []  # the document's rules, each bound to its message
        self.pending: list[SpecRule] = []  # rules of the fields read, before their message
        self.chassis: dict[str, SourceSpan] = {}  # where a method's chassis say who sends it

    # ---- the document

    def run(self) -> tuple[Protocol, FindingLog]:
        if self.root.tag != "amqp":
            raise SpecError(self.root.span, f"the root element is <{self.root.tag}>, not <amqp>")
        constants = self._constants()
        self._domains()
        types, named = self._types()
        frame = self._frame()
        enum = self._reply_codes()
        classes = self._classes()
        commands: list[Command] = []
        for cls, methods in classes:
            commands.extend(self._command(m, methods) for m in methods)
            self._check_class(cls, methods)
            props = self._properties(cls)
            if props is not None:
                commands.append(props)
            elif any(m.element.attr("content") == "1" for m in methods):
                self.log.add(
                    cls.span,
                    "content-without-properties",
                    f"class {_name(cls)} has methods with content but no properties",
                    "the content header carries no properties",
                )
        commands.extend(self._content_body_and_heartbeat())
        proto = Protocol(
            name=self.protocol,
            version=self.version,
            source=self.path,
            types=types,
            frame=frame,
            enums=(enum,),
            constants=constants,
            commands=tuple(sorted(commands, key=lambda c: c.ident)),
            named=named,
        )
        rules = [*self._loose_rules(), *self.rules]
        return replace(proto, rules=tuple(settle_others(proto, rules))), self.log

    def _loose_rules(self) -> list[SpecRule]:
        """The `<rule>`s of classes and domains: prose about no one message."""
        out: list[SpecRule] = []
        for el in self.domains.values():
            out.extend(_prose_rules(el, "", f"domain {_name(el)}"))
        for cls in self.root.findall("class"):
            out.extend(_prose_rules(cls, "", f"class {_name(cls)}"))
        return out

    def _constants(self) -> tuple[Constant, ...]:
        out = []
        for el in self.root.findall("constant"):
            name = _name(el)
            if name in self.constants:
                first = self.constants[name][1].span
                raise SpecError(el.span, f"constant {name} is defined twice (first at {first})")
            value = _integer(el, "value")
            self.constants[name] = (value, el)
            out.append(
                Constant(
                    upper_snake(name),
                    value,
                    _join(docs_of(el)),
                    el.span,
                    group=(el.attr("class") or "").strip(),
                )
            )
        return tuple(out)

    def _constant(self, name: str) -> int:
        if name not in self.constants:
            raise SpecError(
                self.root.span,
                f"the XML defines no {name} constant (frame layout) -> a whole spec defines the "
                "frame-* constants; a document that only adds to one (Qpid's errata and preview "
                "files) is read merged into it",
            )
        return self.constants[name][0]

    # ---- domains and types

    def _domains(self) -> None:
        for el in self.root.findall("domain"):
            name = _name(el)
            if name in self.domains:
                first = self.domains[name].span
                raise SpecError(el.span, f"domain {name} is defined twice (first at {first})")
            if not el.attr("type"):
                raise SpecError(el.span, f"domain {name} has no type")
            self.domains[name] = el
        for name, el in self.domains.items():
            self.resolved[name] = self._resolve_domain(name, el.span)
        self._check_labels()

    def _resolve_domain(self, name: str, span: SourceSpan) -> _Resolved:
        chain: list[Element] = []
        current = name
        while True:
            el = self.domains.get(current)
            if el is None:
                if current in BASE_TYPES:
                    return _Resolved(current, chain)
                return self._undeclared(current, span, chain)
            if el in chain:
                loop = " -> ".join([*(_name(d) for d in chain), current])
                raise SpecError(el.span, f"domain loop {loop}")
            chain.append(el)
            target = (el.attr("type") or "").strip()
            span = el.attr_spans.get("type", el.span)
            if target == current:
                if target in BASE_TYPES:
                    return _Resolved(target, chain)
                raise SpecError(span, f"domain {current} is of type {target!r}, no AMQP type")
            current = target

    def _check_labels(self) -> None:
        """A label promising more characters than a string's length prefix can count."""
        for name, el in self.domains.items():
            base = self.resolved[name].base
            m = re.search(
                r"max\.?\s*(\d+)\s*(characters|chars|octets|bytes)", el.attr("label") or ""
            )
            limit = {"shortstr": 255}.get(base)
            if m and limit is not None and int(m.group(1)) > limit:
                self.log.add(
                    el.attr_spans.get("label", el.span),
                    "label-max-length",
                    f"domain {name}'s label says {m.group(0)!r}, but a {base} has a one-octet "
                    f"length: at most {limit} bytes",
                    f"the length prefix ({limit} bytes)",
                )

    def _domain_doc(self, name: str) -> tuple[str, list[str]]:
        el = self.domains.get(name)
        if el is None:
            return "", []
        return (el.attr("label") or "").strip(), docs_of(el)

    def _types(self) -> tuple[tuple[PrimitiveType, ...], tuple[NamedType, ...]]:
        def span_of(name: str) -> SourceSpan:
            el = self.domains.get(name)
            return el.span if el is not None else self.root.span

        def doc_of(name: str) -> str:
            label, docs = self._domain_doc(name)
            return _join(label, docs)

        by_tag = {t.tag: t for t in self.tags.tags}

        def tag_span(tag: str) -> SourceSpan:
            t = by_tag.get(tag)
            return t.span if t is not None else self.tags.span

        types: list[PrimitiveType] = [
            PrimitiveType(
                "shortstr",
                "string",
                length_prefix="uint8",
                encoding="utf-8",
                errors="surrogateescape",
                doc=doc_of("shortstr"),
                span=span_of("shortstr"),
            ),
            PrimitiveType(
                "longstr",
                "bytes",
                length_prefix="uint32",
                doc=doc_of("longstr"),
                span=span_of("longstr"),
            ),
            PrimitiveType(
                "timestamp",
                "timestamp",
                width=8,
                doc=doc_of("timestamp"),
                span=span_of("timestamp"),
            ),
        ]
        extra: list[tuple[str, PrimKind, int, str, str]] = [
            ("boolean", "bool", 1, "t", "Field-table boolean: one octet, 0 or 1."),
            ("float", "float", 4, "f", "Field-table float: IEEE 754 binary32."),
            ("double", "float", 8, "d", "Field-table double: IEEE 754 binary64."),
            ("decimal", "decimal", 5, "D", "Field-table decimal: a scale octet, then the value."),
            ("void", "void", 0, "V", "Field-table void: no bytes, no value."),
        ]
        for name, kind, width, tag, doc in extra:
            types.append(PrimitiveType(name, kind, width=width, doc=doc, span=tag_span(tag)))
        types.append(
            PrimitiveType(
                "longstr-text",
                "string",
                length_prefix="uint32",
                encoding="utf-8",
                errors="surrogateescape",
                doc="Field-table long string ('S'): a uint32 length, then UTF-8 text; bytes "
                "that are no UTF-8 are kept (surrogateescape), so any value encodes back to "
                "its bytes.",
                span=tag_span("S"),
            )
        )
        known = {t.name for t in types} | set(BUILTIN)

        table_el = self.domains.get("table")
        table_span = table_el.span if table_el is not None else self.root.span
        cases: list[Case] = []
        ref_names = {"table", "field-array"}
        for t in self.tags.tags:
            if t.spec != t.rabbitmq:
                said = f"says {t.spec}" if t.spec else "has no such tag"
                does = f"reads {t.rabbitmq}" if t.rabbitmq else "refuses it"
                self.log.add(
                    table_span,
                    "field-type-tag",
                    f"field-table tag {t.tag!r}: the 0-9-1 grammar (PDF 4.2.5.5) {said}, "
                    f"RabbitMQ {does}",
                    "RabbitMQ's tag (field-types.toml)",
                )
            if not t.type:
                continue
            if t.type in ref_names:
                ref: TypeRef = Ref(t.type)
            elif t.type in known:
                ref = Prim(t.type)
            else:
                raise SpecError(t.span, f"tag {t.tag!r}: {t.type!r} is no type of the IR")
            cases.append(Case((ord(t.tag),), ref, f"{t.tag} {t.type}"))
        field_value = Choice("uint8", tuple(cases), prefer=tuple(ord(p) for p in self.tags.prefer))
        array_tag = by_tag.get("A")
        named = (
            NamedType(
                "table",
                Map(key=Prim("shortstr"), value=Ref("field-value"), size_prefix="uint32"),
                doc=_join(
                    doc_of("table"),
                    "A uint32 byte count, then shortstr names, each followed by a field value.",
                ),
                span=table_span,
            ),
            NamedType(
                "field-array",
                Array(item=Ref("field-value"), count_prefix=None, size_prefix="uint32"),
                doc="Field-table array ('A'): a uint32 byte count, then field values.",
                span=array_tag.span if array_tag is not None else self.tags.span,
            ),
            NamedType(
                "field-value",
                field_value,
                doc="A field-table value: a type octet (RabbitMQ's tags, field-types.toml), "
                "then the value.",
                span=self.tags.span,
            ),
        )
        return tuple(types), named

    def _type(self, base: str) -> TypeRef:
        if base in self.declared and base not in BASE_TYPES:
            return self.declared[base].type
        if base in INTS:
            return Prim(INTS[base])
        if base == "table":
            return Ref("table")
        return Prim(base)

    # ---- frame and constants

    def _frame(self) -> FrameLayout:
        method, header, _body, _heartbeat, end = (self._constant(c) for c in FRAME_CONSTANTS)
        root = self.root.span
        method_span, header_span, end_span = (
            self.constants[c][1].span for c in ("frame-method", "frame-header", "frame-end")
        )
        parts = (
            ("major", "minor", "revision") if "revision" in self.root.attrs else ("major", "minor")
        )
        version = tuple(_integer(self.root, a) for a in parts)
        for part, value in zip(parts, version, strict=True):
            if not 0 <= value <= 255:
                raise SpecError(self.root.attr_spans[part], f"{part} {value} is not an octet")
        known = CLASS_AND_METHOD.get(version)
        protocol_header = known.header if known is not None else fallback_header(version)
        numbered = "-".join(map(str, version))
        if known is None:
            self.log.add(
                self.root.span,
                "version-unknown",
                f"<amqp> declares version {numbered}, no AMQP version whose protocol header "
                f"specgen knows (it knows {', '.join(sorted({k.name for k in CLASS_AND_METHOD.values()}))})",
                f"the header by the shape of its neighbours: {protocol_header!r}",
            )
        if protocol_header == b"AMQP\x00" + bytes(version):
            header_doc = (
                "Protocol header: 'AMQP', 0, then the major, minor and revision of the XML's "
                "<amqp> element."
            )
        elif protocol_header == b"AMQP\x01\x01" + bytes(version):
            header_doc = (
                "Protocol header: 'AMQP', 1 (the protocol class), 1 (the protocol instance), "
                "then the major and minor version of the XML's <amqp> element."
            )
            self.log.add(
                self.root.span,
                "revision-absent",
                f"<amqp> has no revision attribute: version {version[0]}-{version[1]}, as AMQP "
                "0-8 numbers itself",
                f"the protocol header of the versions before 0-9-1: 'AMQP' 1 1 {version[0]} "
                f"{version[1]} ({protocol_header!r})",
            )
        else:
            assert known is not None  # the fallback has one of the shapes above
            header_doc = f"Protocol header of AMQP {known.name}: {known.rule}."
            self.log.add(
                self.root.span,
                "version-spelling",
                f"<amqp> numbers its version {numbered}: AMQP {known.name} as {known.rule}",
                f"the {known.name} protocol header ({protocol_header!r})",
            )
        return FrameLayout(
            header=(
                Field("Type", Prim("uint8"), doc="Frame type (the frame-* constants).", span=root),
                Field(
                    "Channel",
                    Prim("uint16"),
                    doc="Channel number; 0 for the connection.",
                    span=root,
                    role="channel",
                ),
                Field("Size", Prim("uint32"), doc="Body size in bytes.", span=root),
            ),
            length="Size",
            length_counts="body",
            dispatch=("Type",),
            trailer=(
                Field(
                    "FrameEnd",
                    Prim("uint8"),
                    doc="The frame-end octet.",
                    span=end_span,
                    default=end,
                ),
            ),
            body_keys=(
                BodyKey(
                    (method,),
                    (
                        Field("ClassId", Prim("uint16"), span=method_span),
                        Field("MethodId", Prim("uint16"), span=method_span),
                    ),
                ),
                BodyKey((header,), (Field("ClassId", Prim("uint16"), span=header_span),)),
            ),
            preambles=(Preamble("client", protocol_header, doc=header_doc),),
            span=root,
        )

    def _reply_codes(self) -> Enum:
        values: list[EnumValue] = []
        first: SourceSpan | None = None
        for name, (value, el) in self.constants.items():
            if name == "reply-success" or (el.attr("class") or "").strip() in ERROR_CLASSES:
                values.append(EnumValue(upper_snake(name), value, _join(docs_of(el))))
                first = first or el.span
        domain = self.domains.get("reply-code")
        label, docs = self._domain_doc("reply-code")
        return Enum(
            "ReplyCode",
            tuple(values),
            doc=_join(label, docs) or "Reply codes: reply-success and the soft and hard errors.",
            span=domain.span if domain is not None else first,
        )

    # ---- classes and methods

    def _classes(self) -> list[tuple[Element, list[_Method]]]:
        out: list[tuple[Element, list[_Method]]] = []
        class_indexes: dict[int, Element] = {}
        for cls in self.root.findall("class"):
            self._check_attributes(cls)
            class_name = _name(cls)
            class_index = _integer(cls, "index")
            if class_index in class_indexes:
                other = class_indexes[class_index]
                raise SpecError(
                    cls.attr_spans.get("index", cls.span),
                    f"class {class_name} has index {class_index}, as {_name(other)} does "
                    f"({other.span})",
                )
            class_indexes[class_index] = cls
            elements = cls.findall("method")
            names = [_name(m) for m in elements]
            methods: list[_Method] = []
            seen: dict[int, str] = {}
            for el, name in zip(elements, names, strict=True):
                self._check_attributes(el)
                if names.count(name) > 1:
                    raise SpecError(el.span, f"{class_name}.{name} is defined twice")
                index = _integer(el, "index")
                if index in seen:
                    raise SpecError(
                        el.attr_spans.get("index", el.span),
                        f"{class_name}.{name} has index {index}, as {class_name}.{seen[index]}",
                    )
                seen[index] = name
                replies = []
                for resp in el.findall("response"):
                    target = _name(resp)
                    if target in names:
                        replies.append(target)
                    else:
                        self.log.add(
                            resp.span,
                            "response-unknown",
                            f"{class_name}.{name} names response {target!r}, which class "
                            f"{class_name} does not define",
                            "ignored",
                        )
                methods.append(
                    _Method(
                        cls,
                        el,
                        class_name,
                        name,
                        class_index,
                        index,
                        self._sender(el, f"{class_name}.{name}"),
                        replies,
                    )
                )
            out.append((cls, methods))
        return out

    def _check_attributes(self, el: Element) -> None:
        known = KNOWN_ATTRIBUTES[el.tag]
        for attr in el.attrs:
            if attr not in known:
                self.log.add(
                    el.attr_spans.get(attr, el.span),
                    "unknown-attribute",
                    f"<{el.tag} name={el.attr('name')!r}> has {attr}={el.attrs[attr]!r}, an "
                    "attribute the AMQP XML does not define",
                    "ignored: every field of a method is on the wire"
                    if el.tag == "field"
                    else "ignored",
                )

    def _sender(self, el: Element, where: str) -> Direction:
        """Who sends a method: the chassis say who implements (receives) it."""
        receivers = set()
        for chassis in el.findall("chassis"):
            who = (chassis.attr("name") or "").strip()
            if who not in ("client", "server"):
                raise SpecError(
                    chassis.span, f"{where}: chassis {who!r} is neither client nor server"
                )
            receivers.add(who)
            self.chassis.setdefault(where, chassis.span)
        if receivers == {"server"}:
            return "client"
        if receivers == {"client"}:
            return "server"
        if not receivers:
            self.log.add(
                el.span,
                "chassis-missing",
                f"{where} has no <chassis>: the XML does not say who sends it",
                "either peer (both)",
            )
        return "both"

    def _command(self, m: _Method, methods: list[_Method]) -> Command:
        el = m.element
        name = f"{camel(m.class_name)}.{camel(m.name)}"
        where = f"{m.class_name}.{m.name}"
        label = (el.attr("label") or "").strip()
        if not label:
            text = " ".join(c for c in el.children if isinstance(c, str)).split()
            if text:
                label = " ".join(text)
                self.log.add(
                    el.span,
                    "label-as-text",
                    f"{where} has no label attribute but text inside the element: {label!r}",
                    "the text is the label",
                )
        doc_parts = [label, *docs_of(el)]
        if el.attr("deprecated") == "1":
            doc_parts.append("Deprecated.")
        doc = _join(doc_parts)
        named_as_response = any(m.name in other.replies for other in methods)
        kind: MessageKind = (
            "request" if m.replies else "response" if named_as_response else "oneway"
        )
        message = Message(
            name=name.replace(".", ""),
            kind=kind,
            ident=(self._constant("frame-method"), m.class_index, m.index),
            versions=Versions(1, 1),
            fields=self._fields(el, m.class_name, where),
            doc=doc,
            span=el.span,
            replies=tuple(f"{camel(m.class_name)}{camel(r)}" for r in m.replies),
            synchronous=el.attr("synchronous") == "1",
            content=el.attr("content") == "1",
            sender=m.sender,
        )
        owner = f"message:{message.name}"
        self.rules.extend(bind(self.pending, owner, message.fields))
        self.pending = []
        self.rules.extend(_prose_rules(el, owner))
        if m.sender != "both":
            self.rules.append(
                SpecRule(
                    "sender",
                    owner,
                    None,
                    self.chassis.get(where, el.span),
                    value=m.sender,
                    prose=f"sent by the {m.sender} (the chassis say the other implements it)",
                )
            )
        return Command(
            name=name,
            ident=(m.class_index, m.index),
            sender=m.sender,
            messages=(message,),
            doc=doc,
            span=el.span,
        )

    # ---- fields

    def _fields(self, el: Element, class_name: str, where: str) -> tuple[Field, ...]:
        pairs = []
        for f_el in el.findall("field"):
            base, f = self._field(f_el, class_name, where)
            pairs.append((f, base == "bit"))
        return pack_bits(pairs)

    def _field(self, el: Element, class_name: str, where: str) -> tuple[str, Field]:
        """The base type and the IR field of a `<field>` (a bit field as a BitField member)."""
        self._check_attributes(el)
        xml_name = _name(el)
        here = f"{where}.{xml_name}"
        domain = (el.attr("domain") or "").strip()
        type_attr = (el.attr("type") or "").strip()
        if domain and type_attr:
            a, b = (
                self._resolve(domain, el, "domain").base,
                self._resolve(type_attr, el, "type").base,
            )
            same = "the same type" if a == b else f"{a} and {b}"
            self.log.add(
                el.span,
                "field-type-and-domain",
                f"{here} has both domain={domain!r} and type={type_attr!r} ({same})",
                f"the domain's type ({a})",
            )
        elif not domain and not type_attr:
            raise SpecError(el.span, f"{here} has neither a domain nor a type")
        resolved = self._resolve(domain or type_attr, el, "domain" if domain else "type")
        base = resolved.base
        if domain and domain != xml_name and domain.replace("-", "") == xml_name.replace("-", ""):
            self.log.add(
                el.attr_spans.get("name", el.span),
                "field-name-domain",
                f"{here} is named {xml_name!r}, its domain {domain!r}: the same word spelt "
                f"differently ({camel(xml_name)}, not {camel(domain)})",
                f"the field's own name ({camel(xml_name)})",
            )

        label = (el.attr("label") or "").strip()
        docs = docs_of(el)
        for d in resolved.chain:
            if not label:
                label = (d.attr("label") or "").strip()
            if not docs:
                docs = docs_of(d)
        checks, max_length = self._asserts(el, resolved, class_name, here)
        self.pending.extend(_prose_rules(el, "", field=camel(xml_name)))
        reserved = el.attr("reserved") == "1"
        default: int | str | bool | None = None
        if reserved:
            if base in ("timestamp", "table"):
                raise SpecError(el.span, f"{here}: no reserved value for a {base}")
            text = base in ("shortstr", "longstr")
            default = "" if text else False if base == "bit" else 0
            checks.insert(0, "Reserved: must be empty." if text else "Reserved: must be zero.")
        doc = _join(label, docs, " ".join(checks))
        via_reply_code = any(_name(d) == "reply-code" for d in resolved.chain)
        name = camel(xml_name)
        span = el.span
        if base == "bit":
            return base, Field(name, BitField(1, boolean=True), doc=doc, span=span, default=default)
        return base, Field(
            name,
            self._type(base),
            doc=doc,
            span=span,
            max_length=max_length,
            enum="ReplyCode" if via_reply_code else None,
            role="response_code" if via_reply_code else "",
            default=default,
        )

    def _resolve(self, name: str, el: Element, attr: str) -> _Resolved:
        """A field's domain through its chain; a `type` naming an AMQP type is that type, not
        the like-named domain (so a reserved `short` is no "16-bit integer" in the docs)."""
        if attr == "type" and name in BASE_TYPES:
            return _Resolved(name, [])
        if name in self.resolved:
            return self.resolved[name]
        if name in BASE_TYPES:
            return _Resolved(name, [])
        return self._undeclared(name, el.attr_spans.get(attr, el.span), [])

    def _undeclared(self, name: str, span: SourceSpan, chain: list[Element]) -> _Resolved:
        """A name no domain declares and no AMQP type has: what an overlay declares it to be,
        else a refusal saying how to declare it."""
        if name in self.declared:
            self.used.add(name)
            return _Resolved(name, chain)
        raise SpecError(
            span,
            f"domain {name!r} is neither a domain nor an AMQP type -> declare its wire type in "
            f'an overlay entry: {{"op": "declare", "target": "domain:{name}", "type": ..., '
            '"reason": ..., "evidence": [...]} (--overlay FILE)',
        )

    def _asserts(
        self, el: Element, resolved: _Resolved, class_name: str, here: str
    ) -> tuple[list[str], int | None]:
        """The asserts of a field and its domains: max_length from `length` (the nearest wins),
        the others as sentences."""
        sentences: list[str] = []
        max_length: int | None = None
        base = resolved.base
        stated: set[str] = set()  # the kinds a nearer owner states: a domain's then do not count
        for owner in (el, *resolved.chain):
            kinds: set[str] = set()
            via = "" if owner is el else f"domain {_name(owner)}"
            for a in owner.findall("assert"):
                check = (a.attr("check") or "").strip()
                rule = _assert_rule(a, check, camel(_name(el)), class_name, via)
                if rule.kind not in stated or rule.kind == "prose":
                    self.pending.append(rule)
                    kinds.add(rule.kind)
                if check == "length":
                    if max_length is None:
                        max_length = _integer(a, "value")
                    continue
                if check == "notnull":
                    text = (
                        "Must not be empty."
                        if base in ("shortstr", "longstr", "table")
                        else "Must not be zero."
                    )
                elif check == "regexp":
                    text = f"Must match the regular expression {a.attr('value')}."
                elif check in ("le", "lt", "ge", "gt", "eq", "ne"):
                    words = {
                        "le": "less than or equal to",
                        "lt": "less than",
                        "ge": "greater than or equal to",
                        "gt": "greater than",
                        "eq": "equal to",
                        "ne": "different from",
                    }[check]
                    if a.attr("value") is not None:
                        other = a.attr("value") or ""
                    else:
                        method = a.attr("method")
                        fld = a.attr("field") or "?"
                        other = (
                            f"{camel(class_name)}.{camel(method)}'s {camel(fld)}"
                            if method
                            else camel(fld)
                        )
                    text = f"Must be {words} {other}."
                else:
                    attrs = " ".join(f"{k}={v!r}" for k, v in a.attrs.items())
                    text = f"Assert: {attrs}."
                    self.log.add(
                        a.span,
                        "assert-unknown",
                        f"{here}: assert check {check!r} is none this front-end knows",
                        "kept in the field's doc as written",
                    )
                if text not in sentences:
                    sentences.append(text)
            stated |= kinds
        return sentences, max_length

    # ---- content header, body, heartbeat

    def _properties(self, cls: Element) -> Command | None:
        props = cls.findall("field")
        if not props:
            return None
        class_name = _name(cls)
        class_index = _integer(cls, "index")
        where = f"{class_name} properties"
        fields: list[Field] = [
            Field("Weight", Prim("uint16"), doc="unused, must be zero", span=cls.span, default=0),
            Field(
                "BodySize",
                Prim("uint64"),
                doc="Total size of the content bodies that follow.",
                span=cls.span,
            ),
            Field(
                "PropertyFlags",
                Presence(width=2, continuation=0),
                doc="Which properties follow: one bit each, from the most significant bit down; "
                "bit 0 set means another flag word follows.",
                span=cls.span,
            ),
        ]
        for i, el in enumerate(props):
            base, f = self._field(el, class_name, where)
            if base == "bit":
                raise SpecError(el.span, f"{where}: bit property {_name(el)} has no layout here")
            fields.append(
                Field(
                    f.name,
                    f.type,
                    doc=f.doc,
                    span=f.span,
                    max_length=f.max_length,
                    enum=f.enum,
                    role=f.role,
                    present=("PropertyFlags", i),
                )
            )
        name = f"{camel(class_name)}.Properties"
        label = (cls.attr("label") or "").strip()
        doc = _join(
            f"Content header of class {class_name}" + (f" ({label})" if label else "") + ": "
            "the size of the content and the properties set, each flagged in PropertyFlags."
        )
        message = Message(
            name=name.replace(".", ""),
            kind="oneway",
            ident=(self._constant("frame-header"), class_index),
            versions=Versions(1, 1),
            fields=tuple(fields),
            doc=doc,
            span=cls.span,
            sender="both",
        )
        self.rules.extend(bind(self.pending, f"message:{message.name}", message.fields))
        self.pending = []
        return Command(name, (class_index,), "both", (message,), doc=doc, span=cls.span)

    def _content_body_and_heartbeat(self) -> list[Command]:
        body = self._constant("frame-body")
        heartbeat = self._constant("frame-heartbeat")
        body_el = self.constants["frame-body"][1]
        heartbeat_el = self.constants["frame-heartbeat"][1]
        body_doc = "A piece of content: the bytes of the frame body, in order."
        beat_doc = "A heartbeat frame, on channel 0, with an empty body."
        return [
            Command(
                "Content.Body",
                (body,),
                "both",
                (
                    Message(
                        "ContentBody",
                        "oneway",
                        (body,),
                        Versions(1, 1),
                        (
                            Field(
                                "Payload",
                                Blob(None),
                                doc="The rest of the frame body.",
                                span=body_el.span,
                            ),
                        ),
                        doc=body_doc,
                        span=body_el.span,
                        sender="both",
                    ),
                ),
                doc=body_doc,
                span=body_el.span,
            ),
            Command(
                "Heartbeat",
                (heartbeat,),
                "both",
                (
                    Message(
                        "Heartbeat",
                        "oneway",
                        (heartbeat,),
                        Versions(1, 1),
                        (),
                        doc=beat_doc,
                        span=heartbeat_el.span,
                        sender="both",
                    ),
                ),
                doc=beat_doc,
                span=heartbeat_el.span,
            ),
        ]

    # ---- what the class grammar and the methods say about each other

    def _check_class(self, cls: Element, methods: list[_Method]) -> None:
        class_name = _name(cls)
        by_name = {m.name: m for m in methods}
        for m in methods:
            for r in m.replies:
                self._check_reply(m, by_name[r])
        grammars = [d for d in cls.findall("doc") if d.attr("type") == "grammar"]
        if not grammars:
            return
        senders: dict[str, set[str]] = {}
        pairs: list[tuple[str, str, Element]] = []
        for g in grammars:
            tokens = re.findall(r"\b([CS]):([A-Z][A-Z0-9-]*)", g.text)
            for side, word in tokens:
                senders.setdefault(word.lower(), set()).add("client" if side == "C" else "server")
            for (s1, w1), (s2, w2) in zip(tokens, tokens[1:], strict=False):
                if s1 != s2 and w2 == f"{w1}-OK":
                    pairs.append((w1.lower(), w2.lower(), g))
        span = grammars[0].span
        for word in senders:
            if word not in by_name:
                self.log.add(
                    span,
                    "grammar-unknown",
                    f"class {class_name}'s grammar names {word.upper()}, which the class "
                    "does not define",
                    "ignored",
                )
        for m in methods:
            where = f"{class_name}.{m.name}"
            said = senders.get(m.name)
            if said is None:
                self.log.add(
                    m.element.span,
                    "grammar-missing",
                    f"{where} is not in class {class_name}'s grammar ({span}): only its "
                    f"chassis say who sends it",
                    f"the chassis ({m.sender})",
                )
                continue
            grammar_sender = "both" if len(said) == 2 else next(iter(said))
            if grammar_sender != m.sender:
                self.log.add(
                    m.element.span,
                    "grammar-sender",
                    f"{where}: its chassis make it sent by {m.sender}, class {class_name}'s "
                    f"grammar ({span}) by {grammar_sender}",
                    f"the chassis ({m.sender})",
                )
        for request, reply, g in pairs:
            if request in by_name and reply in by_name and reply not in by_name[request].replies:
                self.log.add(
                    by_name[request].element.span,
                    "grammar-reply",
                    f"{class_name}.{request} names no <response> {reply}, but class "
                    f"{class_name}'s grammar ({g.span}) answers {request.upper()} with "
                    f"{reply.upper()}",
                    f"the <response> elements: {camel(class_name)}.{camel(request)} expects no "
                    f"reply, {camel(class_name)}.{camel(reply)} is not its response",
                )

    def _check_reply(self, request: _Method, reply: _Method) -> None:
        where = f"{request.class_name}.{request.name}"
        opposite = {"client": "server", "server": "client", "both": "both"}[request.sender]
        if reply.sender not in (opposite, "both") or (
            request.sender == "both" and reply.sender != "both"
        ):
            self.log.add(
                reply.element.span,
                "reply-sender",
                f"{where} is sent by {request.sender}, its response "
                f"{reply.class_name}.{reply.name} by {reply.sender}",
                "each as its chassis say",
            )
        if reply.name == f"{request.name}-ok" and reply.index != request.index + 1:
            self.log.add(
                reply.element.attr_spans.get("index", reply.element.span),
                "reply-index",
                f"{reply.class_name}.{reply.name} has index {reply.index}, not "
                f"{request.index + 1} ({request.name}'s {request.index} plus one) as the "
                "XML numbers its other -ok replies",
                f"the XML's index ({reply.index})",
            )


# --------------------------------------------------------------------------------------------
# Dialogue grammars


_COMPARED = {"le": "<=", "lt": "<", "ge": ">=", "gt": ">", "eq": "==", "ne": "!="}


def _assert_rule(a: Element, check: str, field: str, class_name: str, via: str) -> SpecRule:
    """One `<assert>` of field `field` (a domain's when `via` names it) as a rule, its owner
    left for `bind`. A check this reader cannot apply is a prose-only rule, never dropped."""
    written = "<assert " + " ".join(f'{k}="{v}"' for k, v in a.attrs.items()) + "/>"
    listed = [(v.attr("name") or "").strip() for v in a.elements() if v.tag == "value"]
    if listed:  # 0-8's check="enum" lists names whose numbers it never gives
        written += f" (values {', '.join(listed)})"
    value = (a.attr("value") or "").strip()

    def prose(why: str, kind: RuleKind = "prose") -> SpecRule:
        return SpecRule(
            kind, "", field, a.span, checkable=False, prose=f"{written}: {why}", via=via
        )

    match check:
        case "notnull" | "null":
            return SpecRule(check, "", field, a.span, prose=written, via=via)
        case "length" | "le" | "lt" | "ge" | "gt" | "eq" | "ne" if a.attr("value") is not None:
            number = spelled_number(value)
            if not isinstance(number, int):
                return prose(f"{value!r} is no number", check)
            return SpecRule(check, "", field, a.span, value=number, prose=written, via=via)
        case "le" | "lt" | "ge" | "gt" | "eq" | "ne":
            other = (a.attr("field") or "").strip()
            if not other:
                return prose("compares with neither a value nor a field", check)
            method = (a.attr("method") or "").strip()
            # a method of the field's own class (the XML names no class), or the same method
            target = f"message:{camel(class_name)}{camel(method)}." if method else "."
            return SpecRule(
                check, "", field, a.span, other=target + camel(other), prose=written, via=via
            )
        case "regexp":
            try:
                re.compile(value)
            except re.error as e:
                return prose(f"the pattern does not compile ({e})", "regexp")
            return SpecRule("regexp", "", field, a.span, value=value, prose=written, via=via)
        case _:
            return prose(f"a check ({check!r}) no program here can apply")


def _prose_rules(
    el: Element, owner: str, via: str = "", field: str | None = None
) -> list[SpecRule]:
    """The `<rule>`s directly inside `el`: normative prose, counted as such."""
    out = []
    for r in el.findall("rule"):
        words = " ".join(docs_of(r)) or " ".join(
            " ".join(c.split()) for c in r.children if isinstance(c, str)
        )
        name = (r.attr("name") or "").strip()
        text = f"{name}: {words}" if name and words else name or words or "(no words)"
        out.append(SpecRule("prose", owner, field, r.span, checkable=False, prose=text, via=via))
    return out


def dialogues(root: Element, text: str, log: FindingLog) -> tuple[Dialogue, ...]:
    """Each class's `<doc type="grammar">`, read as ABNF at its own line and column; its first
    rule is the class's conversation. References no rule resolves (see specgen.dialogue) are
    findings (`dialogue-undefined`)."""
    lines = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    starts = [0]
    for row in lines.split("\n")[:-1]:
        starts.append(starts[-1] + len(row) + 1)
    out: list[Dialogue] = []
    for cls in root.findall("class"):
        for doc in cls.findall("doc"):
            if doc.attr("type") != "grammar":
                continue
            # the text starts after the start tag's '>'; the grammars use no references, so
            # the element's text is the document's (checked, else the tag's position is used)
            at = lines.index(">", starts[doc.span.line - 1] + doc.span.column - 1) + 1
            body = doc.text
            if lines[at : at + len(body)] != body:
                raise SpecError(doc.span, "a grammar with character references is not read")
            line = lines.count("\n", 0, at) + 1
            column = at - starts[line - 1] + 1
            rules = abnf.parse_rules(body, doc.span.file, line, column)
            if not rules:
                raise SpecError(doc.span, f"class {_name(cls)}'s grammar holds no rule")
            out.append(
                Dialogue(
                    _name(cls), rules, rules[0].name, rules[0].span, textwrap.dedent(body).strip()
                )
            )
    found = tuple(out)
    for span, owner, name in dialogue.undefined(found):
        log.add(
            span,
            "dialogue-undefined",
            f"class {owner}'s grammar names {name}, which no rule, class or convention defines",
            "the conversation checker refuses the grammar",
        )
    return found
