"""Conversations checked against a protocol's dialogue grammars, one way for every protocol.

A conversation is the frames of one connection, channel, handle or kind of transfer, each a
`(direction, message)`: its steps are the generated `dialogue.METHODS` of its messages, the
client's ("c2s") as role "C" and the server's as "S", after the client's protocol header when
the conversation opens the connection (the decoder reads the bytes after the header, so it is
no frame). They are checked as a capture gives them, with `dialogue.check(...,
crossing=True)`: each direction's order is the one given, the interleaving of the two is left
open (see specgen/dialogue.py).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

VERDICT_COLUMNS = (
    "status STRING, steps INT, offset BIGINT, direction STRING, message STRING, expected STRING"
)
"""What `verdict_columns` gives, in Spark's schema syntax: the end of a protocol's verdict rows."""


def dialogue_of(package: str) -> Any:
    """The generated `dialogue` module of a spec version's package (its import name)."""
    return importlib.import_module(f"{package}.dialogue")


@dataclass(frozen=True)
class Checked:
    """A conversation's verdict (the generated dialogue's `Verdict`), how many steps were
    checked (the protocol header among them), and the index among its frames of the one it broke
    at: None where it did not break, or broke at the protocol header."""

    verdict: Any
    steps: int
    at: int | None


def check(
    dialogue: Any, grammar: str, frames: Iterable[tuple[str, str]], *, opens: bool = False
) -> Checked:
    """Check the `frames` of one conversation, `(direction, message)` in the order read, against
    `grammar` of the generated `dialogue` module; `opens`: it is the one that opens the
    connection, so the protocol header (where the protocol has one) comes first."""
    header = opens and dialogue.PROTOCOL_HEADER is not None
    lead = [("C", str(dialogue.PROTOCOL_HEADER))] if header else []
    steps = lead + [("C" if d == "c2s" else "S", dialogue.METHODS[m]) for d, m in frames]
    verdict = dialogue.check(grammar, steps, crossing=True)
    at = None if verdict.at is None else verdict.at - len(lead)
    return Checked(verdict, len(steps), at if at is not None and at >= 0 else None)


def verdict_columns(dialogue: Any, grammar: str, rows: Any, *, opens: bool) -> dict[str, Any]:
    """One conversation's frames, a pandas DataFrame with direction, message, offset and ts, ->
    the `VERDICT_COLUMNS` of its row. They are read in order of read time, then direction (the
    client's first), then offset; the frame it broke at is named by its offset, direction and
    message."""
    rows = rows.assign(side=(rows["direction"] != "c2s").astype(int))
    rows = rows.sort_values(["ts", "side", "offset"], na_position="first", kind="stable")
    frames = zip(rows["direction"], rows["message"], strict=True)
    checked = check(dialogue, grammar, frames, opens=opens)
    frame = None if checked.at is None else rows.iloc[checked.at]
    return {
        "status": checked.verdict.status,
        "steps": checked.steps,
        "offset": None if frame is None else int(frame["offset"]),
        "direction": None if frame is None else frame["direction"],
        "message": None if frame is None else frame["message"],
        "expected": ", ".join(checked.verdict.expected),
    }


def tally(statuses: Mapping[str, int], kinds: str | None = None) -> str:
    """The section's first note: how many conversations, `kinds` of them where given, follow
    their grammar, stop early and break it; `statuses` counts them by status."""
    total = sum(statuses.values())
    return (
        f"{total} conversations{'' if kinds is None else f' ({kinds})'}: "
        f"{statuses.get('ok', 0)} follow their grammar, "
        f"{statuses.get('incomplete', 0)} stop early (incomplete, not broken), "
        f"{statuses.get('broken', 0)} break it"
    )
