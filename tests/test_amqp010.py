"""AMQP 0-10: the XML front-end's model and findings, its errors, and the generated codec
against bytes worked out by hand from the XML's own codes, sizes, packs and choices."""

from __future__ import annotations

import decimal
import uuid
from pathlib import Path

import pytest

from specgen.frontends import amqp010_xml as fe
from specgen.frontends.adoc import SpecError
from specgen.frontends.adoc_tree import SpecSyntaxError
from specgen.ir import FindingLog
from specgen_codecs.amqp_0_10 import v0_10 as a

ROOT = Path(__file__).resolve().parents[1]
XML = ROOT / "specs" / "amqp-0-10" / "amqp.0-10.xml"
REL = "specs/amqp-0-10/amqp.0-10.xml"


@pytest.fixture(scope="module")
def model() -> fe.Model:
    return fe.load(XML, REL)


def test_model_counts_and_codes(model: fe.Model) -> None:
    assert (model.major, model.minor, model.port) == (0, 10, 5672)
    assert len(model.types) == 45
    assert [(c.name, c.code) for c in model.classes] == [
        ("connection", 1),
        ("session", 2),
        ("execution", 3),
        ("message", 4),
        ("tx", 5),
        ("dtx", 6),
        ("exchange", 7),
        ("queue", 8),
        ("file", 9),
        ("stream", 10),
    ]
    assert sum(m.kind == "control" for m in model.methods) == 25
    assert sum(m.kind == "command" for m in model.methods) == 59
    assert len(model.structs) == 17
    transfer = next(m for m in model.methods if m.name == "message.transfer")
    assert (transfer.class_code, transfer.code) == (4, 1)
    assert [f.name for f in transfer.fields] == ["destination", "accept-mode", "acquire-mode"]
    assert transfer.header == ("delivery-properties", "fragment-properties", "message-properties")
    assert transfer.body
    header = model.struct("session.header")
    assert header is not None and (header.size, header.pack, header.code) == (1, 1, None)
    props = model.struct("message.delivery-properties")
    assert props is not None and (props.size, props.pack, props.class_code, props.code) == (
        4,
        2,
        4,
        1,
    )
    uuid_type = model.type("uuid")
    assert uuid_type is not None and (uuid_type.code, uuid_type.fixed) == (0x48, 16)
    str16 = model.type("str16")
    assert str16 is not None and (str16.code, str16.variable) == (0x95, 2)


def test_domains_resolve(model: fe.Model) -> None:
    span = model.methods[0].span
    assert fe.base_type(model, "accept-mode", "message", span) == (
        "type",
        "uint8",
        "message.accept-mode",
    )
    assert fe.base_type(model, "exchange.name", "message", span) == ("type", "str8", "")
    assert fe.base_type(model, "reply-to", "message", span) == ("struct", "message.reply-to", "")
    assert fe.base_type(model, "session.commands", "message", span) == (
        "type",
        "sequence-set",
        "",
    )


def test_abnf_findings() -> None:
    """The XML's own ABNF for bin72 names bin64; the text's copy says bin64 is 9 octets."""
    log = FindingLog()
    fe.load(XML, REL, log)
    found = sorted((f.code, str(f.span)) for f in log.items)
    assert found == [
        ("abnf-width-text", "specs/amqp-0-10/amqp-0-10-text.txt:1:21819"),
        ("bnf-name", f"{REL}:1235:15"),
        ("text-missing", "specs/amqp-0-10/amqp-0-10-text.txt:1:1"),
    ]


def test_abnf_disagreements_are_findings(tmp_path: Path) -> None:
    path = _mutated(tmp_path, "mantissa = int32", "mantissa = int64")
    path = _mutated(tmp_path, "bin40 = 5 OCTET", "bin40 = 5 (OCTET", path)
    log = FindingLog()
    fe.load(path, "amqp.0-10.xml", log)
    found = {f.code: str(f.span) for f in log.items}
    assert found["abnf-width-xml"] == "amqp.0-10.xml:1211:15"  # dec32 = exponent mantissa
    assert found["bnf-syntax"].startswith("amqp.0-10.xml:1184:")
    assert found["text-absent"] == "amqp.0-10.xml:1:1"


