"""XML spec text -> a tree of plain `Element`s (no lark object leaves this module).

`grammars/xml.lark` does the parsing; this module turns lark's tree into frozen dataclasses that
keep their `SourceSpan`, and every problem into `SpecSyntaxError(file:line:column)`.

Safe by construction: nothing is ever fetched or expanded. A DOCTYPE may name an external DTD,
which is never opened; a DOCTYPE with an internal subset (where entities are declared) is
refused. Only the five predefined entities and character references are resolved; any other
`&name;` and a bare `&` are errors.

Line ends are normalized to LF first (XML 1.0 section 2.11), so text and attribute values never
hold a CR; attribute values are otherwise kept as written (no attribute-value normalization:
a newline or tab in a value stays one). A leading byte order mark is dropped.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from lark import Lark, Token, Transformer, Tree, UnexpectedCharacters, UnexpectedInput

from specgen.frontends.adoc_tree import SpecSyntaxError
from specgen.frontends.spec_text import read_spec_text
from specgen.ir import SourceSpan
from specgen.locations import GRAMMARS

GRAMMAR = GRAMMARS / "xml.lark"

MAX_DEPTH = 100  # the AMQP specs nest 9 deep; far deeper is an attack on the recursion here
PREDEFINED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}
_REF = re.compile(r"&(#[0-9]+|#x[0-9A-Fa-f]+|[:A-Za-z_][-\w.:]*);")


@dataclass(frozen=True)
class Element:
    tag: str
    attrs: dict[str, str]  # references resolved, whitespace as written
    children: tuple[Element | str, ...]  # adjacent text (and CDATA) merged into one str
    span: SourceSpan = field(compare=False)  # the start tag's '<'
    attr_spans: dict[str, SourceSpan] = field(compare=False, repr=False)  # each name's start

    def attr(self, name: str, default: str | None = None) -> str | None:
        return self.attrs.get(name, default)

    def find(self, tag: str) -> Element | None:
        """The first direct child element with this tag."""
        return next((e for e in self.elements() if e.tag == tag), None)

    def findall(self, tag: str) -> list[Element]:
        return [e for e in self.elements() if e.tag == tag]

    def elements(self) -> list[Element]:
        return [c for c in self.children if isinstance(c, Element)]

    @property
    def text(self) -> str:
        """All descendant text, in document order."""
        return "".join(c if isinstance(c, str) else c.text for c in self.children)


def parse(text: str, path: str) -> Element:
    """Parse a whole document and return its root element; `path` (relative) is what spans and
    errors name."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    _check_depth(text, path)
    tree = _parse(text, path)
    root, *tail = (c for c in tree.children if isinstance(c, Tree) or c.type in {"TEXT", "CDATA"})
    assert isinstance(root, Tree)
    for extra in tail:
        if isinstance(extra, Tree):
            first, second = _start(root), _start(extra)
            raise SpecSyntaxError(
                _span(path, second),
                f"a second root element <{second[1:]}> (a document has exactly one; the first "
                f"is <{first[1:]}> at {_span(path, first)})",
            )
        offset = len(extra) - len(extra.lstrip()) if extra.type == "TEXT" else 0
        if extra.strip() or extra.type == "CDATA":
            where = _advance(path, extra, offset)
            raise SpecSyntaxError(where, "text after the root element")
    return _element(root, path)


