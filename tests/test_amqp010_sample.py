"""The shipped AMQP 0-10 sample (samples/record_amqp_0_10.py writes it with the generated codec,
as no server here speaks 0-10) decodes on Spark with no rejects and reconciles byte for byte,
every frame and message re-encodes with `specgen frames --roundtrip`, and a damaged copy
resynchronises and starts its messages afresh.

What the rows must say is read two ways that do not use the decoder: the recorder's plan (its
constants: 300 transfers to two exchanges, 200 back to one destination, one rejected and one
released) and the bytes walked by the spec's frame format alone (amqp.0-10.xml, "frame
format": a 12-octet header whose octets 2-3 are the frame's size, header included, and whose
first octet's bits 0x08/0x04 mark a message's first and last segment and 0x02/0x01 a segment's
first and last frame).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

import pcap_writer
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest

from specgen.cli import main
from specgen.pipeline import decode, pcap_job

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "amqp-0-10" / "session-1"
PROTOCOL_HEADER = b"AMQP\x01\x01\x00\x0a"  # the spec's: "AMQP", class 1, instance 1, 0-10

_spec = importlib.util.spec_from_file_location("recorder", ROOT / "samples" / "record_amqp_0_10.py")
assert _spec is not None and _spec.loader is not None
recorder = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(recorder)


def _walk(data: bytes) -> list[tuple[int, int, int, int]]:
    """(offset, size, flags, segment type) of every frame after the protocol header, read by
    the spec's frame format alone."""
    assert data[:8] == PROTOCOL_HEADER
    out, at = [], 8
    while at < len(data):
        size = int.from_bytes(data[at + 2 : at + 4], "big")
        out.append((at, size, data[at], data[at + 1]))
        at += size
    assert at == len(data)
    return out


def _whole(frames: list[tuple[int, int, int, int]]) -> int:
    """Messages: frames that are both their segment's last and their message's last segment."""
    return sum(1 for _, _, flags, _ in frames if flags & 0x04 and flags & 0x01)


@pytest.fixture(scope="module")
def decoded(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, Any, int]:
    """`specgen decode amqp-0-10` in this process: it runs on the test run's Spark session."""
    out = tmp_path_factory.mktemp("amqp010-sample") / "out"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        # a master named: without one a capture this small decodes without Spark
        code = main(["decode", "amqp-0-10", str(SAMPLE), "--out", str(out), "--master", "local[*]"])
    frames = pq.read_table(out / "frames").to_pylist()
    rejects = pq.read_table(out / "rejects").num_rows
    return code, buf.getvalue(), frames, rejects


def test_the_sample_decodes_on_spark_and_reconciles(decoded: tuple[int, str, Any, int]) -> None:
    code, stdout, frames, rejects = decoded
    assert code == 0 and rejects == 0, stdout
    assert "the rows hold every byte of all 2 files exactly once" in stdout
    for direction in ("c2s", "s2c"):
        walked = _walk((SAMPLE / f"conn-0001.{direction}.bin").read_bytes())
        rows = sorted((r for r in frames if r["direction"] == direction), key=lambda r: r["offset"])
        # one row per frame the spec's format finds, at its offset, of its size and flags
        assert [(r["offset"], r["size"], r["flags"], r["type"]) for r in rows] == walked
        # each message's row is the frame that ends it; every other row is a plain frame
        assert sum(1 for r in rows if r["kind"] != "frame") == _whole(walked)
        ends = {o for o, _, flags, _ in walked if flags & 0x04 and flags & 0x01}
        assert {r["offset"] for r in rows if r["kind"] != "frame"} == ends
        assert all(r["timestamp"] is not None for r in rows)  # the index times every frame


