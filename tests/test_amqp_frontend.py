"""The AMQP 0-9-1 XML front-end against facts from outside it.

Independent checks: RabbitMQ's codegen JSON (every class and method id, every argument type,
the content-header properties, the constants) and pika's spec module (names, ids, field order,
and real frames pika marshals, decoded here by a small interpreter of the IR written from the
IR's documented meaning, not from the front-end). Then the front-end's own promises: bit
packing, the content header, the frame layout, findings with their lines, errors naming
file:line:column, and the IR round-tripping through dump/load.
"""

from __future__ import annotations

import calendar
import datetime
import decimal
import inspect
import json
import shutil
import struct
import tomllib
from pathlib import Path
from typing import Any

import pytest

from specgen.frontends import amqp_xml
from specgen.frontends.adoc import SpecError
from specgen.frontends.adoc_tree import SpecSyntaxError
from specgen.ir import (
    BUILTIN,
    Array,
    BitField,
    Bits,
    Blob,
    Choice,
    Field,
    Map,
    Message,
    Presence,
    Prim,
    Protocol,
    Ref,
    TypeRef,
    dump,
    load,
)
from specgen.specs import ROOT, build_ir, find

SPEC_DIR = ROOT / "specs" / "amqp-0-9-1"
CORPUS = Path("/work/shared/specs-corpus/amqp-0-9-1")
CODEGEN_JSON = CORPUS / "amqp-rabbitmq-0.9.1.json"
VERSIONS = ("0-9-1", "0-9-1-rabbitmq")


@pytest.fixture(scope="module")
def built() -> dict[str, tuple[Protocol, list[str]]]:
    out = {}
    for v in VERSIONS:
        proto, log = build_ir(find(f"amqp-0-9-1/{v}"))
        out[v] = (proto, [str(f) for f in log.items])
    return out


@pytest.fixture(scope="module")
def ext(built: dict[str, tuple[Protocol, list[str]]]) -> Protocol:
    return built["0-9-1-rabbitmq"][0]


@pytest.fixture(scope="module")
def std(built: dict[str, tuple[Protocol, list[str]]]) -> Protocol:
    return built["0-9-1"][0]


def methods(proto: Protocol) -> dict[tuple[int, ...], Message]:
    """Method messages by (class id, method id)."""
    return {c.ident: c.messages[0] for c in proto.commands if len(c.ident) == 2}


def flat(fields: tuple[Field, ...]) -> list[Field]:
    """Fields as the XML lists them: bit containers opened, their unused filler dropped."""
    out: list[Field] = []
    for f in fields:
        if isinstance(f.type, Bits):
            out.extend(m for m in f.type.members if m.type == BitField(1, boolean=True))
        else:
            out.append(f)
    return out


def amqp_type(f: Field) -> str:
    """A field's type in the XML's words (octet, short, ..., bit, table)."""
    t = f.type
    if isinstance(t, BitField):
        return "bit"
    if isinstance(t, Ref):
        return t.name
    assert isinstance(t, Prim)
    return {"uint8": "octet", "uint16": "short", "uint32": "long", "uint64": "longlong"}.get(
        t.name, t.name
    )


# --------------------------------------------------------------------------------------------
# Registry and vendored files


def test_registry_and_vendored_files() -> None:
    std_spec, ext_spec = find("amqp-0-9-1/0-9-1"), find("amqp-0-9-1/0-9-1-rabbitmq")
    assert (std_spec.module, ext_spec.module) == ("v0_9_1", "rabbitmq")
    assert find("amqp-0-9-1") == ext_spec and ext_spec.latest and not std_spec.latest
    assert std_spec.format == ext_spec.format == "amqp-xml"
    # the family's overlay only declares what other documents leave undeclared (0-9's
    # content): neither shipped document takes an entry from it
    assert std_spec.overlay is not None and std_spec.overlay.name == "overlay.json"
    assert build_ir(std_spec)[0].overlays == build_ir(ext_spec)[0].overlays == ()
    if not CORPUS.is_dir():
        pytest.skip("spec corpus not present")
    for name in ("amqp0-9-1.xml", "amqp0-9-1.extended.xml"):
        assert (SPEC_DIR / name).read_bytes() == (CORPUS / name).read_bytes()


# --------------------------------------------------------------------------------------------
# Against RabbitMQ's codegen JSON


@pytest.fixture(scope="module")
def codegen() -> dict[str, Any]:
    if not CODEGEN_JSON.is_file():
        pytest.skip("RabbitMQ codegen JSON not present")
    data: dict[str, Any] = json.loads(CODEGEN_JSON.read_text(encoding="utf-8"))
    return data


def json_type(arg: dict[str, Any], domains: dict[str, str]) -> str:
    return arg["type"] if "type" in arg else domains[arg["domain"]]


