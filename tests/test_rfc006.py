"""AMQP/Fast 0.8 (AMQ RFC 006): the front-end and the generated codec against the document's text.

Expected values are typed from the document: the command codes from its ABNF (`%dNN`, each
checked against the line it is on), the lines of its disagreements, and the PLAIN LOGIN/PASSWORD
field table built from the octets the document writes out (lines 978-980). Frames are built
here from the Frame Syntax rules (a two-octet size, or 0xFFFF and a four-octet size, counting
the payload and the 0xCE command-end), not from the encoder. Message heads and the fragments
after HANDLE SEND, NOTIFY and PREPARE are built from the `message-head` rule (line 751) and the
Message Frames and Message Header sections.
"""

from __future__ import annotations

import dataclasses
import json
import re
import struct
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from conftest import spec_line

from specgen.cli import main
from specgen.frontends import rfc006
from specgen.frontends.adoc import SpecError
from specgen.ir import IRError, dump, load
from specgen.pipeline.ranges import Framing
from specgen.specs import ROOT, build_ir, find
from specgen_codecs.amqp_fast_0_8 import framing
from specgen_codecs.amqp_fast_0_8 import v0_8 as fast

SPEC = ROOT / "specs" / "amqp-fast-0-8" / "amq-rfc006.txt"
REL = "specs/amqp-fast-0-8/amq-rfc006.txt"
LINES = SPEC.read_text(encoding="utf-8").splitlines()

# (command, code, line of its ABNF rule), typed from the Frame Syntax block
COMMANDS = [
    ("Connection.Challenge", 10, 637),
    ("Connection.Response", 11, 645),
    ("Connection.Tune", 12, 649),
    ("Connection.Open", 13, 653),
    ("Connection.Ping", 14, 659),
    ("Connection.Reply", 18, 662),
    ("Connection.Close", 19, 666),
    ("Channel.Open", 20, 668),
    ("Channel.Ack", 21, 675),
    ("Channel.Commit", 22, 679),
    ("Channel.Rollback", 23, 681),
    ("Channel.Reply", 28, 683),
    ("Channel.Close", 29, 686),
    ("Handle.Open", 30, 688),
    ("Handle.Send", 31, 697),
    ("Handle.Consume", 32, 706),
    ("Handle.Flow", 34, 715),
    ("Handle.Unget", 35, 718),
    ("Handle.Query", 36, 720),
    ("Handle.Browse", 37, 723),
    ("Handle.Created", 40, 725),
    ("Handle.Notify", 41, 727),
    ("Handle.Index", 42, 733),
    ("Handle.Prepare", 43, 736),
    ("Handle.Ready", 44, 739),
    ("Handle.Reply", 48, 742),
    ("Handle.Close", 49, 745),
]


def frame(code: int, body: bytes) -> bytes:
    """A command frame by the Frame Syntax: size, code, body, %xCE; the size counts the code,
    the body and the command-end octet, and takes four octets after 0xFFFF from 0xFFFF up."""
    size = 1 + len(body) + 1
    head = struct.pack(">H", size) if size < 0xFFFF else b"\xff\xff" + struct.pack(">I", size)
    return head + bytes([code]) + body + b"\xce"


def shortstr(text: str) -> bytes:
    data = text.encode()
    return bytes([len(data)]) + data


# --------------------------------------------------------------------------------------------
# The IR: 27 commands with the ABNF's codes


def test_every_expected_code_is_on_its_abnf_line() -> None:
    for name, code, line in COMMANDS:
        rule = name.lower().replace(".", "-")
        assert re.match(rf"\s+{rule}\s+= %d{code}\b", LINES[line - 1]), (name, line)


def test_specgen_ir_lists_the_27_commands_with_their_codes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["ir", str(SPEC)]) == 0
    data = json.loads(capsys.readouterr().out)
    got = [(c["name"], c["ident"], c["span"]) for c in data["commands"]]
    assert got == [(n, [code], f"{REL}:{line}:5") for n, code, line in COMMANDS]


