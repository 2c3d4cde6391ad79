"""Hostile or broken spec input is one `file:line:column: message` line and exit 2, cheaply.

Bytes that are not UTF-8, in any file any front-end reads (the document, an AMQP 1.0 index's
parts, the text beside AMQP 0-10's XML, field-types.toml), and XML nested past MAX_DEPTH, which
is refused before lark reads anything (issue 25).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from specgen.cli import main
from specgen.frontends import xml_tree
from specgen.frontends.adoc_tree import SpecSyntaxError
from specgen.frontends.spec_text import decode_spec_text, read_spec_text
from specgen.ir import SourceSpan
from specgen.specs import SPECS

# ---- bytes that are not UTF-8


def _where(text: str) -> tuple[int, int]:
    """1-based line and column just past `text` (CRLF and CR end lines, as text mode reads)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return len(lines), len(lines[-1]) + 1


def _spoil(path: Path, marker: str, bad: bytes) -> tuple[int, int]:
    """Put `bad` in front of the first `marker` in the file; where an editor shows it."""
    data = path.read_bytes()
    at = data.index(marker.encode())
    path.write_bytes(data[:at] + bad + data[at:])
    return _where(data[:at].decode("utf-8"))


# (spec folder copied, file spoiled, before what, bad bytes, document given, its format)
CASES = {
    "adoc": ("rabbitmq-stream", "PROTOCOL-4.0.adoc", "=== Credit", b"\xff", None, "adoc"),
    "amqp-xml": ("amqp-0-9-1", "amqp0-9-1.xml", '"channel" handler', b"\xff", None, "amqp-xml"),
    "amqp-xml field-types.toml": (
        "amqp-0-9-1",
        "field-types.toml",
        'tag = "b"',
        b"\xc3",  # a lead byte whose continuation is missing ('t' follows)
        "amqp0-9-1.xml",
        "amqp-xml",
    ),
    "amqp10-xml index": ("amqp-1-0", "index.xml", '<xref type="amqp"', b"\xff", None, "amqp10-xml"),
    "amqp10-xml part": (
        "amqp-1-0",
        "transport.xml",
        'name="open" source',
        b"\x80",
        "index.xml",
        "amqp10-xml",
    ),
    "amqp10-xml prose": (
        "amqp-1-0",
        "amqp-core-transport-v1.0.txt",
        "Transport (this document)",  # after a '·' (two bytes, one column) on the line
        b"\xff",
        None,
        "amqp10-xml",
    ),
    "amqp10-xml prose, embedded <type>": (
        "amqp-1-0",
        "amqp-core-transport-v1.0.txt",
        '<field name="hostname"',
        b"\xed\xa0\x80",  # a UTF-16 surrogate, which UTF-8 may not encode
        None,
        "amqp10-xml",
    ),
    "amqp10-xml prose, Part 1 beside it": (
        "amqp-1-0",
        "types.xml",
        'name="ubyte"',
        b"\xfe",
        "amqp-core-transport-v1.0.txt",
        "amqp10-xml",
    ),
    "amqp010-xml": ("amqp-0-10", "amqp.0-10.xml", "<class name", b"\xff", None, "amqp010-xml"),
    "amqp010-xml text beside": (
        "amqp-0-10",
        "amqp-0-10-text.txt",
        "bin16 = 2 OCTET",
        b"\xe2\x82",  # the first two bytes of a three-byte character
        "amqp.0-10.xml",
        "amqp010-xml",
    ),
    "rfc006-abnf": (
        "amqp-fast-0-8",
        "amq-rfc006.txt",
        "Point-to-point",
        b"\xff",
        None,
        "rfc006-abnf",
    ),
}


def _bytes(bad: bytes) -> str:
    # Python's decoder refuses a surrogate's lead byte alone, a cut sequence whole
    refused = bad[:1] if bad == b"\xed\xa0\x80" else bad
    return ("byte " if len(refused) == 1 else "bytes ") + " ".join(f"0x{b:02x}" for b in refused)


