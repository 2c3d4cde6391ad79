"""Emitter: the Python codec package of one protocol version (commands, enums, frame reader)."""

from __future__ import annotations

import re
from typing import Any

from specgen.emitters.plan import FramePlan, MessagePlan, ModulePlan, isort_key, snake
from specgen.emitters.render import Renderer
from specgen.ir import Protocol
from specgen.registry import SpecVersion

# 64 MiB: far above RabbitMQ's default frame_max (1 MiB), far below what would hurt a reader.
DEFAULT_MAX_FRAME = 64 * 1024 * 1024


def emit_shared(spec: SpecVersion, plan: ModulePlan, renderer: Renderer) -> dict[str, str]:
    """Files of `generated/<package>/` every version shares: errors, framing, the frame reader,
    and the value containers and records helpers when some version uses them."""
    common = _common(spec, plan)
    files = {
        "errors.py": renderer.render("python/errors.py.j2", spec, plan.protocol, **common),
        "framing.py": renderer.render(
            "python/framing.py.j2",
            spec,
            plan.protocol,
            default_max_frame=DEFAULT_MAX_FRAME,
            **common,
        ),
        "frame_reader.py": renderer.render(
            "python/frame_reader.py.j2", spec, plan.protocol, **common
        ),
    }
    return files


def emit_helpers(spec: SpecVersion, plans: list[ModulePlan], renderer: Renderer) -> dict[str, str]:
    """Shared helper modules that only some protocols need."""
    files: dict[str, str] = {}
    common = _common(spec, plans[-1])
    if any(s.records is not None for p in plans for s in p.structs):
        files["records.py"] = renderer.render(
            "python/records.py.j2", spec, plans[-1].protocol, **common
        )
    if any(p.named or p.decimals for p in plans):
        files["values.py"] = renderer.render(
            "python/values.py.j2", spec, plans[-1].protocol, **common
        )
    return files


def _common(spec: SpecVersion, plan: ModulePlan) -> dict[str, Any]:
    return {
        "title": spec.title or spec.protocol,
        "version": spec.version,
        "protocol_name": spec.protocol,
        "source": plan.protocol.source,
        "import_name": spec.import_name,
        "frame": plan.frame,
        # the classes of messages raw octets follow (RFC 006's HANDLE SEND), by name
        "follows": [m.cls for m in plan.messages if m.follows is not None],
        "follows_layout": next((m.follows.layout for m in plan.messages if m.follows), ""),
    }


