"""`specgen report` on a hand-built frames/rejects fixture: exact aggregates, a page that fetches
nothing, and charts that headless Chromium actually draws.

`spark` is the session-wide fixture from tests/spark_fixtures.py; the report takes the session
the process already runs, so the JVM starts once per test run."""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from chromium import DumpDom
from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F

from specgen import report
from specgen.analyses import for_columns
from specgen.cli import main
from specgen.pipeline.sections import MAX_POINTS, bucket_width, width_text
from specgen.registry import find

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
T0_US = int(T0.timestamp() * 1_000_000)
CHARTS = (
    "chart-command-mix",
    "chart-response-codes",
    "chart-request-latency",
    "chart-publish-confirm",
    "chart-frames-over-time",
    "chart-bytes-over-time",
)

PUBLISHING_ID = pa.decimal128(20, 0)  # what `specgen decode` writes for a uint64
PUBLISHED = pa.struct([("publishing_id", PUBLISHING_ID), ("message", pa.binary())])
PUBLISHED_V2 = pa.struct(
    [("publishing_id", PUBLISHING_ID), ("filter_value", pa.string()), ("message", pa.binary())]
)
FRAMES = pa.schema(
    [
        ("capture", pa.string()),
        ("connection", pa.string()),
        ("direction", pa.string()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("offset", pa.int64()),
        ("size", pa.int32()),
        ("key", pa.int32()),
        ("command", pa.string()),
        ("message", pa.string()),
        ("kind", pa.string()),
        ("version", pa.int32()),
        ("correlation_id", pa.int64()),
        ("response_code", pa.int32()),
        # decimal(20,0) publishing ids in the publishes, as decode writes them, but long ones in
        # the confirms and errors: the report has to join the two either way
        (
            "publish_v1",
            pa.struct([("publisher_id", pa.int16()), ("published_messages", pa.list_(PUBLISHED))]),
        ),
        (
            "publish_v2",
            pa.struct(
                [("publisher_id", pa.int16()), ("published_messages", pa.list_(PUBLISHED_V2))]
            ),
        ),
        (
            "publish_confirm",
            pa.struct([("publisher_id", pa.int16()), ("publishing_ids", pa.list_(pa.int64()))]),
        ),
        (
            "publish_error",
            pa.struct(
                [
                    ("publisher_id", pa.int16()),
                    (
                        "publishing_error",
                        pa.list_(pa.struct([("publishing_id", pa.int64()), ("code", pa.int32())])),
                    ),
                ]
            ),
        ),
    ]
)
REJECTS = pa.schema(
    [
        ("capture", pa.string()),
        ("connection", pa.string()),
        ("direction", pa.string()),
        ("offset", pa.int64()),
        ("size", pa.int64()),
        ("bytes", pa.binary()),
        ("error", pa.string()),
        ("field", pa.string()),
        ("error_offset", pa.int32()),
    ]
)

# (connection, direction, ms after T0, message, size, correlation id, response code, structs)
# Every request answered here is answered exactly 5 ms later; confirms come 10, 10 and 20 ms
# after their publishes; one publishing id fails, one is never confirmed; Close goes unanswered.
EVENTS: list[tuple[str, str, int, str, int, int | None, int | None, dict[str, Any]]] = [
    ("c1", "c2s", 0, "PeerPropertiesRequest", 60, 1, None, {}),
    ("c1", "s2c", 5, "PeerPropertiesResponse", 200, 1, 1, {}),
    ("c1", "c2s", 10, "SaslHandshakeRequest", 12, 2, None, {}),
    ("c1", "s2c", 15, "SaslHandshakeResponse", 30, 2, 1, {}),
    ("c1", "s2c", 20, "TuneRequest", 16, None, None, {}),
    ("c1", "c2s", 21, "TuneResponse", 16, None, None, {}),
    ("c1", "c2s", 30, "OpenRequest", 20, 3, None, {}),
    ("c1", "s2c", 35, "OpenResponse", 40, 3, 1, {}),
    ("c1", "c2s", 40, "DeclarePublisherRequest", 30, 4, None, {}),
    ("c1", "s2c", 45, "DeclarePublisherResponse", 14, 4, 1, {}),
    (
        "c1",
        "c2s",
        100,
        "PublishV1",
        150,
        None,
        None,
        {
            "publish_v1": {
                "publisher_id": 1,
                "published_messages": [{"publishing_id": i, "message": b"m"} for i in (1, 2, 3)],
            }
        },
    ),
    (
        "c1",
        "s2c",
        110,
        "PublishConfirm",
        30,
        None,
        None,
        {"publish_confirm": {"publisher_id": 1, "publishing_ids": [1, 2]}},
    ),
    (
        "c1",
        "s2c",
        112,
        "PublishError",
        25,
        None,
        None,
        {
            "publish_error": {
                "publisher_id": 1,
                "publishing_error": [{"publishing_id": 3, "code": 0x12}],
            }
        },
    ),
    ("c1", "c2s", 200, "CreateRequest", 40, 5, None, {}),
    ("c1", "s2c", 205, "CreateResponse", 14, 5, 5, {}),
    ("c1", "c2s", 1500, "Heartbeat", 6, None, None, {}),
    ("c1", "s2c", 1500, "Heartbeat", 6, None, None, {}),
    ("c2", "c2s", 0, "PeerPropertiesRequest", 60, 1, None, {}),
    ("c2", "s2c", 5, "PeerPropertiesResponse", 200, 1, 1, {}),
    ("c2", "c2s", 50, "DeclarePublisherRequest", 30, 2, None, {}),
    ("c2", "s2c", 55, "DeclarePublisherResponse", 14, 2, 1, {}),
    (
        "c2",
        "c2s",
        1000,
        "PublishV2",
        100,
        None,
        None,
        {
            "publish_v2": {
                "publisher_id": 0,
                "published_messages": [
                    {"publishing_id": i, "filter_value": None, "message": b"m"} for i in (10, 11)
                ],
            }
        },
    ),
    (
        "c2",
        "s2c",
        1020,
        "PublishConfirm",
        22,
        None,
        None,
        {"publish_confirm": {"publisher_id": 0, "publishing_ids": [10]}},
    ),
    ("c2", "c2s", 2000, "CloseRequest", 20, 3, None, {}),
]


def _command_and_kind(message: str) -> tuple[str, str, int]:
    for suffix, kind in (("Request", "request"), ("Response", "response")):
        if message.endswith(suffix):
            return message.removesuffix(suffix), kind, 1
    if message.startswith("Publish") and message[-2:] in ("V1", "V2"):
        return "Publish", "oneway", int(message[-1])
    return message, "oneway", 1


def write_fixture(out: Path, timestamps: bool = True) -> Path:
    rows = []
    offsets: dict[tuple[str, str], int] = {}
    for connection, direction, ms, message, size, correlation_id, code, structs in EVENTS:
        command, kind, version = _command_and_kind(message)
        offset = offsets.get((connection, direction), 0)
        offsets[connection, direction] = offset + size
        rows.append(
            {
                "capture": "cap1",
                "connection": connection,
                "direction": direction,
                "timestamp": T0 + timedelta(milliseconds=ms) if timestamps else None,
                "offset": offset,
                "size": size,
                "key": 0,  # not read by the report
                "command": command,
                "message": message,
                "kind": kind,
                "version": version,
                "correlation_id": correlation_id,
                "response_code": code,
                **structs,
            }
        )
    (out / "frames").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, FRAMES), out / "frames" / "part-0.parquet")
    reject = {
        "capture": "cap1",
        "connection": "c2",
        "direction": "s2c",
        "offset": 236,
        "size": 50,
        "bytes": b"\x00" * 50,
        # markup in a text field: the page must show it, escaped, not run it
        "error": "frame ends inside DeliverV1.chunk <script>alert(1)</script>",
        "field": "DeliverV1.chunk",
        "error_offset": 30,
    }
    (out / "rejects").mkdir()
    pq.write_table(pa.Table.from_pylist([reject], REJECTS), out / "rejects" / "part-0.parquet")
    return out


