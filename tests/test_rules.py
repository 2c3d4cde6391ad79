"""The rules each front-end reads onto the IR (`Protocol.rules`), against the spec files read
here on their own: ElementTree over the XML, plain line scans over the text. What the IR says
a value must be (a queue name's length and pattern, Attach's settle modes, who sends Credit)
has to be what the document says, at the lines it says it."""

from __future__ import annotations

import io
import json
import re
import shutil
import xml.etree.ElementTree as ET
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from specgen import cli, overlay
from specgen.frontends import amqp_xml
from specgen.ir import IRError, Protocol, SpecRule, dump, load, rule_counts
from specgen.overlay import OverlayError
from specgen.specs import ROOT, build_ir, find, registry

SPECS = ROOT / "specs"
XML091 = SPECS / "amqp-0-9-1" / "amqp0-9-1.xml"


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def line_after(path: Path, start: str, text: str) -> int:
    """1-based line of the first line containing `text` at or after the first containing
    `start`."""
    lines = lines_of(path)
    first = next(i for i, ln in enumerate(lines) if start in ln)
    return next(i + 1 for i in range(first, len(lines)) if text in lines[i])


def tagged(el: ET.Element, tag: str) -> list[ET.Element]:
    """Elements named `tag` below `el`, whatever XML namespace the document declares."""
    return [e for e in el.iter() if e.tag.rpartition("}")[2] == tag]


def rules_at(protocol: Protocol, address: str, kind: str) -> list[SpecRule]:
    return [r for r in protocol.rules if r.address == address and r.kind == kind]


@pytest.fixture(scope="module")
def ir091() -> Protocol:
    return build_ir(find("amqp-0-9-1/0-9-1"))[0]


# --------------------------------------------------------------------------------------------
# AMQP 0-9-1: asserts, a domain's inherited, and chassis


def test_queue_name_rules_come_from_the_queue_name_domain(ir091: Protocol) -> None:
    root = ET.parse(XML091).getroot()
    declare = next(
        m
        for c in root.iter("class")
        if c.get("name") == "queue"
        for m in c.iter("method")
        if m.get("name") == "declare"
    )
    queue = next(f for f in declare.iter("field") if f.get("name") == "queue")
    domain = next(d for d in root.iter("domain") if d.get("name") == queue.get("domain"))
    asserts = {a.get("check"): a.get("value") for a in domain.iter("assert")}
    assert asserts == {"length": "127", "regexp": "^[a-zA-Z0-9-_.:]*$"}

    (length,) = rules_at(ir091, "message:QueueDeclare.Queue", "length")
    (pattern,) = rules_at(ir091, "message:QueueDeclare.Queue", "regexp")
    assert length.value == int(asserts["length"]) and length.checkable
    assert pattern.value == asserts["regexp"] and pattern.checkable
    start = '<domain name = "queue-name"'
    assert length.span is not None and pattern.span is not None
    assert length.span.file == "specs/amqp-0-9-1/amqp0-9-1.xml"
    assert length.span.line == line_after(XML091, start, 'check = "length"')
    assert pattern.span.line == line_after(XML091, start, 'check = "regexp"')
    assert length.via == pattern.via == "domain queue-name"
    # issue 37's example breaks both
    bad = "bad name!" * 20
    assert len(bad) > length.value
    assert re.fullmatch(str(pattern.value), bad) is None


def test_exchange_name_rules_are_the_lines_329_330(ir091: Protocol) -> None:
    """Issue 37 cites amqp0-9-1.xml lines 329-330 for the queue name; those two asserts are
    the exchange-name domain's (the same length and pattern), read onto Exchange.Declare."""
    lines = lines_of(XML091)
    assert 'check = "length" value = "127"' in lines[328]
    assert 'check = "regexp"' in lines[329]
    assert line_after(XML091, '<domain name = "exchange-name"', "<assert") == 329
    (length,) = rules_at(ir091, "message:ExchangeDeclare.Exchange", "length")
    (pattern,) = rules_at(ir091, "message:ExchangeDeclare.Exchange", "regexp")
    assert length.span is not None and pattern.span is not None
    assert (length.span.line, pattern.span.line) == (329, 330)


