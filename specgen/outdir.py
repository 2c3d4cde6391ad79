"""The one rule for a folder a command writes (`generate --out`, `decode --out`, `capture --out`).

A new or empty folder is written as it is. A folder that holds anything is refused, so that no
command replaces files it did not make without being asked, unless `--overwrite` is given; then
the command first removes what it writes there (every name in `writes`, including what was made
from its output, such as the report page beside decoded tables) and keeps every other file.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
from collections.abc import Iterable
from pathlib import Path


class OutputError(ValueError):
    """An output folder the command will not write into: one line, exit 2."""


def check(folder: Path, command: str, overwrite: bool, *, beside: bool = False) -> None:
    """Refuse `folder` unless the rule allows writing into it (see the module doc), and unless
    it can be written: a folder that does not exist yet must be one the command can make (no
    file where a folder of its path should be, the nearest existing folder writable). With
    `beside`, the command builds its output next to the folder and swaps it in (`generate`),
    so the folder's parent must take files too. Called before any work, so that a bad --out
    costs nothing."""
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"{folder}: exists and is not a folder")
    made_in = _nearest(folder.parent if beside else folder)
    if not made_in.is_dir():
        raise OutputError(f"{folder}: cannot be made: {made_in} is not a folder")
    if not overwrite and folder.is_dir() and any(folder.iterdir()):
        raise OutputError(
            f"{folder}: not empty; specgen {command} writes into a new or empty folder "
            "(--overwrite replaces what it wrote there and keeps other files)"
        )
    for where in dict.fromkeys([made_in, folder] if folder.is_dir() else [made_in]):
        if not os.access(where, os.W_OK | os.X_OK):
            raise OutputError(f"{folder}: cannot write into {where}: permission denied")


def _nearest(path: Path) -> Path:
    """`path` or the nearest of its parents that exists (a file, when one stands in the way)."""
    for where in (path, *path.parents):
        if os.path.lexists(where):
            return where
    return path  # nothing exists, not even the root: left to the command to report


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
