"""How text a spec document gave reaches generated Python: only through the functions here.

A spec document is data. Its prose, names, labels and defaults are written into generated code
by exactly one rendering function per kind of place, each returning `Code`:

- `literal(value)`: a Python literal that evaluates to `value` (any string: quotes of both
  kinds, backslashes, `\\N{`, control characters, U+2028, lone surrogates);
- `doc(text)`: text placed between the `\"\"\"` of a docstring or another triple-quoted string,
  escaped so that the string's value is `text`;
- `comment(text)`: text after a `#`, on that one line;
- `in_fstring(text)`: text inside a template's single-line `f"..."` (braces doubled);
- `identifier(name, ...)`: a name that is a Python identifier, not a keyword and not a name the
  module already binds, else a located `SpecNameError` naming the rule;
- `number(value)`: an int or finite float written from its value.

`mark(protocol)` turns every string of a spec's IR into `SpecText` before planning; the code
templates' environment (`guard`, jinja's `finalize`) then refuses to write a `SpecText` that has
not passed through one of the functions above, so a new template cannot forget. A plain string a
planner derived from spec text (an f-string loses the mark) is written only when it cannot leave
the place it is written in: no quote, no backslash, no brace, no line break or other
unprintable character. Everything else that templates write is `Code` (rendered blocks, planned
expressions) or a number.

Whitespace: a docstring's value is the spec's text with its whitespace normalised (paragraphs
re-wrapped, runs of blanks as one, ends stripped: `normalise_space`), since black re-indents
docstrings; every other character round-trips.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import functools
import keyword
import math
import re
import sys
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import jinja2

from specgen.emitters.naming import PlanError
from specgen.spans import SourceSpan


class Code(str):
    """Python source text that is safe where a template writes it: produced by a rendering
    function of this module, by a template render, or by a planner from such pieces."""

    __slots__ = ()


class SpecText(str):
    """A string a spec document (or its overlay) gave; `span` is where, when known."""

    span: SourceSpan | None

    def __new__(cls, value: str, span: SourceSpan | None = None) -> SpecText:
        self = super().__new__(cls, value)
        self.span = span
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (SpecText, (str(self), self.span))


class SpecNameError(PlanError):
    """A name from a spec cannot be a Python name in the generated code; str() is located."""


class UnrenderedSpecText(RuntimeError):
    """A template wrote a spec string (or a string that could leave its place) raw."""


# --------------------------------------------------------------------------------------------
# The rendering functions

_UNSAFE_IN_DOC = re.compile(r'\\|"(?="|\Z)')


def _escape(ch: str) -> str:
    o = ord(ch)
    if o < 0x100:
        return f"\\x{o:02x}"
    if o < 0x10000:
        return f"\\u{o:04x}"
    return f"\\U{o:08x}"


def _visible(text: str, keep: str = "") -> str:
    """`text` with every unprintable character but those in `keep` as its escape."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch in keep else _escape(ch) for ch in text)


def doc(text: str) -> Code:
    """`text` for the inside of a non-raw `\"\"\"` string: its value there is `text`.

    Backslashes are doubled; a `"` is escaped where it could start or end a run of three (before
    another `"` or at the end of the text, since the template may write `\"\"\"` next); line
    breaks stay, every other unprintable character is written as its escape.
    """
    out = _UNSAFE_IN_DOC.sub(lambda m: "\\\\" if m.group() == "\\" else '\\"', str(text))
    return Code(_visible(out, keep="\n"))


def comment(text: str) -> Code:
    """`text` for after a `#`: one line, unprintable characters (line breaks too) escaped."""
    return Code(_visible(str(text)))


def literal(value: object) -> Code:
    """The Python literal of `value` (str, bytes, int, bool, None, finite float, or a tuple,
    list or frozenset of those): evaluating it gives `value` back."""
    if value is None or isinstance(value, bool | bytes):
        return Code(repr(value))
    if isinstance(value, str):
        return Code(repr(str(value)))
    if isinstance(value, int | float):
        return number(value)
    if isinstance(value, tuple):
        items = [literal(v) for v in value]
        return Code("(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")")
    if isinstance(value, list):
        return Code("[" + ", ".join(literal(v) for v in value) + "]")
    if isinstance(value, frozenset):
        # numbers by value, then anything else by its text: {1, 2, 10}, not {1, 10, 2}
        ordered = sorted(value, key=lambda v: (0, v, "") if _numeric(v) else (1, 0, literal(v)))
        inner = ", ".join(literal(v) for v in ordered)
        return Code(f"frozenset({{{inner}}})" if value else "frozenset()")
    raise TypeError(f"no Python literal for {type(value).__name__}")


