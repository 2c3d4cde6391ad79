"""AMQ RFC 006's Command Flow Summaries (prose, one per class of commands: connection, channel,
destination) read into the IR's dialogues and checked with the generated validators
(generated/amqp_fast_0_8/v0_8/dialogue.py).

Legal and illegal conversations come from the document's own text, quoted beside each case;
the Command Hierarchy chart (amq-rfc006.txt, "Command Hierarchy") is read from the document
itself."""

from __future__ import annotations

import re
from pathlib import Path

import docs_text
import pytest

from specgen import abnf, ir
from specgen.abnf import Seq, Step
from specgen.frontends import rfc006_flow, rfc006_lifetime
from specgen.frontends.adoc import SpecError
from specgen.ir import FindingLog
from specgen.specs import build_ir, registry
from specgen_codecs.amqp_fast_0_8.v0_8 import dialogue as d006

ROOT = Path(__file__).resolve().parents[1]
RFC = "specs/amqp-fast-0-8/amq-rfc006.txt"
LINES = (ROOT / RFC).read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def p006() -> tuple[ir.Protocol, FindingLog]:
    spec = next(s for s in registry() if s.qualified == "amqp-fast-0-8/0.8")
    return build_ir(spec)


# --------------------------------------------------------------------------------------------
# The connection: a summary that orders its commands


def test_flow_summary_becomes_a_grammar(p006: tuple[ir.Protocol, FindingLog]) -> None:
    p, log = p006
    d = p.dialogues[0]
    assert d.name == "connection" and d.start == "connection"
    assert str(d.span) == f"{RFC}:1192:1"  # "Command Flow Summary"
    # the grammar the rules give, written back as ABNF that the ABNF front-end reads again
    rules = abnf.parse_rules(d.doc, RFC)
    assert [(r.name, r.expr) for r in rules] == [(r.name, r.expr) for r in d.rules]
    assert d.doc.splitlines()[1:] == [
        "ping = S:PING / C:PING",  # "CONNECTION PING: Expect at any time." (both lists)
        "close-connection = S:CLOSE C:CLOSE / C:CLOSE S:CLOSE",
    ]
    # every sentence of the connection's summary was read by a rule, none disagrees
    assert [f for f in log.items if f.code.startswith("flow-") and f.span.line < 1565] == []


def test_ir_round_trip_rfc006(p006: tuple[ir.Protocol, FindingLog]) -> None:
    p, _ = p006
    assert ir.load(ir.dump(p)) == p


# The document's own example (amq-rfc006.txt, "Example" after the summary), with the
# initiation before it and the OPEN the flow asks for:
#   S: CONNECTION CHALLENGE / C: CONNECTION RESPONSE / S: CONNECTION TUNE / C: CONNECTION TUNE
#   ... / S: CONNECTION CLOSE / C: CONNECTION CLOSE
HANDSHAKE = [
    ("C", "protocol-header"),  # "after sending the 2-byte connection initiation sequence"
    ("S", "CHALLENGE"),
    ("C", "RESPONSE"),  # "Respond with a CONNECTION RESPONSE"
    ("S", "TUNE"),  # "Respond with CONNECTION TUNE (if response was sufficient)"
    ("C", "TUNE"),  # client: "Respond with CONNECTION TUNE"
    ("C", "OPEN"),  # server: "Expect after a CONNECTION TUNE"
    ("S", "REPLY"),  # client: "Expect after sending CONNECTION OPEN"
]


def test_rfc006_conversations() -> None:
    assert d006.check("connection", [*HANDSHAKE, ("S", "CLOSE"), ("C", "CLOSE")]).ok
    # "Respond with a CONNECTION REPLY if a confirmation is wanted": REPLY may be absent
    assert d006.check("connection", [*HANDSHAKE[:-1], ("C", "CLOSE"), ("S", "CLOSE")]).ok
    # "... or CONNECTION CHALLENGE (if more information is needed)": challenges repeat
    again = [("S", "CHALLENGE"), ("C", "RESPONSE")]
    assert d006.check(
        "connection", [*HANDSHAKE[:3], *again, *HANDSHAKE[3:], ("S", "CLOSE"), ("C", "CLOSE")]
    ).ok
    # PING: "Expect at any time" in both lists
    pinged = [*HANDSHAKE[:2], ("C", "PING"), ("S", "PING"), *HANDSHAKE[2:]]
    assert d006.check("connection", [*pinged, ("C", "CLOSE"), ("S", "CLOSE")]).ok
    # CLOSE: "Expect at any time": a challenge not understood is answered with CLOSE
    assert d006.check("connection", [*HANDSHAKE[:2], ("C", "CLOSE"), ("S", "CLOSE")]).ok
    # without the close handshake the conversation is not over
    assert d006.check("connection", HANDSHAKE).status == "incomplete"


