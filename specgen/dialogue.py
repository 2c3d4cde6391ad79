"""Dialogue grammars (the allowed sequences of commands) -> one deterministic automaton each.

A spec's dialogue grammar is ABNF whose terminals are steps, `C:OPEN` (the client sends) or
`S:OPEN-OK` (the server sends); AMQP 0-9-1 writes one per class in `<doc type="grammar">`,
the 0-10 text and RFC 006 the same kind in prose. The IR keeps each as an `ir.Dialogue` (the
rules as written, with spans); this module gives them their meaning, protocol-neutrally, and
compiles each to a DFA that the generated `dialogue.py` checks conversations with.

Semantics (the rules this module states and applies):

* A step is qualified by the dialogue its rule belongs to: `C:OPEN` in the channel class's
  grammar is the client sending `channel.open`; names are compared lower-cased. So
  `C:protocol-header` in the connection grammar is `connection.protocol-header` (AMQP's
  8-byte protocol header, which is no method but opens every connection).
* A rule reference is resolved, in this order: (1) a rule of the same dialogue (`=/`
  alternatives merged in); (2) the name of another dialogue: that dialogue's grammar, its steps
  qualified by it (`use-connection = *channel` nests the channel grammar); (3)
  `functional-class`, which AMQP uses and never defines: any one of the functional dialogues,
  those that reference no other dialogue (in 0-9-1: exchange, queue, basic, tx, confirm;
  connection names `channel`, channel names `functional-class`, so those two are structural);
  (4) `content`, also never defined: the content frames (a header, then bodies) that follow a
  method with content. They are frames, not methods, and a conversation is a sequence of
  methods, so `content` matches no step (the decoder checks the frames themselves). Any other
  name is an error naming the rule's file:line:column (`undefined` lists them for lint).
  Recursion (a rule reaching itself) is refused: a dialogue must be a regular language.
* Conversations on real traffic. A capture holds one byte stream per direction, so the order
  of each role's steps is exact, but the order between the two is not: messages cross in
  flight (a consumer's Basic.Cancel and the server's next Basic.Deliver; a Channel.Close and
  the deliveries already sent), and a capture without read timestamps has no cross-direction
  order at all. The strict reading (`check(..., crossing=False)`) takes steps in the order
  given and is the grammar's own; the capture reading (`crossing=True`) accepts when *some*
  interleaving of the roles' steps, each role's kept in order, is a word of the grammar. So
  a method a role sends out of its turn, too early, twice or not at all still fails (the
  client's Connection.Open before its Tune-Ok; a Basic.Publish on a channel never opened),
  while a reply that crosses an unrelated message passes. What crossing cannot see is a
  reply sent before its request by the *other* role (Start-Ok before Start): two streams
  alone do not order them. The search is breadth-first over (steps taken per role, DFA state),
  one diagonal (steps taken in all) at a time; past `limit` configurations it keeps those
  closest to the order given (capture order), so its cost is linear in the conversation.
* Roles. `C:` is the client (the peer that opened the connection), `S:` the server. AMQP 0-10
  adds two. `*:X` is X sent by either peer (its messages flow both ways on a session). `R:X`
  is X sent by the receiver (the recipient) of the message the nearest `*:` step before it in
  the same sequence sent: in `message = *:TRANSFER [ R:ACQUIRE ] [ R:ACCEPT / ... ]` the
  peer that got the transfer acquires and accepts it (the text's "Transfer States": "sent to
  the recipient ... acquired by the recipient"). So that sequence reads as two, one per
  sender: `C:TRANSFER [S:ACQUIRE] [S:ACCEPT / ...]` / `S:TRANSFER [C:ACQUIRE] ...`. A `*:`
  step no `R:` step follows is either role's; an `R:` step with no `*:` step before it in its
  rule's sequence has no sender to be the receiver of, and is an error naming the rule.
* Several grammars in one class. A class may write more than one grammar (0-10's dtx:
  `dtx-demarcation` and `dtx-coordination`). A dialogue's conversation is its start rule;
  each other rule that no rule of the dialogue references is a further grammar of the class,
  and the conversation is their interleaving (each grammar's steps in its own order, the
  grammars' steps mixed freely), which is deterministic only when no step is in two of them
  (else an error). A grammar that must open (dtx-demarcation's `C:SELECT`) is then due in
  every conversation of the class: one that never takes it is incomplete, not broken.
* `channel`, named by 0-10's `use-connection = *channel` (kept from 0-9-1, whose channel class
  0-10 replaced with sessions, whose controls are the session class's), matches no step when
  no dialogue is called `channel`: a connection's own conversation is its connection controls.
* Verdicts: "ok" (all steps taken, the grammar complete), "incomplete" (all steps taken, more
  were due: a capture can end mid-conversation, which is not a breach) or "broken" with the
  index of the step no interleaving could take (the step of a role the grammar expected there,
  else the earliest one left) and the steps the grammar allowed there.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
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
from specgen.ir import Dialogue, SourceSpan

FUNCTIONAL = "functional-class"
"""AMQP's name for "any functional class's grammar", used and never defined."""

