"""AMQP 1.0 XML as real projects publish it (issue 35), built in tmp_path from the shipped
specs/amqp-1-0/*.xml by small edits, and the real copies of the spec corpus where present.

- frame bodies are the types providing `frame` / `sasl-frame`, whatever section they sit in
  (Azure uAMQP's one definitions file keeps every type in `<section name="1">`);
- numbers in every spelling the copies use (`0x...`, decimal, C suffixes: uAMQP's
  `default="4294967295u"`) are values in the IR; a spelling that is no number where one is
  needed is one located line, exit 2, never a traceback;
- a document of types alone (Part 1, `types.xml`) generates a package that imports and passes
  its own conformance tests;
- text straight inside `<doc>`, outside any `<p>`, is kept as prose;
- a field of a type nobody defines (`uint33`) is refused where the field names it;
- the stripped copies (no labels) still encode byte, short, int, long and timestamp as signed;
- a part read alone (the stripped copies have no index) takes the types it names from the
  parts beside it.
"""

from __future__ import annotations

import importlib
import json
import re
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest
from fresh_python import import_everything, run_own_tests

from specgen import overlay
from specgen.cli import main
from specgen.emitters import plan_described
from specgen.emitters.naming import PlanError
from specgen.frontends import amqp10_xml
from specgen.frontends.adoc import SpecError
from specgen.ir import Protocol
from specgen.specs import ROOT, build_ir, find

SPEC_DIR = ROOT / "specs" / "amqp-1-0"
CORPUS = Path("/work/shared/specs-corpus/amqp-1.0")
STRIPPED = ("stripped-qpid-proton", "stripped-rabbitmq-codegen")
PARTS = ("types", "transport", "messaging", "security", "transactions")


@pytest.fixture(scope="module")
def full() -> Protocol:
    return build_ir(find("amqp-1-0/1.0"))[0]


def _text(part: str) -> str:
    return (SPEC_DIR / f"{part}.xml").read_text(encoding="utf-8")


def _where(text: str, needle: str, nth: int = 0) -> str:
    """`line:column` of the `nth` occurrence of `needle` in `text` (1-based, as spans are)."""
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    line = text.count("\n", 0, at) + 1
    return f"{line}:{at - (text.rfind(chr(10), 0, at) + 1) + 1}"


def _one_section(*parts: str, section: str | None = "1") -> str:
    """The parts' types in one document, all in one `<section name="1">` as uAMQP's
    definitions file keeps them (`section=None`: straight under `<amqp>`, in no section)."""
    inner = []
    for part in parts:
        text = _text(part)
        body = text[text.index("<section") : text.rindex("</section>") + len("</section>")]
        inner.append(re.sub(r"<section\b[^>]*>|</section>", "", body))
    body = "\n".join(inner)
    if section is not None:
        body = f'  <section name="{section}">\n{body}\n  </section>'
    return (
        '<?xml version="1.0" encoding="utf-8" ?>\n'
        '<amqp xmlns="http://tempuri.org/amqp_definitions" name="root">\n'
        f"{body}\n</amqp>\n"
    )


