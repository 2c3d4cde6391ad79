"""AMQ RFC 006's "Command Flow Summary" sections (prose) -> the IR's dialogues.

The document has three, one per class of commands; `summaries` finds them and their
paragraphs, this module reads the connection's (below) and `rfc006_lifetime` the channel's and
the destination's, which describe a lifetime rather than an order; `rfc006.build` asks each.

RFC 006 states its connection dialogue not as ABNF but as two lists, one per role: "The client
must expect and respond to the connection commands as follows", then per command a paragraph
("CONNECTION TUNE: Expect after sending CONNECTION RESPONSE. Respond with CONNECTION TUNE.").
Each heading names a command the listing role *receives*, so the other role sends it. This
module reads every sentence by one of the rules below into a graph of steps and writes the
graph as the shared ABNF AST (Step/Seq/Alt/Repeat), so the same checker is generated as for
the grammars AMQP writes in ABNF (`specgen.dialogue`, `specgen.emitters.dialogue`).

The rules, for a paragraph of role E (who receives) about command Y (so step O:Y, O the other
role):

* "Never expected." -- O never sends Y: no step O:Y exists, so the checker refuses it. A
  sentence that would still order O:Y is a `flow-never` finding and orders nothing: the
  receiver's list decides (as in `rfc006_lifetime`; this summary has none).
* "Expect after sending X." / "Expect this after sending the 2-byte connection initiation
  sequence." / "Expect also after sending X." -- O:Y may follow E:X. The initiation sequence
  is the step `C:protocol-header`, the name AMQP's grammars give the bytes that open a
  connection; it starts every conversation.
* "Expect after a CONNECTION X." (no sender named) -- the X is one E receives, as every
  heading of E's list is: O:Y may follow O:X (the server expects OPEN after the client's TUNE).
* "Respond with Z." / "Respond by sending Z." / "Respond with Z (if ...) or W (if ...)." /
  "Respond with Z if ..." -- E:Z (or E:W) may follow O:Y. A conditional response is no more
  than allowed: every prefix of the flow may be followed by the close (next rule).
* "Expect at any time." -- O:Y may stand anywhere after the initiation: PING (both roles) is a
  `*ping` after every step. CLOSE, whose paragraph answers "Respond by releasing all resources
  and sending CONNECTION CLOSE", ends the conversation with the pair O:CLOSE E:CLOSE
  (`close-connection`); since it may come at any time, any prefix of the flow may precede it.
* "If ... not understood, respond with CONNECTION CLOSE." and "If ..., no response, else
  respond with CONNECTION CLOSE." -- covered by CLOSE at any time; no further step.
* "Respond by closing the connection (fatal error)." and the "Physical connection close"
  paragraph -- no command, so no step: a conversation may stop anywhere, which the checker
  calls incomplete, and a never-expected command breaks it.

The conversation is then `connection = <every path of the step graph from the initiation, each
step followed by *ping> close-connection`, the paths written as one expression by eliminating
the graph's states (Kleene's construction). Every sentence no rule reads is a finding
(`flow-unread`) at its line; so is a step the graph cannot reach (`flow-unreachable`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import assert_never

from specgen.abnf import (
    Alt,
    CharVal,
    Expr,
    NumRange,
    NumVal,
    ProseVal,
    Repeat,
    Rule,
    RuleRef,
    Seq,
    Step,
)
from specgen.frontends.adoc import SpecError
from specgen.ir import Dialogue, FindingLog, SourceSpan

HEADER = "protocol-header"  # the 2-byte connection initiation sequence, as a step

_HEADING = re.compile(r"([A-Z]+ [A-Z]+|Physical connection close):\s*$")
_ROLE = re.compile(r"The (client|server) must expect and respond to the (\w+) commands")

# (pattern, kind); the groups name commands without their class word
_SENTENCES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"Never expected\."), "never"),
    (re.compile(r"Respond by closing the connection \(fatal error\)\."), "none"),
    (
        re.compile(
            r"Expect (?:this |also )*after sending the 2-byte connection initiation sequence\."
        ),
        "after-header",
    ),
    (
        re.compile(r"Expect (?:this |also )*after sending (?:a )?CONNECTION ([A-Z]+)\."),
        "after-sending",
    ),
    (re.compile(r"Expect after a CONNECTION ([A-Z]+)\."), "after-received"),
    (re.compile(r"Expect at any time\."), "any-time"),
    (
        re.compile(
            r"Respond (?:with|by sending) (?:a )?CONNECTION ([A-Z]+)(?: \([^)]*\))?"
            r"(?: or CONNECTION ([A-Z]+)(?: \([^)]*\))?)?(?: if [^.]*)?\."
        ),
        "respond",
    ),
    (re.compile(r"Respond by releasing all resources and sending CONNECTION ([A-Z]+)\."), "close"),
    (re.compile(r"If [^.]* not understood, respond with CONNECTION CLOSE\."), "none"),
    (re.compile(r"If [^.]*, no response, else respond with CONNECTION CLOSE\."), "none"),
    (
        re.compile(
            r"Respond by releasing all \(remaining\) resources and closing the connection\."
        ),
        "none",
    ),
]


@dataclass
class Paragraph:
    """One entry of a role's list: what `role` does on receiving `heading`'s command."""

    role: str  # "C" or "S": the role whose list it is, who receives the command
    heading: str  # "CHANNEL OPEN", or "Physical connection close"
    line: int
    body: list[tuple[str, int]]  # its lines, stripped, with their line numbers


@dataclass
class Summary:
    """One "Command Flow Summary" section: both roles' lists for one class of commands."""

    noun: str  # what the lists call the class: "connection", "channel", "destination"
    line: int  # the section heading's line
    paragraphs: list[Paragraph]


