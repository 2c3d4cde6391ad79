"""Versions that lay a message out alike share its code: one class in the package's shared
module, imported by every version, with a `Spec:` line per version, encoding as each version does.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from types import ModuleType

import pytest
from test_generated_surface import shared_modules

from specgen.emitters.sharing import block, shared
from specgen.specs import ROOT, SpecVersion, registry

PACKAGES: dict[str, list[SpecVersion]] = {}
for _spec in registry():
    PACKAGES.setdefault(_spec.package, []).append(_spec)
WITH_SHARED = sorted(p for p in PACKAGES if (ROOT / "generated" / p / "shared.py").is_file())


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"specgen_codecs.{name}")


def test_blocks_alike_in_every_version_are_shared_with_what_they_call() -> None:
    helper = "def _decode_x(at):\n    return at\n"
    other = "def _decode_x(at):\n    return at + 1\n"
    uses = "def _decode_m(at):\n    return _decode_x(at)\n"
    alone = "class Ping:\n    pass\n"
    first = [block("named", "x", helper), block("message", "M", uses), block("message", "P", alone)]
    second = [block("named", "x", other), block("message", "M", uses), block("message", "P", alone)]
    # M reads the same, but calls an _decode_x that differs: only P is the same code
    assert shared([first, second]) == {("message", "P")}
    assert shared([first, first]) == {("named", "x"), ("message", "M"), ("message", "P")}
    assert shared([first]) == set()  # one version: nothing to share


def test_blocks_are_compared_by_layout_not_by_the_specs_words() -> None:
    """A class whose versions differ only in prose is shared; one whose bytes differ is not."""
    worded = 'class Ping:\n    """Ping the peer."""\n'
    reworded = 'class Ping:\n    """Check the peer is alive."""\n'
    layout = "class Ping:\n    pass\n"
    first = [block("message", "P", worded, layout)]
    assert shared([first, [block("message", "P", reworded, layout)]]) == {("message", "P")}
    other = "class Ping:\n    KEY = 2\n"
    assert shared([first, [block("message", "P", worded, other)]]) == set()


def test_amqp_0_9_1_versions_share_what_they_lay_out_alike() -> None:
    # the packages listed from generated/: a regeneration that stopped sharing fails here
    assert "amqp_0_9_1" in WITH_SHARED
    v0_9_1, rabbitmq = _module("amqp_0_9_1.v0_9_1"), _module("amqp_0_9_1.rabbitmq")
    common = _module("amqp_0_9_1.shared")
    assert v0_9_1.QueueDeclare is rabbitmq.QueueDeclare is common.QueueDeclare
    # RabbitMQ's XML names exchange.declare's reserved bits auto-delete and internal
    assert v0_9_1.ExchangeDeclare is not rabbitmq.ExchangeDeclare
    assert not hasattr(common, "ExchangeDeclare")
    # what RabbitMQ's XML adds stays with it
    assert hasattr(rabbitmq, "BasicNack") and not hasattr(v0_9_1, "BasicNack")
    msg = rabbitmq.QueueDeclare(0, "q1", False, True, False, False, False, {}, channel=3)
    frame = bytes.fromhex("01 0003 0000000e 0032 000a 0000 02 7131 02 00000000 ce")
    assert v0_9_1.encode(msg) == rabbitmq.encode(msg) == msg.encode() == frame
    for version in (v0_9_1, rabbitmq):
        back = version.decode(frame)
        assert type(back) is common.QueueDeclare and back == msg


@pytest.mark.parametrize("package", WITH_SHARED)
def test_shared_classes_dispatch_and_frame_in_every_version(package: str) -> None:
    common = _module(f"{package}.shared")
    versions = [_module(f"{package}.{s.module}") for s in PACKAGES[package]]
    shared_messages = [
        getattr(common, n) for n in common.__all__ if hasattr(getattr(common, n), "IDENT")
    ]
    assert shared_messages
    for cls in shared_messages:
        for version in versions:
            assert getattr(version, cls.__name__) is cls
            assert cls in version.commands._ENCODERS


@pytest.mark.parametrize("package", WITH_SHARED)
def test_every_version_dispatches_the_shared_rows_as_the_shared_module_lists_them(
    package: str,
) -> None:
    # a version's tables start with the shared module's rows instead of listing them again:
    # each shared identity reaches the shared decoder, each shared class its encoders
    common = _module(f"{package}.shared")
    for version in (_module(f"{package}.{s.module}") for s in PACKAGES[package]):
        tables = version.commands
        assert common._DECODERS.items() <= tables._DECODERS.items()
        assert common._ENCODERS.items() <= tables._ENCODERS.items()
        assert common._FRAMES.items() <= tables._FRAMES.items()
        for when, rows in getattr(common, "_KEYED", {}).items():
            assert rows.items() <= tables._KEYED[when][1].items()
        assert getattr(common, "_UNKEYED", {}).items() <= getattr(tables, "_UNKEYED", {}).items()
        assert getattr(common, "_ONE", {}).items() <= getattr(tables, "_ONE", {}).items()


@pytest.mark.parametrize("package", WITH_SHARED)
def test_shared_classes_name_every_versions_spec(package: str) -> None:
    documents = [s.document for s in PACKAGES[package]]
    classes = [
        n
        for path in shared_modules(package)
        for n in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(n, ast.ClassDef)
    ]
    checked = 0
    for node in classes:
        spans = re.findall(r"Spec: (\S+):(\d+):\d+ \((\S+)\)", ast.get_docstring(node) or "")
        if not spans:
            continue  # a structure: its message says where
        checked += 1
        assert [path for path, _, _ in spans] == [
            Path(d).relative_to(ROOT).as_posix() for d in documents
        ]
        assert [v for _, _, v in spans] == [s.version for s in PACKAGES[package]]
        # the line names the message (Queue.DeclareOk: declare-ok; a class's content header
        # Basic.Properties: basic), and each version's spec says the same there
        command = next(
            s.value.value
            for s in node.body
            if isinstance(s, ast.AnnAssign)
            and isinstance(s.target, ast.Name)
            and s.target.id == "COMMAND"
            and isinstance(s.value, ast.Constant)
        )
        names = [re.sub(r"(?<=[a-z])([A-Z])", r"-\1", p).lower() for p in command.split(".")]
        lines = set()
        for path, line, _ in spans:
            text = (ROOT / path).read_text(encoding="utf-8").splitlines()[int(line) - 1]
            assert any(n in text.lower() for n in names), f"{node.name}: {path}:{line}: {text}"
            lines.add(text.strip())
        assert len(lines) == 1, f"{node.name}: {sorted(lines)}"
    assert checked > 10


def test_frames_table_types_are_shared_where_the_versions_agree() -> None:
    pytest.importorskip("pyarrow")
    old = _module("amqp_0_9_1.v0_9_1.spark_schema")
    new = _module("amqp_0_9_1.rabbitmq.spark_schema")
    types = _module("amqp_0_9_1.shared_spark")
    common = _module("amqp_0_9_1.shared")
    # one column type, in shared_spark, for a method laid out alike; one column builder, the
    # runtime's, for every protocol
    assert old.QUEUE_DECLARE is new.QUEUE_DECLARE is types.QUEUE_DECLARE
    runtime = _module("arrow_columns")
    streams = _module("rabbitmq_stream.v4_0.spark_schema")
    assert old.build_columns is new.build_columns is streams.build_columns
    assert old.build_columns is runtime.build_columns
    assert "build_columns" not in vars(types)
    for schema in (old, new):
        assert schema.FRAMES_SCHEMA.field("queue_declare").type == types.QUEUE_DECLARE
    # a class each version lays out its own way keeps its own type
    assert "EXCHANGE_DECLARE" not in vars(types)
    assert old.EXCHANGE_DECLARE != new.EXCHANGE_DECLARE
    msg = common.QueueDeclare(0, "q1", False, True, False, False, False, {"k": "v"}, channel=3)
    for schema in (old, new):
        row = schema.message_columns([msg])["queue_declare"].to_pylist()
        assert row == [
            {
                "reserved1": 0,
                "queue": "q1",
                "passive": False,
                "durable": True,
                "exclusive": False,
                "auto_delete": False,
                "no_wait": False,
                "arguments": '{"k": "v"}',
            }
        ]


def test_a_block_reads_only_the_names_no_function_of_it_binds() -> None:
    """A parameter, a local or a comprehension's target is not a name the module must import:
    AMQP 0-9's dtx.start has a field `join`, which once imported the records module's join
    into a package that has none."""
    text = (
        "class DtxStart:\n"
        "    def __init__(self, join: bool = False, *rest: int, **more: int) -> None:\n"
        "        self.join = join\n"
        "        total = sum(x for x in rest)\n"
        "        self.n = total + len([k for k in more])\n"
        "def pack(parts: list[bytes]) -> bytes:\n"
        "    return join(parts, compress)\n"
    )
    uses = block("message", "DtxStart", text).uses
    assert {"join", "compress", "sum", "len", "bool", "int", "bytes", "list"} <= uses
    assert not {"self", "rest", "more", "total", "x", "k", "parts"} & uses
    inner = block("message", "X", "def f(join: int) -> int:\n    return join + 1\n").uses
    assert "join" not in inner
