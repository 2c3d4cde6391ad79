"""The one rule for a folder a command writes (`generate --out`, `decode --out`, `capture --out`).

A new or empty folder is written as it is. A folder that holds anything is refused, so that no
command replaces files it did not make without being asked, unless `--overwrite` is given; then
the command first removes what it writes there (every name in `writes`, including what was made
from its output, such as the report page beside decoded tables) and keeps every other file.
"""

from __future__ import annotations

import fnmatch
import shutil
from collections.abc import Iterable
from pathlib import Path


class OutputError(ValueError):
    """An output folder the command will not write into: one line, exit 2."""


def check(folder: Path, command: str, overwrite: bool) -> None:
    """Refuse `folder` unless the rule allows writing into it (see the module doc)."""
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"{folder}: exists and is not a folder")
    if not overwrite and folder.is_dir() and any(folder.iterdir()):
        raise OutputError(
            f"{folder}: not empty; specgen {command} writes into a new or empty folder "
            "(--overwrite replaces what it wrote there and keeps other files)"
        )


def clear(folder: Path, writes: Iterable[str], keep: Path | None = None) -> list[str]:
    """Remove the entries of `folder` matching the glob patterns `writes`, except one holding
    `keep` (an input inside the output folder); the names removed, sorted."""
    if not folder.is_dir():
        return []
    patterns = list(writes)
    inside = keep.resolve() if keep is not None else None
    removed = []
    for entry in sorted(folder.iterdir()):
        if not any(fnmatch.fnmatchcase(entry.name, p) for p in patterns):
            continue
        if inside is not None and inside.is_relative_to(entry.resolve()):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
        removed.append(entry.name)
    return removed
