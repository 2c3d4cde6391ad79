"""An index's read events read by the regular expression (`inputs._READ`) come out as the JSON
parse reads them: the same events, the same errors, the same warnings, line for line.

Lines are drawn near the canonical form, with its usual variants and the near misses a regular
expression can get wrong (leading zeros, negative numbers, missing keys, out-of-range walls,
control characters, trailing carriage returns, cut lines); each file is read twice, once with the
fast path switched off.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specgen.pipeline import inputs, pcap_job, reassembly
from specgen.pipeline.inputs import BadIndex, load_index

NEVER = re.compile(r"(?!)")

numbers = st.one_of(
    st.integers(0, 10**10).map(str),  # most lines are well formed: the fast path's to take
    st.floats(0, 2e9).map(repr),
    st.integers(-5, 10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["007", "1.", ".5", "1e5", "1E+2", "-0", "0", "1764000000.000066", "null"]),
)


@st.composite
def lines(draw: st.DrawFn) -> str:
    shape = draw(st.integers(0, 9))
    direction = draw(st.sampled_from(["c2s", "s2c", "c2s", "s2c", "c2x", ""]))
    offset, length, wall, mono = (draw(numbers) for _ in range(4))
    connection = draw(st.sampled_from(["conn-0001", "conn-0001", 'a"b', "a\\u00e9", "a\x01b", ""]))
    if shape == 0:
        return json.dumps({"event": draw(st.sampled_from(["accept", "close", "other"]))})
    if shape == 1:
        return draw(st.text(max_size=30))
    head = '{"event": "read", '
    if shape in (2, 3):
        head += f'"connection": "{connection}", '
    body = f'"direction": "{direction}", "offset": {offset}, "length": {length}, '
    if shape in (3, 4):
        body += f'"mono": {mono}, '
    line = head + body + f'"wall": {wall}}}'
    if shape == 5:
        line = line.replace(', "length"', ', "size"')
    if shape == 6:
        line += "\r"
    if shape == 7:
        line = line[: draw(st.integers(0, len(line)))]
    return line


def _read(path: Path) -> tuple[object, list[str]]:
    warned: list[str] = []
    try:
        got: object = load_index(path, warned.append)
    except BadIndex as e:
        got = ("BadIndex", str(e))
    return got, warned


@settings(max_examples=300, deadline=None)
@given(st.lists(lines(), min_size=1, max_size=8), st.booleans())
def test_the_fast_path_reads_as_json_does(
    tmp_path_factory: pytest.TempPathFactory, drawn: list[str], newline: bool
) -> None:
    path = tmp_path_factory.mktemp("index") / "conn.index.jsonl"
    path.write_text("\n".join(drawn) + ("\n" if newline else ""), encoding="utf-8")
    fast = _read(path)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(inputs, "_READ", NEVER)
        slow = _read(path)
    assert fast == slow


def test_the_fast_path_takes_the_lines_capture_and_the_pcap_job_write() -> None:
    written = [
        '{"event": "read", "connection": "conn-0001", "direction": "c2s", "offset": 0, '
        '"length": 8, "mono": 8383.352101, "wall": 1795450921.321065}',
        '{"event": "read", "direction": "s2c", "offset": 8, "length": 62, "wall": 1764000000.5}',
    ]
    got = [m.groups() if (m := inputs._READ.fullmatch(line)) else None for line in written]
    assert got == [("c2s", "0", "8", "1795450921.321065"), ("s2c", "8", "62", "1764000000.5")]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 2**40),
            st.integers(0, 2**20),
            st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(0, 2**40)),
        ),
        max_size=6,
    ),
    st.integers(0, 2**20),
    st.sampled_from(["c2s", "s2c"]),
)
def test_the_pcap_job_writes_each_read_as_json_dumps_would(
    tmp_path_factory: pytest.TempPathFactory,
    reads: list[tuple[int, int, float]],
    base: int,
    direction: str,
) -> None:
    folder = tmp_path_factory.mktemp("streams")
    shifted = [(base + offset, length, ts) for offset, length, ts in reads]
    events: dict[str, list[str]] = {}
    part = reassembly.Part(base, b"x", shifted, 0)
    pcap_job._write_parts(folder, "conn", direction, [part], events)
    expected = [
        json.dumps({"event": "read", "direction": direction, "offset": o, "length": n, "wall": ts})
        for o, n, ts in reads
    ]
    assert events.get("conn", []) == expected
