"""Where specgen stands on the real spec copies: one Markdown table row per document of
manifest.toml, then each failure's one line.

    python tests/real_specs/table.py [--jobs N] [PATH ...]

Each document goes through the command line as tests/test_real_specs.py runs it (the same
runs, tests/real_copies.py): `specgen ir`, `specgen lint` (its number of findings),
`specgen generate --out`, the generated commands against the document's declared ones, the
package's own conformance tests (the round trip) and `specgen diff NEAREST DOC --format json`
(its exit code, its number of breaking changes, and how many of its changes read the same on
both sides: false alarms). PATHs pick documents by their manifest path.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared runner

from real_copies import (  # noqa: E402
    Document,
    Workspace,
    breaking,
    changes,
    documents,
    lint_findings,
    passed,
    reads_the_same,
)

COLUMNS = (
    "document",
    "project",
    "ir",
    "lint",
    "generate",
    "commands generated/declared",
    "round-trip",
    "diff",
)


def row(doc: Document, base: Path) -> tuple[list[str], list[str]]:
    """The document's cells, and a line for each step that failed."""
    space = Workspace(doc, base)
    failures: list[str] = []

    def failed(step: str, line: str) -> None:
        failures.append(f"`{doc.path}` {step}: {line}")

    ir = space.ir()
    if ir.returncode != 0 or ir.traceback:
        failed("ir", ir.error_line())
    lint = space.lint()
    findings = lint_findings(lint)
    if lint.returncode not in (0, 1) or lint.traceback:
        failed("lint", lint.error_line())
    generate = space.generate()
    generated = round_trip = "—"
    counted: int | None = None
    if generate.returncode != 0 or generate.traceback:
        failed("generate", generate.error_line())
    else:
        imported = space.import_all()
        if imported.returncode != 0:
            failed("import", imported.error_line())
        else:
            count_run, counted = space.count_commands()
            if counted is None:
                failed("count", count_run.error_line())
            elif counted != doc.declared:
                failed("commands", f"generated {counted}, the document declares {doc.declared}")
        ran = space.round_trip()
        round_trip = f"{passed(ran) or 0} passed" if ran.returncode == 0 else "failed"
        if ran.returncode != 0:
            failed("round-trip", ran.error_line())
        generated = "ok"
    diff = space.diff("--format", "json")
    if diff.returncode not in (0, 1) or diff.traceback:
        failed("diff", diff.error_line())
        diff_cell = f"exit {diff.returncode}"
    else:
        diff_cell = f"exit {diff.returncode}, {breaking(diff)} breaking"
        alike = [c for c in changes(diff) if reads_the_same(c)]
        if alike:
            diff_cell += f" ({len(alike)} read the same on both sides)"
            first = alike[0]
            failed(
                "diff",
                f"{len(alike)} changes read the same on both sides, e.g. "
                f"{first['rule']} {first['where']}: {first['summary']}",
            )
    cells = [
        f"`{doc.path}`",
        doc.project,
        "ok" if ir.returncode == 0 and not ir.traceback else f"exit {ir.returncode}",
        f"{findings} findings" if findings is not None else f"exit {lint.returncode}",
        generated if generate.returncode == 0 else f"exit {generate.returncode}",
        f"{'—' if counted is None else counted}/{doc.declared}",
        round_trip,
        diff_cell,
    ]
    return cells, failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", metavar="PATH", help="manifest paths (default: all)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="documents at once")
    args = parser.parse_args(argv)
    docs = [doc for doc in documents() if not args.paths or doc.path in args.paths]
    unknown = set(args.paths) - {doc.path for doc in docs}
    if unknown:
        parser.error(f"not in manifest.toml: {', '.join(sorted(unknown))}")
    with tempfile.TemporaryDirectory(prefix="real-specs-") as tmp:
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            results = list(pool.map(lambda d: row(d[1], Path(tmp) / str(d[0])), enumerate(docs)))
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for cells, _ in results:
        print("| " + " | ".join(cells) + " |")
    failures = [line for _, lines in results for line in lines]
    print()
    print(f"{len(failures)} failures" + (":" if failures else ""))
    for line in failures:
        print(f"- {line}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