def _beside_part1(folder: Path, name: str, text: str) -> Path:
    """`text` as `folder/name`, with Part 1 (`types.xml`) beside it for the encodings."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(SPEC_DIR / "types.xml", folder / "types.xml")
    doc = folder / name
    doc.write_text(text, encoding="utf-8")
    return doc


def _build(doc: Path) -> Protocol:
    return amqp10_xml.build(doc, doc.name, "amqp-1-0", "test")[0]


def _import(out: Path, name: str) -> ModuleType:
    """Module `name` of the package generated into `out` (imported as the package `out` is),
    forgotten again by `sys.modules` (every test's folder is called out)."""
    sys.path.insert(0, str(out.parent))
    try:
        return importlib.import_module(f"{out.name}.{name}")
    finally:
        sys.path.remove(str(out.parent))
        for loaded in [m for m in sys.modules if m == out.name or m.startswith(f"{out.name}.")]:
            del sys.modules[loaded]


def _error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


# ---- 1. frame bodies: the types providing frame / sasl-frame, wherever they sit


@pytest.mark.parametrize("section", ["1", "definitions", None])
def test_frame_bodies_are_the_types_providing_frame_wherever_they_sit(
    tmp_path: Path, full: Protocol, section: str | None
) -> None:
    doc = _beside_part1(
        tmp_path, "amqp_definitions.xml", _one_section("transport", "security", section=section)
    )
    ours = _build(doc)
    # the same 9 performatives (frame type 0) and 5 SASL frames (1) as the published set's
    assert {c.name: c.ident for c in ours.commands} == {c.name: c.ident for c in full.commands}
    assert len(ours.commands) == 14
    assert {t.section for t in ours.typedefs if t.klass == "composite"} == {section or ""}


def test_a_frame_body_provides_one_frame_archetype_and_is_a_composite(tmp_path: Path) -> None:
    both = _text("transport").replace(
        'name="open" source="list" provides="frame"',
        'name="open" source="list" provides="frame, sasl-frame"',
    )
    doc = _beside_part1(tmp_path / "both", "transport.xml", both)
    with pytest.raises(SpecError, match=r"open provides both frame and sasl-frame: .* -> "):
        _build(doc)
    restricted = _text("transport").replace(
        '<type class="restricted" name="handle" source="uint" label="the handle of a Link">',
        '<type class="restricted" name="handle" source="uint" provides="frame">'
        '<descriptor name="x:handle" code="0x00000001:0x00000001"/>',
    )
    assert "x:handle" in restricted
    doc = _beside_part1(tmp_path / "restricted", "transport.xml", restricted)
    with pytest.raises(SpecError, match=r"handle provides frame but is restricted: .* -> "):
        _build(doc)


def test_a_uamqp_shaped_file_generates_and_passes_its_tests(
    tmp_path: Path,
) -> None:
    """All types in one section, uAMQP's spellings of numbers: generate --out, import, and
    the package's own conformance tests (before: 0 commands, then a ValueError traceback)."""
    text = _one_section("transport", "security").replace(
        'default="4294967295"', 'default="4294967295u"'
    )
    assert text.count('default="4294967295u"') == 2  # open.max-frame-size, begin.handle-max
    doc = _beside_part1(tmp_path / "spec", "amqp_definitions.xml", text)
    out = tmp_path / "out"
    assert main(["generate", str(doc), "--out", str(out)]) == 0
    imported = import_everything(out, tmp_path)
    assert imported.returncode == 0, imported.stderr
    tested = run_own_tests(out, tmp_path)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    codec = _import(out, "amqp_1_0.amqp_definitions")
    assert len(codec.COMMANDS) == 14
    assert codec.Open.DEFAULTS["max_frame_size"] == 4294967295
    assert codec.Begin.DEFAULTS["handle_max"] == 4294967295


# ---- 2. numbers in every spelling the copies use


@pytest.mark.parametrize(
    "spelling",
    ["4294967295", "4294967295u", "4294967295U", "4294967295UL", "4294967295ul", "4294967295L",
     "0xFFFFFFFF", "0xffffffffu", "0XFFFFFFFFUL", " 4294967295 "],
)  # fmt: skip
def test_a_default_in_any_spelling_is_its_value_in_the_ir(tmp_path: Path, spelling: str) -> None:
    text = _text("transport").replace('default="4294967295"', f'default="{spelling}"')
    proto = _build(_beside_part1(tmp_path, "transport.xml", text))
    begin = next(t for t in proto.typedefs if t.name == "begin")
    handle_max = next(f for f in begin.fields if f.name == "handle-max")
    assert handle_max.default == 4294967295 and type(handle_max.default) is int
    message = proto.command("Begin").messages[0]
    assert next(f for f in message.fields if f.name == "HandleMax").default == 4294967295


def test_choices_constants_and_descriptors_read_c_spellings(tmp_path: Path) -> None:
    text = (
        _text("transport")
        .replace('<choice name="mixed" value="2">', '<choice name="mixed" value="0x02u">')
        .replace('name="PORT" value="5672"', 'name="PORT" value="5672U"')
        .replace('code="0x00000000:0x00000010"', 'code="0x00000000UL:16u"')
        .replace('type="ushort" default="65535"', 'type="ushort" default="0xFFFFL"')
    )  # fmt: skip
    proto = _build(_beside_part1(tmp_path, "transport.xml", text))
    mode = next(t for t in proto.typedefs if t.name == "sender-settle-mode")
    assert [(c.name, c.value) for c in mode.choices] == [
        ("unsettled", "0"),
        ("settled", "1"),
        ("mixed", "2"),
    ]
    assert next(c for c in proto.constants if c.name == "PORT").value == 5672
    assert proto.command("Open").ident == (0, 0x10)
    open_ = next(t for t in proto.typedefs if t.name == "open")
    assert next(f for f in open_.fields if f.name == "channel-max").default == 65535
    # booleans are values too
    transfer = next(t for t in proto.typedefs if t.name == "transfer")
    assert next(f for f in transfer.fields if f.name == "settled").default is None
    assert next(f for f in transfer.fields if f.name == "batchable").default is False
    # and a default naming a choice keeps the name; the plan writes its value
    attach = next(t for t in proto.typedefs if t.name == "attach")
    assert next(f for f in attach.fields if f.name == "snd-settle-mode").default == "mixed"
    plan = plan_described.plan(proto)
    attach_plan = next(c for c in plan.classes if c.name == "attach")
    assert next(f for f in attach_plan.fields if f.name == "snd-settle-mode").default == "2"


@pytest.mark.parametrize(
    ("old", "new", "needle", "says"),
    [
        ('name="handle-max" type="handle" default="4294967295"',
         'name="handle-max" type="handle" default="4294967295x"',
         'default="4294967295x"', "begin.handle-max's default '4294967295x' is not a number"),
        ('name="handle-max" type="handle" default="4294967295"',
         'name="handle-max" type="handle" default="010"',
         'default="010"', "begin.handle-max's default '010' is not a number"),
        ('name="handle-max" type="handle" default="4294967295"',
         'name="handle-max" type="handle" default="4.2e9"',
         'default="4.2e9"', "is not a number"),
        ('<field name="batchable" type="boolean" default="false"',
         '<field name="batchable" type="boolean" default="no"',
         'default="no"', "transfer.batchable's default 'no' is not a boolean -> true or false"),
        ('<choice name="mixed" value="2">', '<choice name="mixed" value="two">',
         'value="two"', "sender-settle-mode's choice mixed 'two' is not a number"),
        ('name="PORT" value="5672"', 'name="PORT" value="5672 or 5671"',
         'value="5672 or 5671"', "definition PORT '5672 or 5671' is not a number"),
        ('code="0x00000000:0x00000010"', 'code="0x00000000-0x00000010"',
         'code="0x00000000-0x00000010"', "is not domain:id -> two 32-bit numbers"),
        ('code="0x00000000:0x00000010"', 'code="0x00000000:0x100000010"',
         'code="0x00000000:0x100000010"', "32-bit numbers -> each at most 0xffffffff"),
    ],
)  # fmt: skip
def test_a_spelling_that_is_no_number_is_refused_where_it_stands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, needle: str, says: str
) -> None:
    text = _text("transport")
    assert old in text, old
    text = text.replace(old, new, 1)  # the first: transfer's batchable, not disposition's
    doc = _beside_part1(tmp_path, "transport.xml", text)
    with pytest.raises(SpecError) as e:
        _build(doc)
    assert str(e.value).startswith(f"transport.xml:{_where(text, needle)}: ")
    assert says in str(e.value) and " -> " in str(e.value)
    # the command line: one located line, exit 2 (it used to be a traceback at generate)
    assert main(["generate", str(doc), "--out", str(tmp_path / "out")]) == 2
    assert _error_line(capsys).startswith(f"specgen: {doc}:{_where(text, needle)}: ")
    assert not (tmp_path / "out").exists()


