"""The rules a spec states, generated as checks (each version's `rules`): what a message breaks,
with the spec line; the three examples of issue 37, a rule across messages, every rule placed
on a real class and attribute, and the shipped samples' real figures, each against the spec
file or the decoded frames read on their own."""

from __future__ import annotations

import dataclasses
import importlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from specgen.specs import ROOT, registry

VERSIONS = sorted({s.import_name for s in registry()})


def _line(path: str, pattern: str, after: int = 0) -> int:
    """The 1-based number of the first line at or after `after` that matches `pattern`."""
    lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
    return next(
        i + 1 for i, text in enumerate(lines) if i + 1 >= after and re.search(pattern, text)
    )


def test_a_queue_name_too_long_and_badly_spelled_breaks_its_domains_two_asserts() -> None:
    from specgen_codecs.amqp_0_9_1 import v0_9_1 as amqp
    from specgen_codecs.amqp_0_9_1.v0_9_1 import rules

    frame = amqp.encode(amqp.QueueDeclare(channel=1, queue="bad name!" * 20))
    decoded = amqp.decode(frame)
    assert amqp.encode(decoded) == frame  # the rules are a second look: nothing lost
    found = rules.violations(decoded, "client")
    domain = _line("specs/amqp-0-9-1/amqp0-9-1.xml", r'<domain name\s*=\s*"queue-name"')
    length = _line(
        "specs/amqp-0-9-1/amqp0-9-1.xml",
        r'<assert check\s*=\s*"length"\s+value\s*=\s*"127"',
        domain,
    )
    regexp = _line("specs/amqp-0-9-1/amqp0-9-1.xml", r'<assert check\s*=\s*"regexp"', domain)
    assert [(v.rule, v.message, v.field, v.spec.rsplit(":", 1)[0]) for v in found] == [
        ("length", "QueueDeclare", "queue", f"specs/amqp-0-9-1/amqp0-9-1.xml:{length}"),
        ("regexp", "QueueDeclare", "queue", f"specs/amqp-0-9-1/amqp0-9-1.xml:{regexp}"),
    ]
    assert "180 octets" in found[0].text
    assert rules.violations(amqp.QueueDeclare(channel=1, queue="orders.eu-1"), "client") == []


def test_an_attach_settle_mode_outside_its_types_choices_is_reported() -> None:
    from specgen_codecs.amqp_1_0 import v1_0 as amqp
    from specgen_codecs.amqp_1_0.v1_0 import rules
    from specgen_codecs.amqp_1_0.values import Frame

    data = Frame(0, 0, amqp.Attach("link", 0, False, snd_settle_mode=7)).encode()
    decoded = amqp.decode(data)
    assert decoded.encode() == data
    found = rules.violations(decoded, "client")
    where = _line(
        "specs/amqp-1-0/transport.xml", r'<type class="restricted" name="sender-settle-mode"'
    )
    assert [(v.rule, v.message, v.field, v.value) for v in found] == [
        ("choice", "Attach", "snd_settle_mode", 7)
    ]
    assert found[0].spec.startswith(f"specs/amqp-1-0/transport.xml:{where}:")
    ok = Frame(0, 0, amqp.Attach("link", 0, False, snd_settle_mode=1)).encode()
    assert rules.violations(amqp.decode(ok), "client") == []


def test_a_streams_command_from_the_wrong_peer_is_reported_with_its_table_row() -> None:
    from specgen_codecs.rabbitmq_stream import v4_0 as streams
    from specgen_codecs.rabbitmq_stream.v4_0 import rules

    credit = streams.decode(streams.encode(streams.Credit(1, 10)))
    assert rules.violations(credit, "client") == []
    assert rules.violations(credit) == []  # no sender given: nothing said about it
    (found,) = rules.violations(credit, "server")
    # the commands table's row: its name cell, then the From cell the rule is read from
    row = _line("specs/rabbitmq-stream/PROTOCOL-4.0.adoc", r"^\|<<credit>>$") + 1
    assert (found.rule, found.message, found.value) == ("sender", "Credit", "server")
    assert found.spec.startswith(f"specs/rabbitmq-stream/PROTOCOL-4.0.adoc:{row}:")


