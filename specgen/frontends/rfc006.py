"""AMQ RFC 006 (AMQP/Fast 0.8, plain text with embedded ABNF) -> IR, with where its ABNF and
its prose field lists disagree reported as findings.

The document says everything twice: the "Frame Syntax" ABNF (and the field-table syntax chart)
gives every command as `name = %dNN field-rule ...`, and each command's section lists its
fields again in prose (`CONNECTION CHALLENGE` / `version  octet` ...), with a paragraph per
field. This module reads both and maps them onto the IR that the AMQP 0-9-1 front-end uses:

  * Frames: `command-size command-payload command-end`. The size is two octets, or 0xFFFF then
    four octets (`FrameLayout.length_escape`); it counts the payload and the 0xCE command-end
    octet (the Notes: "The command-end byte is included in the command-size"). The payload's
    first octet, the command code, is a header field the frame dispatches on, so a command is
    `Size, Code, fields..., CommandEnd`. The client starts with the initiation bytes
    `protocol-id protocol-version` (%d128 %d1): a preamble.
  * Every command rule of `command-payload` is a Command (one one-way Message) identified by
    its `%dNN` code, named from the rule (`connection-challenge` -> Connection.Challenge).
    Fields are the rule's items, named from their ABNF rule names (`confirm-tag` ->
    ConfirmTag). Base types: OCTET (uint8), short-integer (uint16), long-integer (uint32),
    short-string (an octet length, then UTF-8), long-string (a 2-octet length, then bytes),
    BIT (consecutive bits packed into one octet, least significant bit first, as AMQP 0-9-1
    packs them: the document says only "Bits are packed into octets").
  * Field tables: the syntax chart's `field-table`: a 2-octet byte count, then short-string
    names, each followed by a typed value: 'S' long string, 'I' signed long integer, 'D'
    decimal (a `decimals` octet, then a long integer), 'T' time (a long integer, POSIX time_t).
  * Who sends a command: its line in the class's "Command Summary" (the party that opens the
    sentence; "Either party", or a summary saying the other party also sends it, is both), and
    for handles the summary's grouping ("commands the client may send" ...).

RULES WHERE THE ABNF AND THE PROSE DISAGREE (each case is a finding naming both lines):

  1. The ABNF decides the bytes: which fields, in which order, of which wire type. The prose's
     names and paragraphs are kept as documentation.
  2. Except where the ABNF says `long-string` and the prose `field table`: the field is a field
     table. That refines the ABNF rather than contradicting it: the document says field tables
     "are long strings that contain name-value pairs" (Field Tables, line 887), and its
     `field-table = short-integer *field-value-pair` has a long string's bytes.
  3. A rule the ABNF uses but never defines (HANDLE CONSUME's `selector`) takes the type the
     command's own prose list gives it.
  4. A name the ABNF defines once but uses for two things: `out-of-band` is a short string
     (CHANNEL OPEN: the out-of-band transport) and, between `partial` and `recovery` in HANDLE
     SEND and HANDLE NOTIFY, the flag every prose list of those commands calls a bit (and the
     Message Frames section, line 1651: "four fields that control exactly how the message is
     framed"). Where a command's prose says `bit` for a field whose ABNF rule is a string, the
     prose decides: the ABNF cannot give one rule name two meanings.
  5. Repetitions that say "at least" where the prose and the Notes mean "exactly"
     (`short-integer = 2*OCTET`, `long-integer = 4*OCTET`) are read as exact widths.
  6. The frame size follows the Frames prose (line 208): two octets for 0x0..0xFFFE, else
     0xFFFF and four octets for 0xFFFF..0xFFFFFFFF; the ABNF's `long-size` (0..0xFFFFFFFE)
     would give one frame two encodings, so a wide size below 0xFFFF is refused.

Field names: the ABNF rule names. Anything that cannot be mapped raises SpecError (or the ABNF
parser's SpecSyntaxError) naming file:line:column.

Messages: after a HANDLE SEND or HANDLE NOTIFY (unless its out-of-band bit is set) the sender
writes `fragment-size` octets that are no command frame (`message = message-head /
message-fragment`; a message's first fragment starts with the message head, the body after
it). A command whose prose list ends with `[message fragment]` or `[message header]` gets
`Message.follows` (its FragmentSize counts them, OutOfBand says none); HANDLE PREPARE's list
ends with `[message header]` too, while Message Frames names only SEND and NOTIFY: a finding,
read as octets following PREPARE as well (its fragment-size is "the size of the message header
plus zero or more octets of body data"). The message head is the named structure
`message-head` (MessageHead), from its ABNF, compared with the MESSAGE prose list.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from specgen import abnf
from specgen.frontends import rfc006_flow, rfc006_lifetime
from specgen.frontends.adoc import SpecError
from specgen.frontends.bits import pack_bits
from specgen.frontends.data import NO_DATA
from specgen.frontends.rules import bind
from specgen.frontends.spec_text import read_spec_text
from specgen.ir import (
    BitField,
    Case,
    Choice,
    Command,
    Dialogue,
    Direction,
    Field,
    FindingLog,
    Follows,
    FrameLayout,
    LengthEscape,
    Map,
    Message,
    NamedType,
    Preamble,
    Prim,
    PrimitiveType,
    Protocol,
    Ref,
    SourceSpan,
    SpecRule,
    Struct,
    TypeRef,
    Versions,
    walk_fields,
)
from specgen.ir import field_name as camel

# ABNF base rules -> the prose's words for them and their IR types
BASES: dict[str, tuple[str, TypeRef]] = {
    "octet": ("octet", Prim("uint8")),
    "bit": ("bit", BitField(1, boolean=True)),
    "short-integer": ("short integer", Prim("uint16")),
    "long-integer": ("long integer", Prim("uint32")),
    "short-string": ("short string", Prim("shortstr")),
    "long-string": ("long string", Prim("longstr")),
    "field-table": ("field table", Ref("field-table")),
}
PROSE_TYPES = {words: name for name, (words, _) in BASES.items()}
# the widths rule 5 reads `n*OCTET` as
EXACT_WIDTHS = {"short-integer": 2, "long-integer": 4}

CLASSES = ("connection", "channel", "handle")


def build(
    path: Path, rel: str, protocol: str, version: str, data: Mapping[str, Path] = NO_DATA
) -> tuple[Protocol, FindingLog]:
    """The front-end entry (see specgen.frontends): read the ABNF and the prose, build the IR."""
    text = read_spec_text(path, rel)
    proto, log = _Builder(text, rel, protocol, version).run()
    return _with_dialogues(proto, log, text, rel), log


def _with_dialogues(proto: Protocol, log: FindingLog, text: str, rel: str) -> Protocol:
    """The protocol with its dialogues, one per "Command Flow Summary": the connection's read
    by `rfc006_flow`'s rules, each other class's (channel, destination) by
    `rfc006_lifetime`'s."""
    found: list[Dialogue] = []
    for summary in rfc006_flow.summaries(text.splitlines()):
        if summary.noun == "connection":
            found.append(rfc006_flow.connection(summary, rel, log))
        else:
            found.append(rfc006_lifetime.read(summary, proto.commands, rel, log))
    return replace(proto, dialogues=tuple(found)) if found else proto


