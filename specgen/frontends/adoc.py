"""Protocol-reference AsciiDoc -> IR, with every contradiction of the text reported.

The reconciliation rule, applied the same way to every rule of every document:

    THE BODY WINS. The definition lines of a layout rule (`Name => type`) are the wire layout,
    in the order they are written. The head (`Msg => A B [C]`) only tells where a definition
    belongs and whether it repeats (`[C]`).
      * A definition binds to the most recent head or struct that names it and is still waiting
        for it; one that nobody names belongs to the innermost structure still waiting for a
        member (PublishConfirm's PublisherId, PeerPropertiesRequest's CorrelationId).
      * A name the head mentions but the body never defines is not on the wire
        (SaslHandshakeRequest's Mechanism), unless an overlay entry defines it.
      * `[C]` in a head makes C an array; when C's own definition is already an array
        (`[Mechanisms]` with `Mechanisms => [Mechanism]`) it is one array, not two.
      * Key and Version belong to the frame: the Frame Structure section gives their widths,
        and a rule that says otherwise is reported and overruled.
      * A rule's key comment is its key, except that a response written with the table's key
        where the frame structure says responses set a bit gets that bit.
      * A lowercase name that is no type but one slip from exactly one (`unit32`) is that type.
The commands table names each command's section by anchor; an anchor that is no section's id
finds it by the request's key, then by spelling (see `_match_sections`).
Every place where the rule decides something the text left open becomes a `Finding`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, assert_never, cast

from specgen.frontends import adoc_tree
from specgen.frontends.adoc_tree import (
    Annotation,
    Block,
    CodeBlock,
    Document,
    Group,
    Ref,
    Rule,
    SectionTitle,
    Table,
    Term,
    Text,
    VersionMarker,
)
from specgen.frontends.data import NO_DATA
from specgen.frontends.spec_text import read_spec_text
from specgen.ir import (
    INT_WIDTHS,
    Alternatives,
    Array,
    Command,
    Constant,
    Direction,
    Enum,
    EnumValue,
    Field,
    FindingLog,
    FrameLayout,
    Message,
    MessageKind,
    Prim,
    PrimitiveType,
    Protocol,
    SourceSpan,
    SpecRule,
    Struct,
    TypeRef,
    Versions,
    merge_versions,
    walk_fields,
)

HEADER_FIELDS = ("Key", "Version")


class SpecError(ValueError):
    """The document parsed but cannot be turned into a protocol; names file:line:column."""

    def __init__(self, span: SourceSpan, message: str) -> None:
        super().__init__(f"{span}: {message}")
        self.span = span


def build(
    path: Path, rel: str, protocol: str, version: str, data: Mapping[str, Path] = NO_DATA
) -> tuple[Protocol, FindingLog]:
    """The front-end entry (see specgen.frontends): parse the document, then build its IR."""
    return build_document(adoc_tree.parse(read_spec_text(path, rel), rel), protocol, version)


def build_document(doc: Document, protocol: str, version: str) -> tuple[Protocol, FindingLog]:
    return _Builder(doc, protocol, version).run()


# --------------------------------------------------------------------------------------------
# The rule tree of one message, before it becomes fields


@dataclass
class _Node:
    rule: Rule
    parent: _Node | None
    children: list[_Node] = field(default_factory=list)
    head_array: bool = False  # the name was written [Name] where it was referenced

    @property
    def name(self) -> str:
        return self.rule.name


@dataclass
class _TableCommand:
    name: str
    sender: Direction
    key: int
    expects_response: bool
    span: SourceSpan
    markers: tuple[str, ...] = ()  # `|<<route>> (experimental)`: ("experimental",)
    sender_span: SourceSpan | None = None  # its From cell


@dataclass
class _Section:
    title: str  # as written, markers removed
    span: SourceSpan
    blocks: list[tuple[int, Block]] = field(default_factory=list)  # (spec version, block)
    markers: list[str] = field(default_factory=list)  # from the heading and `_Experimental_`


class _Builder:
    def __init__(self, doc: Document, protocol: str, version: str) -> None:
        self.doc = doc
        self.protocol = protocol
        self.version = version
        self.log = FindingLog()
        self.types: dict[str, PrimitiveType] = {}
        self.enums: dict[str, Enum] = {}
        self.array_prefix = "int32"
        self.frame: FrameLayout | None = None
        self.generic_response: list[tuple[str, str]] = []
        self.examples: list[tuple[int, str, SourceSpan]] = []  # (key, command word, where)
        self.typos: set[tuple[SourceSpan, str]] = set()  # misspelt type names reported

    # ---- document walk

    def run(self) -> tuple[Protocol, FindingLog]:
        chapters = self._chapters()
        for title, blocks in chapters:
            if title == "Types":
                self._types(blocks)
        if not self.types:
            raise SpecError(SourceSpan(self.doc.path, 1), "no Types section")
        table_commands: list[_TableCommand] = []
        sections: list[_Section] = []
        for title, blocks in chapters:
            if title == "Frame Structure":
                self._frame(blocks)
            elif title == "Response Codes":
                self._response_codes(blocks)
            elif title == "Commands":
                table_commands = self._commands_table(blocks)
                sections = self._command_sections(blocks)
        if self.frame is None:
            raise SpecError(SourceSpan(self.doc.path, 1), "no Frame Structure section")
        matched = self._match_sections(table_commands, sections)
        commands = [self._command(tc, matched[tc.name]) for tc in table_commands]
        rules = [
            r for tc, c in zip(table_commands, commands, strict=True) for r in self._rules(tc, c)
        ]
        self._check_examples(table_commands)
        for section in sections:
            if all(s is not section for s in matched.values()):
                self.log.add(
                    section.span,
                    "section-not-in-table",
                    f"{section.title} is not in the commands table",
                    "ignored",
                )
        constants = (
            [
                Constant(
                    "RESPONSE_FLAG",
                    self.frame.response_flag,
                    "Set in the key of a response.",
                    self.frame.span,
                )
            ]
            if self.frame.response_flag
            else []
        )
        proto = Protocol(
            name=self.protocol,
            version=self.version,
            source=self.doc.path,
            types=tuple(self.types.values()),
            frame=self.frame,
            enums=tuple(self.enums.values()),
            constants=tuple(constants),
            commands=tuple(sorted(commands, key=lambda c: c.ident)),
            rules=tuple(rules),
        )
        return proto, self.log

    def _rules(self, tc: _TableCommand, command: Command) -> list[SpecRule]:
        """What the document says each message of a command must be: who sends it (the
        commands table's From column; a response comes from the other peer), the key and
        versions it goes with, and of its fields: a response code one of the Response Codes
        table's, a value one of those its comment lists, a string at most its "max N
        characters"."""
        out: list[SpecRule] = []
        for m in command.messages:
            owner = f"message:{m.name}"
            if tc.sender != "both":
                sender = tc.sender
                said = f"From: {tc.sender.capitalize()}"
                if m.kind == "response":
                    sender = "server" if tc.sender == "client" else "client"
                    said += f", so the response comes from the {sender}"
                out.append(
                    SpecRule("sender", owner, None, tc.sender_span, value=sender, prose=said)
                )
            out.append(
                SpecRule(
                    "key-version",
                    owner,
                    None,
                    m.span,
                    value=m.ident[0],
                    low=m.versions.low,
                    high=m.versions.high,
                    prose=f"key {m.ident[0]:#06x}, version {m.versions}",
                )
            )
            for path, f in walk_fields(m.fields):
                out.extend(self._field_rules(owner, path, f))
        return out

    def _field_rules(self, owner: str, path: str, f: Field) -> list[SpecRule]:
        out: list[SpecRule] = []
        enum = self.enums.get(f.enum) if f.enum else None
        if enum is not None:
            # the values its own comment lists: an enum of its name may hold another field's
            # too (OffsetType's 0, none, is ConsumerUpdateResponse's, not Subscribe's)
            own = _enum_values(f.doc)
            values = tuple(v.value for v in (own or enum.values))
            if f.enum == "ResponseCode":
                out.append(
                    SpecRule(
                        "response-code",
                        owner,
                        path,
                        enum.span,  # the Response Codes table
                        values=values,
                        via="table Response Codes",
                        prose="one of the Response Codes table's codes",
                    )
                )
            else:
                out.append(
                    SpecRule(
                        "choice",
                        owner,
                        path,
                        f.span,
                        values=values,
                        prose=f"one of the values its comment lists ({f.doc})",
                    )
                )
        if f.max_length is not None:
            out.append(
                SpecRule(
                    "length",
                    owner,
                    path,
                    f.span,
                    value=f.max_length,
                    prose=f"max {f.max_length} characters",
                )
            )
        return out

    def _header_type(self, name: str) -> str:
        assert self.frame is not None
        (f,) = [f for f in self.frame.header if f.name == name]
        assert isinstance(f.type, Prim)
        return f.type.name

    def _check_examples(self, table: list[_TableCommand]) -> None:
        """The frame structure's key examples against the commands table."""
        flag = self.frame.response_flag if self.frame else None
        for key, word, span in self.examples:
            tc = next((t for t in table if t.name == word.lower()), None)
            if tc is not None and key & ~(flag or 0) != tc.key:
                bare = key & ~(flag or 0)
                shown = f"{key:#06x}" + (
                    f" ({bare:#06x} without the response bit)" if bare != key else ""
                )
                self.log.add(
                    span,
                    "example-key",
                    f"the example gives {word} key {shown}, the table {tc.key:#06x}",
                    "the table; the example only shows the response bit",
                )

    def _chapters(self) -> list[tuple[str, list[Block]]]:
        """Level-2 sections with everything below them (level-3 titles included)."""
        out: list[tuple[str, list[Block]]] = []
        for block in self.doc.blocks:
            if isinstance(block, SectionTitle) and block.level <= 2:
                out.append((block.title, []))
            elif out:
                out[-1][1].append(block)
        return out

    # ---- types, frame, response codes

    def _types(self, blocks: list[Block]) -> None:
        for block in blocks:
            if not (isinstance(block, Text) and block.kind == "types"):
                continue
            names_text, _, desc = block.text.partition(" - ")
            names = [n.strip() for n in names_text.split(",")]
            if names == ["arrays"]:
                prefix = desc.split()[0]
                if prefix not in INT_WIDTHS:
                    raise SpecError(block.span, f"array length type {prefix!r} is not an integer")
                self.array_prefix = prefix
                continue
            for name in names:
                self.types[name] = self._primitive(name, desc, block.span)

    def _primitive(self, name: str, desc: str, span: SourceSpan) -> PrimitiveType:
        if name in INT_WIDTHS:
            width, signed = INT_WIDTHS[name]
            said_signed = desc.lower().startswith("signed")
            if said_signed != signed:
                self.log.add(
                    span,
                    "type-sign",
                    f"{name} is described as {desc.split()[0].lower()}",
                    "the name decides",
                )
            return PrimitiveType(name, "int", width=width, signed=signed, doc=desc, span=span)
        if name in ("string", "bytes"):
            prefix = desc.split()[0]
            null = re.search(r"length of (-?\d+) indicates null", desc)
            encoding = "utf-8" if re.search(r"UTF-?8", desc, re.I) else ""
            if name == "string" and not encoding:
                self.log.add(
                    span,
                    "string-encoding",
                    "the encoding of string content is not stated",
                    "read and written as UTF-8",
                )
                encoding = "utf-8"
            kind: Literal["string", "bytes"] = "string" if name == "string" else "bytes"
            return PrimitiveType(
                name,
                kind,
                length_prefix=prefix,
                null_length=int(null.group(1)) if null else None,
                encoding=encoding,
                doc=desc,
                span=span,
            )
        raise SpecError(span, f"unknown primitive {name!r}")

    def _type_of(self, name: str, span: SourceSpan) -> str:
        """The primitive `name`, declaring implied integer widths the types section left out."""
        name = self._spelt(name, span)
        if name not in self.types:
            if name not in INT_WIDTHS:
                raise SpecError(span, f"{name!r} is neither defined here nor a primitive type")
            width, signed = INT_WIDTHS[name]
            self.log.add(
                span,
                "type-undeclared",
                f"{name} is used but not in the Types section",
                f"{width * 8}-bit big-endian {'signed' if signed else 'unsigned'} integer, as its name says",
            )
            self.types[name] = PrimitiveType(
                name,
                "int",
                width=width,
                signed=signed,
                doc="implied by its name",  # the span says where (no path in prose: diffs compare it)
                span=span,
            )
        return name

    def _is_type(self, name: str) -> bool:
        return name in self.types or name in INT_WIDTHS or self._misspelt(name) is not None

    def _misspelt(self, name: str) -> str | None:
        """The one known type an undefined lowercase name is a slip of (a letter added, dropped
        or changed, or two swapped: `unit32`). Types are lowercase in these references and
        structures capitalised, so such a name cannot be a structure the body forgot; read as
        one it would silently drop its bytes from the layout."""
        if name in self.types or name in INT_WIDTHS or not name[:1].islower():
            return None
        near = [t for t in sorted({*self.types, *INT_WIDTHS}) if _distance(name, t) == 1]
        return near[0] if len(near) == 1 else None

    def _spelt(self, name: str, span: SourceSpan) -> str:
        right = self._misspelt(name)
        if right is None:
            return name
        if (span, name) not in self.typos:
            self.typos.add((span, name))
            self.log.add(span, "type-typo", f"{name} is not a type", f"read as {right}")
        return right

    def _frame(self, blocks: list[Block]) -> None:
        widths: dict[str, tuple[str, SourceSpan]] = {}
        flag: int | None = None
        span: SourceSpan | None = None
        for block in blocks:
            if not isinstance(block, CodeBlock):
                continue
            span = span or block.span
            for rule in block.rules:
                terms = _plain(rule.alternatives[0]) if len(rule.alternatives) == 1 else []
                if len(terms) == 1 and self._is_type(terms[0].name) and rule.name not in widths:
                    widths[rule.name] = (terms[0].name, rule.span)
            pairs = []
            for text, example_span in block.examples:
                m = _EXAMPLE.match(text)
                if m:
                    key = _example_key(m.group(1))
                    pairs.append((key, m.group(3)))
                    self.examples.append((key, m.group(2), example_span))
            requests = [k for k, kind in pairs if kind == "request"]
            responses = [k for k, kind in pairs if kind == "response"]
            if requests and responses:
                flag = requests[0] ^ responses[0]
        if span is None:
            raise SpecError(
                SourceSpan(self.doc.path, 1), "the Frame Structure section has no code block"
            )
        self.generic_response = []
        for block in blocks:
            for rule in block.rules if isinstance(block, CodeBlock) else ():
                if rule.name == "Response" and len(rule.alternatives) == 1:
                    names = [t.name for t in _plain(rule.alternatives[0])]
                    for n in names:
                        if n not in HEADER_FIELDS and n in widths:
                            self.generic_response.append((n, self._type_of(*widths[n])))
        missing = [n for n in ("Size", "Key", "Version") if n not in widths]
        if missing:
            raise SpecError(span, f"the frame structure does not define {', '.join(missing)}")
        self.frame_widths = {k: v[0] for k, v in widths.items()}
        self.frame = FrameLayout(
            header=tuple(
                Field(name, Prim(self._type_of(*widths[name])), span=span)
                for name in ("Size", "Key", "Version")
            ),
            length="Size",
            length_counts="after",
            dispatch=("Key",),
            version="Version",
            response_flag=flag,
            span=span,
        )
        if flag is None:
            self.log.add(
                span,
                "no-response-flag",
                "no example shows how a response key differs from a request key",
                "responses share their request's key; the sender tells them apart",
            )

    def _response_codes(self, blocks: list[Block]) -> None:
        for block in blocks:
            if isinstance(block, Table):
                header, rows = _rows(block)
                values = tuple(
                    EnumValue(_const_name(r[0].text), _int(r[1].text, r[1].span), r[0].text)
                    for r in rows
                )
                self._add_enum(
                    Enum("ResponseCode", values, "Response codes (table).", block.span, hex=True)
                )

    def _add_enum(self, enum: Enum) -> None:
        old = self.enums.get(enum.name)
        if old is None:
            self.enums[enum.name] = enum
            return
        merged = {v.value: v for v in old.values}
        for v in enum.values:
            if v.value in merged and merged[v.value].name != v.name:
                self.log.add(
                    enum.span or old.span or SourceSpan(self.doc.path, 1),
                    "enum-clash",
                    f"{enum.name} value {v.value} is {merged[v.value].name} elsewhere, {v.name} here",
                    "first wins",
                )
                continue
            merged[v.value] = v
        self.enums[enum.name] = Enum(
            enum.name, tuple(merged[k] for k in sorted(merged)), old.doc, old.span
        )

    # ---- commands

    def _commands_table(self, blocks: list[Block]) -> list[_TableCommand]:
        table = next((b for b in blocks if isinstance(b, Table)), None)
        if table is None:
            raise SpecError(SourceSpan(self.doc.path, 1), "the Commands section has no table")
        header, rows = _rows(table)
        out = []
        for row in rows:
            if len(row) != 4:
                raise SpecError(
                    row[0].span, f"a command row has {len(row)} cells, the header {len(header)}"
                )
            # a status may follow the link, `(experimental)` or `_experimental_`; other text
            # after it is not something we know how to read, so it stays an error
            m = re.fullmatch(
                r"<<(\w+)>>\s*(?:\(([A-Za-z][\w -]*)\)|_([A-Za-z][\w -]*)_)?", row[0].text
            )
            if not m:
                raise SpecError(row[0].span, f"expected <<command>>, found {row[0].text!r}")
            marker = (m.group(2) or m.group(3) or "").strip().lower()
            sender_text = row[1].text.lower()
            sender: Direction = "both" if "&" in sender_text else cast("Direction", sender_text)
            if sender not in ("client", "server", "both"):
                raise SpecError(row[1].span, f"unknown sender {row[1].text!r}")
            expects = row[3].text.lower().startswith("y")
            out.append(
                _TableCommand(
                    m.group(1),
                    sender,
                    _int(row[2].text, row[2].span),
                    expects,
                    row[0].span,
                    (marker,) if marker else (),
                    row[1].span,
                )
            )
        return out

    def _command_sections(self, blocks: list[Block]) -> list[_Section]:
        sections: list[_Section] = []
        current: _Section | None = None
        version = 1
        for block in blocks:
            match block:
                case SectionTitle():
                    title, marker = _split_marker(block.title)
                    current = _Section(title, block.span, markers=[marker] if marker else [])
                    sections.append(current)
                    version = 1
                case VersionMarker():
                    version = block.version
                case Table() | CodeBlock() | Text():
                    if current is not None:
                        marker = _body_marker(block)
                        if marker and marker not in current.markers:
                            current.markers.append(marker)
                        elif not marker:
                            current.blocks.append((version, block))
                case _:
                    assert_never(block)
        return sections

    def _match_sections(
        self, table: list[_TableCommand], sections: list[_Section]
    ) -> dict[str, _Section]:
        """Each table anchor's section, by this rule, in this order:
        (a) AsciiDoc's own ids: the title lowercased, spaces, underscores and punctuation
            dropped, which covers the explicit `[[id]]` form and the `_`-prefixed auto id;
        (b) the one unmatched section whose request Key comment is the table's key;
        (c) the unmatched section closest in spelling (unique, and less than half the longer
            name apart), first for anchors whose key no section claims, since their key gives no
            evidence; every (b)/(c) match narrows what is left, so (b) is tried again after it.
        Exact ids are silent; everything else is an `anchor-mismatch` finding."""
        matched: dict[str, _Section] = {}
        for tc in table:
            section = next((s for s in sections if _id(s.title) == _id(tc.name)), None)
            if section is None:
                continue
            matched[tc.name] = section
            if tc.name.lower() != section.title.lower():
                self._anchor_finding(tc, section, "matched by id")
        keys = {id(s): self._section_key(s) for s in sections}

        def free() -> list[_Section]:
            return [
                s
                for s in sections
                if keys[id(s)] is not None and all(m is not s for m in matched.values())
            ]

        while waiting := [tc for tc in table if tc.name not in matched]:
            by_key = [
                (tc, cands)
                for tc in waiting
                if len(cands := [s for s in free() if keys[id(s)] == tc.key]) == 1
            ]
            if by_key:
                tc, (section,) = by_key[0]
                matched[tc.name] = section
                self._anchor_finding(tc, section, "matched by key")
                continue
            waiting.sort(key=lambda tc: any(keys[id(s)] == tc.key for s in free()))
            found = next(
                ((tc, s) for tc in waiting if (s := _closest(tc.name, free())) is not None), None
            )
            if found is None:
                raise SpecError(waiting[0].span, f"command {waiting[0].name} has no section")
            matched[found[0].name] = found[1]
            self._anchor_finding(found[0], found[1], "matched by spelling")
        return matched

    def _anchor_finding(self, tc: _TableCommand, section: _Section, decision: str) -> None:
        key = self._section_key(section)
        self.log.add(
            tc.span,
            "anchor-mismatch",
            f"the commands table's <<{tc.name}>> (key {tc.key:#06x}) names no section by that id;"
            f" section {section.title!r} (request key {'?' if key is None else f'{key:#06x}'})",
            decision,
        )

    def _section_key(self, section: _Section) -> int | None:
        """The Key comment of a section's request (or one-way message): its first rule that
        starts with the frame header and is not named ...Response."""
        try:
            heads = [
                (head, body)
                for _, block in section.blocks
                if isinstance(block, CodeBlock)
                for head, body in self._split_messages(block)
            ]
        except SpecError:
            return None  # not a message layout; if a table anchor needs it, that reports it
        request = next((hb for hb in heads if not hb[0].name.endswith("Response")), None)
        if request is None:
            return None
        key_rule = next((r for r in request[1] if r.name == "Key"), None)
        return _comment_key(key_rule.comment) if key_rule else None

    def _command(self, tc: _TableCommand, section: _Section) -> Command:
        name = _identifier(section.title)
        if name != section.title:
            self.log.add(
                section.span,
                "title-not-identifier",
                f"the section title {section.title!r} is not one word",
                f"the command is named {name}",
            )
        # A marker such as "(experimental)" is a status, not a contradiction: it goes in the
        # command's doc so the generated classes of that version say so; lint lists it only
        # when the table and the section disagree.
        markers = list(dict.fromkeys([*tc.markers, *section.markers]))
        if set(tc.markers) != set(section.markers):
            self.log.add(
                tc.span,
                "marker-mismatch",
                f"{name} is marked {', '.join(tc.markers) or 'nothing'} in the commands table,"
                f" {', '.join(section.markers) or 'nothing'} in its section",
                f"marked {', '.join(markers)}",
            )
        docs = [f"{m.capitalize()}." for m in markers] + [
            b.text
            for _, b in section.blocks
            if isinstance(b, Text) and b.kind in ("nb", "paragraph", "bullet", "numbered")
        ]
        rules_by_version: dict[str, dict[int, tuple[Rule, list[Rule]]]] = {}
        order: list[str] = []
        for version, block in section.blocks:
            if not isinstance(block, CodeBlock):
                continue
            for head, body in self._split_messages(block):
                if head.name not in rules_by_version:
                    order.append(head.name)
                rules_by_version.setdefault(head.name, {})[version] = (head, body)
        messages: list[Message] = []
        built: dict[str, dict[int, tuple[int, tuple[Field, ...]]]] = {}
        for rule_name in order:
            per_version: dict[int, tuple[int, tuple[Field, ...]]] = {}
            for version, (head, body) in sorted(rules_by_version[rule_name].items()):
                alias = self._alias(head, built)
                if alias is not None:
                    per_version[version] = alias
                    self.log.add(
                        head.span,
                        "alias",
                        f"{head.name} is written as {alias_name(head)}: the same layout, the same key",
                        "copied, key included",
                    )
                else:
                    per_version[version] = self._message_fields(name, head, body)
            built[rule_name] = per_version
            first_head = next(iter(sorted(rules_by_version[rule_name].items())))[1][0]
            kind: MessageKind = (
                "response"
                if rule_name.endswith("Response")
                else ("request" if tc.expects_response else "oneway")
            )
            keys = {k for k, _ in per_version.values()}
            if len(keys) > 1:
                raise SpecError(
                    first_head.span, f"{rule_name} has different keys in different versions"
                )
            key = self._check_key(tc, kind, keys.pop(), first_head)
            versions = sorted(per_version)
            fields = merge_versions([(v, per_version[v][1]) for v in versions])
            messages.append(
                Message(
                    rule_name,
                    kind,
                    (key,),
                    Versions(versions[0], versions[-1]),
                    fields,
                    _rule_doc(first_head),
                    first_head.span,
                )
            )
        if not messages:
            raise SpecError(section.span, f"command {name} defines no layout")
        response = next((m for m in messages if m.kind == "response"), None)
        if not tc.expects_response and response is not None:
            self.log.add(
                tc.span,
                "table-vs-section",
                f"the commands table says {name} expects no response, its section defines {response.name}",
                "the table decides",
            )
        if tc.expects_response and response is None:
            messages.append(self._generic_response(name, tc, section.span))
        replies = tuple(m.name for m in messages if m.kind == "response")
        messages = [replace(m, replies=replies) if m.kind == "request" else m for m in messages]
        return Command(
            name,
            (tc.key,),
            tc.sender,
            tuple(messages),
            "\n\n".join(docs),
            section.span,
        )

    def _generic_response(self, name: str, tc: _TableCommand, span: SourceSpan) -> Message:
        """The frame structure's own `Response => Key Version CorrelationId ResponseCode`."""
        assert self.frame is not None
        if not self.generic_response:
            raise SpecError(
                span,
                f"{name} expects a response, and neither its section nor the frame structure defines one",
            )
        self.log.add(
            span,
            "response-from-frame",
            f"the commands table says {name} expects a response, its section defines none",
            "the frame structure's Response layout",
        )
        fields = []
        for field_name, type_name in self.generic_response:
            role = {"CorrelationId": "correlation_id", "ResponseCode": "response_code"}.get(
                field_name, ""
            )
            enum = (
                "ResponseCode"
                if field_name == "ResponseCode" and "ResponseCode" in self.enums
                else None
            )
            fields.append(
                Field(field_name, Prim(type_name), span=self.frame.span, enum=enum, role=role)  # type: ignore[arg-type]
            )
        key = tc.key | (self.frame.response_flag or 0)
        return Message(
            f"{name}Response",
            "response",
            (key,),
            Versions(1, 1),
            tuple(fields),
            "The frame structure's generic response.",
            span,
        )

    def _check_key(self, tc: _TableCommand, kind: MessageKind, key: int, head: Rule) -> int:
        """The key on the wire of one message of `tc`: the rule's, unless the rule gives a
        response the table's key without the frame structure's response bit (seq 27..41 of
        the Streams reference explain the bit but still write `Key => int16 // 6`)."""
        assert self.frame is not None
        flag = self.frame.response_flag or 0
        expected = tc.key | (flag if kind == "response" else 0)
        if key == expected or (head.alternatives and _alias_target(head)):
            return key
        if flag and kind == "response" and key == tc.key:
            self.log.add(
                head.span,
                "response-key-without-flag",
                f"{head.name} has key {key:#06x}, the table's key without the response bit",
                "the frame structure's response bit is set",
            )
            return expected
        self.log.add(
            head.span,
            "key-mismatch",
            f"{head.name} has key {key:#06x}, the table says {expected:#06x}",
            "the rule's key",
        )
        return key

    def _split_messages(self, block: CodeBlock) -> list[tuple[Rule, list[Rule]]]:
        """A rule whose body starts with the frame header (`Key Version`) or names another
        message of the block opens a new message; the rules after it are its definitions."""
        out: list[tuple[Rule, list[Rule]]] = []
        names: set[str] = set()
        for rule in block.rules:
            terms = _plain(rule.alternatives[0]) if len(rule.alternatives) == 1 else []
            starts_frame = [t.name for t in terms[:2]] == list(HEADER_FIELDS)
            alias = len(terms) == 1 and terms[0].name in names
            if starts_frame or alias or not out:
                if not (starts_frame or alias):
                    raise SpecError(rule.span, f"{rule.name} does not start with Key Version")
                out.append((rule, []))
                names.add(rule.name)
            else:
                out[-1][1].append(rule)
        return out

    def _alias(
        self, head: Rule, built: dict[str, dict[int, tuple[int, tuple[Field, ...]]]]
    ) -> tuple[int, tuple[Field, ...]] | None:
        target = _alias_target(head)
        if target is None or target not in built:
            return None
        return built[target][max(built[target])]

    # ---- one message: bind definitions to the names that wait for them

    def _message_fields(
        self, command: str, head: Rule, body: list[Rule]
    ) -> tuple[int, tuple[Field, ...]]:
        root = _Node(head, None)
        waiting: list[tuple[_Node, Ref]] = [(root, r) for r in self._refs(head)]
        for rule in body:
            found = next(
                (i for i in range(len(waiting) - 1, -1, -1) if waiting[i][1].name == rule.name),
                None,
            )
            if found is not None:
                owner, ref = waiting.pop(found)
                node = _Node(rule, owner, head_array=ref.array)
            else:
                owner = waiting[-1][0] if waiting else root
                while owner is not root and self._shape(owner) == "array":
                    owner = owner.parent or root
                node = _Node(rule, owner)
                self.log.add(
                    rule.span,
                    "body-only",
                    f"{head.name}: {rule.name} is defined but {owner.name}'s head does not name it",
                    f"on the wire, member of {owner.name}, in body order",
                )
            node.parent = owner
            owner.children.append(node)
            waiting.extend((node, r) for r in self._refs(rule))
        for owner, ref in waiting:
            self.log.add(
                ref.span,
                "head-undefined",
                f"{head.name}: {owner.name} names {ref.name} but the body never defines it",
                "not on the wire",
            )
        key: int | None = None
        fields: list[Field] = []
        assert self.frame is not None
        for child in root.children:
            if child.name == "Key":
                key = self._key(child.rule, head)
                self._check_header(child, self._header_type("Key"))
            elif child.name == "Version":
                self._check_header(child, self._header_type("Version"))
            else:
                f = self._field(child, path=head.name)
                if f is not None:
                    fields.append(f)
        if key is None:
            raise SpecError(head.span, f"{head.name} defines no Key")
        return key, tuple(fields)

    def _refs(self, rule: Rule) -> list[Ref]:
        if len(rule.alternatives) != 1:
            return []
        terms = _plain(rule.alternatives[0])
        return [t for t in terms if not self._is_type(t.name)]

    def _shape(self, node: _Node) -> str:
        if len(node.rule.alternatives) > 1:
            return "alternatives"
        terms = _plain(node.rule.alternatives[0])
        if len(terms) == 1 and self._is_type(terms[0].name):
            return "array" if terms[0].array else "prim"
        if len(terms) == 1 and terms[0].array:
            return "array"
        return "struct"

    def _key(self, rule: Rule, head: Rule) -> int:
        key = _comment_key(rule.comment)
        if key is None:
            raise SpecError(
                rule.span, f"{head.name}: the Key line carries no key value in its comment"
            )
        return key

    def _check_header(self, node: _Node, expected: str) -> None:
        terms = _plain(node.rule.alternatives[0])
        written = terms[0].name if terms else "?"
        if written != expected:
            self.log.add(
                node.rule.span,
                "header-width",
                f"{node.name} is {written} here but {expected} in the frame structure",
                f"the frame structure's {expected}",
            )

    def _field(self, node: _Node, path: str) -> Field | None:
        here = f"{path}.{node.name}"
        shape = self._shape(node)
        rule = node.rule
        doc = rule.comment
        annotations = [t.text for t in rule.alternatives[0] if isinstance(t, Annotation)]
        enum_name: str | None = None
        max_length: int | None = None
        t: TypeRef
        if shape == "alternatives":
            options = []
            for alt in rule.alternatives:
                refs = _plain(alt)
                label = " ".join(a.text for a in alt if isinstance(a, Annotation))
                if len(refs) != 1 or not self._is_type(refs[0].name):
                    raise SpecError(rule.span, f"{here}: an alternative must be one primitive type")
                options.append((self._type_of(refs[0].name, refs[0].span), label))
            t = Alternatives(tuple(options))
            self.log.add(
                rule.span,
                "alternatives",
                f"{here} is {' | '.join(f'{n} ({lbl})' for n, lbl in options)} with nothing on the wire to choose",
                "needs an overlay entry",
            )
        elif (
            shape in ("prim", "array")
            and len(_plain(rule.alternatives[0])) == 1
            and self._is_type(_plain(rule.alternatives[0])[0].name)
        ):
            ref = _plain(rule.alternatives[0])[0]
            t = Prim(self._type_of(ref.name, ref.span))
            if ref.array:
                t = Array(t, count_prefix=self.array_prefix)
        elif shape == "array":
            item_nodes = node.children
            if not item_nodes:
                self.log.add(
                    rule.span,
                    "head-undefined",
                    f"{here}: the items of {node.name} are never defined",
                    "not on the wire",
                )
                return None
            item_nodes[0].head_array = False  # [Item] in `X => [Item]` is this array itself
            item = self._item_type(item_nodes[0], here)
            t = Array(item, count_prefix=self.array_prefix)
            if len(item_nodes) > 1:
                raise SpecError(item_nodes[1].rule.span, f"{here}: an array has one item type")
        else:
            members = [f for c in node.children if (f := self._field(c, here)) is not None]
            t = Struct(node.name, tuple(members))
        if node.head_array:
            if isinstance(t, Array):
                self.log.add(
                    rule.span,
                    "restated-array",
                    f"{here} is bracketed where it is named and is an array where it is defined",
                    "one array",
                )
            else:
                t = Array(t, count_prefix=self.array_prefix)
        facts = " ".join([doc, *annotations])
        values = _enum_values(facts)
        if values:
            enum_name = node.name
            self._add_enum(Enum(enum_name, values, doc, rule.span))
        if node.name == "ResponseCode" and "ResponseCode" in self.enums:
            enum_name = "ResponseCode"
        m = re.search(r"max (\d+) characters", facts)
        if m:
            max_length = int(m.group(1))
        prim = t.name if isinstance(t, Prim) else None
        nullable = (
            prim is not None
            and self.types[prim].kind != "int"
            and self.types[prim].null_length is not None
        )
        role = (
            {"CorrelationId": "correlation_id", "ResponseCode": "response_code"}.get(node.name, "")
            if path.count(".") == 0
            else ""
        )
        doc_text = (
            doc if not annotations else " ".join([doc, *(f"({a})" for a in annotations)]).strip()
        )
        return Field(
            node.name,
            t,
            doc=doc_text,
            span=rule.span,
            nullable=nullable,
            max_length=max_length,
            enum=enum_name,
            role=role,  # type: ignore[arg-type]
        )

    def _item_type(self, node: _Node, path: str) -> TypeRef:
        f = self._field(node, path)
        if f is None:
            raise SpecError(node.rule.span, f"{path}: array item {node.name} has no layout")
        return f.type


# --------------------------------------------------------------------------------------------
# Helpers


def _plain(terms: tuple[Term, ...]) -> list[Ref]:
    return [t for t in terms if isinstance(t, Ref)] + [
        r
        for t in terms
        if isinstance(t, Group)
        for alt in t.alternatives
        for r in alt
        if isinstance(r, Ref)
    ]


def _alias_target(rule: Rule) -> str | None:
    terms = _plain(rule.alternatives[0]) if len(rule.alternatives) == 1 else []
    if len(terms) == 1 and not terms[0].array and terms[0].name[0].isupper():
        return terms[0].name
    return None


def alias_name(rule: Rule) -> str:
    return _alias_target(rule) or "?"


def _rows(table: Table) -> tuple[tuple[object, ...], list[tuple]]:  # type: ignore[type-arg]
    header = table.lines[0]
    cells = [c for line in table.lines[1:] for c in line]
    width = len(header)
    if len(cells) % width:
        raise SpecError(cells[-1].span, f"{len(cells)} cells do not fill rows of {width}")
    return header, [tuple(cells[i : i + width]) for i in range(0, len(cells), width)]


def _comment_key(comment: str) -> int | None:
    """The key a Key line's comment starts with: `// 6`, `// 0x0006, to identify the command`."""
    m = re.match(r"(0x[0-9A-Fa-f]+|\d+)\b", comment)
    return int(m.group(1), 0) if m else None


def _id(text: str) -> str:
    """A title or anchor as AsciiDoc ids compare: lowercase letters and digits only."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _identifier(title: str) -> str:
    """A command name from its section title: `Exchange Command Versions` -> ExchangeCommandVersions."""
    words: list[str] = re.findall(r"[A-Za-z0-9]+", title)
    if len(words) == 1:
        return words[0]
    return "".join(w[:1].upper() + w[1:] for w in words)


def _split_marker(title: str) -> tuple[str, str]:
    """`Route (experimental)` -> ("Route", "experimental"); a title without one keeps ""."""
    m = re.fullmatch(r"(.*?)\s*\(([a-z][a-z -]*)\)", title)
    return (m.group(1), m.group(2).strip()) if m else (title, "")


def _body_marker(block: Block) -> str:
    """A paragraph that is one emphasized word (`_Experimental_`) marks the section's status."""
    if isinstance(block, Text) and block.kind == "paragraph":
        m = re.fullmatch(r"_([A-Za-z]+)_", block.text.strip())
        if m:
            return m.group(1).lower()
    return ""


def _distance(a: str, b: str) -> int:
    """Edits from a to b: a letter inserted, deleted or changed, or two neighbours swapped."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(
                d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])
            )
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[-1][-1]


def _closest(anchor: str, sections: list[_Section]) -> _Section | None:
    """The one section whose id is nearest `anchor`'s, if less than half the longer apart."""
    scored = sorted((_distance(_id(anchor), _id(s.title)), i) for i, s in enumerate(sections))
    if not scored or (len(scored) > 1 and scored[0][0] == scored[1][0]):
        return None
    d, i = scored[0]
    longest = max(len(_id(anchor)), len(_id(sections[i].title)))
    return sections[i] if 2 * d < longest else None


# `0x0006 => subscribe request`, or the same key in binary, its digits grouped by bytes
_EXAMPLE = re.compile(r"(0x[0-9A-Fa-f]+|0b[01]+(?: [01]+)*) => (\w+) (request|response)\b")


def _example_key(number: str) -> int:
    """The key an example writes in hex or in (space-grouped) binary."""
    return int(number.replace(" ", ""), 0)


def _int(text: str, span: SourceSpan) -> int:
    try:
        return int(text.strip(), 0)
    except ValueError:
        raise SpecError(span, f"{text!r} is not a number") from None


def _const_name(label: str) -> str:
    name = re.sub(r"[^A-Za-z0-9]+", "_", label).strip("_").upper()
    return name if not name[:1].isdigit() else f"V_{name}"


def _enum_values(text: str) -> tuple[EnumValue, ...]:
    """Values a comment or annotation lists: `1 (first), 2 (last)`, `0: user`, `0 = false`."""
    if "boolean" in text:
        return ()  # 0 = false, 1 = true: a flag, not an enumeration
    for pattern in (r"(\d+) \(([^)]+)\)", r"(\d+): ([a-z][a-z ]*[a-z])", r"(\d+) = ([a-z]+)"):
        found = re.findall(pattern, text)
        if len(found) >= 2:
            return tuple(EnumValue(_const_name(label), int(v), label) for v, label in found)
    return ()


def _rule_doc(rule: Rule) -> str:
    return rule.comment
