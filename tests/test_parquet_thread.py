"""The one-process decode writes its batches on a thread (`decode.ParquetThread`): in the order
given, never more than a few behind, and a write that fails fails the decode."""

from __future__ import annotations

import threading
import time

import pytest

from specgen.pipeline.decode import ParquetThread


class _Writer:
    def __init__(self, fail_at: int = -1) -> None:
        self.written: list[int] = []
        self.threads: set[str] = set()
        self.fail_at = fail_at

    def write_batch(self, batch: int) -> None:
        time.sleep(0.002)  # slower than the caller: batches queue up
        self.threads.add(threading.current_thread().name)
        if batch == self.fail_at:
            raise OSError(28, "No space left on device")
        self.written.append(batch)


def test_batches_are_written_in_order_on_one_other_thread() -> None:
    frames, rejects = _Writer(), _Writer()
    with ParquetThread() as writing:
        for i in range(40):
            writing.write(rejects if i % 7 == 0 else frames, i)
            assert len(writing.pending) <= ParquetThread.AHEAD
    assert frames.written == [i for i in range(40) if i % 7]
    assert rejects.written == list(range(0, 40, 7))
    assert len(frames.threads | rejects.threads) == 1
    assert threading.current_thread().name not in frames.threads


def test_a_failed_write_raises_in_the_caller_and_stops_the_writes() -> None:
    writer = _Writer(fail_at=5)
    with pytest.raises(OSError, match="No space left"), ParquetThread() as writing:
        for i in range(100):
            writing.write(writer, i)
    assert writer.written == [0, 1, 2, 3, 4]  # nothing after the failure was kept
    assert 5 not in writer.written


def test_an_error_in_the_decode_leaves_no_thread_behind() -> None:
    writer = _Writer()
    before = threading.active_count()
    with pytest.raises(ValueError, match="bad range"), ParquetThread() as writing:
        writing.write(writer, 0)
        raise ValueError("bad range")
    assert threading.active_count() == before
