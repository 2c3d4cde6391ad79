"""Connections on a shared port that speak another protocol, told apart by how their client opens.

Several protocols share a port (AMQP 0-9-1, 0-10 and 1.0 all default to 5672), so a pcap's
connections on it need not all speak the protocol decoded. Each of these protocols has its
client open with fixed bytes: a preamble before its first frame (0-9-1's and 0-10's protocol
headers, `framing.PREAMBLES`) or one of the protocol headers that stand where frames start
(1.0's, `framing.PROTOCOL_HEADERS`). A connection seen from its SYN whose client's bytes open
with none of them is another protocol's (or the same protocol's other version): decoding its
bytes would only give rejects, so its byte files are set aside in OUT/other-protocols, in the
capture layout, where another `specgen decode` can read them, and the job says so. A connection
seen from its middle is kept (its opening is not in the capture), as is one whose client sent
fewer bytes than an opening but agrees with one so far, and every connection of a protocol with
no fixed opening (RabbitMQ Streams).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

OTHER = "other-protocols"
"""OUT's folder of the byte files of connections that speak another protocol."""


@dataclass(frozen=True)
class Foreign:
    """A connection set aside: where, what its client opened with, and its bytes."""

    capture: str
    connection: str
    opening: bytes  # the client's first bytes (as many as the longest opening)
    bytes: int  # its byte files' bytes, both directions and every part


def openings(framing: ModuleType) -> tuple[bytes, ...]:
    """The byte strings one of which a client's bytes start with, from the protocol's
    generated framing module; () when its clients open with no fixed bytes."""
    preambles: dict[str, bytes] = getattr(framing, "PREAMBLES", {})
    client = preambles.get("client") or preambles.get("both")
    if client:
        return (bytes(client),)
    return tuple(bytes(h) for h in getattr(framing, "PROTOCOL_HEADERS", ()))


def set_aside(
    streams: Path, out: Path, directions: list[dict[str, Any]], framing: ModuleType
) -> tuple[list[dict[str, Any]], list[Foreign]]:
    """Move the byte files of every connection in `directions` (the reassembly's summaries)
    whose client opened with none of the protocol's openings from `streams` to OUT/OTHER; the
    summaries of the connections kept, and those set aside."""
    # not in decode.WRITES: the decode that follows clears those, and this folder is written
    # before it; each pcap job replaces it here instead
    shutil.rmtree(out / OTHER, ignore_errors=True)
    known = openings(framing)
    if not known:
        return directions, []
    longest = max(len(o) for o in known)
    foreign: list[Foreign] = []
    for d in directions:
        if d["direction"] != "c2s" or d["mid_stream"]:
            continue
        path = streams / d["capture"] / f"{d['connection']}.c2s.bin"
        with path.open("rb") as f:
            head = f.read(longest)
        if any(head[: len(o)] == o[: len(head)] for o in known):
            continue  # an opening, or the start of one
        moved = _move(streams / d["capture"], out / OTHER / d["capture"], d["connection"])
        foreign.append(Foreign(d["capture"], d["connection"], head, moved))
    gone = {(f.capture, f.connection) for f in foreign}
    kept = [d for d in directions if (d["capture"], d["connection"]) not in gone]
    return kept, foreign


def _move(source: Path, target: Path, connection: str) -> int:
    """Move one connection's files (every part, both directions, its indexes); their bytes."""
    target.mkdir(parents=True, exist_ok=True)
    size = 0
    for path in sorted(source.iterdir()):
        name = path.name
        if not (name.startswith(f"{connection}.") or name.startswith(f"{connection}@")):
            continue
        if name.endswith(".bin"):
            size += path.stat().st_size
        shutil.move(str(path), target / name)
    return size


def lines(foreign: list[Foreign], out: Path) -> list[str]:
    """What the job says of the connections set aside."""
    if not foreign:
        return []
    n = len(foreign)
    total = sum(f.bytes for f in foreign)
    shown = ", ".join(f"{f.capture}/{f.connection} ({f.opening!r})" for f in foreign[:3]) + (
        f" and {n - 3} more" if n > 3 else ""
    )
    return [
        f"pcap: {n:,} connection{'s' if n != 1 else ''} of another protocol "
        f"({total:,} bytes) set aside in {out / OTHER}: their client opened otherwise: {shown}"
    ]
