"""The shipped AMQP 0-9-1 sample (samples/record_amqp_0_9_1.py: a pika session with RabbitMQ,
recorded through `specgen capture`) decodes on Spark with no rejects, and every frame in it
re-encodes byte for byte with the generated codec."""

from __future__ import annotations

import contextlib
import io
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest

from specgen.cli import main
from specgen_codecs.amqp_0_9_1.rabbitmq import FrameReader, decode, encode

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "amqp-0-9-1" / "session-1"
PUBLISHED = 200  # messages the recorder publishes
BIG = 2  # of which bodies over frame_max (several content-body frames each)


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("amqp-sample") / "out"


@pytest.fixture(scope="module")
def decoded(spark: Any, out: Path) -> tuple[int, str, list[dict[str, Any]], int]:
    """`specgen decode amqp-0-9-1` in this process: it runs on the test run's Spark session."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        # a master named: without one a capture this small decodes without Spark
        code = main(
            ["decode", "amqp-0-9-1", str(SAMPLE), "--out", str(out), "--master", "local[*]"]
        )
    frames = pq.read_table(out / "frames", columns=["direction", "message", "size"]).to_pylist()
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
    assert "the rows hold every byte of all" in line and "exactly once" in line, line
    assert sum(r["size"] for r in frames) + len(b"AMQP\x00\x00\x09\x01") == sum(
        p.stat().st_size for p in SAMPLE.glob("*.bin")
    )


def test_the_frames_hold_the_session_s_method_mix(
    decoded: tuple[int, str, list[dict[str, Any]], int],
) -> None:
    _, _, frames, _ = decoded
    mix = Counter((r["direction"], r["message"]) for r in frames)
    assert mix["c2s", "BasicPublish"] == PUBLISHED
    assert mix["c2s", "BasicProperties"] == PUBLISHED
    # every body under frame_max is one frame (empty ones none), the big ones several
    assert mix["c2s", "ContentBody"] > PUBLISHED - 10 + BIG
    # the consumer stops after PUBLISHED - 3 acks; deliveries in flight then go back to the
    # queue when it cancels, so a few may be delivered twice
    assert mix["s2c", "BasicDeliver"] >= PUBLISHED - 3
    assert mix["s2c", "BasicGetOk"] == 3 and mix["s2c", "BasicGetEmpty"] == 1
    assert mix["s2c", "BasicAck"] >= 1  # publisher confirms
    # the cancel rejects (requeues) what was delivered but not acked, then one get is rejected
    assert mix["c2s", "BasicAck"] >= PUBLISHED - 2 and mix["c2s", "BasicReject"] >= 1
    assert mix["c2s", "BasicNack"] == 1
    for message in ("ConfirmSelect", "QueueDeclare", "BasicConsume", "ConnectionStartOk"):
        assert mix["c2s", message] >= 1, message
    for message in ("ConnectionStart", "ConnectionTune", "ConfirmSelectOk", "BasicConsumeOk"):
        assert mix["s2c", message] >= 1, message


def _raw_frames(path: Path, reader: FrameReader) -> list[bytes]:
    reader.feed(path.read_bytes())
    raw = [frame for _, frame in reader.frames()]
    reader.finish()
    return raw


def test_every_frame_re_encodes_byte_for_byte() -> None:
    total = 0
    files = sorted(SAMPLE.glob("*.bin"))
    assert files
    for path in files:
        if path.name.endswith(".c2s.bin"):
            reader = FrameReader(sender="client", preamble=True)
        else:
            reader = FrameReader(sender="server")
        raw = _raw_frames(path, reader)
        for frame in raw:
            assert encode(decode(frame)) == frame, (path.name, frame[:64])
        total += len(raw)
    assert total > 3 * PUBLISHED


def test_the_report_matches_confirms_and_counts_deliveries(
    decoded: tuple[int, str, list[dict[str, Any]], int], out: Path, tmp_path: Path
) -> None:
    """The AMQP 0-9-1 analyses: every publish after Confirm.Select is matched with the Basic.Ack
    that covers its number (RabbitMQ acks with `multiple`), and deliveries count per consumer
    tag; reply codes are named from the spec's constants."""
    frames = decoded[2]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["report", str(out), "--html", str(tmp_path / "report.html")]) == 0
    text = buf.getvalue()
    confirm = text.split("Publish-to-confirm latency (Basic.Ack)", 1)[1].split("\n\n", 1)[0]
    (row,) = [line.split() for line in confirm.splitlines() if "channel 1" in line]
    assert row[3:6] == [str(PUBLISHED), str(PUBLISHED), "0"], confirm
    delivered = sum(1 for r in frames if r["message"] == "BasicDeliver")
    section = text.split("Deliveries per consumer tag", 1)[1].split("\n\n", 1)[0]
    assert (
        sum(int(line.split()[-2]) for line in section.splitlines() if "ctag" in line) == delivered
    )
    assert "REPLY_SUCCESS" in text
