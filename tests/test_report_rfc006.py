"""`specgen report` on the shipped AMQP/Fast 0.8 sample: messages per destination, reply latency
and the conversations against the Command Flow Summaries, against what the sample's bytes say.

The facts are read here from the recorded byte files by the document's Frame Syntax and its
commands' ABNF (amq-rfc006.txt: HANDLE SEND %d31 = handle-id confirm-tag service-type
fragment-size, then partial, out-of-band and recovery bits and dest-name; HANDLE NOTIFY %d41 =
handle-id message-nbr fragment-size, then partial, out-of-band, recovery, delivered and
redelivered bits and dest-name; HANDLE REPLY %d48 = handle-id confirm-tag reply-code
reply-text), and the times from the decoded table's timestamps by direction and offset; none of
it goes through the codec or the report's Spark code.
"""

from __future__ import annotations

import json
import math
import struct
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
from pyspark.sql import SparkSession
from test_decode_rfc006 import PREAMBLE, _walk

from specgen import report
from specgen.pipeline.decode import decode_local
from specgen.pipeline.sections import Section

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "amqp-fast-0-8"


@dataclass
class Destination:
    sent: int = 0  # messages: frames without `partial`
    frames: int = 0
    octets: int = 0
    delivered: int = 0
    delivered_octets: int = 0
    browsed: int = 0


@dataclass
class Facts:
    destinations: dict[str, Destination] = field(default_factory=lambda: defaultdict(Destination))
    send_latencies: list[float] = field(default_factory=list)
    confirmed_sends: int = 0


def _shortstr(data: bytes, at: int) -> str:
    return data[at + 1 : at + 1 + data[at]].decode()


def _commands(data: bytes, start: int) -> list[tuple[int, int, bytes]]:
    """(offset, code, body) of every frame of a file, fragments left out."""
    out = []
    for offset, _length, what in _walk(data, start):
        if what == "fragment":
            continue
        header = 6 if data[offset : offset + 2] == b"\xff\xff" else 2
        out.append(
            (offset, data[offset + header], data[offset + header + 1 : offset + _length - 1])
        )
    return out


def _facts(times: dict[tuple[str, int], float]) -> Facts:
    facts = Facts()
    c2s = (SAMPLE / "session-1" / "conn-0001.c2s.bin").read_bytes()
    s2c = (SAMPLE / "session-1" / "conn-0001.s2c.bin").read_bytes()
    asked: dict[tuple[int, int], list[int]] = defaultdict(list)  # (handle, tag) -> offsets
    for offset, code, body in _commands(c2s, len(PREAMBLE)):
        if code != 31:
            continue
        handle, tag, _service, size = struct.unpack_from(">HHHI", body)
        partial = body[10] & 1
        d = facts.destinations[_shortstr(body, 11)]
        d.frames += 1
        d.octets += size
        d.sent += not partial
        if tag and not partial:
            asked[(handle, tag)].append(offset)
    replies: dict[tuple[int, int], list[int]] = defaultdict(list)
    for offset, code, body in _commands(s2c, 0):
        if code == 41:
            _handle, _nbr, size = struct.unpack_from(">HII", body)
            bits = body[10]
            d = facts.destinations[_shortstr(body, 11)]
            if bits & 0b1000:  # delivered
                d.delivered += not bits & 1
                d.delivered_octets += size
            else:
                d.browsed += not bits & 1
        elif code == 48:
            handle, tag = struct.unpack_from(">HH", body)
            replies[(handle, tag)].append(offset)
    for key, offsets in asked.items():
        for at in offsets:
            facts.confirmed_sends += 1
            sent = times[("c2s", at)]
            answers = [times[("s2c", r)] for r in replies.get(key, [])]
            later = [t for t in answers if t >= sent]
            if later:
                facts.send_latencies.append((min(later) - sent) * 1000)
    return facts


