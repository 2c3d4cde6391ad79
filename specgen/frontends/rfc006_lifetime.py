"""AMQ RFC 006's channel and destination "Command Flow Summary" (prose) -> an `ir.Dialogue`.

The connection's summary orders its commands one after another (`rfc006_flow`); the channel's
and the destination's (handle's) describe a lifetime instead: a command "on a closed channel"
opens it, commands "on an open channel" use it, in any order and any number of times, each
with the replies it asks for, and a CLOSE "at any time" ends it with the other side's CLOSE.
This module reads each sentence of both roles' lists by one of the rules below and writes the
lifetime as ABNF over steps (the shared AST), so the same checker is generated as for the
grammars AMQP writes in ABNF (`specgen.dialogue`).

The rules, for a paragraph of role E (who receives) about command Y of the class (so the step
is O:Y, O the other role); `<noun>` is the word the lists use for the class ("channel",
"destination" for HANDLE):

* "Never expected." -- O never sends Y: no step O:Y. Where another sentence would still have
  O send Y (the server's "Reply with HANDLE SEND" to BROWSE and READY, while the client's list
  says HANDLE SEND is never expected and Message Frames says SEND carries messages from client
  to server), the receiver's list decides: a peer's own list of what it accepts bounds what may
  be sent to it. Each such sentence is a `flow-never` finding.
* "Expect on a closed <noun>." -- O:Y opens the conversation.
* "Expect on an open <noun>." -- O:Y uses it (the document twice spells it "Exepect": read the
  same, a `flow-spelling` finding).
* "Expect at any time on an open <noun>." with "Respond by ... reply(ing) with <CLASS> CLOSE
  ..." -- O:Y E:CLOSE ends the conversation. At any time: an exchange still waiting for a
  required reply may be cut by it.
* "Reply with Z." -- E:Z must answer O:Y; "Reply with Z if ..." and "If ..., reply with Z ..."
  -- E:Z may. A reply is itself a command with its own replies (PREPARE, READY, SEND, REPLY),
  so an exchange is O:Y followed by its replies, each expanded in turn, in any order (the
  document orders none of them). Z of another class (CHANNEL ACK's "Reply with HANDLE REPLY",
  HANDLE NOTIFY's "reply with CHANNEL ACK") is no step of this conversation, which holds one
  channel's or one handle's commands: a `flow-other-class` finding.
* "Expect after sending X." -- O:Y answers E:X: it is one of X's replies (X's own paragraph
  names it too, for PREPARE's READY). "Expect on an open <noun> after sending X or W." -- when
  X's paragraph names Y as its reply (QUERY's INDEX), the same; when not (NOTIFY after CONSUME
  or BROWSE), O:Y may come at any time once E has sent X or W: the conversation has a phase
  before and a phase after.
* "Expect after a <noun> command that asks for confirmation (has a non-zero confirm-tag)." --
  O:Y may answer each command E sends whose fields include the one named (`confirm-tag`, read
  from the IR's fields). What E sends is what O's list does not call never expected.
* "Expect after opening a <word> <noun>." -- O:Y may answer each command E sends that has a
  field named <word>: "a dynamic destination" is HANDLE CONSUME's `dynamic` bit, whose own
  paragraph says the server "respond[s] to the client with HANDLE CREATED" (the Command
  Hierarchy chart draws CREATED under HANDLE OPEN, which has no such field and no destination
  name). A `flow-field` finding says which commands it resolved to.
* "On an open <noun>, reply with <CLASS> CLOSE." -- the answer to a breach (opening what is
  open): no step; the checker breaks at the second opener, and the CLOSE is the one at any time.
* "Respond by closing the connection (fatal error).", "No response is needed.", "Store ..." --
  no step.

The conversation is then

    <cls> = open-<cls> *use-<cls> [ unanswered-<cls> ] close-<cls>

with a phase per enabling sentence (`[ unanswered-<cls> / consume-or-browse *( use-<cls> /
consume-or-browse / S:NOTIFY ) [ unanswered-<cls> ] ]`), where `unanswered-<cls>` is every
exchange cut before a required reply. Every sentence no rule reads is a `flow-unread`
finding at its line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import assert_never

from specgen.abnf import (
    Alt,
    CharVal,
    Expr,
    NumRange,
    NumVal,
    ProseVal,
    Repeat,
    RuleRef,
    Seq,
    Step,
    parse_rules,
)
from specgen.frontends.adoc import SpecError
from specgen.frontends.rfc006_flow import Summary, render, sentences
from specgen.ir import Bits, Command, Dialogue, FindingLog, SourceSpan

_CMD = r"([A-Z]+) ([A-Z]+)"  # "HANDLE SEND": class word, command

# kind -> the group that names the class's noun ("on an open channel")
_NOUN = {"opener": 0, "use": 1, "use-after": 0, "any-time": 0, "breach": 0, "after-opening": 1}

_SENTENCES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"Never expected\."), "never"),
    (re.compile(r"Respond by closing the connection \(fatal error\)\."), "none"),
    (re.compile(r"No response is needed\."), "none"),
    (re.compile(r"Store the [^.]*\."), "none"),
    (re.compile(r"Expect on a closed (\w+)\."), "opener"),
    (re.compile(r"(Expect|Exepect) on an open (\w+)\."), "use"),
    (
        re.compile(rf"Expect on an open (\w+) after sending {_CMD}(?: or {_CMD})?\."),
        "use-after",
    ),
    (re.compile(rf"Expect after sending {_CMD}\."), "after"),
    (
        re.compile(
            r"Expect after an? (\w+) command that asks for confirmation "
            r"\(has a non-zero ([a-z-]+)\)\."
        ),
        "after-confirm",
    ),
    (re.compile(r"Expect after opening an? ([a-z-]+) (\w+)\."), "after-opening"),
    (re.compile(r"Expect at any time on an open (\w+)\."), "any-time"),
    (re.compile(rf"Reply with {_CMD}(?: command)?( if [^.]*)?\."), "reply"),
    (re.compile(rf"If [^,]*, reply with {_CMD}[^.]*\."), "reply-if"),
    (re.compile(rf"Respond by [^.]*\brepl(?:y|ying) with {_CMD}\b[^.]*\."), "close"),
    (re.compile(rf"On an open (\w+), reply with {_CMD}\."), "breach"),
]


@dataclass(frozen=True)
class _Reply:
    step: Step
    required: bool
    heading: str  # the paragraph that says so
    line: int


@dataclass
class _Reading:
    cls: str  # the class word, upper case: "HANDLE"
    noun: str  # "destination"
    span: SourceSpan  # the summary's heading
    openers: list[Step] = field(default_factory=list)
    uses: list[Step] = field(default_factory=list)
    closes: list[tuple[Step, Step, int]] = field(default_factory=list)
    replies: dict[Step, list[_Reply]] = field(default_factory=dict)
    # (O:Y, the E:X it follows, on an open <noun>, heading, line): "Expect ... after sending X"
    after: list[tuple[Step, tuple[Step, ...], bool, str, int]] = field(default_factory=list)
    # (O:Y, field name, named by "opening a <field> <noun>", heading, line): Y may answer
    # what E sends with that field
    by_field: list[tuple[Step, str, bool, str, int]] = field(default_factory=list)
    never: dict[Step, int] = field(default_factory=dict)  # step -> the line that says so
    enabled: dict[Step, tuple[Step, ...]] = field(default_factory=dict)  # O:Y -> E:X, E:W
    order: dict[str, int] = field(default_factory=dict)  # command -> its place in the IR


def read(summary: Summary, commands: Sequence[Command], rel: str, log: FindingLog) -> Dialogue:
    """The dialogue of one class's Command Flow Summary (channel or destination)."""
    classes = {p.heading.split()[0] for p in summary.paragraphs if re.fullmatch(_CMD, p.heading)}
    if len(classes) != 1:
        raise SpecError(
            SourceSpan(rel, summary.line, 1),
            f"the {summary.noun} Command Flow Summary names commands of "
            f"{', '.join(sorted(classes)) or 'no class'}: one class expected",
        )
    r = _Reading(classes.pop(), summary.noun, SourceSpan(rel, summary.line, 1))
    known = {_method(c) for c in commands}
    for p in summary.paragraphs:
        if tuple(p.heading.split()) not in known:
            raise SpecError(SourceSpan(rel, p.line, 1), f"{p.heading} is no command")
        _paragraph(r, p.role, p.heading, p.body, rel, log)
    _resolve(r, commands, rel, log)
    return _dialogue(r)


