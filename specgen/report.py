"""`specgen report`: what a decoded capture says, from the Parquet tables `specgen decode` wrote.

Every aggregate is a Spark DataFrame operation; only aggregated rows (a few hundred at most) come
back to the driver. The result prints as plain text tables and is written as one HTML page with
plotly.js inlined and a Content-Security-Policy that forbids every fetch, so the page opens
offline and loads nothing from anywhere; `--json` writes the same tables' values for tools.

Input contract (OUT_DIR/frames): capture, connection, direction ("c2s"/"s2c"), timestamp (UTC,
nullable), offset, size, command, message, kind ("request"/"response"/"oneway"), correlation_id
and response_code when the protocol's fields have those roles, and one nullable struct column per
message class. Sections beyond the generic ones (command mix, response codes and request latency
when the table has their columns, traffic over time, connections, rejects) come from the
protocols' analyses in `specgen/analyses/`, each run when the frames table has the columns it
reads. OUT_DIR/rejects is optional.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import reduce
from itertools import cycle
from pathlib import Path
from typing import Any, TextIO

import jinja2
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
from plotly.offline import get_plotlyjs  # type: ignore[import-untyped]
from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType, TimestampType

from specgen import analyses
from specgen.locations import TEMPLATES as ALL_TEMPLATES
from specgen.pipeline import spark, unfinished
from specgen.pipeline.columns import SPEC_KEY
from specgen.pipeline.sections import (
    DIRECTIONS,
    NO_TIMESTAMPS,
    PERCENTILES,
    TABLE_ROWS,
    Analysis,
    Chart,
    Section,
    Table,
    bucket_width,
    chart_layout,
    connection_label,
    iso_time,
    ordered,
    percentiles,
    quantiles,
    sum_if,
    tabulate,
    width_text,
)
from specgen.progress import Progress, seconds
from specgen.registry import SpecVersion, find

TEMPLATES = ALL_TEMPLATES / "report"
CHART_CONNECTIONS = 8
OK_COLOUR = "#2ca02c"
NO_CODE_COLOUR = "#7f7f7f"  # grey: no code is neither success nor an error
# no green among them; a capture rarely shows more error codes than this, else they repeat
ERROR_COLOURS = ("#d62728", "#ff7f0e", "#8c564b", "#e377c2", "#bcbd22", "#9467bd")
FRAME_COLUMNS = (
    "capture",
    "connection",
    "direction",
    "timestamp",
    "offset",
    "size",
    "command",
    "message",
    "kind",
    "correlation_id",
    "response_code",
)
REJECT_COLUMNS = ("capture", "connection", "size", "error", "field")


class ReportError(ValueError):
    """OUT_DIR holds no usable frames table; the message says what is wrong and where."""


@dataclass(frozen=True)
class Report:
    source: str
    sections: list[Section]

    @property
    def charts(self) -> list[Chart]:
        return [c for s in self.sections for c in s.charts]


def command(
    out_dir: Path, html: Path | None, master: str | None, json_to: str | None = None
) -> int:
    """`specgen report`: the tables on stdout, the page at `html` (default OUT_DIR/report.html),
    and with `json_to` the tables as JSON in that file, or alone on stdout when it is "-"."""
    frames_path, rejects_path = _inputs(out_dir)
    progress = Progress("report")
    report = build(_session(master, progress), frames_path, rejects_path, progress)
    # JSON on stdout is for a pipe: nothing else may share it
    text = sys.stderr if json_to == "-" else sys.stdout
    if json_to != "-":
        print(format_text(report), end="")
    target = html if html is not None else out_dir / "report.html"
    write_html(report, target)
    if json_to == "-":
        write_json(report, sys.stdout)
    elif json_to is not None:
        _write_json_file(report, Path(json_to))
    print(f"\nreport: {target}" + (f", {json_to}" if json_to not in (None, "-") else ""), file=text)
    return 0


def _inputs(out_dir: Path) -> tuple[Path, Path | None]:
    """Checked before Spark starts, so a wrong path costs no JVM start-up."""
    if not out_dir.is_dir():
        raise ReportError(f"{out_dir}: no such folder")
    if not any(out_dir.iterdir()):
        raise ReportError(f"{out_dir} is empty: run `specgen decode` into it first")
    unfinished_run = unfinished.why(out_dir)
    if unfinished_run is not None:  # partial tables would make a report that looks whole
        raise ReportError(f"{out_dir}: not a finished decode: {unfinished_run}")
    frames = out_dir / "frames"
    if not frames.exists():
        raise ReportError(f"{out_dir}: no frames table ({frames} is what `specgen decode` writes)")
    rejects = out_dir / "rejects"
    return frames, rejects if rejects.exists() else None


def _session(master: str | None, progress: Progress | None = None) -> SparkSession:
    """The project's session (or the one this process already runs), failures as one line."""
    try:
        return spark.start(master, progress)
    except (spark.Unavailable, spark.MasterUnreachable) as e:
        raise ReportError(str(e)) from None


