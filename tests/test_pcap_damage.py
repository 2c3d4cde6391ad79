"""Damaged capture files: every byte is in a record or in one damaged stretch, and the walk goes
on after the damage (`specgen.pipeline.records`, through `pcap.scan` and `pcap.ranges`).

Captures are written by dpkt's writers (test_pcap's helpers), then damaged the way the issue
found them damaged: a record length set to 0x80000000, a pcapng block length of 0x7ffffff0 or
not a multiple of 4, a length that is plausible but wrong, garbage between records, a header
cut by the end of the file, a gzip stream cut short. Each test knows from its own construction
where every record starts, so the expected damage is the bytes it broke, not what the code says.
"""

from __future__ import annotations

import gzip
import random
import struct
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_pcap import Iface, data_packet, write_pcap, write_pcapng

from specgen.pipeline import pcap, records

FRAMES = [(1700000000.25 + i, data_packet(1000 + 100 * i, bytes([65 + i]) * 60)) for i in range(8)]


def pcap_starts(frames: list[tuple[float, bytes]]) -> list[int]:
    starts, at = [], 24
    for _, frame in frames:
        starts.append(at)
        at += 16 + len(frame)
    return starts


def read(path: Path) -> tuple[list[pcap.Packet], list[records.Damage], pcap.Tally]:
    tally = pcap.Tally()
    items = list(pcap.scan(path, tally=tally))
    got = [i for i in items if isinstance(i, pcap.Packet)]
    damage = [i for i in items if isinstance(i, records.Damage)]
    return got, damage, tally


def accounted(path: Path, tally: pcap.Tally, header: int) -> None:
    """file header + records + damage = the file's size (decompressed, for gzip)."""
    size = tally.end
    assert size is not None
    assert header + tally.record_bytes + tally.damaged_bytes == size


def test_a_record_length_of_0x80000000_is_damage_and_the_rest_is_read(tmp_path: Path) -> None:
    path = write_pcap(tmp_path / "a.pcap", FRAMES)
    data = bytearray(path.read_bytes())
    starts = pcap_starts(FRAMES)
    struct.pack_into("<I", data, starts[3] + 8, 0x80000000)  # incl_len of the fourth record
    path.write_bytes(data)
    got, damage, tally = read(path)
    assert [p.data for p in got] == [f for i, (_, f) in enumerate(FRAMES) if i != 3]
    (d,) = damage
    assert (d.offset, d.length) == (starts[3], starts[4] - starts[3])
    assert "snap length" in d.reason and f"{starts[4]:,}" in d.reason
    assert d.data == bytes(data[starts[3] : starts[4]])
    accounted(path, tally, 24)
    # the ranges start on records (the damage lies in the one before), and reading them range
    # by range finds the same
    cuts = pcap.ranges(path, 1)
    assert [a for a, _ in cuts] == [s for i, s in enumerate(starts) if i != 3]
    by_range = [i for a, b in cuts for i in pcap.scan(path, a, b)]
    assert by_range == [*got[:3], d, *got[3:]]


def test_a_plausible_but_wrong_length_is_the_damaged_record(tmp_path: Path) -> None:
    path = write_pcap(tmp_path / "a.pcap", FRAMES)
    data = bytearray(path.read_bytes())
    starts = pcap_starts(FRAMES)
    struct.pack_into("<I", data, starts[2] + 8, len(FRAMES[2][1]) + 40)  # 40 too many
    path.write_bytes(data)
    got, damage, tally = read(path)
    assert [p.data for p in got] == [f for i, (_, f) in enumerate(FRAMES) if i != 2]
    (d,) = damage
    assert (d.offset, d.length) == (starts[2], starts[3] - starts[2])
    accounted(path, tally, 24)


def test_garbage_between_records_is_one_damage(tmp_path: Path) -> None:
    path = write_pcap(tmp_path / "a.pcap", FRAMES)
    data = path.read_bytes()
    starts = pcap_starts(FRAMES)
    junk = random.Random(7).randbytes(5000)
    path.write_bytes(data[: starts[5]] + junk + data[starts[5] :])
    got, damage, tally = read(path)
    assert [p.data for p in got] == [f for _, f in FRAMES]
    (d,) = damage
    assert (d.offset, d.length) == (starts[5], len(junk))
    accounted(path, tally, 24)


def test_a_header_cut_by_the_end_of_the_file_is_damage(tmp_path: Path) -> None:
    path = write_pcap(tmp_path / "a.pcap", FRAMES[:2])
    path.write_bytes(path.read_bytes() + b"\x01\x02\x03\x04\x05")
    got, damage, tally = read(path)
    assert len(got) == 2
    (d,) = damage
    assert d.length == 5 and "cut short" in d.reason
    accounted(path, tally, 24)