def test_tune_ok_may_not_ask_for_more_channels_than_tune_offered_unless_tune_set_no_limit() -> None:
    from specgen_codecs.amqp_0_9_1 import v0_9_1 as amqp
    from specgen_codecs.amqp_0_9_1.v0_9_1 import rules

    talk = rules.Conversation()
    assert (
        talk.see(amqp.ConnectionTune(channel_max=10, frame_max=4096, heartbeat=0), "server") == []
    )
    (found,) = talk.see(
        amqp.ConnectionTuneOk(channel_max=20, frame_max=4096, heartbeat=0), "client"
    )
    assert (found.rule, found.message, found.field, found.value) == (
        "le",
        "ConnectionTuneOk",
        "channel_max",
        20,
    )
    assert (
        talk.see(amqp.ConnectionTuneOk(channel_max=10, frame_max=4096, heartbeat=0), "client") == []
    )
    unbounded = rules.Conversation()  # the spec: tune's 0 means no specified limit
    unbounded.see(amqp.ConnectionTune(channel_max=0, frame_max=4096, heartbeat=0), "server")
    assert (
        unbounded.see(amqp.ConnectionTuneOk(channel_max=20, frame_max=4096, heartbeat=0), "client")
        == []
    )
    # one message alone says nothing about the other's value
    assert (
        rules.violations(
            amqp.ConnectionTuneOk(channel_max=20, frame_max=4096, heartbeat=0), "client"
        )
        == []
    )


def _classes(import_name: str) -> dict[str, type]:
    """Every class the version's package defines or re-exports, by name."""
    found: dict[str, type] = {}
    package = importlib.import_module(import_name)
    folder = Path(package.__file__ or "").parent
    for module in [
        package,
        *(
            importlib.import_module(f"{import_name}.{p.stem}")
            for p in folder.glob("*.py")
            if p.stem != "__init__" and not p.stem.startswith("test_")
        ),
    ]:
        for name, value in vars(module).items():
            if isinstance(value, type):
                found.setdefault(name, value)
    return found


def _field_names(cls: type) -> set[str]:
    if dataclasses.is_dataclass(cls):
        return {f.name for f in dataclasses.fields(cls)}
    return {n for c in cls.__mro__ for n in getattr(c, "__slots__", ())}


@pytest.mark.parametrize("import_name", VERSIONS)
def test_every_rule_is_on_a_class_and_attribute_the_codec_has(import_name: str) -> None:
    rules = importlib.import_module(f"{import_name}.rules")
    classes = _classes(import_name)
    assert rules.RULES, f"{import_name}: no rule checked"
    for cls_name, of_class in rules.RULES.items():
        assert cls_name in classes, f"{import_name}: rules on {cls_name}, which it has no class of"
        fields = _field_names(classes[cls_name])
        for rule in of_class:
            assert Path(ROOT / rule.spec.split(":")[0]).is_file(), rule
            if rule.field is not None:
                assert rule.field.split(".")[0] in fields, f"{cls_name}.{rule.field}: no such field"
            if rule.other is not None:
                assert rule.other[1].split(".")[0] in _field_names(classes[rule.other[0]])


def _messages(protocol: str, import_name: str) -> list[tuple[str, Any]]:
    """Each sample connection's messages, the client's then the server's, with their sender."""
    codec = importlib.import_module(import_name)
    out: list[tuple[str, Any]] = []
    for c2s in sorted((ROOT / "samples" / protocol).rglob("*.c2s.bin")):
        for name, sender in ((c2s.name, "client"), (c2s.name.replace("c2s", "s2c"), "server")):
            reader = codec.FrameReader(sender=sender, preamble=True)
            reader.feed(c2s.with_name(name).read_bytes())
            out.extend((sender, m) for m in reader)
    return out


def test_the_shipped_0_9_1_sample_breaks_one_rule_pika_closing_its_channel_with_reply_code_0() -> (
    None
):
    from specgen_codecs.amqp_0_9_1.rabbitmq import rules

    messages = _messages("amqp-0-9-1", "specgen_codecs.amqp_0_9_1.rabbitmq")
    found = [(s, v) for s, m in messages for v in rules.violations(m, s)]
    # read on their own: the closes whose reply code is 0 (the spec: reply-code is notnull)
    zero = [(s, m) for s, m in messages if type(m).__name__.endswith("Close") and m.reply_code == 0]
    assert len(found) == len(zero) == 1
    (sender, violation), (zero_sender, _) = found[0], zero[0]
    assert (sender, violation.rule, violation.field) == (zero_sender, "notnull", "reply_code")
    assert sender == "client"


def test_the_shipped_samples_of_streams_1_0_and_0_10_break_no_rule() -> None:
    for protocol, import_name in [
        ("rabbitmq-stream", "specgen_codecs.rabbitmq_stream.v4_0"),
        ("amqp-1-0", "specgen_codecs.amqp_1_0.v1_0"),
        ("amqp-0-10", "specgen_codecs.amqp_0_10.v0_10"),
    ]:
        rules = importlib.import_module(f"{import_name}.rules")
        messages = _messages(protocol, import_name)
        assert len(messages) > 400
        assert [v for s, m in messages for v in rules.violations(m, s)] == [], protocol


