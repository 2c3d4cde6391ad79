"""The ABNF AST (RFC 5234, RFC 7405): frozen, slotted nodes and nothing else.

`specgen.abnf` builds them from ABNF text; the IR keeps them in its dialogues
(`ir.Dialogue.rules`) and loads them from JSON; the dialogue checkers and the front-ends that
read dialogues from prose (`frontends/rfc006_flow`, `rfc006_lifetime`) build and walk them.
They live apart from the parser so that the IR can hold them without importing lark or the
parser importing the IR.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from specgen.spans import SourceSpan

Base = Literal["b", "d", "x"]


@dataclass(frozen=True, slots=True)
class RuleRef:
    name: str  # a rule name, as written (case kept)


@dataclass(frozen=True, slots=True)
class CharVal:
    text: str
    case_sensitive: bool = False  # RFC 7405 %s"..." -> True


@dataclass(frozen=True, slots=True)
class NumVal:
    base: Base
    values: tuple[int, ...]  # %d13.10 -> ("d", (13, 10))


@dataclass(frozen=True, slots=True)
class NumRange:
    base: Base
    low: int  # %x30-39, also AMQ RFC 006's "%x0 .. %xFFFE"
    high: int


@dataclass(frozen=True, slots=True)
class ProseVal:
    text: str  # <prose>, without the brackets


@dataclass(frozen=True, slots=True)
class Step:
    role: str  # "C" client, "S" server; the 0-10 text also has "R" (receiver) and "*" (either)
    name: str  # C:OPEN -> Step("C", "OPEN")


@dataclass(frozen=True, slots=True)
class Seq:
    items: tuple[Expr, ...]  # concatenation, 2+ items


@dataclass(frozen=True, slots=True)
class Alt:
    options: tuple[Expr, ...]  # alternation, 2+ options


@dataclass(frozen=True, slots=True)
class Repeat:
    expr: Expr
    low: int = 0
    high: int | None = None  # *x (0, None), 1*x, 2*4x, 3x = (3, 3), [x] = (0, 1)


Expr = RuleRef | CharVal | NumVal | NumRange | ProseVal | Step | Seq | Alt | Repeat


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    expr: Expr
    span: SourceSpan  # where the rule's name starts
    incremental: bool = False  # "=/" adds alternatives
