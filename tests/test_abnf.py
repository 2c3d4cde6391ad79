"""specgen.abnf: RFC 5234 ABNF, the documents' extensions, errors, and ABNF found in the specs.

Expected values come from the documents: RFC 5234's section 3 examples and its Appendix B.1 core
rules are typed in below from the RFC's text (with the RFC's own layout: rules indented 9 spaces,
comments on continuation lines); AMQ RFC 006, the AMQP 0-10 text and the AMQP 0-9-1 XML are read
from their files, and the expected ASTs are what their lines say.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from specgen.abnf import (
    Alt,
    Block,
    CharVal,
    Defect,
    Expr,
    NumRange,
    NumVal,
    ProseVal,
    Repeat,
    Rule,
    RuleRef,
    Seq,
    Step,
    find_blocks,
    merged,
    parse_rules,
    parse_rules_lenient,
    steps,
)
from specgen.frontends.adoc_tree import SpecSyntaxError
from specgen.ir import SourceSpan

ROOT = Path(__file__).resolve().parents[1]
# the documents as vendored under specs/ (byte-for-byte copies of the project's seeds)
RFC006 = ROOT / "specs" / "amqp-fast-0-8" / "amq-rfc006.txt"
TEXT010 = ROOT / "specs" / "amqp-0-10" / "amqp-0-10-text.txt"
XML091 = ROOT / "specs" / "amqp-0-9-1" / "amqp0-9-1.xml"


def one(text: str) -> Expr:
    (rule,) = parse_rules(text, "t.abnf")
    return rule.expr


def ref(*names: str) -> tuple[RuleRef, ...]:
    return tuple(RuleRef(n) for n in names)


# ---- RFC 5234 section 3 (and 2.3) examples


def test_concatenation_rfc5234_3_1() -> None:
    rules = parse_rules(
        "foo         =  %x61           ; a\n"
        "bar         =  %x62           ; b\n"
        "mumble      =  foo bar foo\n",
        "rfc5234.txt",
    )
    assert rules == (
        Rule("foo", NumVal("x", (0x61,)), SourceSpan("rfc5234.txt", 1, 1)),
        Rule("bar", NumVal("x", (0x62,)), SourceSpan("rfc5234.txt", 2, 1)),
        Rule("mumble", Seq(ref("foo", "bar", "foo")), SourceSpan("rfc5234.txt", 3, 1)),
    )


def test_alternation_rfc5234_3_2() -> None:
    assert one("r = foo / bar") == Alt(ref("foo", "bar"))


def test_incremental_alternatives_rfc5234_3_3() -> None:
    rules = parse_rules(
        "ruleset     =  alt1 / alt2\nruleset     =/ alt3\nruleset     =/ alt4 / alt5\n", "t"
    )
    assert [r.incremental for r in rules] == [False, True, True]
    plain = parse_rules("ruleset =  alt1 / alt2 / alt3 / alt4 / alt5", "t")[0]
    combined = merged(rules)
    assert list(combined) == ["ruleset"]
    assert (
        combined["ruleset"].expr == plain.expr == Alt(ref("alt1", "alt2", "alt3", "alt4", "alt5"))
    )
    assert combined["ruleset"].span == SourceSpan("t", 1, 1)
    assert not combined["ruleset"].incremental


def test_incremental_rfc5234_3_3_second_example() -> None:
    # "v = ...; v =/ ..." with the RFC's spelling of a line-continued alternative
    rules = parse_rules('v = "a"\nv =/ "b"\n     / "c"', "t")
    assert merged(rules)["v"].expr == Alt((CharVal("a"), CharVal("b"), CharVal("c")))


def test_value_range_rfc5234_3_4() -> None:
    assert one("DIGIT       =  %x30-39") == NumRange("x", 0x30, 0x39)


def test_sequence_group_rfc5234_3_5() -> None:
    assert one("r = elem (foo / bar) blat") == Seq(
        (RuleRef("elem"), Alt(ref("foo", "bar")), RuleRef("blat"))
    )
    # "elem foo / bar blat" matches (elem foo) or (bar blat)
    both = Alt((Seq(ref("elem", "foo")), Seq(ref("bar", "blat"))))
    assert one("r = elem foo / bar blat") == both
    assert one("r = (elem foo) / (bar blat)") == both


@pytest.mark.parametrize(
    ("text", "low", "high"),
    [
        ("*element", 0, None),  # 3.6 default: zero to infinity
        ("1*element", 1, None),  # at least one
        ("3*3element", 3, 3),
        ("1*2element", 1, 2),
        ("*2element", 0, 2),
        ("2element", 2, 2),  # 3.7 <n>element is <n>*<n>element
    ],
)
def test_repetition_rfc5234_3_6_and_3_7(text: str, low: int, high: int | None) -> None:
    assert one(f"r = {text}") == Repeat(RuleRef("element"), low, high)


def test_specific_repetition_rfc5234_3_7() -> None:
    assert one("r = 2DIGIT 3ALPHA") == Seq(
        (Repeat(RuleRef("DIGIT"), 2, 2), Repeat(RuleRef("ALPHA"), 3, 3))
    )


def test_optional_rfc5234_3_8() -> None:
    # "[foo bar]" is equivalent to "*1(foo bar)"
    assert one("r = [foo bar]") == Repeat(Seq(ref("foo", "bar")), 0, 1)
    assert one("r = *1(foo bar)") == Repeat(Seq(ref("foo", "bar")), 0, 1)


def test_terminal_values_rfc5234_2_3() -> None:
    assert one("CR = %d13") == NumVal("d", (13,))
    assert one("CR = %x0D") == NumVal("x", (13,))
    assert one("CRLF = %d13.10") == NumVal("d", (13, 10))
    assert one("rulename = %d97 %d98 %d99") == Seq(
        (NumVal("d", (97,)), NumVal("d", (98,)), NumVal("d", (99,)))
    )
    assert one("rulename = %d97.98.99") == NumVal("d", (97, 98, 99))
    assert one('rulename = "abc"') == CharVal("abc", case_sensitive=False)
    assert one('rulename = %x61 "bc"') == Seq((NumVal("x", (0x61,)), CharVal("bc")))
    assert one("r = %b1010") == NumVal("b", (10,))
    assert one("r = %b1000001-1011010") == NumRange("b", 65, 90)


def test_case_sensitive_strings_rfc7405() -> None:
    assert one('rulename = %s"aBc"') == CharVal("aBc", case_sensitive=True)
    assert one('rulename = %i"abc"') == CharVal("abc", case_sensitive=False)


def test_prose_value() -> None:
    assert one("r = <any 7-bit US-ASCII character>") == ProseVal("any 7-bit US-ASCII character")


def test_comment_and_continuation_and_blank_line() -> None:
    rules = parse_rules(
        "a = b ; trailing comment\n"
        "      c ; continued\n"
        "    ; a comment-only continuation line\n"
        "      d\n"
        "\n"
        "e = f\n",
        "t",
    )
    assert [(r.name, r.expr) for r in rules] == [
        ("a", Seq(ref("b", "c", "d"))),
        ("e", RuleRef("f")),
    ]


def test_rule_names_keep_case_and_merge_case_insensitively() -> None:
    rules = parse_rules("Foo = x\nfoo =/ y", "t")
    assert rules[0].name == "Foo"
    assert merged(rules)["foo"].expr == Alt(ref("x", "y"))


# ---- RFC 5234 Appendix B.1, as printed in the RFC (9-space indent, comments continued)

B1 = """\
         ALPHA          =  %x41-5A / %x61-7A   ; A-Z / a-z

         BIT            =  "0" / "1"

         CHAR           =  %x01-7F
                                ; any 7-bit US-ASCII character,
                                ;  excluding NUL

         CR             =  %x0D
                                ; carriage return

         CRLF           =  CR LF
                                ; Internet standard newline

         CTL            =  %x00-1F / %x7F
                                ; controls

         DIGIT          =  %x30-39
                                ; 0-9

         DQUOTE         =  %x22
                                ; " (Double Quote)

         HEXDIG         =  DIGIT / "A" / "B" / "C" / "D" / "E" / "F"

         HTAB           =  %x09
                                ; horizontal tab

         LF             =  %x0A
                                ; linefeed

         LWSP           =  *(WSP / CRLF WSP)
                                ; Use of this linear-white-space rule
                                ;  permits lines containing only white
                                ;  space that are no longer legal in
                                ;  mail headers and have caused
                                ;  interoperability problems in other
                                ;  contexts.
                                ; Do not use when defining mail
                                ;  headers and use with caution in
                                ;  other contexts.

         OCTET          =  %x00-FF
                                ; 8 bits of data

         SP             =  %x20

         VCHAR          =  %x21-7E
                                ; visible (printing) characters

         WSP            =  SP / HTAB
                                ; white space
