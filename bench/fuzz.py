"""Fuzz every generated codec: mutated real frames through `decode`, the `FrameReader` and back.

    .venv/bin/python bench/fuzz.py [--inputs N] [--seed S] [--versions V ...] [--json PATH]

Every version `specgen list` names is fuzzed (or those `--versions` names: `amqp-1-0/1.0`, a
protocol such as `rabbitmq-stream` for all its versions, or `rabbitmq_stream.v4_0`); a protocol
this script has no adapter for is an error, never skipped silently.

Seeds, per version:
  * real frames cut from the shipped recordings with the version's own FrameReader
    (samples/rabbitmq-stream for both Streams versions, samples/amqp-0-9-1 for both 0-9-1
    versions, the client's direction after its protocol header, samples/amqp-1-0 for both AMQP
    1.0 versions, protocol headers included), a few per message class and direction (the
    smallest, the largest and some at random); `.c2s.bin` frames are decoded with
    sender "client", `.s2c.bin` ones with "server";
  * the boundary samples the generated conformance tests build (`test_conformance.SAMPLES`:
    each message class at its minimum and maximum, with its sender) for Streams, 0-9-1 and
    AMQP/Fast 0.8, which has no recording; for AMQP 0-10 (no recording, no SAMPLES) every
    control and command of its conformance METHOD_CASES with all fields set and with none, in
    a frame on its track, each coded struct of STRUCT_CASES as a header segment, and a
    message (command, header, body) cut into several frames; for AMQP 1.0 also every
    performative built from its defaults where that encodes; for 0.8 Handle.Send, .Notify and
    .Prepare frames each followed by its fragment (a message head and body), which only the
    FrameReader follows.

Each input is a seed mutated once or a few times over: bit flips, byte overwrites (random and
"interesting" bytes), runs of one byte written or inserted, truncation (of the end or the
start), insertion (random bytes or a copy of a slice), deletion, the framing's size fields
(every frame's, found by walking them) set to 0, 1, small and huge values (0xFFFFFFFF,
0x7FFFFFFF, 0x80000000, the frame size limit and one over, the input's length +- a little),
interesting 1/2/4/8-byte integers at random aligned (and unaligned) positions, splices of two
seeds and two seeds back to back; then in about 45% of cases the frame's size field (and
trailer) is set to fit the new length so the mutation reaches the body. Besides: 2% purely
random bytes (half of them under a fitting frame header), 1% seeds unchanged, and 2%
structured inputs where the format can nest or compress: values nested 1 to 4,000 deep
(AMQP 1.0 lists, maps and descriptors; 0-9-1 field tables and arrays; 0-10 maps and lists)
and Streams sub-entry batches compressed from runs of zeros with true or lying lengths. All of
it comes from one `random.Random` seeded by `--seed` and the version's name: a run is
reproducible, and one version's inputs do not depend on which others run.

Each input goes through:
  * decode: the version's `decode(frame, sender)` (Streams, 0-9-1 and 0.8 alternate
    `verify_checksums` True/False); for AMQP 0-10, whose `decode` gives a frame (its
    messages are segments joined from frames), `decode_frame` over the input frame after
    frame, an `Assembler`, and `Segment.decode` (`decode_control` / `decode_command` /
    `decode_header`) for every segment completed;
  * the sub-decoders a decoded frame offers: `SubBatchEntry.records()` (Streams: decompresses
    and splits), `decode_message` of a transfer's payload (AMQP 1.0), `MessageHead.decode` of
    a fragment the 0.8 FrameReader yields;
  * encode: whatever decoded must encode back to exactly its bytes (frames, and for 0-10
    each control, command and header segment; AMQP 1.0 messages via `encode_message`);
  * the version's FrameReader (same sender and checksum setting) fed the whole input at once,
    then a fresh one fed it in a random chunking (one byte at a time, small random pieces, or
    a few random cuts), each followed by `finish()`; both must yield the same messages and end
    with the same error, if any.

Reported per version: inputs run; inputs where anything raised an exception other than the
version's `DecodeError` (or its `EncodeError` while re-encoding, which counts as a round-trip
difference) with type, where it was raised and a minimized repro of the first few; round-trip
differences; reader differences (chunked against whole); inputs slower than 1 s (an input
still running after `--timeout` seconds is stopped and counted slow); inputs whose allocations
in one stage peaked over 10x the input's size + 1 MiB (`records()` may also hold twice the
uncompressed lengths its entries declare: the decompressed data, which the generated code
documents never exceeds the declared length, and the records split from it).

Allocation is measured on a deterministic sample, since tracemalloc on every input nearly
doubles the run time (22.6 s against 12.6 s for 3,000 inputs of two versions): each input is
first run untraced (that time is what counts as slow), then re-run under tracemalloc (peak per
stage, `tracemalloc.reset_peak`) in a forked child when it is every `--alloc-every`th input
(default 16), took over 10 ms, raised an exception other than DecodeError, or raised the
process's peak RSS by more than 8 MiB (a cheap check on every input, catching allocations made
outside tracemalloc's sight, such as a C library's); not when it overflowed the stack, which is
reported already and would take tracemalloc 100 ms to retrace. The child because CPython 3.11's
tracemalloc, started and stopped around deeply recursive decoding, leaks (about 200 KB per
0-9-1 input of tables nested 200 deep): the child exits with the leak.

A failure is told apart by its exception type and where it was raised (the innermost line in
generated/; for RecursionError the function that recursed), whichever stage raised it. The
smallest input of each is kept, and for the first `--show` of each kind minimized by deleting
ever smaller blocks (each candidate also tried with its size field refitted) while the same
failure still happens, for up to `--minimize-seconds`; crafted inputs over 4 KiB are not (a
deletion only breaks their structure): their description says what they are. Hex in the text
report collapses runs: `(00)*500` is 500 zero bytes; --json keeps every byte. The exit status
is 1 when any column but `inputs` is non-zero.

Round-trip differences of a fault someone is fixing can be counted apart from the table (and
listed under it) by an entry in `KNOWN`; there is none now. The last one, AMQP 1.0 descriptors
written as smalluint (0x52) or uint (0x70) that re-encoded as 0x53, was fixed in ec91fe7 (only
a ulong or symbol descriptor names a described type): against the code before it this script
finds that fault, and a byte (0x51) descriptor re-encoding as 0x53 too, in 20,000 inputs.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import importlib
import json
import math
import os
import random
import resource
import signal
import struct
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any, Literal

from specgen.registry import SpecVersion, registry

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
GENERATED = str(ROOT / "generated")
MIB = 1 << 20
SLOW_SECONDS = 1.0
TRACE_AFTER_SECONDS = 0.010
RSS_JUMP_KIB = 8 * 1024
MAX_INPUT = 1 << 20  # mutations never grow an input past 1 MiB (seeds may be larger)


class InputTimeout(BaseException):
    """Raised by the alarm when one input runs past --timeout (a BaseException, so that no
    `except Exception` in the code under test swallows it)."""


# ---------------------------------------------------------------------------- data


@dataclasses.dataclass(slots=True)
class Seed:
    data: bytes
    sender: str | None
    origin: str


@dataclasses.dataclass(slots=True)
class Input:
    data: bytes
    sender: str | None
    verify: bool
    chunks: list[int]
    how: str


@dataclasses.dataclass(slots=True)
class Problem:
    kind: str  # "exception" | "roundtrip" | "reader" | "known"
    stage: str
    signature: str
    detail: str


@dataclasses.dataclass(slots=True)
class Finding:
    kind: str
    signature: str
    detail: str
    count: int
    input: bytes
    sender: str | None
    verify: bool
    chunks: list[int]
    how: str
    repro: bytes | None = None
    seconds: float | None = None
    peak: int | None = None
    stages: set[str] = dataclasses.field(default_factory=set)

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "signature": self.signature,
            "detail": self.detail,
            "count": self.count,
            "stages": sorted(self.stages),
            "sender": self.sender,
            "verify_checksums": self.verify,
            "how": self.how,
            "input_length": len(self.input),
            "input_hex": self.input.hex(),
            "repro_hex": None if self.repro is None else self.repro.hex(),
            "chunks": self.chunks if len(self.chunks) <= 256 else None,
            "seconds": self.seconds,
            "alloc_peak": self.peak,
        }


@dataclasses.dataclass
class Stats:
    version: str
    inputs: int = 0
    non_decode_error: int = 0
    roundtrip_diffs: int = 0
    reader_diffs: int = 0
    slow: int = 0
    big_alloc: int = 0
    known: int = 0
    decoded: int = 0
    alloc_measured: int = 0
    seeds: int = 0
    seconds: float = 0.0
    slowest: float = 0.0
    findings: dict[str, Finding] = dataclasses.field(default_factory=dict)

    def failed(self) -> bool:
        return any(
            (
                self.non_decode_error,
                self.roundtrip_diffs,
                self.reader_diffs,
                self.slow,
                self.big_alloc,
            )
        )


# ---------------------------------------------------------------------------- helpers


def _rel(filename: str) -> str:
    return filename[len(str(ROOT)) + 1 :] if filename.startswith(str(ROOT)) else filename


def _where(e: BaseException) -> str:
    """Where an exception was raised: the innermost frame in generated/ (else the innermost),
    as file:line in function. For RecursionError the function that recursed (the one most
    frames belong to), and for MemoryError the file: where the stack or the memory ran out
    varies from input to input."""
    frames: list[tuple[str, int, str]] = []
    tb = e.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        frames.append((code.co_filename, tb.tb_lineno, code.co_name))
        tb = tb.tb_next
    if not frames:
        return "?"
    ours = [f for f in frames if f[0].startswith(GENERATED)] or frames
    if isinstance(e, RecursionError):
        counts: dict[tuple[str, str], int] = {}
        for name, _, func in ours:
            counts[name, func] = counts.get((name, func), 0) + 1
        name, func = max(counts, key=lambda k: counts[k])
        return f"{_rel(name)} in {func} (recursing)"
    name, line, func = ours[-1]
    if isinstance(e, MemoryError):
        return _rel(name)
    return f"{_rel(name)}:{line} in {func}"


def _exception(stage: str, e: BaseException) -> Problem:
    where = _where(e)
    return Problem(
        "exception", stage, f"{type(e).__name__} at {where}", f"{type(e).__name__}: {str(e)[:300]}"
    )


_MISSING = object()


def _attrs(x: Any) -> list[Any]:
    """An object's slot and instance attributes (dataclass fields, Table.constructors, ...)."""
    out: list[Any] = []
    for cls in type(x).__mro__:
        slots = getattr(cls, "__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__weakref__", "__dict__"):
                out.append(getattr(x, name, _MISSING))
    if hasattr(x, "__dict__"):
        out += [v for _, v in sorted(vars(x).items())]
    return out


