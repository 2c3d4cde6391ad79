"""Sub-entry batches: records packed, compressed and split back, and every way that can fail.

The compressed bytes for gzip come from the standard library's own gzip module and rstream's
codec (independent of the generated code); snappy, lz4 and zstd from their PyPI packages.
"""

from __future__ import annotations

import gzip
import sys
import tracemalloc

import cramjam
import lz4.frame
import pytest
import zstandard
from rstream.compression import CompressionHelper, CompressionType

from specgen_codecs.rabbitmq_stream import v4_0 as rs

RECORDS = [b"", b"one", bytes(range(256)) * 40, "ünïcødé".encode()]
RAW = b"".join(len(r).to_bytes(4, "big") + r for r in RECORDS)

# compression type -> what an independent implementation makes of RAW
THEIRS = {
    0: RAW,
    1: gzip.compress(RAW),
    2: bytes(cramjam.snappy.compress(RAW)),
    3: lz4.frame.compress(RAW),
    4: zstandard.ZstdCompressor().compress(RAW),
}


def _entry(compression: int, data: bytes, records: int = len(RECORDS)) -> rs.SubBatchEntry:
    return rs.SubBatchEntry(compression, 0, records, len(RAW), len(data), data)


@pytest.mark.parametrize("compression", sorted(THEIRS))
def test_records_of_independently_compressed_data(compression: int) -> None:
    assert _entry(compression, THEIRS[compression]).records() == RECORDS


@pytest.mark.parametrize("compression", sorted(THEIRS))
def test_from_records_round_trips_through_a_publish_frame(compression: int) -> None:
    entry = rs.SubBatchEntry.from_records(RECORDS, compression)
    assert (entry.num_records, entry.uncompressed_length) == (len(RECORDS), len(RAW))
    frame = rs.encode(rs.PublishV1(3, [rs.PublishV1PublishedMessage(9, entry)]))
    back = rs.decode(frame, sender="client")
    assert isinstance(back, rs.PublishV1)
    (message,) = back.published_messages
    assert message.message == entry
    assert isinstance(message.message, rs.SubBatchEntry)
    assert message.message.records() == RECORDS
    assert rs.encode(back) == frame


def test_rstream_gzip_batch_is_what_from_records_reads() -> None:
    codec = CompressionHelper.compress(RECORDS, CompressionType.Gzip)
    entry = _entry(1, codec.data())
    assert entry.records() == RECORDS


@pytest.mark.parametrize("compression", [1, 2, 3, 4])
def test_corrupt_compressed_data_is_a_decode_error(compression: int) -> None:
    data = bytearray(THEIRS[compression])
    data[len(data) // 2] ^= 0xFF
    data = data[: len(data) - 3]
    with pytest.raises(rs.DecodeError) as info:
        _entry(compression, bytes(data)).records()
    assert info.value.field == "SubBatchEntry.data"


@pytest.mark.parametrize("compression", [1, 3, 4])
def test_a_lying_uncompressed_length_is_refused_without_inflating_the_bomb(
    compression: int,
) -> None:
    bomb = rs.SubBatchEntry.from_records([bytes(50_000_000)], compression)
    assert bomb.length < 1_000_000
    bomb.uncompressed_length = 100
    tracemalloc.start()
    try:
        with pytest.raises(rs.DecodeError, match="more than 100 bytes"):
            bomb.records()
        assert tracemalloc.get_traced_memory()[1] < 4 << 20
    finally:
        tracemalloc.stop()


def test_a_lying_snappy_length_is_refused_a_chunk_at_a_time() -> None:
    # snappy expands about 21-fold: 50 MB of zeros is 2.4 MB compressed; with the length
    # checked only after decompressing, refusing it cost the whole 50 MB (the fuzzer found it)
    bomb = rs.SubBatchEntry.from_records([bytes(50_000_000)], 2)
    assert bomb.length < 3_000_000
    bomb.uncompressed_length = 100
    tracemalloc.start()
    try:
        with pytest.raises(rs.DecodeError, match="more than 100 bytes"):
            bomb.records()
        assert tracemalloc.get_traced_memory()[1] < 4 << 20
    finally:
        tracemalloc.stop()
    # the length it really has still decodes, chunk by chunk, to the same records
    bomb.uncompressed_length = 4 + 50_000_000
    assert bomb.records() == [bytes(50_000_000)]


def test_records_that_do_not_fill_the_data_exactly() -> None:
    with pytest.raises(rs.DecodeError, match="bytes after the last of 3 records"):
        _entry(0, RAW, records=3).records()
    with pytest.raises(rs.DecodeError) as info:
        _entry(0, RAW, records=5).records()
    assert info.value.field == "SubBatchEntry.data[4]"
    with pytest.raises(rs.DecodeError, match="holds 10 bytes, the length field says"):
        _entry(1, gzip.compress(b"0123456789")).records()


def test_unknown_compression_is_refused_both_ways() -> None:
    with pytest.raises(rs.DecodeError) as info:
        _entry(5, RAW).records()
    assert info.value.field == "SubBatchEntry.compression_type"
    with pytest.raises(rs.EncodeError):
        rs.SubBatchEntry.from_records(RECORDS, 7)


def test_a_missing_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import fails as if not installed
    with pytest.raises(
        rs.DecodeError, match=r"zstandard package: pip install 'specgen\[compression\]'"
    ):
        _entry(4, THEIRS[4]).records()
    with pytest.raises(rs.EncodeError, match=r"specgen\[compression\]"):
        rs.SubBatchEntry.from_records(RECORDS, 4)
    # gzip needs nothing beyond the standard library
    assert _entry(1, THEIRS[1]).records() == RECORDS