@pytest.fixture(scope="module")
def decoded(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample decoded on the test session's Spark (the fixture marks its users `spark`)."""
    out = tmp_path_factory.mktemp("rfc006") / "out"
    decode_local("amqp-fast-0-8", SAMPLE, out, echo=lambda _: None)
    return out


@pytest.fixture(scope="module")
def facts(decoded: Path) -> Facts:
    rows = pq.read_table(decoded / "frames", columns=["direction", "offset", "timestamp"])
    return _facts(
        {(r["direction"], r["offset"]): r["timestamp"].timestamp() for r in rows.to_pylist()}
    )


@pytest.fixture(scope="module")
def built(spark: SparkSession, decoded: Path) -> report.Report:
    return report.build(spark, decoded / "frames", decoded / "rejects")


def _section(built: report.Report, title: str) -> Section:
    (section,) = [s for s in built.sections if s.title == title]
    return section


def test_the_sample_is_what_the_recording_script_played(facts: Facts) -> None:
    """500 messages to four destinations, a few in several fragments, every fifth confirmed;
    one browse of the audit destination: the figures below rest on it."""
    assert sum(d.sent for d in facts.destinations.values()) == 500
    assert sum(d.frames for d in facts.destinations.values()) > 500  # some in fragments
    assert set(facts.destinations) == {"orders", "invoices", "audit", "tmp.sample-1"}
    assert facts.confirmed_sends == 100 == len(facts.send_latencies)
    assert facts.destinations["audit"].browsed == 1


def test_messages_per_destination(built: report.Report, facts: Facts) -> None:
    section = _section(built, "Messages per destination")
    assert section.table is not None
    rows = {r[0]: r[1:] for r in section.table.values}
    assert rows == {
        name: (d.sent, d.frames, d.octets, d.delivered, d.delivered_octets, d.browsed)
        for name, d in facts.destinations.items()
    }


def test_reply_latency(built: report.Report, facts: Facts) -> None:
    section = _section(built, "Reply latency (confirm-tag to REPLY)")
    assert section.table is not None
    rows = {r[0]: r[1:] for r in section.table.values}
    asked, replied, *p = rows["Handle.Send"]
    latencies = facts.send_latencies
    assert (asked, replied) == (facts.confirmed_sends, len(latencies))
    for q, value in zip((0.5, 0.95, 0.99), p, strict=True):
        # a percentile is one of the measured latencies, at its rank
        assert isinstance(value, float)
        assert any(math.isclose(x, value, abs_tol=0.001) for x in latencies), q
        below = sum(x < value - 0.001 for x in latencies)
        upto = sum(x <= value + 0.001 for x in latencies)
        assert below < math.ceil(q * len(latencies)) <= upto, (q, value)
    # the set-up's requests: CONNECTION OPEN, CHANNEL OPEN, three HANDLE OPENs and three
    # HANDLE CONSUMEs, each with its tag, each answered
    assert {k: v[:2] for k, v in rows.items() if k != "Handle.Send"} == {
        "Connection.Open": (1, 1),
        "Channel.Open": (1, 1),
        "Handle.Open": (3, 3),
        "Handle.Consume": (3, 3),
    }


def test_conversations_follow_the_command_flow_summaries(built: report.Report) -> None:
    section = _section(built, "Conversations against the grammar")
    assert section.table is None  # nothing broken
    assert section.notes[0].startswith(
        "5 conversations (1 connection, 1 channel, 3 handles): 5 follow their grammar, 0 stop early"
    )


def test_the_json_report_has_the_protocol_sections(built: report.Report) -> None:
    titles = [s["title"] for s in json.loads(json.dumps(report.as_json(built)))["sections"]]
    for title in (
        "Messages per destination",
        "Reply latency (confirm-tag to REPLY)",
        "Conversations against the grammar",
    ):
        assert title in titles


def _frame(code: int, body: bytes) -> bytes:
    """A command frame by the Frame Syntax: size (code, body and %xCE), code, body, %xCE."""
    return struct.pack(">H", len(body) + 2) + bytes([code]) + body + b"\xce"


def test_a_command_out_of_its_flow_breaks_its_conversation(
    spark: SparkSession, tmp_path: Path
) -> None:
    """HANDLE SEND on a handle never opened: the handle grammar wants HANDLE OPEN first
    ("open-handle = C:OPEN [ S:REPLY ]")."""
    folder = tmp_path / "capture" / "session-1"
    folder.mkdir(parents=True)
    send = _frame(31, struct.pack(">HHHI", 7, 0, 0, 3) + b"\x00" + b"\x01q") + b"abc"
    (folder / "conn-0001.c2s.bin").write_bytes(PREAMBLE + send)
    (folder / "conn-0001.s2c.bin").write_bytes(b"")
    out = tmp_path / "out"
    decode_local("amqp-fast-0-8", folder.parent, out, echo=lambda _: None)
    built = report.build(spark, out / "frames", out / "rejects")
    section = _section(built, "Conversations against the grammar")
    assert section.table is not None
    ((name, grammar, offset, direction, command, expected),) = section.table.values
    assert (grammar, offset, direction, command) == ("handle", len(PREAMBLE), "c2s", "HandleSend")
    assert str(name).endswith("handle 7") and "C:handle.open" in str(expected)
    assert "1 break it" in section.notes[0]
