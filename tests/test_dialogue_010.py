"""Dialogue grammars of AMQP 0-10 (the flattened text's class grammars), read into the IR and
checked with the generated validators (generated/amqp_0_10/v0_10/dialogue.py); AMQ RFC 006's
Command Flow Summaries are tests/test_dialogue_006.py's.

Legal and illegal conversations come from the documents' own text, quoted beside each case."""

from __future__ import annotations

from pathlib import Path

import pytest

from specgen import ir
from specgen.abnf import Alt, Rule, Seq, Step
from specgen.dialogue import DialogueError, bind, compile_dialogue
from specgen.ir import Dialogue, FindingLog, SourceSpan
from specgen.specs import build_ir, registry
from specgen_codecs.amqp_0_10.v0_10 import dialogue as d010

ROOT = Path(__file__).resolve().parents[1]
TEXT = "specs/amqp-0-10/amqp-0-10-text.txt"


def built(qualified: str) -> tuple[ir.Protocol, FindingLog]:
    spec = next(s for s in registry() if s.qualified == qualified)
    return build_ir(spec)


@pytest.fixture(scope="module")
def p010() -> tuple[ir.Protocol, FindingLog]:
    return built("amqp-0-10/0-10")


# --------------------------------------------------------------------------------------------
# AMQP 0-10: the IR


def test_each_class_grammar_is_read_from_the_text(p010: tuple[ir.Protocol, FindingLog]) -> None:
    p, _ = p010
    names = [d.name for d in p.dialogues]
    assert names == ["connection", "message", "tx", "dtx", "exchange", "queue", "file", "stream"]
    text = (ROOT / TEXT).read_text(encoding="utf-8").split("\n")
    for d in p.dialogues:
        for r in d.rules:  # every rule at its own line and column of the flattened text
            assert r.span.file == TEXT
            assert text[r.span.line - 1][r.span.column - 1 :].startswith(f"{r.name} = ")
    by = {d.name: d for d in p.dialogues}
    # "dtx-demarcation = C:SELECT *demarcation ... dtx-coordination = *coordination": two
    # grammars of one class
    assert [r.name for r in by["dtx"].rules][:3] == [
        "dtx-demarcation",
        "demarcation",
        "dtx-coordination",
    ]
    assert by["tx"].rules[0].expr == Alt(
        (Step("C", "SELECT"), Step("C", "COMMIT"), Step("C", "ROLLBACK"))
    )


def test_ir_round_trip_010(p010: tuple[ir.Protocol, FindingLog]) -> None:
    p, _ = p010
    assert ir.load(ir.dump(p)) == p


def test_lint_findings_010(p010: tuple[ir.Protocol, FindingLog]) -> None:
    _, log = p010
    got = {(f.code, f.message) for f in log.items if f.code.startswith("dialogue-")}
    # "use-connection = *channel": 0-10 has no channel class
    assert (
        "dialogue-convention",
        "class connection's grammar names channel, which the document never defines",
    ) in got
    # "queue = C:DECLARE / C:BIND / ... / C:UNBIND": bind and unbind are exchange commands
    assert any(c == "dialogue-step" and "C:BIND" in m for c, m in got)
    assert any(c == "dialogue-step" and "C:UNBIND" in m for c, m in got)
    # the connection's heartbeat control is in no grammar
    assert any(c == "dialogue-absent" and "connection.heartbeat" in m for c, m in got)
    # "C:OPEN S:OPEN-OK | S:REDIRECT"
    assert any(c == "dialogue-bar" for c, _ in got)
    assert not any(c == "dialogue-undefined" for c, _ in got)


# --------------------------------------------------------------------------------------------
# AMQP 0-10: conversations

# open-connection = C:protocol-header S:START C:START-OK *challenge S:TUNE C:TUNE-OK C:OPEN
#                   S:OPEN-OK | S:REDIRECT
OPEN_010 = [
    ("C", "protocol-header"),
    ("S", "START"),
    ("C", "START-OK"),
    ("S", "TUNE"),
    ("C", "TUNE-OK"),
    ("C", "OPEN"),
    ("S", "OPEN-OK"),
]


