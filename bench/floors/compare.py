"""Whether a floor's result is the generated codec's, field by field.

The floors build objects of their own classes, so `==` cannot compare them with the generated
ones. `differences(floor, generated)` walks both: a class of either side must be matched by a
class of the same name on the other, with the same fields in the same order (the generated
class's dataclass fields that `__init__` takes, or its named slots; the floor class's named
slots), each field compared in turn; a slot the floor keeps under a private name (AMQP 1.0's
`_wire`, the encodings seen) is compared with the generated object's attribute of that name. A
value type of each side's own (`UInt`, `Symbol`, `Table`, an enum) is compared by name and
value, and by its own fields (a `Table`'s `constructors`). Builtin values (int, str, bytes,
lists, dicts, `Decimal`, `UUID`...) must be of the same type and equal; lists and dicts are
compared item by item and key by key, in order. A floor that hands back a generated object is a
difference too.

This module imports nothing of specgen's: it reads the generated objects' fields through
`dataclasses` and their slots.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

GENERATED = "specgen_codecs"
_MISSING = object()


def _slots(cls: type) -> list[str]:
    """Every slot name of `cls` and its bases (builtins' left out), bases first."""
    out: list[str] = []
    for klass in reversed(cls.__mro__):
        if klass.__module__ == "builtins":
            continue
        slots = klass.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in out and name not in ("__dict__", "__weakref__"):
                out.append(name)
    return out


def fields_of(obj: Any) -> list[str]:
    """The fields of an object of a class with fields: its dataclass fields that `__init__`
    takes, else its named slots (a private name, `_x`, is no field)."""
    if dataclasses.is_dataclass(obj):
        try:
            return [f.name for f in dataclasses.fields(obj) if f.init]
        except TypeError:
            pass
    return [name for name in _slots(type(obj)) if not name.startswith("_")]


def differences(floor: Any, generated: Any, where: str = "result") -> list[str]:
    """Where the floor's result `floor` differs from the generated codec's `generated`; an
    empty list when they agree field by field."""
    ftype, gtype = type(floor), type(generated)
    if ftype.__module__.split(".")[0] == GENERATED:
        return [f"{where}: the floor hands back the generated {ftype.__name__}"]
    if ftype.__name__ != gtype.__name__:
        return [
            f"{where}: the floor gives a {ftype.__name__}, the generated code a {gtype.__name__}"
        ]
    if ftype is gtype:  # builtin and standard library values
        if isinstance(floor, list | tuple | dict):
            return _items(floor, generated, where)
        if floor == generated:
            return []
        return [f"{where}: the floor gives {floor!r}, the generated code {generated!r}"]
    if isinstance(generated, enum.Enum):
        if isinstance(floor, enum.Enum) and (floor.name, floor.value) == (
            generated.name,
            generated.value,
        ):
            return []
        return [f"{where}: the floor gives {floor!r}, the generated code {generated!r}"]
    names = [name for name in _slots(ftype) if not name.startswith("_")]
    if names != fields_of(generated):
        return [f"{where}: the floor's fields {names} are not the generated {fields_of(generated)}"]
    out: list[str] = []
    if isinstance(generated, int | float | str | bytes):  # a value type (UInt, Symbol, ...)
        base = next(t for t in (bool, int, float, str, bytes) if isinstance(generated, t))
        if not isinstance(floor, base) or base(floor) != base(generated):
            out.append(f"{where}: the floor gives {floor!r}, the generated code {generated!r}")
    elif isinstance(generated, list | tuple | dict):  # a container type (Table, Array, ...)
        out += _items(floor, generated, where)
    for name in _slots(ftype):
        got = getattr(generated, name, _MISSING)
        if got is _MISSING:
            out.append(f"{where}.{name}: the generated object has no {name}")
            continue
        out += differences(getattr(floor, name), got, f"{where}.{name}")
    return out


def _items(floor: Any, generated: Any, where: str) -> list[str]:
    if isinstance(generated, dict):
        if not isinstance(floor, dict):
            return [f"{where}: the floor gives no mapping"]
        out = _items(list(floor), list(generated), f"{where}.keys()")
        if out:
            return out
        for (key, value), other in zip(floor.items(), generated.values(), strict=True):
            out += differences(value, other, f"{where}[{key!r}]")
        return out
    if not isinstance(floor, list | tuple) or len(floor) != len(generated):
        size = len(floor) if isinstance(floor, list | tuple) else "no"
        return [f"{where}: the floor gives {size} items, the generated code {len(generated)}"]
    return [
        e for i, (a, b) in enumerate(zip(floor, generated, strict=True))
        for e in differences(a, b, f"{where}[{i}]")
    ]  # fmt: skip
