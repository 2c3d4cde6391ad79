"""`specgen decode` on pcap files: the same frames as the proxy recording of the same session.

The shipped Streams sample was recorded by `specgen capture`; `pcap_writer` turns it into the
packets tcpdump would have seen (a handshake, segments at the recorded times, a FIN exchange).
Decoding that pcap must give exactly the frames decoding the recording gives, and damaged
versions of it (reordered, duplicated, lost and truncated segments, a capture that starts
mid-connection) must lose nothing but what the damage took, each loss a reject.
"""

from __future__ import annotations

import gzip
import json
import random
import struct
from collections import Counter
from pathlib import Path
from typing import Any

import dpkt  # type: ignore[import-untyped]
import pyarrow.parquet as pq
import pytest
from pcap_writer import Connection, Packet, connection, write
from pyspark.sql import SparkSession

from specgen.pipeline import decode, pcap_job

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "rabbitmq-stream" / "session-1"
PORT = 5552


def _connections() -> list[Connection]:
    names = sorted(p.name.split(".")[0] for p in SAMPLE.glob("*.index.jsonl"))
    return [connection(SAMPLE, name, 40001 + i, PORT) for i, name in enumerate(names)]


def _rows(out: Path, table: str, columns: list[str]) -> list[dict[str, Any]]:
    return pq.read_table(out / table, columns=columns).to_pylist()


COLUMNS = ["connection", "direction", "offset", "size", "command", "message", "key", "timestamp"]


def _frames(out: Path, names: dict[str, str] | None = None) -> list[tuple[Any, ...]]:
    rows = _rows(out, "frames", COLUMNS)
    return sorted(
        (
            names.get(r["connection"], r["connection"]) if names else r["connection"],
            *(r[c] for c in COLUMNS[1:-1]),
        )
        for r in rows
    )