def test_channel_max_is_compared_with_tune(ir091: Protocol) -> None:
    line = line_after(XML091, '<method name = "tune-ok"', 'check = "le"')
    assert 'method = "tune" field = "channel-max"' in lines_of(XML091)[line - 1]
    (le,) = rules_at(ir091, "message:ConnectionTuneOk.ChannelMax", "le")
    assert le.other == "message:ConnectionTune.ChannelMax"
    assert le.span is not None and le.span.line == line
    # tune's doc: "Zero indicates no specified limit", which the shipped overlay says
    assert "Zero indicates no specified limit" in lines_of(XML091)[693]
    assert (le.unbounded, le.overlay) == (0, "channel-max-unbounded")
    bare = build_ir(find("amqp-0-9-1/0-9-1"), with_overlay=False)[0]
    (raw,) = rules_at(bare, "message:ConnectionTuneOk.ChannelMax", "le")
    assert (raw.unbounded, raw.overlay) == (None, "")


def test_every_assert_is_a_rule(ir091: Protocol) -> None:
    """Each `<assert>` on a field is one rule of that field; a domain's, one per field of the
    domain (a field's own assert of a kind wins over its domain's)."""
    root = ET.parse(XML091).getroot()
    domains = {d.get("name"): d for d in root.iter("domain")}
    expected = 0
    for cls in root.iter("class"):
        for el in [*cls.iter("method"), cls]:
            for f in el.findall("field"):
                own = {a.get("check") for a in f.findall("assert")}
                expected += len(f.findall("assert"))
                d = domains.get(f.get("domain") or f.get("type"))
                if d is not None:
                    expected += sum(1 for a in d.findall("assert") if a.get("check") not in own)
    asserted = [r for r in ir091.rules if r.prose.startswith("<assert")]
    assert len(asserted) == expected > 0


def test_senders_are_the_other_side_of_the_chassis(ir091: Protocol) -> None:
    root = ET.parse(XML091).getroot()
    seen = 0
    for cls in root.iter("class"):
        for m in cls.iter("method"):
            implements = {c.get("name") for c in m.findall("chassis")}
            name = (
                "message:" + amqp_xml.camel(cls.get("name", "")) + amqp_xml.camel(m.get("name", ""))
            )
            rules = rules_at(ir091, name, "sender")
            if len(implements) == 1:
                (only,) = implements
                assert [r.value for r in rules] == ["client" if only == "server" else "server"]
                seen += 1
            else:
                assert rules == []  # either peer: no rule
    assert seen == rule_counts(ir091.rules)["sender"][0]


def test_an_unknown_assert_check_is_counted_prose_only(tmp_path: Path) -> None:
    shutil.copy(SPECS / "amqp-0-9-1" / "field-types.toml", tmp_path / "field-types.toml")
    text = XML091.read_text(encoding="utf-8").replace(
        '<assert check = "regexp" value = "^[a-zA-Z0-9-_.:]*$" />',
        '<assert check = "palindrome" value = "yes" />',
        1,
    )
    path = tmp_path / "spec.xml"
    path.write_text(text, encoding="utf-8")
    protocol, log = amqp_xml.build(path, "tmp/spec.xml", "amqp-0-9-1", "t")
    odd = [r for r in protocol.rules if "palindrome" in r.prose]
    assert odd and all(not r.checkable and r.kind == "prose" for r in odd)
    assert {r.span.line for r in odd if r.span} == {330}  # where the regexp assert was
    assert any(f.code == "assert-unknown" for f in log.items)
    assert rule_counts(protocol.rules)["prose"][1] >= len(odd)


def test_a_pattern_that_does_not_compile_is_prose_only(tmp_path: Path) -> None:
    shutil.copy(SPECS / "amqp-0-9-1" / "field-types.toml", tmp_path / "field-types.toml")
    text = XML091.read_text(encoding="utf-8").replace(
        'value = "^[a-zA-Z0-9-_.:]*$"', 'value = "^[a-z"', 1
    )
    path = tmp_path / "spec.xml"
    path.write_text(text, encoding="utf-8")
    protocol, _ = amqp_xml.build(path, "tmp/spec.xml", "amqp-0-9-1", "t")
    (bad,) = rules_at(protocol, "message:ExchangeDeclare.Exchange", "regexp")
    assert not bad.checkable and "does not compile" in bad.prose


# --------------------------------------------------------------------------------------------
# AMQP 1.0, 0-10, Streams, RFC 006