@pytest.mark.parametrize("command", ["ir", "lint", "generate"])
@pytest.mark.parametrize("case", list(CASES))
def test_not_utf8_is_one_line_at_the_first_bad_byte_in_every_frontend(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, command: str
) -> None:
    folder, spoiled, marker, bad, document, format = CASES[case]
    spec = tmp_path / "spec"
    shutil.copytree(SPECS / folder, spec)
    line, column = _spoil(spec / spoiled, marker, bad)
    argv = [command, str(spec / (document or spoiled)), "--spec-format", format]
    out = tmp_path / "out"
    if command == "generate":
        argv += ["--out", str(out)]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        f"specgen: {(spec / spoiled).as_posix()}:{line}:{column}: not UTF-8 ({_bytes(bad)})\n"
    )
    assert captured.out == ""
    assert not out.exists()


def test_the_issue_repro_without_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "x.adoc"
    path.write_bytes(b"= RabbitMQ Stream Protocol Reference\n\n== Frames\n\n\xff\xfe\n")
    assert main(["ir", str(path)]) == 2
    assert capsys.readouterr().err == f"specgen: {path.as_posix()}:5:1: not UTF-8 (byte 0xff)\n"


def test_columns_count_characters_and_lines_end_as_text_mode_reads(tmp_path: Path) -> None:
    path = tmp_path / "x.adoc"
    # 17 characters (19 bytes) before the bad byte on its line
    path.write_bytes("= Title\r\n\r\n== Frames caf\u00e9 \u00b7 ".encode() + b"\xe9 x\n")
    with pytest.raises(SpecSyntaxError) as info:
        read_spec_text(path, "x.adoc")
    assert str(info.value) == "x.adoc:3:18: not UTF-8 (byte 0xe9)"
    assert info.value.span == SourceSpan("x.adoc", 3, 18)
    assert info.value.__context__ is None  # no UnicodeDecodeError rides along
    # CR alone ends a line too; a byte order mark is no column; a cut character at the end
    assert str(_refusal(b"a\rb\r\ncd\xf0\x9f")) == "t:3:3: not UTF-8 (bytes 0xf0 0x9f)"
    assert str(_refusal(b"\xef\xbb\xbfab\xff")) == "t:1:3: not UTF-8 (byte 0xff)"
    assert str(_refusal(b"\xff\xfe<\x00a\x00")) == "t:1:1: not UTF-8 (byte 0xff)"
    # the text itself reads as Path.read_text does
    assert decode_spec_text(b"\xef\xbb\xbfa\r\nb\rc\n", "t") == "\ufeffa\nb\nc\n"


def _refusal(data: bytes) -> SpecSyntaxError:
    with pytest.raises(SpecSyntaxError) as info:
        decode_spec_text(data, "t")
    return info.value


def test_format_sniffing_reports_bytes_that_are_not_utf8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # UTF-16: the content tells no format, and the reason is the encoding, said at its place
    path = tmp_path / "spec.xml"
    path.write_bytes("<amqp/>\n".encode("utf-16"))
    assert main(["ir", str(path)]) == 2
    assert capsys.readouterr().err == f"specgen: {path.as_posix()}:1:1: not UTF-8 (byte 0xff)\n"
    # a bad byte after what the sniffing reads: the front-end reports it, at its line
    path.write_bytes(b'<amqp major="0" minor="9">\n  <constant name="x" value="1"/>\xff\n</amqp>\n')
    assert main(["ir", str(path)]) == 2
    assert capsys.readouterr().err == f"specgen: {path.as_posix()}:2:33: not UTF-8 (byte 0xff)\n"
    # valid text that tells no format still says so (and names the real flag)
    path.write_text("plain words\n", encoding="utf-8")
    assert main(["ir", str(path)]) == 2
    assert "cannot tell the spec format" in capsys.readouterr().err


# ---- XML nested too deep, refused before lark parses


