"""Rule-breaking frames sent on purpose to a real RabbitMQ, recorded by `specgen capture`,
decoded and reported: the report's "Spec rules" must list exactly what was planted, with the
spec's lines, and nothing else (what the server sent back included).

Planted, one connection each, through the capturing proxy:
- AMQP 0-9-1: Queue.Declare of a queue named "bad name!" * 20 (180 octets; amqp0-9-1.xml's
  queue-name domain allows 127, matching `^[a-zA-Z0-9-_.:]*$`), exclusive so that it goes with
  the connection, and no-wait: RabbitMQ declares it all the same, and its Declare-Ok would echo
  the name (which the report then lists as the server's, a real break of the same rules).
- AMQP 1.0: an Attach with snd-settle-mode 7 (sender-settle-mode's choices are 0, 1 and 2).
- RabbitMQ Streams: a PublishConfirm from the client (the commands table gives it to the
  server), after the handshake.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from amqp10_client import Amqp10Client
from amqp_client import AmqpClient
from pyspark.sql import SparkSession
from rabbitmq import RabbitNode
from stream_client import StreamClient

from specgen.cli import main
from specgen.specs import ROOT
from specgen_codecs.amqp_1_0.v1_0 import commands as amqp10
from specgen_codecs.rabbitmq_stream import v4_0 as rs

SPECGEN = str(Path(sys.executable).with_name("specgen"))
BAD_QUEUE = "bad name!" * 20


class Proxy:
    """`specgen capture` in front of `port` for one connection, stopped by its pid."""

    def __init__(self, out: Path, port: int) -> None:
        self.out = out
        self.proc = subprocess.Popen(
            [
                SPECGEN,
                "capture",
                "--target",
                f"127.0.0.1:{port}",
                "--out",
                str(out),
                "--connections",
                "1",
                "--duration",
                "120",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        first = self.proc.stdout.readline()  # "capture: HOST:PORT -> ..."
        assert first.startswith("capture: 127.0.0.1:"), first
        self.port = int(first.split()[1].rsplit(":", 1)[1])

    def wait(self) -> None:
        try:
            assert self.proc.wait(timeout=60) == 0  # it stops by itself after the connection
        finally:
            if self.proc.poll() is None:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def _rules_section(capture: Path, protocol: str, out: Path) -> dict[str, Any]:
    assert main(["decode", protocol, str(capture), "--out", str(out / "decoded")]) == 0
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["report", str(out / "decoded"), "--json", str(out / "report.json")])
    assert code == 0
    sections = json.loads((out / "report.json").read_text())["sections"]
    (section,) = [s for s in sections if s["title"] == "Spec rules"]
    return dict(section)


def _planted(section: dict[str, Any]) -> list[tuple[Any, ...]]:
    """(rule, spec file and line, message.field, sent by, frames) of each row."""
    at = {name: i for i, name in enumerate(section["columns"])}
    return sorted(
        (
            r[at["rule"]],
            r[at["spec"]].rsplit(":", 1)[0],
            r[at["message.field"]],
            r[at["sent by"]],
            r[at["frames"]],
        )
        for r in section["rows"]
    )


def _line(path: str, text: str, after: int = 0) -> int:
    lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
    return next(i + 1 for i, t in enumerate(lines) if i + 1 > after and text in t)


@pytest.mark.server
def test_a_bad_queue_name_is_reported_and_nothing_else(
    rabbit: RabbitNode, spark: SparkSession, tmp_path: Path
) -> None:
    proxy = Proxy(tmp_path / "capture", rabbit.amqp_port)
    client = AmqpClient(port=proxy.port)
    client.open()
    amqp = client.codec
    client.call(amqp.ChannelOpen(channel=1), amqp.ChannelOpenOk)
    # no-wait: the server's Declare-Ok would echo the name, breaking the same rules itself
    client.send(amqp.QueueDeclare(queue=BAD_QUEUE, exclusive=True, no_wait=True, channel=1))
    client.call(amqp.ChannelClose(200, "done", 0, 0, channel=1), amqp.ChannelCloseOk)
    client.close()
    proxy.wait()
    section = _rules_section(proxy.out, "amqp-0-9-1", tmp_path)
    xml = "specs/amqp-0-9-1/amqp0-9-1.extended.xml"  # what the latest 0-9-1 version reads
    domain = _line(xml, '"queue-name"')
    length, regexp = _line(xml, 'check = "length"', domain), _line(xml, 'check = "regexp"', domain)
    assert _planted(section) == [
        ("length", f"{xml}:{length}", "QueueDeclare.queue", "client", 1),
        ("regexp", f"{xml}:{regexp}", "QueueDeclare.queue", "client", 1),
    ]


@pytest.mark.server
def test_a_settle_mode_outside_its_choices_is_reported_and_nothing_else(
    rabbit: RabbitNode, spark: SparkSession, tmp_path: Path
) -> None:
    proxy = Proxy(tmp_path / "capture", rabbit.amqp_port)
    client = Amqp10Client(port=proxy.port)
    client.sasl("PLAIN")
    client.open()
    client.begin()
    attach = amqp10.Attach(
        "bad-mode",
        0,
        False,
        snd_settle_mode=7,
        source=amqp10.Source("specgen-rules"),
        target=amqp10.Target("/queues/specgen-rules"),
        initial_delivery_count=0,
    )
    client.send(client.frame(attach))
    with contextlib.suppress(TimeoutError):  # whatever the server makes of it
        client.wait(2.0)
    with contextlib.suppress(Exception):  # it may have closed the connection already
        client.close(end_wait=2.0)
    client.sock.close()
    proxy.wait()
    section = _rules_section(proxy.out, "amqp-1-0", tmp_path)
    xml = "specs/amqp-1-0/transport.xml"
    where = _line(xml, 'name="sender-settle-mode" source')
    assert _planted(section) == [
        ("choice", f"{xml}:{where}", "Attach.snd_settle_mode", "client", 1)
    ]


@pytest.mark.server
def test_a_streams_command_from_the_wrong_peer_is_reported_and_nothing_else(
    rabbit: RabbitNode, spark: SparkSession, tmp_path: Path
) -> None:
    proxy = Proxy(tmp_path / "capture", rabbit.stream_port)
    client = StreamClient(port=proxy.port)
    client.handshake()
    client.send(rs.PublishConfirm(1, [1]))  # the server's to send
    with contextlib.suppress(OSError):  # the server may close the connection on it
        client.pump(2.0)
    client.close()
    proxy.wait()
    section = _rules_section(proxy.out, "rabbitmq-stream", tmp_path)
    doc = "specs/rabbitmq-stream/PROTOCOL-4.0.adoc"
    row = _line(doc, "|<<publishconfirm>>") + 1  # the table row's From cell
    assert _planted(section) == [("sender", f"{doc}:{row}", "PublishConfirm", "client", 1)]


def test_a_tune_ok_over_the_tunes_channel_max_is_reported_across_the_connection(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The rule across messages (tune-ok's channel-max at most tune's), on a capture written
    with the codec: no index, so no timestamps, and the Tune of the connection is the one."""
    from specgen_codecs.amqp_0_9_1 import rabbitmq as amqp
    from specgen_codecs.amqp_0_9_1.framing import PREAMBLES

    folder = tmp_path / "capture" / "session-1"
    folder.mkdir(parents=True)
    client = [
        amqp.ConnectionStartOk({"product": "specgen"}, "PLAIN", b"\x00guest\x00guest", "en_US"),
        amqp.ConnectionTuneOk(20, 131072, 0),
        amqp.ConnectionOpen("/", "", False),
    ]
    server = [
        amqp.ConnectionStart(0, 9, {"product": "specgen"}, b"PLAIN", b"en_US"),
        amqp.ConnectionTune(10, 131072, 60),
        amqp.ConnectionOpenOk(""),
    ]
    (folder / "conn-0001.c2s.bin").write_bytes(
        PREAMBLES["client"] + b"".join(amqp.encode(m) for m in client)
    )
    (folder / "conn-0001.s2c.bin").write_bytes(b"".join(amqp.encode(m) for m in server))
    section = _rules_section(tmp_path / "capture", "amqp-0-9-1", tmp_path)
    xml = "specs/amqp-0-9-1/amqp0-9-1.extended.xml"
    tune_ok = _line(xml, '<method name = "tune-ok"')
    where = _line(xml, 'method = "tune" field = "channel-max"', tune_ok)
    assert _planted(section) == [
        ("le", f"{xml}:{where}", "ConnectionTuneOk.channel_max", "client", 1)
    ]
    (row,) = section["rows"]
    assert row[-1] == "20: over ConnectionTune.channel_max, 10"
