"""AMQP 1.0 analyses for `specgen report`: per link, its transfers and bytes, its deliveries'
settlement outcomes, transfer-to-disposition latency, credit granted against credit used over
time, and the deliveries sent in more than one transfer frame.

What the performatives say, and how the rows are tied together (AMQP 1.0 part 2, 2.6-2.7):

- a session is a channel in each direction, paired by the Begin that answers (its
  `remote_channel`); a session is keyed here by the client's channel;
- a link is named by both ends; each end's Attach binds the name to a handle of its own, which
  its Transfer and Flow frames carry; a frame takes the name from the latest Attach of its
  sender, session and handle before it;
- a delivery is the transfers of one link up to the first without `more`; continuation
  frames may leave out the delivery id;
- a Disposition names deliveries by id (first..last) within the session; `role` says whether
  its sender is the receiver (it answers the other side's transfers) or the sender (its own);
- credit: the receiver's Flow grants deliveries up to its `delivery_count` + `link_credit`
  (delivery_count absent: the sender's `initial_delivery_count`); credit used is the
  deliveries sent.

A delivery's outcome is the first terminal one a Disposition gives it (accepted, rejected,
released, modified); its latency runs from its first transfer frame to the first Disposition
from the receiver that covers it.
"""

from __future__ import annotations

from collections import defaultdict
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame, Row, Window
from pyspark.sql import functions as F

from specgen.pipeline.sections import (
    ACCURACY,
    DIRECTIONS,
    NO_TIMESTAMPS,
    PERCENTILES,
    TABLE_ROWS,
    Chart,
    Section,
    bucket_width,
    chart_layout,
    connection_label,
    iso_time,
    ordered,
    quantiles,
    sum_if,
    tabulate,
    width_text,
)
from specgen.registry import SpecVersion

PROTOCOL = "amqp-1-0"
COLUMNS = ("transfer", "disposition", "flow", "attach")
"""The struct columns this module reads; it runs when the frames table has them all."""

OUTCOMES = ("accepted", "rejected", "released", "modified")
"""The terminal delivery states (part 3, 3.4), in the spec's order."""
CHART_LINKS = 8

_CONNECTION = ["capture", "connection"]
_SESSION = [*_CONNECTION, "session"]
_END = ["capture", "connection", "direction", "session", "handle"]  # one end of a link
_LINK = [*_SESSION, "name"]
_DELIVERY = [*_END, "name", "seq"]  # a delivery: its link's end, and its number on it
_READS = (
    *_CONNECTION,
    "direction",
    "channel",
    "offset",
    "ts",
    "size",
    "payload",
    "begin",
    "attach",
    "transfer",
    "disposition",
    "flow",
)
"""The frames table's columns the analyses read."""


def applies(columns: set[str]) -> bool:
    return set(COLUMNS) <= columns and "channel" in columns


class Analyses:
    """The analyses of frames decoded with one version of AMQP 1.0 (`spec`). Outcomes are read
    from the delivery states in the frames table, JSON keyed by their descriptor name
    (`{"amqp:accepted:list": {}}`), so no code of the version is needed."""

    def __init__(self, spec: SpecVersion) -> None:
        self.spec = spec
        self.code_names: dict[int, str] = {}  # performatives carry no response codes
        self.ok_codes: set[int] = set()

    def response_counts(self, frames: DataFrame, counts: DataFrame, notes: list[str]) -> DataFrame:
        return counts  # performatives carry no response codes

    def sections(self, frames: DataFrame, timed: bool) -> list[Section]:
        # the few columns the chain reads, once: every join and window below starts from it
        framed = _sessions(frames.select(*_READS)).persist()
        deliveries: DataFrame | None = None
        try:
            ends = _ends(framed)
            deliveries = _settlements(framed, _deliveries(framed, ends)).persist()
            # links, outcomes, latency and the multi-frame totals: one aggregate, one job
            links = _per_link(deliveries)
            return [
                _links(links),
                _outcomes(links),
                _latency(links, timed),
                _credit(framed, ends, deliveries, timed),
                _multi_frame(deliveries, links),
            ]
        finally:
            if deliveries is not None:
                deliveries.unpersist()
            framed.unpersist()


