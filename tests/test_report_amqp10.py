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
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
from chromium import DumpDom
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from specgen import report
from specgen.analyses import amqp_1_0
from specgen.pipeline.decode import decode_local
from specgen.pipeline.sections import Section
from specgen.registry import find
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
def decoded(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample decoded on the test session's Spark (the fixture marks its users `spark`)."""
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


# A hand-built conversation for what the sample does not do: the server's channel 5 is the
# client's channel 0 (its Begin answers it), a continuation transfer without a delivery id, a
# delivery settled on sending, a modified and a rejected outcome, a sender's own Disposition,
# and handle 0 reused for a second link after a Detach.
STRUCTS = {
    "begin": [("remote_channel", pa.int32())],
    "attach": [
        ("name", pa.string()),
        ("handle", pa.int64()),
        ("role", pa.bool_()),
        ("source", pa.string()),
        ("target", pa.string()),
        ("initial_delivery_count", pa.int64()),
    ],
    "transfer": [
        ("handle", pa.int64()),
        ("delivery_id", pa.int64()),
        ("more", pa.bool_()),
        ("settled", pa.bool_()),
        ("aborted", pa.bool_()),
    ],
    "disposition": [
        ("role", pa.bool_()),
        ("first", pa.int64()),
        ("last", pa.int64()),
        ("settled", pa.bool_()),
        ("state", pa.string()),
    ],
    "flow": [("handle", pa.int64()), ("delivery_count", pa.int64()), ("link_credit", pa.int64())],
    "detach": [("handle", pa.int64())],
}
HAND = pa.schema(
    [
        ("capture", pa.string()),
        ("connection", pa.string()),
        ("direction", pa.string()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("offset", pa.int64()),
        ("size", pa.int32()),
        ("channel", pa.int32()),
        ("payload", pa.binary()),
        *[(name, pa.struct(fields)) for name, fields in STRUCTS.items()],
    ]
)
T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
TARGET = '{"amqp:target:list": {"address": "/queue/q", "durable": 0}}'
# (direction, channel, ms, performative, fields, payload bytes)
HAND_EVENTS: list[tuple[str, int, int, str, dict[str, Any], int]] = [
    ("c2s", 0, 0, "begin", {"remote_channel": None}, 0),
    ("s2c", 5, 1, "begin", {"remote_channel": 0}, 0),
    ("c2s", 0, 2, "attach", {"name": "orders", "handle": 0, "role": False, "target": TARGET,
                             "initial_delivery_count": 10}, 0),
    ("s2c", 5, 3, "attach", {"name": "orders", "handle": 7, "role": True}, 0),
    ("s2c", 5, 4, "flow", {"handle": 7, "delivery_count": None, "link_credit": 3}, 0),
    ("c2s", 0, 100, "transfer", {"handle": 0, "delivery_id": 0, "more": True}, 300),
    ("c2s", 0, 101, "transfer", {"handle": 0, "delivery_id": None, "more": None}, 50),
    ("c2s", 0, 110, "transfer", {"handle": 0, "delivery_id": 1}, 20),
    ("c2s", 0, 120, "transfer", {"handle": 0, "delivery_id": 2, "settled": True}, 10),
    ("s2c", 5, 130, "disposition", {"role": True, "first": 0, "last": 1,
                                   "state": '{"amqp:modified:list": {"delivery_failed": true}}'}, 0),
    ("s2c", 5, 131, "flow", {"handle": 7, "delivery_count": 13, "link_credit": 2}, 0),
    ("c2s", 0, 140, "disposition", {"role": False, "first": 0, "last": 1, "settled": True}, 0),
    ("c2s", 0, 150, "detach", {"handle": 0}, 0),
    ("c2s", 0, 160, "attach", {"name": "audit", "handle": 0, "role": False}, 0),
    ("s2c", 5, 161, "attach", {"name": "audit", "handle": 8, "role": True}, 0),
    ("c2s", 0, 200, "transfer", {"handle": 0, "delivery_id": 3}, 5),
    ("s2c", 5, 205, "disposition", {"role": True, "first": 3,
                                   "state": '{"amqp:rejected:list": {"error": null}}'}, 0),
]  # fmt: skip


@pytest.fixture(scope="module")
def hand_sections(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> list[Section]:
    offsets: Counter[str] = Counter()
    rows = []
    for direction, channel, ms, performative, fields, payload in HAND_EVENTS:
        size = 40 + payload
        rows.append(
            {
                "capture": "cap",
                "connection": "c1",
                "direction": direction,
                "timestamp": T0 + timedelta(milliseconds=ms),
                "offset": offsets[direction],
                "size": size,
                "channel": channel,
                "payload": b"x" * payload,
                performative: fields,
            }
        )
        offsets[direction] += size
    folder = tmp_path_factory.mktemp("hand") / "frames"
    folder.mkdir()
    pq.write_table(pa.Table.from_pylist(rows, HAND), folder / "part-0.parquet")
    frames = spark.read.parquet(str(folder)).withColumn("ts", F.unix_micros("timestamp"))
    assert amqp_1_0.applies(set(frames.columns))
    return amqp_1_0.Analyses(find("amqp-1-0")).sections(frames, True)


def _hand(sections: list[Section], title: str) -> dict[str, tuple[Any, ...]]:
    (section,) = [s for s in sections if s.title == title]
    assert section.table is not None, section.notes
    return {row[0].removeprefix("cap/c1 "): row[1:] for row in section.table.values}  # type: ignore[union-attr]


def test_links_across_paired_channels_and_a_reused_handle(hand_sections: list[Section]) -> None:
    rows = _hand(hand_sections, "Transfers and bytes per link")
    # address, direction, deliveries, transfer frames, bytes, payload
    assert rows == {
        "orders": ("/queue/q", "client → server", 3, 4, 4 * 40 + 380, 380),
        "audit": (None, "client → server", 1, 1, 45, 5),
    }
    multi = _hand(hand_sections, "Multi-frame transfers")
    assert multi == {"orders": (0, 2 * 40, 2, 350, "no")}  # after the Begin and the Attach


def test_outcomes_and_latency_by_delivery_id(hand_sections: list[Section]) -> None:
    rows = _hand(hand_sections, "Settlement outcomes per link")
    # deliveries, accepted, rejected, released, modified, settled on sending, no outcome
    assert rows == {"orders": (3, 0, 0, 0, 2, 1, 0), "audit": (1, 0, 1, 0, 0, 0, 0)}
    latency = _hand(hand_sections, "Transfer-to-disposition latency")
    # the modified disposition answers delivery 0 (first frame at 100 ms) and 1 (110 ms) at
    # 130 ms; the sender's own Disposition at 140 ms is no answer
    assert latency["orders"][:2] == (3, 2)
    assert latency["orders"][2] in (20.0, 30.0) and latency["orders"][4] == 30.0
    assert latency["audit"] == (1, 1, 5.0, 5.0, 5.0)


def test_credit_from_the_receivers_flows(hand_sections: list[Section]) -> None:
    rows = _hand(hand_sections, "Credit granted and used per link")
    # the last Flow: delivery_count 13 + link_credit 2 - initial 10 = 5 granted, 3 used
    assert rows == {"orders": (2, 5, 3, 2)}