def test_rfc006_illegal_conversations() -> None:
    # server's list: "CONNECTION CHALLENGE: Never expected." -- a client CHALLENGE breaks
    v = d006.check("connection", [*HANDSHAKE[:3], ("C", "CHALLENGE")])
    assert v.broken and v.at == 3
    assert "C:connection.challenge" not in {
        k for a in d006.AUTOMATA.values() for row in a.moves for k in row
    }
    # client's list: "CONNECTION OPEN: Never expected." -- the server never sends OPEN
    v = d006.check("connection", [*HANDSHAKE[:5], ("S", "OPEN")])
    assert v.broken and v.at == 5
    # OPEN before TUNE: the server expects OPEN "after a CONNECTION TUNE"
    v = d006.check("connection", [*HANDSHAKE[:3], ("C", "OPEN")])
    assert v.broken and v.at == 3 and "C:connection.open" not in v.expected
    v = d006.check("connection", [*HANDSHAKE[:4], ("C", "OPEN")])  # the server's TUNE only
    assert v.broken and v.at == 4 and "C:connection.tune" in v.expected
    # RESPONSE before any CHALLENGE: "Expect after sending CONNECTION CHALLENGE"
    v = d006.check("connection", [HANDSHAKE[0], ("C", "RESPONSE")])
    assert v.broken and v.at == 1
    # "CONNECTION REPLY: Never expected" at the server: the client never sends REPLY
    assert d006.check("connection", [*HANDSHAKE[:6], ("C", "REPLY")]).broken


def test_rfc006_methods_table(p006: tuple[ir.Protocol, FindingLog]) -> None:
    # every command of the three classes is a step, named by its class and command
    p, _ = p006
    assert d006.METHODS == {m.name: c.name.lower() for c in p.commands for m in c.messages}
    assert {
        "ConnectionChallenge": "connection.challenge",
        "ConnectionClose": "connection.close",
        "ConnectionOpen": "connection.open",
        "ConnectionPing": "connection.ping",
        "ConnectionReply": "connection.reply",
        "ConnectionResponse": "connection.response",
        "ConnectionTune": "connection.tune",
        "HandleCreated": "handle.created",
    }.items() <= d006.METHODS.items()


def test_unread_sentences_are_findings() -> None:
    text = "\n".join(
        [
            "Command Flow Summary",
            "--------------------",
            "",
            "The client must expect and respond to the connection commands as",
            "follows:",
            "",
            "CONNECTION CHALLENGE:",
            "    Expect this after sending the 2-byte connection initiation sequence.",
            "    Hum a tune.",
            "",
        ]
    )
    log = FindingLog()
    d = rfc006_flow.read(text, "x.txt", log)
    assert d is not None and d.rules[0].expr == Seq(
        (Step("C", "protocol-header"), abnf.Repeat(Step("S", "CHALLENGE"), 0, 1))
    )
    (f,) = log.items
    assert (f.code, str(f.span)) == ("flow-unread", "x.txt:9:5")
    assert "Hum a tune." in f.message


# --------------------------------------------------------------------------------------------
# Channel and destination: summaries that describe a lifetime


def test_three_summaries_three_grammars(p006: tuple[ir.Protocol, FindingLog]) -> None:
    p, _ = p006
    assert [(d.name, d.span and d.span.line) for d in p.dialogues] == [
        ("connection", 1192),
        ("channel", 1565),
        ("handle", 2334),  # "The client must expect and respond to the destination commands"
    ]
    for d in p.dialogues:
        assert LINES[d.span.line - 1 if d.span else 0] == "Command Flow Summary"
        # the doc is ABNF the ABNF front-end reads back into the very rules
        rules = abnf.parse_rules(d.doc, RFC)
        assert [(r.name, r.expr) for r in rules] == [(r.name, r.expr) for r in d.rules]
    channel = p.dialogues[1]
    assert channel.doc.splitlines() == [
        "channel = open-channel *use-channel close-channel",
        # server: "CHANNEL OPEN: Expect on a closed channel. Reply with CHANNEL REPLY if
        # confirmation was requested."
        "open-channel = C:OPEN [ S:REPLY ]",
        # server: ACK, COMMIT, ROLLBACK "on an open channel"; client: "CHANNEL REPLY: Expect
        # after a channel command that asks for confirmation (has a non-zero confirm-tag)" --
        # all three carry confirm-tag
        "use-channel = C:ACK [ S:REPLY ] / C:COMMIT [ S:REPLY ] / C:ROLLBACK [ S:REPLY ]",
        # both: "CHANNEL CLOSE: Expect at any time on an open channel. ... reply with CHANNEL
        # CLOSE."
        "close-channel = S:CLOSE C:CLOSE / C:CLOSE S:CLOSE",
    ]