def test_connection_010() -> None:
    # close-connection = C:CLOSE S:CLOSE-OK / S:CLOSE C:CLOSE-OK
    assert d010.check("connection", [*OPEN_010, ("C", "CLOSE"), ("S", "CLOSE-OK")]).ok
    assert d010.check("connection", [*OPEN_010, ("S", "CLOSE"), ("C", "CLOSE-OK")]).ok
    # challenge = S:SECURE C:SECURE-OK, any number of times after START-OK
    secure = [("S", "SECURE"), ("C", "SECURE-OK")] * 2
    assert d010.check_connection(
        [*OPEN_010[:3], *secure, *OPEN_010[3:], ("C", "CLOSE"), ("S", "CLOSE-OK")]
    ).ok
    assert d010.check("connection", OPEN_010).status == "incomplete"
    # TUNE-OK before TUNE
    v = d010.check("connection", [*OPEN_010[:3], ("C", "TUNE-OK")])
    assert v.broken and v.at == 3 and v.expected == ("S:connection.secure", "S:connection.tune")
    # the closer's own CLOSE-OK: the peer that sent CLOSE never sends CLOSE-OK
    v = d010.check("connection", [*OPEN_010, ("C", "CLOSE"), ("C", "CLOSE-OK")])
    assert v.broken and v.at == 8
    # "| S:REDIRECT" is, by ABNF's precedence, the whole of open-connection (a lint finding)
    assert d010.check("connection", [("S", "REDIRECT"), ("C", "CLOSE"), ("S", "CLOSE-OK")]).ok
    assert d010.check("connection", [*OPEN_010[:6], ("S", "REDIRECT")]).broken


def test_message_roles_star_and_receiver() -> None:
    # message = *:TRANSFER [ R:ACQUIRE ] [ R:ACCEPT / R:REJECT / R:RELEASE ] / ...
    # "*:" either peer transfers; "R:" the recipient ("sent to the recipient ... acquired by
    # the recipient", Transfer States) acquires and settles
    assert d010.check("message", [("C", "TRANSFER"), ("S", "ACCEPT")]).ok
    assert d010.check("message", [("S", "TRANSFER"), ("C", "ACQUIRE"), ("C", "RELEASE")]).ok
    assert d010.check("message", [("S", "TRANSFER")]).ok  # both options are optional
    # the sender of the transfer cannot accept it
    v = d010.check("message", [("C", "TRANSFER"), ("C", "ACCEPT")])
    assert v.broken and v.at == 1 and "S:message.accept" in v.expected
    assert "C:message.accept" not in v.expected
    # the receiver acquires before it settles, never after
    v = d010.check("message", [("S", "TRANSFER"), ("C", "REJECT"), ("C", "ACQUIRE")])
    assert v.broken and v.at == 2
    # "*:RESUME / *:SET-FLOW-MODE / *:FLOW / *:STOP": either peer
    for role in ("C", "S"):
        assert d010.check("message", [(role, "FLOW")]).ok
    # "C:SUBSCRIBE / C:CANCEL / C:FLUSH": the client only
    assert d010.check("message", [("C", "SUBSCRIBE")]).ok
    assert d010.check("message", [("S", "SUBSCRIBE")]).broken
    # a bare R: step has no transfer to be the recipient of
    assert d010.check("message", [("C", "ACCEPT")]).broken


