"""Emitter: the Python codec package of one protocol version (commands, enums, frame reader)."""

from __future__ import annotations

import re
from typing import Any

from specgen.emitters.plan import MessagePlan, ModulePlan, Planner, isort_key, snake
from specgen.emitters.render import Renderer
from specgen.ir import INT_WIDTHS, Protocol
from specgen.specs import SpecVersion

_CODES = {"int16": "h", "int32": "i", "uint16": "H", "uint32": "I", "int8": "b", "uint8": "B"}

# 64 MiB: far above RabbitMQ's default frame_max (1 MiB), far below what would hurt a reader.
DEFAULT_MAX_FRAME = 64 * 1024 * 1024


def emit(spec: SpecVersion, protocol: Protocol, renderer: Renderer) -> dict[str, str]:
    """Files of `generated/<package>/<module>/`, by name."""
    plan = Planner(protocol).plan()
    frame = protocol.frame
    header_fmt = ">" + "".join(
        _CODES[t] for t in (frame.size_type, frame.key_type, frame.version_type)
    )
    size_width = INT_WIDTHS[frame.size_type][0]
    common: dict[str, Any] = {
        "title": _title(spec),
        "version": spec.version,
        "protocol_name": spec.protocol,
        "source": protocol.source,
        "import_name": spec.import_name,
        "response_flag": frame.response_flag,
        "size_width": size_width,
        "size_fmt": ">" + _CODES[frame.size_type],
    }
    messages = [_message_view(m, plan) for m in plan.messages]
    dispatch: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for m in messages:
        dispatch.setdefault((m["key"], m["version"]), []).append(m)
        for alias in m["decode_keys"]:
            # decoded under another key: a wrapper remembers it, so encode writes it back
            dispatch.setdefault((alias, m["version"]), []).append({**m, "alias": True})
    for entries in dispatch.values():
        entries.sort(key=lambda m: {"request": 0, "oneway": 0, "response": 1}[m["kind"]])
    structs = [
        {
            "name": s.name,
            "spec_name": s.spec_name,
            "owner_note": f"laid out in {s.name[: -len(s.spec_name)]}",
            "attrs": s.attrs,
            "records": s.records,
        }
        for s in plan.structs
    ]
    uses_records = any(s.records is not None for s in plan.structs)
    files = {
        "errors.py": renderer.render("python/errors.py.j2", spec, protocol, **common),
        "commands.py": renderer.render(
            "python/commands.py.j2",
            spec,
            protocol,
            structs=structs,
            messages=messages,
            dispatch=sorted(dispatch.items()),
            uses_records=uses_records,
            uses_checksums=plan.checksums,
            aliased=[m["cls"] for m in messages if m["decode_keys"]],
            header_fmt=header_fmt,
            header_fields=f"{frame.size_type} size, {frame.key_type} key, {frame.version_type} version",
            header_size=sum(
                INT_WIDTHS[t][0] for t in (frame.size_type, frame.key_type, frame.version_type)
            ),
            **common,
        ),
        "enums.py": renderer.render(
            "python/enums.py.j2",
            spec,
            protocol,
            commands=[
                {
                    "const": snake(c.name).upper(),
                    "key": c.key,
                    "name": c.name,
                    "sender": c.sender,
                    "expects_response": c.expects_response,
                }
                for c in protocol.commands
            ],
            enums=protocol.enums,
            constants=protocol.constants,
            **common,
        ),
        "frame_reader.py": renderer.render(
            "python/frame_reader.py.j2",
            spec,
            protocol,
            default_max_frame=DEFAULT_MAX_FRAME,
            **common,
        ),
    }
    if uses_records:
        files["records.py"] = renderer.render("python/records.py.j2", spec, protocol, **common)
    exports = sorted(
        {
            "DecodeError",
            "EncodeError",
            "FrameReader",
            "FRAME_KEYS",
            "HEADER_SIZE",
            "Message",
            "Sender",
            "decode",
            "encode",
            "PROTOCOL",
            "VERSION",
            "Key",
        }
        | {s.name for s in plan.structs}
        | {m.cls for m in plan.messages}
        | {e.name for e in protocol.enums}
        | {c.name for c in protocol.constants}
    )
    command_names = sorted(
        {"FRAME_KEYS", "HEADER_SIZE", "Message", "Sender", "decode", "encode"}
        | {s.name for s in plan.structs}
        | {m.cls for m in plan.messages},
        key=isort_key,
    )
    enum_names = sorted(
        {"Key"} | {e.name for e in protocol.enums} | {c.name for c in protocol.constants},
        key=isort_key,
    )
    files["__init__.py"] = renderer.render(
        "python/package_init.py.j2",
        spec,
        protocol,
        exports=exports,
        command_names=command_names,
        enum_names=enum_names,
        **common,
    )
    return files


def _title(spec: SpecVersion) -> str:
    return {"rabbitmq-stream": "RabbitMQ Streams"}.get(spec.protocol, spec.protocol)


def _message_view(m: MessagePlan, plan: ModulePlan) -> dict[str, Any]:
    command = plan.protocol.command(m.command)
    kind_words = {"request": "request", "response": "response", "oneway": "one-way message"}[m.kind]
    summary = (
        f"{m.message.name}: {m.command} {kind_words}, key {m.key:#06x}, "
        f"version {m.version}, sent by the {m.sender}."
    )
    if m.message.decode_keys:
        also = ", ".join(f"{k:#06x}" for k in m.message.decode_keys)
        summary += f" Also decoded under key {also}, as a real peer sends it (see the overlay)."
    paragraphs = []
    if m.message.doc:
        paragraphs.append(_clean(m.message.doc))
    if command.doc and m.kind != "response":
        paragraphs.extend(_clean(p) for p in command.doc.split("\n\n"))
    return {
        "cls": m.cls,
        "func": m.func,
        "command": m.command,
        "key": m.key,
        "decode_keys": m.message.decode_keys,
        "alias": False,
        "version": m.version,
        "kind": m.kind,
        "sender": m.sender,
        "attrs": m.attrs,
        "steps": m.steps,
        "runs": m.runs,
        "summary": summary,
        "paragraphs": paragraphs,
        "span": m.message.span,
    }


def _clean(text: str) -> str:
    """Spec prose for a docstring: links reduced to their text, no quote characters to escape."""
    text = re.sub(r"https?://\S+\[([^\]]*)\]", r"\1", text)
    return text.replace('"""', "'''").replace("\\", "\\\\")