def test_lint_reports_the_summaries_disagreements(p006: tuple[ir.Protocol, FindingLog]) -> None:
    _, log = p006
    found = sorted((f.span.line, f.code) for f in log.items if f.code.startswith("flow-"))
    assert found == [
        (1591, "flow-other-class"),  # CHANNEL ACK: "Expect on an open destination."
        (1591, "flow-other-class"),  # CHANNEL ACK: "Reply with HANDLE REPLY if ..."
        (1594, "flow-spelling"),  # CHANNEL COMMIT: "Exepect on an open channel."
        (1597, "flow-spelling"),  # CHANNEL ROLLBACK: the same
        (2355, "flow-field"),  # HANDLE CREATED: "Expect after opening a dynamic destination."
        (2359, "flow-other-class"),  # HANDLE NOTIFY: "reply with CHANNEL ACK ..."
        (2395, "flow-never"),  # HANDLE BROWSE (server): "Reply with HANDLE SEND command."
        (2407, "flow-never"),  # HANDLE READY (server): "Reply with HANDLE SEND."
    ]
    # each finding stands at the line that says it
    assert "Reply with HANDLE REPLY" in LINES[1590]
    assert LINES[1593].strip().startswith("Exepect") and LINES[1596].strip().startswith("Exepect")
    assert "dynamic destination" in LINES[2354] and LINES[2358].endswith("If the message")
    assert "Reply with HANDLE SEND" in LINES[2394] and "Reply with HANDLE SEND" in LINES[2406]
    # and the never-expected line it cites: the client's list, HANDLE SEND
    never = next(f for f in log.items if f.code == "flow-never")
    assert "line 2343" in never.message
    assert LINES[2341:2343] == [
        "HANDLE SEND:",
        "    Never expected. Respond by closing the connection (fatal error).",
    ]
    field = next(f for f in log.items if f.code == "flow-field")
    assert "HANDLE CONSUME" in field.message  # the command with the field `dynamic`


def _chart() -> list[tuple[str, list[tuple[str, str, str]]]]:
    """The Command Hierarchy chart's blocks: (comment, [(role, class, command)])."""
    start = LINES.index("Command Hierarchy")
    end = LINES.index("Command Scenarios")
    blocks: list[tuple[str, list[tuple[str, str, str]]]] = []
    for ln in LINES[start:end]:
        text = ln.strip()
        if text.startswith("#"):
            blocks.append((text.lstrip("# "), []))
        elif m := re.fullmatch(r"([CS]):\s+([A-Z]+) ([A-Z]+)(?:\.\.\.)?", text):
            blocks[-1][1].append((m.group(1), m.group(2), m.group(3)))
    return blocks


def _steps(block: list[tuple[str, str, str]], cls: str) -> list[tuple[str, str]]:
    return [(role, name) for role, c, name in block if c == cls]


def test_the_chart_is_a_legal_channel_conversation() -> None:
    # the chart's CHANNEL lines in order: OPEN, ACK, COMMIT, ROLLBACK, CLOSE (C), CLOSE (S)
    chart = [s for _, block in _chart() for s in _steps(block, "CHANNEL")]
    assert chart == [
        ("C", "OPEN"), ("C", "ACK"), ("C", "COMMIT"), ("C", "ROLLBACK"),
        ("C", "CLOSE"), ("S", "CLOSE"),
    ]  # fmt: skip
    assert d006.check_channel(chart).ok


