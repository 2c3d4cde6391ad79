"""The shipped AMQP 1.0 sample (samples/record_amqp_1_0.py: a qpid-proton session with RabbitMQ,
recorded through `specgen capture`) decodes on Spark with no rejects, every frame row's bytes
re-encode exactly with the generated codec, and `specgen report` reads the tables.

The expected counts come from what the recorder told proton to do (its constants), not from
our decoder: 200 messages, three of them over the 16 KiB frame size in 3, 5 and 3 transfer
frames, one delivery rejected and one released (and so delivered twice).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest

from specgen.cli import main
from specgen_codecs.amqp_1_0.v1_0 import Frame, decode, decode_message, encode

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "amqp-1-0" / "session-1"

_spec = importlib.util.spec_from_file_location("recorder", ROOT / "samples" / "record_amqp_1_0.py")
assert _spec is not None and _spec.loader is not None
recorder = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(recorder)
PUBLISHED, BIG, MAX_FRAME = recorder.PUBLISHED, recorder.BIG, recorder.MAX_FRAME_SIZE


def _frames_for(size: int) -> int:
    """Transfer frames one message of a body this large takes (its sections fit in ~1 KiB)."""
    return -(-(size + 1024) // MAX_FRAME)


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("amqp10-sample") / "out"


@pytest.fixture(scope="module")
def decoded(spark: Any, out: Path) -> tuple[int, str, list[dict[str, Any]], int]:
    """`specgen decode amqp-1-0` in this process: it runs on the test run's Spark session."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        # a master named: without one a capture this small decodes without Spark
        code = main(["decode", "amqp-1-0", str(SAMPLE), "--out", str(out), "--master", "local[*]"])
    frames = pq.read_table(out / "frames").to_pylist()
    rejects = pq.read_table(out / "rejects").num_rows
    return code, buf.getvalue(), frames, rejects


def test_the_sample_decodes_on_spark_with_no_rejects(
    decoded: tuple[int, str, list[dict[str, Any]], int],
) -> None:
    code, stdout, frames, rejects = decoded
    assert code == 0, stdout
    assert rejects == 0
    (line,) = [x for x in stdout.splitlines() if x.startswith("reconciliation: ")]
    assert f"reconciliation: {len(frames):,} frames + 0 rejected frames" in line, line
    assert "exactly once" in line, line
    # protocol headers are rows too, so the rows' sizes are the files' bytes, all of them
    assert sum(r["size"] for r in frames) == sum(p.stat().st_size for p in SAMPLE.glob("*.bin"))
    assert all(r["timestamp"] is not None for r in frames)  # the index timed every frame


def test_the_frames_hold_what_the_recorder_did(
    decoded: tuple[int, str, list[dict[str, Any]], int],
) -> None:
    frames = decoded[2]
    mix = Counter((r["direction"], r["command"]) for r in frames)
    big_frames = sum(_frames_for(size) for size in BIG.values())
    assert mix["c2s", "transfer"] == PUBLISHED - len(BIG) + big_frames
    # the released message comes back once more
    assert mix["s2c", "transfer"] == PUBLISHED + 1 - len(BIG) + big_frames
    for direction in ("c2s", "s2c"):
        headers = [r for r in frames if r["direction"] == direction and r["protocol_header"]]
        assert [h["protocol_header"]["protocol_id"] for h in headers] == [3, 0]  # SASL, AMQP
        assert mix[direction, "open"] == mix[direction, "begin"] == mix[direction, "close"] == 1
        assert mix[direction, "attach"] == mix[direction, "detach"] == 2
    assert mix["c2s", "sasl-init"] == mix["s2c", "sasl-mechanisms"] == 1
    outcome = next(r for r in frames if r["command"] == "sasl-outcome")
    assert outcome["sasl_outcome"]["code"] == 0
    # the receiver's dispositions: one rejected, one released, the rest accepted in ranges
    states = Counter(
        next(iter(json.loads(r["disposition"]["state"])))
        for r in frames
        if r["direction"] == "c2s" and r["command"] == "disposition"
    )
    assert states["amqp:rejected:list"] == states["amqp:released:list"] == 1
    settled = {
        d
        for r in frames
        if r["direction"] == "s2c" and r["command"] == "disposition"
        for d in range(
            r["disposition"]["first"], (r["disposition"]["last"] or r["disposition"]["first"]) + 1
        )
    }
    assert settled == set(range(PUBLISHED))  # the server accepted every message the sender sent


def test_every_row_re_encodes_to_its_bytes(
    decoded: tuple[int, str, list[dict[str, Any]], int],
) -> None:
    frames = decoded[2]
    data = {p.name.split(".")[1]: p.read_bytes() for p in SAMPLE.glob("*.bin")}
    bodies = 0
    for r in frames:
        raw = data[r["direction"]][r["offset"] : r["offset"] + r["size"]]
        msg = decode(raw)
        assert encode(msg) == raw, (r["direction"], r["offset"], r["command"])
        if isinstance(msg, Frame) and msg.payload and not msg.body.more:
            bodies += 1
    # a message's last (or only) transfer: one per message each way
    assert bodies == PUBLISHED + PUBLISHED + 1


def test_a_transfer_payload_is_a_message(
    decoded: tuple[int, str, list[dict[str, Any]], int],
) -> None:
    frames = decoded[2]
    small = [r for r in frames if r["command"] == "transfer" and r["direction"] == "c2s"]
    whole = [r for r in small if not r["transfer"]["more"]]
    ids = [decode_message(r["payload"]).properties for r in whole[:5]]
    assert all(p is not None and p.message_id is not None for p in ids)


def test_the_report_counts_the_rows(
    decoded: tuple[int, str, list[dict[str, Any]], int],
    out: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    frames = decoded[2]
    assert main(["report", str(out), "--json", "-"]) == 0
    sections = {s["title"]: s for s in json.loads(capsys.readouterr().out)["sections"]}
    totals = dict(sections["Totals"]["rows"])
    assert (totals["frames"], totals["rejects"]) == (len(frames), 0)
    mix = sections["Command mix"]
    at = {name: mix["columns"].index(name) for name in ("command", "direction", "frames")}
    assert {
        (row[at["command"]], row[at["direction"]]): row[at["frames"]] for row in mix["rows"]
    } == (Counter((r["command"], r["direction"]) for r in frames))


def test_specgen_frames_reads_the_sample_back(capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(p) for p in sorted(SAMPLE.glob("*.bin"))]
    assert main(["frames", "amqp-1-0", *files, "--roundtrip"]) == 0
    *lines, verdict = capsys.readouterr().out.splitlines()
    records = [json.loads(line) for line in lines]
    assert verdict == f"ok: {len(records)} frames in 2 files, 0 failed, re-encoded identically"
    assert all(r["roundtrip"] for r in records)
    first = records[0]  # the client's SASL protocol header: "AMQP" 3 1 0 0
    assert (first["offset"], first["command"], first["ident"]) == (
        0,
        "protocol-header",
        [3, 1, 0, 0],
    )
    # an open is an AMQP frame (type 0) of descriptor 0x00000000:0x00000010 (transport.xml)
    opens = [r for r in records if r["command"] == "open"]
    assert len(opens) == 2 and all(r["ident"] == [0, 0x10] for r in opens)
    assert all("_wire" not in r["fields"]["body"] for r in opens)  # the codec's, not the message's
