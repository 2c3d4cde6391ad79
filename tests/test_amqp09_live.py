"""AMQP 0-9, generated at test time from Apache Qpid's XML with no code of its own, against a
real RabbitMQ, which takes 0-9's protocol header (`AMQP` 1 1 0 9) and serves it as 0-9-1.

`specgen generate amqp.0-9.xml --out DIR` makes the codec, exactly as a user would run it (the
`content` domain the XML uses but never declares comes from specs/amqp-0-9-1/overlay.json); the
plain-socket client of the 0-9-1 live test (tests/amqp_client.py) drives it through the
conversation the 0-8 live test holds (tests/amqp_live_common.py): log in with a frame-max of
4096 so that bodies span several frames, open channels, take an access ticket (0-9 still has
the Access class), declare an exchange and a queue and bind them, publish 1,000 messages with
every basic property in a transaction, get one, consume the rest under a prefetch limit with
a consume filter and ack them, see the next get come back empty, provoke a channel error (a
passive declare of a missing queue: Channel.Close 404) and close. Every frame the server sent
must re-encode to its very bytes, the client's byte stream must read back frame by frame, and
the number of frames of each kind must be what the conversation implies.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from amqp_client import AmqpClient
from amqp_live_common import (
    CONSUMER,
    FRAME_MAX,
    PUBLISHER,
    check_wire,
    converse,
    generated,
    sibling,
    summary,
)
from rabbitmq import RabbitNode

# apache/qpid specs/amqp.0-9.xml at 6bad3035d6b23cc239b88bd71410cb627055b794
SPEC = Path(__file__).parent / "real_specs" / "apache-qpid" / "amqp.0-9.xml"
PACKAGE = "specgen_amqp09_live"  # the folder generated into, imported under this name


@pytest.fixture(scope="session")
def amqp09(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The AMQP 0-9 codec, generated from Qpid's XML as given (no flags) and imported."""
    assert SPEC.is_file(), f"{SPEC} is missing: it is part of the repository"
    yield from generated(tmp_path_factory, SPEC, PACKAGE, "amqp_0_9_1.amqp_0_9")


def test_amqp09_conversation(rabbit: RabbitNode, amqp09: ModuleType) -> None:
    a = amqp09
    # the protocol header of 0-9, from the XML's <amqp major = "0" minor = "9">: class 1,
    # instance 1, then major and minor (0-9-1's header, `AMQP` 0 0 9 1, came later)
    assert sibling(a, "framing").PREAMBLES == {"client": b"AMQP\x01\x01\x00\x09"}
    c = AmqpClient(port=rabbit.amqp_port, codec=a)
    # Connection.Start says 0-9 (version-major 0, version-minor 9): RabbitMQ's reader takes
    # `AMQP` 1 1 0 9 as 0-9, reports it so, and reads and writes it with its 0-9-1 framing
    c.open(version=(0, 9), frame_max=FRAME_MAX)
    assert c.frame_max == FRAME_MAX
    assert c.server_properties["product"] == "RabbitMQ"
    # 0-9's Basic.Consume ends in a table where 0-8's has none: the 0-9 text calls it
    # `filter`, Qpid's 2009 copy (tests/real_specs) `arguments` ("RG changed name from filter
    # to arguments ... no effect on the wire level encoding"), as 0-9-1 does. RabbitMQ reads
    # it as the arguments (x-priority, a consumer priority, must be an integer there)
    names = [f.name for f in dataclasses.fields(a.BasicConsume)]
    table = "filter" if "filter" in names else "arguments"
    assert names[-2:] == [table, "channel"], names
    talk = converse(c, a, "09", consume_fields={table: {"x-priority": 10}})
    # RabbitMQ answers every Access.Request with ticket 1, and checks no ticket after
    assert talk.tickets == {PUBLISHER: 1, CONSUMER: 1}
    wire = check_wire(c, a, talk)
    # 0-9's Channel.OpenOk carries a channel-id (a long string), the reserved long string of
    # 0-9-1's, which RabbitMQ sends empty
    opened = [m for m in wire.server if isinstance(m, a.ChannelOpenOk)]
    assert [m.channel_id for m in opened] == [b""] * 3
    print(summary("0-9", talk, wire))
