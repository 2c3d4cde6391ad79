"""The decode's `violations` cells, looked up by class or by the values its rules read
(`columns._Cells`), are the cells the rules give when each message is read whole.

Every message of every shipped sample, as its sender sent it and as the other peer (so the
sender rules break too), and the same messages with a rule-bearing field changed to values that
break its rules and to values of another type that compare equal (True against 1).
"""

from __future__ import annotations

import contextlib
import copy
import importlib
from pathlib import Path
from typing import Any

import pytest
from compiled_bytes import SAMPLES  # each sample folder's codec version

from specgen.pipeline.columns import _Cells, _violations

ROOT = Path(__file__).resolve().parent.parent


def _messages(folder: str, version: str) -> list[tuple[str, Any]]:
    codec = importlib.import_module(f"specgen_codecs.{version}")
    out = []
    for path in sorted((ROOT / "samples" / folder).glob("session-*/*.bin")):
        sender = "client" if path.name.endswith(".c2s.bin") else "server"
        data = path.read_bytes()
        reader = codec.FrameReader(sender=sender, preamble=data.startswith(b"AMQP"))
        reader.feed(data)
        try:
            for msg in reader:
                out.append((sender, msg))
        except codec.DecodeError:
            pass  # a sample's bytes that are not frames (0-8's octets after a frame): enough read
    return out


def _with(obj: Any, path: str, value: Any) -> Any:
    """A copy of `obj` with the value at the attribute path `path` replaced (the structures on
    the way copied too); None where the path runs through a list."""
    head, _, rest = path.partition(".")
    out = copy.copy(obj)
    if not rest:
        setattr(out, head, value)
        return out
    inner = getattr(obj, head)
    if inner is None or isinstance(inner, list):
        return None
    changed = _with(inner, rest, value)
    if changed is None:
        return None
    setattr(out, head, changed)
    return out


def _at(obj: Any, path: str) -> Any:
    for name in path.split("."):
        obj = getattr(obj, name, None)
    return obj


def _changed(msg: Any, rules: Any) -> list[Any]:
    """`msg` with the value at each path a rule reads set to values that break rules and to
    equal values of another type, and with each structure on a longer path set to None."""
    out = []
    paths = {r.field for r in rules.RULES.get(type(msg).__name__, ()) if r.field}
    for path in sorted(paths):
        original = _at(msg, path)
        # values of the field's own type, and for numbers one of the other type that equals it
        if isinstance(original, str):
            values: list[Any] = ["", "x" * 300, "bad name!", "ok-name"]
        elif isinstance(original, bytes):
            values = [b"", b"x" * 300]
        elif isinstance(original, bool):
            values = [True, False, 1, 0]
        elif isinstance(original, int):
            values = [0, 1, 2, 3, True, False, -1, 2**40]
        else:
            values = [None]
        for value in values:
            try:
                changed = _with(msg, path, value)
            except (AttributeError, TypeError):
                continue
            if changed is not None:
                out.append(changed)
        if "." in path:  # a structure on the way absent: the rules read the message whole
            with contextlib.suppress(AttributeError, TypeError):
                out.append(_with(msg, path.split(".")[0], None))
    return out


@pytest.mark.parametrize(("folder", "version"), sorted(SAMPLES.items()))
def test_cells_by_class_and_by_value_equal_the_rules_read_whole(folder: str, version: str) -> None:
    rules = importlib.import_module(f"specgen_codecs.{version}.rules")
    messages = _messages(folder, version)
    assert messages
    cells = {s: _Cells(rules, s) for s in ("client", "server")}
    compared = 0
    for _, msg in messages:
        for peer in ("client", "server"):  # as sent, and as the other peer (sender rules break)
            for m in [msg, *_changed(msg, rules)]:
                for _ in range(2):  # the second time from the memo
                    assert cells[peer](m) == _violations(rules.violations(m, peer)), (
                        type(m).__name__,
                        peer,
                    )
                    compared += 1
    memoized = sum(len(getattr(c, "memo", ())) for s in cells.values() for c in s.known.values())
    assert compared > 100
    if folder in ("amqp-0-9-1", "rabbitmq-stream"):
        assert memoized  # these samples' classes have rules on their own fields' values
    if folder == "rabbitmq-stream":  # DeliverV1's rule reads osiris_chunk.chunk_type: a path
        paths = [
            f for s in cells.values() for c in s.known.values() for f in getattr(c, "fields", [])
        ]
        assert any("." in f for f in paths)
