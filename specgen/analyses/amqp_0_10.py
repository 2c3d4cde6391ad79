"""AMQP 0-10 analyses for `specgen report`: command-to-completion latency, transfers per
destination, the outcomes of transfers (accepted, rejected, released), and conversations
checked against the spec's dialogue grammars.

How the rows are tied together (amqp.0-10.xml, the session class):

- each sender numbers the commands it sends on a session (a channel) in order, from the id its
  last session.command-point names (0 when the capture shows none); controls are not numbered;
- the receiver answers with session.completed, whose `commands` sequence set names the ids it
  has completed; a command's latency runs from its row to the first completion covering it;
- message.accept, message.reject and message.release name transfers by command id, in sets,
  sent by the transfers' receiver; a transfer's outcome is the first of them covering it.

A row is a whole control or command (the frame that completes it, `kind` "control" or
"command"); the other frames' rows (`kind` "frame") are not counted here. Ids are compared as
plain numbers: a session that wraps past 2^32 commands is not handled.

Conversations: each connection's connection controls, after the client's protocol header, are
checked against the `connection` grammar, and each transfer with its outcome against
`message` (`*:TRANSFER [R:ACCEPT / R:REJECT / R:RELEASE]`), with the generated
`dialogue.check(..., crossing=True)`. Transfers are checked by kind: every transfer of one
sender with the same outcome is the same conversation, checked once and counted.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from specgen.analyses.conversations import check, dialogue_of, tally
from specgen.pipeline.sections import (
    DIRECTIONS,
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

PROTOCOL = "amqp-0-10"
COLUMNS = ("message_transfer", "session_completed")
"""The struct columns this module reads; it runs when the frames table has them all."""

OUTCOMES = {
    "message_accept": "accepted",
    "message_reject": "rejected",
    "message_release": "released",
}
"""The commands that settle a transfer, and the outcome each gives it."""

_SETTLED_BY = {
    "accepted": "MessageAccept",
    "rejected": "MessageReject",
    "released": "MessageRelease",
}
"""The message that gives a transfer each outcome."""

_SESSION = ["capture", "connection", "channel"]


def applies(columns: set[str]) -> bool:
    return set(COLUMNS) <= columns and {"channel", "kind"} <= columns


class Analyses:
    """The analyses of frames decoded with one version of AMQP 0-10 (`spec`): conversations
    checked against that version's generated `dialogue`."""

    def __init__(self, spec: SpecVersion) -> None:
        self.package = spec.import_name
        self.code_names: dict[int, str] = {}  # completion, not response codes, answers commands
        self.ok_codes: set[int] = set()

    def response_counts(self, frames: DataFrame, counts: DataFrame, notes: list[str]) -> DataFrame:
        return counts

    def sections(self, frames: DataFrame, timed: bool) -> list[Section]:
        commands = _numbered(frames).persist()
        try:
            settled = _settled(frames, commands).persist()
            try:
                return [
                    _completion(frames, commands, timed),
                    _destinations(frames),
                    _outcomes(settled),
                    _conversations(frames, settled, self.package),
                ]
            finally:
                settled.unpersist()
        finally:
            commands.unpersist()


def _numbered(frames: DataFrame) -> DataFrame:
    """Every command row with `id`: its sender's number for it on its session."""
    point = F.col("session_command_point")
    starts = (
        frames.filter(point.isNotNull())
        .groupBy(*_SESSION, "direction")
        .agg(F.min_by(point["command_id"], F.col("offset")).alias("start"))
    )
    order = Window.partitionBy(*_SESSION, "direction").orderBy("offset")
    return (
        frames.filter(F.col("kind") == "command")
        .join(starts, [*_SESSION, "direction"], "left")
        .withColumn("id", F.row_number().over(order) - 1 + F.coalesce(F.col("start"), F.lit(0)))
        .select(
            *_SESSION,
            "direction",
            "command",
            "offset",
            "ts",
            "id",
            F.col("message_transfer")["destination"].alias("destination"),
            F.col("message_transfer")["accept_mode"].alias("accept_mode"),
            "body_size",
        )
    )


