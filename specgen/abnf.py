"""ABNF (RFC 5234, RFC 7405) -> a small frozen AST, plus finders for ABNF embedded in prose.

Several protocol documents state their wire syntax or their dialogues in ABNF: AMQ RFC 006 (the
AMQP/Fast frame syntax, indented blocks under plain-text prose), the AMQP 0-10 text (primitive
types and class dialogues, flattened into running prose) and the AMQP 0-9-1 XML
(`<doc type="grammar">`). This module is their one ABNF reader: `grammars/abnf.lark` parses, a
post-lexer applies ABNF's line layout, and the parse tree becomes the dataclasses of
`specgen.abnf_ast` (imported here too), each rule with its `SourceSpan` in the document. No lark
object leaves this module.

Strict and lenient parsing:
- `parse_rules` is strict: anything outside RFC 5234 and the extensions that `grammars/abnf.lark`
  documents raises `SpecSyntaxError` naming file:line:column.
- `parse_rules_lenient` is for published documents with known defects. It accepts the same
  text plus these defects, each returned as a `Defect(span, message)` for a front-end to report
  as a lint finding: a dangling alternative separator at the end of a rule (AMQ RFC 006's
  `command-payload = ... / handle-close /`, which is dropped), and a single-quoted string
  (AMQ RFC 006's `field-value = 'S' long-string`, read as a case-insensitive CharVal).
  Every other error is raised as in `parse_rules`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal, assert_never, cast

from lark import Lark, Token, Tree, UnexpectedCharacters, UnexpectedInput, UnexpectedToken
from lark.lark import PostLex

from specgen.abnf_ast import Alt as Alt
from specgen.abnf_ast import Base as Base
from specgen.abnf_ast import CharVal as CharVal
from specgen.abnf_ast import Expr as Expr
from specgen.abnf_ast import NumRange as NumRange
from specgen.abnf_ast import NumVal as NumVal
from specgen.abnf_ast import ProseVal as ProseVal
from specgen.abnf_ast import Repeat as Repeat
from specgen.abnf_ast import Rule as Rule
from specgen.abnf_ast import RuleRef as RuleRef
from specgen.abnf_ast import Seq as Seq
from specgen.abnf_ast import Step as Step
from specgen.locations import GRAMMARS
from specgen.spans import SourceSpan, SpecSyntaxError

GRAMMAR = GRAMMARS / "abnf.lark"


@dataclass(frozen=True, slots=True)
class Block:
    """ABNF found in prose: `text` starts at (line, column) of the document; its later lines, if
    any, are whole lines of the document."""

    text: str
    line: int
    column: int


@dataclass(frozen=True, slots=True)
class Defect:
    """A defect of a published document that `parse_rules_lenient` read past."""

    span: SourceSpan
    message: str


@dataclass(frozen=True, slots=True)
class Lenient:
    rules: tuple[Rule, ...]
    defects: tuple[Defect, ...]


# ---- parsing


def parse_rules(text: str, file: str, line: int = 1, column: int = 1) -> tuple[Rule, ...]:
    """Parse ABNF rules; `text` starts at (line, column) of `file` (its later lines are whole lines
    of the document, so their columns are the document's). Strict: raises SpecSyntaxError."""
    return _Parse(text, file, line, column, lenient=False).run().rules


def parse_rules_lenient(text: str, file: str, line: int = 1, column: int = 1) -> Lenient:
    """Like `parse_rules`, but reads past the published defects named in the module docstring and
    returns them as `defects`; any other error still raises SpecSyntaxError."""
    return _Parse(text, file, line, column, lenient=True).run()


class _Layout(PostLex):
    """ABNF's line layout: NL -> _SEP where a rule ends, dropped where it continues.

    Also drops a dangling "/" before a rule's end when the parse is lenient. State lives on the
    instance for the length of one parse (the parser is cached; parsing is single-threaded)."""

    always_accept = ("NL",)

    def __init__(self) -> None:
        self.parse: _Parse | None = None

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        parse = self.parse
        assert parse is not None
        rule_column: int | None = None
        held: Token | None = None  # a "/" or "|" waiting to see whether the rule ends after it
        for tok in stream:
            if tok.type == "NL":
                blank = tok.value.count("\n") >= 2
                # the column of the next character as the eye sees it: a tab moves to the next
                # multiple of 8, so a tab-indented continuation (0-9's XML) stays one
                indent = len(tok.value[tok.value.rfind("\n") + 1 :].expandtabs(8)) + 1
                if not (blank or rule_column is None or indent <= rule_column):
                    continue  # a continuation line
                tok = Token.new_borrow_pos("_SEP", "", tok)
                rule_column = None
            elif tok.type == "RULE_START":
                rule_column = parse.visual_column(tok)
            if held is not None:
                if tok.type == "_SEP" and parse.lenient:
                    parse.defect(held, f"rule ends with a dangling {held.value!r}; dropped")
                else:
                    yield held
                held = None
            if tok.type == "_ALT":
                held = tok
                continue
            yield tok
        if held is not None:
            if parse.lenient:
                parse.defect(held, f"rule ends with a dangling {held.value!r}; dropped")
            else:
                yield held


@functools.cache
def _parser() -> tuple[Lark, _Layout]:
    layout = _Layout()
    lark = Lark(
        GRAMMAR.read_text(encoding="utf-8"),
        parser="lalr",
        lexer="contextual",
        postlex=layout,
        propagate_positions=True,
        maybe_placeholders=False,
    )
    return lark, layout


_NAMES = {
    "RULE_START": "a rule `name = elements`",
    "NAME": "a rule name",
    "_ALT": "'/'",
    "_SEP": "the end of the rule",
    "$END": "the end of the text",
    "RPAR": "')'",
    "RSQB": "']'",
    "LPAR": "'('",
    "LSQB": "'['",
}


@dataclass
class _Parse:
    text: str
    file: str
    line: int
    column: int
    lenient: bool
    defects: list[Defect] = field(default_factory=list)

    def span(self, line: int, column: int) -> SourceSpan:
        """Document position of (line, column) within the text."""
        return SourceSpan(
            self.file, self.line + line - 1, column + (self.column - 1 if line == 1 else 0)
        )

    def token_span(self, tok: Token) -> SourceSpan:
        return self.span(tok.line or 1, tok.column or 1)

    def column_of(self, tok: Token) -> int:
        return self.token_span(tok).column

    def visual_column(self, tok: Token) -> int:
        """The token's column with tabs before it expanded (stops of 8), as NL indents are
        measured; on the text's first line, its document column."""
        if (tok.line or 1) == 1:
            return self.column_of(tok)
        row = self.text.split("\n")[(tok.line or 1) - 1]
        return len(row[: (tok.column or 1) - 1].expandtabs(8)) + 1

    def defect(self, tok: Token, message: str) -> None:
        self.defects.append(Defect(self.token_span(tok), message))

    def error(self, tok: Token, message: str) -> SpecSyntaxError:
        return SpecSyntaxError(self.token_span(tok), message)

    def run(self) -> Lenient:
        lark, layout = _parser()
        layout.parse = self
        try:
            tree = lark.parse(self.text)
        except UnexpectedInput as e:
            raise self._syntax_error(e) from None
        finally:
            layout.parse = None
        rules = tuple(self._rule(t) for t in tree.children if isinstance(t, Tree))
        return Lenient(rules, tuple(self.defects))

    # -- errors

    def _syntax_error(self, e: UnexpectedInput) -> SpecSyntaxError:
        line = e.line if e.line > 0 else 1
        column = e.column if e.column > 0 else 1
        if isinstance(e, UnexpectedCharacters):
            at = e.pos_in_stream or 0
            char = self.text[at] if at < len(self.text) else ""
            hint = " ('=' only follows a rule name at the start of a rule)" if char == "=" else ""
            return SpecSyntaxError(self.span(line, column), f"unexpected character {char!r}{hint}")
        assert isinstance(e, UnexpectedToken)
        tok = e.token
        expected = set(e.expected)
        ends = tok.type in ("_SEP", "$END")
        if tok.type == "$END":
            line, column = self._end_position()
        where = self.span(line, column)
        opener = self._unclosed(tok)
        if ends and opener is not None:
            return SpecSyntaxError(
                self.token_span(opener),
                f"unclosed {opener.value!r}: the rule ends at {where} before its "
                f"{')' if opener.value == '(' else ']'!r}",
            )
        if "RULE_START" in expected and tok.type in ("NAME", "REPEAT", "STEP", "CHAR_VAL"):
            return SpecSyntaxError(
                where, f"expected a rule `name = elements`, found {tok.value!r} with no '='"
            )
        if ends:
            last = self._previous_token(tok)
            if last is not None and last.type == "_ALT":
                return SpecSyntaxError(
                    self.token_span(last), f"{last.value!r} has no alternative after it"
                )
            if last is not None and last.type == "RULE_START":
                return SpecSyntaxError(self.token_span(last), "a rule with no elements after '='")
        found = "the end of the rule" if ends else repr(tok.value)
        wanted = sorted(_NAMES.get(x, x.lower().replace("_", " ")) for x in expected)
        return SpecSyntaxError(
            where, f"syntax error: unexpected {found} (expected one of: {', '.join(wanted)})"
        )

    def _end_position(self) -> tuple[int, int]:
        body = self.text.rstrip()
        lines = body.split("\n")
        return len(lines), len(lines[-1]) + 1

    def _tokens_before(self, tok: Token) -> list[Token]:
        """Tokens of the text before `tok` (lexed again; only on the error path)."""
        lark, layout = _parser()
        layout.parse = _Parse(self.text, self.file, self.line, self.column, lenient=False)
        out: list[Token] = []
        pos = tok.start_pos if tok.type != "$END" and tok.start_pos is not None else len(self.text)
        try:
            for t in lark.lex(self.text, dont_ignore=False):
                if t.start_pos is not None and t.start_pos >= pos:
                    break
                if t.type not in ("NL", "_SEP"):
                    out.append(t)
        except UnexpectedInput:
            pass
        finally:
            layout.parse = None
        return out

    def _previous_token(self, tok: Token) -> Token | None:
        before = self._tokens_before(tok)
        return before[-1] if before else None

    def _unclosed(self, tok: Token) -> Token | None:
        stack: list[Token] = []
        for t in self._tokens_before(tok):
            if t.type == "RULE_START":
                stack = []
            elif t.type in ("LPAR", "LSQB"):
                stack.append(t)
            elif t.type in ("RPAR", "RSQB") and stack:
                stack.pop()
        return stack[-1] if stack else None

    # -- tree -> AST

    def _rule(self, tree: Tree[Token]) -> Rule:
        start = cast(Token, tree.children[0])
        m = re.fullmatch(r"([A-Za-z][A-Za-z0-9-]*)[ \t]*=(/?)", start.value)
        assert m is not None
        expr = self._expr(cast(Tree[Token], tree.children[1]))
        return Rule(m.group(1), expr, self.token_span(start), incremental=bool(m.group(2)))

    def _expr(self, tree: Tree[Token]) -> Expr:
        kind = tree.data
        kids = tree.children
        if kind == "alternation":
            options = [self._expr(cast(Tree[Token], k)) for k in kids]
            return options[0] if len(options) == 1 else Alt(tuple(options))
        if kind == "concatenation":
            items = [self._expr(cast(Tree[Token], k)) for k in kids]
            return items[0] if len(items) == 1 else Seq(tuple(items))
        if kind == "repetition":
            if len(kids) == 1:
                return self._element(kids[0])
            return self._repeat(cast(Token, kids[0]), self._element(kids[1]))
        raise AssertionError(kind)  # pragma: no cover - the grammar has no other node

    def _repeat(self, tok: Token, expr: Expr) -> Repeat:
        text = tok.value
        if "*" not in text:
            return Repeat(expr, int(text), int(text))
        low_text, high_text = text.split("*")
        low = int(low_text) if low_text else 0
        high = int(high_text) if high_text else None
        if high is not None and high < low:
            raise self.error(tok, f"repeat {text!r}: at least {low} but at most {high}")
        return Repeat(expr, low, high)

    def _element(self, node: Tree[Token] | Token) -> Expr:
        if isinstance(node, Token):  # pragma: no cover - every element is a named tree
            raise AssertionError(node)
        kind = node.data
        tok = cast(Token, node.children[0])
        if kind == "ref":
            return RuleRef(tok.value)
        if kind == "step":
            role, _, name = tok.value.partition(":")
            return Step(role, name)
        if kind == "char_val":
            return CharVal(tok.value[1:-1])
        if kind == "case_val":
            return CharVal(tok.value[3:-1], case_sensitive=tok.value[1] in "sS")
        if kind == "quote_val":
            if not self.lenient:
                raise self.error(
                    tok, f"single-quoted string {tok.value}; ABNF quotes strings with '\"'"
                )
            self.defect(tok, f'single-quoted string {tok.value} read as "{tok.value[1:-1]}"')
            return CharVal(tok.value[1:-1])
        if kind == "prose_val":
            return ProseVal(tok.value[1:-1])
        if kind == "num_val":
            return self._num(tok)
        if kind == "num_span":
            return self._span_range(tok, cast(Token, node.children[1]))
        if kind in ("group", "option"):
            inner = self._expr(cast(Tree[Token], node.children[1]))
            return inner if kind == "group" else Repeat(inner, 0, 1)
        raise AssertionError(kind)  # pragma: no cover

    def _num(self, tok: Token) -> NumVal | NumRange:
        base, digits = _num_parts(tok, self)
        if "-" in digits:
            low_text, _, high_text = digits.partition("-")
            low = _int(low_text, base, tok, self)
            high = _int(high_text, base, tok, self)
            if high < low:
                raise self.error(tok, f"range {tok.value}: {low} above {high}")
            return NumRange(base, low, high)
        return NumVal(base, tuple(_int(d, base, tok, self) for d in digits.split(".")))

    def _span_range(self, first: Token, second: Token) -> NumRange:
        low = self._num(first)
        high = self._num(second)
        for tok, val in ((first, low), (second, high)):
            if not isinstance(val, NumVal) or len(val.values) != 1:
                raise self.error(tok, f"{tok.value}: each end of a '..' range is one value")
        assert isinstance(low, NumVal) and isinstance(high, NumVal)
        if low.base != high.base:
            raise self.error(second, f"range {first.value} .. {second.value} mixes two bases")
        if high.values[0] < low.values[0]:
            raise self.error(first, f"range {first.value} .. {second.value}: low above high")
        return NumRange(low.base, low.values[0], high.values[0])


_DIGITS: dict[str, tuple[int, str]] = {
    "b": (2, "01"),
    "d": (10, "0123456789"),
    "x": (16, "0123456789abcdefABCDEF"),
}


def _num_parts(tok: Token, parse: _Parse) -> tuple[Base, str]:
    base = tok.value[1].lower()
    if base not in _DIGITS:
        raise parse.error(tok, f"bad value {tok.value!r}: base {tok.value[1]!r} is not b, d or x")
    digits = tok.value[2:]
    if not re.fullmatch(r"[0-9A-Za-z]+(?:(?:\.[0-9A-Za-z]+)+|-[0-9A-Za-z]+)?", digits):
        raise parse.error(
            tok, f"bad value {tok.value!r}: expected %{base} digits, '.'-joined or a '-' range"
        )
    return cast(Base, base), digits


def _int(digits: str, base: Base, tok: Token, parse: _Parse) -> int:
    radix, allowed = _DIGITS[base]
    bad = [c for c in digits if c not in allowed]
    if bad:
        raise parse.error(tok, f"bad value {tok.value!r}: {bad[0]!r} is not a %{base} digit")
    return int(digits, radix)


# ---- rule sets


def merged(rules: Sequence[Rule]) -> dict[str, Rule]:
    """Rules by lower-cased name (ABNF names are case-insensitive), "=/" alternatives appended to
    the rule they extend. A second "=" definition, or "=/" before any "=", raises
    SpecSyntaxError at the offending rule."""
    out: dict[str, Rule] = {}
    for rule in rules:
        key = rule.name.lower()
        first = out.get(key)
        if not rule.incremental:
            if first is not None:
                raise SpecSyntaxError(
                    rule.span, f"rule {rule.name!r} is defined twice (first at {first.span})"
                )
            out[key] = rule
            continue
        if first is None:
            raise SpecSyntaxError(
                rule.span, f"rule {rule.name!r} adds alternatives with '=/' but is not defined"
            )
        options = _options(first.expr) + _options(rule.expr)
        out[key] = Rule(first.name, Alt(options), first.span)
    return out


def _options(expr: Expr) -> tuple[Expr, ...]:
    return expr.options if isinstance(expr, Alt) else (expr,)


def steps(expr: Expr) -> Iterator[Step]:
    """Every Step inside an expression, in document order."""
    match expr:
        case Step():
            yield expr
        case Seq():
            for item in expr.items:
                yield from steps(item)
        case Alt():
            for option in expr.options:
                yield from steps(option)
        case Repeat():
            yield from steps(expr.expr)
        case RuleRef() | CharVal() | NumVal() | NumRange() | ProseVal():
            pass
        case _:
            assert_never(expr)


# ---- finding ABNF in prose


def find_blocks(text: str, file: str, style: Literal["indented", "inline"]) -> list[Block]:
    """Blocks of ABNF in a document's text; `file` is only for messages (none are raised now).

    "indented" (RFC style, as AMQ RFC 006): a block is a display indented by at least one space,
    set off from the text before it by a blank line, whose first line is `name = ...` with a
    lower-case name. It runs on over lines indented further (continuations), lines at its own
    indentation that start a rule or a comment, and blank lines between those; it ends before
    any other line. So indented prose, field lists and the `gdl` header of RFC 006 (whose
    `title = AMQ RFC 006` follows the line `gdl` with no blank line) are not taken.

    "inline" (the AMQP 0-10 text, flattened into long lines): one Block per rule, since a ';'
    comment there has no line end to stop it (the Block ends it). A definition's helper rules
    follow it with only whitespace between Blocks (`int16 = high-byte low-byte` then
    `high-byte = OCTET`...), and names like `size` recur in many definitions, so group Blocks by
    that adjacency before `merged`. See `_inline_blocks` for the heuristic.
    """
    del file  # the finders raise nothing; kept for the shared signature
    if style == "indented":
        return _indented_blocks(text)
    return _inline_blocks(text)


_INDENTED_START = re.compile(r"( +)[a-z][a-z0-9-]*[ \t]*=(?!=)")


def _indented_blocks(text: str) -> list[Block]:
    lines = text.split("\n")
    plain = [ln.rstrip("\r") for ln in lines]
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _INDENTED_START.match(plain[i])
        if m is None or (i > 0 and plain[i - 1].strip()):
            i += 1
            continue
        indent = len(m.group(1))
        end = i + 1  # one past the block's last non-blank line
        j = i + 1
        while j < len(lines):
            ln = plain[j]
            if not ln.strip():
                j += 1
                continue
            lead = len(ln) - len(ln.lstrip(" "))
            at_own = lead == indent and (
                _INDENTED_START.match(ln) is not None or ln.lstrip().startswith(";")
            )
            if lead > indent or at_own:
                end = j = j + 1
                continue
            break
        body = "\n".join([lines[i][indent:]] + lines[i + 1 : end])
        blocks.append(Block(body, i + 1, indent + 1))
        i = end
    return blocks


# Inline rules. A candidate starts at `name =` (or `=/`) where the name is a lower-case hyphenated
# word not glued to a preceding word, ':' or '*'. Its elements are scanned token by token; it
# ends (a "boundary") at: the next candidate, the end of the text or of the line, a diagram
# (`+-`), a sentence end (". "), or a capitalised English word that is no rule element (`The`,
# `Note`, or `A`/`An`/`I` followed by a lower-case word). A ';' comment runs to the same
# boundaries. A candidate whose scan meets anything else (a '-' in `n = (size - 2 - pack-width)`,
# `]]>` after `port = number`), whose brackets do not balance, or that has no element, is prose.
_INLINE_START = re.compile(r"(?<![\w\-:*])[a-z][a-z0-9]*(?:-[a-z0-9]+)*[ \t]*=/?(?!=)")
_PROSE_WORD = re.compile(r"(?:[A-Z][a-z]+|[AI])\b(?!:)")
_TOKEN = re.compile(
    r"""
      (?P<ws>[ \t]+)
    | (?P<step>[CSR*]:[A-Za-z][A-Za-z0-9-]*)
    | (?P<name>[A-Za-z][A-Za-z0-9-]*)
    | (?P<repeat>[0-9]*\*[0-9]*|[0-9]+)
    | (?P<num>%[A-Za-z](?:[0-9A-Za-z\-]|\.(?!\.))*)
    | (?P<str>%[sSiI]?"[^"\n]*"|'[^'\n]*')
    | (?P<prose><[^>\n]*>)
    | (?P<open>[(\[])
    | (?P<close>[)\]])
    | (?P<alt>[/|])
    | (?P<dots>\.\.)
    """,
    re.VERBOSE,
)


def _inline_blocks(text: str) -> list[Block]:
    blocks: list[Block] = []
    pos = 0
    while True:
        m = _INLINE_START.search(text, pos)
        if m is None:
            return blocks
        end = _inline_end(text, m.end())
        if end is None:
            pos = m.end()
            continue
        line = text.count("\n", 0, m.start()) + 1
        column = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
        blocks.append(Block(text[m.start() : end].rstrip(), line, column))
        pos = end


def _boundary(text: str, pos: int) -> bool:
    if pos >= len(text) or text[pos] in "\r\n":
        return True
    if text.startswith("+-", pos) or text.startswith(". ", pos) or text[pos:] == ".":
        return True
    if _INLINE_START.match(text, pos):
        return True
    prose = _PROSE_WORD.match(text, pos)
    if prose is None or (pos > 0 and (text[pos - 1].isalnum() or text[pos - 1] in "-:*")):
        return False
    word = prose.group(0)
    # a lone capital is prose only when a lower-case word follows ("A server", "I think")
    return len(word) > 1 or re.match(r"[ \t]+[a-z]", text[prose.end() :]) is not None


def _inline_end(text: str, pos: int) -> int | None:
    """Where the rule whose elements start at `pos` ends, or None when it is prose."""
    depth = 0
    elements = 0
    while True:
        if _boundary(text, pos):
            break
        if text[pos] == ";":
            pos += 1
            while not _boundary(text, pos):
                pos += 1
            break
        tok = _TOKEN.match(text, pos)
        if tok is None:
            return None
        kind = tok.lastgroup
        if kind == "open":
            depth += 1
        elif kind == "close":
            depth -= 1
            if depth < 0:
                return None
        elif kind in ("step", "name", "num", "str", "prose"):
            elements += 1
        pos = tok.end()
    return pos if depth == 0 and elements > 0 else None