def _equal(a: Any, b: Any) -> bool:
    """Deep equality without recursion (decoded values may nest thousands deep), NaN equal to
    NaN."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        if type(x) is not type(y):
            return False
        if isinstance(x, list | tuple):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif isinstance(x, dict):
            if len(x) != len(y):
                return False
            stack.extend(zip(list(x), list(y), strict=True))
            stack.extend(zip(list(x.values()), list(y.values()), strict=True))
        elif isinstance(x, float):
            if x != y and not (x != x and y != y):
                return False
            continue
        elif not _attrs(x):
            if x != y and repr(x) != repr(y):
                return False
            continue
        ax, ay = _attrs(x), _attrs(y)
        if len(ax) != len(ay):
            return False
        stack.extend(zip(ax, ay, strict=True))
    return True


def _same(a: list[Any], b: list[Any]) -> bool:
    return _equal(a, b)


def compact_hex(data: bytes, limit: int = 600) -> str:
    """Hex with runs of 8 or more equal bytes written `(xx)*n`, cut after `limit` characters."""
    out: list[str] = []
    i = 0
    while i < len(data):
        j = i
        while j < len(data) and data[j] == data[i]:
            j += 1
        if j - i >= 8:
            out.append(f" ({data[i]:02x})*{j - i} ")
        else:
            out.append(data[i:j].hex())
        i = j
    text = "".join(out).strip().replace("  ", " ")
    if len(text) > limit:
        return text[:limit] + f"... ({len(data)} bytes)"
    return text


def _first_diff(a: bytes, b: bytes) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


def _log_uniform(rng: random.Random, low: int, high: int) -> int:
    return int(math.exp(rng.uniform(math.log(low), math.log(high + 1)))) if high > low else low


def _walk(obj: Any) -> Iterator[Any]:
    """Every value inside a decoded message: dataclass fields, list and dict items."""
    stack = [obj]
    while stack:
        item = stack.pop()
        yield item
        if isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            stack.extend(getattr(item, f.name) for f in dataclasses.fields(item))


KNOWN: dict[str, tuple[str, Callable[[bytes, bytes], bool]]] = {}
"""Protocol -> (what, a test of (original, re-encoded) bytes): round-trip differences someone
is fixing right now, counted apart from the table."""


# ---------------------------------------------------------------------------- targets


class Target:
    """One generated version: how to decode, re-encode, read incrementally, and where its
    framing keeps its sizes. Subclasses fill the protocol-specific parts."""

    checksums = False  # decode/FrameReader take verify_checksums

    def __init__(self, spec: SpecVersion) -> None:
        self.spec = spec
        self.name = spec.qualified
        self.mod: ModuleType = importlib.import_module(spec.import_name)
        self.errors: ModuleType = importlib.import_module(f"specgen_codecs.{spec.package}.errors")
        self.decode_error: type[Exception] = self.errors.DecodeError
        self.encode_error: type[Exception] = self.errors.EncodeError
        self.known = KNOWN.get(spec.protocol)

    # -- seeds
    def seeds(self, rng: random.Random) -> list[Seed]:
        raise NotImplementedError

    def structured(self, rng: random.Random) -> tuple[bytes, str | None, str] | None:
        """A crafted input (deep nesting, compression), or None where the format has none."""
        return None

    # -- framing facts
    def size_fields(self, data: bytes) -> list[tuple[int, int]]:
        raise NotImplementedError

    def reframe(self, data: bytes) -> bytes:
        """The input with its (first) frame's size field, and trailer, set to fit its length."""
        raise NotImplementedError

    # -- the stages
    def decode(self, data: bytes, sender: str | None, verify: bool) -> Any:
        raise NotImplementedError

    def roundtrips(self, decoded: Any, data: bytes) -> Iterator[tuple[str, bytes, bytes]]:
        """(stage, original bytes, bytes encoded again) for each part that must match."""
        raise NotImplementedError

    def sub_decodes(self, decoded: Any) -> Iterator[tuple[str, Callable[[], Any]]]:
        """Further decoders a decoded frame offers, each run in its own stage."""
        return iter(())

    def sub_allowance(self, decoded: Any) -> int:
        """Bytes the sub-decoders may allocate beyond the general limit, as documented."""
        return 0

    def new_reader(self, sender: str | None, verify: bool) -> Any:
        raise NotImplementedError

    def read_items(self, reader: Any) -> Iterator[Any]:
        return iter(reader)

    def finish(self, reader: Any) -> None:
        reader.finish()

    def item_checks(self, item: Any) -> Iterator[tuple[str, Callable[[], Any]]]:
        """Decoders to run on what a FrameReader yields (0.8 fragments)."""
        return iter(())


def _sample_frames(target: Target, directory: Path, client_preamble: bool) -> list[Seed]:
    """Every frame of every recorded byte file, cut by the version's FrameReader."""
    out: list[Seed] = []
    for path in sorted(directory.rglob("*.bin")):
        sender = "client" if path.name.endswith(".c2s.bin") else "server"
        kwargs: dict[str, Any] = {}
        if client_preamble and sender == "client":
            kwargs["preamble"] = True
        reader = target.mod.FrameReader(sender=sender, **kwargs)
        reader.feed(path.read_bytes())
        rel = path.relative_to(ROOT)
        for offset, frame in reader.frames():
            out.append(Seed(bytes(frame), sender, f"{rel}@{offset}"))
        reader.finish()
    return out


