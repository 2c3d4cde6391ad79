"""RabbitMQ Streams analyses for `specgen report`: publish-to-confirm latency, response-code
names, and PublishError counted per failed publishing id."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql.types import DecimalType

from specgen.pipeline.sections import (
    ACCURACY,
    NO_TIMESTAMPS,
    TABLE_ROWS,
    Chart,
    Section,
    chart_layout,
    connection_label,
    percentiles,
    quantiles,
    sum_if,
    tabulate,
)
from specgen.registry import SpecVersion

PROTOCOL = "rabbitmq-stream"
COLUMNS = ("publish_v1", "publish_v2", "publish_confirm", "publish_error")
"""The struct columns this module reads; it runs when the frames table has any of them."""

# uint64 publishing ids: Parquet's unsigned 64-bit reads back as decimal(20,0), a signed writer
# gives long; both cast losslessly to decimal(20,0), so publishes and confirms always join.
PUBLISHING_ID = DecimalType(20, 0)


def applies(columns: set[str]) -> bool:
    return bool(columns.intersection(COLUMNS))


class Analyses:
    """The analyses of frames decoded with one version of the protocol (`spec`), whose response
    codes are named by that version's generated `ResponseCode`; a version without one (the
    early protocol names none) leaves them unnamed."""

    def __init__(self, spec: SpecVersion) -> None:
        enums = importlib.import_module(f"{spec.import_name}.enums")
        codes = getattr(enums, "ResponseCode", None)
        self.code_names: dict[int, str] = {c.value: c.name for c in codes} if codes else {}
        self.ok_codes: set[int] = {codes.OK} if codes else set()

    def response_counts(self, frames: DataFrame, counts: DataFrame, notes: list[str]) -> DataFrame:
        return response_counts(frames, counts, notes)

    def sections(self, frames: DataFrame, timed: bool) -> list[Section]:
        return [_publish_confirm(frames, timed)]


def response_counts(frames: DataFrame, counts: DataFrame, notes: list[str]) -> DataFrame:
    """A PublishError frame carries one code per failed publishing id: count those."""
    if "publish_error" not in frames.columns:
        return counts
    errors = _exploded(frames, "publish_error", "publishing_error", "publishing_id", ("code",))
    assert errors is not None
    notes.append("PublishError counts failed publishing ids, not frames")
    return counts.filter(F.col("command") != "PublishError").unionByName(
        errors.groupBy(
            F.lit("PublishError").alias("command"), F.col("code").alias("response_code")
        ).agg(F.count("*").alias("n"))
    )


def _exploded(
    frames: DataFrame, column: str, array: str, id_field: str | None, extra: Sequence[str] = ()
) -> DataFrame | None:
    """One row per publishing id in a struct column's array: capture, connection, publisher_id,
    publishing_id (as decimal(20,0)), ts, then `extra` fields of each array element."""
    if column not in frames.columns:
        return None
    item = F.col("item")[id_field] if id_field else F.col("item")
    return (
        frames.filter(F.col(column).isNotNull())
        .select(
            "capture",
            "connection",
            "ts",
            F.col(column)["publisher_id"].cast("int").alias("publisher_id"),
            F.explode(F.col(column)[array]).alias("item"),
        )
        .select(
            "capture",
            "connection",
            "publisher_id",
            item.cast(PUBLISHING_ID).alias("publishing_id"),
            "ts",
            *[F.col("item")[f].alias(f) for f in extra],
        )
    )


def _publish_confirm(frames: DataFrame, timed: bool) -> Section:
    title = "Publish-to-confirm latency"
    publishes = [
        df
        for df in (
            _exploded(frames, "publish_v1", "published_messages", "publishing_id"),
            _exploded(frames, "publish_v2", "published_messages", "publishing_id"),
        )
        if df is not None
    ]
    if not publishes:
        return Section(title, notes=["no publish columns in the frames table"])
    keys = ["capture", "connection", "publisher_id", "publishing_id"]
    # publishes, confirms and errors as rows of one aggregate by publishing id (one shuffle,
    # where an aggregate of each and two joins took five); a confirm or error with a key
    # missing matches nothing, as in an equi-join
    parts = [df.withColumn("part", F.lit("published")) for df in publishes]
    confirms = _exploded(frames, "publish_confirm", "publishing_ids", None)
    errors = _exploded(frames, "publish_error", "publishing_error", "publishing_id")
    parts += [
        df.withColumn("part", F.lit(part))
        for df, part in ((confirms, "confirmed"), (errors, "errored"))
        if df is not None
    ]
    keyed = reduce(lambda a, b: a & b, [F.col(k).isNotNull() for k in keys])

    def of(part: str) -> Column:
        return F.col("part") == part if part == "published" else (F.col("part") == part) & keyed

    joined = (
        reduce(DataFrame.unionByName, parts)
        .groupBy(keys)
        .agg(
            F.max(of("published")).alias("publish"),
            F.min(F.when(of("published"), F.col("ts"))).alias("published"),
            # `confirmed` marks the match, `confirmed_ts` times it: without timestamps a
            # publishing id is still confirmed, only its latency is unknown
            F.max(F.when(of("confirmed"), F.lit(1))).alias("confirmed"),
            F.min(F.when(of("confirmed"), F.col("ts"))).alias("confirmed_ts"),
            F.max(F.when(of("errored"), F.lit(1))).alias("errored"),
        )
        .filter(F.col("publish"))
    )
    joined = joined.withColumn("latency_ms", (F.col("confirmed_ts") - F.col("published")) / 1000.0)
    publisher = ["capture", "connection", "publisher_id"]
    curve_at = [i / 100 for i in range(1, 101)]
    # one pass: a row per publisher and the total row (grouping id 7, sorted first); no rows
    # at all when nothing was published
    collected = (
        joined.groupingSets([publisher, []], *publisher)
        .agg(
            F.grouping_id().alias("level"),
            F.count("*").alias("ids"),
            F.count("confirmed").alias("confirmed"),
            sum_if(F.col("confirmed").isNull(), F.lit(1)).alias("unconfirmed"),
            F.count("errored").alias("errored"),
            percentiles("latency_ms").alias("p"),
            F.percentile_approx("latency_ms", curve_at, ACCURACY).alias("curve"),
        )
        .orderBy(F.desc("level"), *publisher)
        .limit(TABLE_ROWS + 1)
        .collect()
    )
    if not collected:
        return Section(title, notes=["no Publish frames in this capture"])
    total, per = collected[0], collected[1:]

    def row(name: str, r: Row) -> tuple[Any, ...]:
        return (name, r["ids"], r["confirmed"], r["unconfirmed"], r["errored"], *quantiles(r["p"]))

    rows = [
        row(f"{connection_label(r['capture'], r['connection'])} publisher {r['publisher_id']}", r)
        for r in per
    ]
    rows.append(row("all", total))
    table = tabulate(
        (
            "publisher",
            "published",
            "confirmed",
            "unconfirmed",
            "errored",
            "p50 ms",
            "p95 ms",
            "p99 ms",
        ),
        rows,
        (False, True, True, True, True, True, True, True),
    )
    notes = [
        "matched by capture, connection, publisher id and publishing id; the first confirm counts"
    ]
    if not timed:
        return Section(title, table, [NO_TIMESTAMPS, *notes])
    if total["curve"] is None:
        why = (
            "no confirm has timestamps" if total["confirmed"] else "no publishing id was confirmed"
        )
        return Section(title, table, [why, *notes])
    data = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "all publishers",
            "x": [round(q * 100) for q in curve_at],
            "y": total["curve"],
        }
    ]
    chart = Chart(
        "chart-publish-confirm",
        {
            "data": data,
            "layout": chart_layout("Publish-to-confirm latency by percentile", "percentile", "ms"),
        },
    )
    return Section(title, table, notes, [chart])
