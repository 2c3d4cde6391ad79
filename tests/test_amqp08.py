"""A new version of a protocol we read, with no code change: AMQP 0-8's XML (and Qpid's 2006
import of it), and the choice of format and protocol for any spec file.

The format is told by the XML's root element, parsed past comments however long (0-8's
copyright comment pushes `<amqp` past the first 2,000 characters); `--protocol` alone implies
the format; the field-table tags come from the protocol's shipped data unless `--data` or a
file beside the document says otherwise; what 0-8 writes differently (spaced names, no
revision) is read by rule and reported by `specgen lint` where it is. `specgen diff` from 0-8
to 0-9-1 is checked against the two XML documents, read here with the standard library.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from corpus import corpus_file

from specgen import ir
from specgen.cli import main
from specgen.frontends import FRONTENDS
from specgen.frontends.adoc_tree import SpecSyntaxError
from specgen.sources import SourceError, resolve
from specgen.specs import SPECS, build_ir

AMQP091 = SPECS / "amqp-0-9-1"
AMQP10 = SPECS / "amqp-1-0"


def _corpus(rel: str) -> Path:
    path = corpus_file(rel)
    if path is None:
        pytest.skip(f"the spec corpus ({rel}) is not available: set SPECGEN_CORPUS")
    return path


@pytest.fixture(scope="module")
def amqp08() -> Path:
    return _corpus("amqp-0-8/amqp0-8.xml")


def _where(path: Path, needle: str) -> tuple[int, int]:
    """1-based line and column of the first `needle` in the file, read from the file itself."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if needle in line:
            return number, line.index(needle) + 1
    raise AssertionError(f"{needle!r} not in {path}")


# ---- the format, from the root element


def _with_comment(tmp_path: Path, source: Path, name: str, prolog: str) -> Path:
    """`source` with `prolog` put in front of its root element's line."""
    text = source.read_text(encoding="utf-8")
    at = text.index("<amqp")
    target = tmp_path / name
    target.write_text(text[:at] + prolog + text[at:], encoding="utf-8")
    return target


def test_a_long_comment_before_the_root_does_not_hide_it(tmp_path: Path) -> None:
    comment = "<!--\n" + "Copyright and license, at length.\n" * 200 + "-->\n"
    pi = '<?xml-stylesheet type="text/xsl" href="amqp.xsl"?>\n'
    path = _with_comment(tmp_path, AMQP091 / "amqp0-9-1.xml", "spec.xml", comment + pi)
    assert path.read_text(encoding="utf-8").index("<amqp") > 7000  # far past any sniffing
    spec = resolve(str(path))
    assert (spec.protocol, spec.format, spec.version) == ("amqp-0-9-1", "amqp-xml", "spec")
    # and 1.0's and 0-10's roots, behind the same comment, are told apart from it
    one = _with_comment(tmp_path, AMQP10 / "index.xml", "index.xml", comment)
    assert resolve(str(one)).format == "amqp10-xml"
    ten = _with_comment(tmp_path, SPECS / "amqp-0-10" / "amqp.0-10.xml", "ten.xml", comment)
    assert resolve(str(ten)).format == "amqp010-xml"


@pytest.mark.parametrize("name", ["amqp0-8.xml", "amqp0-8.qpid-import-2006.xml"])
def test_the_0_8_files_are_told_as_given(name: str) -> None:
    path = _corpus(f"amqp-0-8/{name}")
    assert path.read_text(encoding="utf-8").index("<amqp") > 2000
    spec = resolve(str(path))
    assert (spec.protocol, spec.package, spec.format) == ("amqp-0-9-1", "amqp_0_9_1", "amqp-xml")
    # nothing beside them: the protocol's own field-table tags
    assert dict(spec.data) == {"field-types": AMQP091 / "field-types.toml"}


