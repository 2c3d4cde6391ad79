"""`specgen decode amqp-fast-0-8` on the shipped sample: frames whose size may be escaped (0xFFFF,
then four octets) and the octets that follow HANDLE SEND, NOTIFY and PREPARE outside any
framing, each a row of its own (command `fragment`), reconciled byte for byte; and damage to
either costs one unframed span, every other row kept.

What the rows must say is read from the sample's bytes here by the document's own rules, not by
the codec: the Frame Syntax (amq-rfc006.txt, "Frames": a two-octet size counting the code, the
body and the command-end octet %xCE, or 0xFFFF and a four-octet size; then the code) and the
commands' ABNF (HANDLE SEND %d31: handle-id, confirm-tag, service-type, then fragment-size;
HANDLE NOTIFY %d41: handle-id, message-nbr, then fragment-size; each followed by partial,
out-of-band and recovery bits, lsb first, and "if set, the server should not expect to read the
message fragment from the connection stream").
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
from pyspark.sql import SparkSession

from specgen.cli import main
from specgen.pipeline import decode, pcap_job

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "amqp-fast-0-8" / "session-1"
PREAMBLE = b"\x80\x01"  # "the 2-byte connection initiation sequence", client only
# code -> offset of fragment-size in the body (after the code), and of the flags octet
FOLLOWED = {31: (6, 10), 41: (6, 10), 43: (2, None)}


def _walk(data: bytes, start: int = 0) -> list[tuple[int, int, str]]:
    """(offset, length, what) of every frame and fragment in `data` from `start`, by the
    Frame Syntax: `what` is the frame's code in decimal, or "fragment"."""
    out: list[tuple[int, int, str]] = []
    pos = start
    while pos < len(data):
        (size,) = struct.unpack_from(">H", data, pos)
        header = 2
        if size == 0xFFFF:
            (size,) = struct.unpack_from(">I", data, pos + 2)
            header = 6
        code = data[pos + header]
        body, end = pos + header + 1, pos + header + size
        assert data[end - 1] == 0xCE, pos  # command-end
        out.append((pos, end - pos, str(code)))
        pos = end
        if code in FOLLOWED:
            at, flags = FOLLOWED[code]
            (follows,) = struct.unpack_from(">I", data, body + at)
            if flags is not None and data[body + flags] & 0b10:
                follows = 0  # out of band
            if follows:
                out.append((pos, follows, "fragment"))
                pos += follows
    return out


def _firsts(data: bytes, start: int = 0) -> dict[int, tuple[int, str] | None]:
    """Fragment offset -> (body-size, identifier) of the message head it starts with, by the
    head's ABNF (body-size, persistent, priority, expiration, mime-type, encoding, identifier,
    headers), or None for a fragment that goes on with a message: one after a frame with
    `partial` set ("The intermediate commands have 'partial' set to 1")."""
    out: dict[int, tuple[int, str] | None] = {}
    going_on = False
    items = _walk(data, start)
    for (at, _, what), (frag, _, after) in zip(items, items[1:], strict=False):
        if after != "fragment":
            continue
        header = 6 if data[at : at + 2] == b"\xff\xff" else 2
        code = int(what)
        if going_on:
            out[frag] = None
        else:
            (size,) = struct.unpack_from(">I", data, frag)
            at_id = frag + 10
            for _ in range(2):  # mime-type, encoding
                at_id += 1 + data[at_id]
            out[frag] = (size, data[at_id + 1 : at_id + 1 + data[at_id]].decode())
        flags = FOLLOWED[code][1]
        going_on = flags is not None and bool(data[at + header + 1 + flags] & 1)
    return out


def _copy(tmp_path: Path, **files: bytes) -> Path:
    folder = tmp_path / "capture" / "session-1"
    folder.mkdir(parents=True)
    for direction in ("c2s", "s2c"):
        name = f"conn-0001.{direction}.bin"
        if direction in files:
            (folder / name).write_bytes(files[direction])
        else:
            shutil.copy(SAMPLE / name, folder / name)
    return folder.parent


