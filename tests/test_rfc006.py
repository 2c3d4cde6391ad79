"""AMQP/Fast 0.8 (AMQ RFC 006): the front-end and the generated codec against the document's text.

Expected values are typed from the document: the command codes from its ABNF (`%dNN`, each
checked against the line it is on), the lines of its disagreements, and the PLAIN LOGIN/PASSWORD
field table built from the octets the document writes out (lines 978-980). Frames are built
here from the Frame Syntax rules (a two-octet size, or 0xFFFF and a four-octet size, counting
the payload and the 0xCE command-end), not from the encoder.
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

from generated.amqp_fast_0_8 import framing
from generated.amqp_fast_0_8 import v0_8 as fast
from specgen.cli import main
from specgen.frontends import rfc006
from specgen.frontends.adoc import SpecError
from specgen.ir import dump, load
from specgen.pipeline.inputs import DecodeInputError
from specgen.pipeline.ranges import Framing
from specgen.specs import ROOT, build_ir, find

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


def test_specgen_decode_refuses_the_escaped_length_for_now() -> None:
    with pytest.raises(DecodeInputError, match="LENGTH_ESCAPE"):
        Framing.of(fast, framing)


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
