"""`specgen report` on the shipped AMQP 1.0 sample: its links, outcomes, latency, credit and
multi-frame transfers against what the sample's bytes say.

The facts are recomputed here from the recorded byte files, frame by frame, with the generated
codec's FrameReader (a link is the name its sender's Attach gives a handle; a delivery ends at
the first transfer without `more`; a receiver's Disposition covers first..last), and the
times from the decoded table's timestamps by direction and offset; none of it goes through
the report's Spark code.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
from chromium import DumpDom
from pyspark.sql import SparkSession

from specgen.pipeline import report
from specgen.pipeline.decode import decode_local
from specgen.pipeline.sections import Section
from specgen_codecs.amqp_1_0 import v1_0 as amqp

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "amqp-1-0"
LABEL = "session-1/conn-0001"
OUTCOMES = {amqp.Accepted: "accepted", amqp.Rejected: "rejected", amqp.Released: "released"}


@dataclass
class Link:
    deliveries: list[list[tuple[int, Any, int]]] = field(default_factory=list)  # frames
    open: bool = False  # the last delivery's last frame had `more`


@dataclass
class Facts:
    links: dict[str, Link]
    outcomes: dict[str, Counter[str]]
    latencies: dict[str, list[float]]
    granted: dict[str, int]
    frames: int


def _read(direction: str) -> list[tuple[int, int, Any]]:
    """(offset, size, message) of every frame and protocol header of one direction."""
    reader = amqp.FrameReader()
    reader.feed((SAMPLE / "session-1" / f"conn-0001.{direction}.bin").read_bytes())
    out = []
    while True:
        at = reader.offset
        message = next(reader, None)
        if message is None:
            break
        out.append((at, reader.offset - at, message))
    reader.finish()
    return out


def _facts(times: dict[tuple[str, int], float]) -> Facts:
    frames = {d: _read(d) for d in ("c2s", "s2c")}
    names: dict[tuple[str, int], str] = {}  # (direction, handle) -> link name
    receiver_of: dict[str, str] = {}  # link name -> the direction its receiver sends in
    sender_of: dict[str, str] = {}
    initial: dict[str, int] = {}
    links: dict[str, Link] = defaultdict(Link)
    by_id: dict[tuple[str, int], tuple[str, int]] = {}  # (direction, id) -> (link, delivery)
    flows: dict[str, Any] = {}
    for direction, messages in frames.items():
        for offset, size, message in messages:
            body = getattr(message, "body", None)
            if isinstance(body, amqp.Attach):
                names[direction, body.handle] = body.name
                if body.role:
                    receiver_of[body.name] = direction
                else:
                    sender_of[body.name] = direction
                    initial[body.name] = body.initial_delivery_count or 0
            elif isinstance(body, amqp.Transfer):
                link = links[names[direction, body.handle]]
                if not link.open:
                    link.deliveries.append([])
                    by_id[direction, body.delivery_id] = (
                        names[direction, body.handle],
                        len(link.deliveries) - 1,
                    )
                link.deliveries[-1].append((offset, size, message))
                link.open = bool(body.more)
            elif isinstance(body, amqp.Flow) and body.handle is not None:
                name = names[direction, body.handle]
                if receiver_of.get(name) == direction:
                    flows[name] = body  # the receiver's latest
    outcomes: dict[str, Counter[str]] = defaultdict(Counter)
    answered: dict[tuple[str, int], float] = {}
    decided: set[tuple[str, int]] = set()
    for direction, messages in frames.items():
        other = "s2c" if direction == "c2s" else "c2s"
        for offset, _, message in messages:
            body = getattr(message, "body", None)
            if not isinstance(body, amqp.Disposition):
                continue
            assert body.role, "in this sample only receivers send dispositions"
            for delivery_id in range(body.first, (body.last or body.first) + 1):
                key = by_id[other, delivery_id]
                answered.setdefault(key, times[direction, offset])
                if key not in decided:
                    decided.add(key)
                    outcomes[key[0]][OUTCOMES[type(body.state)]] += 1
    latencies: dict[str, list[float]] = defaultdict(list)
    for (name, n), at in answered.items():
        first = links[name].deliveries[n][0][0]
        latencies[name].append((at - times[sender_of[name], first]) * 1000)
    granted = {
        name: (f.delivery_count if f.delivery_count is not None else initial[name])
        + f.link_credit
        - initial[name]
        for name, f in flows.items()
    }
    total = sum(len(m) for m in frames.values())
    return Facts(dict(links), dict(outcomes), dict(latencies), granted, total)


@pytest.fixture(scope="module")
def decoded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("amqp10") / "out"
    decode_local("amqp-1-0", SAMPLE, out, echo=lambda _: None)
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


def _rows(section: Section) -> dict[str, tuple[Any, ...]]:
    assert section.table is not None, section.notes
    return {row[0].removeprefix(f"{LABEL} "): row[1:] for row in section.table.values}  # type: ignore[union-attr]


def test_the_sample_is_what_the_recording_script_played(facts: Facts) -> None:
    """200 sent, one rejected and one released (and taken again): the figures below rest on it."""
    assert {n: len(link.deliveries) for n, link in facts.links.items()} == {
        "sample-sender": 200,
        "sample-receiver": 201,
    }
    assert facts.outcomes["sample-receiver"] == {"accepted": 199, "rejected": 1, "released": 1}


def test_transfers_and_bytes_per_link(built: report.Report, facts: Facts) -> None:
    rows = _rows(_section(built, "Transfers and bytes per link"))
    expected = {}
    for name, link in facts.links.items():
        frames = [f for d in link.deliveries for f in d]
        expected[name] = (
            len(link.deliveries),
            len(frames),
            sum(size for _, size, _ in frames),
            sum(len(m.payload) for _, _, m in frames),
        )
    assert {name: (r[2], r[3], r[4], r[5]) for name, r in rows.items()} == expected
    assert rows["sample-sender"][:2] == ("/queue/sample-amqp10-orders", "client → server")
    assert rows["sample-receiver"][1] == "server → client"


def test_settlement_outcomes_per_link(built: report.Report, facts: Facts) -> None:
    rows = _rows(_section(built, "Settlement outcomes per link"))
    # deliveries, accepted, rejected, released, modified, settled on sending, no outcome
    assert {name: r[1:5] for name, r in rows.items()} == {
        name: tuple(c[o] for o in ("accepted", "rejected", "released", "modified"))
        for name, c in facts.outcomes.items()
    }
    assert {name: (r[0], r[5], r[6]) for name, r in rows.items()} == {
        name: (len(link.deliveries), 0, 0) for name, link in facts.links.items()
    }


def test_transfer_to_disposition_latency(built: report.Report, facts: Facts) -> None:
    section = _section(built, "Transfer-to-disposition latency")
    rows = _rows(section)
    for name, latencies in facts.latencies.items():
        deliveries, answered, *p = rows[name]
        assert (deliveries, answered) == (len(facts.links[name].deliveries), len(latencies))
        for q, value in zip((0.5, 0.95, 0.99), p, strict=True):
            # a percentile is one of the measured latencies, at its rank
            assert any(math.isclose(x, value, abs_tol=0.001) for x in latencies), (name, q)
            below = sum(x < value - 0.001 for x in latencies)
            upto = sum(x <= value + 0.001 for x in latencies)
            assert below < math.ceil(q * len(latencies)) <= upto, (name, q, value)
    assert [c.id for c in section.charts] == ["chart-transfer-disposition"]


def test_credit_granted_and_used(built: report.Report, facts: Facts) -> None:
    section = _section(built, "Credit granted and used per link")
    rows = _rows(section)
    assert {name: (r[1], r[2], r[3]) for name, r in rows.items()} == {
        name: (
            granted,
            len(facts.links[name].deliveries),
            granted - len(facts.links[name].deliveries),
        )
        for name, granted in facts.granted.items()
    }
    (chart,) = section.charts
    used = {t["name"]: t["y"][-1] for t in chart.figure["data"] if t["name"].endswith(" used")}
    assert used == {f"{LABEL} {n} used": len(link.deliveries) for n, link in facts.links.items()}


def test_multi_frame_transfers(built: report.Report, facts: Facts) -> None:
    section = _section(built, "Multi-frame transfers")
    assert section.table is not None
    expected = sorted(
        (
            f"{LABEL} {name}",
            d[0][2].body.delivery_id,
            d[0][0],
            len(d),
            sum(len(m.payload) for _, _, m in d),
        )
        for name, link in facts.links.items()
        for d in link.deliveries
        if len(d) > 1
    )
    assert sorted(row[:5] for row in section.table.values) == expected
    assert len(expected) == 6  # three bodies over a frame, each sent and delivered


def test_sections_that_do_not_apply_are_left_out(built: report.Report) -> None:
    titles = [s.title for s in built.sections]
    assert "Response codes per command" not in titles
    assert "Request latency per command" not in titles
    assert titles[:2] == ["Totals", "Command mix"]


def test_the_sub_second_sample_is_bucketed_in_milliseconds(
    built: report.Report, facts: Facts, decoded: Path
) -> None:
    section = _section(built, "Frames and bytes over time")
    assert section.notes[0].startswith("2 ms buckets")
    assert section.table is not None
    stamps = [
        r["timestamp"].timestamp()
        for r in pq.read_table(decoded / "frames", columns=["timestamp"]).to_pylist()
    ]
    per_bucket = Counter(int(t * 1_000_000) // 2_000 for t in stamps)
    shown = {row[0]: row[1] for row in section.table.values}
    assert sum(shown.values()) == facts.frames == len(stamps)
    assert sorted(shown.values()) == sorted(per_bucket.values())


def test_the_protocol_charts_draw_in_headless_chromium(
    built: report.Report, tmp_path: Path, chromium: DumpDom
) -> None:
    page = tmp_path / "report.html"
    report.write_html(built, page)
    dom = chromium(page, tmp_path / "profile", 10000)
    for chart in ("chart-transfer-disposition", "chart-credit"):
        at = dom.index(f'id="{chart}"')
        drawn = dom[at : dom.index("</section>", at)]
        # plotly.js draws its SVG and the trace's bars or lines inside the div it plotted
        assert 'class="main-svg"' in drawn, chart
        assert 'class="point"' in drawn or 'class="js-line"' in drawn, chart