def _decode(tmp_path: Path, capture: Path, target: int = 1 << 26) -> tuple[Any, ...]:
    lines: list[str] = []
    out = tmp_path / "out"
    result = decode.decode_local(
        "amqp-fast-0-8", capture, out, overwrite=True, target=target, echo=lines.append
    )
    frames = pq.read_table(out / "frames").to_pylist()
    rejects = pq.read_table(out / "rejects").to_pylist()
    return result, frames, rejects, lines


def _rows(frames: list[dict[str, Any]], direction: str) -> list[tuple[int, int, str]]:
    return sorted(
        (f["offset"], f["size"], "fragment" if f["command"] == "fragment" else str(f["code"]))
        for f in frames
        if f["direction"] == direction
    )


def test_the_sample_decodes_whole_with_a_row_per_frame_and_per_fragment(tmp_path: Path) -> None:
    result, frames, rejects, lines = _decode(tmp_path, SAMPLE.parent)
    assert result.reconciled and rejects == []
    c2s = (SAMPLE / "conn-0001.c2s.bin").read_bytes()
    s2c = (SAMPLE / "conn-0001.s2c.bin").read_bytes()
    assert c2s.startswith(PREAMBLE)
    assert _rows(frames, "c2s") == _walk(c2s, len(PREAMBLE))
    assert _rows(frames, "s2c") == _walk(s2c)
    # the escaped size: HANDLE INDEX (%d42), its list a full long string
    wide = [f for f in frames if f["code"] == 42]
    assert len(wide) == 1 and wide[0]["size"] > 0xFFFF
    assert s2c[wide[0]["offset"] : wide[0]["offset"] + 2] == b"\xff\xff"
    assert wide[0]["handle_index"]["message_list"].startswith(b"0 3 6 9 ")
    # each fragment names the message it follows, and is as long as that frame's
    # fragment-size says: the row before it in its file
    by_file: dict[str, list[dict[str, Any]]] = {}
    for f in sorted(frames, key=lambda f: (f["direction"], f["offset"])):
        by_file.setdefault(f["direction"], []).append(f)
    fragments = 0
    for rows in by_file.values():
        for before, row in zip(rows, rows[1:], strict=False):
            if row["command"] != "fragment":
                continue
            fragments += 1
            column = {"HandleSend": "handle_send", "HandleNotify": "handle_notify"}
            follows = row["fragment"]["follows"]
            assert before["message"] == follows and row["kind"] == "fragment"
            assert row["size"] == before[column[follows]]["fragment_size"]
            assert row["offset"] == before["offset"] + before["size"]
    assert fragments == sum(1 for f in frames if f["command"] == "fragment") > 900
    assert all(f["timestamp"] is not None for f in frames)
    # a message's first fragment carries its head, decoded; the ones that go on carry none
    for direction, data, start in (("c2s", c2s, len(PREAMBLE)), ("s2c", s2c, 0)):
        firsts = _firsts(data, start)
        got = {
            f["offset"]: f["fragment"]
            for f in frames
            if f["direction"] == direction and f["command"] == "fragment"
        }
        assert got.keys() == firsts.keys()
        for at, want in firsts.items():
            head = got[at]["head"]
            assert got[at]["first"] == (want is not None)
            assert (None if head is None else (head["body_size"], head["msg_identifier"])) == want
        assert sum(v is None for v in firsts.values()) == 6  # 3, 4 and 2 fragments


def test_ranges_cut_anywhere_give_the_same_rows(tmp_path: Path) -> None:
    """A range never starts inside a fragment: the walk steps over a frame and its octets as
    one, so small ranges cut between them, never through them."""
    _, whole, _, _ = _decode(tmp_path / "whole", SAMPLE.parent)
    for target in (1, 4096, 100_000):
        result, frames, rejects, _ = _decode(tmp_path / str(target), SAMPLE.parent, target)
        assert result.reconciled and rejects == []
        key = lambda f: (f["direction"], f["offset"])  # noqa: E731
        assert sorted(frames, key=key) == sorted(whole, key=key)