def _other(role: str) -> str:
    return "S" if role == "C" else "C"


def _paragraph(
    r: _Reading, role: str, heading: str, body: list[tuple[str, int]], rel: str, log: FindingLog
) -> None:
    other = _other(role)
    y = Step(other, heading.split()[1])

    def own(cls: str, name: str, line: int, sentence: str) -> Step | None:
        """The step E sends named in a sentence, or None when it is another class's."""
        if cls == r.cls:
            return Step(role, name)
        log.add(
            SourceSpan(rel, line, 5),
            "flow-other-class",
            f"{heading}: {sentence!r} names {cls} {name}, a command of another class; a "
            f"{r.cls.lower()} conversation holds one {r.noun}'s commands",
            f"no step of the {r.cls.lower()} conversation",
        )
        return None

    for sentence, line in sentences(body):
        kind, g = next(
            ((k, m.groups()) for p, k in _SENTENCES if (m := p.fullmatch(sentence))), ("", ())
        )
        at = _NOUN.get(kind)
        if at is not None and g[at] != r.noun:
            log.add(
                SourceSpan(rel, line, 5),
                "flow-other-class",
                f"{heading}: {sentence!r} speaks of a {g[at]} in the {r.noun} summary; "
                f"a {r.cls.lower()} conversation sees its own commands only",
                f"read as 'on an open {r.noun}'",
            )
        if kind == "never":
            r.never[y] = line
        elif kind == "none":
            pass
        elif kind == "opener":
            r.openers.append(y)
        elif kind == "use":
            if g[0] != "Expect":
                log.add(
                    SourceSpan(rel, line, 5),
                    "flow-spelling",
                    f"{heading}: {g[0]!r} for 'Expect'",
                    "read as 'Expect'",
                )
            r.uses.append(y)
        elif kind == "use-after":
            xs = [own(g[i], g[i + 1], line, sentence) for i in (1, 3) if g[i] is not None]
            r.uses.append(y)
            r.after.append((y, tuple(x for x in xs if x is not None), True, heading, line))
        elif kind == "after":
            x = own(g[0], g[1], line, sentence)
            if x is not None:
                r.after.append((y, (x,), False, heading, line))
        elif kind == "after-confirm":
            r.by_field.append((y, g[1], False, heading, line))
        elif kind == "after-opening":
            r.by_field.append((y, g[0], True, heading, line))
        elif kind == "any-time":
            pass  # paired with its "Respond by ... reply with CLOSE" (kind close)
        elif kind in ("reply", "reply-if"):
            z = own(g[0], g[1], line, sentence)
            if z is not None:
                required = kind == "reply" and not g[2]
                r.replies.setdefault(y, []).append(_Reply(z, required, heading, line))
        elif kind == "close":
            z = own(g[0], g[1], line, sentence)
            if z is not None:
                r.closes.append((y, z, line))
        elif kind == "breach":
            pass  # no step: the second opener breaks the conversation
        else:
            log.add(
                SourceSpan(rel, line, 5),
                "flow-unread",
                f"{heading}: {sentence!r} matches no rule of the flow reader",
                "ignored (see specgen.frontends.rfc006_lifetime)",
            )


