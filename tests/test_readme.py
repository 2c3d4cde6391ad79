"""The documents' figures for the shipped samples, recomputed from the samples.

Each test finds a console block's command in README.md or a page under docs/ (`docs_text`), runs
what it runs on the real sample (the frames command, the decode, the pcap the documents write,
the report), and requires every document that shows it to show exactly what came out.
A re-recorded sample that changes a figure fails here until the documents say the new one."""

from __future__ import annotations

import re
from pathlib import Path

import docs_text
import pytest
from pcap_writer import session, write
from pyspark.sql import SparkSession

from specgen.cli import main
from specgen.pipeline import decode
from specgen.specs import ROOT

SAMPLES = ROOT / "samples"


def _after(command: str, lines: int) -> list[str]:
    """The `lines` console lines shown after `$ .venv/bin/COMMAND`: the same in every document
    that shows the command, and at least one does."""
    shown = [text.splitlines()[:lines] for text in docs_text.after(f"$ .venv/bin/{command}\n")]
    assert all(s == shown[0] for s in shown), f"the documents disagree on what `{command}` prints"
    return shown[0]


def test_the_setup_list_names_every_package_setup_installs() -> None:
    setup = (ROOT / ".ci" / "setup").read_text(encoding="utf-8")
    packages = re.findall(r"need_apt\+=\(([\w.-]+)\)", setup)
    assert packages, "no apt packages found in .ci/setup"
    readme = docs_text.README.read_text(encoding="utf-8")
    said = " ".join(readme.split("`.ci/setup`:", 1)[1].split(";", 1)[0].split())
    spoken = {"openjdk-17-jre-headless": "OpenJDK 17", "chromium": "Chromium"}
    assert [p for p in packages if spoken.get(p, p) not in said] == []