def test_a_corrupted_escaped_size_is_one_gap_and_every_other_row_stays(tmp_path: Path) -> None:
    s2c = bytearray((SAMPLE / "conn-0001.s2c.bin").read_bytes())
    items = _walk(bytes(s2c))
    index = next(i for i, item in enumerate(items) if item[2] == "42")
    at, length, _ = items[index]
    assert s2c[at : at + 2] == b"\xff\xff"
    struct.pack_into(">I", s2c, at + 2, 0x7FFFFFF0)  # the four-octet size, past any frame-max
    result, frames, rejects, _ = _decode(tmp_path, _copy(tmp_path, s2c=bytes(s2c)))
    assert result.reconciled
    assert [(r["kind"], r["offset"], r["length"]) for r in rejects] == [("unframed", at, length)]
    assert rejects[0]["field"] == "frame.size" and rejects[0]["error_offset"] == 2
    assert rejects[0]["error"].startswith(f"wide size {0x7FFFFFF0} (after the escape 0xffff)")
    assert _rows(frames, "s2c") == items[:index] + items[index + 1 :]


def test_a_fragment_cut_short_is_one_gap_and_every_other_row_stays(tmp_path: Path) -> None:
    """Octets lost inside a message: its frame still says how many follow, so the walk takes
    the next frame's first bytes as the fragment's last and lands mid-frame; one gap to the
    next frames that chain and decode."""
    s2c = (SAMPLE / "conn-0001.s2c.bin").read_bytes()
    items = _walk(s2c)
    index = next(i for i, it in enumerate(items) if it[2] == "fragment" and it[1] > 1000)
    at, length, _ = items[index]
    damaged = s2c[: at + 500] + s2c[at + 600 :]  # 100 octets of the fragment lost
    result, frames, rejects, _ = _decode(tmp_path, _copy(tmp_path, s2c=damaged))
    assert result.reconciled
    assert [r["kind"] for r in rejects] == ["unframed"]
    gap = rejects[0]
    # the fragment row keeps its announced length; the gap runs from there to a frame start
    rows = _rows(frames, "s2c")
    assert (at, length, "fragment") in rows
    assert gap["offset"] == at + length
    after = [(o - 100, n, w) for o, n, w in items if o > at]
    resumed = [r for r in rows if r[0] >= gap["offset"] + gap["length"]]
    assert resumed == after[len(after) - len(resumed) :] and len(resumed) >= len(after) - 4
    assert rows[: index + 1] == items[: index + 1]


def test_a_fragment_cut_by_the_end_of_the_file_is_one_gap_naming_its_frame(
    tmp_path: Path,
) -> None:
    s2c = (SAMPLE / "conn-0001.s2c.bin").read_bytes()
    items = _walk(s2c)
    index = next(i for i, it in enumerate(items) if it[2] == "fragment" and it[1] > 1000)
    at, length, _ = items[index]
    result, frames, rejects, _ = _decode(tmp_path, _copy(tmp_path, s2c=s2c[: at + 700]))
    assert result.reconciled
    assert [(r["kind"], r["offset"], r["length"], r["size"]) for r in rejects] == [
        ("unframed", at, 700, length)
    ]
    assert rejects[0]["field"] == "HandleNotify.fragment_size"
    assert rejects[0]["error"] == (
        f"cut mid-fragment: HandleNotify.fragment_size says {length} octets follow, 700 do"
    )
    assert _rows(frames, "s2c") == items[:index]