def _other(direction: Column) -> Column:
    return F.when(direction == "c2s", F.lit("s2c")).otherwise(F.lit("c2s"))


def _sessions(frames: DataFrame) -> DataFrame:
    """The frames with `session`: the client's channel of the session each belongs to (the
    channel itself where no answering Begin was seen, as in a capture started mid-session)."""
    begin = F.col("begin")
    by_client = F.col("direction") == "c2s"
    # an answering Begin pairs its sender's channel with the one it answers, whoever began
    pairs = (
        frames.filter(begin.isNotNull() & begin["remote_channel"].isNotNull())
        .select(
            *_CONNECTION,
            F.lit("s2c").alias("direction"),
            F.when(by_client, begin["remote_channel"]).otherwise(F.col("channel")).alias("channel"),
            F.when(by_client, F.col("channel")).otherwise(begin["remote_channel"]).alias("paired"),
        )
        .groupBy(*_CONNECTION, "direction", "channel")
        .agg(F.min("paired").alias("paired"))
    )
    return (
        frames.join(pairs, [*_CONNECTION, "direction", "channel"], "left")
        .withColumn("session", F.coalesce(F.col("paired"), F.col("channel")))
        .drop("paired")
    )


def _ends(framed: DataFrame) -> DataFrame:
    """One row per Attach: the end it binds (sender of the frame, session, handle), from which
    offset, the link's name, the end's role (receiver or not) and the address it names (the
    target for a sender, the source for a receiver), and the initial delivery count."""
    attach = F.col("attach")
    address = F.when(attach["role"], attach["source"]).otherwise(attach["target"])
    return framed.filter(attach.isNotNull()).select(
        *_CONNECTION,
        "direction",
        "session",
        attach["handle"].alias("handle"),
        F.col("offset").alias("attached_at"),
        attach["name"].alias("name"),
        attach["role"].alias("receiver"),
        # a source or target is JSON {"amqp:target:list": {"address": ...}}: its one address
        F.regexp_extract(address, r'"address": "((?:[^"\\]|\\.)*)"', 1).alias("address"),
        attach["initial_delivery_count"].alias("initial_count"),
    )


def _named(rows: DataFrame, ends: DataFrame) -> DataFrame:
    """`rows` (frames of one end: _END columns and offset) with the name, address and initial
    count of the latest Attach of that end before each; null when none was seen. One pass: the
    Attach rows run in offset order with the frames, and each frame takes what came last."""
    bound = ["name", "address", "initial_count"]
    attaches = ends.select(
        *_END,
        F.col("attached_at").alias("offset"),
        F.struct(*bound).alias("link"),
    )
    merged = rows.withColumn("link", F.lit(None).cast(attaches.schema["link"].dataType))
    merged = merged.unionByName(attaches, allowMissingColumns=True)
    upto = Window.partitionBy(*_END).orderBy("offset").rowsBetween(Window.unboundedPreceding, 0)
    frames = merged.withColumn("frame", F.col("link").isNull()).withColumn(
        "link", F.last("link", ignorenulls=True).over(upto)
    )
    return frames.filter(F.col("frame")).select(
        *rows.columns, *[F.col("link")[c].alias(c) for c in bound]
    )