def test_every_method_id_and_argument_type_agrees_with_codegen_json(
    codegen: dict[str, Any], std: Protocol, ext: Protocol
) -> None:
    domains = dict(codegen["domains"])
    expected: dict[tuple[int, ...], tuple[str, list[str], bool]] = {}
    for cls in codegen["classes"]:
        if cls["name"] == "access":  # in the JSON for 0-8 clients; 0-9-1 removed the class
            continue
        for m in cls["methods"]:
            types = [json_type(a, domains) for a in m["arguments"]]
            expected[(cls["id"], m["id"])] = (
                f"{cls['name']}.{m['name']}",
                types,
                bool(m.get("content")),
            )
    ext_methods = methods(ext)
    assert set(ext_methods) == set(expected)
    std_methods = methods(std)
    assert set(std_methods) < set(expected)
    for proto_methods in (ext_methods, std_methods):
        for ident, message in proto_methods.items():
            name, types, content = expected[ident]
            assert message.name == amqp_xml.camel(name.replace(".", "-")), ident
            assert [amqp_type(f) for f in flat(message.fields)] == types, name
            assert message.content == content, name
            assert message.ident == (1, *ident)
    # what 0-9-1 lacks is exactly RabbitMQ's extensions
    assert {expected[i][0] for i in set(expected) - set(std_methods)} == {
        "connection.blocked",
        "connection.unblocked",
        "connection.update-secret",
        "connection.update-secret-ok",
        "exchange.bind",
        "exchange.bind-ok",
        "exchange.unbind",
        "exchange.unbind-ok",
        "basic.nack",
        "confirm.select",
        "confirm.select-ok",
    }


def test_properties_and_constants_agree_with_codegen_json(
    codegen: dict[str, Any], std: Protocol, ext: Protocol
) -> None:
    (basic,) = [c for c in codegen["classes"] if c["name"] == "basic"]
    json_props = [p["type"] for p in basic["properties"]]
    for proto in (std, ext):
        header = proto.command("Basic.Properties").messages[0]
        assert [amqp_type(f) for f in header.fields[3:]] == json_props
    json_constants = {(c["name"].replace("-", "_"), c["value"]) for c in codegen["constants"]}
    assert {(c.name, c.value) for c in ext.constants} == json_constants
    assert {(c.name, c.value) for c in std.constants} == json_constants - {("NO_ROUTE", 312)}
    groups = {c["name"].replace("-", "_"): c.get("class", "") for c in codegen["constants"]}
    assert all(c.group == groups[c.name] for c in ext.constants)


# --------------------------------------------------------------------------------------------
# Against pika


pika_spec = pytest.importorskip("pika.spec")
pika_frame = pytest.importorskip("pika.frame")
pika_data = pytest.importorskip("pika.data")

# pika's argument names where the XML names the field otherwise (reserved fields aside)
PIKA_RENAMED = {
    ("Exchange.Declare", "exchange_type"): "Type",
    ("Basic.Qos", "global_qos"): "Global",  # `global` is a Python keyword
}


