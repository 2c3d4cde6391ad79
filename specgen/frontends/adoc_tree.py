"""AsciiDoc protocol reference -> a document of typed blocks (no lark object leaves this module).

`grammars/adoc.lark` does the parsing; this module turns lark's tree into plain dataclasses that
keep their `SourceSpan`, and turns lark's syntax errors into `SpecSyntaxError(file:line:column)`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from lark import Lark, Token, Tree, UnexpectedInput

from specgen.locations import GRAMMARS
from specgen.spans import SourceSpan
from specgen.spans import SpecSyntaxError as SpecSyntaxError  # where the front-ends import it

GRAMMAR = GRAMMARS / "adoc.lark"


# ---- terms of a layout rule's right-hand side


@dataclass(frozen=True)
class Ref:
    name: str
    span: SourceSpan
    array: bool = False  # written [Name]


@dataclass(frozen=True)
class Group:
    alternatives: tuple[tuple[Term, ...], ...]  # ( A | B C )
    span: SourceSpan


@dataclass(frozen=True)
class Annotation:
    text: str  # without the parentheses
    span: SourceSpan


Term = Ref | Group | Annotation


@dataclass(frozen=True)
class Rule:
    name: str
    alternatives: tuple[tuple[Term, ...], ...]
    comment: str  # without the leading //, stripped
    span: SourceSpan


# ---- blocks


@dataclass(frozen=True)
class SectionTitle:
    level: int
    title: str
    span: SourceSpan


@dataclass(frozen=True)
class Cell:
    text: str
    span: SourceSpan


@dataclass(frozen=True)
class Table:
    lines: tuple[tuple[Cell, ...], ...]  # cells as written, one tuple per source line
    span: SourceSpan


@dataclass(frozen=True)
class CodeBlock:
    rules: tuple[Rule, ...]
    examples: tuple[tuple[str, SourceSpan], ...]
    span: SourceSpan


@dataclass(frozen=True)
class Text:
    """A paragraph, list item, types entry, block title or attribute line."""

    kind: str  # paragraph | nb | bullet | numbered | types | block_title | attribute | literal
    text: str
    span: SourceSpan


@dataclass(frozen=True)
class VersionMarker:
    version: int
    span: SourceSpan


Block = SectionTitle | Table | CodeBlock | Text | VersionMarker


@dataclass
class Document:
    path: str
    blocks: list[Block] = field(default_factory=list)


@functools.cache
def _parser() -> Lark:
    return Lark(
        GRAMMAR.read_text(encoding="utf-8"),
        parser="lalr",
        lexer="contextual",
        propagate_positions=True,
        maybe_placeholders=False,
    )


def parse(text: str, path: str) -> Document:
    """Parse a whole document; `path` (relative) is what spans and errors name."""
    if not text.endswith("\n"):
        text += "\n"
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as e:
        span = SourceSpan(path, e.line if e.line > 0 else 1, e.column if e.column > 0 else 1)
        raise SpecSyntaxError(span, _describe(e), e.get_context(text).rstrip()) from None
    return Document(
        path, [_block(child, path) for child in tree.children if isinstance(child, Tree)]
    )


def _describe(e: UnexpectedInput) -> str:
    token = getattr(e, "token", None)
    expected = sorted(getattr(e, "expected", None) or getattr(e, "allowed", None) or [])
    if token is not None and getattr(token, "type", "") == "$END":
        what = "unexpected end of file"
    elif token is not None:
        what = f"unexpected {str(token)!r}"
    else:
        char = getattr(e, "char", "")
        what = f"unexpected character {char!r}"
    shown = ", ".join(expected[:8])
    return f"syntax error: {what}" + (f" (expected one of: {shown})" if shown else "")


def _span(path: str, node: Tree[Token] | Token) -> SourceSpan:
    if isinstance(node, Token):
        return SourceSpan(path, node.line or 1, node.column or 1)
    return SourceSpan(path, node.meta.line, node.meta.column)


def _tokens(tree: Tree[Token]) -> list[Token]:
    return [c for c in tree.children if isinstance(c, Token)]


def _block(tree: Tree[Token], path: str) -> Block:
    span = _span(path, tree)
    kind = tree.data
    toks = _tokens(tree)
    if kind == "section_title":
        marks, _, title = toks[0].partition(" ")
        return SectionTitle(len(marks), title.strip(), span)
    if kind == "version_marker":
        return VersionMarker(int(toks[0].split()[1]), span)
    if kind == "table":
        lines = tuple(
            tuple(Cell(str(t)[1:].strip(), _span(path, t)) for t in _tokens(line))
            for line in tree.children
            if isinstance(line, Tree)
        )
        return Table(lines, span)
    if kind == "code_block":
        rules: list[Rule] = []
        examples: list[tuple[str, SourceSpan]] = []
        for child in tree.children:
            if isinstance(child, Tree) and child.data == "rule":
                rules.append(_rule(child, path))
            elif isinstance(child, Tree) and child.data == "example":
                examples.append((str(_tokens(child)[0]), _span(path, child)))
        return CodeBlock(tuple(rules), tuple(examples), span)
    if kind == "literal_block":
        return Text("literal", "\n".join(str(t) for t in toks[1:-1]), span)
    text_kind = {
        "block_title": "block_title",
        "attribute": "attribute",
        "types_entry": "types",
    }.get(kind)
    if text_kind is None and kind == "list_item":
        text_kind = "bullet" if toks[0].type == "BULLET" else "numbered"
    if text_kind is None:
        text_kind = "nb" if toks[0].type == "NB_TEXT" else "paragraph"
    return Text(text_kind, " ".join(str(t).strip() for t in toks), span)


def _rule(tree: Tree[Token], path: str) -> Rule:
    name_tok = tree.children[0]
    assert isinstance(name_tok, Token)
    rhs = next(c for c in tree.children if isinstance(c, Tree) and c.data == "rhs")
    comment = next(
        (str(c)[2:].strip() for c in tree.children if isinstance(c, Token) and c.type == "COMMENT"),
        "",
    )
    return Rule(str(name_tok), _alternatives(rhs, path), comment, _span(path, name_tok))


def _alternatives(rhs: Tree[Token], path: str) -> tuple[tuple[Term, ...], ...]:
    return tuple(
        tuple(_term(t, path) for t in seq.children if isinstance(t, Tree))
        for seq in rhs.children
        if isinstance(seq, Tree)
    )


def _term(tree: Tree[Token], path: str) -> Term:
    span = _span(path, tree)
    if tree.data == "ref":
        return Ref(str(tree.children[0]), span)
    if tree.data == "array_ref":
        return Ref(str(tree.children[0]), span, array=True)
    if tree.data == "annotation":
        return Annotation(str(tree.children[0])[1:-1].strip(), span)
    inner = tree.children[0]
    assert isinstance(inner, Tree)
    return Group(_alternatives(inner, path), span)