def test_the_file_cut_inside_its_last_record_keeps_that_packet(tmp_path: Path) -> None:
    path = write_pcap(tmp_path / "a.pcap", FRAMES[:3])
    path.write_bytes(path.read_bytes()[:-7])
    got, damage, tally = read(path)
    assert [p.data for p in got] == [FRAMES[0][1], FRAMES[1][1], FRAMES[2][1][:-7]]
    assert damage == []
    accounted(path, tally, 24)


def pcapng_blocks(path: Path) -> list[tuple[int, int, int]]:
    """(offset, type, length) of every block, read with the standard library."""
    data = path.read_bytes()
    out, at = [], 0
    while at < len(data):
        btype, length = struct.unpack_from("<II", data, at)
        out.append((at, btype, length))
        at += length
    return out


def write_ng(path: Path) -> Path:
    return write_pcapng(path, [(0, 1000 + i, f) for i, (_, f) in enumerate(FRAMES)], [Iface(1)])


@pytest.mark.parametrize(
    ("victim", "length_of", "said"),
    [
        (4, lambda n: 0x7FFFFFF0, "more than any block"),  # the repro
        (1, lambda n: n + 2, "not a multiple of 4"),
        (6, lambda n: n + 8, "not repeated at its end"),  # a multiple of 4, still wrong
        (3, lambda n: 8, "less than 12"),
    ],
)
def test_an_impossible_block_length_is_that_block_damaged(
    tmp_path: Path, victim: int, length_of: Callable[[int], int], said: str
) -> None:
    path = write_ng(tmp_path / "a.pcapng")
    epbs = [b for b in pcapng_blocks(path) if b[1] == 6]
    data = bytearray(path.read_bytes())
    offset, _, length = epbs[victim]
    struct.pack_into("<I", data, offset + 4, length_of(length))
    path.write_bytes(data)
    got, damage, tally = read(path)
    assert [p.data for p in got] == [f for i, (_, f) in enumerate(FRAMES) if i != victim]
    (d,) = damage
    assert (d.offset, d.length) == (offset, length)
    assert said in d.reason
    accounted(path, tally, 0)


