"""What the conformance template renders, as data: hypothesis strategies, the sizes of derived
fields and boundary sample values.

`conformance.py` builds these from the IR; `templates/python/_conformance_macros.j2` writes them
as Python, one macro per family dispatching on a node's `kind` (its class name). Nodes hold
names and literal values only: every call, operator and condition is the template's.
"""

from __future__ import annotations

from dataclasses import dataclass

from specgen.emitters.pytext import Code

Path = tuple[str, ...]
"""A variable and the attributes read from it: ("x", "data") is `x.data`."""


class Node:
    """Something a macro of the conformance template dispatches on."""

    __slots__ = ()

    @property
    def kind(self) -> str:
        return type(self).__name__


# ---- hypothesis strategies


@dataclass(frozen=True, slots=True)
class Integers(Node):
    lo: int
    hi: int


@dataclass(frozen=True, slots=True)
class Unsigned(Node):
    """Any integer of `bits` unsigned bits, its bound written as a power of two."""

    bits: int


@dataclass(frozen=True, slots=True)
class Floats(Node):
    bits: int  # 32 or 64: hypothesis draws only values that width holds exactly


@dataclass(frozen=True, slots=True)
class Booleans(Node):
    pass


@dataclass(frozen=True, slots=True)
class Nones(Node):
    pass


@dataclass(frozen=True, slots=True)
class Text(Node):
    max_size: int


@dataclass(frozen=True, slots=True)
class Binary(Node):
    max_size: int


@dataclass(frozen=True, slots=True)
class Defined(Node):
    """A strategy the template defines once per module: TABLES, VALUES or DECIMALS."""

    name: str


@dataclass(frozen=True, slots=True)
class NoneOr(Node):
    inner: Strategy


@dataclass(frozen=True, slots=True)
class Lists(Node):
    item: Strategy
    max_size: int


@dataclass(frozen=True, slots=True)
class OneOf(Node):
    options: tuple[Strategy, ...]


@dataclass(frozen=True, slots=True)
class Sampled(Node):
    values: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class StructDraw(Node):
    """The strategy the composite `func` returns."""

    func: str


Strategy = (
    Integers
    | Unsigned
    | Floats
    | Booleans
    | Nones
    | Text
    | Binary
    | Defined
    | NoneOr
    | Lists
    | OneOf
    | Sampled
    | StructDraw
)


# ---- sizes: what an encoder writes into a size field, computed from the values it covers


@dataclass(frozen=True, slots=True)
class Const(Node):
    value: int


@dataclass(frozen=True, slots=True)
class Len(Node):
    """The length of `target`; in UTF-8 bytes when `encoded`."""

    target: Path
    encoded: bool = False


@dataclass(frozen=True, slots=True)
class Prefixed(Node):
    """A length prefix, then `content` unless the value is null (the prefix alone)."""

    prefix: int
    content: Len


@dataclass(frozen=True, slots=True)
class Plus(Node):
    parts: tuple[Size, ...]


@dataclass(frozen=True, slots=True)
class SumOf(Node):
    """`item`, the size of one element bound to `var`, summed over `target`."""

    item: Size
    var: str
    target: Path


@dataclass(frozen=True, slots=True)
class ClassCase:
    cls: str
    size: Size


@dataclass(frozen=True, slots=True)
class ByClass(Node):
    """The size of the first case whose class `target` is an instance of; 0 for none."""

    cases: tuple[ClassCase, ...]
    target: Path


Size = Const | Len | Prefixed | Plus | SumOf | ByClass


# ---- composites: one function per class, drawing its fields and computing the derived ones


@dataclass(frozen=True, slots=True)
class Draw(Node):
    strategy: Strategy


@dataclass(frozen=True, slots=True)
class Branch:
    values: tuple[int, ...]  # the discriminator values selecting it
    value: Draw | None  # None: the case carries nothing


@dataclass(frozen=True, slots=True)
class Chosen(Node):
    """A switch's value: the branch the local `on` selects, else `default`."""

    on: str
    branches: tuple[Branch, ...]
    default: Draw | None


@dataclass(frozen=True, slots=True)
class ThenNone(Node):
    """An optional field: None once the optional field before it (`previous`) is."""

    previous: str
    inner: Draw


Expr = Draw | Chosen | ThenNone | Len | SumOf


@dataclass(frozen=True, slots=True)
class Composite:
    """`name`, a hypothesis composite drawing one `cls`: each local in turn, then the class
    called with `args`."""

    name: str
    cls: str
    lines: tuple[tuple[str, Expr], ...]
    args: tuple[str, ...]

    @property
    def draws(self) -> bool:
        """Whether it draws anything; a class without fields is one constant value."""
        return any(not isinstance(e, (Len, SumOf)) for _, e in self.lines)


# ---- sample values


@dataclass(frozen=True, slots=True)
class Literal(Node):
    source: Code  # a constant's literal (pytext.literal): int, float, bool, str, bytes or None


@dataclass(frozen=True, slots=True)
class DecimalOf(Node):
    text: str


@dataclass(frozen=True, slots=True)
class ByteRange(Node):
    """Every byte value in order, `times` over."""

    times: int


@dataclass(frozen=True, slots=True)
class ListOf(Node):
    items: tuple[Value, ...]


@dataclass(frozen=True, slots=True)
class Repeat(Node):
    """`items` repeated `times` over, written once."""

    items: tuple[Value, ...]
    times: int


@dataclass(frozen=True, slots=True)
class DictOf(Node):
    pairs: tuple[tuple[Value, Value], ...]


@dataclass(frozen=True, slots=True)
class Call(Node):
    cls: str
    args: tuple[Value, ...]


Value = Literal | DecimalOf | ByteRange | ListOf | Repeat | DictOf | Call