EMPTY = frozenset({"content", "channel"})
"""Names used and never defined that match no step: the content frames after a method, and
0-10's `channel` (a dialogue called `channel` is resolved first, as in 0-9-1)."""

ROLES = ("C", "S")
"""The roles a step of a conversation has; `*` (either) and `R` (receiver) are read as them."""

PROTOCOL_HEADER = "protocol-header"


class DialogueError(ValueError):
    """A dialogue grammar that has no meaning as a conversation; str is file:line:column."""

    def __init__(self, span: SourceSpan, message: str) -> None:
        super().__init__(f"{span}: {message}")
        self.span = span
        self.message = message


def terminal(dialogue: str, step: Step) -> str:
    """The qualified name of a step: `C:OPEN` in the channel grammar -> "channel.open"."""
    return f"{dialogue.lower()}.{step.name.lower()}"


def label(role: str, name: str) -> str:
    """The key the automata use for a step: "C:channel.open"."""
    return f"{role.upper()}:{name}"


def rules_of(d: Dialogue) -> dict[str, Rule]:
    """The dialogue's rules by lower-cased name, `=/` alternatives merged into their rule."""
    out: dict[str, Rule] = {}
    for r in d.rules:
        key = r.name.lower()
        if r.incremental and key in out:
            first = out[key]
            options = _options(first.expr) + _options(r.expr)
            out[key] = Rule(first.name, Alt(options), first.span)
        elif key in out:
            raise DialogueError(r.span, f"rule {r.name} is defined twice ({out[key].span})")
        else:
            out[key] = r
    return out


def _options(e: Expr) -> tuple[Expr, ...]:
    return e.options if isinstance(e, Alt) else (e,)


def _refs(e: Expr) -> Iterable[RuleRef]:
    match e:
        case RuleRef():
            yield e
        case Seq():
            for x in e.items:
                yield from _refs(x)
        case Alt():
            for x in e.options:
                yield from _refs(x)
        case Repeat():
            yield from _refs(e.expr)
        case Step() | CharVal() | NumVal() | NumRange() | ProseVal():
            pass
        case _:
            assert_never(e)


def structural(dialogues: Sequence[Dialogue]) -> set[str]:
    """Dialogues that nest others (name another dialogue or `functional-class`)."""
    names = {d.name.lower() for d in dialogues}
    out = set()
    for d in dialogues:
        own = rules_of(d)
        for r in d.rules:
            for ref in _refs(r.expr):
                key = ref.name.lower()
                if key not in own and (key in names or key == FUNCTIONAL):
                    out.add(d.name.lower())
    return out


def functional(dialogues: Sequence[Dialogue]) -> list[str]:
    """What `functional-class` stands for: every dialogue that nests no other, in spec order."""
    nesting = structural(dialogues)
    return [d.name.lower() for d in dialogues if d.name.lower() not in nesting]


def undefined(dialogues: Sequence[Dialogue]) -> list[tuple[SourceSpan, str, str]]:
    """(rule span, dialogue, name) for each reference that no resolution rule resolves."""
    names = {d.name.lower() for d in dialogues}
    out = []
    for d in dialogues:
        own = rules_of(d)
        for r in d.rules:
            for ref in _refs(r.expr):
                key = ref.name.lower()
                if key not in own and key not in names and key != FUNCTIONAL and key not in EMPTY:
                    out.append((r.span, d.name, ref.name))
    return out


