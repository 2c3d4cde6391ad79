"""AMQP 1.0 XML -> IR: a self-describing type system, read from the spec as published.

Two shapes of document are read:

  * the XML set: `index.xml`, whose `<xref type="amqp" name="...">` elements name its parts
    (types, transport, messaging, transactions, security), each `<amqp>` of `<section>`s holding
    `<type>` and `<definition>` elements; a single part file is read the same way;
  * prose with the XML embedded (OASIS Part 2 as text): every `<type ...>...</type>` and
    `<definition .../>` found in the text is parsed where it stands, so spans name the text's
    own lines. Its doc is the prose line before it.

Part 1 (`types.xml`) holds the primitive types and their encodings: format code, category and
width. They are facts of the spec, never a table of ours. A document without them (Part 2 alone)
takes them from the `types.xml` beside it, and the IR says so: the encodings' spans name that
file, and the `encodings-from` finding records it. A part read alone (the stripped copies
qpid-proton and rabbitmq-codegen generate from are the parts without an index) takes the types
it names but does not define from the parts beside it (`types-from`).

What the XML leaves undefined or contradictory is reported, never silently repaired:
`requires-unprovided` (a field requires an archetype no type provides), `default-not-a-choice`
(a default that is not one of its restricted type's choices), `descriptor-reused` (one
descriptor code or name on two types; the first keeps it). A field of a type nobody defines
(`uint33`) is refused where the field names it: read as any type, its values would go on the
wire with whatever constructor they bring, a guess that changes bytes.

Numbers are read as the copies peers publish spell them (`0x...`, decimal, C suffixes:
uAMQP's `default="4294967295u"`): definitions, format codes, widths and descriptor codes,
and the defaults and choices of integer types, are values in the IR (a choice's value in one
spelling, `TypeChoice.value`); booleans are true or false. A spelling that is no number where
one is needed is a located SpecError.

The frame layout is Part 2 section 2.3: SIZE (uint32, the whole frame), DOFF (uint8, the
header's length in 4-byte words), TYPE (uint8: 0 AMQP, 1 SASL) and two type-specific bytes
(the channel for AMQP frames). The text gives it as a picture only; the builder checks the
picture's words are there. Protocol headers ("AMQP", protocol id, major, minor, revision) come
from the pictures that spell them (`"AMQP" | %d0 | major | ...`) and the version definitions.

The XML is read by the same safe reader as AMQP 0-9-1's: no DTD loaded, no entity expanded.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from specgen.frontends import xml_tree
from specgen.frontends.adoc import SpecError
from specgen.frontends.adoc_tree import SpecSyntaxError
from specgen.frontends.amqp_versions import AMQP10_HEADERS
from specgen.frontends.data import NO_DATA
from specgen.frontends.spec_text import read_spec_text
from specgen.frontends.xml_tree import Element
from specgen.ir import (
    ALL_VERSIONS,
    Command,
    CompositeField,
    Constant,
    Descriptor,
    Encoding,
    Field,
    FindingLog,
    FrameLayout,
    Message,
    Preamble,
    Prim,
    Protocol,
    SourceSpan,
    SpecRule,
    TypeChoice,
    TypeDef,
    field_name,
    spelled_number,
)
from specgen.registry import relative

PART1 = "types.xml"
TYPES_DATA = "types"  # protocol.toml's [data] name for Part 1, when none is beside
_EMBEDDED = re.compile(r"<type\b[^>]*?/>|<type\b.*?</type>|<definition\b[^>]*?/>", re.S)
_PICTURE = re.compile(r'"AMQP"\s*\|\s*%d(\d+)\s*\|')
_WORD = re.compile(r"[A-Za-z]")


def build(
    path: Path, rel: str, protocol: str, version: str, data: Mapping[str, Path] = NO_DATA
) -> tuple[Protocol, FindingLog]:
    log = FindingLog()
    root = path.parent
    prose_constants: list[Constant] = []
    parts: list[tuple[str, list[tuple[Element, str, str]], str]] = []  # (file, items, text)
    if path.suffix == ".xml":
        doc, doc_text = _parse_file(path, rel)
        names = [
            x.attr("name") or ""
            for x in _descendants(doc)
            if x.tag == "xref" and x.attr("type") == "amqp"
        ]
        indexed = doc.attr("name") == "index" and bool(names)
        if indexed:
            for name in names:
                part = root / f"{name}.xml"
                if not part.is_file():
                    raise SpecError(doc.span, f"the index names part {name!r}: no {part.name}")
                part_rel = _sibling(rel, part.name)
                part_doc, part_text = _parse_file(part, part_rel)
                parts.append((part_rel, _items(part_doc), part_text))
        else:
            parts.append((rel, _items(doc), doc_text))
    else:
        indexed = False
        text = read_spec_text(path, rel)
        parts.append((rel, _embedded(text, rel), text))
        prose_constants = _prose_constants(text, rel)
    if not any(
        t.tag == "type" and t.attr("class") == "primitive" for _, its, _ in parts for t, _, _ in its
    ):
        part1 = root / PART1
        part_rel = _sibling(rel, PART1)
        if not part1.is_file() and data.get(TYPES_DATA) is not None:
            # the protocol's own Part 1 (protocol.toml's [data]; --data types=FILE): a
            # one-file definitions document (Azure uAMQP's) names 1.0's primitives without
            # defining them
            part1 = data[TYPES_DATA]
            part_rel = relative(part1)
        if not part1.is_file():
            raise SpecError(
                SourceSpan(rel, 1),
                f"no primitive type is defined here and there is no {PART1} (Part 1) beside it to"
                f" take the encodings from -> put one beside it, or give --data {TYPES_DATA}=FILE",
            )
        part1_doc, part1_text = _parse_file(part1, part_rel)
        items = [i for i in _items(part1_doc) if i[0].attr("class") == "primitive"]
        parts.insert(0, (part_rel, items, part1_text))
        log.add(
            SourceSpan(rel, 1),
            "encodings-from",
            f"the document defines no primitive encodings (they are Part 1's); read from {part_rel}",
        )
    if not indexed:
        _types_beside(parts, path, rel, log)
    typedefs: list[TypeDef] = []
    constants: list[Constant] = []
    elements: dict[SourceSpan | None, Element] = {}  # each type's element, by the type's span
    for file, items, _ in parts:
        for element, section, prose in items:
            if element.tag == "definition":
                constants.append(_constant(element, prose, section))
            else:
                typedefs.append(_typedef(element, section, file, prose))
                elements[typedefs[-1].span] = element
    defined = {c.name for c in constants}
    constants += [c for c in prose_constants if c.name not in defined]
    typedefs = _check(typedefs, log, elements)
    texts = "\n".join(text for _, _, text in parts)
    frame = _frame(texts, {c.name: c.value for c in constants}, SourceSpan(rel, 1), log)
    commands = _commands(typedefs)
    return (
        Protocol(
            name=protocol,
            version=version,
            source=rel,
            types=(),
            frame=frame,
            enums=(),
            constants=tuple(constants),
            commands=commands,
            typedefs=tuple(typedefs),
            rules=_rules(typedefs, commands),
        ),
        log,
    )


PARTS = ("types", "transport", "messaging", "security", "transactions")
"""The parts of the published set, in the order its index names them."""

Item = tuple[Element, str, str]  # a type or definition element, its section's name, its doc


def _types_beside(
    parts: list[tuple[str, list[Item], str]], path: Path, rel: str, log: FindingLog
) -> None:
    """A part read alone names types the other parts define (messaging's `node-properties`
    restricts transport's `fields`): the copies peers generate from (qpid-proton's,
    rabbitmq-codegen's) are the parts without an index, read together. Such types, and the
    types they name in turn, are read from the parts beside it, and the IR says so (the
    `types-from` finding); appended to `parts`, one part per file."""
    defined = {e.attr("name") for _, items, _ in parts for e, _, _ in items if e.tag == "type"}
    needed = {n for _, items, _ in parts for e, _, _ in items for n in _names_used(e)} - defined
    if not needed:
        return
    beside: dict[str, tuple[str, Item]] = {}  # type name -> (its part, its item): the first
    for name in PARTS:
        part = path.parent / f"{name}.xml"
        if part.is_file() and part.resolve() != path.resolve():
            part_rel = _sibling(rel, part.name)
            for item in _items(_parse_file(part, part_rel)[0]):
                if item[0].tag == "type":
                    beside.setdefault(item[0].attr("name") or "", (part_rel, item))
    taken: dict[str, list[Item]] = {}
    queue = sorted(needed)
    while queue:
        name = queue.pop(0)
        if name in defined or name not in beside:
            continue  # a type nobody defines is refused where a field names it (_check_fields)
        defined.add(name)
        part_rel, item = beside[name]
        taken.setdefault(part_rel, []).append(item)
        queue += sorted(_names_used(item[0]) - defined)
    files = [f"{_sibling(rel, f'{n}.xml')}" for n in PARTS]
    for part_rel in sorted(taken, key=files.index):
        items = sorted(taken[part_rel], key=lambda i: (i[0].span.line, i[0].span.column))
        parts.append((part_rel, items, ""))
    if taken:
        names = sorted(n for items in taken.values() for e, _, _ in items if (n := e.attr("name")))
        log.add(
            SourceSpan(rel, 1),
            "types-from",
            f"the document names types it does not define ({', '.join(names)});"
            f" read from {', '.join(sorted(taken, key=files.index))}, the parts beside it",
        )


def _names_used(e: Element) -> set[str]:
    """The type names a `<type>` element uses: its fields' types and its source."""
    if e.tag != "type":
        return set()
    used = {f.attr("type") or "" for f in e.findall("field")} | {e.attr("source") or ""}
    return used - {"", "*"}


def _sibling(rel: str, name: str) -> str:
    return f"{rel.rsplit('/', 1)[0]}/{name}" if "/" in rel else name


def _parse_file(path: Path, rel: str) -> tuple[Element, str]:
    """The file's root element and its text (`rel` names it in spans and errors)."""
    text = read_spec_text(path, rel)
    return xml_tree.parse(text, rel), text


def _descendants(e: Element) -> list[Element]:
    out = []
    for c in e.elements():
        out.append(c)
        out.extend(_descendants(c))
    return out


def _items(doc: Element) -> list[Item]:
    """(type or definition element, its section's name, its doc) in document order. Types
    stand in `<section>`s whatever their names (uAMQP's one definitions file keeps all in
    `<section name="1">`); one outside any section has the section name ""."""
    out: list[Item] = []
    for child in doc.elements():
        name, members = "", [child]
        if child.tag == "section":
            name, members = child.attr("name") or "", child.elements()
        for e in members:
            if e.tag in ("type", "definition"):
                out.append((e, name, _doc_of(e)))
    return out


_BLOCKS = frozenset({"doc", "p", "ul", "ol", "dl", "picture"})
"""What a `<doc>` holds as paragraphs of their own (amqp.dtd: `doc (doc|p|ul|ol|dl|picture)*`);
text beside them, and inline elements such as `<xref>`, run together into paragraphs too."""


def _doc_of(e: Element) -> str:
    """The element's `<doc>` paragraphs, whitespace collapsed, or its label. Text a copy writes
    straight into `<doc>`, outside any `<p>`, is prose like the rest: a paragraph where it
    stands."""
    paras: list[str] = []

    def add(text: str) -> None:
        text = " ".join(text.split())
        if text:
            paras.append(text)

    for d in e.findall("doc"):
        run: list[Element | str] = []
        for c in d.children:
            if isinstance(c, Element) and c.tag in _BLOCKS:
                add(_prose_of(run))
                run = []
                add(_prose(c))
            else:
                run.append(c)
        add(_prose_of(run))
    return "\n\n".join(paras) or (e.attr("label") or "")


def _prose(e: Element) -> str:
    """An element's text as the rendered spec shows it (`_prose_of` its children)."""
    return _prose_of(e.children)


def _prose_of(children: Sequence[Element | str]) -> str:
    """Text and elements as the rendered spec shows them: an empty `<xref>` reads as the choice
    it names (`<xref name="sender-settle-mode" choice="settled"/>`: "settled"), else as the
    name of what it refers to."""
    out = []
    for c in children:
        if isinstance(c, str):
            out.append(c)
        elif c.tag == "xref" and not c.text.strip():
            out.append(c.attr("choice") or c.attr("name") or "")
        else:
            out.append(_prose(c))
    return "".join(out)


def _embedded(text: str, rel: str) -> list[tuple[Element, str, str]]:
    """Every `<type>`/`<definition>` in prose, parsed in place; its doc is the line before it."""
    out: list[tuple[Element, str, str]] = []
    section = ""
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    for m in _EMBEDDED.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        column = m.start() - line_starts[line - 1] + 1
        try:
            element = _shift(xml_tree.parse(m.group(0), rel), line - 1, column - 1)
        except SpecSyntaxError as e:
            raise _shifted_error(e, rel, line - 1, column - 1) from None
        before = [ln.strip() for ln in text[: line_starts[line - 1]].splitlines() if ln.strip()]
        doc = before[-1] if before and not before[-1].startswith("<") else ""
        heading = next((b for b in reversed(before) if re.match(r"\d+\.\d+ \w", b)), "")
        section = heading.split(" ", 1)[1].lower() if heading else section
        out.append((element, section, doc))
    return out


def _moved(s: SourceSpan, lines: int, columns: int) -> SourceSpan:
    return SourceSpan(s.file, s.line + lines, s.column + (columns if s.line == 1 else 0))


def _shifted_error(e: SpecSyntaxError, rel: str, lines: int, columns: int) -> SpecSyntaxError:
    """A snippet's syntax error at the document's line and column (and so are spans it names)."""

    def move(m: re.Match[str]) -> str:
        return str(_moved(SourceSpan(rel, int(m.group(1)), int(m.group(2))), lines, columns))

    message = str(e).split("\n", 1)[0].split(": ", 1)[1]
    message = re.sub(re.escape(rel) + r":(\d+):(\d+)", move, message)
    return SpecSyntaxError(_moved(e.span, lines, columns), message)


def _shift(e: Element, lines: int, columns: int) -> Element:
    """`e` with spans moved from its snippet to where the snippet stands in the document."""

    def move(s: SourceSpan) -> SourceSpan:
        return _moved(s, lines, columns)

    return replace(
        e,
        span=move(e.span),
        attr_spans={k: move(v) for k, v in e.attr_spans.items()},
        children=tuple(
            _shift(c, lines, columns) if isinstance(c, Element) else c for c in e.children
        ),
    )


def _prose_constants(text: str, rel: str) -> list[Constant]:
    """Constants prose names in passing, `512 (MIN-MAX-FRAME-SIZE)`: the first mention of each."""
    out: dict[str, Constant] = {}
    for m in re.finditer(r"\b(\d+) \(([A-Z][A-Z-]+)\)", text):
        if m.group(2) not in out:
            line = text.count("\n", 0, m.start()) + 1
            column = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
            out[m.group(2)] = Constant(
                m.group(2), int(m.group(1)), "", SourceSpan(rel, line, column), "prose"
            )
    return list(out.values())


_NOT_C = re.compile(r"[+-]?0[0-9bBoO]")
"""Spellings no copy uses and C reads otherwise, refused: a decimal with leading zeros (C's
octal) and Python's 0b and 0o."""


def _int(text: str, span: SourceSpan, what: str) -> int:
    """The integer `text` spells in any spelling the copies peers publish use (the IR's one
    reader: decimal or `0x` hex, with or without a C suffix, as uAMQP's
    `default="4294967295u"`); a located SpecError when it spells none."""
    value = spelled_number(text)
    if not isinstance(value, int) or _NOT_C.match(text.strip()):
        raise SpecError(
            span,
            f"{what} {text!r} is not a number -> write it in decimal (4294967295) or hex"
            " (0xffffffff), without leading zeros; a C suffix (u, L, UL) may follow",
        )
    return value


def _constant(e: Element, doc: str, section: str) -> Constant:
    name = e.attr("name") or ""
    value = e.attr("value") or ""
    return Constant(
        name,
        _int(value, e.attr_spans.get("value", e.span), f"definition {name}"),
        doc,
        e.span,
        section,
    )


def _typedef(e: Element, section: str, file: str, doc: str) -> TypeDef:
    name = e.attr("name")
    klass = e.attr("class")
    if not name or klass not in ("primitive", "composite", "restricted"):
        raise SpecError(
            e.span,
            f"a <type> needs a name and a class of primitive, composite or restricted, not {klass!r}",
        )
    encodings = tuple(_encoding(x, name) for x in e.findall("encoding"))
    descriptor = None
    if (d := e.find("descriptor")) is not None:
        descriptor = Descriptor(d.attr("name") or "", _descriptor_code(d))
    fields = tuple(_field(f) for f in e.findall("field"))
    choices = tuple(
        TypeChoice(c.attr("name") or "", c.attr("value") or "", _doc_of(c))
        for c in e.findall("choice")
    )
    provides = tuple(p.strip() for p in (e.attr("provides") or "").split(",") if p.strip())
    try:
        return TypeDef(
            name=name,
            klass=klass,  # type: ignore[arg-type]
            source=e.attr("source") or "",
            encodings=encodings,
            descriptor=descriptor,
            fields=fields,
            choices=choices,
            provides=provides,
            section=section,
            document=file,
            label=e.attr("label") or "",
            doc=doc,
            span=e.span,
        )
    except ValueError as err:
        raise SpecError(e.span, str(err).split(": ", 1)[-1]) from None


def _descriptor_code(d: Element) -> int:
    """A `<descriptor>`'s code, `domain:id` (`0x00000000:0x00000010`), as one 64-bit number."""
    code = d.attr("code") or ""
    span = d.attr_spans.get("code", d.span)
    parts = code.split(":")
    if len(parts) != 2:
        raise SpecError(
            span,
            f"descriptor code {code!r} is not domain:id -> two 32-bit numbers joined by a colon,"
            " as 0x00000000:0x00000010",
        )
    domain, ident = (_int(part, span, "descriptor code part") for part in parts)
    if not (0 <= domain <= 0xFFFFFFFF and 0 <= ident <= 0xFFFFFFFF):
        raise SpecError(
            span,
            f"descriptor code {code!r}: domain and id are 32-bit numbers -> each at most"
            " 0xffffffff",
        )
    return domain << 32 | ident


def _encoding(x: Element, owner: str) -> Encoding:
    code = _int(x.attr("code") or "", x.attr_spans.get("code", x.span), f"{owner} format code")
    width = _int(x.attr("width") or "", x.attr_spans.get("width", x.span), f"{owner} width")
    category = x.attr("category") or ""
    if category not in ("fixed", "variable", "compound", "array"):
        raise SpecError(
            x.attr_spans.get("category", x.span), f"{owner}: encoding category {category!r}"
        )
    try:
        return Encoding(code, category, width, x.attr("name") or "", x.attr("label") or "", x.span)  # type: ignore[arg-type]
    except ValueError as err:
        raise SpecError(x.span, str(err).split(": ", 1)[-1]) from None


def _field(f: Element) -> CompositeField:
    name = f.attr("name")
    type_ = f.attr("type")
    if not name or not type_:
        raise SpecError(f.span, "a <field> needs a name and a type")
    requires = tuple(r.strip() for r in (f.attr("requires") or "").split(",") if r.strip())
    return CompositeField(
        name=name,
        type=type_,
        mandatory=f.attr("mandatory") == "true",
        multiple=f.attr("multiple") == "true",
        default=f.attr("default"),
        requires=requires,
        label=f.attr("label") or "",
        doc=_doc_of(f),
        span=f.span,
    )


def _check(
    typedefs: list[TypeDef], log: FindingLog, elements: dict[SourceSpan | None, Element]
) -> list[TypeDef]:
    """Report what the XML leaves undefined or contradictory; keep what can still be read.
    Choice values and defaults become the values they spell (`_value`)."""
    out: list[TypeDef] = []
    names: dict[str, TypeDef] = {}
    codes: dict[int, TypeDef] = {}
    symbols: dict[str, TypeDef] = {}
    for t in typedefs:
        if t.name in names:
            log.add(
                t.span or SourceSpan("?", 1),
                "type-redefined",
                f"type {t.name} is defined twice (first at {names[t.name].span})",
                "the first definition is kept",
            )
            continue
        d = t.descriptor
        if d is not None:
            first = codes.get(d.code) or symbols.get(d.name)
            if first is not None:
                log.add(
                    t.span or SourceSpan("?", 1),
                    "descriptor-reused",
                    f"{t.name}'s descriptor {d.name} {_code(d.code)} is "
                    f"{first.name}'s too ({first.span})",
                    f"decoders read it as {first.name}; {t.name} is generated without a descriptor",
                )
                t = (
                    replace(t, descriptor=None, klass="restricted", source="list")
                    if t.klass == "composite"
                    else replace(t, descriptor=None)
                )
            else:
                codes[d.code] = t
                symbols[d.name] = t
        names[t.name] = t
        out.append(t)
    provided = {p for t in out for p in t.provides}
    out = [_typed_choices(t, names, elements[t.span]) for t in out]
    names = {t.name: t for t in out}
    return [_check_fields(t, names, provided, log, elements[t.span]) for t in out]


INTEGERS = frozenset(
    {"ubyte", "ushort", "uint", "ulong", "byte", "short", "int", "long", "timestamp"}
)
"""Part 1's types whose values are integers (section 1.6; a timestamp counts milliseconds), by
name: a stripped copy keeps no more of them than their names."""


def _value_kind(names: dict[str, TypeDef], name: str) -> str:
    """What a value of type `name` is written as: "int" (a number), "bool" (true or false), or
    "" (text: symbols, strings, anything else)."""
    seen: set[str] = set()
    while name in names and name not in seen:
        seen.add(name)
        t = names[name]
        if t.klass == "primitive":
            return "int" if name in INTEGERS else "bool" if name == "boolean" else ""
        if t.klass == "composite":
            return ""
        name = t.source
    return ""


# XML Schema's spellings, in any case: copies write FALSE and False too
_BOOLEANS = {"true": True, "false": False, "1": True, "0": False}


def _value(text: str, kind: str, span: SourceSpan, what: str) -> int | bool | str:
    """The value `text` spells as a value of `kind` (`_value_kind`): located SpecError when it
    spells none."""
    if kind == "int":
        return _int(text, span, what)
    if kind == "bool":
        if text.strip().lower() not in _BOOLEANS:
            raise SpecError(span, f"{what} {text!r} is not a boolean -> true or false")
        return _BOOLEANS[text.strip().lower()]
    return text


def _spelled(value: int | bool | str) -> str:
    """A value in its one spelling: decimal for a number, true or false, text as it is."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _typed_choices(t: TypeDef, names: dict[str, TypeDef], element: Element) -> TypeDef:
    """`t` with its choices' values checked and in one spelling (`TypeChoice.value`):
    `<choice value="0x02"/>` of a ubyte type is "2", `value="2x"` a located error."""
    kind = _value_kind(names, t.source) if t.klass == "restricted" else ""
    if not t.choices or not kind:
        return t
    choices = tuple(
        replace(
            c,
            value=_spelled(
                _value(
                    c.value, kind, x.attr_spans.get("value", x.span), f"{t.name}'s choice {c.name}"
                )
            ),
        )
        for c, x in zip(t.choices, element.findall("choice"), strict=True)
    )
    return replace(t, choices=choices)


def _check_fields(
    t: TypeDef,
    names: dict[str, TypeDef],
    provided: set[str],
    log: FindingLog,
    element: Element,
) -> TypeDef:
    fields = []
    for f, x in zip(t.fields, element.findall("field"), strict=True):
        span = f.span or SourceSpan("?", 1)
        for need in f.requires:
            if need not in provided:
                log.add(
                    span,
                    "requires-unprovided",
                    f"{t.name}.{f.name} requires {need!r}, which no type of this document provides",
                    "any described value is accepted there",
                )
        if f.type != "*" and f.type not in names:
            raise SpecError(x.attr_spans.get("type", span), _undefined(t, f.type, f.name, names))
        choices = _choices(names, f.type)
        if f.default is not None and not any(f.default == c.name for c in choices):
            kind = _value_kind(names, f.type)
            where = x.attr_spans.get("default", span)
            what = f"{t.name}.{f.name}'s default"
            if not choices:
                f = replace(f, default=_value(str(f.default), kind, where, what))
            else:
                try:  # a choice's value, in any spelling
                    value = _value(str(f.default), kind, where, what)
                    legal = _spelled(value) in {c.value for c in choices}
                except SpecError:
                    legal = False
                if legal:
                    f = replace(f, default=value)
                else:
                    log.add(
                        span,
                        "default-not-a-choice",
                        f"{t.name}.{f.name} defaults to {f.default!r}, not one of {f.type}'s"
                        f" choices ({', '.join(c.name for c in choices)})",
                        "no default is generated for it",
                    )
                    f = replace(f, default=None)
        fields.append(f)
    if t.klass == "restricted" and t.source != "*" and t.source not in names:
        raise SpecError(
            t.span or SourceSpan("?", 1),
            f"{t.name} restricts {t.source!r}, which is not defined -> restrict a type this"
            " document, or a part beside it, defines",
        )
    return replace(t, fields=tuple(fields))


def _undefined(t: TypeDef, type_: str, field: str, names: dict[str, TypeDef]) -> str:
    """Why a field of a type nobody defines is refused, and the types it could name instead:
    read as any type, its values would go on the wire with whatever constructor they bring."""
    close = difflib.get_close_matches(type_, list(names), n=1)
    primitives = sorted(n for n, d in names.items() if d.klass == "primitive")
    others = sorted(n for n, d in names.items() if d.klass != "primitive")
    return (
        f"{t.name}.{field} is of type {type_!r}, which no type read for this document defines"
        f" -> {f'{close[0]}? ' if close else ''}name a defined type, or * (any value):"
        f" {', '.join(primitives)}; {', '.join(others)}"
    )


def _choices(names: dict[str, TypeDef], name: str) -> tuple[TypeChoice, ...]:
    t = names.get(name)
    return t.choices if t is not None else ()


def _code(code: int) -> str:
    return f"{code >> 32:#010x}:{code & 0xFFFFFFFF:#010x}"


def _frame(
    text: str, definitions: dict[str, int], span: SourceSpan, log: FindingLog
) -> FrameLayout:
    missing = [word for word in ("SIZE", "DOFF", "TYPE") if word not in text]
    if missing:
        log.add(
            span,
            "framing-not-drawn",
            f"the text does not draw the frame layout ({', '.join(missing)} missing)",
            "Part 2 section 2.3's layout is used: size, doff, type, channel",
        )
    header = (
        Field("size", Prim("uint32"), doc="Total frame size in bytes, this field included."),
        Field(
            "doff", Prim("uint8"), doc="Data offset: the header's size in 4-byte words, at least 2."
        ),
        Field("type", Prim("uint8"), doc="Frame type: 0 an AMQP frame, 1 a SASL frame."),
        Field("channel", Prim("uint16"), doc="The channel (AMQP frames); SASL frames ignore it."),
    )
    ids = sorted({int(m.group(1)) for m in _PICTURE.finditer(text)})
    pictured = bool(ids)
    headers_by_rule: list[Preamble] = []
    if not ids:
        # the stripped copies (proton's, rabbitmq-codegen's) and uAMQP's definitions keep no
        # prose: the headers are 1.0's by its rule, or the codec could not open a connection
        headers_by_rule = [
            Preamble("both", data, f"{name} protocol header")
            for name, data in AMQP10_HEADERS.items()
        ]
        log.add(
            span,
            "no-protocol-header",
            'no protocol header picture ("AMQP" | %d0 | ...) in the text',
            "AMQP 1.0's three headers by its rule (Part 2 section 2.2, Part 5 sections 5.1 and "
            "5.3): 'AMQP', protocol id 0, 2 or 3, then 1 0 0",
        )
    prefixes = {0: "", 2: "TLS-", 3: "SASL-"}
    headers = []
    for pid in ids if pictured else ():
        prefix = prefixes.get(pid, "")
        version = [
            definitions.get(f"{prefix}{part}", definitions.get(part))
            for part in ("MAJOR", "MINOR", "REVISION")
        ]
        if None in version:
            version = [1, 0, 0]
            log.add(
                span,
                "protocol-version-undefined",
                f"protocol id {pid}: no {prefix}MAJOR/MINOR/REVISION definitions",
                "1.0.0, the version this document is",
            )
        data = b"AMQP" + bytes([pid, *[v for v in version if v is not None]])
        names = {0: "AMQP", 2: "TLS", 3: "SASL"}
        headers.append(
            Preamble("both", data, f"{names.get(pid, f'protocol id {pid}')} protocol header")
        )
    return FrameLayout(
        header=header,
        length="size",
        length_counts="frame",
        dispatch=("type",),
        protocol_headers=tuple(headers or headers_by_rule),
        span=span,
        header_words="doff",
    )


FRAME_TYPES = {"frame": 0, "sasl-frame": 1}
"""The frame type whose body a type providing each archetype is (Part 2 section 2.3.1: 0x00 an
AMQP frame, its body a performative, `provides="frame"`; 0x01 a SASL frame, its body a SASL
frame body, section 5.3.1: `provides="sasl-frame"`)."""


def _commands(typedefs: list[TypeDef]) -> tuple[Command, ...]:
    """The frame bodies as commands: every described composite providing `frame` or
    `sasl-frame`, whatever section it stands in, one message each, identified by its frame type
    and descriptor code, its fields self-describing values (a field not mandatory may be null)."""
    out: list[Command] = []
    for t in typedefs:
        kinds = sorted({p for p in t.provides if p in FRAME_TYPES})
        if not kinds or t.descriptor is None:
            continue
        span = t.span or SourceSpan("?", 1)
        if t.klass != "composite":
            raise SpecError(
                span,
                f"{t.name} provides {kinds[0]} but is {t.klass}: a frame body is a described"
                " list -> class composite with source list, or provide no frame archetype",
            )
        if len(kinds) > 1:
            raise SpecError(
                span,
                f"{t.name} provides both {' and '.join(kinds)}: the body of two frame types"
                " -> provide one (frame: an AMQP frame's body, sasl-frame: a SASL frame's)",
            )
        ident = (FRAME_TYPES[kinds[0]], t.descriptor.code)
        message = Message(
            field_name(t.name),
            "oneway",
            ident,
            ALL_VERSIONS,
            tuple(f.as_field() for f in t.fields),
            doc=t.doc or t.label,
            span=t.span,
            descriptor=t.descriptor,
        )
        out.append(Command(field_name(t.name), ident, "both", (message,), doc=t.doc, span=t.span))
    return tuple(out)


def _rules(typedefs: list[TypeDef], commands: tuple[Command, ...]) -> tuple[SpecRule, ...]:
    """What each composite's fields say their values must be: `mandatory`, `multiple`,
    `requires`, `default`, the `<choice>`s of a restricted type a field is of, and the MUSTs
    of its docs in words. A frame
    body's rules are its message's (IR field names), any other composite's its type's."""
    names = {t.name: t for t in typedefs}
    bodies = {
        m.descriptor.code: m.name for c in commands for m in c.messages if m.descriptor is not None
    }
    out: list[SpecRule] = []
    for t in typedefs:
        if t.klass != "composite" or t.descriptor is None:
            continue
        body = bodies.get(t.descriptor.code)
        owner = f"message:{body}" if body else f"typedef:{t.name}"
        out.extend(_musts(t.doc, owner, None, t.span))
        for f in t.fields:
            field = field_name(f.name) if body else f.name
            kind = _value_kind(names, f.type)
            choices = _choices(names, f.type)
            if f.mandatory:
                out.append(SpecRule("mandatory", owner, field, f.span, prose='mandatory="true"'))
            if f.multiple:
                out.append(SpecRule("multiple", owner, field, f.span, prose='multiple="true"'))
            if f.requires:
                written = f'requires="{", ".join(f.requires)}"'
                out.append(
                    SpecRule("requires", owner, field, f.span, values=f.requires, prose=written)
                )
            if f.default is not None:
                # a default naming a choice is that choice's value
                named = next((c.value for c in choices if c.name == f.default), None)
                value = f.default if named is None else _typed(named, kind)
                written = f"default={f.default!r}"
                out.append(SpecRule("default", owner, field, f.span, value=value, prose=written))
            out.extend(_musts(f.doc, owner, field, f.span))
            if choices and f.type in names:
                listed = ", ".join(f"{c.name}={c.value}" for c in choices)
                out.append(
                    SpecRule(
                        "choice",
                        owner,
                        field,
                        names[f.type].span,  # where the choices are stated
                        values=tuple(_typed(c.value, kind) for c in choices),
                        via=f"type {f.type}",
                        prose=f"one of {f.type}'s choices: {listed}",
                    )
                )
    return tuple(out)


def _musts(doc: str, owner: str, field: str | None, span: SourceSpan | None) -> list[SpecRule]:
    """The sentences of a doc that say MUST or MUST NOT (RFC 2119's words, as the spec writes
    them): rules in words, one each."""
    sentences = re.split(r"(?<=[.:])\s+", " ".join(doc.split()))
    return [
        SpecRule("prose", owner, field, span, checkable=False, prose=text)
        for text in sentences
        if re.search(r"\bMUST\b", text)
    ]


def _typed(value: str, kind: str) -> int | bool | str:
    """A choice's value (`TypeChoice.value`, in its one spelling) as the value it is."""
    if kind == "int":
        return int(value)
    if kind == "bool":
        return value == "true"
    return value
