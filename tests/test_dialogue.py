"""Dialogue grammars: AMQP 0-9-1's class grammars (`<doc type="grammar">`) read into the IR,
compiled to the generated checker (generated/amqp_0_9_1/*/dialogue.py), and used on traffic.

Legal and illegal conversations come from the grammar text itself (amqp0-9-1.extended.xml,
lines 484-495 for the connection, 971-979 for the channel, 2280-2295 for basic ...); the real
one is the shipped pika session."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest

from specgen import ir
from specgen.abnf import Alt, Repeat, Rule, RuleRef, Seq, Step
from specgen.cli import main
from specgen.dialogue import DialogueError, compile_dialogue, functional, undefined
from specgen.ir import Dialogue, SourceSpan
from specgen.specs import build_ir, registry
from specgen_codecs.amqp_0_9_1.rabbitmq import FrameReader, decode
from specgen_codecs.amqp_0_9_1.rabbitmq import dialogue as dl
from specgen_codecs.amqp_0_9_1.v0_9_1 import dialogue as standard

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "specs" / "amqp-0-9-1" / "amqp0-9-1.extended.xml"
SAMPLE = ROOT / "samples" / "amqp-0-9-1" / "session-1"
HEADER = b"AMQP\x00\x00\x09\x01"

# connection = open-connection *use-connection close-connection (extended.xml:485)
OPENING = [
    ("C", "protocol-header"),
    ("S", "START"),
    ("C", "START-OK"),
    ("S", "TUNE"),
    ("C", "TUNE-OK"),
    ("C", "OPEN"),
    ("S", "OPEN-OK"),
]
CLOSING = [("C", "CLOSE"), ("S", "CLOSE-OK")]


def built(version: str) -> ir.Protocol:
    spec = next(s for s in registry() if s.qualified == f"amqp-0-9-1/{version}")
    return build_ir(spec)[0]


# --------------------------------------------------------------------------------------------
# The IR


def test_each_class_grammar_is_read_at_its_own_line_and_column() -> None:
    p = built("0-9-1-rabbitmq")
    names = [d.name for d in p.dialogues]
    assert names == ["connection", "channel", "exchange", "queue", "basic", "tx", "confirm"]
    lines = SPEC.read_text(encoding="utf-8").splitlines()
    for d in p.dialogues:
        assert d.span is not None and d.start == d.name
        # the first rule starts at its name, as the document has it
        assert lines[d.span.line - 1][d.span.column - 1 :].startswith(f"{d.name} ")
        assert d.doc.startswith(f"{d.name} ")
    connection = p.dialogues[0]
    assert str(connection.span) == "specs/amqp-0-9-1/amqp0-9-1.extended.xml:485:7"
    assert [r.name for r in connection.rules] == [
        "connection",
        "open-connection",
        "challenge",
        "use-connection",
        "close-connection",
    ]
    assert connection.rules[2].expr == Seq((Step("S", "SECURE"), Step("C", "SECURE-OK")))
    # the standard XML has no confirm class
    assert [d.name for d in built("0-9-1").dialogues][-1] == "tx"


def test_ir_round_trip_keeps_the_grammars() -> None:
    p = built("0-9-1-rabbitmq")
    text = ir.dump(p)
    assert ir.load(text) == p
    assert ir.dump(ir.load(text)) == text


def test_what_functional_class_and_nesting_resolve_to() -> None:
    p = built("0-9-1-rabbitmq")
    # connection names `channel`, channel names `functional-class`: the rest are functional
    assert functional(p.dialogues) == ["exchange", "queue", "basic", "tx", "confirm"]
    assert undefined(p.dialogues) == []  # `content` and `functional-class` by convention


# --------------------------------------------------------------------------------------------
# Hand-made grammars: the semantics' edges


def span(line: int) -> SourceSpan:
    return SourceSpan("x.abnf", line, 1)


def test_undefined_names_and_recursion_are_errors_naming_the_rule() -> None:
    d = Dialogue("x", (Rule("x", Seq((Step("C", "A"), RuleRef("nowhere"))), span(3)),), "x")
    assert undefined([d]) == [(span(3), "x", "nowhere")]
    with pytest.raises(DialogueError, match=r"^x.abnf:3:1: .*names nowhere"):
        compile_dialogue([d], "x")
    loop = Dialogue(
        "y",
        (
            Rule("y", Alt((Step("C", "A"), RuleRef("z"))), span(1)),
            Rule("z", Seq((Step("S", "B"), RuleRef("y"))), span(2)),
        ),
        "y",
    )
    with pytest.raises(DialogueError, match="recursive"):
        compile_dialogue([loop], "y")


def test_repeat_bounds() -> None:
    # x = 2*3(C:A S:B)
    d = Dialogue(
        "x", (Rule("x", Repeat(Seq((Step("C", "A"), Step("S", "B"))), 2, 3), span(1)),), "x"
    )
    a = compile_dialogue([d], "x")
    pair = [("C", "x.a"), ("S", "x.b")]
    assert a.run(pair)[0] is None and a.run(pair)[1] not in a.accepting  # one: too few
    for n in (2, 3):
        index, state = a.run(pair * n)
        assert index is None and state in a.accepting
    assert a.run(pair * 4)[0] == 6


# --------------------------------------------------------------------------------------------
# The generated checker, strict order


def test_a_whole_connection_passes_and_stopping_early_is_incomplete() -> None:
    assert dl.check("connection", OPENING + CLOSING).ok
    assert dl.check_connection(OPENING + [("S", "CLOSE"), ("C", "CLOSE-OK")]).ok
    # *challenge: any number of SECURE / SECURE-OK rounds before TUNE
    challenge = [("S", "SECURE"), ("C", "SECURE-OK")] * 2
    assert dl.check("connection", OPENING[:3] + challenge + OPENING[3:] + CLOSING).ok
    v = dl.check("connection", OPENING)
    assert (v.status, v.at) == ("incomplete", None)
    assert "C:connection.close" in v.expected and "S:connection.close" in v.expected


def test_swapped_and_missing_connection_methods_break_where_they_are() -> None:
    swapped = [OPENING[0], OPENING[2], OPENING[1], *OPENING[3:], *CLOSING]
    v = dl.check("connection", swapped)
    assert (v.status, v.at, v.expected) == ("broken", 1, ("S:connection.start",))
    no_tune_ok = OPENING[:4] + OPENING[5:] + CLOSING  # open before tune-ok
    v = dl.check("connection", no_tune_ok)
    assert (v.status, v.at, v.expected) == ("broken", 4, ("C:connection.tune-ok",))
    # the reply comes from the other side: close sent by the client, close-ok by the client
    v = dl.check("connection", OPENING + [("C", "CLOSE"), ("C", "CLOSE-OK")])
    assert (v.status, v.at, v.expected) == ("broken", 8, ("S:connection.close-ok",))


def test_each_functional_class_grammar() -> None:
    # exchange = C:DECLARE S:DECLARE-OK / C:DELETE S:DELETE-OK / C:BIND ... (extended.xml:1144)
    assert dl.check("exchange", [("C", "BIND"), ("S", "BIND-OK")]).ok
    assert dl.check("exchange", [("S", "DECLARE")]).broken
    assert dl.check("queue", [("C", "PURGE"), ("S", "PURGE-OK")]).ok
    assert dl.check("queue", [("C", "PURGE"), ("S", "DELETE-OK")]).at == 1
    # basic: C:PUBLISH content, C:GET ( S:GET-OK content / S:GET-EMPTY ), S:ACK (extended only)
    assert dl.check("basic", [("C", "PUBLISH")]).ok
    assert dl.check("basic", [("C", "GET"), ("S", "GET-OK")]).ok
    assert dl.check("basic", [("C", "GET"), ("S", "GET-EMPTY")]).ok
    assert dl.check("basic", [("S", "ACK")]).ok
    assert dl.check("basic", [("C", "GET")]).status == "incomplete"
    assert dl.check("basic", [("C", "QOS"), ("S", "CONSUME-OK")]).at == 1
    assert dl.check("tx", [("C", "COMMIT"), ("S", "COMMIT-OK")]).ok
    assert dl.check("tx", [("S", "COMMIT-OK")]).at == 0
    assert dl.check("confirm", [("C", "SELECT"), ("S", "SELECT-OK")]).ok
    # the working group's XML: no confirm class, and basic has no server ack
    assert "confirm" not in standard.AUTOMATA
    assert standard.check("basic", [("S", "ACK")]).broken


def test_a_channel_nests_the_functional_classes_and_a_connection_nests_channels() -> None:
    channel = [
        ("C", "channel.open"),
        ("S", "channel.open-ok"),
        ("C", "confirm.select"),
        ("S", "confirm.select-ok"),
        ("C", "basic.publish"),
        ("S", "basic.ack"),
        ("C", "tx.select"),
        ("S", "tx.select-ok"),
        ("S", "channel.flow"),
        ("C", "channel.flow-ok"),
        ("C", "channel.close"),
        ("S", "channel.close-ok"),
    ]
    assert dl.check("channel", channel).ok
    assert dl.check("connection", OPENING + channel + channel + CLOSING).ok
    # a channel method between connection steps belongs inside a channel: open first
    v = dl.check("connection", OPENING + channel[2:] + CLOSING)
    assert (v.at, "C:channel.open" in v.expected) == (7, True)
    # bare names are the checked grammar's: OPEN in channel is channel.open
    assert dl.check("channel", [("C", "OPEN"), ("S", "OPEN-OK"), *CLOSING]).ok


# --------------------------------------------------------------------------------------------
# Crossing: each role in order, the interleaving open


def test_crossing_accepts_messages_that_cross_in_flight() -> None:
    opened = [("C", "channel.open"), ("S", "channel.open-ok")]
    consume = [("C", "basic.consume"), ("S", "basic.consume-ok")]
    # the client cancels while a delivery is in flight: the server delivers, then cancel-ok
    crossed = [("C", "basic.cancel"), ("S", "basic.deliver"), ("S", "basic.cancel-ok")]
    steps = opened + consume + crossed + [("C", "channel.close"), ("S", "channel.close-ok")]
    assert dl.check("channel", steps).broken  # in the order given, deliver splits the pair
    assert dl.check("channel", steps, crossing=True).ok
    # a role's own order still counts: a publish on a channel never opened
    v = dl.check("channel", [("C", "basic.publish"), ("S", "channel.close-ok")], crossing=True)
    assert (v.status, v.at, v.expected) == ("broken", 0, ("C:channel.open",))
    # the limit keeps a long conversation linear; the verdict is the same
    pubs = opened + [("C", "basic.publish")] * 300 + [("S", "basic.ack")] * 300
    assert dl.check("channel", pubs, crossing=True, limit=8).status == "incomplete"


# --------------------------------------------------------------------------------------------
# The report on real traffic


def _frames(path: Path, reader: FrameReader) -> list[tuple[int, bytes]]:
    reader.feed(path.read_bytes())
    return list(reader.frames())


def test_the_pika_session_passes_without_spark() -> None:
    c2s = _frames(SAMPLE / "conn-0001.c2s.bin", FrameReader(sender="client", preamble=True))
    s2c = _frames(SAMPLE / "conn-0001.s2c.bin", FrameReader(sender="server"))
    by_channel: dict[int, list[tuple[str, str]]] = {0: [("C", "protocol-header")]}
    for role, frames in (("C", c2s), ("S", s2c)):
        for _, frame in frames:
            msg = decode(frame)
            name = type(msg).__name__
            if name in dl.METHODS:
                by_channel.setdefault(msg.channel, []).append((role, dl.METHODS[name]))
    assert len(by_channel) >= 2
    for channel, steps in by_channel.items():
        grammar = "connection" if channel == 0 else "channel"
        assert dl.check(grammar, steps, crossing=True).ok, channel


def _report(tmp_path: Path, capture: Path) -> str:
    out = tmp_path / "out"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["decode", "amqp-0-9-1", str(capture), "--out", str(out)]) == 0
        assert main(["report", str(out)]) == 0
    text = buf.getvalue()
    return text.split("Conversations against the grammar", 1)[1].split("\n\n", 1)[0]


def test_report_passes_the_pika_session_and_flags_a_broken_one(spark: Any, tmp_path: Path) -> None:
    section = _report(tmp_path / "good", SAMPLE)
    assert "0 break it" in section and "incomplete" in section, section
    # the same session with the client's Connection.TuneOk left out: Connection.Open breaks
    broken = tmp_path / "broken"
    broken.mkdir()
    c2s = _frames(SAMPLE / "conn-0001.c2s.bin", FrameReader(sender="client", preamble=True))
    kept = [f for f in c2s if type(decode(f[1])).__name__ != "ConnectionTuneOk"]
    assert len(kept) == len(c2s) - 1
    (broken / "conn-0001.c2s.bin").write_bytes(HEADER + b"".join(f for _, f in kept))
    (broken / "conn-0001.s2c.bin").write_bytes((SAMPLE / "conn-0001.s2c.bin").read_bytes())
    offset = len(HEADER) + sum(
        len(f)
        for _, f in kept[: [type(decode(f)).__name__ for _, f in kept].index("ConnectionOpen")]
    )
    section = _report(tmp_path / "bad", broken)
    assert "1 break it" in section, section
    (row,) = [line for line in section.splitlines() if "ConnectionOpen" in line]
    assert f"{offset:,}" in row or f" {offset} " in f" {row} ", row
    assert "ConnectionOpen" in row and "C:connection.tune-ok" in row and "c2s" in row, row


# --------------------------------------------------------------------------------------------
# Minimization: the generated tables are the smallest DFA of the grammar's language


def _all_dialogues() -> list[tuple[str, tuple[Dialogue, ...]]]:
    out = []
    for spec in registry():
        p, _ = build_ir(spec)
        if p.dialogues:
            out.append((spec.qualified, p.dialogues))
    return out


def test_minimized_tables_accept_the_same_conversations() -> None:
    import random

    rng = random.Random(20261125)
    checked = 0
    grammars = _all_dialogues()
    for qualified, dialogues in grammars:
        for d in dialogues:
            full = compile_dialogue(dialogues, d.name, minimal=False)
            small = compile_dialogue(dialogues, d.name)
            assert len(small.moves) <= len(full.moves), (qualified, d.name)
            labels = sorted({lab for row in full.moves for lab in row})
            for _ in range(200):
                word: list[tuple[str, str]] = []
                state: int | None = 0
                for _ in range(rng.randrange(1, 40)):
                    row = full.moves[state] if state is not None else {}
                    lab = rng.choice(sorted(row) if row and rng.random() < 0.85 else labels)
                    word.append((lab[0], lab[2:]))
                    state = row.get(lab) if state is not None else None
                at_full, end_full = full.run(word)
                at_small, end_small = small.run(word)
                assert at_full == at_small, (qualified, d.name, word)
                if at_full is None:
                    assert (end_full in full.accepting) == (end_small in small.accepting)
                checked += 1
    assert checked == 200 * sum(len(ds) for _, ds in grammars) >= 200 * 20


def test_minimized_states_are_all_distinguishable() -> None:
    for qualified, dialogues in _all_dialogues():
        for d in dialogues:
            a = compile_dialogue(dialogues, d.name)
            n = len(a.moves)
            # pairs told apart by some word: first by accepting, then backwards over moves
            apart = {
                (p, q)
                for p in range(n)
                for q in range(n)
                if (p in a.accepting) != (q in a.accepting)
            }
            grew = True
            while grew:
                grew = False
                for p in range(n):
                    for q in range(n):
                        if p == q or (p, q) in apart:
                            continue
                        for lab in set(a.moves[p]) | set(a.moves[q]):
                            tp, tq = a.moves[p].get(lab), a.moves[q].get(lab)
                            if (tp is None) != (tq is None) or (
                                tp is not None and tq is not None and (tp, tq) in apart
                            ):
                                apart.add((p, q))
                                grew = True
                                break
            same = [(p, q) for p in range(n) for q in range(p + 1, n) if (p, q) not in apart]
            assert same == [], (qualified, d.name, same)