# --------------------------------------------------------------------------------------------
# The sentences' facts, settled against each other and the IR's fields


def _method(c: Command) -> tuple[str, str]:
    """`Handle.Consume` -> ("HANDLE", "CONSUME")."""
    cls, _, method = c.name.partition(".")
    return cls.upper(), method.upper()


def _field_names(c: Command) -> set[str]:
    """Every field of the command's request, bits included, as the prose spells them
    lower-cased without separators (`ConfirmTag`, `confirm-tag` -> "confirmtag")."""
    out: set[str] = set()
    for f in c.messages[0].fields:
        members = f.type.members if isinstance(f.type, Bits) else (f,)
        out.update(re.sub(r"[-_\s]", "", m.name).lower() for m in members)
    return out


def _resolve(r: _Reading, commands: Sequence[Command], rel: str, log: FindingLog) -> None:
    own = [c for c in commands if _method(c)[0] == r.cls]
    known = {_method(c)[1] for c in own}
    r.order = {_method(c)[1]: i for i, c in enumerate(own)}

    def allowed(step: Step, heading: str, line: int) -> bool:
        if step.name not in known:
            raise SpecError(
                SourceSpan(rel, line, 5), f"{heading}: {r.cls} {step.name} is no command"
            )
        if step not in r.never:
            return True
        who, whom = ("client", "server") if step.role == "C" else ("server", "client")
        log.add(
            SourceSpan(rel, line, 5),
            "flow-never",
            f"{heading}: the {who} would send {r.cls} {step.name}, which the {whom}'s list "
            f"says is never expected (line {r.never[step]})",
            "the receiver's list decides: no such step",
        )
        return False

    for y, replies in r.replies.items():
        kept: dict[Step, _Reply] = {}
        for z in replies:
            if allowed(z.step, z.heading, z.line):
                was = kept.get(z.step)
                kept[z.step] = z if was is None or z.required else was
        r.replies[y] = list(kept.values())
    r.closes = [(y, z, ln) for y, z, ln in r.closes if allowed(z, f"{r.cls} {y.name}", ln)]
    for y, xs, on_open, heading, line in r.after:
        xs = tuple(x for x in xs if allowed(x, heading, line))
        answered = [x for x in xs if any(z.step == y for z in r.replies.get(x, ()))]
        if on_open and len(answered) == len(xs):
            r.uses.remove(y)  # a reply of what it follows (or of nothing), not a use of its own
        elif on_open:
            r.enabled[y] = xs
        else:
            for x in xs:
                if x not in answered:
                    r.replies.setdefault(x, []).append(_Reply(y, False, heading, line))
    for y, name, opening, heading, line in r.by_field:
        key = re.sub(r"[-_\s]", "", name).lower()
        sender = _other(y.role)
        # the commands the sender may send (its peer's list expects them) carrying the field
        sent = [Step(sender, _method(c)[1]) for c in own if key in _field_names(c)]
        targets = [x for x in sent if x not in r.never]
        if not targets:
            raise SpecError(
                SourceSpan(rel, line, 5),
                f"{heading}: no {r.cls} command the {'client' if sender == 'C' else 'server'} "
                f"sends has a field {name}",
            )
        for x in targets:
            if not any(z.step == y for z in r.replies.get(x, ())):
                r.replies.setdefault(x, []).append(_Reply(y, False, heading, line))
        if opening:
            names = " and ".join(f"{r.cls} {x.name}" for x in targets)
            log.add(
                SourceSpan(rel, line, 5),
                "flow-field",
                f"{heading}: 'opening a {name} {r.noun}': no command opens one by that word; "
                f"the field {name} is {names}'s",
                f"{y.role}:{y.name} may answer {names}",
            )