@dataclass(frozen=True)
class Run:
    out: Path
    code: int
    text: str

    def section(self, title: str) -> tuple[list[list[str]], list[str]]:
        """(rows without the header, notes) of one section of the terminal output."""
        lines = self.text.split(f"\n{title}\n{'=' * len(title)}\n", 1)[1].split("\n\n", 1)[0]
        rows, notes = [], []
        body = lines.splitlines()
        if len(body) > 1 and set(body[1]) <= {"-", " "}:
            rows = [re.split(r" {2,}", line.strip()) for line in body[2:] if "  " in line]
            notes = body[2 + len(rows) :]
        else:
            notes = body
        return rows, notes


def _run(out: Path, *options: str) -> Run:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(["report", str(out), *options])
    return Run(out, code, buffer.getvalue())


@pytest.fixture(scope="module")
def run(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Run:
    out = write_fixture(tmp_path_factory.mktemp("report"))
    return _run(out, "--json", str(out / "report.json"))


@pytest.fixture(scope="module")
def run_untimed(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Run:
    out = write_fixture(tmp_path_factory.mktemp("untimed"), timestamps=False)
    return _run(out, "--html", str(out / "pages" / "untimed.html"))


def test_totals(run: Run) -> None:
    assert run.code == 0
    rows, _ = run.section("Totals")
    assert dict(rows) == {
        "captures": "1",
        "connections": "2",
        "frames": "24",
        "bytes": "1155",
        "bytes client → server": "544",
        "bytes server → client": "611",
        "rejects": "1",
        "rejected bytes": "50",
        "first frame (UTC)": "2024-05-01T12:00:00.000+00:00",
        "last frame (UTC)": "2024-05-01T12:00:02.000+00:00",
        "duration s": "2.000",
    }


def test_command_mix(run: Run) -> None:
    rows, _ = run.section("Command mix")
    # busiest first, ties by name
    assert rows[:3] == [
        ["DeclarePublisher", "DeclarePublisherRequest", "c2s", "2", "60"],
        ["DeclarePublisher", "DeclarePublisherResponse", "s2c", "2", "28"],
        ["PeerProperties", "PeerPropertiesRequest", "c2s", "2", "120"],
    ]
    assert ["Publish", "PublishV1", "c2s", "1", "150"] in rows
    assert ["Publish", "PublishV2", "c2s", "1", "100"] in rows
    assert ["Heartbeat", "Heartbeat", "s2c", "1", "6"] in rows
    assert sum(int(r[3]) for r in rows) == 24


def test_response_codes_have_names(run: Run) -> None:
    rows, notes = run.section("Response codes per command")
    assert rows == [
        ["Create", "5", "STREAM_ALREADY_EXISTS", "1"],
        ["DeclarePublisher", "1", "OK", "2"],
        ["Open", "1", "OK", "1"],
        ["PeerProperties", "1", "OK", "2"],
        ["PublishError", "18", "PUBLISHER_DOES_NOT_EXIST", "1"],
        ["SaslHandshake", "1", "OK", "1"],
    ]
    assert notes == ["PublishError counts failed publishing ids, not frames"]


def test_request_latency_is_matched_by_correlation_id(run: Run) -> None:
    rows, _ = run.section("Request latency per command")
    # command, requests, unanswered, timed, p50, p95, p99; Tune has no correlation id
    assert rows == [
        ["DeclarePublisher", "2", "0", "2", "5.000", "5.000", "5.000"],
        ["PeerProperties", "2", "0", "2", "5.000", "5.000", "5.000"],
        ["Close", "1", "1", "0", "-", "-", "-"],
        ["Create", "1", "0", "1", "5.000", "5.000", "5.000"],
        ["Open", "1", "0", "1", "5.000", "5.000", "5.000"],
        ["SaslHandshake", "1", "0", "1", "5.000", "5.000", "5.000"],
    ]


def test_publish_to_confirm(run: Run) -> None:
    rows, _ = run.section("Publish-to-confirm latency")
    assert rows == [
        ["cap1/c1 publisher 1", "3", "2", "1", "1", "10.000", "10.000", "10.000"],
        ["cap1/c2 publisher 0", "2", "1", "1", "0", "20.000", "20.000", "20.000"],
        ["all", "5", "3", "2", "1", "10.000", "20.000", "20.000"],
    ]


def test_connections_and_rejects(run: Run) -> None:
    rows, notes = run.section("Connections")
    assert rows == [
        ["cap1", "c1", "17", "334", "375", "0", "2024-05-01T12:00:00.000+00:00", "1.500"],
        ["cap1", "c2", "7", "210", "236", "1", "2024-05-01T12:00:00.000+00:00", "2.000"],
    ]
    assert notes == ["all 2 connections"]
    rows, _ = run.section("Rejects")
    assert rows == [
        [
            "frame",
            "frame ends inside DeliverV1.chunk <script>alert(1)</script>",
            "DeliverV1.chunk",
            "1",
            "50",
        ]
    ]


def test_over_time_buckets_are_chosen_from_the_span(run: Run) -> None:
    """The fixture spans 2 s: 50 ms buckets, 41 of them (20 ms would make 101)."""
    rows, notes = run.section("Frames and bytes over time")
    assert notes == [
        "50 ms buckets; per connection for the 2 busiest connections by bytes",
        "the table lists the buckets with frames, the charts every bucket",
    ]
    frames: Counter[int] = Counter()
    size: Counter[int] = Counter()
    for _, _, ms, _, n, *_ in EVENTS:
        frames[ms // 50] += 1
        size[ms // 50] += n
    start = T0.timestamp()
    assert rows == [
        [
            datetime.fromtimestamp(start + b * 0.05, UTC).isoformat(timespec="milliseconds"),
            str(frames[b]),
            str(size[b]),
            f"{frames[b] * 20:.3f}",
            f"{size[b] * 20:.3f}",
        ]
        for b in sorted(frames)
    ]
    html = (run.out / "report.html").read_text(encoding="utf-8")
    # the chart's total frames per second: every bucket, the idle ones as zeros
    assert '"name": "total", "type": "scatter", "x": ["2024-05-01T12:00:00.000+00:00"' in html
    every = [float(frames[b] * 20) for b in range(41)]
    assert f'"y": {json.dumps(every)}' in html


def test_the_over_time_data_is_in_the_json(run: Run) -> None:
    data = json.loads((run.out / "report.json").read_text(encoding="utf-8"))
    (section,) = [s for s in data["sections"] if s["title"] == "Frames and bytes over time"]
    assert section["columns"] == ["bucket start (UTC)", "frames", "bytes", "frames/s", "bytes/s"]
    assert sum(row[1] for row in section["rows"]) == len(EVENTS)
    assert sum(row[2] for row in section["rows"]) == sum(e[4] for e in EVENTS)


@pytest.mark.parametrize(
    ("span_us", "width_us", "text"),
    [
        (0, 1_000, "1 ms"),
        (99_000, 1_000, "1 ms"),
        (121_336, 2_000, "2 ms"),  # the AMQP 1.0 sample
        (2_000_000, 50_000, "50 ms"),
        (99_000_000, 1_000_000, "1 s"),
        (3_600_000_000, 60_000_000, "60 s"),
        (86_400_000_000, 900_000_000, "900 s"),
    ],
)
def test_bucket_widths(span_us: int, width_us: int, text: str) -> None:
    width = bucket_width(T0_US, T0_US + span_us)
    assert (width, width_text(width)) == (width_us, text)
    assert span_us / width < MAX_POINTS


def test_reply_code_zero_is_none_and_not_an_error(spark: SparkSession) -> None:
    """pika closes a channel with reply code 0, a code the AMQP 0-9-1 spec does not name."""
    base = spark.createDataFrame(
        [("Channel.Close", 0), ("Channel.Close", 200), ("Channel.Close", 404)],
        "command STRING, response_code INT",
    )
    plugins = for_columns({"basic_publish", "channel"}, find("amqp-0-9-1"))
    # the counts as the report's summary aggregate collects them
    codes = [Row(command=c, response_code=r, frames=1) for c, r in base.collect()]
    section = report._response_codes(base, codes, base, plugins)
    assert section.table is not None
    assert section.table.rows == [
        ("Channel.Close", "0", "none", "1"),
        ("Channel.Close", "200", "REPLY_SUCCESS", "1"),
        ("Channel.Close", "404", "NOT_FOUND", "1"),
    ]
    (chart,) = section.charts
    colours = {t["name"]: t["marker"]["color"] for t in chart.figure["data"]}
    assert colours == {
        "0 none": report.NO_CODE_COLOUR,
        "200 REPLY_SUCCESS": report.OK_COLOUR,
        "404 NOT_FOUND": report.ERROR_COLOURS[0],
    }


def test_without_timestamps_latency_sections_say_so(run_untimed: Run) -> None:
    assert run_untimed.code == 0
    for title in ("Request latency per command", "Publish-to-confirm latency"):
        _, notes = run_untimed.section(title)
        assert "no timestamps in this capture" in notes
    rows, _ = run_untimed.section("Request latency per command")
    assert ["Close", "1", "1", "0", "-", "-", "-"] in rows
    _, notes = run_untimed.section("Frames and bytes over time")
    assert notes == ["no timestamps in this capture"]
    assert not (run_untimed.out / "report.html").exists()
    html = (run_untimed.out / "pages" / "untimed.html").read_text(encoding="utf-8")
    assert html.count('class="chart"') == 2  # command mix and response codes only


def test_a_capture_without_publishes_says_so(spark: SparkSession, run: Run) -> None:
    no_rows = spark.read.parquet(str(run.out / "frames")).where("command != 'Publish'")
    from specgen.analyses import rabbitmq_stream

    section = rabbitmq_stream._publish_confirm(
        no_rows.withColumn("ts", F.lit(None).cast("long")), True
    )
    assert (section.table, section.notes) == (None, ["no Publish frames in this capture"])


class _References(HTMLParser):
    """Every attribute that could make a browser fetch something."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str, str]] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name in ("src", "href", "srcset", "action", "data", "poster") and value:
                self.urls.append((tag, name, value))


def test_rejected_bytes_are_the_bytes_rejects_cover(spark: SparkSession) -> None:
    """An unframed span claims any size (2 GiB here for 8 bytes): bytes come from `length`;
    tables written before decode recorded it have `size` only, which was the length then."""
    rows = [
        ("frame", "frame ends inside X", "X", 50, 50),
        ("unframed", "size prefix 2147483648 is outside 4..67108864", "frame.size", 2**31 + 4, 8),
    ]
    rejects = spark.createDataFrame(
        rows, "kind STRING, error STRING, field STRING, size BIGINT, length BIGINT"
    )
    section = report._rejects(report._rejected(report._covered(rejects)))
    assert section.table is not None
    assert sorted(section.table.rows) == [
        ("frame", "frame ends inside X", "X", "1", "50"),
        ("unframed", "size prefix 2147483648 is outside 4..67108864", "frame.size", "1", "8"),
    ]
    # a table from before rejects had a kind: every row was a rejected frame
    section = report._rejects(report._rejected(report._covered(rejects.drop("kind"))))
    assert section.table is not None
    assert {r[0] for r in section.table.rows} == {"frame"}
    old = report._covered(rejects.drop("length"))
    assert old.agg(F.sum("length")).first()[0] == 2**31 + 4 + 50


def test_page_is_self_contained(run: Run) -> None:
    html = (run.out / "report.html").read_text(encoding="utf-8")
    parser = _References()
    parser.feed(html)
    assert parser.urls == []
    assert "link" not in parser.tags
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    outside_scripts = re.sub(r"<script\b.*?</script>", "", html, flags=re.S)
    assert "http://" not in outside_scripts and "https://" not in outside_scripts
    assert "url(" not in outside_scripts
    assert html.count('class="chart"') == len(CHARTS)


def test_text_is_escaped(run: Run) -> None:
    html = (run.out / "report.html").read_text(encoding="utf-8")
    assert "inside DeliverV1.chunk &lt;script&gt;alert(1)&lt;/script&gt;</td>" in html
    assert "<script>alert(1)" not in html


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda p: p / "missing", "no such folder"),
        (lambda p: p, "is empty"),
        (lambda p: (p / "rejects").mkdir() or p, "no frames table"),
    ],
)
def test_input_errors_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setup: Any, message: str
) -> None:
    assert main(["report", str(setup(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert err.startswith("specgen: ") and message in err
    assert err.count("\n") == 1


def test_charts_draw_in_headless_chromium(run: Run, tmp_path: Path, chromium: DumpDom) -> None:
    dom = chromium(run.out / "report.html", tmp_path / "profile", 10000)
    # the page lists every fetch its Content-Security-Policy refused; there must be none
    assert re.search(r'<pre id="csp-violations"></pre>', dom), dom[dom.find("csp-violations") :][
        :500
    ]
    found = {m.group(2): m for m in re.finditer(r'<div class="([^"]*)" id="(chart-[^"]+)"', dom)}
    assert sorted(found) == sorted(CHARTS)
    bounds = sorted(
        [m.start() for m in found.values()] + [m.start() for m in re.finditer("</section>", dom)]
    )
    for chart, m in found.items():
        drawn = dom[m.start() : next(b for b in bounds if b > m.start())]
        # plotly.js marks a div it plotted, draws its SVG, and a trace's bars or line inside
        assert "js-plotly-plot" in m.group(1), chart
        assert 'class="main-svg"' in drawn, chart
        assert 'class="point"' in drawn or 'class="js-line"' in drawn, chart


def test_report_says_what_it_computes_on_stderr(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = write_fixture(tmp_path / "out")
    assert main(["report", str(out)]) == 0
    captured = capsys.readouterr()
    titles = re.findall(r"^(.+)\n=+$", captured.out, flags=re.MULTILINE)
    assert len(titles) >= 8
    progress = captured.err.splitlines()
    # the session runs already (the fixture's): no start-up lines, then one line per section
    assert progress[0] == (
        f"report: {len(EVENTS)} frames in 2 connections in {out / 'frames'}; computing the sections"
    )
    assert [re.sub(r" \(\d+\.\d s\)$", "", ln) for ln in progress[1:]] == [
        f"report: {t}" for t in titles
    ]


def test_spark_draws_no_stage_bars_into_a_log(spark: SparkSession) -> None:
    """The session was built with stderr captured (not a terminal): Spark's carriage-return
    stage bars would be glued to the next line of a log."""
    if sys.stderr.isatty():
        pytest.skip("stderr is a terminal here (pytest -s)")
    assert spark.sparkContext.getConf().get("spark.ui.showConsoleProgress") == "false"


def test_small_tables_report_the_same_figures_with_their_queries_interpreted(
    spark: SparkSession, run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run` had its queries interpreted (its tables are far below SMALL_QUERIES rows); the same
    tables with compiled queries give the same JSON, and the session keeps its own settings."""
    from specgen.pipeline import spark as spark_module

    assert report._parquet_rows(run.out / "frames") <= spark_module.SMALL_QUERIES
    before = {key: spark.conf.get(key, None) for key in spark_module.INTERPRETED}
    with spark_module.interpreted(spark):
        assert {k: spark.conf.get(k) for k in spark_module.INTERPRETED} == (
            spark_module.INTERPRETED
        )
    assert {key: spark.conf.get(key, None) for key in spark_module.INTERPRETED} == before
    monkeypatch.setattr(spark_module, "SMALL_QUERIES", -1)  # every table is big: compiled
    compiled = _run(run.out, "--json", str(tmp_path / "compiled.json"), "--html",
                    str(tmp_path / "compiled.html"))  # fmt: skip
    assert compiled.code == 0
    assert json.loads((tmp_path / "compiled.json").read_text()) == json.loads(
        (run.out / "report.json").read_text()
    )