@dataclass
class _Flow:
    edges: list[tuple[Step, Step, int]]  # (from, to, line)
    any_time: list[tuple[Step, int]]
    closes: list[tuple[Step, Step, int]]  # (O:CLOSE, E:CLOSE, line)
    never: list[tuple[Step, int]]
    heading: int  # the summary's heading line


def read(text: str, rel: str, log: FindingLog) -> Dialogue | None:
    """The connection dialogue of the document's connection Command Flow Summary, or None
    when it has none."""
    for summary in summaries(text.splitlines()):
        if summary.noun == "connection":
            return connection(summary, rel, log)
    return None


def connection(summary: Summary, rel: str, log: FindingLog) -> Dialogue:
    """The dialogue of the connection's summary, by this module's rules."""
    return _dialogue(_flow(summary, rel, log), rel, log)


def summaries(lines: list[str]) -> list[Summary]:
    """Every "Command Flow Summary" section (a heading followed within a few lines by "The
    client/server must expect and respond to the X commands"), with its paragraphs."""
    out: list[Summary] = []
    for at, ln in enumerate(lines):
        if ln.strip() != "Command Flow Summary":
            continue
        first = next((m for x in lines[at + 1 : at + 6] if (m := _ROLE.match(x.strip()))), None)
        if first is None:
            continue
        summary = Summary(first.group(2), at + 1, [])
        role: str | None = None
        i = at + 2
        while i < len(lines):
            ln = lines[i]
            if i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"} and ln.strip():
                break  # the next section
            m = _ROLE.match(ln.strip())
            if m:
                role = "C" if m.group(1) == "client" else "S"
                i += 1
                continue
            h = _HEADING.match(ln)
            if h is None or role is None:
                i += 1
                continue
            body: list[tuple[str, int]] = []
            j = i + 1
            while j < len(lines) and lines[j].startswith("    "):
                body.append((lines[j].strip(), j + 1))
                j += 1
            summary.paragraphs.append(Paragraph(role, h.group(1), i + 1, body))
            i = j
        out.append(summary)
    return out


def _flow(summary: Summary, rel: str, log: FindingLog) -> _Flow:
    flow = _Flow([], [], [], [], summary.line)
    for p in summary.paragraphs:
        _paragraph(flow, p.role, p.heading, p.body, rel, log)
    if not flow.edges:
        raise SpecError(
            SourceSpan(rel, summary.line, 1), "the Command Flow Summary orders no command"
        )
    return flow


