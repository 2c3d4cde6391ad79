"""AMQP's protocol headers, by the version an `<amqp>` root declares: the rule each version of
the protocol states, as data.

The class-and-method XML (0-8, 0-9, 0-9-1) numbers its version in `major`, `minor` and, from
0-9-1 on, `revision`; the header a client opens with changed shape at 0-9-1. Qpid's copy of
0-9-1 writes `minor="91"` with no revision, as Qpid's brokers and clients number that version
(their `ProtocolVersion.v0_91`), and sends the 0-9-1 header for it. A version not listed here
is no AMQP version specgen knows the header of: the front-end reports it (`version-unknown`)
and generation refuses it unless accepted by name.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KnownVersion:
    name: str  # as the protocol names itself: "0-9-1"
    header: bytes  # the eight octets a client opens the connection with
    rule: str  # where the header's shape comes from


CLASS_AND_METHOD: dict[tuple[int, ...], KnownVersion] = {
    (8, 0): KnownVersion(
        "0-8",
        b"AMQP\x01\x01\x08\x00",
        "AMQP 0-8 section 4.2.2: 'AMQP', 1 (protocol class), 1 (protocol instance), major 8, "
        "minor 0",
    ),
    (0, 9): KnownVersion(
        "0-9",
        b"AMQP\x01\x01\x00\x09",
        "AMQP 0-9 section 4.2.2: 'AMQP', 1 (protocol class), 1 (protocol instance), major 0, "
        "minor 9",
    ),
    (0, 9, 1): KnownVersion(
        "0-9-1",
        b"AMQP\x00\x00\x09\x01",
        "AMQP 0-9-1 section 4.2.2: 'AMQP', 0, then major 0, minor 9, revision 1 as 0 9 1",
    ),
    (0, 91): KnownVersion(
        "0-9-1",
        b"AMQP\x00\x00\x09\x01",
        'Qpid numbers 0-9-1 as 0-91 (its ProtocolVersion.v0_91, its copy\'s <amqp minor="91">)'
        " and opens with the 0-9-1 header",
    ),
}
"""Versions of the class-and-method XML, by (major, minor[, revision])."""


def fallback_header(version: tuple[int, ...]) -> bytes:
    """The header an unknown version would have by the shape of its neighbours: with a
    revision, 0-9-1's; without, 0-8's and 0-9's."""
    if len(version) == 3:
        return b"AMQP\x00" + bytes(version)
    return b"AMQP\x01\x01" + bytes(version)


AMQP10_HEADERS = {
    "AMQP": b"AMQP\x00\x01\x00\x00",
    "TLS": b"AMQP\x02\x01\x00\x00",
    "SASL": b"AMQP\x03\x01\x00\x00",
}
"""AMQP 1.0's three headers (transport section 2.2; security 5.1 and 5.3): protocol id 0, 2 or
3, then major 1, minor 0, revision 0."""
