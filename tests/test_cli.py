"""The CLI: ir, list, check, frames (fed with bytes an independent implementation wrote)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specgen import generate, ir
from specgen.cli import main
from specgen.specs import ROOT, SpecVersion, build_ir


def test_ir_prints_canonical_json_that_loads_back(
    capsys: pytest.CaptureFixture[str], v40: SpecVersion
) -> None:
    assert main(["ir", "rabbitmq-stream/4.0"]) == 0
    text = capsys.readouterr().out
    data = json.loads(text)
    assert [(c["name"], c["ident"]) for c in data["commands"]][:2] == [
        ("DeclarePublisher", [1]),
        ("Publish", [2]),
    ]
    protocol = ir.load(text)
    assert protocol == build_ir(v40)[0]
    assert ir.dump(protocol) == text


def test_ir_accepts_a_spec_path(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ir", "specs/rabbitmq-stream/PROTOCOL-early.adoc", "--no-overlay"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["version"] == "early"
    assert "overlays" not in data  # the IR as the text says it
    assert len(data["commands"]) == 17


def test_unknown_spec_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ir", "no-such-protocol"]) == 2
    assert "unknown spec 'no-such-protocol'" in capsys.readouterr().err


def test_list_names_every_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split("\t")[0] for ln in lines] == [
        "amqp-0-10/0-10",
        "amqp-0-9-1/0-9-1",
        "amqp-0-9-1/0-9-1-rabbitmq",
        "amqp-1-0/1.0",
        "amqp-1-0/1.0-transport",
        "amqp-fast-0-8/0.8",
        "rabbitmq-stream/4.0",
        "rabbitmq-stream/early",
    ]
    assert lines[6].split("\t")[1] == "specgen_codecs.rabbitmq_stream.v4_0"


def test_list_marks_the_versions_frames_and_decode_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["list"]) == 0
    marks = {
        ln.split("\t")[0]: ln.split("\t")[3].removesuffix("  (latest)")
        for ln in capsys.readouterr().out.splitlines()
    }
    # the shipped samples of these decode and re-encode (tests/test_readme.py)
    for name in (
        "rabbitmq-stream/4.0",
        "amqp-0-9-1/0-9-1-rabbitmq",
        "amqp-1-0/1.0",
        "amqp-0-10/0-10",
        "amqp-fast-0-8/0.8",
    ):
        assert marks[name] == "frames, decode"
    sample = ROOT / "samples" / "amqp-1-0" / "session-1"
    for name, mark in marks.items():
        # a version the list leaves unmarked is one the command refuses, by name, before reading
        if "frames" not in mark:
            assert main(["frames", name, str(sample / "conn-0001.c2s.bin")]) == 2
            assert f"does not read {name.split('/')[0]}" in capsys.readouterr().err
        if "decode" not in mark:
            out = tmp_path / name.replace("/", "_")
            assert main(["decode", name, str(sample.parent), "--out", str(out)]) == 2
            assert capsys.readouterr().err.startswith("specgen: ")


def test_generated_is_fresh_and_generation_is_deterministic() -> None:
    assert generate.stale() == []
    assert generate.render_all() == generate.render_all()


def test_check_reports_drift_with_a_diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "generated"
    generate.write_tree(generate.render_all(), target)
    victim = target / "rabbitmq_stream" / "v4_0" / "enums.py"
    victim.write_text(victim.read_text() + "# hand edit\n")
    diffs = generate.stale(target)
    assert len(diffs) == 1
    assert "-# hand edit" in diffs[0]


def _rstream_frames() -> list[tuple[bytes, dict[str, object], str]]:
    """Frames written by rstream (PyPI), an implementation independent of ours, with the
    values rstream was given."""
    rstream = pytest.importorskip("rstream")
    from rstream import schema
    from rstream.encoding import encode_frame

    frames = [
        (
            schema.PeerProperties(correlation_id=1, properties=[schema.Property("product", "x")]),
            {"correlation_id": 1, "peer_properties": [{"key": "product", "value": "x"}]},
            "PeerProperties",
        ),
        (schema.SaslHandshake(correlation_id=2), {"correlation_id": 2}, "SaslHandshake"),
        (
            schema.Open(correlation_id=3, virtual_host="/"),
            {"correlation_id": 3, "virtual_host": "/"},
            "Open",
        ),
        (
            schema.Credit(subscription_id=4, credit=10),
            {"subscription_id": 4, "credit": 10},
            "Credit",
        ),
        (schema.Heartbeat(), {}, "Heartbeat"),
    ]
    del rstream
    return [(encode_frame(f), values, name) for f, values, name in frames]


def test_frames_decodes_rstream_bytes_and_reencodes_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frames = _rstream_frames()
    capture = tmp_path / "conn-1.c2s.bin"
    capture.write_bytes(b"".join(f for f, _, _ in frames))
    assert main(["frames", "rabbitmq-stream", str(capture), "--roundtrip"]) == 0
    lines = capsys.readouterr().out.splitlines()
    decoded = [json.loads(ln) for ln in lines[:-1]]
    assert [d["command"] for d in decoded] == [name for _, _, name in frames]
    for d, (_, values, _) in zip(decoded, frames, strict=True):
        assert {k: d["fields"][k] for k in values} == values
        assert d["roundtrip"] is True
    assert lines[-1] == "ok: 5 frames in 1 files, 0 failed, re-encoded identically"


def test_frames_reports_a_cut_file_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frames = _rstream_frames()
    data = b"".join(f for f, _, _ in frames)
    capture = tmp_path / "cut.c2s.bin"
    capture.write_bytes(data[:-3])
    assert main(["frames", "rabbitmq-stream/4.0", str(capture)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert "file ends" in json.loads(out[-2])["error"]
    assert out[-1].startswith("FAILED: 4 frames in 1 files, 1 failed")


def test_frames_reports_garbage_with_field_and_offset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    garbage = tmp_path / "garbage.s2c.bin"
    # a well-sized frame whose key exists but whose body is short: Credit needs 3 bytes
    garbage.write_bytes(b"\x00\x00\x00\x05\x00\x09\x00\x01\x04")
    assert main(["frames", "rabbitmq-stream/4.0", str(garbage)]) == 1
    line = json.loads(capsys.readouterr().out.splitlines()[0])
    assert line["field"] == "Credit.credit"
    assert line["field_offset"] == 9


def test_frames_missing_file_is_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "conn-1.c2s.bin"
    good.write_bytes(b"")
    missing = tmp_path / "nope.c2s.bin"
    assert main(["frames", "rabbitmq-stream", str(good), str(missing)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"specgen: {missing}: No such file or directory"]


def test_frames_roundtrip_reports_a_refused_encode_as_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from specgen_codecs.rabbitmq_stream import v4_0 as rs

    # a reference over the documented 256 characters decodes and now encodes too
    long = rs.encode(rs.DeclarePublisherRequest(1, 2, "r" * 300, "s"))
    credit = rs.encode(rs.Credit(1, 5))
    capture = tmp_path / "conn-1.c2s.bin"
    capture.write_bytes(long + credit)
    assert main(["frames", "rabbitmq-stream", str(capture), "--roundtrip"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("ok: 2 frames")
    # whatever encode refuses after decoding is one failing line, never a traceback
    real = rs.encode

    def refuse_credit(msg: rs.Message) -> bytes:
        if isinstance(msg, rs.Credit):
            raise rs.EncodeError("Credit.credit", "refused for the test")
        return real(msg)

    monkeypatch.setattr(rs, "encode", refuse_credit)
    assert main(["frames", "rabbitmq-stream", str(capture), "--roundtrip"]) == 1
    lines = capsys.readouterr().out.splitlines()
    bad = json.loads(lines[1])
    assert (bad["roundtrip"], bad["encode_error"]) == (False, "Credit.credit: refused for the test")
    assert lines[-1] == "FAILED: 2 frames in 1 files, 1 failed"


def test_frames_reads_the_amqp_sample_preamble_and_tables_and_reencodes_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The client file starts with the protocol header; tables and decimals print as JSON."""
    sample = Path(__file__).resolve().parents[1] / "samples" / "amqp-0-9-1" / "session-1"
    files = sorted(str(p) for p in sample.glob("*.bin"))
    assert main(["frames", "amqp-0-9-1", *files, "--roundtrip"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "ok: 1657 frames in 2 files, 0 failed, re-encoded identically"
    first = json.loads(lines[0])
    assert (first["command"], first["ident"], first["offset"]) == (
        "Connection.StartOk",
        [1, 10, 11],
        8,
    )
    assert any('"headers": {' in line for line in lines)  # a field table, as a JSON object