def test_the_charts_destination_blocks_are_legal_exchanges() -> None:
    blocks = {name: _steps(block, "HANDLE") for name, block in _chart()}
    opened = [("C", "OPEN")]
    close = blocks["Finished with destination"]
    assert close == [("C", "CLOSE"), ("S", "CLOSE")]
    uses = [
        "Sending data to a destination",  # C: HANDLE SEND
        "Getting data from a destination",  # C: CONSUME, S: NOTIFY, C: UNGET
        "Browsing a destination",  # C: QUERY, S: INDEX, C: BROWSE, S: NOTIFY
        "Restartable large-message exchange",  # C: PREPARE, S: READY, C: SEND
        "Stopping/restarting data",  # C: HANDLE FLOW (drawn after the close: a hierarchy)
    ]
    for name in uses:
        assert blocks[name], name
        assert d006.check_handle([*opened, *blocks[name], *close]).ok, name
    assert d006.check_handle([*opened, *(s for n in uses for s in blocks[n]), *close]).ok
    # The chart draws S: HANDLE CREATED under C: HANDLE OPEN; the summary's "after opening a
    # dynamic destination" names the field `dynamic`, which only HANDLE CONSUME has (and whose
    # own text says the server "respond[s] to the client with HANDLE CREATED"): a flow-field
    # finding, and CREATED answers CONSUME
    assert blocks["Activity on a destination"] == [("C", "OPEN"), ("S", "CREATED")]
    v = d006.check_handle(blocks["Activity on a destination"])
    assert v.broken and v.at == 1
    assert d006.check_handle([*opened, ("C", "CONSUME"), ("S", "CREATED"), *close]).ok


def test_channel_conversations() -> None:
    close = [("C", "CLOSE"), ("S", "CLOSE")]
    # confirmations: "Reply with CHANNEL REPLY if confirmation was requested"
    confirmed = [("C", "OPEN"), ("S", "REPLY"), ("C", "COMMIT"), ("S", "REPLY")]
    assert d006.check_channel([*confirmed, ("C", "ACK"), ("S", "REPLY"), *close]).ok
    # the server closes ("Either party closes the channel, the other confirms")
    assert d006.check_channel([*confirmed, ("S", "CLOSE"), ("C", "CLOSE")]).ok
    assert d006.check_channel([("C", "OPEN"), *close]).ok
    assert d006.check_channel(confirmed).status == "incomplete"


def test_channel_breaches() -> None:
    close = [("C", "CLOSE"), ("S", "CLOSE")]
    # client's list: "CHANNEL OPEN: Never expected."
    assert d006.check_channel([("S", "OPEN")]).broken
    # server's list: "CHANNEL REPLY: Never expected."
    v = d006.check_channel([("C", "OPEN"), ("C", "REPLY")])
    assert v.broken and v.at == 1
    # "Exepect on an open channel": COMMIT before OPEN
    v = d006.check_channel([("C", "COMMIT"), ("C", "OPEN")])
    assert v.broken and v.at == 0 and v.expected == ("C:channel.open",)
    # "CHANNEL OPEN is not allowed when the channel is already open"
    v = d006.check_channel([("C", "OPEN"), ("C", "OPEN"), *close])
    assert v.broken and v.at == 1
    # a REPLY that confirms nothing: the client asked once, the server replies twice
    v = d006.check_channel([("C", "OPEN"), ("S", "REPLY"), ("S", "REPLY")])
    assert v.broken and v.at == 2
    # the conversation is over after the CLOSE handshake
    v = d006.check_channel([("C", "OPEN"), *close, ("C", "ACK")])
    assert v.broken and v.at == 3


