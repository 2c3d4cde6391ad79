"""The rules of its spec a capture breaks, for every protocol: `specgen report`'s "Spec rules".

`specgen decode` writes, per frame, the rules it breaks alone or as its sender sent it (the
frames table's `violations`, from the version's generated `rules`). A rule across messages (a
value that must not exceed one an earlier message gave: AMQP 0-9-1's Connection.TuneOk
channel-max against Connection.Tune's) is read here, per connection, from the struct columns of
the two messages: the latest earlier one by read time (any in the connection, where the capture
has no timestamps). Each broken rule is one row: its kind, the spec line, the class and field,
which peer sent the frames, how many, the first few (capture, connection, offset) and one
example sentence. A capture that breaks none says so, with how many rules were checked.
"""

from __future__ import annotations

import importlib
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from specgen.pipeline.sections import Section, connection_label, tabulate
from specgen.registry import SpecVersion

COLUMN = "violations"
FIRST = 3
"""How many of a rule's frames the table names."""

SENDERS = {"c2s": "client", "s2c": "server"}
TITLE = "Spec rules"


def applies(columns: set[str]) -> bool:
    return COLUMN in columns


class Analyses:
    """The rules of the spec version the frames were decoded with (its generated `rules`)."""

    code_names: dict[int, str] = {}
    ok_codes: set[int] = set()

    def __init__(self, spec: SpecVersion) -> None:
        self.rules = importlib.import_module(f"{spec.import_name}.rules")
        self.columns: dict[str, str] = importlib.import_module(
            f"{spec.import_name}.spark_schema"
        ).MESSAGE_COLUMNS

    def response_counts(self, frames: DataFrame, counts: DataFrame, notes: list[str]) -> DataFrame:
        return counts

    def sections(self, frames: DataFrame, timed: bool) -> list[Section]:
        rows = _alone(frames) + _across(frames, self.rules.RULES, self.columns, timed)
        rows.sort(key=lambda r: (r[0], r[2], r[1]))
        rules = [r for of_class in self.rules.RULES.values() for r in of_class]
        across = sum(1 for r in rules if r.other is not None)
        checked = (
            f"{len(rules) - across} rules checked on each frame, {across} across messages "
            f"(the spec's checkable rules: `specgen ir --rules`)"
        )
        if not rows:
            return [Section(TITLE, notes=[f"No frame breaks a rule of the spec: {checked}."])]
        table = tabulate(
            ("rule", "spec", "message.field", "sent by", "frames", "first frames", "example"),
            [tuple(r) for r in rows],
            (False, False, False, False, True, False, False),
        )
        return [Section(TITLE, table, notes=[checked])]


def _alone(frames: DataFrame) -> list[list[Any]]:
    """The rules frames break alone or by their sender, from the `violations` column."""
    broken = frames.where(F.col(COLUMN).isNotNull()).select(
        "capture", "connection", "direction", "offset", F.explode(COLUMN).alias("v")
    )
    grouped = broken.groupBy("v.rule", "v.spec", "v.message", "v.field", "direction").agg(
        F.count("*").alias("frames"),
        F.sort_array(F.collect_list(F.struct("capture", "connection", "offset"))).alias("all"),
        F.min(F.concat_ws(": ", F.col("v.value"), F.col("v.text"))).alias("example"),
    )
    out = []
    for r in grouped.collect():
        where = r["message"] + (f".{r['field']}" if r["field"] else "")
        out.append(
            [
                r["rule"],
                r["spec"],
                where,
                SENDERS.get(r["direction"], r["direction"]),
                r["frames"],
                _first(r["all"]),
                r["example"],
            ]
        )
    return out


def _first(frames: list[Any]) -> str:
    shown = [f"{connection_label(f['capture'], f['connection'])}@{f['offset']}" for f in frames]
    return ", ".join(shown[:FIRST]) + (", ..." if len(shown) > FIRST else "")


def _across(
    frames: DataFrame, rules: dict[str, Any], columns: dict[str, str], timed: bool
) -> list[list[Any]]:
    """The rules comparing a message's field with an earlier message's, per connection."""
    out: list[list[Any]] = []
    for cls, of_class in sorted(rules.items()):
        for rule in of_class:
            if rule.other is None or not rule.field:
                continue
            other_cls, other_attr = rule.other
            column, other_column = columns.get(cls), columns.get(other_cls)
            if column not in frames.columns or other_column not in frames.columns:
                continue  # neither message in this capture's table: nothing to compare
            out.extend(_compare(frames, rule, cls, column, other_cls, other_column, timed))
    return out


_COMPARE = {
    "le": lambda a, b: a <= b,
    "lt": lambda a, b: a < b,
    "ge": lambda a, b: a >= b,
    "gt": lambda a, b: a > b,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
}


def _compare(
    frames: DataFrame,
    rule: Any,
    cls: str,
    column: str,
    other_cls: str,
    other_column: str,
    timed: bool,
) -> list[list[Any]]:
    key = ["capture", "connection"]
    mine = frames.where(F.col("message") == cls).select(
        *key,
        "direction",
        "offset",
        F.col("timestamp").alias("ts"),
        _path(column, rule.field).alias("value"),
    )
    theirs = frames.where(F.col("message") == other_cls).select(
        *key,
        F.col("timestamp").alias("other_ts"),
        F.col("offset").alias("other_offset"),
        _path(other_column, rule.other[1]).alias("limit"),
    )
    joined = mine.join(theirs, key)
    if timed:  # the latest earlier one; without timestamps, any of the connection's
        joined = joined.where(F.col("other_ts").isNull() | (F.col("other_ts") <= F.col("ts")))
    latest = Window.partitionBy(*key, "offset", "direction").orderBy(
        F.col("other_ts").desc_nulls_last(), F.col("other_offset").desc()
    )
    paired = joined.withColumn("n", F.row_number().over(latest)).where(F.col("n") == 1)
    paired = paired.where(F.col("value").isNotNull() & F.col("limit").isNotNull())
    if rule.unbounded is not None:
        paired = paired.where(F.col("limit") != F.lit(rule.unbounded))
    broken = paired.where(~_COMPARE[rule.kind](F.col("value"), F.col("limit")))
    rows = broken.orderBy(*key, "offset").collect()
    if not rows:
        return []
    sides = sorted({SENDERS.get(r["direction"], r["direction"]) for r in rows})
    first = rows[0]
    other = ".".join(rule.other)
    return [
        [
            rule.kind,
            rule.spec,
            f"{cls}.{rule.field}",
            ", ".join(sides),
            len(rows),
            _first([r.asDict() for r in rows]),
            f"{first['value']}: over {other}, {first['limit']}"
            if rule.kind in ("le", "lt")
            else f"{first['value']} against {other}, {first['limit']}",
        ]
    ]


def _path(column: str, attr: str) -> Any:
    col = F.col(column)
    for part in attr.split("."):
        col = col.getField(part)
    return col