def norm(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


@pytest.mark.parametrize("version", VERSIONS)
def test_names_ids_and_field_order_agree_with_pika(
    built: dict[str, tuple[Protocol, list[str]]], version: str
) -> None:
    proto = built[version][0]
    for ident, message in methods(proto).items():
        cls = pika_spec.methods[(ident[0] << 16) | ident[1]]
        command = next(c for c in proto.commands if c.ident == ident)
        assert cls.NAME == command.name
        params = list(inspect.signature(cls.__init__).parameters)[1:]
        fields = flat(message.fields)
        assert len(params) == len(fields), command.name
        for param, f in zip(params, fields, strict=True):
            if f.name.startswith("Reserved"):
                continue
            want = PIKA_RENAMED.get((command.name, param), param)
            assert norm(want) == norm(f.name), (command.name, param, f.name)


def test_requests_agree_with_pika_synchronous_except_recover(ext: Protocol) -> None:
    """pika marks a method synchronous when it waits for a reply; the XML's <response>s say
    the same for every method but basic.recover, which names none (a grammar-reply finding)."""
    differ = []
    for ident, message in methods(ext).items():
        cls = pika_spec.methods[(ident[0] << 16) | ident[1]]
        pika_sync = cls.synchronous.fget(object.__new__(cls))  # some need arguments
        if pika_sync != bool(message.replies):
            differ.append(message.name)
    assert differ == ["BasicRecover"]


# ---- a small interpreter of the IR, for pika's frames


class Decoder:
    def __init__(self, proto: Protocol) -> None:
        self.proto = proto
        self.tags: list[str] = []  # field-value constructors seen, in order

    def read(self, t: TypeRef, buf: bytes, pos: int, end: int) -> tuple[Any, int]:
        if isinstance(t, Prim):
            return self.prim(t.name, buf, pos)
        if isinstance(t, Ref):
            return self.read(self.proto.named_type(t.name), buf, pos, end)
        if isinstance(t, Map):
            size, pos = self.prim(t.size_prefix, buf, pos)
            stop, out = pos + size, {}
            while pos < stop:
                key, pos = self.read(t.key, buf, pos, stop)
                out[key], pos = self.read(t.value, buf, pos, stop)
            assert pos == stop
            return out, pos
        if isinstance(t, Array):
            assert t.size_prefix is not None
            size, pos = self.prim(t.size_prefix, buf, pos)
            stop, items = pos + size, []
            while pos < stop:
                item, pos = self.read(t.item, buf, pos, stop)
                items.append(item)
            assert pos == stop
            return items, pos
        if isinstance(t, Choice):
            tag, pos = self.prim(t.constructor, buf, pos)
            (case,) = [c for c in t.cases if c.values == (tag,)]
            self.tags.append(chr(tag))
            assert case.type is not None
            return self.read(case.type, buf, pos, end)
        if isinstance(t, Blob):
            assert t.length_field is None
            return buf[pos:end], end
        raise AssertionError(f"no reader for {t}")

    def prim(self, name: str, buf: bytes, pos: int) -> tuple[Any, int]:
        p = self.proto.type(name)
        if p.kind == "int":
            fmt = {1: "b", 2: "h", 4: "i", 8: "q"}[p.width]
            (value,) = struct.unpack_from(">" + (fmt if p.signed else fmt.upper()), buf, pos)
            return value, pos + p.width
        if p.kind in ("string", "bytes"):
            n, pos = self.prim(p.length_prefix, buf, pos)
            raw = buf[pos : pos + n]
            assert len(raw) == n
            value = raw.decode(p.encoding, p.errors) if p.kind == "string" else raw
            return value, pos + n
        if p.kind == "bool":
            return buf[pos] != 0, pos + 1
        if p.kind == "timestamp":
            return struct.unpack_from(">Q", buf, pos)[0], pos + 8
        if p.kind == "float":
            return struct.unpack_from(">f" if p.width == 4 else ">d", buf, pos)[0], pos + p.width
        if p.kind == "decimal":
            scale, raw = struct.unpack_from(">Bi", buf, pos)
            return decimal.Decimal(raw).scaleb(-scale), pos + 5
        assert p.kind == "void"
        return None, pos

    def fields(self, fields: tuple[Field, ...], buf: bytes, pos: int, end: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        flags: dict[str, list[bool]] = {}
        for f in fields:
            if f.present is not None and not flags[f.present[0]][f.present[1]]:
                continue
            if isinstance(f.type, Bits):
                word = int.from_bytes(buf[pos : pos + f.type.width], "big")
                pos += f.type.width
                shift = 0
                assert f.type.order == "lsb"
                for m in f.type.members:
                    assert isinstance(m.type, BitField)
                    value = (word >> shift) & ((1 << m.type.bits) - 1)
                    shift += m.type.bits
                    if m.type.value is not None:
                        assert value == m.type.value, m.name
                    else:
                        out[m.name] = bool(value) if m.type.boolean else value
            elif isinstance(f.type, Presence):
                bits: list[bool] = []
                while True:
                    word = int.from_bytes(buf[pos : pos + f.type.width], "big")
                    pos += f.type.width
                    bits += [
                        bool(word >> (f.type.width * 8 - 1 - i) & 1) for i in range(f.type.per_word)
                    ]
                    if f.type.continuation is None or not word >> f.type.continuation & 1:
                        break
                flags[f.name] = bits
            else:
                out[f.name], pos = self.read(f.type, buf, pos, end)
        assert pos == end, f"{end - pos} bytes left"
        return out

    def frame(self, data: bytes) -> tuple[int, Message, dict[str, Any]]:
        """One whole frame: (channel, message, field values)."""
        layout = self.proto.frame
        pos, header = 0, {}
        for f in layout.header:
            assert isinstance(f.type, Prim)
            header[f.name], pos = self.prim(f.type.name, data, pos)
        end = pos + header[layout.length]
        ident: tuple[int, ...] = tuple(header[d] for d in layout.dispatch)
        key = layout.body_key(ident)
        for f in key.fields if key else ():
            assert isinstance(f.type, Prim)
            value, pos = self.prim(f.type.name, data, pos)
            ident += (value,)
        trailer = end
        for f in layout.trailer:
            assert isinstance(f.type, Prim)
            value, trailer = self.prim(f.type.name, data, trailer)
            assert value == f.default
        assert trailer == len(data)
        (message,) = [m for _, m in self.proto.messages() if m.ident == ident]
        return header["Channel"], message, self.fields(message.fields, data, pos, end)


def sample(f: Field, i: int) -> Any:
    """A value for a field of this type that pika accepts and the decoder gives back."""
    t = amqp_type(f)
    return {
        "octet": 0x80 + i,
        "short": 0x8100 + i,
        "long": 0x82000000 + i,
        "longlong": 0x8300000000000000 + i,
        "shortstr": f"s{i}-\u00e9",
        "longstr": b"\x00\xff" + bytes([i]),
        "table": {"n": i, "s": "t\u00e9xt", "b": True},
        "bit": False,
    }[t]


@pytest.mark.parametrize("version", VERSIONS)
def test_pika_method_frames_decode_through_the_ir(
    built: dict[str, tuple[Protocol, list[str]]], version: str
) -> None:
    proto = built[version][0]
    for ident, message in methods(proto).items():
        cls = pika_spec.methods[(ident[0] << 16) | ident[1]]
        fields = flat(message.fields)
        values = [sample(f, i) for i, f in enumerate(fields)]
        bit_positions = [i for i, f in enumerate(fields) if amqp_type(f) == "bit"]
        # all bits clear, then each bit alone: every position is checked on its own
        for lit in [None, *bit_positions]:
            args = [True if i == lit else v for i, v in enumerate(values)]
            data = pika_frame.Method(5, cls(*args)).marshal()
            channel, got, decoded = Decoder(proto).frame(data)
            assert channel == 5 and got is message
            # by name: the field pika fills from argument i is the IR's i-th field
            assert decoded == {f.name: a for f, a in zip(fields, args, strict=True)}, message.name


def test_pika_content_header_body_and_heartbeat_decode_through_the_ir(ext: Protocol) -> None:
    props_message = ext.command("Basic.Properties").messages[0]
    params = list(inspect.signature(pika_spec.BasicProperties.__init__).parameters)[1:]
    props = props_message.fields[3:]
    assert [norm(p) for p in params] == [
        norm("ClusterId" if f.name == "Reserved" else f.name) for f in props
    ]
    presence = props_message.fields[2].type
    assert isinstance(presence, Presence)
    for i, param in enumerate(params):
        assert presence.flag(i) == (0, getattr(pika_spec.BasicProperties, f"FLAG_{param.upper()}"))

    given = {"content_type": "text/plain", "headers": {"x": [1, "y"]}, "priority": 3}
    given |= {"timestamp": 1714979289, "app_id": "\u00e4pp", "cluster_id": ""}
    data = pika_frame.Header(7, 12345, pika_spec.BasicProperties(**given)).marshal()
    channel, message, decoded = Decoder(ext).frame(data)
    assert (channel, message) == (7, props_message)
    assert decoded == {
        "Weight": 0,
        "BodySize": 12345,
        "ContentType": "text/plain",
        "Headers": {"x": [1, "y"]},
        "Priority": 3,
        "Timestamp": 1714979289,
        "AppId": "\u00e4pp",
        "Reserved": "",
    }

    channel, message, decoded = Decoder(ext).frame(pika_frame.Body(2, b"\x00body\xce").marshal())
    assert (channel, message.name, decoded) == (2, "ContentBody", {"Payload": b"\x00body\xce"})
    channel, message, decoded = Decoder(ext).frame(pika_frame.Heartbeat().marshal())
    assert (channel, message.name, decoded) == (0, "Heartbeat", {})


def preferred_tag(proto: Protocol, value: Any) -> str:
    """The first tag of `prefer` whose type holds the value, by the IR's kinds."""
    choice = proto.named_type("field-value")
    assert isinstance(choice, Choice)
    for tag in choice.prefer:
        (case,) = [c for c in choice.cases if c.values == (tag,)]
        t = case.type
        if isinstance(t, Ref):
            holds = {"table": dict, "field-array": list}[t.name]
            if isinstance(value, holds):
                return chr(tag)
            continue
        assert isinstance(t, Prim)
        p = proto.type(t.name)
        ok = {
            "bool": isinstance(value, bool),
            "int": isinstance(value, int)
            and not isinstance(value, bool)
            and -(1 << (8 * p.width - 1)) <= value < 1 << (8 * p.width - 1),
            "float": isinstance(value, float),
            "decimal": isinstance(value, decimal.Decimal),
            "string": isinstance(value, str),
            "bytes": isinstance(value, bytes),
            "timestamp": isinstance(value, datetime.datetime),
            "void": value is None,
        }[p.kind]
        if ok:
            return chr(tag)
    raise AssertionError(f"no tag holds {value!r}")


def test_field_table_tags_and_prefer_agree_with_pika(ext: Protocol) -> None:
    when = datetime.datetime(2020, 1, 2, tzinfo=datetime.UTC)
    table = {
        "bool": True,
        "small": -5,
        "int32": 2**31 - 1,
        "big": 2**31,
        "neg": -(2**40),
        "dec": decimal.Decimal("12.34"),
        "text": "\u00fcml\u00e4ut",
        "bin": b"\x00\x80\xff",
        "when": when,
        "nested": {"a": None},
        "list": [1, "two", b"3"],
        "none": None,
    }
    pieces: list[bytes] = []
    pika_data.encode_table(pieces, table)
    encoded = b"".join(pieces)
    decoder = Decoder(ext)
    value, pos = decoder.read(Ref("table"), encoded, 0, len(encoded))
    assert pos == len(encoded)
    assert value == table | {"when": calendar.timegm(when.utctimetuple())}
    top_tags = []
    for key in table:  # pika writes the dict in order; find each value's tag on the wire
        at = encoded.index(bytes([len(key)]) + key.encode()) + 1 + len(key)
        top_tags.append(chr(encoded[at]))
    assert top_tags == [preferred_tag(ext, v) for v in table.values()]
    assert top_tags == ["t", "I", "I", "l", "l", "D", "S", "x", "T", "F", "A", "V"]


def test_field_value_choice_follows_field_types_toml(ext: Protocol) -> None:
    data = tomllib.loads((SPEC_DIR / "field-types.toml").read_text(encoding="utf-8"))
    choice = ext.named_type("field-value")
    assert isinstance(choice, Choice) and choice.constructor == "uint8"
    cases = {chr(c.values[0]): c for c in choice.cases}
    assert sorted(cases) == sorted("tbBsuIiLlfdDSxATFV")
    assert "U" not in cases
    for entry in data["tag"]:
        if not entry["type"]:
            continue
        t = cases[entry["tag"]].type
        assert t in (Prim(entry["type"]), Ref(entry["type"]))
        assert cases[entry["tag"]].label == f"{entry['tag']} {entry['type']}"
    assert "".join(chr(v) for v in choice.prefer) == "tIldDSxTFAV"
    assert ext.type("longstr-text").errors == "surrogateescape"
    assert ext.type("longstr-text").length_prefix == "uint32"
    assert ext.named_type("table") == Map(Prim("shortstr"), Ref("field-value"), "uint32")
    assert ext.named_type("field-array") == Array(Ref("field-value"), None, size_prefix="uint32")
    shortstr = ext.type("shortstr")
    assert (shortstr.kind, shortstr.length_prefix, shortstr.errors) == (
        "string",
        "uint8",
        "surrogateescape",
    )
    assert ext.type("longstr").kind == "bytes"
    assert all(t.doc and t.span for t in ext.types)
    assert not set(BUILTIN) & {t.name for t in ext.types}


# --------------------------------------------------------------------------------------------
# Frame, bits, content header, senders


@pytest.mark.parametrize("version", VERSIONS)
def test_frame_layout(built: dict[str, tuple[Protocol, list[str]]], version: str) -> None:
    frame = built[version][0].frame
    assert [(f.name, f.type) for f in frame.header] == [
        ("Type", Prim("uint8")),
        ("Channel", Prim("uint16")),
        ("Size", Prim("uint32")),
    ]
    assert frame.header[1].role == "channel"
    assert (frame.length, frame.length_counts, frame.dispatch) == ("Size", "body", ("Type",))
    assert frame.version is None
    assert [(f.name, f.type, f.default) for f in frame.trailer] == [
        ("FrameEnd", Prim("uint8"), pika_spec.FRAME_END)
    ]
    assert [(k.when, [f.name for f in k.fields]) for k in frame.body_keys] == [
        ((pika_spec.FRAME_METHOD,), ["ClassId", "MethodId"]),
        ((pika_spec.FRAME_HEADER,), ["ClassId"]),
    ]
    assert [(p.sender, p.data) for p in frame.preambles] == [
        ("client", pika_frame.ProtocolHeader().marshal())
    ]
    assert frame.span is not None and frame.span.line == 160 - (version == "0-9-1") * 17
    proto = built[version][0]
    assert proto.command("Content.Body").ident == (pika_spec.FRAME_BODY,)
    assert proto.command("Heartbeat").messages[0].ident == (pika_spec.FRAME_HEARTBEAT,)


def test_bits_packing(ext: Protocol, std: Protocol) -> None:
    declare = ext.command("Queue.Declare").messages[0]
    assert [f.name for f in declare.fields] == ["Reserved1", "Queue", "Bits1", "Arguments"]
    bits = declare.fields[2].type
    assert isinstance(bits, Bits) and (bits.width, bits.order) == (1, "lsb")
    assert [(m.name, m.type) for m in bits.members] == [
        ("Passive", BitField(1, boolean=True)),
        ("Durable", BitField(1, boolean=True)),
        ("Exclusive", BitField(1, boolean=True)),
        ("AutoDelete", BitField(1, boolean=True)),
        ("NoWait", BitField(1, boolean=True)),
        ("Unused1", BitField(3, value=0)),
    ]
    consume = ext.command("Basic.Consume").messages[0]
    assert [f.name for f in consume.fields] == [
        "Reserved1",
        "Queue",
        "ConsumerTag",
        "Bits1",
        "Arguments",
    ]
    bits = consume.fields[3].type
    assert isinstance(bits, Bits)
    assert [m.name for m in bits.members] == ["NoLocal", "NoAck", "Exclusive", "NoWait", "Unused1"]
    assert bits.members[-1].type == BitField(4, value=0)
    # 0-9-1's deprecated exchange flags are reserved bits, False by default
    declare = std.command("Exchange.Declare").messages[0]
    bits = declare.fields[3].type
    assert isinstance(bits, Bits)
    members = {m.name: m for m in bits.members}
    assert list(members) == ["Passive", "Durable", "Reserved2", "Reserved3", "NoWait", "Unused1"]
    assert members["Reserved2"].default is False and members["Passive"].default is None
    # a lone bit between other fields gets a container of its own
    deliver = ext.command("Basic.Deliver").messages[0]
    assert [f.name for f in deliver.fields] == [
        "ConsumerTag",
        "DeliveryTag",
        "Bits1",
        "Exchange",
        "RoutingKey",
    ]


def test_reserved_defaults_and_asserts(ext: Protocol) -> None:
    open_ = ext.command("Connection.Open").messages[0]
    assert [(f.name, f.default) for f in open_.fields[:2]] == [
        ("VirtualHost", None),
        ("Reserved1", ""),
    ]
    assert open_.fields[0].max_length == 127
    assert "Must not be empty." in open_.fields[0].doc
    assert ext.command("Channel.OpenOk").messages[0].fields[0].default == ""
    assert ext.command("Basic.Publish").messages[0].fields[0].default == 0
    exchange = ext.command("Exchange.Declare").messages[0].fields[1]
    assert exchange.max_length == 127 and "^[a-zA-Z0-9-_.:]*$" in exchange.doc
    tune_ok = ext.command("Connection.TuneOk").messages[0].fields[0]
    assert "less than or equal to Connection.Tune's ChannelMax" in tune_ok.doc


def test_content_header(ext: Protocol, std: Protocol) -> None:
    for proto in (ext, std):
        command = proto.command("Basic.Properties")
        (message,) = command.messages
        assert command.ident == (60,) and command.sender == "both"
        assert (message.name, message.kind, message.ident) == ("BasicProperties", "oneway", (2, 60))
        assert [f.name for f in message.fields] == [
            "Weight",
            "BodySize",
            "PropertyFlags",
            "ContentType",
            "ContentEncoding",
            "Headers",
            "DeliveryMode",
            "Priority",
            "CorrelationId",
            "ReplyTo",
            "Expiration",
            "MessageId",
            "Timestamp",
            "Type",
            "UserId",
            "AppId",
            "Reserved",
        ]
        assert message.fields[2].type == Presence(width=2, continuation=0)
        assert [f.present for f in message.fields[3:]] == [("PropertyFlags", i) for i in range(14)]
        assert message.fields[1].type == Prim("uint64")


def test_messages_senders_and_replies(ext: Protocol, std: Protocol) -> None:
    get = ext.command("Basic.Get")
    (m,) = get.messages
    assert (get.ident, m.name, m.kind, m.ident) == ((60, 70), "BasicGet", "request", (1, 60, 70))
    assert m.replies == ("BasicGetOk", "BasicGetEmpty") and m.synchronous
    assert ext.command("Basic.GetOk").messages[0].kind == "response"
    assert ext.command("Basic.GetOk").messages[0].content
    assert ext.command("Basic.Publish").messages[0].kind == "oneway"
    assert m.doc.split("\n\n")[0] == "direct access to a queue"

    def sender(proto: Protocol, name: str) -> str:
        c = proto.command(name)
        assert c.messages[0].sender == c.sender
        return c.sender

    assert sender(std, "Connection.Start") == "server"
    assert sender(std, "Connection.StartOk") == "client"
    assert sender(std, "Channel.Close") == "both"
    assert sender(std, "Basic.Ack") == "client"  # 0-9-1: only the client acks
    assert sender(ext, "Basic.Ack") == "both"  # RabbitMQ: publisher confirms
    assert sender(ext, "Basic.Nack") == "both"
    assert sender(std, "Basic.Cancel") == "client"
    assert sender(ext, "Basic.Cancel") == "both"  # consumer cancel notifications
    # The extended XML's chassis make the server send update-secret (pika and RabbitMQ have
    # the client send it); the front-end follows the chassis and the lint flags the method.
    assert sender(ext, "Connection.UpdateSecret") == "server"
    assert [c.name for c in ext.commands][:3] == ["Content.Body", "Heartbeat", "Connection.Start"]


def test_reply_codes(ext: Protocol) -> None:
    (enum,) = ext.enums
    assert enum.name == "ReplyCode" and not enum.hex
    values = {v.name: v.value for v in enum.values}
    assert values["REPLY_SUCCESS"] == 200 and values["NO_ROUTE"] == 312
    assert values["INTERNAL_ERROR"] == 541 and "FRAME_END" not in values
    assert len(values) == 19
    for name in ("Connection.Close", "Channel.Close", "Basic.Return"):
        code = ext.command(name).messages[0].fields[0]
        assert (code.name, code.enum, code.role) == ("ReplyCode", "ReplyCode", "response_code")
    assert all(f.enum is None for f in ext.command("Basic.Ack").messages[0].fields)


# --------------------------------------------------------------------------------------------
# Findings


def line_of(name: str, line: int) -> str:
    return (SPEC_DIR / name).read_text(encoding="utf-8").splitlines()[line - 1]


def test_findings_standard(built: dict[str, tuple[Protocol, list[str]]]) -> None:
    log = built["0-9-1"][1]
    assert line_of("amqp0-9-1.xml", 450).strip().startswith('<domain name = "table"')
    assert line_of("amqp0-9-1.xml", 2689).strip().startswith('<method name = "recover"')
    assert [f.split(": ", 2)[:2] for f in log] == [
        ["specs/amqp-0-9-1/amqp0-9-1.xml:450:3", "field-type-tag"],
        ["specs/amqp-0-9-1/amqp0-9-1.xml:450:3", "field-type-tag"],
        ["specs/amqp-0-9-1/amqp0-9-1.xml:450:3", "field-type-tag"],
        ["specs/amqp-0-9-1/amqp0-9-1.xml:450:3", "field-type-tag"],
        ["specs/amqp-0-9-1/amqp0-9-1.xml:2689:5", "grammar-reply"],
    ]
    tags = [f for f in log if "field-type-tag" in f]
    assert ["'s'" in tags[0], "'U'" in tags[1], "'l'" in tags[2], "'x'" in tags[3]] == [True] * 4
    assert all(f.endswith("-> RabbitMQ's tag (field-types.toml)") for f in tags)


def test_findings_rabbitmq(built: dict[str, tuple[Protocol, list[str]]]) -> None:
    log = built["0-9-1-rabbitmq"][1]
    name = "amqp0-9-1.extended.xml"
    codes = [(f.split(": ", 2)[1], int(f.split(":")[1])) for f in log]
    assert codes == [
        ("label-max-length", 471),
        ("field-type-tag", 474),
        ("field-type-tag", 474),
        ("field-type-tag", 474),
        ("field-type-tag", 474),
        ("unknown-attribute", 915),
        ("grammar-missing", 908),
        ("grammar-missing", 922),
        ("grammar-missing", 931),
        ("grammar-missing", 953),
        ("reply-index", 1643),
        ("grammar-sender", 2631),
        ("grammar-sender", 2668),
        ("grammar-reply", 3044),
        ("label-as-text", 3362),
        ("field-name-domain", 3371),
        ("label-as-text", 3374),
    ]
    assert 'name = "shortstr"' in line_of(name, 471) and "256 characters" in line_of(name, 471)
    assert 'required="0"' in line_of(name, 915)
    assert 'name = "update-secret"' in line_of(name, 931)
    assert 'name = "unbind-ok"' in line_of(name, 1643) and 'index = "51"' in line_of(name, 1643)
    assert 'name = "cancel"' in line_of(name, 2631)
    assert 'name = "nowait"' in line_of(name, 3371)
    assert any("connection.update-secret is not in class connection's grammar" in f for f in log)
    assert any(
        "basic.cancel: its chassis make it sent by both" in f and "by client" in f for f in log
    )
    shortstr = next(f for f in log if "label-max-length" in f)
    assert "255 bytes" in shortstr and "256 characters" in shortstr


# --------------------------------------------------------------------------------------------
# Errors name file:line:column


def variant(tmp_path: Path, edit: tuple[str, str] | None = None, text: str | None = None) -> Path:
    """The 0-9-1 XML (edited) and field-types.toml in tmp_path."""
    shutil.copy(SPEC_DIR / "field-types.toml", tmp_path / "field-types.toml")
    if text is None:
        text = (SPEC_DIR / "amqp0-9-1.xml").read_text(encoding="utf-8").replace("\r\n", "\n")
        assert edit is not None and edit[0] in text
        text = text.replace(edit[0], edit[1], 1)
    path = tmp_path / "spec.xml"
    path.write_text(text, encoding="utf-8")
    return path


def test_malformed_xml_names_file_line_column(tmp_path: Path) -> None:
    path = variant(tmp_path, text='<amqp major="0">\n  <constant name="x" value="1">\n</amqp>\n')
    with pytest.raises(SpecSyntaxError) as e:
        amqp_xml.build(path, "tmp/spec.xml", "amqp-0-9-1", "t")
    assert str(e.value).startswith("tmp/spec.xml:3:1:")
    path = variant(tmp_path, text='<amqp major="0" minor=>\n</amqp>\n')
    with pytest.raises(SpecSyntaxError, match=r"^tmp/spec\.xml:1:\d+:"):
        amqp_xml.build(path, "tmp/spec.xml", "amqp-0-9-1", "t")


@pytest.mark.parametrize(
    ("edit", "where", "message"),
    [
        (
            ('<constant name = "frame-end"        value = "206" />', ""),
            r"tmp/spec\.xml:\d+:1",
            "no frame-end constant",
        ),
        (
            (
                'name = "delivery-tag" type = "longlong"',
                'name = "delivery-tag" type = "longlonglong"',
            ),
            r"tmp/spec\.xml:\d+:\d+",
            "'longlonglong' is neither a domain nor an AMQP type",
        ),
        (
            ('<field name = "virtual-host" domain = "path"', '<field name = "virtual-host"'),
            r"tmp/spec\.xml:\d+:7",
            "connection.open.virtual-host has neither a domain nor a type",
        ),
        (
            (
                '<method name = "tune-ok" synchronous = "1" index = "31"',
                '<method name = "tune-ok" synchronous = "1" index = "30"',
            ),
            r"tmp/spec\.xml:\d+:\d+",
            "connection.tune-ok has index 30, as connection.tune",
        ),
        (
            (
                '<domain name = "bit"        type = "bit"',
                '<domain name = "bit"        type = "no-ack"',
            ),
            r"tmp/spec\.xml:\d+:\d+",
            "domain loop",
        ),
    ],
)
def test_spec_errors_name_file_line_column(
    tmp_path: Path, edit: tuple[str, str], where: str, message: str
) -> None:
    path = variant(tmp_path, edit)
    with pytest.raises(SpecError, match=f"^{where}: .*{message}"):
        amqp_xml.build(path, "tmp/spec.xml", "amqp-0-9-1", "t")


def test_unknown_domain_type_points_at_the_domain(tmp_path: Path) -> None:
    text = (SPEC_DIR / "amqp0-9-1.xml").read_text(encoding="utf-8").replace("\r\n", "\n")
    line = next(i + 1 for i, t in enumerate(text.splitlines()) if 'name = "delivery-tag"' in t)
    path = variant(
        tmp_path, ('name = "delivery-tag" type = "longlong"', 'name = "delivery-tag" type = "huge"')
    )
    with pytest.raises(SpecError) as e:
        amqp_xml.build(path, "tmp/spec.xml", "amqp-0-9-1", "t")
    assert e.value.span.line == line


def test_field_types_file_is_required(tmp_path: Path) -> None:
    path = tmp_path / "spec.xml"
    shutil.copy(SPEC_DIR / "amqp0-9-1.xml", path)
    with pytest.raises(SpecError, match=r"^tmp/spec\.xml:\d+:1: no field-types\.toml"):
        amqp_xml.build(path, "tmp/spec.xml", "amqp-0-9-1", "t")


def test_field_types_file_is_checked(tmp_path: Path) -> None:
    path = variant(tmp_path, ("", ""))
    toml = tmp_path / "field-types.toml"
    text = toml.read_text(encoding="utf-8")
    toml.write_text(
        text.replace(
            'type = "int16"\nspec = "short-string"', 'type = "int17"\nspec = "short-string"'
        )
    )
    with pytest.raises(SpecError, match=r"^tmp/field-types\.toml:\d+:1: tag 's': 'int17'"):
        amqp_xml.build(path, "tmp/spec.xml", "amqp-0-9-1", "t")


def test_both_domain_and_type_is_a_finding(tmp_path: Path) -> None:
    path = variant(
        tmp_path,
        (
            '<field name = "reserved-1" type = "short" reserved = "1" />',
            '<field name = "reserved-1" type = "short" domain = "short" reserved = "1" />',
        ),
    )
    _, log = amqp_xml.build(path, "tmp/spec.xml", "amqp-0-9-1", "t")
    (f,) = [f for f in log.items if f.code == "field-type-and-domain"]
    assert "the same type" in f.message and f.span.file == "tmp/spec.xml"


# --------------------------------------------------------------------------------------------
# The IR as data


@pytest.mark.parametrize("version", VERSIONS)
def test_ir_round_trips(built: dict[str, tuple[Protocol, list[str]]], version: str) -> None:
    proto = built[version][0]
    text = dump(proto)
    again = load(text)
    assert again == proto
    assert dump(again) == text
    assert proto.source == f"specs/amqp-0-9-1/{find('amqp-0-9-1/' + version).document.name}"
    assert [c.ident for c in proto.commands] == sorted(c.ident for c in proto.commands)


def test_unknown_response_and_missing_chassis_are_findings(tmp_path: Path) -> None:
    text = (SPEC_DIR / "amqp0-9-1.xml").read_text(encoding="utf-8").replace("\r\n", "\n")
    start = text.index('<method name = "qos" synchronous = "1" index = "10"')
    qos = text[start : text.index("</method>", start)]
    edited = qos.replace('<response name = "qos-ok" />', '<response name = "qos-okay" />')
    edited = edited.replace('<chassis name = "server" implement = "MUST" />', "")
    assert edited.count("<response") == 1 and "<chassis" not in edited
    path = variant(tmp_path, text=text.replace(qos, edited))
    proto, log = amqp_xml.build(path, "tmp/spec.xml", "amqp-0-9-1", "t")
    line = text[:start].count("\n") + 1
    found = {f.code: f for f in log.items if f.code in ("response-unknown", "chassis-missing")}
    assert found["chassis-missing"].span.line == line
    assert found["response-unknown"].span.line > line
    assert "'qos-okay'" in found["response-unknown"].message
    qos_command = proto.command("Basic.Qos")
    assert qos_command.sender == "both" and qos_command.messages[0].kind == "oneway"
    assert proto.command("Basic.QosOk").messages[0].kind == "oneway"