def _read(session: SparkSession, path: Path, columns: Sequence[str]) -> DataFrame:
    try:
        table = session.read.parquet(str(path))
    except AnalysisException as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ReportError(f"{path}: cannot read it as Parquet: {first}") from e
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ReportError(
            f"{path}: no column {', '.join(missing)}: not what `specgen decode` writes"
        )
    return table


ROLE_COLUMNS = ("correlation_id", "response_code")
"""Columns a protocol's frames table has when some of its fields have that role; a protocol
without them (no correlation ids in AMQP 0-9-1) reads them as null."""


def build(
    session: SparkSession,
    frames_path: Path,
    rejects_path: Path | None,
    progress: Progress | None = None,
) -> Report:
    """Every section, each computed with Spark in turn (with `progress`, a line per section:
    a report takes most of a minute); on tables of at most `spark.SMALL_QUERIES` rows, with
    the queries `spark.interpreted`."""
    rows = sum(_parquet_rows(p) for p in (frames_path, rejects_path) if p is not None)
    small = rows <= spark.SMALL_QUERIES
    with spark.interpreted(session) if small else contextlib.nullcontext():
        return _build(session, frames_path, rejects_path, progress)


def _parquet_rows(path: Path) -> int:
    """The rows of a table's Parquet parts, from their footers (nothing else is read); a part
    that cannot be read counts as many rows (Spark then says what is wrong with it)."""
    rows = 0
    for part in path.rglob("*.parquet"):
        try:
            rows += pq.read_metadata(part).num_rows
        except (OSError, pa.ArrowException):
            return spark.SMALL_QUERIES + 1
    return rows


def _build(
    session: SparkSession,
    frames_path: Path,
    rejects_path: Path | None,
    progress: Progress | None,
) -> Report:
    frames = _read(session, frames_path, [c for c in FRAME_COLUMNS if c not in ROLE_COLUMNS])
    # a protocol whose fields have no such role (AMQP 1.0 has neither) gets no section on it
    roles = {role for role in ROLE_COLUMNS if role in frames.columns}
    for role in ROLE_COLUMNS:
        if role not in frames.columns:
            frames = frames.withColumn(role, F.lit(None).cast("long"))
    if not isinstance(frames.schema["timestamp"].dataType, TimestampType):
        raise ReportError(
            f"{frames_path}: column timestamp is {frames.schema['timestamp'].dataType.simpleString()},"
            " not a timestamp"
        )
    frames = frames.withColumn("ts", F.unix_micros("timestamp"))
    decoded_with = _decoded_with(frames_path)  # before any Spark job: it can refuse the table
    rejects = _read(session, rejects_path, REJECT_COLUMNS) if rejects_path is not None else None
    if rejects is not None:
        rejects = _covered(rejects)
    # the narrow columns every section reads; the struct columns stay on disk until the
    # analyses that read them need them
    base = frames.select(*[c for c in FRAME_COLUMNS if c != "timestamp"], "ts").persist()
    try:
        summary = _summary(base, "response_code" in roles)
        totals = summary.totals
        if totals is None or totals["frames"] == 0:
            raise ReportError(f"{frames_path} holds no frames")
        rejected = _rejected(rejects)
        timed = totals["timed"] > 0
        connections, count, top = _connections(base, rejects, timed)
        # protocol-specific analyses, each run when the frames table has its columns
        plugins = analyses.for_columns(set(frames.columns), decoded_with)
        if progress is not None:
            progress.line(
                f"{totals['frames']:,} frames in {count:,} connections in {frames_path}; "
                "computing the sections"
            )
        steps: list[Callable[[], Sequence[Section]]] = [
            lambda: [_totals(totals, rejected.total, count)],
            lambda: [_command_mix(summary.mix)],
            lambda: (
                [_response_codes(base, summary.codes, frames, plugins)]
                if "response_code" in roles
                else []
            ),
            lambda: [_request_latency(base, timed)] if "correlation_id" in roles else [],
            *[functools.partial(plugin.sections, frames, timed) for plugin in plugins],
            lambda: [
                (
                    _over_time(base, totals, top)
                    if timed
                    else Section("Frames and bytes over time", notes=[NO_TIMESTAMPS])
                )
            ],
            lambda: [connections],
            lambda: [_rejects(rejected)],
        ]
        sections: list[Section] = []
        for step in steps:
            began = time.monotonic()
            for section in step():
                sections.append(section)
                if progress is not None:
                    progress.line(f"{section.title} ({seconds(began)})")
        return Report(str(frames_path.parent), sections)
    finally:
        base.unpersist()