def test_an_overlay_spelling_the_plan_cannot_read_is_a_located_error(
    tmp_path: Path, full: Protocol
) -> None:
    """An overlay gives a default as its JSON says: text the plan must read as a number."""
    path = tmp_path / "overlay.json"
    entry = {"id": "u", "op": "set", "target": "typedef:begin.handle-max",
             "attributes": {"default": "4294967295u"}, "reason": "C", "evidence": ["test"]}  # fmt: skip
    path.write_text(json.dumps({"entries": [entry]}), encoding="utf-8")
    changed = overlay.apply(full, overlay.load(path, tmp_path))
    with pytest.raises(
        PlanError,
        match=r"transport\.xml:\d+:\d+: handle-max's default: '4294967295u' is not a number -> ",
    ):
        plan_described.plan(changed)
    entry["attributes"] = {"default": "0xFFFFFFFF"}  # a number's spelling the plan reads
    path.write_text(json.dumps({"entries": [entry]}), encoding="utf-8")
    changed = overlay.apply(full, overlay.load(path, tmp_path))
    begin = next(c for c in plan_described.plan(changed).classes if c.name == "begin")
    assert next(f for f in begin.fields if f.name == "handle-max").default == "4294967295"


def test_spellings_of_one_value_are_no_wire_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = _beside_part1(tmp_path / "old", "transport.xml", _text("transport"))
    spelled = (
        _text("transport")
        .replace('default="4294967295"', 'default="0xFFFFFFFFUL"')
        .replace('<choice name="mixed" value="2">', '<choice name="mixed" value="0x2u">')
    )
    new = _beside_part1(tmp_path / "new", "transport.xml", spelled)
    capsys.readouterr()
    main(["diff", str(old), str(new)])
    out = capsys.readouterr().out
    assert "FIELD_DEFAULT" not in out and "TYPEDEF_CHOICES" not in out, out