# --------------------------------------------------------------------------------------------
# The lifetime as ABNF


def _exchange(r: _Reading, step: Step, seen: tuple[Step, ...] = ()) -> Expr:
    """The step, then its replies (each with its own), in any order; optional ones may be
    missing."""
    if step in seen:
        chain = " -> ".join(f"{s.role}:{s.name}" for s in (*seen, step))
        raise SpecError(r.span, f"replies answer each other in a circle: {chain}")
    replies = r.replies.get(step, [])
    tail = _orders(
        r,
        [z.step for z in replies if z.required],
        [z.step for z in replies if not z.required],
        (*seen, step),
    )
    return step if tail is None else _seq(step, tail)


def _orders(
    r: _Reading, required: list[Step], optional: list[Step], seen: tuple[Step, ...]
) -> Expr | None:
    """Every order of all `required` and any of `optional` replies (None: nothing follows)."""
    if not required and not optional:
        return None
    options: list[Expr] = []
    for z in (*required, *optional):
        rest = _orders(r, [x for x in required if x != z], [x for x in optional if x != z], seen)
        head = _exchange(r, z, seen)
        options.append(head if rest is None else _seq(head, rest))
    expr = options[0] if len(options) == 1 else Alt(tuple(options))
    return Repeat(expr, 0, 1) if not required else expr


def _seq(*items: Expr) -> Expr:
    flat: list[Expr] = []
    for x in items:
        flat.extend(x.items if isinstance(x, Seq) else (x,))
    return flat[0] if len(flat) == 1 else Seq(tuple(flat))


def _alt(options: Sequence[Expr]) -> Expr:
    return options[0] if len(options) == 1 else Alt(tuple(options))


def _nullable(e: Expr) -> bool:
    match e:
        case Repeat():
            return e.low == 0 or _nullable(e.expr)
        case Seq():
            return all(_nullable(x) for x in e.items)
        case Alt():
            return any(_nullable(x) for x in e.options)
        case Step() | RuleRef() | CharVal() | NumVal() | NumRange() | ProseVal():
            return False
        case _:
            assert_never(e)