"""


def test_core_rules_rfc5234_appendix_b1() -> None:
    rules = merged(parse_rules(B1, "rfc5234.txt", 1283, 1))
    assert list(rules) == [
        "alpha", "bit", "char", "cr", "crlf", "ctl", "digit", "dquote",
        "hexdig", "htab", "lf", "lwsp", "octet", "sp", "vchar", "wsp",
    ]  # fmt: skip
    expr = {name: rule.expr for name, rule in rules.items()}
    assert expr["alpha"] == Alt((NumRange("x", 0x41, 0x5A), NumRange("x", 0x61, 0x7A)))
    assert expr["bit"] == Alt((CharVal("0"), CharVal("1")))
    assert expr["char"] == NumRange("x", 0x01, 0x7F)
    assert expr["crlf"] == Seq(ref("CR", "LF"))
    assert expr["ctl"] == Alt((NumRange("x", 0, 0x1F), NumVal("x", (0x7F,))))
    assert expr["dquote"] == NumVal("x", (0x22,))
    assert expr["hexdig"] == Alt((RuleRef("DIGIT"),) + tuple(CharVal(c) for c in "ABCDEF"))
    assert expr["lwsp"] == Repeat(Alt((RuleRef("WSP"), Seq(ref("CRLF", "WSP")))))
    assert expr["octet"] == NumRange("x", 0, 0xFF)
    assert expr["wsp"] == Alt(ref("SP", "HTAB"))
    # spans: the name's own line and column in the block (offset by the block's line)
    assert rules["alpha"].span == SourceSpan("rfc5234.txt", 1283, 10)
    assert rules["wsp"].span == SourceSpan("rfc5234.txt", 1283 + B1.count("\n") - 2, 10)


# ---- the documents' extensions


def test_dialogue_steps_and_bar_alternative() -> None:
    expr = one("open-connection = C:protocol-header S:START C:START-OK | S:REDIRECT")
    assert expr == Alt(
        (
            Seq((Step("C", "protocol-header"), Step("S", "START"), Step("C", "START-OK"))),
            Step("S", "REDIRECT"),
        )
    )
    assert list(steps(expr)) == [
        Step("C", "protocol-header"),
        Step("S", "START"),
        Step("C", "START-OK"),
        Step("S", "REDIRECT"),
    ]


def test_receiver_and_either_peer_steps_of_the_0_10_text() -> None:
    expr = one("message = *:TRANSFER [ R:ACQUIRE ] / C:FLUSH")
    assert expr == Alt(
        (Seq((Step("*", "TRANSFER"), Repeat(Step("R", "ACQUIRE"), 0, 1))), Step("C", "FLUSH"))
    )


def test_rfc006_range_spelling() -> None:
    assert one("short-size = %x0 .. %xFFFE") == NumRange("x", 0, 0xFFFE)
    assert one("long-size = %xFFFF %x0 .. %xFFFFFFFE") == Seq(
        (NumVal("x", (0xFFFF,)), NumRange("x", 0, 0xFFFFFFFE))
    )


def test_repeat_count_separated_from_its_element_as_in_the_0_10_text() -> None:
    assert one("octets = 0*255 OCTET") == Repeat(RuleRef("OCTET"), 0, 255)
    assert one("bin16 = 2 OCTET") == Repeat(RuleRef("OCTET"), 2, 2)


def test_steps_walks_every_node() -> None:
    expr = one("r = 2*(C:A / [S:B x]) y")
    assert list(steps(expr)) == [Step("C", "A"), Step("S", "B")]
    assert list(steps(RuleRef("x"))) == []


def test_ast_nodes_are_frozen_and_slotted() -> None:
    node = RuleRef("x")
    with pytest.raises(AttributeError):
        node.name = "y"  # type: ignore[misc]
    assert not hasattr(node, "__dict__")


# ---- errors name file:line:column (offset by where the text starts in the document)


def error(text: str, line: int = 10, column: int = 5) -> SpecSyntaxError:
    with pytest.raises(SpecSyntaxError) as info:
        parse_rules(text, "doc.txt", line, column)
    return info.value


def test_unclosed_group() -> None:
    e = error("a = ( b c\nd = e")
    assert e.span == SourceSpan("doc.txt", 10, 9)  # the "(": column 5 of the text is column 5
    assert str(e).startswith("doc.txt:10:9: unclosed '('")


def test_unclosed_option_at_end_of_text() -> None:
    e = error("x = y\n    z = [ b")
    assert e.span == SourceSpan("doc.txt", 11, 9)
    assert "unclosed '['" in str(e)


@pytest.mark.parametrize(
    ("text", "column", "words"),
    [
        ("a = %xG1", 9, "'G' is not a %x digit"),
        ("a = %d1A", 9, "'A' is not a %d digit"),
        ("a = %b102", 9, "'2' is not a %b digit"),
        ("a = %q12", 9, "base 'q' is not b, d or x"),
        ("a = %x30-", 9, "bad value '%x30-'"),
        ("a = %x40-30", 9, "range %x40-30: 64 above 48"),
        ("a = %x10 .. %d20", 17, "mixes two bases"),
        ("a = 5*2x", 9, "at least 5 but at most 2"),
    ],
)
def test_bad_values(text: str, column: int, words: str) -> None:
    e = error(text)
    assert e.span == SourceSpan("doc.txt", 10, column)
    assert words in str(e)


def test_rule_with_no_equals() -> None:
    e = error("foo = bar\nbaz\nqux = 1")
    assert e.span == SourceSpan("doc.txt", 11, 1)
    assert str(e) == "doc.txt:11:1: expected a rule `name = elements`, found 'baz' with no '='"
    assert error("just words here", 3, 1).span == SourceSpan("doc.txt", 3, 1)


def test_line_at_rule_column_is_a_new_rule() -> None:
    # a continuation must be indented beyond the rule's first column
    e = error("    a = b\n    c", 1, 1)
    assert e.span == SourceSpan("doc.txt", 2, 5)


def test_continuation_after_blank_line_is_an_error() -> None:
    e = error("a = b\n\n      c", 1, 1)
    assert e.span == SourceSpan("doc.txt", 3, 7)


@pytest.mark.parametrize(
    ("text", "span", "words"),
    [
        ("a = b /\n", (10, 11), "'/' has no alternative after it"),
        ("a = b |", (10, 11), "'|' has no alternative after it"),
        ("a =\n", (10, 5), "a rule with no elements"),
        ("a = b\n  = c", (11, 3), "unexpected character '='"),
        ("a = b )", (10, 11), "unexpected ')'"),
        ("a = 'S'", (10, 9), "single-quoted string 'S'"),
    ],
)
def test_strict_errors(text: str, span: tuple[int, int], words: str) -> None:
    e = error(text)
    assert e.span == SourceSpan("doc.txt", *span)
    assert words in str(e)


def test_merged_rejects_redefinition_and_orphan_increment() -> None:
    with pytest.raises(
        SpecSyntaxError, match=r"^t:2:1: rule 'A' is defined twice \(first at t:1:1\)"
    ):
        merged(parse_rules("a = x\nA = y", "t"))
    with pytest.raises(SpecSyntaxError, match=r"^t:1:1: rule 'a' adds alternatives"):
        merged(parse_rules("a =/ x", "t"))


def test_lenient_reports_defects_and_strict_text_has_none() -> None:
    result = parse_rules_lenient("a = b /\n    c /\n\nd = 'S' e", "doc.txt", 7, 3)
    assert [(r.name, r.expr) for r in result.rules] == [
        ("a", Alt(ref("b", "c"))),
        ("d", Seq((CharVal("S"), RuleRef("e")))),
    ]
    assert result.defects == (
        Defect(SourceSpan("doc.txt", 8, 7), "rule ends with a dangling '/'; dropped"),
        Defect(SourceSpan("doc.txt", 10, 5), "single-quoted string 'S' read as \"S\""),
    )
    assert parse_rules_lenient("a = b", "t").defects == ()
    with pytest.raises(SpecSyntaxError):  # other errors still raise
        parse_rules_lenient("a = ( b", "t")


# ---- AMQ RFC 006: indented blocks under prose


@pytest.fixture(scope="module")
def rfc006() -> tuple[list[Block], list[Rule], list[Defect]]:
    text = RFC006.read_text(encoding="utf-8")
    blocks = find_blocks(text, "amq-rfc006.txt", "indented")
    rules: list[Rule] = []
    defects: list[Defect] = []
    for block in blocks:
        result = parse_rules_lenient(block.text, "amq-rfc006.txt", block.line, block.column)
        rules.extend(result.rules)
        defects.extend(result.defects)
    return blocks, rules, defects


def test_rfc006_blocks(rfc006: tuple[list[Block], list[Rule], list[Defect]]) -> None:
    blocks, rules, _ = rfc006
    # "Frame Syntax" (line 598, through message-fragment at 760) and "Field Tables" (893-901);
    # the gdl header's "title = AMQ RFC 006" (line 2) and "Name=(Type)Content" are not taken
    assert [(b.line, b.column) for b in blocks] == [(598, 5), (893, 5)]
    assert blocks[0].text.startswith("frame                = initiation / command / message\n")
    assert blocks[0].text.endswith("    message-fragment     = *OCTET")
    lines = RFC006.read_text(encoding="utf-8").split("\n")
    assert len(rules) == len([ln for ln in lines if re.match(r"    [a-z][a-z0-9-]* +=", ln)]) - 7
    assert {r.span.line for r in rules} == {
        i for i, ln in enumerate(lines, 1) if i > 8 and re.match(r"    [a-z][a-z0-9-]* +=", ln)
    }


def test_rfc006_rules(rfc006: tuple[list[Block], list[Rule], list[Defect]]) -> None:
    _, rules, _ = rfc006
    by_name = merged(rules)
    assert len(by_name) == len(rules) == 96
    expr = {name: rule.expr for name, rule in by_name.items()}
    assert expr["short-size"] == NumRange("x", 0, 0xFFFE)
    assert expr["long-size"] == Seq((NumVal("x", (0xFFFF,)), NumRange("x", 0, 0xFFFFFFFE)))
    assert expr["protocol-id"] == NumVal("d", (128,))
    assert expr["connection-challenge"] == Seq(
        (NumVal("d", (10,)), *ref("version", "mechanisms", "challenges"))
    )
    assert expr["frame"] == Alt(ref("initiation", "command", "message"))
    assert expr["short-string"] == Seq((RuleRef("OCTET"), Repeat(RuleRef("OCTET"))))
    assert expr["short-integer"] == Repeat(RuleRef("OCTET"), 2, None)
    # a continued rule (lines 688-689)
    assert expr["handle-open"] == Seq(
        (
            NumVal("d", (30,)),
            *ref("channel-id", "handle-id", "confirm-tag", "producer", "consumer", "browser"),
            *ref("mime-type", "encoding", "options"),
        )
    )
    assert expr["command-end"] == NumVal("x", (0xCE,))
    payload = expr["command-payload"]
    assert isinstance(payload, Alt) and len(payload.options) == 27
    assert payload.options[0] == RuleRef("connection-challenge")
    assert payload.options[-1] == RuleRef("handle-close")
    assert by_name["connection-challenge"].span == SourceSpan("amq-rfc006.txt", 637, 5)


def test_rfc006_defects(rfc006: tuple[list[Block], list[Rule], list[Defect]]) -> None:
    _, _, defects = rfc006
    # line 635: "handle-close /" then a blank line; 896-899: field-value's 'S' 'I' 'D' 'T'
    assert [(str(d.span), d.message) for d in defects] == [
        ("amq-rfc006.txt:635:41", "rule ends with a dangling '/'; dropped"),
        *((f"amq-rfc006.txt:{n}:24", f"single-quoted string '{c}' read as \"{c}\"")
          for n, c in zip(range(896, 900), "SIDT", strict=True)),
    ]  # fmt: skip
    block = find_blocks(RFC006.read_text(encoding="utf-8"), "amq-rfc006.txt", "indented")[0]
    with pytest.raises(SpecSyntaxError, match=r"^amq-rfc006.txt:635:41: '/' has no alternative"):
        parse_rules(block.text, "amq-rfc006.txt", block.line, block.column)


def test_indented_finder_skips_prose_examples_and_unset_blocks() -> None:
    text = (
        "gdl\n"
        "    title     = AMQ RFC 006\n"
        "end gdl\n"
        "\n"
        "We use this syntax:\n"
        "\n"
        "    Name=(Type)Content\n"
        "\n"
        "    an example, not a rule\n"
        "\n"
        "  a-rule = b\n"
        "           c\n"
        "\n"
        "  d = e ; note\n"
        "  ; comment\n"
        "  Some prose at the same indent\n"
    )
    assert find_blocks(text, "t", "indented") == [
        Block("a-rule = b\n           c\n\n  d = e ; note\n  ; comment", 11, 3)
    ]


# ---- the AMQP 0-10 text: rules inline in flattened prose


@pytest.fixture(scope="module")
def text010() -> tuple[str, list[Block]]:
    text = TEXT010.read_text(encoding="utf-8")
    return text, find_blocks(text, "amqp-0-10-text.txt", "inline")


def parse_010(blocks: list[Block]) -> list[Rule]:
    out: list[Rule] = []
    for b in blocks:
        out.extend(parse_rules(b.text, "amqp-0-10-text.txt", b.line, b.column))
    return out


def test_0_10_blocks_point_into_the_document(text010: tuple[str, list[Block]]) -> None:
    text, blocks = text010
    lines = text.split("\n")
    for b in blocks:
        assert lines[b.line - 1][b.column - 1 :].startswith(b.text)
    assert blocks[0] == Block("bin8 = OCTET", 1, 111)
    # one block per rule: "int16 = high-byte low-byte high-byte = OCTET low-byte = OCTET"
    texts = [b.text for b in blocks]
    i = texts.index("int16 = high-byte low-byte")
    assert texts[i + 1 : i + 3] == ["high-byte = OCTET", "low-byte = OCTET"]
    # comments run to the next rule or to the prose
    assert "byte-four = OCTET ; most significant byte (MSB)" in texts
    assert "float = 4 OCTET ; IEEE 754 32-bit floating point number" in texts


def test_0_10_type_rules(text010: tuple[str, list[Block]]) -> None:
    _, blocks = text010
    rules = parse_010(blocks)
    names = {r.name for r in rules}
    assert {
        "bin8", "int8", "uint8", "char", "boolean", "bin16", "int16", "uint16", "bin32",
        "int32", "uint32", "float", "char-utf32", "sequence-no", "bin64", "int64", "uint64",
        "double", "datetime", "bin128", "uuid", "bin256", "bin512", "bin1024", "vbin8",
        "str8-latin", "str8", "str8-utf16", "vbin16", "str16-latin", "str16", "str16-utf16",
        "byte-ranges", "sequence-set", "vbin32", "map", "list", "array", "struct32", "bin40",
        "dec32", "dec64", "high-byte", "low-byte", "size", "octets", "utf8-unicode",
    } <= names  # fmt: skip
    # the diagram caption "n = (size - 2 - pack-width)", "port = number]]>" and
    # 'routing key = "animal.dogs.chihuahua")' are prose
    assert not names & {"n", "port"}
    assert not [b for b in blocks if b.text.startswith(("n =", "port =", 'key = "'))]
    first: dict[str, Rule] = {}
    for r in rules:
        first.setdefault(r.name, r)
    assert first["bin8"].expr == RuleRef("OCTET")
    assert first["int16"].expr == Seq(ref("high-byte", "low-byte"))
    assert first["high-byte"].expr == RuleRef("OCTET")
    assert first["float"].expr == Repeat(RuleRef("OCTET"), 4, 4)
    assert first["str8"].expr == Seq(ref("size", "utf8-unicode"))
    assert first["utf8-unicode"].expr == Repeat(RuleRef("OCTET"), 0, 255)
    assert first["vbin32"].expr == Seq(ref("size", "octets"))
    assert first["sequence-set"].expr == Seq((RuleRef("size"), Repeat(RuleRef("range"))))
    assert first["map"].expr == Seq((RuleRef("size"), RuleRef("count"), Repeat(RuleRef("entry"))))
    assert first["bin1024"].expr == Repeat(RuleRef("OCTET"), 128, 128)


def test_0_10_dialogues(text010: tuple[str, list[Block]]) -> None:
    _, blocks = text010
    rules = {r.name: r for r in parse_010(blocks) if r.name not in ("size", "type", "count")}
    assert rules["connection"].expr == Seq(
        (RuleRef("open-connection"), Repeat(RuleRef("use-connection")), RuleRef("close-connection"))
    )
    assert list(steps(rules["open-connection"].expr)) == [
        Step("C", "protocol-header"), Step("S", "START"), Step("C", "START-OK"),
        Step("S", "TUNE"), Step("C", "TUNE-OK"), Step("C", "OPEN"), Step("S", "OPEN-OK"),
        Step("S", "REDIRECT"),
    ]  # fmt: skip
    assert rules["close-connection"].expr == Alt(
        (
            Seq((Step("C", "CLOSE"), Step("S", "CLOSE-OK"))),
            Seq((Step("S", "CLOSE"), Step("C", "CLOSE-OK"))),
        )
    )
    assert rules["tx"].expr == Alt(
        (Step("C", "SELECT"), Step("C", "COMMIT"), Step("C", "ROLLBACK"))
    )
    assert list(steps(rules["recovery-outcome"].expr)) == [Step("C", "FORGET")]
    assert {"dtx-demarcation", "exchange", "queue", "file", "stream", "message"} <= set(rules)


# ---- the AMQP 0-9-1 XML: <doc type = "grammar"> texts


def grammar_docs() -> Iterator[tuple[str, int, int]]:
    text = XML091.read_text(encoding="utf-8")
    for m in re.finditer(r'<doc type = "grammar">(.*?)</doc>', text, re.S):
        line = text.count("\n", 0, m.start(1)) + 1
        column = m.start(1) - (text.rfind("\n", 0, m.start(1)) + 1) + 1
        yield m.group(1), line, column


def test_every_0_9_1_grammar_doc_parses_strictly() -> None:
    docs = list(grammar_docs())
    assert len(docs) == 6
    heads = [parse_rules(t, "amqp0-9-1.xml", ln, col)[0].name for t, ln, col in docs]
    assert heads == ["connection", "channel", "exchange", "queue", "basic", "tx"]


def expand(expr: Expr, rules: dict[str, Rule]) -> Iterator[Step]:
    """Steps in dialogue order, with references to rules of the same grammar expanded."""
    if isinstance(expr, RuleRef) and expr.name.lower() in rules:
        yield from expand(rules[expr.name.lower()].expr, rules)
    elif isinstance(expr, Step):
        yield expr
    elif isinstance(expr, Seq):
        for item in expr.items:
            yield from expand(item, rules)
    elif isinstance(expr, Alt):
        for option in expr.options:
            yield from expand(option, rules)
    elif isinstance(expr, Repeat):
        yield from expand(expr.expr, rules)


def test_0_9_1_connection_dialogue() -> None:
    text, line, column = next(grammar_docs())
    assert (line, column) == (460, 27)
    rules = merged(parse_rules(text, "amqp0-9-1.xml", line, column))
    assert rules["connection"].span == SourceSpan("amqp0-9-1.xml", 461, 7)
    assert rules["close-connection"].span == SourceSpan("amqp0-9-1.xml", 469, 7)
    assert [f"{s.role}:{s.name}" for s in expand(rules["connection"].expr, rules)] == [
        "C:protocol-header", "S:START", "C:START-OK", "S:SECURE", "C:SECURE-OK", "S:TUNE",
        "C:TUNE-OK", "C:OPEN", "S:OPEN-OK", "C:CLOSE", "S:CLOSE-OK", "S:CLOSE", "C:CLOSE-OK",
    ]  # fmt: skip
    assert rules["use-connection"].expr == Repeat(RuleRef("channel"))


def test_0_9_1_basic_dialogue() -> None:
    docs = list(grammar_docs())
    text, line, column = docs[4]
    basic = merged(parse_rules(text, "amqp0-9-1.xml", line, column))["basic"]
    assert isinstance(basic.expr, Alt) and len(basic.expr.options) == 11
    # "C:GET ( S:GET-OK content / S:GET-EMPTY )"
    assert basic.expr.options[6] == Seq(
        (
            Step("C", "GET"),
            Alt((Seq((Step("S", "GET-OK"), RuleRef("content"))), Step("S", "GET-EMPTY"))),
        )
    )