def _pick(target: Target, frames: list[Seed], rng: random.Random, per_class: int = 4) -> list[Seed]:
    """A few frames per (direction, message class): the smallest, the largest, some at random."""
    groups: dict[tuple[str | None, str], list[Seed]] = {}
    seen: set[bytes] = set()
    for seed in frames:
        if seed.data in seen:
            continue
        seen.add(seed.data)
        try:
            msg = target.decode(seed.data, seed.sender, True)
            kind = str(getattr(msg, "COMMAND", None) or type(msg).__name__)
        except Exception as e:  # a frame this version cannot read is a seed all the same
            kind = f"undecodable {type(e).__name__}"
        groups.setdefault((seed.sender, kind), []).append(seed)
    out: list[Seed] = []
    for key in sorted(groups, key=str):
        items = sorted(groups[key], key=lambda s: (len(s.data), s.origin))
        chosen = {0, len(items) - 1}
        rest = [i for i in range(len(items)) if i not in chosen]
        chosen.update(rng.sample(rest, min(len(rest), max(0, per_class - 2))))
        out.extend(items[i] for i in sorted(chosen))
    return out


def _conformance_samples(target: Target) -> list[Seed]:
    """The conformance tests' boundary samples, encoded, with their senders."""
    tests = importlib.import_module(f"{target.spec.import_name}.test_conformance")
    out = []
    for name, msg, sender in tests.SAMPLES:
        out.append(
            Seed(
                target.mod.encode(msg),
                None if sender == "both" else sender,
                f"{target.spec.package_path}/test_conformance.py SAMPLES {name}",
            )
        )
    return out


class FramedTarget(Target):
    """Streams, AMQP 0-9-1 and AMQP/Fast 0.8: `decode(frame, sender, verify_checksums=)`,
    `encode(msg)`, a FrameReader with `finish()`, and framing facts in `framing.py`."""

    checksums = True
    samples: str | None = None
    client_preamble = False

    def __init__(self, spec: SpecVersion) -> None:
        super().__init__(spec)
        self.framing: ModuleType = importlib.import_module(f"specgen_codecs.{spec.package}.framing")
        self.offset: int = self.framing.LENGTH_OFFSET
        self.width: int = self.framing.LENGTH.size
        self.adjust: int = self.framing.LENGTH_ADJUST
        self.min_length: int = self.framing.MIN_LENGTH
        self.trailer: bytes = self.framing.TRAILER
        self.escape: int | None = getattr(self.framing, "LENGTH_ESCAPE", None)

    def seeds(self, rng: random.Random) -> list[Seed]:
        out = []
        if self.samples is not None:
            out += _pick(
                self, _sample_frames(self, SAMPLES / self.samples, self.client_preamble), rng
            )
        return out + _conformance_samples(self)

    def size_fields(self, data: bytes) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        at = 0
        fmt = {1: ">B", 2: ">H", 4: ">I"}[self.width]
        while at + self.offset + self.width <= len(data) and len(out) < 64:
            pos = at + self.offset
            out.append((pos, self.width))
            (length,) = struct.unpack_from(fmt, data, pos)
            adjust = self.adjust
            if self.escape is not None and length == self.escape:
                if pos + self.width + 4 > len(data):
                    break
                out.append((pos + self.width, 4))
                (length,) = struct.unpack_from(">I", data, pos + self.width)
                adjust += 4
            if length < self.min_length or at + length + adjust > len(data):
                break
            at += length + adjust
        return out

    def reframe(self, data: bytes) -> bytes:
        if self.escape is not None:  # AMQP/Fast 0.8: a 2-byte size, or 0xFFFF and a 4-byte one
            head = 7 if data[:2] == b"\xff\xff" and len(data) >= 7 else 3
            if len(data) < head:
                return data
            rest = data[head - 1 :]  # the code, the body, the trailer
            if self.trailer:
                rest = rest[: -len(self.trailer)] + self.trailer if len(rest) > 1 else rest
            size = len(rest)
            if size < self.escape:
                return struct.pack(">H", size) + rest
            return b"\xff\xff" + struct.pack(">I", size) + rest
        if len(data) < self.offset + self.width:
            return data
        out = bytearray(data)
        if self.trailer and len(out) >= self.offset + self.width + len(self.trailer):
            out[-len(self.trailer) :] = self.trailer
        length = len(out) - self.adjust
        if length < 0 or length >= 1 << (8 * self.width):
            return bytes(out)
        out[self.offset : self.offset + self.width] = length.to_bytes(self.width, "big")
        return bytes(out)

    def decode(self, data: bytes, sender: str | None, verify: bool) -> Any:
        return self.mod.decode(data, sender, verify_checksums=verify)

    def roundtrips(self, decoded: Any, data: bytes) -> Iterator[tuple[str, bytes, bytes]]:
        yield "encode", data, self.mod.encode(decoded)

    def new_reader(self, sender: str | None, verify: bool) -> Any:
        return self.mod.FrameReader(sender=sender, verify_checksums=verify)


class StreamTarget(FramedTarget):
    samples = "rabbitmq-stream"

    def __init__(self, spec: SpecVersion) -> None:
        super().__init__(spec)
        self._bombs: list[Any] | None = None

    def sub_decodes(self, decoded: Any) -> Iterator[tuple[str, Callable[[], Any]]]:
        for item in _walk(decoded):
            if isinstance(item, self.mod.SubBatchEntry):
                yield "records", item.records

    def sub_allowance(self, decoded: Any) -> int:
        """records() holds the decompressed data (the declared length, plus one byte at most)
        and the records split from it, a copy: twice the declared lengths."""
        total = 0
        for item in _walk(decoded):
            if isinstance(item, self.mod.SubBatchEntry):
                total += 2 * (item.uncompressed_length + 1)
        return total

    def structured(self, rng: random.Random) -> tuple[bytes, str | None, str] | None:
        """A publish of one sub-entry batch compressed from zeros, its lengths true or lying."""
        publish = getattr(self.mod, "PublishV1", None) or getattr(self.mod, "Publish", None)
        item = getattr(self.mod, "PublishV1PublishedMessage", None) or getattr(
            self.mod, "PublishedMessage", None
        )
        if publish is None or item is None:
            return None
        if self._bombs is None:
            self._bombs = []
            for compression in (1, 2, 3, 4):
                for size in (1 << 12, 1 << 16, 1 << 20, 6 << 20):
                    try:
                        entry = self.mod.SubBatchEntry.from_records([bytes(size)], compression)
                    except self.encode_error:  # the compression package is not installed
                        continue
                    self._bombs.append(entry)
        if not self._bombs:
            return None
        entry = copy.copy(rng.choice(self._bombs))
        true_size = entry.uncompressed_length
        entry.uncompressed_length = rng.choice(
            [true_size, true_size - 1, true_size + 1, rng.randrange(0, 64), 0xFFFFFFFF]
        ) % (1 << 32)
        if rng.random() < 0.3:
            entry.num_records = rng.choice([0, 2, 0xFFFF])
        published = _build_default(item, {"message": entry})
        msg = _build_default(publish, {"published_messages": [published]})
        if published is None or msg is None:
            return None
        how = (
            f"sub-entry batch, compression {entry.compression_type}, {true_size} bytes of zeros"
            f" in {entry.length}, declared {entry.uncompressed_length}"
        )
        return self.mod.encode(msg), "client", how


class Amqp091Target(FramedTarget):
    samples = "amqp-0-9-1"
    client_preamble = True

    def structured(self, rng: random.Random) -> tuple[bytes, str | None, str] | None:
        """Connection.Start-Ok whose client-properties nest tables (or arrays) `depth` deep."""
        depth = _log_uniform(rng, 1, 4000)
        inner = struct.pack(">I", 0)
        for _ in range(depth):
            if rng.random() < 0.5:  # a table holding one table: key "k", type 'F'
                entry = b"\x01kF" + inner
                inner = struct.pack(">I", len(entry)) + entry
            else:  # a table holding an array holding that table
                array = b"F" + inner
                entry = b"\x01kA" + struct.pack(">I", len(array)) + array
                inner = struct.pack(">I", len(entry)) + entry
        body = (
            struct.pack(">HH", 10, 11)
            + inner
            + b"\x05PLAIN"
            + struct.pack(">I", 1)
            + b"x"
            + b"\x05en_US"
        )
        frame = struct.pack(">BHI", 1, 0, len(body)) + body + b"\xce"
        return frame, "client", f"Connection.Start-Ok, field tables nested {depth} deep"


