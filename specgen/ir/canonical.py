"""Canonical JSON: every node as plain data and back (`dump`/`load`), defaults left out."""

from __future__ import annotations

import json
from dataclasses import MISSING, fields
from typing import Any, TypeVar, cast

from specgen import abnf_ast
from specgen.abnf_ast import Rule
from specgen.ir.errors import IRError
from specgen.ir.nodes import (
    Alternatives,
    Array,
    BitField,
    Bits,
    Blob,
    BodyKey,
    Case,
    Checksum,
    Choice,
    Command,
    CompositeField,
    Constant,
    Descriptor,
    Encoding,
    Enum,
    EnumValue,
    Field,
    Follows,
    FrameLayout,
    LengthEscape,
    Map,
    Message,
    NamedType,
    Preamble,
    Presence,
    Prim,
    PrimitiveType,
    Records,
    Ref,
    Segments,
    Struct,
    Switch,
    TypeChoice,
    Typed,
    TypeDef,
    TypeRef,
    Versions,
)
from specgen.ir.protocol import Dialogue, Protocol
from specgen.ir.rules import SpecRule
from specgen.spans import SourceSpan

IR_FORMAT = 2  # bumped when the JSON changes shape; `load` refuses other formats


# --------------------------------------------------------------------------------------------
# Canonical JSON

_TYPE_TAGS: dict[str, type] = {
    "prim": Prim,
    "ref": Ref,
    "array": Array,
    "map": Map,
    "struct": Struct,
    "switch": Switch,
    "choice": Choice,
    "blob": Blob,
    "bits": Bits,
    "bitfield": BitField,
    "presence": Presence,
    "alternatives": Alternatives,
    "typed": Typed,
}
_TAG_OF = {cls: tag for tag, cls in _TYPE_TAGS.items()}


def to_data(node: Any) -> Any:
    """A node as plain JSON data; defaults are left out so the dump stays short and stable."""
    if isinstance(node, SourceSpan | Versions):
        return str(node)
    if isinstance(node, bytes):
        return node.hex()
    if isinstance(node, tuple):
        return [to_data(x) for x in node]
    if hasattr(node, "__dataclass_fields__"):
        out: dict[str, Any] = {}
        if type(node) in _TAG_OF:
            out["kind"] = _TAG_OF[type(node)]
        elif type(node) in _abnf_exprs().values():
            out["kind"] = type(node).__name__
        for f in fields(node):
            value = getattr(node, f.name)
            if f.default is not MISSING and value == f.default:
                continue
            out[f.name] = to_data(value)
        return out
    return node


def _from_data(cls: Any, data: Any) -> Any:
    kw: dict[str, Any] = {}
    for f in fields(cls):
        if f.name not in data:
            continue
        if cls is TypeDef and f.name == "fields":
            kw[f.name] = tuple(_from_data(CompositeField, v) for v in data[f.name])
            continue
        if cls is Dialogue and f.name == "rules":
            kw[f.name] = tuple(_abnf_from_data(v) for v in data[f.name])
            continue
        kw[f.name] = _decode_value(f.name, data[f.name])
    return cls(**kw)


_NODE_LISTS = {
    "types": PrimitiveType,
    "enums": Enum,
    "constants": Constant,
    "commands": Command,
    "messages": Message,
    "fields": Field,
    "members": Field,
    "header": Field,
    "trailer": Field,
    "cases": Case,
}


