"""The generated code of both sides of a spec change, as one unified diff.

Both sides are rendered in memory under the new side's package, module and version names, and
with the new side's names for the document and its overlay (the provenance headers and `Spec:`
lines), so the diff pairs each file with its counterpart and shows only what the spec change does
to the code: an unchanged spec read at a git revision (`REV:PATH`, kept in a scratch folder)
diffs empty.
"""

from __future__ import annotations

import difflib
import time
from dataclasses import replace

from specgen.generate import render_all
from specgen.progress import Progress, seconds
from specgen.registry import SpecVersion, relative


def code_diff(old: SpecVersion, new: SpecVersion, progress: Progress | None = None) -> str:
    aligned = replace(
        old,
        package=new.package,
        module=new.module,
        version=new.version,
        latest=new.latest,
        label=new.label or relative(new.document),
        overlay_label=new.overlay_label or (relative(new.overlay) if new.overlay else ""),
    )
    start = time.monotonic()
    before = render_all([aligned])
    if progress is not None:
        progress.line(f"code of {old.label or relative(old.document)} rendered ({seconds(start)})")
    start = time.monotonic()
    after = render_all([new])
    if progress is not None:
        progress.line(f"code of {new.label or relative(new.document)} rendered ({seconds(start)})")
    out: list[str] = []
    for rel in sorted(before.keys() | after.keys()):
        a = before.get(rel, "").splitlines(keepends=True)
        b = after.get(rel, "").splitlines(keepends=True)
        if a == b:
            continue
        out.extend(
            difflib.unified_diff(
                a,
                b,
                f"a/{rel}" if rel in before else "/dev/null",
                f"b/{rel}" if rel in after else "/dev/null",
                n=3,
            )
        )
    return "".join(out)
