"""`specgen lint` names every contradiction of the references with its line."""

from __future__ import annotations

import json

import pytest
from conftest import SPEC_DIR, spec_line

from specgen.cli import main

V40 = SPEC_DIR / "PROTOCOL-4.0.adoc"
EARLY = SPEC_DIR / "PROTOCOL-early.adoc"


def _lint(spec: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main(["lint", spec]) == 0
    return capsys.readouterr().out.splitlines()


@pytest.mark.parametrize(
    ("code", "needle", "spec_text"),
    [
        ("body-only", "PublishConfirm: PublisherId", "PublisherId => uint8"),
        ("body-only", "PublishError: PublisherId", "PublisherId => uint8"),
        ("body-only", "PeerPropertiesRequest: CorrelationId", "CorrelationId => uint32"),
        ("head-undefined", "SaslHandshakeRequest names Mechanism", "SaslHandshakeRequest => Key"),
        (
            "head-undefined",
            "Deliver names CommittedOffset",
            "Deliver => Key Version SubscriptionId CommittedOffset",
        ),
        ("body-only", "Deliver: CommittedChunkId", "CommittedChunkId => uint64"),
        ("alternatives", "Subscribe.OffsetSpecification.Offset", "Offset => uint64 (for offset)"),
        ("example-key", "subscribe key 0x0006", "0x0006 => subscribe request"),
    ],
)
def test_v40_contradictions_are_reported_with_their_line(
    code: str, needle: str, spec_text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [
        ln for ln in _lint("rabbitmq-stream/4.0", capsys) if f": {code}: " in ln and needle in ln
    ]
    assert lines, f"no {code} finding about {needle}"
    where = lines[0].split(": ")[0]
    path, line, _col = where.rsplit(":", 2)
    assert path == "specs/rabbitmq-stream/PROTOCOL-4.0.adoc"
    # the reported line holds the text the finding is about (the first such line after the
    # previous section title would be stricter; the text is unique enough here)
    text_lines = V40.read_text(encoding="utf-8").splitlines()
    assert spec_text.split(" =>")[0] in text_lines[int(line) - 1]


def test_early_contradictions(capsys: pytest.CaptureFixture[str]) -> None:
    out = "\n".join(_lint("rabbitmq-stream/early", capsys))
    version_line = spec_line(EARLY, "Version => int32")
    assert f"PROTOCOL-early.adoc:{version_line}:1: header-width: Version is int32" in out
    assert "head-undefined: Publish: PublishedMessage names PublishingId" in out
    assert "table-vs-section: the commands table says Metadata expects no response" in out
    assert "overlay early-publishing-id" in out


def test_lint_lists_the_overlay_entries_it_applied(capsys: pytest.CaptureFixture[str]) -> None:
    lines = _lint("rabbitmq-stream/4.0", capsys)
    applied = [ln for ln in lines if ": overlay " in ln]
    overlay = json.loads((SPEC_DIR / "overlay.json").read_text(encoding="utf-8"))
    expected = [e["id"] for e in overlay["entries"] if "4.0" in e.get("versions", ["4.0"])]
    assert "osiris-chunk-entries" in expected and "early-publishing-id" not in expected
    assert [ln.split(": overlay ")[1].split(":")[0] for ln in applied] == expected
    assert lines[-1].endswith(f"{len(expected)} overlay entries applied")


def test_readme_examples_print_what_they_say(capsys: pytest.CaptureFixture[str]) -> None:
    """The `specgen list` and `specgen lint | head -4` examples are what they print, in every
    document that shows them (README.md, docs/*.md)."""
    import docs_text

    for command, head in (
        ("list", None),
        ("lint rabbitmq-stream/4.0", 4),
    ):
        prompt = f"$ .venv/bin/specgen {command}" + (f" | head -{head}" if head else "") + "\n"
        assert main(command.split()) == 0
        printed = capsys.readouterr().out.splitlines()
        for after in docs_text.after(prompt):
            shown = after.split("\n\n", 1)[0].split("\n```", 1)[0]
            assert shown.splitlines() == printed[:head], command