def conventional(dialogues: Sequence[Dialogue]) -> list[tuple[SourceSpan, str, str]]:
    """(rule span, dialogue, name) for each reference resolved by a convention that matches no
    step (`content`, `channel`): used and never defined, so a lint finding for a new spec."""
    names = {d.name.lower() for d in dialogues}
    out = []
    for d in dialogues:
        own = rules_of(d)
        for r in d.rules:
            for ref in _refs(r.expr):
                key = ref.name.lower()
                if key not in own and key not in names and key in EMPTY:
                    if (r.span, d.name, ref.name) not in out:
                        out.append((r.span, d.name, ref.name))
    return out


def tops(d: Dialogue) -> list[Rule]:
    """The class's grammars: its start rule, then each rule no rule of it references."""
    own = rules_of(d)
    used = {ref.name.lower() for r in d.rules for ref in _refs(r.expr)}
    start = own[d.start.lower()]
    rest = [r for k, r in own.items() if k != start.name.lower() and k not in used]
    return [start, *rest]


def bind(e: Expr, receiver: str | None, rule: Rule) -> Expr:
    """`e` with `*:` and `R:` steps read as `C:`/`S:` (see the module docstring); `receiver` is
    the role `R:` stands for here (None: no `*:` step before)."""
    match e:
        case Step():
            if e.role == "R":
                if receiver is None:
                    raise DialogueError(
                        rule.span, f"rule {rule.name}: R:{e.name} follows no *: step to receive"
                    )
                return Step(receiver, e.name)
            if e.role == "*":
                return Alt(tuple(Step(r, e.name) for r in ROLES))
            if e.role.upper() not in ROLES:
                raise DialogueError(rule.span, f"rule {rule.name}: unknown role {e.role}:")
            return e
        case Seq():
            for i, item in enumerate(e.items):
                rest = e.items[i + 1 :]
                if isinstance(item, Step) and item.role == "*" and any(_receives(x) for x in rest):
                    head = [bind(x, receiver, rule) for x in e.items[:i]]
                    options = []
                    for sender in ROLES:
                        other = ROLES[1 - ROLES.index(sender)]
                        tail = bind(Seq(rest) if len(rest) > 1 else rest[0], other, rule)
                        options.append(Seq((*head, Step(sender, item.name), tail)))
                    return Alt(tuple(options))
            return Seq(tuple(bind(x, receiver, rule) for x in e.items))
        case Alt():
            return Alt(tuple(bind(x, receiver, rule) for x in e.options))
        case Repeat():
            return Repeat(bind(e.expr, receiver, rule), e.low, e.high)
        case RuleRef() | CharVal() | NumVal() | NumRange() | ProseVal():
            return e
        case _:
            assert_never(e)


def _receives(e: Expr) -> bool:
    match e:
        case Step():
            return e.role == "R"
        case Seq():
            return any(_receives(x) for x in e.items)
        case Alt():
            return any(_receives(x) for x in e.options)
        case Repeat():
            return _receives(e.expr)
        case RuleRef() | CharVal() | NumVal() | NumRange() | ProseVal():
            return False
        case _:
            assert_never(e)


# --------------------------------------------------------------------------------------------
# Expressions -> NFA -> DFA


@dataclass(frozen=True, slots=True)
class Automaton:
    """A DFA over step labels ("C:channel.open"); state 0 is the start."""

    name: str
    accepting: frozenset[int]
    moves: tuple[dict[str, int], ...]  # per state: label -> next state

    def run(self, steps: Iterable[tuple[str, str]]) -> tuple[int | None, int]:
        """Strict order: (index of the first step refused or None, the state reached)."""
        state = 0
        for i, (role, name) in enumerate(steps):
            nxt = self.moves[state].get(label(role, name))
            if nxt is None:
                return i, state
            state = nxt
        return None, state


