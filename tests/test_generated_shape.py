"""What every generated class offers tools and readers, whatever its protocol: type hints that
resolve, the spec's mandatory fields typed as such, and no concept of another protocol."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import re
import typing
from types import ModuleType

import pytest

import specgen.locations  # noqa: F401  (specgen_codecs is generated/)
from specgen.specs import ROOT, registry

PACKAGES = sorted({spec.package for spec in registry()})


def _modules(package: str) -> list[ModuleType]:
    """Every non-test module of a generated package, its version packages' included; the
    Spark schema modules need pyarrow, which the codecs never do."""
    root = importlib.import_module(f"specgen_codecs.{package}")
    out = []
    for info in pkgutil.walk_packages(root.__path__, f"{root.__name__}."):
        name = info.name.rsplit(".", 1)[-1]
        if name.startswith("test_") or name in ("spark_schema", "shared_spark"):
            continue
        out.append(importlib.import_module(info.name))
    return out


@pytest.mark.parametrize("package", PACKAGES)
def test_type_hints_resolve_on_every_generated_class(package: str) -> None:
    """`typing.get_type_hints` is what dataclass tools, validators and IDEs read: it must not
    fail (0-10's raised NameError on uuid, imported only for type checkers)."""
    checked = 0
    for module in _modules(package):
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__:
                typing.get_type_hints(cls)
                checked += 1
    assert checked > 10


def test_amqp10_mandatory_fields_are_typed_mandatory() -> None:
    """What the spec marks mandatory has no None in its type and no default (1.0's Open)."""
    from specgen_codecs.amqp_1_0.v1_0 import commands as c

    hints = typing.get_type_hints(c.Open)
    assert hints["container_id"] is str
    assert type(None) in typing.get_args(hints["hostname"])
    fields = {f.name: f for f in dataclasses.fields(c.Flow)}
    assert fields["incoming_window"].default is dataclasses.MISSING
    assert inspect.signature(c.Flow).parameters["incoming_window"].default is inspect._empty
    assert inspect.signature(c.Flow).parameters["handle"].default is None


def test_no_protocol_carries_another_protocols_concepts() -> None:
    """Streams' command versions and checksums stay Streams': AMQP 0-9-1 has neither (its
    public `encode` takes `seal_checksums` as every protocol's does, for one API; none of its
    codecs carries it)."""
    from specgen_codecs.amqp_0_9_1 import v0_9_1
    from specgen_codecs.rabbitmq_stream import v4_0

    assert not hasattr(v0_9_1.QueueDeclare, "VERSION")
    assert v4_0.Credit.VERSION == 1
    package = ROOT / "generated" / "amqp_0_9_1"
    for path in [*package.glob("*.py"), *package.glob("*/commands.py")]:
        codecs = re.findall(r"^def _\w+\(([^)]*)\)", path.read_text(encoding="utf-8"), re.M)
        assert not [c for c in codecs if "checksums" in c], path.name
    queue = (package / "queue.py").read_text(encoding="utf-8")
    assert len(re.findall(r"^def _decode_queue_\w+\(", queue, re.M)) > 5
    # the server sends Deliver: its codec is in the module of the server's messages
    streams = (ROOT / "generated" / "rabbitmq_stream" / "v4_0" / "server.py").read_text()
    assert re.search(r"^def _decode_deliver_v1\([^)]*verify_checksums", streams, re.M)


def test_equality_is_dataclass_equality_whatever_the_field_count() -> None:
    """`==` compares the fields as a tuple, as @dataclass(eq=True) does: the same object in a
    field is equal to itself even when it is not `==` to itself (a NaN), one field or many."""
    from specgen_codecs.amqp_0_9_1 import v0_9_1

    nan = float("nan")
    one = v0_9_1.Heartbeat(channel=0)
    assert [f.name for f in dataclasses.fields(one) if f.compare] == ["channel"]
    one.channel = nan  # type: ignore[assignment]
    other = v0_9_1.Heartbeat(channel=0)
    other.channel = nan  # type: ignore[assignment]
    assert one == other
    many = v0_9_1.ConnectionTune(nan, 2, 3)  # type: ignore[arg-type]
    assert many == v0_9_1.ConnectionTune(nan, 2, 3)  # type: ignore[arg-type]
    assert many != v0_9_1.ConnectionTune(nan, 2, 4)  # type: ignore[arg-type]
