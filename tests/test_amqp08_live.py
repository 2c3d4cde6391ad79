"""AMQP 0-8, generated at test time from the corpus's XML with no code of its own, against a
real RabbitMQ (3.10 still answers the 0-8 protocol header with Connection.Start 8-0).

`specgen generate amqp0-8.xml --out DIR` makes the codec, exactly as a user would run it; the
plain-socket client of the 0-9-1 live test (tests/amqp_client.py) drives it through the
conversation of tests/amqp_live_common.py, which the 0-9 live test holds too: log in with a
frame-max of 4096 so that bodies span several frames, open channels, take an access ticket
(0-8's Access class), declare an exchange and a queue and bind them, publish 1,000 messages
with every basic property in a transaction, get one and see the next get come back empty,
consume the rest under a prefetch limit and ack them, provoke a channel error (a passive
declare of a missing queue: Channel.Close 404) and close. Every frame the server sent must
re-encode to its very bytes, the client's byte stream must read back frame by frame, and the
number of frames of each kind must be what the conversation implies.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest
from amqp_client import AmqpClient
from amqp_live_common import FRAME_MAX, check_wire, converse, generated, sibling, summary
from corpus import corpus_file
from rabbitmq import RabbitNode

SPEC = "amqp-0-8/amqp0-8.xml"
PACKAGE = "specgen_amqp08_live"  # the folder generated into, imported under this name


@pytest.fixture(scope="session")
def amqp08(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The AMQP 0-8 codec, generated from the XML as given (no flags) and imported."""
    spec = corpus_file(SPEC)
    if spec is None:
        pytest.skip(f"the spec corpus ({SPEC}) is not available: set SPECGEN_CORPUS")
    yield from generated(tmp_path_factory, spec, PACKAGE, "amqp_0_9_1.amqp0_8")


def test_amqp08_conversation(rabbit: RabbitNode, amqp08: ModuleType) -> None:
    a = amqp08
    # the header RabbitMQ answers 0-8 on, derived from the XML's major and minor alone
    assert sibling(a, "framing").PREAMBLES == {"client": b"AMQP\x01\x01\x08\x00"}
    c = AmqpClient(port=rabbit.amqp_port, codec=a)
    c.open(version=(8, 0), frame_max=FRAME_MAX)
    assert c.frame_max == FRAME_MAX
    assert c.server_properties["product"] == "RabbitMQ"
    talk = converse(c, a, "08")
    wire = check_wire(c, a, talk)
    print(summary("0-8", talk, wire))
