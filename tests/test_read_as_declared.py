"""Specs as their authors publish them (issue 35): read by what the document declares, and
nothing silent.

Each case takes a copy of a shipped spec and changes what a real copy changes (a version number
as Qpid spells it, a type used but never declared, a typo in a type name, a key given twice, a
version no rule knows), then runs the command line as a user would. A refusal is one line,
`file:line:col: ... -> ...`, exit 2, and nothing written; an accepted reading generates.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from specgen.abnf import parse_rules
from specgen.cli import main
from specgen.locations import SPECS
from specgen.sources import _format_of

LOCATED = re.compile(r"^specgen: [^\s:]+:\d+:\d+: .+ -> .+$")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, (out.err or out.out).strip()


def _copy(tmp_path: Path, spec: str, name: str, edit: tuple[str, str] | None = None) -> Path:
    source = SPECS / spec
    target = tmp_path / name
    text = source.read_text(encoding="utf-8")
    if edit is not None:
        assert edit[0] in text, edit
        text = text.replace(edit[0], edit[1], 1)
    target.write_text(text, encoding="utf-8")
    for data in source.parent.glob("*.toml"):
        if data.name != "protocol.toml":
            shutil.copy(data, tmp_path / data.name)
    return target


def _header(out: Path) -> bytes:
    framing = next(out.glob("*/framing.py")).read_text(encoding="utf-8")
    m = re.search(r'"client": (b"[^"]*")', framing)
    assert m is not None, framing[:2000]
    value = eval(m.group(1))  # noqa: S307 - a bytes literal the test just matched
    assert isinstance(value, bytes)
    return value


# ---- the protocol header follows the version's rule -------------------------------------


def test_qpid_minor_91_is_0_9_1_and_opens_with_its_header(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Apache Qpid's amqp0-9-1.stripped.xml: <amqp major="0" minor="91"> (no revision); the
    # old reading made 'AMQP' 1 1 0 91, which no broker accepts
    doc = _copy(
        tmp_path,
        "amqp-0-9-1/amqp0-9-1.xml",
        "amqp0-9-1.qpid.xml",
        ('major = "0" minor = "9" revision = "1"', 'major = "0" minor = "91"'),
    )
    code, out = _run(capsys, "generate", str(doc), "--out", str(tmp_path / "out"))
    assert code == 0, out
    assert _header(tmp_path / "out") == b"AMQP\x00\x00\x09\x01"
    code, lint = _run(capsys, "lint", str(doc))
    assert "version-spelling" in lint and "0-9-1" in lint


def test_an_unknown_version_is_refused_at_the_root_until_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _copy(
        tmp_path,
        "amqp-0-9-1/amqp0-9-1.xml",
        "amqp0-7.xml",
        ('major = "0" minor = "9" revision = "1"', 'major = "0" minor = "7"'),
    )
    out = tmp_path / "out"
    code, err = _run(capsys, "generate", str(doc), "--out", str(out))
    assert code == 2 and LOCATED.match(err), err
    assert "version-unknown" in err and "--accept version-unknown" in err
    assert not out.exists()  # nothing written
    code, err = _run(capsys, "generate", str(doc), "--out", str(out), "--accept", "version-unknown")
    assert code == 0, err
    assert _header(out) == b"AMQP\x01\x01\x00\x07"  # as 0-8 and 0-9 shape theirs


def test_a_type_typo_is_refused_unless_accepted_by_flag_or_overlay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _copy(
        tmp_path,
        "rabbitmq-stream/PROTOCOL-4.0.adoc",
        "PROTOCOL.adoc",
        ("CorrelationId => uint32", "CorrelationId => uint33"),
    )
    out = tmp_path / "out"
    code, err = _run(capsys, "generate", str(doc), "--out", str(out))
    assert code == 2 and LOCATED.match(err), err
    assert "PROTOCOL.adoc:" in err and "uint33" in err and "type-typo" in err
    assert not out.exists()
    code, lint = _run(capsys, "lint", str(doc))
    assert "decides bytes" in lint
    overlay = json.loads((SPECS / "rabbitmq-stream/overlay.json").read_text(encoding="utf-8"))
    overlay["entries"].append(
        {
            "id": "typo-is-uint32",
            "op": "accept",
            "target": "finding:type-typo",
            "reason": "the test's copy misspells uint32",
            "evidence": ["this test"],
        }
    )
    accepting = tmp_path / "overlay.json"
    accepting.write_text(json.dumps(overlay), encoding="utf-8")
    code, err = _run(capsys, "generate", str(doc), "--out", str(out), "--overlay", str(accepting))
    assert code == 0, err
    shutil.rmtree(out)
    code, err = _run(capsys, "generate", str(doc), "--out", str(out), "--accept", "type-typo")
    assert code == 0, err


def test_two_methods_with_one_key_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _copy(
        tmp_path,
        "amqp-0-9-1/amqp0-9-1.xml",
        "dup.xml",
        (
            '<method name = "qos-ok" synchronous = "1" index = "11"',
            '<method name = "qos-ok" synchronous = "1" index = "10"',
        ),
    )
    code, err = _run(capsys, "generate", str(doc), "--out", str(tmp_path / "out"))
    assert code == 2 and re.match(r"^specgen: \S*dup\.xml:\d+:\d+: ", err), err
    assert "qos-ok" in err and "10" in err


# ---- what the document declares, the package has -----------------------------------------


def test_a_method_the_front_end_loses_is_caught_before_rendering(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The second reading (the standard library's XML parser) finds what a front-end dropped:
    here a planner that forgets basic.qos-ok, standing in for any silent loss."""
    from specgen.emitters import plan as plan_mod

    original = plan_mod.Planner.plan

    def forgetful(self: plan_mod.Planner) -> plan_mod.ModulePlan:
        result = original(self)
        result.messages = [m for m in result.messages if m.cls != "BasicQosOk"]
        return result

    monkeypatch.setattr(plan_mod.Planner, "plan", forgetful)
    doc = _copy(tmp_path, "amqp-0-9-1/amqp0-9-1.xml", "copy.xml")
    code, err = _run(capsys, "generate", str(doc), "--out", str(tmp_path / "out"))
    assert code == 2, err
    assert re.match(
        r"^specgen: \S*copy\.xml:\d+:\d+: the document declares method basic\.qos-ok", err
    )
    assert not (tmp_path / "out").exists()