def test_the_rows_hold_what_the_recorder_did(decoded: tuple[int, str, Any, int]) -> None:
    _, _, frames, _ = decoded
    transfers = [r for r in frames if r["command"] == "message.transfer"]
    by_destination = Counter(
        (r["direction"], r["message_transfer"]["destination"]) for r in transfers
    )
    assert by_destination == {
        **{("c2s", exchange): n for exchange, n in recorder.PUBLISHED.items()},
        ("s2c", recorder.CONSUMER): recorder.DELIVERED,
    }
    for r in transfers:
        # the header segment's structs, in their own columns; the body's octets counted
        props = r["message_properties"]
        assert int(props["content_length"]) == r["body_size"]
        assert r["message_delivery_properties"]["routing_key"].startswith("orders.")
        assert json.loads(props["application_headers"])["seq"]["type"] == "uint32"
    # a body over the 4,096-octet frame size takes several frames (the recorder's every 25th)
    big = [r for r in transfers if r["body_size"] > recorder.MAX_FRAME]
    assert big and all(r["assembly_frames"] >= 4 for r in big)  # command, header, 2+ body
    rejected = [r["message_reject"] for r in frames if r["command"] == "message.reject"]
    released = [r["message_release"] for r in frames if r["command"] == "message.release"]
    assert [x["transfers"] for x in rejected] == [
        [{"first": recorder.REJECT, "last": recorder.REJECT}]
    ]
    assert [x["transfers"] for x in released] == [
        [{"first": recorder.RELEASE, "last": recorder.RELEASE}]
    ]
    accepted = sum(
        s["last"] - s["first"] + 1
        for r in frames
        if r["command"] == "message.accept"
        for s in r["message_accept"]["transfers"]
    )
    assert accepted == recorder.DELIVERED - 2


def test_specgen_frames_roundtrips_the_sample(capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(SAMPLE / f"conn-0001.{d}.bin") for d in ("c2s", "s2c")]
    assert main(["frames", "amqp-0-10", *files, "--roundtrip"]) == 0
    lines = capsys.readouterr().out.splitlines()
    walked = sum(len(_walk(Path(f).read_bytes())) for f in files)
    assert lines[-1] == f"ok: {walked} frames in 2 files, 0 failed, re-encoded identically"
    rows = [json.loads(line) for line in lines[:-1]]
    assert len(rows) == walked and all(r["roundtrip"] for r in rows)
    whole = sum(_whole(_walk(Path(f).read_bytes())) for f in files)
    assert sum(1 for r in rows if "command" in r) == whole