def _decoded_with(frames_path: Path) -> SpecVersion | None:
    """The spec version the frames table was decoded with, as its Parquet metadata names it
    (the generated FRAMES_SCHEMA carries SPEC_KEY, and one job writes every part with it); None
    when it does not say."""
    parts = [frames_path] if frames_path.is_file() else sorted(frames_path.rglob("*.parquet"))
    try:
        metadata = (pq.read_schema(parts[0]).metadata or {}) if parts else {}
    except (OSError, pa.ArrowException):
        return None  # Spark read the table; a part pyarrow cannot open names no spec
    if SPEC_KEY not in metadata:
        return None
    name = metadata[SPEC_KEY].decode()
    try:
        return find(name)
    except LookupError:
        raise ReportError(
            f"{frames_path}: decoded with {name}, a spec this specgen does not know"
        ) from None


def _covered(rejects: DataFrame) -> DataFrame:
    """The rejects with `length`, the bytes each covers in its file. Tables written before
    decode recorded it have only `size`, what the size prefix claims, which was the length of
    every reject they hold; an unframed span's claimed size can be anything (2 GiB for 8 bytes)."""
    if "length" in rejects.columns:
        return rejects
    return rejects.withColumn("length", F.col("size"))


def _utc(micros: int | None) -> str:
    return "-" if micros is None else iso_time(micros)


def _when(micros: int | None) -> str | None:
    """A table's time: an ISO string, or no value."""
    return None if micros is None else _utc(micros)


def _seconds(first: int | None, last: int | None) -> float | None:
    return None if first is None or last is None else (last - first) / 1e6


@dataclass(frozen=True)
class _Summary:
    """What one aggregate over `base` gives: the totals row (None when there are no frames), the
    command mix's rows, and the response codes' (command, response_code, n)."""

    totals: Row | None
    mix: list[Row]
    codes: list[Row]


def _summary(base: DataFrame, codes: bool) -> _Summary:
    """Totals, command mix and response code counts in one job: a grouping set each. The mix
    and the codes are a row per command, message, direction and code, few enough to collect
    whole and order on the driver."""
    keys = ["command", "message", "direction", "response_code"]
    sets = [["command", "message", "direction"], []]
    if codes:
        sets.append(["command", "response_code"])
    rows = (
        base.groupingSets(sets, *keys)
        .agg(
            F.grouping_id(*keys).alias("level"),
            F.count("*").alias("frames"),
            F.count("ts").alias("timed"),
            F.min("ts").alias("first"),
            F.max("ts").alias("last"),
            # exact, and a single aggregation stage (countDistinct adds one); captures are few
            F.size(F.collect_set("capture")).alias("captures"),
            F.sum("size").alias("bytes"),
            *[
                sum_if(F.col("direction") == d, F.col("size")).alias(f"bytes_{d}")
                for d in DIRECTIONS
            ],
        )
        .collect()
    )
    mix, total, by_code = 0b0001, 0b1111, 0b0110  # the grouping ids: a bit per key left out
    return _Summary(
        totals=next((r for r in rows if r["level"] == total), None),
        mix=[r for r in rows if r["level"] == mix],
        codes=[r for r in rows if r["level"] == by_code and r["response_code"] is not None],
    )


