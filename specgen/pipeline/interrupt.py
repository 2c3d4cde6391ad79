"""Ctrl-C while Spark runs, as one line and exit 130 (no PySpark here: the CLI imports this).

PySpark's SparkContext installs a SIGINT handler that calls into the JVM from inside the call it
interrupts and raises KeyboardInterrupt, which py4j logs with a traceback per open call (97
lines for one Ctrl-C). `install` replaces it with one that only raises `Interrupted`; nothing
catches that but the CLI, which prints one line and exits 130.
"""

from __future__ import annotations

import signal
from types import FrameType


class Interrupted(BaseException):  # noqa: N818 - no error: the user asked to stop
    """Ctrl-C (SIGINT) while Spark runs. A BaseException and no KeyboardInterrupt, so neither
    py4j's `except KeyboardInterrupt` (which logs) nor any `except Exception` in PySpark turns
    it into something else on its way out."""


def _raise(signum: int, frame: FrameType | None) -> None:
    raise Interrupted()


def install() -> None:
    """SIGINT raises Interrupted from now on (call from the main thread)."""
    signal.signal(signal.SIGINT, _raise)