def test_handle_conversations() -> None:
    opened = [("C", "OPEN"), ("S", "REPLY")]
    close = [("C", "CLOSE"), ("S", "CLOSE")]
    # "If the destination name is empty, the server will ... respond to the client with HANDLE
    # CREATED"; confirmed or not, in either order
    for answer in ([("S", "REPLY"), ("S", "CREATED")], [("S", "CREATED"), ("S", "REPLY")], []):
        assert d006.check_handle([*opened, ("C", "CONSUME"), *answer, *close]).ok
    # NOTIFY: "Expect on an open destination after sending HANDLE CONSUME or HANDLE BROWSE",
    # then any number, whatever else the client does meanwhile
    consuming = [*opened, ("C", "CONSUME"), ("S", "NOTIFY"), ("C", "FLOW"), ("S", "REPLY")]
    assert d006.check_handle([*consuming, ("S", "NOTIFY"), ("S", "NOTIFY"), *close]).ok
    # the server's restartable transfer: it PREPAREs, the client is READY, NOTIFYs follow
    # (its list: "HANDLE PREPARE: ... Reply with HANDLE READY command.")
    restart = [("S", "PREPARE"), ("C", "READY"), ("S", "NOTIFY")]
    assert d006.check_handle([*consuming, *restart, *close]).ok
    # the client's: "HANDLE READY: Expect after sending HANDLE PREPARE. Reply with HANDLE SEND."
    upload = [("C", "PREPARE"), ("S", "READY"), ("C", "SEND"), ("S", "REPLY"), ("C", "SEND")]
    assert d006.check_handle([*opened, *upload, *close]).ok
    # CLOSE "at any time on an open destination": even while a reply is due
    for cut in ([("C", "QUERY")], [("C", "PREPARE")], [("C", "PREPARE"), ("S", "READY")]):
        assert d006.check_handle([*opened, *cut, *close]).ok
        assert d006.check_handle([*opened, *cut, ("S", "CLOSE"), ("C", "CLOSE")]).ok


def test_handle_breaches() -> None:
    opened = [("C", "OPEN")]
    # NOTIFY before any CONSUME or BROWSE
    v = d006.check_handle([*opened, ("S", "NOTIFY")])
    assert v.broken and v.at == 1 and "S:handle.notify" not in v.expected
    # the server's "Reply with HANDLE SEND command." to BROWSE: the client never expects SEND
    v = d006.check_handle([*opened, ("C", "BROWSE"), ("S", "SEND")])
    assert v.broken and v.at == 2
    assert d006.check_handle([*opened, ("C", "BROWSE"), ("S", "NOTIFY")]).status == "incomplete"
    # "HANDLE QUERY: ... Reply with HANDLE INDEX command.": the INDEX is due (or a CLOSE,
    # "at any time")
    v = d006.check_handle([*opened, ("C", "QUERY"), ("C", "SEND")])
    assert v.broken and v.at == 2
    assert v.expected == ("C:handle.close", "S:handle.close", "S:handle.index")
    # INDEX without a QUERY; a second CREATED; CREATED for a plain OPEN
    assert d006.check_handle([*opened, ("S", "INDEX")]).broken
    v = d006.check_handle([*opened, ("C", "CONSUME"), ("S", "CREATED"), ("S", "CREATED")])
    assert v.broken and v.at == 3
    # "HANDLE OPEN: Expect on a closed destination. ... On an open destination, reply with
    # HANDLE CLOSE": the second OPEN is the breach, the CLOSE its answer
    v = d006.check_handle([*opened, ("C", "OPEN"), ("S", "CLOSE"), ("C", "CLOSE")])
    assert v.broken and v.at == 1


def test_crossing_reads_a_capture() -> None:
    # a capture orders each direction, not the two: the client pipelines a QUERY and a
    # confirmed SEND, the server answers both
    given = [("C", "OPEN"), ("C", "QUERY"), ("C", "SEND"), ("S", "INDEX"), ("S", "REPLY")]
    strict = d006.check_handle([*given, ("C", "CLOSE"), ("S", "CLOSE")])
    assert strict.broken and strict.at == 2  # in the order given the INDEX is due first
    assert d006.check_handle([*given, ("C", "CLOSE"), ("S", "CLOSE")], crossing=True).ok
    # the server closes while the client's SEND is in flight
    closing = [("C", "OPEN"), ("C", "CONSUME"), ("C", "SEND"), ("C", "CLOSE"), ("S", "CLOSE")]
    assert d006.check_handle(closing, crossing=True).ok
    # crossing reorders the roles, never one role's own steps: a NOTIFY captured before the
    # client's CONSUME may have crossed it (incomplete: no CLOSE yet); with no CONSUME or BROWSE
    # in the client's stream at all, nothing allowed it
    crossed = [("C", "OPEN"), ("S", "NOTIFY"), ("C", "CONSUME")]
    assert d006.check_handle(crossed, crossing=True).status == "incomplete"
    v = d006.check_handle([("C", "OPEN"), ("S", "NOTIFY"), ("C", "SEND")], crossing=True)
    assert v.broken and v.at == 1


# --------------------------------------------------------------------------------------------
# The lifetime reader on its own