def test_a_root_no_front_end_reads_is_named_where_it_is(tmp_path: Path) -> None:
    path = tmp_path / "other.xml"
    path.write_text("<!-- about -->\n<?pi x?>\n  <protocol version='1'/>\n", encoding="utf-8")
    with pytest.raises(SourceError) as e:
        resolve(str(path))
    assert str(e.value).startswith(f"{path.as_posix()}:3:3: the root element is <protocol>")
    assert ", ".join(sorted(FRONTENDS)) in str(e.value)


def test_a_broken_prolog_is_a_syntax_error_at_its_place(tmp_path: Path) -> None:
    path = tmp_path / "broken.xml"
    path.write_text('<?xml version="1.0"?>\n<!-- never closed\n<amqp/>\n', encoding="utf-8")
    with pytest.raises(SpecSyntaxError) as e:
        resolve(str(path))
    assert str(e.value).startswith(f"{path.as_posix()}:2:1: a comment that is never closed")


# ---- --spec-format and --protocol


def test_spec_format_refuses_a_bogus_value_with_the_valid_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as e:
        main(["lint", str(AMQP091 / "amqp0-9-1.xml"), "--spec-format", "bogus"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "argument --spec-format: invalid choice: 'bogus'" in err
    for fmt in FRONTENDS:
        assert repr(fmt) in err


def test_help_lists_the_formats_and_protocols(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["generate", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())  # argparse wraps at any space
    formats = ", ".join(sorted(FRONTENDS))
    assert f"one of: {formats}" in help_text
    protocols = sorted(p.parent.name for p in SPECS.glob("*/protocol.toml"))
    assert f"one of: {', '.join(protocols)}" in help_text
    assert "field-types (amqp-0-9-1)" in help_text


def test_protocol_alone_implies_the_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # AMQP 1.0's Part 2 as prose: no suffix or root element tells its format
    for name in ("amqp-core-transport-v1.0.txt", "types.xml"):
        shutil.copy(AMQP10 / name, tmp_path / name)
    prose = str(tmp_path / "amqp-core-transport-v1.0.txt")
    assert main(["ir", prose]) == 2
    err = capsys.readouterr().err
    assert "cannot tell the spec format" in err and "--spec-format" in err and "--protocol" in err
    spec = resolve(prose, protocol="amqp-1-0")
    assert (spec.protocol, spec.format) == ("amqp-1-0", "amqp10-xml")
    # a copy of the published set: --protocol is enough, and the IR is the registered one's
    copy = tmp_path / "set"
    copy.mkdir()
    for part in AMQP10.glob("*.xml"):
        shutil.copy(part, copy / part.name)
    assert main(["ir", str(copy / "index.xml"), "--protocol", "amqp-1-0"]) == 0
    built = ir.load(capsys.readouterr().out)
    registered = build_ir(resolve("amqp-1-0/1.0"))[0]

    def types(protocol: ir.Protocol) -> tuple[ir.TypeDef, ...]:  # which file, aside
        return tuple(dataclasses.replace(t, document="") for t in protocol.typedefs)

    assert built.typedefs and ir.same(types(built), types(registered))


def test_unknown_protocol_names_the_flag_and_the_known_ones(
    capsys: pytest.CaptureFixture[str], amqp08: Path
) -> None:
    assert main(["lint", str(amqp08), "--protocol", "amqp-0-7"]) == 2
    err = capsys.readouterr().err
    assert "unknown protocol 'amqp-0-7' (--protocol); known: " in err and "amqp-0-9-1" in err


# ---- what 0-8 writes differently, read by rule and reported where it is


def test_lint_reports_each_rule_at_its_place(
    amqp08: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lint", str(amqp08)]) == 0
    out = capsys.readouterr().out.splitlines()
    spelling = [ln for ln in out if ": name-spelling: " in ln]
    revision = [ln for ln in out if ": revision-absent: " in ln]
    assert len(spelling) == len(revision) == 1
    line, column = _where(amqp08, 'name="frame method"')
    assert spelling[0].startswith(f"{amqp08.as_posix()}:{line}:{column}: name-spelling: ")
    spaced = re.findall(
        r'<(?:constant|domain|class|method|field|response)\s[^>]*?\bname\s*=\s*"([^"]*\s[^"]*)"',
        amqp08.read_text(encoding="utf-8"),
    )
    assert "'frame method'" in spelling[0] and "'frame-method'" not in spelling[0]
    assert (
        f"{len(spaced) + _spaced_references(amqp08)} names are written with spaces" in (spelling[0])
    )
    line, column = _where(amqp08, '<amqp major="8" minor="0"')
    assert revision[0].startswith(f"{amqp08.as_posix()}:{line}:{column}: revision-absent: ")
    assert "'AMQP' 1 1 8 0" in revision[0]


def _spaced_references(path: Path) -> int:
    """Spaced values of the attributes that refer to names (domain, type, a constant's class,
    an assert's method and field)."""
    text = path.read_text(encoding="utf-8")
    refs = re.findall(r'<(?:field|domain)\s[^>]*?\b(?:domain|type)\s*=\s*"([^"]*)"', text)
    refs += re.findall(r'<constant\s[^>]*?\bclass\s*=\s*"([^"]*)"', text)
    for attr in ("method", "field"):  # an assert may have both
        refs += re.findall(rf'<assert\s[^>]*?\b{attr}\s*=\s*"([^"]*)"', text)
    return sum(1 for r in refs if len(r.split()) > 1)


def test_spaced_names_and_no_revision_read_as_0_9_1_writes_them(tmp_path: Path) -> None:
    """0-9-1's XML respelt as 0-8 writes: the same commands, one finding per rule, and the
    header of the versions before 0-9-1."""
    text = (AMQP091 / "amqp0-9-1.xml").read_text(encoding="utf-8")
    edited = text.replace('"frame-method"', '"frame method"').replace(
        'domain = "consumer-tag"', 'domain = "consumer tag"'
    )
    edited = edited.replace('name = "consumer-tag"', 'name = "consumer tag"')
    edited = edited.replace('revision = "1"', "", 1)
    assert edited.count(" tag") > text.count(" tag") and 'revision = "1"' not in edited
    path = tmp_path / "respelt.xml"
    path.write_text(edited, encoding="utf-8")
    protocol, log = build_ir(resolve(str(path)))
    original, original_log = build_ir(resolve("amqp-0-9-1/0-9-1"))
    assert ir.same(protocol.commands, original.commands)
    codes = [f.code for f in log.items]
    assert codes.count("name-spelling") == codes.count("revision-absent") == 1
    assert "name-spelling" not in [f.code for f in original_log.items]
    assert [p.data for p in protocol.frame.preambles] == [b"AMQP\x01\x01\x00\x09"]
    assert [p.data for p in original.frame.preambles] == [b"AMQP\x00\x00\x09\x01"]


# ---- the protocol's data: shipped, beside the document, or given


def test_data_flag_overrides_the_shipped_field_types(
    tmp_path: Path, amqp08: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shipped = (AMQP091 / "field-types.toml").read_text(encoding="utf-8")
    # RabbitMQ's 'x' (byte array) dropped: a table with it is no longer read
    mine = re.sub(r'\[\[tag\]\]\ntag = "x"\n(?:(?!\[\[tag\]\]).*\n)*', "", shipped)
    mine = mine.replace('"S", "x", ', '"S", ')
    assert 'tag = "x"' in shipped and 'tag = "x"' not in mine and '"x"' not in mine
    given = tmp_path / "tags.toml"
    given.write_text(mine, encoding="utf-8")
    spec = resolve(str(amqp08), data={"field-types": given})
    protocol, log = build_ir(spec)
    value = next(n for n in protocol.named if n.name == "field-value")
    tags = {c.values[0] for c in value.type.cases}  # type: ignore[attr-defined]
    assert ord("x") not in tags and ord("S") in tags
    assert not any("'x'" in f.message for f in log.items if f.code == "field-type-tag")
    # a name the protocol does not take, and a file that is not there, are refused by name
    assert main(["lint", str(amqp08), "--data", "tags=x.toml"]) == 2
    assert "--data tags=...: amqp-0-9-1 takes no 'tags' (it takes: field-types)" in (
        capsys.readouterr().err
    )
    assert main(["lint", str(amqp08), "--data", f"field-types={tmp_path / 'none.toml'}"]) == 2
    assert "no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["lint", str(amqp08), "--data", "field-types"])
    assert "is not NAME=FILE" in capsys.readouterr().err


def test_a_field_types_file_beside_the_document_is_its_own(tmp_path: Path, amqp08: Path) -> None:
    shutil.copy(amqp08, tmp_path / amqp08.name)
    beside = tmp_path / "field-types.toml"
    beside.write_text("prefer = []\n", encoding="utf-8")  # no tags: refused, at its line
    spec = resolve(str(tmp_path / amqp08.name))
    assert dict(spec.data) == {"field-types": beside}
    with pytest.raises(Exception, match=r"field-types\.toml:1:1: field-types\.toml lists no tags"):
        build_ir(spec)


# ---- the Qpid variant generates and imports, and reads as the website copy does


def test_the_qpid_variant_generates_as_given(tmp_path: Path, amqp08: Path) -> None:
    qpid = _corpus("amqp-0-8/amqp0-8.qpid-import-2006.xml")
    out = tmp_path / "specgen_qpid08"
    assert main(["generate", str(qpid), "--out", str(out)]) == 0
    sys.path.insert(0, str(tmp_path))
    try:
        codec = importlib.import_module("specgen_qpid08.amqp_0_9_1.amqp0_8_qpid_import_2006")
        framing = importlib.import_module("specgen_qpid08.amqp_0_9_1.framing")
    finally:
        sys.path.remove(str(tmp_path))
    assert framing.PREAMBLES == {"client": b"AMQP\x01\x01\x08\x00"}
    # a frame RabbitMQ sends on 0-8 (a Connection.Tune for channel-max 2047, frame-max 131072,
    # heartbeat 60) decodes and re-encodes to its bytes
    tune = bytes.fromhex("01 0000 0000000c 000a 001e 07ff 00020000 003c ce".replace(" ", ""))
    msg = codec.decode(tune, sender="server")
    assert (msg.channel_max, msg.frame_max, msg.heartbeat) == (2047, 131072, 60)
    assert codec.encode(msg) == tune
    # the two files differ in prose only (SOURCES.md): the same wire
    assert ir.same(
        build_ir(resolve(str(qpid)))[0].commands, build_ir(resolve(str(amqp08)))[0].commands
    )


# ---- specgen diff 0-8 -> 0-9-1, against the XML documents themselves

BASE_TYPES = {
    "bit",
    "octet",
    "short",
    "long",
    "longlong",
    "shortstr",
    "longstr",
    "timestamp",
    "table",
}


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[-\s]+", name))


def _methods(
    path: Path,
) -> tuple[dict[tuple[str, str], tuple[int, int, tuple[str, ...]]], dict[str, tuple[int, bool]]]:
    """(class, method) -> (class index, method index, the base types of its fields), and class
    -> (index, whether it has content properties), from the XML as ElementTree reads it."""
    root = ET.parse(path).getroot()
    domains = {d.get("name"): d.get("type") for d in root.iter("domain")}

    def base(name: str | None) -> str:
        seen = 0
        while name not in BASE_TYPES:
            name = domains[name]
            seen += 1
            assert seen < 10, name
        return str(name)

    methods = {}
    classes = {}
    for cls in root.iter("class"):
        cname, cindex = str(cls.get("name")), int(str(cls.get("index")))
        classes[cname] = (cindex, cls.find("field") is not None)
        for m in cls.iter("method"):
            types = tuple(base(f.get("domain") or f.get("type")) for f in m.iter("field"))
            methods[(cname, str(m.get("name")))] = (cindex, int(str(m.get("index"))), types)
    return methods, classes


def test_diff_0_8_to_0_9_1_says_what_the_documents_say(
    amqp08: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["diff", str(amqp08), "amqp-0-9-1/0-9-1"]) == 0
    out = capsys.readouterr().out
    sections = re.split(r"\n(?=\S)", out)
    wire = "\n".join(s for s in sections if s.startswith(("Breaking", "Compatible")))
    breaking = next(s for s in sections if s.startswith("Breaking"))
    compatible = next(s for s in sections if s.startswith("Compatible"))

    old, old_classes = _methods(amqp08)
    new, new_classes = _methods(AMQP091 / "amqp0-9-1.xml")
    # what is known of 0-8 -> 0-9-1, as the documents have it
    gone = set(old_classes) - set(new_classes)
    assert gone == {"access", "dtx", "file", "stream", "test", "tunnel"}

    def has(section: str, code: str, text: str) -> bool:
        return re.search(rf"^  {code}\s+{re.escape(text)}", section, re.M) is not None

    for (cls, method), (ci, mi, _) in old.items():
        name = f"{_camel(cls)}.{_camel(method)}"
        if cls in gone:
            assert has(breaking, "COMMAND_REMOVED", f"{name}: {name} removed (key {ci}/{mi})")
        elif (cls, method) not in new:
            assert has(breaking, "COMMAND_REMOVED", f"{name}: {name} removed (key {ci}/{mi})")
    for cls in gone:
        ci, has_properties = old_classes[cls]
        if has_properties:
            name = f"{_camel(cls)}.Properties"
            assert has(breaking, "COMMAND_REMOVED", f"{name}: {name} removed (key 0x{ci:04x})")

    rekeyed = {k for k in old.keys() & new.keys() if old[k][1] != new[k][1]}
    assert rekeyed == {("connection", "close"), ("connection", "close-ok"), ("basic", "recover")}
    for cls, method in rekeyed:
        (ci, a, _), (_, b, _) = old[(cls, method)], new[(cls, method)]
        name = f"{_camel(cls)}.{_camel(method)}"
        assert has(breaking, "COMMAND_REKEYED", f"{name}: key {ci}/{a} -> {ci}/{b}")

    added = set(new) - set(old)
    assert added == {
        ("queue", "unbind"),
        ("queue", "unbind-ok"),
        ("basic", "recover-async"),
        ("basic", "recover-ok"),
    }
    for cls, method in added:
        ci, mi, _ = new[(cls, method)]
        name = f"{_camel(cls)}.{_camel(method)}"
        assert has(compatible, "COMMAND_ADDED", f"{name}: {name} added, key {ci}/{mi}")

    # the same index and the same field types: nothing on the wire to say (Basic.Qos, ...)
    same = {k for k in old.keys() & new.keys() if old[k][1:] == new[k][1:]}
    assert ("basic", "qos") in same and ("exchange", "declare") in same
    for cls, method in same:
        name = f"{_camel(cls)}.{_camel(method)}"
        assert not re.search(rf"^  \w+\s+{re.escape(name)}[:/ ]", wire, re.M), name
    # and those whose fields changed are each a breaking change
    changed = {k for k in old.keys() & new.keys() if old[k][1] == new[k][1] and k not in same}
    assert changed == {("channel", "open-ok"), ("basic", "consume")}
    for cls, method in changed:
        assert re.search(rf"^  FIELD_\w+\s+{_camel(cls)}\.{_camel(method)} / ", breaking, re.M)
    # the protocol header: 'AMQP' 1 1 8 0 before, 'AMQP' 0 0 9 1 after
    assert has(breaking, "FRAME_PREAMBLE", "frame: the connection preamble changed")