class _NFA:
    def __init__(self, dialogues: Sequence[Dialogue]) -> None:
        self.dialogues = {d.name.lower(): d for d in dialogues}
        self.rules = {name: rules_of(d) for name, d in self.dialogues.items()}
        self.functional = functional(dialogues)
        self.eps: list[list[int]] = []
        self.edges: list[list[tuple[str, int]]] = []

    def state(self) -> int:
        self.eps.append([])
        self.edges.append([])
        return len(self.eps) - 1

    def build(
        self, e: Expr, a: int, b: int, where: str, rule: Rule, active: tuple[str, ...]
    ) -> None:
        """Connect state a to state b with expression e, read inside dialogue `where`."""
        match e:
            case Step():
                self.edges[a].append((label(e.role, terminal(where, e)), b))
            case Seq():
                at = a
                for i, item in enumerate(e.items):
                    to = b if i == len(e.items) - 1 else self.state()
                    self.build(item, at, to, where, rule, active)
                    at = to
            case Alt():
                for option in e.options:
                    self.build(option, a, b, where, rule, active)
            case Repeat():
                at = a
                for _ in range(e.low):
                    to = self.state()
                    self.build(e.expr, at, to, where, rule, active)
                    at = to
                if e.high is None:
                    loop = self.state()
                    self.eps[at].append(loop)
                    self.build(e.expr, loop, loop, where, rule, active)
                    self.eps[loop].append(b)
                else:
                    self.eps[at].append(b)
                    for _ in range(e.high - e.low):
                        to = self.state()
                        self.build(e.expr, at, to, where, rule, active)
                        self.eps[to].append(b)
                        at = to
            case RuleRef():
                self.ref(e, a, b, where, rule, active)
            case CharVal() | NumVal() | NumRange() | ProseVal():
                kind = {CharVal: "a quoted string", NumVal: "a number", NumRange: "a range"}
                what = kind.get(type(e), "prose")
                raise DialogueError(
                    rule.span, f"rule {rule.name} holds {what}: a dialogue's terminals are steps"
                )
            case _:
                assert_never(e)

    def ref(
        self, e: RuleRef, a: int, b: int, where: str, rule: Rule, active: tuple[str, ...]
    ) -> None:
        key = e.name.lower()
        own = self.rules[where]
        if key in own:
            target, dialogue = own[key], where
        elif key in self.dialogues:
            dialogue = key
            d = self.dialogues[key]
            target = self.rules[key][d.start.lower()]
        elif key == FUNCTIONAL:
            options = tuple(RuleRef(n) for n in self.functional if n != where)
            if not options:
                self.eps[a].append(b)
            for option in options:
                self.ref(option, a, b, where, rule, active)
            return
        elif key in EMPTY:
            self.eps[a].append(b)
            return
        else:
            raise DialogueError(
                rule.span, f"rule {rule.name} of {where} names {e.name}, which nothing defines"
            )
        here = f"{dialogue}.{target.name.lower()}"
        if here in active:
            chain = " -> ".join((*active[active.index(here) :], here))
            raise DialogueError(target.span, f"recursive dialogue rule ({chain}): not regular")
        self.build(bind(target.expr, None, target), a, b, dialogue, target, (*active, here))

    def closure(self, states: Iterable[int]) -> frozenset[int]:
        seen = set(states)
        todo = list(seen)
        while todo:
            for nxt in self.eps[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return frozenset(seen)


def compile_dialogue(
    dialogues: Sequence[Dialogue], name: str, *, minimal: bool = True
) -> Automaton:
    """The DFA of dialogue `name`, nested dialogues expanded, its grammars interleaved, then
    minimized (`minimal=False` keeps the subset construction's states, for checking);
    states numbered breadth-first with labels in sorted order, so the tables are
    deterministic."""
    nfa = _NFA(dialogues)
    d = nfa.dialogues[name.lower()]
    rules = nfa.rules[name.lower()]
    if d.start.lower() not in rules:
        raise DialogueError(
            d.span or SourceSpan("?", 1), f"dialogue {d.name} has no rule {d.start}"
        )
    parts = [_determinize(nfa, name.lower(), top) for top in tops(d)]
    accepting, moves = parts[0]
    for top, (acc, mv) in zip(tops(d)[1:], parts[1:], strict=True):
        shared = {lab for row in moves for lab in row} & {lab for row in mv for lab in row}
        if shared:
            raise DialogueError(
                top.span,
                f"grammar {top.name} of {d.name} shares {', '.join(sorted(shared))} with "
                "another grammar of the class: their interleaving is ambiguous",
            )
        accepting, moves = _interleave(accepting, moves, acc, mv)
    if minimal:
        accepting, moves = minimize(accepting, moves)
    return Automaton(d.name.lower(), accepting, moves)


Table = tuple[frozenset[int], tuple[dict[str, int], ...]]


def _determinize(nfa: _NFA, where: str, top: Rule) -> Table:
    start, end = nfa.state(), nfa.state()
    root = (f"{where}.{top.name.lower()}",)
    nfa.build(bind(top.expr, None, top), start, end, where, top, root)
    first = nfa.closure([start])
    index = {first: 0}
    order = [first]
    moves: list[dict[str, int]] = []
    at = 0
    while at < len(order):
        here = order[at]
        targets: dict[str, set[int]] = {}
        for s in here:
            for lab, nxt in nfa.edges[s]:
                targets.setdefault(lab, set()).add(nxt)
        row: dict[str, int] = {}
        for lab in sorted(targets):
            subset = nfa.closure(targets[lab])
            if subset not in index:
                index[subset] = len(order)
                order.append(subset)
            row[lab] = index[subset]
        moves.append(row)
        at += 1
    accepting = frozenset(i for i, subset in enumerate(order) if end in subset)
    return accepting, tuple(moves)


def _interleave(
    acc1: frozenset[int],
    mv1: tuple[dict[str, int], ...],
    acc2: frozenset[int],
    mv2: tuple[dict[str, int], ...],
) -> Table:
    """The product DFA of two grammars over disjoint steps: each step moves one of them."""
    index = {(0, 0): 0}
    order = [(0, 0)]
    moves: list[dict[str, int]] = []
    at = 0
    while at < len(order):
        p, q = order[at]
        options = {lab: (t, q) for lab, t in mv1[p].items()}
        options.update({lab: (p, t) for lab, t in mv2[q].items()})
        row: dict[str, int] = {}
        for lab in sorted(options):
            pair = options[lab]
            if pair not in index:
                index[pair] = len(order)
                order.append(pair)
            row[lab] = index[pair]
        moves.append(row)
        at += 1
    accepting = frozenset(i for i, (p, q) in enumerate(order) if p in acc1 and q in acc2)
    return accepting, tuple(moves)


def minimize(accepting: frozenset[int], moves: tuple[dict[str, int], ...]) -> Table:
    """The smallest DFA of the same language (Moore's refinement: states are split until
    those left together agree on accepting and, per label, on the block they move to),
    renumbered breadth-first from the start with labels in sorted order, so the generated
    tables stay deterministic and a reviewer reads one state per situation."""
    block = [int(i in accepting) for i in range(len(moves))]
    while True:
        signature = [
            (block[i], tuple((lab, block[t]) for lab, t in sorted(row.items())))
            for i, row in enumerate(moves)
        ]
        ids: dict[tuple[int, tuple[tuple[str, int], ...]], int] = {}
        refined = [ids.setdefault(sig, len(ids)) for sig in signature]
        if len(ids) == len(set(block)):
            break
        block = refined
    index = {block[0]: 0}
    order = [0]  # a representative state per block, in breadth-first order
    out: list[dict[str, int]] = []
    at = 0
    while at < len(order):
        row: dict[str, int] = {}
        for lab, t in sorted(moves[order[at]].items()):
            if block[t] not in index:
                index[block[t]] = len(order)
                order.append(t)
            row[lab] = index[block[t]]
        out.append(row)
        at += 1
    return frozenset(i for i, s in enumerate(order) if s in accepting), tuple(out)


def compile_all(dialogues: Sequence[Dialogue]) -> dict[str, Automaton]:
    return {d.name.lower(): compile_dialogue(dialogues, d.name) for d in dialogues}
