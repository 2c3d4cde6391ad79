"""The report's protocol analyses read the generated version a table was decoded with, found
through the registry from the name the table carries; the pcap job's default ports come from the
protocol's generated framing module; a conversation is checked against the dialogue grammars one
way for every protocol."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest

from specgen import report
from specgen.analyses import for_columns
from specgen.analyses.conversations import check, dialogue_of, tally
from specgen.pipeline import pcap_job
from specgen.pipeline.decode import decode_local
from specgen.registry import find

ROOT = Path(__file__).resolve().parents[1]
AMQP = ROOT / "samples" / "amqp-0-9-1"


@pytest.fixture(scope="module")
def plain_0_9_1(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The AMQP 0-9-1 sample decoded with the spec's own version, not RabbitMQ's (the latest)."""
    out = tmp_path_factory.mktemp("plain") / "out"
    decode_local("amqp-0-9-1/0-9-1", AMQP, out, echo=lambda _: None)
    return out


def test_every_part_of_a_table_names_the_version_that_decoded_it(plain_0_9_1: Path) -> None:
    parts = sorted((plain_0_9_1 / "frames").glob("*.parquet"))
    assert parts
    for part in parts:
        assert pq.read_schema(part).metadata[b"specgen.spec"] == b"amqp-0-9-1/0-9-1"
    assert report._decoded_with(plain_0_9_1 / "frames") == find("amqp-0-9-1/0-9-1")


def test_the_report_runs_the_analyses_of_that_version(spark: Any, plain_0_9_1: Path) -> None:
    built = report.build(spark, plain_0_9_1 / "frames", plain_0_9_1 / "rejects")
    (conversations,) = [s for s in built.sections if s.title == "Conversations against the grammar"]
    assert conversations.notes[0].endswith("break it"), conversations.notes


def _table(path: Path, metadata: dict[str, str] | None) -> Path:
    path.mkdir()
    schema = pa.schema([pa.field("capture", pa.string())], metadata=metadata)
    pq.write_table(schema.empty_table(), path / "part-00000.parquet")
    return path


def test_a_table_that_names_no_version_is_read_with_the_latest(tmp_path: Path) -> None:
    frames = _table(tmp_path / "frames", None)
    assert report._decoded_with(frames) is None
    (analysis,) = for_columns({"basic_publish", "channel"}, report._decoded_with(frames))
    assert analysis.package == find("amqp-0-9-1").import_name  # type: ignore[attr-defined]
    assert find("amqp-0-9-1").latest


def test_a_version_this_specgen_does_not_know_is_a_report_error(tmp_path: Path) -> None:
    frames = _table(tmp_path / "frames", {"specgen.spec": "amqp-0-9-1/9.9"})
    with pytest.raises(report.ReportError, match="decoded with amqp-0-9-1/9.9, a spec this"):
        report._decoded_with(frames)


def test_each_version_names_its_codes_from_its_own_package() -> None:
    columns = {"publish_v1", "publish_confirm"}
    (current,) = for_columns(columns, find("rabbitmq-stream/4.0"))
    (early,) = for_columns(columns, find("rabbitmq-stream/early"))
    assert current.code_names[0x01] == "OK" and current.ok_codes == {0x01}
    # the early protocol document has no response code table, so nothing names them
    assert (early.code_names, early.ok_codes) == ({}, set())


def test_a_table_of_one_protocol_runs_no_analysis_of_another() -> None:
    columns = {"basic_publish", "channel", "publish_v1"}
    assert len(for_columns(columns)) == 2  # a table that does not say: the columns decide
    (only,) = for_columns(columns, find("rabbitmq-stream"))
    assert type(only).__module__ == "specgen.analyses.rabbitmq_stream"


def test_default_ports_are_the_generated_framing_modules() -> None:
    assert pcap_job.default_ports(find("amqp-0-9-1/0-9-1")) == {5672}
    assert pcap_job.default_ports(find("rabbitmq-stream/early")) == {5552}
    # AMQP 0-10's framing module too, though its frames carry segments
    assert pcap_job.default_ports(find("amqp-0-10")) == {5672}


def test_a_conversation_is_checked_after_its_protocol_header() -> None:
    dialogue = dialogue_of(find("amqp-0-9-1/0-9-1").import_name)
    opening = [("s2c", "ConnectionStart"), ("c2s", "ConnectionStartOk")]
    checked = check(dialogue, "connection", opening, opens=True)
    assert (checked.verdict.status, checked.steps, checked.at) == ("incomplete", 3, None)
    # where it breaks is a frame's index: the header is a step, but no frame
    checked = check(dialogue, "connection", [("c2s", "ConnectionTune")], opens=True)
    assert (checked.verdict.status, checked.verdict.at, checked.at) == ("broken", 1, 0)
    # a conversation that does not open the connection is checked without it
    checked = check(dialogue, "connection", opening[:1])
    assert checked.verdict.expected == ("C:connection.protocol-header",)


def test_the_tally_counts_each_status() -> None:
    assert tally(Counter({"ok": 2, "broken": 1}), "1 channel, 2 handles") == (
        "3 conversations (1 channel, 2 handles): 2 follow their grammar, "
        "0 stop early (incomplete, not broken), 1 break it"
    )