# ---- 3. a document of types alone


def test_types_alone_generate_an_importable_package_that_passes_its_own_tests(
    tmp_path: Path,
) -> None:
    doc = tmp_path / "spec" / "types.xml"
    doc.parent.mkdir()
    shutil.copy(SPEC_DIR / "types.xml", doc)
    out = tmp_path / "out"
    assert main(["generate", str(doc), "--out", str(out)]) == 0
    imported = import_everything(out, tmp_path)
    assert imported.returncode == 0, imported.stderr  # was: cannot import name 'COMMANDS'
    tested = run_own_tests(out, tmp_path)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    codec = _import(out, "amqp_1_0.types")
    assert codec.COMMANDS == {} and not any(codec.BODIES.values())
    assert codec.decode_value(codec.encode_value(codec.UInt(7))) == (7, 2)
    # its modules import only what they use (no class of a described type to write)
    enums = (out / "amqp_1_0" / "types" / "enums.py").read_text()
    assert "IntEnum" not in enums and "COMMANDS: dict[str, tuple[int, ...]] = {}" in enums
    assert "ClassVar" not in (out / "amqp_1_0" / "types" / "commands.py").read_text()


# ---- 4. text straight inside <doc>


def test_text_straight_inside_doc_is_kept_where_it_stands(tmp_path: Path) -> None:
    text = _text("transport")
    head = '<type class="composite" name="open" source="list" provides="frame"'
    at = text.index("<doc>", text.index(head)) + len("<doc>")
    end = text.index("</doc>", at)
    text = (
        text[:at]
        + '\n  Said before any paragraph, of <xref name="begin"/> too.\n'
        + text[at:end]
        + "\n  And after the last one.\n"
        + text[end:]
    )
    text = text.replace(
        '<choice name="mixed" value="2">\n        <doc>',
        '<choice name="mixed" value="2">\n        <doc>\n          Mixed, in no paragraph.',
    )
    proto = _build(_beside_part1(tmp_path, "transport.xml", text))
    open_ = next(t for t in proto.typedefs if t.name == "open")
    paras = open_.doc.split("\n\n")
    assert paras[0] == "Said before any paragraph, of begin too."
    assert paras[-1] == "And after the last one."
    assert paras[1].startswith("The first frame sent on a connection in either direction")
    mode = next(t for t in proto.typedefs if t.name == "sender-settle-mode")
    assert next(c for c in mode.choices if c.name == "mixed").doc.startswith(
        "Mixed, in no paragraph.\n\nThe Sender may send a mixture"
    )


def test_the_published_docs_read_as_before(full: Protocol) -> None:
    """No published `<doc>` holds text outside its blocks: their prose is unchanged."""
    open_ = next(t for t in full.typedefs if t.name == "open")
    assert open_.doc.startswith("The first frame sent on a connection in either direction")


# ---- a field of a type nobody defines


def test_a_field_of_an_undefined_type_is_refused_where_it_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = '<field name="max-frame-size" type="uint"'
    text = _text("transport").replace(old, '<field name="max-frame-size" type="uint33"')
    doc = _beside_part1(tmp_path, "transport.xml", text)
    with pytest.raises(SpecError) as e:
        _build(doc)  # it used to be read as any type, silently, with a lint finding
    where = _where(text, 'type="uint33"')
    message = str(e.value)
    assert message.startswith(f"transport.xml:{where}: open.max-frame-size is of type 'uint33'")
    assert " -> uint? name a defined type, or * (any value): " in message
    known = message.split(": ", 3)[-1]
    for name in ("ubyte", "uint", "ulong", "symbol", "handle", "sender-settle-mode", "open"):
        assert re.search(rf"\b{re.escape(name)}\b", known), name
    assert main(["ir", str(doc)]) == 2
    assert f"{doc}:{where}: open.max-frame-size is of type 'uint33'" in _error_line(capsys)


# ---- signed integers in copies without labels


