"""What `specgen decode` reads: capture folders, their byte files and their index (no Spark here).

A capture is a folder holding, per connection, `<connection>.c2s.bin` and `<connection>.s2c.bin`
(each direction's bytes back to back, as any recorder wrote them), optionally
`<connection>.index.jsonl` (one JSON event per line; `read` events say which bytes arrived when)
and `capture.json`. The input is one capture folder or a folder of them, at any depth. Files that
belong to no capture are listed, never read; a folder without any capture is an error.
"""

from __future__ import annotations

import json
import os
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

DIRECTIONS = {"c2s": "client", "s2c": "server"}
"""Direction -> who sent its bytes (the codec's `sender`)."""

MAX_WALL = 1e11
"""Wall times at or past this (the year 5138) are not times: an index holding one is bad."""

EVENTS = frozenset({"accept", "read", "close", "recording_stopped"})
"""The index events `specgen capture` writes; only `read` events matter for decoding."""

_BIN = re.compile(r"^(?P<connection>.+)\.(?P<direction>c2s|s2c)\.bin$")
_INDEX = re.compile(r"^(?P<connection>.+)\.index\.jsonl$")
_NUMBER = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?"
_READ = re.compile(
    r'\{"event": "read", (?:"connection": "[^"\\\x00-\x1f]*", )?'
    r'"direction": "(c2s|s2c)", "offset": (0|[1-9][0-9]*), "length": (0|[1-9][0-9]*), '
    rf'(?:"mono": {_NUMBER}, )?"wall": ({_NUMBER}|null)\}}'
)
"""A read event exactly as `specgen capture` and the pcap job write it: one regular expression
instead of a JSON parse per line (an index holds a line per read); any other line is parsed as
JSON, so what it accepts and refuses is the same."""
_KNOWN = {"capture.json"}


class DecodeInputError(ValueError):
    """The input cannot be decoded as given; the message names the path (and line or offset)."""


class BadIndex(DecodeInputError):
    """An index that cannot be trusted: `path:line: what is wrong`. The decode job warns and
    decodes that connection's bytes without timestamps (an index only supplies those)."""


@dataclass(frozen=True)
class Stream:
    """One direction of one connection: a byte file of frames back to back."""

    capture: str
    connection: str
    direction: str
    path: Path
    size: int


@dataclass
class Reads:
    """An index's read events for one direction, by byte offset: when those bytes arrived."""

    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    walls: list[float | None] = field(default_factory=list)

    def within(self, start: int, end: int) -> Reads:
        """The reads that delivered any byte of [start, end)."""
        lo = bisect_right(self.ends, start)
        hi = bisect_left(self.starts, end)
        return Reads(self.starts[lo:hi], self.ends[lo:hi], self.walls[lo:hi])


@dataclass
class Inventory:
    root: Path
    captures: list[str]
    streams: list[Stream]
    indexes: dict[tuple[str, str], Path]  # (capture, connection) -> index file
    ignored: list[str]  # files, relative to root, that belong to no capture

    @property
    def empty(self) -> list[Stream]:
        return [s for s in self.streams if s.size == 0]


def scan(root: Path) -> Inventory:
    """Every capture under `root`: DecodeInputError when there is none, or `root` is no folder."""
    if not root.exists():
        raise DecodeInputError(f"{root}: no such folder")
    if not root.is_dir():
        raise DecodeInputError(f"{root}: not a folder; give the folder a capture was recorded into")
    inventory = Inventory(root, [], [], {}, [])
    for folder, dirs, files in os.walk(root, onerror=_walk_error):
        dirs.sort()
        here = Path(folder)
        rel = here.relative_to(root).as_posix()
        capture = root.resolve().name if rel == "." else rel
        bins = {name: m for name in files if (m := _BIN.match(name))}
        connections = {m["connection"] for m in bins.values()}
        for name in sorted(files):
            path = here / name
            if name in bins:
                m = bins[name]
                inventory.streams.append(
                    Stream(capture, m["connection"], m["direction"], path, _size(path))
                )
            elif (m := _INDEX.match(name)) and m["connection"] in connections:
                inventory.indexes[(capture, m["connection"])] = path
            elif not (bins and name in _KNOWN):
                inventory.ignored.append(path.relative_to(root).as_posix())
        if bins:
            inventory.captures.append(capture)
    if not inventory.streams:
        extra = f" (it holds {len(inventory.ignored)} other files)" if inventory.ignored else ""
        raise DecodeInputError(
            f"{root}: no capture in it: no <connection>.c2s.bin or .s2c.bin file{extra}"
        )
    return inventory