def test_the_registered_version_builds_and_round_trips_through_json() -> None:
    proto, _ = build_ir(find("amqp-fast-0-8/0.8"))
    assert load(dump(proto)) == proto
    frame_ = proto.frame
    assert frame_.length_escape is not None and frame_.length_escape.value == 0xFFFF
    assert frame_.trailer[0].default == 0xCE
    assert frame_.preambles[0].data == bytes([128, 1])  # protocol-id %d128, protocol-version %d1


@pytest.mark.parametrize(
    ("command", "sender"),
    [
        ("Connection.Challenge", "server"),  # "Server asks client to authenticate itself."
        ("Connection.Response", "client"),  # "Client provides server with its credentials."
        ("Connection.Tune", "both"),  # "... Client replies with zero or more CONNECTION TUNE"
        ("Connection.Close", "both"),  # "Either party closes the connection"
        ("Channel.Reply", "both"),  # "Server or client confirms a channel command."
        ("Handle.Send", "client"),  # under "commands the client may send"
        ("Handle.Notify", "server"),  # under "commands the server may send"
        ("Handle.Ready", "both"),  # under "commands that either party may send"
    ],
)
def test_senders_come_from_the_command_summaries(command: str, sender: str) -> None:
    proto, _ = build_ir(find("amqp-fast-0-8/0.8"))
    assert proto.command(command).sender == sender


def test_bits_are_packed_and_out_of_band_is_a_bit_in_handle_send() -> None:
    # HANDLE SEND: handle-id, confirm-tag, service-type, fragment-size, then partial,
    # out-of-band, recovery in one octet (lsb first), then dest-name
    msg = fast.HandleSend(1, 2, 3, 4, True, False, True, "q")
    body = struct.pack(">HHHI", 1, 2, 3, 4) + bytes([0b101]) + shortstr("q")
    assert fast.encode(msg) == frame(31, body)
    assert fast.decode(frame(31, body)) == msg


# --------------------------------------------------------------------------------------------
# Lint: each disagreement with its line


