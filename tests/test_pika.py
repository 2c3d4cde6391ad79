"""The generated AMQP 0-9-1 codec (RabbitMQ's extended spec) against pika, both ways.

For every method pika knows, the content header (every property, and none), a body and a
heartbeat: pika's frame decodes with our `decode` to the same values and encodes back to
pika's very bytes; our frame, built from the same values, is pika's bytes and decodes with
`pika.frame.decode_frame` to the same attributes.

Names: our classes are pika's with the dot removed, fields are pika's arguments in the same
order (checked), renamed where the spec calls them reserved (`ticket`, `capabilities`, ...)
or where pika renames them (`nowait`, `global_qos`).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pika.frame  # type: ignore[import-untyped]
import pika.spec  # type: ignore[import-untyped]
import pytest

from specgen_codecs.amqp_0_9_1 import rabbitmq as rmq
from specgen_codecs.amqp_0_9_1 import v0_9_1 as wg
from specgen_codecs.amqp_0_9_1.errors import DecodeError, EncodeError
from specgen_codecs.amqp_0_9_1.values import Table

CHANNEL = 65535

# pika's argument -> our field, where they differ
RENAMED = {
    "ticket": "reserved1",
    "nowait": "no_wait",
    "global_qos": "global_",
    # RabbitMQ's spec spells this one `nowait`, every other `no-wait`
    ("Confirm.Select", "nowait"): "nowait",
    ("Connection.Open", "capabilities"): "reserved1",
    ("Connection.Open", "insist"): "reserved2",
    ("Connection.OpenOk", "known_hosts"): "reserved1",
    ("Channel.Open", "out_of_band"): "reserved1",
    ("Channel.OpenOk", "channel_id"): "reserved1",
    ("Basic.GetEmpty", "cluster_id"): "reserved1",
    ("BasicProperties", "cluster_id"): "reserved",
}

# in pika, not in the 0-9-1 spec (the Access class is 0-8's; 0-9-1 keeps only `ticket` fields)
NOT_IN_SPEC = {"Access.Request", "Access.RequestOk"}

METHODS = sorted(pika.spec.methods.values(), key=lambda m: m.INDEX)
METHOD_IDS = [m.NAME for m in METHODS]

TS = 1_700_000_000  # a timestamp in field tables: pika gives a datetime, we give the int


def _table() -> dict[str, Any]:
    """A table with every kind pika writes: its ints (int32 'I' and int64 'l' at their
    boundaries), bools, decimals, None, bytes, text, a timestamp, nested tables and arrays."""
    return {
        "text": "héllo wörld",
        "empty": "",
        "bytes": b"\x00\xff\xfe binary",
        "true": True,
        "false": False,
        "i32max": 2**31 - 1,
        "i32min": -(2**31),
        "i64a": 2**31,
        "i64max": 2**63 - 1,
        "i64min": -(2**63),
        "zero": 0,
        "dec": Decimal("3.14159"),
        "negdec": Decimal("-12.5"),
        "intdec": Decimal("42"),
        "void": None,
        "when": datetime.fromtimestamp(TS, UTC),
        "nested": {
            "deeper": {"x": 1, "list": [1, "two", None, True, {"k": b"v"}]},
            "arr": [],
            "t": {},
        },
        "array": [2**40, -1, "s", b"b", Decimal("0.5"), [False, [None]], {"in": "array"}],
    }


def _ours(value: Any) -> Any:
    """The value our codec decodes pika's value to (a datetime is its 'T' timestamp int)."""
    if isinstance(value, datetime):
        return int(value.timestamp())
    if isinstance(value, dict):
        return {k: _ours(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_ours(v) for v in value]
    return value


def _our_table(value: Any) -> Any:
    """pika's table as our encoder's input: the timestamp as an int, tagged 'T' (84)."""
    if isinstance(value, dict):
        out = Table({k: _our_table(v) for k, v in value.items()})
        for k, v in value.items():
            if isinstance(v, datetime):
                out.constructors[k] = 84
        return out
    if isinstance(value, list):
        assert not any(isinstance(v, datetime) for v in value)
        return [_our_table(v) for v in value]
    if isinstance(value, datetime):
        return int(value.timestamp())
    return value


def _same(pika_value: Any, our_value: Any, where: str) -> None:
    """pika's decoded value against ours, allowing for pika's documented decoding quirks."""
    if isinstance(our_value, bytes) and isinstance(pika_value, str):
        # pika decodes a longstr argument with str(bytes): "b'...'"
        assert pika_value == str(our_value), where
        return
    assert _ours(pika_value) == our_value, where
    if isinstance(our_value, bool) or isinstance(pika_value, bool):
        assert type(pika_value) is type(our_value), where


def _names(owner: str, pika_args: list[str]) -> list[str]:
    out = []
    for arg in pika_args:
        out.append(RENAMED.get((owner, arg), RENAMED.get(arg, arg)))
    return out


def _our_class(pika_name: str) -> type[Any]:
    return getattr(rmq, pika_name.replace(".", "")) if pika_name not in NOT_IN_SPEC else object


def _pika_args(cls: type[Any]) -> list[str]:
    params = list(inspect.signature(cls.__init__).parameters)
    return params[1:]


def _max_int(cls: type[Any], field: str, build: Callable[[int], Any]) -> int:
    """The largest unsigned value `field` takes (its width, found by our encoder)."""
    for bits in (64, 32, 16, 8):
        try:
            rmq.encode(build(2**bits - 1))
        except EncodeError:
            continue
        return 2**bits - 1
    raise AssertionError(f"{cls.__name__}.{field} takes no unsigned integer")


SHORTSTR = ("é" * 127)[:126] + "xyz"  # 255 bytes of UTF-8, the shortstr limit


def _values(cls: type[Any]) -> dict[str, Any]:
    """Non-default values for every field of our `cls`: ints at their maximum, bits set,
    shortstrs 255 bytes long, longstrs binary, tables full."""
    fields = [f for f in dataclasses.fields(cls) if f.name != "channel"]
    base: dict[str, Any] = {}
    for f in fields:
        t = str(f.type)
        if t.startswith("int"):
            base[f.name] = 0
        elif t.startswith("bool"):
            base[f.name] = True
        elif t.startswith("str"):
            base[f.name] = SHORTSTR
        elif t.startswith("bytes"):
            base[f.name] = b"\x00guest\x00\xffpass\x80"
        elif t.startswith("dict"):
            base[f.name] = _our_table(_table())
        else:
            raise AssertionError(f"{cls.__name__}.{f.name}: no value for {t}")
    for f in fields:
        if str(f.type).startswith("int"):

            def build(v: int, name: str = f.name) -> Any:
                return cls(**{**base, name: v}, channel=CHANNEL)

            base[f.name] = _max_int(cls, f.name, build)
    return base


def _pika_value(our_field_type: str, value: Any) -> Any:
    if our_field_type.startswith("dict"):
        return _table()
    return value


# --------------------------------------------------------------------------- methods


def _method_pair(pika_cls: type[Any]) -> tuple[Any, Any]:
    """(pika method, our message) with the same values."""
    ours = _our_class(pika_cls.NAME)
    args = _pika_args(pika_cls)
    fields = [f for f in dataclasses.fields(ours) if f.name != "channel"]
    assert _names(pika_cls.NAME, args) == [f.name for f in fields]
    values = _values(ours)
    kwargs = {
        arg: _pika_value(str(f.type), values[f.name]) for arg, f in zip(args, fields, strict=True)
    }
    return pika_cls(**kwargs), ours(**values, channel=CHANNEL)


def _compare_method(pika_method: Any, msg: Any) -> None:
    args = _pika_args(type(pika_method))
    for arg, name in zip(args, _names(pika_method.NAME, args), strict=True):
        _same(getattr(pika_method, arg), getattr(msg, name), f"{pika_method.NAME}.{arg}")


def _pika_decode_method(frame: bytes, pika_cls: type[Any]) -> tuple[int, Any]:
    """pika.frame.decode_frame, but for Connection.UpdateSecret, whose __init__ has required
    arguments so that decode_frame cannot instantiate it (a pika quirk: a client never
    receives it): then the method's own `decode`, as decode_frame would call it."""
    if pika_cls is not pika.spec.Connection.UpdateSecret:
        return pika.frame.decode_frame(frame)  # type: ignore[no-any-return]
    with pytest.raises(TypeError, match="new_secret"):
        pika.frame.decode_frame(frame)
    method = pika_cls(None, None).decode(frame[7:-1], 4)
    # and its decode stores new_secret as `mechanisms` (a copy-paste slip in pika's spec.py)
    assert method.new_secret is None
    method.new_secret = method.mechanisms
    return len(frame), pika.frame.Method(int.from_bytes(frame[1:3], "big"), method)


@pytest.mark.parametrize("pika_cls", METHODS, ids=METHOD_IDS)
def test_pika_to_us(pika_cls: type[Any]) -> None:
    if pika_cls.NAME in NOT_IN_SPEC:
        frame = pika.frame.Method(CHANNEL, pika_cls()).marshal()
        with pytest.raises(DecodeError, match="no layout"):
            rmq.decode(frame)
        return
    pika_method, _ = _method_pair(pika_cls)
    frame = pika.frame.Method(CHANNEL, pika_method).marshal()
    msg = rmq.decode(frame)
    assert type(msg).__name__ == pika_cls.NAME.replace(".", "")
    assert msg.channel == CHANNEL
    _compare_method(pika_method, msg)
    assert rmq.encode(msg) == frame


@pytest.mark.parametrize(
    "pika_cls",
    [m for m in METHODS if m.NAME not in NOT_IN_SPEC],
    ids=[n for n in METHOD_IDS if n not in NOT_IN_SPEC],
)
def test_us_to_pika(pika_cls: type[Any]) -> None:
    pika_method, msg = _method_pair(pika_cls)
    frame = rmq.encode(msg)
    assert frame == pika.frame.Method(CHANNEL, pika_method).marshal()
    used, decoded = _pika_decode_method(frame, pika_cls)
    assert used == len(frame)
    assert isinstance(decoded, pika.frame.Method)
    assert decoded.channel_number == CHANNEL
    assert type(decoded.method) is pika_cls
    _compare_method(decoded.method, msg)


def test_every_method_covered() -> None:
    """Every message of ours is a pika method, the content header, a body or a heartbeat."""
    pika_names = {m.NAME.replace(".", "") for m in METHODS}
    ours = {name for name in rmq.__all__ if hasattr(getattr(rmq, name), "COMMAND")}
    assert ours - pika_names == {"BasicProperties", "ContentBody", "Heartbeat"}
    assert {n.replace(".", "") for n in NOT_IN_SPEC} == pika_names - ours


def test_replies_match_pika() -> None:
    """pika's `synchronous` (the method expects a reply) is our non-empty REPLIES, but for
    Basic.Recover (known: pika expects RecoverOk, our IR does not pair them; metadata only,
    the bytes agree)."""
    differ = []
    for pika_cls in METHODS:
        if pika_cls.NAME in NOT_IN_SPEC:
            continue
        mine = bool(getattr(_our_class(pika_cls.NAME), "REPLIES", ()))
        if mine != pika_cls.synchronous.fget(None):
            differ.append(pika_cls.NAME)
    assert differ == ["Basic.Recover"]


# --------------------------------------------------------------------------- content


def _all_properties() -> tuple[Any, Any]:
    values = _values(rmq.BasicProperties)
    del values["weight"], values["body_size"]
    props = {k: v for k, v in values.items()}
    pika_props = {
        ("cluster_id" if k == "reserved" else k): (_table() if k == "headers" else v)
        for k, v in props.items()
    }
    return pika.spec.BasicProperties(**pika_props), props


PROPERTY_CASES: dict[str, Callable[[], tuple[Any, dict[str, Any]]]] = {
    "every": _all_properties,
    "none": lambda: (pika.spec.BasicProperties(), {}),
}


def _compare_properties(pika_props: Any, msg: Any) -> None:
    for arg in _pika_args(pika.spec.BasicProperties):
        name = "reserved" if arg == "cluster_id" else arg
        _same(getattr(pika_props, arg), getattr(msg, name), f"BasicProperties.{arg}")


@pytest.mark.parametrize("case", PROPERTY_CASES)
def test_content_header_pika_to_us(case: str) -> None:
    pika_props, _ = PROPERTY_CASES[case]()
    frame = pika.frame.Header(CHANNEL, 2**64 - 1, pika_props).marshal()
    msg = rmq.decode(frame)
    assert isinstance(msg, rmq.BasicProperties)
    assert (msg.channel, msg.weight, msg.body_size) == (CHANNEL, 0, 2**64 - 1)
    _compare_properties(pika_props, msg)
    assert rmq.encode(msg) == frame


@pytest.mark.parametrize("case", PROPERTY_CASES)
def test_content_header_us_to_pika(case: str) -> None:
    pika_props, props = PROPERTY_CASES[case]()
    msg = rmq.BasicProperties(0, 2**64 - 1, **props, channel=CHANNEL)
    frame = rmq.encode(msg)
    assert frame == pika.frame.Header(CHANNEL, 2**64 - 1, pika_props).marshal()
    used, decoded = pika.frame.decode_frame(frame)
    assert used == len(frame)
    assert isinstance(decoded, pika.frame.Header)
    assert (decoded.channel_number, decoded.body_size) == (CHANNEL, 2**64 - 1)
    _compare_properties(decoded.properties, msg)


BODIES = {"empty": b"", "bytes": bytes(range(256)) * 3, "end-marker": b"\xce" * 10}


@pytest.mark.parametrize("body", BODIES)
def test_body_both_ways(body: str) -> None:
    payload = BODIES[body]
    frame = pika.frame.Body(CHANNEL, payload).marshal()
    msg = rmq.decode(frame)
    assert msg == rmq.ContentBody(payload, channel=CHANNEL)
    assert rmq.encode(msg) == frame
    used, decoded = pika.frame.decode_frame(rmq.encode(rmq.ContentBody(payload, CHANNEL)))
    assert used == len(frame)
    assert isinstance(decoded, pika.frame.Body)
    assert (decoded.channel_number, decoded.fragment) == (CHANNEL, payload)


def test_heartbeat_both_ways() -> None:
    frame = pika.frame.Heartbeat().marshal()
    msg = rmq.decode(frame)
    assert msg == rmq.Heartbeat(channel=0)
    assert rmq.encode(msg) == frame
    used, decoded = pika.frame.decode_frame(rmq.encode(rmq.Heartbeat()))
    assert used == len(frame)
    assert isinstance(decoded, pika.frame.Heartbeat)


def test_protocol_header() -> None:
    """pika's protocol header is the client preamble the frame reader expects."""
    header = pika.frame.ProtocolHeader().marshal()
    reader = rmq.FrameReader(sender="client", preamble=True)
    reader.feed(header + rmq.encode(rmq.Heartbeat()))
    assert list(reader) == [rmq.Heartbeat()]
    used, decoded = pika.frame.decode_frame(header)
    assert (used, decoded.major, decoded.minor, decoded.revision) == (8, 0, 9, 1)


@pytest.mark.parametrize(
    "pika_cls",
    [m for m in METHODS if m.NAME not in NOT_IN_SPEC],
    ids=[n for n in METHOD_IDS if n not in NOT_IN_SPEC],
)
def test_working_group_spec_agrees(pika_cls: type[Any]) -> None:
    """The WG spec's package reads pika's frame too, where it has the method (RabbitMQ's
    extensions, Confirm, Basic.Nack, Exchange.Bind, ... are not in it), to the same bytes."""
    name = pika_cls.NAME.replace(".", "")
    pika_method, msg = _method_pair(pika_cls)
    frame = pika.frame.Method(CHANNEL, pika_method).marshal()
    if not hasattr(wg, name):
        with pytest.raises(DecodeError):
            wg.decode(frame)
        return
    theirs = wg.decode(frame)
    assert type(theirs).__name__ == name
    assert wg.encode(theirs) == frame


# --------------------------------------------------------------------------- defaults


def test_constructor_defaults_as_the_issue_wrote_them() -> None:
    """Reserved fields, flags and the fields after them need not be given (pika's classes
    need none): the message encodes as pika's does with the same two values."""
    msg = rmq.QueueDeclare(channel=1, queue="q1", durable=True)
    assert msg.arguments == {} and msg.arguments is not rmq.QueueDeclare(channel=1).arguments
    want = pika.frame.Method(1, pika.spec.Queue.Declare(queue="q1", durable=True)).marshal()
    assert rmq.encode(msg) == want
    assert wg.encode(wg.QueueDeclare(channel=1, queue="q1", durable=True)) == want


def _defaulted(ours: type[Any]) -> set[str]:
    return {
        f.name
        for f in dataclasses.fields(ours)
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
    }


# pika's own choice where the wire's default is the empty value: a convenience, not the spec
PIKA_CHOICES = {
    ("Exchange.Declare", "type"): "direct",
    ("Basic.Reject", "requeue"): True,  # the spec: "If requeue is true, the server will attempt..."
    ("Basic.Nack", "requeue"): True,
}


@pytest.mark.parametrize(
    "pika_cls",
    [m for m in METHODS if m.NAME not in NOT_IN_SPEC],
    ids=[n for n in METHOD_IDS if n not in NOT_IN_SPEC],
)
def test_defaults_write_what_pika_writes(pika_cls: type[Any]) -> None:
    """Every field we default, left to its default on both sides, gives pika's bytes: our
    defaults are the wire's (reserved values, unset flags, empty strings and tables). Where
    pika defaults to None (which it cannot write) it is given our default."""
    ours = _our_class(pika_cls.NAME)
    args = _pika_args(pika_cls)
    fields = [f for f in dataclasses.fields(ours) if f.name != "channel"]
    values = _values(ours)
    left = _defaulted(ours)
    pika_defaults = inspect.signature(pika_cls.__init__).parameters
    kwargs = {}
    for arg, f in zip(args, fields, strict=True):
        if f.name not in left:
            kwargs[arg] = _pika_value(str(f.type), values[f.name])
            continue
        ours_default = (
            f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
        )
        theirs = pika_defaults[arg].default
        if (pika_cls.NAME, arg) in PIKA_CHOICES:
            assert theirs == PIKA_CHOICES[pika_cls.NAME, arg] != ours_default
            kwargs[arg] = ours_default
        elif theirs is None or theirs is inspect.Parameter.empty:
            kwargs[arg] = ours_default
        elif isinstance(ours_default, bytes) and isinstance(theirs, str):
            assert theirs.encode() == ours_default, f"{pika_cls.NAME}.{arg}"  # both write it alike
        else:
            assert theirs == ours_default, f"{pika_cls.NAME}.{arg}"
    given = {f.name: values[f.name] for f in fields if f.name not in left}
    want = pika.frame.Method(CHANNEL, pika_cls(**kwargs)).marshal()
    assert rmq.encode(ours(**given, channel=CHANNEL)) == want


def test_defaults_where_the_wire_has_them() -> None:
    """Which fields default is decided by the spec: its reserved values and flags start the
    run; a message whose first fields are neither keeps them required."""
    assert _defaulted(rmq.QueueDeclare) == {f.name for f in dataclasses.fields(rmq.QueueDeclare)}
    assert _defaulted(rmq.BasicAck) == {"multiple", "channel"}  # the delivery tag is the caller's
    assert _defaulted(rmq.BasicPublish) >= {"reserved1", "exchange", "routing_key", "mandatory"}
    assert "delivery_tag" not in _defaulted(rmq.BasicDeliver)
