"""What a report is made of: sections of tables, notes and charts, and the helpers that build them.

Each protocol's analysis (`specgen/analyses/`) builds its own sections from these, and
`specgen/report.py`, which stands above the analyses and gathers theirs, the generic ones; this
module imports neither.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Protocol

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

NO_TIMESTAMPS = "no timestamps in this capture"
DIRECTIONS = {"c2s": "client → server", "s2c": "server → client"}
PERCENTILES = (0.5, 0.95, 0.99)
# percentile_approx keeps a bounded sketch per group, so it scales to any capture; at this
# accuracy its answer is an actual latency within 0.01% of the exact rank.
ACCURACY = 10_000
TABLE_ROWS = 50
MAX_POINTS = 100
# bucket widths for the time charts, in microseconds: the narrowest that keeps a chart under
# MAX_POINTS buckets is used, so a 100 ms capture is drawn in milliseconds and a day in minutes
BUCKETS = (
    *(ms * 1_000 for ms in (1, 2, 5, 10, 20, 50, 100, 200, 500)),
    *(s * 1_000_000 for s in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600)),
    *(s * 1_000_000 for s in (7200, 21600, 43200, 86400)),
)


Cell = int | float | str | None
"""A table value as JSON has it: counts and measures as numbers, times as ISO 8601 strings, None
where there is no value (a latency without timestamps)."""


@dataclass(frozen=True)
class Table:
    columns: tuple[str, ...]
    values: list[tuple[Cell, ...]]
    numeric: tuple[bool, ...]  # right-aligned in both renderings

    @property
    def rows(self) -> list[tuple[str, ...]]:
        """The values as the text and the page show them."""
        return [tuple(map(_text, row)) for row in self.values]


def _text(value: Cell) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):  # milliseconds and seconds, to the microsecond they came in
        return f"{value:.3f}"
    return str(value)


@dataclass(frozen=True)
class Chart:
    id: str
    figure: dict[str, Any]  # plotly.js `data` and `layout`, plain JSON


@dataclass
class Section:
    title: str
    table: Table | None = None
    notes: list[str] = field(default_factory=list)
    charts: list[Chart] = field(default_factory=list)


class Analysis(Protocol):
    """A protocol's own analyses (`specgen/analyses/`): sections beyond the generic ones, names
    for its response codes, and how its frames count them."""

    code_names: dict[int, str]
    ok_codes: set[int]

    def response_counts(
        self, frames: DataFrame, counts: DataFrame, notes: list[str]
    ) -> DataFrame: ...

    def sections(self, frames: DataFrame, timed: bool) -> list[Section]: ...


def connection_label(capture: str, connection: str) -> str:
    return f"{capture}/{connection}"


def tabulate(columns: Sequence[str], rows: list[tuple[Any, ...]], numeric: Sequence[bool]) -> Table:
    return Table(tuple(columns), [tuple(map(_cell, r)) for r in rows], tuple(numeric))


def _cell(value: Any) -> Cell:
    """A value Spark returned as a JSON-native one (a sum over decimals is a Decimal)."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if value is None or isinstance(value, int | float | str):
        return value
    return str(value)


def ordered(
    rows: Sequence[Any], *keys: str | tuple[str, bool], limit: int | None = None
) -> list[Any]:
    """`rows` (collected Rows or dicts) in the order Spark's `orderBy` gives them, the first
    `limit`: each key a column name (ascending, nulls first, Spark's default) or `(name, True)`
    (descending, nulls last, as `F.desc`). For tables finished on the driver from a small
    aggregate collected once, instead of a Spark job per table; strings compare as Spark's do
    (UTF-8 byte order is code point order)."""
    out = list(rows)
    # a stable sort per key, the last key first, gives the keys' lexicographic order
    for key in reversed(keys):
        name, descending = (key, False) if isinstance(key, str) else key
        present = [r for r in out if r[name] is not None]
        missing = [r for r in out if r[name] is None]
        present.sort(key=_item(name), reverse=descending)
        out = present + missing if descending else missing + present
    return out if limit is None else out[:limit]


def _item(name: str) -> Callable[[Any], Any]:
    return lambda r: r[name]


def sum_if(condition: Column, value: Column) -> Column:
    return F.coalesce(F.sum(F.when(condition, value).otherwise(0)), F.lit(0))


def percentiles(column: str) -> Column:
    """The column's PERCENTILES, as one array per group."""
    return F.percentile_approx(column, list(PERCENTILES), ACCURACY)


def quantiles(values: list[float] | None) -> tuple[float | None, ...]:
    """A `percentiles` result as table cells: one per percentile, None where none was measured."""
    return tuple(values) if values is not None else (None,) * len(PERCENTILES)


def chart_layout(title: str, x: str, y: str, **extra: Any) -> dict[str, Any]:
    return {
        "title": {"text": title},
        "xaxis": {"title": {"text": x}, "automargin": True},
        "yaxis": {"title": {"text": y}, "automargin": True, "rangemode": "tozero"},
        "height": 380,
        "margin": {"t": 50, "r": 20, "b": 40, "l": 60},
        "legend": {"orientation": "h", "y": -0.25},
        **extra,
    }


def bucket_width(first: int, last: int) -> int:
    """The time charts' bucket width in microseconds, for a capture from `first` to `last`."""
    span = last - first
    for width in BUCKETS:
        if span / width < MAX_POINTS:
            return width
    return span // MAX_POINTS + 1


def width_text(micros: int) -> str:
    """A bucket width as the notes and chart titles say it: `2 ms`, `1 s`, `300 s`."""
    if micros < 1_000_000:
        return f"{micros // 1_000} ms"
    return f"{micros // 1_000_000} s"


def iso_time(micros: int) -> str:
    """A time as the tables and charts give it: ISO 8601, UTC, to the millisecond."""
    return datetime.fromtimestamp(micros / 1e6, UTC).isoformat(timespec="milliseconds")