def test_a_gzipped_pcap_cut_short_decodes_what_came_before(tmp_path: Path) -> None:
    plain = write_pcap(tmp_path / "a.pcap", FRAMES * 40)
    packed = gzip.compress(plain.read_bytes())
    path = tmp_path / "a.pcap.gz"
    path.write_bytes(packed[: len(packed) * 2 // 3])
    got, damage, tally = read(path)
    assert tally.broken is not None and "EOFError" in tally.broken
    whole = [f for _, f in FRAMES * 40]
    assert 0 < len(got) < len(whole)
    assert [p.data for p in got] == whole[: len(got)]
    (d,) = damage
    assert "gzip stream breaks" in d.reason
    starts = pcap_starts(FRAMES * 40)
    assert d.offset == starts[len(got)]  # from the first record it did not read whole
    accounted(path, tally, 24)


def test_damage_costs_a_scan_not_a_loop_per_byte(tmp_path: Path) -> None:
    # 8 MiB of zeros (a record of length 0 repeats in them, which is not a resync candidate)
    # and of random bytes between two records: each is one damaged stretch
    path = write_pcap(tmp_path / "a.pcap", FRAMES[:2])
    data = path.read_bytes()
    starts = pcap_starts(FRAMES[:2])
    filler = bytes(4 << 20) + random.Random(1).randbytes(4 << 20)
    path.write_bytes(data[: starts[1]] + b"\xff" * 16 + filler + data[starts[1] :])
    got, damage, tally = read(path)
    assert [p.data for p in got] == [f for _, f in FRAMES[:2]]
    assert [(d.offset, d.length) for d in damage] == [(starts[1], 16 + len(filler))]
    assert len(damage[0].data) == records.MAX_KEPT
    accounted(path, tally, 24)


def whole_and_by_range(path: Path, target: int) -> tuple[list[object], list[object]]:
    whole = list(pcap.scan(path))
    by_range = [i for a, b in pcap.ranges(path, target) for i in pcap.scan(path, a, b)]
    return whole, by_range


def test_a_damaged_headers_time_does_not_guide_the_resync(tmp_path: Path) -> None:
    # record 1's header is damaged (a sub-second part of a second or more, a time decades off)
    # but its length chains; record 2's length runs past the end of the file. The records
    # inside record 2 chain to the end of the file with times next to record 0's: record 2 is
    # the damage, not a packet cut short that swallows them. Record 1's damaged time used to
    # guide the resynchronisation (and rejected them: the whole walk read one packet of 727
    # bytes), while a range starting at record 2 had no guide (and took them): the two
    # readings differed. A time whose sub-second part is damaged guides nothing now.
    path = write_pcap(tmp_path / "a.pcap", FRAMES)
    data = bytearray(path.read_bytes())
    starts = pcap_starts(FRAMES)
    struct.pack_into("<II", data, starts[1], 356555778, 50331824)
    struct.pack_into("<II", data, starts[2] + 8, 2561, 2561)
    path.write_bytes(data)
    whole, by_range = whole_and_by_range(path, 1)
    got = [i for i in whole if isinstance(i, pcap.Packet)]
    damage = [i for i in whole if isinstance(i, records.Damage)]
    assert [p.data for p in got] == [f for i, (_, f) in enumerate(FRAMES) if i != 2]
    assert [(d.offset, d.length) for d in damage] == [(starts[2], starts[3] - starts[2])]
    assert by_range == whole


def test_no_range_starts_at_a_record_cut_by_the_end_of_the_file(tmp_path: Path) -> None:
    # record 2's length runs past the end of the file and the records inside it lie 60 days
    # after record 1: the walk judges record 2 a packet cut short (no candidate is near
    # record 1's time), which a walk starting at record 2 (with no time to go by) cannot
    # judge the same. So record 2 starts no range: the range before it reads it.
    later = 60 * 24 * 3600
    frames = [(t + (later if i >= 3 else 0), f) for i, (t, f) in enumerate(FRAMES)]
    path = write_pcap(tmp_path / "a.pcap", frames)
    data = bytearray(path.read_bytes())
    starts = pcap_starts(frames)
    struct.pack_into("<II", data, starts[2] + 8, 2561, 2561)
    path.write_bytes(data)
    whole, by_range = whole_and_by_range(path, 1)
    assert [i.index for i in whole if isinstance(i, pcap.Packet)] == starts[:3]
    assert whole[-1].data == data[starts[2] + 16 :]  # type: ignore[union-attr]
    assert [a for a, _ in pcap.ranges(path, 1)] == starts[:2]
    assert by_range == whole


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(kind="pcap", edits=[(0, "flip"), (65532, "insert")], seed=65535)  # the two above
@given(
    kind=st.sampled_from(["pcap", "pcapng"]),
    edits=st.lists(
        st.tuples(st.integers(0, 10**6), st.sampled_from(["flip", "word", "cut", "insert"])),
        min_size=1,
        max_size=4,
    ),
    seed=st.integers(0, 2**16),
)
def test_any_damage_leaves_every_byte_accounted_for(
    kind: str, edits: list[tuple[int, str]], seed: int
) -> None:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"a.{kind}"
        write_pcap(path, FRAMES) if kind == "pcap" else write_ng(path)
        data = bytearray(path.read_bytes())
        header = 24 if kind == "pcap" else 28  # the section header block stays whole
        for where, how in edits:
            at = header + where % (len(data) - header)
            if how == "flip":
                data[at] ^= 1 << rng.randrange(8)
            elif how == "word":
                data[at : at + 4] = rng.choice(
                    [b"\xff\xff\xff\x7f", b"\x00\x00\x00\x80", b"\x00" * 4]
                )
            elif how == "cut":
                del data[at : at + rng.randrange(1, 100)]
            else:
                data[at:at] = rng.randbytes(rng.randrange(1, 100))
        path.write_bytes(bytes(data))
        tally = pcap.Tally()
        items = list(pcap.scan(path, tally=tally))
        accounted(path, tally, 24 if kind == "pcap" else 0)
        # items tile the file after its header, in order
        offsets = [i.index if isinstance(i, pcap.Packet) else i.offset for i in items]
        assert offsets == sorted(offsets)
        # reading range by range gives the same items and bytes
        cuts = pcap.ranges(path, 300)
        per_range = pcap.Tally()
        by_range = []
        for a, b in cuts:
            t = pcap.Tally()
            by_range += list(pcap.scan(path, a, b, t))
            per_range.record_bytes += t.record_bytes
            per_range.damaged_bytes += t.damaged_bytes
        assert by_range == items
        assert (per_range.record_bytes, per_range.damaged_bytes) == (
            tally.record_bytes,
            tally.damaged_bytes,
        )