def _deliveries(framed: DataFrame, ends: DataFrame) -> DataFrame:
    """One row per delivery: its link, direction, delivery id, transfer frames, frame and
    payload bytes, first frame's offset and time, whether the sender settled it on sending
    and whether it was aborted."""
    transfer = F.col("transfer")
    frames = framed.filter(transfer.isNotNull()).select(
        *_CONNECTION,
        "direction",
        "session",
        transfer["handle"].alias("handle"),
        "offset",
        "ts",
        "size",
        F.length("payload").alias("payload_bytes"),
        transfer["delivery_id"].alias("delivery_id"),
        F.coalesce(transfer["more"], F.lit(False)).alias("more"),
        F.coalesce(transfer["settled"], F.lit(False)).alias("settled"),
        F.coalesce(transfer["aborted"], F.lit(False)).alias("aborted"),
    )
    named = _named(frames, ends.filter(~F.col("receiver")))
    # a delivery starts where the link's previous transfer had no `more`
    link = Window.partitionBy(*_END, "name").orderBy("offset")
    starts = (~F.lag("more", 1, False).over(link)).cast("int")
    numbered = named.withColumn(
        "seq", F.sum(starts).over(link.rowsBetween(Window.unboundedPreceding, 0))
    )
    return numbered.groupBy(*_DELIVERY).agg(
        F.first("address", ignorenulls=True).alias("address"),
        F.first("initial_count", ignorenulls=True).alias("initial_count"),
        F.min_by("delivery_id", "offset").alias("delivery_id"),
        F.count("*").alias("frames"),
        F.sum("size").alias("bytes"),
        F.sum("payload_bytes").alias("payload_bytes"),
        F.min("offset").alias("offset"),
        F.min("ts").alias("ts"),
        F.max("settled").alias("presettled"),
        F.max("aborted").alias("aborted"),
    )


def _link_label(capture: str, connection: str, name: str | None, handle: int | None) -> str:
    return f"{connection_label(capture, connection)} {name if name else f'handle {handle}'}"


def _label(r: Any) -> str:
    return _link_label(r["capture"], r["connection"], r["name"], r["handle"])


def _links(links: list[Row]) -> Section:
    title = "Transfers and bytes per link"
    rows = ordered([r for r in links if r["level"] == 0], ("bytes", True), *_END, limit=TABLE_ROWS)
    if not rows:
        return Section(title, notes=["no Transfer frames in this capture"])
    table = tabulate(
        ("link", "address", "transfers go", "deliveries", "transfer frames", "bytes", "payload"),
        [
            (
                _label(r),
                r["address"] or None,
                DIRECTIONS.get(r["direction"], r["direction"]),
                r["deliveries"],
                r["frames"],
                r["bytes"],
                r["payload_bytes"],
            )
            for r in rows
        ],
        (False, False, False, True, True, True, True),
    )
    notes = [
        "a link by the name its sender's Attach gives its handle; bytes are whole transfer "
        "frames, payload the message bytes they carry"
    ]
    return Section(title, table, notes)


def _settlements(framed: DataFrame, deliveries: DataFrame) -> DataFrame:
    """The deliveries with `outcome` (the first terminal state a Disposition gives them, or
    null), `answered_ts` (the time of the first Disposition from their receiver) and `answered`,
    matched by session, the transfers' direction and delivery id; `settles`: some Disposition
    of theirs counts (or none was sent), else (every one came before the delivery) the
    outcome tables leave them out, as the links table does not."""
    disposition = F.col("disposition")
    state = F.regexp_extract(disposition["state"], r'^\{"amqp:([a-z-]+):list"', 1)
    covered = framed.filter(disposition.isNotNull()).select(
        *_SESSION,
        # a receiver's Disposition answers the other side's transfers, a sender's its own
        F.when(disposition["role"], _other(F.col("direction")))
        .otherwise(F.col("direction"))
        .alias("direction"),
        disposition["role"].alias("from_receiver"),
        F.col("offset").alias("d_offset"),
        F.col("ts").alias("d_ts"),
        F.when(state.isin(*OUTCOMES), state).alias("outcome"),
        F.explode(
            F.sequence(
                disposition["first"],
                F.greatest(
                    disposition["first"], F.coalesce(disposition["last"], disposition["first"])
                ),
            )
        ).alias("delivery_id"),
    )
    on = [*_SESSION, "direction", "delivery_id"]
    # a delivery id used again (a channel reused after End) answers only what came after it;
    # the other Dispositions are masked, not filtered out, so the delivery keeps its row
    counts = F.col("d_ts").isNull() | F.col("ts").isNull() | (F.col("d_ts") >= F.col("ts"))
    joined = deliveries.join(covered, on, "left").withColumn("counts", counts)
    order = F.struct(F.col("d_ts"), F.col("d_offset"))
    kept = [c for c in deliveries.columns if c not in (*_DELIVERY, "presettled")]
    return joined.groupBy(*_DELIVERY).agg(
        *[F.first(c).alias(c) for c in kept],
        F.max("presettled").alias("presettled"),
        F.max("counts").alias("settles"),
        F.min_by("outcome", F.when(F.col("counts") & F.col("outcome").isNotNull(), order)).alias(
            "outcome"
        ),
        F.min(F.when(F.col("counts") & F.col("from_receiver"), F.col("d_ts"))).alias("answered_ts"),
        F.max(F.when(F.col("counts"), F.col("from_receiver").cast("int"))).alias("answered"),
    )


