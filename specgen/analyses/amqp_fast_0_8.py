"""AMQP/Fast 0.8 (AMQ RFC 006) analyses for `specgen report`: messages per destination, reply
latency, and conversations checked against the document's Command Flow Summaries.

Messages: a message is sent as one or more fragments, each after its own HANDLE SEND (or
HANDLE NOTIFY from the server), "partial" set on all but the last ("Message Frames"); so a
frame without `partial` ends one message, and the fragment sizes of all its frames add up to
its octets (its head and body). A HANDLE NOTIFY with `delivered` clear is a browse's copy: "this
message is not being delivered" ("Browsing"), counted apart.

Replies: a command with a non-zero confirm-tag asks for a confirmation ("If non-zero, the client
wants a confirmation from the server"), which comes as the REPLY of its class (CONNECTION,
CHANNEL or HANDLE REPLY) carrying the same tag, on the same channel or handle. A request is
matched with the first such reply at or after it; of a message sent in several fragments, the
frame that ends it is the request (the reply confirms the message).

Conversations: the client's protocol header and the connection class's commands are checked
against the `connection` grammar, each channel's commands (by channel-id) against `channel`,
each handle's (by handle-id) against `handle`, with the generated `dialogue.check(...,
crossing=True)`: each direction in wire order, their interleaving open. Fragments are no
commands and are left out.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pyspark.sql import Column, DataFrame
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

PROTOCOL = "amqp-fast-0-8"
COLUMNS = ("handle_send", "handle_notify")
"""The struct columns this module reads; it runs when the frames table has any of them."""

_CONNECTION = ["capture", "connection"]

# the commands that carry a confirm-tag, by the class whose REPLY answers them: the client's
# requests, and the replies with the field naming their channel or handle (none: the connection)
_REQUESTS = {
    "connection": ("connection_open",),
    "channel": ("channel_open", "channel_ack", "channel_commit", "channel_rollback"),
    "handle": (
        "handle_open",
        "handle_send",
        "handle_consume",
        "handle_flow",
        "handle_unget",
        "handle_browse",
    ),
}
_REPLIES = {"connection": "connection_reply", "channel": "channel_reply", "handle": "handle_reply"}
_SCOPE = {"connection": None, "channel": "channel_id", "handle": "handle_id"}


def applies(columns: set[str]) -> bool:
    return bool(columns.intersection(COLUMNS))


class Analyses:
    """The analyses of frames decoded with one version of the protocol (`spec`): conversations
    checked against its grammars (its generated `dialogue`)."""

    def __init__(self, spec: SpecVersion) -> None:
        self.package = spec.import_name
        self.code_names: dict[int, str] = {}  # the document names no reply codes
        self.ok_codes: set[int] = set()

    def response_counts(self, frames: DataFrame, counts: DataFrame, notes: list[str]) -> DataFrame:
        return counts  # no role column: the generic section does not run

    def sections(self, frames: DataFrame, timed: bool) -> list[Section]:
        return [
            _destinations(frames),
            _replies(frames, timed),
            _conversations(frames, self.package),
        ]


def _destinations(frames: DataFrame) -> Section:
    title = "Messages per destination"
    parts = []
    for column, side in (("handle_send", "sent"), ("handle_notify", "notified")):
        if column not in frames.columns:
            continue
        m = F.col(column)
        browsed = F.lit(False) if side == "sent" else ~m["delivered"]
        parts.append(
            frames.filter(m.isNotNull()).select(
                m["dest_name"].alias("destination"),
                F.lit(side).alias("side"),
                browsed.alias("browsed"),
                (~m["partial"]).alias("ends"),
                m["fragment_size"].alias("octets"),
            )
        )
    if not parts:
        return Section(title, notes=["no HANDLE SEND or HANDLE NOTIFY in this capture"])
    rows_df = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
    sent, notified = F.col("side") == "sent", F.col("side") == "notified"
    delivered = notified & ~F.col("browsed")
    rows = (
        rows_df.groupBy("destination")
        .agg(
            sum_if(sent & F.col("ends"), F.lit(1)).alias("sent"),
            sum_if(sent, F.lit(1)).alias("send_frames"),
            sum_if(sent, F.col("octets")).alias("sent_octets"),
            sum_if(delivered & F.col("ends"), F.lit(1)).alias("delivered"),
            sum_if(delivered, F.col("octets")).alias("delivered_octets"),
            sum_if(notified & F.col("browsed") & F.col("ends"), F.lit(1)).alias("browsed"),
        )
        .orderBy(F.desc("sent"), "destination")
        .limit(TABLE_ROWS)
        .collect()
    )
    table = tabulate(
        (
            "destination",
            "messages sent",
            "HANDLE SENDs",
            "octets sent",
            "delivered",
            "octets delivered",
            "browsed",
        ),
        [
            (
                r["destination"],
                r["sent"] or 0,
                r["send_frames"] or 0,
                r["sent_octets"] or 0,
                r["delivered"] or 0,
                r["delivered_octets"] or 0,
                r["browsed"] or 0,
            )
            for r in rows
        ],
        (False, True, True, True, True, True, True),
    )
    notes = [
        "a message is its frames up to one without `partial`; octets are its fragments' "
        "(head and body); browsed: HANDLE NOTIFY with `delivered` clear"
    ]
    return Section(title, table, notes)


def _scope(kind: str, column: str) -> Column:
    field = _SCOPE[kind]
    return F.lit(0) if field is None else F.col(column)[field].cast("long")


def _replies(frames: DataFrame, timed: bool) -> Section:
    title = "Reply latency (confirm-tag to REPLY)"
    requests, replies = [], []
    for kind, columns in _REQUESTS.items():
        for column in columns:
            if column not in frames.columns:
                continue
            m = F.col(column)
            ends = ~m["partial"] if column == "handle_send" else F.lit(True)
            requests.append(
                frames.filter(
                    m.isNotNull() & (F.col("direction") == "c2s") & (m["confirm_tag"] != 0) & ends
                ).select(
                    *_CONNECTION,
                    F.lit(kind).alias("kind"),
                    _scope(kind, column).alias("scope"),
                    m["confirm_tag"].cast("long").alias("tag"),
                    F.col("command"),
                    F.col("offset"),
                    F.col("ts"),
                )
            )
        column = _REPLIES[kind]
        if column in frames.columns:
            m = F.col(column)
            replies.append(
                frames.filter(m.isNotNull() & (F.col("direction") == "s2c")).select(
                    *[F.col(c).alias(f"r_{c}") for c in _CONNECTION],
                    F.lit(kind).alias("r_kind"),
                    _scope(kind, column).alias("r_scope"),
                    m["confirm_tag"].cast("long").alias("r_tag"),
                    F.col("offset").alias("r_offset"),
                    F.col("ts").alias("r_ts"),
                )
            )
    if not requests:
        return Section(title, notes=["no command with a confirm-tag in this capture"])
    asked = requests[0]
    for more in requests[1:]:
        asked = asked.unionByName(more)
    if replies:
        answers = replies[0]
        for more in replies[1:]:
            answers = answers.unionByName(more)
        same = [F.col(c) == F.col(f"r_{c}") for c in (*_CONNECTION, "kind", "scope", "tag")]
        # the first reply at or after the request; untimed frames pair by tag alone
        after = F.col("ts").isNull() | F.col("r_ts").isNull() | (F.col("r_ts") >= F.col("ts"))
        matched = (
            asked.join(answers, [*same, after], "left")
            .groupBy(*_CONNECTION, "kind", "scope", "tag", "command", "offset", "ts")
            .agg(F.min("r_ts").alias("r_ts"), F.count("r_offset").alias("answered"))
        )
    else:
        matched = asked.withColumn("r_ts", F.lit(None).cast("long")).withColumn(
            "answered", F.lit(0)
        )
    rows = (
        matched.withColumn("latency_ms", (F.col("r_ts") - F.col("ts")) / 1000.0)
        .groupBy("command")
        .agg(
            F.count("*").alias("asked"),
            sum_if(F.col("answered") > 0, F.lit(1)).alias("answered"),
            percentiles("latency_ms").alias("p"),
        )
        .orderBy(F.desc("asked"), "command")
        .limit(TABLE_ROWS)
        .collect()
    )
    table = tabulate(
        ("command", "confirmations asked", "replied", "p50 ms", "p95 ms", "p99 ms"),
        [(r["command"], r["asked"], r["answered"] or 0, *quantiles(r["p"])) for r in rows],
        (False, True, True, True, True, True),
    )
    notes = [
        "a command with a non-zero confirm-tag, matched with the first REPLY of its class with "
        "that tag on the same channel or handle; a message in fragments asks with its last frame"
    ]
    return Section(title, table, [NO_TIMESTAMPS, *notes] if not timed else notes)


_VERDICTS = f"capture STRING, connection STRING, grammar STRING, id BIGINT, {VERDICT_COLUMNS}"


def _check_conversation(package: str, rows: Any) -> Any:
    """One conversation's command frames (a pandas DataFrame) -> one verdict row, by the
    grammars of the generated `package`."""
    import pandas as pd  # type: ignore[import-untyped]

    grammar = str(rows["grammar"].iloc[0])
    judged = verdict_columns(dialogue_of(package), grammar, rows, opens=grammar == "connection")
    return pd.DataFrame(
        [
            {
                "capture": rows["capture"].iloc[0],
                "connection": rows["connection"].iloc[0],
                "grammar": grammar,
                "id": int(rows["id"].iloc[0]),
                **judged,
            }
        ]
    )


def _conversations(frames: DataFrame, package: str) -> Section:
    title = "Conversations against the grammar"
    dialogue = dialogue_of(package)
    # the commands' class is their grammar; its channel-id or handle-id says which conversation
    ids: dict[str, list[Column]] = {"channel": [], "handle": []}
    for message, step in dialogue.METHODS.items():
        grammar, column = step.split(".", 1)[0], _snake(message)
        field = _SCOPE.get(grammar)
        if field is not None and column in frames.columns:
            ids[grammar].append(F.col(column)[field].cast("long"))
    grammar = F.split(F.col("step"), r"\.").getItem(0)
    conversation = F.when(grammar == "connection", F.lit(0).cast("long"))
    for name, fields in ids.items():
        if fields:
            conversation = conversation.when(grammar == name, F.coalesce(*fields))
    steps = F.create_map(*[F.lit(x) for kv in dialogue.METHODS.items() for x in kv])
    commands = (
        frames.filter(F.col("message").isin(list(dialogue.METHODS)))
        .withColumn("step", steps[F.col("message")])
        .select(
            *_CONNECTION,
            grammar.alias("grammar"),
            conversation.alias("id"),
            "direction",
            "message",
            "offset",
            "ts",
        )
    )

    def check(rows: Any) -> Any:  # a function, not a partial: Spark reads its signature
        return _check_conversation(package, rows)

    verdicts = commands.groupBy(*_CONNECTION, "grammar", "id").applyInPandas(check, _VERDICTS)
    # every verdict comes back: ordered on the driver, not by a global sort's two more jobs
    rows = ordered(verdicts.collect(), *_CONNECTION, "grammar", "id")
    if not rows:
        return Section(title, notes=["no commands in this capture"])
    kinds = ", ".join(
        f"{n} {g}{'' if n == 1 else 's'}"
        for g in ("connection", "channel", "handle")
        if (n := sum(1 for r in rows if r["grammar"] == g))
    )
    notes = [
        tally(Counter(r["status"] for r in rows), kinds),
        "each class's commands against its Command Flow Summary, by channel-id and handle-id; "
        "each direction in wire order, their interleaving open",
    ]
    broken = [r for r in rows if r["status"] == "broken"]
    if not broken:
        return Section(title, notes=notes)
    table = tabulate(
        ("conversation", "grammar", "broke at offset", "direction", "command", "expected"),
        [
            (
                f"{connection_label(r['capture'], r['connection'])}"
                + ("" if r["grammar"] == "connection" else f" {r['grammar']} {r['id']}"),
                r["grammar"],
                r["offset"],
                r["direction"],
                r["message"],
                r["expected"],
            )
            for r in broken[:TABLE_ROWS]
        ],
        (False, False, True, False, False, False),
    )
    return Section(title, table, notes)


def _snake(name: str) -> str:
    """A message class's struct column: HandleSend -> handle_send."""
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")
