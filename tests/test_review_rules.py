"""The classification rules of `specgen diff` on the registered specs (no corpus needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specgen.cli import main
from specgen.review.changes import NEW_CLIENT, OLD_CLIENT, compare
from specgen.sources import resolve
from specgen.specs import build_ir


def _review(old: str, new: str):  # type: ignore[no-untyped-def]
    a, _ = build_ir(resolve(old))
    b, _ = build_ir(resolve(new))
    return compare(a, b)


def test_rabbitmqs_amqp_extensions() -> None:
    """RabbitMQ's extended 0-9-1 XML against the working group's: the server may send
    Basic.Cancel and Basic.Ack (consumer cancel notification, publisher confirms), which an
    old client does not expect; the client may send Basic.CancelOk back, which an old server
    does not expect; two reserved bits of Exchange.Declare got names; new methods are
    compatible."""
    review = _review("amqp-0-9-1/0-9-1", "amqp-0-9-1/0-9-1-rabbitmq")
    senders = {c.command: c.breaks for c in review.changes if c.rule == "COMMAND_SENDER"}
    assert senders == {
        "Basic.Cancel": (OLD_CLIENT,),
        "Basic.Ack": (OLD_CLIENT,),
        "Basic.CancelOk": (NEW_CLIENT,),
    }
    renamed = {c.summary for c in review.changes if c.rule == "FIELD_RENAMED"}
    assert renamed == {"Reserved2 -> AutoDelete", "Reserved3 -> Internal"}
    added = {c.command for c in review.changes if c.rule == "COMMAND_ADDED"}
    assert {"Exchange.Bind", "Confirm.Select", "Connection.Blocked"} <= added
    assert all(not c.breaking for c in review.changes if c.rule == "COMMAND_ADDED")
    keys = [c.summary for c in review.changes if c.command == "Exchange.Bind"]
    assert "Exchange.Bind added, key 40/30, sent by the client" in keys


def test_early_to_4_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The first published reference against 4.0: every key moved and responses gained the
    response bit (breaking), Deliver and Publish gained a version 2 (compatible)."""
    page = tmp_path / "review.html"
    code = main(
        [
            "diff",
            "rabbitmq-stream/early",
            "rabbitmq-stream/4.0",
            "--fail-on-breaking",
            "--html",
            str(page),
        ]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "FRAME_RESPONSE_FLAG" in out and "response flag none -> 0x8000" in out
    assert "Publish / Publish v2: version 2 added" in out
    assert "Deliver / Deliver v2: version 2 added" in out
    html = page.read_text(encoding="utf-8")
    assert html.lower().startswith("<!doctype html>") and "FRAME_RESPONSE_FLAG" in html


def test_the_same_spec_has_no_changes(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "diff",
                "rabbitmq-stream/4.0",
                "specs/rabbitmq-stream/PROTOCOL-4.0.adoc",
                "--fail-on-breaking",
            ]
        )
        == 0
    )
    assert (
        "compatible: 0 wire changes, 0 breaking, 0 names only, 0 prose only"
        in capsys.readouterr().out
    )


def test_two_protocols_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "rabbitmq-stream/4.0", "amqp-0-9-1/0-9-1"]) == 2
    assert "not one protocol" in capsys.readouterr().err