def _per_link(settled: DataFrame) -> list[Row]:
    """Per link the figures of the links, outcomes and latency tables and the multi-frame
    totals, in one aggregate: level 0 rows by link end, name and address (the links table),
    level 1 by link end and name (the others). A row per link: few enough to collect whole."""
    settles = F.col("settles")
    outcome = F.col("outcome")
    latency = F.when(settles, (F.col("answered_ts") - F.col("ts")) / 1000.0)
    multi = F.col("frames") > 1
    return (
        settled.groupingSets(
            [[*_END, "name", "address"], [*_END, "name"]], *_END, "name", "address"
        )
        .agg(
            F.grouping_id().alias("level"),
            F.count("*").alias("deliveries"),
            F.sum("frames").alias("frames"),
            F.sum("bytes").alias("bytes"),
            F.sum("payload_bytes").alias("payload_bytes"),
            sum_if(settles, F.lit(1)).alias("settled"),
            *[sum_if(settles & (outcome == o), F.lit(1)).alias(o) for o in OUTCOMES],
            sum_if(settles & outcome.isNull() & F.col("presettled"), F.lit(1)).alias("pre"),
            sum_if(settles & outcome.isNull() & ~F.col("presettled"), F.lit(1)).alias("none"),
            F.count("answered").alias("answered"),
            F.percentile_approx(latency, list(PERCENTILES), ACCURACY).alias("p"),
            sum_if(multi, F.lit(1)).alias("multi"),
            sum_if(multi, F.col("frames")).alias("multi_frames"),
        )
        .collect()
    )


def _settled_links(links: list[Row]) -> list[Row]:
    """The outcome tables' links, most deliveries first: those with a delivery that counts."""
    settled = [r for r in links if r["level"] == 1 and r["settled"]]
    return ordered(settled, ("settled", True), *_END, limit=TABLE_ROWS)


def _outcomes(links: list[Row]) -> Section:
    title = "Settlement outcomes per link"
    rows = _settled_links(links)
    if not rows:
        return Section(title, notes=["no Transfer frames in this capture"])
    table = tabulate(
        ("link", "deliveries", *OUTCOMES, "settled on sending", "no outcome"),
        [(_label(r), r["settled"], *[r[o] for o in OUTCOMES], r["pre"], r["none"]) for r in rows],
        (False, *[True] * (len(OUTCOMES) + 3)),
    )
    notes = [
        "each delivery counts once, under the first terminal outcome a Disposition gives it; "
        "a released delivery sent again is a new delivery"
    ]
    return Section(title, table, notes)