def _lint(capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main(["lint", str(SPEC)]) == 0
    return capsys.readouterr().out.splitlines()


def _line_after(start: str, text: str) -> int:
    """The first line containing `text` at or after the line containing `start`."""
    first = spec_line(SPEC, start)
    return next(i for i in range(first, len(LINES) + 1) if text in LINES[i - 1])


@pytest.mark.parametrize(
    ("code", "line", "needle"),
    [
        # the example: challenges is a long-string in the ABNF, a field table in prose
        (
            "long-string-is-table",
            _line_after("    CONNECTION CHALLENGE", "challenges              field table"),
            f"ABNF (line {spec_line(SPEC, 'challenges           = long-string')})",
        ),
        (
            "long-string-is-table",
            _line_after("    CONNECTION RESPONSE", "responses               field table"),
            f"ABNF (line {spec_line(SPEC, 'responses            = long-string')})",
        ),
        (
            "rule-name-clash",
            _line_after("    HANDLE SEND", "out-of-band             bit"),
            f"ABNF (line {spec_line(SPEC, 'out-of-band          = short-string')})",
        ),
        (
            "rule-name-clash",
            _line_after("    HANDLE NOTIFY", "out-of-band             bit"),
            "HANDLE NOTIFY.out-of-band",
        ),
        (
            "abnf-undefined",
            spec_line(SPEC, "handle-consume       = %d32"),
            f"prose (line {_line_after('    HANDLE CONSUME', 'selector')}) says field table",
        ),
        (
            "abnf-undefined",
            spec_line(SPEC, "handle-query         = %d36"),
            f"prose (line {_line_after('    HANDLE QUERY', 'selector')}) says long string",
        ),
        ("frame-size", spec_line(SPEC, "long-size            ="), "0xFFFF..0xFFFFFFFF"),
        ("abnf-repeat", spec_line(SPEC, "short-integer        = 2*OCTET"), "2 or more"),
        ("abnf-repeat", spec_line(SPEC, "long-integer         = 4*OCTET"), "4 or more"),
        ("abnf-syntax", spec_line(SPEC, "handle-close /"), "dangling '/'"),
        ("field-name", _line_after("    MESSAGE", "mime type"), "'mime type'"),
        ("field-name", _line_after("    MESSAGE", "identifier"), "'msg-identifier'"),
        ("field-doc-name", spec_line(SPEC, "protocol-version:"), "'protocol-version'"),
        ("field-doc-name", spec_line(SPEC, "mechanism-list:"), "'mechanism-list'"),
        ("command-name", spec_line(SPEC, "CHALLENGE RESPONSE"), "CHALLENGE RESPONSE"),
        ("example-notation", spec_line(SPEC, "%0d %28d"), "'%0d'"),
        ("sender", spec_line(SPEC, "HANDLE READY:"), "HANDLE READY"),
    ],
)
def test_lint_reports_each_disagreement_with_its_line(
    code: str, line: int, needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _lint(capsys)
    hits = [x for x in out if f": {code}: " in x and needle in x]
    assert any(x.startswith(f"{REL}:{line}:") for x in hits), (code, line, needle, hits)


# --------------------------------------------------------------------------------------------
# The golden vector: the PLAIN LOGIN/PASSWORD field table (lines 975-980)


def _plain_example() -> bytes:
    """The octets the document writes after "the binary format of the field table would be":
    `%Nd` is a decimal octet, `'X'` one character."""
    start = spec_line(SPEC, "the binary format of the field table would be")
    out = bytearray()
    for line in LINES[start + 1 :]:
        if not line.strip():
            if out:
                break
            continue
        for token in line.split():
            if m := re.fullmatch(r"%(\d+)d", token):
                out.append(int(m.group(1)))
            elif m := re.fullmatch(r"'(.)'", token):
                out += m.group(1).encode()
            else:
                raise AssertionError(f"unexpected token {token!r}")
    return bytes(out)


def test_the_plain_example_is_a_well_formed_field_table() -> None:
    table = _plain_example()
    # field-table = short-integer *field-value-pair: the count is the bytes that follow
    (count,) = struct.unpack_from(">H", table)
    assert count == len(table) - 2 == 28
    assert table[2:9] == b"\x05LOGINS"  # short-string name, then the 'S' type octet
    assert table[9:16] == b"\x00\x05Johan"  # the long string: a two-octet length


def test_the_plain_example_decodes_and_encodes_back_exactly() -> None:
    table = _plain_example()
    wire = frame(11, shortstr("PLAIN") + table)  # CONNECTION RESPONSE mechanism responses
    msg = fast.decode(wire, "client")
    assert msg == fast.ConnectionResponse("PLAIN", {"LOGIN": "Johan", "PASSWORD": "Ok"})
    assert isinstance(msg, fast.ConnectionResponse)
    assert msg.responses.constructors == {"LOGIN": ord("S"), "PASSWORD": ord("S")}
    assert fast.encode(msg) == wire
    # a table made afresh takes 'S' for text: the same bytes
    fresh = fast.ConnectionResponse("PLAIN", {"LOGIN": "Johan", "PASSWORD": "Ok"})
    assert fast.encode(fresh) == wire


def test_field_table_values_of_each_type() -> None:
    # 'I' signed long integer, 'D' decimals octet + long integer, 'T' time_t long integer
    table = (
        shortstr("I") + b"I" + struct.pack(">i", -5)
        + shortstr("D") + b"D" + bytes([2]) + struct.pack(">i", 150)
        + shortstr("T") + b"T" + struct.pack(">I", 1119398400)
    )  # fmt: skip
    wire = frame(12, struct.pack(">H", len(table)) + table + b"\x00\x00")  # CONNECTION TUNE
    msg = fast.decode(wire)
    assert isinstance(msg, fast.ConnectionTune)
    assert msg.options == {"I": -5, "D": Decimal("1.50"), "T": 1119398400}
    assert msg.dictionary == {}
    assert fast.encode(msg) == wire


# --------------------------------------------------------------------------------------------
# Framing: every command, the size escape, bad input


def _empty(cls: type[Any]) -> Any:
    """A message with every field at its smallest value."""
    zero = {"int": 0, "str": "", "bytes": b"", "bool": False}
    args = [zero.get(str(f.type), {}) for f in dataclasses.fields(cls)]
    return cls(*args)


def _classes() -> list[type[Any]]:
    out = []
    for name, code, _ in COMMANDS:
        cls = getattr(fast, name.replace(".", ""))
        assert cls.IDENT == (code,)
        out.append(cls)
    return out


@pytest.mark.parametrize("cls", _classes(), ids=lambda c: c.__name__)
def test_every_command_round_trips_at_its_smallest(cls: type[Any]) -> None:
    msg = _empty(cls)
    wire = fast.encode(msg)
    (size,) = struct.unpack_from(">H", wire)
    assert size == len(wire) - 2  # the size counts the payload and the command-end
    assert wire[2] == cls.IDENT[0] and wire[-1] == 0xCE
    assert fast.decode(wire) == msg


def _long_field(cls: type[Any]) -> str | None:
    """The command's first long string or field table: what can make its frame reach 0xFFFF."""
    return next(
        (f.name for f in dataclasses.fields(cls) if str(f.type) in ("bytes", "dict[str, Any]")),
        None,
    )


@pytest.mark.parametrize("cls", [c for c in _classes() if _long_field(c)], ids=lambda c: c.__name__)
def test_commands_with_a_long_field_cross_the_size_escape(cls: type[Any]) -> None:
    """At size 0xFFFE (the largest two-octet size) and 0xFFFF (the smallest escaped one); the
    commands with only short fields cannot reach 0xFFFF octets."""
    long_field = _long_field(cls)
    assert long_field is not None
    base = _empty(cls)
    smallest = len(fast.encode(base)) - 2
    for size in (0xFFFE, 0xFFFF, 0x10000):
        msg = dataclasses.replace(base)
        grow = size - smallest
        if isinstance(getattr(base, long_field), bytes):
            setattr(msg, long_field, b"x" * grow)
        else:  # a field table: one 'S' value, its pair's overhead taken off the growth
            setattr(msg, long_field, {"k": "x" * (grow - 5)})
        wire = fast.encode(msg)
        if size < 0xFFFF:
            assert struct.unpack_from(">H", wire) == (size,)
            assert len(wire) == size + 2
        else:
            assert wire[:2] == b"\xff\xff"
            assert struct.unpack_from(">I", wire, 2) == (size,)
            assert len(wire) == size + 6
        assert fast.decode(wire) == msg
        assert fast.encode(fast.decode(wire)) == wire
        reader = fast.FrameReader()
        for i in range(0, len(wire), 4093):
            reader.feed(wire[i : i + 4093])
        assert list(reader) == [msg]
        reader.finish()
        assert framing.frame_size(size) == len(wire)


def test_a_wide_size_below_0xffff_is_refused() -> None:
    wire = frame(19, struct.pack(">H", 200) + shortstr("Ok"))  # CONNECTION CLOSE
    widened = b"\xff\xff" + struct.pack(">I", len(wire) - 2) + wire[2:]
    with pytest.raises(fast.DecodeError) as e:
        fast.decode(widened)
    assert (e.value.field, e.value.offset) == ("frame.size", 2)


def test_the_frame_reader_skips_the_initiation_bytes() -> None:
    msgs = [fast.ConnectionResponse("PLAIN", {}), fast.ConnectionOpen(1, "/", "me", {})]
    stream = bytes([128, 1]) + b"".join(fast.encode(m) for m in msgs)
    reader = fast.FrameReader("client", preamble=True)
    for b in range(len(stream)):
        reader.feed(stream[b : b + 1])
    assert list(reader) == msgs
    bad = fast.FrameReader("client", preamble=True)
    bad.feed(bytes([128, 2]) + fast.encode(msgs[0]))
    with pytest.raises(fast.DecodeError) as e:
        list(bad)
    assert e.value.field == "preamble"


def test_truncated_and_garbage_frames_name_field_and_offset() -> None:
    good = frame(11, shortstr("PLAIN") + _plain_example())
    # the table's count (28) says more than the cut frame holds: at the table's first pair,
    # 2 (size) + 1 (code) + 6 (mechanism) + 2 (count) octets in
    cut = good[:-4] + b"\xce"
    cut = struct.pack(">H", len(cut) - 2) + cut[2:]
    with pytest.raises(fast.DecodeError) as e:
        fast.decode(cut)
    assert (e.value.field, e.value.offset) == ("field-table", 11)
    # a frame cut short of its size
    with pytest.raises(fast.DecodeError) as e:
        fast.decode(good[:-1])
    assert (e.value.field, e.value.offset) == ("frame.size", 0)
    # no command-end octet
    with pytest.raises(fast.DecodeError) as e:
        fast.decode(good[:-1] + b"\x00")
    assert (e.value.field, e.value.offset) == ("frame.command_end", len(good) - 1)
    # a command code the document does not define (15: between PING and REPLY)
    with pytest.raises(fast.DecodeError) as e:
        fast.decode(frame(15, b""))
    assert (e.value.field, e.value.offset) == ("frame.code", 2)
    # an unused bit set in CONNECTION PING's octet
    with pytest.raises(fast.DecodeError) as e:
        fast.decode(frame(14, b"\x02"))
    assert e.value.field == "ConnectionPing.unused1"
    # a value type octet the field table does not know
    table = shortstr("X") + b"Z" + b"\x00\x00"
    with pytest.raises(fast.DecodeError) as e:
        fast.decode(frame(12, struct.pack(">H", len(table)) + table + b"\x00\x00"))
    assert e.value.offset == 2 + 1 + 2 + 2  # after size, code, count and the name "X"


def test_the_range_walk_reads_the_escaped_length_from_the_framing_facts() -> None:
    f = Framing.of(fast, framing)
    assert (f.escape, f.wide) == (0xFFFF, framing.WIDE_HEADER)
    # Frame Syntax: 0xFFFF, then the four-octet size, then the code
    wide = frame(42, struct.pack(">HI", 1, 0) + struct.pack(">H", 0xFFFE) + b"7" * 0xFFFE)
    assert wide[:2] == b"\xff\xff"
    fields, adjust = f.fields_at(wide, 0) or ((), 0)
    assert fields == (len(wide) - 6, 42) and f.frame_end(fields, 10, adjust) == 10 + len(wide)
    # a short header needs its 3 octets, a wide one its 7
    assert f.fields_at(wide[:6], 0) is None and f.fields_at(frame(15, b"")[:2], 0) is None
    assert f.fields_at(frame(15, b""), 0) == ((2, 15), 2)


# --------------------------------------------------------------------------------------------
# Errors name file:line:column


def test_a_command_without_its_code_is_an_error_at_its_line(tmp_path: Path) -> None:
    text = SPEC.read_text(encoding="utf-8").replace(
        "channel-ack          = %d21 channel-id", "channel-ack          = channel-id"
    )
    broken = tmp_path / "amq-rfc006.txt"
    broken.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError, match=rf"^x\.txt:{spec_line(SPEC, '= %d21')}:5: "):
        rfc006.build(broken, "x.txt", "amqp-fast-0-8", "0.8")


# --------------------------------------------------------------------------------------------
# Messages: the octets after HANDLE SEND, NOTIFY and PREPARE (Message Frames, Message Header)


def _table_et(t: int) -> bytes:
    """headers: the Dictionaries section's short name "ET" (Expiration-Time), a 'T' time."""
    pairs = shortstr("ET") + b"T" + struct.pack(">I", t)
    return struct.pack(">H", len(pairs)) + pairs


def _head(body_size: int, persistent: int, priority: int, expiration: int, ident: str) -> bytes:
    """A message head by its ABNF (line 751): body-size, persistent (a bit, alone in its
    octet), priority, expiration, mime-type, encoding, msg-identifier, headers."""
    return (
        struct.pack(">I", body_size)
        + bytes([persistent, priority])
        + struct.pack(">I", expiration)
        + shortstr("text/plain")
        + shortstr("")  # "If empty, defaults to the msg-encoding value" of HANDLE OPEN
        + shortstr(ident)
        + _table_et(expiration)
    )


def _send(fragment_size: int, partial: int, out_of_band: int, dest: str = "queue") -> bytes:
    """HANDLE SEND (%d31): handle-id 1, confirm-tag 0, service-type 0, fragment-size, then
    partial, out-of-band, recovery packed lsb first, then dest-name."""
    bits = partial | out_of_band << 1
    return frame(31, struct.pack(">HHHI", 1, 0, 0, fragment_size) + bytes([bits]) + shortstr(dest))


def _open(options: bytes = b"\x00\x00") -> bytes:
    """HANDLE OPEN (%d30): channel 1, handle 1, confirm-tag 0, producer, no mime-type or
    encoding, then the options field table."""
    return frame(30, struct.pack(">HHH", 1, 1, 0) + bytes([0b001]) + b"\x00\x00" + options)


CLOSE = frame(49, struct.pack(">HH", 1, 200) + shortstr("Ok"))  # HANDLE CLOSE 200 'Ok'


def _read(stream: bytes, chunk: int, **kw: Any) -> list[Any]:
    reader = fast.FrameReader("client", preamble=True, **kw)
    out: list[Any] = []
    for i in range(0, len(stream), chunk):
        reader.feed(stream[i : i + chunk])
        out.extend(reader)
    reader.finish()
    assert reader.offset == len(stream)
    return out


def test_the_ir_says_which_commands_octets_follow() -> None:
    protocol, _ = rfc006.build(SPEC, REL, "amqp-fast-0-8", "0.8")
    follows = {
        m.name: (m.follows.count, m.follows.unless, m.follows.layout, m.follows.more)
        for _, m in protocol.messages()
        if m.follows is not None
    }
    assert follows == {
        # "The intermediate commands have 'partial' set to 1, the final one has 'partial' set
        # to zero" (Message Header): the message's octets go on after the next frame
        "HandleSend": ("FragmentSize", "OutOfBand", "message-head", "Partial"),
        "HandleNotify": ("FragmentSize", "OutOfBand", "message-head", "Partial"),
        # "[message header]" ends its list; its fragment-size is "the size of the message
        # header plus zero or more octets of body data"; it has no out-of-band or partial bit
        "HandlePrepare": ("FragmentSize", None, "message-head", None),
    }
    assert load(dump(protocol)) == protocol
    head = next(n for n in protocol.named if n.name == "message-head")
    assert head.span is not None and head.span.line == spec_line(SPEC, "message-head         =")


def test_lint_reports_that_octets_follow_handle_prepare_too(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = _line_after("    HANDLE PREPARE", "[message header]")
    hits = [x for x in _lint(capsys) if ": message-commands: " in x]
    assert [x.split(": ")[0] for x in hits] == [f"{REL}:{line}:9"]
    assert f"line {spec_line(SPEC, 'Messages come after specific commands')}" in hits[0]


def test_a_message_head_decodes_and_encodes_back_exactly() -> None:
    # persistent 1 ("held on safe storage"), priority 9 (high: 5-9), expiration a time_t
    body = b"Hello, AMQP/Fast"
    wire = _head(len(body), 1, 9, 1136073600, "msg-1")
    head, at = fast.MessageHead.decode(wire + body)
    assert at == len(wire)
    assert head == fast.MessageHead(
        len(body), True, 9, 1136073600, "text/plain", "", "msg-1", {"ET": 1136073600}
    )
    assert head.headers.constructors == {"ET": ord("T")}
    assert head.encode() == wire
    # "This field can be zero, in which case the message will not be expired"; a value made
    # afresh takes 'I' for an integer, so it is built here with the document's 'I' octet
    fresh = fast.MessageHead(0, False, 0, 0, "", "", "", {"ET": 0})
    assert fresh.encode() == (
        bytes(4)
        + b"\x00\x00"
        + bytes(4)
        + b"\x00\x00\x00"
        + b"\x00\x08"
        + shortstr("ET")
        + b"I"
        + bytes(4)
    )
    # decode at an offset: the head inside a longer buffer
    assert fast.MessageHead.decode(b"xx" + wire, 2) == (head, 2 + len(wire))


def test_a_truncated_message_head_names_field_and_offset() -> None:
    wire = _head(5, 1, 9, 0, "msg-1")
    cases = [
        (3, "MessageHead.body_size", 0),
        (8, "MessageHead.expiration", 6),
        (10, "MessageHead.mime_type", 10),  # its length octet
        (15, "MessageHead.mime_type", 11),  # its 10 octets of text
        (len(wire) - 3, "field-table", len(wire) - 8),  # the headers' pairs, after the count
    ]
    for cut, field, offset in cases:
        with pytest.raises(fast.DecodeError) as e:
            fast.MessageHead.decode(wire[:cut])
        assert (e.value.field, e.value.offset) == (field, offset), cut
    with pytest.raises(fast.DecodeError) as e:
        fast.MessageHead.decode(wire[:4] + b"\x03" + wire[5:])  # persistent's unused bits
    assert e.value.field == "MessageHead.unused1"
    with pytest.raises(fast.EncodeError) as ee:
        fast.MessageHead(1 << 32, False, 0, 0, "", "", "", {}).encode()
    assert ee.value.field == "MessageHead"


def test_fragments_after_handle_send_read_back_exactly() -> None:
    """[OPEN][SEND][message][SEND][message][CLOSE] (Message Frames), the message cut into a
    partial fragment and a last one, then an out-of-band SEND with nothing after it. The body
    holds bytes that would read as CONNECTION PING frames: they are data, not frames."""
    body = frame(14, b"\x01") * 3 + b"the end"
    message = _head(len(body), 1, 4, 0, "msg-1") + body
    first, last = message[:20], message[20:]
    stream = (
        bytes([128, 1])  # initiation: protocol-id, protocol-version
        + _open()
        + _send(len(first), partial=1, out_of_band=0)
        + first
        + _send(len(last), partial=0, out_of_band=0)
        + last
        + _send(999, partial=0, out_of_band=1)  # [OPEN][SEND][SEND][CLOSE]: no octets follow
        + CLOSE
    )
    for chunk in (len(stream), 1, 7):
        out = _read(stream, chunk)
        kinds = [type(x).__name__ for x in out]
        assert kinds == [
            "HandleOpen", "HandleSend", "Fragment", "HandleSend", "Fragment", "HandleSend",
            "HandleClose",
        ]  # fmt: skip
        assert out[1].partial and not out[3].partial and out[5].out_of_band
        assert (out[2].data, out[4].data) == (first, last)
        assert out[2].after is out[1] and out[4].after is out[3]
        data = out[2].data + out[4].data
        head, at = fast.MessageHead.decode(data)
        assert head.body_size == len(body) and data[at:] == body
    # frames(): the same items undecoded, each with its stream offset
    reader = fast.FrameReader("client", preamble=True)
    reader.feed(stream)
    spans = list(reader.frames())
    assert b"".join(b for _, b in spans) == stream[2:]
    fragment_at = 2 + len(_open()) + len(_send(len(first), 1, 0))
    assert spans[2] == (fragment_at, first)
    assert spans[3][0] == fragment_at + len(first)


def test_the_size_escape_and_a_long_fragment_in_one_stream() -> None:
    """A HANDLE OPEN whose options make its size reach 0xFFFF (written 0xFFFF then four
    octets), then a message of more than 0xFFFF octets after HANDLE NOTIFY's twin, SEND."""
    value = b"v" * 65520
    pairs = shortstr("k") + b"S" + struct.pack(">H", len(value)) + value
    wide = _open(struct.pack(">H", len(pairs)) + pairs)
    assert wide[:2] == b"\xff\xff" and struct.unpack_from(">I", wide, 2)[0] >= 0xFFFF
    body = bytes(range(256)) * 300
    message = _head(len(body), 0, 0, 0, "big") + body
    assert len(message) > 0xFFFF
    stream = bytes([128, 1]) + wide + _send(len(message), 0, 0) + message + CLOSE
    for chunk in (len(stream), 4093):
        out = _read(stream, chunk)
        assert [type(x).__name__ for x in out] == [
            "HandleOpen", "HandleSend", "Fragment", "HandleClose"
        ]  # fmt: skip
        assert out[0].options == {"k": value.decode()}
        assert out[2].data == message


def test_handle_notify_and_prepare_are_followed_by_their_octets() -> None:
    # HANDLE NOTIFY (%d41): handle-id, message-nbr, fragment-size, then partial, out-of-band,
    # recovery, delivered, redelivered in one octet, then dest-name
    message = _head(3, 0, 0, 0, "m") + b"abc"
    notify = frame(
        41, struct.pack(">HII", 1, 7, len(message)) + bytes([0b01000]) + shortstr("queue")
    )
    # HANDLE PREPARE (%d43): handle-id, fragment-size, content-hash; the head and no body
    head = _head(3, 0, 0, 0, "m")
    prepare = frame(43, struct.pack(">HI", 1, len(head)) + shortstr(""))
    reader = fast.FrameReader("server")
    reader.feed(notify + message + prepare + head)
    out = list(reader)
    reader.finish()
    assert [type(x).__name__ for x in out] == [
        "HandleNotify",
        "Fragment",
        "HandlePrepare",
        "Fragment",
    ]
    assert out[0].delivered and out[1].data == message and out[3].data == head
    assert [fast.following(x) for x in out[::2]] == [len(message), len(head)]


def test_a_fragment_cut_short_or_too_large_is_an_error_at_its_offset() -> None:
    send = _send(10, 0, 0)
    reader = fast.FrameReader("client")
    reader.feed(send + b"12345")
    assert [type(x).__name__ for x in reader] == ["HandleSend"]
    with pytest.raises(fast.DecodeError) as e:
        reader.finish()
    assert (e.value.field, e.value.stream_offset) == ("Fragment", len(send))
    assert "5 of 10 octets" in e.value.reason
    # FRAME_MAX: "The largest frame size or fragment size ... prepared to accept"
    big = fast.FrameReader("client", max_frame_size=1024)
    big.feed(_send(1025, 0, 0))
    with pytest.raises(fast.DecodeError) as e:
        list(big)
    assert (e.value.field, e.value.stream_offset) == ("HandleSend.fragment_size", len(send))


def test_the_range_walk_knows_which_frames_octets_follow() -> None:
    """From the codec: the messages whose class names a FOLLOWS field, and `following`."""
    f = Framing.of(fast, framing)
    assert f.follows == {(31,), (41,), (43,)}  # HANDLE SEND, NOTIFY, PREPARE
    send = _send(10, 0, 0)
    assert f.fragment(send, (len(send) - 2, 31), "client") == (10, False)
    # "The intermediate commands have 'partial' set to 1": the message goes on
    assert f.fragment(_send(10, 1, 0), (len(send) - 2, 31), "client") == (10, True)
    assert f.fragment(_send(10, 0, 1), (len(send) - 2, 31), "client") == (0, False)  # oob
    assert f.fragment(send[:-1] + b"\x00", (len(send) - 2, 31), "client") == (-1, False)
    assert f.fragment(_open(), (10, 30), "client") == (0, False)


def test_the_reader_says_which_fragments_start_a_message() -> None:
    """Message Frames: "partial ... will be zero on messages that are not fragmented, or on
    the last fragment of a message"; the fragment after one with partial set goes on."""
    head = _head(3, 0, 0, 0, "m")
    one, two = head + b"a", b"bc"
    reader = fast.FrameReader("client")
    reader.feed(_send(len(one), 1, 0) + one + _send(2, 0, 0) + two + _send(len(head), 0, 0) + head)
    out = [x for x in reader if isinstance(x, fast.Fragment)]
    assert [(x.data, x.first) for x in out] == [(one, True), (two, False), (head, True)]
    assert fast.continued(fast.decode(_send(1, 1, 0))) and not fast.continued(fast.decode(_open()))
    assert fast.FRAGMENT_HEAD is fast.MessageHead


def test_follows_must_name_a_count_and_a_flag_of_its_message() -> None:
    protocol, _ = rfc006.build(SPEC, REL, "amqp-fast-0-8", "0.8")
    send = protocol.command("Handle.Send").messages[0]
    assert send.follows is not None
    for bad, word in [
        (dataclasses.replace(send.follows, count="DestName"), "no integer field"),
        (dataclasses.replace(send.follows, count="Nope"), "no integer field"),
        (dataclasses.replace(send.follows, unless="DestName"), "no boolean flag"),
        (dataclasses.replace(send.follows, unless="Unused1"), "no boolean flag"),
        (dataclasses.replace(send.follows, more="DestName"), "follows more 'DestName'"),
    ]:
        with pytest.raises(IRError, match=word):
            dataclasses.replace(send, follows=bad)
    command = protocol.command("Handle.Send")
    moved = dataclasses.replace(send, follows=dataclasses.replace(send.follows, layout="nope"))
    with pytest.raises(IRError, match="no named type 'nope'"):
        dataclasses.replace(
            protocol,
            commands=tuple(
                dataclasses.replace(c, messages=(moved,)) if c is command else c
                for c in protocol.commands
            ),
        )