# ---- read by structure, not by version numbers ---------------------------------------------


@pytest.mark.parametrize(
    ("spec", "edit", "expected"),
    [
        ("amqp-0-10/amqp.0-10.xml", ('minor="10"', 'minor="11"'), "amqp010-xml"),
        ("amqp-0-9-1/amqp0-9-1.xml", ('minor = "9"', 'minor = "10"'), "amqp-xml"),
        ("amqp-1-0/types.xml", None, "amqp10-xml"),
        ("amqp-1-0/index.xml", None, "amqp10-xml"),
    ],
)
def test_xml_format_comes_from_what_the_document_holds(
    tmp_path: Path, spec: str, edit: tuple[str, str] | None, expected: str
) -> None:
    doc = _copy(tmp_path, spec, "doc.xml", edit)
    assert _format_of(doc, doc.read_text(encoding="utf-8"), "doc.xml") == expected


def test_an_0_10_document_of_another_number_reads_with_the_0_10_reader(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _copy(tmp_path, "amqp-0-10/amqp.0-10.xml", "amqp.0-11.xml", ('minor="10"', 'minor="11"'))
    code, out = _run(capsys, "ir", str(doc))
    assert code == 0, out
    assert json.loads(out)["name"] == "amqp-0-10"


def test_an_amqp_document_holding_nothing_known_or_two_families_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.xml"
    empty.write_text('<?xml version="1.0"?>\n<amqp major="0" minor="9">\n</amqp>\n')
    code, err = _run(capsys, "ir", str(empty))
    assert code == 2 and re.match(r"^specgen: \S*empty\.xml:2:1: .* -> give --spec-format", err), (
        err
    )
    mixed = tmp_path / "mixed.xml"
    mixed.write_text(
        '<amqp major="0" minor="9">\n <class name="a"><method name="b"/>'
        '<control name="c"/></class>\n</amqp>\n'
    )
    code, err = _run(capsys, "ir", str(mixed))
    assert code == 2 and "amqp-xml" in err and "amqp010-xml" in err, err


# ---- what the parser cannot, an overlay declares --------------------------------------------


def test_an_undeclared_domain_is_refused_with_the_overlay_entry_that_would_fix_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _copy(
        tmp_path,
        "amqp-0-9-1/amqp0-9-1.xml",
        "undeclared.xml",
        ('domain = "queue-name"', 'domain = "mystery"'),
    )
    empty = tmp_path / "overlay.json"
    empty.write_text('{"protocol": "amqp-0-9-1", "entries": []}')
    code, err = _run(capsys, "ir", str(doc), "--overlay", str(empty))
    assert code == 2 and LOCATED.match(err), err
    assert '"op": "declare", "target": "domain:mystery"' in err
    declaring = tmp_path / "declaring.json"
    declaring.write_text(
        json.dumps(
            {
                "protocol": "amqp-0-9-1",
                "entries": [
                    {
                        "id": "mystery-is-shortstr",
                        "op": "declare",
                        "target": "domain:mystery",
                        "type": {"kind": "prim", "name": "shortstr"},
                        "reason": "the test's copy renamed a domain",
                        "evidence": ["this test"],
                    }
                ],
            }
        )
    )
    code, out = _run(capsys, "ir", str(doc), "--overlay", str(declaring))
    assert code == 0, out
    assert json.loads(out)["overlays"] == ["mystery-is-shortstr"]


def test_a_front_end_that_takes_no_declarations_refuses_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _copy(tmp_path, "rabbitmq-stream/PROTOCOL-4.0.adoc", "PROTOCOL.adoc")
    overlay = tmp_path / "overlay.json"
    overlay.write_text(
        json.dumps(
            {
                "protocol": "rabbitmq-stream",
                "entries": [
                    {
                        "id": "nothing",
                        "op": "declare",
                        "target": "domain:x",
                        "type": {"kind": "prim", "name": "uint8"},
                        "reason": "r",
                        "evidence": ["e"],
                    }
                ],
            }
        )
    )
    code, err = _run(capsys, "ir", str(doc), "--overlay", str(overlay))
    assert code == 2 and "takes no declarations" in err and "overlay.json:" in err, err


def test_a_grammar_continued_on_a_tab_indented_line_is_one_rule() -> None:
    # AMQP 0-9's dtx-coordination grammar continues a rule on " \t\t\t  / C:GET-TIMEOUT ..."
    body = "\n      command = C:SET S:SET-OK\n \t\t\t  / C:GET S:GET-OK\n      other = C:X\n"
    rules = parse_rules(body, "doc.xml", 10, 1)
    assert [r.name for r in rules] == ["command", "other"]
