"""AMQP 0-9-1 analyses for `specgen report`: publish-to-Basic.Ack confirm latency, deliveries
per consumer tag, and reply-code names.

Confirms: once a channel is in confirm mode the broker numbers the messages published on it
1, 2, 3, ... and acknowledges them with Basic.Ack (or Basic.Nack) frames whose delivery tag
confirms that message, or with `multiple` every message up to it. Publishes are numbered per
capture, connection and channel in wire order from the channel's Confirm.Select on, and each is
matched with the first server Ack or Nack that covers its number.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from generated.amqp_0_9_1.rabbitmq.enums import ReplyCode
from specgen.pipeline.report import (
    NO_TIMESTAMPS,
    TABLE_ROWS,
    Section,
    _label,
    _p,
    _percentiles,
    _sum_if,
    _table,
)

COLUMNS = ("basic_publish", "basic_deliver")
"""The struct columns this module reads; it runs when the frames table has any of them."""

code_names: dict[int, str] = {c.value: c.name for c in ReplyCode}
ok_codes: set[int] = {ReplyCode.REPLY_SUCCESS}

_CHANNEL = ["capture", "connection", "channel"]


def applies(columns: set[str]) -> bool:
    return bool(columns.intersection(COLUMNS)) and "channel" in columns


def response_counts(frames: DataFrame, counts: DataFrame, notes: list[str]) -> DataFrame:
    return counts  # reply codes are counted per frame as they are


def sections(frames: DataFrame, timed: bool) -> list[Section]:
    return [_confirms(frames, timed), _deliveries(frames)]


def _confirms(frames: DataFrame, timed: bool) -> Section:
    title = "Publish-to-confirm latency (Basic.Ack)"
    if "basic_publish" not in frames.columns or "confirm_select" not in frames.columns:
        return Section(title, notes=["no channel in confirm mode in this capture"])
    selects = (
        frames.filter(F.col("confirm_select").isNotNull() & (F.col("direction") == "c2s"))
        .groupBy(*_CHANNEL)
        .agg(F.min("offset").alias("select_at"))
    )
    publishes = (
        frames.filter(F.col("basic_publish").isNotNull() & (F.col("direction") == "c2s"))
        .join(selects, _CHANNEL)
        .filter(F.col("offset") > F.col("select_at"))
        .select(*_CHANNEL, "offset", "ts")
        .withColumn("seq", F.row_number().over(Window.partitionBy(*_CHANNEL).orderBy("offset")))
    )
    answers = []
    for column, nacked in (("basic_ack", False), ("basic_nack", True)):
        if column in frames.columns:
            answers.append(
                frames.filter(F.col(column).isNotNull() & (F.col("direction") == "s2c")).select(
                    *[F.col(c).alias(f"a_{c}") for c in _CHANNEL],  # apart from the publishes'
                    F.col("offset").alias("ack_offset"),
                    F.col("ts").alias("ack_ts"),
                    F.col(column)["delivery_tag"].cast("long").alias("tag"),
                    F.col(column)["multiple"].alias("multiple"),
                    F.lit(nacked).alias("nacked"),
                )
            )
    if not answers:
        return Section(title, notes=["no Basic.Ack from the server in this capture"])
    acks = answers[0] if len(answers) == 1 else answers[0].unionByName(answers[1])
    # each answer covers (the previous answer's tag, its tag] when multiple, else its tag alone
    by_channel = Window.partitionBy(*[f"a_{c}" for c in _CHANNEL]).orderBy("ack_offset")
    previous = F.lag("tag", 1, 0).over(by_channel)
    acks = acks.withColumn("low", F.when(F.col("multiple"), previous + 1).otherwise(F.col("tag")))
    covers = [F.col(c) == F.col(f"a_{c}") for c in _CHANNEL]
    covers += [F.col("seq") >= F.col("low"), F.col("seq") <= F.col("tag")]
    matched = publishes.join(acks, covers, "left")  # a publish no answer covers keeps nulls
    first = Window.partitionBy(*_CHANNEL, "seq").orderBy(F.col("ack_offset").asc_nulls_last())
    per_publish = (
        matched.select(
            *_CHANNEL,
            "seq",
            "ts",
            "ack_ts",
            "ack_offset",
            "nacked",
        )
        .withColumn("n", F.row_number().over(first))
        .filter(F.col("n") == 1)
        .withColumn("latency_ms", (F.col("ack_ts") - F.col("ts")) / 1000.0)
    )
    rows = (
        per_publish.groupBy("capture", "connection", "channel")
        .agg(
            F.count("*").alias("published"),
            F.count("ack_offset").alias("answered"),
            _sum_if(F.col("nacked") == F.lit(True), F.lit(1)).alias("nacked"),
            _percentiles("latency_ms").alias("p"),
        )
        .orderBy("capture", "connection", "channel")
        .limit(TABLE_ROWS)
        .collect()
    )
    if not rows:
        return Section(title, notes=["no publishes after Confirm.Select in this capture"])
    table = _table(
        ("channel", "published", "acked or nacked", "nacked", "p50 ms", "p95 ms", "p99 ms"),
        [
            (
                f"{_label(r['capture'], r['connection'])} channel {r['channel']}",
                r["published"],
                r["answered"],
                r["nacked"] or 0,
                *_p(r["p"]),
            )
            for r in rows
        ],
        (False, True, True, True, True, True, True),
    )
    notes = [
        "publishes numbered per channel from its Confirm.Select; the first covering answer counts"
    ]
    return Section(title, table, [NO_TIMESTAMPS, *notes] if not timed else notes)


def _deliveries(frames: DataFrame) -> Section:
    title = "Deliveries per consumer tag"
    if "basic_deliver" not in frames.columns:
        return Section(title, notes=["no Basic.Deliver in this capture"])
    rows = (
        frames.filter(F.col("basic_deliver").isNotNull())
        .groupBy(
            "capture", "connection", "channel", F.col("basic_deliver")["consumer_tag"].alias("tag")
        )
        .agg(
            F.count("*").alias("n"),
            _sum_if(F.col("basic_deliver")["redelivered"], F.lit(1)).alias("again"),
        )
        .orderBy(F.desc("n"))
        .limit(TABLE_ROWS)
        .collect()
    )
    if not rows:
        return Section(title, notes=["no Basic.Deliver in this capture"])
    table = _table(
        ("channel", "consumer tag", "deliveries", "redelivered"),
        [
            (
                f"{_label(r['capture'], r['connection'])} channel {r['channel']}",
                r["tag"],
                r["n"],
                r["again"] or 0,
            )
            for r in rows
        ],
        (False, False, True, True),
    )
    return Section(title, table)
