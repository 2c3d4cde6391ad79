"""The XML parse layer: the AMQP specification files, positions, references, and every refusal."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from specgen.frontends.adoc_tree import SpecSyntaxError
from specgen.frontends.xml_tree import Element, parse, parse_file
from specgen.ir import SourceSpan

CORPUS = Path("/work/shared/specs-corpus")
AMQP091 = CORPUS / "amqp-0-9-1"


def _corpus_files() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    named = [AMQP091 / f"amqp0-9-1{kind}.xml" for kind in ("", ".extended", ".stripped")]
    found = [*CORPUS.glob("amqp-1.0/**/*.xml"), *CORPUS.glob("amqp-0-10/**/*.xml")]
    return [p for p in named if p.is_file()] + sorted(found)


CORPUS_FILES = _corpus_files()
needs_corpus = pytest.mark.skipif(not CORPUS_FILES, reason=f"{CORPUS} is not available")


def _raw(path: Path) -> str:
    """The file's text as it is on disk (CRLF kept: no universal-newline translation)."""
    return path.read_bytes().decode("utf-8")


def _walk(element: Element) -> list[Element]:
    out = [element]
    for child in element.elements():
        out.extend(_walk(child))
    return out


def _error(text: str) -> str:
    with pytest.raises(SpecSyntaxError) as info:
        parse(text, "t.xml")
    return str(info.value).splitlines()[0]


# ---- the real specifications


@needs_corpus
def test_amqp091_has_the_methods_and_classes_grep_counts() -> None:
    # `grep -c '<method ' amqp0-9-1.xml` -> 53 and `grep -c '<class ' amqp0-9-1.xml` -> 6, one
    # per line; the stdlib reader finds 53 method elements too, so none is inside a comment
    root = parse_file(AMQP091 / "amqp0-9-1.xml", CORPUS)
    classes = root.findall("class")
    assert len(classes) == 6
    assert sum(len(c.findall("method")) for c in classes) == 53
    assert sum(1 for e in _walk(root) if e.tag == "method") == 53
    assert root.attrs == {
        "major": "0",
        "minor": "9",
        "revision": "1",
        "port": "5672",
        "comment": "AMQ Protocol version 0-9-1",
    }


@needs_corpus
def test_amqp091_root_and_a_method_are_where_the_raw_text_puts_them() -> None:
    path = AMQP091 / "amqp0-9-1.xml"
    lines = _raw(path).split("\r\n")  # this file is CRLF throughout
    root = parse_file(path, CORPUS)
    root_line = next(i for i, line in enumerate(lines, 1) if line.startswith("<amqp "))
    assert root.span == SourceSpan("amqp-0-9-1/amqp0-9-1.xml", root_line, 1)
    port_line = lines[root.attr_spans["port"].line - 1]
    assert port_line[root.attr_spans["port"].column - 1 :].startswith('port = "5672"')

    exchange = next(c for c in root.findall("class") if c.attr("name") == "exchange")
    declare = next(m for m in exchange.findall("method") if m.attr("name") == "declare")
    want = next(
        i
        for i, line in enumerate(lines, 1)
        if '<method name = "declare"' in line and "verify exchange exists" in line
    )
    assert (declare.span.line, declare.span.column) == (want, lines[want - 1].index("<") + 1)
    assert declare.attr("label") == "verify exchange exists, create if needed"


@needs_corpus
@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_every_file_parses_and_every_span_points_at_its_text(path: Path) -> None:
    lines = _raw(path).replace("\r\n", "\n").split("\n")
    root = parse_file(path, CORPUS)
    assert root.tag == "amqp"
    assert root.span.file == path.relative_to(CORPUS).as_posix()
    for element in _walk(root):
        at = lines[element.span.line - 1][element.span.column - 1 :]
        assert re.match(rf"<{re.escape(element.tag)}[\s/>]|<{re.escape(element.tag)}$", at), (
            element.span
        )
        assert element.attr_spans.keys() == element.attrs.keys()
        for name, span in element.attr_spans.items():
            at = lines[span.line - 1][span.column - 1 :]
            assert re.match(rf"{re.escape(name)}\s*=", at), span


def _etree_view(e: ET.Element) -> tuple[str, dict[str, str], list[object]]:
    """(tag, attributes, children with text merged) from the stdlib's expat reader, namespace
    URIs dropped to match the prefixed names we keep."""
    kids: list[object] = [e.text] if e.text else []
    for child in e:
        kids.append(_etree_view(child))
        if child.tail:
            if kids and isinstance(kids[-1], str):
                kids[-1] += child.tail
            else:
                kids.append(child.tail)
    return e.tag.split("}")[-1], {k.split("}")[-1]: v for k, v in e.attrib.items()}, kids