def load_index(path: Path, warn: Callable[[str], None] | None = None) -> dict[str, Reads]:
    """The read events of an index file, per direction, sorted by offset.

    A last line without its newline is what a recorder stopped mid-write leaves: it is skipped.
    Any other line that is not JSON, or a read event without direction, offset and length,
    raises BadIndex naming the file and line: one bad line makes every offset in the file
    suspect, so the caller drops the whole index rather than guess. A JSON line that is no event
    `specgen capture` writes (another recorder's, a newer version's) says nothing about offsets:
    it is skipped, and `warn` hears of the first such line with a count of the others.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise BadIndex(f"{path}: cannot read the index: {e}") from None
    lines = text.split("\n")
    events: dict[str, list[tuple[int, int, float | None]]] = {d: [] for d in DIRECTIONS}
    unknown = _Unknown(path)
    try:
        _read_events(path, lines, events, unknown)
    finally:  # a bad index is reported too; its unknown lines come first, as they came first
        if warn is not None and (line := unknown.warning()) is not None:
            warn(line)
    out: dict[str, Reads] = {}
    for direction, reads in events.items():
        reads.sort()
        out[direction] = Reads([r[0] for r in reads], [r[1] for r in reads], [r[2] for r in reads])
    return out


@dataclass
class _Unknown:
    """The first index line the reader does not understand, and how many more there are."""

    path: Path
    first: str | None = None
    more: int = 0

    def saw(self, number: int, what: str) -> None:
        if self.first is None:
            self.first = f"{self.path}:{number}: {what}"
        else:
            self.more += 1

    def warning(self) -> str | None:
        if self.first is None:
            return None
        others = f", and {self.more:,} more line{'s' if self.more > 1 else ''} like it"
        return f"warning: {self.first}; ignored{others if self.more else ''}"


def _read_events(
    path: Path,
    lines: list[str],
    events: dict[str, list[tuple[int, int, float | None]]],
    unknown: _Unknown,
) -> None:
    fast = _READ.fullmatch
    for number, line in enumerate(lines, 1):
        if m := fast(line):
            direction, offset, length, wall = m.groups()
            at = int(offset)
            stamp = None if wall == "null" else float(wall)
            if stamp is None or 0 <= stamp < MAX_WALL:
                events[direction].append((at, at + int(length), stamp))
                continue
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            if number == len(lines):  # unterminated last line
                break
            raise BadIndex(f"{path}:{number}: not a JSON line") from None
        if not isinstance(event, dict) or not isinstance(event.get("event"), str):
            unknown.saw(number, 'a JSON line that is not an index event (no "event" field)')
            continue
        if event["event"] not in EVENTS:
            unknown.saw(number, f"unknown index event {json.dumps(event['event'])}")
            continue
        if event["event"] != "read":
            continue
        direction, offset, length = (event.get(k) for k in ("direction", "offset", "length"))
        wall = event.get("wall")
        if (
            direction not in DIRECTIONS
            or not isinstance(offset, int)
            or not isinstance(length, int)
            or offset < 0
            or length < 0
        ):
            raise BadIndex(
                f"{path}:{number}: a read event needs direction (c2s or s2c), offset and length"
            )
        stamp = float(wall) if isinstance(wall, int | float) else None
        if stamp is not None and not 0 <= stamp < MAX_WALL:  # NaN fails this too
            # as a timestamp it would overflow the microseconds column and fail the whole task
            raise BadIndex(f"{path}:{number}: wall {wall!r} is not a time in seconds since 1970")
        events[direction].append((offset, offset + length, stamp))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError as e:
        raise DecodeInputError(f"{path}: {e.strerror}") from None


def _walk_error(e: OSError) -> None:
    raise DecodeInputError(f"{e.filename}: {e.strerror}")