def _unfinished(e: Expr) -> list[Expr]:
    """The non-empty prefixes of e's words after which e still needs a step: an exchange
    cut by a CLOSE before a required reply."""
    match e:
        case Seq():
            out: list[Expr] = []
            for i, item in enumerate(e.items):
                head = e.items[:i]
                rest = e.items[i + 1 :]
                out.extend(_seq(*head, part) for part in _unfinished(item))
                if (
                    rest
                    and not all(_nullable(x) for x in rest)
                    and not _nullable(_seq(*head, item))
                ):
                    out.append(_seq(*head, item))
            return _unique(out)
        case Alt():
            return _unique([p for o in e.options for p in _unfinished(o)])
        case Repeat() if e.high == 1:
            return _unfinished(e.expr)
        case Repeat() | Step() | RuleRef() | CharVal() | NumVal() | NumRange() | ProseVal():
            return []
        case _:
            assert_never(e)


def _unique(xs: list[Expr]) -> list[Expr]:
    out: list[Expr] = []
    for x in xs:
        if x not in out:
            out.append(x)
    return out


def _dialogue(r: _Reading) -> Dialogue:
    cls = r.cls.lower()
    if not r.openers or not r.closes:
        raise SpecError(
            r.span,
            f"the {r.noun} Command Flow Summary says no command that opens "
            f"{'or closes ' if not r.closes else ''}a {r.noun}",
        )
    facts: list[tuple[Step, ...]] = []
    for xs in r.enabled.values():
        if xs not in facts:
            facts.append(xs)
    enablers = {x for xs in facts for x in xs}
    base = sorted(
        (u for u in dict.fromkeys(r.uses) if u not in r.enabled and u not in enablers),
        key=lambda s: (r.order[s.name], s.role),  # the commands' order, the client's first
    )
    rules: list[tuple[str, Expr]] = []
    opening = [_exchange(r, o) for o in r.openers]
    rules.append((f"open-{cls}", _alt(opening)))
    if base:
        rules.append((f"use-{cls}", _alt([_exchange(r, u) for u in base])))
    fact_rules = []
    for xs in facts:
        name = "-or-".join(x.name.lower() for x in xs)
        rules.append((name, _alt([_exchange(r, x) for x in xs])))
        fact_rules.append(RuleRef(name))
    cut = _unique([p for s in [*base, *enablers] for p in _unfinished(_exchange(r, s))])
    if cut:
        rules.append((f"unanswered-{cls}", _alt(cut)))
    pairs = [_seq(y, z) for y, z, _ in r.closes]
    rules.append((f"close-{cls}", _alt(pairs)))

    def phase(done: tuple[int, ...]) -> Expr | None:
        loop: list[Expr] = [RuleRef(f"use-{cls}")] if base else []
        extra_cut: list[Expr] = []
        for i in done:
            loop.append(fact_rules[i])
            for y, xs in r.enabled.items():
                if xs == facts[i]:
                    loop.append(_exchange(r, y))
                    extra_cut.extend(_unfinished(_exchange(r, y)))
        tail: list[Expr] = []
        if cut or extra_cut:
            tail.append(
                _alt([RuleRef(f"unanswered-{cls}"), *extra_cut]) if cut else _alt(extra_cut)
            )
        for i in range(len(facts)):
            if i not in done:
                after = phase(tuple(sorted((*done, i))))
                tail.append(fact_rules[i] if after is None else _seq(fact_rules[i], after))
        items: list[Expr] = []
        if loop:
            items.append(Repeat(_alt(loop), 0, None))
        if tail:
            items.append(Repeat(_alt(tail), 0, 1))
        return _seq(*items) if items else None

    body = phase(())
    top = _seq(RuleRef(f"open-{cls}"), *([body] if body else []), RuleRef(f"close-{cls}"))
    opener_cut = _unique([p for e in opening for p in _unfinished(e)])
    if opener_cut:
        top = Alt((top, _seq(_alt(opener_cut), RuleRef(f"close-{cls}"))))
    rules.insert(0, (cls, top))
    doc = "\n".join(f"{name} = {render(expr)}" for name, expr in rules)
    # read back by the ABNF front-end: the rules are what the doc says, in its canonical form
    parsed = parse_rules(doc, r.span.file)
    return Dialogue(cls, tuple(replace(x, span=r.span) for x in parsed), cls, r.span, doc)