def _decode_value(name: str, value: Any) -> Any:
    if name == "span":
        return SourceSpan.parse(value)
    if name == "versions":
        return Versions.parse(value)
    if name == "frame":
        return _from_data(FrameLayout, value)
    if name == "segments":
        return None if value is None else _from_data(Segments, value)
    if name == "length_escape":
        return None if value is None else _from_data(LengthEscape, value)
    if name == "follows":
        return None if value is None else _from_data(Follows, value)
    if name == "body_keys":
        return tuple(_from_data(BodyKey, v) for v in value)
    if name in ("preambles", "protocol_headers"):
        return tuple(_from_data(Preamble, v) for v in value)
    if name == "typedefs":
        return tuple(_from_data(TypeDef, v) for v in value)
    if name == "dialogues":
        return tuple(_from_data(Dialogue, v) for v in value)
    if name == "rules":  # a protocol's (a dialogue's ABNF rules are read by `_from_data`)
        return tuple(_from_data(SpecRule, v) for v in value)
    if name == "encodings":
        return tuple(_from_data(Encoding, v) for v in value)
    if name == "descriptor":
        return None if value is None else _from_data(Descriptor, value)
    if name == "choices":
        return tuple(_from_data(TypeChoice, v) for v in value)
    if name == "provides" or name == "requires":
        return tuple(value)
    if name == "data":
        return bytes.fromhex(value)
    if name in ("ident", "when", "replies", "prefer", "dispatch"):
        return tuple(value)
    if name == "decode_idents":
        return tuple(tuple(v) for v in value)
    if name == "present":
        return None if value is None else (str(value[0]), int(value[1]))
    if name in ("named", "aliases"):
        return tuple(_from_data(NamedType, v) for v in value)
    if name == "records":
        return None if value is None else _from_data(Records, value)
    if name == "checksum":
        return None if value is None else _from_data(Checksum, value)
    if name == "codecs":
        return tuple((int(v), str(a)) for v, a in value)
    if name in ("type", "item", "key", "value") and isinstance(value, dict):
        return None if value is None else type_from_data(value)
    if name == "values" and value and isinstance(value[0], dict):
        return tuple(_from_data(EnumValue, v) for v in value)
    if name == "options":
        return tuple(tuple(o) for o in value)
    if name in _NODE_LISTS:
        return tuple(_from_data(_NODE_LISTS[name], v) for v in value)
    if isinstance(value, list):
        return tuple(value)
    return value


def _abnf_exprs() -> dict[str, type]:
    """The ABNF expression classes by name."""
    return {cls.__name__: cls for cls in (abnf_ast.RuleRef, abnf_ast.CharVal, abnf_ast.NumVal,
            abnf_ast.NumRange, abnf_ast.ProseVal, abnf_ast.Step, abnf_ast.Seq, abnf_ast.Alt,
            abnf_ast.Repeat)}  # fmt: skip


def _abnf_from_data(data: Any) -> Any:
    """An ABNF rule (no "kind") or expression (tagged with its class name) from JSON data."""
    if "kind" not in data:
        return Rule(
            data["name"],
            _abnf_from_data(data["expr"]),
            SourceSpan.parse(data["span"]),
            data.get("incremental", False),
        )
    cls = _abnf_exprs()[data["kind"]]
    kw: dict[str, Any] = {}
    for f in fields(cls):
        if f.name not in data:
            continue
        value = data[f.name]
        if f.name == "expr":
            value = _abnf_from_data(value)
        elif f.name in ("items", "options"):
            value = tuple(_abnf_from_data(v) for v in value)
        elif f.name == "values":
            value = tuple(value)
        kw[f.name] = value
    return cls(**kw)


T = TypeVar("T")


def attribute_from_data(name: str, value: Any) -> Any:
    """One attribute's value from the IR's JSON, as a node's reader decodes it."""
    return _decode_value(name, value)


def from_data(cls: type[T], data: dict[str, Any]) -> T:
    """A node of class `cls` from the IR's JSON (an overlay's `node`, `attributes`)."""
    if cls in _TAG_OF:
        return cast(T, type_from_data({"kind": _TAG_OF[cls], **data}))
    return cast(T, _from_data(cls, data))


def type_from_data(data: dict[str, Any]) -> TypeRef:
    tag = data.get("kind")
    if tag not in _TYPE_TAGS:
        raise IRError(f"unknown type kind {tag!r}")
    body = {k: v for k, v in data.items() if k != "kind"}
    result: TypeRef = _from_data(_TYPE_TAGS[tag], body)
    return result


def field_from_data(data: dict[str, Any]) -> Field:
    result: Field = _from_data(Field, data)
    return result


def dump(protocol: Protocol) -> str:
    """Canonical JSON: sorted keys, two-space indent, spec order for lists, newline at the end."""
    data = to_data(protocol)
    data["ir_format"] = IR_FORMAT
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def load(text: str) -> Protocol:
    data = json.loads(text)
    if data.pop("ir_format", None) != IR_FORMAT:
        raise IRError(f"IR format is not {IR_FORMAT}")
    result: Protocol = _from_data(Protocol, data)
    return result