def test_a_damaged_copy_resynchronises(tmp_path: Path) -> None:
    """A frame whose size is below the 12-octet header, inside a message: the walk skips to
    where frames chain again, the message open there is dropped (its frames before the gap
    stay plain frame rows), frames after the gap that continue a lost segment are rejects saying
    so, and the next message decodes whole; every byte is still in exactly one row."""
    folder = tmp_path / "capture" / "session-1"
    shutil.copytree(SAMPLE, folder)
    path = folder / "conn-0001.c2s.bin"
    data = bytearray(path.read_bytes())
    walked = _walk(bytes(data))
    # the size field of a body frame in the middle of the file
    at = next(o for o, _, flags, kind in walked[len(walked) // 2 :] if kind == 3)
    data[at + 2 : at + 4] = b"\x00\x05"
    path.write_bytes(bytes(data))
    lines: list[str] = []
    result = decode.decode_local(
        "amqp-0-10", tmp_path / "capture", tmp_path / "out", echo=lines.append
    )
    assert result.reconciled, lines
    rejects = pq.read_table(tmp_path / "out" / "rejects").to_pylist()
    gaps = [r for r in rejects if r["kind"] == "unframed"]
    assert [(r["offset"], r["field"]) for r in gaps] == [(at, "frame.size")]
    assert all(
        "continues no" in r["error"] and r["offset"] > at for r in rejects if r["kind"] == "frame"
    )
    frames = pq.read_table(tmp_path / "out" / "frames").to_pylist()
    after = [r for r in frames if r["direction"] == "c2s" and r["offset"] > at]
    assert any(r["command"] == "message.transfer" for r in after)
    # the other direction is untouched: as many rows as the spec's format finds frames
    s2c = _walk((folder / "conn-0001.s2c.bin").read_bytes())
    assert sum(1 for r in frames if r["direction"] == "s2c") == len(s2c)


# --------------------------------------------------------------------------------------------
# Wireshark's dissector and the shipped pcap

PCAP = ROOT / "samples" / "pcap" / "amqp-0-10.pcap"


def _wireshark_frames(pcap: Path) -> dict[str, list[dict[str, Any]]]:
    """Every AMQP frame tshark dissects in the pcap, per direction in stream order: its
    position bits, type, length, track, channel, and what it names of a control or command."""
    tshark = shutil.which("tshark")
    if tshark is None:
        if os.environ.get("SPECGEN_REQUIRE_SERVER"):
            pytest.fail("SPECGEN_REQUIRE_SERVER is set and tshark is not installed")
        pytest.skip("tshark is not installed (apt-get install tshark)")
    done = subprocess.run(
        [tshark, "-n", "-r", str(pcap), "-d", "tcp.port==5672,amqp", "-T", "pdml"]
        + ["-J", "tcp amqp"],
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    out: dict[str, list[dict[str, Any]]] = {"c2s": [], "s2c": []}
    for packet in ET.fromstring(done.stdout).iter("packet"):
        port = next(
            (f.get("show") for f in packet.iter("field") if f.get("name") == "tcp.srcport"), None
        )
        direction = "s2c" if port == "5672" else "c2s"
        for proto in packet.iter("proto"):
            if proto.get("name") != "amqp":
                continue
            shown = {}
            for f in proto.iter("field"):
                shown.setdefault(f.get("name", ""), f)
            if "amqp.type" not in shown:
                continue  # the protocol header
            frame: dict[str, Any] = {
                k: int(shown[f"amqp.{w}"].get("show") or "0")
                for k, w in (
                    ("position", "frame-position"),
                    ("type", "type"),
                    ("size", "length"),
                    ("track", "track-number"),
                    ("channel", "channel"),
                )
            }
            method = next((f for n, f in shown.items() if n.endswith(".method")), None)
            if method is not None:  # "Method: message.transfer (1)"
                frame["command"] = (method.get("showname") or "").split()[1]
            if "amqp.session.header.sync" in shown:
                frame["sync"] = shown["amqp.session.header.sync"].get("show") == "1"
            if "amqp.message.transfer.destination" in shown:
                frame["destination"] = shown["amqp.message.transfer.destination"].get("show")
            out[direction].append(frame)
    return out


def test_the_sample_agrees_with_wireshark_frame_by_frame(tmp_path: Path) -> None:
    """Wireshark's AMQP dissector, reading the shipped pcap, finds the frames our decoder finds,
    with the same header fields, and names the same controls and commands in the same order,
    with the same sync bits and transfer destinations."""
    shark = _wireshark_frames(PCAP)
    decode.decode_local("amqp-0-10", SAMPLE, tmp_path / "out", echo=lambda _: None)
    frames = pq.read_table(tmp_path / "out" / "frames").to_pylist()
    for direction in ("c2s", "s2c"):
        ours = sorted((r for r in frames if r["direction"] == direction), key=lambda r: r["offset"])
        theirs = shark[direction]
        assert len(theirs) > 600  # every frame of the session, not an empty match
        assert [
            (f["position"], f["type"], f["size"], f["track"], f["channel"]) for f in theirs
        ] == [(r["flags"], r["type"], r["size"], r["track"], r["channel"]) for r in ours]
        # a message's command segment is where Wireshark names it; our row is its last frame
        named = [f for f in theirs if "command" in f]
        whole = [r for r in ours if r["kind"] != "frame"]
        assert [f["command"] for f in named] == [r["command"] for r in whole]
        assert [f["sync"] for f in named if "sync" in f] == [
            r["sync"] for r in whole if r["kind"] == "command"
        ]
        assert [f["destination"] for f in named if "destination" in f] == [
            r["message_transfer"]["destination"] for r in whole if r["message_transfer"]
        ]


def test_the_pcap_decodes_to_the_frames_of_the_recording(
    decoded: tuple[int, str, Any, int], tmp_path: Path
) -> None:
    """`specgen decode` of the shipped pcap: port 5672 found from the framing module, the TCP
    streams reassembled, the same frame rows as the byte files give, reconciled."""
    _, _, recorded, _ = decoded
    lines: list[str] = []
    result = pcap_job.run(
        "amqp-0-10",
        pcap_job.find(PCAP),
        tmp_path / "out",
        None,
        False,
        frozenset(),
        echo=lines.append,
    )
    assert result.reconciled and result.rejects == 0, lines
    assert any("pcap reconciliation" in line and "FAILED" not in line for line in lines), lines
    frames = pq.read_table(tmp_path / "out" / "frames").to_pylist()
    skip = {"capture", "connection"}

    def content(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return sorted(
            tuple((k, repr(v)) for k, v in r.items() if k not in skip and k != "timestamp")
            for r in rows
        )

    assert content(frames) == content(recorded)
    # packets are stamped with the index's wall times: the same times, to the microsecond
    stamps = Counter(r["timestamp"] for r in frames)
    assert stamps == Counter(r["timestamp"] for r in recorded)


def test_connections_of_other_amqp_versions_on_the_port_are_set_aside(
    decoded: tuple[int, str, Any, int], tmp_path: Path
) -> None:
    """One pcap on port 5672 with three connections: the 0-10 sample, the 0-9-1 sample and the
    1.0 sample. Decoded as 0-10, the other two are told apart by how their clients open (0-9-1's
    protocol header, 1.0's SASL header) and set aside whole; the 0-10 rows are the recording's.
    Decoded as 0-9-1, the 0-10 and 1.0 connections are the ones set aside."""
    _, _, recorded, _ = decoded
    conns = [
        pcap_writer.connection(SAMPLE, "conn-0001", 40001, 5672),
        pcap_writer.connection(
            ROOT / "samples" / "amqp-0-9-1" / "session-1", "conn-0001", 40002, 5672
        ),
        pcap_writer.connection(
            ROOT / "samples" / "amqp-1-0" / "session-1", "conn-0001", 40003, 5672
        ),
    ]
    capture = tmp_path / "mixed.pcap"
    pcap_writer.write(capture, sorted((p for c in conns for p in c.packets), key=lambda p: p.ts))
    sizes = {
        c.client_port: sum(len(p.payload) for p in c.packets) for c in conns
    }  # TCP payload of each connection, both ways
    for protocol, ours in (("amqp-0-10", 40001), ("amqp-0-9-1", 40002)):
        lines: list[str] = []
        out = tmp_path / protocol
        result = pcap_job.run(
            protocol, pcap_job.find(capture), out, None, False, frozenset(), echo=lines.append
        )
        assert result.reconciled and result.rejects == 0, lines
        others = [port for port in sizes if port != ours]
        (said,) = [line for line in lines if "of another protocol" in line]
        assert said.startswith(
            f"pcap: 2 connections of another protocol ({sum(sizes[p] for p in others):,} bytes)"
        ), said
        frames = pq.read_table(out / "frames", columns=["connection"]).to_pylist()
        assert {r["connection"] for r in frames} == {f"10.0.0.1_{ours}-10.0.0.2_5672"}
        aside = sorted(p.name for p in (out / "other-protocols" / "mixed.pcap").iterdir())
        assert aside == sorted(
            f"10.0.0.1_{port}-10.0.0.2_5672.{kind}"
            for port in others
            for kind in ("c2s.bin", "s2c.bin", "index.jsonl")
        )
        if protocol == "amqp-0-10":
            assert len(frames) == len(recorded)


def test_ranges_cut_only_between_messages(tmp_path: Path) -> None:
    """With ranges of a few KiB the walk cuts each file many times, only where no message is
    open (a message's frames would be split from each other otherwise), and the rows are the
    ones a single range per file gives, with no rejects."""
    whole = decode.decode_local("amqp-0-10", SAMPLE, tmp_path / "one", echo=lambda _: None)
    lines: list[str] = []
    small = decode.decode_local(
        "amqp-0-10", SAMPLE, tmp_path / "many", target=4096, echo=lines.append
    )
    assert whole.reconciled and small.reconciled and small.rejects == 0, lines
    ranges = int(lines[0].split(" in ")[1].split()[0].replace(",", ""))
    assert ranges > 50, lines[0]  # 480 KiB in 4 KiB ranges, cut between messages only
    one = pq.read_table(tmp_path / "one" / "frames").to_pylist()
    many = pq.read_table(tmp_path / "many" / "frames").to_pylist()

    def key(r: dict[str, Any]) -> tuple[str, int]:
        return r["direction"], r["offset"]

    assert sorted(many, key=key) == sorted(one, key=key)