def test_attach_snd_settle_mode_is_one_of_its_types_choices() -> None:
    path = SPECS / "amqp-1-0" / "transport.xml"
    root = ET.parse(path).getroot()
    settle = next(t for t in tagged(root, "type") if t.get("name") == "sender-settle-mode")
    choices = {int(c.get("value", ""), 0) for c in tagged(settle, "choice")}
    assert choices == {0, 1, 2}
    attach = next(t for t in tagged(root, "type") if t.get("name") == "attach")
    field = next(f for f in tagged(attach, "field") if f.get("name") == "snd-settle-mode")
    assert field.get("type") == "sender-settle-mode"

    protocol = build_ir(find("amqp-1-0/1.0"))[0]
    (choice,) = rules_at(protocol, "message:Attach.SndSettleMode", "choice")
    assert set(choice.values) == choices and 7 not in choice.values
    assert choice.span is not None and choice.span.file == "specs/amqp-1-0/transport.xml"
    assert choice.span.line == line_after(path, 'name="sender-settle-mode" source=', "<type")
    (default,) = rules_at(protocol, "message:Attach.SndSettleMode", "default")
    mixed = next(c for c in tagged(settle, "choice") if c.get("name") == field.get("default"))
    assert default.value == int(mixed.get("value", ""), 0)
    mandatory = {f.get("name") for f in tagged(attach, "field") if f.get("mandatory") == "true"}
    got = {r.field for r in protocol.rules if r.owner == "message:Attach" and r.kind == "mandatory"}
    assert got == {amqp_xml.camel(n or "") for n in mandatory}


def test_amqp010_required_fields_are_rules() -> None:
    path = SPECS / "amqp-0-10" / "amqp.0-10.xml"
    required = [f for f in tagged(ET.parse(path).getroot(), "field") if f.get("required") == "true"]
    protocol = build_ir(find("amqp-0-10/0-10"))[0]
    rules = [r for r in protocol.rules if r.kind == "required" and r.field is not None]
    assert len(rules) == len(required) > 0
    transfer = {r.field for r in rules if r.owner == "message:MessageTransfer"}
    assert {"AcceptMode", "AcquireMode"} <= transfer


def test_streams_credit_is_sent_by_the_client() -> None:
    path = SPECS / "rabbitmq-stream" / "PROTOCOL-4.0.adoc"
    lines = lines_of(path)
    row = lines.index("|<<credit>>")
    assert lines[row + 1] == "|Client"
    protocol = build_ir(find("rabbitmq-stream/4.0"))[0]
    (sender,) = rules_at(protocol, "message:Credit", "sender")
    assert sender.value == "client" and sender.span is not None
    assert sender.span.line == row + 2
    (reply,) = rules_at(protocol, "message:CreditResponse", "sender")
    assert reply.value == "server"
    (code,) = rules_at(protocol, "message:CreditResponse.ResponseCode", "response-code")
    table = [int(m.group(1), 16) for ln in lines if (m := re.fullmatch(r"\|[^|]+\|(0x\w+)", ln))]
    assert list(code.values) == table and len(table) == 19
    (kv,) = rules_at(protocol, "message:Credit", "key-version")
    assert kv.value == int(lines[row + 2].lstrip("|"), 16) and (kv.low, kv.high) == (1, 1)


def test_rfc006_states_ranges_and_service_types() -> None:
    path = SPECS / "amqp-fast-0-8" / "amq-rfc006.txt"
    text = path.read_text(encoding="utf-8")
    assert "A value from 0 to 9" in text
    protocol = build_ir(find("amqp-fast-0-8/0.8"))[0]
    (priority,) = rules_at(protocol, "named:message-head.Priority", "range")
    assert (priority.low, priority.high) == (0, 9)
    listed = [int(n) for n in re.findall(r"^%d(\d+):$", text, re.M)]
    (send,) = rules_at(protocol, "message:HandleSend.ServiceType", "choice")
    assert list(send.values) == listed
    (consume,) = rules_at(protocol, "message:HandleConsume.ServiceType", "choice")
    assert list(consume.values) == listed[:2]  # "Must be either queue or topic"
    codes = rules_at(protocol, "message:ConnectionClose.ReplyCode", "response-code")
    assert [r.checkable for r in codes] == [False]  # its codes are AMQ RFC 011's


@pytest.mark.parametrize("spec", [s.qualified for s in registry()])
def test_every_shipped_spec_states_checkable_rules(spec: str) -> None:
    protocol = build_ir(find(spec))[0]
    counts = rule_counts(protocol.rules)
    assert sum(c for c, _ in counts.values()) > 0
    assert all(r.span is not None for r in protocol.rules)
    assert load(dump(protocol)) == protocol  # the rules round-trip through the IR's JSON


