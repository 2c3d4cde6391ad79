"""What a long command is doing, as it goes, on stderr (stdout keeps the command's results).

Every step is one whole line, `COMMAND: what`, written and flushed in one call, so a log
shows the steps in order and never glued to another line. `update` is for a count that moves
(tasks done): on a terminal it redraws one line in place, ended by the next whole line; in a
log it writes a plain line when the count changed, at most every `interval` seconds. No
progress library: neither rich nor tqdm is a dependency, and a line per step is all a log
wants.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

LOG_INTERVAL = 10.0
"""Seconds between two `update` lines in a log (a terminal redraws every update)."""


class Progress:
    def __init__(
        self, command: str, stream: TextIO | None = None, interval: float = LOG_INTERVAL
    ) -> None:
        self.command = command
        self._stream = stream
        self.interval = interval
        self._open = False  # a redrawn line is on the terminal, not yet ended
        # -inf, not 0.0: monotonic() counts from boot, so 0.0 would hold back the first
        # update for `interval` seconds on a machine up for less than that
        self._last = float("-inf")
        self._said = ""  # the last update a log got: the same count again is not news
        self._lock = threading.Lock()  # a poller thread and the main thread both report

    @property
    def stream(self) -> TextIO:
        return self._stream if self._stream is not None else sys.stderr

    def line(self, text: str) -> None:
        """One step, as a whole line."""
        with self._lock:
            end = "\n" if self._open else ""
            self._open = False
            self._write(f"{end}{self.command}: {text}\n")

    def update(self, text: str) -> None:
        """A count that moves: redrawn in place on a terminal, a line now and then in a log."""
        with self._lock:
            if self.stream.isatty():
                self._write(f"\r\x1b[K{self.command}: {text}")
                self._open = True
            elif text != self._said and time.monotonic() - self._last >= self.interval:
                self._last, self._said = time.monotonic(), text
                self._write(f"{self.command}: {text}\n")

    def done(self) -> None:
        """End a redrawn line, so that what follows starts a line of its own."""
        with self._lock:
            if self._open:
                self._open = False
                self._write("\n")

    def _write(self, text: str) -> None:
        try:
            # the results printed so far first: in a log of both streams, lines stay in order
            sys.stdout.flush()
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stderr costs the progress only
            pass


def seconds(start: float) -> str:
    return f"{time.monotonic() - start:.1f} s"