def test_frames_roundtrip_reencodes_every_frame_and_names_every_fragment(
    capsys: pytest.CaptureFixture[str],
) -> None:
    files = [str(SAMPLE / f"conn-0001.{d}.bin") for d in ("c2s", "s2c")]
    assert main(["frames", "amqp-fast-0-8", *files, "--roundtrip"]) == 0
    lines = capsys.readouterr().out.splitlines()
    items = [json.loads(line) for line in lines[:-1]]
    data = {f: Path(f).read_bytes() for f in files}
    expected = [(files[0], o, n, w) for o, n, w in _walk(data[files[0]], len(PREAMBLE))] + [
        (files[1], o, n, w) for o, n, w in _walk(data[files[1]])
    ]
    fragments = [i for i in items if i["command"] == "fragment"]
    frames = [i for i in items if i["command"] != "fragment"]
    # a message's first fragment: its head decoded and re-encoded to the octets it came from
    firsts = {(files[0], o): v for o, v in _firsts(data[files[0]], len(PREAMBLE)).items()}
    firsts |= {(files[1], o): v for o, v in _firsts(data[files[1]]).items()}
    assert len(firsts) == len(fragments)
    for i in fragments:
        want = firsts[(i["file"], i["offset"])]
        assert i["first"] == (want is not None)
        if want is not None:
            assert (i["head"]["body_size"], i["head"]["msg_identifier"]) == want
            assert i["roundtrip"] is True
        else:
            assert "head" not in i and "roundtrip" not in i
    assert [(i["file"], i["offset"]) for i in items] == [(f, o) for f, o, _, _ in expected]
    assert [i["size"] for i in fragments] == [n for *_, n, w in expected if w == "fragment"]
    assert {i["follows"] for i in fragments} == {"HandleSend", "HandleNotify"}
    assert all(i["roundtrip"] for i in frames)
    assert lines[-1] == (
        f"ok: {len(frames)} frames and {len(fragments)} fragments in 2 files, 0 failed, "
        "re-encoded identically"
    )


def test_the_shipped_pcap_decodes_to_the_frames_of_the_recording(
    spark: SparkSession, tmp_path: Path
) -> None:
    """samples/pcap/amqp-fast-0-8.pcap.gz is the same session as tcpdump would have seen it on the
    framing's default port (3018): found without --port, its rows are the recording's."""
    _, recorded, _, _ = _decode(tmp_path / "recorded", SAMPLE.parent)
    lines: list[str] = []
    out = tmp_path / "pcap"
    files = pcap_job.find(ROOT / "samples" / "pcap" / "amqp-fast-0-8.pcap.gz")
    result = pcap_job.run("amqp-fast-0-8", files, out, None, False, frozenset(), echo=lines.append)
    assert result.reconciled and result.rejects == 0, lines
    frames = pq.read_table(out / "frames").to_pylist()
    columns = ("direction", "offset", "size", "command", "message", "fragment")
    assert {f["connection"] for f in frames} == {"10.0.0.1_40001-10.0.0.2_3018"}
    assert sorted(tuple(f[c] for c in columns) for f in frames) == sorted(
        tuple(f[c] for c in columns) for f in recorded
    )
    # timestamps come from the packets: the recorded wall times, to the microsecond
    when = {(f["direction"], f["offset"]): f["timestamp"] for f in recorded}
    assert all(
        abs((f["timestamp"] - when[(f["direction"], f["offset"])]).total_seconds()) < 2e-6
        for f in frames
    )


def test_a_fragment_size_past_any_frame_is_one_gap_naming_it(tmp_path: Path) -> None:
    """FRAME_MAX: "The largest frame size or fragment size ... prepared to accept": a HANDLE
    SEND whose fragment-size is past the decoder's maximum keeps its row, and the octets from
    there to the next frames that chain and decode are one gap that names the field."""
    c2s = bytearray((SAMPLE / "conn-0001.c2s.bin").read_bytes())
    items = _walk(bytes(c2s), len(PREAMBLE))
    index = next(i for i, it in enumerate(items) if it[2] == "31" and i > 20)
    at, length, _ = items[index]
    fragment = items[index + 1]
    struct.pack_into(">I", c2s, at + 3 + 6, 0x7FFFFFFF)  # after size, code and three shorts
    result, frames, rejects, _ = _decode(tmp_path, _copy(tmp_path, c2s=bytes(c2s)))
    assert result.reconciled
    assert [(r["kind"], r["offset"]) for r in rejects] == [("unframed", at + length)]
    gap = rejects[0]
    assert (gap["field"], gap["size"]) == ("HandleSend.fragment_size", 0x7FFFFFFF)
    assert gap["error"].startswith(
        f"HandleSend.fragment_size says {0x7FFFFFFF} octets follow the frame, over 67108864; "
    )
    rows = _rows(frames, "c2s")
    assert rows[: index + 1] == items[: index + 1]  # the frame itself stays a row
    # the walk picks up at the first frame after the lost fragment
    assert gap["offset"] + gap["length"] == fragment[0] + fragment[1]
    assert rows[index + 1 :] == items[index + 2 :]
