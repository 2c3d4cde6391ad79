"""pcap input against real traffic: tcpdump and `specgen capture` record the same live sessions.

A Streams session (tests/stream_client.py: two connections, a few hundred confirmed publishes,
then a subscription that consumes them) and an AMQP 0-9-1 session (pika: a queue, publisher
confirms, 200 messages with properties and one body over frame_max, a consumer, basic.get)
run through the recording proxy while tcpdump captures the proxy's port on loopback. The
recording and the pcap are two views of the same bytes, taken at different points (the proxy's
reads, the packets on `lo`), so decoding either must give the same frames, timestamps a few
milliseconds apart, and no reject. Then Wireshark's own AMQP dissector reads the pcap, and
every AMQP frame it finds must be the frame specgen decoded: the same class and method, channel,
length and the arguments and properties both name.

tcpdump needs root or CAP_NET_RAW and tshark must be installed: without them these tests skip,
unless SPECGEN_REQUIRE_SERVER is set (.ci/run sets it), which makes that a failure.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, NoReturn

import pika  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
import tcpdump
from rabbitmq import RabbitNode
from stream_client import StreamClient

from specgen.pipeline import decode, pcap_job
from specgen_codecs.amqp_0_9_1.rabbitmq.spark_schema import MESSAGE_COLUMNS as AMQP_COLUMNS
from specgen_codecs.rabbitmq_stream import v4_0 as rs

SPECGEN = str(Path(sys.executable).with_name("specgen"))
RC = rs.ResponseCode
STREAM_MESSAGES = 400
AMQP_PUBLISHED = 200
AMQP_BIG = 150_000  # one body over frame_max (131072): two content-body frames
QUEUE = "specgen-pcap-live"
TIMESTAMP_SLACK = 0.05  # seconds between a packet on lo and the proxy's read of its bytes
WHERE = ("capture", "connection", "timestamp")  # columns that name where a frame was seen


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get("SPECGEN_REQUIRE_SERVER"):
        pytest.fail(f"SPECGEN_REQUIRE_SERVER is set and {reason}")
    pytest.skip(reason)


# --------------------------------------------------------------------------------------------
# Recording one session both ways


@dataclass(frozen=True)
class Recording:
    proxy: Path  # the proxy's capture folder
    pcap: Path
    port: int  # the proxy's listen port: the server port of every connection in the pcap
    names: dict[str, str]  # the pcap's connection name -> the proxy's (conn-000N)
    counts: dict[str, int]  # tcpdump's closing counts


def _record(tmp: Path, target: int, connections: int, session: Callable[[int], None]) -> Recording:
    """Run `session(port)` through `specgen capture` in front of 127.0.0.1:`target`, with
    tcpdump capturing the proxy's port from before the first SYN to after the last FIN."""
    folder, pcap = tmp / "proxy", tmp / "session.pcap"
    proc = subprocess.Popen(
        [
            SPECGEN, "capture",
            "--target", f"127.0.0.1:{target}",
            "--listen", "127.0.0.1:0",
            "--out", str(folder),
            "--connections", str(connections),
            "--duration", "300",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # "capture: 127.0.0.1:PORT -> ..., recording into ..."
        assert first.startswith("capture: 127.0.0.1:"), first
        port = int(first.split()[1].rsplit(":", 1)[1])
        try:
            dump = tcpdump.start(pcap, "lo", f"tcp port {port}")
        except tcpdump.CaptureUnavailable as e:
            _unavailable(str(e))
        try:
            session(port)
            # the proxy stops by itself once its connections are over: every FIN is sent
            assert proc.wait(timeout=60) == 0, proc.communicate()[1]
            dump.settle()
        finally:
            dump.stop()
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
    counts = dump.counts()
    assert counts.get("dropped by kernel") == 0, dump.stderr
    names = {}
    for index in sorted(folder.glob("conn-*.index.jsonl")):
        accept = json.loads(index.read_text().splitlines()[0])
        assert accept["event"] == "accept", accept
        client_port = int(accept["peer"].rsplit(":", 1)[1])
        names[f"127.0.0.1_{client_port}-127.0.0.1_{port}"] = accept["connection"]
    assert len(names) == connections
    return Recording(folder, pcap, port, names, counts)


# --------------------------------------------------------------------------------------------
# Decoding both and comparing


@dataclass(frozen=True)
class Decoded:
    recording: Recording
    proxy: Path  # OUT of `specgen decode` on the proxy's folder
    pcap: Path  # OUT of `specgen decode` on the pcap
    lines: list[str]  # what the pcap decode said


def _decode_both(protocol: str, recording: Recording, tmp: Path) -> Decoded:
    lines: list[str] = []
    result = decode.run(protocol, recording.proxy, tmp / "proxy-out", echo=lines.append)
    assert result.reconciled and result.rejects == 0, lines
    lines.clear()
    result = pcap_job.run(
        protocol,
        pcap_job.find(recording.pcap),
        tmp / "pcap-out",
        None,
        False,
        frozenset({recording.port}),
        echo=lines.append,
    )
    assert result.reconciled and result.rejects == 0, lines
    (line,) = [x for x in lines if x.startswith("pcap reconciliation:")]
    assert "FAILED" not in line and "; 0 gaps (0 bytes never captured)" in line, line
    return Decoded(recording, tmp / "proxy-out", tmp / "pcap-out", lines)


def _frames(out: Path, names: dict[str, str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """Every frame row per connection (renamed by `names`), in (direction, offset) order."""
    out_rows: dict[str, list[dict[str, Any]]] = {}
    for row in pq.read_table(out / "frames").to_pylist():
        name = names.get(row["connection"], row["connection"]) if names else row["connection"]
        out_rows.setdefault(name, []).append(row)
    for rows in out_rows.values():
        rows.sort(key=lambda r: (r["direction"], r["offset"]))
    return out_rows


def _first_difference(a: list[Any], b: list[Any]) -> str:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"row {i}:\n  {x!r:.2000}\n  {y!r:.2000}"
    return f"{len(a)} rows and {len(b)} rows"


def _assert_same_frames(d: Decoded, commands: set[str]) -> None:
    """The pcap's frames are the recording's: every column but where and when, per connection
    and in order; the timestamps within TIMESTAMP_SLACK; and the session's `commands` all seen."""
    proxy = _frames(d.proxy)
    pcap = _frames(d.pcap)
    assert set(pcap) == set(d.recording.names), (set(pcap), d.recording.names)
    seen: set[str] = set()
    for pcap_name, proxy_name in d.recording.names.items():
        mine, theirs = pcap[pcap_name], proxy[proxy_name]
        what = [{k: v for k, v in r.items() if k not in WHERE} for r in mine]
        expected = [{k: v for k, v in r.items() if k not in WHERE} for r in theirs]
        assert what == expected, f"{proxy_name}: {_first_difference(what, expected)}"
        late = max(
            abs((a["timestamp"] - b["timestamp"]).total_seconds())
            for a, b in zip(mine, theirs, strict=True)
        )
        assert late < TIMESTAMP_SLACK, f"{proxy_name}: timestamps {late * 1000:.1f} ms apart"
        seen.update(r["command"] for r in mine)
    assert commands <= seen, commands - seen


# --------------------------------------------------------------------------------------------
# 1. RabbitMQ Streams


def _close(c: StreamClient) -> None:
    closed = c.request(rs.CloseRequest(c.next_id(), RC.OK, "done"), rs.CloseResponse)
    assert closed.response_code == RC.OK
    c.pump(5.0)  # until the server closes its end (it does, after the response)


def _streams_session(port: int) -> None:
    """A publisher connection, then a consumer connection, both through the proxy."""
    stream = f"specgen-pcap-{time.monotonic_ns()}"
    rnd = random.Random(5)
    messages = [(i, rnd.randbytes(rnd.randrange(1, 600))) for i in range(1, STREAM_MESSAGES + 1)]
    pub = StreamClient(port=port)
    try:
        pub.handshake(heartbeat=0)
        created = pub.request(rs.CreateRequest(pub.next_id(), stream, []), rs.CreateResponse)
        assert created.response_code == RC.OK
        declared = pub.request(
            rs.DeclarePublisherRequest(pub.next_id(), 1, "", stream), rs.DeclarePublisherResponse
        )
        assert declared.response_code == RC.OK
        for i in range(0, len(messages), 50):
            batch = [rs.PublishV1PublishedMessage(p, m) for p, m in messages[i : i + 50]]
            pub.send(rs.PublishV1(1, batch))
        confirmed: set[int] = set()
        while len(confirmed) < len(messages):
            confirmed.update(pub.recv(rs.PublishConfirm, timeout=30).publishing_ids)
        assert confirmed == {p for p, _ in messages}
        pub.request(rs.DeletePublisherRequest(pub.next_id(), 1), rs.DeletePublisherResponse)
        _close(pub)
    finally:
        pub.close()
    sub = StreamClient(port=port)
    try:
        sub.handshake(heartbeat=0)
        first = rs.SubscribeRequestOffsetSpecification(1, None)  # offset type 1: first
        subscribed = sub.request(
            rs.SubscribeRequest(sub.next_id(), 1, stream, first, 1, []), rs.SubscribeResponse
        )
        assert subscribed.response_code == RC.OK
        got: list[bytes] = []
        while len(got) < len(messages):
            chunk = sub.recv(rs.DeliverV1, timeout=30, subscription_id=1).osiris_chunk
            got.extend(e.data for e in chunk.messages if isinstance(e, rs.SimpleEntry))
            sub.send(rs.Credit(1, 1))
        assert got == [m for _, m in messages]
        sub.request(rs.UnsubscribeRequest(sub.next_id(), 1), rs.UnsubscribeResponse)
        sub.request(rs.DeleteRequest(sub.next_id(), stream), rs.DeleteResponse)
        _close(sub)
    finally:
        sub.close()


@pytest.fixture(scope="module")
def streams(rabbit: RabbitNode, spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Decoded:
    tmp = tmp_path_factory.mktemp("pcap-live-streams")
    recording = _record(tmp, rabbit.stream_port, 2, _streams_session)
    return _decode_both("rabbitmq-stream", recording, tmp)


def test_streams_pcap_decodes_to_the_proxy_recording(streams: Decoded) -> None:
    _assert_same_frames(
        streams,
        {"PeerProperties", "Create", "DeclarePublisher", "Publish", "PublishConfirm"}
        | {"Subscribe", "Deliver", "Credit", "Unsubscribe", "Delete", "Close"},
    )
    # the recording's bytes are all in the pcap, once
    recorded = sum(p.stat().st_size for p in streams.recording.proxy.glob("*.bin"))
    (line,) = [x for x in streams.lines if x.startswith("pcap reconciliation:")]
    assert f"= {recorded:,} in frames and rejects" in line, line


# --------------------------------------------------------------------------------------------
# 2. AMQP 0-9-1 with pika


def _properties(i: int) -> pika.BasicProperties:
    return pika.BasicProperties(
        content_type="application/json" if i % 2 else "text/plain",
        content_encoding="utf-8" if i % 5 == 0 else None,
        headers={"seq": i, "tenant": f"t-{i % 7}", "flag": i % 2 == 0} if i % 3 == 0 else None,
        delivery_mode=2 if i % 4 else 1,
        priority=i % 10 if i % 6 else None,
        correlation_id=f"corr-{i}" if i % 4 == 1 else None,
        reply_to="replies" if i % 8 == 3 else None,
        expiration="600000" if i % 9 == 0 else None,
        message_id=f"msg-{i:04d}",
        timestamp=1_700_000_000 + i if i % 2 == 0 else None,
        type="order.created" if i % 3 == 1 else None,
        app_id="specgen-pcap" if i % 2 else None,
    )


def _amqp_session(port: int) -> None:
    params = pika.ConnectionParameters(
        host="127.0.0.1",
        port=port,
        credentials=pika.PlainCredentials("guest", "guest"),
        heartbeat=0,
        client_properties={"connection_name": "specgen-pcap-live"},
    )
    conn = pika.BlockingConnection(params)
    try:
        ch = conn.channel()
        ch.queue_declare(QUEUE, durable=False, auto_delete=False)
        ch.confirm_delivery()
        rnd = random.Random(3)

        def publish(i: int) -> None:
            size = AMQP_BIG if i == 100 else rnd.randrange(0, 400)
            ch.basic_publish("", QUEUE, rnd.randbytes(size), _properties(i), mandatory=i % 10 == 0)

        for i in range(AMQP_PUBLISHED):
            publish(i)
        got = 0

        def on_message(c: Any, method: Any, props: Any, body: bytes) -> None:
            nonlocal got
            got += 1
            if got % 10 == 0 or got == AMQP_PUBLISHED:  # ack in tens: `multiple` both ways
                c.basic_ack(method.delivery_tag, multiple=True)
            if got == AMQP_PUBLISHED:
                c.stop_consuming()

        ch.basic_qos(prefetch_count=50)
        tag = ch.basic_consume(QUEUE, on_message)
        ch.start_consuming()
        ch.basic_cancel(tag)
        # two more, fetched with basic.get: one acked, one nacked; then the queue is empty
        publish(AMQP_PUBLISHED)
        publish(AMQP_PUBLISHED + 1)
        method, _, _ = ch.basic_get(QUEUE)
        assert method is not None
        ch.basic_ack(method.delivery_tag)
        method, _, _ = ch.basic_get(QUEUE)
        assert method is not None
        ch.basic_nack(method.delivery_tag, requeue=False)
        assert ch.basic_get(QUEUE)[0] is None
        ch.queue_delete(QUEUE)
        ch.close()
    finally:
        if conn.is_open:
            conn.close()


@pytest.fixture(scope="module")
def amqp(rabbit: RabbitNode, spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Decoded:
    tmp = tmp_path_factory.mktemp("pcap-live-amqp")
    recording = _record(tmp, rabbit.amqp_port, 1, _amqp_session)
    return _decode_both("amqp-0-9-1", recording, tmp)


def test_amqp_pcap_decodes_to_the_proxy_recording(amqp: Decoded) -> None:
    _assert_same_frames(
        amqp,
        {"Connection.Start", "Queue.Declare", "Confirm.Select", "Basic.Publish"}
        | {"Basic.Properties", "Content.Body", "Basic.Deliver", "Basic.Ack", "Basic.GetOk"}
        | {"Basic.GetEmpty", "Basic.Nack", "Connection.CloseOk"},
    )


# --------------------------------------------------------------------------------------------
# 3. Wireshark's AMQP dissector on the same pcap


@dataclass
class WiresharkFrame:
    """One AMQP frame as Wireshark dissected it (the `show` values of its fields)."""

    name: str  # "Basic.Publish" (Wireshark's "Basic.Get-Ok" without the hyphen), ...
    type: int
    channel: int
    length: int  # the frame's payload: its size less the 7-byte header and the end octet
    fields: dict[str, ET.Element]  # amqp.method.arguments.X, amqp.method.properties.X, ...


def _name(showname: str) -> str:
    """A class or method name from its showname: "Class: Basic (60)" -> "Basic",
    "Method: Get-Ok (71)" -> "GetOk" (specgen's spelling)."""
    return showname.split(": ", 1)[1].rsplit(" (", 1)[0].replace("-", "")


def _wireshark(pcap: Path, port: int, tmp: Path) -> dict[tuple[int, str], list[WiresharkFrame]]:
    """Wireshark's AMQP frames per (client port, direction), in order: packets in file order,
    and within a packet (Wireshark puts every frame that ends in it there) as dissected."""
    tshark = shutil.which("tshark")
    if tshark is None:
        _unavailable("tshark is not installed (apt-get install tshark)")
    pdml = tmp / "session.pdml"
    with pdml.open("wb") as out:
        done = subprocess.run(
            # -n: no name lookups; -d: the proxy's port is AMQP; frames spanning packets are
            # reassembled (the default, said explicitly: without it they would not be frames),
            # and so are segments captured out of order: on loopback the capture now and then
            # records two segments of one burst swapped, which specgen's reader puts back in
            # order and Wireshark, by default, does not (it then loses the frame they carry)
            [tshark, "-n", "-r", str(pcap), "-d", f"tcp.port=={port},amqp"]
            + ["-o", "tcp.desegment_tcp_streams:TRUE"]
            + ["-o", "tcp.reassemble_out_of_order:TRUE", "-T", "pdml"]
            + ["-J", "tcp amqp _ws.malformed"],  # only these protocols' fields
            stdout=out,
            stderr=subprocess.PIPE,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    frames: dict[tuple[int, str], list[WiresharkFrame]] = {}
    for _, packet in ET.iterparse(pdml):
        if packet.tag != "packet":
            continue
        fields = {f.get("name"): f.get("show") for f in packet.iter("field")}
        # a frame Wireshark could not dissect is a malformed packet, not a frame to compare
        malformed = [e for e in packet.iter() if (e.get("name") or "").startswith("_ws.malformed")]
        assert not malformed, ET.tostring(packet)[:2000]
        sport, dport = int(fields["tcp.srcport"] or 0), int(fields["tcp.dstport"] or 0)
        key = (sport, "c2s") if dport == port else (dport, "s2c")
        for proto in packet.iter("proto"):
            if proto.get("name") != "amqp":
                continue
            named: dict[str, ET.Element] = {}
            for f in proto.iter("field"):  # document order: a name's first field is the frame's
                named.setdefault(f.get("name", ""), f)
            if "amqp.type" not in named:
                continue  # the protocol header ("AMQP" 0 0 9 1): not a frame
            kind = int(named["amqp.type"].get("show", ""))
            if kind == 1:
                cls = _name(named["amqp.method.class"].get("showname", ""))
                name = f"{cls}.{_name(named['amqp.method.method'].get('showname', ''))}"
            elif kind == 2:
                name = f"{_name(named['amqp.header.class'].get('showname', ''))}.Properties"
            elif kind == 3:
                name = "Content.Body"
            else:
                name = "Heartbeat"
            frames.setdefault(key, []).append(
                WiresharkFrame(
                    name,
                    kind,
                    int(named["amqp.channel"].get("show", "")),
                    int(named["amqp.length"].get("show", "")),
                    named,
                )
            )
        packet.clear()
    return frames


def _scalar(value: Any) -> str | None:
    """A decoded value as Wireshark shows it: booleans 1/0, numbers in decimal."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | Decimal):
        return str(int(value))
    if isinstance(value, str):
        return value
    return None  # tables, arrays: Wireshark shows their entries, not one value


def _is_table(element: ET.Element, value: Any) -> bool:
    return len(element) > 0 or (
        element.get("show") == "" and isinstance(value, str) and value.startswith("{")
    )


def _entries(table: ET.Element) -> list[str]:
    """The names of a field table's entries: "product (string): Pika..." -> "product"."""
    return [f.get("showname", "").split(" (", 1)[0] for f in table if f.tag == "field"]


# each of these must have been compared on every frame of its command, not skipped
REQUIRED = {
    "Connection.Tune": {"channel_max", "frame_max", "heartbeat"},
    "Queue.Declare": {"queue", "durable", "auto_delete"},
    "Queue.DeclareOk": {"queue", "message_count", "consumer_count"},
    "Basic.Publish": {"exchange", "routing_key", "mandatory"},
    "Basic.Deliver": {"consumer_tag", "delivery_tag", "redelivered", "routing_key"},
    "Basic.Ack": {"delivery_tag", "multiple"},
    "Basic.Nack": {"delivery_tag", "requeue"},
    "Basic.GetOk": {"delivery_tag", "message_count", "routing_key"},
    "Basic.Qos": {"prefetch_count"},
    "Basic.Properties": {"body_size", "content_type", "message_id", "delivery_mode"},
    "Content.Body": {"payload"},
}


def _views(ws: WiresharkFrame, row: dict[str, Any]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """What Wireshark says of a frame and what specgen says, field by field, over the fields
    both have: (name, type, channel, length, ((field, value), ...)) each."""
    struct = row.get(AMQP_COLUMNS.get(row["message"] or "", ""), None) or {}
    theirs: dict[str, str | None] = {}
    mine: dict[str, str | None] = {}
    for name, element in ws.fields.items():
        for prefix in ("amqp.method.arguments.", "amqp.method.properties."):
            if name.startswith(prefix) and name[len(prefix) :] in struct:
                field = name[len(prefix) :]
                if field == "timestamp":  # shown as a date; its value is the seconds in hex
                    theirs[field] = str(int(element.get("value", ""), 16))
                    ts = struct[field]
                    mine[field] = str(int(ts.timestamp())) if isinstance(ts, datetime) else None
                elif _is_table(element, struct[field]):
                    # specgen keeps a field table as JSON; Wireshark shows one field per entry
                    theirs[field] = " ".join(_entries(element))
                    mine[field] = " ".join(json.loads(struct[field]))
                elif (value := _scalar(struct[field])) is not None or struct[field] is None:
                    theirs[field], mine[field] = element.get("show"), value
    if ws.type == 2:
        theirs["body_size"] = ws.fields["amqp.header.body-size"].get("show")
        mine["body_size"] = _scalar(struct.get("body_size"))
    if ws.type == 3:
        theirs["payload"] = ws.fields["amqp.payload"].get("value")
        mine["payload"] = bytes(struct.get("payload") or b"").hex()
    missing = REQUIRED.get(ws.name, set()) - theirs.keys()
    assert not missing, f"{ws.name}: Wireshark showed no {sorted(missing)}"
    return (
        (ws.name, ws.type, ws.channel, ws.length, tuple(sorted(theirs.items()))),
        (
            row["command"],
            row["type"],
            row["channel"],
            row["size"] - 8,
            tuple(sorted(mine.items())),
        ),
    )


def test_wireshark_dissects_the_amqp_pcap_as_specgen_decodes_it(
    amqp: Decoded, tmp_path: Path
) -> None:
    port = amqp.recording.port
    wireshark = _wireshark(amqp.recording.pcap, port, tmp_path)
    specgen = _frames(amqp.pcap)
    by_port = {int(name.split("-")[0].rsplit("_", 1)[1]): name for name in specgen}
    assert {p for p, _ in wireshark} == set(by_port)
    compared = 0
    for (client_port, direction), frames in sorted(wireshark.items()):
        rows = [r for r in specgen[by_port[client_port]] if r["direction"] == direction]
        views = [_views(w, r) for w, r in zip(frames, rows, strict=False)]
        theirs, mine = [v[0] for v in views], [v[1] for v in views]
        assert len(frames) == len(rows), (
            f"{direction}: Wireshark {len(frames)} frames, specgen {len(rows)}; "
            + _first_difference(theirs, mine)
        )
        assert theirs == mine, f"{direction}: {_first_difference(theirs, mine)}"
        compared += len(frames)
    # every frame of the session: the publishes and deliveries with their headers and bodies
    assert compared > 4 * AMQP_PUBLISHED