@pytest.fixture(scope="module")
def recorded(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("recorded")
    result = decode.run("rabbitmq-stream", SAMPLE, out / "out", echo=lambda _: None)
    assert result.reconciled and result.rejects == 0
    return out / "out"


def _names(conns: list[Connection]) -> dict[str, str]:
    """pcap connection name -> the recording's connection name."""
    return {f"10.0.0.1_{c.client_port}-10.0.0.2_{PORT}": c.name for c in conns}


def _decode(
    tmp_path: Path, packets: list[Packet], lines: list[str] | None = None
) -> tuple[Any, Path]:
    capture = tmp_path / "session.pcap"
    write(capture, packets)
    out = tmp_path / "out"
    files = pcap_job.find(capture)
    result = pcap_job.run(
        "rabbitmq-stream",
        files,
        out,
        "local[*]",  # the Spark stages: without a master a pcap this small runs in-process
        False,
        frozenset(),
        echo=(lines.append if lines is not None else lambda _: None),
    )
    return result, out


def _all(conns: list[Connection]) -> list[Packet]:
    return sorted((p for c in conns for p in c.packets), key=lambda p: p.ts)


def test_a_pcap_decodes_to_the_frames_of_the_recording(
    spark: SparkSession, recorded: Path, tmp_path: Path
) -> None:
    conns = _connections()
    lines: list[str] = []
    result, out = _decode(tmp_path, _all(conns), lines)
    assert result.reconciled, lines
    assert result.rejects == 0, lines
    assert pq.read_table(out / "rejects").num_rows == 0  # no gap either
    assert _frames(out, _names(conns)) == _frames(recorded)
    # timestamps come from the packets: the recorded wall times, to the microsecond
    pcap_ts = {
        (_names(conns)[r["connection"]], r["direction"], r["offset"]): r["timestamp"]
        for r in _rows(out, "frames", COLUMNS)
    }
    rec_ts = {
        (r["connection"], r["direction"], r["offset"]): r["timestamp"]
        for r in _rows(recorded, "frames", COLUMNS)
    }
    assert pcap_ts.keys() == rec_ts.keys()
    assert all(abs((pcap_ts[k] - rec_ts[k]).total_seconds()) < 2e-6 for k in rec_ts)
    assert any("pcap reconciliation" in line and "FAILED" not in line for line in lines), lines
    # the report's latency sections work on pcap input: the same counts and latencies
    got = _latencies(out, tmp_path / "pcap.json")
    want = _latencies(recorded, tmp_path / "rec.json")
    assert got.keys() == want.keys()
    for title in want:
        assert len(got[title]) == len(want[title]) > 0, title
        for a, b in zip(got[title], want[title], strict=True):
            # counts equal; latencies within 5 us (both sides round the same times to 1 us)
            assert a == pytest.approx(b, abs=0.005), (title, a, b)


def _latencies(out: Path, json_file: Path) -> dict[str, list[tuple[Any, ...]]]:
    """The report's latency tables without their capture and connection names."""
    from specgen.cli import main

    assert (
        main(
            [
                "report",
                str(out),
                "--json",
                str(json_file),
                "--html",
                str(json_file.with_suffix(".html")),
            ]
        )
        == 0
    )
    sections = json.loads(json_file.read_text())["sections"]
    wanted = ("Request latency per command", "Publish-to-confirm latency")
    found = {s["title"]: s for s in sections if s["title"] in wanted}
    assert set(found) == set(wanted)
    return {
        title: sorted(
            tuple(round(v, 2) if isinstance(v, float) else v for v in row[1:]) for row in s["rows"]
        )
        for title, s in found.items()
    }


def test_reordered_and_duplicated_segments_change_nothing(
    spark: SparkSession, recorded: Path, tmp_path: Path
) -> None:
    conns = _connections()
    packets = _all(conns)
    rng = random.Random(7)
    damaged = list(packets)
    again = rng.sample(range(len(packets)), len(packets) // 5)
    for i in again:
        damaged.append(packets[i])  # retransmitted later
    # swap neighbours: out-of-order arrival
    for i in rng.sample(range(len(damaged) - 1), len(damaged) // 10):
        damaged[i], damaged[i + 1] = damaged[i + 1], damaged[i]
    lines: list[str] = []
    result, out = _decode(tmp_path, damaged, lines)
    assert result.reconciled and result.rejects == 0, lines
    assert pq.read_table(out / "rejects").num_rows == 0  # no gap either
    assert _frames(out, _names(conns)) == _frames(recorded)
    duplicated = sum(len(packets[i].payload) for i in again)
    assert duplicated > 0
    assert any(f"+ {duplicated:,} retransmitted" in line for line in lines), lines


def test_a_lost_segment_is_a_gap_and_decoding_resumes(
    spark: SparkSession, recorded: Path, tmp_path: Path
) -> None:
    conns = _connections()
    packets = _all(conns)
    # the biggest server segment of the busiest connection goes missing
    victim = max((p for p in packets if p.direction == "s2c"), key=lambda p: len(p.payload))
    damaged = [p for p in packets if p is not victim]
    lines: list[str] = []
    result, out = _decode(tmp_path, damaged, lines)
    assert result.reconciled, lines
    gaps = [
        r
        for r in _rows(out, "rejects", ["kind", "length", "error", "direction"])
        if r["kind"] == "gap"
    ]
    assert len(gaps) == 1
    assert gaps[0]["length"] == len(victim.payload) and gaps[0]["direction"] == "s2c"
    assert f"TCP sequence {victim.seq}" in gaps[0]["error"] or str(victim.seq) in gaps[0]["error"]
    # every frame that lies wholly before or wholly after the lost bytes is still decoded
    got = _frames(out, _names(conns))
    expected = _frames(recorded)
    assert len(got) < len(expected)
    assert len(got) >= len(expected) - 40


def test_a_capture_that_starts_mid_connection(
    spark: SparkSession, recorded: Path, tmp_path: Path
) -> None:
    conns = _connections()
    packets = _all(conns)
    cut = len(packets) // 3
    lines: list[str] = []
    result, out = _decode(tmp_path, packets[cut:], lines)
    assert result.reconciled, lines

    # offsets count from the first byte captured, so frames are compared by what they are
    def content(frames: list[tuple[Any, ...]]) -> Counter[tuple[Any, ...]]:
        return Counter((f[0], f[1], *f[3:]) for f in frames)

    got, expected = content(_frames(out, _names(conns))), content(_frames(recorded))
    assert not got - expected  # nothing invented
    kept = {p.ts for p in packets[cut:]}
    whole = [c for c in conns if all(p.ts in kept for p in c.packets)]
    assert whole  # connections that started after the cut decode completely
    for c in whole:
        mine = {k: v for k, v in got.items() if k[0] == c.name}
        assert mine == {k: v for k, v in expected.items() if k[0] == c.name}
    # the connection cut in the middle loses at most the frames before its first boundary
    assert sum(got.values()) >= sum(expected.values()) - sum(
        v for k, v in expected.items() if k[0] not in {c.name for c in whole}
    )


def test_the_command_line_takes_a_folder_of_pcaps(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`specgen decode` tells pcaps by their magic (a gzipped one too, under any name), and a
    lost segment is a reject that --max-rejects counts."""
    from specgen.cli import main

    conns = _connections()
    packets = _all(conns)
    folder = tmp_path / "captures"
    (folder / "day1").mkdir(parents=True)
    write(folder / "day1" / "a.pcap", packets[: len(packets) // 2])
    raw = tmp_path / "b.pcap"
    write(raw, packets[len(packets) // 2 :], nano=True)
    import gzip

    (folder / "b.dump").write_bytes(gzip.compress(raw.read_bytes()))
    (folder / "notes.txt").write_text("not a capture")
    out = tmp_path / "out"
    assert main(["decode", "rabbitmq-stream", str(folder), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "pcap: 2 capture files" in text and "pcap reconciliation" in text
    captures = {r["capture"] for r in _rows(out, "frames", ["capture"])}
    assert captures == {"day1/a.pcap", "b.dump"}
    victim = max(packets, key=lambda p: len(p.payload))
    write(tmp_path / "lossy.pcap", [p for p in packets if p is not victim])
    code = main(
        [
            "decode",
            "rabbitmq-stream",
            str(tmp_path / "lossy.pcap"),
            "--out",
            str(tmp_path / "o2"),
            "--max-rejects",
            "0",
        ]
    )
    assert code == 1
    assert "more than --max-rejects 0" in capsys.readouterr().err
    # a port the capture does not use: an input error naming the way out
    args = ["decode", "rabbitmq-stream", str(raw), "--out", str(tmp_path / "o3"), "--port", "9"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "no TCP payload on port 9 in 305 packets; give the server's port with --port" in err


# ---- damaged capture files: the damage is a reject, the rest decodes, every byte reconciles ------


def _record_offsets(packets: list[Packet]) -> list[int]:
    """Where each packet's record starts in the pcap `write` makes of them."""
    offsets, at = [], 24
    for p in packets:
        offsets.append(at)
        at += 16 + len(p.frame)
    return offsets


def _decode_file(capture: Path, out: Path, lines: list[str]) -> Any:
    return pcap_job.run(
        "rabbitmq-stream",
        pcap_job.find(capture),
        out,
        "local[*]",  # the Spark stages, as `_decode`
        False,
        frozenset(),
        echo=lines.append,
    )


def _kinds(out: Path) -> list[dict[str, Any]]:
    return _rows(out, "rejects", ["kind", "offset", "length", "error", "capture", "connection"])


def test_a_record_length_of_0x80000000_is_a_capture_reject_and_the_rest_decodes(
    spark: SparkSession, tmp_path: Path
) -> None:
    conns = _connections()
    packets = _all(conns)
    victim = max(range(len(packets)), key=lambda i: len(packets[i].payload))
    # what the decoder makes of the capture without that packet: the frames to expect
    (tmp_path / "lost").mkdir()
    _, lost_out = _decode(tmp_path / "lost", [p for i, p in enumerate(packets) if i != victim])
    capture = tmp_path / "damaged.pcap"
    write(capture, packets)
    data = bytearray(capture.read_bytes())
    offset = _record_offsets(packets)[victim]
    data[offset + 8 : offset + 12] = (0x80000000).to_bytes(4, "little")
    capture.write_bytes(data)
    lines: list[str] = []
    result = _decode_file(capture, tmp_path / "out", lines)
    assert result.reconciled, lines
    rejects = _kinds(tmp_path / "out")
    (damage,) = [r for r in rejects if r["kind"] == "capture"]
    assert (damage["offset"], damage["length"]) == (offset, 16 + len(packets[victim].frame))
    assert damage["capture"] == "damaged.pcap" and damage["connection"] is None
    assert "snap length" in damage["error"]
    # the packet's bytes are a gap in its stream, as if it had never been captured
    others = sorted(
        (r["kind"], r["offset"], r["length"]) for r in rejects if r["kind"] != "capture"
    )
    assert others == sorted((r["kind"], r["offset"], r["length"]) for r in _kinds(lost_out))
    assert "gap" in {kind for kind, _, _ in others}
    assert _frames(tmp_path / "out") == _frames(lost_out)  # every frame outside the record
    size = len(data)
    assert any(
        line.startswith("capture reconciliation: 1 file:") and f"= {size:,} bytes" in line
        for line in lines
    ), lines


def test_a_pcapng_block_of_length_0x7ffffff0_is_a_capture_reject(
    spark: SparkSession, tmp_path: Path
) -> None:
    conns = _connections()
    packets = _all(conns)
    victim = len(packets) // 2
    (tmp_path / "lost").mkdir()
    _, lost_out = _decode(tmp_path / "lost", [p for i, p in enumerate(packets) if i != victim])
    capture = tmp_path / "damaged.pcapng"
    with capture.open("wb") as f:
        writer = dpkt.pcapng.Writer(f, linktype=dpkt.pcap.DLT_EN10MB)
        for p in packets:
            writer.writepkt(p.frame, ts=p.ts)
    data = bytearray(capture.read_bytes())
    blocks, at = [], 0
    while at < len(data):
        btype, length = struct.unpack_from("<II", data, at)
        if btype == 6:
            blocks.append((at, length))
        at += length
    offset, length = blocks[victim]
    struct.pack_into("<I", data, offset + 4, 0x7FFFFFF0)
    capture.write_bytes(data)
    lines: list[str] = []
    result = _decode_file(capture, tmp_path / "out", lines)
    assert result.reconciled, lines
    (damage,) = [r for r in _kinds(tmp_path / "out") if r["kind"] == "capture"]
    assert (damage["offset"], damage["length"]) == (offset, length)
    assert _frames(tmp_path / "out") == _frames(lost_out)


def test_a_gzipped_pcap_cut_short_decodes_what_came_before(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from specgen.cli import main

    capture = tmp_path / "whole.pcap"
    write(capture, _all(_connections()))
    packed = gzip.compress(capture.read_bytes())
    cut = tmp_path / "cut" / "session.pcap.gz"
    cut.parent.mkdir()
    cut.write_bytes(packed[: len(packed) // 2])
    out = tmp_path / "out"
    code = main(["decode", "rabbitmq-stream", str(cut), "--out", str(out)])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    warnings = [line for line in printed.out.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "gzip stream breaks" in warnings[0], printed.out
    assert "Traceback" not in printed.err
    frames = pq.read_table(out / "frames").num_rows
    assert frames > 50
    (damage,) = [r for r in _kinds(out) if r["kind"] == "capture"]
    assert "gzip stream breaks" in damage["error"] and "EOFError" in damage["error"]


def test_a_capture_file_that_does_not_add_up_fails_the_reconciliation(tmp_path: Path) -> None:
    capture = tmp_path / "a.pcap"
    write(capture, _all(_connections())[:5])
    (f,) = pcap_job.find(capture)
    size = capture.stat().st_size
    good = pcap_job.FileCounts(record_bytes=size - 24, end=size)
    streams = pcap_job.Streams(5, 0, 5, [], {"a.pcap": good})
    lines: list[str] = []
    assert pcap_job.reconcile_files([f], streams, lines.append) == {}
    assert lines == [
        f"capture reconciliation: 1 file: 24 bytes of file headers + {size - 24:,} in records "
        f"+ 0 damaged = {size:,} bytes, each file's size"
    ]
    short = pcap_job.FileCounts(record_bytes=size - 40, end=size)  # 16 bytes unaccounted for
    streams = pcap_job.Streams(5, 0, 5, [], {"a.pcap": short})
    lines = []
    problems = pcap_job.reconcile_files([f], streams, lines.append)
    assert problems == {"a.pcap": f"{size - 16:,} bytes accounted for, its size is {size:,}"}
    assert "FAILED" in lines[-1]


def test_a_pcap_of_one_range_without_a_master_decodes_without_spark_to_the_same_output(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No --master and at most one range's bytes of pcap: both stages' functions and the
    decode run in this process, and write the byte files and tables Spark writes."""
    from specgen.pipeline import spark as spark_module

    pcap_file = Path(__file__).resolve().parent.parent / "samples" / "pcap" / "amqp-0-10.pcap"
    files = pcap_job.find(pcap_file)
    on_spark, here = tmp_path / "spark", tmp_path / "here"
    pcap_job.run("amqp-0-10", files, on_spark, "local[*]", False, frozenset(), echo=print)

    def no_spark(master: str | None = None) -> None:
        raise AssertionError(f"Spark started ({master})")

    monkeypatch.setattr(spark_module, "session", no_spark)
    lines: list[str] = []
    result = pcap_job.run("amqp-0-10", files, here, None, False, frozenset(), echo=lines.append)
    assert result.reconciled and result.frames > 1000, lines
    assert lines[1].startswith("decoding in this process: ") and "bytes of pcap" in lines[1]
    assert sum(line.startswith("decoding in this process: ") for line in lines) == 2, lines

    def files_of(out: Path) -> dict[str, bytes]:
        root = out / "streams"
        return {
            p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()
        }

    assert files_of(here) == files_of(on_spark)
    order = ("capture", "connection", "direction", "offset")
    for table, key in (("frames", order), ("rejects", (*order, "kind"))):
        ours, theirs = (pq.read_table(d / table) for d in (here, on_spark))
        by = [(k, "ascending") for k in key]
        assert ours.sort_by(by).equals(theirs.sort_by(by)), table