def _ranges(frames: DataFrame, column: str, prefix: str) -> DataFrame:
    """One row per (first, last) range of the sequence set in `column`'s struct member
    (`commands` or `transfers`), with the row's session, direction, offset and time."""
    member = "commands" if column == "session_completed" else "transfers"
    return (
        frames.filter(F.col(column).isNotNull())
        .select(
            *[F.col(c).alias(f"{prefix}_{c}") for c in _SESSION],
            F.col("direction").alias(f"{prefix}_direction"),
            F.col("offset").alias(f"{prefix}_offset"),
            F.col("ts").alias(f"{prefix}_ts"),
            F.explode(F.col(column)[member]).alias("range"),
        )
        .select("*", F.col("range")["first"].alias("low"), F.col("range")["last"].alias("high"))
    )


def _covering(commands: DataFrame, ranges: DataFrame, prefix: str) -> list[Column]:
    """The join condition: the range was sent on the command's session by its receiver and
    names its id."""
    same = [F.col(c) == F.col(f"{prefix}_{c}") for c in _SESSION]
    return [
        *same,
        F.col("direction") != F.col(f"{prefix}_direction"),
        F.col("id") >= F.col("low"),
        F.col("id") <= F.col("high"),
    ]


def _first(joined: DataFrame, prefix: str) -> DataFrame:
    """Per command, the first answer (by time, then offset) that covers it; none keeps nulls."""
    order = Window.partitionBy(*_SESSION, "direction", "id").orderBy(
        F.col(f"{prefix}_ts").asc_nulls_last(), F.col(f"{prefix}_offset").asc_nulls_last()
    )
    return joined.withColumn("n", F.row_number().over(order)).filter(F.col("n") == 1).drop("n")


def _completion(frames: DataFrame, commands: DataFrame, timed: bool) -> Section:
    title = "Command-to-completion latency (session.completed)"
    done = _ranges(frames, "session_completed", "c")
    per_command = _first(commands.join(done, _covering(commands, done, "c"), "left"), "c")
    rows = (
        per_command.withColumn("latency_ms", (F.col("c_ts") - F.col("ts")) / 1000.0)
        .groupBy("direction", "command")
        .agg(
            F.count("*").alias("commands"),
            F.count("c_offset").alias("completed"),
            percentiles("latency_ms").alias("p"),
        )
        .orderBy(F.desc("commands"), "direction", "command")
        .limit(TABLE_ROWS)
        .collect()
    )
    if not rows:
        return Section(title, notes=["no commands in this capture"])
    table = tabulate(
        ("sent", "command", "commands", "completed", "p50 ms", "p95 ms", "p99 ms"),
        [
            (
                DIRECTIONS.get(r["direction"], r["direction"]),
                r["command"],
                r["commands"],
                r["completed"],
                *quantiles(r["p"]),
            )
            for r in rows
        ],
        (False, False, True, True, True, True, True),
    )
    notes = [
        "commands numbered per session and sender from the session's command-point; the first "
        "session.completed from the other side that names a command completes it"
    ]
    return Section(title, table, [NO_TIMESTAMPS, *notes] if not timed else notes)


def _destinations(frames: DataFrame) -> Section:
    title = "Transfers per destination"
    transfer = F.col("message_transfer")
    rows = (
        frames.filter(transfer.isNotNull())
        .groupBy("direction", transfer["destination"].alias("destination"))
        .agg(
            F.count("*").alias("transfers"),
            F.coalesce(F.sum("body_size"), F.lit(0)).alias("bytes"),
            F.sum("assembly_frames").alias("frames"),
            sum_if(F.col("assembly_frames") > 3, F.lit(1)).alias("multi"),
        )
        .orderBy(F.desc("transfers"), "direction", "destination")
        .limit(TABLE_ROWS)
        .collect()
    )
    if not rows:
        return Section(title, notes=["no message.transfer in this capture"])
    table = tabulate(
        ("sent", "destination", "transfers", "body bytes", "frames", "bodies over a frame"),
        [
            (
                DIRECTIONS.get(r["direction"], r["direction"]),
                r["destination"],
                r["transfers"],
                r["bytes"],
                r["frames"],
                r["multi"],
            )
            for r in rows
        ],
        (False, False, True, True, True, True),
    )
    notes = [
        "frames: all the frames of the transfers (command, header and body segments); a body "
        "over a frame: a transfer of more than three frames"
    ]
    return Section(title, table, notes)


