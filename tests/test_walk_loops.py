"""The walk's written-out loop (`_fixed`) cuts every file exactly as its general loop does.

`_fixed` is the hot loop for a header of one layout with a trailer or protocol headers
(AMQP 0-9-1, AMQP 1.0); `_generic` is the loop every framing can take. Both walk the shipped
samples' byte files, whole and with random damage (bytes replaced, inserted, deleted, the file
cut short), at several range targets: the cuts (ranges, frame counts, gaps) must be equal.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from specgen.pipeline import decode
from specgen.pipeline.inputs import DIRECTIONS
from specgen.pipeline.ranges import Cut, _Walk

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
CASES = [
    ("specgen_codecs.amqp_0_9_1.v0_9_1", "amqp-0-9-1"),
    ("specgen_codecs.amqp_1_0.v1_0", "amqp-1-0"),
]


def _damaged(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        at = rng.randrange(len(out))
        junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 40)))
        kind = rng.choice(["replace", "insert", "delete"])
        if kind == "replace":
            out[at : at + len(junk)] = junk
        elif kind == "insert":
            out[at:at] = junk
        else:
            del out[at : at + len(junk)]
    if rng.random() < 0.5:
        del out[rng.randrange(len(out)) :]  # cut short, mid-frame as often as not
    return bytes(out)


def _cuts(path: Path, import_name: str, direction: str, target: int) -> tuple[list[Cut], list[Cut]]:
    framing = decode._codec(import_name).framing
    fd = os.open(path, os.O_RDONLY)
    try:
        walk = _Walk(fd, path.stat().st_size, framing, DIRECTIONS[direction])
        return walk._fixed(target), walk._generic(target)
    finally:
        os.close(fd)


@pytest.mark.parametrize(("import_name", "sample"), CASES)
def test_the_fixed_loop_serves_these_framings(import_name: str, sample: str) -> None:
    framing = decode._codec(import_name).framing
    assert framing.fixed and not framing.packed


@pytest.mark.parametrize(("import_name", "sample"), CASES)
@pytest.mark.parametrize("seed", range(12))
def test_the_fixed_loop_cuts_as_the_general_loop(
    import_name: str, sample: str, seed: int, tmp_path: Path
) -> None:
    rng = random.Random(seed)
    direction = rng.choice(["c2s", "s2c"])
    data = (SAMPLES / sample / "session-1" / f"conn-0001.{direction}.bin").read_bytes()
    if seed:  # seed 0: the file as recorded
        data = _damaged(data, rng)
    path = tmp_path / f"conn-0001.{direction}.bin"
    path.write_bytes(data)
    for target in (1, 4096, 65536, 1 << 30):
        fixed, generic = _cuts(path, import_name, direction, target)
        assert fixed == generic, (seed, target)
    if seed:
        # the damage made gaps for the loops to agree on: the resynchronisation is exercised
        assert any(cut.gap_starts for cut in generic)