def _latency(links: list[Row], timed: bool) -> Section:
    title = "Transfer-to-disposition latency"
    rows = _settled_links(links)
    if not rows:
        return Section(title, notes=["no Transfer frames in this capture"])
    table = tabulate(
        ("link", "deliveries", "answered", "p50 ms", "p95 ms", "p99 ms"),
        [(_label(r), r["settled"], r["answered"], *quantiles(r["p"])) for r in rows],
        (False, True, True, True, True, True),
    )
    notes = [
        "from a delivery's first transfer frame to the first Disposition from its receiver "
        "that covers it"
    ]
    if not timed:
        return Section(title, table, [NO_TIMESTAMPS, *notes])
    measured = [r for r in rows if r["p"] is not None]
    data = [
        {
            "type": "bar",
            "name": f"p{round(q * 100)}",
            "x": [_label(r) for r in measured],
            "y": [r["p"][i] for r in measured],
        }
        for i, q in enumerate(PERCENTILES)
    ]
    chart = Chart(
        "chart-transfer-disposition",
        {"data": data, "layout": chart_layout(title, "link", "ms", barmode="group")},
    )
    return Section(title, table, notes, [chart] if measured else [])


def _credit(framed: DataFrame, ends: DataFrame, deliveries: DataFrame, timed: bool) -> Section:
    flow = F.col("flow")
    flows = framed.filter(flow.isNotNull() & flow["handle"].isNotNull()).select(
        *_CONNECTION,
        "direction",
        "session",
        flow["handle"].alias("handle"),
        "offset",
        "ts",
        flow["delivery_count"].alias("delivery_count"),
        flow["link_credit"].alias("link_credit"),
    )
    # the receiver's flows, by the link name its own Attach gave the handle
    granted = _named(flows, ends.filter(F.col("receiver"))).filter(F.col("name").isNotNull())
    senders = deliveries.groupBy(*_SESSION, "name").agg(
        F.first("initial_count", ignorenulls=True).alias("initial_count"),
        F.first("handle").alias("handle"),
        F.first("direction").alias("direction"),
        F.count("*").alias("used"),
        F.min("ts").alias("sent_first"),
        F.max("ts").alias("sent_last"),
    )
    base = F.coalesce(F.col("initial_count"), F.lit(0))
    limits = (
        granted.drop("handle", "direction", "initial_count")
        .join(senders, _LINK)
        .filter(F.col("link_credit").isNotNull())
        .withColumn(
            "granted", F.coalesce(F.col("delivery_count"), base) + F.col("link_credit") - base
        )
        .persist()  # the table and its chart read it: its window and joins run once
    )
    try:
        return _credit_section(limits, deliveries, timed)
    finally:
        limits.unpersist()


def _credit_section(limits: DataFrame, deliveries: DataFrame, timed: bool) -> Section:
    title = "Credit granted and used per link"
    rows = (
        limits.groupBy(*_LINK)
        .agg(
            F.first("handle").alias("handle"),
            F.count("*").alias("flows"),
            F.max_by("granted", "offset").alias("granted"),
            F.first("used").alias("used"),
            # the chart's time span, in the same job
            F.min("ts").alias("given_first"),
            F.max("ts").alias("given_last"),
            F.first("sent_first").alias("sent_first"),
            F.first("sent_last").alias("sent_last"),
        )
        .orderBy(F.desc("used"), *_LINK)
        .limit(TABLE_ROWS)
        .collect()
    )
    if not rows:
        return Section(title, notes=["no Flow from a receiver that granted a link credit"])
    table = tabulate(
        ("link", "receiver's flows", "granted", "used", "left"),
        [(_label(r), r["flows"], r["granted"], r["used"], r["granted"] - r["used"]) for r in rows],
        (False, True, True, True, True),
    )
    notes = [
        "granted: deliveries the receiver's last Flow allows since the link began "
        "(delivery_count + link_credit - initial delivery count); used: deliveries sent"
    ]
    if not timed:
        return Section(title, table, [NO_TIMESTAMPS, *notes])
    chosen = rows[:CHART_LINKS]
    firsts = [r[c] for r in chosen for c in ("given_first", "sent_first") if r[c] is not None]
    lasts = [r[c] for r in chosen for c in ("given_last", "sent_last") if r[c] is not None]
    links = [tuple(r[c] for c in _LINK) for r in chosen]
    chart = _credit_chart(limits, deliveries, links, (min(firsts), max(lasts))) if firsts else None
    return Section(title, table, notes, [chart] if chart else [])