@dataclass(frozen=True)
class _Rejected:
    """What one aggregate over the rejects gives: their count and bytes (None: no table), and
    their rows by kind, error and field."""

    total: tuple[int, int] | None
    rows: list[Row]


def _rejected(rejects: DataFrame | None) -> _Rejected:
    if rejects is None:
        return _Rejected(None, [])
    # tables written before rejects had a kind held rejected frames only
    kind = F.col("kind") if "kind" in rejects.columns else F.lit("frame")
    keys = ["kind", "error", "field"]
    rows = (
        rejects.select(kind.alias("kind"), "error", "field", "length")
        .groupingSets([keys, []], *keys)
        .agg(
            F.grouping_id().alias("level"), F.count("*").alias("n"), F.sum("length").alias("bytes")
        )
        .collect()
    )
    total = next((r for r in rows if r["level"] != 0), None)
    return _Rejected(
        (total["n"], total["bytes"] or 0) if total is not None else (0, 0),
        [r for r in rows if r["level"] == 0],
    )


def _totals(totals: Row, rej: tuple[int, int] | None, connections: int) -> Section:
    rows: list[tuple[Any, ...]] = [
        ("captures", totals["captures"]),
        ("connections", connections),
        ("frames", totals["frames"]),
        ("bytes", totals["bytes"]),
        ("bytes client → server", totals["bytes_c2s"]),
        ("bytes server → client", totals["bytes_s2c"]),
        ("rejects", rej[0] if rej else 0),
        ("rejected bytes", rej[1] if rej else 0),
    ]
    notes = []
    if totals["timed"]:
        rows += [
            ("first frame (UTC)", _when(totals["first"])),
            ("last frame (UTC)", _when(totals["last"])),
            ("duration s", _seconds(totals["first"], totals["last"])),
        ]
    else:
        notes.append(NO_TIMESTAMPS)
    return Section("Totals", tabulate(("measure", "value"), rows, (False, True)), notes)


def _command_mix(mix: list[Row]) -> Section:
    rows = ordered(mix, ("frames", True), "command", "message", "direction")
    table = tabulate(
        ("command", "message", "direction", "frames", "bytes"),
        [(r["command"], r["message"], r["direction"], r["frames"], r["bytes"]) for r in rows],
        (False, False, False, True, True),
    )
    commands = list(dict.fromkeys(r["command"] for r in rows))  # busiest first
    data = []
    for direction, name in DIRECTIONS.items():
        counts = {c: 0 for c in commands}
        for r in rows:
            if r["direction"] == direction:
                counts[r["command"]] += r["frames"]
        if any(counts.values()):
            data.append({"type": "bar", "name": name, "x": commands, "y": list(counts.values())})
    chart = Chart(
        "chart-command-mix",
        {
            "data": data,
            "layout": chart_layout("Frames per command", "command", "frames", barmode="group"),
        },
    )
    return Section("Command mix", table, charts=[chart])