# --------------------------------------------------------------------------------------------
# Overlays and the command line


def write_overlay(tmp_path: Path, *entries: dict[str, object]) -> list[overlay.Entry]:
    path = tmp_path / "overlay.json"
    path.write_text(json.dumps({"entries": list(entries)}), encoding="utf-8")
    return overlay.load(path, tmp_path)


def entry(target: str, action: str, **more: object) -> dict[str, object]:
    return {"id": f"t-{action}", "op": "rule", "target": target, "action": action,
            "reason": "a test", "evidence": ["this test"], **more}  # fmt: skip


def test_an_overlay_waives_adds_and_corrects_rules(tmp_path: Path, ir091: Protocol) -> None:
    target = "rule:message:QueueDeclare.Queue/regexp"
    changed = overlay.apply(ir091, write_overlay(tmp_path, entry(target, "waive")))
    assert rules_at(changed, "message:QueueDeclare.Queue", "regexp") == []
    assert rules_at(changed, "message:QueueDeclare.Queue", "length")  # the others stay
    assert len(changed.rules) == len(ir091.rules) - 1
    assert changed.overlays == ir091.overlays  # no codec changed

    added = overlay.apply(
        ir091,
        write_overlay(
            tmp_path, entry("rule:message:BasicQos.PrefetchCount/le", "add", rule={"value": 9})
        ),
    )
    (new,) = rules_at(added, "message:BasicQos.PrefetchCount", "le")
    assert (new.value, new.overlay, new.prose) == (9, "t-add", "a test")
    assert new.span is not None and new.span.file == "overlay.json"

    fixed = overlay.apply(
        ir091,
        write_overlay(
            tmp_path,
            entry("rule:message:QueueDeclare.Queue/length", "correct", rule={"value": 255}),
        ),
    )
    (length,) = rules_at(fixed, "message:QueueDeclare.Queue", "length")
    assert (length.value, length.overlay) == (255, "t-correct")


@pytest.mark.parametrize(
    ("target", "action", "more", "message"),
    [
        ("rule:message:QueueDeclare.Nothing/length", "waive", {}, "names no field"),
        ("rule:message:QueueDeclare.Queue/le", "waive", {}, "no le rule"),
        ("rule:message:QueueDeclare.Queue/loud", "waive", {}, "KIND one of"),
        ("rule:message:QueueDeclare.Queue/length", "shout", {}, "action 'shout'"),
        ("rule:message:QueueDeclare.Queue/length", "correct", {"rule": {"colour": 1}}, "colour"),
        ("rule:message:QueueDeclare.Queue/length", "correct", {"rule": {"value": "x"}}, "length"),
    ],
)
def test_a_bad_rule_entry_names_itself(
    tmp_path: Path, ir091: Protocol, target: str, action: str, more: dict[str, object],
    message: str,
) -> None:  # fmt: skip
    with pytest.raises(OverlayError, match=re.escape(message)) as e:
        overlay.apply(ir091, write_overlay(tmp_path, entry(target, action, **more)))
    assert str(e.value).startswith("overlay.json:")


def test_a_rule_must_name_what_is_there(ir091: Protocol) -> None:
    from dataclasses import replace

    stray = SpecRule("notnull", "message:QueueDeclare", "Nowhere", None)
    with pytest.raises(IRError, match="no such field"):
        replace(ir091, rules=(*ir091.rules, stray))
    with pytest.raises(IRError, match="keeps its prose"):
        SpecRule("prose", "", None, None, checkable=False)
    with pytest.raises(IRError, match="client or server"):
        SpecRule("sender", "message:QueueDeclare", None, None, value="both")


def test_ir_rules_counts_every_version() -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli.main(["ir", "--rules"]) == 0
    text = out.getvalue()
    for spec in registry():
        assert f"{spec.qualified} (" in text
    block = text.split("amqp-0-9-1/0-9-1 (")[1].split("\n\n")[0]
    assert re.search(r"^  regexp +\d+ +0$", block, re.M)
    assert "overlay entries: channel-max-unbounded" in block
    # the JSON stays what `ir SPEC` prints, rules included
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli.main(["ir", "amqp-0-9-1/0-9-1"]) == 0
    assert any(r["kind"] == "regexp" for r in json.loads(out.getvalue())["rules"])