def test_tx_exchange_queue_file_stream() -> None:
    # tx = C:SELECT / C:COMMIT / C:ROLLBACK: one command a conversation, the client's
    assert d010.check("tx", [("C", "COMMIT")]).ok
    assert d010.check("tx", [("S", "COMMIT")]).broken
    # exchange = C:DECLARE / C:DELETE / C:QUERY
    assert d010.check("exchange", [("C", "QUERY")]).ok
    # queue = C:DECLARE / C:BIND / ...: read by the name the grammar writes (a finding)
    assert d010.check("queue", [("C", "BIND")]).ok
    # file = ... / C:OPEN S:OPEN-OK C:STAGE content / S:OPEN C:OPEN-OK S:STAGE content
    assert d010.check("file", [("C", "OPEN"), ("S", "OPEN-OK"), ("C", "STAGE")]).ok
    assert d010.check("file", [("S", "OPEN"), ("C", "OPEN-OK"), ("S", "STAGE")]).ok
    v = d010.check("file", [("C", "OPEN"), ("S", "OPEN-OK"), ("S", "STAGE")])
    assert v.broken and v.at == 2 and v.expected == ("C:file.stage",)
    # stream = C:QOS S:QOS-OK / ... / S:DELIVER content
    assert d010.check("stream", [("C", "QOS"), ("S", "QOS-OK")]).ok
    assert d010.check("stream", [("C", "QOS")]).status == "incomplete"


def test_dtx_two_grammars_interleave() -> None:
    # dtx-demarcation = C:SELECT *demarcation ; demarcation = C:START C:END
    # dtx-coordination = *coordination ; two-phase-commit = C:PREPARE C:COMMIT ...
    steps = [("C", "SELECT"), ("C", "START"), ("C", "END"), ("C", "PREPARE"), ("C", "COMMIT")]
    assert d010.check("dtx", steps).ok
    # coordination between a demarcation's START and END: the grammars interleave
    mixed = [("C", "SELECT"), ("C", "START"), ("C", "SET-TIMEOUT"), ("C", "END")]
    assert d010.check("dtx", mixed).ok
    # recovery = C:RECOVER *recovery-outcome ; recovery-outcome = ... / C:FORGET
    assert d010.check("dtx", [("C", "SELECT"), ("C", "RECOVER"), ("C", "FORGET")]).ok
    # START before SELECT
    v = d010.check("dtx", [("C", "START")])
    assert v.broken and v.at == 0 and "C:dtx.select" in v.expected
    # END without START
    assert d010.check("dtx", [("C", "SELECT"), ("C", "END")]).broken
    # a two-phase commit's COMMIT needs its PREPARE; a FORGET needs a RECOVER
    assert d010.check("dtx", [("C", "SELECT"), ("C", "FORGET")]).broken
    # coordination alone never selects: demarcation's SELECT is still due
    assert d010.check("dtx", [("C", "SET-TIMEOUT")]).status == "incomplete"


def test_methods_table_010() -> None:
    assert d010.METHODS["MessageTransfer"] == "message.transfer"
    assert d010.METHODS["ConnectionStartOk"] == "connection.start-ok"
    assert d010.METHODS["DtxSetTimeout"] == "dtx.set-timeout"
    assert "SessionAttach" not in d010.METHODS  # the session class states no grammar
    assert d010.PROTOCOL_HEADER == "connection.protocol-header"


def test_role_binding_semantics() -> None:
    span = SourceSpan("x.abnf", 1, 1)
    rule = Rule("m", Seq((Step("*", "T"), Step("R", "A"))), span)
    assert bind(rule.expr, None, rule) == Alt(
        (Seq((Step("C", "T"), Step("S", "A"))), Seq((Step("S", "T"), Step("C", "A"))))
    )
    orphan = Dialogue("m", (Rule("m", Step("R", "A"), span),), "m")
    with pytest.raises(DialogueError, match=r"^x.abnf:1:1: rule m: R:A follows no \*: step"):
        compile_dialogue([orphan], "m")
    shared = Dialogue(
        "d",
        (Rule("d-one", Step("C", "A"), span), Rule("d-two", Step("C", "A"), span)),
        "d-one",
    )
    with pytest.raises(DialogueError, match="interleaving is ambiguous"):
        compile_dialogue([shared], "d")
