"""AMQP 0-9-1 analyses for `specgen report`: publish-to-Basic.Ack confirm latency, deliveries
per consumer tag, reply-code names, and conversations checked against the spec's grammars.

Confirms: once a channel is in confirm mode the broker numbers the messages published on it
1, 2, 3, ... and acknowledges them with Basic.Ack (or Basic.Nack) frames whose delivery tag
confirms that message, or with `multiple` every message up to it. Publishes are numbered per
capture, connection and channel in wire order from the channel's Confirm.Select on, and each is
matched with the first server Ack or Nack that covers its number.

Conversations: each connection's channel 0 methods, after the client's protocol header (the
decoder reads the client's bytes after it, so it is no row), are checked against the
`connection` grammar, and each other channel's methods against `channel` (which nests the
functional classes), with the generated `dialogue.check(..., crossing=True)`: each direction's
order is the wire's, the interleaving of the two is left open (see specgen/dialogue.py).
Content headers, bodies and heartbeats are no methods and are left out. Each conversation is
checked in one task (`applyInPandas`), in order of read time, then direction, then offset.
"""

from __future__ import annotations

import importlib
from collections import Counter
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from specgen.analyses.conversations import VERDICT_COLUMNS, dialogue_of, tally, verdict_columns
from specgen.pipeline.sections import (
    NO_TIMESTAMPS,
    TABLE_ROWS,
    Section,
    connection_label,
    ordered,
    percentiles,
    quantiles,
    sum_if,
    tabulate,
)
from specgen.registry import SpecVersion

PROTOCOL = "amqp-0-9-1"
COLUMNS = ("basic_publish", "basic_deliver")
"""The struct columns this module reads; it runs when the frames table has any of them."""

_CHANNEL = ["capture", "connection", "channel"]


def applies(columns: set[str]) -> bool:
    return bool(columns.intersection(COLUMNS)) and "channel" in columns


class Analyses:
    """The analyses of frames decoded with one version of the protocol (`spec`): reply codes
    named by that version's generated `ReplyCode`, conversations checked against its grammars
    (its generated `dialogue`)."""

    def __init__(self, spec: SpecVersion) -> None:
        self.package = spec.import_name
        codes = importlib.import_module(f"{self.package}.enums").ReplyCode
        self.code_names: dict[int, str] = {c.value: c.name for c in codes}
        self.ok_codes: set[int] = {codes.REPLY_SUCCESS}

    def response_counts(self, frames: DataFrame, counts: DataFrame, notes: list[str]) -> DataFrame:
        return counts  # reply codes are counted per frame as they are

    def sections(self, frames: DataFrame, timed: bool) -> list[Section]:
        return [_confirms(frames, timed), _deliveries(frames), _conversations(frames, self.package)]


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
            sum_if(F.col("nacked") == F.lit(True), F.lit(1)).alias("nacked"),
            percentiles("latency_ms").alias("p"),
        )
        .orderBy("capture", "connection", "channel")
        .limit(TABLE_ROWS)
        .collect()
    )
    if not rows:
        return Section(title, notes=["no publishes after Confirm.Select in this capture"])
    table = tabulate(
        ("channel", "published", "acked or nacked", "nacked", "p50 ms", "p95 ms", "p99 ms"),
        [
            (
                f"{connection_label(r['capture'], r['connection'])} channel {r['channel']}",
                r["published"],
                r["answered"],
                r["nacked"] or 0,
                *quantiles(r["p"]),
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
            sum_if(F.col("basic_deliver")["redelivered"], F.lit(1)).alias("again"),
        )
        .orderBy(F.desc("n"))
        .limit(TABLE_ROWS)
        .collect()
    )
    if not rows:
        return Section(title, notes=["no Basic.Deliver in this capture"])
    table = tabulate(
        ("channel", "consumer tag", "deliveries", "redelivered"),
        [
            (
                f"{connection_label(r['capture'], r['connection'])} channel {r['channel']}",
                r["tag"],
                r["n"],
                r["again"] or 0,
            )
            for r in rows
        ],
        (False, False, True, True),
    )
    return Section(title, table)


_VERDICTS = f"capture STRING, connection STRING, channel INT, grammar STRING, {VERDICT_COLUMNS}"


def _check_conversation(package: str, rows: Any) -> Any:
    """One conversation's method frames (a pandas DataFrame) -> one verdict row, by the grammars
    of the generated `package`."""
    import pandas as pd  # type: ignore[import-untyped]

    channel = int(rows["channel"].iloc[0])
    grammar = "connection" if channel == 0 else "channel"
    judged = verdict_columns(dialogue_of(package), grammar, rows, opens=channel == 0)
    return pd.DataFrame(
        [
            {
                "capture": rows["capture"].iloc[0],
                "connection": rows["connection"].iloc[0],
                "channel": channel,
                "grammar": grammar,
                **judged,
            }
        ]
    )


def _conversations(frames: DataFrame, package: str) -> Section:
    title = "Conversations against the grammar"
    dialogue = dialogue_of(package)

    methods = frames.filter(F.col("message").isin(list(dialogue.METHODS))).select(
        *_CHANNEL, "direction", "message", "offset", "ts"
    )

    def check(rows: Any) -> Any:  # a function, not a partial: Spark reads its signature
        return _check_conversation(package, rows)

    verdicts = methods.groupBy(*_CHANNEL).applyInPandas(check, _VERDICTS)
    # every verdict comes back: ordered on the driver, not by a global sort's two more jobs
    rows = ordered(verdicts.collect(), *_CHANNEL)
    if not rows:
        return Section(title, notes=["no methods in this capture"])
    notes = [
        tally(Counter(r["status"] for r in rows)),
        "channel 0 against the connection grammar, other channels against the channel grammar; "
        "each direction in wire order, their interleaving open",
    ]
    broken = [r for r in rows if r["status"] == "broken"]
    if not broken:
        return Section(title, notes=notes)
    table = tabulate(
        ("conversation", "grammar", "broke at offset", "direction", "method", "expected"),
        [
            (
                f"{connection_label(r['capture'], r['connection'])} channel {r['channel']}",
                r["grammar"],
                r["offset"],
                r["direction"],
                r["message"] or "protocol header",
                r["expected"],
            )
            for r in broken[:TABLE_ROWS]
        ],
        (False, False, True, False, False, False),
    )
    return Section(title, table, notes)