def _our_view(e: Element) -> tuple[str, dict[str, str], list[object]]:
    # expat applies attribute-value normalization (tab and newline -> space) and hides xmlns
    attrs = {
        k.split(":")[-1]: re.sub(r"[\t\n]", " ", v)
        for k, v in e.attrs.items()
        if k != "xmlns" and not k.startswith("xmlns:")
    }
    kids: list[object] = [c if isinstance(c, str) else _our_view(c) for c in e.children]
    return e.tag.split(":")[-1], attrs, kids


@needs_corpus
@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_the_tree_matches_the_stdlib_xml_reader(path: Path) -> None:
    assert _our_view(parse_file(path, CORPUS)) == _etree_view(ET.parse(path).getroot())


@needs_corpus
def test_crlf_file_reads_the_same_as_its_lf_translation() -> None:
    path = AMQP091 / "amqp0-9-1.xml"
    raw = _raw(path)
    assert "\r\n" in raw
    crlf = parse(raw, "a.xml")
    lf = parse(raw.replace("\r\n", "\n"), "a.xml")
    assert crlf == lf
    assert [e.span for e in _walk(crlf)] == [e.span for e in _walk(lf)]
    assert all("\r" not in e.text for e in _walk(crlf))


@needs_corpus
def test_amqp10_references_and_cdata_are_resolved() -> None:
    transport = parse_file(CORPUS / "amqp-1.0" / "transport.xml", CORPUS)
    titles = {e.attr("title") for e in _walk(transport) if e.tag == "picture"}
    assert "Session & Connection Endpoints" in titles
    assert "(A,B,<name>)" in transport.text
    types = parse_file(CORPUS / "amqp-1.0" / "types.xml", CORPUS)
    pictures = [e for e in _walk(types) if e.tag == "picture"]
    # the CDATA of types.xml holds a literal '&' that would be an error outside CDATA
    assert any('"AMQP for & by Dummies"' in p.text for p in pictures)
    assert types.attr("xmlns") == "http://www.amqp.org/schema/amqp.xsd"


# ---- what the grammar accepts


def test_prolog_doctype_cdata_quotes_namespaces_and_mixed_content() -> None:
    text = (
        '<?xml version = "1.0" encoding="UTF-8"?>\n'
        '<?xml-stylesheet type="text/xsl" href="amqp.xsl"?>\n'
        "<!-- a comment\n   over two lines -->\n"
        '<!DOCTYPE amqp SYSTEM "amqp.dtd">\n'
        "<!-- another -->\n"
        "<amqp xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" a:b = 'one'\n"
        '      c\t=\t"two">\n'
        "  <doc>Some <b>bold</b> and <i>italic<!-- x --></i> text.</doc>\n"
        "  <?pi inside?>\n"
        "  <picture><![CDATA[<not> &a; tag]]></picture>\n"
        "  <field name='x' />\n"
        "</amqp >\n"
        "<!-- trailing -->\n\n"
    )
    root = parse(text, "s.xml")
    assert root.tag == "amqp"
    assert root.attrs == {
        "xmlns:xsi": "http://www.w3.org/2001/XMLSchema-instance",
        "a:b": "one",
        "c": "two",
    }
    assert root.span == SourceSpan("s.xml", 7, 1)
    assert root.attr_spans["a:b"] == SourceSpan("s.xml", 7, 61)
    assert root.attr_spans["c"] == SourceSpan("s.xml", 8, 7)
    doc = root.find("doc")
    assert doc is not None and doc.span == SourceSpan("s.xml", 9, 3)
    assert doc.text == "Some bold and italic text."
    assert [c if isinstance(c, str) else c.tag for c in doc.children] == [
        "Some ",
        "b",
        " and ",
        "i",
        " text.",
    ]
    picture = root.find("picture")
    assert picture is not None and picture.children == ("<not> &a; tag",)
    field = root.find("field")
    assert field is not None and field.children == () and field.attr("name") == "x"
    assert [e.tag for e in root.elements()] == ["doc", "picture", "field"]


def test_doctype_public_and_bare_forms_are_accepted() -> None:
    public = "<!DOCTYPE amqp PUBLIC \"-//AMQP//DTD 1.0//EN\" 'http://x/amqp.dtd'>\n<amqp/>"
    assert parse(public, "p.xml").tag == "amqp"
    assert parse("<!DOCTYPE amqp>\n<amqp/>", "p.xml").tag == "amqp"