def root_start(text: str, path: str) -> Element:
    """The root element's start tag alone: its tag and attributes, no children. What comes
    before it (declaration, comments however long, processing instructions, a DOCTYPE) is
    parsed by the document's grammar; nothing after the tag is read. Errors as `parse`'s."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    _check_depth(text, path)  # a deep document is refused here as parse would, before lark
    error: SpecSyntaxError
    try:
        parser = _parser().parse_interactive(text)
        for token in parser.iter_parse():  # each token is yielded before it is fed
            if token.type in ("_TAG_END", "_EMPTY_END"):
                break
        else:
            _parse(text, path)  # the file ends before a start tag does: say so as parse does
        stack = parser.parser_state.value_stack
    except _Refused as e:
        error = e.error(path)
    except UnexpectedInput as e:
        span, message = _describe(e, text, path)
        error = SpecSyntaxError(span, message, e.get_context(text).rstrip())
    else:
        return _start_tag(_tokens(stack), path)
    raise error  # outside the handlers, so no lark exception rides along as __context__


def _tokens(stack: list[object]) -> list[Token]:
    out: list[Token] = []
    for value in stack:
        if isinstance(value, Token):
            out.append(value)
        elif isinstance(value, Tree):
            out.extend(_tokens(list(value.children)))
    return out


def _start_tag(tokens: list[Token], path: str) -> Element:
    """The element whose start tag the parser stopped after (the last STAG_OPEN's tokens)."""
    at = max(i for i, t in enumerate(tokens) if t.type == "STAG_OPEN")
    start = tokens[at]
    attrs: dict[str, str] = {}
    attr_spans: dict[str, SourceSpan] = {}
    rest = [t for t in tokens[at + 1 :] if t.type in ("NAME", "ATTR_VALUE")]
    for name, value in zip(rest[::2], rest[1::2], strict=True):
        if name in attrs:
            raise SpecSyntaxError(
                _span(path, name),
                f"duplicate attribute {str(name)!r} on <{start[1:]}> (first at {attr_spans[name]})",
            )
        attrs[str(name)] = _resolve(path, value, 1, len(value) - 1)
        attr_spans[str(name)] = _span(path, name)
    return Element(start[1:], attrs, (), _span(path, start), attr_spans)


# The markup that opens and closes elements, lexed as grammars/xml.lark lexes it, for the depth
# check; markup in which a '<' or '>' opens or closes nothing (comments, CDATA, processing
# instructions and the XML declaration, a DOCTYPE's quoted ids, quoted attribute values) is
# matched whole. A '<' none of these match is where lark fails too: the check stops there.
# Linear: a start or end tag cannot run past the next '<', nothing backtracks (possessive), and
# the rest is matched once.
_MARKUP = re.compile(
    r"""
      <!--.*?-->
    | <!\[CDATA\[.*?\]\]>
    | <\?.*?\?>
    | <!DOCTYPE(?:[^>\["']++|"[^"]*+"|'[^']*+')*+>
    | (?P<end></[^<>]*+>)
    | (?P<start><[^\s!?/<>"'=](?:[^<>"']++|"[^"<]*+"|'[^'<]*+')*+>)
    | (?P<other><)
    """,
    re.S | re.X,
)


def _check_depth(text: str, path: str) -> None:
    """Refuse an element nested more than MAX_DEPTH deep before lark reads anything: a scan of
    the tags that stops at the first such element, so a hostile document costs no parse (lark
    takes seconds over 100,000 nested elements). `_element` checks again, as a backstop."""
    depth = 0
    for m in _MARKUP.finditer(text):
        kind = m.lastgroup
        if kind == "start":
            if depth == MAX_DEPTH:  # this element, empty or not, is one deeper
                start = m.start()
                span = SourceSpan(
                    path, text.count("\n", 0, start) + 1, start - text.rfind("\n", 0, start)
                )
                raise SpecSyntaxError(span, f"elements nested more than {MAX_DEPTH} deep")
            if not m[0].endswith("/>"):
                depth += 1
        elif kind == "end":
            depth = max(depth - 1, 0)
        elif kind == "other":
            return  # not well-formed here: lark says how


def _parse(text: str, path: str) -> Tree[Token]:
    error: SpecSyntaxError
    try:
        return _parser().parse(text)
    except _Refused as e:
        error = e.error(path)
    except UnexpectedInput as e:
        span, message = _describe(e, text, path)
        error = SpecSyntaxError(span, message, e.get_context(text).rstrip())
    raise error  # outside the handlers, so no lark exception rides along as __context__


def parse_file(path: Path, root: Path) -> Element:
    """Parse a UTF-8 file; spans name it relative to `root` when it is inside `root`."""
    try:
        name = path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        name = path.as_posix()
    return parse(read_spec_text(path, name), name)


# ---- lark -> Element


def _element(tree: Tree[Token], path: str, depth: int = 1) -> Element:
    start = _start(tree)
    tag = start[1:]
    if depth > MAX_DEPTH:
        raise SpecSyntaxError(_span(path, start), f"elements nested more than {MAX_DEPTH} deep")
    attrs: dict[str, str] = {}
    attr_spans: dict[str, SourceSpan] = {}
    children: list[Element | str] = []

    def add_text(text: str) -> None:
        if children and isinstance(children[-1], str):
            children[-1] += text
        elif text:
            children.append(text)

    for child in tree.children[1:]:
        if isinstance(child, Tree) and child.data == "attribute":
            name, value = child.children
            assert isinstance(name, Token) and isinstance(value, Token)
            if name in attrs:
                raise SpecSyntaxError(
                    _span(path, name),
                    f"duplicate attribute {str(name)!r} on <{tag}> (first at {attr_spans[name]})",
                )
            attrs[str(name)] = _resolve(path, value, 1, len(value) - 1)
            attr_spans[str(name)] = _span(path, name)
        elif isinstance(child, Tree):
            children.append(_element(child, path, depth + 1))
        elif child.type == "TEXT":
            if "]]>" in child:
                where = _advance(path, child, child.index("]]>"))
                raise SpecSyntaxError(
                    where, "']]>' is not allowed in text (outside a CDATA section)"
                )
            add_text(_resolve(path, child, 0, len(child)))
        elif child.type == "CDATA":
            add_text(child[len("<![CDATA[") : -len("]]>")])
        # COMMENT, PI and the end tag carry nothing for the tree
    return Element(tag, attrs, tuple(children), _span(path, start), attr_spans)


def _resolve(path: str, token: Token, begin: int, end: int) -> str:
    """token[begin:end] with its references replaced; refuses anything but the predefined
    entities and character references, naming the position of the offending '&'."""
    raw = str(token)
    out: list[str] = []
    pos = begin
    while (amp := raw.find("&", pos, end)) >= 0:
        out.append(raw[pos:amp])
        m = _REF.match(raw, amp, end)
        where = _advance(path, token, amp)
        if m is None:
            raise SpecSyntaxError(where, "'&' starts no reference (write &amp; for a literal '&')")
        ref = m.group(1)
        if ref.startswith("#"):
            code = int(ref[2:], 16) if ref[1] == "x" else int(ref[1:])
            if not _is_xml_char(code):
                raise SpecSyntaxError(where, f"&{ref}; is not a character XML allows")
            out.append(chr(code))
        elif ref in PREDEFINED:
            out.append(PREDEFINED[ref])
        else:
            raise SpecSyntaxError(
                where,
                f"undefined entity &{ref}; (only &lt; &gt; &amp; &quot; &apos; and character "
                "references are expanded)",
            )
        pos = m.end()
    out.append(raw[pos:end])
    return "".join(out)


def _is_xml_char(code: int) -> bool:
    return (
        code in (0x9, 0xA, 0xD)
        or 0x20 <= code <= 0xD7FF
        or 0xE000 <= code <= 0xFFFD
        or 0x10000 <= code <= 0x10FFFF
    )


def _start(element: Tree[Token]) -> Token:
    """An element's STAG_OPEN token: '<' and the tag name."""
    start = element.children[0]
    assert isinstance(start, Token) and start.type == "STAG_OPEN"
    return start


def _span(path: str, token: Token) -> SourceSpan:
    return SourceSpan(path, token.line or 1, token.column or 1)


def _advance(path: str, token: Token, offset: int) -> SourceSpan:
    """The position of token[offset], counting lines and characters from the token's start."""
    line, column = token.line or 1, token.column or 1
    newlines = token.count("\n", 0, offset)
    if newlines:
        return SourceSpan(path, line + newlines, offset - token.rfind("\n", 0, offset))
    return SourceSpan(path, line, column + offset)


# ---- the parser, and the checks that must run while it parses


class _Refused(Exception):
    """A refusal found while lark parses, before the path is known: at `token`, and naming
    `also`'s position where the message says {also}."""

    def __init__(self, token: Token, message: str, also: Token | None = None) -> None:
        super().__init__(message)
        self.token, self.text, self.also = token, message, also

    def error(self, path: str) -> SpecSyntaxError:
        also = "" if self.also is None else str(_span(path, self.also))
        return SpecSyntaxError(_span(path, self.token), self.text.replace("{also}", also))


class _MatchTags(Transformer[Token, Tree[Token]]):
    """Runs as each element is reduced, so a wrong end tag is reported where it is, before any
    error it would cause later (an element that then looks unclosed at the end of the file)."""

    def element(self, children: list[Tree[Token] | Token]) -> Tree[Token]:
        start, end = children[0], children[-1]
        assert isinstance(start, Token)
        if isinstance(end, Token) and end.type == "ETAG" and end[2:-1].rstrip() != start[1:]:
            raise _Refused(
                end,
                f"end tag </{end[2:-1].rstrip()}> does not match start tag <{start[1:]}> "
                "at {also}",
                start,
            )
        return Tree("element", children)


def _refuse_internal_subset(token: Token) -> Token:
    if token.endswith("["):
        raise _Refused(
            token,
            "internal DTD subsets are not supported (entity declarations are never expanded)",
        )
    return token


@functools.cache
def _parser() -> Lark:
    return Lark(
        GRAMMAR.read_text(encoding="utf-8"),
        parser="lalr",
        lexer="contextual",
        propagate_positions=True,
        maybe_placeholders=False,
        transformer=_MatchTags(),
        lexer_callbacks={"DOCTYPE": _refuse_internal_subset},
    )


# ---- lark's syntax errors, said in XML's terms

_WHAT = {
    "STAG_OPEN": "a start tag",
    "ETAG": "an end tag",
    "NAME": "an attribute name",
    "ATTR_VALUE": "a quoted attribute value",
    "_TAG_END": "'>'",
    "_EMPTY_END": "'/>'",
    "_EQ": "'='",
    "_WS": "whitespace",
    "TEXT": "text",
    "CDATA": "a CDATA section",
    "COMMENT": "a comment",
    "PI": "a processing instruction",
    "XMLDECL": "the XML declaration",
    "DOCTYPE": "a DOCTYPE",
    "$END": "the end of the file",
}

# what an unlexable '<...' was meant to be, when it is not closed (or is not allowed at all)
_UNCLOSED = {
    "<!--": "a comment that is never closed (no '-->')",
    "<![CDATA[": "a CDATA section that is never closed (no ']]>')",
    "<!ENTITY": "entity declarations are not supported (entities are never expanded)",
    "<!DOCTYPE": 'a malformed DOCTYPE (expected <!DOCTYPE name SYSTEM "uri">, PUBLIC, or none)',
    "<?": "a processing instruction that is malformed or never closed (no '?>')",
}


def _describe(e: UnexpectedInput, text: str, path: str) -> tuple[SourceSpan, str]:
    span = SourceSpan(path, max(e.line, 1), max(e.column, 1))
    allowed = set(getattr(e, "expected", None) or getattr(e, "allowed", None) or ())
    hint = f" (expected {', '.join(sorted(_WHAT.get(t, t) for t in allowed))})" if allowed else ""
    rest = text[e.pos_in_stream :] if e.pos_in_stream is not None else ""
    open_tags = _open_tags(e)
    if "ATTR_VALUE" in allowed and rest[:1] in ("'", '"'):
        return span, "an attribute value that is never closed or holds a '<' (write &lt;)"
    if "ATTR_VALUE" in allowed:
        return span, "an attribute value must be in quotes"
    if isinstance(e, UnexpectedCharacters):
        for opening, what in _UNCLOSED.items():
            if rest.startswith(opening):
                return span, what
        return span, f"unexpected character {rest[:1]!r}{hint}"
    token: Token | None = getattr(e, "token", None)
    if token is None:
        return span, f"syntax error{hint}"
    if token.type == "$END":
        if open_tags:
            start, in_tag = open_tags[-1]
            what = "start tag" if in_tag else "element"
            return _span(path, start), f"{what} <{start[1:]}> is never closed (the file ends first)"
        eof = SourceSpan(path, text.count("\n") + 1, len(text) - text.rfind("\n"))
        return eof, "no root element (the file ends first)"
    span = _span(path, token)
    if not open_tags and "STAG_OPEN" in allowed and not rest.startswith("<"):
        return span, "text before the root element"
    if token.type == "ETAG" and not open_tags:
        return span, f"end tag {token} closes no element"
    if token.type == "XMLDECL":
        return span, "the XML declaration must come first in the file"
    if token.type == "DOCTYPE":
        return span, "a DOCTYPE must come once, before the root element"
    what = _WHAT.get(token.type, token.type)
    return span, f"{what} {str(token)[:30]!r} is not allowed here{hint}"


def _open_tags(e: UnexpectedInput) -> list[tuple[Token, bool]]:
    """The start tags still open when the parse failed, outermost first, each with whether the
    failure is inside that start tag (before its '>'); read from the parser's stack."""
    parser = getattr(e, "interactive_parser", None)
    stack = getattr(getattr(parser, "parser_state", None), "value_stack", None) or []
    opened: list[tuple[Token, bool]] = []
    for value in stack:
        if isinstance(value, Token) and value.type == "STAG_OPEN":
            opened.append((value, True))
        elif isinstance(value, Token) and value.type == "_TAG_END" and opened:
            opened[-1] = (opened[-1][0], False)
    return opened