def emit(spec: SpecVersion, plan: ModulePlan, renderer: Renderer) -> dict[str, str]:
    """Files of `generated/<package>/<module>/`, by name."""
    protocol = plan.protocol
    frame = plan.frame
    common = _common(spec, plan)
    messages = [_message_view(m, plan) for m in plan.messages]
    dispatch: dict[tuple[int, ...], list[dict[str, Any]]] = {}
    for m in messages:
        dispatch.setdefault(m["dispatch"], []).append(m)
        for alias in m["decode_keys"]:
            # decoded under another key: a wrapper remembers it, so encode writes it back
            key = (alias, *m["dispatch"][1:])
            dispatch.setdefault(key, []).append({**m, "alias": f"{alias:04x}"})
    for entries in dispatch.values():
        entries.sort(key=lambda m: {"request": 0, "oneway": 0, "response": 1}[m["kind"]])
    structs = [
        {
            "name": s.name,
            "spec_name": s.spec_name,
            "owner_note": f"laid out in {s.name[: -len(s.spec_name)]}",
            "attrs": s.attrs,
            "records": s.records,
            "codec": s.codec,
            "doc": s.doc,
        }
        for s in plan.structs
    ]
    uses_records = any(s.records is not None for s in plan.structs)
    key_fields = frame.key_fields
    n_dispatch = len(frame.dispatch)
    frame_keys = sorted({m.ident[:n_dispatch] + m.dispatch[len(m.ident) :] for m in plan.messages})
    value_imports = sorted(
        {"Table" for n in plan.named if n.kind == "map"}
        | {"Values" for n in plan.named if n.kind == "array"}
        | ({"_decimal_parts"} if plan.decimals else set()),
        key=isort_key,
    )
    header_args = []
    for h in frame.header:
        if h.role == "length":
            header_args.append(h.local)
        elif h.role == "dispatch":
            aliased_here = h is frame.dispatch[0] and any(
                m.message.decode_idents for m in plan.messages
            )
            header_args.append(h.local if aliased_here else f"msg.{h.name.upper()}")
        elif h.role == "version":
            header_args.append("msg.VERSION")
        else:
            header_args.append(f"msg.{h.name}")
    no_layout = " ".join(
        f"{h.name} {{{h.local}:{h.hex_format}}}"
        if h.role == "dispatch"
        else f"{h.name} {{{h.local}}}"
        for h in key_fields
    )
    files = {
        "commands.py": renderer.render(
            "python/commands.py.j2",
            spec,
            protocol,
            structs=structs,
            messages=messages,
            named=plan.named,
            dispatch=[(_key_repr(k, frame), v) for k, v in sorted(dispatch.items())],
            frame_keys=[_key_repr(k, frame) for k in frame_keys],
            uses_records=uses_records,
            uses_checksums=plan.checksums,
            decimals=plan.decimals,
            value_imports=value_imports,
            aliased=[m["cls"] for m in messages if m["decode_keys"]],
            has_kinds=any(m.kind != "oneway" for m in plan.messages),
            dispatch_words=_dispatch_words(frame),
            header_locals=", ".join(h.local for h in frame.header),
            key_locals=", ".join(h.local for h in key_fields),
            key_names=", ".join(h.name for h in key_fields)
            + (", then the body key" if frame.body_keys else ""),
            header_key_names=", ".join(h.name for h in key_fields),
            header_args=", ".join(header_args),
            error_imports=_error_imports(plan),
            no_layout=no_layout,
            **common,
        ),
        "enums.py": renderer.render(
            "python/enums.py.j2",
            spec,
            protocol,
            commands=[
                {
                    "const": re.sub(r"\W+", "_", snake(c.name.replace(".", ""))).upper(),
                    "ident": c.ident,
                    "name": c.name,
                    "sender": c.sender,
                    "expects_response": c.expects_response,
                }
                for c in protocol.commands
            ],
            single_key=all(len(c.ident) == 1 for c in protocol.commands),
            enums=protocol.enums,
            constants=protocol.constants,
            **common,
        ),
    }
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
            _key_export(protocol),
        }
        | {s.name for s in plan.structs}
        | {m.cls for m in plan.messages}
        | {e.name for e in protocol.enums}
        | {c.name for c in protocol.constants}
    )
    follows = {"following"} if common["follows"] else set()
    exports = sorted({*exports, *follows, *({"Fragment"} if follows else ())})
    command_names = sorted(
        {"FRAME_KEYS", "HEADER_SIZE", "Message", "Sender", "decode", "encode"}
        | follows
        | {s.name for s in plan.structs}
        | {m.cls for m in plan.messages},
        key=isort_key,
    )
    enum_names = sorted(
        {_key_export(protocol)}
        | {e.name for e in protocol.enums}
        | {c.name for c in protocol.constants},
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


def _error_imports(plan: ModulePlan) -> list[str]:
    """The errors module's names the version's codec uses: its cold-path helpers only where a
    step calls them."""
    kinds: set[str] = set()

    def visit(steps: list[object]) -> None:
        for step in steps:
            kinds.add(type(step).__name__)
            for attr in ("body", "key_steps", "item_steps"):
                visit(getattr(step, attr, []))
            for case in getattr(step, "cases", []):
                visit(getattr(case, "body", []))

    for m in plan.messages:
        visit(m.steps)
    for n in plan.named:
        visit(n.steps)
        visit(n.key_steps)
        visit(n.item_steps)
        for c in n.cases:
            visit(c.body)
    names = ["DecodeError", "EncodeError"]
    if "ArrayStep" in kinds:
        names.append("_bad_count")
    if kinds & {"Text", "BlobStep", "ArrayStep"} or plan.named:
        names.append("_bad_length")
    if "Run" in kinds:
        names.append("_truncated")
    return names


def _key_export(protocol: Protocol) -> str:
    """`Key` (an IntEnum) where every command is one key, else `COMMANDS` (name -> identity)."""
    return "Key" if all(len(c.ident) == 1 for c in protocol.commands) else "COMMANDS"


def _key_repr(key: tuple[int, ...], frame: FramePlan) -> str:
    """A dispatch tuple as the generated code writes it: header dispatch values in hex, body
    keys and the version in decimal."""
    out = []
    for i, v in enumerate(key):
        h = frame.dispatch[i] if i < len(frame.dispatch) else None
        out.append(format(v, h.hex_format) if h is not None else str(v))
    return "(" + ", ".join(out) + ("," if len(out) == 1 else "") + ")"


def _ident_words(m: MessagePlan, plan: ModulePlan) -> str:
    """Each part of a message's identity by its field's name, in decimal and hex."""
    ir_frame = plan.protocol.frame
    body = ir_frame.body_key(m.message.ident)
    names = [*ir_frame.dispatch, *(f.name for f in (body.fields if body else ()))]
    return ", ".join(f"{n} {v} ({v:#04x})" for n, v in zip(names, m.message.ident, strict=False))


def _dispatch_words(frame: FramePlan) -> str:
    words = [h.name for h in frame.dispatch]
    if frame.body_keys:
        words.append("the ids at the start of the body")
    if frame.version:
        words.append(frame.version.name)
    return " and ".join(words)


def _message_view(m: MessagePlan, plan: ModulePlan) -> dict[str, Any]:
    command = plan.protocol.command(m.command)
    frame = plan.frame
    kind_words = {"request": "request", "response": "response", "oneway": "one-way message"}[m.kind]
    ident = _key_repr(m.ident, frame)
    if len(m.ident) == 1:
        ident = format(m.ident[0], frame.dispatch[0].hex_format)
    versioned = f", version {m.version}" if frame.version else ""
    noun = frame.dispatch[0].name if len(m.ident) == 1 else "identity"
    summary = (
        f"{m.message.name}: {m.command} {kind_words}, {noun} {ident}{versioned}, "
        f"sent by the {m.sender}."
    )
    words = _ident_words(m, plan)
    if len(m.ident) > 1 and words:
        summary += f" On the wire: {words}."
    decode_keys = [i[0] for i in m.message.decode_idents]
    if decode_keys:
        also = ", ".join(f"{k:#06x}" for k in decode_keys)
        summary += f" Also decoded under key {also}, as a real peer sends it (see the overlay)."
    paragraphs: list[str] = []
    texts = [m.message.doc, command.doc if m.kind != "response" else ""]
    for para in (p for text in texts if text for p in text.split("\n\n")):
        # a message's prose often is its command's: each paragraph once
        if para.strip() and _clean(para) not in paragraphs:
            paragraphs.append(_clean(para))
    return {
        "cls": m.cls,
        "func": m.func,
        "command": m.command,
        "ident_repr": _key_repr(m.ident, frame),
        "header_consts": [
            (h.name.upper(), format(m.ident[i], h.hex_format)) for i, h in enumerate(frame.dispatch)
        ],
        "dispatch": m.dispatch,
        "decode_keys": decode_keys,
        "replies": [_reply_class(plan, r) for r in m.message.replies],
        "synchronous": m.message.synchronous,
        "content": m.message.content,
        "follows": m.follows,
        "body_key": "".join(f"\\x{b:02x}" for b in m.body_key),
        "alias": "",
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


def _reply_class(plan: ModulePlan, name: str) -> str:
    """The class of the message named `name` (its first version's)."""
    for m in plan.messages:
        if m.message.name == name:
            return m.cls
    return name


def _clean(text: str) -> str:
    """Spec prose for a docstring: links reduced to their text, no quote characters to escape."""
    text = re.sub(r"https?://\S+\[([^\]]*)\]", r"\1", text)
    return text.replace('"""', "'''").replace("\\", "\\\\")