def test_the_named_dtd_is_never_opened(tmp_path: Path) -> None:
    dtd = tmp_path / "evil.dtd"
    dtd.write_text('<!ENTITY e "expanded">\n', encoding="utf-8")
    doc = f'<!DOCTYPE a SYSTEM "{dtd.as_posix()}">\n<a>&e;</a>'
    assert _error(doc) == "t.xml:2:4: undefined entity &e; (only &lt; &gt; &amp; &quot; " + (
        "&apos; and character references are expanded)"
    )
    assert parse('<!DOCTYPE a SYSTEM "/no/such/file.dtd"><a/>', "t.xml").tag == "a"


def test_bom_crlf_and_columns_in_characters() -> None:
    root = parse('\ufeff<?xml version="1.0"?>\r\n<a>\r\n  é€<b x="1"/>\r\n</a>\r\n', "b.xml")
    b = root.find("b")
    assert root.span == SourceSpan("b.xml", 2, 1)
    assert b is not None and b.span == SourceSpan("b.xml", 3, 5)
    assert b.attr_spans["x"] == SourceSpan("b.xml", 3, 8)
    assert root.children[0] == "\n  é€"


def test_references_are_resolved_once_in_text_and_attributes() -> None:
    root = parse(
        "<a v=\"&lt;&gt;&amp;&quot;&apos;&#65;&#x42;&#x1F600;\" w='&amp;lt;'>"
        "&lt;x&gt; &amp;amp; &#169;&#xe9;</a>",
        "r.xml",
    )
    assert root.attrs == {"v": "<>&\"'AB\U0001f600", "w": "&lt;"}
    assert root.text == "<x> &amp; ©é"


def test_attribute_whitespace_is_kept_as_written() -> None:
    root = parse('<a label="two\n    lines\tand a tab"/>', "w.xml")
    assert root.attr("label") == "two\n    lines\tand a tab"
    assert root.attr("missing") is None and root.attr("missing", "d") == "d"


def test_the_tree_holds_only_plain_python_values() -> None:
    root = parse('<a k="v">t<b/>&amp;<![CDATA[c]]></a>', "p.xml")
    for element in _walk(root):
        assert type(element.tag) is str
        assert all(type(k) is str and type(v) is str for k, v in element.attrs.items())
        assert all(type(k) is str for k in element.attr_spans)
        assert all(type(c) in (str, Element) for c in element.children)
    assert root.children[0] == "t" and root.children[2] == "&c"


def test_equality_ignores_positions() -> None:
    assert parse("<a x='1'><b/></a>", "one.xml") == parse('\n\n<a  x = "1" ><b></b></a>', "two.xml")


# ---- refusals, each with where it is


def test_internal_dtd_subset_is_refused() -> None:
    doc = '<?xml version="1.0"?>\n<!DOCTYPE x [\n  <!ENTITY e "boom">\n]>\n<x>&e;</x>'
    assert _error(doc) == (
        "t.xml:2:1: internal DTD subsets are not supported (entity declarations are never expanded)"
    )
    assert _error("<!DOCTYPE x SYSTEM 'x.dtd' [ ]><x/>").startswith(
        "t.xml:1:1: internal DTD subsets are not supported"
    )


def test_entity_declarations_are_refused_anywhere() -> None:
    msg = "entity declarations are not supported (entities are never expanded)"
    assert _error('<!ENTITY e "x">\n<a/>') == f"t.xml:1:1: {msg}"
    assert _error('<a>\n  <!ENTITY e "x">\n</a>') == f"t.xml:2:3: {msg}"


def test_only_predefined_entities_and_character_references_are_expanded() -> None:
    tail = "(only &lt; &gt; &amp; &quot; &apos; and character references are expanded)"
    assert _error("<a>\n  x &nbsp; y</a>") == f"t.xml:2:5: undefined entity &nbsp; {tail}"
    # inside a value that runs over two lines: the position is the '&' itself
    assert _error('<a b="1"\n   c="ok &amp;\n  &ext;"/>') == (
        f"t.xml:3:3: undefined entity &ext; {tail}"
    )
    assert _error("<a>&#0;</a>") == "t.xml:1:4: &#0; is not a character XML allows"
    assert _error("<a>&#xD800;</a>") == "t.xml:1:4: &#xD800; is not a character XML allows"