def _credit_chart(
    limits: DataFrame, deliveries: DataFrame, links: list[tuple[Any, ...]], span: tuple[int, int]
) -> Chart:
    """Granted and used credit of `links`, each cumulative at the end of each time bucket;
    `span`: their first and last grant or delivery time."""
    # a few links: a filter, where a join with them shuffled both sides
    chosen = reduce(
        lambda a, b: a | b,
        [
            reduce(lambda a, b: a & b, [F.col(c) == v for c, v in zip(_LINK, link, strict=True)])
            for link in links
        ],
    )
    given = limits.filter(chosen & F.col("ts").isNotNull())
    sent = deliveries.filter(chosen & F.col("ts").isNotNull())
    width = bucket_width(span[0], span[1])
    bucket = F.floor(F.col("ts") / width).alias("bucket")
    points: dict[tuple[Any, ...], dict[str, dict[int, int]]] = defaultdict(
        lambda: {"granted": {}, "used": {}}
    )
    # both measures in one job
    both = (
        given.groupBy(*_LINK, bucket)
        .agg(F.lit("granted").alias("measure"), F.max("granted").alias("n"))
        .unionByName(
            sent.groupBy(*_LINK, bucket).agg(
                F.lit("used").alias("measure"), F.count("*").alias("n")
            )
        )
    )
    for r in both.collect():
        points[tuple(r[c] for c in _LINK)][r["measure"]][r["bucket"]] = r["n"]
    buckets = range(span[0] // width, span[1] // width + 1)
    x = [iso_time(b * width) for b in buckets]
    data: list[dict[str, Any]] = []
    for link in links:
        of = points[tuple(link)]
        granted, used = 0, 0
        ys: dict[str, list[int]] = {"granted": [], "used": []}
        for b in buckets:
            # the latest grant stands until the next; deliveries add up
            granted = max(granted, of["granted"].get(b, 0))
            used += of["used"].get(b, 0)
            ys["granted"].append(granted)
            ys["used"].append(used)
        label = _link_label(link[0], link[1], link[3], None)
        for measure, y in ys.items():
            # one legend group per link: a click hides both its lines and the axis rescales, so
            # a link granted 50 at a time can be read beside one granted 65,536 at once
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": f"{label} {measure}",
                    "legendgroup": label,
                    "x": x,
                    "y": y,
                }
            )
    return Chart(
        "chart-credit",
        {
            "data": data,
            "layout": chart_layout(
                f"Credit granted and used, {width_text(width)} buckets",
                "time (UTC)",
                "deliveries since the link began",
            ),
        },
    )


def _multi_frame(deliveries: DataFrame, links: list[Row]) -> Section:
    title = "Multi-frame transfers"
    per_link = [r for r in links if r["level"] == 1]
    totals = {
        "n": sum(r["multi"] for r in per_link),
        "frames": sum(r["multi_frames"] for r in per_link),
    }
    if not totals["n"]:
        return Section(title, notes=["every delivery in this capture fits one transfer frame"])
    multi = deliveries.filter(F.col("frames") > 1)
    rows = multi.orderBy(*_END, "offset").limit(TABLE_ROWS).collect()
    table = tabulate(
        ("link", "delivery id", "offset", "transfer frames", "payload", "aborted"),
        [
            (
                _label(r),
                r["delivery_id"],
                r["offset"],
                r["frames"],
                r["payload_bytes"],
                "yes" if r["aborted"] else "no",
            )
            for r in rows
        ],
        (False, True, True, True, True, False),
    )
    notes = [
        f"{totals['n']} deliveries in {totals['frames']} transfer frames: each frame but the "
        "last has `more` set"
    ]
    if totals["n"] > TABLE_ROWS:
        notes.append(f"the first {TABLE_ROWS} by link and offset")
    return Section(title, table, notes)