def test_the_shipped_rfc006_sample_sends_service_type_0_which_the_document_does_not_define() -> (
    None
):
    from specgen_codecs.amqp_fast_0_8.v0_8 import rules

    messages = _messages("amqp-fast-0-8", "specgen_codecs.amqp_fast_0_8.v0_8")
    found = [v for s, m in messages for v in rules.violations(m, s)]
    # read on their own: the document's service types are 1, 2 and 3 (2 for a consume)
    odd = [m for _, m in messages if hasattr(m, "service_type") and m.service_type not in (1, 2, 3)]
    assert odd and len(found) == len(odd)
    assert {(v.rule, v.field, v.value) for v in found} == {("choice", "service_type", 0)}


def test_a_field_that_requires_an_archetype_holds_a_value_that_provides_it() -> None:
    """AMQP 1.0's attach source requires `source` (a composite must provide it), an error's
    condition `error-condition` (the symbols of the restricted types that provide it)."""
    from specgen_codecs.amqp_1_0 import v1_0 as amqp
    from specgen_codecs.amqp_1_0.v1_0 import rules
    from specgen_codecs.amqp_1_0.values import Symbol

    good = amqp.Attach("l", 0, False, source=amqp.Source("a"), target=amqp.Target("b"))
    assert rules.violations(good) == []
    swapped = amqp.Attach("l", 0, False, source=amqp.Target("a"), target=amqp.Source("b"))
    found = rules.violations(swapped)
    assert sorted((v.rule, v.field, type(v.value).__name__) for v in found) == [
        ("requires", "source", "Target"),
        ("requires", "target", "Source"),
    ]
    assert rules.violations(amqp.Error(Symbol("amqp:not-found"))) == []
    (odd,) = rules.violations(amqp.Error(Symbol("x:no-such-condition")))
    assert (odd.rule, odd.message, odd.field) == ("requires", "Error", "condition")


@pytest.mark.parametrize("spec", registry(), ids=lambda s: s.qualified)
def test_every_rule_is_counted_once_checked_not_checked_or_prose(spec: Any) -> None:
    from specgen.emitters import rules
    from specgen.emitters.plan import Planner
    from specgen.specs import build_ir

    protocol, _ = build_ir(spec)
    counts = rules.counts(protocol, rules.place(protocol, Planner(protocol).plan()))
    assert all(n >= 0 for _, *ns in counts for n in ns), counts
    assert sum(sum(ns) for _, *ns in counts) == len(protocol.rules)
    for kind, here, _, _ in counts:
        if kind in rules.NOT_CHECKED and kind != "requires":
            assert here == 0, kind


def test_frames_rules_adds_the_broken_rules_to_each_frames_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from specgen.cli import main

    c2s = ROOT / "samples" / "amqp-0-9-1" / "session-1" / "conn-0001.c2s.bin"
    assert main(["frames", "amqp-0-9-1", str(c2s), "--rules"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    broken = [x for x in lines if "violations" in x]
    # read on their own: the client's closes with reply code 0
    zero = [
        x
        for x in lines
        if x.get("command", "").endswith("Close") and x["fields"]["reply_code"] == 0
    ]
    assert broken == zero and len(broken) == 1
    (v,) = broken[0]["violations"]
    assert (v["rule"], v["field"], v["value"]) == ("notnull", "ChannelClose.reply_code", 0)
    assert main(["frames", "amqp-0-9-1", str(c2s)]) == 0  # without --rules: no such key
    assert "violations" not in capsys.readouterr().out


def test_answers_from_memory_are_the_answers_read_afresh_and_lists_of_their_own() -> None:
    """`violations` remembers what a sender-only class breaks per sender, and each value's
    verdict per rule: the same message asked again, by the same or the other peer, and a second
    bad value after a good one get what a first look gives, in lists a caller may change."""
    from specgen_codecs.amqp_0_9_1 import v0_9_1 as amqp
    from specgen_codecs.amqp_0_9_1.v0_9_1 import rules
    from specgen_codecs.rabbitmq_stream import v4_0 as streams
    from specgen_codecs.rabbitmq_stream.v4_0 import rules as stream_rules

    credit = streams.Credit(1, 10)
    first = stream_rules.violations(credit, "server")
    first.append("changed by the caller")
    again = stream_rules.violations(streams.Credit(2, 20), "server")
    assert [v.rule for v in again] == ["sender"] and len(again) == 1
    assert stream_rules.violations(credit, "client") == []
    good, bad = "orders.eu-1", "bad name!" * 20
    for queue in (good, bad, good, bad):
        found = rules.violations(amqp.QueueDeclare(channel=1, queue=queue), "client")
        assert [v.rule for v in found] == ([] if queue == good else ["length", "regexp"])
        assert all(v.value == queue for v in found)