class Fast08Target(FramedTarget):
    def seeds(self, rng: random.Random) -> list[Seed]:
        out = super().seeds(rng)
        mod = self.mod
        for body in (b"", b"hello", bytes(range(256)) * 4):
            head = mod.MessageHead(
                body_size=len(body),
                persistent=True,
                priority=5,
                expiration=0,
                mime_type="text/plain",
                encoding="utf-8",
                msg_identifier="id-1",
                headers={"a": 1, "b": "x"},
            ).encode()
            fragment = head + body
            for cls in (mod.HandleSend, mod.HandleNotify, mod.HandlePrepare):
                msg = _build_default(cls, {"fragment_size": len(fragment), "out_of_band": False})
                if msg is None:
                    continue
                try:
                    frame = mod.encode(msg)
                except self.encode_error:
                    continue
                sender = getattr(cls, "SENDER", None)
                out.append(
                    Seed(
                        frame + fragment,
                        sender if sender in ("client", "server") else None,
                        f"{cls.__name__} + fragment of {len(fragment)} bytes",
                    )
                )
        return out

    def item_checks(self, item: Any) -> Iterator[tuple[str, Callable[[], Any]]]:
        if type(item).__name__ == "Fragment":
            data = item.data

            def head() -> Any:
                got, at = self.mod.MessageHead.decode(data)
                again = got.encode()
                if again != data[:at]:
                    raise RoundTripDiff("fragment head", data[:at], again)
                return got

            yield "fragment-head", head


def _build_default(cls: type, overrides: dict[str, Any]) -> Any:
    """An instance of a generated dataclass with zero values (0, "", b"", False, {}, [])."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name in overrides:
            values[f.name] = overrides[f.name]
            continue
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            continue
        kind = str(f.type)
        if "bool" in kind:
            values[f.name] = False
        elif kind.startswith("int"):
            values[f.name] = 0
        elif kind.startswith("str"):
            values[f.name] = ""
        elif kind.startswith("bytes"):
            values[f.name] = b""
        elif kind.startswith("dict"):
            values[f.name] = {}
        elif kind.startswith("list"):
            values[f.name] = []
        else:
            return None
    try:
        return cls(**values)
    except TypeError:
        return None


class RoundTripDiff(Exception):
    """A sub-decoder's result that does not encode back to its bytes."""

    def __init__(self, stage: str, original: bytes, again: bytes) -> None:
        super().__init__(stage)
        self.stage = stage
        self.original = original
        self.again = again


def _list32(items: Sequence[bytes]) -> bytes:
    body = struct.pack(">I", len(items)) + b"".join(items)
    return b"\xd0" + struct.pack(">I", len(body)) + body


def _map32(pairs: Sequence[tuple[bytes, bytes]]) -> bytes:
    items = [x for pair in pairs for x in pair]
    body = struct.pack(">I", len(items)) + b"".join(items)
    return b"\xd1" + struct.pack(">I", len(body)) + body


def _amqp10_nested(rng: random.Random, depth: int) -> tuple[bytes, str]:
    """A value `depth` levels deep: lists, maps and described values, chosen at random."""
    value = b"\x40"  # null
    kinds: set[str] = set()
    for _ in range(depth):
        r = rng.random()
        if r < 0.4:
            value, kind = _list32([value]), "list32"
        elif r < 0.8:
            value, kind = _map32([(b"\xa3\x01k", value)]), "map32"
        else:  # a described value whose descriptor is the value so far
            value, kind = b"\x00" + value + b"\x40", "descriptor"
        kinds.add(kind)
    return value, "/".join(sorted(kinds)) or "null"


class Amqp10Target(Target):
    """AMQP 1.0: `decode(frame)` gives a Frame or a ProtocolHeader; FrameReader with finish()."""

    def seeds(self, rng: random.Random) -> list[Seed]:
        out = _pick(self, _sample_frames(self, SAMPLES / "amqp-1-0", False), rng)
        frames = importlib.import_module(f"{self.spec.import_name}.commands")
        for frame_type, bodies in frames.BODIES.items():
            for cls in bodies:
                try:
                    data = self.mod.encode(self.mod.Frame(type=frame_type, channel=1, body=cls()))
                    self.mod.decode(data)
                except Exception:  # a mandatory field without a default: no such seed
                    continue
                out.append(Seed(data, None, f"{cls.__name__}() from its defaults"))
        return out

    def structured(self, rng: random.Random) -> tuple[bytes, str | None, str] | None:
        depth = _log_uniform(rng, 1, 4000)
        nested, kinds = _amqp10_nested(rng, depth)
        if hasattr(self.mod, "decode_message") and rng.random() < 0.4:
            # a transfer whose message is one amqp-value section holding the nested value
            transfer = self.mod.encode(self.mod.Frame(body=self.mod.Transfer(handle=0)))
            frame = transfer + b"\x00\x53\x77" + nested
            frame = struct.pack(">I", len(frame)) + frame[4:]
            return frame, None, f"transfer, amqp-value {kinds} nested {depth} deep"
        # open(container-id "x", 8 nulls, properties {k: nested})
        body = b"\x00\x53\x10" + _list32(
            [b"\xa1\x01x"] + [b"\x40"] * 8 + [_map32([(b"\xa3\x01k", nested)])]
        )
        frame = struct.pack(">IBBH", 8 + len(body), 2, 0, 0) + body
        return frame, None, f"open, properties value {kinds} nested {depth} deep"

    def size_fields(self, data: bytes) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        at = 0
        while at + 8 <= len(data) and len(out) < 64:
            if data[at : at + 4] == b"AMQP":
                at += 8
                continue
            out += [(at, 4), (at + 4, 1)]  # the size and the data offset (doff)
            (size,) = struct.unpack_from(">I", data, at)
            if size < 8 or at + size > len(data):
                break
            at += size
        return out

    def reframe(self, data: bytes) -> bytes:
        if len(data) < 8 or data[:4] == b"AMQP":
            return data
        return struct.pack(">I", len(data)) + data[4:]

    def decode(self, data: bytes, sender: str | None, verify: bool) -> Any:
        return self.mod.decode(data, sender)

    def roundtrips(self, decoded: Any, data: bytes) -> Iterator[tuple[str, bytes, bytes]]:
        yield "encode", data, self.mod.encode(decoded)

    def sub_decodes(self, decoded: Any) -> Iterator[tuple[str, Callable[[], Any]]]:
        decode_message = getattr(self.mod, "decode_message", None)
        payload = getattr(decoded, "payload", b"")
        if decode_message is None or not payload:
            return

        def message() -> Any:
            msg = decode_message(payload)
            again = self.mod.encode_message(msg)
            if again != payload:
                raise RoundTripDiff("encode_message", payload, again)
            return msg

        yield "decode_message", message

    def new_reader(self, sender: str | None, verify: bool) -> Any:
        return self.mod.FrameReader(sender)


@dataclasses.dataclass(slots=True)
class Decoded010:
    frames: list[Any]
    segments: list[tuple[Any, Any]]