def sentences(body: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """The paragraph's sentences, each with the line it starts on."""
    text = ""
    starts: list[tuple[int, int]] = []  # (offset in text, line)
    for part, line in body:
        starts.append((len(text), line))
        text += part + " "
    out = []
    for m in re.finditer(r"\S.*?\.(?=\s|$)", text):
        line = max((ln for off, ln in starts if off <= m.start()), default=body[0][1])
        out.append((m.group(0), line))
    return out


def _paragraph(
    flow: _Flow, role: str, heading: str, body: list[tuple[str, int]], rel: str, log: FindingLog
) -> None:
    other = "S" if role == "C" else "C"
    command = heading.split()[1] if heading.startswith("CONNECTION ") else None
    for sentence, line in sentences(body):
        kind, groups = next(
            ((k, m.groups()) for p, k in _SENTENCES if (m := p.fullmatch(sentence))), ("", ())
        )
        if command is None and kind in ("any-time", "none"):
            continue  # the physical close: no command, no step
        if not kind or command is None:
            log.add(
                SourceSpan(rel, line, 5),
                "flow-unread",
                f"{heading}: {sentence!r} matches no rule of the flow reader",
                "ignored (see specgen.frontends.rfc006_flow)",
            )
            continue
        y = Step(other, command)
        if kind == "never":
            flow.never.append((y, line))
        elif kind == "after-header":
            flow.edges.append((Step(role, HEADER), y, line))
        elif kind == "after-sending":
            flow.edges.append((Step(role, groups[0]), y, line))
        elif kind == "after-received":
            flow.edges.append((Step(other, groups[0]), y, line))
        elif kind == "any-time":
            flow.any_time.append((y, line))
        elif kind == "respond":
            for z in groups:
                if z is not None:
                    flow.edges.append((y, Step(role, z), line))
        elif kind == "close":
            flow.closes.append((y, Step(role, groups[0]), line))


# --------------------------------------------------------------------------------------------
# Graph -> expression (state elimination), with ε kept apart from the AST until the end

_Eps = tuple[()]
_R = Expr | _Eps | None  # None: no path; (): the empty word
EPS: _Eps = ()


def _cat(a: _R, b: _R) -> _R:
    if a is None or b is None:
        return None
    if a == EPS:
        return b
    if b == EPS:
        return a
    assert not isinstance(a, tuple) and not isinstance(b, tuple)
    items = (*(a.items if isinstance(a, Seq) else (a,)), *(b.items if isinstance(b, Seq) else (b,)))
    return Seq(items)


def _alt(a: _R, b: _R) -> _R:
    if a is None:
        return b
    if b is None or a == b:
        return a
    options: list[Expr | _Eps] = []
    for x in (a, b):
        for o in _opts(x):
            if o not in options:
                options.append(o)
    return _pack(options)


def _opts(x: Expr | _Eps) -> list[Expr | _Eps]:
    if x == EPS:
        return [EPS]
    assert not isinstance(x, tuple)
    if isinstance(x, Alt):
        return list(x.options)
    if isinstance(x, Repeat) and (x.low, x.high) == (0, 1):
        return [EPS, *_opts(x.expr)]
    return [x]


def _pack(options: list[Expr | _Eps]) -> Expr | _Eps:
    real = [o for o in options if o != EPS]
    inner: Expr | _Eps = EPS
    if len(real) == 1:
        inner = real[0]
    elif real:
        inner = Alt(tuple(o for o in real if not isinstance(o, tuple)))
    if EPS in options and inner != EPS:
        assert not isinstance(inner, tuple)
        return Repeat(inner, 0, 1)
    return inner


def _star(a: _R) -> _R:
    if a is None or a == EPS:
        return EPS
    assert not isinstance(a, tuple)
    return Repeat(a, 0, None)


def _paths(
    start: Step, nodes: list[Step], edges: set[tuple[Step, Step]], loop: Expr | None
) -> Expr:
    """Every path from `start` through the graph (each node may end it), a node's step taken
    on entering it and `loop` after it, as one expression."""
    src, sink = Step("", "<start>"), Step("", "<end>")
    r: dict[tuple[Step, Step], _R] = {(src, start): start}
    for n in nodes:
        r[n, sink] = EPS
        if loop is not None:
            r[n, n] = loop
    for a, b in edges:
        r[a, b] = _alt(r.get((a, b)), b)
    for k in reversed(nodes):  # from the end of the flow: its loops nest innermost
        around = _star(r.pop((k, k), None))
        ins = [(i, e) for (i, j), e in r.items() if j == k]
        outs = [(j, e) for (i, j), e in r.items() if i == k]
        for i, _ in ins:
            del r[i, k]
        for j, _ in outs:
            del r[k, j]
        for i, ei in ins:
            for j, ej in outs:
                r[i, j] = _alt(r.get((i, j)), _cat(_cat(ei, around), ej))
    out = r.get((src, sink))
    assert out is not None and not isinstance(out, tuple)
    return out


def _without_never(flow: _Flow, rel: str, log: FindingLog) -> _Flow:
    """The flow without the steps a receiver's list says are never expected, each sentence
    that would still order one a finding: the receiver's list decides."""
    never = dict(flow.never)

    def kept(steps: tuple[Step, ...], line: int) -> bool:
        bad = [s for s in steps if s in never]
        for s in bad:
            log.add(
                SourceSpan(rel, line, 5),
                "flow-never",
                f"{s.role}:{s.name} is never expected (line {never[s]}), yet this sentence "
                "orders it",
                "the receiver's list decides: no such step",
            )
        return not bad

    return replace(
        flow,
        edges=[(a, b, ln) for a, b, ln in flow.edges if kept((a, b), ln)],
        any_time=[(s, ln) for s, ln in flow.any_time if kept((s,), ln)],
        closes=[(a, b, ln) for a, b, ln in flow.closes if kept((a, b), ln)],
    )


def _dialogue(flow: _Flow, rel: str, log: FindingLog) -> Dialogue:
    flow = _without_never(flow, rel, log)
    start = Step("C", HEADER)
    anywhere = {s for s, _ in flow.any_time}
    closing = {s for pair in flow.closes for s in pair[:2]}
    pings = [s for s, _ in flow.any_time if s not in closing]
    edges = {(a, b) for a, b, _ in flow.edges if a not in anywhere and b not in anywhere}
    nodes: list[Step] = [start]
    for a, b, _ in flow.edges:
        for s in (a, b):
            if s not in nodes and s not in anywhere:
                nodes.append(s)
    reach = {start}
    todo = [start]
    while todo:
        here = todo.pop()
        for a, b in edges:
            if a == here and b not in reach:
                reach.add(b)
                todo.append(b)
    for a, b, line in flow.edges:
        for s in (a, b):
            if s not in reach and s not in anywhere:
                log.add(
                    SourceSpan(rel, line, 5),
                    "flow-unreachable",
                    f"{s.role}:{s.name} follows nothing the initiation leads to",
                    "not in the conversation",
                )
    nodes = [n for n in nodes if n in reach]
    span = SourceSpan(rel, flow.heading, 1)
    rules: list[Rule] = []
    loop: Expr | None = None
    tail: Expr | None = None
    if pings:
        line = min(ln for s, ln in flow.any_time if s in pings)
        rules.append(
            Rule(
                "ping", Alt(tuple(pings)) if len(pings) > 1 else pings[0], SourceSpan(rel, line, 5)
            )
        )
        loop = RuleRef("ping")
    if flow.closes:
        pairs = [Seq(pair[:2]) for pair in flow.closes]
        line = flow.closes[0][2]
        rules.append(
            Rule(
                "close-connection",
                Alt(tuple(pairs)) if len(pairs) > 1 else pairs[0],
                SourceSpan(rel, line, 5),
            )
        )
        tail = RuleRef("close-connection")
    body = _paths(start, nodes, edges, loop)
    top = _cat(body, tail) if tail is not None else body
    assert top is not None and not isinstance(top, tuple)
    rules.insert(0, Rule("connection", top, span))
    doc = "\n".join(f"{r.name} = {render(r.expr)}" for r in rules)
    return Dialogue("connection", tuple(rules), "connection", span, doc)


# --------------------------------------------------------------------------------------------
# The AST as ABNF text (the dialogue's doc)


def render(e: Expr, inner: bool = False) -> str:
    """ABNF for an expression of steps, references and repetitions."""
    match e:
        case Step():
            return f"{e.role}:{e.name}"
        case RuleRef():
            return e.name
        case Seq():
            text = " ".join(render(x, True) for x in e.items)
            return f"( {text} )" if inner else text
        case Alt():
            text = " / ".join(render(x) for x in e.options)
            return f"( {text} )" if inner else text
        case Repeat():
            if (e.low, e.high) == (0, 1):
                return f"[ {render(e.expr)} ]"
            lo = "" if e.low == 0 else str(e.low)
            hi = "" if e.high is None else str(e.high)
            return f"{lo}*{hi}{render(e.expr, True)}"
        case CharVal() | NumVal() | NumRange() | ProseVal():
            raise TypeError(f"no dialogue element: {e!r}")
        case _:
            assert_never(e)