def _mutated(tmp_path: Path, old: str, new: str, path: Path | None = None) -> Path:
    text = (path or XML).read_text(encoding="utf-8")
    assert text.count(old) == 1
    path = tmp_path / "amqp.0-10.xml"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("old", "new", "where", "message"),
    [
        (
            '<field name="destination" type="destination" label="message destination">',
            '<field name="destination" type="nowhere" label="message destination">',
            ":3302:7:",
            "type 'nowhere' is not defined",
        ),
        (
            '<struct name="reply-to" size="2" pack="2">',
            '<struct name="reply-to" size="2" pack="3">',
            ":3157:38:",
            "pack=3",
        ),
        (
            '<type name="int8" code="0x01"',
            '<type name="int8" code="0x00"',
            ":154:3:",
            "type code 0x00 is bin8's too",
        ),
        (
            '<control name="tune" code="0x5"',
            '<control name="tune" code="0x4"',
            ":1641:5:",
            "control code 4 is connection.secure-ok's",
        ),
    ],
)
def test_errors_name_file_line_column(
    tmp_path: Path, old: str, new: str, where: str, message: str
) -> None:
    path = _mutated(tmp_path, old, new)
    with pytest.raises(SpecError) as e:
        fe.load(path, "amqp.0-10.xml")
    assert f"amqp.0-10.xml{where}" in str(e.value) and message in str(e.value)


def test_entities_are_refused(tmp_path: Path) -> None:
    path = _mutated(tmp_path, "<amqp ", '<!DOCTYPE amqp [<!ENTITY x "y">]>\n<amqp ')
    with pytest.raises(SpecSyntaxError):
        fe.load(path, "amqp.0-10.xml")


# --------------------------------------------------------------------------------------------
# The generated codec, against bytes from the XML's facts


def test_sequence_set_golden() -> None:
    """The document's own example (type sequence-set)."""
    data = bytes.fromhex("0018000000000000000200000005000000060000000F0000000F")
    assert a.decode_value("sequence-set", data) == [(0, 2), (5, 6), (15, 15)]
    assert a.encode_value("sequence-set", [(0, 2), (5, 6), (15, 15)]) == data


def test_primitives_by_hand() -> None:
    assert a.encode_value("dec32", decimal.Decimal("-1.25")) == bytes.fromhex("02ffffff83")
    assert str(a.decode_value("dec64", bytes.fromhex("020000000000000064"))) == "1.00"
    assert a.encode_value("str8-latin", "\u20ac") == b"\x01\xa4"  # ISO-8859-15's euro
    assert a.encode_value("str16-utf16", "\u03c0") == b"\x00\x02\x03\xc0"
    assert a.encode_value("str8", "\u00e9") == b"\x02\xc3\xa9"
    assert a.encode_value("vbin32", b"ab") == b"\x00\x00\x00\x02ab"
    assert a.encode_value("byte-ranges", [(1, 2)]) == bytes.fromhex(
        "001000000000000000010000000000000002"
    )
    u = uuid.UUID("0123abcd-4567-89ef-0123-456789abcdef")
    assert a.encode_value("uuid", u) == u.bytes
    assert a.encode_value("datetime", -1) == b"\xff" * 8
    # a map of one str16 entry: size, count, key (str8), type code 0x95, value
    assert a.encode_value("map", {"k": a.Typed("str16", "v")}) == bytes.fromhex(
        "0000000a00000001016b95000176"
    )
    # an array of two uint16: size, type code 0x12, count, values
    assert a.encode_value("array", a.Array("uint16", [1, 2])) == bytes.fromhex(
        "00000009120000000200010002"
    )
    with pytest.raises(a.DecodeError) as e:
        a.decode_value("boolean", b"\x02")
    assert e.value.field == "boolean" and e.value.offset == 0


def test_struct32_in_a_list() -> None:
    value = [a.Typed("struct32", a.MessageAcquired(transfers=[(1, 3)]))]
    data = a.encode_value("list", value)
    # item: type code 0xab, size 2+2+2+8, class 4, struct 4, flags 0x0001, sequence-set
    assert data[8:] == bytes.fromhex("ab0000000e0404010000080000000100000003")
    assert a.decode_value("list", data) == value


