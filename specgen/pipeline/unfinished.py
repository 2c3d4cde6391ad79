"""The mark of a decode that has not finished: a file in --out while its tables are written.

`specgen decode` writes it once the inputs are checked and Spark stands, before it touches a
table, and removes it only when every table is written and reconciled. A run that fails, is
interrupted or is killed leaves it, so a folder of partial tables says so on disk, and
`specgen report` refuses such a folder in one line before it starts Spark (a partial frames
table would make a report that looks whole). `--overwrite` replaces the folder's tables and the
mark with them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

MARK = "INCOMPLETE"


def mark(out: Path, command: str) -> None:
    """Mark `out` unfinished (made if it is not there yet)."""
    out.mkdir(parents=True, exist_ok=True)
    began = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    (out / MARK).write_text(
        f"specgen {command} began writing here at {began} (process {os.getpid()}) and has not "
        "finished: the tables beside this file may be partial. Run it again with --overwrite.\n"
    )


def finish(out: Path) -> None:
    """Every table is written: the mark goes."""
    (out / MARK).unlink(missing_ok=True)


def why(out: Path) -> str | None:
    """The mark's sentence when `out` holds an unfinished run, else None."""
    try:
        return (out / MARK).read_text().strip() or f"{out / MARK} is there"
    except FileNotFoundError:
        return None
    except OSError as e:  # unreadable, but there: still unfinished
        return f"{out / MARK} is there ({e.strerror})"