@pytest.fixture
def no_lark(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse() -> None:
        raise AssertionError("lark was asked to parse")

    monkeypatch.setattr(xml_tree, "_parser", refuse)


def _deep_error(text: str) -> str:
    with pytest.raises(SpecSyntaxError) as info:
        xml_tree.parse(text, "t.xml")
    return str(info.value)


@pytest.mark.parametrize("format", [None, "amqp-xml", "amqp10-xml", "amqp010-xml"])
def test_deep_nesting_is_refused_before_parsing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_lark: None, format: str | None
) -> None:
    path = tmp_path / "deep.xml"
    path.write_text("<amqp>" + "<a>" * 100_000 + "</a>" * 100_000 + "</amqp>\n", encoding="utf-8")
    flags = [] if format is None else ["--spec-format", format]
    started = time.process_time()
    assert main(["ir", str(path), *flags]) == 2
    elapsed = time.process_time() - started
    # <amqp> and 99 <a>s before the 101st element: 6 + 99 * 3 characters
    assert capsys.readouterr().err == (
        f"specgen: {path.as_posix()}:1:304: elements nested more than 100 deep\n"
    )
    assert elapsed < 0.5  # loose: it was 2.8 s of parsing; the scan stops after 101 tags


def test_the_too_deep_element_is_named_where_it_starts(no_lark: None) -> None:
    deep = "<a>\n" * 101 + "</a>" * 101
    assert _deep_error(deep) == "t.xml:101:1: elements nested more than 100 deep"
    # an empty element one too deep is too deep as well
    empty = "<r>\n" + "  <a x='1'>\n" * 99 + "  <b/>" + "</a>" * 99 + "</r>"
    assert _deep_error(empty) == "t.xml:101:3: elements nested more than 100 deep"
    # in a document lark would refuse later (never closed), the depth is what is said
    assert _deep_error("<r>" + "<a>" * 200) == "t.xml:1:301: elements nested more than 100 deep"


# markup whose '<' and '>' open and close nothing, put first in <r>, before 99 nested elements
TRICKS = {
    "comment": "<!-- <a><a><a> -->",
    "comment with quotes": "<!-- ' \" <a> -->",
    "CDATA": "<![CDATA[<a><a></b>]]>",
    "processing instruction": "<?pi <a><a> ?>",
    "'>' in an attribute value": "<e x='>' y=\">\"/>",
    "empty elements": "<e/><e />",
    "end tag with space": "<e></e >",
}


@pytest.mark.parametrize("trick", list(TRICKS))
def test_markup_that_opens_nothing_does_not_count(trick: str) -> None:
    inner = TRICKS[trick]
    ok = "<r>" + inner + "<a>" * 99 + "</a>" * 99 + "</r>"
    assert xml_tree.parse(ok, "t.xml").tag == "r"  # lark parses it: the scan let it through
    one_more = "<r>" + inner + "<a>" * 100 + "</a>" * 100 + "</r>"
    column = 4 + len(inner) + 99 * 3
    assert _deep_error(one_more) == f"t.xml:1:{column}: elements nested more than 100 deep"


def test_prolog_markup_does_not_count(no_lark: None) -> None:
    prolog = (
        '<?xml version="1.0"?>\n<?style <a><a> ?>\n<!-- <a> -->\n<!DOCTYPE r SYSTEM "<a><a>.dtd">\n'
    )
    text = prolog + "<a>" * 101 + "</a>" * 101
    assert _deep_error(text) == "t.xml:5:301: elements nested more than 100 deep"


@pytest.mark.parametrize(
    "rel",
    sorted(p.relative_to(SPECS).as_posix() for p in SPECS.glob("*/*.xml")),
)
def test_the_scan_and_the_tree_agree_on_every_spec(
    rel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """For each spec: the scan passes it, and with the limit one below its real depth, refuses
    exactly the element the tree's own check (the backstop) refuses."""
    text = decode_spec_text((SPECS / rel).read_bytes(), rel)
    root = xml_tree.parse(text, rel)

    def depth(e: xml_tree.Element) -> int:
        return 1 + max((depth(c) for c in e.elements()), default=0)

    monkeypatch.setattr(xml_tree, "MAX_DEPTH", depth(root) - 1)
    normalized = text.removeprefix("\ufeff")
    with pytest.raises(SpecSyntaxError) as scanned:
        xml_tree._check_depth(normalized, rel)
    monkeypatch.setattr(xml_tree, "_check_depth", lambda text, path: None)
    with pytest.raises(SpecSyntaxError) as built:
        xml_tree.parse(text, rel)
    assert scanned.value.span == built.value.span
    assert str(scanned.value) == str(built.value)