def test_commands_and_controls_by_hand() -> None:
    """A command is its class code and code, the session header (a struct of size 1 and pack 1)
    and its fields with two octets of packing flags, bit i of octet i // 8 for field i: what
    qpid-python's OpEncoder.encode_command and Codec.write_fields write."""
    sync = a.ExecutionSync()
    assert a.encode(sync) == bytes.fromhex("030101000000")  # session header size 1
    transfer = a.MessageTransfer(
        session_header=a.SessionHeader(sync=True),
        destination="amq.direct",
        accept_mode=a.MessageAcceptMode.NONE,
        acquire_mode=a.MessageAcquireMode.PRE_ACQUIRED,
    )
    data = bytes.fromhex("0401010107000a") + b"amq.direct" + b"\x01\x00"
    assert a.encode(transfer) == data
    assert a.decode_command(data) == transfer
    tune = a.ConnectionTune(channel_max=2047, max_frame_size=65535, heartbeat_max=60)
    tune_bytes = bytes.fromhex("01050b0007ffffff003c")  # heartbeat-min absent
    assert a.encode(tune) == tune_bytes
    assert a.decode_control(tune_bytes) == tune
    with pytest.raises(a.DecodeError) as e:
        a.decode_command(data[:12])
    assert (e.value.field, e.value.offset) == ("MessageTransfer.destination", 6)
    with pytest.raises(a.DecodeError) as e:
        a.decode_control(b"\x01\x63\x00\x00")
    assert e.value.field == "control.code"
    with pytest.raises(a.EncodeError) as enc:
        a.encode(a.ConnectionTune(channel_max=70000))
    assert enc.value.field == "ConnectionTune.channel_max"


def test_bits_live_in_the_flags() -> None:
    props = a.MessageDeliveryProperties(discard_unroutable=True, redelivered=True)
    data = a.encode_header([props])
    assert data == bytes.fromhex("0000000404010500")
    assert a.decode_header(data) == [props]


def test_protocol_and_frame_headers() -> None:
    """ "AMQP" 1 1 0 10, and the frame header qpid-python packs as "!2BHxBH4x" (flags, type,
    size with the header, a zero octet, track, channel, four zero octets)."""
    assert a.PROTOCOL_HEADER == b"AMQP\x01\x01\x00\x0a"
    frame = a.Frame(type=a.SegmentType.HEADER, payload=b"p", track=a.Track.COMMAND, channel=258)
    frame.first_segment = frame.last_frame = False
    assert a.encode_frame(frame) == bytes.fromhex("0602000d0001010200000000") + b"p"


def test_frame_reader_reports_stream_offset() -> None:
    good = a.encode_frame(a.Frame(type=a.SegmentType.BODY, payload=b"x"))
    reader = a.FrameReader()
    reader.feed(good + bytes.fromhex("ff03000c000000000000000000"))
    frames = []
    with pytest.raises(a.DecodeError) as e:
        for frame in reader:
            frames.append(frame)
    assert len(frames) == 1 and e.value.field == "frame.flags"
    assert e.value.stream_offset == len(good)


def test_segment_decodes() -> None:
    tune = a.ConnectionTune(heartbeat_max=10)
    segment = a.Segment(type=a.SegmentType.CONTROL, payload=a.encode(tune))
    assert segment.decode() == tune
    assembler = a.Assembler()
    with pytest.raises(a.DecodeError):
        assembler.add(a.Frame(type=0, first_frame=False))