class Amqp010Target(Target):
    """AMQP 0-10: frames (`decode_frame`, `encode_frame`) carry segments (`Assembler`,
    `Segment.decode`: controls, commands, header structs, body bytes)."""

    def seeds(self, rng: random.Random) -> list[Seed]:
        mod = self.mod
        tests = importlib.import_module(f"{self.spec.import_name}.test_conformance")
        out: list[Seed] = []
        for name, full, *_ in tests.METHOD_CASES:
            cls = type(full)
            control = cls.KIND == "control"
            for label, value in (("full", full), ("absent", cls())):
                payload = mod.encode(value)
                seg_type = mod.SegmentType.CONTROL if control else mod.SegmentType.COMMAND
                track = mod.Track.CONTROL if control else mod.Track.COMMAND
                frame = mod.Frame(type=seg_type, payload=payload, track=track, channel=1)
                origin = f"{self.spec.package_path}/test_conformance.py METHOD_CASES {name} {label}"
                out.append(Seed(mod.encode_frame(frame), None, origin))
        structs = [full for _, full, *_ in tests.STRUCT_CASES]
        header_structs = [s for s in structs if type(s).__name__ in _HEADER_STRUCTS]
        for entries in ([s] for s in structs):
            try:
                payload = mod.encode_header(entries)
            except Exception:  # a struct without codes cannot stand in a header
                continue
            frame = mod.Frame(type=mod.SegmentType.HEADER, payload=payload, track=1)
            out.append(Seed(mod.encode_frame(frame), None, f"header [{type(entries[0]).__name__}]"))
        # a message: transfer command, header segment, body in several frames
        transfer = mod.MessageTransfer(destination="amq.direct", accept_mode=0, acquire_mode=0)
        segments = [
            mod.Segment(
                type=mod.SegmentType.COMMAND,
                payload=mod.encode(transfer),
                track=1,
                channel=2,
                last_segment=False,
            ),
            mod.Segment(
                type=mod.SegmentType.HEADER,
                payload=mod.encode_header(header_structs),
                track=1,
                channel=2,
                first_segment=False,
                last_segment=False,
            ),
            mod.Segment(
                type=mod.SegmentType.BODY,
                payload=bytes(range(256)) * 3,
                track=1,
                channel=2,
                first_segment=False,
            ),
        ]
        data = b"".join(
            mod.encode_frame(f) for seg in segments for f in mod.frames_of(seg, max_frame_size=300)
        )
        out.append(Seed(data, None, "message.transfer + header + body in frames of 300 bytes"))
        return out

    def structured(self, rng: random.Random) -> tuple[bytes, str | None, str] | None:
        """connection.start-ok whose client-properties nest maps (or lists) `depth` deep."""
        mod = self.mod
        map_code = mod.TYPES["map"].code
        list_code = mod.TYPES["list"].code
        depth = _log_uniform(rng, 1, 4000)
        inner = struct.pack(">II", 4, 0)  # an empty map
        for _ in range(depth):
            if rng.random() < 0.5:
                body = struct.pack(">I", 1) + b"\x01k" + bytes([map_code]) + inner
            else:
                items = struct.pack(">I", 1) + bytes([map_code]) + inner
                body = struct.pack(">I", 1) + b"\x01k" + bytes([list_code])
                body += struct.pack(">I", len(items)) + items
            inner = struct.pack(">I", len(body)) + body
        empty = mod.encode(
            mod.ConnectionStartOk(
                client_properties={}, mechanism="PLAIN", response=b"x", locale="en"
            )
        )
        at = empty.index(struct.pack(">II", 4, 0))
        payload = empty[:at] + inner + empty[at + 8 :]
        if len(payload) + 12 > mod.MAX_FRAME_SIZE:
            return None
        frame = mod.Frame(type=mod.SegmentType.CONTROL, payload=payload, track=0)
        return mod.encode_frame(frame), None, f"connection.start-ok, maps nested {depth} deep"

    def size_fields(self, data: bytes) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        at = 0
        while at + 4 <= len(data) and len(out) < 64:
            out.append((at + 2, 2))
            (size,) = struct.unpack_from(">H", data, at + 2)
            if size < 12 or at + size > len(data):
                break
            at += size
        return out

    def reframe(self, data: bytes) -> bytes:
        if len(data) < 4 or len(data) > 0xFFFF:
            return data
        return data[:2] + struct.pack(">H", len(data)) + data[4:]

    def decode(self, data: bytes, sender: str | None, verify: bool) -> Any:
        mod = self.mod
        assembler = mod.Assembler()
        frames: list[Any] = []
        segments: list[tuple[Any, Any]] = []
        at = 0
        while True:
            frame, at = mod.decode_frame(data, at)
            frames.append(frame)
            segment = assembler.add(frame)
            if segment is not None:
                segments.append((segment, segment.decode()))
            if at >= len(data):
                return Decoded010(frames, segments)

    def roundtrips(self, decoded: Any, data: bytes) -> Iterator[tuple[str, bytes, bytes]]:
        mod = self.mod
        yield "encode_frame", data, b"".join(mod.encode_frame(f) for f in decoded.frames)
        for segment, value in decoded.segments:
            if segment.type in (mod.SegmentType.CONTROL, mod.SegmentType.COMMAND):
                yield "encode", segment.payload, mod.encode(value)
            elif segment.type == mod.SegmentType.HEADER:
                yield "encode_header", segment.payload, mod.encode_header(value)

    def new_reader(self, sender: str | None, verify: bool) -> Any:
        return _Reader010(self.mod)

    def finish(self, reader: Any) -> None:
        reader.reader.finish()


_HEADER_STRUCTS = ("MessageDeliveryProperties", "MessageFragmentProperties", "MessageProperties")


class _Reader010:
    """0-10's FrameReader with an Assembler behind it: yields frames and decoded segments."""

    def __init__(self, mod: ModuleType) -> None:
        self.mod = mod
        self.reader = mod.FrameReader()
        self.assembler = mod.Assembler()

    def feed(self, data: bytes) -> None:
        self.reader.feed(data)

    def __iter__(self) -> Iterator[Any]:
        for frame in self.reader:
            yield frame
            segment = self.assembler.add(frame)
            if segment is not None:
                yield segment.decode()


ADAPTERS: dict[str, Callable[[SpecVersion], Target]] = {
    "rabbitmq-stream": StreamTarget,
    "amqp-0-9-1": Amqp091Target,
    "amqp-fast-0-8": Fast08Target,
    "amqp-1-0": Amqp10Target,
    "amqp-0-10": Amqp010Target,
}


# ---------------------------------------------------------------------------- mutations

_INTERESTING: dict[int, tuple[int, ...]] = {
    1: (0, 1, 2, 0x7F, 0x80, 0xFE, 0xFF),
    2: (0, 1, 2, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFE, 0xFFFF),
    4: (
        0,
        1,
        2,
        4,
        8,
        0x7F,
        0xFF,
        0xFFFF,
        0x10000,
        0x7FFFFFFF,
        0x80000000,
        0xFFFFFFFE,
        0xFFFFFFFF,
        0x04000000,  # the 64 MiB frame limit
        0x04000001,
    ),
    8: (0, 1, 0xFFFFFFFF, 0x100000000, 0x7FFFFFFFFFFFFFFF, 0x8000000000000000, (1 << 64) - 1),
}


