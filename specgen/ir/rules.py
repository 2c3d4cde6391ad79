"""What a spec says a value or a sender must be, beyond its bytes: the rules a spec states.

A `SpecRule` is one such statement, read where the spec states it (its span): an AMQP 0-9-1
`<assert check="length" value="127"/>` on a domain, an AMQP 1.0 field's `mandatory="true"`,
the restricted type whose `<choice>`s a field's values come from, the "From" column of the
RabbitMQ Streams commands table. The rules describe, they check nothing: a later step turns
the checkable ones into code. A rule the spec states in words a program cannot apply is kept
too, `checkable=False` with its prose, so it is counted rather than lost.

Kinds and their operands
    notnull, null        a non-empty / an empty (or zero) value; no operand
    length               at most `value` characters (octets of a string)
    regexp               matches the regular expression `value`
    le lt ge gt eq ne    compared with the number `value`, or with the field `other` names
                         (`message:ConnectionTune.ChannelMax`), unless that field holds
                         `unbounded` (0: "no specified limit")
    range                `low` <= value <= `high` (either may be None: unbounded)
    choice               one of `values`
    response-code        a response code: one of `values`, the spec's table of codes
    mandatory, required  the field is present (not null); no operand
    multiple             the field may hold an array of its type; no operand
    requires             the value's type provides one of the archetypes `values`
    default              absent means `value`
    sender               only `value` ("client" or "server") sends the owner
    key-version          the owner, key `value`, goes with versions `low`..`high`
    prose                a rule stated in words only (`checkable` is False)

Owners are addressed as the overlay addresses nodes: `message:NAME` (a message, its `field`
an IR field path: `Queue`, `Bits1.NoWait`), `named:NAME` (a named structure), `typedef:NAME`
(a self-describing composite, its `field` the spec's name: `snd-settle-mode`), `frame`, or ""
(the protocol as a whole, for a rule tied to no message).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, assert_never, get_args

from specgen.ir.errors import IRError
from specgen.spans import SourceSpan

RuleKind = Literal[
    "notnull",
    "null",
    "length",
    "regexp",
    "le",
    "lt",
    "ge",
    "gt",
    "eq",
    "ne",
    "range",
    "choice",
    "response-code",
    "mandatory",
    "required",
    "multiple",
    "requires",
    "default",
    "sender",
    "key-version",
    "prose",
]
RULE_KINDS: tuple[str, ...] = get_args(RuleKind)
COMPARISONS = ("le", "lt", "ge", "gt", "eq", "ne")
OWNER_KINDS = ("message", "named", "typedef")

Operand = int | str | bool


@dataclass(frozen=True, slots=True)
class SpecRule:
    kind: RuleKind
    owner: str  # "message:QueueDeclare", "typedef:source", "named:...", "frame", ""
    field: str | None  # the field's path in the owner; None: a rule about the owner itself
    span: SourceSpan | None  # where the spec states it (an overlay's line, for an added one)
    value: Operand | None = None
    values: tuple[Operand, ...] = ()
    low: int | None = None
    high: int | None = None
    other: str = ""  # a field of another owner, compared with: "message:ConnectionTune.ChannelMax"
    unbounded: int | None = None  # `other`'s value meaning "no limit" (the rule then holds)
    checkable: bool = True
    prose: str = ""  # the spec's words; all there is of a rule that is not checkable
    via: str = ""  # where the field takes it from: "domain queue-name", "type sender-settle-mode"
    overlay: str = ""  # the overlay entry that added or corrected it

    def __post_init__(self) -> None:
        where = f"{self.span}: {self.address} {self.kind}"
        if self.kind not in RULE_KINDS:
            raise IRError(f"{where}: no rule kind {self.kind!r} (one of {', '.join(RULE_KINDS)})")
        kind, _, name = self.owner.partition(":")
        if self.owner not in ("", "frame") and (kind not in OWNER_KINDS or not name):
            raise IRError(f"{where}: owner {self.owner!r} is not KIND:NAME, frame or empty")
        if not self.checkable:
            if not self.prose:
                raise IRError(f"{where}: a rule that cannot be checked keeps its prose")
            return
        problem = _operand_problem(self)
        if problem:
            raise IRError(f"{where}: {problem}")

    @property
    def address(self) -> str:
        """Owner and field as one address: `message:QueueDeclare.Queue`."""
        return self.owner + (f".{self.field}" if self.field else "")


def _operand_problem(r: SpecRule) -> str:
    """What is wrong with a checkable rule's operand for its kind ("" when nothing)."""
    needs_field = "applies to a field"
    match r.kind:
        case "notnull" | "null" | "mandatory" | "required" | "multiple":
            return needs_field if r.field is None else ""
        case "length":
            ok = isinstance(r.value, int) and not isinstance(r.value, bool) and r.value >= 0
            return "" if ok and r.field else "needs a field and a length (a number)"
        case "regexp":
            if not isinstance(r.value, str) or r.field is None:
                return "needs a field and a pattern"
            try:
                re.compile(r.value)
            except re.error as e:
                return f"pattern {r.value!r}: {e}"
            return ""
        case "le" | "lt" | "ge" | "gt" | "eq" | "ne":
            number = isinstance(r.value, int) and not isinstance(r.value, bool)
            if r.field is None or number == bool(r.other):
                return "needs a field and one of a number (value) and another field (other)"
            return ""
        case "range":
            if r.field is None or (r.low is None and r.high is None):
                return "needs a field and a low or high bound"
            if r.low is not None and r.high is not None and r.low > r.high:
                return f"range {r.low}..{r.high} is empty"
            return ""
        case "choice" | "response-code":
            return "" if r.values and r.field else "needs a field and the values allowed"
        case "requires":
            return "" if r.values and r.field else "needs a field and the archetypes"
        case "default":
            return "" if r.value is not None and r.field else "needs a field and its value"
        case "sender":
            ok = r.value in ("client", "server") and r.field is None
            return "" if ok else "names client or server, of the owner itself"
        case "key-version":
            ok = isinstance(r.value, int) and r.low is not None and r.field is None
            return "" if ok else "names the owner's key (value) and versions (low, high)"
        case "prose":
            return "prose is never checkable"
        case _:
            assert_never(r.kind)


def rule_counts(rules: tuple[SpecRule, ...]) -> dict[str, tuple[int, int]]:
    """Per kind, in `RULE_KINDS` order: (checkable, prose only); kinds without rules left out."""
    out: dict[str, tuple[int, int]] = {}
    for kind in RULE_KINDS:
        checkable = sum(1 for r in rules if r.kind == kind and r.checkable)
        prose = sum(1 for r in rules if r.kind == kind and not r.checkable)
        if checkable or prose:
            out[kind] = (checkable, prose)
    return out