def test_specgen_frames_reads_0_10_messages_from_their_frames(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A control cut into two frames: a line per frame, and the one that completes the control
    names it with its fields; each frame and the control's segment re-encode."""
    import json

    from specgen.cli import main

    tune = a.ConnectionTune(channel_max=7, max_frame_size=4096, heartbeat_min=0, heartbeat_max=60)
    segment = a.Segment(type=a.SegmentType.CONTROL, payload=a.encode(tune))
    frames = a.frames_of(segment, 12 + 4)  # 4 payload octets a frame: the control takes 3
    data = tmp_path / "conn.c2s.bin"
    data.write_bytes(b"AMQP\x01\x01\x00\x0a" + b"".join(a.encode(f) for f in frames))
    assert main(["frames", "amqp-0-10", str(data), "--roundtrip"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "ok: 3 frames in 1 files, 0 failed, re-encoded identically"
    rows = [json.loads(line) for line in lines[:-1]]
    assert [r["offset"] for r in rows] == [8, 24, 40]
    assert ["command" in r for r in rows] == [False, False, True]
    assert rows[-1]["command"] == "connection.tune" and rows[-1]["frames"] == 3
    assert rows[-1]["fields"] == {
        "channel_max": 7,
        "max_frame_size": 4096,
        "heartbeat_min": 0,
        "heartbeat_max": 60,
    }


def test_the_package_decodes_and_encodes_whole_frames_as_every_version_does() -> None:
    """`decode(buf)` takes one whole frame (or the protocol header) and `encode` gives it back,
    as in every other version package; a control alone encodes as its segment's payload."""
    tune = a.ConnectionTune(channel_max=7, max_frame_size=4096, heartbeat_min=0, heartbeat_max=60)
    payload = a.encode(tune)
    assert payload[:2] == bytes((0x01, 0x05))  # <class name="connection" code="0x1">, tune 0x5
    frame = a.Frame(type=a.SegmentType.CONTROL, payload=payload, channel=3)
    data = a.encode(frame)
    # the 12-octet header: flags (whole segment, whole frame), type 0, size, 0, track, channel, 0
    assert data[:12] == bytes((0x0F, 0)) + (12 + len(payload)).to_bytes(2, "big") + bytes(
        (0, 0, 0, 3, 0, 0, 0, 0)
    )
    back = a.decode(data)
    assert back == frame and a.encode(back) == data
    assert a.Segment(type=back.type, payload=back.payload).decode() == tune
    assert a.decode(b"AMQP\x01\x01\x00\x0a") == a.ProtocolHeader()
    assert a.encode(a.ProtocolHeader()) == a.PROTOCOL_HEADER
    with pytest.raises(a.DecodeError) as e:
        a.decode(data + b"\x00")
    assert e.value.field == "frame" and e.value.offset == len(data)


def test_every_class_has_its_identity_and_kind_from_the_xml(model: fe.Model) -> None:
    """IDENT and KIND on every struct, control and command, as the XML's codes say, and the
    docstring's first line giving the codes in hex and in decimal."""
    methods = {c.NAME: c for c in (*a.CONTROLS.values(), *a.COMMANDS.values())}
    structs = {c.STRUCT: c for c in (getattr(a, n) for n in a.__all__) if hasattr(c, "STRUCT")}
    assert (len(methods), len(structs)) == (len(model.methods), len(model.structs))
    for m in model.methods:
        cls = methods[m.name]
        assert (cls.IDENT, cls.KIND) == ((m.class_code, m.code), m.kind)
        words = f"class code {m.class_code:#04x} ({m.class_code}), code {m.code:#04x} ({m.code})"
        assert words in (cls.__doc__ or "").splitlines()[0], m.name
    for s in model.structs:
        ident = (s.class_code, s.code) if s.code is not None else ()
        assert (structs[s.name].IDENT, structs[s.name].KIND) == (ident, "struct")


def test_frame_reader_finish_reports_a_stream_cut_inside_a_frame() -> None:
    tune = a.encode(a.ConnectionTune(heartbeat_max=10))
    data = a.encode(a.Frame(type=a.SegmentType.CONTROL, payload=tune))
    reader = a.FrameReader()
    reader.feed(data[:-1])
    assert list(reader) == []
    with pytest.raises(a.DecodeError) as e:
        reader.finish()
    assert e.value.stream_offset == 0
    reader.feed(data[-1:])
    assert [f.payload for f in reader] == [tune]


def test_the_frames_table_has_a_column_per_command_and_header_struct() -> None:
    """`specgen decode` reads 0-10 (its package has a spark_schema): the table has one struct
    column per control and command with fields, members in the XML's field order, integers in
    the narrowest signed type holding them, and one per struct a header segment may carry."""
    import pyarrow as pa  # type: ignore[import-untyped]

    from specgen.pipeline import decode

    schema = decode._codec("specgen_codecs.amqp_0_10.v0_10").schema.FRAMES_SCHEMA
    # <command name="transfer">: destination (str8), accept-mode, acquire-mode (uint8 domains)
    transfer = schema.field("message_transfer").type
    assert [(f.name, f.type) for f in transfer] == [
        ("destination", pa.string()),
        ("accept_mode", pa.int16()),
        ("acquire_mode", pa.int16()),
    ]
    # <struct name="message-properties" code="0x3">: content-length is uint64
    props = schema.field("message_properties").type
    assert props.field("content_length").type == pa.decimal128(20, 0)
    # session.completed's commands: a sequence-set, as (first, last) pairs
    completed = schema.field("session_completed").type.field("commands").type
    assert completed == pa.list_(
        pa.struct([pa.field("first", pa.int64()), pa.field("last", pa.int64())])
    )
    # the frame header: the 16-bit channel needs an INT, the 8-bit type a SMALLINT
    assert schema.field("channel").type == pa.int32() and schema.field("type").type == pa.int16()