def test_a_bare_ampersand_is_refused() -> None:
    bare = "'&' starts no reference (write &amp; for a literal '&')"
    assert _error("<a>AT&T</a>") == f"t.xml:1:6: {bare}"
    assert _error("<a b='x & y'/>") == f"t.xml:1:9: {bare}"
    assert _error("<a>&#X41;</a>") == f"t.xml:1:4: {bare}"  # hex references take a small x
    assert _error("<a>&amp</a>") == f"t.xml:1:4: {bare}"


def test_mismatched_end_tag_names_both_tags_and_the_start() -> None:
    assert _error("<a></b>") == "t.xml:1:4: end tag </b> does not match start tag <a> at t.xml:1:1"
    # reported where it happens, not as <a> left open at the end of the file
    assert _error("<a>\n  <b>\n  </a>\n") == (
        "t.xml:3:3: end tag </a> does not match start tag <b> at t.xml:2:3"
    )


def test_unterminated_constructs() -> None:
    assert _error("<a>\n  <b>x</b>\n") == (
        "t.xml:1:1: element <a> is never closed (the file ends first)"
    )
    assert (
        _error('<a>\n <b x="1"') == "t.xml:2:2: start tag <b> is never closed (the file ends first)"
    )
    assert _error("<a>\n <!-- never\n</a>\n") == (
        "t.xml:2:2: a comment that is never closed (no '-->')"
    )
    assert _error("<!-- never\n<a/>") == "t.xml:1:1: a comment that is never closed (no '-->')"
    assert _error("<a><![CDATA[ x </a>") == (
        "t.xml:1:4: a CDATA section that is never closed (no ']]>')"
    )
    assert _error('<a b="x/>') == (
        "t.xml:1:6: an attribute value that is never closed or holds a '<' (write &lt;)"
    )


def test_one_root_element_and_nothing_after_it() -> None:
    assert _error("<a/>\n\n  junk\n") == "t.xml:3:3: text after the root element"
    assert _error("<a/>\n<b/>\n") == (
        "t.xml:2:1: a second root element <b> (a document has exactly one; the first is <a> "
        "at t.xml:1:1)"
    )
    assert _error("<a></a></a>") == "t.xml:1:8: end tag </a> closes no element"
    assert _error("hello <a/>") == "t.xml:1:1: text before the root element"
    assert _error("") == "t.xml:1:1: no root element (the file ends first)"
    assert _error("<?xml version='1.0'?>\n<!-- only -->\n") == (
        "t.xml:3:1: no root element (the file ends first)"
    )


def test_duplicate_attribute_is_refused() -> None:
    assert _error('<a x="1"\n   x="2"/>') == (
        "t.xml:2:4: duplicate attribute 'x' on <a> (first at t.xml:1:4)"
    )


def test_other_malformed_markup() -> None:
    assert _error('<!-- c -->\n<?xml version="1.0"?><a/>') == (
        "t.xml:2:1: the XML declaration must come first in the file"
    )
    assert (
        _error("<a/><!DOCTYPE a>") == "t.xml:1:5: a DOCTYPE must come once, before the root element"
    )
    assert _error("<a b=x/>") == "t.xml:1:6: an attribute value must be in quotes"
    assert _error('<a b="1"c="2"/>').startswith("t.xml:1:9: an attribute name 'c' is not allowed")
    assert _error("<a>x ]]> y</a>") == (
        "t.xml:1:6: ']]>' is not allowed in text (outside a CDATA section)"
    )


def test_nesting_has_a_limit() -> None:
    assert parse("<a>" * 100 + "</a>" * 100, "t.xml").tag == "a"
    deep = "<a>\n" * 101 + "</a>" * 101
    assert _error(deep) == "t.xml:101:1: elements nested more than 100 deep"


def test_parse_file_names_the_file_relative_to_the_root(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    path = tmp_path / "sub" / "spec.xml"
    path.write_bytes("\ufeff<a>\r\n<b/></a>".encode())
    root = parse_file(path, tmp_path)
    assert root.span == SourceSpan("sub/spec.xml", 1, 1)
    assert root.elements()[0].span == SourceSpan("sub/spec.xml", 2, 1)
    outside = parse_file(path, tmp_path / "elsewhere")
    assert outside.span.file == path.as_posix()
    path.write_text("<a>\n  <b></c></a>", encoding="utf-8")
    with pytest.raises(SpecSyntaxError, match=r"^sub/spec\.xml:2:6: end tag </c>"):
        parse_file(path, tmp_path)
    path.write_bytes(b"<a>\n  caf\xc3\xa9 \xe9</a>")
    with pytest.raises(SpecSyntaxError, match=r"^sub/spec\.xml:2:8: not UTF-8 \(byte 0xe9\)"):
        parse_file(path, tmp_path)