def _unlabelled(text: str) -> str:
    """Part 1 as the stripped copies have it: no labels (the words saying which are signed)."""
    return re.sub(r'\s+label="[^"]*"', "", text)


def test_signed_integers_stay_signed_without_the_labels_that_say_so(tmp_path: Path) -> None:
    (tmp_path / "types.xml").write_text(_unlabelled(_text("types")), encoding="utf-8")
    doc = tmp_path / "transport.xml"
    doc.write_text(_text("transport"), encoding="utf-8")
    proto = _build(doc)
    assert all(not t.label for t in proto.typedefs if t.klass == "primitive")
    prims = {p.name: p for p in plan_described.plan(proto).prims}
    for name in ("byte", "short", "int", "long", "timestamp"):
        lows = [e.low for e in prims[name].encodings if e.fmt]
        assert prims[name].signed and all(low is not None and low < 0 for low in lows), name
    for name in ("ubyte", "ushort", "uint", "ulong"):
        assert not prims[name].signed, name


def test_the_full_text_says_timestamp_is_signed(full: Protocol) -> None:
    """Part 1 section 1.6.17: "64-bit signed integer representing milliseconds since the unix
    epoch"; the shipped codec reads 0x83 as a signed 64-bit integer."""
    prims = {p.name: p for p in plan_described.plan(full).prims}
    assert prims["timestamp"].signed and prims["timestamp"].encodings[0].fmt == "q"
    from specgen_codecs.amqp_1_0 import values

    data = values.encode_value(values.Timestamp(-1))
    assert data == b"\x83" + b"\xff" * 8 and values.decode_value(data) == (-1, 9)


# ---- a part read alone: the types it names, from the parts beside it


def test_a_part_alone_takes_the_types_it_names_from_the_parts_beside_it(tmp_path: Path) -> None:
    for part in PARTS:
        shutil.copy(SPEC_DIR / f"{part}.xml", tmp_path / f"{part}.xml")
    proto, log = amqp10_xml.build(tmp_path / "messaging.xml", "messaging.xml", "amqp-1-0", "test")
    by_name = {t.name: t for t in proto.typedefs}
    assert by_name["fields"].document == "transport.xml"  # node-properties restricts it
    assert by_name["error"].document == "transport.xml"  # rejected.error is one
    assert by_name["header"].document == "messaging.xml" and not proto.commands
    found = [f for f in log.items if f.code == "types-from"]
    assert len(found) == 1 and "read from transport.xml" in found[0].message
    assert "fields" in found[0].message and "open" not in found[0].message
    # nothing beside it to take them from: refused where the first field names one
    (tmp_path / "transport.xml").unlink()
    with pytest.raises(SpecError, match=r"'milliseconds', which no type read for this document"):
        amqp10_xml.build(tmp_path / "messaging.xml", "messaging.xml", "amqp-1-0", "test")


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the AMQP 1.0 spec corpus is not here")
@pytest.mark.parametrize("copy", STRIPPED)
@pytest.mark.parametrize("part", PARTS)
def test_every_stripped_part_reads_alone(copy: str, part: str, full: Protocol) -> None:
    doc = CORPUS / copy / f"{part}.xml"
    proto = amqp10_xml.build(doc, f"{copy}/{part}.xml", "amqp-1-0", "test")[0]
    want = {"transport": 9, "security": 5}.get(part, 0)
    assert len(proto.commands) == want
    idents = {c.name: c.ident for c in full.commands}
    assert all(c.ident == idents[c.name] for c in proto.commands)


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the AMQP 1.0 spec corpus is not here")
def test_a_stripped_transport_writes_negative_ints(tmp_path: Path) -> None:
    folder = tmp_path / "spec"
    shutil.copytree(CORPUS / "stripped-qpid-proton", folder)
    out = tmp_path / "out"
    assert main(["generate", str(folder / "transport.xml"), "--out", str(out)]) == 0
    tested = run_own_tests(out, tmp_path)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    values = _import(out, "amqp_1_0.values")
    for value, data in (
        (values.Int(-1), b"\x54\xff"),  # smallint
        (values.Int(-129), b"\x71\xff\xff\xff\x7f"),
        (values.Long(-1), b"\x55\xff"),  # smalllong
        (values.Byte(-1), b"\x51\xff"),
        (values.Short(-2), b"\x61\xff\xfe"),
    ):
        assert values.encode_value(value) == data, value
        assert values.decode_value(data) == (int(value), len(data))
