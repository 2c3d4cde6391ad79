"""The benchmark figures the documents show are the ones `bench/results/` records.

Speed is measured by the scripts under bench/, never by a test; each writes its latest run to
`bench/results/<script>.json`. These tests read those files and require docs/benchmarks.md (or
any document that shows the same block) to show what they hold: `bench/goals.py --summary`, the
codec tables against the floor and the peers, the FrameReader table and the import times. A new
run that changes a figure fails here until the documents say the new one.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import docs_text
import pytest

from specgen.specs import ROOT

RESULTS = ROOT / "bench" / "results"


def _results(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))
    return data


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _tables(marker: str) -> list[list[list[str]]]:
    """The markdown table after `marker`, as rows of cells without the header, in each document
    that shows the marker."""
    tables = []
    for text in docs_text.after(marker):
        lines = text.split("\n")
        rule = next(i for i, line in enumerate(lines) if re.fullmatch(r"\|[-:| ]+\|", line))
        rows = []
        for line in lines[rule + 1 :]:  # the rows under the header's |---| line
            if not line.startswith("|"):
                break
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        tables.append(rows)
    return tables


def test_the_goals_summary_is_what_goals_py_prints() -> None:
    printed = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "goals.py"), "--summary"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for after in docs_text.after("$ .venv/bin/python bench/goals.py --summary\n"):
        assert after.split("```", 1)[0] == printed


@pytest.mark.parametrize(
    ("script", "columns"),
    [
        ("codec", ("frame", "op", "vs_floor", "vs_rstream")),
        ("amqp091", ("frame", "op", "vs_floor", "vs_pika")),
        ("amqp10", ("frame", "operation", "bytes_from", "vs_floor", "vs_pyamqp", "vs_proton")),
        ("amqp010", ("frame", "op", "vs_floor")),
    ],
)
def test_each_codec_table_is_its_latest_run(script: str, columns: tuple[str, ...]) -> None:
    data = _results(script)
    when = f", measured {data['when']}" if "when" in data else ""
    expected = [
        [_ratio(row[c]) if c.startswith("vs_") else str(row[c]) for c in columns]
        for row in data["rows"]
    ]
    for table in _tables(f"`bench/results/{script}.json`{when}:"):
        assert table == expected


def test_the_frame_reader_table_is_the_latest_runs() -> None:
    rows = [
        (row["protocol"], row["frames"], row["reader_vs_known"])
        for row in _results("frame_reader")["rows"]
    ]
    amqp10 = _results("amqp10")["frame_reader"]
    amqp010 = _results("amqp010")["frame_reader"]
    rows.append(("AMQP 1.0", amqp10["frames"], amqp10["ratio"]))
    rows.append(("AMQP 0-10", amqp010["frames"], amqp010["vs_known_offsets"]))
    for table in _tables("| protocol | stream | reader vs known offsets"):
        assert [(name, stream.rsplit(", ", 1)[1], ratio) for name, stream, ratio in table] == [
            (name, f"{frames:,} frames", _ratio(ratio)) for name, frames, ratio in rows
        ]


def test_the_import_times_are_the_latest_run() -> None:
    data = _results("imports")
    expected = [
        f"best of {data['rounds']} fresh interpreters, bytecode cached; "
        f"load average {data['load_average'][0]:.1f}"
    ]
    for row in data["rows"]:
        met = "met" if row["met"] else "NOT met"
        expected.append(f"{row['package']} {row['ms']:.1f} <= {row['goal_ms']:g} ms {met}")
    for after in docs_text.after("$ .venv/bin/python bench/imports.py\n"):
        shown = after.split("```", 1)[0].splitlines()
        rows = [" ".join(line.split()) for line in shown if line.startswith("specgen_codecs.")]
        assert [shown[0], *rows] == expected