def command_name(rule: str) -> str:
    """`connection-challenge` -> `Connection.Challenge`."""
    klass, _, method = rule.partition("-")
    return f"{camel(klass)}.{camel(method)}"


# --------------------------------------------------------------------------------------------
# The prose: field lists, field paragraphs, command summaries


@dataclass
class _ProseField:
    name: str
    type: str  # the prose's words: "short string", "field table"
    line: int


@dataclass
class _ProseCommand:
    name: str  # "CONNECTION CHALLENGE"
    line: int
    fields: list[_ProseField]
    docs: dict[str, str] = field(default_factory=dict)  # field name -> its paragraph
    doc_lines: dict[str, int] = field(default_factory=dict)  # field name -> its paragraph's line
    intro: str = ""  # the sentence before the list
    after: tuple[str, int] | None = None  # a closing `[message fragment]` line, and its line


_LIST_HEAD = re.compile(r"    ((?:CONNECTION|CHANNEL|HANDLE) [A-Z]+|MESSAGE)")
_LIST_FIELD = re.compile(r"        (\S.*?)\s{2,}(\S.*?)\s*")
_DOC_HEAD = re.compile(r"([a-z][a-z-]*(?: [a-z-]+)?):")


def _prose_commands(lines: list[str]) -> dict[str, _ProseCommand]:
    """Each `    CLASS METHOD` listing with its fields, the paragraphs after it, and the text
    that introduces it."""
    out: dict[str, _ProseCommand] = {}
    i = 0
    while i < len(lines):
        m = _LIST_HEAD.fullmatch(lines[i])
        if not m or not (i + 1 < len(lines) and _LIST_FIELD.fullmatch(lines[i + 1])):
            i += 1
            continue
        intro_end = i - 1
        while intro_end > 0 and not lines[intro_end].strip():
            intro_end -= 1
        intro_start = intro_end
        while intro_start > 0 and lines[intro_start - 1].strip():
            intro_start -= 1
        intro = " ".join(" ".join(lines[intro_start : intro_end + 1]).split())
        cmd = _ProseCommand(m.group(1), i + 1, [], intro=intro)
        i += 1
        while i < len(lines) and (fm := _LIST_FIELD.fullmatch(lines[i])):
            if not fm.group(1).startswith(("[", "...")):
                cmd.fields.append(_ProseField(fm.group(1), fm.group(2), i + 1))
            i += 1
        if i < len(lines) and (am := re.fullmatch(r"        \[([a-z ]+)\]", lines[i])):
            cmd.after = (am.group(1), i + 1)  # what follows the frame: `[message fragment]`
        # paragraphs "name:\n    text" until the next heading or listing
        while i < len(lines) and not _LIST_HEAD.fullmatch(lines[i]):
            if i + 1 < len(lines) and re.fullmatch(r"[-=.*]{3,}", lines[i + 1]):
                break
            dm = _DOC_HEAD.fullmatch(lines[i])
            if dm:
                body: list[str] = []
                i += 1
                while i < len(lines) and lines[i].startswith("    "):
                    body.append(lines[i].strip())
                    i += 1
                cmd.docs.setdefault(dm.group(1), " ".join(body))
                cmd.doc_lines.setdefault(dm.group(1), i - len(body))
                continue
            i += 1
        out.setdefault(cmd.name, cmd)
    return out