class Mutator:
    """Deterministic inputs for one target from its seeds."""

    def __init__(self, target: Target, seeds: list[Seed], rng: random.Random) -> None:
        self.target = target
        self.seeds = seeds
        self.rng = rng
        self.ops: list[tuple[str, Callable[[bytearray], bytearray]]] = [
            ("bitflip", self._bitflip),
            ("bytes", self._bytes),
            ("run", self._run),
            ("truncate", self._truncate),
            ("chop-front", self._chop_front),
            ("insert", self._insert),
            ("delete", self._delete),
            ("size-field", self._size_field),
            ("size-field", self._size_field),
            ("integer", self._integer),
            ("integer", self._integer),
            ("splice", self._splice),
            ("concat", self._concat),
            ("swap", self._swap),
        ]

    def next(self) -> Input:
        rng = self.rng
        r = rng.random()
        sender: str | None
        if r < 0.02:
            n = _log_uniform(rng, 1, 4096) - 1
            data = rng.randbytes(n)
            sender = rng.choice([None, "client", "server"])
            how = f"random {n} bytes"
            if rng.random() < 0.5:
                data = self.target.reframe(data)
                how += ", framed"
        elif r < 0.04 and (made := self.target.structured(rng)) is not None:
            data, sender, how = made
        else:
            seed = rng.choice(self.seeds)
            sender = seed.sender
            if r < 0.05:
                data, how = seed.data, f"seed {seed.origin}"
            else:
                buf = bytearray(seed.data)
                names = []
                count = 1 if rng.random() < 0.55 else rng.randint(2, 6)
                sized = False
                for _ in range(count):
                    name, op = rng.choice(self.ops)
                    buf = op(buf)
                    names.append(name)
                    sized = sized or name == "size-field"
                    if len(buf) > MAX_INPUT:
                        del buf[MAX_INPUT:]
                data = bytes(buf)
                how = f"seed {seed.origin}: {'+'.join(names)}"
                if not sized and rng.random() < 0.45:
                    data = self.target.reframe(data)
                    how += "+refit"
        verify = not self.target.checksums or rng.random() < 0.5
        return Input(data, sender, verify, self._chunks(len(data)), how)

    def _chunks(self, n: int) -> list[int]:
        rng = self.rng
        if n <= 1:
            return [n] if n else []
        r = rng.random()
        if r < 0.25 and n <= 512:
            return [1] * n
        if r < 0.6 and n <= 8192:
            out = []
            left = n
            while left:
                k = min(left, rng.randint(1, 17))
                out.append(k)
                left -= k
            return out
        cuts = sorted(set(rng.randrange(1, n) for _ in range(rng.randint(1, min(n - 1, 64)))))
        edges = [0, *cuts, n]
        return [b - a for a, b in zip(edges, edges[1:], strict=False)]

    def _pos(self, buf: bytearray, end: bool = False) -> int:
        return self.rng.randrange(len(buf) + (1 if end else 0)) if buf or end else 0

    def _bitflip(self, buf: bytearray) -> bytearray:
        if buf:
            for _ in range(self.rng.choice((1, 1, 1, 2, 4, 8))):
                bit = self.rng.randrange(len(buf) * 8)
                buf[bit // 8] ^= 1 << (bit % 8)
        return buf

    def _bytes(self, buf: bytearray) -> bytearray:
        rng = self.rng
        if buf:
            for _ in range(rng.randint(1, 8)):
                value = rng.randrange(256) if rng.random() < 0.5 else rng.choice(_INTERESTING[1])
                buf[rng.randrange(len(buf))] = value
        return buf

    def _run(self, buf: bytearray) -> bytearray:
        rng = self.rng
        at = self._pos(buf, end=True)
        value = rng.choice((0x00, 0xFF, rng.randrange(256), buf[at] if at < len(buf) else 0))
        n = _log_uniform(rng, 1, 4096)
        if rng.random() < 0.5:
            buf[at:at] = bytes([value]) * n
        else:
            buf[at : at + n] = bytes([value]) * min(n, len(buf) - at)
        return buf

    def _truncate(self, buf: bytearray) -> bytearray:
        if buf:
            rng = self.rng
            keep = (
                rng.randrange(len(buf))
                if rng.random() < 0.5
                else len(buf) - rng.randint(1, min(len(buf), 16))
            )
            del buf[keep:]
        return buf

    def _chop_front(self, buf: bytearray) -> bytearray:
        if buf:
            del buf[: self.rng.randint(1, min(len(buf), 16))]
        return buf

    def _insert(self, buf: bytearray) -> bytearray:
        rng = self.rng
        at = self._pos(buf, end=True)
        if buf and rng.random() < 0.4:
            start = rng.randrange(len(buf))
            piece = bytes(buf[start : start + rng.randint(1, 64)])
        else:
            piece = rng.randbytes(rng.randint(1, 32))
        buf[at:at] = piece
        return buf

    def _delete(self, buf: bytearray) -> bytearray:
        if buf:
            at = self._pos(buf)
            del buf[at : at + self.rng.randint(1, min(64, len(buf)))]
        return buf

    def _value(self, width: int, length: int) -> int:
        rng = self.rng
        if rng.random() < 0.3:
            value = length + rng.choice((-8, -4, -2, -1, 0, 1, 2, 4, 8))
        else:
            value = rng.choice(_INTERESTING[width])
        return value % (1 << (8 * width))

    def _size_field(self, buf: bytearray) -> bytearray:
        fields = self.target.size_fields(bytes(buf))
        if not fields:
            return self._integer(buf)
        at, width = self.rng.choice(fields)
        buf[at : at + width] = self._value(width, len(buf)).to_bytes(width, "big")
        return buf

    def _integer(self, buf: bytearray) -> bytearray:
        rng = self.rng
        width = rng.choice((1, 2, 2, 4, 4, 4, 8))
        if len(buf) < width:
            return buf
        at = rng.randrange(len(buf) - width + 1)
        if rng.random() < 0.5:
            at -= at % width
        order: Literal["little", "big"] = "little" if rng.random() < 0.2 else "big"
        buf[at : at + width] = self._value(width, len(buf) - at).to_bytes(width, order)
        return buf

    def _splice(self, buf: bytearray) -> bytearray:
        other = self.rng.choice(self.seeds).data
        i = self._pos(buf, end=True)
        j = self.rng.randrange(len(other) + 1)
        return buf[:i] + other[j:]

    def _concat(self, buf: bytearray) -> bytearray:
        other = self.rng.choice(self.seeds).data
        return buf + other if self.rng.random() < 0.7 else bytearray(other) + buf

    def _swap(self, buf: bytearray) -> bytearray:
        if len(buf) < 4:
            return buf
        rng = self.rng
        n = rng.randint(1, max(1, min(32, len(buf) // 2)))
        a = rng.randrange(len(buf) - n + 1)
        b = rng.randrange(len(buf) - n + 1)
        first, second = bytes(buf[a : a + n]), bytes(buf[b : b + n])
        buf[a : a + n] = second
        buf[b : b + n] = first
        return buf


# ---------------------------------------------------------------------------- running one input


@dataclasses.dataclass(slots=True)
class Outcome:
    problems: list[Problem]
    decoded: bool
    peaks: dict[str, int]
    allowance: int


class Runner:
    """Runs one input through every stage; with `trace`, records each stage's peak."""

    def __init__(self, target: Target) -> None:
        self.target = target

    def run(self, inp: Input, trace: bool = False) -> Outcome:
        target = self.target
        problems: list[Problem] = []
        peaks: dict[str, int] = {}
        allowance = 0

        def stage(name: str, fn: Callable[[], Any]) -> tuple[bool, Any]:
            """Run `fn`; (True, result), or (False, None) after DecodeError or a problem."""
            if trace:
                tracemalloc.reset_peak()
                base = tracemalloc.get_traced_memory()[0]
            try:
                return True, fn()
            except target.decode_error:
                return False, None
            except RoundTripDiff as d:
                problems.append(self._diff(d.stage, d.original, d.again))
                return False, None
            except InputTimeout:
                raise
            except Exception as e:  # RecursionError and MemoryError included
                problems.append(_exception(name, e))
                return False, None
            finally:
                if trace:
                    peak = tracemalloc.get_traced_memory()[1] - base
                    peaks[name] = max(peaks.get(name, 0), peak)

        ok, decoded = stage("decode", lambda: target.decode(inp.data, inp.sender, inp.verify))
        if ok:
            allowance = target.sub_allowance(decoded)

            def roundtrip() -> None:
                for name, original, again in target.roundtrips(decoded, inp.data):
                    if again != original:
                        problems.append(self._diff(name, original, again))

            def encode() -> None:
                try:
                    roundtrip()
                except target.encode_error as e:
                    problems.append(
                        Problem(
                            "roundtrip",
                            "encode",
                            f"encode: {type(decoded).__name__} decodes but does not encode",
                            f"{type(e).__name__}: {e}",
                        )
                    )

            stage("encode", encode)
            for name, fn in target.sub_decodes(decoded):
                stage(name, fn)
        whole = self._read(inp, [len(inp.data)] if inp.data else [], stage, "reader")
        chunked = self._read(inp, inp.chunks, stage, "reader-chunked")
        if (
            whole is not None
            and chunked is not None
            and not (_same(whole[0], chunked[0]) and whole[1] == chunked[1])
        ):
            problems.append(self._reader_diff(whole, chunked))
        return Outcome(problems, ok, peaks, allowance)

    def _diff(self, stage: str, original: bytes, again: bytes) -> Problem:
        at = _first_diff(original, again)
        detail = (
            f"{len(original)} bytes re-encode as {len(again)}; first difference at byte {at}:"
            f" {original[at : at + 12].hex()} -> {again[at : at + 12].hex()}"
        )
        known = self.target.known
        if known is not None and known[1](original, again):
            return Problem("known", stage, f"{stage}: {known[0]}", detail)
        return Problem("roundtrip", stage, f"{stage}: bytes differ", detail)

    def _reader_diff(
        self,
        whole: tuple[list[Any], tuple[Any, ...] | None],
        chunked: tuple[list[Any], tuple[Any, ...] | None],
    ) -> Problem:
        detail = (
            f"whole: {len(whole[0])} items, end {whole[1]}; chunked: {len(chunked[0])} items,"
            f" end {chunked[1]}"
        )
        what = "items" if not _same(whole[0], chunked[0]) else "end"
        return Problem("reader", "reader-chunked", f"reader-chunked: {what} differ", detail)

    def _read(
        self,
        inp: Input,
        chunks: list[int],
        stage: Callable[[str, Callable[[], Any]], tuple[bool, Any]],
        name: str,
    ) -> tuple[list[Any], tuple[Any, ...] | None] | None:
        """Feed the chunks, iterate after each, then finish: (items, how it ended), or None
        when something other than DecodeError was raised (a problem already recorded)."""
        target = self.target
        items: list[Any] = []
        end: list[tuple[Any, ...] | None] = [None]

        def go() -> None:
            reader = target.new_reader(inp.sender, inp.verify)
            at = 0
            try:
                for n in chunks:
                    reader.feed(inp.data[at : at + n])
                    at += n
                    for item in target.read_items(reader):
                        items.append(item)
                target.finish(reader)
            except target.decode_error as e:
                end[0] = (
                    type(e).__name__,
                    getattr(e, "field", None),
                    getattr(e, "offset", None),
                    getattr(e, "stream_offset", None),
                )

        ok, _ = stage(name, go)
        if not ok:
            return None
        if name == "reader":
            for item in items:
                for check, fn in target.item_checks(item):
                    stage(check, fn)
        return items, end[0]


# ---------------------------------------------------------------------------- minimizing


def minimize(
    target: Target, runner: Runner, inp: Input, signature: str, budget_seconds: float
) -> bytes | None:
    """The smallest input found by deleting blocks that still fails with `signature`."""
    deadline = time.monotonic() + budget_seconds

    def chunking(data: bytes) -> list[int] | None:
        for chunks in ([len(data)] if data else [], [1] * len(data)):
            trial = Input(data, inp.sender, inp.verify, chunks, inp.how)
            if any(p.signature == signature for p in runner.run(trial).problems):
                return chunks
        return None

    if chunking(inp.data) is None:
        return None
    best = inp.data
    n = 2
    while len(best) >= 2 and time.monotonic() < deadline:
        size = max(1, math.ceil(len(best) / n))
        reduced = False
        for start in range(0, len(best), size):
            if time.monotonic() >= deadline:
                break
            candidate = best[:start] + best[start + size :]
            for trial in (candidate, target.reframe(candidate)):
                if chunking(trial) is not None:
                    best, reduced = trial, True
                    break
            if reduced:
                break
        if reduced:
            n = max(2, n - 1)
        elif size == 1:
            break
        else:
            n = min(len(best), n * 2)
    return best


# ---------------------------------------------------------------------------- the loop


def _traced(runner: Runner, inp: Input, timeout: float) -> Outcome:
    """The input run again under tracemalloc, in a forked child: tracemalloc started and
    stopped around deeply recursive decoding leaks memory in CPython 3.11 (about 200 KB an
    input of 0-9-1 tables nested 200 deep), and the child takes that with it."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: measure, report the peaks, leave without cleaning up
        try:
            os.close(read_end)
            signal.setitimer(signal.ITIMER_REAL, timeout)
            tracemalloc.start()
            outcome = runner.run(inp, trace=True)
            report = json.dumps({"peaks": outcome.peaks, "allowance": outcome.allowance})
            os.write(write_end, report.encode())
        except BaseException:  # a timeout: nothing measured
            pass
        finally:
            os._exit(0)
    os.close(write_end)
    chunks = []
    with os.fdopen(read_end, "rb") as pipe:
        while chunk := pipe.read(65536):
            chunks.append(chunk)
    os.waitpid(pid, 0)
    if not chunks:
        return Outcome([], False, {}, 0)
    report = json.loads(b"".join(chunks))
    return Outcome([], True, report["peaks"], report["allowance"])


def _maxrss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise InputTimeout()


def fuzz_version(
    target: Target,
    inputs: int,
    seed: int,
    alloc_every: int,
    timeout: float,
    show: int,
    progress: Callable[[str], None],
    minimize_seconds: float = 10.0,
) -> Stats:
    """Fuzz one version; `show` failures of each kind are minimized, for up to
    `minimize_seconds` each."""
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        return _fuzz(target, inputs, seed, alloc_every, timeout, show, progress, minimize_seconds)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _fuzz(
    target: Target,
    inputs: int,
    seed: int,
    alloc_every: int,
    timeout: float,
    show: int,
    progress: Callable[[str], None],
    minimize_seconds: float,
) -> Stats:
    rng = random.Random(f"{seed}:{target.name}")
    stats = Stats(target.name)
    seeds = target.seeds(rng)
    stats.seeds = len(seeds)
    mutator = Mutator(target, seeds, rng)
    runner = Runner(target)
    started = time.monotonic()
    next_report = started + 5.0
    limit_alloc = 10
    for i in range(inputs):
        inp = mutator.next()
        rss = _maxrss()
        signal.setitimer(signal.ITIMER_REAL, timeout)
        t0 = time.perf_counter()
        try:
            outcome = runner.run(inp)
            timed_out = False
        except InputTimeout:
            outcome = Outcome([], False, {}, 0)
            timed_out = True
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        elapsed = time.perf_counter() - t0
        stats.inputs += 1
        stats.decoded += outcome.decoded
        stats.slowest = max(stats.slowest, elapsed)
        kinds = {p.kind for p in outcome.problems}
        stats.non_decode_error += "exception" in kinds
        stats.roundtrip_diffs += "roundtrip" in kinds
        stats.reader_diffs += "reader" in kinds
        stats.known += "known" in kinds
        grouped: dict[tuple[str, str], tuple[str, set[str]]] = {}
        for problem in outcome.problems:
            detail, stages = grouped.setdefault(
                (problem.kind, problem.signature), (problem.detail, set())
            )
            stages.add(problem.stage)
        for (kind, signature), (detail, stages) in grouped.items():
            _note(stats, kind, signature, detail, inp, stages)
        if timed_out or elapsed > SLOW_SECONDS:
            stats.slow += 1
            what = f"over the {timeout:g} s timeout" if timed_out else f"{elapsed:.2f} s"
            finding = _note(stats, "slow", f"slow: {inp.how.split(':')[0]}", what, inp, set())
            finding.seconds = max(finding.seconds or 0.0, elapsed)
        measure = (
            i % alloc_every == 0
            or elapsed > TRACE_AFTER_SECONDS
            or _maxrss() - rss > RSS_JUMP_KIB
            or "exception" in kinds
        )
        # a stack overflow is reported already, and tracing it costs 100 ms
        recursed = any(p.signature.startswith("RecursionError") for p in outcome.problems)
        if measure and not timed_out and not recursed:
            traced = _traced(runner, inp, timeout)
            stats.alloc_measured += 1
            base_limit = limit_alloc * len(inp.data) + MIB
            over = []
            for name, peak in traced.peaks.items():
                allowed = base_limit + (traced.allowance if name == "records" else 0)
                if peak > allowed:
                    over.append((peak - allowed, name, peak, allowed))
            if over:
                stats.big_alloc += 1
                _, name, peak, allowed = max(over)
                finding = _note(
                    stats,
                    "alloc",
                    f"alloc: {name}",
                    f"{name} peaked at {peak:,} bytes for a {len(inp.data):,}-byte input"
                    f" (limit {allowed:,})",
                    inp,
                    {name},
                )
                finding.peak = max(finding.peak or 0, peak)
        now = time.monotonic()
        if now >= next_report or i + 1 == inputs:
            next_report = now + 5.0
            rate = (i + 1) / max(now - started, 1e-9)
            progress(
                f"{target.name}: {i + 1:,}/{inputs:,} inputs ({rate:,.0f}/s),"
                f" {stats.decoded:,} decoded, non-DecodeError {stats.non_decode_error},"
                f" roundtrip {stats.roundtrip_diffs}, reader {stats.reader_diffs},"
                f" slow {stats.slow}, big alloc {stats.big_alloc}, known {stats.known}"
            )
    stats.seconds = time.monotonic() - started
    # minimized repros for the first few exceptions and differences
    for kind in MINIMIZED:
        firsts = [f for f in stats.findings.values() if f.kind == kind][:show]
        for finding in firsts:
            if len(finding.input) > 4096 and not finding.how.startswith(("seed", "random")):
                continue  # a crafted structure: deleting bytes only breaks it; `how` says what it is
            inp = Input(finding.input, finding.sender, finding.verify, finding.chunks, finding.how)
            finding.repro = minimize(target, runner, inp, finding.signature, minimize_seconds)
    return stats


def _note(
    stats: Stats, kind: str, signature: str, detail: str, inp: Input, stages: set[str]
) -> Finding:
    """Count one input under its failure; keep the smallest input of each for minimizing."""
    key = f"{kind}|{signature}"
    finding = stats.findings.get(key)
    if finding is None or (len(inp.data) < len(finding.input) and kind in MINIMIZED):
        old = finding
        finding = stats.findings[key] = Finding(
            kind, signature, detail, 0, inp.data, inp.sender, inp.verify, inp.chunks, inp.how
        )
        if old is not None:
            finding.count, finding.stages = old.count, old.stages
    finding.stages |= stages
    finding.count += 1
    return finding


MINIMIZED = ("exception", "roundtrip", "reader", "known")


# ---------------------------------------------------------------------------- reporting

COLUMNS = (
    "version",
    "inputs",
    "non-DecodeError",
    "roundtrip diffs",
    "reader diffs",
    "slow",
    "big alloc",
)


def table(results: list[Stats]) -> str:
    rows = [
        [
            s.version,
            f"{s.inputs:,}",
            str(s.non_decode_error),
            str(s.roundtrip_diffs),
            str(s.reader_diffs),
            str(s.slow),
            str(s.big_alloc),
        ]
        for s in results
    ]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(COLUMNS)]
    lines = [" | ".join(c.ljust(w) for c, w in zip(COLUMNS, widths, strict=True))]
    lines.append("-+-".join("-" * w for w in widths))
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        lines.append(" | ".join(cells))
    return "\n".join(lines)


def details(results: list[Stats], show: int) -> str:
    out: list[str] = []
    for s in results:
        out.append(
            f"{s.version}: {s.seeds} seeds, {s.inputs:,} inputs in {s.seconds:.1f} s,"
            f" {s.decoded:,} decoded whole, {s.alloc_measured:,} measured for allocations,"
            f" slowest input {s.slowest * 1000:.1f} ms"
        )
        for kind, title in (
            ("exception", "exception other than DecodeError"),
            ("roundtrip", "round-trip difference"),
            ("reader", "reader difference"),
            ("slow", "slow input"),
            ("alloc", "big allocation"),
            ("known", "KNOWN fault, not in the table"),
        ):
            found = [f for f in s.findings.values() if f.kind == kind]
            for f in found[:show]:
                stages = f" in {', '.join(sorted(f.stages))}" if f.stages else ""
                out.append(f"  {title}: {f.signature} ({f.count} inputs{stages})")
                out.append(f"    {f.detail}")
                out.append(f"    sender {f.sender}, verify_checksums {f.verify}; input: {f.how}")
                if f.repro is not None:
                    out.append(
                        f"    minimized repro ({len(f.repro)} bytes): {compact_hex(f.repro)}"
                    )
                else:
                    out.append(f"    input ({len(f.input)} bytes): {compact_hex(f.input)}")
            if len(found) > show:
                out.append(f"  ... {len(found) - show} more kinds of {title} (see --json)")
    return "\n".join(out)


# ---------------------------------------------------------------------------- CLI


def select(names: Sequence[str] | None) -> list[SpecVersion]:
    versions = registry()
    if not names:
        chosen = versions
    else:
        chosen = []
        for name in names:
            matched = [
                v
                for v in versions
                if name
                in (
                    v.qualified,
                    v.protocol,
                    v.package,
                    f"{v.package}.{v.module}",
                    f"{v.package}/{v.module}",
                    v.import_name,
                )
            ]
            if not matched:
                known = ", ".join(v.qualified for v in versions)
                raise SystemExit(f"fuzz: unknown version {name!r}; known: {known}")
            chosen += [v for v in matched if v not in chosen]
    missing = sorted({v.protocol for v in chosen} - set(ADAPTERS))
    if missing:
        raise SystemExit(
            f"fuzz: no adapter for protocol(s) {', '.join(missing)}: add one to ADAPTERS"
        )
    return chosen


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--inputs", type=int, default=200_000, help="inputs per version")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--versions", nargs="*", help="versions or protocols (default: all)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--alloc-every", type=int, default=16, help="trace every Nth input")
    parser.add_argument(
        "--timeout", type=float, default=30.0, help="seconds before an input is stopped"
    )
    parser.add_argument(
        "--show",
        type=int,
        default=3,
        help="findings of each kind shown (and minimized) per version",
    )
    parser.add_argument(
        "--minimize-seconds", type=float, default=10.0, help="time to minimize each repro"
    )
    parser.add_argument(
        "--memory-limit-mb",
        type=int,
        default=4096,
        help="address-space limit for this process (0: none), so a runaway allocation is a "
        "MemoryError instead of a machine out of memory",
    )
    args = parser.parse_args(argv)
    specs = select(args.versions)
    if args.memory_limit_mb:
        limit = args.memory_limit_mb * MIB
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    started = time.monotonic()
    results: list[Stats] = []
    for spec in specs:
        target = ADAPTERS[spec.protocol](spec)
        results.append(
            fuzz_version(
                target,
                args.inputs,
                args.seed,
                args.alloc_every,
                args.timeout,
                args.show,
                progress,
                args.minimize_seconds,
            )
        )
    wall = time.monotonic() - started
    print(table(results))
    print()
    print(details(results, args.show))
    known = [s for s in results if s.known]
    if known:
        print()
        print("known faults, counted apart from the table:")
        for s in known:
            print(f"  {s.version}: {s.known} inputs")
    print(f"\n{sum(s.inputs for s in results):,} inputs in {wall:.1f} s (seed {args.seed})")
    if args.json is not None:
        payload = {
            "seed": args.seed,
            "inputs_per_version": args.inputs,
            "wall_seconds": round(wall, 1),
            "versions": [
                {
                    "version": s.version,
                    "inputs": s.inputs,
                    "non_decode_error": s.non_decode_error,
                    "roundtrip_diffs": s.roundtrip_diffs,
                    "reader_diffs": s.reader_diffs,
                    "slow": s.slow,
                    "big_alloc": s.big_alloc,
                    "known_faults": s.known,
                    "decoded": s.decoded,
                    "alloc_measured": s.alloc_measured,
                    "seeds": s.seeds,
                    "seconds": round(s.seconds, 1),
                    "slowest_input_seconds": round(s.slowest, 4),
                    "findings": [f.as_json() for f in s.findings.values()],
                }
                for s in results
            ],
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    return 1 if any(s.failed() for s in results) else 0


if __name__ == "__main__":
    sys.exit(main())