def _settled(frames: DataFrame, commands: DataFrame) -> DataFrame:
    """Every transfer with its outcome: the first accept, reject or release covering it."""
    present = [c for c in OUTCOMES if c in frames.columns]
    transfers = commands.filter(F.col("command") == "message.transfer")
    if not present:
        return transfers.withColumn("outcome", F.lit(None).cast("string"))
    answers = None
    for column in present:
        part = _ranges(frames, column, "o").withColumn("outcome", F.lit(OUTCOMES[column]))
        answers = part if answers is None else answers.unionByName(part)
    assert answers is not None
    return _first(transfers.join(answers, _covering(transfers, answers, "o"), "left"), "o")


def _outcomes(settled: DataFrame) -> Section:
    title = "Transfer outcomes (message.accept / reject / release)"
    outcome = F.col("outcome")
    rows = (
        settled.groupBy("direction", "destination")
        .agg(
            F.count("*").alias("transfers"),
            *[sum_if(outcome == o, F.lit(1)).alias(o) for o in OUTCOMES.values()],
            # accept-mode "none" (1): the sender asked for no accept
            sum_if(outcome.isNull() & (F.col("accept_mode") == 1), F.lit(1)).alias("unasked"),
            sum_if(outcome.isNull() & (F.col("accept_mode") != 1), F.lit(1)).alias("open"),
        )
        .orderBy(F.desc("transfers"), "direction", "destination")
        .limit(TABLE_ROWS)
        .collect()
    )
    if not rows:
        return Section(title, notes=["no message.transfer in this capture"])
    table = tabulate(
        (
            "sent",
            "destination",
            "transfers",
            *OUTCOMES.values(),
            "no accept asked",
            "not settled in the capture",
        ),
        [
            (
                DIRECTIONS.get(r["direction"], r["direction"]),
                r["destination"],
                r["transfers"],
                *[r[o] for o in OUTCOMES.values()],
                r["unasked"],
                r["open"],
            )
            for r in rows
        ],
        (False, False, True, True, True, True, True, True),
    )
    notes = ["a transfer's outcome is the first accept, reject or release from its receiver"]
    return Section(title, table, notes)


def _conversations(frames: DataFrame, settled: DataFrame, package: str) -> Section:
    title = "Conversations against the grammar"
    dialogue = dialogue_of(package)
    verdicts: list[tuple[str, str, int, Any, str]] = []  # (what, grammar, count, verdict, where)
    # connection controls: few per connection, so each connection's are gathered whole
    controls = (
        frames.filter(F.col("command").startswith("connection.") & (F.col("kind") == "control"))
        .groupBy("capture", "connection")
        .agg(F.sort_array(F.collect_list(F.struct("offset", "direction", "message"))).alias("s"))
        .collect()
    )
    # a row per connection, every one collected: ordered on the driver, not by a global sort's
    # two more jobs
    controls = ordered(controls, "capture", "connection")
    for r in controls:
        # each direction in wire order; the check leaves their interleaving open
        sent = [
            (s["direction"], s["message"])
            for s in sorted(r["s"], key=lambda s: (s["direction"], s["offset"]))
        ]
        checked = check(dialogue, "connection", sent, opens=True)
        where = connection_label(r["capture"], r["connection"])
        verdicts.append((where, "connection", 1, checked.verdict, where))
    # unordered: the table lists them as Spark's aggregate gives them (a change to this query
    # can change their order)
    kinds = settled.groupBy("direction", "outcome").count().collect()
    for r in kinds:
        sent = [(r["direction"], "MessageTransfer")]
        if r["outcome"] is not None:  # by the transfer's receiver
            sent.append(("s2c" if r["direction"] == "c2s" else "c2s", _SETTLED_BY[r["outcome"]]))
        what = f"transfers {DIRECTIONS.get(r['direction'], r['direction'])}, " + (
            r["outcome"] or "no outcome"
        )
        verdicts.append(
            (what, "message", r["count"], check(dialogue, "message", sent).verdict, what)
        )
    if not verdicts:
        return Section(title, notes=["no connection controls nor transfers in this capture"])
    counts: Counter[str] = Counter()
    for _, _, n, verdict, _ in verdicts:
        counts[verdict.status] += n
    notes = [
        tally(counts),
        "each connection's controls against the connection grammar; each transfer with its "
        "outcome against the message grammar",
    ]
    table = tabulate(
        ("conversation", "grammar", "count", "verdict", "expected"),
        [
            (what, grammar, n, verdict.status, ", ".join(verdict.expected))
            for what, grammar, n, verdict, _ in verdicts[:TABLE_ROWS]
        ],
        (False, False, True, False, False),
    )
    return Section(title, table, notes)