def _response_codes(
    base: DataFrame, codes: list[Row], frames: DataFrame, plugins: list[Analysis]
) -> Section:
    # the counts the summary collected, as the DataFrame a protocol may recount some of
    collected = base.sparkSession.createDataFrame(
        [(r["command"], r["response_code"], r["frames"]) for r in codes],
        StructType(
            [
                base.schema["command"],
                base.schema["response_code"],
                StructField("n", LongType(), False),
            ]
        ),
    )
    counts = collected
    notes: list[str] = []
    names: dict[int, str] = {}
    ok: set[int] = set()
    for plugin in plugins:
        counts = plugin.response_counts(frames, counts, notes)
        names.update(plugin.code_names)
        ok.update(plugin.ok_codes)

    def _code_name(code: int) -> str:
        # 0 is what a peer writes when it has no code to give (pika's Channel.Close)
        return names.get(code, "none" if code == 0 else f"unknown 0x{code:02x}")

    error_colours = cycle(ERROR_COLOURS)

    def _colour(code: int) -> str:
        if code in ok:
            return OK_COLOUR
        return NO_CODE_COLOUR if code == 0 and code not in names else next(error_colours)

    # a row per command and code, ordered on the driver (a global sort in Spark costs a
    # sampling job and a shuffle); unchanged by the protocol, the rows collected already
    found: Sequence[Any] = (
        [
            {"command": r["command"], "response_code": r["response_code"], "n": r["frames"]}
            for r in codes
        ]
        if counts is collected
        else counts.collect()
    )
    rows = ordered(found, "command", "response_code")
    if not rows:
        return Section("Response codes per command", notes=["no response codes in this capture"])
    table = tabulate(
        ("command", "code", "name", "count"),
        [(r["command"], r["response_code"], _code_name(r["response_code"]), r["n"]) for r in rows],
        (False, True, False, True),
    )
    commands = list(dict.fromkeys(r["command"] for r in rows))
    data = []
    for code in sorted({r["response_code"] for r in rows}):
        by_command = {r["command"]: r["n"] for r in rows if r["response_code"] == code}
        data.append(
            {
                "type": "bar",
                "name": f"{code} {_code_name(code)}",
                "x": commands,
                "y": [by_command.get(c, 0) for c in commands],
                # OK reads as fine at a glance, no code as neither, each error code in a
                # colour of its own
                "marker": {"color": _colour(code)},
            }
        )
    chart = Chart(
        "chart-response-codes",
        {
            "data": data,
            "layout": chart_layout(
                "Response codes per command", "command", "responses", barmode="stack"
            ),
        },
    )
    return Section("Response codes per command", table, notes, [chart])


def _request_latency(base: DataFrame, timed: bool) -> Section:
    title = "Request latency per command"
    keyed = F.col("correlation_id").isNotNull()
    requests = base.filter((F.col("kind") == "request") & keyed).select(
        "capture",
        "connection",
        "command",
        "correlation_id",
        F.col("direction").alias("req_dir"),
        F.col("offset").alias("req_offset"),
        F.col("ts").alias("req_ts"),
    )
    # renamed so the self-join has no ambiguous columns
    responses = base.filter((F.col("kind") == "response") & keyed).select(
        *[
            F.col(c).alias(f"r_{c}")
            for c in ("capture", "connection", "command", "correlation_id", "direction", "ts")
        ]
    )
    on = [
        F.col("capture") == F.col("r_capture"),
        F.col("connection") == F.col("r_connection"),
        F.col("command") == F.col("r_command"),
        F.col("correlation_id") == F.col("r_correlation_id"),
        F.col("req_dir") != F.col("r_direction"),
        # a reused correlation id pairs with the first response that is not older than the request
        F.col("r_ts").isNull() | F.col("req_ts").isNull() | (F.col("r_ts") >= F.col("req_ts")),
    ]
    pairs = (
        requests.join(responses, reduce(lambda a, b: a & b, on), "left")
        .groupBy("capture", "connection", "command", "req_dir", "req_offset", "req_ts")
        .agg(F.min("r_ts").alias("resp_ts"), F.count("r_direction").alias("responses"))
        .withColumn("latency_ms", (F.col("resp_ts") - F.col("req_ts")) / 1000.0)
    )
    rows = (
        pairs.groupBy("command")
        .agg(
            F.count("*").alias("requests"),
            sum_if(F.col("responses") == 0, F.lit(1)).alias("unanswered"),
            F.count("latency_ms").alias("timed"),
            percentiles("latency_ms").alias("p"),
        )
        .collect()
    )
    # a row per command: ordered on the driver (a global sort in Spark is two more jobs)
    rows = ordered(rows, ("requests", True), "command")
    if not rows:
        return Section(title, notes=["no requests with a correlation id in this capture"])
    table = tabulate(
        ("command", "requests", "unanswered", "timed", "p50 ms", "p95 ms", "p99 ms"),
        [
            (r["command"], r["requests"], r["unanswered"], r["timed"], *quantiles(r["p"]))
            for r in rows
        ],
        (False, True, True, True, True, True, True),
    )
    if not timed:
        return Section(title, table, [NO_TIMESTAMPS])
    measured = [r for r in rows if r["p"] is not None]
    commands = [r["command"] for r in measured]
    data = [
        {
            "type": "bar",
            "name": f"p{round(q * 100)}",
            "x": commands,
            "y": [r["p"][i] for r in measured],
        }
        for i, q in enumerate(PERCENTILES)
    ]
    chart = Chart(
        "chart-request-latency",
        {"data": data, "layout": chart_layout(title, "command", "ms", barmode="group")},
    )
    notes = ["requests are matched to responses by capture, connection, command and correlation id"]
    return Section(title, table, notes, [chart])


