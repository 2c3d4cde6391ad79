"""`specgen report` on the shipped AMQP 0-10 sample: command-to-completion latency, transfers per
destination, transfer outcomes and the dialogue grammars, against what the sample's bytes say.

The facts are recomputed here from the byte files with the generated FrameReader and
Assemblies alone (commands numbered per sender from 0, the sample's command-point; a
session.completed or an accept, reject or release names ids in (first, last) ranges), the
times taken from the decoded table by direction and offset; none of it goes through the
report's Spark code. The recorder's constants say what the session did.
"""

from __future__ import annotations

import importlib.util
import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
from pyspark.sql import SparkSession

from specgen import report
from specgen.pipeline.decode import decode_local
from specgen.pipeline.sections import DIRECTIONS, Section
from specgen_codecs.amqp_0_10 import v0_10 as amqp

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "amqp-0-10"

_spec = importlib.util.spec_from_file_location("recorder", ROOT / "samples" / "record_amqp_0_10.py")
assert _spec is not None and _spec.loader is not None
recorder = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(recorder)

SETTLES = {
    amqp.MessageAccept: "accepted",
    amqp.MessageReject: "rejected",
    amqp.MessageRelease: "released",
}


@dataclass
class Facts:
    latencies: dict[tuple[str, str], list[float | None]]  # (direction, command) -> per command
    destinations: Counter[tuple[str, str]]
    body_bytes: Counter[tuple[str, str]]
    outcomes: dict[tuple[str, str], Counter[str]]  # (direction, destination) -> outcome counts


def _messages(direction: str) -> list[tuple[int, Any]]:
    """(offset of the frame completing it, message) of every whole message of one direction."""
    reader = amqp.FrameReader(preamble=True)
    reader.feed((SAMPLE / "session-1" / f"conn-0001.{direction}.bin").read_bytes())
    messages = amqp.Assemblies()
    out = []
    for offset, raw in reader.frames():
        whole = messages.add(amqp.decode(raw))
        if whole is not None:
            out.append((offset, whole))
    reader.finish()
    return out


def _covers(ranges: list[tuple[int, int]], ident: int) -> bool:
    return any(first <= ident <= last for first, last in ranges)


def _facts(times: dict[tuple[str, int], float]) -> Facts:
    sent: dict[str, list[tuple[int, int, Any, Any]]] = {}  # direction -> (id, offset, cmd, whole)
    answers: dict[str, list[tuple[float, Any]]] = {}  # direction -> (time, control or command)
    for direction in ("c2s", "s2c"):
        sent[direction], answers[direction] = [], []
        for offset, whole in _messages(direction):
            method = whole.method
            if method.KIND == "command":
                sent[direction].append((len(sent[direction]), offset, method, whole))
            if isinstance(method, (amqp.SessionCompleted, *SETTLES)):
                answers[direction].append((times[(direction, offset)], method))
    latencies: dict[tuple[str, str], list[float | None]] = defaultdict(list)
    destinations: Counter[tuple[str, str]] = Counter()
    body_bytes: Counter[tuple[str, str]] = Counter()
    outcomes: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for direction, commands in sent.items():
        other = "s2c" if direction == "c2s" else "c2s"
        for ident, offset, method, whole in commands:
            t = times[(direction, offset)]
            done = [
                at
                for at, a in answers[other]
                if isinstance(a, amqp.SessionCompleted) and _covers(a.commands, ident)
            ]
            latencies[(direction, method.NAME)].append((min(done) - t) * 1000 if done else None)
            if isinstance(method, amqp.MessageTransfer):
                key = (direction, method.destination)
                destinations[key] += 1
                body_bytes[key] += len(whole.body)
                settled = sorted(
                    (at, SETTLES[type(a)])
                    for at, a in answers[other]
                    if type(a) in SETTLES and _covers(a.transfers, ident)
                )
                outcomes[key][settled[0][1] if settled else "none"] += 1
    return Facts(latencies, destinations, body_bytes, outcomes)


@pytest.fixture(scope="module")
def decoded(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample decoded (the fixture marks its users `spark`)."""
    out = tmp_path_factory.mktemp("amqp010") / "out"
    result = decode_local("amqp-0-10", SAMPLE, out, echo=lambda _: None)
    assert result.reconciled and result.rejects == 0
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


def _rows(section: Section) -> dict[tuple[Any, Any], tuple[Any, ...]]:
    assert section.table is not None, section.notes
    return {(row[0], row[1]): tuple(row[2:]) for row in section.table.values}


def _sent(direction: str) -> str:
    return DIRECTIONS[direction]


def test_the_sample_is_what_the_recording_script_played(facts: Facts) -> None:
    assert facts.destinations == {
        **{("c2s", d): n for d, n in recorder.PUBLISHED.items()},
        ("s2c", recorder.CONSUMER): recorder.DELIVERED,
    }
    delivered = facts.outcomes[("s2c", recorder.CONSUMER)]
    assert delivered == {"accepted": recorder.DELIVERED - 2, "rejected": 1, "released": 1}


def test_transfers_per_destination(built: report.Report, facts: Facts) -> None:
    rows = _rows(_section(built, "Transfers per destination"))
    assert {k: v[:2] for k, v in rows.items()} == {
        (_sent(d), dest): (n, facts.body_bytes[(d, dest)])
        for (d, dest), n in facts.destinations.items()
    }


def test_transfer_outcomes(built: report.Report, facts: Facts) -> None:
    rows = _rows(_section(built, "Transfer outcomes (message.accept / reject / release)"))
    expected = {}
    for (d, dest), counts in facts.outcomes.items():
        # the client's transfers ask for no accept (accept-mode none): none is an open one
        unasked = counts["none"] if d == "c2s" else 0
        expected[(_sent(d), dest)] = (
            sum(counts.values()),
            counts["accepted"],
            counts["rejected"],
            counts["released"],
            unasked,
            counts["none"] - unasked,
        )
    assert rows == expected


def test_command_to_completion_latency(built: report.Report, facts: Facts) -> None:
    rows = _rows(_section(built, "Command-to-completion latency (session.completed)"))
    assert set(rows) == {(_sent(d), c) for d, c in facts.latencies}
    for (direction, command), latencies in facts.latencies.items():
        commands, completed, *p = rows[(_sent(direction), command)]
        measured = [x for x in latencies if x is not None]
        assert (commands, completed) == (len(latencies), len(measured))
        for q, value in zip((0.5, 0.95, 0.99), p, strict=True):
            # a percentile is one of the measured latencies, at its rank
            assert any(math.isclose(x, value, abs_tol=0.001) for x in measured), (command, q)
            below = sum(x < value - 0.001 for x in measured)
            upto = sum(x <= value + 0.001 for x in measured)
            assert below < math.ceil(q * len(measured)) <= upto, (command, q, value)


def test_conversations_follow_the_grammars(built: report.Report, facts: Facts) -> None:
    section = _section(built, "Conversations against the grammar")
    transfers = sum(facts.destinations.values())
    assert section.notes[0] == (
        f"{transfers + 1} conversations: {transfers + 1} follow their grammar, "
        "0 stop early (incomplete, not broken), 0 break it"
    )
    assert section.table is not None
    assert {row[3] for row in section.table.values} == {"ok"}