def _numeric(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def in_fstring(text: str) -> Code:
    """`text` (a label that may hold spec text) for the inside of a single-line `f"..."` string
    a template writes: its value there is `text`. Braces are doubled (else they would open an
    expression), `"` and backslashes escaped, unprintable characters written as their escapes."""
    out = []
    for ch in str(text):
        if ch in "{}":
            out.append(ch * 2)
        elif ch in '"\\':
            out.append("\\" + ch)
        elif not ch.isprintable():
            out.append(literal(ch)[1:-1])  # the escape between the literal's quotes
        else:
            out.append(ch)
    return Code("".join(out))


def number(value: object) -> Code:
    """An int or finite float from its value (never from its spelling in the spec)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"not a number: {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value!r} has no literal")
    return Code(repr(int(value) if isinstance(value, int) else float(value)))


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def identifier(
    name: str,
    what: str,
    span: SourceSpan | None = None,
    taken: Iterable[str] = (),
) -> Code:
    """`name` as a Python name for `what` ("class", "field"...): ASCII letters, digits and `_`
    not starting with a digit (Python would fold other letters together), not a keyword, not one
    of `taken` (what the module binds besides). Else a SpecNameError at `span` naming the rule."""
    prefix = _where(name, span)
    if not _IDENTIFIER.fullmatch(name):
        raise SpecNameError(
            f"{prefix}{what} name {str(name)!r} is not a Python identifier (ASCII letters, "
            "digits and _, not starting with a digit): rename it in the spec or an overlay"
        )
    if keyword.iskeyword(name):
        raise SpecNameError(
            f"{prefix}{what} name {str(name)!r} is a Python keyword: rename it in an overlay"
        )
    if name in set(taken):
        raise SpecNameError(
            f"{prefix}{what} name {str(name)!r} would shadow a name the generated module "
            "defines: rename it in an overlay"
        )
    return Code(name)


_NAME_PART = re.compile(r"[A-Za-z0-9_]+")


def name_part(text: str, what: str, span: SourceSpan | None = None) -> Code:
    """`text`, which a spec's name gave, as a piece of a Python name after a fixed prefix (the
    `field_value` of `_encode_field_value`): ASCII letters, digits and `_` only (Python would
    fold other letters together), else a SpecNameError at `span` (or the text's own)."""
    if not _NAME_PART.fullmatch(text):
        raise SpecNameError(
            f"{_where(text, span)}{what} {str(text)!r} is not part of a Python identifier "
            "(ASCII letters, digits and _): rename it in the spec or an overlay"
        )
    return Code(text)


def _where(text: str, span: SourceSpan | None) -> str:
    """`file:line:col: ` of `span`, else of the spec text itself, else nothing."""
    where = span if span is not None else getattr(text, "span", None)
    return f"{where}: " if where is not None else ""


def byte_escapes(data: bytes | Iterable[int]) -> Code:
    """`data` as `\\xNN` escapes, for the inside of a template's `b"..."` literal."""
    return Code("".join(f"\\x{b:02x}" for b in bytes(data)))


def zero_bytes(n: int) -> Code:
    """`n` zero octets as escapes, for the inside of a template's `b"..."` literal."""
    return Code("\\x00" * int(n))


def normalise_space(text: str) -> str:
    """The whitespace normalisation a docstring's value goes through: blanks as one space."""
    return " ".join(text.split())


# --------------------------------------------------------------------------------------------
# The template guard

_INERT = re.compile(r"[^\"'\\{}]*")


def inert(text: str) -> bool:
    """Whether a plain string cannot leave any place a template writes it in: no quote, no
    backslash, no brace (an f-string would read it as an expression), nothing unprintable (no
    line break)."""
    return text.isprintable() and _INERT.fullmatch(text) is not None


def guard(value: object) -> object:
    """jinja's `finalize` for code templates: what `{{ ... }}` may write."""
    if isinstance(value, Code):
        return value
    if isinstance(value, jinja2.Undefined):
        return value  # an inline `if` without `else`: jinja writes nothing, or refuses (strict)
    if isinstance(value, SpecText):
        raise UnrenderedSpecText(
            f"{_template_line()}: wrote spec text {str(value)[:60]!r} raw: pass it through "
            "doc, literal, comment or identifier"
        )
    if isinstance(value, str):
        if inert(value):
            return value
        raise UnrenderedSpecText(
            f"{_template_line()}: wrote {value[:60]!r}, which holds a quote, backslash, brace "
            "or unprintable character, without a rendering function (doc, literal, comment, "
            "in_fstring) or as Code"
        )
    if isinstance(value, bool | int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    raise UnrenderedSpecText(f"{_template_line()}: wrote a {type(value).__name__} ({value!r})")


def _template_line() -> str:
    """The template file and line being rendered, from the stack (jinja's own frames)."""
    frame = sys._getframe(2)
    while frame is not None:
        template = frame.f_globals.get("__jinja_template__")
        if template is not None:
            return f"{template.name}:{template.get_corresponding_lineno(frame.f_lineno)}"
        frame = frame.f_back  # type: ignore[assignment]
    return "a template"


def keeping_kind(filter_: Callable[..., Any]) -> Callable[..., Any]:
    """A string filter (indent, trim, wordwrap...) whose result is Code or SpecText when its
    input is: reshaping text does not change where it came from."""
    # jinja passes an environment or context first to filters marked so (`jinja_pass_arg`)
    first = 1 if hasattr(filter_, "jinja_pass_arg") else 0

    @functools.wraps(filter_)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        value, out = args[first], filter_(*args, **kwargs)
        if isinstance(out, str) and not isinstance(out, Code | SpecText):
            if isinstance(value, SpecText):
                return SpecText(out, value.span)
            if isinstance(value, Code):
                return Code(out)
        return out

    return wrapped


def concat(parts: Iterable[str]) -> Code:
    """jinja's `concat` for code templates: what a template or macro renders is Code, since
    every `{{ }}` in it went through `guard`."""
    return Code("".join(parts))


def join(items: Iterable[Any], sep: str = "") -> str:
    """jinja's `join`, keeping the kind: Code when every item is Code (or a number), SpecText
    when any item is spec text, else a plain string."""
    items = list(items)
    text = str(sep).join(str(i) for i in items)
    if any(isinstance(i, SpecText) for i in items):
        return SpecText(text)
    if all(isinstance(i, Code | int) for i in items) and (isinstance(sep, Code) or inert(sep)):
        return Code(text)
    return text


# --------------------------------------------------------------------------------------------
# Marking a spec's IR

_T = TypeVar("_T")


def mark(node: _T, span: SourceSpan | None = None) -> _T:
    """`node` (a Protocol, or any IR value) with every string in it a SpecText carrying the
    span of the nearest node that has one. The IR's checks ran when it was built: this copies
    the nodes without running them again."""
    if isinstance(node, SpecText):
        return node
    if isinstance(node, str):
        return SpecText(node, span)  # type: ignore[return-value]
    if isinstance(node, tuple):
        return tuple(mark(v, span) for v in node)  # type: ignore[return-value]
    if isinstance(node, list):
        return [mark(v, span) for v in node]  # type: ignore[return-value]
    if isinstance(node, frozenset):
        return frozenset(mark(v, span) for v in node)  # type: ignore[return-value]
    if isinstance(node, dict):
        return {mark(k, span): mark(v, span) for k, v in node.items()}  # type: ignore[return-value]
    if isinstance(node, SourceSpan) or not dataclasses.is_dataclass(node):
        return node
    own = getattr(node, "span", None)
    here = own if isinstance(own, SourceSpan) else span
    copy = object.__new__(type(node))
    for f in dataclasses.fields(node):
        object.__setattr__(copy, f.name, mark(getattr(node, f.name), here))
    return copy


# --------------------------------------------------------------------------------------------
# Names in the rendered module

# builtins the generated code calls: a module-level name from a spec must not hide them
_BUILTINS_USED = frozenset(
    name for name in dir(builtins) if name[:1].islower() and not name.startswith("_")
)


# what can bind a name at a module's top level, read from its lines: every top-level statement
# starts a line at column 0 (lines of a string may match too: this finds a superset)
_TOP_LEVEL = re.compile(
    r"^(?:(?:async\s+)?def|class)\s+(\w+)|^(\w+)\s*(?::|=(?!=))"
    r"|^(?:from\s+\S+\s+)?import\s+(\([^)]*\)|[^\n]*)",
    re.M,
)


def _maybe_bound(text: str) -> list[str]:
    """A superset of the names `text`'s top level binds, one entry per binding, cheaply."""
    out: list[str] = []
    for m in _TOP_LEVEL.finditer(text):
        if m.group(3) is None:
            out.append(m.group(1) or m.group(2))
            continue
        items = re.sub(r"#[^\n]*", "", m.group(3)).strip("()")
        for item in items.split(","):
            words = item.split()
            if words and words[0] != "*":
                out.append(words[-1] if "as" in words else words[0].split(".")[0])
    return out


def check_bindings(
    text: str, module: str, names: dict[str, SourceSpan | None], tree: ast.Module | None = None
) -> None:
    """Refuse a rendered module where a top-level name is bound twice (a spec's name shadowing
    another definition or import) or hides a builtin function or type. `names` says where each
    spec name written through the `name` filter came from, for a located error. The module's
    syntax tree (`tree`, else parsed) is read only when its lines show a name twice or a
    builtin's: most modules are cleared by one scan of their text."""
    maybe = _maybe_bound(text)
    if len(set(maybe)) == len(maybe) and not _BUILTINS_USED.intersection(maybe):
        return
    if tree is None:
        tree = ast.parse(text)
    seen: set[str] = set()
    for node in tree.body:
        bound: list[str] = []
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            bound = [node.name]
        elif isinstance(node, ast.Assign):
            bound = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            bound = [node.target.id]
        elif isinstance(node, ast.Import | ast.ImportFrom):
            # `import *` binds its module's __all__, which the emitter keeps apart
            bound = [(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"]
        for name in bound:
            rule = (
                "is bound twice (it would shadow another definition or import)"
                if name in seen
                else "would hide the Python builtin of that name"
                if name in _BUILTINS_USED
                else ""
            )
            if rule:
                where = names.get(name)
                prefix = f"{where}: " if where is not None else ""
                raise SpecNameError(
                    f"{prefix}name {name!r} in generated {module} {rule}: rename it in an overlay"
                )
            seen.add(name)