def _over_time(base: DataFrame, totals: Row, top: list[tuple[str, str]]) -> Section:
    width = bucket_width(totals["first"], totals["last"])
    per_second = 1_000_000 / width
    bucket = F.floor(F.col("ts") / width).alias("bucket")
    # one pass: the busiest connections under their own label, the rest under none; the total
    # per bucket is the sum of those few rows
    label: Column = F.lit(None).cast("string")
    for capture, connection in reversed(top):
        chosen = (F.col("capture") == capture) & (F.col("connection") == connection)
        label = F.when(chosen, F.lit(connection_label(capture, connection))).otherwise(label)
    rows = (
        base.filter(F.col("ts").isNotNull())
        .groupBy(bucket, label.alias("label"))
        .agg(F.count("*").alias("frames"), F.sum("size").alias("bytes"))
        .collect()
    )
    series: dict[str, dict[int, Counter[str]]] = {"total": defaultdict(Counter)}
    series.update({connection_label(c, n): defaultdict(Counter) for c, n in top})
    for r in rows:
        for name in ("total", r["label"]) if r["label"] else ("total",):
            series[name][r["bucket"]].update(frames=r["frames"], bytes=r["bytes"])
    buckets = range(totals["first"] // width, totals["last"] // width + 1)
    x = [_utc(b * width) for b in buckets]
    mode = "lines+markers" if len(buckets) < 60 else "lines"
    every = width_text(width)
    charts = []
    for measure, unit in (("frames", "frames/s"), ("bytes", "bytes/s")):
        data = [
            {
                "type": "scatter",
                "mode": mode,
                "name": name,
                "x": x,
                # an idle bucket is a zero, not a gap a line would bridge
                "y": [points[b][measure] * per_second for b in buckets],
            }
            for name, points in series.items()
        ]
        charts.append(
            Chart(
                f"chart-{measure}-over-time",
                {
                    "data": data,
                    "layout": chart_layout(
                        f"{unit}, {every} buckets, total and per connection", "time (UTC)", unit
                    ),
                },
            )
        )
    # the table holds the total series for the terminal and --json; idle buckets are left out
    # so a bursty capture does not print a page of zeros
    total = series["total"]
    table = tabulate(
        ("bucket start (UTC)", "frames", "bytes", "frames/s", "bytes/s"),
        [
            (
                _utc(b * width),
                total[b]["frames"],
                total[b]["bytes"],
                total[b]["frames"] * per_second,
                total[b]["bytes"] * per_second,
            )
            for b in buckets
            if total[b]["frames"]
        ],
        (False, True, True, True, True),
    )
    notes = [
        f"{every} buckets; per connection for the {len(top)} busiest connections by bytes",
        "the table lists the buckets with frames, the charts every bucket",
    ]
    return Section("Frames and bytes over time", table, notes, charts)


def _connections(
    base: DataFrame, rejects: DataFrame | None, timed: bool
) -> tuple[Section, int, list[tuple[str, str]]]:
    rows_in = base.select(
        "capture", "connection", "size", "direction", "ts", F.lit(1).alias("frame")
    )
    if rejects is not None:
        # a connection whose every frame was rejected still counts, with zero frames: its
        # rejects are rows of their own in the same aggregate (one shuffle, where a full join
        # of two aggregates took three)
        rows_in = rows_in.unionByName(
            rejects.select("capture", "connection", F.lit(0).alias("frame")),
            allowMissingColumns=True,
        )
    per = rows_in.groupBy("capture", "connection").agg(
        F.sum("frame").alias("frames"),
        F.sum("size").alias("bytes"),
        *[sum_if(F.col("direction") == d, F.col("size")).alias(f"bytes_{d}") for d in DIRECTIONS],
        F.min("ts").alias("first"),
        F.max("ts").alias("last"),
        (F.count("*") - F.sum("frame") if rejects is not None else F.lit(0)).alias("rejects"),
    )
    per = per.fillna(0, subset=["frames", "bytes", "bytes_c2s", "bytes_s2c", "rejects"])
    rows = per.orderBy(F.desc("bytes"), "capture", "connection").limit(TABLE_ROWS + 1).collect()
    # counting costs a second pass, needed only when the table cannot show every connection
    count = len(rows) if len(rows) <= TABLE_ROWS else per.count()
    rows = rows[:TABLE_ROWS]
    table = tabulate(
        (
            "capture",
            "connection",
            "frames",
            "bytes c2s",
            "bytes s2c",
            "rejects",
            "first (UTC)",
            "duration s",
        ),
        [
            (
                r["capture"],
                r["connection"],
                r["frames"],
                r["bytes_c2s"],
                r["bytes_s2c"],
                r["rejects"],
                _when(r["first"]),
                _seconds(r["first"], r["last"]),
            )
            for r in rows
        ],
        (False, False, True, True, True, True, False, True),
    )
    notes = (
        [f"all {count} connections"]
        if count <= TABLE_ROWS
        else [f"the {TABLE_ROWS} busiest of {count} connections"]
    )
    if not timed:
        notes.append(NO_TIMESTAMPS)
    top = [(r["capture"], r["connection"]) for r in rows[:CHART_CONNECTIONS] if r["frames"]]
    return Section("Connections", table, notes), count, top


def _rejects(rejected: _Rejected) -> Section:
    """Rejected frames and unframed spans, by kind, error and field."""
    title = "Rejects"
    if rejected.total is None:
        return Section(title, notes=["no rejects table"])
    rows = ordered(rejected.rows, ("n", True), "kind", "error", "field", limit=TABLE_ROWS)
    if not rows:
        return Section(title, notes=["no rejected frames and no unframed bytes"])
    table = tabulate(
        ("kind", "error", "field", "rejects", "bytes"),
        [(r["kind"], r["error"], r["field"] or None, r["n"], r["bytes"]) for r in rows],
        (False, False, False, True, True),
    )
    return Section(title, table)


def format_text(report: Report) -> str:
    """Plain aligned tables, one section after another, for a terminal or a log."""
    lines = [f"specgen report: {report.source}"]
    for section in report.sections:
        lines += ["", section.title, "=" * len(section.title)]
        if section.table is not None:
            lines += _text_table(section.table)
        lines += section.notes
    return "\n".join(lines) + "\n"


def _text_table(table: Table) -> list[str]:
    widths = [max([len(c), *(len(r[i]) for r in table.rows)]) for i, c in enumerate(table.columns)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(w) if right else c.ljust(w)
            for c, w, right in zip(cells, widths, table.numeric, strict=True)
        ).rstrip()

    return [line(table.columns), line(["-" * w for w in widths]), *map(line, table.rows)]


def write_html(report: Report, path: Path) -> None:
    """One self-contained page: plotly.js inline, the figures as JSON, the same tables."""
    plotly_js: str = get_plotlyjs()
    # the library is inlined inside <script>; this would end the element early
    if "</script" in plotly_js.lower():
        raise ReportError("the installed plotly.js contains </script> and cannot be inlined")
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    page = env.get_template("report.html.j2").render(
        report=report,
        figures={c.id: c.figure for c in report.charts},
        plotly_js=plotly_js,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")


def as_json(report: Report) -> dict[str, Any]:
    """The report's tables for tools: per section its title, column names, rows of JSON-native
    values (the very values the text tables print) and notes; charts are the page's."""
    return {
        "source": report.source,
        "sections": [
            {
                "title": section.title,
                "columns": list(section.table.columns) if section.table else [],
                "rows": [list(row) for row in section.table.values] if section.table else [],
                "notes": section.notes,
            }
            for section in report.sections
        ],
    }


def write_json(report: Report, out: TextIO) -> None:
    json.dump(as_json(report), out, indent=1, ensure_ascii=False, allow_nan=False)
    out.write("\n")


def _write_json_file(report: Report, path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as f:
            write_json(report, f)
    except OSError as e:
        raise ReportError(f"{path}: cannot write the JSON: {e.strerror}") from None
