"""`specgen decode amqp-0-9-1`: a framing whose length is not first, with a trailer and a client
preamble, walked, decoded and reconciled like RabbitMQ Streams'."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq  # type: ignore[import-untyped]

from specgen.pipeline import decode
from specgen_codecs.amqp_0_9_1 import framing
from specgen_codecs.amqp_0_9_1.rabbitmq import (
    BasicProperties,
    BasicPublish,
    ChannelOpen,
    ConnectionStart,
    ConnectionStartOk,
    ConnectionTune,
    ConnectionTuneOk,
    ContentBody,
    Heartbeat,
    encode,
)

PREAMBLE = framing.PREAMBLES["client"]


def client_frames() -> list[bytes]:
    out = [
        encode(
            ConnectionStartOk(
                {"product": "specgen", "capabilities": {"publisher_confirms": True}},
                "PLAIN",
                b"\x00guest\x00guest",
                "en_US",
                0,
            )
        ),
        encode(ConnectionTuneOk(2047, 131072, 60, 0)),
        encode(ChannelOpen("", 1)),
    ]
    for i in range(30):
        body = f"message {i} ".encode() * (i + 1)
        out.append(encode(BasicPublish(0, "", "q", False, False, 1)))
        out.append(
            encode(
                BasicProperties(
                    0,
                    len(body),
                    "text/plain",
                    None,
                    {"n": i},
                    2,
                    None,
                    f"c-{i}",
                    None,
                    None,
                    None,
                    None,
                    None,
                    None,
                    None,
                    None,
                    1,
                )
            )
        )
        out.append(encode(ContentBody(body, 1)))
    out.append(encode(Heartbeat(0)))
    return out


def server_frames() -> list[bytes]:
    return [
        encode(ConnectionStart(0, 9, {"product": "RabbitMQ"}, b"PLAIN AMQPLAIN", b"en_US", 0)),
        encode(ConnectionTune(2047, 131072, 60, 0)),
        encode(Heartbeat(0)),
    ]


def write_capture(root: Path, client: bytes, server: bytes) -> Path:
    folder = root / "cap"
    folder.mkdir(parents=True)
    (folder / "conn-0001.c2s.bin").write_bytes(client)
    (folder / "conn-0001.s2c.bin").write_bytes(server)
    events = [
        {"event": "accept", "connection": "conn-0001", "peer": "127.0.0.1:1", "wall": 1.7e9},
        {
            "event": "read",
            "connection": "conn-0001",
            "direction": "c2s",
            "offset": 0,
            "length": len(client),
            "wall": 1.7e9 + 1,
        },
        {
            "event": "read",
            "connection": "conn-0001",
            "direction": "s2c",
            "offset": 0,
            "length": len(server),
            "wall": 1.7e9 + 2,
        },
    ]
    (folder / "conn-0001.index.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    sizes = {"c2s": len(client), "s2c": len(server)}
    (folder / "capture.json").write_text(
        json.dumps({"connections": 1, "bytes": sizes, "recorded": sizes, "delivered": sizes})
    )
    return root


def run(tmp: Path, client: bytes, server: bytes) -> tuple[decode.Result, list[str]]:
    root = write_capture(tmp / "in", client, server)
    lines: list[str] = []
    result = decode.decode_local("amqp-0-9-1", root, tmp / "out", echo=lines.append)
    return result, lines


def test_every_frame_decodes_and_every_byte_reconciles(tmp_path: Path) -> None:
    client, server = client_frames(), server_frames()
    result, lines = run(tmp_path, PREAMBLE + b"".join(client), b"".join(server))
    assert result.reconciled, lines
    assert not result.problems, lines
    assert result.frames == result.found == len(client) + len(server)
    assert result.rejects == result.rejected == result.unframed == 0
    by_direction = {t.direction: t for t in result.files}
    assert by_direction["c2s"].first == len(PREAMBLE)
    assert by_direction["s2c"].first == 0
    for t in result.files:
        assert t.total == t.size
    frames = pq.read_table(tmp_path / "out" / "frames").to_pylist()
    c2s = sorted((r["offset"], r["size"]) for r in frames if r["direction"] == "c2s")
    offset = len(PREAMBLE)
    for (at, size), frame in zip(c2s, client, strict=True):
        assert (at, size) == (offset, len(frame))
        offset += len(frame)


def test_garbage_mid_stream_is_one_unframed_reject_and_resynchronises(tmp_path: Path) -> None:
    client, server = client_frames(), server_frames()
    cut = 40
    before = PREAMBLE + b"".join(client[:cut])
    garbage = b"\x07\x99\x13garbage"
    data = before + garbage + b"".join(client[cut:])
    result, lines = run(tmp_path, data, b"".join(server))
    assert result.reconciled, lines
    assert result.unframed == result.rejects == 1
    assert result.rejected == 0
    assert result.frames == len(client) + len(server)
    rejects = pq.read_table(tmp_path / "out" / "rejects").to_pylist()
    (reject,) = rejects
    assert (reject["kind"], reject["offset"], reject["length"]) == (
        "unframed",
        len(before),
        len(garbage),
    )
    assert f"resynchronised at offset {len(before) + len(garbage)}" in reject["error"]