def _sections(lines: list[str]) -> list[tuple[str, int, int]]:
    """(title, first line, last line) of every underlined heading, 1-based."""
    heads = [
        (lines[i], i + 1)
        for i in range(len(lines) - 1)
        if lines[i].strip()
        and re.fullmatch(r"[-=.*]{3,}", lines[i + 1])
        and len(lines[i + 1]) == len(lines[i])
    ]
    return [
        (title, line, (heads[k + 1][1] - 1 if k + 1 < len(heads) else len(lines)))
        for k, (title, line) in enumerate(heads)
    ]


@dataclass
class _Summary:
    line: int
    text: str
    group: Direction | None  # the handle summary's grouping, when there is one


def _summaries(lines: list[str]) -> dict[str, _Summary]:
    """`CLASS METHOD:` entries of the "... Command Summary" sections."""
    out: dict[str, _Summary] = {}
    for title, first, last in _sections(lines):
        if not title.endswith("Command Summary"):
            continue
        group: Direction | None = None
        i = first + 1
        while i < last:
            text = lines[i - 1]
            if text.startswith("These are"):
                group = (
                    "both"
                    if "either party" in text
                    else "client"
                    if "client may send" in text
                    else "server"
                    if "server may send" in text
                    else None
                )
            m = re.fullmatch(r"((?:CONNECTION|CHANNEL|HANDLE) [A-Z]+):", text)
            if m:
                body: list[str] = []
                j = i + 1
                while j <= last and lines[j - 1].startswith("    "):
                    body.append(lines[j - 1].strip())
                    j += 1
                out[m.group(1)] = _Summary(i, " ".join(body), group)
                i = j
                continue
            i += 1
    return out


def _sender_of(name: str, summary: _Summary) -> Direction | None:
    """Who sends `name`, as its summary sentence says."""
    text = re.sub(r"^The (client|server)", lambda m: m.group(1).capitalize(), summary.text)
    if re.match(r"(Either party|Server or client|Client or server)", text) or re.search(
        r"(client|server) asks (client|server)\b.*, or (server|client) asks", text, re.I
    ):
        return "both"
    first: Direction | None = (
        "client" if text.startswith("Client") else "server" if text.startswith("Server") else None
    )
    if first is None:
        return None
    other = "Server" if first == "client" else "Client"
    # "Client replies with zero or more CONNECTION TUNE commands": the other party sends it too
    for sentence in re.split(r"(?<=\.)\s+", text):
        if sentence.startswith(other) and name in sentence:
            return "both"
    return first


# --------------------------------------------------------------------------------------------
# The builder