SUMMARY = """Command Flow Summary
--------------------

The client must expect and respond to the channel commands as follows:

CHANNEL OPEN:
    Never expected.
CHANNEL REPLY:
    Expect after a channel command that asks for confirmation (has a
    non-zero confirm-tag).
CHANNEL CLOSE:
    Expect at any time on an open channel. Respond by closing the
    channel and reply with CHANNEL CLOSE.

The server must expect and respond to the channel commands as follows:

CHANNEL OPEN:
    Expect on a closed channel. Sing a song.
CHANNEL REPLY:
    Never expected.
CHANNEL CLOSE:
    Expect at any time on an open channel. Respond by closing the
    channel and reply with CHANNEL CLOSE.
"""


def test_unread_lifetime_sentences_are_findings(p006: tuple[ir.Protocol, FindingLog]) -> None:
    p, _ = p006
    (summary,) = rfc006_flow.summaries(SUMMARY.splitlines())
    log = FindingLog()
    d = rfc006_lifetime.read(summary, p.commands, "x.txt", log)
    assert d.doc.splitlines()[:2] == [
        "channel = open-channel close-channel",
        "open-channel = C:OPEN [ S:REPLY ]",  # OPEN carries confirm-tag
    ]
    (f,) = log.items
    assert (f.code, str(f.span), f.message.count("Sing a song.")) == (
        "flow-unread",
        "x.txt:18:5",
        1,
    )


def test_a_summary_that_opens_nothing_is_an_error(p006: tuple[ir.Protocol, FindingLog]) -> None:
    p, _ = p006
    text = SUMMARY.replace("Expect on a closed channel.", "Never expected.")
    (summary,) = rfc006_flow.summaries(text.splitlines())
    with pytest.raises(SpecError, match=r"^x.txt:1:1: .*no command that opens"):
        rfc006_lifetime.read(summary, p.commands, "x.txt", FindingLog())
    # a reply naming a command the class does not have
    text = SUMMARY.replace("Sing a song.", "Reply with CHANNEL DANCE.")
    (summary,) = rfc006_flow.summaries(text.splitlines())
    with pytest.raises(SpecError, match=r"^x.txt:18:5: CHANNEL OPEN: CHANNEL DANCE is no command"):
        rfc006_lifetime.read(summary, p.commands, "x.txt", FindingLog())


def test_steps_are_the_shared_ast(p006: tuple[ir.Protocol, FindingLog]) -> None:
    p, _ = p006
    handle = p.dialogues[2]
    steps = {s for r in handle.rules for s in abnf.steps(r.expr)}
    # every command either role may send is a step; none the other's list never expects
    assert Step("S", "SEND") not in steps and Step("C", "NOTIFY") not in steps
    assert {
        Step("C", "SEND"),
        Step("S", "NOTIFY"),
        Step("S", "PREPARE"),
        Step("C", "READY"),
    } <= steps
    assert isinstance(next(r for r in handle.rules if r.name == "close-handle").expr, abnf.Alt)
    assert (
        Seq((Step("C", "CLOSE"), Step("S", "CLOSE")))
        in next(r for r in handle.rules if r.name == "close-handle").expr.options
    )  # type: ignore[union-attr]


def test_a_never_expected_step_another_sentence_orders_is_dropped() -> None:
    # the receiver's list decides, in the connection's summary as in the others
    text = "\n".join(
        [
            "Command Flow Summary",
            "--------------------",
            "",
            "The client must expect and respond to the connection commands as follows:",
            "",
            "CONNECTION CHALLENGE:",
            "    Expect this after sending the 2-byte connection initiation sequence.",
            "    Respond with a CONNECTION RESPONSE.",
            "",
            "The server must expect and respond to the connection commands as follows:",
            "",
            "CONNECTION RESPONSE:",
            "    Never expected.",
            "",
        ]
    )
    log = FindingLog()
    d = rfc006_flow.read(text, "x.txt", log)
    assert d is not None and Step("C", "RESPONSE") not in set(abnf.steps(d.rules[0].expr))
    (f,) = log.items
    assert (f.code, str(f.span)) == ("flow-never", "x.txt:8:5")
    assert "line 13" in f.message


def test_readme_shows_the_handle_grammar_as_generated(p006: tuple[ir.Protocol, FindingLog]) -> None:
    p, _ = p006
    texts = docs_text.documents().values()  # the one ```abnf block of README.md and docs/*.md
    (block,) = [b for text in texts for b in re.findall(r"```abnf\n(.*?)```", text, re.S)]
    assert block.strip() == p.dialogues[2].doc