@pytest.mark.parametrize("protocol", ["rabbitmq-stream", "amqp-1-0", "amqp-0-10", "amqp-fast-0-8"])
def test_the_frames_figure(protocol: str, capsys: pytest.CaptureFixture[str]) -> None:
    folder = SAMPLES / protocol / "session-1"
    command = f"specgen frames {protocol} samples/{protocol}/session-1/*.bin --roundtrip | tail -1"
    (shown,) = _after(command, 1)
    assert main(["frames", protocol, *map(str, sorted(folder.glob("*.bin"))), "--roundtrip"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == shown


def test_the_decode_of_the_shipped_sample(tmp_path: Path) -> None:
    shown = _after("specgen decode rabbitmq-stream samples/rabbitmq-stream --out out/sample", 20)
    (last,) = _after(
        "specgen decode rabbitmq-stream samples/rabbitmq-stream --out out/sample --overwrite"
        " | tail -1",
        1,
    )
    lines: list[str] = []
    out = tmp_path / "sample"
    # no master: the sample is one range's bytes at most, so this runs in this process
    decode.run("rabbitmq-stream", SAMPLES / "rabbitmq-stream", out, echo=lines.append)
    printed = [ln.replace(str(out), "out/sample") for ln in lines]
    assert printed == shown
    assert printed[-1] == last


def test_the_pcap_figures(tmp_path: Path) -> None:
    made, *_, first, second = _after(
        "python tests/pcap_writer.py samples/rabbitmq-stream/session-1 session.pcap"
        "   # the shipped session as tcpdump would have seen it",
        4,
    )
    packets = session(SAMPLES / "rabbitmq-stream" / "session-1", 5552)
    write(tmp_path / "session.pcap", packets)
    size = (tmp_path / "session.pcap").stat().st_size
    payload = sum(len(p.payload) for p in packets)
    assert made == f"session.pcap: {len(packets)} packets"
    assert first == f"pcap: 1 capture file ({size:,} bytes), TCP ports 5552"
    assert second.startswith(f"pcap: {len(packets):,} packets: {len(packets):,} TCP segments")
    for after in docs_text.after(second):
        tail = after.split("```", 1)[0]
        assert f"TCP payload {payload:,} bytes = {payload:,} in frames and rejects" in tail


def _section(text: str, title: str, lines: int) -> list[str]:
    return text.split(f"\n{title}\n", 1)[1].splitlines()[: lines - 1]


def test_the_report_figures(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The publish-to-confirm table of the Streams sample, and the conversations of the
    AMQP 0-9-1 one (the documents decode it into out/amqp091 first)."""
    tables = docs_text.after("```console\nPublish-to-confirm latency\n")
    shown = tables[0].split("```", 1)[0].splitlines()
    assert all(table.split("```", 1)[0].splitlines() == shown for table in tables)
    decode.decode_local("rabbitmq-stream", SAMPLES / "rabbitmq-stream", tmp_path / "rs")
    readme_decode = "specgen decode amqp-0-9-1 samples/amqp-0-9-1 --out out/amqp091"
    _after(f"{readme_decode} --overwrite > /dev/null", 0)  # the folder the report reads
    decode.decode_local("amqp-0-9-1", SAMPLES / "amqp-0-9-1", tmp_path / "amqp091")
    capsys.readouterr()
    assert main(["report", str(tmp_path / "rs")]) == 0
    assert _section(capsys.readouterr().out, "Publish-to-confirm latency", len(shown) + 1) == shown
    conversations = _after('specgen report out/amqp091 | grep -A2 "^Conversations"', 3)
    assert main(["report", str(tmp_path / "amqp091")]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("Conversations"))
    assert lines[at : at + 3] == conversations


def test_the_amqp_1_0_report_figures(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The decode's last line and the outcome and credit tables of the AMQP 1.0 sample, decoded
    where the documents do."""
    (shown,) = _after(
        "specgen decode amqp-1-0 samples/amqp-1-0 --out out/amqp10 --overwrite | tail -1", 1
    )
    lines: list[str] = []
    decode.decode_local("amqp-1-0", SAMPLES / "amqp-1-0", tmp_path / "amqp10", echo=lines.append)
    assert lines[-1] == shown
    capsys.readouterr()
    assert main(["report", str(tmp_path / "amqp10")]) == 0
    lines = capsys.readouterr().out.splitlines()
    for title in ("Settlement outcomes", "Credit granted"):
        shown = _after(f'specgen report out/amqp10 | grep -A5 "^{title}"', 6)
        at = next(i for i, ln in enumerate(lines) if ln.startswith(title))
        assert lines[at : at + 6] == shown


def test_the_amqp_0_10_figures(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The decode's last line and the outcome table of the AMQP 0-10 sample."""
    (shown,) = _after(
        "specgen decode amqp-0-10 samples/amqp-0-10 --out out/amqp010 --overwrite | tail -1", 1
    )
    lines: list[str] = []
    decode.decode_local("amqp-0-10", SAMPLES / "amqp-0-10", tmp_path / "amqp010", echo=lines.append)
    assert lines[-1] == shown
    capsys.readouterr()
    assert main(["report", str(tmp_path / "amqp010")]) == 0
    out = capsys.readouterr().out.splitlines()
    title = "Transfer outcomes"
    table = _after(f'specgen report out/amqp010 | grep -A6 "^{title}"', 7)
    at = next(i for i, ln in enumerate(out) if ln.startswith(title))
    assert out[at : at + 7] == table


def test_the_amqp_fast_0_8_figures(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The 0.8 sample's decode line and destinations table, decoded where the documents do."""
    (shown,) = _after(
        "specgen decode amqp-fast-0-8 samples/amqp-fast-0-8 --out out/fast08 --overwrite | tail -1",
        1,
    )
    lines: list[str] = []
    decode.decode_local(
        "amqp-fast-0-8", SAMPLES / "amqp-fast-0-8", tmp_path / "fast08", echo=lines.append
    )
    assert lines[-1] == shown
    capsys.readouterr()
    assert main(["report", str(tmp_path / "fast08")]) == 0
    out = capsys.readouterr().out.splitlines()
    title = "Messages per destination"
    table = _after(f'specgen report out/fast08 | grep -A7 "^{title}"', 8)
    at = next(i for i, ln in enumerate(out) if ln.startswith(title))
    assert out[at : at + 8] == table