class _Builder:
    def __init__(self, text: str, rel: str, protocol: str, version: str) -> None:
        self.text = text
        self.rel = rel
        self.protocol = protocol
        self.version = version
        self.lines = text.splitlines()
        self.log = FindingLog()
        self.rules: dict[str, abnf.Rule] = {}
        self.spec_rules: list[SpecRule] = []  # what the prose says values and senders must be

    def span(self, line: int, column: int = 1) -> SourceSpan:
        return SourceSpan(self.rel, line, column)

    def run(self) -> tuple[Protocol, FindingLog]:
        parsed: list[abnf.Rule] = []
        for block in abnf.find_blocks(self.text, self.rel, "indented"):
            # the document's ABNF has known slips (a dangling '/', single-quoted strings): read
            # past them, each a finding
            read = abnf.parse_rules_lenient(block.text, self.rel, block.line, block.column)
            parsed.extend(read.rules)
            for d in read.defects:
                self.log.add(d.span, "abnf-syntax", d.message, "read as the parser says")
        self.rules = abnf.merged(parsed)
        for needed in ("command", "command-payload", "command-end", "initiation", "field-table"):
            if needed not in self.rules:
                raise SpecError(self.span(1), f"the ABNF defines no {needed!r} rule")
        self.prose = _prose_commands(self.lines)
        self.summaries = _summaries(self.lines)
        self.service_types = self._service_types()
        self._check_bases()
        commands = [self._command(name) for name in self._payload_rules()]
        head = self._message_head()
        self._plain_example()
        frame = self._frame()
        types = self._types()
        named = (*self._field_table(), head)
        protocol = Protocol(
            name=self.protocol,
            version=self.version,
            source=self.rel,
            types=types,
            frame=frame,
            enums=(),
            constants=(),
            commands=tuple(commands),
            named=named,
            rules=tuple(self.spec_rules),
        )
        return protocol, self.log

    # ---- rules

    def _service_types(self) -> list[tuple[int, str, int]]:
        """The "AMQP Service Types" list: (value, its words, line) of each `%dNN:` entry."""
        start = self._line_of("The valid service types are:")
        out: list[tuple[int, str, int]] = []
        i = start  # 1-based line of the sentence = 0-based index of the line after it
        while start > 1 and i < len(self.lines):
            m = re.fullmatch(r"%d(\d+):", self.lines[i].strip())
            if m and i + 1 < len(self.lines):
                out.append((int(m.group(1)), self.lines[i + 1].strip(), i + 1))
            elif self.lines[i].strip() and not self.lines[i].startswith("    ") and out:
                break  # the paragraph after the list
            i += 1
        return out

    def _field_rules(self, prose: _ProseCommand) -> list[SpecRule]:
        """What each field's paragraph says its values must be, owner left for `bind`: a range
        ("A value from 0 to 9"), a bound ("must be greater than zero"), the service types,
        reply codes (another RFC's: words only), and any other MUST in words."""
        out: list[SpecRule] = []
        for name, words in prose.docs.items():
            span = self.span(prose.doc_lines.get(name, prose.line))
            field = camel(name)
            said = f"{name}: {words}"
            if m := re.search(r"[Aa] value from (\d+) to (\d+)", words):
                low, high = int(m.group(1)), int(m.group(2))
                out.append(SpecRule("range", "", field, span, low=low, high=high, prose=said))
            elif m := re.search(r"must be greater than (zero|\d+)", words):
                bound = 0 if m.group(1) == "zero" else int(m.group(1))
                out.append(SpecRule("gt", "", field, span, value=bound, prose=said))
            elif name == "service-type" and self.service_types:
                either = re.search(r"either (\w+) or (\w+)", words)
                allowed = [
                    (value, text)
                    for value, text, _ in self.service_types
                    if either is None or text.split()[0].lower() in either.groups()
                ]
                listed = ", ".join(f"{v} ({t.split('.')[0]})" for v, t in allowed)
                where = self.span(self.service_types[0][2])
                out.append(
                    SpecRule(
                        "choice",
                        "",
                        field,
                        span if either else where,
                        values=tuple(v for v, _ in allowed),
                        via="AMQP Service Types",
                        prose=f"{said} ({listed})",
                    )
                )
            elif name == "reply-code":
                # the codes are AMQ RFC 011's, which this document does not list
                out.append(SpecRule("response-code", "", field, span, checkable=False, prose=said))
            elif re.search(r"\bmust\b", words, re.I):
                out.append(SpecRule("prose", "", field, span, checkable=False, prose=said))
        return out

    # ---- ABNF helpers

    def rule(self, name: str, where: SourceSpan) -> abnf.Rule:
        r = self.rules.get(name.lower())
        if r is None:
            raise SpecError(where, f"the ABNF uses {name!r} but never defines it")
        return r

    def _num(self, expr: abnf.Expr, where: SourceSpan) -> int:
        if isinstance(expr, abnf.NumVal) and len(expr.values) == 1:
            return expr.values[0]
        raise SpecError(where, f"expected one %-number, found {expr!r}")

    def _payload_rules(self) -> list[str]:
        payload = self.rules["command-payload"]
        expr = payload.expr
        options = expr.options if isinstance(expr, abnf.Alt) else (expr,)
        names: list[str] = []
        for o in options:
            if not isinstance(o, abnf.RuleRef):
                raise SpecError(payload.span, f"command-payload: {o!r} is no rule name")
            names.append(o.name.lower())
        return names

    def _check_bases(self) -> None:
        """Rule 5: `n*OCTET` read as exactly n octets, each such rule a finding."""
        for name, width in EXACT_WIDTHS.items():
            r = self.rules.get(name)
            if r is None:
                continue
            e = r.expr
            if (
                isinstance(e, abnf.Repeat)
                and isinstance(e.expr, abnf.RuleRef)
                and e.expr.name.upper() == "OCTET"
                and e.low == width
                and e.high != width
            ):
                self.log.add(
                    r.span,
                    "abnf-repeat",
                    f"{name} = {width}*OCTET says {width} or more octets; the prose's "
                    f"{BASES[name][0]}s and the Notes' network-order integers are {width} octets",
                    f"exactly {width} octets (rule 5)",
                )

    def _base(self, name: str, where: SourceSpan) -> str:
        """The base rule a field rule resolves to (a key of BASES)."""
        seen = name.lower()
        for _ in range(16):
            if seen in BASES:
                return seen
            r = self.rules.get(seen)
            if r is None:
                raise SpecError(where, f"the ABNF uses {seen!r} but never defines it")
            if isinstance(r.expr, abnf.RuleRef):
                seen = r.expr.name.lower()
                continue
            raise SpecError(r.span, f"{r.name}: not one of the base types {', '.join(BASES)}")
        raise SpecError(where, f"{name}: the rule chain does not end")

    # ---- commands

    def _command(self, rule_name: str) -> Command:
        r = self.rule(rule_name, self.rules["command-payload"].span)
        expr = r.expr
        items = expr.items if isinstance(expr, abnf.Seq) else (expr,)
        code = self._num(items[0], r.span)
        prose_name = rule_name.replace("-", " ").upper()
        prose = self.prose.get(prose_name)
        if prose is None:
            raise SpecError(r.span, f"{rule_name}: no {prose_name} field list in the prose")
        fields = self._fields(rule_name, r, items[1:], prose)
        summary = self.summaries.get(prose_name)
        sender = self._sender(prose_name, summary, r.span)
        doc = " ".join(x for x in (summary.text if summary else "", prose.intro) if x)
        doc = re.sub(r":$", ".", doc)
        name = command_name(rule_name)
        packed = self._pack(fields)
        message = Message(
            name=name.replace(".", ""),
            kind="oneway",
            ident=(code,),
            versions=Versions(1, 1),
            fields=packed,
            doc=doc,
            span=r.span,
            sender=sender,
            follows=self._follows(prose, packed, r.span),
        )
        owner = f"message:{message.name}"
        self.spec_rules.extend(bind(self._field_rules(prose), owner, message.fields))
        if sender != "both" and summary is not None:
            self.spec_rules.append(
                SpecRule(
                    "sender",
                    owner,
                    None,
                    self.span(summary.line),
                    value=sender,
                    prose=f"{prose_name}: {summary.text}",
                )
            )
        return Command(
            name=name,
            ident=(code,),
            sender=sender,
            messages=(message,),
            doc=doc,
            span=r.span,
        )

    def _fields(
        self, rule_name: str, r: abnf.Rule, items: tuple[abnf.Expr, ...], prose: _ProseCommand
    ) -> list[tuple[str, TypeRef, SourceSpan, str]]:
        """The rule's field items against the prose list: (name, type, span, doc) in ABNF order,
        each disagreement a finding."""
        fields: list[tuple[str, TypeRef, SourceSpan, str]] = []
        prose_fields = list(prose.fields)
        for k, item in enumerate(items):
            if not isinstance(item, abnf.RuleRef):
                raise SpecError(r.span, f"{rule_name}: field {k + 1} is no rule name ({item!r})")
            fname = item.name.lower()
            pf = prose_fields[k] if k < len(prose_fields) else None
            base = self._field_base(rule_name, r, fname, pf, prose)
            doc = prose.docs.get(fname) or (pf and prose.docs.get(pf.name)) or ""
            own = self.rules.get(fname)
            fields.append((fname, BASES[base][1], own.span if own else r.span, doc))
            self._compare_field(rule_name, r, fname, base, pf, prose)
        for pf in prose_fields[len(items) :]:
            self.log.add(
                self.span(pf.line, 9),
                "prose-extra-field",
                f"{prose.name}: the prose lists {pf.name} ({pf.type}), the ABNF "
                f"(line {r.span.line}) has no such field",
                "the ABNF: not on the wire (rule 1)",
            )
        names = {pf.name for pf in prose_fields} | {n for n, _, _, _ in fields}
        for doc_name, line in prose.doc_lines.items():
            if doc_name not in names:
                self.log.add(
                    self.span(line),
                    "field-doc-name",
                    f"{prose.name}: the paragraph {doc_name!r} names no field of the list "
                    f"(line {prose.line}: {', '.join(pf.name for pf in prose_fields)})",
                    "kept out of the fields' docs",
                )
        return fields

    def _message_head(self) -> NamedType:
        """The message head (the start of a message's first fragment, after HANDLE SEND,
        NOTIFY or PREPARE) from its ABNF, against the Message Header prose: a named structure,
        the layout `Follows` points at."""
        head = self.rules.get("message-head")
        prose = self.prose.get("MESSAGE")
        if head is None or prose is None:
            raise SpecError(self.span(1), "no message-head rule or MESSAGE field list")
        items = head.expr.items if isinstance(head.expr, abnf.Seq) else (head.expr,)
        fields = self._pack(self._fields("message-head", head, items, prose))
        self.spec_rules.extend(bind(self._field_rules(prose), "named:message-head", fields))
        block = self._line_of("The message has two sections, a header block and a body block")
        return NamedType(
            "message-head",
            Struct("MessageHead", fields),
            doc="The message head: the header block that starts a message's first fragment, "
            "before the body block (Message Header, line "
            f"{block}). {prose.intro}".rstrip(":")
            + ".",
            span=head.span,
        )

    def _follows(
        self, prose: _ProseCommand, fields: tuple[Field, ...], where: SourceSpan
    ) -> Follows | None:
        """The octets after the frame: a prose list that ends with `[message fragment]` (HANDLE
        SEND, NOTIFY) or `[message header]` (HANDLE PREPARE) is followed by `fragment-size`
        octets (Message Frames: "The fragment-size field is the size of the message frame that
        follows"), none when its out-of-band bit is set."""
        if prose.after is None:
            return None
        what, line = prose.after
        if what not in ("message fragment", "message header"):
            raise SpecError(self.span(line, 9), f"{prose.name}: [{what}] is no message data")
        count = camel("fragment-size")
        if count not in {f.name for f in fields}:
            raise SpecError(
                where, f"{prose.name}: [{what}] follows, but no fragment-size says how long"
            )
        flag = next((f for _, f in walk_fields(fields) if f.name == camel("out-of-band")), None)
        unless = flag.name if flag is not None and isinstance(flag.type, BitField) else None
        # Message Frames: "The partial field indicates whether the message is split into
        # fragments; it will be zero ... on the last fragment of a message"
        part = next((f for _, f in walk_fields(fields) if f.name == camel("partial")), None)
        more = part.name if part is not None and isinstance(part.type, BitField) else None
        frames = self._line_of("Messages come after specific commands")
        named = " ".join(" ".join(self.lines[frames - 1 : frames + 1]).split())
        if prose.name not in named:
            self.log.add(
                self.span(line, 9),
                "message-commands",
                f"{prose.name} ends with [{what}] and its fragment-size is 'the amount of data "
                f"provided after the frame', but Message Frames (line {frames}) names only "
                "HANDLE SEND and HANDLE NOTIFY as commands messages come after",
                f"{camel('fragment-size')} octets follow {prose.name} too",
            )
        doc = prose.docs.get("fragment-size", "")
        return Follows(count, unless, "message-head", doc=f"[{what}] {doc}".strip(), more=more)

    def _plain_example(self) -> None:
        """The PLAIN field-table example writes its octets `%0d %28d`: the number before the
        base, the reverse of ABNF's `%d0 %d28`; and it calls the answer a CHALLENGE RESPONSE."""
        for i, line in enumerate(self.lines):
            m = re.search(r"%(\d+)d\b", line)
            if m and line.startswith("    "):
                self.log.add(
                    self.span(i + 1, m.start() + 1),
                    "example-notation",
                    f"the example writes {m.group(0)!r}: ABNF spells a decimal octet "
                    f"%d{m.group(1)}",
                    "read as decimal octets (the PLAIN golden vector)",
                )
            m = re.search(r"\bCHALLENGE RESPONSE\b", line)
            if m:
                self.log.add(
                    self.span(i + 1, m.start() + 1),
                    "command-name",
                    "the text names a CHALLENGE RESPONSE, a command the document does not "
                    "define; the client's answer to CONNECTION CHALLENGE is CONNECTION RESPONSE",
                    "CONNECTION RESPONSE",
                )

    def _field_base(
        self,
        rule_name: str,
        r: abnf.Rule,
        fname: str,
        pf: _ProseField | None,
        prose: _ProseCommand,
    ) -> str:
        """The base type of one field, by the rules in the module docstring."""
        prose_base = PROSE_TYPES.get(pf.type) if pf is not None else None
        if fname not in self.rules and fname not in BASES:
            if prose_base is None or pf is None:
                raise SpecError(
                    r.span,
                    f"{rule_name}: {fname!r} is defined neither in the ABNF nor in the prose",
                )
            self.log.add(
                r.span,
                "abnf-undefined",
                f"{rule_name} uses {fname!r}, which the ABNF never defines; the prose "
                f"(line {pf.line}) says {pf.type}",
                f"the prose's {pf.type} (rule 3)",
            )
            return prose_base
        base = self._base(fname, r.span)
        if pf is None:
            return base
        if base == "long-string" and prose_base == "field-table":
            return "field-table"  # rule 2, reported by _compare_field
        if prose_base == "bit" and base in ("short-string", "long-string"):
            return "bit"  # rule 4, reported by _compare_field
        return base

    def _compare_field(
        self,
        rule_name: str,
        r: abnf.Rule,
        fname: str,
        base: str,
        pf: _ProseField | None,
        prose: _ProseCommand,
    ) -> None:
        if pf is None:
            self.log.add(
                r.span,
                "abnf-extra-field",
                f"{rule_name}: the ABNF has {fname!r}, the prose list ({prose.name}, line "
                f"{prose.line}) does not",
                "the ABNF: on the wire (rule 1)",
            )
            return
        where = self.span(pf.line, 9)
        defined = self._base(fname, r.span) if fname in self.rules or fname in BASES else None
        if pf.name != fname:
            self.log.add(
                where,
                "field-name",
                f"{prose.name}: the prose names field {pf.name!r} where the ABNF "
                f"(line {r.span.line}) has {fname!r}",
                f"the ABNF's name ({camel(fname)}, rule 1)",
            )
        prose_base = PROSE_TYPES.get(pf.type)
        if prose_base is None:
            self.log.add(
                where,
                "prose-type",
                f"{prose.name}.{pf.name}: the prose type {pf.type!r} is no type of the document",
                f"the ABNF's {BASES[base][0]} (rule 1)",
            )
            return
        if defined is None or prose_base == defined:
            return
        rule = self.rules.get(fname)
        line = rule.span.line if rule else r.span.line
        if base == "field-table" and defined == "long-string":
            code, resolution = "long-string-is-table", "a field table (rule 2, line 887)"
        elif base == "bit":
            code, resolution = "rule-name-clash", "the prose's bit (rule 4)"
        else:
            code, resolution = "field-type", f"the ABNF's {BASES[base][0]} (rule 1)"
        self.log.add(
            where,
            code,
            f"{prose.name}.{fname}: the ABNF (line {line}) says {defined}, the prose "
            f"(line {pf.line}) {pf.type}",
            resolution,
        )

    def _sender(self, name: str, summary: _Summary | None, where: SourceSpan) -> Direction:
        if summary is None:
            raise SpecError(where, f"{name} has no line in a Command Summary")
        said = _sender_of(name, summary)
        if said is None and summary.group is None:
            raise SpecError(self.span(summary.line), f"{name}: the summary names no sender")
        if said is not None and summary.group is not None and said != summary.group:
            self.log.add(
                self.span(summary.line),
                "sender",
                f"{name}: the summary's grouping says {summary.group}, its sentence "
                f"({summary.text!r}) {said}",
                "both (either party may send it)",
            )
            return "both"
        result = summary.group or said
        assert result is not None
        return result

    def _pack(self, fields: list[tuple[str, TypeRef, SourceSpan, str]]) -> tuple[Field, ...]:
        """Fields in order; consecutive bits packed into octets, least significant bit first."""
        return pack_bits(
            (Field(camel(name), t, doc=doc, span=span), isinstance(t, BitField))
            for name, t, span, doc in fields
        )

    # ---- frame, types, field tables

    def _frame(self) -> FrameLayout:
        end_rule = self.rules["command-end"]
        end = self._num(end_rule.expr, end_rule.span)
        init = self.rules["initiation"]
        init_items = init.expr.items if isinstance(init.expr, abnf.Seq) else (init.expr,)
        data = bytes(
            self._num(self.rule(i.name, init.span).expr, init.span)
            for i in init_items
            if isinstance(i, abnf.RuleRef)
        )
        size = self.rule("command-size", self.rules["command"].span)
        self._check_sizes(size)
        frames_prose = self._line_of("A frame always starts with a header")
        return FrameLayout(
            header=(
                Field(
                    "Size",
                    Prim("uint16"),
                    doc="command-size: the bytes that follow the size, the command-end octet "
                    "included; 0xFFFF says a four-octet size follows instead.",
                    span=size.span,
                ),
                Field(
                    "Code",
                    Prim("uint8"),
                    doc="The command code, the first octet of command-payload (the header's "
                    "`Code`: the messages' COMMAND is their name).",
                    span=self.rules["command-payload"].span,
                ),
            ),
            length="Size",
            length_counts="after",
            dispatch=("Code",),
            trailer=(
                Field(
                    "CommandEnd",
                    Prim("uint8"),
                    doc="command-end: the octet that closes every command frame.",
                    span=end_rule.span,
                    default=end,
                ),
            ),
            preambles=(
                Preamble(
                    "client",
                    data,
                    doc="Connection initiation: protocol-id (128, AMQP/Fast) then "
                    "protocol-version (the client's highest, 1).",
                ),
            ),
            length_escape=LengthEscape(0xFFFF, "uint32"),
            span=self.span(frames_prose),
        )

    def _line_of(self, text: str) -> int:
        return next((i + 1 for i, ln in enumerate(self.lines) if text in ln), 1)

    def _check_sizes(self, size: abnf.Rule) -> None:
        """Rule 6: the long-size range of the ABNF against the Frames prose."""
        long_size = self.rules.get("long-size")
        if long_size is None:
            raise SpecError(size.span, "the ABNF defines no long-size")
        e = long_size.expr
        items = e.items if isinstance(e, abnf.Seq) else (e,)
        rng = next((i for i in items if isinstance(i, abnf.NumRange)), None)
        prose = self._line_of("holding a size 0xFFFF to 0xFFFFFFFF")
        if rng is not None and (rng.low, rng.high) != (0xFFFF, 0xFFFFFFFF):
            self.log.add(
                long_size.span,
                "frame-size",
                f"long-size allows {rng.low:#x}..{rng.high:#x} after 0xFFFF, the Frames prose "
                f"(line {prose}) 0xFFFF..0xFFFFFFFF",
                "the prose (rule 6): sizes below 0xFFFF are written short, one encoding each",
            )

    def _types(self) -> tuple[PrimitiveType, ...]:
        def span_of(name: str) -> SourceSpan | None:
            r = self.rules.get(name)
            return r.span if r else None

        return (
            PrimitiveType(
                "shortstr",
                "string",
                length_prefix="uint8",
                encoding="utf-8",
                errors="surrogateescape",
                doc="short-string: an octet length, then that many octets of UTF-8 (the Notes: "
                "ANSI-C compatible, no binary zero).",
                span=span_of("short-string"),
            ),
            PrimitiveType(
                "longstr",
                "bytes",
                length_prefix="uint16",
                doc="long-string: a two-octet length in network order, then that many octets "
                "(binary-safe).",
                span=span_of("long-string"),
            ),
            PrimitiveType(
                "longstr-text",
                "string",
                length_prefix="uint16",
                encoding="utf-8",
                errors="surrogateescape",
                doc="Field-table string value ('S'): a long string; bytes that are no UTF-8 are "
                "kept (surrogateescape), so any value encodes back to its bytes.",
                span=span_of("field-value"),
            ),
            PrimitiveType(
                "decimal",
                "decimal",
                width=5,
                doc="Field-table decimal value ('D'): the unsigned `decimals` octet, then a "
                "signed long integer.",
                span=span_of("decimal-value"),
            ),
        )

    def _field_table(self) -> tuple[NamedType, ...]:
        table = self.rules["field-table"]
        value = self.rule("field-value", table.span)
        options = value.expr.options if isinstance(value.expr, abnf.Alt) else (value.expr,)
        layouts: dict[str, TypeRef] = {
            "long-string": Prim("longstr-text"),
            "decimal-value": Prim("decimal"),
        }
        labels = {"S": "string", "I": "integer", "D": "decimal", "T": "time"}
        cases: list[Case] = []
        for o in options:
            items = o.items if isinstance(o, abnf.Seq) else ()
            if len(items) != 2 or not isinstance(items[0], abnf.CharVal):
                raise SpecError(value.span, f"field-value: {o!r} is not 'tag' then a value")
            tag = items[0].text
            what = items[1]
            if not isinstance(what, abnf.RuleRef) or len(tag) != 1:
                raise SpecError(value.span, f"field-value: {o!r} is not 'tag' then a value")
            rule = what.name.lower()
            if rule == "long-integer":
                # the Notes: "Integer values are signed"; a time is a POSIX time_t
                t: TypeRef = Prim("int32" if tag == "I" else "uint32")
            elif rule in layouts:
                t = layouts[rule]
            else:
                raise SpecError(value.span, f"field-value {tag!r}: no layout for {rule!r}")
            cases.append(Case((ord(tag),), t, f"{tag} {labels.get(tag, rule)}"))
        return (
            NamedType(
                "field-table",
                Map(key=Prim("shortstr"), value=Ref("field-value"), size_prefix="uint16"),
                doc="A field table: a two-octet byte count, then name-value pairs, each a "
                "short-string name and a typed value (a long string's bytes, line 887). If a "
                "field occurs more than once only the first instance should be used.",
                span=table.span,
            ),
            NamedType(
                "field-value",
                Choice("uint8", tuple(cases), prefer=tuple(ord(c) for c in "SIDT")),
                doc="A field-table value: a type octet ('S', 'I', 'D' or 'T'), then the value.",
                span=value.span,
            ),
        )
